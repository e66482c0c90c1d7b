/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * policy_path.bpf.h - the policy judgement: a frame's class (the class
 * prefixes, the port table), its action and its class's budgets
 * (sluice_judge_policy), and port rules' inline class of a plain frame.
 */
#ifndef SLUICE_POLICY_PATH_BPF_H
#define SLUICE_POLICY_PATH_BPF_H

/*
 * A frame's class in policy set `set` of flags (sluice_abi.h, "the frame's
 * way"): the class prefix entry of its source, matched on (kind, port)
 * (class_match.h); no entry or no match, the port table; else the default.
 * l4 is kind << 16 | port. A global function, verified once on its own:
 * its match loop would multiply every path's states after it.
 */
__noinline __u32 sluice_classify(__u32 flags, __u32 l4, __u64 w0, __u64 w1, __u32 is_v6)
{
	__u32 set = SLUICE_POLICY_SET_OF(flags);
	__u32 kind = l4 >> 16, port = l4 & 0xffff;
	__u32 id = SLUICE_CLASS_NO_MATCH;

	if (flags & (is_v6 ? SLUICE_CLASS_PREFIX_V6 : SLUICE_CLASS_PREFIX_V4)) {
		struct sluice_source src = { .w = { w0, w1 } };
		const struct sluice_class_matches *m = lpm_lookup(&class_v4, &class_v6, &src, is_v6, set);

		if (m)
			id = sluice_match_class(m, kind, port);
	}
	if (id == SLUICE_CLASS_NO_MATCH) {
		id = SLUICE_CLASS_DEFAULT;
		if (flags & SLUICE_CLASS_PORTS) {
			__u32 idx = sluice_port_block_index(set, kind, port);
			const struct sluice_port_block *b = bpf_map_lookup_elem(&port_classes, &idx);

			if (b)
				id = sluice_port_block_class(b, port);
		}
	}
	/* One id for the record, the counters and the key alike. */
	return id & (SLUICE_CLASSES_MAX - 1);
}

/*
 * The verdict of an IP frame under a policy (a SLUICE_CLASS_* flag set in
 * `flags`, read once by the caller), as an outcome: the deny list, its
 * class, the class's action, its buckets; and its class's counter (the
 * default class's when it has none, or none yet: listed, or malformed past
 * L3), so that every IP frame is counted under one class.
 *
 * A global function, verified on its own and compiled on its own: inlined
 * into sluice_xdp, the class path's registers and stack cost the path
 * without a policy several ns a frame (measured), though it never runs
 * there. So it finds the frame again from ctx (parse.h once more, no
 * helper) and config (an inlined array lookup); the flags are the caller's,
 * and so is port_id: the class judge()'s port_class already read from the
 * port table (a plain header under port rules only), or SLUICE_CLASS_NO_MATCH
 * to find it here from L4 (sluice_parse_l4, sluice_classify).
 * Observed standing's count of a frame it passed is left to the caller
 * (SLUICE_OBSERVE_DEFERRED): called from here, sluice_observe and its grant
 * would stack four frames past the verifier's 512 bytes.
 */
/* sluice_parse_l4's (kind, port) as sluice_classify takes it, kind << 16 |
 * port; -1: malformed. Called, so that its result comes back in a register:
 * the struct on sluice_judge_policy's stack took the 8 bytes that the
 * standing lookup's call needs under the verifier's 512. */
static __noinline __s64 l4_key(const __u8 *l3, const void *data_end, int is_v6)
{
	struct sluice_l4 l4;

	if (sluice_parse_l4(l3, data_end, is_v6, &l4))
		return -1;
	return l4.kind << 16 | (l4.port & 0xffff);
}

#define SLUICE_OBSERVE_DEFERRED 0x100 /* sluice_judge_policy's: observed standing counts this frame */

__noinline __u32 sluice_judge_policy(struct xdp_md *ctx, __u32 flags, __u32 port_id)
{
	const void *data = (const void *)(long)ctx->data;
	const void *data_end = (const void *)(long)ctx->data_end;
	__u64 bytes = data_end - data;
	struct sluice_source src;
	const __u8 *l3 = data;
	__u32 outcome;
	int kind = sluice_parse_at(data, data_end, &src, &l3);
	int is_v6 = kind == SLUICE_PARSE_IPV6;
	int observe = 0;

	if (kind != SLUICE_PARSE_IPV4 && kind != SLUICE_PARSE_IPV6)
		return SLUICE_MALFORMED; /* cannot happen: the caller parsed it so */
	const struct sluice_config *cfg = bpf_map_lookup_elem(&config, (const void *)&settings.zero_key);

	if (!cfg)
		return SLUICE_PASSED; /* cannot happen: a one-element array */

	const struct sluice_class *rec = NULL;
	__u32 pset = SLUICE_POLICY_SET_OF(flags);
	__u32 id = SLUICE_CLASS_DEFAULT;

	if (denied(flags, &src, is_v6)) {
		outcome = sampled_drop(ctx, &src, is_v6, SLUICE_DROP_DENY);
		goto counted;
	}
	/* The class: found already, or L4 parsed only for rules that need it. */
	if (port_id != SLUICE_CLASS_NO_MATCH) {
		id = port_id & (SLUICE_CLASSES_MAX - 1);
	} else if (flags & (SLUICE_CLASS_PORTS | (is_v6 ? SLUICE_CLASS_PREFIX_V6 : SLUICE_CLASS_PREFIX_V4))) {
		__s64 l4 = l4_key(l3, data_end, is_v6);

		if (l4 < 0) {
			outcome = SLUICE_MALFORMED;
			goto counted;
		}
		id = sluice_classify(flags, (__u32)l4, src.w[0], src.w[1], is_v6);
	}
	if (id != SLUICE_CLASS_DEFAULT || (flags & SLUICE_CLASS_DEFAULT_BYTES)) {
		__u32 idx = sluice_class_index(pset, id);

		rec = bpf_map_lookup_elem(&classes, &idx);
	}
	/* A limit class without a packet budget is a record never written:
	 * its frames are the default class's. (Exempt and deny records carry
	 * only their action: logic/class_tables writes no budget for them.) */
	if (id != SLUICE_CLASS_DEFAULT && (!rec || (rec->action == SLUICE_CLASS_LIMIT && rec->cost_ns == 0)))
		id = SLUICE_CLASS_DEFAULT;
	if (id != SLUICE_CLASS_DEFAULT && rec && rec->action == SLUICE_CLASS_DENY)
		outcome = sampled_drop(ctx, &src, is_v6, SLUICE_DROP_CLASS);
	else if (id != SLUICE_CLASS_DEFAULT && rec && rec->action == SLUICE_CLASS_EXEMPT)
		outcome = SLUICE_EXEMPT;
	else /* one copy for every class: the default's record only for its byte budget */
		outcome = judge_buckets(ctx, cfg, flags, &src, is_v6, bytes,
					id != SLUICE_CLASS_DEFAULT || (flags & SLUICE_CLASS_DEFAULT_BYTES) ? rec : NULL, id,
					&observe,
					(flags & SLUICE_JUDGE_NO_COOKIE) ? SLUICE_COOKIE_SKIP : SLUICE_COOKIE_DEFER);
	if (outcome == SLUICE_COOKIE_DEFERRED)
		return SLUICE_COOKIE_DEFERRED | id; /* counted by judge(), or by the second call */
counted:
	count_class(id, outcome, bytes);
	if (settings.dry_run && !passes(outcome))
		count_class(id, SLUICE_WOULD_DROP, bytes);
	return outcome | (observe ? SLUICE_OBSERVE_DEFERRED : 0);
}

/*
 * Port rules only (issue 12: at most +3 ns), the common frame's class, read
 * here: only an Ethernet frame without VLAN tags carrying IPv4 without
 * options and not a fragment, or IPv6 without extension headers, and TCP or
 * UDP whole (parse.h's sluice_parse_transport, the (kind, port) that
 * sluice_parse_l4 finds for it too); its port_classes entry (an array: the
 * lookup is inlined). Anything else is SLUICE_CLASS_NO_MATCH, and
 * sluice_judge_policy finds its class the whole way (sluice_parse_l4,
 * sluice_classify). Read again from ctx, not from sluice_parse_at's l3: a
 * register kept live for it would cost the path without a policy.
 */
static __always_inline __u32 port_class(struct xdp_md *ctx, __u32 flags, int is_v6)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	const __u8 *ip = data + 14, *l4;
	struct sluice_l4 t;
	__u32 proto;

	if (!is_v6) {
		l4 = ip + 20;
		/* 0x45: version 4, IHL 5 (no options); the ethertype as loaded
		 * little-endian (08 00) */
		if (l4 > end || SLUICE_LOAD(__u16, data + 12) != 0x0008 || ip[0] != 0x45 ||
		    sluice_ipv4_later_fragment(ip))
			return SLUICE_CLASS_NO_MATCH;
		proto = ip[9];
	} else {
		l4 = ip + 40;
		if (l4 > end || SLUICE_LOAD(__u16, data + 12) != 0xdd86)
			return SLUICE_CLASS_NO_MATCH;
		proto = ip[6];
	}
	/* SLUICE_L4_IP here is ICMP and the like, or (IPv6) an extension header */
	if (sluice_parse_transport(l4, end, proto, &t) || t.kind == SLUICE_L4_IP)
		return SLUICE_CLASS_NO_MATCH;
	__u32 idx = sluice_port_block_index(SLUICE_POLICY_SET_OF(flags), t.kind, t.port);
	const struct sluice_port_block *b = bpf_map_lookup_elem(&port_classes, &idx);

	return b ? sluice_port_block_class(b, t.port) & (SLUICE_CLASSES_MAX - 1) : SLUICE_CLASS_NO_MATCH;
}

#endif /* SLUICE_POLICY_PATH_BPF_H */
