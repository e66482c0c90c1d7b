#include "base/option_text.h"

namespace sluice {

Status refuse_option_placeholders(std::string_view text, const std::string &what)
{
	for (const char *p : {"%option%", "%canonical_option%", "%original_token%", "%value%", "%prefix%",
			      "%invalid_line%"})
		if (text.find(p) != std::string_view::npos)
			return invalid(what + " holds '" + p + "', which no option or value takes");
	return {};
}

} // namespace sluice
