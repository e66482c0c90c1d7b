/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bucket.h - the token bucket math, and nothing else. No BPF helpers: this
 * header is compiled into the XDP program and into the host unit tests, which
 * drive it with a fake clock. The caller reads the clock and passes `now`.
 *
 * Representation (see struct sluice_slot): one u64 per slot, empty_at, the
 * time at which the bucket was or would have been empty. The credit of a slot
 * is (now - empty_at) nanoseconds of refill, capped at burst_ns; one token costs
 * cost_ns. With credit kept in nanoseconds both the cap and the cost are exact
 * integers, and refill is exact at any rate: there is no fractional token to
 * round away, the remainder simply stays in the credit.
 *
 * Time: every timestamp passed here is the clock plus SLUICE_TIME_BIAS, so that
 * "now - credit" can never wrap below zero, however soon after boot, and a
 * zeroed slot (empty_at = 0) reads as full.
 *
 * Overflow: cost_ns <= 1e9 / SLUICE_PPM_MIN * 1e6 = 1e12 and burst <= 1e6, so
 * burst_ns <= 1e18 < 2^60. now is the data plane's clock (jiffies_clock.h:
 * < 2^62 for a century of uptime) plus a 2^62 bias, < 2^63. Every subtraction is guarded; every product
 * is bounded by the limits in sluice_abi.h, which the control plane enforces.
 *
 * Concurrency: several CPUs may update one slot. Each slot is one u64 updated
 * with compare-and-swap (BPF_ATOMIC_CMPXCHG, kernel >= 5.12). A per-CPU bucket
 * would need no atomics, but it multiplies a source's rate by the number of
 * CPUs its packets are spread on (RSS can spread one source's flows), and a
 * bpf_spin_lock costs a helper call and an irq save per slot. One CAS on the
 * fuller slot makes every admission drain one whole token from a slot that had
 * it at the instant of the swap, so admissions from one slot never exceed
 * burst + rate x interval.
 */
#ifndef SLUICE_BUCKET_H
#define SLUICE_BUCKET_H

#include "sluice_abi.h"

#define SLUICE_TIME_BIAS (1ull << 62)

/* How often one admission retries after losing a CAS race before it drops. */
#define SLUICE_CAS_TRIES 4

/* Refill cost of one token at the given state; recovering scales the refill
 * rate by admission_ppm / 1e6, which is the same as scaling the cost by the
 * inverse. ppm is clamped into [SLUICE_PPM_MIN, SLUICE_PPM_FULL] here too, so a
 * corrupted config cannot divide by zero. */
static inline __u64 sluice_effective_cost(__u64 cost_ns, __u32 state, __u32 ppm)
{
	if (state != SLUICE_RECOVERING || ppm >= SLUICE_PPM_FULL)
		return cost_ns;
	if (ppm < SLUICE_PPM_MIN)
		ppm = SLUICE_PPM_MIN;
	return cost_ns * SLUICE_PPM_FULL / ppm;
}

/* Credit of a slot at `now`, in [0, burst_ns]. A clock that appears to go
 * backwards (now < empty_at) reads as an empty bucket, never as a huge one. */
static inline __u64 sluice_credit(__u64 empty_at, __u64 now, __u64 burst_ns)
{
	__u64 credit;

	if (now <= empty_at)
		return 0;
	credit = now - empty_at;
	return credit > burst_ns ? burst_ns : credit;
}

/* Whole tokens in a slot at `now`, in [0, burst]. */
static inline __u64 sluice_tokens(__u64 empty_at, __u64 now, __u64 cost_ns, __u64 burst)
{
	if (cost_ns == 0)
		return 0;
	return sluice_credit(empty_at, now, burst * cost_ns) / cost_ns;
}

/* The empty_at that makes a slot hold exactly `tokens` whole tokens at `now`.
 * The caller has checked 0 <= tokens <= burst (ctl/lib/maps refuses otherwise). */
static inline __u64 sluice_empty_at_for(__u64 now, __u64 tokens, __u64 cost_ns)
{
	return now - tokens * cost_ns;
}

/* Pay one token from a slot, floored at zero: empty_at such that the credit
 * drops by cost_ns, or to zero. Returns the value unchanged if nothing changes. */
static inline __u64 sluice_pay_floored(__u64 empty_at, __u64 now, __u64 cost_ns, __u64 burst_ns)
{
	__u64 credit = sluice_credit(empty_at, now, burst_ns);

	if (credit == 0)
		return empty_at;
	return now - (credit > cost_ns ? credit - cost_ns : 0);
}

#define SLUICE_READ_ONCE(x) (*(volatile __u64 *)&(x))

/*
 * Admit one packet of a source whose two slots are a and b (a == b is allowed:
 * one choice). Admitted when the fuller slot holds a whole token; then both
 * slots pay one token, the other one floored at zero, the fuller one by CAS (so
 * the token it pays is one it really had). Paying only slots that have a token
 * would let a source owning two private slots run at twice its rate.
 *
 * Order matters under concurrency: the other slot pays first, the fuller one
 * last. Were the fuller slot taken first, another CPU could, before the other
 * slot is paid, find that slot still holding the same token and take it: two
 * admissions for one token of a source's two private slots. Paying first, by
 * the time any admission takes its token every earlier admission has paid both
 * slots, so at one instant a pair admits at most burst. A lost race on either
 * CAS decides again from fresh reads (the other slot may then have paid for an
 * admission that did not happen: under contention a source is charged more,
 * never less).
 * sluice_admit2_try is one try taking up to `want` tokens at once (at most
 * the fuller slot's whole tokens; a lease's batch, 1 for a frame): the tokens
 * taken, 0 to drop (the fuller slot holds no whole token), -1 for a lost swap
 * (decide again). sluice_admit2_once is its one-token try; sluice_admit2
 * tries up to SLUICE_CAS_TRIES times and returns 1 to admit, 0 to drop.
 */
static inline __s64 sluice_admit2_try(struct sluice_slot *a, struct sluice_slot *b, __u64 now, __u64 cost_ns,
				      __u64 burst_ns, __u64 want)
{
	__u64 ea = SLUICE_READ_ONCE(a->empty_at);
	__u64 eb = SLUICE_READ_ONCE(b->empty_at);
	__u64 ca = sluice_credit(ea, now, burst_ns);
	__u64 cb = sluice_credit(eb, now, burst_ns);
	struct sluice_slot *full = a, *other = b;
	__u64 e_full = ea, c_full = ca, e_other = eb, paid, n = 1, take;

	if (cb > ca) {
		full = b;
		other = a;
		e_full = eb;
		c_full = cb;
		e_other = ea;
	}
	if (c_full < cost_ns)
		return 0;
	if (want > 1) {
		n = c_full / cost_ns;
		if (n > want)
			n = want;
	}
	take = n * cost_ns;
	if (other != full) {
		paid = sluice_pay_floored(e_other, now, take, burst_ns);
		if (paid != e_other &&
		    __sync_val_compare_and_swap(&other->empty_at, e_other, paid) != e_other)
			return -1; /* another CPU changed it: decide again */
	}
	if (__sync_val_compare_and_swap(&full->empty_at, e_full, now - (c_full - take)) != e_full)
		return -1; /* another CPU took from it first: decide again */
	return (__s64)n;
}

static inline int sluice_admit2_once(struct sluice_slot *a, struct sluice_slot *b,
				     __u64 now, __u64 cost_ns, __u64 burst_ns)
{
	return (int)sluice_admit2_try(a, b, now, cost_ns, burst_ns, 1);
}

static inline int sluice_admit2(struct sluice_slot *a, struct sluice_slot *b,
				__u64 now, __u64 cost_ns, __u64 burst_ns)
{
	int i;

	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		int r = sluice_admit2_once(a, b, now, cost_ns, burst_ns);

		if (r >= 0)
			return r;
	}
	return 0;
}

/*
 * Leases: what contention on one pair costs, bounded. A source whose frames
 * arrive on several CPUs (RSS spreads its flows) makes every CPU swap the
 * same two slots on every admitted frame: their cache lines go from CPU to
 * CPU, and a frame that loses SLUICE_CAS_TRIES swaps is dropped although its
 * pair held tokens (docs/benchmarks.md, figure 13). So a CPU that loses a
 * swap takes a batch of tokens at once (a lease) and admits the pair's next
 * frames on this CPU from it, touching the shared slots once a batch.
 *
 * A lease is n admissions at the instant it is taken: both slots pay n
 * tokens (the other one floored at zero), the fuller one by CAS, exactly as
 * n single admissions at that `now` would leave them (the fuller stays the
 * fuller when both pay alike), and n is at most the whole tokens the fuller
 * slot holds. So 0 <= tokens <= burst at every write, and the tokens taken
 * from a pair never exceed burst + rate x interval (tokens leased count as
 * taken). A frame admitted from a lease spends a token taken before it; a
 * leased token never spent (its source went idle on that CPU, its entry was
 * taken by another pair, the rate changed) is lost: leases only ever
 * under-admit, by at most (batch - 1) tokens a CPU at any instant.
 *
 * The batch is a small share of burst: burst / SLUICE_LEASE_BURST_SHARE,
 * at most SLUICE_LEASE_MAX; below 2 (a burst under 2 x the share) there is
 * no leasing. A CPU leases only after it lost a swap on that pair (or while
 * its entry already leases that pair): a source alone on one CPU never
 * loses one, so its path is the single admission it always was.
 *
 * Each CPU keeps its leases in a small direct-mapped cache
 * (SLUICE_LEASE_ENTRIES entries, by the pair's first slot), its entries'
 * tags the pair; an entry that still holds tokens of another pair is taken
 * over only once idle for SLUICE_LEASE_IDLE_NS (so two pairs that share an
 * entry cannot make each other strand a lease on every frame).
 */
#define SLUICE_LEASE_MAX 32
#define SLUICE_LEASE_BURST_SHARE 64
#define SLUICE_LEASE_ENTRIES 128
#define SLUICE_LEASE_IDLE_NS SLUICE_NSEC_PER_SEC

/* One CPU's lease on one pair: its tag (sluice_lease_pair), the cost its
 * tokens were taken at, when it was last used, and the tokens left. */
struct sluice_lease {
	__u64 pair;
	__u64 cost_ns;
	__u64 at;
	__u64 tokens;
};

static inline __u64 sluice_lease_pair(__u32 a, __u32 b)
{
	return ((__u64)a << 32) | b;
}

/* The batch a lease takes at this burst (tokens); below 2: no leasing. */
static inline __u64 sluice_lease_batch(__u64 burst)
{
	__u64 n = burst / SLUICE_LEASE_BURST_SHARE;

	return n > SLUICE_LEASE_MAX ? SLUICE_LEASE_MAX : n;
}

/*
 * sluice_admit2 taking up to `want` tokens on each try (each at most the
 * fuller slot's whole tokens). Returns the tokens taken: 0 to drop, 1 to
 * admit, n > 1 to admit with n - 1 left to lease.
 */
static inline __u64 sluice_admit2_n(struct sluice_slot *a, struct sluice_slot *b, __u64 now, __u64 cost_ns,
				    __u64 burst_ns, __u64 want)
{
	int i;

	#pragma unroll
	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__s64 n = sluice_admit2_try(a, b, now, cost_ns, burst_ns, want);

		if (n >= 0)
			return (__u64)n;
	}
	return 0;
}

/*
 * Admit one frame of the pair (a, b), tagged `pair`, with this CPU's lease
 * entry l (NULL: no leasing): from the lease when it holds a token of this
 * pair at this cost, else from the slots, leasing a batch when this entry
 * already leases the pair, or when `lost` (the caller lost a swap on it:
 * sluice_admit2_once returned -1) and the entry is free (no tokens, or idle
 * for SLUICE_LEASE_IDLE_NS); the entry is then the pair's, with the tokens
 * taken past the first (none if one or none was taken). Returns 1 to admit.
 */
static inline int sluice_admit2_leased(struct sluice_lease *l, __u64 pair, struct sluice_slot *a,
				       struct sluice_slot *b, __u64 now, __u64 cost_ns, __u64 burst, int lost)
{
	__u64 batch = sluice_lease_batch(burst), want = 1, n;

	if (l && batch > 1) {
		if (l->pair == pair && l->cost_ns) { /* this entry leases this pair */
			if (l->cost_ns == cost_ns && l->tokens) {
				l->tokens--;
				l->at = now;
				return 1;
			}
			want = batch; /* spent, or taken at another cost (lost) */
		} else if (lost && (!l->tokens || now - l->at > SLUICE_LEASE_IDLE_NS)) {
			want = batch;
		}
	}
	/* The entry is this pair's from the try on (its tokens once taken):
	 * nothing of it stays live across the swaps (the BPF frame's size). */
	if (want > 1 && l) {
		l->pair = pair;
		l->cost_ns = cost_ns;
		l->at = now;
		l->tokens = 0;
	}
	n = sluice_admit2_n(a, b, now, cost_ns, burst * cost_ns, want);
	if (n > 1 && l)
		l->tokens = n - 1;
	return n != 0;
}

/* Whether this CPU's entry l leases the pair tagged `pair` (so its frames go
 * to sluice_admit2_leased before touching the slots). A pair no CPU lost a
 * swap on is never leased: its path is sluice_admit2_once, and
 * sluice_admit2_leased (lost = 1) only after that lost a swap. */
static inline int sluice_lease_held(const struct sluice_lease *l, __u64 pair)
{
	return l && l->pair == pair && l->cost_ns;
}

/*
 * One bucket alone (the standing bucket of a source with standing; the
 * newcomer budget, one per CPU, whose caller writes the result itself): the
 * empty_at after one admission at `now`, or 0 when it holds no whole token. 0 is never an admission's result (now - credit >=
 * SLUICE_TIME_BIAS - burst_ns > 0), so it can mean "refused". cost_ns 0 is
 * a budget of none: refused, never free.
 */
static inline __u64 sluice_take1(__u64 empty_at, __u64 now, __u64 cost_ns, __u64 burst_ns)
{
	__u64 credit = sluice_credit(empty_at, now, burst_ns);

	if (cost_ns == 0 || credit < cost_ns)
		return 0;
	return now - (credit - cost_ns);
}

/* Admit one packet from a bucket several CPUs share: the token taken by CAS,
 * as admit2 takes the fuller slot's. Returns 1 to admit, 0 to drop. */
static inline int sluice_admit1(__u64 *empty_at, __u64 now, __u64 cost_ns, __u64 burst_ns)
{
	int i;

	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__u64 e = SLUICE_READ_ONCE(*empty_at);
		__u64 paid = sluice_take1(e, now, cost_ns, burst_ns);

		if (!paid)
			return 0;
		if (__sync_val_compare_and_swap(empty_at, e, paid) == e)
			return 1;
	}
	return 0;
}

#endif /* SLUICE_BUCKET_H */
