// Policy classes on the real program (BPF_PROG_TEST_RUN, real frames), the
// class maps written raw (class_fixture.h): each rule kind, the precedence of
// a prefix entry over the port table, byte budgets, exempt and deny in every
// breaker state, the per-class invariant, aggregation prefixes, classes that
// never share buckets, tables at their bound, the policy set flip, the
// per-class counters, standing and the recovering ramp for a class.
#include "class_fixture.h"
#include "require.h"
#include "standing_support.h"

using namespace sluice::test;
using namespace sluice::frames;

namespace {

constexpr std::uint32_t kBigBurst = 1000;

Options serving()
{
	Options o;
	o.config = make_config(1000, kBigBurst); // the default class: never the limit here
	return o;
}

// Run `frame` n times; the counters' change.
Counters run_n(const Sluice &s, const Bytes &frame, int n)
{
	Counters before = s.counters();
	RunResult r = s.run(frame, n);
	EXPECT_EQ(r.err, 0) << std::strerror(-r.err);
	Counters after = s.counters(), d;
	for (unsigned o = 0; o < SLUICE_OUTCOMES; o++) {
		d.c[o].packets = after.c[o].packets - before.c[o].packets;
		d.c[o].bytes = after.c[o].bytes - before.c[o].bytes;
	}
	return d;
}

Bytes udp_to(const char *src, std::uint16_t dport) { return udp4({}, {.src = ip4(src)}, {.dport = dport}); }

Bytes tcp_to(const char *src, std::uint16_t dport, std::uint8_t flags)
{
	Ipv4 ip{.src = ip4(src)};
	ip.proto = kIpProtoTcp;
	return ip4_frame({}, ip, tcp_segment(40000, dport, flags));
}

Bytes icmp_from(const char *src)
{
	Ipv4 ip{.src = ip4(src)};
	ip.proto = kIpProtoIcmp;
	return ip4_frame({}, ip, icmp_echo());
}

TEST(Classes, PortRulesTcpAndUdpByDestinationPort)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_class(0, 1, make_class({.burst = 2, .name = "dns"}));
	t.set_class(0, 2, make_class({.burst = 3, .name = "tcp53"}));
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_port(0, SLUICE_L4_TCP, 53, 2);
	t.set_port(0, SLUICE_L4_TCP_SYN, 53, 2);
	t.set_flags(SLUICE_CLASS_PORTS);

	Counters c = run_n(s, udp_to("198.18.1.1", 53), 5);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 3u) << c.str();
	c = run_n(s, tcp_to("198.18.1.1", 53, kTcpAck), 5);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 3u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 2u) << c.str();
	// Another port, another source port: the default class, untouched.
	c = run_n(s, udp_to("198.18.1.1", 54), 20);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 20u) << c.str();
	EXPECT_EQ(t.class_counters(1).packets(SLUICE_PASSED), 2u);
	EXPECT_EQ(t.class_counters(1).packets(SLUICE_DROP_RATE), 3u);
	EXPECT_EQ(t.class_counters(2).packets(SLUICE_PASSED), 3u);
	EXPECT_EQ(t.class_counters(0).packets(SLUICE_PASSED), 20u);
}

TEST(Classes, TcpSynWithoutAckIsItsOwnKind)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_class(0, 3, make_class({.burst = 1, .name = "syn"}));
	t.set_port(0, SLUICE_L4_TCP_SYN, 80, 3);
	t.set_flags(SLUICE_CLASS_PORTS);
	Counters c = run_n(s, tcp_to("198.18.1.2", 80, kTcpSyn), 4);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 3u) << c.str();
	// The same flow's later segments, and a SYN-ACK: plain TCP, the default class.
	c = run_n(s, tcp_to("198.18.1.2", 80, kTcpAck), 10);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 10u) << c.str();
	c = run_n(s, tcp_to("198.18.1.2", 80, kTcpSyn | kTcpAck), 10);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 10u) << c.str();
}

TEST(Classes, IcmpAndIcmpv6ByProtocolAndFragmentsByTheirProtocol)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_class(0, 4, make_class({.burst = 1, .name = "icmp"}));
	t.set_class(0, 5, make_class({.burst = 2, .name = "icmpv6"}));
	t.set_class(0, 6, make_class({.burst = 3, .name = "udp-any"}));
	t.set_class(0, 1, make_class({.burst = 100, .name = "dns"}));
	t.set_port(0, SLUICE_L4_IP, 1, 4);
	t.set_port(0, SLUICE_L4_IP, 58, 5);
	t.set_port(0, SLUICE_L4_IP, kIpProtoUdp, 6);
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_flags(SLUICE_CLASS_PORTS);

	Counters c = run_n(s, icmp_from("198.18.1.3"), 3);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 1u) << c.str();
	Bytes v6 = ip6_frame({}, {.src = ip6("2001:2::3")}, {}, kIpProtoIcmp6, icmp_echo(128));
	c = run_n(s, v6, 3);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << c.str();
	// A non-first fragment of UDP to port 53 carries no port: the udp
	// protocol class, not the port rule.
	Ipv4 frag{.src = ip4("198.18.1.4")};
	frag.frag = 0x2000 | 185;
	c = run_n(s, ip4_frame({}, frag, Bytes{0, 1, 0, 53, 0, 8, 0, 0}), 5);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 3u) << c.str();
	EXPECT_EQ(t.class_counters(6).packets(SLUICE_PASSED), 3u);
	// Its first fragment has the header: the port rule.
	frag.frag = 0x2000;
	frag.src = ip4("198.18.1.5");
	c = run_n(s, ip4_frame({}, frag, Bytes{0, 1, 0, 53, 0, 8, 0, 0}), 5);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 5u) << c.str();
	EXPECT_EQ(t.class_counters(1).packets(SLUICE_PASSED), 5u);
	// A truncated UDP header under a policy with port rules is malformed.
	c = run_n(s, truncated(udp_to("198.18.1.6", 53), kEthHeaderLen + kIpv4HeaderLen + 4), 1);
	EXPECT_EQ(c.packets(SLUICE_MALFORMED), 1u) << c.str();
}

TEST(Classes, PrefixEntryBeatsThePortTableAndNoMatchFallsToIt)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_class(0, 1, make_class({.burst = 2, .name = "dns"}));
	t.set_class(0, 7, make_class({.burst = 4, .name = "partner-dns"}));
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_prefix(0, ip4("198.18.7.0"), 24, {match(1u << SLUICE_L4_UDP, 53, 53, 7)});
	t.set_flags(SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4);

	Counters c = run_n(s, udp_to("198.18.7.1", 53), 6);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 4u) << c.str(); // the prefix entry's class
	c = run_n(s, udp_to("198.18.8.1", 53), 6);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << c.str(); // outside: the port table's
	c = run_n(s, udp_to("198.18.7.2", 54), 6);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 6u) << c.str(); // in the entry, no match: port table, default
	EXPECT_EQ(t.class_counters(7).packets(SLUICE_PASSED), 4u);
	EXPECT_EQ(t.class_counters(1).packets(SLUICE_PASSED), 2u);
	EXPECT_EQ(t.class_counters(0).packets(SLUICE_PASSED), 6u);

	// First match wins, in the entry's order; ranges are inclusive.
	t.set_class(0, 8, make_class({.burst = 1, .name = "syn"}));
	t.set_prefix(0, ip4("198.18.9.0"), 24,
		     {match(1u << SLUICE_L4_TCP_SYN, 1, 1024, 8), match(kAllKinds, 0, 65535, 7)});
	c = run_n(s, tcp_to("198.18.9.9", 1024, kTcpSyn), 3);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 1u) << c.str();
	c = run_n(s, tcp_to("198.18.9.9", 1025, kTcpSyn), 6);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 4u) << c.str();
	// Without the family's prefix flag the trie is not read.
	t.set_flags(SLUICE_CLASS_PORTS);
	c = run_n(s, udp_to("198.18.7.3", 53), 6);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << c.str();
}

TEST(Classes, ExemptAndDenyInEveryBreakerState)
{
	SLUICE_REQUIRE_ROOT();
	Options o = serving();
	o.config.policy_flags = SLUICE_LIST_DENY_V4;
	SLUICE_LOAD_OR_FAIL(s, o);
	ClassTables t(s);
	t.set_class(0, 9, make_class({.burst = 1, .action = SLUICE_CLASS_EXEMPT, .name = "health"}));
	t.set_class(0, 10, make_class({.burst = 1, .action = SLUICE_CLASS_DENY, .name = "bad"}));
	t.set_prefix(0, ip4("198.18.10.0"), 24, {match(kAllKinds, 0, 65535, 9)});
	t.set_prefix(0, ip4("198.18.11.0"), 24, {match(kAllKinds, 0, 65535, 10)});
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v4, ip4("198.18.10.66"), 32), 0);
	for (std::uint32_t state : {SLUICE_SERVING, SLUICE_SHEDDING, SLUICE_RECOVERING}) {
		SCOPED_TRACE(state);
		sluice_config c = s.config();
		c.breaker_state = state;
		c.admission_ppm = state == SLUICE_RECOVERING ? SLUICE_PPM_MIN : SLUICE_PPM_FULL;
		c.policy_flags = SLUICE_LIST_DENY_V4 | SLUICE_CLASS_PREFIX_V4;
		ASSERT_EQ(s.set_config(c), 0);
		Bytes ex = udp_to("198.18.10.1", 9), bad = udp_to("198.18.11.1", 9);
		EXPECT_VERDICT(s, ex, XDP_PASS);
		Counters d = run_n(s, ex, 50); // burst 1: exempt is never limited
		EXPECT_EQ(d.packets(SLUICE_EXEMPT), 50u) << d.str();
		d = run_n(s, bad, 5);
		EXPECT_EQ(d.packets(SLUICE_DROP_CLASS), 5u) << d.str();
		EXPECT_VERDICT(s, bad, XDP_DROP);
		// The deny list comes first, even for an exempt class's source.
		d = run_n(s, udp_to("198.18.10.66", 9), 3);
		EXPECT_EQ(d.packets(SLUICE_DROP_DENY), 3u) << d.str();
	}
	for (std::uint64_t v : s.all_slots())
		EXPECT_EQ(v, 0u); // exempt and deny touch no bucket
}

TEST(Classes, ByteBudgetPassesAFrameOnlyWhenBothAllow)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	// 1000 B/s, 2000 B of burst; 600-byte frames: three pass, the packet budget has plenty.
	sluice_class bulk = make_class({.burst = 100, .byte_rate = 1000, .byte_burst = 2000, .name = "bulk"});
	t.set_class(0, 11, bulk);
	t.set_port(0, SLUICE_L4_UDP, 9000, 11);
	t.set_flags(SLUICE_CLASS_PORTS);
	Bytes f = udp4({}, {.src = ip4("198.18.12.1")}, {.dport = 9000, .payload_len = 600 - 42});
	ASSERT_EQ(f.size(), 600u);
	Counters c = run_n(s, f, 5);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 3u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_BYTES), 2u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_DROP_BYTES), 1200u) << c.str();
	EXPECT_EQ(t.class_counters(11).packets(SLUICE_DROP_BYTES), 2u);
	// The packet tokens of the refused frames stay spent: 5 of 100 paid.
	std::uint64_t now = dataplane_ns() + SLUICE_TIME_BIAS;
	auto ps = t.class_slots(ip4("198.18.12.1"), 11, bulk);
	EXPECT_EQ(std::max(sluice_tokens(s.slot(ps.a), now, bulk.cost_ns, bulk.burst),
			   sluice_tokens(s.slot(ps.b), now, bulk.cost_ns, bulk.burst)),
		  95u);
	// The byte slots hold less than one more frame.
	auto bs = t.byte_slots(ip4("198.18.12.1"), 11, bulk);
	std::uint64_t credit = std::max(sluice_credit(s.slot(bs.a), now, bulk.byte_burst_ns),
					sluice_credit(s.slot(bs.b), now, bulk.byte_burst_ns));
	EXPECT_LT(credit, (600 * bulk.byte_cost_fp) >> SLUICE_BYTE_COST_SHIFT);

	// The packet budget refuses first where it is the smaller.
	t.set_class(0, 12, make_class({.burst = 2, .byte_rate = 1000000, .byte_burst = 1000000, .name = "small"}));
	t.set_port(0, SLUICE_L4_UDP, 9001, 12);
	c = run_n(s, udp4({}, {.src = ip4("198.18.12.2")}, {.dport = 9001}), 5);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 3u) << c.str();

	// The default class's byte budget: record 0, read with SLUICE_CLASS_DEFAULT_BYTES.
	t.set_class(0, 0, make_class({.burst = 1, .byte_rate = 1000, .byte_burst = 2000, .name = "default"}));
	t.set_flags(SLUICE_CLASS_PORTS | SLUICE_CLASS_DEFAULT_BYTES);
	c = run_n(s, udp4({}, {.src = ip4("198.18.12.3")}, {.dport = 9002, .payload_len = 600 - 42}), 5);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 3u) << c.str(); // config's packet budget (1000), record 0's bytes
	EXPECT_EQ(c.packets(SLUICE_DROP_BYTES), 2u) << c.str();
}

TEST(Classes, AggregationPrefixSharesABucketPerPrefix)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_class(0, 13, make_class({.burst = 3, .v4_prefix = 24, .name = "nat"}));
	t.set_class(0, 14, make_class({.burst = 3, .name = "per-host"}));
	t.set_prefix(0, ip4("198.18.13.0"), 24, {match(kAllKinds, 0, 65535, 13)});
	t.set_prefix(0, ip4("198.18.14.0"), 24, {match(kAllKinds, 0, 65535, 14)});
	t.set_flags(SLUICE_CLASS_PREFIX_V4);
	Counters a = run_n(s, udp_to("198.18.13.1", 9), 2);
	Counters b = run_n(s, udp_to("198.18.13.200", 9), 3);
	EXPECT_EQ(a.packets(SLUICE_PASSED) + b.packets(SLUICE_PASSED), 3u) << a.str() << b.str();
	a = run_n(s, udp_to("198.18.14.1", 9), 5);
	b = run_n(s, udp_to("198.18.14.2", 9), 5);
	EXPECT_EQ(a.packets(SLUICE_PASSED), 3u) << a.str();
	EXPECT_EQ(b.packets(SLUICE_PASSED), 3u) << b.str();
}

TEST(Classes, ClassesWithDifferentIdsDoNotShareBuckets)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	sluice_class same = make_class({.burst = 2, .name = "x"});
	t.set_class(0, 15, same);
	t.set_class(0, 16, same);
	t.set_port(0, SLUICE_L4_UDP, 1000, 15);
	t.set_port(0, SLUICE_L4_UDP, 1001, 16);
	t.set_flags(SLUICE_CLASS_PORTS);
	EXPECT_EQ(run_n(s, udp_to("198.18.15.1", 1000), 4).packets(SLUICE_PASSED), 2u);
	EXPECT_EQ(run_n(s, udp_to("198.18.15.1", 1001), 4).packets(SLUICE_PASSED), 2u);
	EXPECT_EQ(run_n(s, udp_to("198.18.15.1", 1002), 4).packets(SLUICE_PASSED), 4u); // default class
	// The host's slots of the three: the ones written, and (class key) not the same.
	auto p15 = t.class_slots(ip4("198.18.15.1"), 15, same), p16 = t.class_slots(ip4("198.18.15.1"), 16, same);
	auto p0 = s.slots_of(ip4("198.18.15.1"));
	EXPECT_FALSE(p15.a == p16.a && p15.b == p16.b);
	EXPECT_FALSE(p15.a == p0.a && p15.b == p0.b);
	for (auto i : {p15.a, p15.b, p16.a, p16.b, p0.a, p0.b})
		EXPECT_NE(s.slot(i), 0u) << "slot " << i;
	std::size_t written = 0;
	for (std::uint64_t v : s.all_slots())
		written += v != 0;
	EXPECT_LE(written, 6u);
}

TEST(Classes, TablesAtTheirBound)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	for (std::uint32_t id = 1; id < SLUICE_CLASSES_MAX; id++) {
		t.set_class(0, id, make_class({.burst = id, .name = "b"}));
		t.set_port(0, SLUICE_L4_UDP, 2000 + id, std::uint8_t(id));
	}
	// Eight matches in one entry, the eighth reachable.
	t.set_prefix(0, ip4("198.18.16.0"), 24,
		     {match(1u << SLUICE_L4_UDP, 3001, 3001, 56), match(1u << SLUICE_L4_UDP, 3002, 3002, 57),
		      match(1u << SLUICE_L4_UDP, 3003, 3003, 58), match(1u << SLUICE_L4_UDP, 3004, 3004, 59),
		      match(1u << SLUICE_L4_UDP, 3005, 3005, 60), match(1u << SLUICE_L4_UDP, 3006, 3006, 61),
		      match(1u << SLUICE_L4_UDP, 3007, 3007, 62), match(1u << SLUICE_L4_UDP, 3008, 3008, 63)});
	t.set_flags(SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4);
	for (std::uint32_t id = 1; id < SLUICE_CLASSES_MAX; id++) {
		SCOPED_TRACE(id);
		Counters c = run_n(s, udp_to("198.18.17.1", std::uint16_t(2000 + id)), int(id) + 2);
		EXPECT_EQ(c.packets(SLUICE_PASSED), id) << c.str();
		EXPECT_EQ(t.class_counters(id).packets(SLUICE_PASSED), id);
	}
	for (std::uint32_t i = 1; i <= SLUICE_CLASS_MATCHES; i++) {
		SCOPED_TRACE(i);
		std::uint32_t id = 55 + i;
		Counters c = run_n(s, udp_to("198.18.16.1", std::uint16_t(3000 + i)), 70);
		EXPECT_EQ(c.packets(SLUICE_PASSED), id) << c.str();
	}
	// The last class's counter row is the map's last.
	EXPECT_GT(t.class_counters(SLUICE_CLASSES_MAX - 1).packets(SLUICE_PASSED), 0u);
}

TEST(Classes, ThePolicySetInForceIsTheOneRead)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	// Set 1 holds a DNS class, a class prefix and a deny entry; set 0 (in force) has none of them.
	t.set_class(1, 1, make_class({.burst = 1, .name = "dns"}));
	t.set_port(1, SLUICE_L4_UDP, 53, 1);
	t.set_class(1, 2, make_class({.action = SLUICE_CLASS_DENY, .name = "bad"}));
	t.set_prefix(1, ip4("198.18.18.0"), 24, {match(kAllKinds, 0, 65535, 2)});
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v4, ip4("198.18.19.0"), 24, 1), 0);
	t.set_flags(SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4 | SLUICE_LIST_DENY_V4);
	EXPECT_EQ(run_n(s, udp_to("198.18.20.1", 53), 5).packets(SLUICE_PASSED), 5u);
	EXPECT_EQ(run_n(s, udp_to("198.18.18.1", 53), 5).packets(SLUICE_PASSED), 5u);
	EXPECT_EQ(run_n(s, udp_to("198.18.19.1", 53), 5).packets(SLUICE_PASSED), 5u);
	// The flip: set 1 in force, one word.
	t.set_flags(SLUICE_POLICY_SET | SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4 | SLUICE_LIST_DENY_V4);
	EXPECT_EQ(run_n(s, udp_to("198.18.20.2", 53), 5).packets(SLUICE_PASSED), 1u);
	EXPECT_EQ(run_n(s, udp_to("198.18.18.2", 53), 5).packets(SLUICE_DROP_CLASS), 5u);
	EXPECT_EQ(run_n(s, udp_to("198.18.19.2", 53), 5).packets(SLUICE_DROP_DENY), 5u);
	// And back: set 0 again, set 1's entries ignored.
	t.set_flags(SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4 | SLUICE_LIST_DENY_V4);
	EXPECT_EQ(run_n(s, udp_to("198.18.18.3", 53), 5).packets(SLUICE_PASSED), 5u);
}

TEST(Classes, PerClassCountersSumToTheGlobalCounters)
{
	SLUICE_REQUIRE_ROOT();
	Options o = serving();
	o.config.burst = 3;
	SLUICE_LOAD_OR_FAIL(s, o);
	ClassTables t(s);
	t.set_class(0, 1, make_class({.burst = 2, .name = "a"}));
	t.set_class(0, 2, make_class({.action = SLUICE_CLASS_EXEMPT, .name = "b"}));
	t.set_class(0, 3, make_class({.action = SLUICE_CLASS_DENY, .name = "c"}));
	t.set_class(0, 4, make_class({.burst = 50, .byte_rate = 1000, .byte_burst = 2000, .name = "d"}));
	t.set_port(0, SLUICE_L4_UDP, 1, 1);
	t.set_port(0, SLUICE_L4_UDP, 2, 2);
	t.set_port(0, SLUICE_L4_UDP, 3, 3);
	t.set_port(0, SLUICE_L4_UDP, 4, 4);
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v4, ip4("198.18.21.66"), 32), 0);
	t.set_flags(SLUICE_CLASS_PORTS | SLUICE_LIST_DENY_V4);
	for (std::uint16_t port : {1, 2, 3, 4, 5})
		for (const char *src : {"198.18.21.1", "198.18.21.2", "198.18.21.66"})
			run_n(s, udp4({}, {.src = ip4(src)}, {.dport = port, .payload_len = 500}), 7);
	run_n(s, icmp_from("198.18.21.3"), 4);
	Counters g = s.counters();
	Counters sum;
	for (std::uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++) {
		Counters c = t.class_counters(id);
		for (unsigned o2 = 0; o2 < SLUICE_OUTCOMES; o2++) {
			sum.c[o2].packets += c.c[o2].packets;
			sum.c[o2].bytes += c.c[o2].bytes;
		}
	}
	for (unsigned o2 = 0; o2 < SLUICE_OUTCOMES; o2++) {
		SCOPED_TRACE(outcome_name(o2));
		EXPECT_EQ(sum.c[o2].packets, g.c[o2].packets) << g.str();
		EXPECT_EQ(sum.c[o2].bytes, g.c[o2].bytes) << g.str();
	}
	EXPECT_EQ(g.total_packets(), 5u * 3 * 7 + 4);
	EXPECT_GT(g.packets(SLUICE_DROP_BYTES), 0u);
	EXPECT_GT(g.packets(SLUICE_EXEMPT), 0u);
	EXPECT_GT(g.packets(SLUICE_DROP_CLASS), 0u);
	EXPECT_GT(g.packets(SLUICE_DROP_DENY), 0u);
	EXPECT_EQ(t.class_counters(0).packets(SLUICE_DROP_DENY), g.packets(SLUICE_DROP_DENY)); // listed: default row
}

TEST(Classes, PerClassInvariantHoldsOnTheSlotsAfterAFlood)
{
	SLUICE_REQUIRE_ROOT();
	Options o = serving();
	o.slots = 256;
	SLUICE_LOAD_OR_FAIL(s, o);
	ClassTables t(s);
	sluice_class small = make_class({.burst = 4, .v4_prefix = 28, .name = "small"});
	t.set_class(0, 1, small);
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_flags(SLUICE_CLASS_PORTS);
	std::uint64_t passed = 0, t0 = dataplane_ns() + SLUICE_TIME_BIAS;
	for (std::uint32_t i = 0; i < 64; i++)
		passed += run_n(s, udp4({}, {.src = ip4_plus(ip4("198.18.22.0"), i)}, {.dport = 53}), 20).packets(SLUICE_PASSED);
	std::uint64_t now = dataplane_ns() + SLUICE_TIME_BIAS;
	// 4 /28s, each at most its burst (1 token/s: nothing refills meanwhile).
	EXPECT_LE(passed, 4u * 4);
	EXPECT_GE(passed, 4u);
	for (std::uint32_t i = 0; i < 4; i++) {
		auto p = t.class_slots(ip4_plus(ip4("198.18.22.0"), 16 * i), 1, small);
		for (auto idx : {p.a, p.b}) {
			std::uint64_t e = s.slot(idx);
			// The audit's check (logic/audit_check): no slot's empty_at in the future.
			EXPECT_LE(e, now) << "slot " << idx;
			EXPECT_LE(sluice_tokens(e, now, small.cost_ns, small.burst), small.burst);
			// Flooded: the slot held less than one token when the flood ended.
			EXPECT_LT(sluice_credit(e, now, small.burst * small.cost_ns), small.cost_ns + (now - t0));
		}
	}
	for (std::uint64_t e : s.all_slots())
		EXPECT_LE(e, now);
}

TEST(Classes, StandingStillWorksForANonDefaultClass)
{
	SLUICE_REQUIRE_ROOT();
	Options o = serving();
	o.config.standing_cost_ns = o.config.cost_ns;
	o.config.standing_burst = 5;
	SLUICE_LOAD_OR_FAIL(s, o);
	ClassTables t(s);
	t.set_class(0, 1, make_class({.burst = 1, .name = "dns"}));
	t.set_class(0, 2, make_class({.burst = 1, .standing_rate = 1000, .standing_burst = 3, .name = "own"}));
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_port(0, SLUICE_L4_UDP, 54, 2);
	t.set_flags(SLUICE_CLASS_PORTS);
	// Standing is the source's (plain hash, settings' prefixes), whatever its class.
	Standing st{s};
	st.grant(hash_of(s, ip4("198.18.23.1")), stamp_now());
	st.grant(hash_of(s, ip4("198.18.23.2")), stamp_now());
	Counters c = run_n(s, udp_to("198.18.23.1", 53), 10);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 5u) << c.str(); // config's standing budget
	c = run_n(s, udp_to("198.18.23.2", 54), 10);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 3u) << c.str(); // the class's own
	// Without standing: the class's budget alone.
	c = run_n(s, udp_to("198.18.23.3", 53), 10);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_STANDING), 0u) << c.str();
	// Shedding: a class source with standing is admitted by its standing
	// bucket alone (config's here), not its class's pair too.
	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_SHEDDING;
	ASSERT_EQ(s.set_config(cfg), 0);
	st.grant(hash_of(s, ip4("198.18.23.4")), stamp_now());
	c = run_n(s, udp_to("198.18.23.4", 53), 10);
	EXPECT_EQ(c.packets(SLUICE_STANDING), 5u) << c.str();
	c = run_n(s, udp_to("198.18.23.5", 53), 3);
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 3u) << c.str(); // no newcomer budget
}

TEST(Classes, TheRecoveringRampAppliesToAClass)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	sluice_class fast = make_class({.rate = 10000, .burst = 1, .name = "fast"});
	t.set_class(0, 1, fast);
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_flags(SLUICE_CLASS_PORTS);
	// Serving: 10,000/s refills a token every 100 us.
	Bytes a = udp_to("198.18.24.1", 53);
	run_n(s, a, 2);
	sleep_ns(20'000'000);
	wait_for_tick();
	EXPECT_EQ(run_n(s, a, 1).packets(SLUICE_PASSED), 1u);
	// Recovering at 0.1%: a token every 100 ms; after 20 ms none.
	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_RECOVERING;
	cfg.admission_ppm = SLUICE_PPM_MIN;
	ASSERT_EQ(s.set_config(cfg), 0);
	Bytes b = udp_to("198.18.24.2", 53);
	EXPECT_EQ(run_n(s, b, 3).packets(SLUICE_PASSED), 1u); // a full bucket still holds its burst
	sleep_ns(20'000'000);
	wait_for_tick();
	Counters c = run_n(s, b, 3);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 0u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 3u) << c.str();
}

TEST(Classes, ExemptAndDenyRecordsNeedNoBudget)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	// As logic/class_tables writes them: the action (and name) only.
	sluice_class ex{}, deny{};
	ex.action = SLUICE_CLASS_EXEMPT;
	deny.action = SLUICE_CLASS_DENY;
	t.set_class(0, 1, ex);
	t.set_class(0, 2, deny);
	t.set_port(0, SLUICE_L4_UDP, 1, 1);
	t.set_port(0, SLUICE_L4_UDP, 2, 2);
	t.set_flags(SLUICE_CLASS_PORTS);
	EXPECT_EQ(run_n(s, udp_to("198.18.26.1", 1), 5).packets(SLUICE_EXEMPT), 5u);
	EXPECT_EQ(run_n(s, udp_to("198.18.26.1", 2), 5).packets(SLUICE_DROP_CLASS), 5u);
}

TEST(Classes, AClassIdWithoutARecordIsTheDefaultClass)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_port(0, SLUICE_L4_UDP, 53, 40); // record 40 never written
	t.set_flags(SLUICE_CLASS_PORTS);
	EXPECT_EQ(run_n(s, udp_to("198.18.25.1", 53), 10).packets(SLUICE_PASSED), 10u);
	EXPECT_EQ(t.class_counters(0).packets(SLUICE_PASSED), 10u);
}

// A port table entry is read only under SLUICE_CLASS_PORTS, by the inline
// path (an IPv6 frame here: no IPv6 prefix rules) and by sluice_judge_policy
// (IPv4: the prefix flag sends it the whole way) alike.
TEST(Classes, WithoutThePortsFlagThePortTableIsNotRead)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_class(0, 1, make_class({.burst = 2, .name = "dns"}));
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_flags(SLUICE_CLASS_PREFIX_V4);
	Counters c = run_n(s, udp6({}, {.src = ip6("2001:2:0:5::1")}, {.dport = 53}), 6);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 6u) << c.str();
	c = run_n(s, udp4({}, {.src = ip4("198.18.5.1")}, {.dport = 53}), 6);
	EXPECT_EQ(c.packets(SLUICE_PASSED), 6u) << c.str();
	EXPECT_EQ(t.class_counters(0).packets(SLUICE_PASSED), 12u);
	EXPECT_EQ(t.class_counters(1).packets(SLUICE_PASSED), 0u);
}

} // namespace

// Port rules are decided inline for the common frame (no VLAN tag, IPv4
// without options, IPv6 straight to TCP/UDP) and by sluice_judge_policy for
// every other shape: both ways give the same class, and a frame no rule names
// is counted in the default class either way.
TEST(Classes, PortRulesHoldOnEveryFrameShape)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, serving());
	ClassTables t(s);
	t.set_class(0, 1, make_class({.burst = 2, .name = "dns"}));
	t.set_port(0, SLUICE_L4_UDP, 53, 1);
	t.set_flags(SLUICE_CLASS_PORTS);
	Ipv4 with_options{.src = ip4("198.18.3.3")};
	with_options.options = {0x01, 0x01, 0x01, 0x00}; // NOP NOP NOP EOL
	struct Shape {
		const char *what;
		Bytes to53, to54;
	} shapes[] = {
		{"plain IPv4", udp4({}, {.src = ip4("198.18.3.1")}, {.dport = 53}),
		 udp4({}, {.src = ip4("198.18.3.1")}, {.dport = 54})},
		{"VLAN-tagged IPv4", udp4({.tags = {vlan(10)}}, {.src = ip4("198.18.3.2")}, {.dport = 53}),
		 udp4({.tags = {vlan(10)}}, {.src = ip4("198.18.3.2")}, {.dport = 54})},
		{"IPv4 with options", udp4({}, with_options, {.dport = 53}), udp4({}, with_options, {.dport = 54})},
		{"plain IPv6", udp6({}, {.src = ip6("2001:2:0:3::1")}, {.dport = 53}),
		 udp6({}, {.src = ip6("2001:2:0:3::1")}, {.dport = 54})},
		{"VLAN-tagged IPv6", udp6({.tags = {vlan(10)}}, {.src = ip6("2001:2:0:4::2")}, {.dport = 53}),
		 udp6({.tags = {vlan(10)}}, {.src = ip6("2001:2:0:4::2")}, {.dport = 54})},
	};
	std::uint64_t dns_passed = 0, dns_dropped = 0, default_passed = 0;
	for (const auto &sh : shapes) {
		Counters c = run_n(s, sh.to53, 5);
		EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << sh.what << ": " << c.str();
		EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 3u) << sh.what << ": " << c.str();
		c = run_n(s, sh.to54, 10);
		EXPECT_EQ(c.packets(SLUICE_PASSED), 10u) << sh.what << ": " << c.str();
		dns_passed += 2;
		dns_dropped += 3;
		default_passed += 10;
		EXPECT_EQ(t.class_counters(1).packets(SLUICE_PASSED), dns_passed) << sh.what;
		EXPECT_EQ(t.class_counters(1).packets(SLUICE_DROP_RATE), dns_dropped) << sh.what;
		EXPECT_EQ(t.class_counters(0).packets(SLUICE_PASSED), default_passed) << sh.what;
	}
}
