// filter.h - a tcpdump filter expression, compiled by libpcap (Debian's
// libpcap-dev) for Ethernet frames on a dead handle, and tested against a
// captured frame the way tcpdump -r would (pcap_offline_filter).
#pragma once

#include "base/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sluice::capture {

class Filter {
public:
	// Compile `expression` for frames captured up to snaplen bytes; an
	// input error carrying libpcap's message for one it cannot compile.
	static Result<Filter> compile(const std::string &expression, uint32_t snaplen);
	Filter(Filter &&) noexcept;
	Filter &operator=(Filter &&) noexcept;
	~Filter();

	// Does the frame (its first bytes, its wire length) match?
	bool matches(std::string_view bytes, uint32_t wire_len) const;
	const std::string &expression() const { return expression_; }

private:
	Filter() = default;
	struct Program;
	std::unique_ptr<Program> prog_;
	std::string expression_;
};

} // namespace sluice::capture
