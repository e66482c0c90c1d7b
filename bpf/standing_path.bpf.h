/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * standing_path.bpf.h - the source's keyed hash, and the standing table as
 * the program reads and grants it (the math is standing.h's, helper-free):
 * the lookup and its refresh, a grant, observed standing.
 */
#ifndef SLUICE_STANDING_PATH_BPF_H
#define SLUICE_STANDING_PATH_BPF_H

/* The masked source's keyed hash: the one SipHash a frame (or a grant) pays,
 * for its slots and its standing alike. Masks src in place. */
static __always_inline __u64 source_hash(struct sluice_source *src, int is_v6)
{
	sluice_mask_source(src, is_v6, &settings);

	__u64 key[2] = { settings.hash_key[0], settings.hash_key[1] };
	return sluice_source_hash(key, src, is_v6);
}

/*
 * The way that holds the source of this hash live in its standing set, for
 * this frame (an entry bound to a UDP peer port holds only for UDP from that
 * port, parse.h's sluice_udp_source_port); -1 if it has no standing. A live
 * entry older than an eighth of the lapse time is stamped again (by
 * compare-and-swap: an entry another CPU replaced meanwhile is left alone),
 * so a source that keeps sending keeps its standing. A global function,
 * verified once: inlined, the port check's registers spilled past the
 * verifier's 512 bytes of stack under sluice_judge_policy.
 */
__noinline int sluice_standing_way(struct xdp_md *ctx, __u64 hash, __u64 now)
{
	__u32 idx = sluice_standing_set_of(hash, settings.standing_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &idx);

	if (!set)
		return -1; /* cannot happen: standing_set_mask < max_entries */
	__u32 stamp = sluice_standing_stamp(now);
	__u32 fp = sluice_standing_fingerprint(hash);
	int w = sluice_standing_find(set, fp, stamp, settings.standing_lapse_ticks);

	if (w < 0)
		return -1;
	w &= SLUICE_STANDING_WAYS - 1;
	if (set->port[w] &&
	    !sluice_standing_port_holds(set, w,
					sluice_udp_source_port((void *)(long)ctx->data, (void *)(long)ctx->data_end)))
		return -1;
	__u64 *e = &set->way[w];
	__u64 old = *e;

	if (sluice_standing_needs_refresh(old, stamp, settings.standing_lapse_ticks))
		__sync_val_compare_and_swap(e, old, sluice_standing_entry(fp, stamp));
	return w;
}

/* The standing set of the source of this hash, and in *way the way that
 * holds it live for this frame (sluice_standing_way); NULL if it has no
 * standing. */
static __always_inline struct sluice_standing_set *standing_of(struct xdp_md *ctx, __u64 hash, __u64 now,
								__u32 *way)
{
	int w = sluice_standing_way(ctx, hash, now);

	if (w < 0)
		return NULL;
	__u32 idx = sluice_standing_set_of(hash, settings.standing_set_mask);

	*way = w & (SLUICE_STANDING_WAYS - 1);
	return bpf_map_lookup_elem(&standing, &idx);
}

/* A source (as the frame or the socket has it) as a grant records it:
 * masked to the configured prefix, in sluice_standing_source's 16 bytes. */
static __always_inline void kept_source(const struct sluice_source *src, int is_v6, __u64 out[2])
{
	struct sluice_source m = *src;

	sluice_mask_source(&m, is_v6, &settings);
	sluice_standing_source(m.w[0], m.w[1], is_v6, out);
}

/* The prefix_count word of this kept source's prefix (sluice_quota_bit). */
static __always_inline __u32 *prefix_count_of(__u64 k0, __u64 k1)
{
	__u64 key[2] = { settings.hash_key[0], settings.hash_key[1] };
	__u32 bit = sluice_quota_bit(key, k0, k1, settings.standing_set_mask);

	return bpf_map_lookup_elem(&prefix_count, &bit);
}

/*
 * Grant the source of this hash standing for `ask` (sluice_grant_ask: the
 * reason, and a UDP grant's peer port), stamped now: unless its penalty runs
 * (it lost standing for flooding, or an operator revoked it), unless it is
 * new and its prefix is closed to its proof (sluice_prefix_closed: a new
 * source granted is counted in its prefix's word at once), and only into a way
 * sluice_standing_victim lets it take. (k0, k1) is the source as kept_source()
 * records it. A global function, verified once: the feeders, the cookie path
 * and observed standing all grant through it (its arguments are scalars:
 * under sluice_xdp and sluice_cookie it has almost no stack left). Returns 1
 * when granted (or refreshed).
 */
__noinline int sluice_grant(__u64 hash, __u64 now, __u64 k0, __u64 k1, __u32 ask)
{
	__u32 idx = sluice_standing_set_of(hash, settings.standing_set_mask);
	__u32 pidx = sluice_standing_set_of(hash, settings.penalty_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &idx);
	const struct sluice_penalty_set *pen = bpf_map_lookup_elem(&standing_penalty, &pidx);
	__u32 fp = sluice_standing_fingerprint(hash), stamp = sluice_standing_stamp(now);

	if (!set || !pen || sluice_penalized(pen, fp, stamp))
		return 0;
	__u32 proof = sluice_standing_proof(ask & 0xffu);
	__u32 *count = NULL;

	if (sluice_standing_find(set, fp, stamp, settings.standing_lapse_ticks) < 0) {
		__u32 zero = 0;
		const struct sluice_config *cfg = bpf_map_lookup_elem(&config, &zero);

		count = prefix_count_of(k0, k1);
		if (!cfg || !count || sluice_prefix_closed(*count, cfg->prefix_quota, proof))
			return 0;
	}
	if (sluice_standing_grant_from(set, fp, stamp, settings.standing_lapse_ticks, ask & 0xffu, k0, k1,
				       ask >> 16) < 0)
		return 0;
	if (count)
		__sync_fetch_and_add(count, sluice_prefix_count(1, proof == SLUICE_PROOF_HANDSHAKE));
	return 1;
}

/* Observed standing: a frame its slot pair passed while serving counts its
 * source's tick, once a tick; a source without standing that reaches
 * observe_periods distinct ticks is granted it. The standing table is read
 * only for a tick not counted yet, and not refreshed (serving traffic does
 * not keep standing alive; only grants and shedding do).
 * A global function, so that the verifier checks it once on its own: inlined
 * into judge(), its 8-way loops multiply the states of every path before it
 * past the verifier's limit. The verifier drops the call (and the
 * function's work) when observed standing is off. */
__noinline int sluice_observe(__u64 hash, __u64 now, __u64 w0, __u64 w1, __u32 is_v6)
{
	__u32 idx = sluice_standing_set_of(hash, settings.observe_set_mask);
	struct sluice_observed_set *o = bpf_map_lookup_elem(&observed, &idx);

	if (!o)
		return 0;
	__u32 stamp = sluice_standing_stamp(now);
	__u32 fp = sluice_standing_fingerprint(hash);

	if (sluice_observed_seen_now(o, fp, stamp))
		return 0;
	__u32 sidx = sluice_standing_set_of(hash, settings.standing_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &sidx);

	if (!set || sluice_standing_find(set, fp, stamp, settings.standing_lapse_ticks) >= 0)
		return 0; /* has standing (for some frames, at least): nothing to earn */
	if (!sluice_observed_count(o, fp, stamp, settings.standing_lapse_ticks, settings.observe_periods))
		return 0;
	struct sluice_source src = { .w = { w0, w1 } };
	__u64 kept[2];

	kept_source(&src, is_v6, kept);
	return sluice_grant(hash, now, kept[0], kept[1], sluice_grant_ask(SLUICE_BY_OBSERVED, 0));
}

#endif /* SLUICE_STANDING_PATH_BPF_H */
