#include "base/address.h"

#include <arpa/inet.h>
#include <charconv>

namespace sluice {

std::string Address::str() const
{
	char buf[INET6_ADDRSTRLEN] = {};
	inet_ntop(family == Family::v4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof(buf));
	return buf;
}

std::string Cidr::str() const
{
	return addr.str() + "/" + std::to_string(prefix);
}

Result<Address> parse_address(std::string_view text)
{
	std::string s(text);
	Address a;
	if (s.find('\0') != std::string::npos) // inet_pton stops at a NUL and would accept the text before it
		return invalid("'" + s + "' is not an IPv4 or IPv6 address");
	if (s.find(':') == std::string::npos) {
		a.family = Family::v4;
		if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1)
			return a;
	} else {
		a.family = Family::v6;
		if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1)
			return a;
	}
	return invalid("'" + s + "' is not an IPv4 or IPv6 address");
}

Result<Cidr> parse_cidr(std::string_view text)
{
	auto slash = text.find('/');
	auto addr = parse_address(text.substr(0, slash));
	if (!addr)
		return invalid("'" + std::string(text) + "' is not a CIDR prefix: " + addr.error().message);
	uint32_t max = addr->family == Family::v4 ? 32 : 128;
	uint32_t prefix = max;
	if (slash != std::string_view::npos) {
		auto p = text.substr(slash + 1);
		auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), prefix);
		if (p.empty() || ec != std::errc() || end != p.data() + p.size() || prefix > max)
			return invalid("'" + std::string(text) + "': prefix length must be 0.." +
				       std::to_string(max));
	}
	Cidr c{*addr, prefix};
	Cidr masked = c;
	for (uint32_t bit = prefix; bit < max; bit++)
		masked.addr.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
	if (masked.addr != c.addr)
		return invalid("CIDR " + std::string(text) + " has host bits set; did you mean " +
			       masked.str() + "?");
	return c;
}

std::optional<ContentLine> ContentLines::next()
{
	while (!rest_.empty()) {
		number_++;
		size_t eol = rest_.find('\n');
		std::string_view line = rest_.substr(0, eol);
		rest_ = eol == std::string_view::npos ? std::string_view{} : rest_.substr(eol + 1);
		line = line.substr(0, line.find('#'));
		size_t first = line.find_first_not_of(" \t\r");
		if (first == std::string_view::npos)
			continue;
		return ContentLine{number_, first + 1, line.substr(first, line.find_last_not_of(" \t\r") - first + 1)};
	}
	return std::nullopt;
}

Result<std::vector<Cidr>> parse_cidr_lines(std::string_view text, const std::string &name)
{
	std::vector<Cidr> out;
	ContentLines lines(text);
	while (auto line = lines.next()) {
		auto c = parse_cidr(line->text);
		if (!c)
			return invalid(name + ":" + std::to_string(line->number) + ": " + c.error().message);
		out.push_back(*c);
	}
	return out;
}

} // namespace sluice
