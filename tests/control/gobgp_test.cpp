// upstream/gobgp: the CLI words for a rule and the reading of gobgpd's RIB
// (JSON as `gobgp global rib -a ipv4-flowspec -j` printed it, gobgpd 3.10),
// and the child process runner, with no gobgpd. The real speaker is
// tests/netns/test_upstream.py's.
#include "upstream/gobgp.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

constexpr const char *kMarker = "4200000000:7583:21";

Cidr cidr(const char *text)
{
	return *parse_cidr(text);
}

std::string joined(const std::vector<std::string> &w)
{
	std::string s;
	for (const auto &x : w)
		s += (s.empty() ? "" : " ") + x;
	return s;
}

UpstreamRule src_rule(const char *dst, const char *src)
{
	UpstreamRule r;
	r.destination = cidr(dst);
	r.source = cidr(src);
	return r;
}

TEST(GobgpWords, EveryComponentAndBothActions)
{
	UpstreamRule r = src_rule("198.18.1.0/24", "198.18.3.7/32");
	EXPECT_EQ(joined(gobgp_rule_words(r)), "match destination 198.18.1.0/24 source 198.18.3.7/32 then discard");
	r.protocol = 17;
	r.dport = 53;
	r.action = UpstreamAction::rate_limit;
	r.rate_bytes = 125000;
	EXPECT_EQ(joined(gobgp_rule_words(r)), "match destination 198.18.1.0/24 source 198.18.3.7/32 protocol 17 "
					       "destination-port ==53 then rate-limit 125000");
	EXPECT_EQ(gobgp_family(Family::v6), "ipv6-flowspec");
}

// The signature's components: the whole TCP flags byte ("=SET&!CLEAR": these
// set, the others not) and the packet length; read back from what gobgpd
// 3.x printed for exactly these words.
TEST(GobgpWords, TcpFlagsAndPacketLengthAndTheirReadingBack)
{
	UpstreamRule r;
	r.destination = cidr("198.18.1.2/32");
	r.protocol = 6;
	r.dport = 80;
	r.tcp_flags = 0x02;
	r.length = 60;
	EXPECT_EQ(joined(gobgp_rule_words(r)), "match destination 198.18.1.2/32 protocol 6 destination-port ==80 "
					       "tcp-flags =S&!FRPAUEC packet-length ==60 then discard");
	r.tcp_flags = 0x00;
	EXPECT_EQ(gobgp_rule_words(r).at(8), "!FSRPAUEC");
	r.tcp_flags = 0xff;
	EXPECT_EQ(gobgp_rule_words(r).at(8), "=FSRPAUEC");

	constexpr const char *rib = R"({
 "[destination: 198.18.1.2/32][protocol: ==tcp][destination-port: ==80][tcp-flags: =S&!FRPAUEC][packet-length: ==60]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.2/32"}},{"type":3,"value":[{"op":129,"value":6}]},{"type":5,"value":[{"op":129,"value":80}]},{"type":9,"value":[{"op":1,"value":2},{"op":194,"value":253}]},{"type":10,"value":[{"op":129,"value":60}]}]},"attrs":[{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":0}]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}]}],
 "[destination: 198.18.1.3/32][protocol: ==tcp][tcp-flags: =S !A]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.3/32"}},{"type":3,"value":[{"op":129,"value":6}]},{"type":9,"value":[{"op":1,"value":2},{"op":130,"value":16}]}]},"attrs":[{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":0}]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}]}],
 "[destination: 198.18.1.4/32][protocol: ==tcp][tcp-flags: !FSRPAUEC]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.4/32"}},{"type":3,"value":[{"op":129,"value":6}]},{"type":9,"value":[{"op":130,"value":255}]}]},"attrs":[{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":0}]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}]}]
})";
	// A value over 255 is written in two bytes (the op's length bits, 0x10).
	constexpr const char *two_bytes = R"({
 "[destination: 198.18.1.2/32][protocol: ==udp][destination-port: ==5353][packet-length: ==186]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.2/32"}},{"type":3,"value":[{"op":129,"value":17}]},{"type":5,"value":[{"op":145,"value":5353}]},{"type":10,"value":[{"op":129,"value":186}]}]},"attrs":[{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":0}]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}]}]
})";
	auto wide = parse_gobgp_rib(two_bytes, kMarker);
	ASSERT_TRUE(wide) << wide.error().message;
	EXPECT_EQ(wide->unknown, 0u);
	ASSERT_EQ(wide->rules.size(), 1u);
	EXPECT_EQ(wide->rules[0].str(), "dst 198.18.1.2/32 proto 17 dport 5353 length 186 discard");

	auto got = parse_gobgp_rib(rib, kMarker);
	ASSERT_TRUE(got) << got.error().message;
	// "=S !A" is an OR of two lists (SYN set, or ACK not set): not sluice's.
	EXPECT_EQ(got->unknown, 1u);
	ASSERT_EQ(got->rules.size(), 2u);
	r.tcp_flags = 0x02;
	EXPECT_EQ(got->rules[0], r);
	EXPECT_EQ(got->rules[1].str(), "dst 198.18.1.4/32 proto 6 tcp-flags 0x00 discard");
}

// Three paths: one of sluice's (marked), one marked with a component sluice
// does not write, one not marked (the operator's own).
constexpr const char *kRib = R"({
 "[destination: 198.18.1.0/24][source: 198.18.3.7/32]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.0/24"}},{"type":2,"value":{"prefix":"198.18.3.7/32"}}]},"age":1,"best":true,"attrs":[{"type":1,"value":2},{"type":8,"communities":[4294967041]},{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":0}]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}],"stale":false}],
 "[destination: 198.18.1.0/24][protocol: ==udp][destination-port: ==53]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.0/24"}},{"type":3,"value":[{"op":129,"value":17}]},{"type":5,"value":[{"op":129,"value":53}]}]},"age":1,"best":true,"attrs":[{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":125000}]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}],"stale":false}],
 "[destination: 198.18.1.0/24][packet-length: >100]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.0/24"}},{"type":10,"value":[{"op":146,"value":100}]}]},"attrs":[{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":0}]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}]}],
 "[destination: 198.18.1.0/24][source: 198.18.9.0/24]":[{"nlri":{"value":[{"type":1,"value":{"prefix":"198.18.1.0/24"}},{"type":2,"value":{"prefix":"198.18.9.0/24"}}]},"attrs":[{"type":16,"value":[{"type":128,"subtype":6,"as":0,"rate":0}]}]}]
})";

TEST(GobgpRib, OnlyMarkedPathsAreSluicesAndReadBackAsRules)
{
	auto rib = parse_gobgp_rib(kRib, kMarker);
	ASSERT_TRUE(rib) << rib.error().message;
	ASSERT_EQ(rib->rules.size(), 2u);
	EXPECT_EQ(rib->unknown, 1u);
	// In the order of gobgpd's keys, sorted.
	EXPECT_EQ(rib->rules[0].str(), "dst 198.18.1.0/24 proto 17 dport 53 rate 125000 B/s");
	EXPECT_EQ(rib->rules[1].str(), "dst 198.18.1.0/24 src 198.18.3.7/32 discard");
	// What sluice writes reads back as itself.
	UpstreamRule r = src_rule("198.18.1.0/24", "198.18.3.7/32");
	EXPECT_EQ(rib->rules[1], r);
}

TEST(GobgpRib, AnEmptyRibAndBadInput)
{
	for (const char *empty : {"{}", "null", "[]"}) {
		auto rib = parse_gobgp_rib(empty, kMarker);
		ASSERT_TRUE(rib) << empty;
		EXPECT_TRUE(rib->rules.empty());
	}
	EXPECT_FALSE(parse_gobgp_rib("{\"error\":", kMarker));
	auto bad_marker = parse_gobgp_rib("{}", "65535:666");
	ASSERT_FALSE(bad_marker);
	EXPECT_EQ(bad_marker.error().kind, ErrorKind::invalid);
}

// Blackhole routes in the unicast RIBs (`gobgp global rib -a ipv4 -j`, as
// gobgpd 3.10 printed them): sluice's carry the marker and a tag saying the
// kind; a marked path without a tag is not one sluice wrote; an unmarked one
// is the operator's.
constexpr const char *kUnicast = R"({
 "198.18.3.7/32":[{"nlri":{"prefix":"198.18.3.7/32"},"age":1,"best":true,"attrs":[{"type":1,"value":2},{"type":8,"communities":[4294902426,4294967041]},{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21},{"ASN":4200000000,"LocalData1":7583,"LocalData2":5635}]},{"type":3,"nexthop":"192.0.2.1"}],"stale":false}],
 "198.18.1.2/32":[{"nlri":{"prefix":"198.18.1.2/32"},"age":1,"best":true,"attrs":[{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":7999},{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]},{"type":3,"nexthop":"0.0.0.0"}],"stale":false}],
 "198.18.3.8/32":[{"nlri":{"prefix":"198.18.3.8/32"},"attrs":[{"type":32,"value":[{"ASN":4200000000,"LocalData1":7583,"LocalData2":21}]}]}],
 "198.18.3.9/32":[{"nlri":{"prefix":"198.18.3.9/32"},"attrs":[{"type":8,"communities":[4294902426]}]}]
})";

TEST(GobgpUnicast, BlackholeRoutesReadBackByTheirTag)
{
	auto rib = parse_gobgp_unicast(kUnicast, kMarker);
	ASSERT_TRUE(rib) << rib.error().message;
	ASSERT_EQ(rib->rules.size(), 2u);
	EXPECT_EQ(rib->unknown, 1u);
	EXPECT_EQ(rib->rules[0].str(), "blackhole dst 198.18.1.2/32");
	EXPECT_EQ(rib->rules[1].str(), "blackhole src 198.18.3.7/32");
	EXPECT_EQ(rib->rules[1].kind, UpstreamKind::blackhole_source);
	for (const char *empty : {"{}", "null", "[]"})
		EXPECT_TRUE(parse_gobgp_unicast(empty, kMarker)->rules.empty()) << empty;
	EXPECT_FALSE(parse_gobgp_unicast("{\"x\":", kMarker));

	// The words: the prefix alone (the next hop and the communities are the
	// speaker's configuration), the RIB, the tag.
	UpstreamRule src = source_rules(UpstreamGuards{}, cidr("198.18.3.7/32"), UpstreamMode::blackhole,
					UpstreamAction::discard, 0)
				   .at(0);
	EXPECT_EQ(joined(gobgp_rule_words(src)), "198.18.3.7/32");
	EXPECT_EQ(gobgp_family(src), "ipv4");
	EXPECT_EQ(gobgp_family(destination_blackhole(*parse_address("2001:2::2"))), "ipv6");
	EXPECT_EQ(blackhole_tag(kMarker, UpstreamKind::blackhole_source), "4200000000:7583:5635");
	EXPECT_EQ(blackhole_tag(kMarker, UpstreamKind::blackhole_destination), "4200000000:7583:7999");
}

TEST(GobgpNeighbor, TheSessionStateByNameFromTheApiEnum)
{
	EXPECT_EQ(*parse_gobgp_neighbor_state(R"({"state":{"session_state":6}})"), "established");
	EXPECT_EQ(*parse_gobgp_neighbor_state(R"([{"state":{"session_state":3}}])"), "active");
	EXPECT_FALSE(parse_gobgp_neighbor_state("oops"));
}

TEST(RunCaptured, OutputExitCodesAndTheTimeout)
{
	auto out = run_captured({"sh", "-c", "echo hello; echo noise >&2"}, 5);
	ASSERT_TRUE(out) << out.error().message;
	EXPECT_EQ(*out, "hello\n");
	auto failed = run_captured({"sh", "-c", "echo 'no route' >&2; exit 3"}, 5);
	ASSERT_FALSE(failed);
	EXPECT_EQ(failed.error().message, "sh -c echo 'no route' >&2; exit 3: exit 3: no route");
	auto missing = run_captured({"/nonexistent/gobgp"}, 5);
	ASSERT_FALSE(missing);
	EXPECT_EQ(missing.error().kind, ErrorKind::system);
	auto slow = run_captured({"sleep", "10"}, 0.2);
	ASSERT_FALSE(slow);
	EXPECT_EQ(slow.error().code, ETIMEDOUT);
}

} // namespace
} // namespace sluice
