/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * source_key.h - from a parsed source address to its two slots. No BPF
 * helpers: sluiced computes the same slots with this header (ctl/lib/logic/
 * source, for `sluicectl bucket IFACE ADDR`, and the drop sampler's masking),
 * so the control plane and the data plane cannot disagree.
 *
 * The address is masked to the configured prefix (an IPv6 sender rotating
 * through one /64 is one source by default), hashed with keyed SipHash, and the
 * 64-bit hash gives two indices: its low and its high half, masked to the table.
 */
#ifndef SLUICE_SOURCE_KEY_H
#define SLUICE_SOURCE_KEY_H

#include <linux/types.h>
#include "parse.h"
#include "sluice_abi.h"
#include "siphash.h"

/* Keep the first `prefix` bits (network order) of an address held as a
 * little-endian load of its bytes. */
static inline __u32 sluice_mask_v4(__u32 raw, __u32 prefix)
{
	if (prefix == 0)
		return 0;
	if (prefix >= 32)
		return raw;
	return raw & __builtin_bswap32(~0u << (32 - prefix));
}

static inline __u64 sluice_mask_word(__u64 raw, __u32 prefix)
{
	if (prefix == 0)
		return 0;
	if (prefix >= 64)
		return raw;
	return raw & __builtin_bswap64(~0ull << (64 - prefix));
}

static inline void sluice_mask_v6(struct sluice_source *src, __u32 prefix)
{
	if (prefix <= 64) {
		src->w[0] = sluice_mask_word(src->w[0], prefix);
		src->w[1] = 0;
	} else {
		src->w[1] = sluice_mask_word(src->w[1], prefix - 64);
	}
}

/* The one prefix mask: keep the first settings->v4_prefix or v6_prefix bits
 * of a parsed source, as its family says, in place. The program, the CLI's
 * slot lookup (ctl/lib/logic/source.cpp) and the drop sampler
 * (ctl/sluiced/drop_sampler.cpp) all mask with this. The settings are
 * volatile for the program's sake: its settings are read-only data the
 * loader fills in, which the compiler must not fold, and each prefix is read
 * only on its own family's branch, so the program reads one setting. */
static inline void sluice_mask_source(struct sluice_source *src, int is_v6,
				      const volatile struct sluice_settings *settings)
{
	if (is_v6)
		sluice_mask_v6(src, settings->v6_prefix);
	else
		src->w[0] = sluice_mask_v4((__u32)src->w[0], settings->v4_prefix);
}

/* Hash of a masked source. IPv4 hashes 4 bytes and IPv6 16, so the two
 * families never share a hash input: SipHash mixes the length in. Always
 * inlined: the program hashes in three places (the default class, a policy
 * class, standing's plain hash), and clang then makes it a call, which on
 * the path without a policy cost 7 ns a frame (measured). */
static inline __attribute__((always_inline)) __u64 sluice_source_hash(const __u64 key[2], const struct sluice_source *src, int is_v6)
{
	if (is_v6)
		return sluice_siphash_16(key, src->w[0], src->w[1], SLUICE_SIPHASH_C, SLUICE_SIPHASH_D);
	return sluice_siphash_4(key, (__u32)src->w[0], SLUICE_SIPHASH_C, SLUICE_SIPHASH_D);
}

/* The mask of a class (prefixes as asked; the default class uses settings'). */
static inline void sluice_mask_prefixes(struct sluice_source *src, int is_v6, __u32 v4_prefix, __u32 v6_prefix)
{
	if (is_v6)
		sluice_mask_v6(src, v6_prefix);
	else
		src->w[0] = sluice_mask_v4((__u32)src->w[0], v4_prefix);
}

/* A class's buckets: the class id is folded into the key's first word, so
 * each class hashes with a key of its own (one SipHash a frame, as before)
 * and the default class (id 0) with the key itself: without a policy every
 * slot is where it was. A source's standing is keyed by the plain key and
 * settings' prefixes, whatever its class (the feeders know no class). */
static inline void sluice_class_key(const __u64 key[2], __u32 class_id, __u64 out[2])
{
	out[0] = key[0] ^ ((__u64)class_id << 56);
	out[1] = key[1];
}

/* The byte budget's slot pair: the packet hash remixed (splitmix64's
 * finaliser), so it is a second, independent-looking pair of the same
 * table at no second SipHash. */
static inline __u64 sluice_byte_hash(__u64 hash)
{
	hash ^= hash >> 30;
	hash *= 0xbf58476d1ce4e5b9ull;
	hash ^= hash >> 27;
	hash *= 0x94d049bb133111ebull;
	return hash ^ (hash >> 31);
}

struct sluice_slot_pair {
	__u32 a, b;
};

/* Two distinct slots (one when one_choice) from one 64-bit hash. */
static inline struct sluice_slot_pair sluice_slots_of(__u64 hash, __u32 slot_mask, int one_choice)
{
	struct sluice_slot_pair s;

	s.a = (__u32)hash & slot_mask;
	s.b = (__u32)(hash >> 32) & slot_mask;
	if (one_choice)
		s.b = s.a;
	else if (s.b == s.a)
		s.b = s.a ^ 1; /* two choices means two slots */
	return s;
}

/* The cookie_dest slot (sluice_abi.h, SLUICE_COOKIE_DEST_SLOTS) of the
 * network a SYN-ACK goes to: the SYN's source, unmasked as parsed, to its /24
 * (IPv4) or /48 (IPv6), hashed with the key's first word turned, so that a
 * network's slot tells nothing of a source's. 4 bytes for IPv4 and 16 for
 * IPv6, as sluice_source_hash: the families never share an input. */
static inline __u32 sluice_dest_slot(const __u64 key[2], const struct sluice_source *src, int is_v6)
{
	__u64 dkey[2] = { key[0] ^ 0x7265666c656374ull /* "reflect" */, key[1] };
	__u64 h;

	if (is_v6)
		h = sluice_siphash_16(dkey, sluice_mask_word(src->w[0], 48), 0, SLUICE_SIPHASH_C, SLUICE_SIPHASH_D);
	else
		h = sluice_siphash_4(dkey, sluice_mask_v4((__u32)src->w[0], 24), SLUICE_SIPHASH_C, SLUICE_SIPHASH_D);
	return (__u32)h & (SLUICE_COOKIE_DEST_SLOTS - 1);
}

#endif /* SLUICE_SOURCE_KEY_H */
