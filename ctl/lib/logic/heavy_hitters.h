// heavy_hitters.h - the heaviest keys of a stream in constant memory: the
// Space-Saving algorithm (Metwally, Agrawal, El Abbadi, "Efficient computation
// of frequent and top-k elements in data streams", ICDT 2005).
//
// A summary of capacity m monitors at most m keys, each with a count and an
// error. A key already monitored gains its weight; a new key takes the place
// of the key with the smallest count c_min, inheriting count c_min + weight
// and error c_min. With N the total weight added, the classic guarantees hold:
//
//   * counts overestimate, by at most their error:  count - error <= f <= count
//   * every error, and c_min, is at most N / m
//   * every key with f > N / m is monitored (so with f > c_min too)
//   * the counts sum to N exactly
//
// Memory is fixed at construction (m entries, a min-heap of m indices and an
// open-addressed table of at least 2m slots): add() allocates nothing, however
// many distinct keys arrive. The table is hashed with keyed SipHash so a sender
// who chooses the keys (spoofed sources) cannot aim them at one probe chain.
// Pure: no I/O, no clock; sluiced feeds it sampled drops (managed_interface).
#pragma once

#include "base/address.h"

#include <linux/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice {

// 16 bytes and a tag: an address prefix (cidr_key) or any test key.
struct HitterKey {
	uint64_t hi = 0, lo = 0;
	uint32_t tag = 0;
	bool operator==(const HitterKey &) const = default;
};

HitterKey cidr_key(const Cidr &c);
Cidr key_cidr(const HitterKey &k);

class SpaceSaving {
public:
	struct Item {
		HitterKey key;
		uint64_t count = 0; // an overestimate of the key's weight
		uint64_t error = 0; // count - error is an underestimate
	};

	// capacity >= 1. seed keys the table's hash (any value; 0 is fine in tests).
	explicit SpaceSaving(size_t capacity, uint64_t seed = 0);

	void add(const HitterKey &key, uint64_t weight = 1);
	// The n heaviest monitored keys, by count, heaviest first (ties: smaller error first).
	std::vector<Item> top(size_t n) const;
	// The monitored item of a key, or nullptr.
	const Item *find(const HitterKey &key) const;
	// Forget every key; keeps the memory.
	void clear();

	size_t size() const { return size_; }
	size_t capacity() const { return items_.size(); }
	uint64_t total() const { return total_; }
	// The smallest monitored count once the summary is full, else 0: every
	// unmonitored key's weight is at most this.
	uint64_t min_count() const;

private:
	static constexpr uint32_t kEmpty = UINT32_MAX;
	uint64_t hash(const HitterKey &k) const;
	size_t probe(const HitterKey &k, uint64_t h) const; // the table slot holding k, or an empty one
	void table_erase(size_t slot);
	void sift_down(size_t h);
	void sift_up(size_t h);
	void heap_swap(size_t a, size_t b);

	std::vector<Item> items_;     // [0, size_) in use
	std::vector<uint64_t> hashes_; // hash of each item's key
	std::vector<uint32_t> heap_;  // min-heap of item indices by count
	std::vector<uint32_t> pos_;   // item index -> its place in heap_
	std::vector<uint32_t> table_; // open addressing, linear probing: item index or kEmpty
	size_t mask_ = 0;
	size_t size_ = 0;
	uint64_t total_ = 0;
	__u64 key_[2] = {0, 0};
};

} // namespace sluice
