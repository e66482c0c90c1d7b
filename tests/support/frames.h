// frames.h - build Ethernet frames as byte vectors, for the bpf, fuzz and
// benchmark code: Ethernet II with up to any number of 802.1Q / 802.1ad tags,
// IPv4 (with options, any IHL or version for malformed cases, fragments),
// IPv6 (with extension headers), UDP, TCP, ICMP, ARP and LLDP. Header-only, no dependencies beyond the C++ standard library.
//
// Every multi-byte field is written in network byte order. Checksums (IPv4
// header, UDP over IPv4 and IPv6) are computed, so the frames are also valid
// on a real link or veth. Fields a test wants wrong (version, IHL) are plain
// members that the builders write as given.
//
//   using namespace sluice::frames;
//   Bytes f = udp4({.tags = {vlan(10)}}, {.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.2")});
//   Bytes g = truncated(f, 20);
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::frames {

using Bytes = std::vector<std::uint8_t>;
using Mac = std::array<std::uint8_t, 6>;
using Ip4 = std::array<std::uint8_t, 4>;
using Ip6 = std::array<std::uint8_t, 16>;

// EtherTypes
inline constexpr std::uint16_t kEthIpv4 = 0x0800;
inline constexpr std::uint16_t kEthArp = 0x0806;
inline constexpr std::uint16_t kEthIpv6 = 0x86DD;
inline constexpr std::uint16_t kEth8021Q = 0x8100;
inline constexpr std::uint16_t kEth8021AD = 0x88A8;
inline constexpr std::uint16_t kEthLldp = 0x88CC;

// IP protocol numbers
inline constexpr std::uint8_t kIpProtoUdp = 17;

// Header lengths
inline constexpr std::size_t kEthHeaderLen = 14;
inline constexpr std::size_t kVlanTagLen = 4;
inline constexpr std::size_t kIpv4HeaderLen = 20; // without options
inline constexpr std::size_t kIpv6HeaderLen = 40;
inline constexpr std::size_t kUdpHeaderLen = 8;
inline constexpr std::size_t kArpIpv4Len = 28;
inline constexpr std::size_t kEthMinFrame = 60; // without FCS

inline constexpr Mac kDefaultDst{0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
inline constexpr Mac kDefaultSrc{0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
inline constexpr Mac kBroadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
inline constexpr Mac kLldpMulticast{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e};

// ---------------------------------------------------------------- addresses

inline Ip4 ip4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d)
{
	return {a, b, c, d};
}

inline Ip4 ip4(const char *text)
{
	Ip4 out{};
	if (inet_pton(AF_INET, text, out.data()) != 1)
		throw std::invalid_argument(std::string("not an IPv4 address: ") + text);
	return out;
}

// The i-th address counting up from `base` (host order arithmetic): distinct
// /32s for "many sources" loops.
inline Ip4 ip4_plus(Ip4 base, std::uint32_t i)
{
	std::uint32_t v = (std::uint32_t(base[0]) << 24 | std::uint32_t(base[1]) << 16 |
			   std::uint32_t(base[2]) << 8 | base[3]) + i;
	return {std::uint8_t(v >> 24), std::uint8_t(v >> 16), std::uint8_t(v >> 8), std::uint8_t(v)};
}

inline Ip6 ip6(const char *text)
{
	Ip6 out{};
	if (inet_pton(AF_INET6, text, out.data()) != 1)
		throw std::invalid_argument(std::string("not an IPv6 address: ") + text);
	return out;
}

// ------------------------------------------------------------------ writers

inline void put8(Bytes &b, std::uint8_t v) { b.push_back(v); }

inline void put16(Bytes &b, std::uint16_t v)
{
	b.push_back(std::uint8_t(v >> 8));
	b.push_back(std::uint8_t(v));
}

inline void put32(Bytes &b, std::uint32_t v)
{
	put16(b, std::uint16_t(v >> 16));
	put16(b, std::uint16_t(v));
}

template <std::size_t N>
inline void put(Bytes &b, const std::array<std::uint8_t, N> &a)
{
	b.insert(b.end(), a.begin(), a.end());
}

inline void put(Bytes &b, const Bytes &a) { b.insert(b.end(), a.begin(), a.end()); }

inline void set16(Bytes &b, std::size_t at, std::uint16_t v)
{
	b.at(at) = std::uint8_t(v >> 8);
	b.at(at + 1) = std::uint8_t(v);
}

// One's-complement sum for the Internet checksum (RFC 1071), unfolded.
inline std::uint32_t csum_add(std::uint32_t sum, const std::uint8_t *p, std::size_t n)
{
	for (std::size_t i = 0; i + 1 < n; i += 2)
		sum += std::uint32_t(p[i]) << 8 | p[i + 1];
	if (n & 1)
		sum += std::uint32_t(p[n - 1]) << 8;
	return sum;
}

inline std::uint16_t csum_fold(std::uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return std::uint16_t(~sum);
}

// ----------------------------------------------------------------- Ethernet

struct VlanTag {
	std::uint16_t tpid = kEth8021Q; // 0x8100 (C-tag) or 0x88A8 (S-tag)
	std::uint16_t vid = 0;
	std::uint8_t pcp = 0;
};

inline VlanTag vlan(std::uint16_t vid) { return {kEth8021Q, vid, 0}; }
inline VlanTag svlan(std::uint16_t vid) { return {kEth8021AD, vid, 0}; }

struct Eth {
	Mac dst = kDefaultDst;
	Mac src = kDefaultSrc;
	std::vector<VlanTag> tags; // outermost first
};

// Ethernet header plus tags, ending with `ethertype`.
inline void put_eth(Bytes &b, const Eth &eth, std::uint16_t ethertype)
{
	put(b, eth.dst);
	put(b, eth.src);
	for (const VlanTag &t : eth.tags) {
		put16(b, t.tpid);
		put16(b, std::uint16_t((t.pcp & 7) << 13 | (t.vid & 0x0fff)));
	}
	put16(b, ethertype);
}

// An Ethernet header to `dst` (default source, no tags).
inline Eth eth_to(const Mac &dst)
{
	Eth e;
	e.dst = dst;
	return e;
}

// Offset of the L3 header behind the Ethernet header and its tags.
inline std::size_t l3_offset(const Eth &eth) { return kEthHeaderLen + kVlanTagLen * eth.tags.size(); }

// ---------------------------------------------------------------------- IP

struct Ipv4 {
	Ip4 src = {10, 0, 0, 1};
	Ip4 dst = {10, 0, 0, 2};
	std::uint8_t proto = kIpProtoUdp;
	std::uint8_t ttl = 64;
	std::uint16_t id = 0;
	Bytes options;           // padded with zeros (EOL) to a multiple of 4
	int ihl = -1;            // -1: 5 + options / 4; anything else is written as is (low 4 bits)
	std::uint8_t version = 4; // written as is: 6 here makes a version mismatch
	std::uint16_t frag = 0x4000; // flags and fragment offset as written (DF; 0x2000 MF, offset in 8-byte units)
};

inline std::size_t ipv4_header_len(const Ipv4 &ip)
{
	return kIpv4HeaderLen + (ip.options.size() + 3) / 4 * 4;
}

// IPv4 header (with options) for `payload_len` bytes of payload.
inline void put_ipv4(Bytes &b, const Ipv4 &ip, std::size_t payload_len)
{
	std::size_t hlen = ipv4_header_len(ip);
	std::uint8_t ihl = ip.ihl < 0 ? std::uint8_t(hlen / 4) : std::uint8_t(ip.ihl);
	std::size_t at = b.size();

	put8(b, std::uint8_t(ip.version << 4 | (ihl & 0x0f)));
	put8(b, 0); // DSCP/ECN
	put16(b, std::uint16_t(hlen + payload_len));
	put16(b, ip.id);
	put16(b, ip.frag);
	put8(b, ip.ttl);
	put8(b, ip.proto);
	put16(b, 0); // checksum, below
	put(b, ip.src);
	put(b, ip.dst);
	put(b, ip.options);
	b.resize(at + hlen, 0);
	set16(b, at + 10, csum_fold(csum_add(0, b.data() + at, hlen)));
}

struct Ipv6 {
	Ip6 src = ip6("2001:db8::1");
	Ip6 dst = ip6("2001:db8::2");
	std::uint8_t next_header = kIpProtoUdp;
	std::uint8_t hop_limit = 64;
	std::uint32_t flow_label = 0;
	std::uint8_t version = 6; // written as is: 4 here makes a version mismatch
};

inline void put_ipv6(Bytes &b, const Ipv6 &ip, std::size_t payload_len)
{
	put32(b, std::uint32_t(ip.version) << 28 | (ip.flow_label & 0xfffff));
	put16(b, std::uint16_t(payload_len));
	put8(b, ip.next_header);
	put8(b, ip.hop_limit);
	put(b, ip.src);
	put(b, ip.dst);
}

// --------------------------------------------------------------------- UDP

struct Udp {
	std::uint16_t sport = 40000;
	std::uint16_t dport = 9;
	std::size_t payload_len = 18; // zero bytes, pattern below
};

inline Bytes udp_payload(std::size_t n)
{
	Bytes p(n);
	for (std::size_t i = 0; i < n; i++)
		p[i] = std::uint8_t(i);
	return p;
}

// UDP header + payload, checksummed over the given pseudo-header sum.
inline void put_udp(Bytes &b, const Udp &u, std::uint32_t pseudo_sum, bool zero_means_none)
{
	std::size_t at = b.size();
	std::uint16_t len = std::uint16_t(kUdpHeaderLen + u.payload_len);

	put16(b, u.sport);
	put16(b, u.dport);
	put16(b, len);
	put16(b, 0);
	put(b, udp_payload(u.payload_len));
	std::uint16_t c = csum_fold(csum_add(pseudo_sum, b.data() + at, len));
	if (c == 0 && zero_means_none)
		c = 0xffff;
	set16(b, at + 6, c);
}

inline std::uint32_t pseudo_v4(const Ipv4 &ip, std::size_t l4_len)
{
	std::uint32_t s = csum_add(0, ip.src.data(), 4);
	s = csum_add(s, ip.dst.data(), 4);
	return s + ip.proto + std::uint32_t(l4_len);
}

inline std::uint32_t pseudo_v6(const Ipv6 &ip, std::size_t l4_len)
{
	std::uint32_t s = csum_add(0, ip.src.data(), 16);
	s = csum_add(s, ip.dst.data(), 16);
	return s + ip.next_header + std::uint32_t(l4_len);
}

// ------------------------------------------------------------ whole frames

inline Bytes udp4(const Eth &eth = {}, const Ipv4 &ip = {}, const Udp &udp = {})
{
	Bytes b;
	std::size_t l4 = kUdpHeaderLen + udp.payload_len;

	put_eth(b, eth, kEthIpv4);
	put_ipv4(b, ip, l4);
	put_udp(b, udp, pseudo_v4(ip, l4), true);
	return b;
}

inline Bytes udp6(const Eth &eth = {}, const Ipv6 &ip = {}, const Udp &udp = {})
{
	Bytes b;
	std::size_t l4 = kUdpHeaderLen + udp.payload_len;

	put_eth(b, eth, kEthIpv6);
	put_ipv6(b, ip, l4);
	put_udp(b, udp, pseudo_v6(ip, l4), true);
	return b;
}

// A UDP/IPv4 frame of exactly `frame_len` bytes (without FCS), e.g. 64 for
// the classic "64-byte packet" of cost measurements. frame_len must leave room
// for the headers.
inline Bytes udp4_sized(std::size_t frame_len, const Eth &eth = {}, const Ipv4 &ip = {})
{
	std::size_t hdr = l3_offset(eth) + ipv4_header_len(ip) + kUdpHeaderLen;
	if (frame_len < hdr)
		throw std::invalid_argument("udp4_sized: frame shorter than its headers");
	return udp4(eth, ip, Udp{.payload_len = frame_len - hdr});
}

inline Bytes udp6_sized(std::size_t frame_len, const Eth &eth = {}, const Ipv6 &ip = {})
{
	std::size_t hdr = l3_offset(eth) + kIpv6HeaderLen + kUdpHeaderLen;
	if (frame_len < hdr)
		throw std::invalid_argument("udp6_sized: frame shorter than its headers");
	return udp6(eth, ip, Udp{.payload_len = frame_len - hdr});
}

// An Ethernet header (and tags) with `ethertype`, then `payload` as is: for
// frames that claim one protocol and carry anything.
inline Bytes raw(const Eth &eth, std::uint16_t ethertype, const Bytes &payload = {})
{
	Bytes b;
	put_eth(b, eth, ethertype);
	put(b, payload);
	return b;
}

// --------------------------------------------- other transports (classes)

inline constexpr std::uint8_t kIpProtoTcp = 6;
inline constexpr std::uint8_t kIpProtoIcmp = 1;
inline constexpr std::uint8_t kIpProtoIcmp6 = 58;
inline constexpr std::uint8_t kTcpSyn = 0x02, kTcpAck = 0x10, kTcpFin = 0x01, kTcpRst = 0x04;

// A TCP header (20 bytes, no options; checksum left 0) and `payload_len` bytes.
inline Bytes tcp_segment(std::uint16_t sport, std::uint16_t dport, std::uint8_t flags, std::size_t payload_len = 0)
{
	Bytes b;
	put16(b, sport);
	put16(b, dport);
	put32(b, 1); // seq
	put32(b, flags & kTcpAck ? 1 : 0);
	put8(b, 5 << 4); // data offset
	put8(b, flags);
	put16(b, 65535); // window
	put16(b, 0);     // checksum
	put16(b, 0);     // urgent
	put(b, udp_payload(payload_len));
	return b;
}

// An ICMP (or ICMPv6) echo request, checksum left 0.
inline Bytes icmp_echo(std::uint8_t type = 8, std::size_t payload_len = 8)
{
	Bytes b{type, 0, 0, 0, 0, 1, 0, 1};
	put(b, udp_payload(payload_len));
	return b;
}

// An IPv4 frame carrying `l4` as protocol ip.proto.
inline Bytes ip4_frame(const Eth &eth, const Ipv4 &ip, const Bytes &l4)
{
	Bytes b;
	put_eth(b, eth, kEthIpv4);
	put_ipv4(b, ip, l4.size());
	put(b, l4);
	return b;
}

// An IPv6 extension header: its type (the next-header value that names
// it) and its bytes after the next-header byte (for the generic form, byte
// 1 is the length in 8-byte units beyond the first 8; a fragment header is
// 8 bytes).
struct Ipv6Ext {
	std::uint8_t type;
	Bytes body; // without the next-header byte
};

// A hop-by-hop / routing / destination options header of 8 x (units + 1) bytes (PadN inside).
inline Ipv6Ext ipv6_opts(std::uint8_t type, std::uint8_t units = 0)
{
	Bytes body(std::size_t(units + 1) * 8 - 1, 0);
	body[0] = units;
	body[1] = 1; // PadN
	body[2] = std::uint8_t(body.size() - 3);
	return {type, body};
}

// A fragment header: offset in 8-byte units, more fragments.
inline Ipv6Ext ipv6_fragment(std::uint16_t offset, bool more, std::uint32_t id = 0x1234)
{
	Bytes body{0};
	put16(body, std::uint16_t(offset << 3 | (more ? 1 : 0)));
	put32(body, id);
	return {44, body};
}

// An IPv6 frame: the extension headers in order, then `l4` as protocol `proto`
// (ip.next_header is ignored: the chain writes it).
inline Bytes ip6_frame(const Eth &eth, const Ipv6 &ip_in, const std::vector<Ipv6Ext> &exts, std::uint8_t proto,
		       const Bytes &l4)
{
	Ipv6 ip = ip_in;
	Bytes chain;
	for (std::size_t i = 0; i < exts.size(); i++) {
		put8(chain, i + 1 < exts.size() ? exts[i + 1].type : proto);
		put(chain, exts[i].body);
	}
	ip.next_header = exts.empty() ? proto : exts[0].type;
	Bytes b;
	put_eth(b, eth, kEthIpv6);
	put_ipv6(b, ip, chain.size() + l4.size());
	put(b, chain);
	put(b, l4);
	return b;
}

// ARP request (Ethernet/IPv4): who has `target`? tell `sender`.
inline Bytes arp_request(Ip4 sender, Ip4 target, const Eth &eth_in = eth_to(kBroadcast))
{
	Bytes b;
	put_eth(b, eth_in, kEthArp);
	put16(b, 1);      // HTYPE Ethernet
	put16(b, kEthIpv4); // PTYPE IPv4
	put8(b, 6);
	put8(b, 4);
	put16(b, 1); // request
	put(b, eth_in.src);
	put(b, sender);
	put(b, Mac{});
	put(b, target);
	return b;
}

// LLDP frame with the three mandatory TLVs and End.
inline Bytes lldp(const Eth &eth_in = eth_to(kLldpMulticast))
{
	Bytes b;
	put_eth(b, eth_in, kEthLldp);
	auto tlv = [&](std::uint8_t type, const Bytes &v) {
		put16(b, std::uint16_t(type << 9 | (v.size() & 0x1ff)));
		put(b, v);
	};
	Bytes chassis{4}; // subtype 4: MAC address
	chassis.insert(chassis.end(), eth_in.src.begin(), eth_in.src.end());
	Bytes port{7, 'e', 't', 'h', '0'}; // subtype 7: locally assigned
	tlv(1, chassis);
	tlv(2, port);
	tlv(3, Bytes{0x00, 0x78}); // TTL 120 s
	tlv(0, Bytes{});
	return b;
}

// ------------------------------------------------------ TCP with options

// A whole TCP segment: any flags, sequence numbers and options (padded with
// EOL to a multiple of 4), checksummed over its IP pseudo header by tcp4 /
// tcp6 (the SYN-cookie tests: a SYN as a client's stack sends it).
struct Tcp {
	std::uint16_t sport = 40000;
	std::uint16_t dport = 80;
	std::uint32_t seq = 1;
	std::uint32_t ack = 0;
	std::uint8_t flags = kTcpSyn;
	std::uint16_t window = 64240;
	Bytes options; // raw option bytes
	std::size_t payload_len = 0;
};

// The options of a Linux SYN: MSS, SACK-permitted, timestamp (tsval, echo
// 0), NOP, window scale.
inline Bytes linux_syn_options(std::uint16_t mss, std::uint32_t tsval, std::uint8_t wscale)
{
	Bytes o{2, 4};
	put16(o, mss);
	put8(o, 4);
	put8(o, 2);
	put8(o, 8);
	put8(o, 10);
	put32(o, tsval);
	put32(o, 0);
	put8(o, 1);
	put8(o, 3);
	put8(o, 3);
	put8(o, wscale);
	return o;
}

// The TCP header and payload, checksum over `pseudo_sum` (the pseudo header
// without the length, which is added here).
inline Bytes tcp_bytes(const Tcp &t, std::uint32_t pseudo_sum)
{
	Bytes b;
	std::size_t opt_len = (t.options.size() + 3) / 4 * 4;
	put16(b, t.sport);
	put16(b, t.dport);
	put32(b, t.seq);
	put32(b, t.ack);
	put8(b, std::uint8_t((20 + opt_len) / 4 << 4));
	put8(b, t.flags);
	put16(b, t.window);
	put16(b, 0); // checksum, below
	put16(b, 0); // urgent
	put(b, t.options);
	b.resize(20 + opt_len, 0);
	put(b, udp_payload(t.payload_len));
	set16(b, 16, csum_fold(csum_add(pseudo_sum + std::uint32_t(b.size()), b.data(), b.size())));
	return b;
}

inline Bytes tcp4(const Eth &eth, Ipv4 ip, const Tcp &t)
{
	ip.proto = kIpProtoTcp;
	return ip4_frame(eth, ip, tcp_bytes(t, pseudo_v4(ip, 0)));
}

// TCP over IPv6, behind extension headers `exts` if any (the pseudo header
// names the final destination, TCP: no routing header here).
inline Bytes tcp6(const Eth &eth, Ipv6 ip, const Tcp &t, const std::vector<Ipv6Ext> &exts = {})
{
	ip.next_header = kIpProtoTcp;
	Bytes l4 = tcp_bytes(t, pseudo_v6(ip, 0));
	return ip6_frame(eth, ip, exts, kIpProtoTcp, l4);
}

// ------------------------------------------------------------------ editing

// The first `len` bytes of `f` (len may exceed nothing: clamped to f.size()).
inline Bytes truncated(const Bytes &f, std::size_t len)
{
	return Bytes(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len < f.size() ? len : f.size()));
}

// `f` zero-padded to at least `len` bytes (e.g. kEthMinFrame).
inline Bytes padded(Bytes f, std::size_t len = kEthMinFrame)
{
	if (f.size() < len)
		f.resize(len, 0);
	return f;
}

} // namespace sluice::frames
