// managed_interface.h - one protected interface: its data plane (loaded or
// adopted), its breaker, the automatic policy and the audit, ticked once per
// control period by the daemon.
#pragma once

#include "bpf/audit.h"
#include "logic/breaker.h"
#include "logic/budgets.h"
#include "bpf/dataplane.h"
#include "bpf/policy_tables.h"
#include "logic/class_tables.h"
#include "logic/classes.h"
#include "logic/cookies.h"
#include "sluiced/drop_sampler.h"
#include "base/fd.h"
#include "sluiced/metrics.h"
#include "sluiced/options.h"
#include "logic/policy.h"
#include "logic/prefix_quota.h"
#include "logic/source.h"
#include "logic/valve.h"
#include "ipc/replies.h"
#include "sluiced/standing_governor.h"
#include "sluiced/upstream_announcer.h"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace sluice {

class ManagedInterface {
public:
	// Adopt the pins under <pin-dir>/<name> or load and attach a fresh program.
	static Result<std::unique_ptr<ManagedInterface>> start(const DaemonOptions &opts, const std::string &name,
							       AttachMode mode);

	const std::string &name() const { return name_; }
	const std::string &pin_path() const { return dir_; }
	// The data plane's capture maps (sluiced/capture_session.h); none while
	// the program is not loaded.
	std::optional<CaptureMapFds> capture_maps() const
	{
		return dp_ ? std::optional(dp_->capture_maps()) : std::nullopt;
	}

	// Once per control period: watch the interface, run the policy, audit.
	void tick(double now_mono_s);

	ManagedStatus status() const;
	InterfaceStats stats() const;
	// For /metrics: counters as of the last tick, breaker, transitions made.
	InterfaceMetrics metrics() const;

	// Operator requests (the seed's signals).
	Result<BreakerMove> move_breaker(BreakerState to);
	Result<PolicySet> set_policy(std::optional<int64_t> rate, std::optional<int64_t> burst);
	Result<BucketView> bucket(const std::string &addr, std::optional<int64_t> set_tokens);
	Result<BucketView> refill(const std::string &addr, int64_t n);
	Result<ListChange> list_change(ListKind list, const std::vector<std::string> &cidrs, bool add);
	Result<ListShow> list_show(ListKind list) const;
	Result<AuditResult> audit_now();
	// The n heaviest dropped sources of the last complete sampling window
	// (protocol.h, "top"), each with its bucket's tokens now.
	Result<TopView> top(size_t n, double now_mono_s) const;
	// What the automatic upstream announcements see this period: the
	// breaker shedding, what arrived (every outcome, pps and bit/s over the
	// last period), the `heaviest` dropped sources of the sampling window
	// and, with `addresses`, the interface's own addresses.
	FloodSignals flood_signals(double now_mono_s, size_t heaviest, bool addresses) const;
	// The standing table's summary and, with an address, its entry.
	Result<StandingView> standing(const std::optional<std::string> &addr) const;
	// The upstream guards' questions (managed_standing.cpp). For each reach,
	// the protected source a rule of that reach would drop here, said, or
	// none: an allowlist entry overlapping it (the list read once), else a
	// live standing entry inside it that the rule's protocol and port reach
	// (logic/upstream.h, standing_reaches): one standing set read for a reach
	// no wider than a source's prefix that names no protocol, one scan of the
	// whole table for all the others together. And whether `addr` is proved,
	// then abused (its penalty runs), said, or none.
	Result<std::vector<std::optional<std::string>>> upstream_protection(const std::vector<RuleReach> &reaches) const;
	Result<std::optional<std::string>> upstream_proof(const Address &addr) const;
	// `sluicectl standing revoke`: the address loses its standing (if it
	// has any) and cannot earn it again for its penalty; logged, counted.
	Result<RevocationEvent> revoke_standing(const std::string &addr_text);
	// A new hash key now (Dataplane::rekey), logged with `why`; the
	// schedule (--rekey-every) starts again from it.
	Result<RekeyResult> rekey(const std::string &why);
	// Remove the program and the pins. The object is done afterwards.
	Status detach();
	// The daemon is exiting: the cookie sysctls go back as they were (the
	// program keeps answering SYNs only while the kernel makes cookies).
	void release_cookies();

	// The policy file (managed_policy.cpp). Apply `p`, read from `file`, to
	// this interface, all or nothing (bpf/policy_tables): class ids kept by
	// name from the records in force, the entries `sluicectl allow|deny add`
	// put in the running lists that the previous file did not name kept,
	// the default class's budgets (when the file defines it) into config in
	// the same write. Refused when the default class's prefixes differ from
	// the program's (fixed at load). `reload`: counted as a reload.
	Result<PolicyApplied> apply_policy(const Policy &p, const std::string &file, bool reload);
	// A reload refused before it reached this interface (the file is bad):
	// counted, and kept for status.
	void refuse_reload(const Error &why);
	// The class a frame gets under the policy in force (the default policy
	// without a file), by explain() and by the compiled tables.
	Result<ExplainView> explain(const std::string &src, const std::optional<std::string> &proto) const;
	bool has_policy() const { return in_force_.has_value(); }

private:
	ManagedInterface() = default;
	// start()'s steps. The pin directory made and locked (one daemon an
	// interface); then either the pins of a sluiced before this one adopted
	// (checked against the options: a setting fixed at load that differs is
	// refused, naming it) or a fresh program loaded, attached and pinned;
	// then the control parts the tick runs, for either.
	Status lock_pin_dir();
	Status adopt_pins(const DaemonOptions &opts);
	Status pins_match(const Dataplane &dp, const DaemonOptions &opts) const;
	Status load_and_attach(const DaemonOptions &opts, AttachMode mode);
	Status prepare_control(const DaemonOptions &opts);
	// The budgets the options ask for; `pinned`: the adopted pins' config,
	// whose rate and burst stay unless the options give them.
	BudgetAsk asked_budgets(const DaemonOptions &opts, const sluice_config *pinned) const;

	// tick()'s steps: what a period reads (counters and config, once), what
	// it decides (every change staged into one next config), the one write
	// and its bookkeeping, and the work after it that writes no config.
	struct PeriodReading {
		CounterSet counters{};
		double read_s = 0; // when the counters were read (monotonic)
		sluice_config cfg{};
	};
	struct PeriodPlan {
		sluice_config next{};
		PolicyDecision policy;
		ValveDecision valve;
		std::optional<bool> valve_moved;         // true: closed, false: opened
		std::optional<BreakerState> moved_from;  // a breaker move staged, from this state
		bool admission_moved = false;
	};
	Result<PeriodReading> read_period();
	PeriodPlan decide_period(double now_s, const PeriodReading &read);
	void write_period(const PeriodReading &read, const PeriodPlan &plan);
	void after_period(double now_s);
	// A breaker move, read, staged and written in one config write (the
	// operator's; a tick stages its own move into the tick's one write).
	Status transition(BreakerState to, bool manual, const std::string &why);
	// The move staged into `next`, the config the caller writes: the cookie
	// settings for the state moved to, then the state. The breaker in
	// memory moves at once: after the write, commit_transition() does the
	// bookkeeping and the log, or the caller puts breaker_ back.
	Status stage_transition(sluice_config &next, BreakerState to, bool manual);
	void commit_transition(BreakerState from, BreakerState to, bool manual, const std::string &why,
			       bool valve_was_closed);
	// SYN cookies (docs/architecture.md): arm the sysctls while the mode and
	// the breaker state `state` (the one in force, or the one being moved
	// to) need them, and for kCookieGraceS after shedding ends; disarm
	// after; config's cookie fields into `next` (what a SYN-ACK offers under
	// the sysctls now, the MSS from the interface's MTU).
	void apply_cookies(double now_s, BreakerState state, sluice_config &next);
	// config.cookie_acks_stamped_from a grace (kCookieStampGraceS) from now.
	void restart_cookie_stamp_grace();
	// Whether the SYN-ACKs the program sends with XDP_TX can leave this
	// interface (logic/cookies.h, xdp_tx_verdict: a veth needs an XDP
	// program on its peer), read from rtnetlink at start and every period
	// while cookies are asked for; apply_cookies() keeps them off where
	// they cannot. Each change of the verdict is logged.
	void check_xdp_tx();
	// The mode in force: the one asked where the SYN-ACKs can leave, else off.
	sluice_cookie_mode cookie_mode_in_force_now() const;
	// The config written if `next` differs from `was` (the map as read).
	Status write_config(const sluice_config &was, const sluice_config &next);
	// The TCP ports listening now into the program's listen_ports map (the
	// cookie path's hint; the sockops feeder adds later listen() calls as
	// they happen, this catches what it cannot see: listeners older than
	// the program, or all of them under --no-standing). At start, after
	// the feeders attach; then every period without feeders, and with them
	// every kListenerRescanS: the feeder sees each listen(), and the rescan
	// only puts back a bit lost to the race of a read-or-write (docs/architecture.md,
	// "The port hint"), not worth a sock_diag dump of every socket a period.
	void mark_listeners();
	void watch_link();
	// Standing buys a share (standing_governor.h): once a period, the level
	// into `next` when it changed (config.standing_share_cost_ns),
	// revocations. In managed_standing.cpp.
	void govern_standing(double now_s, sluice_config &next);
	// The peers of the established TCP connections and connected UDP client
	// sockets (sock_diag), granted standing (existing) or refreshed: at
	// start, then every peer_refresh_s_ (a quarter of the lapse, at most
	// kPeerRefreshMaxS), so that a connection that lives longer than the
	// lapse keeps its peer's standing. The number of peers.
	Result<size_t> grant_established_peers(double now_s);
	// A source as asked (its address parsed), its slots, and the config now.
	struct SourceNow {
		Address addr;
		SourceSlots slots;
		sluice_config cfg{};
	};
	Result<SourceNow> source_now(const std::string &addr) const;
	Result<BucketView> bucket_reply(const std::string &addr) const;
	// The tokens of a source's two slots now, and the fuller one's.
	struct SourceTokens {
		std::array<uint64_t, 2> tokens{};
		uint64_t fuller = 0;
	};
	Result<SourceTokens> source_tokens(const SourceSlots &ss, const sluice_config &cfg) const;
	// A checked write to the slots of the source `addr` falls in (bucket
	// --set, refill): `write` gets them and the config now; on success the
	// write is logged as `what` and the reply is bucket_reply's.
	using SlotWrite = std::function<Status(std::span<const uint32_t> slots, const sluice_config &cfg)>;
	Result<BucketView> write_source(const std::string &addr, const std::string &what, const SlotWrite &write);

	// The policy in force, as the daemon applied it (none: no policy file).
	struct PolicyInForce {
		Policy policy;  // as applied (the default class filled from the options)
		Policy file;    // as the file said: what the next reload compares lists with
		CompiledPolicy compiled;
		std::string path;
		uint64_t generation = 0;
		uint64_t applied_ns = 0;
		uint32_t set = 0;
	};
	Policy policy_of_file(const Policy &p, const sluice_config &cfg) const;
	PolicyTables tables() const;
	std::optional<PolicyInForce> in_force_;
	uint64_t reloads_applied_ = 0, reloads_refused_ = 0;
	std::optional<bool> last_reload_ok_;
	std::string last_refused_;

	std::string name_;
	std::string dir_;
	UniqueFd lock_;
	AttachMode mode_requested_ = AttachMode::native;
	std::optional<Dataplane> dp_;
	Breaker breaker_;
	std::optional<AutoPolicy> policy_;
	std::optional<Valve> valve_;
	std::optional<StandingGovernor> governor_;
	// The per-prefix quota (logic/prefix_quota), recounted once a sweep;
	// prefix_count as read around a recount; entries it evicted.
	std::optional<PrefixQuota> quota_;
	std::vector<uint32_t> quota_before_, quota_after_; // prefix_count read around a recount
	uint64_t quota_evictions_ = 0;
	void enforce_prefix_quota();
	bool own_error_ = false; // the last own-address sync failed (logged once)
	static constexpr double kPeerRefreshMaxS = 60;
	double peer_refresh_s_ = 0; // 0: none (--no-standing)
	double peers_granted_s_ = 0;
	uint64_t valve_closes_ = 0; // closes this daemon made (for /metrics)
	uint32_t cpus_ = 1;         // possible CPUs: the newcomer budget is divided over them
	sluice_cookie_mode cookie_mode_ = SLUICE_COOKIES_OFF;
	double shed_left_s_ = -1e18;     // when the breaker last left shedding (monotonic)
	uint64_t cookie_acks_stamped_from_ = 0; // config.cookie_acks_stamped_from; 0: the cookie path not in force
	std::string cookie_error_;        // the last arming error, logged once
	std::optional<XdpTxVerdict> xdp_tx_; // none: not read yet (or --cookies off)
	std::string xdp_tx_error_;        // the last error reading it, logged once
	std::string listeners_error_;     // the last mark_listeners error, logged once
	double listeners_marked_s_ = 0;   // when mark_listeners last ran
	static constexpr double kListenerRescanS = 60;
	// The standing table's occupancy for /metrics and status. Counting reads
	// every set (65,536 by default: 7 to 26 ms of batched reads on a busy
	// 2-CPU machine; up to 2^22 sets at --standing-sets' maximum), so no
	// request counts: the table is counted once at start, then a part each
	// period (count_occupancy_part()), a whole sweep taking
	// kOccupancySweepS, and requests are given the last whole count with the
	// age of its oldest part (counted_occupancy()): at most about
	// 2 x kOccupancySweepS.
	static constexpr double kOccupancySweepS = 5;
	void count_occupancy_part(double now_s);
	// The scheduled rekey, from after_period: due, and the breaker serving.
	void rekey_when_due(double now_s);
	double rekey_every_s_ = 0; // 0: no schedule
	double next_rekey_s_ = 0;  // monotonic
	uint64_t rekeys_ = 0;
	double last_rekey_s_ = 0; // monotonic, of the last (rekeys_ > 0)
	std::optional<CountedOccupancy> counted_occupancy() const;
	std::optional<StandingOccupancy> occupancy_; // the last whole count
	double occupancy_at_s_ = 0;                  // when its oldest part was read (monotonic)
	struct OccupancySweep {
		uint32_t next_set = 0;       // where the next part starts; 0: a new sweep
		StandingOccupancy sum{};     // the parts counted so far
		double started_s = 0;        // when its first part was read
	} sweep_;
	uint32_t occupancy_part_sets_ = 0; // sets counted a period
	std::optional<Auditor> auditor_;
	std::unique_ptr<DropSampler> sampler_; // null when sampling is off
	double since_mono_s_ = 0;  // when the breaker state in force began
	uint32_t ifindex_ = 0;
	bool gone_ = false;
	std::string oper_state_;
	// Rates over the last period, per outcome.
	CounterSet last_counters_{};
	double last_tick_s_ = 0;
	std::optional<RateSet> rates_; // none before the first period
	std::string last_error_;
	// Breaker transitions made by this daemon, [from][to] (for /metrics).
	std::array<std::array<uint64_t, SLUICE_BREAKER_STATES>, SLUICE_BREAKER_STATES> transitions_{};
	// The breaker's rule at the last period, and its last moves (at most
	// kBreakerPathKept, oldest first): status shows both.
	std::optional<RuleView> rule_;
	std::deque<BreakerStep> path_;
	// Log the rule's verdict when it changes (a window going over its
	// threshold, or back), so the log shows the path between moves too;
	// not when it moves the breaker (transition() logs that).
	void log_rule(const RuleView &r, bool moving);
};

} // namespace sluice
