// clock.h - every clock the control plane reads, in one place:
//
//   monotonic_seconds()  the daemon's own elapsed time (CLOCK_MONOTONIC): periods,
//                        ages, staleness, deadlines
//   monotonic_ns()       the same clock in nanoseconds, for short budgets
//   dataplane_now()      the data plane's clock, the one bucket writes must use:
//                        bpf_ktime_get_coarse_ns() is CLOCK_MONOTONIC_COARSE, plus
//                        SLUICE_TIME_BIAS, the form bpf/bucket.h takes
//   realtime_ns()        wall-clock time (CLOCK_REALTIME), for timestamps people read
//
// (tests/headers/fake_clock.h is the unit tests' fake of the data plane's clock.)
#pragma once

#include "bpf/bucket.h"
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

inline uint64_t dataplane_now()
{
	return clock_detail::ns_of(CLOCK_MONOTONIC_COARSE) + SLUICE_TIME_BIAS;
}

inline uint64_t realtime_ns()
{
	return clock_detail::ns_of(CLOCK_REALTIME);
}

} // namespace sluice
