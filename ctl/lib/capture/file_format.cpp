#include "capture/file_format.h"

#include <cstring>

namespace sluice::capture {

namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 0x00000001;
constexpr uint32_t kEnhancedPacket = 0x00000006;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEnd = 0, kOptComment = 1;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2, kIfTsresol = 9;
constexpr uint32_t kPcapNanoMagic = 0xA1B23C4D;

void put32(std::string &s, uint32_t v)
{
	s.append(reinterpret_cast<const char *>(&v), 4);
}
void put16(std::string &s, uint16_t v)
{
	s.append(reinterpret_cast<const char *>(&v), 2);
}
void pad4(std::string &s)
{
	s.append((4 - s.size() % 4) % 4, '\0');
}
void option(std::string &s, uint16_t code, std::string_view value)
{
	put16(s, code);
	put16(s, static_cast<uint16_t>(value.size()));
	s.append(value);
	pad4(s);
}
// A block: type, total length, body, total length again.
std::string block(uint32_t type, const std::string &body)
{
	std::string out;
	uint32_t total = static_cast<uint32_t>(12 + body.size());
	put32(out, type);
	put32(out, total);
	out += body;
	put32(out, total);
	return out;
}

} // namespace

std::string file_header(FileFormat f, std::string_view iface, uint32_t snaplen)
{
	std::string out;
	if (f == FileFormat::pcap) {
		put32(out, kPcapNanoMagic);
		put16(out, 2);
		put16(out, 4);
		put32(out, 0); // thiszone
		put32(out, 0); // sigfigs
		put32(out, snaplen);
		put32(out, kLinktypeEthernet);
		return out;
	}
	std::string shb;
	put32(shb, kByteOrderMagic);
	put16(shb, 1); // major
	put16(shb, 0); // minor
	put32(shb, 0xFFFFFFFF); // section length: not given (-1, 64 bits)
	put32(shb, 0xFFFFFFFF);
	option(shb, kShbUserAppl, "sluicectl capture");
	option(shb, kOptEnd, "");
	out += block(kSectionHeader, shb);
	std::string idb;
	put16(idb, static_cast<uint16_t>(kLinktypeEthernet));
	put16(idb, 0);
	put32(idb, snaplen);
	option(idb, kIfName, iface);
	option(idb, kIfTsresol, std::string_view("\x09", 1));
	option(idb, kOptEnd, "");
	out += block(kInterfaceDescription, idb);
	return out;
}

std::string file_record(FileFormat f, uint64_t time_ns, uint32_t wire_len, std::string_view bytes,
			std::string_view comment)
{
	std::string out;
	if (f == FileFormat::pcap) {
		put32(out, static_cast<uint32_t>(time_ns / 1000000000ull));
		put32(out, static_cast<uint32_t>(time_ns % 1000000000ull));
		put32(out, static_cast<uint32_t>(bytes.size()));
		put32(out, wire_len);
		out.append(bytes);
		return out;
	}
	std::string epb;
	put32(epb, 0); // interface 0: the one description
	put32(epb, static_cast<uint32_t>(time_ns >> 32));
	put32(epb, static_cast<uint32_t>(time_ns));
	put32(epb, static_cast<uint32_t>(bytes.size()));
	put32(epb, wire_len);
	epb.append(bytes);
	pad4(epb);
	if (!comment.empty()) {
		option(epb, kOptComment, comment.substr(0, 0xFFFF));
		option(epb, kOptEnd, "");
	}
	return block(kEnhancedPacket, epb);
}

} // namespace sluice::capture
