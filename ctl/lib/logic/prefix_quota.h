// prefix_quota.h - one /24 (IPv4) or /48 (IPv6) holds only its quota of the
// standing table. Pure logic: the daemon sweeps the table a part each period
// (the occupancy sweep it does anyway) and counts each live entry under its
// prefix's bit (bpf/standing.h, sluice_quota_bit: the keyed hash of the
// prefix, one bit per way of the table). At the end of a sweep:
//   - a prefix holding its quota or more has its bit set in prefix_full's
//     first half, so the data plane refuses a new source of it whose proof
//     is weaker than a handshake (a refresh of one it holds still passes);
//   - a prefix holding its quota of handshakes has its bit set in the second
//     half too, and then refuses a new handshake as well. A handshake is
//     never refused for weaker entries: a local user's UDP grants cannot
//     keep a real client of that prefix out (the sweep evicts them for it);
//   - a prefix holding more than its quota (grants made within a sweep,
//     before its bit was set) gives up the excess: a second scan offers the
//     entries of those prefixes here, and the weakest proof, then the least
//     recently seen, are evicted first, so a source with a handshake and
//     recent traffic goes only when nothing weaker of its prefix is left.
// Memory is fixed at construction: a count per bit, the bit words, and a
// bounded list of candidates (more than that many in one sweep: the rest
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
	// The sweep is whole: the bit words are final (full_words()). Returns
	// the number of prefixes over their quota (0: no eviction scan needed).
	uint32_t end_sweep();
	bool over(uint32_t bit) const;
	// The eviction scan: each live entry of a prefix over its quota
	// (over()), with its proof (bpf/standing.h, sluice_standing_proof:
	// higher is stronger) and its age in ticks since it was last stamped.
	void offer(uint32_t bit, uint32_t index, uint32_t fp, uint32_t proof, uint32_t age);
	// Of the offered entries, the ones to evict: for each prefix, as many
	// as it holds over its quota, weakest proof first, then the oldest.
	// Clears the offers.
	std::span<const QuotaEviction> choose();
	// prefix_full as it should be: words [0, W) bit b set iff its prefix
	// holds >= quota entries; words [W, 2W) iff it holds >= quota
	// handshakes (W: one word per 64 bits).
	std::span<const uint64_t> full_words() const { return words_; }
	uint32_t prefixes_full() const { return full_; }

private:
	struct Offer {
		uint64_t key; // bit << 32 | (3 - proof) << 28 | age: within a bit, the higher goes first
		uint32_t index, fp;
	};
	uint32_t mask_, quota_;
	std::vector<uint16_t> counts_, handshakes_;
	std::vector<uint64_t> words_;
	std::vector<Offer> offers_;
	size_t offered_ = 0;
	std::vector<QuotaEviction> chosen_;
	uint32_t full_ = 0;
};

} // namespace sluice
