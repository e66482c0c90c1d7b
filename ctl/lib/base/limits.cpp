#include "base/limits.h"

#include "base/defaults.h"
#include "bpf/sluice_abi.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <net/if.h>
#include <sys/un.h>

namespace sluice {

static_assert(kInterfaceNameMax == IFNAMSIZ - 1);
static_assert(kSocketPathMax == sizeof(sockaddr_un::sun_path) - 1);

std::string Given::str() const
{
	return (negative_ ? "-" : "") + std::to_string(magnitude_);
}

Status named(std::string_view name, Status check)
{
	if (check)
		return check;
	Error e = std::move(check.error());
	e.message = std::string(name) + " " + e.message;
	return std::unexpected(std::move(e));
}

namespace {

// "0.01", "60", "nan": as an operator would type the number.
std::string text_of(double v)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%g", v);
	return buf;
}

template <std::integral T>
std::string text_of(T v)
{
	return std::to_string(v);
}

constexpr bool power_of_two(uint64_t v)
{
	return (v & (v - 1)) == 0;
}

// The bound of a quantity the data plane depends on, in either voice:
// "0 is outside 1..100000000" or
// "invariant 1 <= rate <= 100000000 violated: rejected rate 0".
Status within(Given v, uint64_t lo, uint64_t hi, const char *quantity, Voice voice)
{
	if (v.within(lo, hi))
		return {};
	if (voice == Voice::invariant)
		return refused("invariant " + text_of(lo) + " <= " + quantity + " <= " + text_of(hi) +
			       " violated: rejected " + quantity + " " + v.str());
	return invalid(v.str() + " is outside " + text_of(lo) + ".." + text_of(hi));
}

// A tunable's range, bound first: "must be 1..1024, got 0".
Status count_within(Given v, uint64_t lo, uint64_t hi)
{
	if (v.within(lo, hi))
		return {};
	return invalid("must be " + text_of(lo) + ".." + text_of(hi) + ", got " + v.str());
}

// Seconds in [lo, hi] (NaN is outside every range): "must be between 0.01 and 60 seconds, got 0".
Status seconds_within(double v, double lo, double hi)
{
	if (v >= lo && v <= hi)
		return {};
	return invalid("must be between " + text_of(lo) + " and " + text_of(hi) + " seconds, got " + text_of(v));
}

} // namespace

Status check_rate(Given rate, Voice voice)
{
	return within(rate, SLUICE_RATE_MIN, SLUICE_RATE_MAX, "rate", voice);
}

Status check_burst(Given burst, Voice voice)
{
	return within(burst, SLUICE_BURST_MIN, SLUICE_BURST_MAX, "burst", voice);
}

Status check_cost_ns(Given cost_ns, const char *field)
{
	// cost_ns = 1e9 / rate, so the rate bounds are cost bounds.
	constexpr uint64_t min_cost = SLUICE_NSEC_PER_SEC / SLUICE_RATE_MAX;
	if (cost_ns.within(min_cost, SLUICE_NSEC_PER_SEC))
		return {};
	return refused("invariant " + text_of(min_cost) + " <= " + field + " <= " + text_of(SLUICE_NSEC_PER_SEC) +
		       " (rate " + text_of(SLUICE_RATE_MIN) + ".." + text_of(SLUICE_RATE_MAX) + ") violated: rejected " +
		       field + " " + cost_ns.str());
}

Status check_admission_ppm(Given ppm, Voice voice)
{
	return within(ppm, SLUICE_PPM_MIN, SLUICE_PPM_FULL, "admission_ppm", voice);
}

Status check_admission_percent(double percent)
{
	constexpr double lo = SLUICE_PPM_MIN / 10000.0, hi = SLUICE_PPM_FULL / 10000.0;
	if (percent >= lo && percent <= hi)
		return {};
	return invalid("must be " + text_of(lo) + ".." + text_of(hi) + " percent, got " + text_of(percent));
}

Status check_table_slots(Given slots)
{
	if (slots.within(SLUICE_SLOTS_MIN, SLUICE_SLOTS_MAX) && power_of_two(slots.magnitude()))
		return {};
	return invalid(slots.str() + " must be a power of two between " + text_of(SLUICE_SLOTS_MIN) + " and " +
		       text_of(SLUICE_SLOTS_MAX));
}

Status check_v4_prefix(Given prefix)
{
	return within(prefix, 0, 32, "IPv4 prefix", Voice::input);
}

Status check_v6_prefix(Given prefix)
{
	return within(prefix, 0, 128, "IPv6 prefix", Voice::input);
}

Status check_sample_every(Given every)
{
	if (every.within(0, SLUICE_SAMPLE_EVERY_MAX) && power_of_two(every.magnitude()))
		return {};
	return invalid(every.str() + " must be 0 (off) or a power of two up to " + text_of(SLUICE_SAMPLE_EVERY_MAX));
}

Status check_capture_snaplen(Given snaplen)
{
	return within(snaplen, SLUICE_CAPTURE_SNAPLEN_MIN, SLUICE_CAPTURE_SNAPLEN_MAX, "snaplen", Voice::input);
}

Status check_capture_sample_every(Given every)
{
	return within(every, 1, SLUICE_CAPTURE_SAMPLE_EVERY_MAX, "sample_every", Voice::input);
}

Status check_capture_outcomes(uint32_t mask)
{
	static_assert(SLUICE_OUTCOMES <= 32, "the capture's outcome mask is one 32-bit word");
	constexpr uint32_t all = SLUICE_OUTCOMES == 32 ? ~0u : (1u << SLUICE_OUTCOMES) - 1;
	if (mask == 0)
		return invalid("no outcome to capture");
	if (mask & ~all)
		return invalid("an outcome mask with bits beyond the " + text_of(SLUICE_OUTCOMES) + " outcomes");
	if (mask & SLUICE_CAPTURE_NEVER)
		return invalid("non_ip and would_drop cannot be captured (non-IP frames pass before the capture; a dry "
			       "run's frame is captured under its drop reason)");
	return {};
}

Status check_capture_count(Given n)
{
	return within(n, 1, kCaptureCountMax, "count", Voice::input);
}

Status check_capture_duration_s(double seconds)
{
	if (seconds > 0 && seconds <= kCaptureDurationMaxS)
		return {};
	return invalid(std::to_string(seconds) + " s is outside (0, " + text_of(uint64_t(kCaptureDurationMaxS)) + "] s");
}

Status check_standing_sets(Given sets)
{
	if (sets.within(SLUICE_STANDING_SETS_MIN, SLUICE_STANDING_SETS_MAX) && power_of_two(sets.magnitude()))
		return {};
	return invalid(sets.str() + " must be a power of two between " + text_of(SLUICE_STANDING_SETS_MIN) + " and " +
		       text_of(SLUICE_STANDING_SETS_MAX));
}

Status check_standing_lapse_s(Given seconds)
{
	if (seconds.within(SLUICE_STANDING_LAPSE_MIN_S, SLUICE_STANDING_LAPSE_MAX_S))
		return {};
	return invalid(seconds.str() + " is outside " + text_of(SLUICE_STANDING_LAPSE_MIN_S) + ".." +
		       text_of(SLUICE_STANDING_LAPSE_MAX_S) + " seconds");
}

Status check_standing_rate(Given rate, Voice voice)
{
	return within(rate, SLUICE_RATE_MIN, SLUICE_RATE_MAX, "standing rate", voice);
}

Status check_standing_burst(Given burst, Voice voice)
{
	return within(burst, SLUICE_BURST_MIN, SLUICE_BURST_MAX, "standing_burst", voice);
}

Status check_standing_capacity(Given pps)
{
	if (pps.within(0, 0))
		return {};
	return within(pps, SLUICE_RATE_MIN, SLUICE_RATE_MAX, "standing capacity", Voice::input);
}

Status check_grant_rate(Given rate, Voice voice)
{
	if (rate.within(0, 0))
		return {};
	return within(rate, SLUICE_RATE_MIN, SLUICE_RATE_MAX, "grant rate", voice);
}

Status check_grant_burst(Given burst, Voice voice)
{
	return within(burst, SLUICE_BURST_MIN, SLUICE_BURST_MAX, "grant burst", voice);
}

Status check_grant_max(Given grants, Voice voice)
{
	if (grants.within(0, 0))
		return {};
	return within(grants, SLUICE_BURST_MIN, SLUICE_BURST_MAX, "grant total", voice);
}

Status check_observe_periods(Given periods)
{
	if (periods.within(0, SLUICE_OBSERVE_PERIODS_MAX))
		return {};
	return invalid(periods.str() + " is outside 0 (off).." + text_of(SLUICE_OBSERVE_PERIODS_MAX));
}

namespace {
// bucket.h's overflow bound on cost_ns: 1e9 / SLUICE_PPM_MIN x 1e6.
constexpr uint64_t kBucketCostMaxNs = SLUICE_NSEC_PER_SEC / SLUICE_PPM_MIN * SLUICE_PPM_FULL;
// One CPU's newcomer rate: its cost at least 1e9 / SLUICE_RATE_MAX, its burst
// (kNewcomerBurstMs of it) at most SLUICE_BURST_MAX.
constexpr uint64_t kNewcomerPpsPerCpuMax =
	std::min<uint64_t>(SLUICE_RATE_MAX, SLUICE_BURST_MAX * 1000 / defaults::kNewcomerBurstMs);
} // namespace

uint64_t newcomer_pps_min(uint64_t cpus)
{
	// ceil(1e9 x cpus / pps) <= 1e12  <=>  pps x 1000 >= cpus
	return std::max<uint64_t>(1, (cpus + 999) / 1000);
}

uint64_t newcomer_pps_max(uint64_t cpus)
{
	return cpus * kNewcomerPpsPerCpuMax;
}

Status check_newcomer_pps(Given pps, Given cpus)
{
	return check_per_cpu_pps(pps, cpus, "newcomer");
}

Status check_per_cpu_pps(Given pps, Given cpus, std::string_view what)
{
	if (cpus.negative() || cpus.magnitude() == 0 || cpus.magnitude() > (uint64_t{1} << 20))
		return invalid("the " + std::string(what) + " budget needs a CPU count of 1.." +
			       text_of(uint64_t{1} << 20) + ", got " + cpus.str());
	uint64_t lo = newcomer_pps_min(cpus.magnitude()), hi = newcomer_pps_max(cpus.magnitude());
	if (!pps.negative() && (pps.magnitude() == 0 || (pps.magnitude() >= lo && pps.magnitude() <= hi)))
		return {};
	return invalid(pps.str() + " is outside 0 (none) or " + text_of(lo) + ".." + text_of(hi) + " (" +
		       cpus.str() + " CPUs)");
}

Status check_newcomer_bucket(Given cost_ns, Given burst)
{
	return check_per_cpu_bucket("newcomer", cost_ns, burst);
}

Status check_per_cpu_bucket(std::string_view what, Given cost_ns, Given burst)
{
	if (!cost_ns.negative() && !burst.negative() && cost_ns.magnitude() == 0 && burst.magnitude() == 0)
		return {};
	constexpr uint64_t min_cost = SLUICE_NSEC_PER_SEC / SLUICE_RATE_MAX;
	std::string cost = std::string(what) + "_cost_ns", bursts = std::string(what) + "_burst";
	if (!cost_ns.within(min_cost, kBucketCostMaxNs))
		return refused("invariant " + cost + " 0 or " + text_of(min_cost) + ".." + text_of(kBucketCostMaxNs) +
			       " (per CPU) violated: rejected " + cost + " " + cost_ns.str());
	if (!burst.within(SLUICE_BURST_MIN, SLUICE_BURST_MAX))
		return refused("invariant " + text_of(SLUICE_BURST_MIN) + " <= " + bursts + " <= " +
			       text_of(SLUICE_BURST_MAX) + " (per CPU, with a budget) violated: rejected " + bursts + " " +
			       burst.str());
	return {};
}

Status check_cookie_dest_pps(Given pps)
{
	if (!pps.negative() && (pps.magnitude() == 0 || pps.within(1, kCookieDestPpsMax)))
		return {};
	return invalid(pps.str() + " is outside 0 (none) or 1.." + text_of(kCookieDestPpsMax));
}

Status check_rekey_every_s(Given seconds)
{
	if (!seconds.negative() && (seconds.magnitude() == 0 || seconds.within(kRekeyEveryMinS, kRekeyEveryMaxS)))
		return {};
	return invalid(seconds.str() + " is outside 0 (never) or " + text_of(kRekeyEveryMinS) + ".." +
		       text_of(kRekeyEveryMaxS) + " seconds");
}

Status check_cookie_dest_bucket(Given cost_ns, Given burst)
{
	if (!cost_ns.negative() && !burst.negative() && cost_ns.magnitude() == 0 && burst.magnitude() == 0)
		return {};
	if (auto ok = check_cost_ns(cost_ns, "cookie_dest_cost_ns"); !ok)
		return ok;
	return within(burst, SLUICE_BURST_MIN, SLUICE_BURST_MAX, "cookie_dest_burst", Voice::invariant);
}

Status check_period_s(double seconds)
{
	return seconds_within(seconds, kPeriodMinS, kPeriodMaxS);
}

Status check_trip_pps(Given pps)
{
	if (pps.within(1, UINT64_MAX))
		return {};
	return invalid("must be at least 1, got " + pps.str());
}

Status check_clear_pps(Given pps, Given trip_pps)
{
	if (!trip_pps.negative() && pps.within(1, trip_pps.magnitude()))
		return {};
	return invalid("must be between 1 and --trip-pps (" + trip_pps.str() + "), got " + pps.str());
}

Status check_trip_periods(Given periods)
{
	return count_within(periods, 1, kTripPeriodsMax);
}

Status check_revoke_factor(double factor)
{
	if (factor > 1 && std::isfinite(factor))
		return {};
	return invalid("must be more than 1 (and finite), got " + text_of(factor));
}

Status check_revoke_periods(Given periods)
{
	return count_within(periods, 1, kRevokePeriodsMax);
}

Status check_standing_prefix_quota(Given entries, uint64_t table_entries)
{
	return count_within(entries, 1, std::min<uint64_t>(table_entries, SLUICE_PREFIX_QUOTA_MAX));
}

Status check_revoke_penalty_s(double seconds)
{
	return seconds_within(seconds, kRevokeSecondsMin, kRevokeSecondsMax);
}

Status check_standing_tenure_s(double seconds)
{
	if (seconds == 0)
		return {};
	return seconds_within(seconds, kRevokeSecondsMin, double(SLUICE_STANDING_LAPSE_MAX_S));
}

Status check_revoke_penalty_max_s(double seconds, double penalty_s)
{
	if (seconds >= penalty_s && seconds <= kRevokeSecondsMax)
		return {};
	return invalid("must be between --revoke-penalty (" + text_of(penalty_s) + ") and " + text_of(kRevokeSecondsMax) +
		       " seconds, got " + text_of(seconds));
}

Status check_rt_priority(Given priority)
{
	if (priority.within(0, kRtPriorityMax))
		return {};
	return invalid("must be 0 (off).." + text_of(kRtPriorityMax) + ", got " + priority.str());
}

Status check_hold_s(double seconds)
{
	if (seconds >= 0 && seconds <= kHoldMaxS)
		return {};
	return invalid("must be 0.." + text_of(kHoldMaxS) + " seconds, got " + text_of(seconds));
}

Status check_recovery_s(double seconds)
{
	if (seconds > 0 && seconds <= kRecoveryMaxS)
		return {};
	return invalid("must be more than 0 and at most " + text_of(kRecoveryMaxS) + " seconds, got " + text_of(seconds));
}

Status check_audit_slots(Given slots)
{
	return count_within(slots, 1, kAuditSlotsMax);
}

Status check_max_clients(Given clients)
{
	return count_within(clients, 1, kMaxClientsMax);
}

Status check_top_capacity(Given sources)
{
	return count_within(sources, 1, kTopCapacityMax);
}

Status check_top_window_s(double seconds)
{
	return seconds_within(seconds, kTopWindowMinS, kTopWindowMaxS);
}

Status check_top_count(Given n)
{
	return count_within(n, 1, kTopCountMax);
}

Status check_interval_s(double seconds)
{
	if (seconds > 0 && seconds <= kIntervalMaxS)
		return {};
	return invalid("must be seconds (0 < SEC <= " + text_of(kIntervalMaxS) + "), got " + text_of(seconds));
}

Status check_class_count(Given classes)
{
	return within(classes, 1, kMaxClasses, "classes", Voice::input);
}

Status check_rule_count(Given rules)
{
	return within(rules, 0, kMaxRules, "rules", Voice::input);
}

Status check_class_name(std::string_view name)
{
	std::string quoted = "class name '" + std::string(name) + "'";
	if (name.empty() || name.size() > kClassNameMax)
		return invalid(quoted + " must be 1 to " + std::to_string(kClassNameMax) + " characters long");
	for (char c : name)
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return invalid(quoted + " may hold only a-z, 0-9, '_' and '-'");
	return {};
}

Status check_port(Given port)
{
	return within(port, 0, 65535, "port", Voice::input);
}

Status check_port_range(Given lo, Given hi)
{
	if (auto ok = check_port(lo); !ok)
		return ok;
	if (auto ok = check_port(hi); !ok)
		return ok;
	if (lo.magnitude() > hi.magnitude())
		return invalid("port range " + lo.str() + "-" + hi.str() + " is empty: the first port must be at most the last");
	return {};
}

Status check_byte_rate(Given bytes_per_s)
{
	return within(bytes_per_s, 1, kByteRateMax, "byte rate", Voice::input);
}

Status check_byte_burst(Given bytes)
{
	return within(bytes, kByteBurstMin, kByteBurstMax, "byte burst", Voice::input);
}

Status check_list_entries(Given entries)
{
	if (entries.within(0, SLUICE_LIST_MAX_ENTRIES))
		return {};
	return invalid(entries.str() + " prefixes are more than one list of one family holds (" +
		       text_of(SLUICE_LIST_MAX_ENTRIES) + ")");
}

Status check_file_bytes(Given bytes)
{
	if (bytes.within(0, kPolicyFileBytesMax))
		return {};
	return invalid(bytes.str() + " bytes are more than a policy or netset file may hold (" +
		       text_of(kPolicyFileBytesMax) + ")");
}

Status check_nesting_depth(Given depth)
{
	if (depth.within(0, kPolicyDepthMax))
		return {};
	return invalid("nesting depth " + depth.str() + " is deeper than " + text_of(kPolicyDepthMax));
}

Status check_node_count(Given nodes)
{
	if (nodes.within(0, kPolicyNodesMax))
		return {};
	return invalid(nodes.str() + " nodes are more than a policy document may hold (" + text_of(kPolicyNodesMax) +
		       "; long lists belong in netset files)");
}

Status check_interface_name(std::string_view name)
{
	std::string quoted = "interface name '" + std::string(name) + "'";
	if (name.empty())
		return invalid("interface name is empty");
	if (name.size() > kInterfaceNameMax)
		return invalid(quoted + " is longer than " + std::to_string(kInterfaceNameMax) + " characters");
	if (name == "." || name == "..")
		return invalid(quoted + " is not a name");
	for (unsigned char c : name)
		if (c <= ' ' || c == 0x7f || c == '/' || c == ':') // space, and every control character
			return invalid(quoted + " has a character interface names cannot have");
	return {};
}

Status check_managed_interface_name(std::string_view name)
{
	if (auto ok = check_interface_name(name); !ok)
		return ok;
	for (unsigned char c : name)
		if (c >= 0x80)
			return invalid("interface name '" + std::string(name) +
				       "' has a character interface names cannot have");
	return {};
}

Status check_socket_path(std::string_view path)
{
	if (!path.empty() && path.size() <= kSocketPathMax)
		return {};
	return invalid("'" + std::string(path) + "' must be 1 to " + std::to_string(kSocketPathMax) + " bytes long");
}

Status check_upstream_max(Given n)
{
	return count_within(n, 1, kUpstreamMaxMax);
}

Status check_upstream_min_prefix4(Given prefix)
{
	return count_within(prefix, kUpstreamMinPrefix4Floor, 32);
}

Status check_upstream_min_prefix6(Given prefix)
{
	return count_within(prefix, kUpstreamMinPrefix6Floor, 128);
}

Status check_upstream_hold_s(double seconds)
{
	return seconds_within(seconds, 0, kUpstreamHoldMaxS);
}

Status check_upstream_prefixes(Given n)
{
	return count_within(n, 1, kUpstreamPrefixesMax);
}

Status check_upstream_top(Given n)
{
	return count_within(n, 1, kUpstreamTopMax);
}

Status check_upstream_after_s(double seconds)
{
	return seconds_within(seconds, 0, kUpstreamAfterMaxS);
}

Status check_upstream_bps(Given bits_per_s)
{
	return count_within(bits_per_s, 0, kUpstreamBpsMax);
}

Status check_upstream_pps(Given pps)
{
	return count_within(pps, 0, kUpstreamPpsMax);
}

} // namespace sluice
