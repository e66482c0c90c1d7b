// options.h - sluiced's options: Boost.Program_options definitions, read from
// the command line and from an INI config file (--config; the command line
// wins), then validated. Every bad value is an input error naming the option;
// the defaults are base/defaults.h's, the bounds base/limits.h's.
#pragma once

#include "bpf/dataplane.h"
#include "sluiced/metrics.h"
#include "sluiced/upstream_announcer.h"
#include "logic/policy.h"
#include "logic/standing_share.h"
#include "base/defaults.h"
#include "base/log.h"
#include "base/option_text.h"
#include "base/result.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct DaemonOptions {
	std::vector<std::string> interfaces;
	AttachMode mode = AttachMode::native;
	uint64_t rate_pps = defaults::kRatePps;
	uint64_t burst = defaults::kBurst;
	bool rate_given = false;  // set explicitly (command line or file): applied to adopted pins
	bool burst_given = false;
	// A source with standing: a second bucket of its own (its budget is
	// rate + standing rate). Applied at every start, adopted pins too.
	uint64_t standing_rate_pps = defaults::kStandingRatePps;
	uint64_t standing_burst = defaults::kStandingBurst;
	// While shedding, the sources without standing share this budget, all
	// CPUs together (0: none). Not given: trip-pps / 10, within what the
	// possible CPUs can hold (newcomer_pps_asked()).
	std::optional<uint64_t> newcomer_pps;
	// SYN cookies (docs/architecture.md, "SYN cookies"): when a SYN without
	// standing to a listener is answered from XDP, and the SYN-ACKs a second
	// the program may send, all CPUs together. Applied at every start,
	// adopted pins too.
	sluice_cookie_mode cookie_mode = defaults::kCookieMode;
	uint64_t cookie_pps = defaults::kCookiePps;
	uint64_t cookie_dest_pps = defaults::kCookieDestPps;
	// --no-standing: no feeders attached, no grants for the connections found
	// at start; the table stays empty, shedding admits the allowlist and the
	// newcomer budget only.
	bool no_standing = false;
	// --feeder-cgroup: the cgroup v2 directory the feeders attach to (empty:
	// the hierarchy's root, every socket of the host).
	std::string feeder_cgroup;
	// Standing buys a share (docs/architecture.md): what the standing
	// sources together may take (0: --trip-pps), when one loses standing
	// for sending over its share, what UDP grants a local user may make.
	uint64_t standing_capacity_pps = defaults::kStandingCapacityPps;
	RevocationConfig revoke;
	double standing_tenure_s = defaults::kStandingTenureS; // --standing-tenure (logic/standing_share, TenureLine)
	uint64_t grant_rate_per_s = defaults::kGrantRatePerS;
	uint64_t grant_burst = defaults::kGrantBurst;
	uint64_t grant_max = defaults::kGrantMax; // --grant-max: a user's UDP grants a lapse time; 0: no such bound
	// A new hash key this often, in seconds (0: only `sluicectl rekey`).
	uint64_t rekey_every_s = defaults::kRekeyEveryS;
	// Standing entries one /24 or /48 may hold (logic/prefix_quota).
	uint32_t standing_prefix_quota = defaults::kStandingPrefixQuota;
	LoadOptions load;         // table size, prefixes, dry run, key, standing sets/lapse, observed standing
	std::string socket_path = defaults::kSocketPath;
	std::string socket_group; // empty: 0600 root only; else 0660 with this group
	std::string pin_dir = defaults::kPinDir;
	double period_s = defaults::kPeriodS;
	// --rt-priority: once the interfaces are attached, the control loop asks
	// for SCHED_FIFO at this priority, bounded by RLIMIT_RTTIME (0: off, the
	// scheduling it was started with).
	uint32_t rt_priority = defaults::kRtPriority;
	PolicyConfig policy;
	uint32_t audit_per_period = defaults::kAuditSlotsPerPeriod;
	uint32_t max_clients = defaults::kMaxClients;
	LogLevel log_level = LogLevel::info;
	bool detach_on_exit = false;
	std::string config_file;  // empty: none
	// `sluicectl top`: the heavy-hitters summary of sampled drops (the
	// sampling rate itself is load.sample_every).
	size_t top_capacity = defaults::kTopCapacity; // sources the summary tracks
	double top_window_s = defaults::kTopWindowS;  // seconds one summary covers
	std::optional<ListenAddress> metrics_listen; // --metrics-listen: /metrics and /healthz; none: off
	// The policy file (docs/policy.md): --policy, or defaults::kPolicyPath
	// when it exists; empty: none (--no-policy, or no file at the default).
	std::string policy_file;
	// --policy-watch: look at the file's identity once a period and reload
	// when it changes.
	bool policy_watch = false;
	// --upstream and its --upstream-* options (docs/upstream.md).
	UpstreamOptions upstream;
};

// What the standing sources together may take: --standing-pps, or --trip-pps.
uint64_t standing_capacity(const DaemonOptions &o);

// The newcomer budget to ask for over `cpus` CPUs: --newcomer-pps, or its default.
uint64_t newcomer_pps_asked(const DaemonOptions &o, uint64_t cpus);

struct ParsedOptions {
	DaemonOptions options;
	bool help = false;      // --help: print `usage` and exit 0
	std::string usage;
};

// argv as main() gets it. Errors are ErrorKind::invalid (exit 2).
Result<ParsedOptions> parse_daemon_options(int argc, const char *const *argv);

} // namespace sluice
