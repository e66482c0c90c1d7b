#include "sluiced/standing_governor.h"

#include "base/clock.h"
#include "clock/dataplane_clock.h"
#include "base/log.h"
#include "base/standing_reason.h"
#include "bpf/standing.h"

#include <algorithm>
#include <cmath>

namespace sluice {

StandingGovernor::StandingGovernor(GovernorConfig cfg, uint32_t sets)
	: cfg_(cfg), tracker_(cfg.revoke, size_t(sets) * SLUICE_STANDING_WAYS),
	  last_fp_(size_t(sets) * SLUICE_STANDING_WAYS), last_seen_(size_t(sets) * SLUICE_STANDING_WAYS),
	  asking_index_(size_t(sets) * SLUICE_STANDING_WAYS), asking_fp_(size_t(sets) * SLUICE_STANDING_WAYS),
	  asking_record_(size_t(sets) * SLUICE_STANDING_WAYS),
	  asking_pps_(size_t(sets) * SLUICE_STANDING_WAYS), scratch_(size_t(sets) * SLUICE_STANDING_WAYS),
	  tenure_(cfg.tenure_s), ring_(kRecent)
{
}

Result<GovernorStep> StandingGovernor::step(double now_s, const StandingTable &table, uint64_t ceiling_pps,
					    const std::string &iface)
{
	const bool first = last_s_ < 0;
	const double dt = now_s - last_s_;
	size_t n = 0;
	auto ok = table.for_each_live([&](const StandingWay &w) {
		if (w.index >= last_fp_.size())
			return; // cannot happen: the table is the size it was at start
		// A way with another fingerprint than at the last scan (or none) was
		// granted since: a grant starts its seen count at 0.
		const bool same = last_fp_[w.index] == w.fp;
		const uint32_t delta = w.seen - (same ? last_seen_[w.index] : 0); // wraps right
		last_fp_[w.index] = w.fp;
		last_seen_[w.index] = w.seen;
		if (first || delta == 0 || dt <= 0)
			return;
		asking_index_[n] = w.index;
		asking_fp_[n] = w.fp;
		asking_record_[n] = w.record;
		asking_pps_[n] = double(delta) / dt;
		n++;
	});
	last_s_ = now_s;
	if (!ok)
		return std::unexpected(ok.error());

	GovernorStep out;
	out.asking = static_cast<uint32_t>(n);
	// The share each source had this period: its tier's level in force (the
	// data plane's choice in standing_admit), or its own rate without one.
	const auto level_or_ceiling = [&](uint64_t l) {
		return l ? double(std::min(l, ceiling_pps)) : double(ceiling_pps);
	};
	const double had_tenured = level_or_ceiling(level_pps_);
	const double had_newer = newer_level_pps_ ? level_or_ceiling(newer_level_pps_) : had_tenured;
	const bool line_before = tenure_.held();
	const uint32_t line_tick_before = tenure_tick_;
	const auto newer = [&](size_t i, bool held, uint32_t tick) {
		return held && sluice_standing_granted_after(asking_record_[i], tick);
	};
	std::copy_n(asking_pps_.begin(), n, scratch_.begin());
	for (size_t i = 0; i < n; i++)
		out.demand_pps += asking_pps_[i];
	const double capacity = double(cfg_.capacity_pps), ceiling = double(ceiling_pps);
	const double level = fair_share_level(std::span(scratch_).first(n), capacity, ceiling, 1.0);
	const auto to_pps = [&](double l) {
		return l < ceiling ? std::max<uint64_t>(1, static_cast<uint64_t>(std::floor(l))) : uint64_t(0);
	};
	if (tenure_.observe(now_s, level < ceiling)) {
		// The line on the data plane's tick: the record's clock.
		const uint32_t back = SLUICE_STANDING_TICKS_OF(static_cast<uint64_t>(std::ceil(tenure_.tenure_s())));
		tenure_tick_ = (sluice_standing_stamp(dataplane_now()) - back) & SLUICE_STANDING_RECORD_TICK_MASK;
	}
	if (tenure_.held()) {
		// Tenured demands at the front of the scratch, newer at the back.
		size_t t = 0, b = n;
		for (size_t i = 0; i < n; i++) {
			if (newer(i, true, tenure_tick_))
				scratch_[--b] = asking_pps_[i];
			else
				scratch_[t++] = asking_pps_[i];
		}
		auto levels = tiered_share_levels(std::span(scratch_).first(t), std::span(scratch_).subspan(t, n - t),
						  capacity, ceiling, 1.0);
		level_pps_ = to_pps(levels.tenured);
		newer_level_pps_ = to_pps(levels.newer);
		out.tenured = static_cast<uint32_t>(t);
	} else {
		level_pps_ = to_pps(level);
		newer_level_pps_ = 0;
		out.tenured = static_cast<uint32_t>(n);
	}
	out.level_pps = level_pps_;
	out.newer_level_pps = newer_level_pps_;
	out.tenure_held = tenure_.held();
	out.tenure_tick = tenure_tick_;

	tracker_.begin_period();
	const auto penalty = [this](uint32_t before) { return penalty_s_for(before, cfg_.revoke); };
	for (size_t i = 0; i < n; i++) {
		const double had = newer(i, line_before, line_tick_before) ? had_newer : had_tenured;
		if (!tracker_.observe(asking_index_[i], asking_fp_[i], asking_pps_[i], had))
			continue;
		tracker_.forget(asking_index_[i]);
		auto r = table.revoke_way(asking_index_[i], asking_fp_[i], penalty);
		if (!r) {
			log_error(iface + ": revoking standing: " + r.error().describe());
			continue;
		}
		if (!r->had_standing)
			continue; // gone meanwhile (lapsed, or taken by another source)
		RevocationEvent e;
		e.at_realtime_ns = realtime_ns();
		e.source = r->source;
		e.reason = r->reason;
		e.offered_pps = asking_pps_[i];
		e.share_pps = had;
		e.revocations = r->revocations;
		e.until_realtime_ns = r->until_realtime_ns;
		e.why = revocation_reason(asking_pps_[i], had, cfg_.revoke.over_factor, cfg_.revoke.over_periods,
					  penalty(r->revocations ? r->revocations - 1 : 0));
		log_warn(iface + ": standing of " + e.source.str() + " (" +
			 std::string(standing_reason_name(sluice_standing_reason(e.reason))) + ") revoked: " + e.why +
			 " (revocation " + std::to_string(e.revocations) + ")");
		record(std::move(e));
		out.revoked++;
	}
	return out;
}

void StandingGovernor::record(RevocationEvent e)
{
	ring_[ring_next_ % kRecent] = std::move(e);
	ring_next_++;
	revocations_++;
}

std::vector<RevocationEvent> StandingGovernor::recent() const
{
	std::vector<RevocationEvent> out;
	const size_t count = std::min(ring_next_, kRecent);
	for (size_t i = ring_next_ - count; i < ring_next_; i++)
		out.push_back(ring_[i % kRecent]);
	return out;
}

} // namespace sluice
