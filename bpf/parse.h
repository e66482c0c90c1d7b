/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * parse.h - Ethernet / VLAN / IPv4 / IPv6 -> source address. No BPF helpers:
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
 * address. Up to SLUICE_MAX_VLAN_TAGS 802.1Q/802.1ad tags are skipped; a frame
 * with more is MALFORMED (dropped and counted): a parser that gives up and
 * passes it would be a way around the limiter.
 */
static inline int sluice_parse(const void *data, const void *data_end, struct sluice_source *src)
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
		return SLUICE_PARSE_IPV4;
	}
	if (proto == SLUICE_ETH_P_IPV6) {
		if (p + 40 > end)
			return SLUICE_PARSE_MALFORMED;
		if ((p[0] >> 4) != 6)
			return SLUICE_PARSE_MALFORMED;
		src->w[0] = SLUICE_LOAD(__u64, p + 8);
		src->w[1] = SLUICE_LOAD(__u64, p + 16);
		return SLUICE_PARSE_IPV6;
	}
	return SLUICE_PARSE_NON_IP;
}

#endif /* SLUICE_PARSE_H */
