#include "logic/policy.h"

#include "base/limits.h"
#include "bpf/sluice_abi.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

void RateWindow::push(const PeriodDelta &d)
{
	ring_[next_] = d;
	next_ = (next_ + 1) % ring_.size();
	count_ = std::min<uint32_t>(count_ + 1, static_cast<uint32_t>(ring_.size()));
}

double RateWindow::seconds() const
{
	// Summed over the ring in place: at most kTripPeriodsMax entries a
	// period, and no running sum to drift.
	double s = 0;
	for (uint32_t i = 0; i < count_; i++)
		s += ring_[i].dt_s;
	return s;
}

double RateWindow::incoming_pps() const
{
	return pps_of(&PeriodDelta::incoming);
}

double RateWindow::admitted_pps() const
{
	return pps_of(&PeriodDelta::admitted);
}

double RateWindow::pps_of(uint64_t PeriodDelta::*frames) const
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < count_; i++)
		n += ring_[i].*frames;
	double s = seconds();
	return s > 0 ? double(n) / s : 0;
}

namespace {
// A quiet run's length is a difference of sums of doubles: a run of exactly
// hold_s may come out a hair short of it, and wait a whole period more.
constexpr double kQuietSlackS = 1e-6;

std::string whole(double v)
{
	return std::to_string(static_cast<uint64_t>(std::max(0.0, v)));
}
std::string fixed2(double v)
{
	char b[32];
	std::snprintf(b, sizeof b, "%.2f", v);
	return b;
}
} // namespace

std::string RuleView::verdict() const
{
	if (manual)
		return "manual";
	if (periods < full_periods)
		return "filling";
	double t = double(threshold_pps);
	return rate_pps > t ? "over" : rate_pps < t ? "under" : "at";
}

std::string RuleView::text() const
{
	// The relation as it stands, so that a view that moves nothing reads
	// true too ("incoming 5997 pps ... > clear 3000 pps" while shedding).
	double t = double(threshold_pps);
	const char *rel = rate_pps > t ? "> " : rate_pps < t ? "< " : "= ";
	std::string text = signal + " " + whole(rate_pps) + " pps over " + std::to_string(periods) +
			   (periods == 1 ? " period (" : " periods (") + fixed2(window_s) + " s) " + rel +
			   (over_moves ? "trip " : "clear ") + std::to_string(threshold_pps) + " pps";
	if (!over_moves && quiet_needed_s > 0 && rate_pps < t)
		text += ", under it for " + fixed2(quiet_s) + " s of a " + fixed2(quiet_needed_s) + " s hold";
	return text;
}

void AutoPolicy::reset_window()
{
	window_.clear();
	quiet_since_.reset();
}

PolicyDecision AutoPolicy::step(const PolicySample &s)
{
	PolicyDecision d;
	if (s.state != last_state_) {
		reset_window(); // a window never spans a transition
		last_state_ = s.state;
	}
	if (s.state == BreakerState::recovering)
		d.admission_ppm = ramp_ppm(s.now_s - s.state_since_s);

	RuleView &r = d.rule;
	r.state = s.state;
	r.signal = s.state == BreakerState::serving ? "admitted" : "incoming";
	r.over_moves = s.state != BreakerState::shedding;
	r.threshold_pps = s.state == BreakerState::shedding ? cfg_.clear_pps : cfg_.trip_pps;
	r.full_periods = window_.capacity();
	r.manual = s.state == BreakerState::shedding && s.manual;
	if (s.state == BreakerState::shedding)
		r.quiet_needed_s = cfg_.hold_s;
	auto fill = [&] {
		r.periods = window_.periods();
		r.window_s = window_.seconds();
		r.incoming_pps = window_.incoming_pps();
		r.admitted_pps = window_.admitted_pps();
		r.rate_pps = s.state == BreakerState::serving ? r.admitted_pps : r.incoming_pps;
		if (quiet_since_)
			r.quiet_s = s.now_s - *quiet_since_;
	};

	if (!last_ || s.now_s <= last_->now_s || s.incoming < last_->incoming || s.admitted < last_->admitted) {
		last_ = s; // first sample, or counters restarted: no rate yet
		fill();
		return d;
	}
	// The real elapsed time, whatever the period was meant to be: a late
	// tick's frames are divided by the time they really took.
	double dt = s.now_s - last_->now_s;
	PeriodDelta delta{dt, s.incoming - last_->incoming, s.admitted - last_->admitted};
	d.incoming_pps = double(delta.incoming) / dt;
	d.admitted_pps = double(delta.admitted) / dt;
	last_ = s;
	window_.push(delta);
	const bool full = window_.full();
	const double windowed = s.state == BreakerState::serving ? window_.admitted_pps() : window_.incoming_pps();

	if (s.state == BreakerState::shedding) {
		// Each window under clear_pps says its whole span was quiet on
		// average, so a run of them is quiet from the first one's start.
		if (windowed < double(cfg_.clear_pps)) {
			if (!quiet_since_)
				quiet_since_ = s.now_s - window_.seconds();
		} else {
			quiet_since_.reset();
		}
	}
	fill();

	switch (s.state) {
	case BreakerState::serving:
		if (full && windowed > double(cfg_.trip_pps)) {
			d.move = BreakerState::shedding;
			d.reason = r.text();
		}
		break;
	case BreakerState::shedding:
		if (s.manual)
			break;
		// The state's age and a full window too: a quiet run that began in
		// a short first window must still be seen by a whole one.
		if (full && quiet_since_ && s.now_s - *quiet_since_ >= cfg_.hold_s - kQuietSlackS &&
		    s.now_s - s.state_since_s >= cfg_.hold_s) {
			d.move = BreakerState::recovering;
			d.admission_ppm = cfg_.start_ppm;
			d.reason = r.text();
		}
		break;
	case BreakerState::recovering:
		if (full && windowed > double(cfg_.trip_pps)) {
			d.move = BreakerState::shedding;
			d.reason = "flood back during recovery: " + r.text();
		} else if (d.admission_ppm >= SLUICE_PPM_FULL) {
			d.move = BreakerState::serving;
			d.reason = "recovery ramp complete";
		}
		break;
	}
	return d;
}

} // namespace sluice
