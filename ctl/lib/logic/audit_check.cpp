#include "logic/audit_check.h"

namespace sluice {

std::vector<uint32_t> slots_outside_invariant(std::span<const uint64_t> empty_at, uint32_t first, uint64_t now)
{
	std::vector<uint32_t> outside;
	for (size_t i = 0; i < empty_at.size(); i++)
		if (empty_at[i] > now) // empty after now: tokens below zero
			outside.push_back(first + static_cast<uint32_t>(i));
	return outside;
}

} // namespace sluice
