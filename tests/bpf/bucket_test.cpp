// The token bucket on the real program: burst, refill against the clock,
// independence of sources, prefix grouping, and which slots a source touches.
#include "fixture.h"
#include "require.h"

#include <set>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

bool disjoint(sluice_slot_pair x, sluice_slot_pair y)
{
	return x.a != y.a && x.a != y.b && x.b != y.a && x.b != y.b;
}

Options limits(std::uint64_t rate, std::uint64_t burst)
{
	Options o;
	o.config = make_config(rate, burst);
	return o;
}

} // namespace

TEST(Bucket, ExactlyBurstPassThenDropRate)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kBurst = 5;
	SLUICE_LOAD_OR_FAIL(s, limits(1, kBurst)); // one token per second: no refill in this test
	Bytes f = udp4({}, {.src = ip4("10.3.0.1")});

	for (std::uint64_t i = 0; i < kBurst; i++)
		EXPECT_VERDICT(s, f, XDP_PASS);
	EXPECT_VERDICT(s, f, XDP_DROP);
	EXPECT_VERDICT(s, f, XDP_DROP);

	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED), kBurst) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_PASSED), kBurst * f.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 2u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_DROP_RATE), 2 * f.size()) << c.str();
	EXPECT_EQ(c.total_packets(), kBurst + 2) << c.str();
}

// The same through one BPF_PROG_TEST_RUN with repeat: the kernel reruns the
// program on the frame, and exactly `burst` of the repetitions pass.
TEST(Bucket, ExactlyBurstPassWithinOneRepeatedRun)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kBurst = 64;
	SLUICE_LOAD_OR_FAIL(s, limits(1, kBurst));
	Bytes f = udp6({}, {.src = ip6("2001:db8:3::1")});

	RunResult r = s.run(f, 1000);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP)); // the last repetition
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED), kBurst) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 1000 - kBurst) << c.str();
}

TEST(Bucket, RefillMatchesRateTimesElapsed)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kRate = 1000, kBurst = 500;
	SLUICE_LOAD_OR_FAIL(s, limits(kRate, kBurst));
	Bytes f = udp4({}, {.src = ip4("10.3.1.1")});

	RefillMeasurement m = measure_refill(s, f, 2000, 150'000'000, 2000);
	ASSERT_EQ(m.err, 0);
	EXPECT_EQ(m.exhaust_retval, std::uint32_t(XDP_DROP)); // drained for sure
	EXPECT_EQ(m.refill_retval, std::uint32_t(XDP_DROP));
	// The draining run: the full burst, plus whatever ticks fell inside it.
	EXPECT_GE(m.passed_exhaust, kBurst);
	EXPECT_LE(m.passed_exhaust, kBurst + (m.e1 - m.e0) / s.config().cost_ns + 1);
	ASSERT_LT(m.passed_refill, kBurst) << "refill hit the burst cap: sleep too long for this check";
	expect_refill_matches(m, s.config().cost_ns, "serving");
	// ~150 tokens; at least 100 whatever the scheduler did to the sleep.
	EXPECT_GE(m.passed_refill, 100u);
}

TEST(Bucket, SourcesAreIndependent)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 3));
	Ip4 a = ip4("10.4.0.1"), b = ip4("10.4.0.2"), c = ip4("192.168.4.2");
	ASSERT_TRUE(disjoint(s.slots_of(a), s.slots_of(b)));
	ASSERT_TRUE(disjoint(s.slots_of(a), s.slots_of(c)));
	ASSERT_TRUE(disjoint(s.slots_of(b), s.slots_of(c)));
	Bytes fa = udp4({}, {.src = a}), fb = udp4({}, {.src = b}), fc = udp4({}, {.src = c});

	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, fa, XDP_PASS);
	EXPECT_VERDICT(s, fa, XDP_DROP);
	// b and c still hold their whole burst, and spending it leaves a empty.
	for (int i = 0; i < 3; i++) {
		EXPECT_VERDICT(s, fb, XDP_PASS);
		EXPECT_VERDICT(s, fc, XDP_PASS);
	}
	EXPECT_VERDICT(s, fb, XDP_DROP);
	EXPECT_VERDICT(s, fc, XDP_DROP);
	EXPECT_VERDICT(s, fa, XDP_DROP);

	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_PASSED), 9u) << k.str();
	EXPECT_EQ(k.packets(SLUICE_DROP_RATE), 4u) << k.str();
}

TEST(Bucket, Ipv6SourcesInOneSlash64ShareTheirSlots)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 3)); // v6_prefix 64, the default
	Ip6 a1 = ip6("2001:db8:5:1::1");
	Ip6 a2 = ip6("2001:db8:5:1:ffff:eeee:dddd:cccc"); // same /64
	Ip6 b = ip6("2001:db8:5:2::1");                   // next /64
	ASSERT_EQ(s.slots_of(a1).a, s.slots_of(a2).a);
	ASSERT_EQ(s.slots_of(a1).b, s.slots_of(a2).b);
	ASSERT_TRUE(disjoint(s.slots_of(a1), s.slots_of(b)));

	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, udp6({}, {.src = a1}), XDP_PASS);
	// Rotating the interface identifier does not buy a new bucket.
	EXPECT_VERDICT(s, udp6({}, {.src = a2}), XDP_DROP);
	EXPECT_VERDICT(s, udp6({}, {.src = ip6("2001:db8:5:1:1234::9")}), XDP_DROP);
	// A different /64 does.
	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, udp6({}, {.src = b}), XDP_PASS);
	EXPECT_VERDICT(s, udp6({}, {.src = b}), XDP_DROP);

	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_PASSED), 6u) << k.str();
	EXPECT_EQ(k.packets(SLUICE_DROP_RATE), 3u) << k.str();
}

TEST(Bucket, Ipv4Prefix24GroupsASlash24)
{
	SLUICE_REQUIRE_ROOT();
	Options o = limits(1, 3);
	o.v4_prefix = 24;
	SLUICE_LOAD_OR_FAIL(s, o);
	Ip4 a1 = ip4("10.6.1.3"), a2 = ip4("10.6.1.250"), b = ip4("10.6.2.3");
	ASSERT_EQ(s.slots_of(a1).a, s.slots_of(a2).a);
	ASSERT_TRUE(disjoint(s.slots_of(a1), s.slots_of(b)));

	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, udp4({}, {.src = a1}), XDP_PASS);
	EXPECT_VERDICT(s, udp4({}, {.src = a2}), XDP_DROP);
	EXPECT_VERDICT(s, udp4({}, {.src = ip4("10.6.1.0")}), XDP_DROP);
	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, udp4({}, {.src = b}), XDP_PASS);
	EXPECT_VERDICT(s, udp4({}, {.src = b}), XDP_DROP);

	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_PASSED), 6u) << k.str();
	EXPECT_EQ(k.packets(SLUICE_DROP_RATE), 3u) << k.str();
}

// The counterpart: at the default /32, two addresses of one /24 are two sources.
TEST(Bucket, Ipv4Prefix32SeparatesNeighbours)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 3));
	Ip4 a1 = ip4("10.6.1.3"), a2 = ip4("10.6.1.250");
	ASSERT_TRUE(disjoint(s.slots_of(a1), s.slots_of(a2)));
	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, udp4({}, {.src = a1}), XDP_PASS);
	EXPECT_VERDICT(s, udp4({}, {.src = a1}), XDP_DROP);
	EXPECT_VERDICT(s, udp4({}, {.src = a2}), XDP_PASS);
	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_PASSED), 4u) << k.str();
	EXPECT_EQ(k.packets(SLUICE_DROP_RATE), 1u) << k.str();
}

// The slots a frame changes are exactly the pair source_key.h computes on the
// host with the same key, and their value is the bucket math of bucket.h at
// the program's clock, as the host reads it around the run.
TEST(Slots, TouchedSlotsAreTheHostComputedPair)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kBurst = 10;
	Options o = limits(100, kBurst);
	o.slots = 4096;
	SLUICE_LOAD_OR_FAIL(s, o);
	const std::uint64_t cost = s.config().cost_ns;

	struct Src {
		Bytes frame;
		sluice_slot_pair pair;
	};
	std::vector<Src> srcs;
	for (const char *a : {"10.8.0.1", "172.16.9.9", "192.0.2.77"})
		srcs.push_back({udp4({}, {.src = ip4(a)}), s.slots_of(ip4(a))});
	for (const char *a : {"2001:db8:8::1", "fe80::1"})
		srcs.push_back({udp6({}, {.src = ip6(a)}), s.slots_of(ip6(a))});

	std::vector<std::uint64_t> before = s.all_slots();
	for (std::uint64_t v : before)
		ASSERT_EQ(v, 0u);
	std::set<std::uint32_t> touched;
	for (const Src &src : srcs) {
		ASSERT_NE(src.pair.a, src.pair.b); // two choices: two slots
		std::uint64_t c0 = dataplane_ns();
		EXPECT_VERDICT(s, src.frame, XDP_PASS);
		std::uint64_t c1 = dataplane_ns();
		touched.insert(src.pair.a);
		touched.insert(src.pair.b);

		std::vector<std::uint64_t> after = s.all_slots();
		for (std::uint32_t i = 0; i < after.size(); i++) {
			if (touched.count(i))
				EXPECT_NE(after[i], 0u) << "slot " << i << " of the source's pair did not change";
			else
				EXPECT_EQ(after[i], 0u) << "slot " << i << " changed but is not the source's pair";
		}
		// One token paid from a full bucket: empty_at = now - (burst - 1) x cost,
		// now being the program's clock (+ bias), between c0 and c1.
		for (std::uint32_t i : {src.pair.a, src.pair.b}) {
			std::uint64_t now_prog = after[i] + (kBurst - 1) * cost - SLUICE_TIME_BIAS;
			EXPECT_GE(now_prog, c0) << "slot " << i;
			EXPECT_LE(now_prog, c1) << "slot " << i;
			EXPECT_EQ(sluice_tokens(after[i], now_prog + SLUICE_TIME_BIAS, cost, kBurst), kBurst - 1);
		}
	}
	EXPECT_EQ(touched.size(), 2 * srcs.size()); // no two of these sources share a slot
}

// A different key puts a source elsewhere: the program uses the key from
// rodata, and the host computes the same pair with it.
TEST(Slots, TheHashKeyDecidesThePair)
{
	SLUICE_REQUIRE_ROOT();
	Options o1 = limits(100, 10), o2 = limits(100, 10);
	o2.key[0] = 0xdeadbeefcafef00dull;
	o2.key[1] = 0x0123456789abcdefull;
	SLUICE_LOAD_OR_FAIL(s1, o1);
	SLUICE_LOAD_OR_FAIL(s2, o2);
	Ip4 a = ip4("10.9.0.1");
	sluice_slot_pair p1 = s1.slots_of(a), p2 = s2.slots_of(a);
	ASSERT_TRUE(disjoint(p1, p2)) << "pick another address: the two keys collide on this one";

	EXPECT_VERDICT(s1, udp4({}, {.src = a}), XDP_PASS);
	EXPECT_VERDICT(s2, udp4({}, {.src = a}), XDP_PASS);
	std::vector<std::uint64_t> v1 = s1.all_slots(), v2 = s2.all_slots();
	for (std::uint32_t i = 0; i < v1.size(); i++) {
		EXPECT_EQ(v1[i] != 0, i == p1.a || i == p1.b) << "key 1, slot " << i;
		EXPECT_EQ(v2[i] != 0, i == p2.a || i == p2.b) << "key 2, slot " << i;
	}
}

TEST(Slots, OneChoiceTouchesOneSlot)
{
	SLUICE_REQUIRE_ROOT();
	Options o = limits(100, 3);
	o.one_choice = 1;
	SLUICE_LOAD_OR_FAIL(s, o);
	Ip4 a = ip4("10.10.0.1");
	sluice_slot_pair p = s.slots_of(a);
	ASSERT_EQ(p.a, p.b);

	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, udp4({}, {.src = a}), XDP_PASS);
	EXPECT_VERDICT(s, udp4({}, {.src = a}), XDP_DROP);
	std::vector<std::uint64_t> v = s.all_slots();
	for (std::uint32_t i = 0; i < v.size(); i++)
		EXPECT_EQ(v[i] != 0, i == p.a) << "slot " << i;
	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_PASSED), 3u);
	EXPECT_EQ(k.packets(SLUICE_DROP_RATE), 1u);
}

// Never configured (cost_ns == 0, what a zeroed config map holds): IP frames
// pass and no slot is written. The loader writes the config before attaching.
TEST(Slots, UnconfiguredProgramPassesWithoutTouchingSlots)
{
	SLUICE_REQUIRE_ROOT();
	Options o; // config all zero
	SLUICE_LOAD_OR_FAIL(s, o);
	Bytes f = udp4();
	RunResult r = s.run(f, 100);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	EXPECT_EQ(s.counters().packets(SLUICE_PASSED), 100u);
	for (std::uint64_t v : s.all_slots())
		ASSERT_EQ(v, 0u);
}
