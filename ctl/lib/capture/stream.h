// stream.h - what sluiced writes to a capture's pipe and sluicectl reads:
// messages of a fixed header and a payload, in host byte order (both ends
// run on the one host). Every message fits in PIPE_BUF, so a non-blocking
// write puts all of it in the pipe or none of it: sluiced never blocks on a
// slow reader, it counts what it could not write (lost_pipe).
#pragma once

#include "bpf/sluice_abi.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::capture {

enum class MessageType : uint16_t {
	frame = 1, // FrameHeader, then cap_len bytes of the frame
	stats = 2, // StreamStats
	end = 3,   // why sluiced ended the capture, as text
};

struct MessageHeader {
	uint16_t type;
	uint16_t _pad;
	uint32_t length; // payload bytes that follow
};

struct FrameHeader {
	uint64_t time_ns;  // CLOCK_REALTIME, nanoseconds
	uint32_t wire_len;
	uint32_t cap_len;
	uint16_t outcome;
	uint16_t cpu;
	uint32_t _pad;
};

// The data plane's counts (all CPUs) for this capture, and sluiced's.
struct StreamStats {
	uint64_t matched;   // frames of the outcomes asked for
	uint64_t copied;    // sampled and copied by the program
	uint64_t lost_ring; // sampled, the kernel buffer was full
	uint64_t lost_pipe; // read by sluiced, the pipe to sluicectl was full
};

inline constexpr size_t kMaxEndText = 512;
inline constexpr size_t kMaxMessage = sizeof(MessageHeader) + sizeof(FrameHeader) + SLUICE_CAPTURE_SNAPLEN_MAX;
static_assert(kMaxMessage <= 4096, "a message must fit in PIPE_BUF for an atomic pipe write");

// One message as bytes.
std::string encode_frame(const FrameHeader &h, const void *bytes);
std::string encode_stats(const StreamStats &s);
std::string encode_end(std::string_view why);

// Reads messages out of a byte stream that arrives in pieces.
class StreamReader {
public:
	struct Message {
		MessageType type;
		FrameHeader frame{};   // type frame
		std::string bytes;     // frame: its bytes; end: the text
		StreamStats stats{};   // type stats
	};
	void append(const char *data, size_t n) { buf_.append(data, n); }
	// The next complete message, none if more bytes are needed; an error
	// text (a malformed stream) in `error`.
	std::optional<Message> next(std::string &error);
	size_t buffered() const { return buf_.size() - pos_; }

private:
	std::string buf_;
	size_t pos_ = 0;
};

} // namespace sluice::capture
