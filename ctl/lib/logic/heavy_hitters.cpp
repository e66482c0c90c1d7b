#include "logic/heavy_hitters.h"

#include "bpf/siphash.h"

#include <algorithm>
#include <stdexcept>

namespace sluice {

namespace {

uint64_t load_be(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

void store_be(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = static_cast<uint8_t>(v);
}

} // namespace

HitterKey cidr_key(const Cidr &c)
{
	HitterKey k;
	k.hi = load_be(c.addr.bytes.data());
	k.lo = load_be(c.addr.bytes.data() + 8);
	k.tag = (c.addr.family == Family::v6 ? 0x100u : 0u) | (c.prefix & 0xffu);
	return k;
}

Cidr key_cidr(const HitterKey &k)
{
	Cidr c;
	c.addr.family = (k.tag & 0x100u) ? Family::v6 : Family::v4;
	store_be(c.addr.bytes.data(), k.hi);
	store_be(c.addr.bytes.data() + 8, k.lo);
	c.prefix = k.tag & 0xffu;
	return c;
}

SpaceSaving::SpaceSaving(size_t capacity, uint64_t seed)
{
	if (capacity == 0 || capacity > (size_t(1) << 30))
		throw std::invalid_argument("SpaceSaving capacity must be 1..2^30");
	items_.resize(capacity);
	hashes_.resize(capacity);
	heap_.resize(capacity);
	pos_.resize(capacity);
	size_t table = 2;
	while (table < 2 * capacity)
		table <<= 1;
	table_.assign(table, kEmpty);
	mask_ = table - 1;
	key_[0] = seed;
	key_[1] = seed ^ 0x9e3779b97f4a7c15ull;
}

uint64_t SpaceSaving::hash(const HitterKey &k) const
{
	struct sluice_sip s = sluice_sip_init(key_);
	sluice_sip_compress(&s, k.hi, 1);
	sluice_sip_compress(&s, k.lo, 1);
	sluice_sip_compress(&s, (uint64_t(24) << 56) | k.tag, 1);
	return sluice_sip_finish(&s, 3);
}

size_t SpaceSaving::probe(const HitterKey &k, uint64_t h) const
{
	// At most half the table is in use, so an empty slot ends every chain.
	for (size_t i = h & mask_;; i = (i + 1) & mask_)
		if (table_[i] == kEmpty || items_[table_[i]].key == k)
			return i;
}

void SpaceSaving::table_erase(size_t i)
{
	// Backward-shift deletion: no tombstones, so chains never grow with churn.
	table_[i] = kEmpty;
	for (size_t j = (i + 1) & mask_; table_[j] != kEmpty; j = (j + 1) & mask_) {
		size_t home = hashes_[table_[j]] & mask_;
		// The entry at j may fill the hole at i unless its home lies in (i, j].
		if (((j - home) & mask_) >= ((j - i) & mask_)) {
			table_[i] = table_[j];
			table_[j] = kEmpty;
			i = j;
		}
	}
}

void SpaceSaving::heap_swap(size_t a, size_t b)
{
	std::swap(heap_[a], heap_[b]);
	pos_[heap_[a]] = static_cast<uint32_t>(a);
	pos_[heap_[b]] = static_cast<uint32_t>(b);
}

void SpaceSaving::sift_up(size_t h)
{
	while (h > 0) {
		size_t parent = (h - 1) / 2;
		if (items_[heap_[parent]].count <= items_[heap_[h]].count)
			return;
		heap_swap(h, parent);
		h = parent;
	}
}

void SpaceSaving::sift_down(size_t h)
{
	for (;;) {
		size_t l = 2 * h + 1, r = l + 1, least = h;
		if (l < size_ && items_[heap_[l]].count < items_[heap_[least]].count)
			least = l;
		if (r < size_ && items_[heap_[r]].count < items_[heap_[least]].count)
			least = r;
		if (least == h)
			return;
		heap_swap(h, least);
		h = least;
	}
}

void SpaceSaving::add(const HitterKey &key, uint64_t weight)
{
	if (weight == 0)
		return;
	total_ += weight;
	uint64_t h = hash(key);
	size_t slot = probe(key, h);
	if (table_[slot] != kEmpty) {
		uint32_t idx = table_[slot];
		items_[idx].count += weight;
		sift_down(pos_[idx]);
		return;
	}
	if (size_ < items_.size()) {
		auto idx = static_cast<uint32_t>(size_);
		items_[idx] = Item{key, weight, 0};
		hashes_[idx] = h;
		table_[slot] = idx;
		heap_[size_] = idx;
		pos_[idx] = static_cast<uint32_t>(size_);
		size_++;
		sift_up(size_ - 1);
		return;
	}
	// Full: the key with the least count makes room and hands over its count.
	uint32_t idx = heap_[0];
	uint64_t min = items_[idx].count;
	table_erase(probe(items_[idx].key, hashes_[idx]));
	slot = probe(key, h); // the erase may have shifted the chain
	items_[idx] = Item{key, min + weight, min};
	hashes_[idx] = h;
	table_[slot] = idx;
	sift_down(0);
}

const SpaceSaving::Item *SpaceSaving::find(const HitterKey &key) const
{
	size_t slot = probe(key, hash(key));
	return table_[slot] == kEmpty ? nullptr : &items_[table_[slot]];
}

std::vector<SpaceSaving::Item> SpaceSaving::top(size_t n) const
{
	std::vector<Item> out(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(size_));
	n = std::min(n, out.size());
	auto heavier = [](const Item &a, const Item &b) {
		return a.count != b.count ? a.count > b.count : a.error < b.error;
	};
	std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), heavier);
	out.resize(n);
	return out;
}

uint64_t SpaceSaving::min_count() const
{
	return size_ == items_.size() ? items_[heap_[0]].count : 0;
}

void SpaceSaving::clear()
{
	std::fill(table_.begin(), table_.end(), kEmpty);
	size_ = 0;
	total_ = 0;
}

} // namespace sluice
