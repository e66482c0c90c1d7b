// source.h - which source prefix an address counts as, and its two slots,
// computed with the data plane's own header (source_key.h) and the key and
// prefixes the program was loaded with.
#pragma once

#include "base/address.h"
#include "bpf/sluice_abi.h"

#include <array>
#include <cstdint>

namespace sluice {

struct SourceSlots {
	Cidr source;                  // the address masked to the configured prefix
	std::array<uint32_t, 2> slots; // equal when the program runs with one choice
};

SourceSlots source_slots(const sluice_settings &settings, const Address &addr);

// The keyed hash of the address's source prefix: the one the data plane
// computes for a frame from it (its slots and its standing).
uint64_t source_hash(const sluice_settings &settings, const Address &addr);

} // namespace sluice
