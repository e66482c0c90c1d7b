// cookie_mode.h - the names of sluiced's --cookies values (enum
// sluice_cookie_mode), from sluice_abi.h's SLUICE_COOKIE_MODE_TABLE, the one
// list of them (bpf/sluice_abi.py reads the same rows for Python).
#pragma once

#include "base/names.h"
#include "bpf/sluice_abi.h"

#include <array>
#include <string_view>

namespace sluice {

inline constexpr std::array<Named<sluice_cookie_mode>, SLUICE_COOKIE_MODES> kCookieModeNames{{
#define SLUICE_COOKIE_MODE_ROW(sym, value, name) {sym, name},
	SLUICE_COOKIE_MODE_TABLE(SLUICE_COOKIE_MODE_ROW)
#undef SLUICE_COOKIE_MODE_ROW
}};

// "off", "shedding", "always"; "unknown" for a value no row has.
constexpr std::string_view cookie_mode_name(sluice_cookie_mode m)
{
	return name_of(kCookieModeNames, m);
}

} // namespace sluice
