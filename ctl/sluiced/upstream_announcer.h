// upstream_announcer.h - what sluiced asks the network upstream to drop
// (docs/upstream.md): the rules the operator asked for (`sluicectl deny add
// IFACE PREFIX --upstream`, `upstream: true` on the policy file's deny list)
// and the automatic ones while an interface sheds a flood over
// --upstream-bps/-pps (the flood's signature, and those of its heaviest
// dropped sources whose addresses are proved, then abused; with
// --upstream-blackhole, the last resort), checked by logic/upstream's guards, reconciled
// with gobgpd's paths (upstream/gobgp) when they change and every
// defaults::kUpstreamReconcileS, so a restarted gobgpd gets them again and a
// restarted sluiced adopts its own and withdraws the stale ones. A clean exit
// withdraws them all. The speaker down: the local deny list keeps enforcing,
// the announcer retries with a backoff and says so (status, metrics, log).
//
// Two threads. The control loop decides what is wanted (the guards read the
// maps) and posts the whole set to an IntentSlot, which holds the latest
// intent only; it never calls the speaker. One worker thread takes the
// latest intent and reconciles gobgpd to it (list, withdraw the stale,
// announce the missing), every CLI call bounded by the CLI's timeout, and
// publishes what the speaker confirmed after each call that answered;
// view() and metrics() read that copy. A slow or hung speaker stalls the
// worker, never the loop (issue 30): the loop's requests answer at once and
// list what is wanted and not yet confirmed as pending.
#pragma once

#include "base/address.h"
#include "ipc/replies.h"
#include "logic/upstream.h"
#include "sluiced/metrics.h"
#include "upstream/gobgp.h"
#include "upstream/intent_slot.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sluice {

struct UpstreamOptions {
	bool enabled = false;      // --upstream
	GobgpConfig speaker;       // --upstream-speaker, --upstream-gobgp
	std::string peer;          // --upstream-peer: the session status reports (empty: none)
	UpstreamGuards guards;     // --upstream-prefixes, --upstream-min-prefix4/6, --upstream-max
	double hold_s = 0;         // --upstream-hold
	bool dry_run = false;      // --upstream-dry-run: log what would be announced, announce nothing
	UpstreamMode mode = UpstreamMode::flowspec; // --upstream-mode: how a source is announced
	UpstreamAutoConfig automatic;               // --upstream-bps/-pps/-after/-top/-action
	bool last_resort = false;                   // --upstream-blackhole
};

// What one interface shows the automatic announcements each period.
struct FloodSignals {
	FloodReading reading;                 // shedding, arriving pps and bit/s
	std::vector<DroppedSource> heaviest;  // the sampling window's heaviest dropped sources
	uint64_t samples = 0;                 // the window's samples
	SignatureTally signature;             // the same samples' signature (logic/upstream.h)
	std::vector<Address> addresses;       // the interface's own addresses (the last resort's)
};

class UpstreamAnnouncer {
public:
	// What the daemon answers about an interface: for each reach, the
	// protected source (allowlisted, or with standing anywhere inside it)
	// a rule of that reach would drop there, or none (one call reads the
	// allow list once and the standing table at most once, so a batch of
	// rules costs one scan); whether a dropped source's address is proved,
	// then abused (its standing revoked, its penalty running); the deny
	// list of an interface (for adoption at start).
	struct Hooks {
		std::function<std::vector<std::optional<std::string>>(const std::string &iface,
								      const std::vector<RuleReach> &reaches)>
			protection;
		std::function<Result<std::optional<std::string>>(const std::string &iface, const Cidr &source)> is_proved;
		std::function<std::vector<Cidr>(const std::string &iface)> deny_list;
		std::function<std::vector<std::string>()> interfaces;
	};
	// Starts the worker (all signals blocked in it: the loop's signalfd
	// gets them).
	UpstreamAnnouncer(UpstreamOptions opts, Hooks hooks);
	~UpstreamAnnouncer(); // the worker stopped and joined, if withdraw_all() did not
	UpstreamAnnouncer(const UpstreamAnnouncer &) = delete;
	UpstreamAnnouncer &operator=(const UpstreamAnnouncer &) = delete;

	// The rules `sources` would be announced as on `iface`, each through the
	// guards: the first refused is the error and nothing changes.
	Result<std::vector<UpstreamRule>> check_sources(const std::string &iface, const std::vector<Cidr> &sources) const;
	// `sluicectl deny add IFACE ... --upstream`: checked, then wanted and
	// handed to the worker now. Returns the rules wanted (the worker
	// announces them; `upstream` shows them pending until the speaker has).
	Result<std::vector<UpstreamRule>> add_sources(const std::string &iface, const std::vector<Cidr> &sources,
						      double now_s);
	// Removed from the deny list: no longer wanted, handed to the worker now.
	void remove_sources(const std::string &iface, const std::vector<Cidr> &sources, double now_s);
	// An interface no longer managed: its rules are withdrawn.
	void forget_interface(const std::string &iface, double now_s);
	// The policy file's deny entries marked `upstream: true` on `iface`
	// (start, reload): they replace the file's previous ones; those gone are
	// withdrawn at once. `file` names the file in the reason.
	void set_policy_sources(const std::string &iface, const std::vector<Cidr> &sources, const std::string &file,
				double now_s);
	// Once per control period per interface, when automatic announcements
	// or the last resort are on.
	void observe(const std::string &iface, const FloodSignals &signals, double now_s);
	bool automatic() const { return opts_.automatic.enabled(); }
	bool last_resort() const { return opts_.last_resort; } // observe() needs the interfaces' addresses

	// Once per control period: post the wanted set when due (every
	// defaults::kUpstreamReconcileS, the guards asked again), and adopt
	// once the worker's first listing is in.
	void tick(double now_s);
	// A clean exit: the worker stopped and joined (its call in flight ends
	// within the CLI's timeout), then every path of sluice's withdrawn, each
	// call bounded by the same timeout.
	void withdraw_all();

	UpstreamView view(const std::optional<std::string> &iface) const;
	bool speaker_up() const { return state_.read().speaker_up; } // the worker's last call answered
	UpstreamMetricsSnapshot metrics() const; // for /metrics

private:
	// What the loop hands the worker: the whole wanted set, through the
	// guards, in priority order.
	struct Intent {
		std::vector<UpstreamWanted> wanted;
		bool adopted = false; // the loop adopted what the speaker held at start: the rest is stale
		std::string why;      // for the log
	};
	// What the worker publishes.
	struct SpeakerState {
		std::vector<UpstreamHeld> mine;       // announced or adopted (or would be, dry run)
		std::vector<UpstreamWanted> over_max; // wanted, refused by --upstream-max at the last pass
		std::optional<std::vector<UpstreamRule>> first_rib; // the speaker's paths, once listed (adoption)
		bool speaker_up = false;
		std::string last_error;
		std::string peer_state;
		double last_call_s = 0;
		double answered_s = -1; // monotonic time of the speaker's last answer (-1: never)
		uint64_t applied = 0;   // the intent's generation the last complete pass reconciled
		uint64_t announcements = 0, withdrawals = 0, refusals = 0; // refusals: --upstream-max's
	};
	// Post the wanted set now (a change, or the periodic look).
	void reconcile(double now_s, const std::string &why);
	// The worker: take the latest intent, reconcile when it changed or
	// the pass is due, until stopped.
	void work();
	// One pass against the speaker; returns when the next is due.
	double pass(const Intent &intent, uint64_t generation, double now_s);
	void stop_worker();
	std::vector<UpstreamWanted> wanted_now();
	// One source as the operator's rules announce it (--upstream-mode).
	std::vector<UpstreamRule> operator_rules(const Cidr &source) const;
	bool wanted_anywhere(const UpstreamRule &r) const;
	// The protection guard for `rules` on `iface`: the hook asked once for
	// all their reaches; a reach it was not asked about is answered as
	// unreadable (refused), never as unprotected.
	ProtectedSource protection(const std::string &iface, const std::vector<UpstreamRule> &rules) const;
	// The flood's signature announced over protected sources: only with the
	// operator's opt-in to the last resort (--upstream-blackhole).
	bool protection_waived(const UpstreamRule &r) const;

	// Each interface's automatic state.
	struct Auto {
		explicit Auto(const UpstreamAutoConfig &c) : trigger(c) {}
		FloodTrigger trigger;
		std::vector<UpstreamWanted> wanted; // while firing: sources (and the last resort)
		std::string why, sources;            // for the view
		std::string signature;               // the last look at the signature, for the view and the log
		bool spread = false;                 // the last look found a spread flood (logged when it changes)
		// Rules refused while this firing, each with why (logged when the
		// why changes, listed as refused; gone once announced).
		std::vector<std::pair<UpstreamWanted, std::string>> refused;
		std::vector<Cidr> unmatched; // sources of a family no own prefix has (logged once)
		// A signature the protection guard refused is looked at again no
		// sooner than this (a check may scan the standing table).
		double signature_recheck_s = 0;
	};
	// Record a refusal of an automatic rule: logged and counted when it is
	// new or its why changed. And forget one (announced now).
	void refuse_auto(Auto &a, const UpstreamWanted &w, const std::string &why);
	static void unrefuse_auto(Auto &a, const UpstreamRule &r);
	std::map<std::string, Auto> auto_;
	std::map<std::string, std::vector<UpstreamWanted>> policy_; // per interface, the file's
	std::vector<UpstreamWanted> refused_; // wanted, refused by a guard at the last reconcile

	UpstreamOptions opts_;
	Hooks hooks_;
	// The loop's.
	std::vector<UpstreamWanted> wanted_;   // the operator's, in the order given
	std::vector<UpstreamWanted> intended_; // the last set posted
	bool started_ = false;                 // adoption done (after the worker's first listing)
	double next_reconcile_s_ = 0;
	uint64_t refusals_ = 0;                // the guards' (the worker counts --upstream-max's)
	// Between the two: the latest intent, and what the worker published.
	IntentSlot<Intent> slot_;
	Published<SpeakerState> state_;
	// The worker's own (the loop's only after the join, in withdraw_all()).
	GobgpSpeaker speaker_;
	std::vector<UpstreamHeld> mine_;
	std::vector<UpstreamWanted> over_max_;
	uint32_t failures_ = 0; // passes in a row the speaker did not answer
	bool up_ = false;
	bool synced_ = false; // the last pass reconciled its whole intent
	std::string last_error_;
	double answered_s_ = -1; // monotonic time of the speaker's last answer (-1: never)
	uint64_t announcements_ = 0, withdrawals_ = 0, over_max_refusals_ = 0;
	// Copy the worker's own into state_ for view() and metrics(): after
	// each call (what the speaker confirmed is shown at once, not at the
	// end of a pass that may take a timeout per call) and at a pass's end,
	// which alone sets `applied` (in_sync).
	void publish(std::optional<uint64_t> applied = std::nullopt, std::optional<std::string> peer_state = std::nullopt);
	std::thread worker_;
};

} // namespace sluice
