// period.h - the per-period decisions of a managed interface, apart from the
// maps they read and write, so they can be driven with made-up counters and
// clocks (tests/control/period_test.cpp). ManagedInterface::tick reads the maps,
// calls these, and writes what they return.
#pragma once

#include "bpf/maps.h"
#include "ipc/replies.h"
#include "logic/breaker.h"
#include "logic/policy.h"
#include "logic/valve.h"

#include <cstdint>
#include <optional>

namespace sluice {

// The frames the policy counts as incoming: every IP source's verdict
// (logic/outcomes.h: the outcomes whose verdict is admitted or dropped).
uint64_t incoming_of(const CounterSet &c);

// Per-second rates between two counter readings dt seconds apart (dt > 0),
// rounded to whole packets and bits per second.
RateSet rates_between(const CounterSet &before, const CounterSet &now, double dt);

// Drops per second, every outcome whose verdict is dropped; 0 before the
// first period.
double dropped_pps(const std::optional<RateSet> &rates);

// What the policy is shown this period.
PolicySample policy_sample(double now_s, const CounterSet &counters, BreakerState state, double since_s,
			   const sluice_config &cfg);

// What the valve is shown this period.
ValveSample valve_sample(double now_s, const CounterSet &counters, BreakerState state, const sluice_config &cfg);

// The config a valve move writes: valve_closed and when (CLOCK_REALTIME).
sluice_config valve_config(sluice_config cfg, bool close, uint64_t now_realtime_ns);

// The config a breaker move writes: the state, when (CLOCK_REALTIME), the
// manual latch (an operator's trip only), the admission fraction
// (recovering starts its ramp at start_ppm; the others admit fully) and,
// leaving shedding, the valve opened.
sluice_config breaker_config(sluice_config cfg, BreakerState to, bool manual, uint32_t start_ppm,
			     uint64_t now_realtime_ns);

// The config to write for a decision that moves no breaker: the ramp's new
// admission fraction while recovering, or nothing when it is unchanged.
std::optional<sluice_config> admission_config(const sluice_config &cfg, BreakerState state,
					      const PolicyDecision &d);

} // namespace sluice
