/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cookie.h - the SYN-ACK a SYN cookie answer is made of, and nothing that
 * needs the kernel. No BPF helpers: the XDP program (sluice.bpf.c's
 * sluice_cookie) asks the kernel for the cookie itself
 * (bpf_tcp_gen_syncookie, on the listener bpf_skc_lookup_tcp found) and
 * calls this header for the rest; the host tests (tests/headers/cookie_test)
 * check every byte of what it builds.
 *
 *   sluice_syn_options   what the client's SYN offered: MSS, window scale,
 *                        SACK, its timestamp
 *   sluice_cookie_tsval  the timestamp our SYN-ACK carries: the kernel's own
 *                        encoding (net/ipv4/syncookies.c, cookie_init_timestamp):
 *                        milliseconds with the low 6 bits replaced by the
 *                        client's window scale (0xf: none) and SACK (bit 4),
 *                        which the stack decodes from the ACK's echo
 *                        (cookie_timestamp_decode). The value never runs ahead
 *                        of the clock the stack stamps the connection with
 *                        later, so the client's PAWS check never refuses it.
 *   sluice_synack        the reply's IP and TCP headers, checksums included
 *   sluice_syn_stamp_*   the cookie path's SYN stamps (sluice_abi.h,
 *                        SLUICE_COOKIE_SYN_SLOTS): a source's slot, the stamp
 *                        a SYN leaves there, and whether an ACK's source may
 *                        carry a cookie the kernel still accepts
 *
 * The reply, as the kernel's own cookies answer:
 *   IPv4  20 bytes, no options, DF, TTL 64, id 0     IPv6  40 bytes, hop limit 64
 *   TCP   SYN|ACK, seq = cookie, ack = the SYN's seq + 1, window a whole
 *         number of our MSS under 65535 (never scaled in a SYN-ACK)
 *   options: MSS (ours); with the client's timestamp: SACK-permitted (or two
 *         NOPs) and the timestamp (the client's echoed), and with its window
 *         scale NOP + our window scale. Without a client timestamp there is
 *         nowhere to keep window scale and SACK: the reply offers only MSS, as
 *         the kernel's cookies do (the connection has 64 KiB windows, no SACK).
 * So the TCP header is 24, 36 or 40 bytes: at most 8 bytes more than the
 * SYN's (a SYN without options is 20), never more than 40 + the IP header.
 */
#ifndef SLUICE_COOKIE_H
#define SLUICE_COOKIE_H

#include <linux/types.h>
#include "sluice_abi.h"

#define SLUICE_TCPOPT_EOL 0
#define SLUICE_TCPOPT_NOP 1
#define SLUICE_TCPOPT_MSS 2
#define SLUICE_TCPOPT_WINDOW 3
#define SLUICE_TCPOPT_SACK_PERM 4
#define SLUICE_TCPOPT_TIMESTAMP 8

/* The kernel's timestamp cookie bits (include/net/tcp.h). */
#define SLUICE_TS_OPT_WSCALE_MASK 0xfu
#define SLUICE_TS_OPT_SACK (1u << 4)
#define SLUICE_TSBITS 6
#define SLUICE_TSMASK ((1u << SLUICE_TSBITS) - 1)
#define SLUICE_TCP_MAX_WSCALE 14u

#define SLUICE_TCP_FLAG_FIN 0x01
#define SLUICE_TCP_FLAG_SYN 0x02
#define SLUICE_TCP_FLAG_RST 0x04
#define SLUICE_TCP_FLAG_ACK 0x10

#define SLUICE_TCP_HDR_MAX 60  /* doff 15 */
#define SLUICE_SYNACK_TCP_MAX 40
#define SLUICE_SYNACK_MAX (40 + SLUICE_SYNACK_TCP_MAX) /* IPv6 header + the longest reply */
#define SLUICE_COOKIE_TTL 64

/* The builder takes more arguments than a BPF call can carry (five): it must
 * be inlined there; on the host it is only a hint. */
#define SLUICE_COOKIE_INLINE static inline __attribute__((always_inline))

/* What the client's SYN offered. */
struct sluice_syn_options {
	__u32 tsval;    /* the client's timestamp (host order), if ts_ok */
	__u16 mss;      /* 0: no MSS option */
	__u8 wscale;    /* the client's shift, if wscale_ok (clamped to 14) */
	__u8 wscale_ok;
	__u8 sack_ok;
	__u8 ts_ok;
	__u8 _pad[2];
};

static inline __u32 sluice_be32_at(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static inline void sluice_put_be16(__u8 *p, __u32 v)
{
	p[0] = (__u8)(v >> 8);
	p[1] = (__u8)v;
}

static inline void sluice_put_be32(__u8 *p, __u32 v)
{
	p[0] = (__u8)(v >> 24);
	p[1] = (__u8)(v >> 16);
	p[2] = (__u8)(v >> 8);
	p[3] = (__u8)v;
}

/*
 * The option at *off of a TCP header th of tcp_len bytes (20..60, whole in
 * the buffer: the caller checked it), into o; *off moves past it. Returns 1
 * at the end: past the header, EOL, or an option whose length is under 2 or
 * runs past the header (what was read before it counts, as the kernel's
 * tcp_parse_options does). Options of the wrong length are ignored, as the
 * kernel ignores them. One option a call, so that the XDP program can walk
 * them with bpf_loop (a verifier-friendly loop of unknown trip count);
 * sluice_syn_options walks them all with a plain loop.
 */
static inline int sluice_syn_option_at(const __u8 *th, __u32 tcp_len, __u32 *off, struct sluice_syn_options *o)
{
	__u32 at = *off;

	if (tcp_len > SLUICE_TCP_HDR_MAX)
		tcp_len = SLUICE_TCP_HDR_MAX;
	if (at >= tcp_len)
		return 1;
	__u8 kind = th[at & 63];

	if (kind == SLUICE_TCPOPT_EOL)
		return 1;
	if (kind == SLUICE_TCPOPT_NOP) {
		*off = at + 1;
		return 0;
	}
	if (at + 1 >= tcp_len)
		return 1;
	__u32 len = th[(at + 1) & 63];

	if (len < 2 || at + len > tcp_len)
		return 1;
	if (kind == SLUICE_TCPOPT_MSS && len == 4) {
		o->mss = (__u16)((__u32)th[(at + 2) & 63] << 8 | th[(at + 3) & 63]);
	} else if (kind == SLUICE_TCPOPT_WINDOW && len == 3) {
		__u8 ws = th[(at + 2) & 63];

		o->wscale = ws > SLUICE_TCP_MAX_WSCALE ? SLUICE_TCP_MAX_WSCALE : ws;
		o->wscale_ok = 1;
	} else if (kind == SLUICE_TCPOPT_SACK_PERM && len == 2) {
		o->sack_ok = 1;
	} else if (kind == SLUICE_TCPOPT_TIMESTAMP && len == 10) {
		o->ts_ok = 1;
		o->tsval = (__u32)th[(at + 2) & 63] << 24 | (__u32)th[(at + 3) & 63] << 16 |
			   (__u32)th[(at + 4) & 63] << 8 | th[(at + 5) & 63];
	}
	*off = at + len;
	return 0;
}

/* Nothing offered yet: where a walk of the options starts. */
static inline void sluice_syn_options_clear(struct sluice_syn_options *o)
{
	o->tsval = 0;
	o->mss = 0;
	o->wscale = 0;
	o->wscale_ok = 0;
	o->sack_ok = 0;
	o->ts_ok = 0;
	o->_pad[0] = o->_pad[1] = 0;
}

/* Every option of the header: at most 40 (one byte each). */
#define SLUICE_TCP_OPTIONS_MAX 40

static inline void sluice_syn_options(const __u8 *th, __u32 tcp_len, struct sluice_syn_options *o)
{
	__u32 off = 20;

	sluice_syn_options_clear(o);
	for (int i = 0; i < SLUICE_TCP_OPTIONS_MAX; i++)
		if (sluice_syn_option_at(th, tcp_len, &off, o))
			break;
}

/* What our side offers, from config and the host's sysctls (the daemon
 * writes them: docs/architecture.md, "SYN cookies"). */
struct sluice_cookie_params {
	__u32 mss;       /* ours: the interface's MTU less the IP and TCP headers */
	__u32 wscale;    /* ours: what the stack will use for the connection */
	__u32 flags;     /* SLUICE_COOKIE_TS | _SACK | _WSCALE: what the host's sysctls let us offer */
};

/*
 * The timestamp of our SYN-ACK at now_ms (the clock in milliseconds, as the
 * stack's tcp_clock_ms), carrying the options the connection will keep:
 * the client's window scale (0xf: none) and SACK. Never above now_ms.
 */
static inline __u32 sluice_cookie_tsval(__u32 now_ms, const struct sluice_syn_options *o,
					const struct sluice_cookie_params *p)
{
	__u32 options = SLUICE_TS_OPT_WSCALE_MASK;

	if (o->wscale_ok && (p->flags & SLUICE_COOKIE_WSCALE))
		options = o->wscale & SLUICE_TS_OPT_WSCALE_MASK;
	if (o->sack_ok && (p->flags & SLUICE_COOKIE_SACK))
		options |= SLUICE_TS_OPT_SACK;
	__u32 ts = (now_ms & ~SLUICE_TSMASK) | options;

	if (ts > now_ms)
		ts -= 1u << SLUICE_TSBITS;
	return ts;
}

/* The cookie_syns slot of the source whose plain keyed hash is `hash`
 * (its word: slot / SLUICE_COOKIE_SYN_PER_WORD, its byte there: the rest). */
static inline __u32 sluice_syn_stamp_slot(__u64 hash)
{
	return ((__u32)hash >> 10) & (SLUICE_COOKIE_SYN_SLOTS - 1);
}

/* The stamp a SYN leaves at time `now` (ns): its tick modulo 128, the top
 * bit set, so that 0 is "never". SLUICE_TIME_BIAS (2^62) is a multiple of
 * 128 ticks: it drops out. */
static inline __u8 sluice_syn_stamp_of(__u64 now)
{
	return (__u8)(((now >> SLUICE_COOKIE_SYN_TICK_SHIFT) & 0x7f) | 0x80);
}

/* Did a SYN leave `stamp` within the last SLUICE_COOKIE_SYN_TICKS ticks of
 * `now`, modulo 128 ticks (one tick ahead allowed: another CPU may have
 * stamped the slot in a tick this CPU's `now` has not reached)? */
static inline int sluice_syn_stamp_recent(__u8 stamp, __u64 now)
{
	return stamp && ((sluice_syn_stamp_of(now) + 1u - stamp) & 0x7f) <= SLUICE_COOKIE_SYN_TICKS + 1;
}

/* One's complement sum of len bytes (len even, at most 80) into sum. */
static inline __u32 sluice_csum_bytes(__u32 sum, const __u8 *p, __u32 len)
{
	for (__u32 i = 0; i < SLUICE_SYNACK_MAX; i += 2) {
		if (i >= len)
			break;
		sum += (__u32)p[i] << 8 | p[i + 1];
	}
	return sum;
}

static inline __u16 sluice_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/*
 * The SYN-ACK answering the SYN whose IP header is syn_ip (20 bytes, IPv4
 * without options, or 40, IPv6 without extension headers: is_v6) and TCP
 * header syn_th, written to out (at least SLUICE_SYNACK_MAX bytes): the IP
 * header, then the TCP header. cookie is the sequence number; tsval our
 * timestamp (sluice_cookie_tsval), used only if the client sent one and the
 * host lets us offer timestamps. Returns the bytes written (IP + TCP).
 */
SLUICE_COOKIE_INLINE __u32 sluice_synack(const __u8 *syn_ip, const __u8 *syn_th, int is_v6, __u32 cookie, __u32 tsval,
				  const struct sluice_syn_options *o, const struct sluice_cookie_params *p, __u8 *out)
{
	__u32 ip_len = is_v6 ? 40 : 20;
	__u8 *th = out + ip_len;
	int ts = o->ts_ok && (p->flags & SLUICE_COOKIE_TS);
	int ws = ts && o->wscale_ok && (p->flags & SLUICE_COOKIE_WSCALE);
	int sack = ts && o->sack_ok && (p->flags & SLUICE_COOKIE_SACK);
	__u32 tcp_len = 24 + (ts ? 12 : 0) + (ws ? 4 : 0);
	__u32 mss = p->mss ? p->mss : 536;
	__u32 sum = 0, i;

	if (mss > 65535)
		mss = 65535;

	/* TCP: ports swapped, seq the cookie, ack their seq + 1 */
	th[0] = syn_th[2];
	th[1] = syn_th[3];
	th[2] = syn_th[0];
	th[3] = syn_th[1];
	sluice_put_be32(th + 4, cookie);
	sluice_put_be32(th + 8, sluice_be32_at(syn_th + 4) + 1);
	th[12] = (__u8)(tcp_len / 4) << 4;
	th[13] = SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK;
	sluice_put_be16(th + 14, 65535 - 65535 % mss);
	th[16] = th[17] = 0; /* checksum, below */
	th[18] = th[19] = 0; /* urgent pointer */
	th[20] = SLUICE_TCPOPT_MSS;
	th[21] = 4;
	sluice_put_be16(th + 22, mss);
	if (ts) {
		th[24] = sack ? SLUICE_TCPOPT_SACK_PERM : SLUICE_TCPOPT_NOP;
		th[25] = sack ? 2 : SLUICE_TCPOPT_NOP;
		th[26] = SLUICE_TCPOPT_TIMESTAMP;
		th[27] = 10;
		sluice_put_be32(th + 28, tsval);
		sluice_put_be32(th + 32, o->tsval);
		if (ws) {
			th[36] = SLUICE_TCPOPT_NOP;
			th[37] = SLUICE_TCPOPT_WINDOW;
			th[38] = 3;
			th[39] = (__u8)(p->wscale > SLUICE_TCP_MAX_WSCALE ? SLUICE_TCP_MAX_WSCALE : p->wscale);
		}
	}

	if (!is_v6) {
		/* version 4, IHL 5; TOS 0; length; id 0; DF; TTL; TCP; checksum;
		 * the addresses swapped */
		out[0] = 0x45;
		out[1] = 0;
		sluice_put_be16(out + 2, 20 + tcp_len);
		out[4] = out[5] = 0;
		out[6] = 0x40;
		out[7] = 0;
		out[8] = SLUICE_COOKIE_TTL;
		out[9] = 6;
		out[10] = out[11] = 0;
		for (i = 0; i < 4; i++) {
			out[12 + i] = syn_ip[16 + i];
			out[16 + i] = syn_ip[12 + i];
		}
		sluice_put_be16(out + 10, sluice_csum_fold(sluice_csum_bytes(0, out, 20)));
		sum = sluice_csum_bytes(0, out + 12, 8); /* pseudo header: addresses */
	} else {
		/* version 6, traffic class and flow label 0; payload length;
		 * TCP; hop limit; the addresses swapped */
		out[0] = 0x60;
		out[1] = out[2] = out[3] = 0;
		sluice_put_be16(out + 4, tcp_len);
		out[6] = 6;
		out[7] = SLUICE_COOKIE_TTL;
		for (i = 0; i < 16; i++) {
			out[8 + i] = syn_ip[24 + i];
			out[24 + i] = syn_ip[8 + i];
		}
		sum = sluice_csum_bytes(0, out + 8, 32);
	}
	sum += 6 + tcp_len; /* pseudo header: protocol and TCP length */
	sluice_put_be16(th + 16, sluice_csum_fold(sluice_csum_bytes(sum, th, tcp_len)));
	return ip_len + tcp_len;
}

#endif /* SLUICE_COOKIE_H */
