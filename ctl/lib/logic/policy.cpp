#include "logic/policy.h"

#include "base/limits.h"
#include "bpf/sluice_abi.h"

#include <algorithm>
#include <cmath>

namespace sluice {

Status validate_policy(const PolicyConfig &c)
{
	if (auto ok = named("--trip-pps", check_trip_pps(c.trip_pps)); !ok)
		return ok;
	if (auto ok = named("--clear-pps", check_clear_pps(c.clear_pps, c.trip_pps)); !ok)
		return ok;
	if (auto ok = named("--trip-periods", check_trip_periods(c.trip_periods)); !ok)
		return ok;
	if (auto ok = named("--hold", check_hold_s(c.hold_s)); !ok)
		return ok;
	if (auto ok = named("--recovery", check_recovery_s(c.recovery_s)); !ok)
		return ok;
	return named("--recovery-start", check_admission_percent(c.start_ppm / 10000.0));
}

uint32_t AutoPolicy::ramp_ppm(double elapsed_s) const
{
	double f = std::clamp(elapsed_s / cfg_.recovery_s, 0.0, 1.0);
	double ppm = cfg_.start_ppm + (SLUICE_PPM_FULL - cfg_.start_ppm) * f;
	return static_cast<uint32_t>(std::clamp(std::floor(ppm), double(SLUICE_PPM_MIN), double(SLUICE_PPM_FULL)));
}

PolicyDecision AutoPolicy::step(const PolicySample &s)
{
	PolicyDecision d;
	if (s.state != last_state_) {
		over_ = under_ = 0; // a streak never spans a transition
		last_state_ = s.state;
	}
	if (s.state == BreakerState::recovering)
		d.admission_ppm = ramp_ppm(s.now_s - s.state_since_s);

	if (!last_ || s.now_s <= last_->now_s || s.incoming < last_->incoming || s.admitted < last_->admitted) {
		last_ = s; // first sample, or counters restarted: no rate yet
		return d;
	}
	double dt = s.now_s - last_->now_s;
	d.incoming_pps = double(s.incoming - last_->incoming) / dt;
	d.admitted_pps = double(s.admitted - last_->admitted) / dt;
	last_ = s;

	auto fmt = [](double v) { return std::to_string(static_cast<uint64_t>(v)); };
	switch (s.state) {
	case BreakerState::serving:
		over_ = d.admitted_pps > double(cfg_.trip_pps) ? over_ + 1 : 0;
		if (over_ >= cfg_.trip_periods) {
			d.move = BreakerState::shedding;
			d.reason = "admitted " + fmt(d.admitted_pps) + " pps > trip " + std::to_string(cfg_.trip_pps) +
				   " pps for " + std::to_string(over_) + " periods";
		}
		break;
	case BreakerState::shedding:
		if (s.manual)
			break;
		under_ = d.incoming_pps < double(cfg_.clear_pps) ? under_ + 1 : 0;
		if (under_ >= cfg_.trip_periods && s.now_s - s.state_since_s >= cfg_.hold_s) {
			d.move = BreakerState::recovering;
			d.admission_ppm = cfg_.start_ppm;
			d.reason = "incoming " + fmt(d.incoming_pps) + " pps < clear " + std::to_string(cfg_.clear_pps) +
				   " pps for " + std::to_string(under_) + " periods after the hold";
		}
		break;
	case BreakerState::recovering:
		over_ = d.incoming_pps > double(cfg_.trip_pps) ? over_ + 1 : 0;
		if (over_ >= cfg_.trip_periods) {
			d.move = BreakerState::shedding;
			d.reason = "flood back during recovery: incoming " + fmt(d.incoming_pps) + " pps > trip " +
				   std::to_string(cfg_.trip_pps) + " pps for " + std::to_string(over_) + " periods";
		} else if (d.admission_ppm >= SLUICE_PPM_FULL) {
			d.move = BreakerState::serving;
			d.reason = "recovery ramp complete";
		}
		break;
	}
	return d;
}

} // namespace sluice
