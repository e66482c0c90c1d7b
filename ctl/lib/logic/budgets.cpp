#include "logic/budgets.h"

#include "base/limits.h"

#include <algorithm>

namespace sluice {

BudgetAsk budgets_of(const sluice_config &cfg)
{
	return BudgetAsk{cfg.rate_pps,       cfg.burst,      cfg.standing_rate_pps, cfg.standing_burst,
			 cfg.newcomer_pps,   cfg.cookie_pps, cfg.cookie_dest_pps,   cfg.grant_rate_per_s,
			 cfg.grant_burst,    cfg.prefix_quota, cfg.grant_max,       cfg.grant_window_s};
}

uint64_t cost_ns_for_rate(uint64_t rate_pps)
{
	return (SLUICE_NSEC_PER_SEC + rate_pps / 2) / rate_pps;
}

namespace {
uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}
} // namespace

PerCpuBucket per_cpu_bucket(uint64_t pps, uint64_t cpus)
{
	if (pps == 0 || cpus == 0)
		return {};
	// pps <= newcomer_pps_max(cpus) (1e7 per CPU) and cpus <= 2^20 keep
	// every product far below 2^64.
	uint64_t burst_total = ceil_div(pps * defaults::kNewcomerBurstMs, 1000);
	return PerCpuBucket{ceil_div(SLUICE_NSEC_PER_SEC * cpus, pps),
			      std::max<uint64_t>(1, ceil_div(pps * defaults::kNewcomerBurstMs, 1000 * cpus)),
			      burst_total};
}

SharedBucket cookie_dest_bucket(uint64_t pps)
{
	if (pps == 0)
		return {};
	// pps <= kCookieDestPpsMax (1e7): every product far below 2^64
	return SharedBucket{ceil_div(SLUICE_NSEC_PER_SEC, pps),
			    std::max<uint64_t>(1, ceil_div(pps * defaults::kNewcomerBurstMs, 1000))};
}

uint64_t default_newcomer_pps(uint64_t trip_pps, uint64_t cpus)
{
	uint64_t pps = trip_pps / defaults::kNewcomerShareDivisor;
	if (pps == 0 || cpus == 0)
		return pps;
	return std::clamp(pps, newcomer_pps_min(cpus), newcomer_pps_max(cpus));
}

Result<sluice_config> config_with_budgets(sluice_config cfg, const BudgetAsk &ask, uint64_t cpus)
{
	if (auto ok = check_rate(ask.rate_pps, Voice::invariant); !ok)
		return std::unexpected(ok.error());
	if (auto ok = check_burst(ask.burst, Voice::invariant); !ok)
		return std::unexpected(ok.error());
	if (auto ok = check_standing_rate(ask.standing_rate_pps, Voice::invariant); !ok)
		return std::unexpected(ok.error());
	if (auto ok = check_standing_burst(ask.standing_burst, Voice::invariant); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("newcomer budget", check_per_cpu_pps(ask.newcomer_pps, cpus, "newcomer")); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("cookie budget", check_per_cpu_pps(ask.cookie_pps, cpus, "cookie")); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("per-destination SYN-ACK bound", check_cookie_dest_pps(ask.cookie_dest_pps)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = check_grant_rate(ask.grant_rate_per_s, Voice::invariant); !ok)
		return std::unexpected(ok.error());
	if (ask.grant_rate_per_s)
		if (auto ok = check_grant_burst(ask.grant_burst, Voice::invariant); !ok)
			return std::unexpected(ok.error());
	if (auto ok = check_grant_max(ask.grant_max, Voice::invariant); !ok)
		return std::unexpected(ok.error());
	if (ask.grant_max)
		if (auto ok = check_standing_lapse_s(ask.grant_window_s); !ok)
			return std::unexpected(ok.error());
	if (ask.prefix_quota)
		if (auto ok = named("prefix quota", check_standing_prefix_quota(ask.prefix_quota, SLUICE_PREFIX_QUOTA_MAX));
		    !ok)
			return std::unexpected(ok.error());
	PerCpuBucket nb = per_cpu_bucket(ask.newcomer_pps, cpus);
	PerCpuBucket cb = per_cpu_bucket(ask.cookie_pps, cpus);
	SharedBucket db = cookie_dest_bucket(ask.cookie_dest_pps);
	// (hold for every pps checked above)
	if (auto ok = check_per_cpu_bucket("newcomer", nb.cost_ns, nb.burst); !ok)
		return std::unexpected(ok.error());
	if (auto ok = check_per_cpu_bucket("cookie", cb.cost_ns, cb.burst); !ok)
		return std::unexpected(ok.error());
	if (auto ok = check_cookie_dest_bucket(db.cost_ns, db.burst); !ok)
		return std::unexpected(ok.error());
	cfg.cost_ns = cost_ns_for_rate(ask.rate_pps);
	cfg.burst = ask.burst;
	cfg.rate_pps = ask.rate_pps;
	cfg.standing_cost_ns = cost_ns_for_rate(ask.standing_rate_pps);
	cfg.standing_burst = ask.standing_burst;
	cfg.standing_rate_pps = ask.standing_rate_pps;
	cfg.newcomer_cost_ns = nb.cost_ns;
	cfg.newcomer_burst = nb.burst;
	cfg.newcomer_pps = ask.newcomer_pps;
	cfg.newcomer_burst_total = nb.burst_total;
	cfg.cookie_cost_ns = cb.cost_ns;
	cfg.cookie_burst = cb.burst;
	cfg.cookie_pps = ask.cookie_pps;
	cfg.cookie_burst_total = cb.burst_total;
	// (1e9 and 1e6 at most: the config's 32-bit fields hold them)
	cfg.cookie_dest_cost_ns = static_cast<uint32_t>(db.cost_ns);
	cfg.cookie_dest_burst = static_cast<uint32_t>(db.burst);
	cfg.cookie_dest_pps = static_cast<uint32_t>(ask.cookie_dest_pps);
	cfg.grant_cost_ns = ask.grant_rate_per_s ? cost_ns_for_rate(ask.grant_rate_per_s) : 0;
	cfg.grant_burst = ask.grant_burst;
	cfg.grant_rate_per_s = ask.grant_rate_per_s;
	cfg.prefix_quota = ask.prefix_quota;
	// grant_max tokens over the window: at most 7 days x 1e9 / 1 ns each,
	// and grant_max x cost is the window itself, far below 2^63
	cfg.grant_total_cost_ns = ask.grant_max ? ceil_div(ask.grant_window_s * SLUICE_NSEC_PER_SEC, ask.grant_max) : 0;
	cfg.grant_max = ask.grant_max;
	cfg.grant_window_s = ask.grant_window_s;
	return cfg;
}

} // namespace sluice
