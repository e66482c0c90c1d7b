// standing_reason.h - the names of why a source has standing (enum
// sluice_standing_reason), from sluice_abi.h's SLUICE_STANDING_REASON_TABLE,
// the one list of them (bpf/sluice_abi.py reads the same rows for Python).
#pragma once

#include "base/names.h"
#include "bpf/sluice_abi.h"

#include <array>
#include <string_view>

namespace sluice {

inline constexpr std::array<Named<sluice_standing_reason>, SLUICE_STANDING_REASONS - 1> kStandingReasonNames{{
#define SLUICE_STANDING_REASON_ROW(sym, value, name) {sym, name},
	SLUICE_STANDING_REASON_TABLE(SLUICE_STANDING_REASON_ROW)
#undef SLUICE_STANDING_REASON_ROW
}};

// "accepted", "connected", "udp", "existing", "observed"; "unknown" for 0 or
// a value no row has (a record written by another build).
constexpr std::string_view standing_reason_name(sluice_standing_reason r)
{
	return name_of(kStandingReasonNames, r);
}

} // namespace sluice
