// line_framer.h - a byte stream cut into request lines, bounded; no socket
// in sight (the control server feeds it what it reads; tests feed it
// strings). A line is at most max_line bytes without its newline; a longer
// one is reported once and skipped up to its newline, and nothing of it is
// kept while it goes on. Blank lines (spaces, tabs, CRs) are no request and
// are dropped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice {

class LineFramer {
public:
	enum class Next {
		none,     // no complete line yet
		line,     // `line` holds the next one (without its newline)
		too_long, // an over-long line: reply with an error, then ask again
	};

	explicit LineFramer(size_t max_line) : max_line_(max_line) {}

	// Add bytes as read. True when they leave an unfinished line over the
	// limit: the caller reports it now (it cannot wait for the newline,
	// which may never come), and the rest of that line is dropped as it
	// arrives. Call only with no complete line waiting (has_line() false):
	// the server does not read a client that has requests waiting.
	bool append(std::string_view bytes);

	Next next(std::string &line);

	// A complete line (perhaps a blank or over-long one) is waiting.
	bool has_line() const { return in_.find('\n', head_) != std::string::npos; }
	// Bytes kept: the unanswered lines and the partial one.
	size_t buffered() const { return in_.size() - head_; }

private:
	size_t max_line_;
	std::string in_;       // read, not yet taken: whole lines, then a partial one
	size_t head_ = 0;      // in_[0, head_) is taken already
	bool skipping_ = false; // inside an over-long line: drop until newline
};

} // namespace sluice
