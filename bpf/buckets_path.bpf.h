/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * buckets_path.bpf.h - a frame's budgets: its slot pair, its standing
 * bucket, the newcomer budget while shedding (shed), the packet budget in
 * every state (limit), the byte budget, and the gate before them
 * (judge_buckets).
 */
#ifndef SLUICE_BUCKETS_PATH_BPF_H
#define SLUICE_BUCKETS_PATH_BPF_H

/* The newcomer budget: this CPU's bucket (NULL cannot happen: a one-element
 * array). */
static __always_inline struct sluice_slot *newcomer_bucket(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&newcomers, &zero);
}

/* Admit one frame from the slot pair (a, b), tagged `pair`
 * (sluice_lease_pair), at cost_ns a token, with this CPU's lease entry for it
 * (bucket.h, "Leases": a direct-mapped cache by the pair's first slot):
 * entered only for a pair that entry leases, or after the caller lost a swap
 * on it (lost: the entry does not lease it). A global function, its frame
 * small (the slots by pointer, the clock read again: a frame of the lease's
 * state inlined into limit(), or a larger one here, took the program past
 * its 512 bytes of stack); verified once, its scalar arguments any value. */
__noinline int sluice_pair_admit(struct sluice_slot *a, struct sluice_slot *b, __u64 pair, __u64 cost_ns,
				 __u64 burst)
{
	__u64 now = SLUICE_NOW();
	__u32 il = (pair >> 32) & (SLUICE_LEASE_ENTRIES - 1);
	struct sluice_lease *l;

	if (!a || !b)
		return 0;
	l = bpf_map_lookup_elem(&leases, &il);
	return sluice_admit2_leased(l, pair, a, b, now, cost_ns, burst, !sluice_lease_held(l, pair));
}

/* Admit one frame of the budget's source from its slot pair (a, b): one try
 * inlined, exactly sluice_admit2's first, unless this CPU's entry leases the
 * pair; the lease path (sluice_pair_admit) only for a leased pair or after a
 * lost swap. The check reads this CPU's entry (a per-CPU array lookup, which
 * the kernel inlines). */
#define PAIR_ADMIT(held, pair, bg, now, cost, a, b)                                                             \
	({                                                                                                        \
		int r_ = -1;                                                                                      \
                                                                                                                  \
		if (!(held))                                                                                      \
			r_ = sluice_admit2_once(a, b, now, cost, (bg)->burst * (cost));                           \
		r_ < 0 ? sluice_pair_admit(a, b, pair, cost, (bg)->burst) : r_;                                    \
	})

/* The slot pair of the source of this hash; 0 if it cannot be looked up
 * (cannot happen: slot_mask < max_entries). */
static __always_inline int slot_pair(__u64 hash, struct sluice_slot **a, struct sluice_slot **b)
{
	struct sluice_slot_pair idx = sluice_slots_of(hash, settings.slot_mask, settings.one_choice);

	*a = bpf_map_lookup_elem(&slots, &idx.a);
	*b = bpf_map_lookup_elem(&slots, &idx.b);
	return *a && *b;
}

/* Admit one frame from the slot pair of this hash at cost_ns a token. */
static __always_inline int pair_admit(__u64 hash, __u64 now, __u64 cost_ns, __u64 burst)
{
	struct sluice_slot *a, *b;

	return slot_pair(hash, &a, &b) && sluice_admit2(a, b, now, cost_ns, burst * cost_ns);
}

/*
 * What a frame is judged with: its class's budgets, or config's for the
 * default class, and the hash of its buckets. A frame of a class other than
 * the default hashes its buckets with the class's prefixes and key, and its
 * standing with the plain key and settings' prefixes (the feeders' hash);
 * that second hash is made only when standing is looked up (standing_hash()).
 */
struct budget {
	__u64 cost_ns, burst;                   /* the packet budget, unramped */
	__u64 standing_cost_ns, standing_burst; /* a source with standing */
	__u64 byte_cost_fp, byte_burst_ns;      /* 0: no byte budget */
	__u64 hash;                             /* the buckets' */
	__u64 standing_hash;                    /* standing's, once known */
	int standing_known;                     /* the default class: standing_hash is hash */
	__u32 state;
	int *observe;                           /* non-NULL: observed standing's count is left to the
						 * caller (*observe = 1), see sluice_judge_policy() */
	struct xdp_md *ctx;                     /* the frame, for the cookie path */
	__u32 cookie_way;                       /* SLUICE_COOKIE_HERE, _DEFER or _SKIP */
};

/* The plain hash of a source (settings' prefixes, the plain key): a global
 * function, so that its SipHash is one copy however many places need it. */
__noinline __u64 sluice_plain_hash(__u64 w0, __u64 w1, __u32 is_v6)
{
	struct sluice_source src = { .w = { w0, w1 } };

	return source_hash(&src, is_v6);
}

static __always_inline __u64 standing_hash(struct budget *bg, const struct sluice_source *src, int is_v6)
{
	if (!bg->standing_known) {
		bg->standing_hash = sluice_plain_hash(src->w[0], src->w[1], is_v6);
		bg->standing_known = 1;
	}
	return bg->standing_hash;
}

/* Admit from the standing bucket of way w (never ramped), at its own rate or
 * the fair share, whichever is lower; its burst the time its own rate's
 * burst lasts (at a share of a tenth of the rate, a tenth of the tokens).
 * The share is the newer sources' when a tenure line is in force and the
 * way's first grant came after it (docs/architecture.md, "Tenure").
 * Every frame that gets here is counted in seen[w], admitted or not: the
 * daemon's measure of what the source asks (docs/architecture.md, "Standing
 * buys a share"). */
static __always_inline int standing_admit(const struct sluice_config *cfg, const struct budget *bg,
					  struct sluice_standing_set *set, __u32 w, __u64 now)
{
	__u64 share = cfg->standing_share_cost_ns;

	w &= SLUICE_STANDING_WAYS - 1;
	if (cfg->standing_newer_share_cost_ns &&
	    sluice_standing_granted_after(set->record[w], cfg->standing_tenure_tick))
		share = cfg->standing_newer_share_cost_ns;

	__u64 cost = bg->standing_cost_ns > share ? bg->standing_cost_ns : share;

	__sync_fetch_and_add(&set->seen[w], 1);
	return sluice_admit1(&set->empty_at[w], now, cost, bg->standing_burst * bg->standing_cost_ns);
}

/* Shedding, past the allowlist: see "The way of a frame" above. */
static __always_inline __u32 shed(const struct sluice_config *cfg, struct budget *bg, const struct sluice_source *src,
				  const struct sluice_source *masked, int is_v6, __u64 now)
{
	__u32 w = 0;
	struct sluice_standing_set *set = standing_of(bg->ctx, standing_hash(bg, src, is_v6), now, &w);

	SLUICE_BENCH_CUT_POINT(STANDING, SLUICE_BENCH_STOPPED, set);
	if (!set) {
		if (cfg->valve_closed)
			return sampled_drop(bg->ctx, src, is_v6, SLUICE_DROP_SHED);
		/* The cookie path, or with cookies off only its SYN-ACK check
		 * (sluice_cookie decides which). */
		if (bg->cookie_way != SLUICE_COOKIE_SKIP && !cookie_path_skips(bg->ctx)) {
			if (bg->cookie_way != SLUICE_COOKIE_HERE) /* deferred */
				return SLUICE_COOKIE_DEFERRED;
			__u32 r = sluice_cookie(bg->ctx, bg->standing_hash, now, 0);

			if (r != SLUICE_COOKIE_GO_ON)
				return cookie_outcome(bg->ctx, r, src, is_v6);
		}
		/* The budget's token is taken only once the slot pair admits
		 * too, so a newcomer over its own rate spends none of it. No
		 * other frame runs on this CPU in between (the bucket is this
		 * CPU's, and XDP runs one frame at a time on it), so the token
		 * seen is still there to take. */
		struct sluice_slot *n = newcomer_bucket();
		__u64 paid = n ? sluice_take1(n->empty_at, now, cfg->newcomer_cost_ns,
					      cfg->newcomer_burst * cfg->newcomer_cost_ns)
			       : 0;

		SLUICE_BENCH_CUT_POINT(NEWCOMER, SLUICE_BENCH_STOPPED, paid);
		if (!paid)
			return sampled_drop(bg->ctx, src, is_v6, SLUICE_DROP_SHED);
		if (pair_admit(bg->hash, now, bg->cost_ns, bg->burst)) {
			n->empty_at = paid;
			return SLUICE_NEWCOMER;
		}
		return sampled_drop(bg->ctx, masked, is_v6, SLUICE_DROP_RATE);
	}
	if (cfg->valve_closed) {
		/* Seen all the same: the governor's demand is what a source
		 * offers its standing bucket, and a flood the valve drops must
		 * still show in it, or its standing is never revoked and one
		 * source keeps shedding allowlist-only for everyone. */
		__sync_fetch_and_add(&set->seen[w & (SLUICE_STANDING_WAYS - 1)], 1);
		return sampled_drop(bg->ctx, src, is_v6, SLUICE_DROP_VALVE);
	}
	/* While shedding a source with standing has its standing bucket alone,
	 * not its slot pair too: the daemon's share bounds the standing
	 * sources together only if nothing else admits them. */
	if (standing_admit(cfg, bg, set, w, now))
		return SLUICE_STANDING;
	return sampled_drop(bg->ctx, masked, is_v6, SLUICE_DROP_RATE);
}

/* The packet budget of a frame, in every breaker state: its outcome, and in
 * *now the clock it was judged at. */
static __always_inline __u32 limit(const struct sluice_config *cfg, struct budget *bg,
				   const struct sluice_source *src, const struct sluice_source *masked, int is_v6,
				   __u64 *now)
{
	if (bg->state == SLUICE_SHEDDING) {
		SLUICE_BENCH_CUT_POINT(HASH, SLUICE_BENCH_STOPPED, bg->hash);
		*now = SLUICE_NOW();
		return shed(cfg, bg, src, masked, is_v6, *now);
	}
	/* Cookies always: a SYN (or the ACK of a cookie) of a source without
	 * standing takes the cookie path in every state; anything else goes on
	 * to the buckets. */
	if (cfg->cookie_mode == SLUICE_COOKIES_ALWAYS && !settings.dry_run && bg->cookie_way != SLUICE_COOKIE_SKIP &&
	    !cookie_path_skips(bg->ctx)) {
		if (bg->cookie_way != SLUICE_COOKIE_HERE) /* deferred */
			return SLUICE_COOKIE_DEFERRED;
		*now = SLUICE_NOW();
		__u32 r = sluice_cookie(bg->ctx, standing_hash(bg, src, is_v6), *now, 1);

		if (r != SLUICE_COOKIE_GO_ON)
			return cookie_outcome(bg->ctx, r, src, is_v6);
	}

	struct sluice_slot_pair idx = sluice_slots_of(bg->hash, settings.slot_mask, settings.one_choice);
	SLUICE_BENCH_CUT_POINT(HASH, SLUICE_BENCH_STOPPED, idx.a, idx.b);
	struct sluice_slot *a = bpf_map_lookup_elem(&slots, &idx.a);
	struct sluice_slot *b = bpf_map_lookup_elem(&slots, &idx.b);

	if (!a || !b)
		return SLUICE_DROP_RATE; /* cannot happen: slot_mask < max_entries */
	SLUICE_BENCH_CUT_POINT(LOOKUP, SLUICE_BENCH_STOPPED, a, b);
	/* Whether this CPU's lease entry leases the pair (bucket.h, "Leases"). */
	__u32 il = idx.a & (SLUICE_LEASE_ENTRIES - 1);
	int held = sluice_lease_held(bpf_map_lookup_elem(&leases, &il), sluice_lease_pair(idx.a, idx.b));

	__u64 cost = sluice_effective_cost(bg->cost_ns, bg->state, cfg->admission_ppm);
	/* The clock is jiffies (jiffies_clock.h): one load, at a tick's
	 * resolution (4 ms at HZ=250). The credit is carried exactly from one
	 * reading to the next, so the rate is exact over time in this clock.
	 * Against a precise clock it lags by a few ms that vary from tick to
	 * tick (seen with the coarse clock, which moves with it: 4-16 ms on
	 * this VM), so any one interval is off by at most that many ms of
	 * refill, and the error never accumulates. */
	*now = SLUICE_NOW();

	SLUICE_BENCH_CUT_POINT(CLOCK, SLUICE_BENCH_STOPPED, a, b, *now, cost);
	SLUICE_BENCH_CUT_POINT(BUCKET, SLUICE_BENCH_STOPPED, sluice_admit2(a, b, *now, cost, bg->burst * cost));
	/* Recovering with the ramp in force, standing is looked up first: a
	 * source with standing is judged at its whole rate. (Tried ramped
	 * first, a source that had been idle would pay the ramped cost, up to
	 * 1e6 / SLUICE_PPM_MIN tokens, for each frame its credit covered.) */
	struct sluice_standing_set *set = NULL;
	__u32 w = 0;
	int looked = cost != bg->cost_ns;

	if (looked) {
		set = standing_of(bg->ctx, standing_hash(bg, src, is_v6), *now, &w);
		if (set)
			cost = bg->cost_ns;
	}
	if (PAIR_ADMIT(held, sluice_lease_pair(idx.a, idx.b), bg, *now, cost, a, b)) {
		if (settings.observe_periods && bg->state == SLUICE_SERVING) {
			if (bg->observe)
				*bg->observe = 1;
			else
				sluice_observe(standing_hash(bg, src, is_v6), *now, src->w[0], src->w[1], is_v6);
		}
		return SLUICE_PASSED;
	}
	/* Refused by its slot pair: only now, in serving, is standing looked up. */
	if (!looked)
		set = standing_of(bg->ctx, standing_hash(bg, src, is_v6), *now, &w);
	SLUICE_BENCH_CUT_POINT(STANDING, SLUICE_BENCH_STOPPED, set);
	if (set && standing_admit(cfg, bg, set, w, *now))
		return SLUICE_STANDING;
	return sampled_drop(bg->ctx, masked, is_v6, SLUICE_DROP_RATE);
}

/* The byte budget, after the packet budget admitted a frame of `bytes`: its
 * own slot pair (sluice_byte_hash), (bytes x byte_cost_fp) >> 16 ns of refill
 * a frame, never ramped. A global function: it runs only for a class with a
 * byte budget, and inlined its second admit2 would double the states of
 * every admitting path. Returns 1 to admit. */
__noinline int sluice_bytes_admit(__u64 hash, __u64 now, __u64 bytes, __u64 byte_cost_fp, __u64 byte_burst_ns)
{
	struct sluice_slot *a, *b;

	return slot_pair(sluice_byte_hash(hash), &a, &b) &&
	       sluice_admit2(a, b, now, (bytes * byte_cost_fp) >> SLUICE_BYTE_COST_SHIFT, byte_burst_ns);
}

/* Before the buckets: shedding, the allowlist; a config never written, the
 * verdicts without buckets. SLUICE_OUTCOMES: on to the buckets. */
static __always_inline __u32 gate(struct xdp_md *ctx, const struct sluice_config *cfg, __u32 flags,
				  const struct sluice_source *src, int is_v6)
{
	__u32 allow_bits = is_v6 ? SLUICE_LIST_ALLOW_V6 | SLUICE_LIST_ALLOW_EXACT_V6
				 : SLUICE_LIST_ALLOW_V4 | SLUICE_LIST_ALLOW_EXACT_V4;

	if (cfg->breaker_state == SLUICE_SHEDDING) {
		if ((flags & allow_bits) &&
		    (is_v6 ? sluice_allowed_v6(flags, src->w[0], src->w[1]) : sluice_allowed_v4(flags, src->w[0])))
			return SLUICE_ALLOWLISTED;
		if (cfg->cost_ns == 0)
			return sampled_drop(ctx, src, is_v6, SLUICE_DROP_SHED); /* never configured */
	} else if (cfg->cost_ns == 0) {
		return SLUICE_PASSED; /* never configured: the loader writes config before attach */
	}
	return SLUICE_OUTCOMES;
}

/*
 * The buckets of a frame of class `id` whose record is rec: the default
 * class (id 0) with config's budgets, settings' prefixes and the plain key,
 * and a byte budget only from its record (rec NULL: none); any other with
 * its record's. Inlined twice: without a policy judge() calls it with rec
 * NULL and id 0, so that the compiler folds it to the code of the default
 * class alone (figure 1: no class costs nothing).
 */
static __always_inline __u32 judge_buckets(struct xdp_md *ctx, const struct sluice_config *cfg, __u32 flags,
					   const struct sluice_source *src, int is_v6, __u64 bytes,
					   const struct sluice_class *rec, __u32 id, int *observe, __u32 cookie_way)
{
	__u32 outcome = gate(ctx, cfg, flags, src, is_v6);

	if (outcome != SLUICE_OUTCOMES)
		return outcome;

	/* The shed sample carries the source as the frame did; the rate
	 * sample the masked one (the daemon masks both alike). */
	struct sluice_source masked = *src;
	struct budget bg = { .state = cfg->breaker_state, .observe = observe, .ctx = ctx, .cookie_way = cookie_way };

	if (id == SLUICE_CLASS_DEFAULT || !rec) {
		bg.hash = source_hash(&masked, is_v6);
		bg.standing_hash = bg.hash;
		bg.standing_known = 1;
		bg.cost_ns = cfg->cost_ns;
		bg.burst = cfg->burst;
		bg.standing_cost_ns = cfg->standing_cost_ns;
		bg.standing_burst = cfg->standing_burst;
		if (rec) {
			bg.byte_cost_fp = rec->byte_cost_fp;
			bg.byte_burst_ns = rec->byte_burst_ns;
		}
	} else {
		__u64 key[2] = { settings.hash_key[0], settings.hash_key[1] }, ckey[2];

		sluice_mask_prefixes(&masked, is_v6, rec->v4_prefix, rec->v6_prefix);
		sluice_class_key(key, id, ckey);
		bg.hash = sluice_source_hash(ckey, &masked, is_v6);
		bg.cost_ns = rec->cost_ns;
		bg.burst = rec->burst;
		if (rec->standing_cost_ns) {
			bg.standing_cost_ns = rec->standing_cost_ns;
			bg.standing_burst = rec->standing_burst;
		} else {
			bg.standing_cost_ns = cfg->standing_cost_ns;
			bg.standing_burst = cfg->standing_burst;
		}
		bg.byte_cost_fp = rec->byte_cost_fp;
		bg.byte_burst_ns = rec->byte_burst_ns;
	}

	__u64 now = 0;

	outcome = limit(cfg, &bg, src, &masked, is_v6, &now);
	if (SLUICE_BENCH_WAS_STOPPED(outcome))
		return outcome;
	/* Admitted by its packet budget: the byte budget has its say (the
	 * packet's token stays spent when it refuses, as with two chained
	 * nftables limits). */
	if (bg.byte_cost_fp && (outcome == SLUICE_PASSED || outcome == SLUICE_STANDING || outcome == SLUICE_NEWCOMER) &&
	    !sluice_bytes_admit(bg.hash, now, bytes, bg.byte_cost_fp, bg.byte_burst_ns))
		return sampled_drop(ctx, &masked, is_v6, SLUICE_DROP_BYTES);
	return outcome;
}

#endif /* SLUICE_BUCKETS_PATH_BPF_H */
