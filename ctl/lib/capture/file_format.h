// file_format.h - the bytes of a capture file: pcapng (the default: one
// section header, one interface description, an enhanced packet block per
// frame with the outcome in its comment) or classic pcap with nanosecond
// timestamps (--pcap). Debian's libpcap writes only classic pcap, so these
// are ours; tests/control/capture_file_test.cpp checks them byte by byte and
// tests/netns/test_capture.py reads them back with tcpdump and tshark.
//
// pcapng (draft-ietf-opsawg-pcapng): little-endian (the host's, as the byte
// order magic says), blocks padded to 4 bytes, if_tsresol 9 (nanoseconds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::capture {

enum class FileFormat { pcapng, pcap };

inline constexpr uint32_t kLinktypeEthernet = 1;

// The file's start: pcapng's section header and interface description
// (naming the interface and the application), or pcap's global header.
std::string file_header(FileFormat f, std::string_view iface, uint32_t snaplen);
// One frame: time in nanoseconds since the epoch, the frame's length on the
// wire, the bytes captured; pcapng puts `comment` in the block's opt_comment
// (pcap has nowhere to put it).
std::string file_record(FileFormat f, uint64_t time_ns, uint32_t wire_len, std::string_view bytes,
			std::string_view comment);

} // namespace sluice::capture
