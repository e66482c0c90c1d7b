/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cookie_path.bpf.h - SYN cookies from XDP: the listener port hint, the
 * cookie path itself (sluice_cookie) and where a frame takes it. The SYN-ACK's
 * bytes are cookie.h's (helper-free); this header calls the kernel's helpers.
 */
#ifndef SLUICE_COOKIE_PATH_BPF_H
#define SLUICE_COOKIE_PATH_BPF_H

/* Has TCP port `port` (host order) had a listener? */
static __always_inline int port_listened(__u32 port)
{
	__u32 word = sluice_listen_port_word(port);
	const __u64 *bits = bpf_map_lookup_elem(&listen_ports, &word);

	return bits && (*bits & sluice_listen_port_bit(port));
}

/*
 * SYN cookies (docs/architecture.md, "SYN cookies"): a TCP frame of a source
 * without standing, while cookies are in force (cookie_mode; the caller
 * checked the mode, the allowlist, the valve, and, unless check_standing asks
 * for it here, standing). Returns an outcome, or SLUICE_OUTCOMES: not the
 * cookie path's frame, on to the newcomer budget (or the buckets) as before.
 *   SYN (no ACK, RST or FIN) to a port that had a listener: this CPU's
 *     cookie budget spent -> drop_cookie_budget; else, with a
 *     per-destination bound (config.cookie_dest_cost_ns), the bucket of the
 *     SYN's source /24 or /48 (cookie_dest) empty -> drop_cookie_reflect:
 *     both before the socket lookup (most of the path's cost: a SYN flood
 *     past either pays little more than a shed frame). Else, to a listener
 *     (bpf_skc_lookup_tcp finds one in this namespace): the kernel makes the
 *     cookie with the listener's own secret (bpf_tcp_gen_syncookie; it also
 *     marks the listener, so the stack accepts the ACK), the network's
 *     bucket pays (by compare-and-swap: another CPU may have taken its last
 *     token since -> drop_cookie_reflect), then the budget, cookie.h builds
 *     the SYN-ACK in place of the SYN -> cookie_sent (XDP_TX). No listener
 *     any more, or the kernel will not make a cookie (net.ipv4.tcp_syncookies
 *     is not 2, the accept queue is full): on, nothing paid.
 *   Every SYN to such a port past both budgets stamps its source's
 *     cookie_syns slot (stamp_syn) before the lookup, whatever follows.
 *   ACK (no SYN or RST) to a port that had a listener, with
 *     config.cookie_acks_unlooked (the standing feeders attached): from
 *     config.cookie_acks_stamped_from on, no SYN stamp of its source's slot
 *     in the last 2 minutes and more -> drop_cookie, unchecked; else the
 *     kernel's cookie check on the headers alone (bpf_tcp_raw_check_syncookie_*:
 *     the same secret and the same two minutes as the listener's own check,
 *     no socket lookup) -> valid: the source is granted standing (cookie)
 *     and the ACK passed to the stack, which checks the same cookie and
 *     makes the connection -> cookie_proved; not valid -> drop_cookie. No
 *     lookup for a connection the host has: the feeders give every
 *     connection's peer standing as it is made (sluiced's sock_diag scan the
 *     older ones), so their ACKs never come here, and a forged ACK flood pays
 *     the check alone. Without the flag, the lookup first: to a listener,
 *     bpf_tcp_check_syncookie, valid or not as above; to a connection the
 *     host has (or no socket): on.
 *   TCP the reply cannot be built from (IPv4 options or a fragment, IPv6
 *     extension headers, a cut TCP header) -> drop_cookie_unfit: never
 *     passed unproved.
 * A global function, verified and compiled once on its own: it finds the
 * frame again from ctx (parse.h, no helper). It may move the frame's tail:
 * the caller's packet pointers are stale after it.
 */
#define SLUICE_COOKIE_GO_ON SLUICE_OUTCOMES

/* The SYN's TCP header length as kept in the scratch, in the bounds the
 * verifier must see at each helper that reads it (20..60; checked before). */
static __always_inline __u32 scratch_tcp_len(const struct cookie_scratch *s)
{
	__u32 len = s->tcp_len;

	if (len < 20)
		len = 20;
	if (len > SLUICE_TCP_HDR_MAX)
		len = SLUICE_TCP_HDR_MAX;
	return len;
}

/* bpf_loop's walk of the SYN's options (cookie.h, one option a call): a
 * plain loop of 40 with a branch per option kind is past the verifier's
 * million instructions. Its state is in the scratch, not on the stack. */
static long syn_option_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct cookie_scratch *s = bpf_map_lookup_elem(&cookie_scratch, &zero);

	return s ? sluice_syn_option_at(s->th, s->tcp_len, &s->off, &s->opts) : 1;
}

/* Does the bucket of the network this SYN's SYN-ACK would go to (its
 * source's /24 or /48, sluice_dest_slot) hold a token? Asked before the
 * socket lookup, taken (dest_take) only once the SYN-ACK is made. Its slot
 * is kept in the scratch for dest_take; COOKIE_DEST_UNASKED there: no bound
 * was asked for this SYN (the config is read again later, and may have
 * changed in between). */
#define COOKIE_DEST_UNASKED SLUICE_COOKIE_DEST_SLOTS
static __always_inline int dest_token_seen(struct cookie_scratch *s, int is_v6, const struct sluice_config *cfg)
{
	__u64 key[2] = { settings.hash_key[0], settings.hash_key[1] };

	s->dest_slot = sluice_dest_slot(key, &s->src, is_v6);
	struct sluice_slot *d = bpf_map_lookup_elem(&cookie_dest, &s->dest_slot);
	__u64 cost = cfg->cookie_dest_cost_ns;

	return d && sluice_take1(SLUICE_READ_ONCE(d->empty_at), s->now, cost, cost * cfg->cookie_dest_burst);
}

/* Take the network's token: by compare-and-swap (bucket.h, sluice_admit1),
 * as the CPUs share the slot, so every SYN-ACK sent takes a token its slot
 * held and 0 <= tokens <= burst at every write; 0 when another CPU took the
 * last one since dest_token_seen. */
static __always_inline int dest_take(struct cookie_scratch *s, const struct sluice_config *cfg)
{
	struct sluice_slot *d = bpf_map_lookup_elem(&cookie_dest, &s->dest_slot);
	__u64 cost = cfg->cookie_dest_cost_ns;

	return d && sluice_admit1(&d->empty_at, s->now, cost, cost * cfg->cookie_dest_burst);
}

/* The cookie_syns byte of the source whose plain hash is `hash`. */
static __always_inline __u8 *syn_stamp(__u64 hash)
{
	__u32 slot = sluice_syn_stamp_slot(hash);
	__u32 word = slot / SLUICE_COOKIE_SYN_PER_WORD;
	__u8 *w = bpf_map_lookup_elem(&cookie_syns, &word);

	return w ? w + (slot & (SLUICE_COOKIE_SYN_PER_WORD - 1)) : 0;
}

/* A SYN to a listened port past both budgets (answered by the program, or
 * on to the stack): its source's slot stamped with this tick (a store only
 * when the tick moved on: a SYN flood from few sources writes the line once
 * a tick, not once a frame). A SYN either budget refused is answered by
 * nobody: no stamp, so a flood past the budget stamps nothing. */
static __always_inline void stamp_syn(__u64 hash, __u64 now)
{
	__u8 *stamp = syn_stamp(hash);
	__u8 v = sluice_syn_stamp_of(now);

	if (stamp && *stamp != v)
		*stamp = v;
}

/* Has a SYN from this source's slot been seen while its cookie could still
 * be good (cookie.h, sluice_syn_stamp_recent)? */
static __always_inline int syn_stamped(__u64 hash, __u64 now)
{
	const __u8 *stamp = syn_stamp(hash);

	return stamp && sluice_syn_stamp_recent(*stamp, now);
}

/* A valid cookie ACK: its source granted standing (cookie). The record's
 * source is made in the scratch: no stack is left in sluice_cookie. */
static __always_inline __u32 cookie_proved(struct cookie_scratch *s)
{
	sluice_mask_source(&s->src, s->is_v6, &settings);
	sluice_standing_source(s->src.w[0], s->src.w[1], s->is_v6, s->kept);
	sluice_grant(s->hash, s->now, s->kept[0], s->kept[1], sluice_grant_ask(SLUICE_BY_COOKIE, 0));
	return SLUICE_COOKIE_PROVED;
}

/* Whether the cookie path has nothing to do with this frame, known without
 * calling it: sluice_cookie returns SLUICE_COOKIE_GO_ON for every frame
 * that is surely not TCP (parse.h), after a call and a second parse. */
static __always_inline int cookie_path_skips(struct xdp_md *ctx)
{
	return sluice_surely_not_tcp((const __u8 *)(long)ctx->data, (const __u8 *)(long)ctx->data_end);
}

__noinline __u32 sluice_cookie(struct xdp_md *ctx, __u64 hash, __u64 now, __u32 check_standing)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	__u32 zero = 0, ip_len, w = 0;
	struct cookie_scratch *s = bpf_map_lookup_elem(&cookie_scratch, &zero);
	const struct sluice_config *cfg = bpf_map_lookup_elem(&config, &zero);
	const __u8 *l3 = data;
	int unfit = 0;

	if (!s || !cfg)
		return SLUICE_COOKIE_GO_ON; /* cannot happen: one-element arrays */
	/* Cookies off (or a dry run, which never sends one): only the SYN-ACK
	 * of a connection the host opens is this path's; every other frame goes
	 * on as if the path were not here. */
	int replies_only = cfg->cookie_mode == SLUICE_COOKIES_OFF || settings.dry_run;
	s->hash = hash;
	s->now = now;
	s->frame_len = (__u32)(end - data);
	int kind = sluice_parse_at(data, end, &s->src, &l3);
	int is_v6 = kind == SLUICE_PARSE_IPV6;

	if (kind != SLUICE_PARSE_IPV4 && !is_v6)
		return SLUICE_COOKIE_GO_ON;
	if (!is_v6) {
		if (l3 + 20 > end || l3[9] != SLUICE_IPPROTO_TCP)
			return SLUICE_COOKIE_GO_ON;
		/* options (IHL > 5), or a fragment (MF, or an offset) */
		unfit = l3[0] != 0x45 || (sluice_be16_at(l3 + 6) & 0x3fff);
		ip_len = 20;
	} else {
		if (l3 + 40 > end)
			return SLUICE_COOKIE_GO_ON;
		if (l3[6] != SLUICE_IPPROTO_TCP) {
			if (!sluice_ipv6_ext(l3[6]) || sluice_parse_l4(l3, end, 1, &s->l4))
				return SLUICE_COOKIE_GO_ON;
			/* TCP behind extension headers, or a fragment of it */
			if (s->l4.kind != SLUICE_L4_TCP && s->l4.kind != SLUICE_L4_TCP_SYN &&
			    !(s->l4.kind == SLUICE_L4_IP && s->l4.port == SLUICE_IPPROTO_TCP))
				return SLUICE_COOKIE_GO_ON;
			unfit = 1;
		}
		ip_len = 40;
	}
	if (check_standing && standing_of(ctx, hash, now, &w))
		return SLUICE_COOKIE_GO_ON;
	if (unfit)
		return replies_only ? SLUICE_COOKIE_GO_ON : SLUICE_DROP_COOKIE_UNFIT;

	const __u8 *th = l3 + ip_len;

	if (th + 20 > end)
		return replies_only ? SLUICE_COOKIE_GO_ON : SLUICE_DROP_COOKIE_UNFIT;
	__u8 fl = th[13];
	__u8 flags4 = fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST | SLUICE_TCP_FLAG_FIN);
	int syn = flags4 == SLUICE_TCP_FLAG_SYN;
	int ack = (fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST)) == SLUICE_TCP_FLAG_ACK;
	/* A SYN-ACK: the reply to a SYN a local socket sent, or a forgery. */
	int synack = flags4 == (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK);

	if (synack ? 0 : (replies_only || (!syn && !ack)))
		return SLUICE_COOKIE_GO_ON;
	__u32 tcp_len = (__u32)(th[12] >> 4) * 4;

	if (tcp_len < 20 || (long)(th - data) + tcp_len > (long)(end - data))
		return replies_only || synack ? SLUICE_COOKIE_GO_ON : SLUICE_DROP_COOKIE_UNFIT;
	/* No listener has been on the port: no socket to find (figure 1: the
	 * lookup is most of the cost of a SYN flood's frame to a closed port).
	 * After the unfit checks, which hold whatever the port. A SYN-ACK
	 * comes to the ephemeral port of a connect(): looked up whatever. */
	if (!synack && !port_listened(sluice_be16_at(th + 2)))
		return SLUICE_COOKIE_GO_ON;
	if (ack && cfg->cookie_acks_unlooked) {
		/* No SYN from this source's slot in the cookie's lifetime: no
		 * cookie this host could have sent, refused before the check
		 * (most of a forged ACK's cost). */
		__u64 from = cfg->cookie_acks_stamped_from;

		if (from && now >= from && !syn_stamped(hash, now))
			return SLUICE_DROP_COOKIE;
		/* Packet pointers: both headers were checked whole above. */
		long r = is_v6 ? bpf_tcp_raw_check_syncookie_ipv6((struct ipv6hdr *)l3, (struct tcphdr *)th)
			       : bpf_tcp_raw_check_syncookie_ipv4((struct iphdr *)l3, (struct tcphdr *)th);

		if (r)
			return SLUICE_DROP_COOKIE;
		s->is_v6 = is_v6;
		return cookie_proved(s);
	}
	/* A SYN: the budget and the network's bound asked before the lookup.
	 * The budget's token is taken only once the kernel made the cookie (one
	 * CPU's bucket, one frame at a time on it: the token seen here is still
	 * there to take then); the network's likewise, by dest_take. */
	struct sluice_slot *b = 0;
	__u64 paid = 0;

	if (syn) {
		b = bpf_map_lookup_elem(&cookie_budget, &zero);
		paid = b ? sluice_take1(b->empty_at, now, cfg->cookie_cost_ns,
					cfg->cookie_burst * cfg->cookie_cost_ns)
			 : 0;
		if (!paid)
			return SLUICE_DROP_COOKIE_BUDGET;
		s->dest_slot = COOKIE_DEST_UNASKED;
		if (cfg->cookie_dest_cost_ns && !dest_token_seen(s, is_v6, cfg))
			return SLUICE_DROP_COOKIE_REFLECT;
		stamp_syn(s->hash, s->now);
	}

	struct bpf_sock_tuple *t = &s->tuple;
	__u32 tuple_len;

	__builtin_memset(t, 0, sizeof(*t));
	if (!is_v6) {
		t->ipv4.saddr = SLUICE_LOAD(__u32, l3 + 12);
		t->ipv4.daddr = SLUICE_LOAD(__u32, l3 + 16);
		t->ipv4.sport = SLUICE_LOAD(__u16, th);
		t->ipv4.dport = SLUICE_LOAD(__u16, th + 2);
		tuple_len = sizeof(t->ipv4);
	} else {
		__builtin_memcpy(t->ipv6.saddr, l3 + 8, 16);
		__builtin_memcpy(t->ipv6.daddr, l3 + 24, 16);
		t->ipv6.sport = SLUICE_LOAD(__u16, th);
		t->ipv6.dport = SLUICE_LOAD(__u16, th + 2);
		tuple_len = sizeof(t->ipv6);
	}
	s->l3_off = (__u32)(l3 - data) & 0xff;
	s->ip_len = ip_len;
	s->is_v6 = is_v6;
	s->ack = ack;
	s->tcp_len = tcp_len & 0x3c;
	struct bpf_sock *sk = bpf_skc_lookup_tcp(ctx, t, tuple_len, BPF_F_CURRENT_NETNS, 0);

	if (!sk)
		return SLUICE_COOKIE_GO_ON;
	if (synack) {
		/* The connection the host is opening: admitted because a local
		 * socket sent the SYN it answers (connect() grants nothing). */
		int ours = sk->state == BPF_TCP_SYN_SENT;

		bpf_sk_release(sk);
		return ours ? SLUICE_REPLY : SLUICE_COOKIE_GO_ON;
	}
	if (sk->state != BPF_TCP_LISTEN) {
		bpf_sk_release(sk);
		return SLUICE_COOKIE_GO_ON;
	}
	if (bpf_xdp_load_bytes(ctx, s->l3_off, s->ip, s->is_v6 ? 40 : 20) ||
	    bpf_xdp_load_bytes(ctx, s->l3_off + s->ip_len, s->th, scratch_tcp_len(s))) {
		bpf_sk_release(sk);
		return SLUICE_DROP_COOKIE_UNFIT; /* cannot happen: both were checked whole */
	}
	if (s->ack) {
		long r = bpf_tcp_check_syncookie(sk, s->ip, (s->is_v6 ? 40 : 20), (struct tcphdr *)s->th, scratch_tcp_len(s));

		bpf_sk_release(sk);
		if (r)
			return SLUICE_DROP_COOKIE;
		return cookie_proved(s);
	}
	/* A SYN, its budget's and its network's tokens seen above */
	__s64 cookie = bpf_tcp_gen_syncookie(sk, s->ip, (s->is_v6 ? 40 : 20), (struct tcphdr *)s->th, scratch_tcp_len(s));

	bpf_sk_release(sk);
	if (cookie < 0)
		return SLUICE_COOKIE_GO_ON;
	if (s->dest_slot != COOKIE_DEST_UNASKED && !dest_take(s, cfg))
		return SLUICE_DROP_COOKIE_REFLECT;
	if (b)
		b->empty_at = paid; /* always: a SYN has its budget */

	s->params.mss = s->is_v6 ? cfg->cookie_mss6 : cfg->cookie_mss4;
	s->params.wscale = cfg->cookie_wscale;
	s->params.flags = cfg->cookie_flags;
	s->off = 20;
	sluice_syn_options_clear(&s->opts);
	bpf_loop(SLUICE_TCP_OPTIONS_MAX, syn_option_step, NULL, 0);
	/* The TSval on CLOCK_MONOTONIC_COARSE, not the data plane's clock
	 * (jiffies, months ahead of it): the stack stamps the connection's later
	 * segments with CLOCK_MONOTONIC ms (tcp_timestamps=2, no offset), and
	 * the client's PAWS check refuses any that look older than this one. */
	__u32 tsval = sluice_cookie_tsval((__u32)(bpf_ktime_get_coarse_ns() / 1000000), &s->opts, &s->params);
	__u32 len = sluice_synack(s->ip, s->th, s->is_v6, (__u32)cookie, tsval, &s->opts, &s->params, s->reply);
	int delta = (int)(s->l3_off + len) - (int)s->frame_len;

	if (bpf_xdp_adjust_tail(ctx, delta))
		return SLUICE_DROP_COOKIE_UNFIT; /* no room to grow the frame into */
	__u8 *d = (__u8 *)(long)ctx->data;
	__u8 *e = (__u8 *)(long)ctx->data_end;

	if (d + 12 > e)
		return SLUICE_DROP_COOKIE_UNFIT;
	/* Ethernet: back where it came from (VLAN tags stay as they are) */
	__u32 dst_hi = SLUICE_LOAD(__u32, d), src_hi = SLUICE_LOAD(__u32, d + 6);
	__u16 dst_lo = SLUICE_LOAD(__u16, d + 4), src_lo = SLUICE_LOAD(__u16, d + 10);

	*(__u32 *)d = src_hi;
	*(__u16 *)(d + 4) = src_lo;
	*(__u32 *)(d + 6) = dst_hi;
	*(__u16 *)(d + 10) = dst_lo;
	if (bpf_xdp_store_bytes(ctx, s->l3_off, s->reply, len & 0x7f))
		return SLUICE_DROP_COOKIE_UNFIT;
	return SLUICE_COOKIE_SENT;
}

/* Where a frame that may take the cookie path takes it. Without a policy,
 * here: shed() calls sluice_cookie. Under one, sluice_judge_policy cannot
 * call it (its frame and sluice_xdp's leave sluice_cookie too little of the
 * 512-byte stack), so the first judgement stops there (defer: the frame
 * counts nothing, SLUICE_COOKIE_DEFERRED | its class comes back), judge()
 * runs the cookie path, and a frame it does not take is judged again with
 * SLUICE_JUDGE_NO_COOKIE in its flags (skip). */
#define SLUICE_COOKIE_HERE 0
#define SLUICE_COOKIE_DEFER 1
#define SLUICE_COOKIE_SKIP 2
#define SLUICE_COOKIE_DEFERRED 0x400 /* sluice_judge_policy's: run the cookie path, class id in the low bits */
#define SLUICE_JUDGE_NO_COOKIE (1u << 30) /* in flags, sluice_judge_policy's second call (no policy flag uses it) */

/* A drop outcome of the cookie path goes to the drop samples like any drop. */
static __always_inline __u32 cookie_outcome(struct xdp_md *ctx, __u32 outcome, const struct sluice_source *src,
					    int is_v6)
{
	if (outcome == SLUICE_COOKIE_SENT || outcome == SLUICE_COOKIE_PROVED || outcome == SLUICE_REPLY)
		return outcome;
	return sampled_drop(ctx, src, is_v6, outcome);
}

#endif /* SLUICE_COOKIE_PATH_BPF_H */
