// probe.cpp - `sluice-traffic probe`: the legitimate client. Real UDP
// datagrams through the kernel stack (an ordinary UDP socket, so routing,
// ARP/ND and checksums are the kernel's), at a steady rate: datagram i leaves
// at t0 + i/R. Each carries "SLPR", a sequence number and its send time.
// Delivered = what the sink counted for the probe's source.
//
// The socket is not connected, so ICMP port-unreachable replies (no sink
// yet) do not turn into errors on later sends.
#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace sluice::traffic {

const char *const kProbeUsage =
	"usage: sluice-traffic probe --dst IP --port P --pps R --duration S [--src IP] [--size BYTES]\n"
	"  Sends round(R*S) UDP datagrams of BYTES payload (default 32, at least 20) to IP:P,\n"
	"  one every 1/R seconds, from --src (default: the kernel's choice).\n"
	"  Prints {\"sent\":N,\"errors\":N,\"seconds\":S,\"pps\":R,...} on one line.\n";

int run_probe(int argc, char **argv)
{
	Args a(argc, argv, {{"dst", true}, {"port", true}, {"pps", true}, {"duration", true}, {"src", true},
			    {"size", true}});
	Addr dst = parse_testbed_addr("dst", a.required("dst"));
	auto port = static_cast<uint16_t>(parse_u64("port", a.required("port"), 1, 65535));
	double pps = parse_real("pps", a.required("pps"), 0.001, 10000000);
	uint64_t dur = duration_ns(a, true);
	size_t size = a.u64("size", 32, 20, 1400);
	std::optional<Addr> src;
	if (auto s = a.get("src")) {
		src = parse_testbed_addr("src", *s);
		if (src->v6 != dst.v6)
			throw UsageError("--src and --dst must be of one family");
	}
	auto total = static_cast<uint64_t>(std::llround(pps * double(dur) / 1e9));
	require_test_netns();

	int fd = socket(dst.v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		throw RunError(std::string("socket: ") + std::strerror(errno));
	sockaddr_storage to{}, from{};
	socklen_t len;
	if (dst.v6) {
		auto *d = reinterpret_cast<sockaddr_in6 *>(&to);
		d->sin6_family = AF_INET6;
		d->sin6_port = htons(port);
		std::memcpy(&d->sin6_addr, dst.b.data(), 16);
		auto *f = reinterpret_cast<sockaddr_in6 *>(&from);
		f->sin6_family = AF_INET6;
		if (src)
			std::memcpy(&f->sin6_addr, src->b.data(), 16);
		len = sizeof(sockaddr_in6);
	} else {
		auto *d = reinterpret_cast<sockaddr_in *>(&to);
		d->sin_family = AF_INET;
		d->sin_port = htons(port);
		std::memcpy(&d->sin_addr, dst.b.data(), 4);
		auto *f = reinterpret_cast<sockaddr_in *>(&from);
		f->sin_family = AF_INET;
		if (src)
			std::memcpy(&f->sin_addr, src->b.data(), 4);
		len = sizeof(sockaddr_in);
	}
	if (src && bind(fd, reinterpret_cast<sockaddr *>(&from), len) != 0) {
		int e = errno;
		close(fd);
		throw RunError("bind to --src " + src->str() + ": " + std::strerror(e));
	}
	install_stop_handlers();
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	std::vector<uint8_t> payload(size, 0);
	std::memcpy(payload.data(), "SLPR", 4);
	uint64_t sent = 0, errors = 0, late_max_ns = 0;
	std::string last_error;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < total && !g_stop; i++) {
		uint64_t due = t0 + static_cast<uint64_t>(double(i) * 1e9 / pps);
		uint64_t now = now_ns();
		if (now < due) {
			sleep_until_ns(due);
			now = now_ns();
		}
		late_max_ns = std::max(late_max_ns, now - due);
		uint64_t seq = i;
		std::memcpy(payload.data() + 4, &seq, 8); // host order: read back by this tool only
		std::memcpy(payload.data() + 12, &now, 8);
		ssize_t r = sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr *>(&to), len);
		if (r == static_cast<ssize_t>(payload.size())) {
			sent++;
		} else {
			errors++;
			last_error = std::strerror(errno);
		}
	}
	uint64_t t1 = now_ns();
	close(fd);
	double secs = double(t1 - t0) / 1e9;
	nlohmann::ordered_json j;
	j["sent"] = sent;
	j["errors"] = errors;
	j["planned"] = total;
	j["seconds"] = std::round(secs * 1e6) / 1e6;
	j["pps"] = secs > 0 ? static_cast<uint64_t>(std::llround(double(sent) / secs)) : 0;
	j["late_max_us"] = late_max_ns / 1000;
	if (!last_error.empty())
		j["last_error"] = last_error;
	print_json(j);
	return 0;
}

} // namespace sluice::traffic
