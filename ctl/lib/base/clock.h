// clock.h - the daemon's own notion of elapsed time: CLOCK_MONOTONIC in
// seconds, for periods, ages and staleness. (The data plane's clock, which
// bucket writes must use, is dataplane_now() in maps.h.)
#pragma once

#include <ctime>

namespace sluice {

inline double monotonic_seconds()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

} // namespace sluice
