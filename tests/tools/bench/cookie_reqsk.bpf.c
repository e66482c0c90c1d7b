// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cookie_reqsk.bpf.c - benchmark only, not part of sluice: the ACK half of
 * the third way the kernel offers for SYN cookies (docs/architecture.md,
 * "SYN cookies"): at tc ingress, after the skb is allocated, a cookie of our
 * own (cookie_reqsk.h) is checked, the listener found (bpf_skc_lookup_tcp),
 * and the request socket the stack then completes is built by the
 * bpf_sk_assign_tcp_reqsk kfunc (as the kernel selftest
 * test_tcp_custom_syncookie.c does). A valid ACK whose request socket was
 * assigned passes (TC_ACT_OK); any other is dropped (TC_ACT_SHOT).
 *
 * The kfunc's last answer is kept in `last_assign` (0, or a negative errno),
 * and what each frame met in `outcomes`, so that sluice-bench can say what
 * the kernel did: under BPF_PROG_TEST_RUN the skb is not at tc ingress
 * (skb->tc_at_ingress is not set), and the kfunc refuses it before it
 * allocates anything.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "cookie_reqsk.h"

char LICENSE[] SEC("license") = "GPL"; /* the kfunc is GPL-only */

/* The kernel's (include/net/tcp.h); the kfunc checks its size. */
struct bpf_tcp_req_attrs {
	__u32 rcv_tsval;
	__u32 rcv_tsecr;
	__u16 mss;
	__u8 rcv_wscale;
	__u8 snd_wscale;
	__u8 ecn_ok;
	__u8 wscale_ok;
	__u8 sack_ok;
	__u8 tstamp_ok;
	__u8 usec_ts_ok;
	__u8 reserved[3];
};

/* A struct, not a forward declaration: libbpf matches the kfunc's prototype
 * against the kernel's by kind and name, and a FWD is not a STRUCT. */
struct sock {
	int unused;
};
extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk, struct bpf_tcp_req_attrs *attrs,
				   int attrs__sz) __ksym;

enum reqsk_outcome {
	REQSK_ASSIGNED = 0, /* valid, request socket assigned: passed */
	REQSK_REFUSED = 1,  /* valid, but the kfunc refused (last_assign says why): dropped */
	REQSK_FORGED = 2,   /* not our cookie: dropped */
	REQSK_OTHER = 3,    /* not an ACK to a listener: passed */
	REQSK_OUTCOMES = 4,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, REQSK_OUTCOMES);
	__type(key, __u32);
	__type(value, __u64);
} outcomes SEC(".maps");

/* The cookie key (sluice-bench writes the same one into its cookie_reqsk.h
 * copy of the hash). */
const volatile __u64 reqsk_key[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

int last_assign = 1; /* 1: never called */

static __always_inline int count(__u32 outcome, int verdict)
{
	__u64 *n = bpf_map_lookup_elem(&outcomes, &outcome);

	if (n)
		*n += 1;
	return verdict;
}

static __always_inline __u32 be32_at(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

SEC("tc")
int cookie_reqsk(struct __sk_buff *skb)
{
	const __u8 *data = (const __u8 *)(long)skb->data;
	const __u8 *end = (const __u8 *)(long)skb->data_end;
	struct bpf_sock_tuple t = {};
	__u32 tuple_len, ip_len;
	__u64 w0;
	int is_v6;

	if (data + 14 > end)
		return count(REQSK_OTHER, TC_ACT_OK);
	__u16 proto = (__u16)data[12] << 8 | data[13];
	const __u8 *l3 = data + 14;

	if (proto == 0x0800) {
		if (l3 + 20 > end || l3[0] != 0x45 || l3[9] != 6)
			return count(REQSK_OTHER, TC_ACT_OK);
		is_v6 = 0;
		ip_len = 20;
		__builtin_memcpy(&t.ipv4.saddr, l3 + 12, 4);
		__builtin_memcpy(&t.ipv4.daddr, l3 + 16, 4);
		w0 = (__u64)t.ipv4.saddr << 32 | t.ipv4.daddr;
		tuple_len = sizeof(t.ipv4);
	} else if (proto == 0x86dd) {
		if (l3 + 40 > end || l3[6] != 6)
			return count(REQSK_OTHER, TC_ACT_OK);
		is_v6 = 1;
		ip_len = 40;
		__builtin_memcpy(t.ipv6.saddr, l3 + 8, 16);
		__builtin_memcpy(t.ipv6.daddr, l3 + 24, 16);
		w0 = (__u64)t.ipv6.saddr[0] << 32 | t.ipv6.daddr[0];
		tuple_len = sizeof(t.ipv6);
	} else {
		return count(REQSK_OTHER, TC_ACT_OK);
	}
	const __u8 *th = l3 + ip_len;

	if (th + 20 > end)
		return count(REQSK_OTHER, TC_ACT_OK);
	if ((th[13] & 0x16) != 0x10) /* ACK, no SYN or RST */
		return count(REQSK_OTHER, TC_ACT_OK);
	__u16 sport, dport;

	__builtin_memcpy(&sport, th, 2);
	__builtin_memcpy(&dport, th + 2, 2);
	if (is_v6) {
		t.ipv6.sport = sport;
		t.ipv6.dport = dport;
	} else {
		t.ipv4.sport = sport;
		t.ipv4.dport = dport;
	}
	__u32 isn = be32_at(th + 4) - 1;
	__u32 cookie = be32_at(th + 8) - 1;
	__u32 hash = reqsk_cookie_hash((const __u64 *)reqsk_key, w0, isn, sport, dport);

	if ((hash ^ cookie) & ~REQSK_COOKIE_MASK)
		return count(REQSK_FORGED, TC_ACT_SHOT);

	struct bpf_sock *skc = bpf_skc_lookup_tcp(skb, &t, tuple_len, BPF_F_CURRENT_NETNS, 0);

	if (!skc)
		return count(REQSK_OTHER, TC_ACT_OK);
	if (skc->state != BPF_TCP_LISTEN) {
		bpf_sk_release(skc);
		return count(REQSK_OTHER, TC_ACT_OK);
	}
	struct sock *sk = (struct sock *)bpf_skc_to_tcp_sock(skc);

	if (!sk) {
		bpf_sk_release(skc);
		return count(REQSK_OTHER, TC_ACT_OK);
	}
	__u32 idx = (cookie >> 6) & 3;
	struct bpf_tcp_req_attrs attrs = {
		.mss = reqsk_mss(idx, is_v6),
		.sack_ok = !!(cookie & REQSK_SACK),
	};
	__u32 ws = cookie & REQSK_WSCALE_MASK;

	if (ws != REQSK_WSCALE_MASK) {
		attrs.wscale_ok = 1;
		attrs.snd_wscale = (__u8)ws;
		attrs.rcv_wscale = 7;
	}
	int r = bpf_sk_assign_tcp_reqsk(skb, sk, &attrs, sizeof(attrs));

	last_assign = r;
	bpf_sk_release(skc);
	return r ? count(REQSK_REFUSED, TC_ACT_SHOT) : count(REQSK_ASSIGNED, TC_ACT_OK);
}
