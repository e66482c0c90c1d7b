// port_span.h - a range of ports, inclusive: a rule's destination ports
// (logic/classes), the host's ephemeral range (sluiced's established peers).
// One type for the one fact "ports lo through hi".
#pragma once

#include <cstdint>

namespace sluice {

struct PortSpan {
	uint16_t lo = 0, hi = 65535; // lo <= hi (check_port_range)
	uint32_t width() const { return uint32_t(hi) - lo + 1; }
	bool operator==(const PortSpan &) const = default;
};

} // namespace sluice
