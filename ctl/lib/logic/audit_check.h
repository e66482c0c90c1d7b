// audit_check.h - the audit's invariant, as a pure function of slot values.
//
// The invariant is 0 <= tokens <= burst for every slot. In the stored form
// (bpf/bucket.h) a slot is empty_at, and its tokens are its credit
// (now - empty_at) capped at burst on every read: a count above burst cannot
// be read, so lowering burst clamps every slot at once and that half of the
// invariant holds by construction, whatever the config. What can break is the
// other half: a slot whose empty_at lies after now holds less than nothing (a
// write made with another clock, or a bug). So the check needs the slot values
// and now, and nothing of the config.
//
// bpf/audit reads the slots from the map and keeps the sweep; this says which
// of the values it read are outside the invariant.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sluice {

// The slots among values[i] (slot first + i) outside 0 <= tokens <= burst at
// `now` (the data plane's clock, biased as bucket.h takes it), in order.
std::vector<uint32_t> slots_outside_invariant(std::span<const uint64_t> empty_at, uint32_t first, uint64_t now);

} // namespace sluice
