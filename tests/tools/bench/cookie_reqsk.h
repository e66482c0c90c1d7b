/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cookie_reqsk.h - the cookie of cookie_reqsk.bpf.c (benchmark only), shared
 * with sluice-bench, which makes valid ACKs for it. A cookie of our own, as
 * the kernel selftest test_tcp_custom_syncookie.c makes one for
 * bpf_sk_assign_tcp_reqsk: the ISN's top 24 bits are a keyed SipHash-2-4 of
 * the addresses, the client's ISN and the ports; the low 8 carry the MSS
 * index (2 bits), ECN (unused), SACK and the client's window scale (0xf:
 * none). No minute counter: a real deployment would fold one in (the
 * kernel's own cookies keep 8 bits of one); the cost measured is that of the
 * hash and the kfunc, not of the encoding.
 */
#ifndef SLUICE_BENCH_COOKIE_REQSK_H
#define SLUICE_BENCH_COOKIE_REQSK_H

#include <linux/types.h>
#include "../../../bpf/siphash.h"

#define REQSK_COOKIE_BITS 8
#define REQSK_COOKIE_MASK ((1u << REQSK_COOKIE_BITS) - 1)
#define REQSK_WSCALE_MASK 0xfu
#define REQSK_SACK (1u << 4)

/* The MSS of an index (a switch, not a table: a static table in a header
 * gives the BPF object's .rodata a BTF the kernel refuses). */
static inline __u16 reqsk_mss(__u32 index, int is_v6)
{
	switch (index & 3) {
	case 0:
		return is_v6 ? 1220 : 536;
	case 1:
		return is_v6 ? 1420 : 1300;
	case 2:
		return 1440;
	default:
		return is_v6 ? 1440 : 1460;
	}
}

/*
 * The keyed hash of one connection: w0 holds the addresses (IPv4: the
 * source's and destination's 32-bit words as read from the header; IPv6:
 * the first 32-bit word of each, as the selftest does), w1 the client's ISN
 * (host order) above the two ports (as read from the header).
 */
static inline __u32 reqsk_cookie_hash(const __u64 key[2], __u64 w0, __u32 client_isn, __u16 sport, __u16 dport)
{
	__u64 w1 = (__u64)client_isn << 32 | (__u64)sport << 16 | dport;

	return (__u32)sluice_siphash_16(key, w0, w1, 2, 4);
}

/* The cookie (the SYN-ACK's sequence number) for that hash and options. */
static inline __u32 reqsk_cookie(__u32 hash, __u32 mss_index, __u32 sack, __u32 wscale)
{
	return (hash & ~REQSK_COOKIE_MASK) | (mss_index & 3) << 6 | (sack ? REQSK_SACK : 0) |
	       (wscale & REQSK_WSCALE_MASK);
}

#endif
