/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * siphash.h - keyed SipHash, no BPF helpers, compiled into the XDP program and
 * into the host tests (which check it against the reference test vectors).
 *
 * Why keyed: the slot a source lands in must not be computable by the sender,
 * or an attacker could aim spoofed packets at a victim's slots. The 128-bit key
 * comes from getrandom() at load and never leaves the host.
 *
 * The round counts are parameters of the macro below; the data plane uses
 * SLUICE_SIPHASH_C / SLUICE_SIPHASH_D (see the end of this file for why).
 * The fixed-length variants hash exactly the bytes a generic SipHash would
 * hash for a 4- or 16-byte message (little-endian word loads), so the generic
 * reference vectors test them too.
 */
#ifndef SLUICE_SIPHASH_H
#define SLUICE_SIPHASH_H

#include <linux/types.h>

#define SLUICE_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SLUICE_SIPROUND(v0, v1, v2, v3)                                        \
	do {                                                                   \
		v0 += v1; v1 = SLUICE_ROTL(v1, 13); v1 ^= v0; v0 = SLUICE_ROTL(v0, 32); \
		v2 += v3; v3 = SLUICE_ROTL(v3, 16); v3 ^= v2;                  \
		v0 += v3; v3 = SLUICE_ROTL(v3, 21); v3 ^= v0;                  \
		v2 += v1; v1 = SLUICE_ROTL(v1, 17); v1 ^= v2; v2 = SLUICE_ROTL(v2, 32); \
	} while (0)

struct sluice_sip {
	__u64 v0, v1, v2, v3;
};

static inline struct sluice_sip sluice_sip_init(const __u64 key[2])
{
	struct sluice_sip s;

	s.v0 = 0x736f6d6570736575ull ^ key[0];
	s.v1 = 0x646f72616e646f6dull ^ key[1];
	s.v2 = 0x6c7967656e657261ull ^ key[0];
	s.v3 = 0x7465646279746573ull ^ key[1];
	return s;
}

static inline void sluice_sip_compress(struct sluice_sip *s, __u64 m, int c_rounds)
{
	int i;

	s->v3 ^= m;
	for (i = 0; i < c_rounds; i++)
		SLUICE_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	s->v0 ^= m;
}

static inline __u64 sluice_sip_finish(struct sluice_sip *s, int d_rounds)
{
	int i;

	s->v2 ^= 0xff;
	for (i = 0; i < d_rounds; i++)
		SLUICE_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* SipHash-c-d of a 4-byte message whose bytes, loaded little-endian, are `w`. */
static inline __u64 sluice_siphash_4(const __u64 key[2], __u32 w, int c_rounds, int d_rounds)
{
	struct sluice_sip s = sluice_sip_init(key);

	sluice_sip_compress(&s, (4ull << 56) | w, c_rounds);
	return sluice_sip_finish(&s, d_rounds);
}

/* SipHash-c-d of a 16-byte message: two little-endian words, then the length. */
static inline __u64 sluice_siphash_16(const __u64 key[2], __u64 w0, __u64 w1, int c_rounds,
				      int d_rounds)
{
	struct sluice_sip s = sluice_sip_init(key);

	sluice_sip_compress(&s, w0, c_rounds);
	sluice_sip_compress(&s, w1, c_rounds);
	sluice_sip_compress(&s, 16ull << 56, c_rounds);
	return sluice_sip_finish(&s, d_rounds);
}

#ifndef __bpf__
/* Generic SipHash-c-d over any byte string: the host's reference against which
 * the fixed-length variants are tested. Not used by the data plane. */
static inline __u64 sluice_siphash_bytes(const __u64 key[2], const unsigned char *p,
					 unsigned long len, int c_rounds, int d_rounds)
{
	struct sluice_sip s = sluice_sip_init(key);
	unsigned long i, full = len & ~7ul;
	__u64 last = (__u64)(len & 0xff) << 56;

	for (i = 0; i < full; i += 8) {
		__u64 m = 0;
		for (int b = 0; b < 8; b++)
			m |= (__u64)p[i + b] << (8 * b);
		sluice_sip_compress(&s, m, c_rounds);
	}
	for (i = 0; i < (len & 7); i++)
		last |= (__u64)p[full + i] << (8 * i);
	sluice_sip_compress(&s, last, c_rounds);
	return sluice_sip_finish(&s, d_rounds);
}
#endif

/*
 * The data plane's variant. SipHash-1-3 is what the kernel itself uses for its
 * keyed hash tables (hsiphash on 64-bit): it keeps the property this needs
 * (no sender can compute or search for the slot of an address without the key,
 * and nothing here reveals the index), at about half the rounds of 2-4, and
 * the hash is a third of the per-packet cost. See docs/architecture.md.
 */
#ifndef SLUICE_SIPHASH_C
#define SLUICE_SIPHASH_C 1
#endif
#ifndef SLUICE_SIPHASH_D
#define SLUICE_SIPHASH_D 3
#endif

#endif /* SLUICE_SIPHASH_H */
