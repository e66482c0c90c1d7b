// bpf/parse.h's sluice_parse_l4 on the host: a frame's kind and port for the
// policy classes, from the IP header sluice_parse_at found.
#include "frames.h"
#include "bpf/parse.h"

#include <gtest/gtest.h>

#include <string>

using namespace sluice::frames;

namespace {

struct L4 {
	int rc = -1; // sluice_parse_l4's; -2: the L3 parse did not find IP
	sluice_l4 l4{~0u, ~0u};
};

L4 parse(const Bytes &f)
{
	sluice_source src{};
	const __u8 *l3 = nullptr;
	L4 out;
	int kind = sluice_parse_at(f.data(), f.data() + f.size(), &src, &l3);
	if (kind != SLUICE_PARSE_IPV4 && kind != SLUICE_PARSE_IPV6) {
		out.rc = -2;
		return out;
	}
	out.rc = sluice_parse_l4(l3, f.data() + f.size(), kind == SLUICE_PARSE_IPV6, &out.l4);
	return out;
}

#define EXPECT_L4(frame, kind_, port_)                                                                \
	do {                                                                                          \
		L4 r_ = parse(frame);                                                                 \
		EXPECT_EQ(r_.rc, 0);                                                                  \
		EXPECT_EQ(r_.l4.kind, std::uint32_t(kind_));                                          \
		EXPECT_EQ(r_.l4.port, std::uint32_t(port_));                                          \
	} while (0)

#define EXPECT_MALFORMED(frame) EXPECT_EQ(parse(frame).rc, SLUICE_PARSE_MALFORMED)

Ipv4 v4(std::uint8_t proto)
{
	Ipv4 ip;
	ip.proto = proto;
	return ip;
}

TEST(ParseL4, TcpByDestinationPortAndSynWithoutAckApart)
{
	EXPECT_L4(ip4_frame({}, v4(kIpProtoTcp), tcp_segment(40000, 443, kTcpAck)), SLUICE_L4_TCP, 443);
	EXPECT_L4(ip4_frame({}, v4(kIpProtoTcp), tcp_segment(40000, 22, kTcpSyn)), SLUICE_L4_TCP_SYN, 22);
	// SYN-ACK (a reply to a connection the host opened) is plain TCP.
	EXPECT_L4(ip4_frame({}, v4(kIpProtoTcp), tcp_segment(443, 40000, kTcpSyn | kTcpAck)), SLUICE_L4_TCP, 40000);
	EXPECT_L4(ip4_frame({}, v4(kIpProtoTcp), tcp_segment(1, 80, kTcpSyn | kTcpFin)), SLUICE_L4_TCP_SYN, 80);
	EXPECT_L4(ip4_frame({}, v4(kIpProtoTcp), tcp_segment(1, 80, kTcpRst)), SLUICE_L4_TCP, 80);
	EXPECT_L4(ip6_frame({.tags = {vlan(3)}}, {}, {}, kIpProtoTcp, tcp_segment(1, 65535, kTcpSyn)),
		  SLUICE_L4_TCP_SYN, 65535);
}

TEST(ParseL4, UdpByDestinationPort)
{
	EXPECT_L4(udp4({}, {}, {.sport = 53, .dport = 5353}), SLUICE_L4_UDP, 5353);
	EXPECT_L4(udp4({.tags = {svlan(1), vlan(2)}}, {}, {.dport = 53}), SLUICE_L4_UDP, 53);
	EXPECT_L4(udp6({}, {}, {.dport = 0}), SLUICE_L4_UDP, 0);
	// A header alone, no payload.
	EXPECT_L4(udp4({}, {}, {.dport = 123, .payload_len = 0}), SLUICE_L4_UDP, 123);
}

TEST(ParseL4, OtherProtocolsByNumber)
{
	EXPECT_L4(ip4_frame({}, v4(kIpProtoIcmp), icmp_echo()), SLUICE_L4_IP, 1);
	EXPECT_L4(ip6_frame({}, {}, {}, kIpProtoIcmp6, icmp_echo(128)), SLUICE_L4_IP, 58);
	EXPECT_L4(ip4_frame({}, v4(47), Bytes(4, 0)), SLUICE_L4_IP, 47); // GRE
	// Nothing of an unknown protocol is read: even an empty payload is IP.
	EXPECT_L4(ip4_frame({}, v4(132), {}), SLUICE_L4_IP, 132);
	EXPECT_L4(ip6_frame({}, {}, {}, 59, {}), SLUICE_L4_IP, 59); // no next header
	EXPECT_L4(ip6_frame({}, {}, {}, 50, Bytes(16, 0)), SLUICE_L4_IP, 50); // ESP: opaque
}

TEST(ParseL4, Ipv4OptionsAreSkipped)
{
	Ipv4 ip = v4(kIpProtoUdp);
	ip.options = Bytes{0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00}; // router alert, NOPs, EOL
	EXPECT_L4(ip4_frame({}, ip, Bytes{0x9c, 0x40, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00}), SLUICE_L4_UDP, 53);
	ip.options = Bytes(40, 1); // IHL 15
	ip.proto = kIpProtoTcp;
	EXPECT_L4(ip4_frame({}, ip, tcp_segment(1, 8080, kTcpSyn)), SLUICE_L4_TCP_SYN, 8080);
}

TEST(ParseL4, Ipv4NonFirstFragmentIsItsProtocolAndFirstFragmentItsPort)
{
	Ipv4 ip = v4(kIpProtoUdp);
	ip.frag = 0x2000; // MF, offset 0: the first fragment has the header
	EXPECT_L4(ip4_frame({}, ip, Bytes{0x9c, 0x40, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00}), SLUICE_L4_UDP, 53);
	ip.frag = 0x2000 | 185; // MF, offset 1480
	// Whatever the payload looks like, it is not a header.
	EXPECT_L4(ip4_frame({}, ip, Bytes{0x9c, 0x40, 0x00, 0x35}), SLUICE_L4_IP, kIpProtoUdp);
	ip.frag = 1; // the last fragment, offset 8
	ip.proto = kIpProtoTcp;
	EXPECT_L4(ip4_frame({}, ip, {}), SLUICE_L4_IP, kIpProtoTcp);
}

TEST(ParseL4, Ipv6ExtensionHeadersAreWalked)
{
	Bytes syn = tcp_segment(1, 25, kTcpSyn);
	EXPECT_L4(ip6_frame({}, {}, {ipv6_opts(0)}, kIpProtoTcp, syn), SLUICE_L4_TCP_SYN, 25);
	EXPECT_L4(ip6_frame({}, {}, {ipv6_opts(0), ipv6_opts(43, 2), ipv6_opts(60, 1)}, kIpProtoTcp, syn),
		  SLUICE_L4_TCP_SYN, 25);
	// AH: length in 4-byte units minus 2 (here 24 bytes).
	Ipv6Ext ah{51, Bytes(23, 0)};
	ah.body[0] = 4;
	EXPECT_L4(ip6_frame({}, {}, {ah}, kIpProtoUdp, Bytes{0, 1, 0, 53, 0, 8, 0, 0}), SLUICE_L4_UDP, 53);
	// The bound: SLUICE_MAX_IPV6_EXT headers are walked, one more is malformed.
	std::vector<Ipv6Ext> chain(SLUICE_MAX_IPV6_EXT, ipv6_opts(60));
	EXPECT_L4(ip6_frame({}, {}, chain, kIpProtoTcp, syn), SLUICE_L4_TCP_SYN, 25);
	chain.push_back(ipv6_opts(60));
	EXPECT_MALFORMED(ip6_frame({}, {}, chain, kIpProtoTcp, syn));
}

TEST(ParseL4, Ipv6FragmentHeader)
{
	Bytes udp{0, 1, 0, 53, 0, 8, 0, 0};
	// First fragment: the header follows.
	EXPECT_L4(ip6_frame({}, {}, {ipv6_fragment(0, true)}, kIpProtoUdp, udp), SLUICE_L4_UDP, 53);
	EXPECT_L4(ip6_frame({}, {}, {ipv6_opts(0), ipv6_fragment(0, true)}, kIpProtoTcp, tcp_segment(1, 22, kTcpSyn)),
		  SLUICE_L4_TCP_SYN, 22);
	// Not the first: its protocol, whatever follows.
	EXPECT_L4(ip6_frame({}, {}, {ipv6_fragment(185, true)}, kIpProtoUdp, Bytes{0, 1}), SLUICE_L4_IP, kIpProtoUdp);
	EXPECT_L4(ip6_frame({}, {}, {ipv6_opts(0), ipv6_fragment(1, false)}, kIpProtoTcp, {}), SLUICE_L4_IP,
		  kIpProtoTcp);
}

TEST(ParseL4, TruncatedL4IsMalformed)
{
	Bytes tcp = ip4_frame({}, v4(kIpProtoTcp), tcp_segment(1, 80, kTcpSyn));
	EXPECT_L4(tcp, SLUICE_L4_TCP_SYN, 80);
	EXPECT_MALFORMED(truncated(tcp, tcp.size() - 1)); // 19 bytes of TCP header
	EXPECT_MALFORMED(truncated(tcp, kEthHeaderLen + kIpv4HeaderLen + 4));
	EXPECT_MALFORMED(truncated(tcp, kEthHeaderLen + kIpv4HeaderLen)); // no TCP at all
	Bytes udp = udp4({}, {}, {.dport = 53, .payload_len = 0});
	EXPECT_MALFORMED(truncated(udp, udp.size() - 1));
	Bytes udp6f = udp6({}, {}, {.dport = 53, .payload_len = 0});
	EXPECT_MALFORMED(truncated(udp6f, udp6f.size() - 1));
	// IPv4 options count: a header behind 8 bytes of options, cut short.
	Ipv4 ip = v4(kIpProtoUdp);
	ip.options = Bytes(8, 1);
	Bytes opt = ip4_frame({}, ip, Bytes{0, 1, 0, 53, 0, 8, 0, 0});
	EXPECT_L4(opt, SLUICE_L4_UDP, 53);
	EXPECT_MALFORMED(truncated(opt, opt.size() - 1));
	// IPv6: an extension header cut short, and a TCP header after one.
	Bytes ext = ip6_frame({}, {}, {ipv6_opts(0, 1)}, kIpProtoTcp, tcp_segment(1, 80, 0));
	EXPECT_MALFORMED(truncated(ext, kEthHeaderLen + kIpv6HeaderLen + 7));
	EXPECT_MALFORMED(truncated(ext, kEthHeaderLen + kIpv6HeaderLen + 16 + 19));
	EXPECT_L4(ext, SLUICE_L4_TCP, 80);
	// A routing header whose length runs past the frame: its next header is not read.
	Bytes longhdr = ip6_frame({}, {}, {ipv6_opts(43, 200)}, kIpProtoUdp, {});
	EXPECT_MALFORMED(truncated(longhdr, kEthHeaderLen + kIpv6HeaderLen + 64));
	// The fragment header itself cut short.
	Bytes frag = ip6_frame({}, {}, {ipv6_fragment(185, false)}, kIpProtoUdp, {});
	EXPECT_MALFORMED(truncated(frag, frag.size() - 1));
	// ICMP reads nothing past the IP header: never malformed by length.
	EXPECT_L4(ip4_frame({}, v4(kIpProtoIcmp), {}), SLUICE_L4_IP, 1);
}

TEST(ParseL4, ParseAtPointsAtTheIpHeaderAndParseIsUnchanged)
{
	Bytes f = udp4({.tags = {vlan(7)}}, {.src = ip4("198.18.1.2")}, {.dport = 53});
	sluice_source a{}, b{};
	const __u8 *l3 = nullptr;
	EXPECT_EQ(sluice_parse_at(f.data(), f.data() + f.size(), &a, &l3), SLUICE_PARSE_IPV4);
	EXPECT_EQ(l3, f.data() + kEthHeaderLen + kVlanTagLen);
	EXPECT_EQ(sluice_parse(f.data(), f.data() + f.size(), &b), SLUICE_PARSE_IPV4);
	EXPECT_EQ(a.w[0], b.w[0]);
	Bytes g = udp6({}, {}, {});
	EXPECT_EQ(sluice_parse_at(g.data(), g.data() + g.size(), &a, &l3), SLUICE_PARSE_IPV6);
	EXPECT_EQ(l3, g.data() + kEthHeaderLen);
}

} // namespace

// sluice_udp_source_port: the UDP source port read in place (standing bound
// to a UDP peer port); 0 for anything it does not read so.
static std::uint32_t udp_sport(const Bytes &f)
{
	return sluice_udp_source_port(f.data(), f.data() + f.size());
}

TEST(UdpSourcePort, ReadInPlaceBehindTagsOptionsAndForV6)
{
	EXPECT_EQ(udp_sport(udp4({}, {}, {.sport = 53})), 53u);
	EXPECT_EQ(udp_sport(udp4({.tags = {vlan(3), svlan(4)}}, {}, {.sport = 123})), 123u);
	EXPECT_EQ(udp_sport(udp6({}, {}, {.sport = 443})), 443u);
	Ipv4 opts;
	opts.options = Bytes(8, 1); // 8 bytes of NOP: IHL 7
	EXPECT_EQ(udp_sport(udp4({}, opts, {.sport = 500})), 500u);
}

TEST(UdpSourcePort, NothingElseHasOne)
{
	EXPECT_EQ(udp_sport(ip4_frame({}, v4(kIpProtoTcp), tcp_segment(53, 80, kTcpAck))), 0u);
	Bytes cut = udp4({}, {}, {.sport = 53});
	cut.resize(14 + 20 + 4); // half a UDP header
	EXPECT_EQ(udp_sport(cut), 0u);
	Bytes arp(60, 0);
	arp[12] = 0x08, arp[13] = 0x06;
	EXPECT_EQ(udp_sport(arp), 0u);
	Ipv4 later;
	later.frag = 0x0001; // offset 8 bytes
	EXPECT_EQ(udp_sport(udp4({}, later, {.sport = 53})), 0u) << "a later fragment has no UDP header";
}

namespace {

bool surely_not_tcp(const Bytes &f)
{
	return sluice_surely_not_tcp(f.data(), f.data() + f.size());
}

// The cookie path's skip (bpf/parse.h, sluice_surely_not_tcp): yes only
// for a plain frame whose IP header says it cannot be TCP; every TCP frame,
// and anything it would have to walk to tell, is a no.
TEST(SurelyNotTcp, PlainUdpAndIcmpAreNotTcp)
{
	EXPECT_TRUE(surely_not_tcp(udp4({}, {}, {.dport = 53})));
	EXPECT_TRUE(surely_not_tcp(udp6({}, {}, {.dport = 53})));
	EXPECT_TRUE(surely_not_tcp(ip4_frame({}, v4(kIpProtoIcmp), icmp_echo())));
	EXPECT_TRUE(surely_not_tcp(ip6_frame({}, {}, {}, kIpProtoIcmp6, icmp_echo(128))));
	// An IPv4 fragment of UDP, or GRE: not TCP either way.
	Ipv4 frag = v4(kIpProtoUdp);
	frag.frag = 0x2000 | 185;
	EXPECT_TRUE(surely_not_tcp(ip4_frame({}, frag, Bytes{0x9c, 0x40})));
	EXPECT_TRUE(surely_not_tcp(ip4_frame({}, v4(47), Bytes(4, 0))));
}

TEST(SurelyNotTcp, TcpAndWhatNeedsAWalkAreNotSkipped)
{
	const Bytes syn = tcp_segment(1, 80, kTcpSyn);
	EXPECT_FALSE(surely_not_tcp(ip4_frame({}, v4(kIpProtoTcp), syn)));
	EXPECT_FALSE(surely_not_tcp(ip6_frame({}, {}, {}, kIpProtoTcp, syn)));
	// TCP behind IPv6 extension headers, and UDP behind one (not walked here).
	EXPECT_FALSE(surely_not_tcp(ip6_frame({}, {}, {ipv6_opts(0)}, kIpProtoTcp, syn)));
	EXPECT_FALSE(surely_not_tcp(ip6_frame({}, {}, {ipv6_fragment(0, true)}, kIpProtoUdp, Bytes{0, 1, 0, 53, 0, 8, 0, 0})));
	// VLAN tags: the full parse's, UDP or not.
	EXPECT_FALSE(surely_not_tcp(udp4({.tags = {vlan(2)}}, {}, {.dport = 53})));
	EXPECT_FALSE(surely_not_tcp(ip4_frame({.tags = {vlan(3)}}, v4(kIpProtoTcp), syn)));
	// Cut short of the IP header's protocol byte.
	Bytes cut = udp4({}, {}, {.dport = 53});
	cut.resize(14 + 19);
	EXPECT_FALSE(surely_not_tcp(cut));
	Bytes cut6 = udp6({}, {}, {.dport = 53});
	cut6.resize(14 + 39);
	EXPECT_FALSE(surely_not_tcp(cut6));
}

// Never a yes where the full parse finds TCP: over every protocol number,
// plain IPv4 and IPv6 alike.
TEST(SurelyNotTcp, NeverSaysSoOfAFrameTheFullParseFindsTcpIn)
{
	for (int proto = 0; proto < 256; proto++) {
		for (const Bytes &f : {ip4_frame({}, v4(std::uint8_t(proto)), tcp_segment(1, 80, kTcpSyn)),
				       ip6_frame({}, {}, {}, std::uint8_t(proto), tcp_segment(1, 80, kTcpSyn))}) {
			L4 r = parse(f);
			const bool tcp = r.rc != 0 || r.l4.kind == SLUICE_L4_TCP || r.l4.kind == SLUICE_L4_TCP_SYN ||
					 (r.l4.kind == SLUICE_L4_IP && r.l4.port == kIpProtoTcp);
			if (tcp)
				EXPECT_FALSE(surely_not_tcp(f)) << "protocol " << proto;
		}
	}
}

} // namespace
