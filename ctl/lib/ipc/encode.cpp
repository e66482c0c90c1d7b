#include "ipc/encode.h"

#include "base/cookie_mode.h"
#include "base/standing_reason.h"

#include <cmath>

namespace sluice {

namespace {

// The audit's counts; the audit command adds the table size ("slots").
json audit_json(const AuditReport &a)
{
	return {{"swept", a.swept},
		{"violations", a.violations},
		{"last_sweep_violations", a.last_violations},
		{"full_sweeps", a.full_sweeps},
		{"last_sweep", iso_time(a.last_sweep_unix_ns)}};
}

template <class T>
json optional_json(const std::optional<T> &v)
{
	return v ? json(*v) : json(nullptr);
}

} // namespace

json encode(const CounterSet &c)
{
	json j = json::object();
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++)
		j[outcome_name(k)] = {{"packets", c[k].packets}, {"bytes", c[k].bytes}};
	return j;
}

json encode(const std::optional<RateSet> &rates)
{
	json j = json::object();
	if (rates)
		for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++)
			j[outcome_name(k)] = {{"pps", (*rates)[k].pps}, {"bps", (*rates)[k].bps}};
	return j;
}

json encode(const StandingStatus &s)
{
	return {{"entries", s.occupancy.live},
		{"capacity", s.occupancy.capacity},
		{"full_sets", s.occupancy.full_sets},
		{"occupancy_pct", std::round(s.occupancy_pct() * 100) / 100},
		{"counted_s_ago", std::round(s.occupancy_age_s * 10) / 10},
		{"lapse_s", s.lapse_s},
		{"feeders", s.feeders},
		{"valve", {{"closed", s.valve_closed}, {"since", iso_time(s.valve_since_ns)}}},
		{"rate_pps", s.rate_pps},
		{"burst", s.burst},
		{"newcomer", {{"pps", s.newcomer_pps}, {"burst", s.newcomer_burst}}},
		{"observed", {{"on", s.observe_periods != 0}, {"periods", s.observe_periods}}}};
}

json encode(const CookieStatus &c)
{
	auto sysctl = [](int64_t now, uint32_t was, bool armed) {
		return json{{"now", now < 0 ? json(nullptr) : json(now)}, {"was", armed ? json(was) : json(nullptr)}};
	};
	return {{"mode", std::string(cookie_mode_name(c.mode))},
		{"pps", c.pps},
		{"burst", c.burst},
		{"dest_pps", c.dest_pps},
		{"dest_burst", c.dest_burst},
		{"mss4", c.mss4},
		{"mss6", c.mss6},
		{"wscale", c.wscale},
		{"offers",
		 {{"timestamps", (c.flags & SLUICE_COOKIE_TS) != 0},
		  {"sack", (c.flags & SLUICE_COOKIE_SACK) != 0},
		  {"window_scaling", (c.flags & SLUICE_COOKIE_WSCALE) != 0}}},
		{"acks",
		 {{"looked_up", c.acks_looked_up},
		  {"syn_stamps", syn_stamps_name(c.syn_stamps)},
		  {"syn_stamps_in_s", c.syn_stamps == SynStamps::grace ? json(c.syn_stamps_in_s) : json(nullptr)}}},
		{"sysctls_armed", c.armed},
		{"sysctls",
		 {{"net.ipv4.tcp_syncookies", sysctl(c.syncookies_now, c.syncookies_was, c.armed)},
		  {"net.ipv4.tcp_timestamps", sysctl(c.timestamps_now, c.timestamps_was, c.armed)}}}};
}

json encode(const RevocationEvent &e)
{
	return {{"at", iso_time(e.at_realtime_ns)},
		{"source", e.source.str()},
		{"reason", e.reason ? json(std::string(standing_reason_name(sluice_standing_reason(e.reason))))
				    : json(nullptr)},
		{"offered_pps", std::llround(e.offered_pps)},
		{"share_pps", std::llround(e.share_pps)},
		{"revocations", e.revocations},
		{"until", iso_time(e.until_realtime_ns)},
		{"by", e.by_operator ? "operator" : "share"},
		{"why", e.why}};
}

json encode(const RekeyResult &r)
{
	const RekeyReport &k = r.report;
	return {{"iface", r.iface},
		{"prog_id_before", k.prog_id_before},
		{"prog_id_after", k.prog_id_after},
		{"standing_carried", k.carried.entries},
		{"standing_lost", k.carried.entries_lost},
		{"standing_carried_late", k.carried_late},
		{"penalties_carried", k.carried.penalties},
		{"penalties_lost", k.carried.penalties_lost},
		{"took_ms", k.took_ms},
		{"rekeys", r.rekeys},
		{"next_rekey_in_s", r.next_rekey_in_s ? json(*r.next_rekey_in_s) : json()}};
}

json encode(const StandingRevokeReply &r)
{
	return {{"iface", r.iface}, {"revoked", encode(r.revoked)}};
}

json encode(const StandingView &v)
{
	json j = {{"iface", v.iface}, {"standing", encode(v.table)}};
	json recent = json::array();
	for (const auto &e : v.recent)
		recent.push_back(encode(e));
	j["standing"]["share"] = {{"level_pps", v.share_pps ? json(v.share_pps) : json(nullptr)},
				  {"newer_level_pps", v.newer_share_pps ? json(v.newer_share_pps) : json(nullptr)},
				  {"tenure_s", v.tenure_s},
				  {"capacity_pps", v.capacity_pps},
				  {"revocations", v.revocations},
				  {"recent", recent}};
	j["standing"]["prefix_quota"] = {{"quota", v.prefix_quota},
					 {"prefixes_full", v.prefixes_full},
					 {"evictions", v.quota_evictions}};
	if (v.lookup) {
		const StandingRecord &r = v.lookup->record;
		j["addr"] = v.lookup->addr.str();
		j["source"] = v.lookup->source.str();
		j["has_standing"] = r.live;
		// A lapsed entry still says why and since when it had standing.
		j["reason"] = r.reason ? json(std::string(standing_reason_name(r.reason))) : json(nullptr);
		j["since"] = r.reason ? json(iso_time(r.since_realtime_ns)) : json(nullptr);
		j["last_seen"] = r.reason ? json(iso_time(r.last_seen_realtime_ns)) : json(nullptr);
		j["tokens"] = r.live ? json(r.tokens) : json(nullptr);
		// A UDP grant's standing holds for its peer port's UDP alone.
		j["udp_port"] = r.reason && r.port ? json(r.port) : json(nullptr);
		j["penalty"] = v.lookup->penalty ? json{{"until", iso_time(v.lookup->penalty->until_realtime_ns)},
							{"revocations", v.lookup->penalty->revocations}}
						 : json(nullptr);
	}
	return j;
}

json encode(const InterfaceStatus &s)
{
	return {
		{"iface", s.iface},
		{"table_slots", s.table_slots},
		{"v4_prefix", s.v4_prefix},
		{"v6_prefix", s.v6_prefix},
		{"dry_run", s.dry_run},
		{"sample_every", s.sample_every},
		{"multiprog", s.multiprog},
		{"rate_pps", s.rate_pps},
		{"burst", s.burst},
		{"admission_ppm", s.admission_ppm},
		{"breaker",
		 {{"state", s.breaker ? std::string(to_string(*s.breaker)) : "invalid"},
		  {"since", iso_time(s.breaker_since_ns)},
		  {"manual", s.breaker_manual}}},
		{"standing", encode(s.standing)},
		{"cookies", encode(s.cookies)},
		{"counters", encode(s.counters)},
		{"prog_id", optional_json(s.prog_id)},
		{"ifindex", s.ifindex},
		{"attached", s.attached()},
		{"attach_mode", s.attach_mode ? json(std::string(to_string(*s.attach_mode))) : json(nullptr)},
	};
}

json encode(const RuleView &r)
{
	return {{"state", std::string(to_string(r.state))},
		{"signal", r.signal},
		{"moves_when", r.over_moves ? "over" : "under"},
		{"threshold_pps", r.threshold_pps},
		{"rate_pps", std::round(r.rate_pps)},
		{"verdict", r.verdict()},
		{"window", {{"periods", r.periods}, {"full_periods", r.full_periods}, {"seconds", r.window_s}}},
		{"incoming_pps", std::round(r.incoming_pps)},
		{"admitted_pps", std::round(r.admitted_pps)},
		{"quiet_s", r.quiet_s},
		{"quiet_needed_s", r.quiet_needed_s},
		{"text", r.text()}};
}

json encode(const BreakerStep &b)
{
	return {{"at", iso_time(b.realtime_ns)},
		{"from", std::string(to_string(b.from))},
		{"to", std::string(to_string(b.to))},
		{"manual", b.manual},
		{"why", b.why}};
}

json encode(const ManagedStatus &s)
{
	json j = s.maps ? encode(*s.maps) : json{{"iface", s.iface}, {"error", s.error}};
	// The daemon's part of the breaker: what its rule saw at the last
	// period (null before the first) and its last moves.
	j["breaker"]["rule"] = s.rule ? encode(*s.rule) : json(nullptr);
	json path = json::array();
	for (const auto &b : s.path)
		path.push_back(encode(b));
	j["breaker"]["path"] = path;
	j["audit"] = audit_json(s.audit);
	j["rates"] = encode(s.rates);
	j["oper_state"] = s.oper_state;
	j["pin_dir"] = s.pin_dir;
	j["policy_file"] = s.policy ? encode(*s.policy) : json(nullptr);
	j["hash_key"] = {{"rekeys", s.key.rekeys},
			 {"last_s_ago", s.key.last_s_ago ? json(*s.key.last_s_ago) : json()},
			 {"every_s", s.key.every_s},
			 {"next_in_s", s.key.next_in_s ? json(*s.key.next_in_s) : json()}};
	// Only the daemon knows what was asked, and whether the SYN-ACKs can leave.
	if (s.maps && s.cookies_asked) {
		j["cookies"]["asked"] = std::string(cookie_mode_name(*s.cookies_asked));
		j["cookies"]["xdp_tx"] = s.xdp_tx ? json{{"delivers", s.xdp_tx->delivers},
							 {"why", s.xdp_tx->why},
							 {"fix", s.xdp_tx->fix.empty() ? json(nullptr) : json(s.xdp_tx->fix)}}
						  : json(nullptr);
	}
	return j;
}

json encode(const PolicyStatus &p)
{
	json classes = json::array();
	for (const auto &[id, name] : p.classes)
		classes.push_back({{"id", id}, {"name", name}});
	return {{"file", p.file},
		{"generation", p.generation},
		{"applied", iso_time(p.applied_ns)},
		{"set", p.set},
		{"classes", classes},
		{"rules", p.rules},
		{"reloads_applied", p.reloads_applied},
		{"reloads_refused", p.reloads_refused},
		{"last_refused", p.last_refused.empty() ? json(nullptr) : json(p.last_refused)}};
}

json encode(const PolicyApplied &a)
{
	return {{"iface", a.iface},	      {"file", a.file},		{"generation", a.generation},
		{"set", a.set},		      {"classes", a.classes},	{"prefixes", a.prefixes},
		{"list_entries", a.list_entries}, {"kept_runtime_entries", a.kept}, {"apply_ms", a.apply_ms}};
}

json encode(const ReloadReply &r)
{
	json list = json::array();
	for (const auto &a : r.interfaces)
		list.push_back(encode(a));
	return {{"interfaces", list}};
}

json encode(const ExplainView &e)
{
	const Explanation &x = e.explanation;
	json losers = json::array();
	for (const auto &l : x.losers)
		losers.push_back({{"rule", l.rule + 1}, {"text", l.text}, {"lost_on", lost_on_name(l.lost_on)}, {"why", l.why}});
	auto opt_cidr = [](const std::optional<Cidr> &c) { return c ? json(c->str()) : json(nullptr); };
	const char *decided = x.decided == Decided::deny_list ? "deny_list" : x.decided == Decided::rule ? "rule" : "fallback";
	return {{"iface", e.iface},
		{"source", e.frame.source.str()},
		{"protocol", protocol_name(e.frame.protocol)},
		{"port", has_ports(e.frame.protocol) ? json(e.frame.port) : json(nullptr)},
		{"decided", decided},
		{"class", x.class_name},
		{"action", action_name(x.action)},
		{"rule", x.rule ? json(*x.rule + 1) : json(nullptr)},
		{"rule_text", x.rule ? json(x.rule_text) : json(nullptr)},
		{"deny_entry", opt_cidr(x.deny_entry)},
		{"allow_entry", opt_cidr(x.allow_entry)},
		{"source_prefix", opt_cidr(x.source_prefix)},
		{"losers", losers},
		{"why", x.why},
		{"text", e.text},
		{"table_class", e.table_class},
		{"table_class_name", e.table_class_name},
		{"bucket", e.bucket.str()},
		{"slots", {e.slots[0], e.slots[1]}},
		{"tokens", {e.tokens[0], e.tokens[1]}},
		{"has_standing", e.has_standing},
		{"cookie", {{"in_force", e.cookie.in_force}, {"applies", e.cookie.applies}, {"why", e.cookie.why}}}};
}

json encode(const DaemonInfo &d)
{
	return {{"running", true},
		{"pid", d.pid},
		{"uptime_s", d.uptime_s},
		{"socket", d.socket},
		{"pin_dir", d.pin_dir},
		{"period_s", d.period_s},
		{"policy",
		 {{"trip_pps", d.policy.trip_pps},
		  {"clear_pps", d.policy.clear_pps},
		  {"trip_periods", d.policy.trip_periods},
		  {"hold_s", d.policy.hold_s},
		  {"recovery_s", d.policy.recovery_s},
		  {"recovery_start_ppm", d.policy.start_ppm}}},
		{"upstream", d.upstream ? encode(*d.upstream) : json(nullptr)},
		{"loop",
		 {{"ticks", d.loop.ticks},
		  {"period_s", d.period_s},
		  {"last_period_s", d.loop.last_period_s},
		  {"max_period_s", d.loop.max_period_s},
		  {"last_late_s", d.loop.last_late_s},
		  {"max_late_s", d.loop.max_late_s},
		  {"late_ticks", d.loop.late_ticks}}},
		{"scheduling",
		 {{"policy", d.scheduling.policy},
		  {"priority", d.scheduling.priority},
		  {"nice", d.scheduling.nice},
		  {"rt_priority_asked", d.scheduling.asked},
		  {"rttime_limit_s", d.scheduling.rttime_limit_s},
		  {"demoted", d.scheduling.demoted}}}};
}

json encode(const StatusReply &r)
{
	json list = json::array();
	for (const auto &s : r.interfaces)
		list.push_back(encode(s));
	return {{"daemon", encode(r.daemon)}, {"interfaces", list}};
}

json encode(const PinsStatusReply &r)
{
	json list = json::array();
	for (const auto &s : r.interfaces)
		list.push_back(encode(s));
	return {{"daemon", {{"running", false}, {"socket", r.socket}}}, {"interfaces", list}};
}

json encode(const InterfaceStats &s)
{
	return {{"iface", s.iface}, {"counters", encode(s.counters)}, {"rates", encode(s.rates)}};
}

json encode(const StatsReply &r)
{
	json list = json::array();
	for (const auto &s : r.interfaces)
		list.push_back(encode(s));
	return {{"interfaces", list}};
}

json encode(const BreakerMove &m)
{
	return {{"iface", m.iface},
		{"from", std::string(to_string(m.from))},
		{"to", std::string(to_string(m.to))},
		{"state", std::string(to_string(m.state))}};
}

json encode(const PolicySet &p)
{
	return {{"iface", p.iface}, {"rate_pps", p.rate_pps}, {"burst", p.burst}};
}

json encode(const BucketView &b)
{
	return {{"iface", b.iface},       {"addr", b.addr.str()},     {"source", b.source.str()},
		{"slots", b.slots},       {"tokens", b.tokens},       {"tokens_left", b.tokens_left},
		{"burst", b.burst},       {"rate_pps", b.rate_pps}};
}

json encode(const ListChange &c)
{
	return {{"iface", c.iface}, {"list", to_string(c.list)}, {"changed", c.changed}};
}

json encode(const UpstreamListChange &c)
{
	json j = encode(c.change);
	j["upstream"] = c.upstream;
	j["speaker_up"] = c.speaker_up;
	j["dry_run"] = c.dry_run;
	return j;
}

json encode(const UpstreamView &v)
{
	json rules = json::array();
	for (const auto &r : v.rules)
		rules.push_back({{"rule", r.rule},
				 {"family", r.family},
				 {"iface", r.iface},
				 {"reason", r.reason},
				 {"state", r.state},
				 {"since", r.since_realtime_ns ? json(iso_time(*r.since_realtime_ns)) : json(nullptr)}});
	json automatic = json::array();
	for (const auto &t : v.automatic)
		automatic.push_back({{"iface", t.iface},
				     {"firing", t.firing},
				     {"why", t.why.empty() ? json(nullptr) : json(t.why)},
				     {"sources", t.sources.empty() ? json(nullptr) : json(t.sources)}});
	return {{"enabled", v.enabled},
		{"dry_run", v.dry_run},
		{"mode", v.mode},
		{"auto", {{"bps", v.auto_bps},
			  {"pps", v.auto_pps},
			  {"after_s", v.auto_after_s},
			  {"top", v.auto_top},
			  {"action", v.auto_action},
			  {"interfaces", automatic}}},
		{"last_resort", v.last_resort},
		{"blackholed", v.blackholed},
		{"speaker", {{"address", v.speaker},
			     {"up", v.speaker_up},
			     {"last_error", v.last_error.empty() ? json(nullptr) : json(v.last_error)},
			     {"last_call_ms", v.last_call_ms},
			     {"answered_ago_s", v.answered_ago_s ? json(*v.answered_ago_s) : json(nullptr)}}},
		{"intended", v.intended},
		{"in_sync", v.in_sync},
		{"peer", v.peer.empty() ? json(nullptr) : json({{"address", v.peer}, {"state", v.peer_state}})},
		{"prefixes", v.prefixes},
		{"max", v.max},
		{"hold_s", v.hold_s},
		{"rules", rules},
		{"announcements", v.announcements},
		{"withdrawals", v.withdrawals},
		{"refusals", v.refusals}};
}

json encode(const ListShow &s)
{
	json cidrs = json::array();
	for (const auto &c : s.cidrs)
		cidrs.push_back(c.str());
	return {{"iface", s.iface}, {"list", to_string(s.list)}, {"cidrs", cidrs}};
}

json encode(const AuditResult &a)
{
	json audit = audit_json(a.report);
	audit["slots"] = a.slots;
	return {{"iface", a.iface}, {"audit", audit}};
}

json encode(const TopView &t)
{
	json sources = json::array();
	for (const auto &s : t.sources)
		sources.push_back({{"source", s.source.str()},
				   {"est_dropped_pps", s.est_dropped_pps},
				   {"samples", s.samples},
				   {"error", s.error},
				   {"tokens", s.tokens}});
	return {{"iface", t.iface},
		{"dropped_pps", t.dropped_pps},
		{"sample_every", t.sample_every},
		{"window_s", t.window_s},
		{"window_complete", t.window_complete},
		{"samples", t.samples},
		{"capacity", t.capacity},
		{"summary_size", t.summary_size},
		{"sources", sources}};
}

json encode(const AttachResult &a)
{
	return {{"iface", a.iface}, {"mode", a.mode ? json(std::string(to_string(*a.mode))) : json(nullptr)}};
}

json encode(const DetachResult &d)
{
	return {{"iface", d.iface}};
}

json encode(const ClassView &c)
{
	// An exempt or deny class has no budget and no bucket: null, not 0.
	bool limit = c.action == ClassAction::limit;
	auto when = [](bool present, uint64_t v) { return present ? json(v) : json(nullptr); };
	json standing = nullptr;
	if (limit)
		standing = {{"rate_pps", c.standing_rate_pps},
			    {"burst", c.standing_burst},
			    {"from", c.standing_own ? "class" : "config"}};
	return {{"id", c.id},
		{"name", c.name},
		{"action", action_name(c.action)},
		{"rate_pps", when(limit, c.rate_pps)},
		{"burst", when(limit, c.burst)},
		{"byte_rate", when(limit && c.byte_rate, c.byte_rate)},
		{"byte_burst", when(limit && c.byte_rate, c.byte_burst)},
		{"v4_prefix", when(limit, c.v4_prefix)},
		{"v6_prefix", when(limit, c.v6_prefix)},
		{"standing", standing}};
}

json encode(const ClassList &l)
{
	json classes = json::array();
	for (const auto &c : l.classes)
		classes.push_back(encode(c));
	return {{"iface", l.iface}, {"set", l.set}, {"policy_flags", l.policy_flags}, {"classes", classes}};
}

json encode(const ClassCounters &c)
{
	return {{"id", c.id}, {"name", c.name}, {"counters", encode(c.counters)}};
}

} // namespace sluice
