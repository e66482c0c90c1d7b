// limits.h - the one checker of every bound sluice enforces. The numbers the
// data plane depends on are sluice_abi.h's (SLUICE_RATE_MAX, ...); the
// daemon's own tunables are bounded here. Nothing else compares a value with
// a bound: options parsing, config and slot writes, requests and the CLI all
// call these.
//
// Each check says which value it rejected and what the bound is, without the
// name the reader knows it by: the caller puts that in front, with named():
//
//   named("--rate", check_rate(0))  ->  "--rate 0 is outside 1..100000000"
//   named("table size", ...)        ->  "table size 8 must be a power of two between 16 and 67108864"
//
// Those are input errors (ErrorKind::invalid, exit 2). A write that would
// break an invariant of the data plane is refused instead (exit 1): the
// Voice::invariant form of a check is the whole message,
// "invariant 1 <= rate <= 100000000 violated: rejected rate 0".
#pragma once

#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace sluice {

// Any integer as a caller holds it (options and requests hold int64_t, map
// fields uint64_t or uint32_t), compared exactly and printed as given: a
// negative request stays negative in the message, UINT64_MAX stays itself.
class Given {
public:
	template <std::integral T>
	constexpr Given(T v) // NOLINT: implicit on purpose, every integer type is a Given
		: negative_(below_zero(v)),
		  magnitude_(below_zero(v) ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v))
	{
	}
	constexpr bool within(uint64_t lo, uint64_t hi) const { return !negative_ && magnitude_ >= lo && magnitude_ <= hi; }
	constexpr bool negative() const { return negative_; }
	constexpr uint64_t magnitude() const { return magnitude_; } // the value, when not negative
	std::string str() const;

private:
	template <std::integral T>
	static constexpr bool below_zero(T v)
	{
		if constexpr (std::is_signed_v<T>)
			return v < 0;
		else
			return false;
	}
	bool negative_;
	uint64_t magnitude_;
};

// Input error (the message of `check` led by "name "), or nothing.
Status named(std::string_view name, Status check);

// How a check words its refusal: as bad input for the caller to name, or as
// a broken invariant of a config write (ErrorKind::refused, complete).
enum class Voice { input, invariant };

// --- The data plane's bounds (sluice_abi.h) ---
// tokens per second per source: SLUICE_RATE_MIN..SLUICE_RATE_MAX
Status check_rate(Given rate, Voice voice = Voice::input);
// bucket capacity in tokens: SLUICE_BURST_MIN..SLUICE_BURST_MAX
Status check_burst(Given burst, Voice voice = Voice::input);
// nanoseconds per token, the rate bounds as the config holds them
// (1e9 / SLUICE_RATE_MAX .. 1e9); invariant only, `field` names the config
// field in the message (cost_ns, standing_cost_ns)
Status check_cost_ns(Given cost_ns, const char *field = "cost_ns");
// admission while recovering, parts per million: SLUICE_PPM_MIN..SLUICE_PPM_FULL
Status check_admission_ppm(Given ppm, Voice voice = Voice::input);
// the same bound as an operator types it, in percent (0.1..100)
Status check_admission_percent(double percent);
// slots in the table: a power of two in SLUICE_SLOTS_MIN..SLUICE_SLOTS_MAX
Status check_table_slots(Given slots);
// source prefix lengths: 0..32 and 0..128
Status check_v4_prefix(Given prefix);
Status check_v6_prefix(Given prefix);
// drop sampling, 1 in N: 0 (off) or a power of two up to SLUICE_SAMPLE_EVERY_MAX
Status check_sample_every(Given every);
// standing sets: a power of two in SLUICE_STANDING_SETS_MIN..SLUICE_STANDING_SETS_MAX
Status check_standing_sets(Given sets);
// seconds a source keeps standing: SLUICE_STANDING_LAPSE_MIN_S..SLUICE_STANDING_LAPSE_MAX_S
Status check_standing_lapse_s(Given seconds);
// a standing source's second bucket: the rate's and the burst's bounds
// (SLUICE_RATE_MIN..SLUICE_RATE_MAX, SLUICE_BURST_MIN..SLUICE_BURST_MAX)
Status check_standing_rate(Given rate, Voice voice = Voice::input);
Status check_standing_burst(Given burst, Voice voice = Voice::input);
// the standing sources' capacity, pps: 0 (--trip-pps) or SLUICE_RATE_MIN..SLUICE_RATE_MAX
Status check_standing_capacity(Given pps);
// the UDP feeders' grants per user: a rate of 0 (no UDP grants) or
// SLUICE_RATE_MIN..SLUICE_RATE_MAX a second, a burst of SLUICE_BURST_MIN..SLUICE_BURST_MAX
Status check_grant_rate(Given rate, Voice voice = Voice::input);
Status check_grant_burst(Given burst, Voice voice = Voice::input);
// --grant-max: UDP grants per user a lapse time; 0 (no such bound) or as a
// burst may be (SLUICE_BURST_MIN..SLUICE_BURST_MAX).
Status check_grant_max(Given grants, Voice voice = Voice::input);
// observed standing, distinct ticks: 0 (off)..SLUICE_OBSERVE_PERIODS_MAX
Status check_observe_periods(Given periods);
// The newcomer budget, all CPUs together: 0 (none), or what `cpus` per-CPU
// buckets can hold. Each CPU's bucket is bucket.h's, so its cost
// (ceil(1e9 x cpus / pps)) must stay <= 1e12 (bucket.h's overflow bound:
// pps >= cpus / 1000) and its burst (kNewcomerBurstMs of the budget, per CPU)
// <= SLUICE_BURST_MAX, which bounds the rate per CPU (1e7 pps).
// `cpus` 1..2^20.
Status check_newcomer_pps(Given pps, Given cpus);
// The same bound for any budget of one bucket per CPU (the cookie budget's
// too), its errors naming the budget ("the cookie budget needs ...").
Status check_per_cpu_pps(Given pps, Given cpus, std::string_view what);
uint64_t newcomer_pps_min(uint64_t cpus); // the least non-zero budget
uint64_t newcomer_pps_max(uint64_t cpus);
// The same bucket as the config holds it, per CPU (invariant): both 0 (no
// budget), or cost_ns in 1e9 / SLUICE_RATE_MAX .. 1e12 and burst in
// SLUICE_BURST_MIN..SLUICE_BURST_MAX.
Status check_newcomer_bucket(Given cost_ns, Given burst);
Status check_per_cpu_bucket(std::string_view what, Given cost_ns, Given burst); // "cookie": cookie_cost_ns, ...
// --cookie-dest-pps: 0 (no bound) or 1..kCookieDestPpsMax, so that its
// burst (kNewcomerBurstMs of it) stays within SLUICE_BURST_MAX.
inline constexpr uint64_t kCookieDestPpsMax = 10000000;
Status check_cookie_dest_pps(Given pps);
// --rekey-every: 0 (never) or kRekeyEveryMinS..kRekeyEveryMaxS seconds.
// Not below 5 s: each rekey loads a program on the control loop (tens of
// ms) and makes every bucket anew; not above 30 days.
inline constexpr uint64_t kRekeyEveryMinS = 5;
inline constexpr uint64_t kRekeyEveryMaxS = 30 * 86400;
Status check_rekey_every_s(Given seconds);
// The per-destination bucket as the config holds it: both 0 (no bound), or
// cookie_dest_cost_ns in 1e9 / SLUICE_RATE_MAX .. 1e9 and cookie_dest_burst
// in SLUICE_BURST_MIN..SLUICE_BURST_MAX.
Status check_cookie_dest_bucket(Given cost_ns, Given burst);

// --- The daemon's tunables ---
inline constexpr double kPeriodMinS = 0.01, kPeriodMaxS = 60;  // control period
inline constexpr uint64_t kTripPeriodsMax = 3600;              // periods in the breaker's window (its ring's entries)
// The breaker moves status keeps (the path `sluicectl status` shows).
inline constexpr size_t kBreakerPathKept = 8;
// --rt-priority: SCHED_FIFO 1..49, under the kernel's threaded interrupt
// handlers (FIFO 50) so the loop never outranks a device's interrupts.
inline constexpr uint64_t kRtPriorityMax = 49;
// What sluiced may run at real-time priority without blocking before the
// kernel tells it (RLIMIT_RTTIME's soft limit: SIGXCPU, and sluiced goes
// back to SCHED_OTHER), and kills it (the hard limit, if demotion failed).
// A tick is milliseconds; the longest stretch without a blocking call is a
// policy reload of 65,536 prefixes a family, 0.16-0.26 s on the test VM.
inline constexpr double kRtTimeSoftS = 0.5, kRtTimeHardS = 1.0;
// A tick that starts more than this share of a period after its due time
// is counted late (status: loop.late_ticks).
inline constexpr double kLateTickShare = 0.1;
inline constexpr double kHoldMaxS = 86400, kRecoveryMaxS = 86400;
inline constexpr uint64_t kAuditSlotsMax = 1u << 24;           // slots audited per period
inline constexpr uint64_t kMaxClientsMax = 1024;               // concurrent control clients
inline constexpr uint64_t kTopCapacityMax = 1u << 20;          // sources the `top` summary tracks
inline constexpr double kTopWindowMinS = 0.1, kTopWindowMaxS = 3600;
inline constexpr uint64_t kTopCountMax = 1u << 20;             // sources one `top` reply lists
inline constexpr double kIntervalMaxS = 86400;                 // sluicectl --watch/--interval

// These name the value after the bound ("must be 1..1024, got 0"): how
// their messages have always read.
Status check_period_s(double seconds);          // kPeriodMinS..kPeriodMaxS
Status check_trip_pps(Given pps);                // at least 1
Status check_clear_pps(Given pps, Given trip_pps); // 1..trip_pps
Status check_trip_periods(Given periods);        // 1..kTripPeriodsMax
Status check_rt_priority(Given priority);        // 0 (off)..kRtPriorityMax
Status check_hold_s(double seconds);             // 0..kHoldMaxS
Status check_recovery_s(double seconds);         // (0, kRecoveryMaxS]
Status check_audit_slots(Given slots);           // 1..kAuditSlotsMax
Status check_max_clients(Given clients);         // 1..kMaxClientsMax
Status check_top_capacity(Given sources);        // 1..kTopCapacityMax
Status check_top_window_s(double seconds);       // kTopWindowMinS..kTopWindowMaxS
Status check_top_count(Given n);                 // 1..kTopCountMax
Status check_interval_s(double seconds);         // (0, kIntervalMaxS]

// Revoking the standing of unresponsive sources (logic/standing_share):
// --revoke-factor, --revoke-periods, --revoke-penalty, --revoke-penalty-max.
inline constexpr uint64_t kRevokePeriodsMax = 64;
inline constexpr double kRevokeSecondsMin = 1, kRevokeSecondsMax = 7 * 86400; // either penalty
Status check_revoke_factor(double factor);       // more than 1, finite
Status check_revoke_periods(Given periods);      // 1..kRevokePeriodsMax
// --standing-prefix-quota: at least 1; at most the table's entries
// (standing sets x ways), which is then no bound but a table's own size,
// and at most SLUICE_PREFIX_QUOTA_MAX (a prefix's count keeps 16 bits).
Status check_standing_prefix_quota(Given entries, uint64_t table_entries);
Status check_revoke_penalty_s(double seconds);   // kRevokeSecondsMin..kRevokeSecondsMax
// --standing-tenure: 0 (one level for all) or kRevokeSecondsMin..SLUICE_STANDING_LAPSE_MAX_S
Status check_standing_tenure_s(double seconds);
// penalty_s (the first penalty, itself valid)..kRevokeSecondsMax
Status check_revoke_penalty_max_s(double seconds, double penalty_s);

// Upstream mitigation (docs/upstream.md). A source prefix announced upstream
// is never shorter than --upstream-min-prefix4/6, and those never go below
// /8 and /16: a bound that allowed /0 would let one typo drop the Internet.
inline constexpr uint64_t kUpstreamMaxMax = 1024;    // announcements at most
inline constexpr uint64_t kUpstreamMinPrefix4Floor = 8, kUpstreamMinPrefix6Floor = 16;
inline constexpr double kUpstreamHoldMaxS = 86400;
inline constexpr size_t kUpstreamPrefixesMax = 64;  // --upstream-prefixes entries
Status check_upstream_max(Given n);              // 1..kUpstreamMaxMax
Status check_upstream_min_prefix4(Given prefix); // kUpstreamMinPrefix4Floor..32
Status check_upstream_min_prefix6(Given prefix); // kUpstreamMinPrefix6Floor..128
Status check_upstream_hold_s(double seconds);    // 0..kUpstreamHoldMaxS
Status check_upstream_prefixes(Given n);         // 1..kUpstreamPrefixesMax
// Automatic announcements: sources per interface, seconds over a threshold.
inline constexpr uint64_t kUpstreamTopMax = 64;
inline constexpr double kUpstreamAfterMaxS = 3600;
Status check_upstream_top(Given n);              // 1..kUpstreamTopMax
Status check_upstream_after_s(double seconds);   // 0..kUpstreamAfterMaxS
// --upstream-bps, --upstream-pps, --upstream-action rate: 0 (off) ..
// 1 Tbit/s and 10^10 pps, what no link carries.
inline constexpr uint64_t kUpstreamBpsMax = 1'000'000'000'000, kUpstreamPpsMax = 10'000'000'000;
Status check_upstream_bps(Given bits_per_s);     // 0..kUpstreamBpsMax
Status check_upstream_pps(Given pps);            // 0..kUpstreamPpsMax

// --- Capture (sluicectl capture; docs/architecture.md "Capture") ---
// Bytes of a frame copied: SLUICE_CAPTURE_SNAPLEN_MIN..SLUICE_CAPTURE_SNAPLEN_MAX
Status check_capture_snaplen(Given snaplen);
// 1 in N of the frames asked for, per CPU: 1..SLUICE_CAPTURE_SAMPLE_EVERY_MAX
Status check_capture_sample_every(Given every);
// An outcome mask: not empty, only outcomes that exist and the capture call
// sees (not SLUICE_CAPTURE_NEVER's)
Status check_capture_outcomes(uint32_t mask);
// sluicectl's --count (frames written) and --duration (seconds)
inline constexpr uint64_t kCaptureCountMax = 1ull << 32;
inline constexpr double kCaptureDurationMaxS = 7 * 86400;
Status check_capture_count(Given n);             // 1..kCaptureCountMax
Status check_capture_duration_s(double seconds); // (0, kCaptureDurationMaxS]
// The kernel's per-CPU buffer a capture is read from (pages of 4 KiB, a
// power of two: 256 KiB per CPU holds about 1,700 frames at the default
// snaplen) and the pipe sluiced writes to sluicectl (1 MiB, Linux's default
// fs.pipe-max-size).
inline constexpr size_t kCaptureBufferPagesPerCpu = 64;
inline constexpr size_t kCapturePipeBytes = 1 << 20;
// The data plane turns a capture off by itself once its lease is this old:
// sluiced renews it every kCaptureRenewS while it serves the capture, so a
// sluiced that died (SIGKILL too) leaves nothing on for longer.
inline constexpr double kCaptureLeaseS = 5, kCaptureRenewS = 1;
// sluiced sends the counts to sluicectl at most this often.
inline constexpr double kCaptureStatsEveryS = 0.25;

// --- The policy file (docs/policy.md) ---
// Classes, the default class included: a class is a small index the data
// plane carries per frame (a class record per id, a u8 in the port table),
// and 64 is plenty for the cases operators name (NAT, partners, DNS, SYN,
// ICMP, health checkers). The ABI's number: the maps are sized by it.
inline constexpr size_t kMaxClasses = SLUICE_CLASSES_MAX;
// Rules: each frame's class is chosen among the rules that match it; the
// bound keeps that choice (and the tables logic/class_tables compiles from
// it) small.
inline constexpr size_t kMaxRules = 256;
// A class name, NUL-padded into the class record (so shorter than its field).
inline constexpr size_t kClassNameMax = SLUICE_CLASS_NAME_MAX;
static_assert(kClassNameMax < SLUICE_CLASS_NAME_BYTES, "a class record's name keeps a NUL");
// A byte budget, bytes per second and bytes: up to 100 Gbit/s; a burst of at
// least one full-size Ethernet frame (1514 bytes without the FCS), or the
// class could never pass one. The ABI's numbers: the program's byte bucket
// arithmetic is bounded by them (logic/class_tables).
inline constexpr uint64_t kByteRateMax = SLUICE_BYTE_RATE_MAX;
inline constexpr uint64_t kByteBurstMin = SLUICE_BYTE_BURST_MIN, kByteBurstMax = SLUICE_BYTE_BURST_MAX;
// A policy or netset file is read whole, at most this many bytes.
inline constexpr uint64_t kPolicyFileBytesMax = 16u << 20;
// Nesting in the policy document (the format needs 6 levels), and its nodes
// (the netset files hold the long lists; they are bounded by entries).
inline constexpr uint64_t kPolicyDepthMax = 8;
inline constexpr uint64_t kPolicyNodesMax = 1u << 18;

Status check_class_count(Given classes);           // 1..kMaxClasses
Status check_rule_count(Given rules);              // 0..kMaxRules
// [a-z0-9_-]{1,32}: a class name goes into metrics labels and log lines.
Status check_class_name(std::string_view name);
Status check_port(Given port);                     // 0..65535
Status check_port_range(Given lo, Given hi);       // both ports, lo <= hi
Status check_byte_rate(Given bytes_per_s);         // 1..kByteRateMax
Status check_byte_burst(Given bytes);              // kByteBurstMin..kByteBurstMax
// prefixes in one list of one family (an allow or deny list, or the sources
// of all rules): the LPM map's size, 0..SLUICE_LIST_MAX_ENTRIES
Status check_list_entries(Given entries);
Status check_file_bytes(Given bytes);              // 0..kPolicyFileBytesMax
Status check_nesting_depth(Given depth);           // 0..kPolicyDepthMax
Status check_node_count(Given nodes);              // 0..kPolicyNodesMax

// --- Names and paths ---
// The longest interface name (IFNAMSIZ - 1) and the longest UNIX socket path
// (sizeof(sockaddr_un::sun_path) - 1), in bytes.
inline constexpr size_t kInterfaceNameMax = 15;
inline constexpr size_t kSocketPathMax = 107;

// The one interface-name rule: what the kernel takes for a name
// (dev_valid_name: 1..kInterfaceNameMax bytes, not "." or "..", no '/', ':'
// or whitespace), and no control characters. Messages:
// "interface name is empty", "interface name 'X' is longer than 15
// characters", "interface name 'X' has a character interface names cannot
// have", "interface name '..' is not a name". (The CLI and the control
// socket state the rule in their own words, which their users already read.)
Status check_interface_name(std::string_view name);
// A name sluiced manages is printable ASCII too: it goes into pin paths, log
// lines, JSON replies and Prometheus labels, which cannot all carry any byte.
// (The CLI checks only the rule above and lets sluiced say whether it
// manages a name.)
Status check_managed_interface_name(std::string_view name);

// A UNIX socket path: "'P' must be 1 to 107 bytes long".
Status check_socket_path(std::string_view path);

} // namespace sluice
