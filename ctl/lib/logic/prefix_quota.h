// prefix_quota.h - one /24 (IPv4) or /48 (IPv6) holds only its quota of the
// standing table. The data plane counts each new source it grants under its
// prefix's bit (bpf/standing.h, sluice_quota_bit: the keyed hash of the
// prefix, one bit per way of the table; the prefix_count map) and refuses a
// new source of a prefix at its quota at once: a weak proof once the prefix
// holds its quota, a handshake once it holds its quota of handshakes (weak
// entries never keep out a handshake). It never takes a count away. Pure
// logic: every sweep of the table (kOccupancySweepS) the daemon recounts
// every live entry here, in one scan, and then:
//   - a prefix holding more than its quota (a handshake that came to a
//     prefix full of weaker entries, or grants that raced on two CPUs) gives
//     up the excess: a second scan offers the entries of those prefixes
//     here, and the weakest proof, then the least recently seen, are evicted
//     first, so a source with a handshake and recent traffic goes only when
//     nothing weaker of its prefix is left;
//   - the counts, after the evictions, are written back whole, so entries
//     that lapsed or were revoked leave their prefix's count.
// Memory is fixed at construction: a count per bit, the words written, and
// a bounded list of candidates (more than that many in one sweep: the rest
// are handled by the next).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice {

struct QuotaEviction {
	uint32_t index; // set x SLUICE_STANDING_WAYS + way
	uint32_t fp;    // the fingerprint it held when offered
	uint32_t bit;   // its prefix's bit
};

class PrefixQuota {
public:
	// bits: one per way of the table (a power of two); quota: entries a
	// prefix may hold (>= 1); candidates: the most entries one sweep can
	// consider for eviction.
	PrefixQuota(uint32_t bits, uint32_t quota, size_t candidates = 65536);

	uint32_t quota() const { return quota_; }
	// A sweep: begin, count() each live entry once (handshake: its proof is
	// one, bpf/standing.h's strongest), end.
	void begin_sweep();
	void count(uint32_t bit, bool handshake);
	// The sweep is whole. Returns the number of prefixes over their quota
	// (0: no eviction scan needed).
	uint32_t end_sweep();
	bool over(uint32_t bit) const;
	// The eviction scan: each live entry of a prefix over its quota
	// (over()), with its proof (bpf/standing.h, sluice_standing_proof:
	// higher is stronger) and its age in ticks since it was last stamped.
	void offer(uint32_t bit, uint32_t index, uint32_t fp, uint32_t proof, uint32_t age);
	// Of the offered entries, the ones to evict: for each prefix, as many
	// as it holds over its quota, weakest proof first, then the oldest
	// (their prefix's counts lose them). Clears the offers.
	std::span<const QuotaEviction> choose();
	// prefix_count as it should be written: each bit's entries and
	// handshakes (bpf/standing.h, sluice_prefix_count), as counted less
	// what choose() evicted, plus what the data plane added to the map
	// while the table was scanned (each field's rise from `before`, read
	// just before the scan, to `after`, read just before this write; none
	// when either is empty). The scan may have seen some of those grants
	// already: they are counted twice, until the next recount, so that a
	// grant during the scan is never lost from its prefix's count.
	std::span<const uint32_t> prefix_counts(std::span<const uint32_t> before = {},
						std::span<const uint32_t> after = {});
	// Prefixes that held their quota or more at the sweep's end.
	uint32_t prefixes_full() const { return full_; }

private:
	struct Offer {
		uint64_t key; // bit << 32 | (3 - proof) << 28 | age: within a bit, the higher goes first
		uint32_t index, fp;
		bool handshake;
	};
	uint32_t mask_, quota_;
	std::vector<uint16_t> counts_, handshakes_;
	std::vector<uint32_t> words_;
	std::vector<Offer> offers_;
	size_t offered_ = 0;
	std::vector<QuotaEviction> chosen_;
	uint32_t full_ = 0;
};

} // namespace sluice
