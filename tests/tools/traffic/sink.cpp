// sink.cpp - `sluice-traffic sink`: a UDP socket on the protected host that
// counts datagrams per source address for a fixed time.
//
// Memory is bounded: the first --max-sources distinct sources (default 65536)
// are counted exactly; datagrams from sources seen after the table is full
// count in "other" only (and "untracked" says how many). Start the sink and
// the legitimate probe before a random-source flood, and the probe's source
// is always in the table. The result prints the --top sources (default 64)
// by count, and everything else as "other".
#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <unordered_map>

namespace sluice::traffic {

const char *const kSinkUsage =
	"usage: sluice-traffic sink --port P --duration S [--bind IP] [--top N] [--max-sources N]\n"
	"         [--ready-file PATH]\n"
	"  Counts UDP datagrams per source for S seconds (SIGINT/SIGTERM end it early),\n"
	"  then prints {\"received\":N,\"by_source\":{ADDR:N,...,\"other\":N},...} on one line.\n"
	"  --bind: an address of this host (default: every address, IPv4 and IPv6).\n"
	"  --ready-file: created once the socket is bound (for scripts to wait on).\n";

namespace {

struct Key {
	std::array<uint8_t, 16> b; // IPv4 as v4-mapped
	bool operator==(const Key &) const = default;
};

struct KeyHash {
	size_t operator()(const Key &k) const noexcept
	{
		uint64_t a, b;
		std::memcpy(&a, k.b.data(), 8);
		std::memcpy(&b, k.b.data() + 8, 8);
		uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
		return static_cast<size_t>(h ^ (h >> 31));
	}
};

std::string key_str(const Key &k)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char buf[INET6_ADDRSTRLEN];
	if (std::memcmp(k.b.data(), mapped, 12) == 0)
		inet_ntop(AF_INET, k.b.data() + 12, buf, sizeof(buf));
	else
		inet_ntop(AF_INET6, k.b.data(), buf, sizeof(buf));
	return buf;
}

} // namespace

int run_sink(int argc, char **argv)
{
	Args a(argc, argv,
	       {{"port", true}, {"bind", true}, {"duration", true}, {"top", true}, {"max-sources", true},
		{"ready-file", true}});
	auto port = static_cast<uint16_t>(parse_u64("port", a.required("port"), 1, 65535));
	uint64_t dur = duration_ns(a, true);
	size_t top = a.u64("top", 64, 1, 100000);
	size_t max_sources = a.u64("max-sources", 65536, 1, 1u << 22);
	require_test_netns();

	int fd;
	sockaddr_storage ss{};
	socklen_t sslen;
	if (auto b = a.get("bind")) {
		Addr addr = parse_testbed_addr("bind", *b);
		fd = socket(addr.v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (addr.v6) {
			auto *s6 = reinterpret_cast<sockaddr_in6 *>(&ss);
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons(port);
			std::memcpy(&s6->sin6_addr, addr.b.data(), 16);
			sslen = sizeof(*s6);
		} else {
			auto *s4 = reinterpret_cast<sockaddr_in *>(&ss);
			s4->sin_family = AF_INET;
			s4->sin_port = htons(port);
			std::memcpy(&s4->sin_addr, addr.b.data(), 4);
			sslen = sizeof(*s4);
		}
	} else {
		fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int zero = 0;
		if (fd >= 0)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		auto *s6 = reinterpret_cast<sockaddr_in6 *>(&ss);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		s6->sin6_addr = in6addr_any;
		sslen = sizeof(*s6);
	}
	if (fd < 0)
		throw RunError(std::string("socket: ") + std::strerror(errno));
	int rcvbuf = 32 << 20, one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	if (bind(fd, reinterpret_cast<sockaddr *>(&ss), sslen) != 0) {
		int e = errno;
		close(fd);
		throw RunError("bind UDP port " + std::to_string(port) + ": " + std::strerror(e));
	}
	install_stop_handlers();
	if (auto rf = a.get("ready-file")) {
		std::ofstream f(*rf);
		if (!f)
			throw RunError("cannot create --ready-file " + *rf);
		f << getpid() << "\n";
	}

	constexpr unsigned B = 64;
	std::vector<std::array<uint8_t, 2048>> bufs(B);
	std::vector<sockaddr_in6> names(B);
	std::vector<iovec> iov(B);
	std::vector<mmsghdr> msgs(B);
	std::vector<std::array<uint8_t, CMSG_SPACE(sizeof(uint32_t))>> ctl(B);

	std::unordered_map<Key, uint64_t, KeyHash> table;
	table.reserve(std::min<size_t>(max_sources, 65536));
	uint64_t received = 0, untracked = 0, bytes = 0;
	uint32_t socket_drops = 0;
	uint64_t t0 = now_ns(), deadline = t0 + dur;

	while (!g_stop) {
		uint64_t now = now_ns();
		if (now >= deadline)
			break;
		pollfd p{fd, POLLIN, 0};
		int timeout_ms = static_cast<int>(std::min<uint64_t>((deadline - now + 999999) / 1000000, 100));
		int pr = poll(&p, 1, timeout_ms);
		if (pr < 0 && errno != EINTR)
			throw RunError(std::string("poll: ") + std::strerror(errno));
		if (pr <= 0)
			continue;
		for (;;) {
			for (unsigned i = 0; i < B; i++) {
				iov[i] = {bufs[i].data(), bufs[i].size()};
				msgs[i].msg_hdr = {};
				msgs[i].msg_hdr.msg_name = &names[i];
				msgs[i].msg_hdr.msg_namelen = sizeof(names[i]);
				msgs[i].msg_hdr.msg_iov = &iov[i];
				msgs[i].msg_hdr.msg_iovlen = 1;
				msgs[i].msg_hdr.msg_control = ctl[i].data();
				msgs[i].msg_hdr.msg_controllen = ctl[i].size();
			}
			int r = recvmmsg(fd, msgs.data(), B, MSG_DONTWAIT, nullptr);
			if (r < 0) {
				if (errno == EAGAIN || errno == EINTR)
					break;
				throw RunError(std::string("recvmmsg: ") + std::strerror(errno));
			}
			for (int i = 0; i < r; i++) {
				const auto &h = msgs[i].msg_hdr;
				Key k{};
				if (names[i].sin6_family == AF_INET6) {
					std::memcpy(k.b.data(), &names[i].sin6_addr, 16);
				} else {
					const auto *s4 = reinterpret_cast<const sockaddr_in *>(&names[i]);
					k.b[10] = k.b[11] = 0xff;
					std::memcpy(k.b.data() + 12, &s4->sin_addr, 4);
				}
				received++;
				bytes += msgs[i].msg_len;
				auto it = table.find(k);
				if (it != table.end())
					it->second++;
				else if (table.size() < max_sources)
					table.emplace(k, 1);
				else
					untracked++;
				for (auto *c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(const_cast<msghdr *>(&h), c))
					if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
						std::memcpy(&socket_drops, CMSG_DATA(c), sizeof(socket_drops));
			}
			if (r < static_cast<int>(B))
				break;
		}
	}
	uint64_t t1 = now_ns();
	close(fd);

	std::vector<std::pair<Key, uint64_t>> rows(table.begin(), table.end());
	std::sort(rows.begin(), rows.end(), [](const auto &x, const auto &y) {
		return x.second != y.second ? x.second > y.second : x.first.b < y.first.b;
	});
	nlohmann::ordered_json by;
	uint64_t other = untracked;
	for (size_t i = 0; i < rows.size(); i++) {
		if (i < top)
			by[key_str(rows[i].first)] = rows[i].second;
		else
			other += rows[i].second;
	}
	by["other"] = other;
	nlohmann::ordered_json j;
	j["received"] = received;
	j["by_source"] = by;
	j["distinct_tracked"] = table.size();
	j["untracked"] = untracked;
	j["socket_drops"] = socket_drops;
	j["bytes"] = bytes;
	j["seconds"] = std::round(double(t1 - t0) / 1e3) / 1e6;
	print_json(j);
	return 0;
}

} // namespace sluice::traffic
