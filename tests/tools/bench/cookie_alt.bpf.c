// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cookie_alt.bpf.c - benchmark and test only, not part of sluice: the SYN
 * cookie path alone, with nothing of sluice's judgement around it, so that
 * the kernel's ways of making the cookie can be set side by side
 * (docs/architecture.md, "SYN cookies"; figure 10's cost part,
 * tests/netns/test_cookie_alternatives.py).
 *
 *   default             the raw helpers: bpf_tcp_raw_gen_syncookie_ipv4/6
 *                       and bpf_tcp_raw_check_syncookie_ipv4/6, no socket
 *                       lookup. They do not mark the listener's SYN queue
 *                       overflow stamp, which the stack's own check of the
 *                       ACK (cookie_tcp_check) requires.
 *   -DCOOKIE_LISTENER   what sluice does (bpf/cookie_path.bpf.h, sluice_cookie):
 *                       bpf_skc_lookup_tcp for the listener, then
 *                       bpf_tcp_gen_syncookie / bpf_tcp_check_syncookie
 *                       on it (the generator marks the stamp).
 *
 * Both parse as sluice does (parse.h: Ethernet, up to two VLAN tags, IPv4
 * without options or fragments, IPv6 without extension headers), copy the
 * headers into a per-CPU scratch as sluice does, and answer a SYN with the
 * SYN-ACK of bpf/cookie.h (included, not copied) in the SYN's place
 * (XDP_TX). An ACK with a valid cookie is passed up (XDP_PASS), one without
 * is dropped. Anything else passes. What each frame met is counted in
 * `outcomes` (per CPU), so that a test or benchmark can tell the path it
 * timed was the one it meant. Our side's MSS, window scale and option flags
 * are in `params`, written by the loader (sluice-bench).
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>

#include "../../../bpf/parse.h"
#include "../../../bpf/cookie.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* What a frame met (index into `outcomes`). */
enum cookie_alt_outcome {
	ALT_SENT = 0,      /* SYN answered with a SYN-ACK (XDP_TX) */
	ALT_PROVED = 1,    /* ACK with a valid cookie, passed up */
	ALT_FORGED = 2,    /* ACK without one, dropped */
	ALT_NO_COOKIE = 3, /* the helper would not make a cookie (passed) */
	ALT_OTHER = 4,     /* not the cookie path's frame (passed) */
	ALT_UNFIT = 5,     /* cut or unbuildable (dropped) */
	ALT_OUTCOMES = 6,
};

struct cookie_alt_params {
	__u32 mss4, mss6; /* ours */
	__u32 wscale;     /* ours */
	__u32 flags;      /* SLUICE_COOKIE_TS | _SACK | _WSCALE */
	__u32 remember;   /* 1: a connection whose ACK proved its cookie passes after (`proved`) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cookie_alt_params);
} params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ALT_OUTCOMES);
	__type(key, __u32);
	__type(value, __u64);
} outcomes SEC(".maps");

/* The connections (their 4-tuples) whose ACK proved a cookie, with
 * params.remember: the frames after that ACK (the request, the client's
 * ACKs, its FIN) carry later sequence numbers no cookie check accepts, and
 * pass as sluice passes them by standing (or xdp_synproxy by conntrack).
 * Never looked up without params.remember (the cost benchmark). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct bpf_sock_tuple);
	__type(value, __u8);
} proved SEC(".maps");

struct alt_scratch {
	__u8 ip[40];
	__u8 th[SLUICE_TCP_HDR_MAX];
	__u8 reply[SLUICE_SYNACK_MAX];
	struct sluice_syn_options opts;
	struct sluice_cookie_params params;
	struct bpf_sock_tuple tuple;
	struct sluice_source src;
	__u32 tcp_len, off;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct alt_scratch);
} scratch SEC(".maps");

static __always_inline int count(__u32 outcome, int verdict)
{
	__u64 *n = bpf_map_lookup_elem(&outcomes, &outcome);

	if (n)
		*n += 1;
	return verdict;
}

static __always_inline __u32 th_len_of(const struct alt_scratch *s)
{
	__u32 len = s->tcp_len;

	if (len < 20)
		len = 20;
	if (len > SLUICE_TCP_HDR_MAX)
		len = SLUICE_TCP_HDR_MAX;
	return len;
}

/* bpf_loop's walk of the SYN's options (cookie.h, one option a call), as
 * sluice.bpf.c walks them. */
static long option_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct alt_scratch *s = bpf_map_lookup_elem(&scratch, &zero);

	return s ? sluice_syn_option_at(s->th, s->tcp_len, &s->off, &s->opts) : 1;
}

SEC("xdp")
int cookie_alt(struct xdp_md *ctx)
{
	const __u8 *data = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	const __u8 *l3 = data;
	__u32 zero = 0, ip_len;
	struct alt_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	const struct cookie_alt_params *p = bpf_map_lookup_elem(&params, &zero);

	if (!s || !p)
		return XDP_ABORTED;
	__u32 frame_len = (__u32)(end - data);
	int kind = sluice_parse_at(data, end, &s->src, &l3);
	int is_v6 = kind == SLUICE_PARSE_IPV6;

	if (kind != SLUICE_PARSE_IPV4 && !is_v6)
		return count(ALT_OTHER, XDP_PASS);
	if (!is_v6) {
		if (l3 + 20 > end || l3[9] != IPPROTO_TCP)
			return count(ALT_OTHER, XDP_PASS);
		if (l3[0] != 0x45 || (sluice_be16_at(l3 + 6) & 0x3fff))
			return count(ALT_UNFIT, XDP_DROP);
		ip_len = 20;
	} else {
		if (l3 + 40 > end || l3[6] != IPPROTO_TCP)
			return count(ALT_OTHER, XDP_PASS);
		ip_len = 40;
	}
	const __u8 *th = l3 + ip_len;

	if (th + 20 > end)
		return count(ALT_UNFIT, XDP_DROP);
	__u8 fl = th[13];
	int syn = (fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST | SLUICE_TCP_FLAG_FIN)) ==
		  SLUICE_TCP_FLAG_SYN;
	int ack = (fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST)) == SLUICE_TCP_FLAG_ACK;

	if (!syn && !ack)
		return count(ALT_OTHER, XDP_PASS);
	__u32 tcp_len = (__u32)(th[12] >> 4) * 4;

	if (tcp_len < 20 || (long)(th - data) + tcp_len > (long)(end - data))
		return count(ALT_UNFIT, XDP_DROP);
	__u32 l3_off = (__u32)(l3 - data) & 0xff;

	s->tcp_len = tcp_len & 0x3c;
	if (bpf_xdp_load_bytes(ctx, l3_off, s->ip, is_v6 ? 40 : 20) ||
	    bpf_xdp_load_bytes(ctx, l3_off + ip_len, s->th, th_len_of(s)))
		return count(ALT_UNFIT, XDP_DROP);

	__s64 cookie;
	struct bpf_sock_tuple *t = &s->tuple;
	__u32 tuple_len = 0;
#ifdef COOKIE_LISTENER
	const int need_tuple = 1; /* the lookup's key */
#else
	const int need_tuple = p->remember; /* only `proved`'s key: not in the cost */
#endif

	if (!need_tuple)
		goto judged;
	__builtin_memset(t, 0, sizeof(*t));
	if (!is_v6) {
		__builtin_memcpy(&t->ipv4.saddr, s->ip + 12, 4);
		__builtin_memcpy(&t->ipv4.daddr, s->ip + 16, 4);
		__builtin_memcpy(&t->ipv4.sport, s->th, 2);
		__builtin_memcpy(&t->ipv4.dport, s->th + 2, 2);
		tuple_len = sizeof(t->ipv4);
	} else {
		__builtin_memcpy(t->ipv6.saddr, s->ip + 8, 16);
		__builtin_memcpy(t->ipv6.daddr, s->ip + 24, 16);
		__builtin_memcpy(&t->ipv6.sport, s->th, 2);
		__builtin_memcpy(&t->ipv6.dport, s->th + 2, 2);
		tuple_len = sizeof(t->ipv6);
	}
	if (ack && p->remember && bpf_map_lookup_elem(&proved, t))
		return count(ALT_OTHER, XDP_PASS);
judged:;
#ifdef COOKIE_LISTENER
	struct bpf_sock *sk = bpf_skc_lookup_tcp(ctx, t, tuple_len, BPF_F_CURRENT_NETNS, 0);

	if (!sk)
		return count(ALT_OTHER, XDP_PASS);
	if (sk->state != BPF_TCP_LISTEN) {
		bpf_sk_release(sk);
		return count(ALT_OTHER, XDP_PASS);
	}
	if (ack) {
		long r = bpf_tcp_check_syncookie(sk, s->ip, ip_len, (struct tcphdr *)s->th, th_len_of(s));

		bpf_sk_release(sk);
		if (r)
			return count(ALT_FORGED, XDP_DROP);
		goto proved;
	}
	cookie = bpf_tcp_gen_syncookie(sk, s->ip, ip_len, (struct tcphdr *)s->th, th_len_of(s));
	bpf_sk_release(sk);
#else
	(void)tuple_len;
	if (ack) {
		long r = is_v6 ? bpf_tcp_raw_check_syncookie_ipv6((struct ipv6hdr *)s->ip, (struct tcphdr *)s->th)
			       : bpf_tcp_raw_check_syncookie_ipv4((struct iphdr *)s->ip, (struct tcphdr *)s->th);

		if (r)
			return count(ALT_FORGED, XDP_DROP);
		goto proved;
	}
	cookie = is_v6 ? bpf_tcp_raw_gen_syncookie_ipv6((struct ipv6hdr *)s->ip, (struct tcphdr *)s->th, th_len_of(s))
		       : bpf_tcp_raw_gen_syncookie_ipv4((struct iphdr *)s->ip, (struct tcphdr *)s->th, th_len_of(s));
#endif
	if (cookie < 0)
		return count(ALT_NO_COOKIE, XDP_PASS);

	s->params.mss = is_v6 ? p->mss6 : p->mss4;
	s->params.wscale = p->wscale;
	s->params.flags = p->flags;
	s->off = 20;
	sluice_syn_options_clear(&s->opts);
	bpf_loop(SLUICE_TCP_OPTIONS_MAX, option_step, NULL, 0);
	/* the stack's clock (tcp_clock_ms: CLOCK_MONOTONIC in milliseconds) */
	__u32 tsval = sluice_cookie_tsval((__u32)(bpf_ktime_get_ns() / 1000000), &s->opts, &s->params);
	__u32 len = sluice_synack(s->ip, s->th, is_v6, (__u32)cookie, tsval, &s->opts, &s->params, s->reply);

	if (bpf_xdp_adjust_tail(ctx, (int)(l3_off + len) - (int)frame_len))
		return count(ALT_UNFIT, XDP_DROP);
	__u8 *d = (__u8 *)(long)ctx->data;
	__u8 *e = (__u8 *)(long)ctx->data_end;

	if (d + 12 > e)
		return count(ALT_UNFIT, XDP_DROP);
	__u8 mac[6];

	__builtin_memcpy(mac, d, 6);
	__builtin_memcpy(d, d + 6, 6);
	__builtin_memcpy(d + 6, mac, 6);
	if (bpf_xdp_store_bytes(ctx, l3_off, s->reply, len & 0x7f))
		return count(ALT_UNFIT, XDP_DROP);
	return count(ALT_SENT, XDP_TX);

proved:
	if (p->remember) {
		__u8 one = 1;

		bpf_map_update_elem(&proved, t, &one, BPF_ANY);
	}
	return count(ALT_PROVED, XDP_PASS);
}
