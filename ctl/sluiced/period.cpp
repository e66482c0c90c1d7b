#include "sluiced/period.h"

#include "logic/outcomes.h"

#include <cmath>

namespace sluice {

uint64_t incoming_of(const CounterSet &c)
{
	return incoming_packets(c);
}

RateSet rates_between(const CounterSet &before, const CounterSet &now, double dt)
{
	RateSet r{};
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++) {
		r[k].pps = std::round(double(now[k].packets - before[k].packets) / dt);
		r[k].bps = std::round(double(now[k].bytes - before[k].bytes) * 8 / dt);
	}
	return r;
}

double dropped_pps(const std::optional<RateSet> &rates)
{
	if (!rates)
		return 0;
	double pps = 0;
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++)
		if (kOutcomeVerdicts[k] == Verdict::dropped)
			pps += (*rates)[k].pps;
	return pps;
}

PolicySample policy_sample(double now_s, const CounterSet &counters, BreakerState state, double since_s,
			   const sluice_config &cfg)
{
	return PolicySample{now_s, incoming_packets(counters), admitted_packets(counters), state, since_s,
			    cfg.breaker_manual != 0};
}

ValveSample valve_sample(double now_s, const CounterSet &counters, BreakerState state, const sluice_config &cfg)
{
	return ValveSample{now_s,
			   counters[SLUICE_STANDING].packets,
			   counters[SLUICE_DROP_VALVE].packets,
			   state,
			   cfg.valve_closed != 0,
			   cfg.standing_share_cost_ns != 0 || cfg.standing_newer_share_cost_ns != 0};
}

sluice_config valve_config(sluice_config cfg, bool close, uint64_t now_realtime_ns)
{
	cfg.valve_closed = close ? 1 : 0;
	cfg.valve_since_ns = now_realtime_ns;
	return cfg;
}

sluice_config breaker_config(sluice_config cfg, BreakerState to, bool manual, uint32_t start_ppm,
			     uint64_t now_realtime_ns)
{
	cfg.breaker_state = static_cast<uint32_t>(to);
	cfg.breaker_since_ns = now_realtime_ns;
	cfg.breaker_manual = (manual && to == BreakerState::shedding) ? 1 : 0;
	cfg.admission_ppm = to == BreakerState::recovering ? start_ppm : SLUICE_PPM_FULL;
	// Leaving shedding always opens the valve: it is closed only while shedding.
	if (to != BreakerState::shedding && cfg.valve_closed) {
		cfg.valve_closed = 0;
		cfg.valve_since_ns = now_realtime_ns;
	}
	return cfg;
}

std::optional<sluice_config> admission_config(const sluice_config &cfg, BreakerState state,
					      const PolicyDecision &d)
{
	if (d.move || state != BreakerState::recovering || d.admission_ppm == cfg.admission_ppm)
		return std::nullopt;
	sluice_config next = cfg;
	next.admission_ppm = d.admission_ppm;
	return next;
}

} // namespace sluice
