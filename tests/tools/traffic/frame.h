// frame.h - the flood's frame, UDP or a TCP SYN (--syn: a handshake's first
// frame, 24 bytes of TCP with an MSS option, as a SYN flood tool writes it):
// built once, then only the source address (and the checksums it enters)
// change from frame to frame.
#pragma once

#include "common.h"

#include <cstring>
#include <vector>

namespace sluice::traffic {

inline constexpr size_t kEthLen = 14;
inline constexpr size_t kIp4Len = 20;
inline constexpr size_t kIp6Len = 40;
inline constexpr size_t kUdpLen = 8;
inline constexpr size_t kSynLen = 24; // TCP header with one option, MSS
// "SLFL": flood payloads start with it (probe datagrams with "SLPR").
inline constexpr uint8_t kFloodMagic[4] = {'S', 'L', 'F', 'L'};

class FloodFrame {
public:
	struct Spec {
		std::array<uint8_t, 6> dst_mac, src_mac;
		Addr dst, src; // src: the first source; the family of both must agree
		uint16_t sport, dport;
		size_t frame_len; // Ethernet frame without FCS
		bool syn = false; // a TCP SYN instead of UDP
	};

	static size_t header_len(bool v6, bool syn = false)
	{
		return kEthLen + (v6 ? kIp6Len : kIp4Len) + (syn ? kSynLen : kUdpLen);
	}

	explicit FloodFrame(const Spec &s) : v6_(s.dst.v6), bytes_(s.frame_len, 0)
	{
		uint8_t *p = bytes_.data();
		std::memcpy(p, s.dst_mac.data(), 6);
		std::memcpy(p + 6, s.src_mac.data(), 6);
		p[12] = v6_ ? 0x86 : 0x08;
		p[13] = v6_ ? 0xdd : 0x00;
		uint8_t *ip = p + kEthLen;
		size_t l3 = v6_ ? kIp6Len : kIp4Len;
		size_t udp_len = s.frame_len - kEthLen - l3;
		uint8_t *udp = ip + l3;
		uint8_t proto = s.syn ? 6 : 17;
		if (v6_) {
			ip[0] = 0x60;
			put16(ip + 4, static_cast<uint16_t>(udp_len));
			ip[6] = proto;
			ip[7] = 64;
			std::memcpy(ip + 24, s.dst.b.data(), 16);
			src_off_ = kEthLen + 8;
			addr_len_ = 16;
		} else {
			ip[0] = 0x45;
			put16(ip + 2, static_cast<uint16_t>(l3 + udp_len));
			put16(ip + 4, 0x5c00); // id
			put16(ip + 6, 0x4000); // DF
			ip[8] = 64;
			ip[9] = proto;
			std::memcpy(ip + 16, s.dst.b.data(), 4);
			src_off_ = kEthLen + 12;
			addr_len_ = 4;
			ip_csum_off_ = kEthLen + 10;
			ip_base_ = csum_add(0, ip, kIp4Len); // source and checksum still zero
		}
		put16(udp, s.sport);
		put16(udp + 2, s.dport);
		if (s.syn) {
			// seq from the magic (any), ack 0, data offset 6 words, SYN,
			// window 64240, MSS 1460; no payload bytes are sent beyond
			// what the frame length pads (zeros).
			std::memcpy(udp + 4, kFloodMagic, 4);
			udp[12] = 6 << 4;
			udp[13] = 0x02;
			put16(udp + 14, 64240);
			udp[20] = 2;
			udp[21] = 4;
			put16(udp + 22, 1460);
			udp_csum_off_ = kEthLen + l3 + 16;
		} else {
			put16(udp + 4, static_cast<uint16_t>(udp_len));
			uint8_t *payload = udp + kUdpLen;
			size_t plen = udp_len - kUdpLen;
			std::memcpy(payload, kFloodMagic, std::min(plen, sizeof(kFloodMagic)));
			udp_csum_off_ = kEthLen + l3 + 6;
		}
		// Pseudo header without the source, then the UDP header and payload.
		uint32_t sum = csum_add(0, s.dst.b.data(), addr_len_);
		if (v6_) {
			sum += static_cast<uint32_t>(udp_len >> 16) + static_cast<uint32_t>(udp_len & 0xffff);
			sum += proto;
		} else {
			sum += proto + static_cast<uint32_t>(udp_len);
		}
		udp_base_ = csum_add(sum, udp, udp_len);
		set_source(p, s.src);
	}

	bool v6() const { return v6_; }
	size_t size() const { return bytes_.size(); }
	const uint8_t *data() const { return bytes_.data(); }

	// Copy the template to `out` and give it source `src`.
	void write(uint8_t *out, const Addr &src) const
	{
		std::memcpy(out, bytes_.data(), bytes_.size());
		set_source(out, src);
	}

	// Rewrite the source of a frame made from this template (in place).
	void set_source(uint8_t *frame, const Addr &src) const
	{
		std::memcpy(frame + src_off_, src.b.data(), addr_len_);
		uint32_t s = csum_add(0, src.b.data(), addr_len_);
		if (!v6_)
			put16(frame + ip_csum_off_, csum_fold(ip_base_ + s));
		uint16_t u = csum_fold(udp_base_ + s);
		put16(frame + udp_csum_off_, u == 0 ? 0xffff : u);
	}

private:
	static void put16(uint8_t *p, uint16_t v)
	{
		p[0] = static_cast<uint8_t>(v >> 8);
		p[1] = static_cast<uint8_t>(v);
	}

	bool v6_;
	std::vector<uint8_t> bytes_;
	size_t src_off_ = 0, addr_len_ = 4, ip_csum_off_ = 0, udp_csum_off_ = 0;
	uint32_t ip_base_ = 0, udp_base_ = 0;
};

} // namespace sluice::traffic
