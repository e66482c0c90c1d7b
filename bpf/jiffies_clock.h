/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * jiffies_clock.h - the data plane's clock, as arithmetic only: no helpers,
 * so the host computes it exactly as the program does (ctl/lib/clock's
 * dataplane_clock) and the host tests drive it with any jiffies they like.
 *
 * The program reads bpf_jiffies64(), which the verifier inlines on a 64-bit
 * JIT into one load of the kernel's jiffies_64 (kernel/bpf/verifier.c,
 * do_misc_fixups): no call at all, where bpf_ktime_get_coarse_ns() was a
 * helper call and a seqcount loop over the timekeeper (figure 1 measured
 * 3-8 ns for it on the pass path, about 1 for the jiffies load).
 *
 * Nothing is lost against the coarse clock it replaces: the kernel moves
 * jiffies and CLOCK_MONOTONIC_COARSE at the same tick (tick-sched's
 * tick_do_update_jiffies64 steps jiffies by whole TICK_NSEC of
 * CLOCK_MONOTONIC, then updates the timekeeper), so both have a tick's
 * resolution and both catch up together after an idle CPU's ticks were
 * stopped. tick_ns is TICK_NSEC, which clock_getres(CLOCK_MONOTONIC_COARSE)
 * reports (LOW_RES_NSEC); the loader writes it into settings.
 *
 * The time is jiffies x tick_ns + SLUICE_TIME_BIAS (bucket.h). It is not
 * CLOCK_MONOTONIC: jiffies start at INITIAL_JIFFIES (2^32 - 300 x HZ), so
 * this clock runs some 50-200 days ahead of it, by a constant for the boot.
 * Nothing compares the two: every time the program stores (a slot's
 * empty_at, a standing stamp, a SYN stamp) is judged against this clock,
 * and the daemon reads this clock itself when it writes one.
 *
 * Overflow: jiffies_64 is INITIAL_JIFFIES (< 2^32) + uptime x HZ, so the
 * product is below 2^32 x tick_ns (< 2^57 for HZ >= 100) plus the uptime in
 * ns (2^61.5 after a century): the sum stays below 2^63 for a century of
 * uptime, as bucket.h requires (tests/headers/jiffies_clock_test.cpp).
 */
#ifndef SLUICE_JIFFIES_CLOCK_H
#define SLUICE_JIFFIES_CLOCK_H

#include "bucket.h"

static inline __u64 sluice_clock_of_jiffies(__u64 jiffies, __u64 tick_ns)
{
	return jiffies * tick_ns + SLUICE_TIME_BIAS;
}

#endif /* SLUICE_JIFFIES_CLOCK_H */
