#include "logic/prefix_quota.h"

#include "bpf/standing.h"

#include <algorithm>
#include <limits>

namespace sluice {

PrefixQuota::PrefixQuota(uint32_t bits, uint32_t quota, size_t candidates)
	: mask_(bits ? bits - 1 : 0), quota_(std::max<uint32_t>(1, quota)), counts_(std::max<uint32_t>(bits, 1)),
	  handshakes_(counts_.size()), words_(counts_.size()), offers_(candidates),
	  chosen_(candidates)
{
}

void PrefixQuota::begin_sweep()
{
	std::fill(counts_.begin(), counts_.end(), 0);
	std::fill(handshakes_.begin(), handshakes_.end(), 0);
	offered_ = 0;
}

static void add_one(uint16_t &c)
{
	if (c < std::numeric_limits<uint16_t>::max())
		c++;
}

void PrefixQuota::count(uint32_t bit, bool handshake)
{
	add_one(counts_[bit & mask_]);
	if (handshake)
		add_one(handshakes_[bit & mask_]);
}

uint32_t PrefixQuota::end_sweep()
{
	uint32_t over = 0;
	full_ = 0;
	for (size_t b = 0; b < counts_.size(); b++) {
		if (counts_[b] < quota_)
			continue;
		full_++;
		over += counts_[b] > quota_;
	}
	return over;
}

static uint32_t rise(uint32_t before, uint32_t after, uint32_t shift)
{
	const uint32_t b = (before >> shift) & SLUICE_QUOTA_COUNT_MASK, a = (after >> shift) & SLUICE_QUOTA_COUNT_MASK;
	return a > b ? a - b : 0;
}

std::span<const uint32_t> PrefixQuota::prefix_counts(std::span<const uint32_t> before, std::span<const uint32_t> after)
{
	const bool deltas = before.size() == counts_.size() && after.size() == counts_.size();
	for (size_t b = 0; b < counts_.size(); b++) {
		uint32_t entries = counts_[b], handshakes = handshakes_[b];
		if (deltas) {
			entries += rise(before[b], after[b], 0);
			handshakes += rise(before[b], after[b], SLUICE_QUOTA_HANDSHAKE_SHIFT);
		}
		words_[b] = sluice_prefix_count(entries, handshakes);
	}
	return words_;
}

bool PrefixQuota::over(uint32_t bit) const
{
	return counts_[bit & mask_] > quota_;
}

void PrefixQuota::offer(uint32_t bit, uint32_t index, uint32_t fp, uint32_t proof, uint32_t age)
{
	if (offered_ == offers_.size() || !over(bit))
		return;
	// Within a bit: weakest proof first (proof 1..3), then the oldest stamp.
	const uint64_t weakness = (uint64_t(3 - std::min<uint32_t>(proof, 3)) << 28) | std::min<uint32_t>(age, 0x0fffffff);
	offers_[offered_++] = Offer{(uint64_t(bit & mask_) << 32) | weakness, index, fp, proof >= SLUICE_PROOF_HANDSHAKE};
}

std::span<const QuotaEviction> PrefixQuota::choose()
{
	std::sort(offers_.begin(), offers_.begin() + offered_,
		  [](const Offer &a, const Offer &b) { return a.key > b.key; });
	size_t n = 0;
	for (size_t i = 0; i < offered_;) {
		const uint32_t bit = uint32_t(offers_[i].key >> 32);
		size_t j = i;
		while (j < offered_ && uint32_t(offers_[j].key >> 32) == bit)
			j++;
		// This sweep's excess of the bit, at most what was offered of it.
		const size_t excess = std::min<size_t>(counts_[bit] - quota_, j - i);
		for (size_t k = i; k < i + excess; k++) {
			chosen_[n++] = QuotaEviction{offers_[k].index, offers_[k].fp, bit};
			if (offers_[k].handshake && handshakes_[bit])
				handshakes_[bit]--;
		}
		counts_[bit] = uint16_t(counts_[bit] - excess);
		i = j;
	}
	offered_ = 0;
	return std::span<const QuotaEviction>(chosen_).first(n);
}

} // namespace sluice
