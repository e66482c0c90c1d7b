/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * parse.h - Ethernet / VLAN / IPv4 / IPv6 -> source address, and for the
 * policy classes the L4 kind and destination port. No BPF helpers:
 * the bounds checks are plain pointer comparisons against data_end, which the
 * verifier accepts and which the host fuzz and unit tests run unchanged.
 *
 * Every header read is preceded by a check that the whole header lies before
 * data_end. A frame that claims IPv4 or IPv6 but is cut short or malformed is
 * SLUICE_PARSE_MALFORMED, never "non-IP": passing it would let a sender skip
 * the limiter by truncating its own frames.
 */
#ifndef SLUICE_PARSE_H
#define SLUICE_PARSE_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include "sluice_abi.h"

#define SLUICE_MAX_VLAN_TAGS 2

enum sluice_parse_result {
	SLUICE_PARSE_IPV4 = 4,
	SLUICE_PARSE_IPV6 = 6,
	SLUICE_PARSE_NON_IP = 1,
	SLUICE_PARSE_MALFORMED = 2,
};

/* The parsed source address, as the bytes were on the wire, loaded into
 * little-endian words (the byte order SipHash reads). IPv4 uses the low 32 bits
 * of w[0] and leaves the rest zero. */
struct sluice_source {
	__u64 w[2];
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sluice assumes a little-endian host and BPF target"
#endif

/* Unaligned loads: direct on BPF (the verifier allows unaligned packet
 * access on x86 and arm64), memcpy on the host so sanitizers stay quiet. */
#ifdef __bpf__
#define SLUICE_LOAD(type, p) (*(const type *)(p))
#else
#define SLUICE_LOAD(type, p) ({ type v_; __builtin_memcpy(&v_, (p), sizeof(v_)); v_; })
#endif

/* Big-endian constants without a byte-swap helper: the frame is read as bytes. */
#define SLUICE_ETH_P_IP 0x0800
#define SLUICE_ETH_P_IPV6 0x86DD
#define SLUICE_ETH_P_8021Q 0x8100
#define SLUICE_ETH_P_8021AD 0x88A8

static inline __u16 sluice_be16_at(const __u8 *p)
{
	return (__u16)((__u16)p[0] << 8 | p[1]);
}

/*
 * Parse one frame in [data, data_end). On IPV4/IPV6, *src holds the source
 * address and *l3 points at the IP header (for sluice_parse_l4: the parse
 * keeps the pointer it has, no work of its own). Up to SLUICE_MAX_VLAN_TAGS
 * 802.1Q/802.1ad tags are skipped; a frame with more is MALFORMED (dropped
 * and counted): a parser that gives up and passes it would be a way around
 * the limiter.
 */
static inline int sluice_parse_at(const void *data, const void *data_end, struct sluice_source *src,
				  const __u8 **l3)
{
	const __u8 *p = (const __u8 *)data;
	const __u8 *end = (const __u8 *)data_end;
	__u16 proto;
	int i;

	if (p + 14 > end)
		return SLUICE_PARSE_MALFORMED; /* not even an Ethernet header */
	proto = sluice_be16_at(p + 12);
	p += 14;

	for (i = 0; i < SLUICE_MAX_VLAN_TAGS; i++) {
		if (proto != SLUICE_ETH_P_8021Q && proto != SLUICE_ETH_P_8021AD)
			break;
		if (p + 4 > end)
			return SLUICE_PARSE_MALFORMED;
		proto = sluice_be16_at(p + 2);
		p += 4;
	}
	if (proto == SLUICE_ETH_P_8021Q || proto == SLUICE_ETH_P_8021AD)
		return SLUICE_PARSE_MALFORMED; /* a third tag */

	if (proto == SLUICE_ETH_P_IP) {
		__u8 ihl;

		if (p + 20 > end)
			return SLUICE_PARSE_MALFORMED;
		if ((p[0] >> 4) != 4)
			return SLUICE_PARSE_MALFORMED;
		ihl = p[0] & 0x0f;
		if (ihl < 5)
			return SLUICE_PARSE_MALFORMED;
		if (p + (__u32)ihl * 4 > end)
			return SLUICE_PARSE_MALFORMED;
		src->w[0] = SLUICE_LOAD(__u32, p + 12);
		src->w[1] = 0;
		*l3 = p;
		return SLUICE_PARSE_IPV4;
	}
	if (proto == SLUICE_ETH_P_IPV6) {
		if (p + 40 > end)
			return SLUICE_PARSE_MALFORMED;
		if ((p[0] >> 4) != 6)
			return SLUICE_PARSE_MALFORMED;
		src->w[0] = SLUICE_LOAD(__u64, p + 8);
		src->w[1] = SLUICE_LOAD(__u64, p + 16);
		*l3 = p;
		return SLUICE_PARSE_IPV6;
	}
	return SLUICE_PARSE_NON_IP;
}

/* sluice_parse_at without the IP header's place. */
static inline int sluice_parse(const void *data, const void *data_end, struct sluice_source *src)
{
	const __u8 *l3;

	return sluice_parse_at(data, data_end, src, &l3);
}

/*
 * A frame's kind and "port" for the policy classes (sluice_abi.h's
 * SLUICE_L4_*; class_match.h matches them), from its IP header l3 (as
 * sluice_parse_at left it, so the IP header itself is known to be whole):
 *   TCP      SLUICE_L4_TCP_SYN for a SYN without ACK, else SLUICE_L4_TCP; the
 *            destination port
 *   UDP      SLUICE_L4_UDP; the destination port
 *   other    SLUICE_L4_IP; the IP protocol (ICMP 1, ICMPv6 58, ...)
 *   a non-first fragment carries no L4 header: SLUICE_L4_IP with its protocol
 * IPv4 skips the options (IHL). IPv6 walks up to SLUICE_MAX_IPV6_EXT
 * extension headers (hop-by-hop, routing, fragment, destination options, AH,
 * mobility, HIP, shim6); ESP and "no next header" are protocols like any.
 * A frame too short for its TCP or UDP header, or for an extension header,
 * or with more extension headers than that, is MALFORMED: a parser that gave
 * up and called it something else would let a sender pick its own class.
 * Returns 0, or SLUICE_PARSE_MALFORMED.
 */
#define SLUICE_MAX_IPV6_EXT 6

#define SLUICE_IPPROTO_TCP 6
#define SLUICE_IPPROTO_UDP 17

struct sluice_l4 {
	__u32 kind; /* SLUICE_L4_* */
	__u32 port; /* destination port, or IP protocol for SLUICE_L4_IP */
};

/*
 * The transport header at l4 of protocol proto: the one home of "which
 * (kind, port) is this L4 header" (the SYN test, the kinds, the port read).
 * sluice_parse_l4 calls it past whatever it walked, and the XDP program's
 * inline port path (policy_path.bpf.h, port_class) straight past a plain IP
 * header, so the two cannot disagree on a frame.
 */
static inline int sluice_parse_transport(const __u8 *l4, const __u8 *end, __u32 proto, struct sluice_l4 *out)
{
	if (proto == SLUICE_IPPROTO_TCP) {
		if (l4 + 20 > end)
			return SLUICE_PARSE_MALFORMED;
		/* byte 13: the flags; SYN 0x02, ACK 0x10 */
		out->kind = (l4[13] & 0x12) == 0x02 ? SLUICE_L4_TCP_SYN : SLUICE_L4_TCP;
		out->port = sluice_be16_at(l4 + 2);
		return 0;
	}
	if (proto == SLUICE_IPPROTO_UDP) {
		if (l4 + 8 > end)
			return SLUICE_PARSE_MALFORMED;
		out->kind = SLUICE_L4_UDP;
		out->port = sluice_be16_at(l4 + 2);
		return 0;
	}
	out->kind = SLUICE_L4_IP;
	out->port = proto;
	return 0;
}

/* IPv4 header l3 (its first 20 bytes whole) is a non-first fragment: the
 * fragment offset (13 bits of bytes 6-7) is not 0, and no L4 header follows. */
static inline int sluice_ipv4_later_fragment(const __u8 *l3)
{
	return (sluice_be16_at(l3 + 6) & 0x1fff) != 0;
}

static inline int sluice_ipv6_ext(__u32 next)
{
	return next == 0 || next == 43 || next == 44 || next == 60 || next == 51 || next == 135 || next == 139 ||
	       next == 140;
}

/*
 * Where the transport header of IP header l3 (as sluice_parse_at left it)
 * lies: *proto its protocol, *l4 the header, or NULL for a non-first
 * fragment (none follows; *proto is then the fragment's). The one walk of
 * IPv4 options and IPv6 extension headers: sluice_parse_l4 reads (kind,
 * port) past it, the drop sample (sample.bpf.h, sluice_sample) the
 * signature. Returns 0, or SLUICE_PARSE_MALFORMED as sluice_parse_l4 says.
 */
static inline int sluice_find_l4(const __u8 *l3, const void *data_end, int is_v6, __u32 *proto, const __u8 **l4)
{
	const __u8 *end = (const __u8 *)data_end;

	if (!is_v6) {
		if (l3 + 20 > end)
			return SLUICE_PARSE_MALFORMED; /* cannot happen after sluice_parse_at */
		*proto = l3[9];
		*l4 = sluice_ipv4_later_fragment(l3) ? 0 : l3 + (__u32)(l3[0] & 0x0f) * 4;
		return 0;
	}
	if (l3 + 40 > end)
		return SLUICE_PARSE_MALFORMED;
	__u32 next = l3[6];
	const __u8 *p = l3 + 40;

	for (int i = 0; i < SLUICE_MAX_IPV6_EXT; i++) {
		if (!sluice_ipv6_ext(next)) {
			*proto = next;
			*l4 = p;
			return 0;
		}
		if (p + 8 > end)
			return SLUICE_PARSE_MALFORMED;
		if (next == 44) {
			/* Fragment header (8 bytes): offset in the top 13 bits of bytes 2-3. */
			if (sluice_be16_at(p + 2) & 0xfff8) {
				*proto = p[0];
				*l4 = 0;
				return 0;
			}
			next = p[0];
			p += 8;
		} else if (next == 51) {
			/* AH: its length in 4-byte units, minus 2 */
			__u32 len = ((__u32)p[1] + 2) * 4;

			next = p[0];
			p += len;
		} else {
			__u32 len = ((__u32)p[1] + 1) * 8;

			next = p[0];
			p += len;
		}
	}
	if (!sluice_ipv6_ext(next)) {
		*proto = next;
		*l4 = p;
		return 0;
	}
	return SLUICE_PARSE_MALFORMED; /* more extension headers than we walk */
}

/*
 * The UDP source port (host order) of a frame read in place, without a
 * walk: Ethernet with up to SLUICE_MAX_VLAN_TAGS tags, then IPv4 (any IHL)
 * not a later fragment, or IPv6 whose next header is UDP. 0 for anything
 * else (not UDP, an IPv6 extension header, a cut header). Standing bound to
 * a UDP peer port asks it (standing_path.bpf.h): under sluice_judge_policy
 * the verifier's 512 bytes of stack leave no room for another call, so it
 * reads registers and the frame, nothing more; an answer it cannot read so
 * falls back to the newcomer budget, never to more than the grant.
 */
static inline __u32 sluice_udp_source_port(const void *data, const void *data_end)
{
	const __u8 *p = (const __u8 *)data;
	const __u8 *end = (const __u8 *)data_end;
	const __u8 *l4;
	__u16 proto;

	if (p + 14 > end)
		return 0;
	proto = sluice_be16_at(p + 12);
	p += 14;
	for (int i = 0; i < SLUICE_MAX_VLAN_TAGS; i++) {
		if (proto != SLUICE_ETH_P_8021Q && proto != SLUICE_ETH_P_8021AD)
			break;
		if (p + 4 > end)
			return 0;
		proto = sluice_be16_at(p + 2);
		p += 4;
	}
	if (proto == SLUICE_ETH_P_IP) {
		if (p + 20 > end || p[9] != SLUICE_IPPROTO_UDP || sluice_ipv4_later_fragment(p))
			return 0;
		l4 = p + (__u32)(p[0] & 0x0f) * 4;
	} else if (proto == SLUICE_ETH_P_IPV6) {
		if (p + 40 > end || p[6] != SLUICE_IPPROTO_UDP)
			return 0;
		l4 = p + 40;
	} else {
		return 0;
	}
	if (l4 + 8 > end)
		return 0;
	return sluice_be16_at(l4);
}

static inline int sluice_parse_l4(const __u8 *l3, const void *data_end, int is_v6, struct sluice_l4 *out)
{
	const __u8 *l4;
	__u32 proto;

	if (sluice_find_l4(l3, data_end, is_v6, &proto, &l4))
		return SLUICE_PARSE_MALFORMED;
	if (!l4) {
		out->kind = SLUICE_L4_IP;
		out->port = proto;
		return 0;
	}
	return sluice_parse_transport(l4, (const __u8 *)data_end, proto, out);
}

/*
 * Whether a frame is surely not TCP, from a plain header alone: Ethernet
 * without VLAN tags carrying IPv4 whose protocol is not TCP, or IPv6 whose
 * next header is not TCP and not an extension header (sluice_ipv6_ext). 0
 * for anything else, TCP or not (tags, a short frame, other ethertypes):
 * those go on to the full parse. The XDP program asks it before the cookie
 * path (cookie_path.bpf.h, cookie_path_skips), which would only find the
 * same after a call and a second parse: a UDP flood's shed frames paid both.
 */
static inline int sluice_surely_not_tcp(const __u8 *data, const __u8 *end)
{
	if (data + 14 + 20 > end)
		return 0;
	/* the ethertype as loaded little-endian (08 00, 86 dd) */
	__u16 eth = SLUICE_LOAD(__u16, data + 12);

	if (eth == 0x0008)
		return data[14 + 9] != SLUICE_IPPROTO_TCP;
	if (eth != 0xdd86 || data + 14 + 40 > end)
		return 0;
	return data[14 + 6] != SLUICE_IPPROTO_TCP && !sluice_ipv6_ext(data[14 + 6]);
}

#endif /* SLUICE_PARSE_H */
