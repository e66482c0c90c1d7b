// ipc/encode: the typed replies of standing as JSON, the shapes protocol.h
// documents (the one place they are made).
#include "ipc/encode.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

StandingStatus table()
{
	StandingStatus s;
	s.occupancy = {1311, 524288, 2};
	s.lapse_s = 3600;
	s.feeders = true;
	s.valve_closed = true;
	s.valve_since_ns = 1764568533000000000ull; // 2025-12-01T05:55:33Z
	s.rate_pps = 1000000;
	s.burst = 100000;
	s.newcomer_pps = 100000;
	s.newcomer_burst = 10000;
	s.observe_periods = 0;
	s.occupancy_age_s = 4.23;
	return s;
}

TEST(Encode, StandingStatus)
{
	json j = encode(table());
	EXPECT_EQ(j, (json{{"entries", 1311},
			   {"capacity", 524288},
			   {"full_sets", 2},
			   {"occupancy_pct", 0.25},
			   {"counted_s_ago", 4.2},
			   {"lapse_s", 3600},
			   {"feeders", true},
			   {"valve", {{"closed", true}, {"since", "2025-12-01T05:55:33Z"}}},
			   {"rate_pps", 1000000},
			   {"burst", 100000},
			   {"newcomer", {{"pps", 100000}, {"burst", 10000}}},
			   {"observed", {{"on", false}, {"periods", 0}}}}));
	StandingStatus never = table();
	never.valve_closed = false, never.valve_since_ns = 0, never.observe_periods = 4;
	j = encode(never);
	EXPECT_EQ(j["valve"], (json{{"closed", false}, {"since", ""}}));
	EXPECT_EQ(j["observed"], (json{{"on", true}, {"periods", 4}}));
	// An empty table of no capacity is 0%, not a division by zero.
	EXPECT_EQ(encode(StandingStatus{})["occupancy_pct"], 0.0);
}

TEST(Encode, StandingSummaryHasNoEntryFields)
{
	json j = encode(StandingView{"eth0", table(), std::nullopt});
	json want = encode(table());
	want["share"] = {{"level_pps", nullptr}, {"newer_level_pps", nullptr}, {"tenure_s", 0}, {"capacity_pps", 0},
			 {"revocations", 0}, {"recent", json::array()}};
	want["prefix_quota"] = {{"quota", 0}, {"prefixes_full", 0}, {"evictions", 0}};
	EXPECT_EQ(j, (json{{"iface", "eth0"}, {"standing", want}}));
}

TEST(Encode, StandingPrefixQuotaFigures)
{
	StandingView v{"eth0", table(), std::nullopt};
	v.prefix_quota = 64;
	v.prefixes_full = 3;
	v.quota_evictions = 17;
	EXPECT_EQ(encode(v)["standing"]["prefix_quota"],
		  (json{{"quota", 64}, {"prefixes_full", 3}, {"evictions", 17}}));
}

TEST(Encode, StandingShareAndRevocations)
{
	StandingView v{"eth0", table(), std::nullopt};
	v.share_pps = 196;
	v.capacity_pps = 10000;
	v.revocations = 51;
	RevocationEvent e;
	e.at_realtime_ns = 1764568533000000000ull;
	e.source = *parse_address("198.18.3.10");
	e.reason = SLUICE_BY_ACCEPTED;
	e.offered_pps = 1200.4;
	e.share_pps = 196;
	e.revocations = 1;
	e.until_realtime_ns = 1764568593000000000ull;
	e.why = "offered 1200 pps > 4 x share 196 pps for 3 periods; penalty 60 s";
	v.recent.push_back(e);
	json s = encode(v)["standing"]["share"];
	EXPECT_EQ(s["level_pps"], 196);
	EXPECT_EQ(s["newer_level_pps"], nullptr) << "no tenure line in force";
	v.newer_share_pps = 12, v.tenure_s = 300;
	EXPECT_EQ(encode(v)["standing"]["share"]["newer_level_pps"], 12);
	EXPECT_EQ(encode(v)["standing"]["share"]["tenure_s"], 300);
	EXPECT_EQ(s["capacity_pps"], 10000);
	EXPECT_EQ(s["revocations"], 51);
	ASSERT_EQ(s["recent"].size(), 1u);
	EXPECT_EQ(s["recent"][0], (json{{"at", "2025-12-01T05:55:33Z"},
					{"source", "198.18.3.10"},
					{"reason", "accepted"},
					{"offered_pps", 1200},
					{"share_pps", 196},
					{"revocations", 1},
					{"until", "2025-12-01T05:56:33Z"},
					{"by", "share"},
					{"why", e.why}}));
	e.by_operator = true, e.reason = 0;
	json r = encode(StandingRevokeReply{"eth0", e});
	EXPECT_EQ(r["revoked"]["by"], "operator");
	EXPECT_EQ(r["revoked"]["reason"], nullptr);
}

TEST(Encode, StandingEntryLiveLapsedAndAbsent)
{
	auto addr = parse_address("198.51.100.7");
	auto source = parse_cidr("198.51.100.0/24");
	ASSERT_TRUE(addr && source);
	StandingRecord live{true, SLUICE_BY_ACCEPTED, 1764568533000000000ull, 1764568600000000000ull, 99999};
	json j = encode(StandingView{"eth0", table(), StandingLookup{*addr, *source, live}});
	EXPECT_EQ(j["addr"], "198.51.100.7");
	EXPECT_EQ(j["source"], "198.51.100.0/24");
	EXPECT_EQ(j["has_standing"], true);
	EXPECT_EQ(j["reason"], "accepted");
	EXPECT_EQ(j["since"], "2025-12-01T05:55:33Z");
	EXPECT_EQ(j["last_seen"], "2025-12-01T05:56:40Z");
	EXPECT_EQ(j["tokens"], 99999);
	EXPECT_EQ(j["standing"]["entries"], encode(table())["entries"]);
	EXPECT_EQ(j["penalty"], nullptr);

	// Lapsed: why and since when it had standing, no tokens.
	StandingRecord lapsed = live;
	lapsed.live = false, lapsed.reason = SLUICE_BY_OBSERVED;
	j = encode(StandingView{"eth0", table(), StandingLookup{*addr, *source, lapsed}});
	EXPECT_EQ(j["has_standing"], false);
	EXPECT_EQ(j["reason"], "observed");
	EXPECT_EQ(j["tokens"], nullptr);

	// No entry at all.
	StandingRecord none{false, sluice_standing_reason(0), 0, 0, 0};
	j = encode(StandingView{"eth0", table(), StandingLookup{*addr, *source, none}});
	EXPECT_EQ(j["has_standing"], false);
	for (const char *k : {"reason", "since", "last_seen", "tokens"})
		EXPECT_EQ(j[k], nullptr) << k;
}

TEST(Encode, InterfaceStatusCarriesStandingAndEveryOutcome)
{
	InterfaceStatus st;
	st.iface = "eth0";
	st.standing = table();
	json j = encode(st);
	EXPECT_EQ(j["standing"], encode(table()));
	for (const char *o : {"standing", "newcomer", "drop_valve"})
		EXPECT_TRUE(j["counters"].contains(o)) << o;
}

TEST(Encode, CookiesWithheldWhereTheirRepliesCannotLeave)
{
	ManagedStatus st;
	st.iface = "veth-host";
	st.maps = InterfaceStatus{};
	st.maps->iface = "veth-host";
	json j = encode(st);
	EXPECT_FALSE(j["cookies"].contains("asked")) << "--cookies off (or from pins): not read";
	EXPECT_FALSE(j["cookies"].contains("xdp_tx"));
	st.cookies_asked = SLUICE_COOKIES_SHEDDING;
	EXPECT_EQ(encode(st)["cookies"]["xdp_tx"], nullptr) << "not read yet";
	st.xdp_tx = XdpTxVerdict{false, "no XDP on the peer", "attach one"};
	j = encode(st);
	EXPECT_EQ(j["cookies"]["mode"], "off") << "the config's mode in force";
	EXPECT_EQ(j["cookies"]["asked"], "shedding");
	EXPECT_EQ(j["cookies"]["xdp_tx"], (json{{"delivers", false}, {"why", "no XDP on the peer"}, {"fix", "attach one"}}));
	st.xdp_tx = XdpTxVerdict{true, "the driver", ""};
	EXPECT_EQ(encode(st)["cookies"]["xdp_tx"]["fix"], nullptr);
}

TEST(Encode, CookieAcksSayWhetherTheSynStampsAreAsked)
{
	sluice_config cfg{};
	cfg.cookie_mode = SLUICE_COOKIES_SHEDDING;
	auto acks = [&](uint64_t now) { return encode(cookie_status(cfg, now))["acks"]; };
	// No feeders: the listener is looked up; no time set: no stamps asked.
	EXPECT_EQ(acks(1000), (json{{"looked_up", true}, {"syn_stamps", "off"}, {"syn_stamps_in_s", nullptr}}));
	cfg.cookie_acks_unlooked = 1;
	cfg.cookie_acks_stamped_from = 5'000'000'000;
	EXPECT_EQ(acks(2'500'000'000), (json{{"looked_up", false}, {"syn_stamps", "grace"}, {"syn_stamps_in_s", 2.5}}));
	EXPECT_EQ(acks(5'000'000'000), (json{{"looked_up", false}, {"syn_stamps", "asked"}, {"syn_stamps_in_s", nullptr}}));
	EXPECT_EQ(acks(9'000'000'000)["syn_stamps"], "asked");
}

TEST(Encode, PolicyStatusReloadAndExplain)
{
	PolicyStatus p;
	p.file = "/etc/sluice/policy.yaml";
	p.generation = 3;
	p.applied_ns = 1764568533000000000ull;
	p.set = 1;
	p.classes = {{0, "default"}, {4, "dns"}};
	p.rules = 2;
	p.reloads_applied = 2;
	p.reloads_refused = 1;
	json j = encode(p);
	EXPECT_EQ(j["file"], "/etc/sluice/policy.yaml");
	EXPECT_EQ(j["generation"], 3);
	EXPECT_EQ(j["applied"], "2025-12-01T05:55:33Z");
	EXPECT_EQ(j["classes"], (json::array({{{"id", 0}, {"name", "default"}}, {{"id", 4}, {"name", "dns"}}})));
	EXPECT_EQ(j["last_refused"], nullptr);
	p.last_refused = "policy.yaml:4:5: bad_value: class dns rate 0 is outside 1..100000000";
	EXPECT_EQ(encode(p)["last_refused"], p.last_refused);

	ManagedStatus st;
	st.iface = "eth0";
	st.error = "unreadable";
	EXPECT_EQ(encode(st)["policy_file"], nullptr);
	st.policy = p;
	EXPECT_EQ(encode(st)["policy_file"]["generation"], 3);

	ReloadReply r{{PolicyApplied{"eth0", "/p.yaml", 2, 0, 4, 10, 3, 1, 12.5}}};
	EXPECT_EQ(encode(r), (json{{"interfaces",
				     {{{"iface", "eth0"}, {"file", "/p.yaml"}, {"generation", 2}, {"set", 0}, {"classes", 4},
				       {"prefixes", 10}, {"list_entries", 3}, {"kept_runtime_entries", 1}, {"apply_ms", 12.5}}}}}));

	ExplainView e;
	e.iface = "eth0";
	e.frame = Frame{*parse_address("198.51.100.9"), Protocol::udp, 53};
	e.explanation.decided = Decided::rule;
	e.explanation.class_name = "dns";
	e.explanation.rule = 1;
	e.explanation.rule_text = "rule 2 (line 9): udp port 53 -> dns";
	e.text = "class dns (limit)\n";
	e.table_class = 4;
	e.table_class_name = "dns";
	e.bucket = *parse_cidr("198.51.100.9/32");
	e.slots = {7, 9};
	e.tokens = {3, 4};
	j = encode(e);
	EXPECT_EQ(j["source"], "198.51.100.9");
	EXPECT_EQ(j["protocol"], "udp");
	EXPECT_EQ(j["port"], 53);
	EXPECT_EQ(j["decided"], "rule");
	EXPECT_EQ(j["rule"], 2); // counted from 1, as describe_rule does
	EXPECT_EQ(j["class"], "dns");
	EXPECT_EQ(j["table_class"], 4);
	EXPECT_EQ(j["bucket"], "198.51.100.9/32");
	EXPECT_EQ(j["slots"], json::array({7, 9}));
	EXPECT_EQ(j["deny_entry"], nullptr);
	e.frame.protocol = Protocol::icmp;
	EXPECT_EQ(encode(e)["port"], nullptr);
}

TEST(Encode, BreakerRulePathLoopAndScheduling)
{
	// What the rule saw: the windowed rate, its threshold, the window.
	RuleView r;
	r.state = BreakerState::shedding;
	r.signal = "incoming";
	r.over_moves = false;
	r.threshold_pps = 3000;
	r.rate_pps = 5996.6;
	r.periods = 2;
	r.full_periods = 2;
	r.window_s = 1.0;
	r.incoming_pps = 5996.6;
	r.quiet_needed_s = 2;
	ManagedStatus st;
	st.iface = "eth0";
	st.error = "unreadable";
	st.rule = r;
	st.path.push_back(BreakerStep{1764568533000000000ull, BreakerState::serving, BreakerState::shedding, false,
				      "admitted 6000 pps over 2 periods (1.00 s) > trip 3000 pps"});
	json j = encode(st);
	EXPECT_EQ(j["breaker"]["rule"]["signal"], "incoming");
	EXPECT_EQ(j["breaker"]["rule"]["threshold_pps"], 3000);
	EXPECT_EQ(j["breaker"]["rule"]["rate_pps"], 5997);
	EXPECT_EQ(j["breaker"]["rule"]["moves_when"], "under");
	EXPECT_EQ(j["breaker"]["rule"]["verdict"], "over");
	EXPECT_EQ(j["breaker"]["rule"]["window"], (json{{"periods", 2}, {"full_periods", 2}, {"seconds", 1.0}}));
	EXPECT_EQ(j["breaker"]["rule"]["text"], "incoming 5996 pps over 2 periods (1.00 s) > clear 3000 pps");
	ASSERT_EQ(j["breaker"]["path"].size(), 1u);
	EXPECT_EQ(j["breaker"]["path"][0]["from"], "serving");
	EXPECT_EQ(j["breaker"]["path"][0]["to"], "shedding");
	EXPECT_EQ(j["breaker"]["path"][0]["at"], "2025-12-01T05:55:33Z");
	// Under the threshold: the quiet run shows.
	r.rate_pps = 10;
	EXPECT_EQ(encode(r)["verdict"], "under");
	r.quiet_s = 1.5;
	EXPECT_EQ(encode(r)["text"], "incoming 10 pps over 2 periods (1.00 s) < clear 3000 pps, under it for 1.50 s "
				     "of a 2.00 s hold");
	// No period yet: null, and no path.
	st.rule.reset();
	st.path.clear();
	EXPECT_EQ(encode(st)["breaker"]["rule"], nullptr);
	EXPECT_EQ(encode(st)["breaker"]["path"], json::array());

	DaemonInfo d;
	d.period_s = 0.5;
	d.loop = LoopTiming{12, 0.51, 0.75, 0.01, 0.25, 1};
	d.scheduling = SchedulingView{"fifo", 1, -10, 1, 0.5, false};
	j = encode(d);
	EXPECT_EQ(j["loop"], (json{{"ticks", 12}, {"period_s", 0.5}, {"last_period_s", 0.51}, {"max_period_s", 0.75},
				   {"last_late_s", 0.01}, {"max_late_s", 0.25}, {"late_ticks", 1}}));
	EXPECT_EQ(j["scheduling"], (json{{"policy", "fifo"}, {"priority", 1}, {"nice", -10}, {"rt_priority_asked", 1},
					 {"rttime_limit_s", 0.5}, {"demoted", false}}));
}

TEST(Encode, UpstreamSpeakerAnsweredIntendedAndInSync)
{
	// The worker off the control loop: never answered, nothing handed to it.
	UpstreamView v;
	v.enabled = true;
	v.speaker = "127.0.0.1:50051";
	json j = encode(v);
	EXPECT_TRUE(j.at("speaker").at("answered_ago_s").is_null());
	EXPECT_EQ(j.at("intended"), 0);
	EXPECT_EQ(j.at("in_sync"), false);
	// The speaker hung since its last answer: two rules wanted, not confirmed.
	v.answered_ago_s = 12.5;
	v.intended = 2;
	j = encode(v);
	EXPECT_EQ(j.at("speaker").at("answered_ago_s"), 12.5);
	EXPECT_EQ(j.at("intended"), 2);
	EXPECT_EQ(j.at("in_sync"), false);
	v.in_sync = true;
	EXPECT_EQ(encode(v).at("in_sync"), true);
}

} // namespace
} // namespace sluice
