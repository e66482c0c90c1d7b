// The capture room (ctl/lib/capture): pcapng and pcap bytes, the pipe's
// stream, the filter expression through libpcap. tests/netns/test_capture.py
// reads real files back with tcpdump and tshark.
#include "capture/file_format.h"
#include "capture/filter.h"
#include "capture/stream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace sluice::capture;

namespace {

uint32_t u32(const std::string &s, size_t at)
{
	uint32_t v;
	std::memcpy(&v, s.data() + at, 4);
	return v;
}
uint16_t u16(const std::string &s, size_t at)
{
	uint16_t v;
	std::memcpy(&v, s.data() + at, 2);
	return v;
}

// A 60-byte Ethernet/IPv4/UDP frame 198.18.0.2:4000 -> 198.18.0.1:53.
std::string udp_frame(uint8_t last_src = 2, uint16_t dport = 53)
{
	std::string f(60, '\0');
	auto *b = reinterpret_cast<uint8_t *>(f.data());
	std::memset(b, 0xaa, 6);
	std::memset(b + 6, 0xbb, 6);
	b[12] = 0x08;
	b[13] = 0x00;
	uint8_t *ip = b + 14;
	ip[0] = 0x45;
	ip[3] = 46; // total length
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 198, ip[13] = 18, ip[14] = 0, ip[15] = last_src;
	ip[16] = 198, ip[17] = 18, ip[18] = 0, ip[19] = 1;
	uint8_t *udp = ip + 20;
	udp[0] = 4000 >> 8, udp[1] = 4000 & 0xff;
	udp[2] = dport >> 8, udp[3] = dport & 0xff;
	udp[5] = 26;
	return f;
}

} // namespace

TEST(CaptureFile, PcapngHeaderIsOneSectionAndOneEthernetInterface)
{
	std::string h = file_header(FileFormat::pcapng, "veth0", 128);
	// Section header block.
	ASSERT_GE(h.size(), 28u);
	EXPECT_EQ(u32(h, 0), 0x0A0D0D0Au);
	uint32_t shb_len = u32(h, 4);
	EXPECT_EQ(shb_len % 4, 0u);
	EXPECT_EQ(u32(h, shb_len - 4), shb_len);
	EXPECT_EQ(u32(h, 8), 0x1A2B3C4Du);
	EXPECT_EQ(u16(h, 12), 1); // major
	EXPECT_EQ(u16(h, 14), 0); // minor
	EXPECT_EQ(u32(h, 16), 0xFFFFFFFFu);
	EXPECT_EQ(u32(h, 20), 0xFFFFFFFFu);
	// Interface description block right after.
	size_t idb = shb_len;
	EXPECT_EQ(u32(h, idb), 1u);
	uint32_t idb_len = u32(h, idb + 4);
	EXPECT_EQ(idb + idb_len, h.size());
	EXPECT_EQ(u32(h, idb + idb_len - 4), idb_len);
	EXPECT_EQ(u16(h, idb + 8), kLinktypeEthernet);
	EXPECT_EQ(u32(h, idb + 12), 128u); // snaplen
	// Options: if_name "veth0", if_tsresol 9, end.
	EXPECT_EQ(u16(h, idb + 16), 2);
	EXPECT_EQ(u16(h, idb + 18), 5);
	EXPECT_EQ(h.substr(idb + 20, 5), "veth0");
	EXPECT_EQ(u16(h, idb + 28), 9);
	EXPECT_EQ(u16(h, idb + 30), 1);
	EXPECT_EQ(static_cast<uint8_t>(h[idb + 32]), 9);
	EXPECT_EQ(u16(h, idb + 36), 0);
	EXPECT_EQ(u16(h, idb + 38), 0);
	EXPECT_EQ(idb_len, 8u + 8 + 12 + 8 + 4 + 4); // header, fixed part, if_name, if_tsresol, end, trailer
}

TEST(CaptureFile, EnhancedPacketBlockCarriesTimeLengthsBytesAndComment)
{
	std::string frame = udp_frame().substr(0, 42); // captured 42 of 60
	const uint64_t t = 1'764'600'000'123'456'789ull;
	std::string b = file_record(FileFormat::pcapng, t, 60, frame, "sluice: drop_rate (cpu 1)");
	EXPECT_EQ(u32(b, 0), 6u);
	uint32_t len = u32(b, 4);
	EXPECT_EQ(len, b.size());
	EXPECT_EQ(len % 4, 0u);
	EXPECT_EQ(u32(b, len - 4), len);
	EXPECT_EQ(u32(b, 8), 0u); // interface 0
	EXPECT_EQ((uint64_t(u32(b, 12)) << 32) | u32(b, 16), t);
	EXPECT_EQ(u32(b, 20), 42u);
	EXPECT_EQ(u32(b, 24), 60u);
	EXPECT_EQ(b.substr(28, 42), frame);
	size_t opt = 28 + 44; // 42 padded to 44
	EXPECT_EQ(b.substr(28 + 42, 2), std::string(2, '\0'));
	EXPECT_EQ(u16(b, opt), 1); // opt_comment
	EXPECT_EQ(u16(b, opt + 2), 25);
	EXPECT_EQ(b.substr(opt + 4, 25), "sluice: drop_rate (cpu 1)");
	size_t end = opt + 4 + 28;
	EXPECT_EQ(u16(b, end), 0);
	EXPECT_EQ(u16(b, end + 2), 0);
	EXPECT_EQ(end + 4 + 4, len);
}

TEST(CaptureFile, ClassicPcapIsNanosecondEthernet)
{
	std::string h = file_header(FileFormat::pcap, "veth0", 256);
	ASSERT_EQ(h.size(), 24u);
	EXPECT_EQ(u32(h, 0), 0xA1B23C4Du);
	EXPECT_EQ(u16(h, 4), 2);
	EXPECT_EQ(u16(h, 6), 4);
	EXPECT_EQ(u32(h, 16), 256u);
	EXPECT_EQ(u32(h, 20), 1u);
	std::string frame = udp_frame();
	std::string r = file_record(FileFormat::pcap, 5'000'000'007ull, 60, frame, "ignored");
	ASSERT_EQ(r.size(), 16u + 60);
	EXPECT_EQ(u32(r, 0), 5u);
	EXPECT_EQ(u32(r, 4), 7u);
	EXPECT_EQ(u32(r, 8), 60u);
	EXPECT_EQ(u32(r, 12), 60u);
	EXPECT_EQ(r.substr(16), frame);
}

TEST(CaptureStream, FramesStatsAndEndComeBackInPieces)
{
	FrameHeader h{};
	h.time_ns = 42;
	h.wire_len = 60;
	h.cap_len = 60;
	h.outcome = SLUICE_DROP_SHED;
	h.cpu = 3;
	std::string frame = udp_frame();
	std::string all = encode_frame(h, frame.data()) + encode_stats({10, 5, 1, 2}) + encode_end("bye");
	StreamReader r;
	std::string error;
	// One byte at a time: nothing comes out before a message is whole.
	size_t got = 0;
	for (char c : all) {
		r.append(&c, 1);
		while (auto m = r.next(error)) {
			ASSERT_TRUE(error.empty());
			if (got == 0) {
				EXPECT_EQ(m->type, MessageType::frame);
				EXPECT_EQ(m->frame.outcome, SLUICE_DROP_SHED);
				EXPECT_EQ(m->frame.cpu, 3);
				EXPECT_EQ(m->bytes, frame);
			} else if (got == 1) {
				EXPECT_EQ(m->type, MessageType::stats);
				EXPECT_EQ(m->stats.matched, 10u);
				EXPECT_EQ(m->stats.lost_pipe, 2u);
			} else {
				EXPECT_EQ(m->type, MessageType::end);
				EXPECT_EQ(m->bytes, "bye");
			}
			got++;
		}
	}
	EXPECT_EQ(got, 3u);
	EXPECT_EQ(r.buffered(), 0u);
}

TEST(CaptureStream, MalformedMessagesAreErrorsNotCrashes)
{
	StreamReader r;
	std::string error;
	MessageHeader big{1, 0, 1u << 20};
	r.append(reinterpret_cast<const char *>(&big), sizeof(big));
	EXPECT_FALSE(r.next(error));
	EXPECT_NE(error.find("at most"), std::string::npos);

	StreamReader lie;
	FrameHeader h{};
	h.wire_len = 10;
	h.cap_len = 20; // more than the wire
	std::string bytes(20, 'x');
	std::string m = encode_frame(h, bytes.data());
	lie.append(m.data(), m.size());
	EXPECT_FALSE(lie.next(error));
	EXPECT_NE(error.find("disagree"), std::string::npos);

	StreamReader unknown;
	MessageHeader u{77, 0, 0};
	unknown.append(reinterpret_cast<const char *>(&u), sizeof(u));
	EXPECT_FALSE(unknown.next(error));
	EXPECT_NE(error.find("unknown type 77"), std::string::npos);
	EXPECT_LE(kMaxMessage, 4096u);
}

TEST(CaptureFilter, ExpressionHoldsOnFrames)
{
	auto f = Filter::compile("udp and src host 198.18.0.2 and dst port 53", 128);
	ASSERT_TRUE(f) << f.error().message;
	EXPECT_TRUE(f->matches(udp_frame(2, 53), 60));
	EXPECT_FALSE(f->matches(udp_frame(3, 53), 60));
	EXPECT_FALSE(f->matches(udp_frame(2, 54), 60));
	auto tcp = Filter::compile("tcp", 128);
	ASSERT_TRUE(tcp);
	EXPECT_FALSE(tcp->matches(udp_frame(), 60));
	// Truncated before the port: no match, as tcpdump -r would say.
	EXPECT_FALSE(f->matches(udp_frame().substr(0, 30), 60));
	auto len = Filter::compile("greater 59", 128);
	ASSERT_TRUE(len);
	EXPECT_TRUE(len->matches(udp_frame().substr(0, 20), 60)); // the wire length counts
}

TEST(CaptureFilter, BadExpressionIsAnInputErrorWithLibpcapsReason)
{
	auto f = Filter::compile("udp and port banana", 128);
	ASSERT_FALSE(f);
	EXPECT_EQ(f.error().kind, sluice::ErrorKind::invalid);
	EXPECT_NE(f.error().message.find("udp and port banana"), std::string::npos);
	EXPECT_NE(f.error().message.find("banana"), f.error().message.rfind("'udp")); // libpcap's own words follow
	EXPECT_FALSE(Filter::compile("tcp[", 128));
}
