// source_key.h: prefix masking against a byte-wise reference, the hash input
// per family, and the two slot indices.
#include "bpf/sluice_abi.h"
#include "bpf/source_key.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

namespace {

template <size_t N>
using Addr = std::array<std::uint8_t, N>;

// The obvious reference: keep the first `prefix` bits of the address in
// network order (the MSB of byte 0 first), clear the rest.
template <size_t N>
Addr<N> mask_ref(Addr<N> a, unsigned prefix)
{
	for (unsigned i = prefix; i < N * 8; i++)
		a[i / 8] &= (std::uint8_t) ~(0x80u >> (i % 8));
	return a;
}

// The source as parse.h leaves it: the wire bytes loaded little-endian.
sluice_source source_of(const Addr<4> &a)
{
	sluice_source s{};
	std::memcpy(&s.w[0], a.data(), 4);
	return s;
}

sluice_source source_of(const Addr<16> &a)
{
	sluice_source s{};
	std::memcpy(s.w, a.data(), 16);
	return s;
}

Addr<4> v4_bytes(__u32 w)
{
	Addr<4> a;
	std::memcpy(a.data(), &w, 4);
	return a;
}

Addr<16> v6_bytes(const sluice_source &s)
{
	Addr<16> a;
	std::memcpy(a.data(), s.w, 16);
	return a;
}

template <size_t N>
Addr<N> random_addr(std::mt19937_64 &rng)
{
	Addr<N> a;
	for (auto &b : a)
		b = (std::uint8_t)rng();
	return a;
}

Addr<4> v4(int a, int b, int c, int d)
{
	return {(std::uint8_t)a, (std::uint8_t)b, (std::uint8_t)c, (std::uint8_t)d};
}

Addr<4> mask4(const Addr<4> &a, unsigned prefix)
{
	return v4_bytes(sluice_mask_v4(source_of(a).w[0], prefix));
}

Addr<16> mask6(const Addr<16> &a, unsigned prefix)
{
	sluice_source s = source_of(a);
	sluice_mask_v6(&s, prefix);
	return v6_bytes(s);
}

TEST(SourceKeyMask, Ipv4Examples)
{
	const Addr<4> a = v4(192, 168, 37, 201);
	EXPECT_EQ(mask4(a, 0), v4(0, 0, 0, 0));
	EXPECT_EQ(mask4(a, 1), v4(128, 0, 0, 0));
	EXPECT_EQ(mask4(a, 20), v4(192, 168, 32, 0));
	EXPECT_EQ(mask4(a, 24), v4(192, 168, 37, 0));
	EXPECT_EQ(mask4(a, 31), v4(192, 168, 37, 200));
	EXPECT_EQ(mask4(a, 32), a);
	EXPECT_EQ(mask4(v4(10, 255, 255, 255), 9), v4(10, 128, 0, 0));
}

TEST(SourceKeyMask, Ipv4MatchesByteReferenceForEveryPrefix)
{
	std::mt19937_64 rng(4);
	std::vector<Addr<4>> addrs = {v4(255, 255, 255, 255), v4(0, 0, 0, 1), v4(128, 0, 0, 0)};
	for (int i = 0; i < 500; i++)
		addrs.push_back(random_addr<4>(rng));
	for (const auto &a : addrs)
		for (unsigned p = 0; p <= 32; p++)
			ASSERT_EQ(mask4(a, p), mask_ref(a, p)) << "prefix " << p;
	// Out of range (the control plane refuses it): the whole address.
	EXPECT_EQ(mask4(v4(1, 2, 3, 4), 33), v4(1, 2, 3, 4));
}

TEST(SourceKeyMask, Ipv6Examples)
{
	// 2001:db8:abcd:1234:d678:9abc:def0:12ff
	const Addr<16> a = {0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0x12, 0x34,
			    0xd6, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0xff};
	auto expect = [&](unsigned prefix, Addr<16> want) {
		EXPECT_EQ(mask6(a, prefix), want) << "/" << prefix;
	};
	expect(0, {});
	expect(48, {0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd});
	expect(56, {0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0x12});
	expect(64, {0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0x12, 0x34});
	expect(65, {0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0x12, 0x34, 0x80});
	expect(127, {0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0x12, 0x34,
		     0xd6, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0xfe});
	expect(128, a);
}

TEST(SourceKeyMask, Ipv6MatchesByteReferenceForEveryPrefix)
{
	std::mt19937_64 rng(6);
	std::vector<Addr<16>> addrs;
	Addr<16> ones;
	ones.fill(0xff);
	addrs.push_back(ones);
	for (int i = 0; i < 300; i++)
		addrs.push_back(random_addr<16>(rng));
	for (const auto &a : addrs)
		for (unsigned p = 0; p <= 128; p++)
			ASSERT_EQ(mask6(a, p), mask_ref(a, p)) << "prefix " << p;
}

// The whole path the program takes: a frame through parse.h, then the mask.
TEST(SourceKeyMask, ParsedFramesMaskInNetworkOrder)
{
	std::uint8_t frame[14 + 40] = {};
	frame[12] = 0x86;
	frame[13] = 0xdd;
	frame[14] = 0x60;
	const Addr<16> addr = {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x02,
			       0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11, 0x22};
	std::memcpy(frame + 14 + 8, addr.data(), 16);
	sluice_source src;
	ASSERT_EQ(sluice_parse(frame, frame + sizeof frame, &src), SLUICE_PARSE_IPV6);
	EXPECT_EQ(v6_bytes(src), addr);
	sluice_mask_v6(&src, 56);
	EXPECT_EQ(v6_bytes(src), mask_ref(addr, 56));

	std::uint8_t frame4[14 + 20] = {};
	frame4[12] = 0x08;
	frame4[13] = 0x00;
	frame4[14] = 0x45;
	const Addr<4> a4 = v4(203, 0, 113, 77);
	std::memcpy(frame4 + 14 + 12, a4.data(), 4);
	ASSERT_EQ(sluice_parse(frame4, frame4 + sizeof frame4, &src), SLUICE_PARSE_IPV4);
	EXPECT_EQ(src.w[1], 0u);
	EXPECT_EQ(v4_bytes(sluice_mask_v4((__u32)src.w[0], 20)), mask_ref(a4, 20));
}

// ---------------------------------------------------------------------------

const __u64 kKey[2] = {0x9e3779b97f4a7c15ull, 0xd1b54a32d192ed03ull};
constexpr __u32 kMask = SLUICE_SLOTS_DEFAULT - 1;

sluice_slot_pair slots_v6(const __u64 key[2], Addr<16> a, unsigned prefix, __u32 mask = kMask,
			  int one_choice = 0)
{
	sluice_source s = source_of(a);
	sluice_mask_v6(&s, prefix);
	return sluice_slots_of(sluice_source_hash(key, &s, 1), mask, one_choice);
}

sluice_slot_pair slots_v4(const __u64 key[2], Addr<4> a, unsigned prefix, __u32 mask = kMask)
{
	sluice_source s = source_of(a);
	s.w[0] = sluice_mask_v4((__u32)s.w[0], prefix);
	return sluice_slots_of(sluice_source_hash(key, &s, 0), mask, 0);
}

bool same(sluice_slot_pair x, sluice_slot_pair y)
{
	return x.a == y.a && x.b == y.b;
}

TEST(SourceKeyHash, IsKeyedSipHashOfTheAddressBytes)
{
	std::mt19937_64 rng(8);
	for (int i = 0; i < 1000; i++) {
		const __u64 key[2] = {rng(), rng()};
		const Addr<16> a6 = random_addr<16>(rng);
		const Addr<4> a4 = random_addr<4>(rng);
		sluice_source s6 = source_of(a6), s4 = source_of(a4);
		ASSERT_EQ(sluice_source_hash(key, &s6, 1),
			  sluice_siphash_bytes(key, a6.data(), 16, SLUICE_SIPHASH_C, SLUICE_SIPHASH_D));
		ASSERT_EQ(sluice_source_hash(key, &s4, 0),
			  sluice_siphash_bytes(key, a4.data(), 4, SLUICE_SIPHASH_C, SLUICE_SIPHASH_D));
		// An IPv4 address and the IPv6 address spelled with the same
		// leading bytes (rest zero) are different hash inputs.
		Addr<16> padded{};
		std::memcpy(padded.data(), a4.data(), 4);
		sluice_source sp = source_of(padded);
		ASSERT_NE(sluice_source_hash(key, &sp, 1), sluice_source_hash(key, &s4, 0));
	}
}

TEST(SourceKeySlots, SameSlash64SameSlotsDifferentSlash64Different)
{
	std::mt19937_64 rng(64);
	int differ = 0;
	for (int i = 0; i < 2000; i++) {
		Addr<16> x = random_addr<16>(rng), y = x;
		for (int j = 8; j < 16; j++)
			y[j] = (std::uint8_t)rng(); // a rotating interface id
		ASSERT_TRUE(same(slots_v6(kKey, x, 64), slots_v6(kKey, y, 64)));
		// A /128 policy tells them apart (unless y happened to equal x).
		if (x != y)
			differ += !same(slots_v6(kKey, x, 128), slots_v6(kKey, y, 128));
		// A neighbouring /64 is another source.
		Addr<16> z = x;
		z[7] ^= 1;
		EXPECT_FALSE(same(slots_v6(kKey, x, 64), slots_v6(kKey, z, 64)));
	}
	EXPECT_GT(differ, 1990);
	// Same for IPv4 at /24.
	for (int i = 0; i < 1000; i++) {
		Addr<4> x = random_addr<4>(rng), y = x;
		y[3] = (std::uint8_t)rng();
		ASSERT_TRUE(same(slots_v4(kKey, x, 24), slots_v4(kKey, y, 24)));
	}
}

TEST(SourceKeySlots, TwoDistinctIndicesWithinTheMask)
{
	std::mt19937_64 rng(2);
	for (__u32 mask : {SLUICE_SLOTS_MIN - 1, 255u, SLUICE_SLOTS_DEFAULT - 1, SLUICE_SLOTS_MAX - 1}) {
		for (int i = 0; i < 100'000; i++) {
			const __u64 h = rng();
			const sluice_slot_pair p = sluice_slots_of(h, mask, 0);
			ASSERT_LE(p.a, mask);
			ASSERT_LE(p.b, mask);
			ASSERT_NE(p.a, p.b);
			ASSERT_EQ(p.a, (__u32)h & mask);
			const __u32 hi = (__u32)(h >> 32) & mask;
			ASSERT_EQ(p.b, hi == p.a ? (p.a ^ 1) : hi);
			const sluice_slot_pair one = sluice_slots_of(h, mask, 1);
			ASSERT_EQ(one.a, p.a);
			ASSERT_EQ(one.b, p.a);
		}
	}
	// The halves collide after masking: the second index is the neighbour.
	EXPECT_EQ(sluice_slots_of(0x0000000700000007ull, 15, 0).a, 7u);
	EXPECT_EQ(sluice_slots_of(0x0000000700000007ull, 15, 0).b, 6u);
	EXPECT_EQ(sluice_slots_of(0xabcd0010'00000020ull, 15, 0).b, 1u);
	EXPECT_EQ(sluice_slots_of(0, 15, 0).b, 1u);
	EXPECT_EQ(sluice_slots_of(0, 15, 1).b, 0u);
}

// Sequential addresses spread evenly over a small table, on both indices.
TEST(SourceKeySlots, SequentialAddressesSpreadEvenly)
{
	constexpr __u32 kSmall = 15;
	std::array<int, 16> ca{}, cb{};
	const int n = 160'000;
	for (int i = 0; i < n; i++) {
		const Addr<4> a = v4(10, (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
		const sluice_slot_pair p = slots_v4(kKey, a, 32, kSmall);
		ca[p.a]++;
		cb[p.b]++;
	}
	for (int s = 0; s < 16; s++) {
		EXPECT_NEAR(ca[s], n / 16, n / 16 / 20) << "slot " << s;
		EXPECT_NEAR(cb[s], n / 16, n / 16 / 20) << "slot " << s;
	}
}

// Another key, other slots: the placement is the key's secret.
TEST(SourceKeySlots, TheKeyChangesTheSlots)
{
	std::mt19937_64 rng(16);
	const __u64 other[2] = {kKey[0], kKey[1] ^ 1}; // one bit apart
	int same_big = 0, same_small = 0;
	std::set<std::pair<__u32, __u32>> seen;
	const int n = 5000;
	for (int i = 0; i < n; i++) {
		const Addr<16> a = random_addr<16>(rng);
		same_big += same(slots_v6(kKey, a, 64), slots_v6(other, a, 64));
		same_small += same(slots_v6(kKey, a, 64, 15), slots_v6(other, a, 64, 15));
	}
	EXPECT_LE(same_big, 2);
	// 16 x 15 ordered pairs: ~1/240 agree by chance.
	EXPECT_LT(same_small, n / 60);
}

}  // namespace
