#include "logic/cookies.h"

#include "bpf/cookie.h"

#include <algorithm>
#include <bit>

namespace sluice {

std::vector<SysctlChange> cookie_arming(const TcpSettings &now)
{
	std::vector<SysctlChange> out;
	if (now.syncookies != 2)
		out.push_back({kSysctlSyncookies, now.syncookies, 2});
	if (now.timestamps == 1)
		out.push_back({kSysctlTimestamps, now.timestamps, 2});
	return out;
}

uint32_t cookie_flags_for(const TcpSettings &s)
{
	uint32_t f = 0;
	if (s.timestamps == 2)
		f |= SLUICE_COOKIE_TS;
	if (s.sack != 0)
		f |= SLUICE_COOKIE_SACK;
	if (s.window_scaling != 0)
		f |= SLUICE_COOKIE_WSCALE;
	return f;
}

uint32_t cookie_wscale_for(const TcpSettings &s)
{
	uint64_t space = uint64_t(std::max<int64_t>({s.tcp_rmem_max, s.rmem_max, 1}));
	int shift = int(std::bit_width(space)) - 1 - 15; // ilog2(space) - 15
	return uint32_t(std::clamp(shift, 0, int(SLUICE_TCP_MAX_WSCALE)));
}

uint16_t cookie_mss_for(uint32_t mtu, bool v6)
{
	uint32_t headers = v6 ? 60 : 40;
	uint32_t mss = mtu > headers ? mtu - headers : 0;
	return uint16_t(std::clamp<uint32_t>(mss, 536, 65495));
}

namespace {
std::string peer_text(const XdpTxLink::Peer &p)
{
	std::string name = p.name.empty() ? "ifindex " + std::to_string(p.ifindex) : p.name;
	return p.netnsid ? name + " (in another network namespace, netnsid " + std::to_string(*p.netnsid) + ")"
			 : name;
}
} // namespace

XdpTxVerdict xdp_tx_verdict(const XdpTxLink &l)
{
	if (l.kind != "veth")
		return {true, "XDP_TX leaves through " + l.iface + "'s driver" + (l.kind.empty() ? "" : " (" + l.kind + ")"),
			""};
	if (l.skb_mode)
		return {true, "the program runs in skb mode on the veth " + l.iface +
				      ": XDP_TX goes out through the veth's own transmit, to any peer",
			""};
	const std::string fix_tail = ", or run sluice on the peer (its program in native mode does it)";
	if (!l.peer)
		return {false,
			l.iface + " is a veth whose peer could not be read (" + l.peer_error +
				"): the SYN-ACKs XDP_TX sends reach the peer only if it runs an XDP program in native mode",
			"make sure the peer runs an XDP program in native mode (one that passes every frame will do, "
			"e.g. xdp-pass)" + fix_tail};
	if (l.peer->ifindex == 0)
		return {false, l.iface + " is a veth without a peer now: XDP_TX has nowhere to send the SYN-ACKs", "recreate the veth pair"};
	if (l.peer->native_xdp)
		return {true, "XDP_TX hands the SYN-ACKs to " + l.iface + "'s peer " + peer_text(*l.peer) +
				      ", which runs an XDP program in native mode",
			""};
	return {false,
		l.iface + " is a veth whose peer " + peer_text(*l.peer) +
			" runs no XDP program in native mode: the SYN-ACKs XDP_TX sends would be dropped there",
		"attach an XDP program in native mode to " + (l.peer->name.empty() ? std::string("the peer") : l.peer->name) +
			" (one that passes every frame will do, e.g. xdp-pass: `ip link set dev " +
			(l.peer->name.empty() ? std::string("PEER") : l.peer->name) + " xdpdrv obj xdp_pass.o sec xdp` in its namespace)" +
			fix_tail};
}

sluice_cookie_mode cookie_mode_in_force(sluice_cookie_mode asked, const XdpTxVerdict &v)
{
	return v.delivers ? asked : SLUICE_COOKIES_OFF;
}

bool cookie_path_in_force(uint32_t mode, bool shedding)
{
	return mode == SLUICE_COOKIES_ALWAYS || (mode == SLUICE_COOKIES_SHEDDING && shedding);
}

} // namespace sluice
