// policy.h - the automatic breaker and the refill ramp, as a pure function of
// counter samples. No I/O, no clock: the daemon feeds it one sample per
// control period, and the unit tests feed it synthetic series.
//
// It judges by rates over a window, not by single periods: the frames of the
// last trip_periods periods over those periods' real elapsed time (a fixed
// ring of trip_periods per-period deltas, sized at construction). A flood
// that arrives in bursts or pulses shorter than a period is judged by its
// average, so its shape against the sampling does not matter
// (docs/architecture.md, "The breaker's rule", says why a window and not an
// EWMA). The window starts empty at every transition.
//
//   serving     the admitted rate (frames the buckets passed). A single-source
//               flood raises the incoming rate but the buckets hold it: that
//               is not a reason to shed. A flood spread over many sources, each
//               under its own limit, raises the admitted rate: that is. Trips
//               when a full window's admitted rate is over trip_pps.
//   shedding    the incoming IP rate (admission is ~0 by design here). Moves
//               to recovering once every window measured in the last hold_s
//               seconds was under clear_pps (and the state is hold_s old, the
//               window full): a flood that pauses is not gone. A manual trip
//               is never left automatically.
//   recovering  the admission fraction ramps linearly from start_ppm to 100%
//               over recovery_s; a full window's incoming rate over trip_pps
//               sends it back to shedding; reaching 100% closes the breaker.
#pragma once

#include "base/defaults.h"
#include "logic/breaker.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

struct PolicyConfig {
	uint64_t trip_pps = defaults::kTripPps;           // admitted pps that trips (serving)
	uint64_t clear_pps = defaults::kTripPps;          // incoming pps under which shedding may end
	uint32_t trip_periods = defaults::kTripPeriods;   // periods in the window a rate is judged over
	double hold_s = defaults::kHoldS;                 // least time in shedding
	double recovery_s = defaults::kRecoveryS;         // ramp duration
	uint32_t start_ppm = defaults::kRecoveryStartPpm; // ramp start: 10%
};

struct PolicySample {
	double now_s;         // monotonic seconds
	uint64_t incoming;    // cumulative IP frames seen (every outcome but non-IP, malformed)
	uint64_t admitted;    // cumulative frames passed by the buckets
	BreakerState state;   // in force now
	double state_since_s; // monotonic seconds of the last transition
	bool manual;          // the current shedding was an operator's trip
};

// One period as the window holds it: its frames and its real length.
struct PeriodDelta {
	double dt_s = 0;
	uint64_t incoming = 0;
	uint64_t admitted = 0;
};

// The last `capacity` periods, in a ring sized once: no growth, whatever runs.
class RateWindow {
public:
	explicit RateWindow(uint32_t capacity) : ring_(capacity) {}
	void push(const PeriodDelta &d);
	void clear() { count_ = next_ = 0; }
	uint32_t periods() const { return count_; }
	uint32_t capacity() const { return static_cast<uint32_t>(ring_.size()); }
	bool full() const { return count_ == ring_.size(); }
	double seconds() const;        // the periods' real elapsed time
	double incoming_pps() const;   // frames / seconds(); 0 when empty
	double admitted_pps() const;

private:
	double pps_of(uint64_t PeriodDelta::*frames) const; // one of the counts over seconds()
	std::vector<PeriodDelta> ring_;
	uint32_t count_ = 0, next_ = 0;
};

// What the rule saw in one period: the windowed rate it judged and against
// what. The log's transition lines and `sluicectl status` show it.
struct RuleView {
	BreakerState state = BreakerState::serving; // the state judged
	std::string signal = "admitted";            // "admitted" (serving) or "incoming"
	bool over_moves = true;   // a move needs rate > threshold (true) or rate < threshold (false)
	uint64_t threshold_pps = 0;
	double rate_pps = 0;      // the signal over the window
	uint32_t periods = 0;     // in the window now
	uint32_t full_periods = 0; // trip_periods: the rule decides on a full window only
	double window_s = 0;      // the window's real elapsed time
	double incoming_pps = 0, admitted_pps = 0; // both signals over the window
	// shedding: how long every window measured has been under clear_pps, and
	// how long it must be (hold_s); 0 in the other states.
	double quiet_s = 0, quiet_needed_s = 0;
	bool manual = false;      // shedding by an operator's trip: never left automatically
	// "over", "under", "filling" (the window is not full yet), "manual".
	std::string verdict() const;
	// "admitted 20038 pps over 3 periods (3.00 s) > trip 5000 pps"
	std::string text() const;
};

struct PolicyDecision {
	std::optional<BreakerState> move; // a transition to make, if any
	uint32_t admission_ppm = 1000000; // to write for this period
	double incoming_pps = 0;          // this period alone
	double admitted_pps = 0;
	RuleView rule;                    // what the rule judged, over the window
	std::string reason; // why `move`, for the log
};

class AutoPolicy {
public:
	explicit AutoPolicy(PolicyConfig cfg) : cfg_(cfg), window_(cfg.trip_periods ? cfg.trip_periods : 1) {}
	const PolicyConfig &config() const { return cfg_; }

	PolicyDecision step(const PolicySample &s);
	// Forget the window (after a manual transition): a rate never spans a
	// transition.
	void reset_window();

	// The ramp alone: admission at `elapsed_s` into recovery.
	uint32_t ramp_ppm(double elapsed_s) const;

private:
	PolicyConfig cfg_;
	std::optional<PolicySample> last_;
	RateWindow window_;
	// shedding: where the current run of windows under clear_pps began (the
	// first such window's start); none while a window is not under it.
	std::optional<double> quiet_since_;
	BreakerState last_state_ = BreakerState::serving;
};

Status validate_policy(const PolicyConfig &c);

} // namespace sluice
