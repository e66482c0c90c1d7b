#include "sluiced/local_sockets.h"

#include "base/fd.h"

#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sluice {

namespace {

Address peer_of(const inet_diag_msg &m)
{
	Address a;
	const auto *b = reinterpret_cast<const uint8_t *>(m.id.idiag_dst);
	static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (m.idiag_family == AF_INET6 && std::memcmp(b, kMapped, 12) != 0) {
		a.family = Family::v6;
		std::memcpy(a.bytes.data(), b, 16);
	} else {
		a.family = Family::v4;
		std::memcpy(a.bytes.data(), m.idiag_family == AF_INET6 ? b + 12 : b, 4);
	}
	return a;
}

// One dump: every socket of (family, protocol) in one of `states` (a bit
// per TCP state), each handed to visit.
template <class Visit> Status dump(int family, int protocol, uint32_t states, Visit visit)
{
	UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
	if (!fd)
		return fail_errno("opening a NETLINK_SOCK_DIAG socket");
	struct {
		nlmsghdr nlh;
		inet_diag_req_v2 req;
	} msg{};
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	msg.req.sdiag_family = static_cast<uint8_t>(family);
	msg.req.sdiag_protocol = static_cast<uint8_t>(protocol);
	msg.req.idiag_states = states;
	sockaddr_nl nl{};
	nl.nl_family = AF_NETLINK;
	if (::sendto(fd.get(), &msg, sizeof(msg), 0, reinterpret_cast<sockaddr *>(&nl), sizeof(nl)) < 0)
		return fail_errno("asking sock_diag for sockets");

	alignas(nlmsghdr) char buf[32768];
	for (;;) {
		ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail_errno("reading sock_diag's answer");
		}
		if (n == 0)
			return {};
		auto len = static_cast<unsigned>(n);
		for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return {};
			if (h->nlmsg_type == NLMSG_ERROR) {
				const auto *e = static_cast<const nlmsgerr *>(NLMSG_DATA(h));
				return fail(ErrorKind::system, "sock_diag refused the dump", -e->error);
			}
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
				continue;
			visit(*static_cast<const inet_diag_msg *>(NLMSG_DATA(h)));
		}
	}
}

} // namespace

Result<EstablishedPeers> established_peers(PortSpan ephemeral)
{
	EstablishedPeers out;
	for (int family : {AF_INET, AF_INET6})
		for (int protocol : {IPPROTO_TCP, IPPROTO_UDP}) {
			// A connected UDP socket is "established" too.
			auto ok = dump(family, protocol, 1u << TCP_ESTABLISHED, [&](const inet_diag_msg &m) {
				if (protocol == IPPROTO_TCP) {
					out.tcp.push_back(peer_of(m));
					return;
				}
				uint32_t port = ntohs(m.id.idiag_sport);
				if (port < ephemeral.lo || port > ephemeral.hi)
					return; // a server's socket
				if (uint16_t peer_port = ntohs(m.id.idiag_dport))
					out.udp.emplace_back(peer_of(m), peer_port);
			});
			if (!ok)
				return std::unexpected(ok.error());
		}
	auto key = [](const Address &a) { return std::make_pair(a.family, a.bytes); };
	std::sort(out.tcp.begin(), out.tcp.end(), [&](const Address &a, const Address &b) { return key(a) < key(b); });
	out.tcp.erase(std::unique(out.tcp.begin(), out.tcp.end()), out.tcp.end());
	std::sort(out.udp.begin(), out.udp.end(), [&](const auto &a, const auto &b) {
		return std::make_pair(key(a.first), a.second) < std::make_pair(key(b.first), b.second);
	});
	out.udp.erase(std::unique(out.udp.begin(), out.udp.end()), out.udp.end());
	return out;
}

Result<std::vector<uint16_t>> listening_tcp_ports()
{
	std::vector<uint16_t> out;
	for (int family : {AF_INET, AF_INET6}) {
		auto ok = dump(family, IPPROTO_TCP, 1u << TCP_LISTEN,
			       [&](const inet_diag_msg &m) { out.push_back(ntohs(m.id.idiag_sport)); });
		if (!ok)
			return std::unexpected(ok.error());
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

std::vector<Address> interface_addresses(const std::string *only)
{
	std::vector<Address> out;
	ifaddrs *list = nullptr;
	if (getifaddrs(&list) != 0)
		return out;
	for (ifaddrs *a = list; a; a = a->ifa_next) {
		if (!a->ifa_addr || (only && *only != a->ifa_name))
			continue;
		Address addr;
		if (a->ifa_addr->sa_family == AF_INET) {
			auto *in = reinterpret_cast<const sockaddr_in *>(a->ifa_addr);
			addr.family = Family::v4;
			std::memcpy(addr.bytes.data(), &in->sin_addr, 4);
		} else if (a->ifa_addr->sa_family == AF_INET6) {
			auto *in6 = reinterpret_cast<const sockaddr_in6 *>(a->ifa_addr);
			if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr))
				continue;
			addr.family = Family::v6;
			std::memcpy(addr.bytes.data(), &in6->sin6_addr, 16);
		} else {
			continue;
		}
		out.push_back(addr);
	}
	freeifaddrs(list);
	return out;
}

} // namespace sluice
