// clock.h - the host's clocks the control plane reads, in one place:
//
//   monotonic_seconds()  the daemon's own elapsed time (CLOCK_MONOTONIC): periods,
//                        ages, staleness, deadlines
//   monotonic_ns()       the same clock in nanoseconds, for short budgets
//   realtime_ns()        wall-clock time (CLOCK_REALTIME), for timestamps people read
//
// The data plane's clock is not here: it is jiffies, which only a BPF program
// reads (clock/dataplane_clock.h); tests/headers/fake_clock.h is the unit
// tests' fake of it.
#pragma once

#include "bpf/sluice_abi.h"

#include <cstdint>
#include <ctime>

namespace sluice {

namespace clock_detail {
inline uint64_t ns_of(clockid_t clock)
{
	timespec ts{};
	clock_gettime(clock, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * SLUICE_NSEC_PER_SEC + static_cast<uint64_t>(ts.tv_nsec);
}
} // namespace clock_detail

inline uint64_t monotonic_ns()
{
	return clock_detail::ns_of(CLOCK_MONOTONIC);
}

inline double monotonic_seconds()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

inline uint64_t realtime_ns()
{
	return clock_detail::ns_of(CLOCK_REALTIME);
}

} // namespace sluice
