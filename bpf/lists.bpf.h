/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lists.bpf.h - the policy's prefix tries (allow, deny, class prefixes),
 * looked up by the whole key: the policy set's byte and the source address;
 * and the lists' whole addresses, by exact match.
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

/* Is the source one of a list's whole addresses (deny_exact_v4/_v6,
 * allow_exact_v4/_v6), in the policy set of `flags`? Each family its own
 * key and call: the verifier inlines a hash lookup only where one call site
 * sees one map (a key shared in a union let LLVM merge the two calls, and
 * the lookup cost 27 ns, not 15). */
static __always_inline int exactly_listed(void *v4_map, void *v6_map, const struct sluice_source *src, int is_v6,
					  __u32 flags)
{
	if (is_v6) {
		struct sluice_exact_v6 k;

		__builtin_memcpy(k.addr, src->w, 16);
		k.set = SLUICE_POLICY_SET_OF(flags);
		return bpf_map_lookup_elem(v6_map, &k) != NULL;
	}
	struct sluice_exact_v4 k4;

	__builtin_memcpy(k4.addr, src->w, 4);
	k4.set = SLUICE_POLICY_SET_OF(flags);
	return bpf_map_lookup_elem(v4_map, &k4) != NULL;
}

/* The deny list of the set in force: its whole addresses by one hash lookup,
 * its shorter prefixes in the trie; each only when the flags say it holds
 * some. */
static __always_inline int denied(__u32 flags, const struct sluice_source *src, int is_v6)
{
	if ((flags & (is_v6 ? SLUICE_LIST_DENY_EXACT_V6 : SLUICE_LIST_DENY_EXACT_V4)) &&
	    exactly_listed(&deny_exact_v4, &deny_exact_v6, src, is_v6, flags))
		return 1;
	return (flags & (is_v6 ? SLUICE_LIST_DENY_V6 : SLUICE_LIST_DENY_V4)) &&
	       listed(&deny_v4, &deny_v6, src, is_v6, SLUICE_POLICY_SET_OF(flags));
}

/* The allow list of the set in force, the same way (asked only while
 * shedding, where every frame of a flood asks it). The caller asks only
 * when the set's allow list has entries of the frame's family. Global
 * functions: inlined, the keys sat in the frames of both sluice_xdp and
 * sluice_judge_policy (gate() is inlined into each), and the bench's
 * fine- and coarse-clock builds passed the verifier's 512 bytes of stack on
 * their deepest call chain (528). One a family: in one function taking the
 * family as an argument, LLVM merged the two families' lookups into one
 * call site, which the verifier no longer inlines. */
static __always_inline int allowed_in(const struct sluice_source *src, int is_v6, __u32 flags)
{
	if ((flags & (is_v6 ? SLUICE_LIST_ALLOW_EXACT_V6 : SLUICE_LIST_ALLOW_EXACT_V4)) &&
	    exactly_listed(&allow_exact_v4, &allow_exact_v6, src, is_v6, flags))
		return 1;
	return (flags & (is_v6 ? SLUICE_LIST_ALLOW_V6 : SLUICE_LIST_ALLOW_V4)) &&
	       listed(&allow_v4, &allow_v6, src, is_v6, SLUICE_POLICY_SET_OF(flags));
}

__noinline int sluice_allowed_v4(__u32 flags, __u64 w0)
{
	struct sluice_source src = { .w = { w0, 0 } };

	return allowed_in(&src, 0, flags);
}

__noinline int sluice_allowed_v6(__u32 flags, __u64 w0, __u64 w1)
{
	struct sluice_source src = { .w = { w0, w1 } };

	return allowed_in(&src, 1, flags);
}

#endif /* SLUICE_LISTS_BPF_H */
