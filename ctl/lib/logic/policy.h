// policy.h - the automatic breaker and the refill ramp, as a pure function of
// counter samples. No I/O, no clock: the daemon feeds it one sample per
// control period, and the unit tests feed it synthetic series.
//
// What it judges by:
//   serving     the admitted rate (frames the buckets passed). A single-source
//               flood raises the incoming rate but the buckets hold it: that
//               is not a reason to shed. A flood spread over many sources, each
//               under its own limit, raises the admitted rate: that is.
//   shedding    the incoming IP rate (admission is ~0 by design here). After
//               hold_s, once it stays under clear_pps for trip_periods periods,
//               move to recovering. A manual trip is never left automatically.
//   recovering  the admission fraction ramps linearly from start_ppm to 100%
//               over recovery_s; the incoming rate over trip_pps for
//               trip_periods periods sends it back to shedding; reaching 100%
//               closes the breaker.
#pragma once

#include "base/defaults.h"
#include "logic/breaker.h"

#include <cstdint>
#include <optional>
#include <string>

namespace sluice {

struct PolicyConfig {
	uint64_t trip_pps = defaults::kTripPps;           // admitted pps that trips (serving)
	uint64_t clear_pps = defaults::kTripPps;          // incoming pps under which shedding may end
	uint32_t trip_periods = defaults::kTripPeriods;   // consecutive periods a condition must hold
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

struct PolicyDecision {
	std::optional<BreakerState> move; // a transition to make, if any
	uint32_t admission_ppm = 1000000; // to write for this period
	double incoming_pps = 0;
	double admitted_pps = 0;
	std::string reason; // why `move`, for the log
};

class AutoPolicy {
public:
	explicit AutoPolicy(PolicyConfig cfg) : cfg_(cfg) {}
	const PolicyConfig &config() const { return cfg_; }

	PolicyDecision step(const PolicySample &s);
	// Forget streaks (after a manual transition).
	void reset_streaks() { over_ = under_ = 0; }

	// The ramp alone: admission at `elapsed_s` into recovery.
	uint32_t ramp_ppm(double elapsed_s) const;

private:
	PolicyConfig cfg_;
	std::optional<PolicySample> last_;
	uint32_t over_ = 0;  // consecutive periods over the trip threshold
	uint32_t under_ = 0; // consecutive periods under the clear threshold
	BreakerState last_state_ = BreakerState::serving;
};

Status validate_policy(const PolicyConfig &c);

} // namespace sluice
