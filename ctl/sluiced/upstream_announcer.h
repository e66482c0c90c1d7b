// upstream_announcer.h - what sluiced asks the network upstream to drop
// (docs/upstream.md): the rules the operator asked for (`sluicectl deny add
// IFACE PREFIX --upstream`), checked by logic/upstream's guards, reconciled
// with gobgpd's paths (upstream/gobgp) when they change and every
// defaults::kUpstreamReconcileS, so a restarted gobgpd gets them again and a
// restarted sluiced adopts its own and withdraws the stale ones. A clean exit
// withdraws them all. The speaker down: the local deny list keeps enforcing,
// the announcer retries at every reconcile and says so (status, metrics, log).
#pragma once

#include "base/address.h"
#include "ipc/replies.h"
#include "logic/upstream.h"
#include "sluiced/metrics.h"
#include "upstream/gobgp.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

struct UpstreamOptions {
	bool enabled = false;      // --upstream
	GobgpConfig speaker;       // --upstream-speaker, --upstream-gobgp
	std::string peer;          // --upstream-peer: the session status reports (empty: none)
	UpstreamGuards guards;     // --upstream-prefixes, --upstream-min-prefix4/6, --upstream-max
	double hold_s = 0;         // --upstream-hold
	bool dry_run = false;      // --upstream-dry-run: log what would be announced, announce nothing
};

class UpstreamAnnouncer {
public:
	// Where a source is protected (allowlisted or with standing) on an
	// interface, and the deny list of an interface (for adoption at start).
	struct Hooks {
		std::function<std::optional<std::string>(const std::string &iface, const Cidr &source)> is_protected;
		std::function<std::vector<Cidr>(const std::string &iface)> deny_list;
		std::function<std::vector<std::string>()> interfaces;
	};
	UpstreamAnnouncer(UpstreamOptions opts, Hooks hooks);

	// The rules `sources` would be announced as on `iface`, each through the
	// guards: the first refused is the error and nothing changes.
	Result<std::vector<UpstreamRule>> check_sources(const std::string &iface, const std::vector<Cidr> &sources) const;
	// `sluicectl deny add IFACE ... --upstream`: checked, then wanted and
	// reconciled now. Returns the rules announced (or wanted, in dry run).
	Result<std::vector<UpstreamRule>> add_sources(const std::string &iface, const std::vector<Cidr> &sources,
						      double now_s);
	// Removed from the deny list: no longer wanted, withdrawn now.
	void remove_sources(const std::string &iface, const std::vector<Cidr> &sources, double now_s);
	// An interface no longer managed: its rules are withdrawn.
	void forget_interface(const std::string &iface, double now_s);

	// Once per control period: reconcile when due.
	void tick(double now_s);
	// A clean exit: withdraw every path of sluice's.
	void withdraw_all();

	UpstreamView view(const std::optional<std::string> &iface) const;
	bool speaker_up() const { return speaker_up_; } // the last call to gobgpd answered
	UpstreamMetricsSnapshot metrics() const; // for /metrics

private:
	void reconcile(double now_s, const std::string &why);
	std::vector<UpstreamWanted> wanted_now();

	UpstreamOptions opts_;
	Hooks hooks_;
	GobgpSpeaker speaker_;
	std::vector<UpstreamWanted> wanted_;  // the operator's, in the order given
	std::vector<UpstreamHeld> mine_;       // announced or adopted by this daemon (or would be, dry run)
	std::vector<UpstreamWanted> over_max_; // wanted, refused by --upstream-max at the last reconcile
	bool started_ = false;                 // the first reconcile (adoption) done
	double next_reconcile_s_ = 0;
	bool speaker_up_ = false;
	uint32_t failures_ = 0; // reconciles in a row the speaker did not answer
	std::string last_error_;
	std::string peer_state_;
	double last_call_s_ = 0;
	uint64_t announcements_ = 0, withdrawals_ = 0, refusals_ = 0;
};

} // namespace sluice
