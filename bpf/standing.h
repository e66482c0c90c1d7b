/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * standing.h - the standing table's math, and nothing else. No BPF helpers:
 * compiled into the kernel programs and into the host unit tests, which drive
 * it with a fake clock. The caller hashes the source (source_key.h: the same
 * masked source and keyed hash as the buckets, so a frame pays one SipHash)
 * and reads the clock.
 *
 * A source is found by its set (the hash's low half, masked to the table) and
 * its fingerprint (the high half) within the set. A random source that does not
 * own an entry matches one only when its fingerprint equals one of the at most
 * SLUICE_STANDING_WAYS live fingerprints in its set: at most 8 x 2^-32, about
 * 2 in 10^9, however full the table (tests/headers/standing_test.cpp measures it).
 *
 * An entry is live while its age, in ticks of 2^30 ns, is at most the lapse
 * time; it lapses by itself, no sweep needed. Ages are differences of 32-bit
 * stamps, so they are right across the stamp's wrap; an entry stamped ahead of
 * now (a clock that seems to go backwards) has a huge age and reads as lapsed:
 * a doubt about the clock never grants standing.
 *
 * Concurrency: each entry is one aligned u64, written whole, so a reader sees
 * the old entry or the new one. Two CPUs granting into one set at the same
 * instant may pick the same way and one grant is lost; the next connection of
 * that source grants it again. Nothing here can make an entry match a source
 * that did not earn it.
 */
#ifndef SLUICE_STANDING_H
#define SLUICE_STANDING_H

#include "sluice_abi.h"
#include "siphash.h"

/* The fingerprint of a source's hash: its high half, never 0 (0 marks an empty way). */
static inline __u32 sluice_standing_fingerprint(__u64 hash)
{
	__u32 fp = (__u32)(hash >> 32);
	return fp ? fp : 1;
}

/* The set a source's hash lives in. */
static inline __u32 sluice_standing_set_of(__u64 hash, __u32 set_mask)
{
	return (__u32)hash & set_mask;
}

/* The stamp of a biased clock reading (bucket.h's SLUICE_TIME_BIAS form). */
static inline __u32 sluice_standing_stamp(__u64 now)
{
	return (__u32)(now >> SLUICE_STANDING_TICK_SHIFT);
}

static inline __u64 sluice_standing_entry(__u32 fp, __u32 stamp)
{
	return ((__u64)fp << 32) | stamp;
}

static inline __u32 sluice_standing_entry_fp(__u64 entry)
{
	return (__u32)(entry >> 32);
}

/* Ticks since the entry was stamped, modulo 2^32. */
static inline __u32 sluice_standing_age(__u64 entry, __u32 stamp)
{
	return stamp - (__u32)entry;
}

static inline int sluice_standing_live(__u64 entry, __u32 stamp, __u32 lapse_ticks)
{
	return sluice_standing_entry_fp(entry) != 0 && sluice_standing_age(entry, stamp) <= lapse_ticks;
}

/* The way of `set` that holds fingerprint fp, live now; -1 if none. */
static inline int sluice_standing_find(const struct sluice_standing_set *set, __u32 fp, __u32 stamp,
				       __u32 lapse_ticks)
{
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++) {
		__u64 e = set->way[w];
		if (sluice_standing_entry_fp(e) == fp && sluice_standing_age(e, stamp) <= lapse_ticks)
			return w;
	}
	return -1;
}

/* A live entry is stamped again once it is older than an eighth of the lapse
 * time, so a source that keeps sending keeps its standing while an entry is
 * written at most eight times per lapse time, not once a frame. */
static inline int sluice_standing_needs_refresh(__u64 entry, __u32 stamp, __u32 lapse_ticks)
{
	return sluice_standing_age(entry, stamp) > (lapse_ticks >> 3);
}

/* How strong a reason's proof is: a UDP grant is the host's word alone (any
 * local user can make one), observed standing is traffic over time, every
 * other reason is a handshake the kernel verified. */
#define SLUICE_PROOF_HANDSHAKE 3u
static inline __u32 sluice_standing_proof(__u32 reason)
{
	if (reason == SLUICE_BY_UDP)
		return 1;
	if (reason == SLUICE_BY_OBSERVED)
		return 2;
	return SLUICE_PROOF_HANDSHAKE;
}

/*
 * The way a grant of fp with proof `proof` writes: the way that holds fp
 * already (live or not), else an empty or lapsed way, else, among the live
 * ways whose proof is no stronger than this grant's, the weakest, and of
 * those the one stamped longest ago; -1 if every live way has a stronger
 * proof (the grant is refused: a UDP grant never evicts a handshake). So a
 * set never holds one fingerprint twice, and a full set gives up its least
 * proved, least recently seen source.
 */
static inline int sluice_standing_way_of(const struct sluice_standing_set *set, __u32 fp)
{
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++)
		if (sluice_standing_entry_fp(set->way[w]) == fp)
			return w;
	return -1;
}

static inline int sluice_standing_free_way(const struct sluice_standing_set *set, __u32 stamp, __u32 lapse_ticks)
{
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++)
		if (!sluice_standing_live(set->way[w], stamp, lapse_ticks))
			return w;
	return -1;
}

/* (Three loops that each return as soon as they know, and one running
 * maximum in the last, rather than one loop that tracks every answer: the
 * verifier walks far fewer states.) */
static inline int sluice_standing_victim(const struct sluice_standing_set *set, __u32 fp, __u32 stamp,
					 __u32 lapse_ticks, __u32 proof)
{
	int w = sluice_standing_way_of(set, fp);

	if (w >= 0)
		return w;
	w = sluice_standing_free_way(set, stamp, lapse_ticks);
	if (w >= 0)
		return w;
	/* every way live: the weakest proof no stronger than this grant's,
	 * then the oldest stamp, as one key to maximize */
	__u64 best = 0;
	int victim = -1;

	for (int v = 0; v < SLUICE_STANDING_WAYS; v++) {
		__u32 p = sluice_standing_proof(set->record[v] >> 28);
		__u64 key = ((__u64)(4 - p) << 32) | sluice_standing_age(set->way[v], stamp);

		if (p <= proof && key > best) {
			best = key;
			victim = v;
		}
	}
	return victim;
}

/* record[w]: why and since when (sluice_abi.h, struct sluice_standing_set). */
#define SLUICE_STANDING_RECORD_TICK_MASK 0x0fffffffu

static inline __u32 sluice_standing_record(__u32 reason, __u32 stamp)
{
	return (reason << 28) | (stamp & SLUICE_STANDING_RECORD_TICK_MASK);
}

static inline __u32 sluice_standing_record_reason(__u32 record)
{
	return record >> 28;
}

/* Ticks since the first grant, modulo 2^28 (about 9 years). */
static inline __u32 sluice_standing_record_age(__u32 record, __u32 stamp)
{
	return (stamp - record) & SLUICE_STANDING_RECORD_TICK_MASK;
}

/* Whether a record's first grant came after the tenure line (a tick, modulo
 * 2^28 as the record keeps it): 1 when it is later by less than half the
 * tick's range (2^27 ticks, about 4.5 years, far beyond any lapse). A grant
 * at the line's own tick is tenured. */
static inline int sluice_standing_granted_after(__u32 record, __u32 line_tick)
{
	__u32 later = (record - line_tick) & SLUICE_STANDING_RECORD_TICK_MASK;

	return later != 0 && later < (SLUICE_STANDING_RECORD_TICK_MASK >> 1) + 1;
}

/*
 * Grant (or refresh) the standing of fp in its set for `reason`, stamped now;
 * the way written, or -1 when the set has no way this grant may take
 * (sluice_standing_victim). A way given to a new source (another fingerprint,
 * or its own lapsed) starts afresh: its standing bucket full, its seen count
 * 0, its record this grant's reason and tick, its source (src0, src1: the masked address as 16
 * bytes, sluice_standing_source) and its port (0: every frame of the source;
 * a UDP grant's: that peer port's UDP alone), all written before the way, so
 * a frame that matches the new entry finds them. A refresh of a live entry
 * keeps its bucket and its tick; a stronger proof than its record's (a
 * handshake after a UDP grant) takes the record's reason and the grant's
 * port, and a UDP grant of a UDP entry rebinds it to the new port (the
 * conversation the client is having now). A weaker proof changes nothing
 * but the stamp.
 */
static inline int sluice_standing_grant_from(struct sluice_standing_set *set, __u32 fp, __u32 stamp,
					     __u32 lapse_ticks, __u32 reason, __u64 src0, __u64 src1, __u32 port)
{
	int w = sluice_standing_victim(set, fp, stamp, lapse_ticks, sluice_standing_proof(reason));

	if (w < 0)
		return -1;
	w &= SLUICE_STANDING_WAYS - 1;
	__u64 old = set->way[w];

	if (sluice_standing_entry_fp(old) != fp || !sluice_standing_live(old, stamp, lapse_ticks)) {
		*(volatile __u64 *)&set->empty_at[w] = 0;
		*(volatile __u32 *)&set->record[w] = sluice_standing_record(reason, stamp);
		*(volatile __u32 *)&set->seen[w] = 0;
		*(volatile __u64 *)&set->source[2 * w] = src0;
		*(volatile __u64 *)&set->source[2 * w + 1] = src1;
		*(volatile __u16 *)&set->port[w] = (__u16)port;
	} else {
		__u32 rec = set->record[w];
		__u32 had = sluice_standing_proof(rec >> 28), has = sluice_standing_proof(reason);

		if (has > had) {
			*(volatile __u32 *)&set->record[w] = (reason << 28) | (rec & 0x0fffffffu);
			*(volatile __u16 *)&set->port[w] = (__u16)port;
		} else if (has == had && set->port[w] && port) {
			*(volatile __u16 *)&set->port[w] = (__u16)port;
		}
	}
	*(volatile __u64 *)&set->way[w] = sluice_standing_entry(fp, stamp);
	return w;
}

/* Does way w's standing hold for a frame that is UDP from source port
 * `udp_port` (host order; 0: not UDP, or a fragment without its header)? */
static inline int sluice_standing_port_holds(const struct sluice_standing_set *set, __u32 w, __u32 udp_port)
{
	__u32 bound = set->port[w & (SLUICE_STANDING_WAYS - 1)];

	return bound == 0 || bound == udp_port;
}

/* Can an address be a remote peer, one standing may be granted to? Not 0/8
 * (unspecified, "this network"), 127/8 (loopback), 224/4 (multicast) or
 * 240/4 (reserved, with the broadcast address); not ::, ::1 or ff00::/8
 * (multicast). IPv4 as its first octet, IPv6 as its first and last 32-bit
 * words (host order) and whether the two words between are zero: the
 * feeders and the host's grants both ask here. */
static inline int sluice_v4_peer(__u32 first_octet)
{
	return first_octet != 0 && first_octet != 127 && first_octet < 224;
}

static inline int sluice_v6_peer(__u32 first_word, int middle_zero, __u32 last_word)
{
	if (first_word == 0 && middle_zero && (last_word == 0 || last_word == 1))
		return 0;
	return (first_word >> 24) != 0xff;
}

/* A grant whose source is not known (the math's tests and benches): the
 * record's source stays 0, its standing for every frame. */
static inline int sluice_standing_grant(struct sluice_standing_set *set, __u32 fp, __u32 stamp,
					__u32 lapse_ticks, __u32 reason)
{
	return sluice_standing_grant_from(set, fp, stamp, lapse_ticks, reason, 0, 0, 0);
}

/* sluice_grant()'s last argument: a reason and a UDP grant's peer port (host
 * order) in one scalar, since a BPF function takes five. */
static inline __u32 sluice_grant_ask(__u32 reason, __u32 port)
{
	return (port << 16) | (reason & 0xffu);
}

/*
 * The per-prefix quota (sluice_abi.h, prefix_count). A kept source's prefix:
 * an IPv4 source (::ffff:a.b.c.d) to its /24, an IPv6 one to its /48, as
 * the 16 bytes memory holds (words loaded little-endian). Its bit: the keyed
 * SipHash of that prefix, masked to one bit per way of the table, so an
 * attacker cannot aim its prefixes at another's bit. Prefixes that share a
 * bit share a quota (at the default table, a bit per way: rare until the
 * table is nearly full).
 */
static inline void sluice_quota_prefix(__u64 k0, __u64 k1, __u64 out[2])
{
	if (k0 == 0 && (__u32)k1 == 0xffff0000u) { /* bytes 8..11: 00 00 ff ff */
		out[0] = 0;
		out[1] = k1 & 0x00ffffffffffffffull; /* byte 15, the host, cleared */
		return;
	}
	out[0] = k0 & 0x0000ffffffffffffull; /* bytes 0..5: the /48 */
	out[1] = 0;
}

static inline __u32 sluice_quota_bit(const __u64 key[2], __u64 k0, __u64 k1, __u32 standing_set_mask)
{
	__u64 p[2];

	sluice_quota_prefix(k0, k1, p);
	/* the key's first word turned, so the prefix's hash is not a source's */
	__u64 qkey[2] = { key[0] ^ 0x71756f7461ull, key[1] };
	__u64 h = sluice_siphash_16(qkey, p[0], p[1], SLUICE_SIPHASH_C, SLUICE_SIPHASH_D);

	return (__u32)h & ((standing_set_mask << 3) | (SLUICE_STANDING_WAYS - 1));
}

/* Is a prefix whose prefix_count word is `count` closed to a new source of
 * this proof (sluice_standing_proof) under `quota` (0: no quota)? A weak
 * proof is refused once the prefix holds `quota` entries, a handshake once
 * it holds `quota` handshakes. */
static inline int sluice_prefix_closed(__u32 count, __u32 quota, __u32 proof)
{
	__u32 held = proof == SLUICE_PROOF_HANDSHAKE ? count >> SLUICE_QUOTA_HANDSHAKE_SHIFT
						      : count & SLUICE_QUOTA_COUNT_MASK;

	return quota && held >= quota;
}

/* A prefix_count word: its entries and its handshakes, each saturated to
 * its 16 bits. A new source of this proof adds sluice_prefix_count(1, 1)
 * for a handshake, sluice_prefix_count(1, 0) for any other. */
static inline __u32 sluice_prefix_count(__u32 entries, __u32 handshakes)
{
	if (entries > SLUICE_QUOTA_COUNT_MASK)
		entries = SLUICE_QUOTA_COUNT_MASK;
	if (handshakes > SLUICE_QUOTA_COUNT_MASK)
		handshakes = SLUICE_QUOTA_COUNT_MASK;
	return (handshakes << SLUICE_QUOTA_HANDSHAKE_SHIFT) | entries;
}

/* A masked source (struct sluice_source's words) as the standing table keeps
 * it: 16 bytes of an IPv6 address, an IPv4 one as ::ffff:a.b.c.d, so the
 * family needs no bit of its own. */
static inline void sluice_standing_source(__u64 w0, __u64 w1, int is_v6, __u64 out[2])
{
	if (is_v6) {
		out[0] = w0;
		out[1] = w1;
		return;
	}
	/* bytes 8..11 00 00 ff ff, 12..15 the IPv4 address, as memory holds them */
	__u8 b[16] = { 0 };

	__builtin_memcpy(&b[12], &w0, 4);
	b[10] = 0xff;
	b[11] = 0xff;
	__builtin_memcpy(out, b, 16);
}

/*
 * Revoked standing (struct sluice_penalty_set): the daemon writes, a grant
 * reads. Stamps modulo 2^24 (SLUICE_PENALTY_TICK_MASK); a penalty runs
 * while its end is ahead of now by at most half of that (no penalty is
 * longer than 7 days, about 563,000 ticks), so one that ended reads as ended
 * until the stamp wraps, 194 days later.
 */
static inline __u64 sluice_penalty_entry(__u32 fp, __u32 until_stamp, __u32 revocations)
{
	return ((__u64)fp << 32) | ((__u64)(until_stamp & SLUICE_PENALTY_TICK_MASK) << 8) |
	       (revocations > 0xff ? 0xff : revocations);
}

static inline __u32 sluice_penalty_until(__u64 entry)
{
	return (__u32)(entry >> 8) & SLUICE_PENALTY_TICK_MASK;
}

static inline __u32 sluice_penalty_revocations(__u64 entry)
{
	return (__u32)entry & 0xffu;
}

static inline int sluice_penalty_runs(__u64 entry, __u32 stamp)
{
	__u32 left = (sluice_penalty_until(entry) - stamp) & SLUICE_PENALTY_TICK_MASK;
	return left != 0 && left <= (SLUICE_PENALTY_TICK_MASK >> 1);
}

/* Does fp's penalty run now? Then it may not be granted standing. */
static inline int sluice_penalized(const struct sluice_penalty_set *set, __u32 fp, __u32 stamp)
{
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++) {
		__u64 e = set->way[w];
		if (sluice_standing_entry_fp(e) == fp && sluice_penalty_runs(e, stamp))
			return 1;
	}
	return 0;
}

/*
 * Observed standing's candidates (struct sluice_observed_set): a source
 * without standing admitted by its slot pair while serving counts the
 * distinct ticks it was admitted in; at observe_periods it earns standing.
 * The tick is the standing stamp modulo 2^24; the lapse time (at most 7 days,
 * 563,000 ticks) is far below 2^24, so ages modulo 2^24 are right.
 */
#define SLUICE_OBSERVED_TICK_MASK 0xffffffu

static inline __u64 sluice_observed_entry(__u32 fp, __u32 stamp, __u32 count)
{
	return ((__u64)fp << 32) | ((__u64)(stamp & SLUICE_OBSERVED_TICK_MASK) << 8) | (count & 0xffu);
}

static inline __u32 sluice_observed_count_of(__u64 entry)
{
	return (__u32)entry & 0xffu;
}

static inline __u32 sluice_observed_age(__u64 entry, __u32 stamp)
{
	return (stamp - (__u32)(entry >> 8)) & SLUICE_OBSERVED_TICK_MASK;
}

/* Has fp a candidate admitted in this tick already? Then a frame has nothing
 * to write: the common case of a source that sends more than once a tick
 * costs one read of one line. */
static inline int sluice_observed_seen_now(const struct sluice_observed_set *set, __u32 fp, __u32 stamp)
{
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++) {
		__u64 e = set->way[w];
		if (sluice_standing_entry_fp(e) == fp && sluice_observed_age(e, stamp) == 0)
			return 1;
	}
	return 0;
}

/*
 * Count an admission of fp in tick `stamp` (not counted in this tick yet:
 * sluice_observed_seen_now() said so). Its candidate, else an empty way or
 * one not seen for the lapse time, else the one seen longest ago, is written.
 * A candidate not seen for the lapse time starts again at 1. Returns 1 when
 * fp reaches `periods` distinct ticks: its entry is emptied and the caller
 * grants standing (SLUICE_BY_OBSERVED). Concurrent writers may lose a count;
 * that only delays standing.
 */
static inline int sluice_observed_way_of(const struct sluice_observed_set *set, __u32 fp)
{
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++)
		if (sluice_standing_entry_fp(set->way[w]) == fp)
			return w;
	return -1;
}

static inline int sluice_observed_free_way(const struct sluice_observed_set *set, __u32 stamp, __u32 lapse_ticks)
{
	for (int w = 0; w < SLUICE_STANDING_WAYS; w++) {
		__u64 e = set->way[w];
		if (sluice_standing_entry_fp(e) == 0 || sluice_observed_age(e, stamp) > lapse_ticks)
			return w;
	}
	return -1;
}

static inline int sluice_observed_oldest_way(const struct sluice_observed_set *set, __u32 stamp)
{
	int oldest = 0;
	__u32 oldest_age = 0;

	for (int w = 0; w < SLUICE_STANDING_WAYS; w++) {
		__u32 age = sluice_observed_age(set->way[w], stamp);
		if (age > oldest_age) {
			oldest_age = age;
			oldest = w;
		}
	}
	return oldest;
}

/* (Three loops that each return as soon as they know, rather than one that
 * tracks all three answers: the verifier walks far fewer states.) */
static inline int sluice_observed_count(struct sluice_observed_set *set, __u32 fp, __u32 stamp,
					__u32 lapse_ticks, __u32 periods)
{
	__u32 count = 1;
	int w = sluice_observed_way_of(set, fp);

	if (w >= 0) {
		__u64 e = set->way[w & (SLUICE_STANDING_WAYS - 1)];
		if (sluice_observed_age(e, stamp) <= lapse_ticks)
			count = sluice_observed_count_of(e) + 1;
	} else {
		w = sluice_observed_free_way(set, stamp, lapse_ticks);
		if (w < 0)
			w = sluice_observed_oldest_way(set, stamp);
	}
	w &= SLUICE_STANDING_WAYS - 1;
	if (count >= periods) {
		*(volatile __u64 *)&set->way[w] = 0;
		return 1;
	}
	*(volatile __u64 *)&set->way[w] = sluice_observed_entry(fp, stamp, count);
	return 0;
}

#endif /* SLUICE_STANDING_H */
