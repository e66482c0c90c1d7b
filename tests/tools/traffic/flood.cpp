// flood.cpp - `sluice-traffic flood`: raw UDP frames through AF_PACKET.
//
// How it sends: one AF_PACKET SOCK_RAW socket per thread, bound to the
// interface with protocol 0 (it receives nothing, so it costs the receive path
// nothing), PACKET_QDISC_BYPASS on (dev_direct_xmit: no qdisc, no queue lock),
// and sendmmsg() batches of up to 256 frames (--batch). With one source every
// iovec of a batch points at one prebuilt frame; otherwise each frame has its
// own buffer and only the source address and the two checksums it enters are
// rewritten.
//
// Why not PACKET_TX_RING: measured side by side (a TPACKET_V2 ring prototype
// with the same frame, bypass on, interleaved 2-second runs on an idle
// machine) it was slower: 1.48-1.51 Mpps against 1.63-1.69 Mpps for
// sendmmsg. On veth the cost per frame is what the kernel does after the
// driver's xmit (veth hands the skb to its peer, and the peer's NAPI poll,
// XDP included, runs in the sender's softirq on the sender's CPU), not the
// syscall or the copy, so the ring has nothing to save; sendmmsg keeps the
// per-frame source rewriting, the pacing and the "sent" accounting (the
// return value) simple.
//
// Measured, idle machine (Linux 6.18, 2 vCPU AMD EPYC, the scripts/testbed.sh
// topology, 64-byte frames, one thread, 2-second runs):
//   injected on the router's host-facing veth (TB_INJECT_IF) into veth-host
//   running xdp_drop:      single source 1.63-1.72 Mpps, random IPv4 1.64-1.67,
//                          random IPv6 1.76, random IPv6 in one /64 1.75,
//                          1000 sources round-robin 1.73 Mpps
//   routed: from the attacker through the router (whose forwarding runs on
//   the sender's CPU too) into xdp_drop: single 0.96, random IPv4 0.94 Mpps
//   no XDP program (every frame goes up the host's stack, UDP to a port
//   nobody listens on): injected single 0.94, random 1.28; routed single
//   0.76, random IPv4 0.98, random IPv6 0.86 Mpps
// When other work shares the 2 CPUs these halve. --threads 2 is slower here
// (1.32-1.36 Mpps injected): both threads feed the one receive ring of
// veth-host. scripts/testbed-selfcheck.sh prints the current figures.
//
// ENOBUFS (veth's ring to the peer full, or its queue stopped for
// backpressure) is not a loss: the frame is retried, and counted in
// "enobufs". "sent" is what the kernel took.
#include "common.h"
#include "frame.h"

#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

namespace sluice::traffic {

const char *const kFloodUsage =
	"usage: sluice-traffic flood --iface IF --dst-mac MAC --dst IP\n"
	"         (--src IP | --sources N --src-base IP [--v6-same64] | --random-src [--v6] [--v6-same64] [--src-base IP])\n"
	"         (--duration S | --count C) [--pps R] [--size BYTES] [--port P] [--src-port P]\n"
	"         [--src-mac MAC] [--threads T] [--batch B] [--seed N] [--syn]\n"
	"         [--pulse-on S --pulse-every S]\n"
	"  Raw UDP frames through AF_PACKET (PACKET_QDISC_BYPASS, sendmmsg batches);\n"
	"  with --syn, TCP SYNs (24-byte TCP header with MSS; --port the destination port).\n"
	"  --dst, --src, --src-base: inside 198.18.0.0/15 or 2001:2::/48 (the testbed).\n"
	"  --sources N --src-base IP: N sources round-robin from IP up (IPv4: +1 each;\n"
	"      IPv6: +1 in the /64 prefix, i.e. N different /64s; with --v6-same64:\n"
	"      +1 in the interface ID, N addresses of one /64).\n"
	"  --random-src: a random source per frame: IPv4 in 198.18.0.0/15, IPv6 in\n"
	"      2001:2::/48 with a random /64 and interface ID, or with --v6-same64 a\n"
	"      random interface ID in one /64 (that of --src-base, default 2001:2:0:ff::/64).\n"
	"  --size: frame bytes without the FCS (default 64; at least the headers:\n"
	"      42 for IPv4, 62 for IPv6; at most 1514). --pps: 0 or absent = as fast as\n"
	"      possible. --port: UDP destination port (default 9), --src-port (default 40000).\n"
	"  --pulse-on S --pulse-every S (with --pps): a pulse wave, --pps for the first S\n"
	"      of every S seconds from the start and nothing between (its mean: pps x on / every).\n"
	"  Prints {\"sent\":N,\"seconds\":S,\"pps\":R,...} on one line.\n";

namespace {

enum class SrcMode { single, sequence, random };

struct FloodConfig {
	std::string iface;
	int ifindex = 0;
	std::array<uint8_t, 6> dst_mac{}, src_mac{};
	Addr dst;
	SrcMode mode = SrcMode::single;
	Addr src;         // single source, or the base of the sequence / the /64 of same64
	uint64_t nsources = 1;
	bool same64 = false;
	bool syn = false; // TCP SYNs instead of UDP
	double pps = 0;   // total over all threads; 0 = unlimited
	uint64_t count = 0; // total; 0 = no count limit
	uint64_t dur_ns = 0; // 0 = no time limit
	// A pulse wave: on for pulse_on_ns of every pulse_every_ns (0: steady).
	uint64_t pulse_on_ns = 0, pulse_every_ns = 0;
	size_t frame_len = 64;
	uint16_t dport = 9, sport = 40000;
	unsigned threads = 1;
	unsigned batch = 256;
	uint64_t seed = 0;
};

// wyrand: fast, good enough for spreading sources.
struct Rng {
	uint64_t s;
	uint64_t next()
	{
		s += 0xa0761d6478bd642full;
		__uint128_t t = static_cast<__uint128_t>(s) * (s ^ 0xe7037ed1a0b428dbull);
		return static_cast<uint64_t>(t >> 64) ^ static_cast<uint64_t>(t);
	}
};

uint64_t load_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void store_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = static_cast<uint8_t>(v);
		v >>= 8;
	}
}

// The i-th source of a sequence starting at `base`.
Addr nth_source(const Addr &base, uint64_t i, bool same64)
{
	Addr a = base;
	if (!a.v6) {
		uint32_t v = uint32_t(a.b[0]) << 24 | uint32_t(a.b[1]) << 16 | uint32_t(a.b[2]) << 8 | a.b[3];
		v += static_cast<uint32_t>(i);
		a.b[0] = static_cast<uint8_t>(v >> 24);
		a.b[1] = static_cast<uint8_t>(v >> 16);
		a.b[2] = static_cast<uint8_t>(v >> 8);
		a.b[3] = static_cast<uint8_t>(v);
	} else if (same64) {
		store_be64(a.b.data() + 8, load_be64(a.b.data() + 8) + i);
	} else {
		store_be64(a.b.data(), load_be64(a.b.data()) + i);
	}
	return a;
}

class SourceGen {
public:
	SourceGen(const FloodConfig &c, unsigned thread) : c_(c), i_(thread), step_(c.threads)
	{
		rng_.s = c.seed ^ (0x9e3779b97f4a7c15ull * (thread + 1));
		cur_ = c.src;
	}

	bool constant() const { return c_.mode == SrcMode::single; }

	const Addr &next()
	{
		switch (c_.mode) {
		case SrcMode::single:
			break;
		case SrcMode::sequence:
			cur_ = nth_source(c_.src, i_ % c_.nsources, c_.same64);
			i_ += step_;
			break;
		case SrcMode::random: {
			uint64_t r = rng_.next();
			if (!cur_.v6) {
				cur_.b[1] = static_cast<uint8_t>(18 | ((r >> 16) & 1));
				cur_.b[2] = static_cast<uint8_t>(r >> 8);
				cur_.b[3] = static_cast<uint8_t>(r);
			} else {
				if (!c_.same64) {
					cur_.b[6] = static_cast<uint8_t>(r >> 56);
					cur_.b[7] = static_cast<uint8_t>(r >> 48);
					r = rng_.next();
				}
				store_be64(cur_.b.data() + 8, r);
			}
			break;
		}
		}
		return cur_;
	}

private:
	const FloodConfig &c_;
	uint64_t i_, step_;
	Rng rng_{};
	Addr cur_;
};

struct ThreadResult {
	uint64_t sent = 0;
	uint64_t enobufs = 0;
	std::string error;
};

int open_packet_socket(const FloodConfig &c)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); // protocol 0: transmit only
	if (fd < 0)
		throw RunError(std::string("socket(AF_PACKET): ") + std::strerror(errno) + " (needs root)");
	int one = 1;
	if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) != 0) {
		close(fd);
		throw RunError(std::string("PACKET_QDISC_BYPASS: ") + std::strerror(errno));
	}
	int sndbuf = 16 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	sockaddr_ll sll{};
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = 0;
	sll.sll_ifindex = c.ifindex;
	if (bind(fd, reinterpret_cast<sockaddr *>(&sll), sizeof(sll)) != 0) {
		int e = errno;
		close(fd);
		throw RunError("bind(AF_PACKET, " + c.iface + "): " + std::strerror(e));
	}
	return fd;
}

void flood_thread(const FloodConfig &c, unsigned t, uint64_t t0, ThreadResult &res)
{
	const unsigned T = c.threads;
	// This thread's share of the count and of the rate.
	uint64_t quota = c.count ? c.count / T + (t < c.count % T ? 1 : 0) : 0;
	double pps = c.pps / T;
	uint64_t deadline = c.dur_ns ? t0 + c.dur_ns : 0;

	int fd = -1;
	try {
		fd = open_packet_socket(c);
	} catch (const RunError &e) {
		res.error = e.what();
		return;
	}

	SourceGen gen(c, t);
	FloodFrame::Spec spec{c.dst_mac, c.src_mac, c.dst, gen.next(), c.sport, c.dport, c.frame_len, c.syn};
	FloodFrame tmpl(spec);
	const size_t flen = tmpl.size();
	const unsigned B = c.batch;
	std::vector<uint8_t> buf(flen * B);
	std::vector<iovec> iov(B);
	std::vector<mmsghdr> msgs(B);
	for (unsigned i = 0; i < B; i++) {
		uint8_t *slot = buf.data() + (gen.constant() ? 0 : i * flen);
		iov[i] = {slot, flen};
		msgs[i].msg_hdr = {};
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	tmpl.write(buf.data(), spec.src);

	// The time the flood has been on since t0: all of it, or with a pulse
	// wave the on-phases only; and its inverse, when it will have been on
	// for `on` ns.
	auto on_since_t0 = [&c](uint64_t elapsed) -> uint64_t {
		if (!c.pulse_every_ns)
			return elapsed;
		return elapsed / c.pulse_every_ns * c.pulse_on_ns + std::min(elapsed % c.pulse_every_ns, c.pulse_on_ns);
	};
	auto when_on_for = [&c](uint64_t on) -> uint64_t {
		if (!c.pulse_every_ns)
			return on;
		return on / c.pulse_on_ns * c.pulse_every_ns + on % c.pulse_on_ns;
	};

	uint64_t sent = 0;
	bool first = true;
	while (!g_stop) {
		uint64_t now = now_ns();
		if (deadline && now >= deadline)
			break;
		uint64_t n = B;
		if (quota) {
			if (sent >= quota)
				break;
			n = std::min<uint64_t>(n, quota - sent);
		}
		if (pps > 0) {
			// Frames due by now at the steady rate, less those sent.
			auto due = static_cast<uint64_t>(pps * double(on_since_t0(now - t0)) / 1e9) + 1;
			if (due <= sent) {
				auto next = t0 + when_on_for(static_cast<uint64_t>(std::ceil(double(sent) * 1e9 / pps)));
				if (deadline)
					next = std::min(next, deadline);
				sleep_until_ns(next);
				continue;
			}
			n = std::min<uint64_t>(n, due - sent);
		}
		if (!gen.constant()) {
			// The first frame of the first batch already has the first source.
			for (uint64_t i = first ? 1 : 0; i < n; i++)
				tmpl.write(buf.data() + i * flen, gen.next());
		}
		first = false;
		uint64_t k = 0;
		while (k < n && !g_stop) {
			int r = sendmmsg(fd, msgs.data() + k, static_cast<unsigned>(n - k), 0);
			if (r > 0) {
				k += static_cast<uint64_t>(r);
				if (k < n) {
					// It stopped early: the error of the frame at k is
					// in SO_ERROR; that frame was not sent.
					int err = 0;
					socklen_t len = sizeof(err);
					getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
					if (err == ENOBUFS || err == EAGAIN || err == 0)
						res.enobufs++;
					else {
						res.error = std::string("sendmmsg: ") + std::strerror(err);
						goto out;
					}
				}
			} else if (r < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)) {
				res.enobufs += errno != EINTR;
				if (deadline && now_ns() >= deadline)
					break;
			} else {
				res.error = std::string("sendmmsg on ") + c.iface + ": " + std::strerror(errno);
				goto out;
			}
		}
		sent += k;
	}
out:
	res.sent = sent;
	close(fd);
}

FloodConfig parse_flood(int argc, char **argv)
{
	Args a(argc, argv,
	       {{"iface", true}, {"dst-mac", true}, {"dst", true}, {"src", true}, {"sources", true},
		{"src-base", true}, {"random-src", false}, {"v6", false}, {"v6-same64", false}, {"pps", true},
		{"duration", true}, {"count", true}, {"size", true}, {"port", true}, {"src-port", true},
		{"src-mac", true}, {"threads", true}, {"batch", true}, {"seed", true}, {"syn", false},
		{"pulse-on", true}, {"pulse-every", true}});
	FloodConfig c;
	c.iface = a.required("iface");
	c.ifindex = static_cast<int>(if_nametoindex(c.iface.c_str()));
	if (c.ifindex == 0)
		throw UsageError("--iface " + c.iface + ": no such interface in this network namespace");
	c.dst_mac = parse_mac("dst-mac", a.required("dst-mac"));
	c.dst = parse_testbed_addr("dst", a.required("dst"));

	int modes = a.has("src") + a.has("sources") + a.has("random-src");
	if (modes != 1)
		throw UsageError("give exactly one of --src IP, --sources N --src-base IP, --random-src");
	c.same64 = a.has("v6-same64");
	if (a.has("v6") && !c.dst.v6)
		throw UsageError("--v6 needs an IPv6 --dst");
	if (a.has("src")) {
		c.mode = SrcMode::single;
		c.src = parse_testbed_addr("src", *a.get("src"));
		if (a.has("src-base") || c.same64)
			throw UsageError("--src-base and --v6-same64 go with --sources or --random-src");
	} else if (a.has("sources")) {
		c.mode = SrcMode::sequence;
		c.nsources = parse_u64("sources", *a.get("sources"), 1, 1u << 24);
		c.src = parse_testbed_addr("src-base", a.required("src-base"));
		if (c.same64 && !c.src.v6)
			throw UsageError("--v6-same64 needs IPv6 addresses");
		// The sequence must stay in the testbed range (a carry out of the
		// /15 or /48 shows in the prefix; an IID carry in one /64 is harmless).
		Addr last = nth_source(c.src, c.nsources - 1, c.same64);
		if (!in_testbed_ranges(last))
			throw UsageError("--sources " + std::to_string(c.nsources) + " from --src-base " + c.src.str() +
					 " runs out of the testbed range (the last would be " + last.str() + ")");
	} else {
		c.mode = SrcMode::random;
		c.src.v6 = c.dst.v6;
		if (a.has("src-base")) {
			c.src = parse_testbed_addr("src-base", *a.get("src-base"));
		} else if (c.dst.v6) {
			c.src = parse_testbed_addr("src-base", "2001:2:0:ff::1");
		} else {
			c.src = parse_testbed_addr("src-base", "198.18.0.1");
		}
		if (c.same64 && !c.dst.v6)
			throw UsageError("--v6-same64 needs an IPv6 --dst");
		if (!c.same64 && c.src.v6) {
			// Random /64 in 2001:2::/48: the prefix bytes stay, the rest is drawn.
			c.src = parse_testbed_addr("src-base", "2001:2::1");
		}
	}
	if (c.src.v6 != c.dst.v6)
		throw UsageError("the sources and --dst must be of one family");

	c.pps = a.real("pps", 0, 0, 1e9);
	c.dur_ns = duration_ns(a, false);
	c.count = a.u64("count", 0, 1, 1000000000000ull);
	if (!c.dur_ns && !c.count)
		throw UsageError("--duration S or --count C is required (every mode stops by itself)");
	if (a.has("pulse-on") != a.has("pulse-every"))
		throw UsageError("--pulse-on and --pulse-every go together");
	if (a.has("pulse-on")) {
		if (c.pps <= 0)
			throw UsageError("--pulse-on needs --pps (a pulse wave is paced)");
		double every = a.real("pulse-every", 1, 0.001, 3600);
		double on = a.real("pulse-on", 0.1, 0.001, every);
		c.pulse_on_ns = static_cast<uint64_t>(on * 1e9);
		c.pulse_every_ns = static_cast<uint64_t>(every * 1e9);
	}
	c.syn = a.has("syn");
	size_t minlen = std::max<size_t>(FloodFrame::header_len(c.dst.v6, c.syn), 42);
	c.frame_len = a.u64("size", 64, minlen, 1514);
	c.dport = static_cast<uint16_t>(a.u64("port", 9, 1, 65535));
	c.sport = static_cast<uint16_t>(a.u64("src-port", 40000, 1, 65535));
	c.threads = static_cast<unsigned>(a.u64("threads", 1, 1, 64));
	c.batch = static_cast<unsigned>(a.u64("batch", 256, 1, 1024));
	if (auto s = a.get("seed")) {
		c.seed = parse_u64("seed", *s, 0, UINT64_MAX);
	} else if (getrandom(&c.seed, sizeof(c.seed), 0) != sizeof(c.seed)) {
		c.seed = now_ns();
	}
	if (auto m = a.get("src-mac")) {
		c.src_mac = parse_mac("src-mac", *m);
	} else {
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		ifreq ifr{};
		std::strncpy(ifr.ifr_name, c.iface.c_str(), IFNAMSIZ - 1);
		if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			throw RunError("reading the MAC of " + c.iface + ": " + std::strerror(e));
		}
		close(fd);
		std::memcpy(c.src_mac.data(), ifr.ifr_hwaddr.sa_data, 6);
	}
	return c;
}

const char *mode_name(SrcMode m)
{
	switch (m) {
	case SrcMode::single:
		return "single";
	case SrcMode::sequence:
		return "round-robin";
	case SrcMode::random:
		return "random";
	}
	return "?";
}

} // namespace

int run_flood(int argc, char **argv)
{
	FloodConfig c = parse_flood(argc, argv);
	require_test_netns();
	install_stop_handlers();
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	std::vector<ThreadResult> results(c.threads);
	std::vector<std::thread> threads;
	uint64_t t0 = now_ns();
	for (unsigned t = 0; t < c.threads; t++)
		threads.emplace_back(flood_thread, std::cref(c), t, t0, std::ref(results[t]));
	for (auto &th : threads)
		th.join();
	uint64_t t1 = now_ns();

	uint64_t sent = 0, enobufs = 0;
	std::string error;
	for (const auto &r : results) {
		sent += r.sent;
		enobufs += r.enobufs;
		if (error.empty())
			error = r.error;
	}
	double secs = double(t1 - t0) / 1e9;
	nlohmann::ordered_json j;
	j["sent"] = sent;
	j["seconds"] = std::round(secs * 1e6) / 1e6;
	j["pps"] = secs > 0 ? static_cast<uint64_t>(std::llround(double(sent) / secs)) : 0;
	j["enobufs"] = enobufs;
	j["frame_bytes"] = c.frame_len;
	j["family"] = c.dst.v6 ? "ipv6" : "ipv4";
	j["sources"] = mode_name(c.mode);
	j["threads"] = c.threads;
	if (c.pulse_every_ns) {
		j["pulse_on"] = double(c.pulse_on_ns) / 1e9;
		j["pulse_every"] = double(c.pulse_every_ns) / 1e9;
	}
	if (!error.empty())
		j["error"] = error;
	print_json(j);
	return error.empty() ? 0 : 1;
}

} // namespace sluice::traffic
