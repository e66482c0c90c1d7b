// cpu_pin.h - pin the calling thread to one CPU (the two-CPU tests and
// sluice-bench's contention figure run a thread on each of CPUs 0 and 1).
#pragma once

#include <sched.h>

namespace sluice::test {

// True once the calling thread may run on `cpu` alone.
inline bool pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0; // 0: the calling thread
}

} // namespace sluice::test
