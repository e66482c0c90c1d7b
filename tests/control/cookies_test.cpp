// logic/cookies: whether the SYN-ACKs the program sends with XDP_TX can leave
// an interface (a veth needs an XDP program in native mode on its peer), and
// the cookie mode that puts in force; the arming and what a SYN-ACK offers.
#include "logic/cookies.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

XdpTxLink veth(bool peer_native, std::optional<int32_t> netnsid = 3)
{
	XdpTxLink l;
	l.iface = "veth-host";
	l.kind = "veth";
	l.peer = XdpTxLink::Peer{.ifindex = 7, .netnsid = netnsid, .name = "r-host", .native_xdp = peer_native};
	return l;
}

TEST(XdpTxVerdict, ANicDelivers)
{
	XdpTxLink l;
	l.iface = "eth0";
	XdpTxVerdict v = xdp_tx_verdict(l);
	EXPECT_TRUE(v.delivers);
	EXPECT_NE(v.why.find("eth0's driver"), std::string::npos) << v.why;
	EXPECT_TRUE(v.fix.empty());
}

TEST(XdpTxVerdict, OtherVirtualDevicesAreTakenToDeliver)
{
	for (const char *kind : {"bond", "tun", "vlan", "macvlan", "bridge", "netkit"}) {
		XdpTxLink l;
		l.iface = "x0";
		l.kind = kind;
		EXPECT_TRUE(xdp_tx_verdict(l).delivers) << kind;
	}
}

TEST(XdpTxVerdict, AVethDeliversOnlyWithANativeProgramOnItsPeer)
{
	XdpTxVerdict with = xdp_tx_verdict(veth(true));
	EXPECT_TRUE(with.delivers);
	EXPECT_NE(with.why.find("r-host"), std::string::npos) << with.why;
	EXPECT_TRUE(with.fix.empty());

	XdpTxVerdict without = xdp_tx_verdict(veth(false));
	EXPECT_FALSE(without.delivers);
	EXPECT_NE(without.why.find("veth-host is a veth whose peer r-host (in another network namespace, netnsid 3)"),
		  std::string::npos)
		<< without.why;
	EXPECT_NE(without.why.find("no XDP program in native mode"), std::string::npos) << without.why;
	EXPECT_NE(without.fix.find("attach an XDP program in native mode to r-host"), std::string::npos) << without.fix;
	EXPECT_NE(without.fix.find("xdp-pass"), std::string::npos) << without.fix;
	EXPECT_NE(without.fix.find("run sluice on the peer"), std::string::npos) << without.fix;

	XdpTxVerdict same_ns = xdp_tx_verdict(veth(false, std::nullopt));
	EXPECT_FALSE(same_ns.delivers);
	EXPECT_EQ(same_ns.why.find("another network namespace"), std::string::npos) << same_ns.why;
}

TEST(XdpTxVerdict, AVethInSkbModeDeliversThroughItsOwnTransmit)
{
	XdpTxLink l = veth(false);
	l.skb_mode = true;
	XdpTxVerdict v = xdp_tx_verdict(l);
	EXPECT_TRUE(v.delivers);
	EXPECT_NE(v.why.find("skb mode"), std::string::npos) << v.why;
}

TEST(XdpTxVerdict, AVethWhosePeerCannotBeReadKeepsCookiesOff)
{
	XdpTxLink l = veth(false);
	l.peer.reset();
	l.peer_error = "rtnetlink refused to show it: Operation not permitted (errno 1)";
	XdpTxVerdict v = xdp_tx_verdict(l);
	EXPECT_FALSE(v.delivers);
	EXPECT_NE(v.why.find("errno 1"), std::string::npos) << v.why;
	EXPECT_FALSE(v.fix.empty());

	XdpTxLink lone = veth(false);
	lone.peer->ifindex = 0;
	EXPECT_FALSE(xdp_tx_verdict(lone).delivers);
}

TEST(CookieModeInForce, TheAskedModeWhereTheRepliesLeaveElseOff)
{
	const XdpTxVerdict yes{true, "", ""}, no{false, "why", "fix"};
	for (sluice_cookie_mode m : {SLUICE_COOKIES_OFF, SLUICE_COOKIES_SHEDDING, SLUICE_COOKIES_ALWAYS}) {
		EXPECT_EQ(cookie_mode_in_force(m, yes), m);
		EXPECT_EQ(cookie_mode_in_force(m, no), SLUICE_COOKIES_OFF);
	}
}

TEST(CookiePathInForce, AlwaysInEveryStateSheddingOnlyWhileShedding)
{
	for (bool shedding : {false, true}) {
		EXPECT_FALSE(cookie_path_in_force(SLUICE_COOKIES_OFF, shedding));
		EXPECT_TRUE(cookie_path_in_force(SLUICE_COOKIES_ALWAYS, shedding));
		EXPECT_EQ(cookie_path_in_force(SLUICE_COOKIES_SHEDDING, shedding), shedding);
		EXPECT_FALSE(cookie_path_in_force(SLUICE_COOKIE_MODES, shedding)); // no such mode
	}
}

TEST(CookieArming, SyncookiesToTwoAndTimestampsFromOneToTwo)
{
	TcpSettings s;
	auto c = cookie_arming(s);
	ASSERT_EQ(c.size(), 2u);
	EXPECT_EQ(c[0].name, kSysctlSyncookies);
	EXPECT_EQ(c[0].to, 2);
	EXPECT_EQ(c[1].name, kSysctlTimestamps);
	s.syncookies = 2;
	s.timestamps = 0;
	EXPECT_TRUE(cookie_arming(s).empty());
	EXPECT_EQ(cookie_mss_for(1500, false), 1460);
	EXPECT_EQ(cookie_mss_for(1500, true), 1440);
	EXPECT_EQ(cookie_mss_for(100, false), 536);
}

} // namespace
} // namespace sluice
