#include "common.h"

#include <arpa/inet.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

namespace sluice::traffic {

volatile int g_stop = 0;

Args::Args(int argc, char **argv, std::initializer_list<Spec> specs)
{
	for (int i = 0; i < argc; i++) {
		std::string arg = argv[i];
		if (!arg.starts_with("--") || arg.size() < 3)
			throw UsageError("unexpected argument '" + arg + "'");
		std::string name = arg.substr(2), value;
		bool inline_value = false;
		if (auto eq = name.find('='); eq != std::string::npos) {
			value = name.substr(eq + 1);
			name = name.substr(0, eq);
			inline_value = true;
		}
		const Spec *spec = nullptr;
		for (const auto &s : specs)
			if (name == s.name)
				spec = &s;
		if (!spec)
			throw UsageError("unknown option --" + name);
		if (values_.count(name))
			throw UsageError("--" + name + " given twice");
		if (spec->takes_value && !inline_value) {
			if (i + 1 >= argc)
				throw UsageError("--" + name + " needs a value");
			value = argv[++i];
		} else if (!spec->takes_value && inline_value) {
			throw UsageError("--" + name + " takes no value");
		}
		values_[name] = value;
	}
}

std::optional<std::string> Args::get(const std::string &name) const
{
	auto it = values_.find(name);
	if (it == values_.end())
		return std::nullopt;
	return it->second;
}

std::string Args::required(const std::string &name) const
{
	auto v = get(name);
	if (!v)
		throw UsageError("--" + name + " is required");
	return *v;
}

uint64_t parse_u64(const std::string &opt, const std::string &text, uint64_t min, uint64_t max)
{
	uint64_t v = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
	if (ec != std::errc() || end != text.data() + text.size())
		throw UsageError("--" + opt + " '" + text + "' is not a whole number");
	if (v < min || v > max)
		throw UsageError("--" + opt + " " + text + " is outside " + std::to_string(min) + ".." +
				 std::to_string(max));
	return v;
}

double parse_real(const std::string &opt, const std::string &text, double min, double max)
{
	char *end = nullptr;
	errno = 0;
	double v = std::strtod(text.c_str(), &end);
	if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v))
		throw UsageError("--" + opt + " '" + text + "' is not a number");
	if (v < min || v > max)
		throw UsageError("--" + opt + " " + text + " is outside " + std::to_string(min) + ".." +
				 std::to_string(max));
	return v;
}

uint64_t Args::u64(const std::string &name, uint64_t def, uint64_t min, uint64_t max) const
{
	auto v = get(name);
	return v ? parse_u64(name, *v, min, max) : def;
}

double Args::real(const std::string &name, double def, double min, double max) const
{
	auto v = get(name);
	return v ? parse_real(name, *v, min, max) : def;
}

std::string Addr::str() const
{
	char buf[INET6_ADDRSTRLEN];
	inet_ntop(v6 ? AF_INET6 : AF_INET, b.data(), buf, sizeof(buf));
	return buf;
}

bool in_testbed_ranges(const Addr &a)
{
	if (!a.v6)
		return a.b[0] == 198 && (a.b[1] & 0xfe) == 18; // 198.18.0.0/15
	return a.b[0] == 0x20 && a.b[1] == 0x01 && a.b[2] == 0x00 && a.b[3] == 0x02 && a.b[4] == 0 &&
	       a.b[5] == 0; // 2001:2::/48
}

Addr parse_testbed_addr(const std::string &opt, const std::string &text)
{
	Addr a;
	if (inet_pton(AF_INET, text.c_str(), a.b.data()) == 1) {
		a.v6 = false;
	} else if (inet_pton(AF_INET6, text.c_str(), a.b.data()) == 1) {
		a.v6 = true;
	} else {
		throw UsageError("--" + opt + " '" + text + "' is not an IPv4 or IPv6 address");
	}
	if (!in_testbed_ranges(a))
		throw UsageError("--" + opt + " " + text +
				 " is outside the testbed ranges 198.18.0.0/15 and 2001:2::/48");
	return a;
}

std::array<uint8_t, 6> parse_mac(const std::string &opt, const std::string &text)
{
	std::array<uint8_t, 6> m{};
	unsigned v[6];
	char tail;
	if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		throw UsageError("--" + opt + " '" + text + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
	for (int i = 0; i < 6; i++) {
		if (v[i] > 0xff)
			throw UsageError("--" + opt + " '" + text + "' is not a MAC address");
		m[static_cast<size_t>(i)] = static_cast<uint8_t>(v[i]);
	}
	return m;
}

uint64_t now_ns()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void sleep_until_ns(uint64_t t)
{
	timespec ts{static_cast<time_t>(t / 1000000000ull), static_cast<long>(t % 1000000000ull)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR && !g_stop) {
	}
}

uint64_t duration_ns(const Args &a, bool required)
{
	auto v = a.get("duration");
	if (!v) {
		if (required)
			throw UsageError("--duration is required (every mode stops by itself)");
		return 0;
	}
	double s = parse_real("duration", *v, 0.001, 86400);
	return static_cast<uint64_t>(s * 1e9);
}

uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += uint32_t(p[i]) << 8 | p[i + 1];
	if (len & 1)
		sum += uint32_t(p[len - 1]) << 8;
	return sum;
}

uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return static_cast<uint16_t>(~sum & 0xffff);
}

namespace {
void on_stop(int) { g_stop = 1; }
} // namespace

void install_stop_handlers()
{
	struct sigaction sa {};
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
}

namespace {

// A default route in /proc/net/route (IPv4) or /proc/net/ipv6_route.
bool has_default_route()
{
	std::ifstream r4("/proc/net/route");
	std::string line;
	std::getline(r4, line); // header
	while (std::getline(r4, line)) {
		std::istringstream f(line);
		std::string ifc, dst, gw, flags, refcnt, use, metric, mask;
		if (f >> ifc >> dst >> gw >> flags >> refcnt >> use >> metric >> mask && dst == "00000000" &&
		    mask == "00000000")
			return true;
	}
	std::ifstream r6("/proc/net/ipv6_route");
	while (std::getline(r6, line)) {
		std::istringstream f(line);
		std::string dst, plen, src, splen, nh, metric, refcnt, use, flags, ifc;
		// The kernel lists its own unreachable default in a namespace without
		// one on lo: only a default through a real device counts.
		if (f >> dst >> plen >> src >> splen >> nh >> metric >> refcnt >> use >> flags >> ifc &&
		    dst == std::string(32, '0') && plen == "00" && ifc != "lo")
			return true;
	}
	return false;
}

} // namespace

void require_test_netns()
{
	// The initial network namespace has a fixed inode number
	// (PROC_NET_INIT_INO, include/linux/proc_ns.h).
	constexpr ino_t kInitNetIno = 0xEFFFFFF9u;
	struct stat self {};
	if (stat("/proc/self/ns/net", &self) != 0)
		throw RunError(std::string("stat /proc/self/ns/net: ") + std::strerror(errno));
	if (self.st_ino == kInitNetIno)
		throw RunError("refusing to run in the machine's own network namespace: run it inside a "
			       "test namespace (scripts/testbed.sh: tb_exec ROLE sluice-traffic ...)");
	if (has_default_route())
		throw RunError("refusing to run in a network namespace with a default route: the tools only "
			       "address test namespaces, which have none (scripts/testbed.sh)");
}

void print_json(const nlohmann::ordered_json &j)
{
	std::cout << j.dump() << std::endl;
}

} // namespace sluice::traffic
