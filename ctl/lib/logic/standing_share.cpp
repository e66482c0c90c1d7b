#include "logic/standing_share.h"

#include "base/limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sluice {

double fair_share_level(std::span<double> demands_scratch, double capacity_pps, double ceiling_pps, double floor_pps)
{
	auto clamp = [&](double level) { return std::min(std::max(level, floor_pps), ceiling_pps); };
	if (!(capacity_pps > 0))
		capacity_pps = 0; // negative or NaN: none
	double sum = 0;
	for (double &d : demands_scratch) {
		if (!(d > 0))
			d = 0; // negative or NaN: offered nothing
		sum += d;
	}
	if (sum <= capacity_pps)
		return ceiling_pps;
	std::sort(demands_scratch.begin(), demands_scratch.end());
	// Ascending: while the smallest left is under an equal split of what is
	// left, it keeps all of its demand; the first that is not sets the level.
	double left = capacity_pps;
	size_t n = demands_scratch.size();
	for (size_t i = 0; i < n; i++) {
		double split = left / double(n - i);
		if (demands_scratch[i] >= split)
			return clamp(split);
		left -= demands_scratch[i];
	}
	// Only by rounding (sum > capacity, yet each fitted): the largest demand.
	return clamp(demands_scratch[n - 1]);
}

TieredLevels tiered_share_levels(std::span<double> tenured_scratch, std::span<double> newer_scratch,
				 double capacity_pps, double ceiling_pps, double floor_pps)
{
	TieredLevels out;
	out.tenured = fair_share_level(tenured_scratch, capacity_pps, ceiling_pps, floor_pps);
	double taken = 0;
	for (double d : tenured_scratch) // sanitized by fair_share_level
		taken += std::min(d, out.tenured);
	const double left = capacity_pps > taken ? capacity_pps - taken : 0;
	if (out.tenured < ceiling_pps || !(left > 0)) {
		// The tenured are held to a level (or fill the capacity exactly):
		// nothing is left for the newer.
		for (double &d : newer_scratch)
			if (!(d > 0))
				d = 0;
		out.newer = std::min(floor_pps, ceiling_pps);
		return out;
	}
	out.newer = fair_share_level(newer_scratch, left, ceiling_pps, floor_pps);
	return out;
}

bool TenureLine::observe(double now_s, bool contended)
{
	if (!(tenure_s_ > 0))
		return false;
	// Released first: a call after a long gap (the caller skips idle
	// periods) that finds contention again draws a new line.
	if (held_ && now_s - last_contended_s_ >= tenure_s_)
		held_ = false;
	if (!contended)
		return false;
	last_contended_s_ = now_s;
	if (held_)
		return false;
	held_ = true;
	line_s_ = now_s - tenure_s_;
	return true;
}

Status validate_revocation(const RevocationConfig &c)
{
	if (auto ok = named("--revoke-factor", check_revoke_factor(c.over_factor)); !ok)
		return ok;
	if (auto ok = named("--revoke-periods", check_revoke_periods(c.over_periods)); !ok)
		return ok;
	if (auto ok = named("--revoke-penalty", check_revoke_penalty_s(c.penalty_s)); !ok)
		return ok;
	return named("--revoke-penalty-max", check_revoke_penalty_max_s(c.penalty_max_s, c.penalty_s));
}

double penalty_s_for(uint32_t repeats, const RevocationConfig &c)
{
	// 2^2048 x any positive penalty is infinite already; ldexp saturates
	// there rather than overflowing an integer.
	double p = std::ldexp(c.penalty_s, int(std::min<uint32_t>(repeats, 2048)));
	return std::min(p, c.penalty_max_s);
}

std::string revocation_reason(double offered_pps, double share_pps, double over_factor, uint32_t periods,
			      double penalty_s)
{
	char buf[160];
	std::snprintf(buf, sizeof(buf), "offered %.0f pps > %g x share %.0f pps for %u periods; penalty %g s", offered_pps,
		      over_factor, share_pps, unsigned(periods), penalty_s);
	return buf;
}

UnresponsiveTracker::UnresponsiveTracker(RevocationConfig cfg, size_t ways) : cfg_(cfg), ways_(ways) {}

void UnresponsiveTracker::begin_period()
{
	if (period_ < UINT32_MAX) {
		period_++;
		return;
	}
	// Once in 2^32 periods: renumber, keeping the ways observed in the last
	// period (their streaks go on) and forgetting when the rest were seen.
	for (Way &w : ways_)
		w.period = w.period == period_ ? 1 : kNever;
	period_ = 2;
}

bool UnresponsiveTracker::observe(size_t way_index, uint32_t fp, double offered_pps, double share_pps)
{
	if (way_index >= ways_.size())
		return false;
	Way &w = ways_[way_index];
	// The streak this observation extends: the one before this period's
	// earlier observation, if any; the last period's if the same source was
	// observed then; none otherwise.
	uint8_t base = 0;
	if (w.period != kNever && w.fp == fp) {
		if (w.period == period_)
			base = w.before;
		else if (w.period == period_ - 1)
			base = w.streak;
	}
	// over_periods is 1..64 once validated; the streak stops there.
	auto need = static_cast<uint8_t>(std::clamp<uint32_t>(cfg_.over_periods, 1, 255));
	bool over = offered_pps > cfg_.over_factor * share_pps; // NaN is not over
	w.fp = fp;
	w.period = period_;
	w.before = base;
	w.streak = over ? static_cast<uint8_t>(std::min<uint32_t>(base + 1u, need)) : 0;
	return over && w.streak >= need;
}

uint32_t UnresponsiveTracker::streak(size_t way_index) const
{
	if (way_index >= ways_.size())
		return 0;
	const Way &w = ways_[way_index];
	return w.period == period_ || w.period == period_ - 1 ? w.streak : 0;
}

void UnresponsiveTracker::forget(size_t way_index)
{
	if (way_index < ways_.size())
		ways_[way_index] = Way{};
}

} // namespace sluice
