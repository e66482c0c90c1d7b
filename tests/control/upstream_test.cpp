// logic/upstream: the rules, the guards and the reconciliation of the
// announcement set, with no speaker and no daemon.
#include "logic/upstream.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

Cidr cidr(const char *text)
{
	auto c = parse_cidr(text);
	EXPECT_TRUE(c) << text;
	return *c;
}

UpstreamGuards guards()
{
	UpstreamGuards g;
	g.own = {cidr("198.18.1.0/24"), cidr("2001:2::/48")};
	g.min_source4 = 24;
	g.min_source6 = 48;
	g.max = 3;
	return g;
}

UpstreamRule from(const char *src)
{
	auto rules = source_rules(guards(), cidr(src));
	EXPECT_EQ(rules.size(), 1u) << src;
	return rules.at(0);
}

std::optional<std::string> nothing_protected(const Cidr &)
{
	return std::nullopt;
}

TEST(UpstreamRule, ASourceGetsOneRulePerOwnPrefixOfItsFamily)
{
	auto g = guards();
	g.own.push_back(cidr("198.18.9.0/24"));
	auto rules = source_rules(g, cidr("198.18.3.7/32"));
	ASSERT_EQ(rules.size(), 2u);
	EXPECT_EQ(rules[0].str(), "dst 198.18.1.0/24 src 198.18.3.7/32 discard");
	EXPECT_EQ(rules[1].str(), "dst 198.18.9.0/24 src 198.18.3.7/32 discard");
	EXPECT_EQ(source_rules(g, cidr("2001:2:0:3::/64")).at(0).str(), "dst 2001:2::/48 src 2001:2:0:3::/64 discard");
	g.own = {cidr("2001:2::/48")};
	EXPECT_TRUE(source_rules(g, cidr("198.18.3.7/32")).empty()); // no own IPv4 prefix: nothing to match on
}

TEST(UpstreamRule, TextNamesEveryComponent)
{
	UpstreamRule r{cidr("198.18.1.2/32"), cidr("198.18.3.0/24"), 17, 53, UpstreamAction::rate_limit, 125000};
	EXPECT_EQ(r.str(), "dst 198.18.1.2/32 src 198.18.3.0/24 proto 17 dport 53 rate 125000 B/s");
}

TEST(UpstreamGuards, ARuleInsideTheBoundsPasses)
{
	EXPECT_TRUE(check_rule(guards(), from("198.18.3.0/24"), nothing_protected));
	EXPECT_TRUE(check_rule(guards(), from("2001:2:0:3::/64"), nothing_protected));
}

TEST(UpstreamGuards, ADestinationOutsideTheOwnPrefixesIsRefused)
{
	UpstreamRule r = from("198.18.3.7/32");
	r.destination = cidr("198.18.0.0/23"); // holds the own /24: wider, not inside
	auto ok = check_rule(guards(), r, nothing_protected);
	ASSERT_FALSE(ok);
	EXPECT_EQ(ok.error().kind, ErrorKind::refused);
	EXPECT_NE(ok.error().message.find("outside --upstream-prefixes"), std::string::npos) << ok.error().message;
	r.destination = cidr("198.18.2.1/32");
	EXPECT_FALSE(check_rule(guards(), r, nothing_protected));
	r.destination = cidr("198.18.1.9/32"); // inside
	EXPECT_TRUE(check_rule(guards(), r, nothing_protected));
}

TEST(UpstreamGuards, ASourceShorterThanTheBoundIsRefused)
{
	auto ok = check_rule(guards(), from("198.18.0.0/23"), nothing_protected);
	ASSERT_FALSE(ok);
	EXPECT_NE(ok.error().message.find("shorter than /24 (--upstream-min-prefix4)"), std::string::npos)
		<< ok.error().message;
	auto ok6 = check_rule(guards(), from("2001:2::/47"), nothing_protected);
	ASSERT_FALSE(ok6);
	EXPECT_NE(ok6.error().message.find("--upstream-min-prefix6"), std::string::npos);
	EXPECT_TRUE(check_rule(guards(), from("2001:3::/48"), nothing_protected));
}

TEST(UpstreamGuards, AProtectedSourceIsNeverAnnounced)
{
	ProtectedSource allowlisted = [](const Cidr &c) -> std::optional<std::string> {
		if (c.str() == "198.18.2.0/24")
			return std::string("allowlisted (198.18.2.0/24)");
		return std::nullopt;
	};
	auto ok = check_rule(guards(), from("198.18.2.0/24"), allowlisted);
	ASSERT_FALSE(ok);
	EXPECT_EQ(ok.error().message, "upstream rule 'dst 198.18.1.0/24 src 198.18.2.0/24 discard' refused: its source is "
				      "allowlisted (198.18.2.0/24): never announced");
	EXPECT_TRUE(check_rule(guards(), from("198.18.3.0/24"), allowlisted));
}

TEST(UpstreamGuards, PortsNeedTcpOrUdpAndARateIsNotZero)
{
	UpstreamRule r = from("198.18.3.0/24");
	r.dport = 53;
	EXPECT_FALSE(check_rule(guards(), r, nothing_protected));
	r.protocol = 1;
	EXPECT_FALSE(check_rule(guards(), r, nothing_protected));
	r.protocol = 17;
	EXPECT_TRUE(check_rule(guards(), r, nothing_protected));
	r.action = UpstreamAction::rate_limit;
	EXPECT_FALSE(check_rule(guards(), r, nothing_protected));
	r.rate_bytes = 1;
	EXPECT_TRUE(check_rule(guards(), r, nothing_protected));
}

UpstreamWanted want(const char *src, bool held = true)
{
	return {from(src), "eth0", std::string("operator ") + src, held};
}

TEST(UpstreamPlan, AnnouncesWhatIsMissingAndAdoptsWhatTheSpeakerHolds)
{
	auto plan = plan_upstream({want("198.18.3.1/32"), want("198.18.3.2/32")}, {from("198.18.3.2/32")}, {}, 3, 10, 100);
	ASSERT_EQ(plan.announce.size(), 1u);
	EXPECT_EQ(plan.announce[0].rule, from("198.18.3.1/32"));
	ASSERT_EQ(plan.adopt.size(), 1u);
	EXPECT_EQ(plan.adopt[0], from("198.18.3.2/32"));
	EXPECT_TRUE(plan.withdraw.empty());
	EXPECT_TRUE(plan.over_max.empty());
}

TEST(UpstreamPlan, AStalePathOfAPreviousDaemonIsWithdrawnAtOnce)
{
	auto plan = plan_upstream({}, {from("198.18.3.9/32")}, {}, 3, 10, 100);
	ASSERT_EQ(plan.withdraw.size(), 1u);
	EXPECT_EQ(plan.withdraw[0], from("198.18.3.9/32"));
}

TEST(UpstreamPlan, AnUnwantedRuleStaysUntilItsHoldIsOver)
{
	std::vector<UpstreamHeld> mine{{from("198.18.3.1/32"), "eth0", "auto", 95, true}};
	auto plan = plan_upstream({}, {from("198.18.3.1/32")}, mine, 3, 10, 100);
	EXPECT_TRUE(plan.withdraw.empty());
	ASSERT_EQ(plan.holding.size(), 1u);
	plan = plan_upstream({}, {from("198.18.3.1/32")}, mine, 3, 10, 105);
	EXPECT_EQ(plan.withdraw.size(), 1u);
	EXPECT_TRUE(plan.holding.empty());
	mine[0].held = false; // the operator's: withdrawn when removed
	plan = plan_upstream({}, {from("198.18.3.1/32")}, mine, 3, 10, 96);
	EXPECT_EQ(plan.withdraw.size(), 1u);
}

TEST(UpstreamPlan, NeverMoreThanMaxAndTheFirstWin)
{
	auto plan = plan_upstream({want("198.18.3.1/32"), want("198.18.3.2/32"), want("198.18.3.3/32"),
				   want("198.18.3.4/32"), want("198.18.3.1/32")},
				  {}, {}, 3, 10, 100);
	ASSERT_EQ(plan.announce.size(), 3u);
	EXPECT_EQ(plan.announce[2].rule, from("198.18.3.3/32"));
	ASSERT_EQ(plan.over_max.size(), 1u); // the duplicate counts once
	EXPECT_EQ(plan.over_max[0].rule, from("198.18.3.4/32"));
}

TEST(UpstreamPlan, RulesHeldPastTheirWantCountAgainstMax)
{
	std::vector<UpstreamHeld> mine{{from("198.18.3.8/32"), "eth0", "auto", 99, true},
				       {from("198.18.3.9/32"), "eth0", "auto", 99, true}};
	auto plan = plan_upstream({want("198.18.3.1/32"), want("198.18.3.2/32")},
				  {from("198.18.3.8/32"), from("198.18.3.9/32")}, mine, 3, 10, 100);
	EXPECT_EQ(plan.holding.size(), 2u);
	ASSERT_EQ(plan.announce.size(), 1u);
	EXPECT_EQ(plan.announce[0].rule, from("198.18.3.1/32"));
	ASSERT_EQ(plan.over_max.size(), 1u);
	EXPECT_EQ(plan.over_max[0].rule, from("198.18.3.2/32"));
}

} // namespace
} // namespace sluice
