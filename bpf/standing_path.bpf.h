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

/* The standing set of the source of this hash, and in *way the way that
 * holds it live; NULL if it has no standing. A live entry older than an
 * eighth of the lapse time is stamped again (by compare-and-swap: an entry
 * another CPU replaced meanwhile is left alone), so a source that keeps
 * sending keeps its standing. */
static __always_inline struct sluice_standing_set *standing_of(__u64 hash, __u64 now, __u32 *way)
{
	__u32 idx = sluice_standing_set_of(hash, settings.standing_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &idx);

	if (!set)
		return NULL; /* cannot happen: standing_set_mask < max_entries */
	__u32 stamp = sluice_standing_stamp(now);
	__u32 fp = sluice_standing_fingerprint(hash);
	int w = sluice_standing_find(set, fp, stamp, settings.standing_lapse_ticks);

	if (w < 0)
		return NULL;
	*way = w & (SLUICE_STANDING_WAYS - 1);
	__u64 *e = &set->way[*way];
	__u64 old = *e;

	if (sluice_standing_needs_refresh(old, stamp, settings.standing_lapse_ticks))
		__sync_val_compare_and_swap(e, old, sluice_standing_entry(fp, stamp));
	return set;
}

/* A source (as the frame or the socket has it) as a grant records it:
 * masked to the configured prefix, in sluice_standing_source's 16 bytes. */
static __always_inline void kept_source(const struct sluice_source *src, int is_v6, __u64 out[2])
{
	struct sluice_source m = *src;

	sluice_mask_source(&m, is_v6, &settings);
	sluice_standing_source(m.w[0], m.w[1], is_v6, out);
}

/*
 * Grant the source of this hash standing for `reason`, stamped now: unless
 * its penalty runs (it lost standing for flooding, or an operator revoked
 * it), and only into a way sluice_standing_victim lets it take. (k0, k1) is
 * the source as kept_source() records it. A global function, verified once:
 * the feeders, the cookie path and observed standing all grant through it
 * (its arguments are scalars: under sluice_xdp and sluice_cookie it has
 * almost no stack left). Returns 1 when granted (or refreshed).
 */
__noinline int sluice_grant(__u64 hash, __u64 now, __u64 k0, __u64 k1, __u32 reason)
{
	__u32 idx = sluice_standing_set_of(hash, settings.standing_set_mask);
	__u32 pidx = sluice_standing_set_of(hash, settings.penalty_set_mask);
	struct sluice_standing_set *set = bpf_map_lookup_elem(&standing, &idx);
	const struct sluice_penalty_set *pen = bpf_map_lookup_elem(&standing_penalty, &pidx);
	__u32 fp = sluice_standing_fingerprint(hash), stamp = sluice_standing_stamp(now);

	if (!set || !pen || sluice_penalized(pen, fp, stamp))
		return 0;
	return sluice_standing_grant_from(set, fp, stamp, settings.standing_lapse_ticks, reason, k0, k1) >= 0;
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
		return 0; /* has standing: nothing to earn */
	if (!sluice_observed_count(o, fp, stamp, settings.standing_lapse_ticks, settings.observe_periods))
		return 0;
	struct sluice_source src = { .w = { w0, w1 } };
	__u64 kept[2];

	kept_source(&src, is_v6, kept);
	return sluice_grant(hash, now, kept[0], kept[1], SLUICE_BY_OBSERVED);
}

#endif /* SLUICE_STANDING_PATH_BPF_H */
