#include "ipc/line_framer.h"

namespace sluice {

bool LineFramer::append(std::string_view bytes)
{
	if (head_ > 0) { // drop what was taken before appending
		in_.erase(0, head_);
		head_ = 0;
	}
	in_.append(bytes);
	// Bounded here, not only when the line's turn comes: while skipping,
	// nothing is kept; a partial line is never kept past max_line_.
	size_t nl = in_.find('\n');
	if (skipping_) {
		if (nl == std::string::npos) {
			in_.clear();
			return false;
		}
		head_ = nl + 1;
		skipping_ = false;
		nl = in_.find('\n', head_);
	}
	if (nl == std::string::npos && in_.size() - head_ > max_line_) {
		in_.clear();
		head_ = 0;
		skipping_ = true;
		return true;
	}
	return false;
}

LineFramer::Next LineFramer::next(std::string &line)
{
	for (;;) {
		size_t nl = in_.find('\n', head_);
		if (skipping_) { // inside an over-long line: drop up to its newline
			if (nl == std::string::npos) {
				in_.clear();
				head_ = 0;
				return Next::none;
			}
			head_ = nl + 1;
			skipping_ = false;
			continue;
		}
		if (nl == std::string::npos) {
			if (in_.size() - head_ > max_line_) { // over-long and still coming
				in_.clear();
				head_ = 0;
				skipping_ = true;
				return Next::too_long;
			}
			return Next::none;
		}
		size_t len = nl - head_;
		if (len > max_line_) { // over-long, and complete already
			head_ = nl + 1;
			return Next::too_long;
		}
		line.assign(in_, head_, len);
		head_ = nl + 1;
		if (line.find_first_not_of(" \t\r") == std::string::npos)
			continue; // blank line: nothing asked
		return Next::line;
	}
}

} // namespace sluice
