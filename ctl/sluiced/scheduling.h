// scheduling.h - the control loop's priority (--rt-priority). Under a flood
// the CPUs are busy with the flood's own packet processing (softirqs, and
// ksoftirqd when they overflow): at normal priority the loop's period
// stretches, and the breaker decides late. SCHED_FIFO puts the loop ahead of
// every ordinary task and ksoftirqd; RLIMIT_RTTIME bounds it, so a loop that
// spins gives the CPU back (docs/architecture.md, "The control loop's
// priority").
#pragma once

#include "base/result.h"
#include "ipc/replies.h"

#include <cstdint>

namespace sluice {

// The calling thread (the loop's) to SCHED_FIFO at `priority` (1..), with
// RLIMIT_RTTIME set to kRtTimeSoftS/kRtTimeHardS (never above a lower hard
// limit already in force, e.g. the unit's LimitRTTIME=) and a SIGXCPU
// handler that puts the thread back to SCHED_OTHER when the soft limit is
// hit. The refusal names what is missing.
Status raise_loop_priority(uint32_t priority);

// Ask and take it back at once: does the kernel grant it? Checked before any
// interface is touched, so a refusal stops the start early; the real raise
// comes once the program is loaded (the verifier's seconds of CPU do not run
// at real-time priority).
Status probe_loop_priority(uint32_t priority);

// The loop's scheduling now, and whether the SIGXCPU handler demoted it.
SchedulingView loop_scheduling(uint32_t asked);

// True once after each demotion, for the loop to log it.
bool take_demotion();

} // namespace sluice
