// budgets.h - the token-bucket budgets of the config (sluice_abi.h, struct
// sluice_config), built from the rates and bursts an operator asks for. The
// one place they are derived: the daemon at start and every command that
// changes one go through config_with_budgets(), so the program's fields
// (cost_ns, burst, standing_*, newcomer_*, cookie_cost_ns, cookie_burst,
// cookie_dest_cost_ns, cookie_dest_burst) and the bookkeeping fields that say
// what was asked (rate_pps, standing_rate_pps, newcomer_pps,
// newcomer_burst_total, cookie_pps, cookie_burst_total, cookie_dest_pps)
// cannot disagree.
#pragma once

#include "base/defaults.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <cstdint>

namespace sluice {

struct BudgetAsk {
	uint64_t rate_pps = defaults::kRatePps;
	uint64_t burst = defaults::kBurst;
	uint64_t standing_rate_pps = defaults::kStandingRatePps;
	uint64_t standing_burst = defaults::kStandingBurst;
	uint64_t newcomer_pps = defaults::kTripPps / defaults::kNewcomerShareDivisor; // 0: no newcomer budget
	uint64_t cookie_pps = defaults::kCookiePps; // SYN-ACKs a second; 0: none (every cookie SYN is shed)
	uint64_t cookie_dest_pps = defaults::kCookieDestPps; // SYN-ACKs a second toward one /24 or /48; 0: no bound
	uint64_t grant_rate_per_s = defaults::kGrantRatePerS; // UDP grants per user a second; 0: none
	uint64_t grant_burst = defaults::kGrantBurst;
	uint32_t prefix_quota = defaults::kStandingPrefixQuota; // entries a /24 or /48 may hold; 0: no quota
	uint64_t grant_max = defaults::kGrantMax;            // UDP grants per user a lapse time; 0: no such bound
	uint64_t grant_window_s = defaults::kStandingLapseS; // the lapse time (--standing-lapse)
};

// What a config asks for now (its bookkeeping fields), to change one part of.
BudgetAsk budgets_of(const sluice_config &cfg);

// Nanoseconds per token at a rate (>= 1), rounded to nearest: 1e9 / rate.
uint64_t cost_ns_for_rate(uint64_t rate_pps);

// A budget of one bucket per CPU (the newcomer budget, the cookie budget):
// cost ceil(1e9 x cpus / pps) (rounded
// up, so that the CPUs together never refill faster than asked), burst
// max(1, ceil(pps x kNewcomerBurstMs / 1000 / cpus)); both 0 for pps 0.
struct PerCpuBucket {
	uint64_t cost_ns = 0;
	uint64_t burst = 0;
	uint64_t burst_total = 0; // ceil(pps x kNewcomerBurstMs / 1000), all CPUs together
};
PerCpuBucket per_cpu_bucket(uint64_t pps, uint64_t cpus); // pps within check_per_cpu_pps

// --newcomer-pps when not given: trip_pps / kNewcomerShareDivisor, brought
// within what `cpus` per-CPU buckets can hold (check_newcomer_pps).
uint64_t default_newcomer_pps(uint64_t trip_pps, uint64_t cpus);

// cfg with every budget field set from `ask` over `cpus` possible CPUs;
// the other fields are cfg's. Refused (invariant voice), cfg unchanged, when
// a rate or burst is outside its bound; the newcomer and cookie rates are
// checked by check_per_cpu_pps (input voice: it names the value and the CPUs).
// The per-destination SYN-ACK bound (cookie_dest_*): one bucket all CPUs
// share, cost 1e9 / pps rounded up (never faster than asked), burst
// max(1, ceil(pps x kNewcomerBurstMs / 1000)); both 0 for pps 0.
struct SharedBucket {
	uint64_t cost_ns = 0;
	uint64_t burst = 0;
};
SharedBucket cookie_dest_bucket(uint64_t pps); // pps within check_cookie_dest_pps

Result<sluice_config> config_with_budgets(sluice_config cfg, const BudgetAsk &ask, uint64_t cpus);

} // namespace sluice
