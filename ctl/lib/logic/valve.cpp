#include "logic/valve.h"

namespace sluice {

ValveDecision Valve::step(const ValveSample &s)
{
	ValveDecision d;
	if (s.state != last_state_ || s.closed != last_closed_) {
		streak_ = 0; // a streak never spans a move of the breaker or the valve
		last_state_ = s.state;
		last_closed_ = s.closed;
	}
	if (s.closed && s.state != BreakerState::shedding) {
		d.close = false;
		d.reason = "the breaker left shedding (" + std::string(to_string(s.state)) + ")";
		last_ = s;
		return d;
	}
	if (!last_ || s.now_s <= last_->now_s || s.standing < last_->standing || s.dropped < last_->dropped) {
		last_ = s; // first sample, or counters restarted: no rate yet
		return d;
	}
	const bool was_shared = last_->shared;
	double dt = s.now_s - last_->now_s;
	d.standing_pps = double(s.standing - last_->standing) / dt;
	d.dropped_pps = double(s.dropped - last_->dropped) / dt;
	last_ = s;
	if (s.state != BreakerState::shedding)
		return d;

	auto fmt = [](double v) { return std::to_string(static_cast<uint64_t>(v)); };
	if (!s.closed) {
		const bool onset = s.shared && !was_shared;
		streak_ = !onset && d.standing_pps > kValveFactor * double(cfg_.capacity_pps) ? streak_ + 1 : 0;
		if (streak_ >= cfg_.trip_periods) {
			d.close = true;
			d.reason = "standing " + fmt(d.standing_pps) + " pps > " + fmt(kValveFactor) + " x capacity " +
				   std::to_string(cfg_.capacity_pps) + " pps for " + std::to_string(streak_) + " periods";
		}
	} else {
		streak_ = d.dropped_pps < double(cfg_.clear_pps) ? streak_ + 1 : 0;
		if (streak_ >= cfg_.trip_periods) {
			d.close = false;
			d.reason = "drop_valve " + fmt(d.dropped_pps) + " pps < clear-pps " + std::to_string(cfg_.clear_pps) +
				   " for " + std::to_string(streak_) + " periods";
		}
	}
	return d;
}

} // namespace sluice
