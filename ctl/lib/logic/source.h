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

// The slots of a policy class's bucket for `addr` (id != 0): the address
// masked to the class's prefixes, hashed with the class's key
// (source_key.h's sluice_class_key), as the program computes them.
// Class 0 is source_slots().
SourceSlots class_source_slots(const sluice_settings &settings, const Address &addr, uint32_t class_id,
			       uint32_t v4_prefix, uint32_t v6_prefix);

// The keyed hash of the address's source prefix: the one the data plane
// computes for a frame from it (its slots and its standing).
uint64_t source_hash(const sluice_settings &settings, const Address &addr);

} // namespace sluice
