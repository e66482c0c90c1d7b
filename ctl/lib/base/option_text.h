// option_text.h - text that sluiced and sluicectl hand to Boost.Program_options.
#pragma once

#include "base/result.h"

#include <string>
#include <string_view>

namespace sluice {

// Boost.Program_options (1.74) words its errors by replacing placeholders such
// as %original_token% with what was typed, in a loop that never ends when the
// typed text holds the placeholder itself: `sluiced --x%original_token%` hung,
// its memory growing without bound (found by tests/fuzz/options_fuzz.cpp).
// Text that holds one is refused before Boost sees it; `what` names it.
Status refuse_option_placeholders(std::string_view text, const std::string &what);

} // namespace sluice
