// replies.h - what the daemon's commands return, as typed structs. The
// daemon's domain code builds these; ipc/encode.h is the one place they
// become the JSON shapes protocol.h documents.
#pragma once

#include "base/address.h"
#include "bpf/audit.h"
#include "bpf/dataplane.h"
#include "bpf/maps.h"
#include "bpf/status.h"
#include "logic/breaker.h"
#include "logic/classes.h"
#include "logic/cookies.h"
#include "logic/policy.h"
#include "logic/standing_share.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

// Per-second rates over one control period, per outcome (rounded to whole
// packets and bits per second).
struct Rate {
	double pps = 0;
	double bps = 0;
};
using RateSet = std::array<Rate, SLUICE_OUTCOMES>;

// The policy file's part of status.interfaces[]: what is in force and how
// the last reloads went.
struct PolicyStatus {
	std::string file;              // the policy file in force
	uint64_t generation = 0;       // applies made by this daemon (1: the start's)
	uint64_t applied_ns = 0;       // CLOCK_REALTIME of the last apply
	uint32_t set = 0;              // the policy set in force (0 or 1)
	std::vector<std::pair<uint32_t, std::string>> classes; // id, name
	size_t rules = 0;
	uint64_t reloads_applied = 0, reloads_refused = 0;
	std::string last_refused;      // the last refused reload's error ("" none)
};

// One move of the breaker as status shows it: when, the edge, and what the
// rule saw (RuleView::text) or "operator".
struct BreakerStep {
	uint64_t realtime_ns = 0;
	BreakerState from = BreakerState::serving;
	BreakerState to = BreakerState::serving;
	bool manual = false;
	std::string why;
};

// status.interfaces[]: what the maps say, plus what only the daemon knows.
struct ManagedStatus {
	std::string iface;
	std::optional<InterfaceStatus> maps; // none: they could not be read, see error
	std::string error;
	AuditReport audit;
	std::optional<RateSet> rates; // none before the first period
	std::string oper_state;       // "up", "down", "gone", ...
	std::string pin_dir;
	std::optional<PolicyStatus> policy; // none: no policy file
	std::optional<RuleView> rule;       // the breaker's rule at the last period; none before it
	std::vector<BreakerStep> path;      // the breaker's last moves, oldest first (kBreakerPathKept)
	// SYN cookies as asked (--cookies; none: off) and whether their SYN-ACKs
	// can leave the interface (none: not read yet); where they cannot, the
	// config's mode (maps.cookies.mode) is off.
	std::optional<sluice_cookie_mode> cookies_asked;
	std::optional<XdpTxVerdict> xdp_tx;
	// The hash key: new keys this daemon made (sluicectl rekey, the
	// schedule), the last one's age (none: none yet), the schedule (0: none)
	// and when it is due (none without one; 0 or less: due, waiting for
	// the breaker to serve).
	struct KeyStatus {
		uint64_t rekeys = 0;
		std::optional<double> last_s_ago;
		double every_s = 0;
		std::optional<double> next_in_s;
	} key;
};

// status.daemon
// `sluicectl upstream [IFACE]`: what is announced upstream, why, since when.
struct UpstreamRuleView {
	std::string rule;   // "dst 198.18.1.0/24 src 198.18.3.7/32 discard"
	std::string family; // "ipv4-flowspec", "ipv6-flowspec"
	std::string iface;
	std::string reason;
	std::string state;  // "announced", "dry-run", "holding" (unwanted, in its hold), "over-max", "refused"
	std::optional<uint64_t> since_realtime_ns; // none: not announced
};

// The automatic announcements of one interface (--upstream-bps/-pps).
struct UpstreamTriggerView {
	std::string iface;
	bool firing = false;  // the automatic rules are wanted now
	std::string why;      // what fired it (empty: not firing)
	std::string sources;  // why these sources (or none): the last look at the drop samples
};

struct UpstreamView {
	bool enabled = false;
	bool dry_run = false;
	std::string speaker;     // gobgpd's API, host:port
	bool speaker_up = false; // the last call to it answered
	std::string last_error;  // the last call's error (empty: none)
	double last_call_ms = 0;
	// The worker's last answer from the speaker, seconds ago (none: never);
	// the rules last handed to the worker; whether its last complete pass
	// reconciled the latest of them (docs/architecture.md, "Upstream").
	std::optional<double> answered_ago_s;
	uint64_t intended = 0;
	bool in_sync = false;
	std::string peer;        // --upstream-peer (empty: none)
	std::string peer_state;  // its session as gobgpd reports it
	std::vector<std::string> prefixes; // --upstream-prefixes
	uint64_t max = 0;
	double hold_s = 0;
	std::string mode;        // --upstream-mode: "flowspec" or "blackhole" (source-based)
	// Automatic announcements: the thresholds (0: off), and each interface's trigger.
	uint64_t auto_bps = 0, auto_pps = 0, auto_top = 0;
	double auto_after_s = 0;
	std::string auto_action;  // "discard" or "rate N B/s"
	bool last_resort = false; // --upstream-blackhole
	std::vector<UpstreamTriggerView> automatic;
	std::vector<std::string> blackholed; // own addresses announced as blackholes now (offline upstream)
	std::vector<UpstreamRuleView> rules;
	uint64_t announcements = 0, withdrawals = 0, refusals = 0; // by this daemon
};

// The control loop as measured: a period is the time between two ticks'
// starts, lateness how long after its due time a tick started.
struct LoopTiming {
	uint64_t ticks = 0;
	double last_period_s = 0, max_period_s = 0; // 0 before the second tick
	double last_late_s = 0, max_late_s = 0;
	uint64_t late_ticks = 0;                    // started over a tenth of a period late
};

// The scheduling the loop runs under (--rt-priority, the unit's Nice=).
struct SchedulingView {
	std::string policy;       // "fifo" or "other"
	int priority = 0;         // SCHED_FIFO's priority; 0 for "other"
	int nice = 0;
	int asked = 0;            // --rt-priority (0: not asked)
	double rttime_limit_s = 0; // RLIMIT_RTTIME's soft limit as set (0: none)
	bool demoted = false;     // the limit was hit: the loop went back to "other"
};

struct DaemonInfo {
	int pid = 0;
	double uptime_s = 0;
	std::string socket;
	std::string pin_dir;
	double period_s = 0;
	PolicyConfig policy;
	std::optional<UpstreamView> upstream; // --upstream; none when off
	LoopTiming loop;
	SchedulingView scheduling;
};

struct StatusReply {
	DaemonInfo daemon;
	std::vector<ManagedStatus> interfaces;
};

// sluicectl status with the daemon down: the pins' part only.
struct PinsStatusReply {
	std::string socket; // where no daemon answered
	std::vector<InterfaceStatus> interfaces;
};

// stats.interfaces[]
struct InterfaceStats {
	std::string iface;
	CounterSet counters{};
	std::optional<RateSet> rates;
};

struct StatsReply {
	std::vector<InterfaceStats> interfaces;
};

struct BreakerMove {
	std::string iface;
	BreakerState from = BreakerState::serving;
	BreakerState to = BreakerState::serving;
	BreakerState state = BreakerState::serving; // in force after the move
};

struct PolicySet {
	std::string iface;
	uint64_t rate_pps = 0;
	uint64_t burst = 0;
};

// bucket and refill: one source's two slots.
struct BucketView {
	std::string iface;
	Address addr;
	Cidr source;
	std::array<uint32_t, 2> slots{};
	std::array<uint64_t, 2> tokens{};
	uint64_t tokens_left = 0; // the fuller slot's
	uint64_t burst = 0;
	uint64_t rate_pps = 0;
};

// standing IFACE [ADDR]: the table's summary, and with an address, its entry.
struct StandingLookup {
	Address addr;
	Cidr source;           // the prefix it was looked up as (the configured one)
	StandingRecord record; // live false: no standing
	std::optional<StandingPenalty> penalty; // revoked: no standing until then
};

struct StandingView {
	std::string iface;
	StandingStatus table;
	std::optional<StandingLookup> lookup; // none: the summary alone was asked
	// The fair share (docs/architecture.md, "Standing buys a share").
	uint64_t share_pps = 0;    // the level in force; 0: none (each bucket at its own rate)
	uint64_t newer_share_pps = 0; // with a tenure line in force, the level of those granted after it
	double tenure_s = 0;          // --standing-tenure
	uint64_t capacity_pps = 0; // what the standing sources together may take
	uint64_t revocations = 0;  // since sluiced started
	std::vector<RevocationEvent> recent; // the last ones, oldest first
	// The per-prefix quota (logic/prefix_quota).
	uint32_t prefix_quota = 0;     // entries one /24 or /48 may hold (0: not counted here)
	uint32_t prefixes_full = 0;    // prefixes at their quota at the last sweep's end
	uint64_t quota_evictions = 0;  // entries evicted over a quota since sluiced started
};

// standing_revoke IFACE ADDR
struct StandingRevokeReply {
	std::string iface;
	RevocationEvent revoked; // reason 0: it had no standing, only the penalty was written
};

struct ListChange {
	std::string iface;
	ListKind list = ListKind::allow;
	size_t changed = 0; // prefixes in the request
};

// deny add ... --upstream: the change, and the FlowSpec rules announced (or,
// in --upstream-dry-run, that would be), as logic/upstream writes them.
struct UpstreamListChange {
	ListChange change;
	std::vector<std::string> upstream;
	bool speaker_up = false; // false: wanted, announced once gobgpd answers
	bool dry_run = false;    // --upstream-dry-run: logged, not announced
};

struct ListShow {
	std::string iface;
	ListKind list = ListKind::allow;
	std::vector<Cidr> cidrs;
};

struct RekeyResult {
	std::string iface;
	RekeyReport report;
	uint64_t rekeys = 0;                    // by this daemon on this interface, this one included
	std::optional<double> next_rekey_in_s;  // none: --rekey-every 0
};

struct AuditResult {
	std::string iface;
	uint64_t slots = 0;
	AuditReport report;
};

struct TopSource {
	Cidr source;
	double est_dropped_pps = 0;
	uint64_t samples = 0;
	uint64_t error = 0;
	uint64_t tokens = 0; // the fuller slot's, now
};

struct TopView {
	std::string iface;
	double dropped_pps = 0;
	uint32_t sample_every = 0;
	double window_s = 0;
	bool window_complete = false;
	uint64_t samples = 0;
	size_t capacity = 0;
	size_t summary_size = 0;
	std::vector<TopSource> sources;
};

struct AttachResult {
	std::string iface;
	std::optional<AttachMode> mode; // in force; none if the kernel does not say
};

// reload [IFACE]: one interface's new policy.
struct PolicyApplied {
	std::string iface;
	std::string file;
	uint64_t generation = 0;
	uint32_t set = 0;
	size_t classes = 0;
	size_t prefixes = 0;     // class prefix entries
	size_t list_entries = 0; // allow + deny, both families
	size_t kept = 0;         // runtime list entries the file did not name, kept
	double apply_ms = 0;
};

struct ReloadReply {
	std::vector<PolicyApplied> interfaces;
};

// explain IFACE SRC [PROTO[/PORT]]: the class of a frame under the policy
// in force, by the matcher (logic/classes) and by the compiled tables the
// data plane reads (logic/class_tables' classify), and its bucket's slots.
struct ExplainView {
	std::string iface;
	Frame frame;
	Explanation explanation;
	std::string text;              // describe(explanation)
	uint32_t table_class = 0;      // classify(): the data plane's id
	std::string table_class_name;
	Cidr bucket;                   // the source as the class aggregates it
	std::array<uint32_t, 2> slots{};
	std::array<uint64_t, 2> tokens{};
	bool has_standing = false;     // looked up by the plain hash
	// The SYN-cookie path (docs/architecture.md, "SYN cookies") for this
	// frame: whether cookies are in force now (the mode and the breaker
	// state), whether a SYN of this frame's to a listening port takes the
	// path, and why, in one sentence.
	struct CookieWay {
		bool in_force = false;
		bool applies = false;
		std::string why;
	} cookie;
};

struct DetachResult {
	std::string iface;
};

// sluicectl class list IFACE, from the pins: the named classes of the policy
// set in force. The default class (id 0) as the program reads it: its packet
// and standing budgets from config, its prefixes from settings.
struct ClassView {
	uint32_t id = 0;
	std::string name;
	ClassAction action = ClassAction::limit;
	// limit only:
	uint64_t rate_pps = 0, burst = 0;
	uint64_t byte_rate = 0, byte_burst = 0; // 0: no byte budget
	uint32_t v4_prefix = 0, v6_prefix = 0;
	uint64_t standing_rate_pps = 0, standing_burst = 0;
	bool standing_own = false; // the class's own standing budget; false: config's
};

struct ClassList {
	std::string iface;
	uint32_t set = 0;          // the policy set in force
	uint32_t policy_flags = 0; // config.policy_flags
	std::vector<ClassView> classes;
};

// stats.interfaces[].classes (sluicectl, from the pins): one named class of
// the set in force and its counters, summed over the CPUs.
struct ClassCounters {
	uint32_t id = 0;
	std::string name;
	CounterSet counters{};
};

} // namespace sluice
