#include "sluiced/xdp_tx_path.h"

#include "base/fd.h"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace sluice {

namespace {

// The attributes of one RTM_GETLINK answer that matter here.
struct LinkAttrs {
	std::string name;
	std::string kind;
	std::optional<uint32_t> link;     // IFLA_LINK
	std::optional<int32_t> link_netnsid;
	uint32_t drv_prog = 0, skb_prog = 0; // XDP programs in native and skb mode (0: none)
	uint8_t xdp_attached = XDP_ATTACHED_NONE;
};

template <class Visit> void each_attr(const void *data, size_t len, Visit visit)
{
	auto *a = static_cast<const rtattr *>(data);
	auto left = static_cast<unsigned>(len);
	for (; RTA_OK(a, left); a = RTA_NEXT(a, left))
		visit(a);
}

uint32_t u32_of(const rtattr *a)
{
	uint32_t v = 0;
	if (RTA_PAYLOAD(a) >= sizeof(v))
		std::memcpy(&v, RTA_DATA(a), sizeof(v));
	return v;
}

std::string string_of(const rtattr *a)
{
	const char *p = static_cast<const char *>(RTA_DATA(a));
	return std::string(p, strnlen(p, RTA_PAYLOAD(a)));
}

void add_attr(nlmsghdr &h, size_t room, uint16_t type, const void *data, uint16_t len)
{
	auto *a = reinterpret_cast<rtattr *>(reinterpret_cast<char *>(&h) + NLMSG_ALIGN(h.nlmsg_len));
	if (NLMSG_ALIGN(h.nlmsg_len) + RTA_SPACE(len) > room)
		return;
	a->rta_type = type;
	a->rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
	std::memcpy(RTA_DATA(a), data, len);
	h.nlmsg_len = static_cast<uint32_t>(NLMSG_ALIGN(h.nlmsg_len) + RTA_SPACE(len));
}

// One RTM_GETLINK of `ifindex` in our namespace or, with `netnsid`, in that one.
Result<LinkAttrs> get_link(uint32_t ifindex, std::optional<int32_t> netnsid, const std::string &what)
{
	UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE));
	if (!fd)
		return fail_errno("opening a NETLINK_ROUTE socket to read " + what);
	struct {
		nlmsghdr nlh;
		ifinfomsg ifi;
		char attrs[64];
	} req{};
	req.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(ifinfomsg));
	req.nlh.nlmsg_type = RTM_GETLINK;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = static_cast<int>(ifindex);
	const uint32_t mask = RTEXT_FILTER_SKIP_STATS; // the counters are most of an answer, and not wanted
	add_attr(req.nlh, sizeof(req), IFLA_EXT_MASK, &mask, sizeof(mask));
	if (netnsid)
		add_attr(req.nlh, sizeof(req), IFLA_TARGET_NETNSID, &*netnsid, sizeof(*netnsid));
	sockaddr_nl nl{};
	nl.nl_family = AF_NETLINK;
	if (::sendto(fd.get(), &req, req.nlh.nlmsg_len, 0, reinterpret_cast<sockaddr *>(&nl), sizeof(nl)) < 0)
		return fail_errno("asking rtnetlink for " + what);
	alignas(nlmsghdr) char buf[32768];
	ssize_t n;
	do
		n = ::recv(fd.get(), buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail_errno("reading rtnetlink's answer for " + what);
	auto len = static_cast<unsigned>(n);
	for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const auto *e = static_cast<const nlmsgerr *>(NLMSG_DATA(h));
			return fail(ErrorKind::system, "rtnetlink refused to show " + what, -e->error);
		}
		if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg)))
			continue;
		LinkAttrs out;
		const auto *ifi = static_cast<const ifinfomsg *>(NLMSG_DATA(h));
		each_attr(IFLA_RTA(ifi), IFLA_PAYLOAD(h), [&](const rtattr *a) {
			switch (a->rta_type) {
			case IFLA_IFNAME:
				out.name = string_of(a);
				break;
			case IFLA_LINK:
				out.link = u32_of(a);
				break;
			case IFLA_LINK_NETNSID:
				out.link_netnsid = static_cast<int32_t>(u32_of(a));
				break;
			case IFLA_LINKINFO:
				each_attr(RTA_DATA(a), RTA_PAYLOAD(a), [&](const rtattr *i) {
					if (i->rta_type == IFLA_INFO_KIND)
						out.kind = string_of(i);
				});
				break;
			case IFLA_XDP:
				each_attr(RTA_DATA(a), RTA_PAYLOAD(a), [&](const rtattr *x) {
					if (x->rta_type == IFLA_XDP_ATTACHED && RTA_PAYLOAD(x) >= 1)
						out.xdp_attached = *static_cast<const uint8_t *>(RTA_DATA(x));
					else if (x->rta_type == IFLA_XDP_DRV_PROG_ID)
						out.drv_prog = u32_of(x);
					else if (x->rta_type == IFLA_XDP_SKB_PROG_ID)
						out.skb_prog = u32_of(x);
				});
				break;
			}
		});
		return out;
	}
	return fail(ErrorKind::system, "rtnetlink's answer for " + what + " held no link", EPROTO);
}

} // namespace

Result<XdpTxLink> read_xdp_tx_link(const std::string &iface, uint32_t ifindex)
{
	auto own = get_link(ifindex, std::nullopt, iface);
	if (!own)
		return std::unexpected(own.error());
	XdpTxLink l;
	l.iface = iface;
	l.kind = own->kind;
	// Only an skb-mode program: XDP_TX goes through the device's transmit.
	// A native one (or none yet, about to be attached) is the driver's way.
	l.skb_mode = own->drv_prog == 0 && own->skb_prog != 0;
	if (l.kind != "veth")
		return l;
	// IFLA_LINK is left out when it equals the device's own index, which a
	// peer in another namespace may have.
	XdpTxLink::Peer p;
	p.ifindex = own->link.value_or(own->link_netnsid ? ifindex : 0);
	p.netnsid = own->link_netnsid;
	if (p.ifindex == 0) {
		l.peer = p;
		return l;
	}
	auto peer = get_link(p.ifindex, p.netnsid, iface + "'s veth peer (ifindex " + std::to_string(p.ifindex) +
							  (p.netnsid ? ", netnsid " + std::to_string(*p.netnsid) : "") + ")");
	if (!peer) {
		l.peer_error = peer.error().describe();
		return l;
	}
	p.name = peer->name;
	p.native_xdp = peer->drv_prog != 0;
	l.peer = p;
	return l;
}

} // namespace sluice
