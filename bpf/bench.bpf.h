/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bench.bpf.h - the build variants only scripts/bench.sh loads, in one
 * place: the fine clock and the cut points. The default build defines none
 * of their macros; then every cut point is an `if (0)` the compiler removes
 * (the default object's instructions are the same with or without them).
 */
#ifndef SLUICE_BENCH_BPF_H
#define SLUICE_BENCH_BPF_H

/* The clock, in bucket.h's form (the bias added): jiffies by default
 * (jiffies_clock.h); the fine and the coarse clock are build variants that
 * exist only so bench.sh can show what each would cost. (Their times are
 * not the daemon's: only the cost is measured with them.) */
#if defined(SLUICE_FINE_CLOCK)
#define SLUICE_NOW() (bpf_ktime_get_ns() + SLUICE_TIME_BIAS)
#elif defined(SLUICE_COARSE_CLOCK)
#define SLUICE_NOW() (bpf_ktime_get_coarse_ns() + SLUICE_TIME_BIAS)
#else
#define SLUICE_NOW() sluice_clock_of_jiffies(bpf_jiffies64(), settings.clock_tick_ns)
#endif

/* Cut points for bench.sh's cost breakdown (scripts/bench.sh builds one
 * object per SLUICE_BENCH_STOP_AFTER_<stage>, CMakeLists.txt lists them).
 * Each variant stops the frame at that point with XDP_DROP and counts
 * nothing; SLUICE_BENCH_KEEP makes the work before the cut observable so
 * that the compiler cannot remove it. Stages, in program order; a path
 * passes some of them (scripts/bench/fig1_cost.py, PATH_STAGES):
 *   PARSE     Ethernet/VLAN/IP parse
 *   HASH      + config lookup, breaker/list checks, prefix mask, SipHash (and,
 *             serving, the slot indices)
 *   LOOKUP    + the two slot lookups (serving)
 *   CLOCK     + the clock read (serving)
 *   BUCKET    + the two-choice bucket update (serving)
 *   STANDING  + the standing lookup (shedding: with the clock read before it;
 *             serving: a frame its slot pair refused)
 *   NEWCOMER  + the newcomer budget (shedding, no standing)
 *   VERDICT   + the rest of the judgement (the drop sampling's countdown, the
 *             deny list): the outcome, not yet counted */
#ifdef SLUICE_BENCH_STOP_AFTER_PARSE
#define SLUICE_BENCH_AT_PARSE 1
#else
#define SLUICE_BENCH_AT_PARSE 0
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_HASH
#define SLUICE_BENCH_AT_HASH 1
#else
#define SLUICE_BENCH_AT_HASH 0
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_LOOKUP
#define SLUICE_BENCH_AT_LOOKUP 1
#else
#define SLUICE_BENCH_AT_LOOKUP 0
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_CLOCK
#define SLUICE_BENCH_AT_CLOCK 1
#else
#define SLUICE_BENCH_AT_CLOCK 0
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_BUCKET
#define SLUICE_BENCH_AT_BUCKET 1
#else
#define SLUICE_BENCH_AT_BUCKET 0
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_STANDING
#define SLUICE_BENCH_AT_STANDING 1
#else
#define SLUICE_BENCH_AT_STANDING 0
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_NEWCOMER
#define SLUICE_BENCH_AT_NEWCOMER 1
#else
#define SLUICE_BENCH_AT_NEWCOMER 0
#endif
#ifdef SLUICE_BENCH_STOP_AFTER_VERDICT
#define SLUICE_BENCH_AT_VERDICT 1
#else
#define SLUICE_BENCH_AT_VERDICT 0
#endif

/* A cut variant is built: judge() may return SLUICE_BENCH_STOPPED. */
#define SLUICE_BENCH_CUT                                                                           \
	(SLUICE_BENCH_AT_PARSE || SLUICE_BENCH_AT_HASH || SLUICE_BENCH_AT_LOOKUP || SLUICE_BENCH_AT_CLOCK || \
	 SLUICE_BENCH_AT_BUCKET || SLUICE_BENCH_AT_STANDING || SLUICE_BENCH_AT_NEWCOMER ||          \
	 SLUICE_BENCH_AT_VERDICT)
/* What a cut inside judge() returns to sluice_xdp, which returns XDP_DROP at once. */
#define SLUICE_BENCH_STOPPED 0xff
/* Was this outcome a cut's? Always false in the default build. */
#define SLUICE_BENCH_WAS_STOPPED(outcome) (SLUICE_BENCH_CUT && (outcome) == SLUICE_BENCH_STOPPED)

#define SLUICE_BENCH_KEEP(x) asm volatile("" : : "r"(x))
#define SLUICE_BENCH_KEEP_1(a) SLUICE_BENCH_KEEP(a)
#define SLUICE_BENCH_KEEP_2(a, b) SLUICE_BENCH_KEEP(a); SLUICE_BENCH_KEEP_1(b)
#define SLUICE_BENCH_KEEP_3(a, b, c) SLUICE_BENCH_KEEP(a); SLUICE_BENCH_KEEP_2(b, c)
#define SLUICE_BENCH_KEEP_4(a, b, c, d) SLUICE_BENCH_KEEP(a); SLUICE_BENCH_KEEP_3(b, c, d)
#define SLUICE_BENCH_NARGS_(a, b, c, d, n, ...) n
#define SLUICE_BENCH_NARGS(...) SLUICE_BENCH_NARGS_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define SLUICE_BENCH_CAT_(a, b) a##b
#define SLUICE_BENCH_CAT(a, b) SLUICE_BENCH_CAT_(a, b)

/* The cut point of `stage`: in its variant, keep the values named (one to
 * four) and return `stopped`; in every other build, nothing. */
#define SLUICE_BENCH_CUT_POINT(stage, stopped, ...)                                                \
	do {                                                                                       \
		if (SLUICE_BENCH_AT_##stage) {                                                     \
			SLUICE_BENCH_CAT(SLUICE_BENCH_KEEP_, SLUICE_BENCH_NARGS(__VA_ARGS__))(__VA_ARGS__); \
			return stopped;                                                            \
		}                                                                                  \
	} while (0)

#endif /* SLUICE_BENCH_BPF_H */
