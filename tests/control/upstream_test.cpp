// logic/upstream: the rules, the guards (the protection of allowlisted and
// standing sources over a rule's whole reach, the proof an automatic source
// rule needs) and the reconciliation of the announcement set, with no
// speaker and no daemon.
#include "logic/upstream.h"

#include "bpf/sluice_abi.h"
#include "logic/classes.h"

#include <gtest/gtest.h>

#include <algorithm>

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

std::optional<std::string> nothing_protected(const RuleReach &)
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
	UpstreamRule r;
	r.destination = cidr("198.18.1.2/32");
	r.source = cidr("198.18.3.0/24");
	r.protocol = 17;
	r.dport = 53;
	r.length = 128;
	r.action = UpstreamAction::rate_limit;
	r.rate_bytes = 125000;
	EXPECT_EQ(r.str(), "dst 198.18.1.2/32 src 198.18.3.0/24 proto 17 dport 53 length 128 rate 125000 B/s");
	r.source.reset();
	r.protocol = 6;
	r.tcp_flags = 0x12;
	r.action = UpstreamAction::discard;
	EXPECT_EQ(r.str(), "dst 198.18.1.2/32 proto 6 dport 53 tcp-flags 0x12 length 128 discard");
	EXPECT_TRUE(check_rule(guards(), r, nothing_protected));
	r.protocol = 17; // TCP flags without TCP
	auto ok = check_rule(guards(), r, nothing_protected);
	ASSERT_FALSE(ok);
	EXPECT_NE(ok.error().message.find("TCP flags need protocol TCP"), std::string::npos) << ok.error().message;
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

// A protection hook over a list, as the daemon's answers it: an
// allowlisted prefix overlapping the reach, either way.
ProtectedSource allowlist_of(std::vector<Cidr> allow)
{
	return [allow](const RuleReach &r) -> std::optional<std::string> {
		for (const auto &a : allow)
			if (contains(a, r.sources) || contains(r.sources, a))
				return "an allowlisted prefix (" + a.str() + " on eth0)";
		return std::nullopt;
	};
}

TEST(UpstreamGuards, AProtectedSourceIsNeverAnnounced)
{
	auto allowlisted = allowlist_of({cidr("198.18.2.0/24")});
	auto ok = check_rule(guards(), from("198.18.2.0/24"), allowlisted);
	ASSERT_FALSE(ok);
	EXPECT_EQ(ok.error().kind, ErrorKind::refused);
	EXPECT_EQ(ok.error().message, "upstream rule 'dst 198.18.1.0/24 src 198.18.2.0/24 discard' refused: it would drop "
				      "an allowlisted prefix (198.18.2.0/24 on eth0): never announced");
	EXPECT_TRUE(check_rule(guards(), from("198.18.3.0/24"), allowlisted));
	// The whole announced prefix: a /24 holding an allowlisted /32, and a
	// /32 inside an allowlisted /24, are both refused.
	EXPECT_FALSE(check_rule(guards(), from("198.18.5.0/24"), allowlist_of({cidr("198.18.5.77/32")})));
	EXPECT_FALSE(check_rule(guards(), from("198.18.2.9/32"), allowlisted));
}

// The hook is asked about what the rule would drop: a source rule's whole
// prefix and its protocol and port; a blackhole's whole prefix, every
// protocol; a rule without a source, every address of its family; a
// destination blackhole is the operator's opt-in and asks nothing.
TEST(UpstreamGuards, TheHookIsAskedAboutTheRulesWholeReach)
{
	UpstreamRule r = from("198.18.3.0/24");
	EXPECT_EQ(rule_reach(r), (RuleReach{cidr("198.18.3.0/24"), std::nullopt, std::nullopt}));
	r.protocol = 17;
	r.dport = 53;
	EXPECT_EQ(rule_reach(r), (RuleReach{cidr("198.18.3.0/24"), uint8_t(17), uint16_t(53)}));
	auto bh = source_rules(guards(), cidr("198.18.4.0/24"), UpstreamMode::blackhole, UpstreamAction::discard, 0).at(0);
	EXPECT_EQ(rule_reach(bh), (RuleReach{cidr("198.18.4.0/24"), std::nullopt, std::nullopt}));
	UpstreamRule sig;
	sig.destination = cidr("2001:2::2/128");
	sig.protocol = 6;
	EXPECT_EQ(rule_reach(sig), (RuleReach{cidr("::/0"), uint8_t(6), std::nullopt}));
	sig.destination = cidr("198.18.1.2/32");
	EXPECT_EQ(rule_reach(sig), (RuleReach{cidr("0.0.0.0/0"), uint8_t(6), std::nullopt}));
	EXPECT_FALSE(rule_reach(destination_blackhole(*parse_address("198.18.1.2"))));

	std::vector<RuleReach> asked;
	ProtectedSource record = [&](const RuleReach &x) -> std::optional<std::string> {
		asked.push_back(x);
		return std::nullopt;
	};
	EXPECT_TRUE(check_rule(guards(), bh, record));
	EXPECT_TRUE(check_rule(guards(), sig, record));
	EXPECT_TRUE(check_rule(guards(), destination_blackhole(*parse_address("198.18.1.2")), record));
	ASSERT_EQ(asked.size(), 2u);
	EXPECT_EQ(asked[0].sources, cidr("198.18.4.0/24"));
	EXPECT_EQ(asked[1].sources, cidr("0.0.0.0/0"));
}

// The flood's signature names no source: it drops an allowlisted client's
// frames of its shape as well as the flood's. Refused, saying what it would
// drop and how the operator opts in; passed with no protection asked (the
// caller's opt-in) and when nothing is protected.
TEST(UpstreamGuards, ASignatureCoveringAnAllowlistedClientIsRefused)
{
	UpstreamRule sig;
	sig.destination = cidr("198.18.1.2/32");
	sig.protocol = 17;
	sig.dport = 5353;
	sig.length = 186;
	auto ok = check_rule(guards(), sig, allowlist_of({cidr("198.18.2.2/32")}));
	ASSERT_FALSE(ok);
	EXPECT_EQ(ok.error().kind, ErrorKind::refused);
	EXPECT_EQ(ok.error().message, "upstream rule 'dst 198.18.1.2/32 proto 17 dport 5353 length 186 discard' refused: it "
				      "names no source, so it would drop an allowlisted prefix (198.18.2.2/32 on eth0) too: a "
				      "last resort, announced only with --upstream-blackhole");
	// An allowlisted IPv6 prefix does not reach an IPv4 signature.
	EXPECT_TRUE(check_rule(guards(), sig, allowlist_of({cidr("2001:2:0:2::/64")})));
	EXPECT_TRUE(check_rule(guards(), sig, nothing_protected));
	EXPECT_TRUE(check_rule(guards(), sig, nullptr)); // the last resort: the caller asks nothing
	// Every other guard still holds without protection.
	sig.destination = cidr("198.18.2.2/32");
	EXPECT_FALSE(check_rule(guards(), sig, nullptr));
}

// What a standing entry is known to send decides whether a rule reaches it.
TEST(UpstreamGuards, AStandingEntryIsReachedByWhatItsProofShowsItSends)
{
	const PortSpan eph{32768, 60999};
	auto reach = [](std::optional<uint8_t> proto, std::optional<uint16_t> dport) {
		return RuleReach{cidr("0.0.0.0/0"), proto, dport};
	};
	const StandingProof accepted{SLUICE_BY_ACCEPTED, 0}, cookie{SLUICE_BY_COOKIE, 0},
		connected{SLUICE_BY_CONNECTED, 0}, existing{SLUICE_BY_EXISTING, 0}, udp{SLUICE_BY_UDP, 53},
		observed{SLUICE_BY_OBSERVED, 0}, unknown{99, 0};
	// A rule naming no protocol (a source rule) reaches every entry.
	for (const auto &e : {accepted, cookie, connected, existing, udp, observed, unknown})
		EXPECT_TRUE(standing_reaches(e, reach(std::nullopt, std::nullopt), eph));
	// TCP proofs: TCP rules only.
	for (const auto &e : {accepted, cookie, connected, existing}) {
		EXPECT_TRUE(standing_reaches(e, reach(6, 80), eph));
		EXPECT_FALSE(standing_reaches(e, reach(17, 5353), eph));
		EXPECT_FALSE(standing_reaches(e, reach(1, std::nullopt), eph));
	}
	// A UDP grant: UDP to the host's ephemeral ports (a client socket's).
	EXPECT_TRUE(standing_reaches(udp, reach(17, std::nullopt), eph));
	EXPECT_TRUE(standing_reaches(udp, reach(17, 40000), eph));
	EXPECT_FALSE(standing_reaches(udp, reach(17, 5353), eph));
	EXPECT_FALSE(standing_reaches(udp, reach(17, 61000), eph));
	EXPECT_FALSE(standing_reaches(udp, reach(6, 40000), eph));
	// Port-bound whatever its recorded reason.
	EXPECT_FALSE(standing_reaches(StandingProof{SLUICE_BY_ACCEPTED, 53}, reach(6, 80), eph));
	// Observed standing and an unknown reason: everything.
	EXPECT_TRUE(standing_reaches(observed, reach(1, std::nullopt), eph));
	EXPECT_TRUE(standing_reaches(unknown, reach(17, 9), eph));
}

TEST(UpstreamGuards, AReachIndexFindsEveryReachHoldingAnAddress)
{
	std::vector<RuleReach> reaches = {
		{cidr("198.18.3.0/24"), std::nullopt, std::nullopt}, {cidr("0.0.0.0/0"), uint8_t(17), uint16_t(9)},
		{cidr("198.18.0.0/16"), std::nullopt, std::nullopt}, {cidr("2001:2:0:3::/64"), std::nullopt, std::nullopt},
		{cidr("0.0.0.0/0"), uint8_t(6), std::nullopt},       {cidr("198.18.3.128/25"), std::nullopt, std::nullopt},
		{cidr("198.18.3.0/24"), uint8_t(1), std::nullopt}};
	ReachIndex index(reaches);
	auto holding = [&](const char *a) {
		std::vector<size_t> out;
		index.holding(*parse_address(a), [&](size_t i) { out.push_back(i); });
		std::sort(out.begin(), out.end());
		return out;
	};
	EXPECT_EQ(holding("198.18.3.7"), (std::vector<size_t>{0, 1, 2, 4, 6}));
	EXPECT_EQ(holding("198.18.3.200"), (std::vector<size_t>{0, 1, 2, 4, 5, 6}));
	EXPECT_EQ(holding("198.18.9.1"), (std::vector<size_t>{1, 2, 4}));
	EXPECT_EQ(holding("203.0.113.1"), (std::vector<size_t>{1, 4}));
	EXPECT_EQ(holding("2001:2:0:3::1"), (std::vector<size_t>{3})); // no IPv6 /0 asked
	EXPECT_TRUE(holding("2001:2:0:4::1").empty());
	ReachIndex none(std::vector<RuleReach>{});
	bool called = false;
	none.holding(*parse_address("198.18.3.7"), [&](size_t) { called = true; });
	EXPECT_FALSE(called);
}

// An automatic source rule names a source only when its address is proved,
// then abused: a penalty runs after its standing was revoked.
TEST(SourceProof, OnlyAProvedThenAbusedAddressIsNamed)
{
	auto src = cidr("198.18.3.10/32");
	auto ok = source_proof(src, [](const Cidr &) -> Result<std::optional<std::string>> {
		return std::optional<std::string>("its standing was revoked (revocation 1; barred for another 59 s)");
	});
	ASSERT_TRUE(ok);
	EXPECT_EQ(*ok, "its standing was revoked (revocation 1; barred for another 59 s)");
	auto none = source_proof(src, [](const Cidr &) -> Result<std::optional<std::string>> {
		return std::optional<std::string>{};
	});
	ASSERT_FALSE(none);
	EXPECT_EQ(none.error().kind, ErrorKind::refused);
	EXPECT_EQ(none.error().message.rfind("upstream: 198.18.3.10/32 refused: its address is not proved", 0), 0u)
		<< none.error().message;
	auto unreadable = source_proof(src, [](const Cidr &) -> Result<std::optional<std::string>> {
		return fail(ErrorKind::system, "reading penalty set 7", EIO);
	});
	ASSERT_FALSE(unreadable);
	EXPECT_NE(unreadable.error().message.find("cannot be read (reading penalty set 7"), std::string::npos)
		<< unreadable.error().message;
	EXPECT_FALSE(source_proof(src, nullptr));
}

// The filed case: a flood from the attacker's link carrying a victim's
// address, with random sources beside it. The victim is heavy in the drop
// samples (concentration alone would name it), and not proved: no rule.
TEST(SourceProof, ASpoofedFloodNamingAVictimAmongRandomSourcesNamesNoOne)
{
	std::vector<DroppedSource> heaviest = {{cidr("198.18.2.77/32"), 700, 0},
					       {cidr("198.18.120.3/32"), 3, 2},
					       {cidr("198.19.7.41/32"), 3, 2}};
	auto picked = flood_sources(heaviest, 1000, 3);
	ASSERT_FALSE(picked.spread);
	ASSERT_EQ(picked.sources.size(), 1u); // heavy: 70% of the samples
	EXPECT_EQ(picked.sources[0].source, cidr("198.18.2.77/32"));
	// Nothing in the standing table proved it: the penalty map is empty.
	ProvedSource no_penalty = [](const Cidr &) -> Result<std::optional<std::string>> {
		return std::optional<std::string>{};
	};
	EXPECT_FALSE(source_proof(picked.sources[0].source, no_penalty));
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


// Blackholes: a source-based one (RFC 5635) is the source's prefix, held to
// the source guards and never one of the own prefixes; the last resort is
// one own address.
TEST(UpstreamBlackhole, SourceBasedAndDestinationRulesAndTheirGuards)
{
	auto g = guards();
	auto src = source_rules(g, cidr("198.18.3.7/32"), UpstreamMode::blackhole, UpstreamAction::discard, 0);
	ASSERT_EQ(src.size(), 1u);
	EXPECT_EQ(src[0].str(), "blackhole src 198.18.3.7/32");
	EXPECT_EQ(src[0].kind, UpstreamKind::blackhole_source);
	EXPECT_TRUE(check_rule(g, src[0], nothing_protected));
	auto refused_why = [&](const UpstreamRule &r, ProtectedSource p = nothing_protected) {
		auto ok = check_rule(g, r, p);
		EXPECT_FALSE(ok) << r.str();
		return ok ? std::string() : ok.error().message;
	};
	auto bh = [&](const char *c) {
		return source_rules(g, cidr(c), UpstreamMode::blackhole, UpstreamAction::discard, 0).at(0);
	};
	EXPECT_NE(refused_why(bh("203.0.0.0/16")).find("shorter than /24"), std::string::npos);
	EXPECT_NE(refused_why(bh("198.18.1.7/32")).find("overlaps --upstream-prefixes"), std::string::npos);
	EXPECT_NE(refused_why(bh("198.18.0.0/16")).find("overlaps"), std::string::npos);
	EXPECT_NE(refused_why(bh("2001:2:0:3::/64")).find("overlaps"), std::string::npos); // inside 2001:2::/48
	EXPECT_NE(refused_why(bh("198.18.3.0/24"), [](const RuleReach &) -> std::optional<std::string> { return "allowlisted (x)"; })
			  .find("it would drop allowlisted (x)"),
		  std::string::npos);

	UpstreamRule last = destination_blackhole(*parse_address("198.18.1.2"));
	EXPECT_EQ(last.str(), "blackhole dst 198.18.1.2/32");
	EXPECT_TRUE(check_rule(g, last, nullptr));
	EXPECT_EQ(destination_blackhole(*parse_address("2001:2::2")).str(), "blackhole dst 2001:2::2/128");
	EXPECT_NE(refused_why(destination_blackhole(*parse_address("198.18.2.2"))).find("outside --upstream-prefixes"),
		  std::string::npos);
	last.destination = cidr("198.18.1.0/24");
	EXPECT_NE(refused_why(last).find("of one address"), std::string::npos);
	// FlowSpec with the automatic action.
	auto rate = source_rules(g, cidr("198.18.3.7/32"), UpstreamMode::flowspec, UpstreamAction::rate_limit, 1000);
	EXPECT_EQ(rate.at(0).str(), "dst 198.18.1.0/24 src 198.18.3.7/32 rate 1000 B/s");
}

// The trigger, on a fake clock: over a threshold for --upstream-after while
// shedding fires; it stays fired while shedding whatever arrives (the
// upstream dropping the flood makes it fall); leaving shedding ends it.
TEST(FloodTrigger, FiresAfterTheTimeOverAThresholdWhileSheddingAndEndsWithShedding)
{
	UpstreamAutoConfig c;
	c.pps = 1000;
	c.bps = 8'000'000;
	c.after_s = 10;
	FloodTrigger t(c);
	auto at = [&](double now, bool shedding, double pps, double bps) {
		return t.step(FloodReading{now, shedding, pps, bps});
	};
	// Over, but not shedding: nothing.
	EXPECT_FALSE(at(0, false, 5000, 1e9).firing);
	// No rates yet (the first period): nothing.
	EXPECT_FALSE(t.step(FloodReading{1, true, std::nullopt, std::nullopt}).firing);
	// Shedding and over pps from t=2; a dip under both at t=8 restarts the clock.
	EXPECT_FALSE(at(2, true, 5000, 1).firing);
	EXPECT_FALSE(at(7, true, 5000, 1).firing);
	EXPECT_FALSE(at(8, true, 500, 1).firing);
	EXPECT_FALSE(at(9, true, 1, 9e6).firing); // over bps now
	EXPECT_FALSE(at(18.9, true, 1, 9e6).firing);
	auto s = at(19, true, 2000, 9e6);
	EXPECT_TRUE(s.firing);
	EXPECT_TRUE(s.fired_now);
	EXPECT_EQ(s.why, "arriving 2000 pps (over --upstream-pps 1000), 9000000 bit/s (over --upstream-bps 8000000) for 10 s "
			 "while shedding");
	// The upstream drops the flood: what arrives falls; still firing.
	s = at(20, true, 10, 10);
	EXPECT_TRUE(s.firing);
	EXPECT_FALSE(s.fired_now);
	EXPECT_TRUE(at(400, true, 0, 0).firing);
	// Leaving shedding ends it, once.
	s = at(401, false, 0, 0);
	EXPECT_FALSE(s.firing);
	EXPECT_TRUE(s.ended_now);
	EXPECT_FALSE(at(402, false, 0, 0).ended_now);
	// Shedding again: the time over the threshold counts anew.
	EXPECT_FALSE(at(403, true, 5000, 0).firing);
	EXPECT_TRUE(at(413, true, 5000, 0).fired_now);

	// after 0: the first period over fires; a threshold of 0 is no trigger.
	UpstreamAutoConfig now_c;
	now_c.pps = 1000;
	now_c.after_s = 0;
	FloodTrigger now(now_c);
	EXPECT_TRUE(now.step(FloodReading{0, true, 1001.0, 1e12}).fired_now);
	FloodTrigger off(UpstreamAutoConfig{});
	EXPECT_FALSE(off.step(FloodReading{0, true, 1e9, 1e12}).firing);
	EXPECT_FALSE(off.step(FloodReading{100, true, 1e9, 1e12}).firing);
}

TEST(FloodSources, TheHeaviestOfANonSpoofedFloodAndNoneOfASpreadOne)
{
	// Three attackers carry 90% of 1000 samples; a fourth source is light.
	std::vector<DroppedSource> few = {{cidr("198.18.3.10/32"), 400, 0},
					  {cidr("198.18.3.11/32"), 300, 0},
					  {cidr("198.18.3.12/32"), 200, 0},
					  {cidr("198.18.2.2/32"), 30, 0}};
	auto f = flood_sources(few, 1000, 4);
	EXPECT_FALSE(f.spread);
	ASSERT_EQ(f.sources.size(), 3u); // 198.18.2.2 carries 3% (under 5%)
	EXPECT_EQ(f.sources[0].source, cidr("198.18.3.10/32"));
	EXPECT_EQ(f.sources[2].source, cidr("198.18.3.12/32"));
	EXPECT_EQ(f.why, "the 4 heaviest sources carry 93% of the drop samples");
	// At most `top`.
	EXPECT_EQ(flood_sources(few, 1000, 2).sources.size(), 2u);
	// Space-Saving's overestimates do not count: counts that are mostly
	// error (a random-source flood) are spread.
	std::vector<DroppedSource> random = {{cidr("198.18.77.1/32"), 12, 11},
					     {cidr("198.18.12.9/32"), 12, 11},
					     {cidr("198.18.200.3/32"), 11, 10},
					     {cidr("198.18.5.5/32"), 11, 10}};
	f = flood_sources(random, 10000, 4);
	EXPECT_TRUE(f.spread);
	EXPECT_TRUE(f.sources.empty());
	EXPECT_NE(f.why.find("spread over many sources"), std::string::npos) << f.why;
	// Too few samples to say anything about one source.
	std::vector<DroppedSource> thin = {{cidr("198.18.3.10/32"), 3, 0}};
	EXPECT_TRUE(flood_sources(thin, 3, 4).sources.empty());
	EXPECT_TRUE(flood_sources({}, 0, 4).sources.empty());
}

// The automatic rules are held: not wanted any more, they stay until the
// hold is over, counted against --upstream-max.
TEST(UpstreamPlan, AutomaticRulesStayForTheHoldAfterTheBreakerLeavesShedding)
{
	auto r = from("198.18.3.10/32");
	std::vector<UpstreamHeld> mine = {{r, "veth", "automatic", 100, true}};
	auto plan = plan_upstream({}, {r}, mine, 3, 300, 350);
	EXPECT_EQ(plan.holding, (std::vector<UpstreamRule>{r}));
	EXPECT_TRUE(plan.withdraw.empty());
	plan = plan_upstream({}, {r}, mine, 3, 300, 400);
	EXPECT_EQ(plan.withdraw, (std::vector<UpstreamRule>{r}));
}

// ---- The flood's signature (flood_signature) ----

Address addr(const char *text)
{
	return cidr(text).addr;
}

SignatureSample udp_to(const char *dst, uint16_t port, uint16_t length)
{
	SignatureSample s;
	s.dst = addr(dst);
	s.proto = 17;
	s.dport = port;
	s.length = length;
	return s;
}

TEST(FloodSignature, ConstantComponentsAreKeptAndVaryingOnesLeftOut)
{
	SignatureTally t;
	// 100 samples: UDP to 198.18.1.2 port 9, 85 of them of 128 bytes (under
	// the 90% share: left out), the rest of other lengths.
	for (int i = 0; i < 95; i++)
		t.add(udp_to("198.18.1.2/32", 9, i < 85 ? 128 : uint16_t(200 + i)));
	for (int i = 0; i < 5; i++)
		t.add(udp_to("198.18.1.2/32", 9, uint16_t(60 + i)));
	auto sig = flood_signature(t, guards(), UpstreamAction::discard, 0);
	ASSERT_TRUE(sig.rule) << sig.why;
	EXPECT_EQ(sig.rule->str(), "dst 198.18.1.2/32 proto 17 dport 9 discard") << sig.why;
	EXPECT_NE(sig.why.find("length 128 (85%, left out)"), std::string::npos) << sig.why;

	// The length constant too: kept. Rate-limited as asked.
	t.clear();
	for (int i = 0; i < 100; i++)
		t.add(udp_to("198.18.1.2/32", 9, 128));
	sig = flood_signature(t, guards(), UpstreamAction::rate_limit, 125000);
	ASSERT_TRUE(sig.rule) << sig.why;
	EXPECT_EQ(sig.rule->str(), "dst 198.18.1.2/32 proto 17 dport 9 length 128 rate 125000 B/s");
	EXPECT_TRUE(check_rule(guards(), *sig.rule, nothing_protected));
}

TEST(FloodSignature, ASynFloodKeepsItsFlagsAndItsPortsWhenTheyAreOne)
{
	SignatureTally t;
	for (int i = 0; i < 200; i++) {
		SignatureSample s;
		s.dst = addr("2001:2::2/128");
		s.proto = 6;
		s.dport = uint16_t(i % 2 ? 80 : 443); // two ports: 50% each, left out
		s.tcp_flags = 0x02;
		s.length = 60;
		t.add(s);
	}
	auto sig = flood_signature(t, guards(), UpstreamAction::discard, 0);
	ASSERT_TRUE(sig.rule) << sig.why;
	EXPECT_EQ(sig.rule->str(), "dst 2001:2::2/128 proto 6 tcp-flags 0x02 length 60 discard");
	EXPECT_EQ(sig.rule->destination.prefix, 128u);
	EXPECT_TRUE(check_rule(guards(), *sig.rule, nothing_protected));
}

TEST(FloodSignature, TooFewSamplesGiveNoSignature)
{
	SignatureTally t;
	for (uint64_t i = 0; i + 1 < kSignatureMinSamples; i++)
		t.add(udp_to("198.18.1.2/32", 9, 128));
	auto sig = flood_signature(t, guards(), UpstreamAction::discard, 0);
	EXPECT_FALSE(sig.rule);
	EXPECT_NE(sig.why.find("a signature needs " + std::to_string(kSignatureMinSamples)), std::string::npos) << sig.why;
	t.add(udp_to("198.18.1.2/32", 9, 128));
	EXPECT_TRUE(flood_signature(t, guards(), UpstreamAction::discard, 0).rule);
}

TEST(FloodSignature, ADestinationOrProtocolThatVariesGivesNone)
{
	SignatureTally t;
	for (int i = 0; i < 100; i++)
		t.add(udp_to(i % 4 ? "198.18.1.2/32" : "198.18.1.3/32", 9, 128)); // 75%
	auto sig = flood_signature(t, guards(), UpstreamAction::discard, 0);
	EXPECT_FALSE(sig.rule);
	EXPECT_NE(sig.why.find("the destination is not one"), std::string::npos) << sig.why;

	t.clear();
	for (int i = 0; i < 100; i++) {
		auto s = udp_to("198.18.1.2/32", 9, 128);
		s.proto = i % 2 ? 17 : 1;
		t.add(s);
	}
	sig = flood_signature(t, guards(), UpstreamAction::discard, 0);
	EXPECT_FALSE(sig.rule); // the destination alone would be a blackhole of it
	EXPECT_NE(sig.why.find("the protocol is not one"), std::string::npos) << sig.why;
}

TEST(FloodSignature, ADestinationOutsideTheOwnPrefixesIsRefused)
{
	SignatureTally t;
	for (int i = 0; i < 100; i++)
		t.add(udp_to("198.18.7.2/32", 9, 128));
	auto sig = flood_signature(t, guards(), UpstreamAction::discard, 0);
	EXPECT_FALSE(sig.rule);
	EXPECT_NE(sig.why.find("198.18.7.2/32 is outside --upstream-prefixes"), std::string::npos) << sig.why;
}

TEST(FloodSignature, TheAttackedAddressIsTheSamplesOneDestination)
{
	SignatureTally t;
	for (int i = 0; i < 100; i++) {
		auto s = udp_to("198.18.1.2/32", uint16_t(i), uint16_t(60 + i)); // ports and lengths vary
		s.proto = i % 2 ? 17 : 6;
		t.add(s);
	}
	auto a = attacked_address(t);
	ASSERT_TRUE(a);
	EXPECT_EQ(a->str(), "198.18.1.2");
	EXPECT_FALSE(flood_signature(t, guards(), UpstreamAction::discard, 0).rule); // the protocol varies
	t.clear();
	for (int i = 0; i < 100; i++)
		t.add(udp_to(i % 4 ? "198.18.1.2/32" : "198.18.1.3/32", 9, 128)); // 75%
	EXPECT_FALSE(attacked_address(t));
	t.clear();
	for (uint64_t i = 0; i + 1 < kSignatureMinSamples; i++)
		t.add(udp_to("198.18.1.2/32", 9, 128));
	EXPECT_FALSE(attacked_address(t));
}

TEST(FloodSignature, TheTallyIsBoundedAndCountsTheRestAsOther)
{
	SignatureTally t;
	for (int i = 0; i < 1000; i++)
		t.add(udp_to("198.18.1.2/32", uint16_t(i), 128));
	EXPECT_EQ(t.dport.used, kSignatureValues);
	EXPECT_EQ(t.dport.other, 1000 - kSignatureValues);
	auto sig = flood_signature(t, guards(), UpstreamAction::discard, 0);
	ASSERT_TRUE(sig.rule);
	EXPECT_EQ(sig.rule->str(), "dst 198.18.1.2/32 proto 17 length 128 discard");
}

} // namespace
} // namespace sluice
