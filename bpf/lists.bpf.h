/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lists.bpf.h - the policy's prefix tries (allow, deny, class prefixes),
 * looked up by the whole key: the policy set's byte and the source address;
 * and the deny list's whole addresses, by exact match.
 */
#ifndef SLUICE_LISTS_BPF_H
#define SLUICE_LISTS_BPF_H

/* The source's entry in policy set `set` of the v4 or v6 LPM trie (a list,
 * or the class prefixes), NULL if none: the whole key, set byte and address,
 * is asked. */
static __always_inline void *lpm_lookup(void *v4_map, void *v6_map, const struct sluice_source *src,
					int is_v6, __u32 set)
{
	if (is_v6) {
		struct sluice_lpm_v6 k = { .prefixlen = SLUICE_LPM_SET_BITS + 128, .set = set };

		__builtin_memcpy(k.addr, src->w, 16);
		return bpf_map_lookup_elem(v6_map, &k);
	}
	struct sluice_lpm_v4 k4 = { .prefixlen = SLUICE_LPM_SET_BITS + 32, .set = set };

	__builtin_memcpy(k4.addr, src->w, 4);
	return bpf_map_lookup_elem(v4_map, &k4);
}

/* Is the source in the v4 or v6 list of policy set `set`? */
static __always_inline int listed(void *v4_map, void *v6_map, const struct sluice_source *src,
				  int is_v6, __u32 set)
{
	return lpm_lookup(v4_map, v6_map, src, is_v6, set) != NULL;
}

/* Is the source one of the whole addresses of the deny list of the policy
 * set in `flags` (deny_exact_v4/_v6)? Each family its own key and call: the
 * verifier inlines a hash lookup only where one call site sees one map. */
static __always_inline int denied_exactly(const struct sluice_source *src, int is_v6, __u32 flags)
{
	if (is_v6) {
		struct sluice_exact_v6 k;

		__builtin_memcpy(k.addr, src->w, 16);
		k.set = SLUICE_POLICY_SET_OF(flags);
		return bpf_map_lookup_elem(&deny_exact_v6, &k) != NULL;
	}
	struct sluice_exact_v4 k4;

	__builtin_memcpy(k4.addr, src->w, 4);
	k4.set = SLUICE_POLICY_SET_OF(flags);
	return bpf_map_lookup_elem(&deny_exact_v4, &k4) != NULL;
}

/* The deny list of the set in force: its whole addresses by one hash lookup,
 * its shorter prefixes in the trie; each only when the flags say it holds
 * some. */
static __always_inline int denied(__u32 flags, const struct sluice_source *src, int is_v6)
{
	if ((flags & (is_v6 ? SLUICE_LIST_DENY_EXACT_V6 : SLUICE_LIST_DENY_EXACT_V4)) &&
	    denied_exactly(src, is_v6, flags))
		return 1;
	return (flags & (is_v6 ? SLUICE_LIST_DENY_V6 : SLUICE_LIST_DENY_V4)) &&
	       listed(&deny_v4, &deny_v6, src, is_v6, SLUICE_POLICY_SET_OF(flags));
}

#endif /* SLUICE_LISTS_BPF_H */
