// logic/classes: the precedence, one step at a time (deny list, source
// prefix, port range, protocol, order), what explain reports (the class, the
// rule, the losers and why they lost, the bucket, the allow list), and every
// bound check_policy holds.
#include "logic/classes.h"
#include "policy_builders.h"

#include "bpf/sluice_abi.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice {
namespace {

using namespace sluice::test;

TEST(Classes, NoRuleMatchesTheDefaultClass)
{
	Policy p = with_classes({"a"});
	p.rules.push_back(rule(1, {cidr("10.0.0.0/8")}));
	ASSERT_TRUE(check_policy(p));
	auto e = explain(p, frame("192.0.2.1"));
	EXPECT_EQ(e.decided, Decided::fallback);
	EXPECT_EQ(e.class_index, 0u);
	EXPECT_EQ(e.class_name, "default");
	EXPECT_FALSE(e.rule);
	EXPECT_TRUE(e.losers.empty());
	EXPECT_EQ(e.bucket, cidr("192.0.2.1/32"));
	EXPECT_EQ(e.why, "no rule matches: the default class");
}

TEST(Classes, LongestSourcePrefixWinsWhateverTheOrder)
{
	Policy p = with_classes({"wide", "narrow"});
	p.rules.push_back(rule(1, {cidr("10.0.0.0/8")}));
	p.rules.push_back(rule(2, {cidr("10.1.0.0/16")}));
	ASSERT_TRUE(check_policy(p));
	auto e = explain(p, frame("10.1.2.3"));
	EXPECT_EQ(e.decided, Decided::rule);
	EXPECT_EQ(e.class_name, "narrow");
	EXPECT_EQ(e.rule, 1u);
	EXPECT_EQ(e.source_prefix, cidr("10.1.0.0/16"));
	ASSERT_EQ(e.losers.size(), 1u);
	EXPECT_EQ(e.losers[0].rule, 0u);
	EXPECT_EQ(e.losers[0].lost_on, LostOn::source_prefix);
	EXPECT_EQ(e.losers[0].why, "its source (/8) is less specific than rule 2's (/16)");
	// Outside the /16, the /8 holds.
	EXPECT_EQ(explain(p, addr("10.2.0.1"), Protocol::udp, 9).class_name, "wide");
	// The same with the rules swapped: order does not decide.
	std::swap(p.rules[0], p.rules[1]);
	EXPECT_EQ(explain(p, frame("10.1.2.3")).class_name, "narrow");
}

TEST(Classes, TheLongestOfOneRulesSourcesCounts)
{
	Policy p = with_classes({"a", "b"});
	p.rules.push_back(rule(1, {cidr("10.0.0.0/8"), cidr("10.1.2.0/24")}));
	p.rules.push_back(rule(2, {cidr("10.1.0.0/16")}));
	auto e = explain(p, frame("10.1.2.3"));
	EXPECT_EQ(e.class_name, "a");
	EXPECT_EQ(e.source_prefix, cidr("10.1.2.0/24"));
}

TEST(Classes, ARuleWithSourcesBeatsAPortRule)
{
	Policy p = with_classes({"dns", "nat"});
	p.rules.push_back(rule(1, {}, Protocol::udp, PortSpan{53, 53}));
	p.rules.push_back(rule(2, {cidr("0.0.0.0/0")}));
	ASSERT_TRUE(check_policy(p));
	auto e = explain(p, frame("198.51.100.1", Protocol::udp, 53));
	EXPECT_EQ(e.class_name, "nat");
	ASSERT_EQ(e.losers.size(), 1u);
	EXPECT_EQ(e.losers[0].lost_on, LostOn::source_prefix);
	EXPECT_EQ(e.losers[0].why, "its source (no source) is less specific than rule 2's (/0)");
	// IPv6 frames do not match an IPv4 /0.
	EXPECT_EQ(explain(p, frame("2001:db8::1", Protocol::udp, 53)).class_name, "dns");
}

TEST(Classes, NarrowerPortRangeWins)
{
	Policy p = with_classes({"all_udp", "high", "dns"});
	p.rules.push_back(rule(1, {}, Protocol::udp));
	p.rules.push_back(rule(2, {}, Protocol::udp, PortSpan{0, 1023}));
	p.rules.push_back(rule(3, {}, Protocol::udp, PortSpan{53, 53}));
	ASSERT_TRUE(check_policy(p));
	auto e = explain(p, frame("192.0.2.1", Protocol::udp, 53));
	EXPECT_EQ(e.class_name, "dns");
	ASSERT_EQ(e.losers.size(), 2u);
	EXPECT_EQ(e.losers[0].rule, 0u);
	EXPECT_EQ(e.losers[0].lost_on, LostOn::port_range);
	EXPECT_EQ(e.losers[0].why, "its ports (every port) are wider than rule 3's (1 port)");
	EXPECT_EQ(e.losers[1].why, "its ports (1024 ports) are wider than rule 3's (1 port)");
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::udp, 123)).class_name, "high");
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::udp, 1024)).class_name, "all_udp");
	// Port ranges are inclusive at both ends.
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::udp, 0)).class_name, "high");
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::udp, 1023)).class_name, "high");
	// TCP to port 53 matches none of them.
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::tcp, 53)).decided, Decided::fallback);
}

TEST(Classes, TcpSynIsNarrowerThanTcp)
{
	Policy p = with_classes({"tcp", "syn"});
	p.rules.push_back(rule(1, {}, Protocol::tcp));
	p.rules.push_back(rule(2, {}, Protocol::tcp_syn));
	ASSERT_TRUE(check_policy(p));
	auto e = explain(p, frame("192.0.2.1", Protocol::tcp_syn, 80));
	EXPECT_EQ(e.class_name, "syn");
	ASSERT_EQ(e.losers.size(), 1u);
	EXPECT_EQ(e.losers[0].lost_on, LostOn::protocol);
	EXPECT_EQ(e.losers[0].why, "its protocol (tcp) is wider than rule 2's (tcp-syn)");
	// A frame that is not a SYN (or a SYN-ACK) is only tcp.
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::tcp, 80)).class_name, "tcp");
	// But a port beats the protocol: tcp/80 is narrower than all SYNs.
	p.rules.push_back(rule(1, {}, Protocol::tcp, PortSpan{80, 80}));
	auto web = explain(p, frame("192.0.2.1", Protocol::tcp_syn, 80));
	EXPECT_EQ(web.rule, 2u);
	EXPECT_EQ(web.class_name, "tcp");
}

TEST(Classes, IcmpRulesMatchTheirFamilyProtocolOnly)
{
	Policy p = with_classes({"icmp", "icmp6"});
	p.rules.push_back(rule(1, {}, Protocol::icmp));
	p.rules.push_back(rule(2, {}, Protocol::icmpv6));
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::icmp)).class_name, "icmp");
	EXPECT_EQ(explain(p, frame("2001:db8::1", Protocol::icmpv6)).class_name, "icmp6");
	EXPECT_EQ(explain(p, frame("192.0.2.1", Protocol::udp, 7)).class_name, "default");
	// A frame of another protocol (Protocol::any) matches only rules without one.
	EXPECT_EQ(explain(p, frame("192.0.2.1")).class_name, "default");
}

TEST(Classes, ATieGoesToTheRuleWrittenFirst)
{
	Policy p = with_classes({"first", "second"});
	p.rules.push_back(rule(1, {cidr("10.0.0.0/8")}, Protocol::udp, PortSpan{53, 53}));
	p.rules.push_back(rule(2, {cidr("10.0.0.0/8")}, Protocol::udp, PortSpan{53, 53}));
	ASSERT_TRUE(check_policy(p));
	auto e = explain(p, frame("10.9.9.9", Protocol::udp, 53));
	EXPECT_EQ(e.class_name, "first");
	ASSERT_EQ(e.losers.size(), 1u);
	EXPECT_EQ(e.losers[0].lost_on, LostOn::order);
	EXPECT_EQ(e.losers[0].why, "it is as specific as rule 1 and written after it");
}

TEST(Classes, TheDenyListDecidesFirst)
{
	Policy p = with_classes({"health"});
	p.classes[1].action = ClassAction::exempt;
	p.rules.push_back(rule(1, {cidr("192.0.2.10/32")}));
	p.deny.push_back(cidr("192.0.2.0/24"));
	p.allow.push_back(cidr("192.0.2.0/25"));
	ASSERT_TRUE(check_policy(p));
	auto e = explain(p, frame("192.0.2.10"));
	EXPECT_EQ(e.decided, Decided::deny_list);
	EXPECT_EQ(e.action, ClassAction::deny);
	EXPECT_EQ(e.deny_entry, cidr("192.0.2.0/24"));
	EXPECT_FALSE(e.rule);
	ASSERT_EQ(e.losers.size(), 1u);
	EXPECT_EQ(e.losers[0].lost_on, LostOn::deny_list);
	EXPECT_EQ(describe(e), "denied: the deny list holds 192.0.2.0/24: dropped, whatever the rules say\n"
			       "lost: rule 1: sources 192.0.2.10/32 -> health: on deny list, the deny list decides first\n");
}

TEST(Classes, TheAllowListIsReportedBesideTheClass)
{
	Policy p = with_classes({"partner"});
	p.classes[1].v4_prefix = 24;
	p.rules.push_back(rule(1, {cidr("203.0.113.0/24")}));
	p.allow.push_back(cidr("203.0.113.0/24"));
	auto e = explain(p, frame("203.0.113.77"));
	EXPECT_EQ(e.class_name, "partner");
	EXPECT_EQ(e.allow_entry, cidr("203.0.113.0/24"));
	// The class aggregates its sources to /24: one bucket for the partner.
	EXPECT_EQ(e.bucket, cidr("203.0.113.0/24"));
	EXPECT_EQ(describe(e), "class partner (limit): the most specific matching rule is rule 1: sources "
			       "203.0.113.0/24 -> partner\n"
			       "bucket 203.0.113.0/24\n"
			       "allowlisted by 203.0.113.0/24: passes while the breaker is shedding\n");
}

TEST(Classes, BucketsAggregateIPv6ToTheClassPrefix)
{
	Policy p = with_classes({"dns"});
	p.classes[1].v6_prefix = 48;
	p.rules.push_back(rule(1, {}, Protocol::udp, PortSpan{53, 53}));
	EXPECT_EQ(explain(p, frame("2001:db8:1:2:3::4", Protocol::udp, 53)).bucket, cidr("2001:db8:1::/48"));
	EXPECT_EQ(explain(p, frame("2001:db8:1:2:3::4", Protocol::udp, 54)).bucket, cidr("2001:db8:1:2::/64"));
}

TEST(Classes, DescribeRuleSaysEveryPartAndShortensLongSourceLists)
{
	Policy p = with_classes({"x"});
	p.rules.push_back(ClassRule{{cidr("10.0.0.0/8"), cidr("10.1.0.0/16"), cidr("2001:db8::/32"), cidr("192.0.2.0/24"),
				     cidr("198.51.100.0/24")},
				    Protocol::tcp,
				    PortSpan{1024, 2047},
				    1,
				    31});
	EXPECT_EQ(describe_rule(p, 0), "rule 1 (line 31): sources 10.0.0.0/8, 10.1.0.0/16, 2001:db8::/32 and 2 more tcp "
				       "ports 1024-2047 -> x");
	p.rules.push_back(rule(1, {}, Protocol::udp, PortSpan{53, 53}));
	EXPECT_EQ(describe_rule(p, 1), "rule 2: udp port 53 -> x");
}

TEST(Classes, Contains)
{
	EXPECT_TRUE(contains(cidr("10.0.0.0/8"), cidr("10.1.0.0/16")));
	EXPECT_TRUE(contains(cidr("10.0.0.0/8"), cidr("10.0.0.0/8")));
	EXPECT_FALSE(contains(cidr("10.1.0.0/16"), cidr("10.0.0.0/8")));
	EXPECT_FALSE(contains(cidr("10.0.0.0/8"), cidr("11.0.0.0/8")));
	EXPECT_TRUE(contains(cidr("0.0.0.0/0"), addr("255.255.255.255")));
	EXPECT_FALSE(contains(cidr("0.0.0.0/0"), addr("::1")));
	EXPECT_TRUE(contains(cidr("::/0"), addr("::1")));
	EXPECT_EQ(aggregate(addr("192.0.2.255"), 25), cidr("192.0.2.128/25"));
}

// --- check_policy: every bound ---

void expect_refused(const Policy &p, const std::string &message)
{
	auto ok = check_policy(p);
	ASSERT_FALSE(ok) << "accepted what should say: " << message;
	EXPECT_EQ(ok.error().kind, ErrorKind::invalid);
	EXPECT_EQ(ok.error().message, message);
}

TEST(CheckPolicy, TheDefaultPolicyPasses)
{
	EXPECT_TRUE(check_policy(default_policy()));
}

TEST(CheckPolicy, ClassCountAndNames)
{
	Policy p = default_policy();
	for (size_t i = 1; i < kMaxClasses; i++)
		p.classes.emplace_back().name = "c" + std::to_string(i);
	EXPECT_TRUE(check_policy(p));
	p.classes.emplace_back().name = "one-too-many";
	expect_refused(p, "classes: 65 is outside 1..64");
	expect_refused(Policy{}, "classes: 0 is outside 1..64");

	Policy q = with_classes({"x"});
	q.classes[0].name = "first";
	expect_refused(q, "the first class must be 'default', not 'first'");
	q = with_classes({"x", "x"});
	expect_refused(q, "class name 'x' is given twice");
	q = with_classes({"Upper"});
	expect_refused(q, "class name 'Upper' may hold only a-z, 0-9, '_' and '-'");
	q = with_classes({"a23456789012345678901234567890123"});
	expect_refused(q, "class name 'a23456789012345678901234567890123' must be 1 to 32 characters long");
}

TEST(CheckPolicy, BudgetsAndPrefixes)
{
	Policy p = with_classes({"x"});
	p.classes[1].packets.rate = 0;
	expect_refused(p, "class x rate 0 is outside 1..100000000");
	p = with_classes({"x"});
	p.classes[1].packets.burst = SLUICE_BURST_MAX + 1;
	expect_refused(p, "class x burst 1000001 is outside 1..1000000");
	p = with_classes({"x"});
	p.classes[1].bytes = Budget{kByteRateMax + 1, kByteBurstMin};
	expect_refused(p, "class x byte rate 12500000001 is outside 1..12500000000");
	p.classes[1].bytes = Budget{1000, kByteBurstMin - 1};
	expect_refused(p, "class x byte burst 1513 is outside 1514..1000000000");
	p = with_classes({"x"});
	p.classes[1].standing = Budget{10, 0};
	expect_refused(p, "class x standing burst 0 is outside 1..1000000");
	p = with_classes({"x"});
	p.classes[1].v4_prefix = 33;
	expect_refused(p, "class x ipv4-prefix 33 is outside 0..32");
	p = with_classes({"x"});
	p.classes[1].v6_prefix = 129;
	expect_refused(p, "class x ipv6-prefix 129 is outside 0..128");
}

TEST(CheckPolicy, Rules)
{
	Policy p = with_classes({"x"});
	p.rules.push_back(rule(2, {cidr("10.0.0.0/8")}));
	expect_refused(p, "rule 1 names class 2 of 2");
	p.rules = {rule(1, {})};
	expect_refused(p, "rule 1 matches every frame: name sources or a protocol (or change the default class)");
	p.rules = {rule(1, {}, Protocol::icmp, PortSpan{1, 2})};
	expect_refused(p, "rule 1 names ports, which only tcp, tcp-syn and udp have");
	p.rules = {rule(1, {}, Protocol::udp, PortSpan{10, 9})};
	expect_refused(p, "rule 1 port range 10-9 is empty: the first port must be at most the last");
	Cidr host_bits = cidr("10.0.0.0/8");
	host_bits.addr.bytes[3] = 1;
	p.rules = {rule(1, {host_bits})};
	expect_refused(p, "rule 1 holds 10.0.0.1/8, which is not a prefix (host bits set or too long)");
	p.rules.clear();
	for (size_t i = 0; i < kMaxRules; i++)
		p.rules.push_back(rule(1, {}, Protocol::udp, PortSpan{uint16_t(i), uint16_t(i)}));
	EXPECT_TRUE(check_policy(p));
	p.rules.push_back(rule(1, {}, Protocol::tcp));
	expect_refused(p, "rules: 257 is outside 0..256");
}

TEST(CheckPolicy, ListEntriesPerFamily)
{
	Policy p = default_policy();
	for (uint32_t i = 0; i < SLUICE_LIST_MAX_ENTRIES; i++) {
		Cidr c{Address{Family::v4, {10, uint8_t(i >> 8), uint8_t(i), 0}}, 24};
		p.deny.push_back(c);
	}
	p.deny.push_back(cidr("2001:db8::/32")); // the other family has its own map
	EXPECT_TRUE(check_policy(p));
	p.deny.push_back(cidr("192.0.2.0/24"));
	expect_refused(p, "the deny list (IPv4) 65537 prefixes are more than one list of one family holds (65536)");
}

} // namespace
} // namespace sluice
