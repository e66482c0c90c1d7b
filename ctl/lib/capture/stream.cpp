#include "capture/stream.h"

#include <cstring>

namespace sluice::capture {

namespace {

std::string message(MessageType type, const void *a, size_t an, const void *b = nullptr, size_t bn = 0)
{
	MessageHeader h{static_cast<uint16_t>(type), 0, static_cast<uint32_t>(an + bn)};
	std::string out(sizeof(h) + an + bn, '\0');
	std::memcpy(out.data(), &h, sizeof(h));
	if (an)
		std::memcpy(out.data() + sizeof(h), a, an);
	if (bn)
		std::memcpy(out.data() + sizeof(h) + an, b, bn);
	return out;
}

} // namespace

std::string encode_frame(const FrameHeader &h, const void *bytes)
{
	return message(MessageType::frame, &h, sizeof(h), bytes, h.cap_len);
}

std::string encode_stats(const StreamStats &s)
{
	return message(MessageType::stats, &s, sizeof(s));
}

std::string encode_end(std::string_view why)
{
	if (why.size() > kMaxEndText)
		why = why.substr(0, kMaxEndText);
	return message(MessageType::end, why.data(), why.size());
}

std::optional<StreamReader::Message> StreamReader::next(std::string &error)
{
	error.clear();
	if (buffered() < sizeof(MessageHeader))
		return std::nullopt;
	MessageHeader h;
	std::memcpy(&h, buf_.data() + pos_, sizeof(h));
	if (sizeof(h) + h.length > kMaxMessage) {
		error = "a message of " + std::to_string(h.length) + " bytes (at most " + std::to_string(kMaxMessage) + ")";
		return std::nullopt;
	}
	if (buffered() < sizeof(h) + h.length)
		return std::nullopt;
	const char *p = buf_.data() + pos_ + sizeof(h);
	Message m{static_cast<MessageType>(h.type)};
	switch (m.type) {
	case MessageType::frame:
		if (h.length < sizeof(FrameHeader)) {
			error = "a frame message shorter than its header";
			return std::nullopt;
		}
		std::memcpy(&m.frame, p, sizeof(FrameHeader));
		if (m.frame.cap_len != h.length - sizeof(FrameHeader) || m.frame.cap_len > m.frame.wire_len) {
			error = "a frame message whose lengths disagree";
			return std::nullopt;
		}
		m.bytes.assign(p + sizeof(FrameHeader), m.frame.cap_len);
		break;
	case MessageType::stats:
		if (h.length != sizeof(StreamStats)) {
			error = "a stats message of another size";
			return std::nullopt;
		}
		std::memcpy(&m.stats, p, sizeof(StreamStats));
		break;
	case MessageType::end:
		m.bytes.assign(p, h.length);
		break;
	default:
		error = "a message of unknown type " + std::to_string(h.type);
		return std::nullopt;
	}
	pos_ += sizeof(h) + h.length;
	if (pos_ > 65536 && pos_ * 2 > buf_.size()) {
		buf_.erase(0, pos_);
		pos_ = 0;
	}
	return m;
}

} // namespace sluice::capture
