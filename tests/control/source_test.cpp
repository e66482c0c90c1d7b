// source_slots: which source prefix an address counts as and its two slots, as
// sluicectl reports them. Checked against the generic SipHash reference over
// the masked address bytes, so the CLI's answer is the data plane's.
#include "logic/source.h"

#include "bpf/siphash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <utility>

namespace sluice {
namespace {

sluice_settings settings(uint32_t v4_prefix = 32, uint32_t v6_prefix = 64, uint32_t slots = 1u << 18,
			 bool one_choice = false)
{
	sluice_settings s{};
	s.hash_key[0] = 0x0706050403020100ull;
	s.hash_key[1] = 0x0f0e0d0c0b0a0908ull;
	s.layout_version = SLUICE_LAYOUT_VERSION;
	s.slot_mask = slots - 1;
	s.v4_prefix = v4_prefix;
	s.v6_prefix = v6_prefix;
	s.one_choice = one_choice ? 1 : 0;
	return s;
}

Address addr(const std::string &text)
{
	auto a = parse_address(text);
	EXPECT_TRUE(a.has_value()) << text;
	return a ? *a : Address{};
}

Address v4_from(uint32_t host_order)
{
	Address a;
	a.family = Family::v4;
	a.bytes[0] = static_cast<uint8_t>(host_order >> 24);
	a.bytes[1] = static_cast<uint8_t>(host_order >> 16);
	a.bytes[2] = static_cast<uint8_t>(host_order >> 8);
	a.bytes[3] = static_cast<uint8_t>(host_order);
	return a;
}

std::pair<uint32_t, uint32_t> pair_of(const SourceSlots &s)
{
	return {s.slots[0], s.slots[1]};
}

// The slots computed independently: SipHash-c-d of the masked address bytes
// (4 or 16), low half and high half of the hash, masked to the table.
std::array<uint32_t, 2> reference_slots(const sluice_settings &s, const Address &masked)
{
	const __u64 key[2] = {s.hash_key[0], s.hash_key[1]};
	unsigned long len = masked.family == Family::v4 ? 4 : 16;
	uint64_t h = sluice_siphash_bytes(key, masked.bytes.data(), len, SLUICE_SIPHASH_C, SLUICE_SIPHASH_D);
	uint32_t a = static_cast<uint32_t>(h) & s.slot_mask;
	uint32_t b = static_cast<uint32_t>(h >> 32) & s.slot_mask;
	if (s.one_choice)
		b = a;
	else if (a == b)
		b = a ^ 1;
	return {a, b};
}

TEST(Source, IPv4Slash32IsOneSourcePerAddress)
{
	auto s = settings(32);
	auto a = source_slots(s, addr("198.18.5.1"));
	EXPECT_EQ(a.source.str(), "198.18.5.1/32");
	auto b = source_slots(s, addr("198.18.5.2"));
	EXPECT_EQ(b.source.str(), "198.18.5.2/32");
	EXPECT_NE(pair_of(a), pair_of(b));
	// Every address of a /24 is its own source: (almost) all distinct slots.
	std::set<std::pair<uint32_t, uint32_t>> seen;
	for (uint32_t i = 0; i < 256; i++)
		seen.insert(pair_of(source_slots(s, v4_from(0xc6120500u | i))));
	EXPECT_GE(seen.size(), 250u);
}

TEST(Source, IPv4Slash24SharesSlotsWithinThePrefix)
{
	auto s = settings(24);
	auto first = source_slots(s, addr("198.18.5.0"));
	EXPECT_EQ(first.source.str(), "198.18.5.0/24");
	for (uint32_t i = 0; i < 256; i++) {
		auto x = source_slots(s, v4_from(0xc6120500u | i));
		EXPECT_EQ(x.source, first.source) << i;
		EXPECT_EQ(pair_of(x), pair_of(first)) << i;
	}
	// The neighbouring /24s are other sources.
	std::set<std::pair<uint32_t, uint32_t>> seen;
	for (uint32_t net = 0; net < 256; net++)
		seen.insert(pair_of(source_slots(s, v4_from(0xc6120000u | net << 8 | 77))));
	EXPECT_GE(seen.size(), 250u);
	// Same address, /32 vs /24: different sources, so different slots.
	EXPECT_NE(pair_of(source_slots(settings(32), addr("198.18.5.77"))),
		  pair_of(source_slots(settings(24), addr("198.18.5.77"))));
}

TEST(Source, IPv6AddressesInOneSlash64ShareSlots)
{
	auto s = settings(32, 64);
	auto a = source_slots(s, addr("2001:db8:1:2::1"));
	auto b = source_slots(s, addr("2001:db8:1:2:ffff:ffff:ffff:ffff"));
	auto c = source_slots(s, addr("2001:db8:1:2:1234:5678:9abc:def0"));
	EXPECT_EQ(a.source.str(), "2001:db8:1:2::/64");
	EXPECT_EQ(b.source, a.source);
	EXPECT_EQ(c.source, a.source);
	EXPECT_EQ(pair_of(a), pair_of(b));
	EXPECT_EQ(pair_of(a), pair_of(c));
	// The next /64 is another source.
	auto other = source_slots(s, addr("2001:db8:1:3::1"));
	EXPECT_EQ(other.source.str(), "2001:db8:1:3::/64");
	EXPECT_NE(pair_of(other), pair_of(a));
	// With /128, the two addresses are two sources.
	auto s128 = settings(32, 128);
	EXPECT_NE(pair_of(source_slots(s128, addr("2001:db8:1:2::1"))),
		  pair_of(source_slots(s128, addr("2001:db8:1:2:ffff:ffff:ffff:ffff"))));
}

TEST(Source, ReportedSourceIsMasked)
{
	struct Case {
		uint32_t v4, v6;
		const char *address, *source;
	} cases[] = {
		{32, 64, "198.18.5.77", "198.18.5.77/32"},
		{24, 64, "198.18.5.77", "198.18.5.0/24"},
		{20, 64, "198.18.21.77", "198.18.16.0/20"},
		{1, 64, "198.18.5.77", "128.0.0.0/1"},
		{0, 64, "198.18.5.77", "0.0.0.0/0"},
		{32, 64, "2001:db8:1:2:abcd:1:2:3", "2001:db8:1:2::/64"},
		{32, 48, "2001:db8:1:2:abcd:1:2:3", "2001:db8:1::/48"},
		{32, 72, "2001:db8:1:2:abcd:1:2:3", "2001:db8:1:2:ab00::/72"},
		{32, 112, "2001:db8:1:2:abcd:1:2:3", "2001:db8:1:2:abcd:1:2:0/112"},
		{32, 128, "2001:db8:1:2:abcd:1:2:3", "2001:db8:1:2:abcd:1:2:3/128"},
		{32, 0, "2001:db8:1:2:abcd:1:2:3", "::/0"},
		{32, 1, "ffff::1", "8000::/1"},
		{32, 65, "2001:db8:1:2:ffff::", "2001:db8:1:2:8000::/65"},
	};
	for (const auto &c : cases) {
		auto out = source_slots(settings(c.v4, c.v6), addr(c.address));
		EXPECT_EQ(out.source.str(), c.source) << c.address << " v4 /" << c.v4 << " v6 /" << c.v6;
		EXPECT_EQ(out.source.addr.family, addr(c.address).family);
		// The reported prefix is a valid CIDR: no host bits.
		auto again = parse_cidr(out.source.str());
		ASSERT_TRUE(again.has_value()) << again.error().message;
		EXPECT_EQ(*again, out.source);
	}
}

TEST(Source, SlotsMatchTheSipHashReference)
{
	for (uint32_t v4p : {32u, 24u, 0u}) {
		auto s = settings(v4p, 64);
		for (uint32_t i = 0; i < 300; i++) {
			Address a = v4_from(0x0a000000u + i * 2654435761u);
			auto out = source_slots(s, a);
			auto want = reference_slots(s, out.source.addr);
			EXPECT_EQ(out.slots, want) << a.str() << " /" << v4p;
		}
	}
	for (uint32_t v6p : {128u, 64u, 56u, 96u}) {
		auto s = settings(32, v6p);
		for (uint32_t i = 0; i < 300; i++) {
			Address a = addr("2001:db8::");
			for (int b = 4; b < 16; b++)
				a.bytes[b] = static_cast<uint8_t>((i * 2654435761u) >> ((b % 4) * 8)) ^ static_cast<uint8_t>(b * 37);
			auto out = source_slots(s, a);
			auto want = reference_slots(s, out.source.addr);
			EXPECT_EQ(out.slots, want) << a.str() << " /" << v6p;
		}
	}
}

TEST(Source, SlotsLieWithinTheMaskAndAreDistinct)
{
	for (uint32_t slots : {SLUICE_SLOTS_MIN, 1024u, 1u << 18, SLUICE_SLOTS_MAX}) {
		auto s = settings(32, 128, slots);
		for (uint32_t i = 0; i < 1000; i++) {
			Address a = i % 2 ? v4_from(0xc6120000u + i * 7919u) : addr("2001:db8::" + std::to_string(i));
			auto out = source_slots(s, a);
			EXPECT_LE(out.slots[0], s.slot_mask) << slots << " " << a.str();
			EXPECT_LE(out.slots[1], s.slot_mask) << slots << " " << a.str();
			EXPECT_NE(out.slots[0], out.slots[1]) << "two choices must be two slots: " << a.str();
		}
	}
}

TEST(Source, OneChoiceGivesEqualSlots)
{
	auto two = settings(32, 64, 1u << 18, false);
	auto one = settings(32, 64, 1u << 18, true);
	for (uint32_t i = 0; i < 1000; i++) {
		Address a = i % 2 ? v4_from(0x0a000000u + i) : addr("2001:db8:" + std::to_string(i) + "::1");
		auto out = source_slots(one, a);
		EXPECT_EQ(out.slots[0], out.slots[1]) << a.str();
		EXPECT_LE(out.slots[0], one.slot_mask);
		// The one slot is the first of the two-choice pair.
		EXPECT_EQ(out.slots[0], source_slots(two, a).slots[0]) << a.str();
	}
}

TEST(Source, DifferentKeyGivesDifferentSlots)
{
	auto s1 = settings();
	auto s2 = settings();
	s2.hash_key[0] ^= 1;
	auto s3 = settings();
	s3.hash_key[1] = 0xdeadbeefcafef00dull;
	int differ12 = 0, differ13 = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		Address a = i % 2 ? v4_from(0xc6120000u + i) : addr("2001:db8:" + std::to_string(i) + "::1");
		auto p1 = pair_of(source_slots(s1, a));
		differ12 += p1 != pair_of(source_slots(s2, a));
		differ13 += p1 != pair_of(source_slots(s3, a));
		// The same key always gives the same slots.
		EXPECT_EQ(p1, pair_of(source_slots(settings(), a)));
	}
	EXPECT_GE(differ12, 990);
	EXPECT_GE(differ13, 990);
}

TEST(Source, FamiliesDoNotShareHashInputs)
{
	// 0.0.0.0 and :: have the same (zero) bytes; the hash length keeps them apart.
	auto s = settings(32, 128);
	auto a = source_slots(s, addr("0.0.0.0"));
	auto b = source_slots(s, addr("::"));
	EXPECT_NE(pair_of(a), pair_of(b));
	EXPECT_NE(a.source, b.source);
}

} // namespace
} // namespace sluice
