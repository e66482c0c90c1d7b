// valve.h - the standing valve's state machine, as a pure function of counter
// samples, like the policy (policy.h): no I/O, no clock; the daemon feeds it
// one sample per control period beside the policy's and writes what it
// decides (config.valve_closed, valve_since_ns).
//
// While shedding, sources with standing are served by their buckets
// (outcome standing), each refilling at the fair share's level
// (logic/standing_share), which holds their sum to the capacity. The valve
// is the last resort for when the share fails: if standing alone carries
// more than kValveFactor x the capacity (more standing sources than
// capacity / floor, forged or hijacked standing, ...), no set of sources
// under their share got it there, standing itself is the flood, and the
// valve closes: shedding becomes allowlist-only, and the sources with
// standing are dropped as drop_valve, which is what they still offer.
//
//   open, shedding    standing rate > kValveFactor x capacity_pps for
//                     trip_periods consecutive periods: close. The period
//                     in which a share first came into force does not count
//                     and ends a streak: the standing sources ran at their
//                     own rates until the governor's write landed in it
//                     (later still on a loaded host), so it measures the
//                     flood's onset, not the share's failure.
//   closed, shedding  drop_valve rate < clear_pps for trip_periods
//                     consecutive periods: open
//   closed, not shedding (the breaker left shedding): open at once
//
// The valve never closes outside shedding, and never moves the breaker.
#pragma once

#include "logic/breaker.h"

#include <cstdint>
#include <optional>
#include <string>

namespace sluice {

// The fair share holds the standing rate to the capacity; twice that is no
// overshoot of a share (a period's rounding, a burst) but its failure.
inline constexpr double kValveFactor = 2;

struct ValveConfig {
	uint64_t capacity_pps = 0; // what the fair share divides (the breaker's trip_pps); x kValveFactor closes it
	uint64_t clear_pps = 0;    // drop_valve pps under which it opens (the breaker's clear_pps)
	uint32_t trip_periods = 1; // consecutive periods a condition must hold
};

struct ValveSample {
	double now_s;       // monotonic seconds
	uint64_t standing;  // cumulative frames of the standing outcome
	uint64_t dropped;   // cumulative frames of the drop_valve outcome
	BreakerState state; // the breaker in force now
	bool closed;        // config.valve_closed now
	bool shared;        // a standing share in force now (config.standing_share_cost_ns or the newer one)
};

struct ValveDecision {
	std::optional<bool> close; // true: close it, false: open it; none: leave it
	double standing_pps = 0;
	double dropped_pps = 0;
	std::string reason; // why `close`, with the numbers, for the log
};

class Valve {
public:
	explicit Valve(ValveConfig cfg) : cfg_(cfg) {}
	const ValveConfig &config() const { return cfg_; }
	ValveDecision step(const ValveSample &s);

private:
	ValveConfig cfg_;
	std::optional<ValveSample> last_;
	uint32_t streak_ = 0; // consecutive periods the condition for the next move held
	bool last_closed_ = false;
	BreakerState last_state_ = BreakerState::serving;
};

} // namespace sluice
