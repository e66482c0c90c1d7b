// dataplane_clock.h - the data plane's clock, read from the host.
//
// The XDP program's clock is jiffies x tick_ns + SLUICE_TIME_BIAS
// (bpf/jiffies_clock.h says why). Every time the daemon writes into a map the
// program reads (a slot's tokens, a standing stamp, the SYN stamps' start)
// must be on that clock, and so must every test that brackets the program's
// readings. No system call reads jiffies, so a small program does
// (bpf/clock_probe.bpf.c, run with BPF_PROG_TEST_RUN, never attached), once
// per reading: a few microseconds, for readings the daemon makes a few times
// a period.
//
// A room of its own (libbpf and the probe's skeleton, base): the bpf tests
// and the benchmark read the clock without the whole of sluice_lib_bpf.
#pragma once

#include "base/result.h"

#include <cstdint>

namespace sluice {

// Nanoseconds a jiffy (the kernel's TICK_NSEC), as clock_getres() reports for
// CLOCK_MONOTONIC_COARSE: what every loader writes into settings.clock_tick_ns.
// Refused outside [100 us, 10 ms] (HZ 100 to 10000): the overflow bounds of
// bpf/jiffies_clock.h hold there.
Result<uint32_t> dataplane_tick_ns();

// The data plane's clock now, exactly as the program computes it (bias
// included); the probe is loaded on first use. A loader calls it once before
// it loads the program, so that a host where the probe cannot run refuses to
// load rather than write times on another clock.
Result<uint64_t> read_dataplane_clock();

// read_dataplane_clock() where a loaded program proves the probe runs: on
// the impossible failure it logs the reason and ends the process (a time on
// any other clock would be silently wrong by months).
uint64_t dataplane_now();

} // namespace sluice
