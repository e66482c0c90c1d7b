// address.h - IP addresses and CIDR prefixes as operators type them.
#pragma once

#include "base/result.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

enum class Family { v4, v6 };

struct Address {
	Family family = Family::v4;
	std::array<uint8_t, 16> bytes{}; // network order; IPv4 uses the first 4

	std::string str() const;
	bool operator==(const Address &) const = default;
};

struct Cidr {
	Address addr;
	uint32_t prefix = 0;

	std::string str() const;
	bool operator==(const Cidr &) const = default;
};

// "198.18.0.1" or "2001:2::1". Anything else is an input error naming the text.
Result<Address> parse_address(std::string_view text);

// "198.18.0.0/15", "2001:2::/48", or a bare address (a /32 or /128). A prefix
// with host bits set is refused with the prefix it probably meant.
Result<Cidr> parse_cidr(std::string_view text);

// A list file: one CIDR a line, '#' comments and blank lines ignored. The first
// bad line fails the whole file, named as "<name>:<line>: <why>".
// The lines of a text holding one item a line (netset files, lists read
// from a file): each line's `#` comment and surrounding blanks cut, lines
// left empty skipped. The one reader of that format.
struct ContentLine {
	size_t number; // 1-based line number
	size_t column; // 1-based column of the item
	std::string_view text;
};

class ContentLines {
public:
	explicit ContentLines(std::string_view text) : rest_(text) {}
	std::optional<ContentLine> next();

private:
	std::string_view rest_;
	size_t number_ = 0;
};

Result<std::vector<Cidr>> parse_cidr_lines(std::string_view text, const std::string &name);

} // namespace sluice
