// SYN cookies on the real program (bpf/cookie_path.bpf.h's sluice_cookie, bpf/cookie.h):
// while the breaker sheds (or always, cookie_mode ALWAYS) a TCP SYN from a
// source without standing to a listener is answered with a SYN-ACK carrying
// the kernel's cookie (XDP_TX), and the ACK that returns it proves the source
// (standing, reason cookie). The kernel's cookie helpers need a real listener
// in the network namespace BPF_PROG_TEST_RUN runs in (the caller's, its
// loopback device) and net.ipv4.tcp_syncookies = 2 there: the whole binary
// runs in a network namespace of its own (CookieNetns below, made before the
// first test; ctest runs each case in a process of its own, so each gets a
// fresh one), whose listeners are bound to 0.0.0.0:kPort and [::]:kPort.
// Nothing of the machine's own namespace is touched: the namespace, its
// sockets and its sysctls die with the process.
#include "class_fixture.h"
#include "cookie_netns.h"
#include "fixture.h"
#include "require.h"
#include "standing_support.h"

#include "bpf/standing.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <set>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

constexpr std::uint16_t kPort = 8080;       // the listeners'
constexpr std::uint16_t kClosedPort = 8081; // nobody's
const Ip4 kDst4 = ip4("198.18.1.2");
const Ip6 kDst6 = ip6("2001:2:0:1::2");

// ------------------------------------------------------------ the namespace

std::string read_file(const char *path)
{
	char buf[64] = {};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return {};
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? std::string(buf, std::size_t(n)) : std::string{};
}

constexpr const char *kSyncookies = "/proc/sys/net/ipv4/tcp_syncookies";

// A network namespace of the process's own, before the first test runs (in
// gtest's main thread, the one every test runs in): cookie_netns.h's lo up,
// syncookies and timestamps 2, the two listeners.
class CookieNetns : public ::testing::Environment {
public:
	void SetUp() override
	{
		if (geteuid() != 0) {
			why_ = "needs root (BPF and network namespaces)";
			return;
		}
		why_ = enter_cookie_netns(kPort);
		if (!why_.empty())
			return;
		ready_ = true;
	}
	bool ready() const { return ready_; }
	const std::string &why() const { return why_; }

private:
	bool ready_ = false;
	std::string why_ = "the test namespace was not made";
};

CookieNetns *const g_netns =
	static_cast<CookieNetns *>(::testing::AddGlobalTestEnvironment(new CookieNetns));

#define SLUICE_REQUIRE_COOKIE_NETNS()                                            \
	do {                                                                     \
		SLUICE_REQUIRE_ROOT();                                           \
		if (!g_netns->ready())                                           \
			SLUICE_CANNOT_RUN(g_netns->why());                       \
	} while (0)

// net.ipv4.tcp_syncookies of the test's namespace set for a scope.
struct SyncookiesFor {
	std::string was;
	explicit SyncookiesFor(const char *v) : was(read_file(kSyncookies)) { EXPECT_TRUE(write_proc(kSyncookies, v)); }
	~SyncookiesFor() { write_proc(kSyncookies, was.empty() ? "2" : was.c_str()); }
};

// --------------------------------------------------------------- the config

int ncpus()
{
	int n = libbpf_num_possible_cpus();
	return n > 0 ? n : 1;
}

constexpr std::uint32_t kMss4 = 1460, kMss6 = 1440, kOurWscale = 7;

// Shedding, no newcomer budget, cookies answered at 1e6/s over every CPU.
Options cookie_options(std::uint32_t mode = SLUICE_COOKIES_SHEDDING, std::uint64_t cookie_cost_ns = 0,
		       std::uint64_t cookie_burst = 1000)
{
	Options o;
	o.config = make_config(1000, 100, 1000, 100);
	sluice_config &c = o.config;
	c.breaker_state = SLUICE_SHEDDING;
	c.newcomer_cost_ns = 0;
	c.newcomer_burst = 0;
	c.cookie_mode = mode;
	c.cookie_cost_ns = cookie_cost_ns ? cookie_cost_ns : 1000ull * std::uint64_t(ncpus()); // 1e9 x CPUs / 1e6
	c.cookie_burst = cookie_burst;
	c.cookie_mss4 = kMss4;
	c.cookie_mss6 = kMss6;
	c.cookie_wscale = kOurWscale;
	c.cookie_flags = SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK | SLUICE_COOKIE_WSCALE;
	c.cookie_acks_unlooked = 1; // as sluiced with its standing feeders
	// The listeners' ports, as sluiced and the sockops feeder mark them
	// (kClosedPort is never marked; 8082 is a test's own listener).
	o.listen_ports = {kPort, 8082};
	return o;
}

// ------------------------------------------------------------- the segments

// A client: its address, the listener's, its SYN; MACs that differ in
// every byte (a swap of any part shows).
struct Client {
	bool v6 = false;
	Ip4 src4{}, dst4 = kDst4;
	Ip6 src6{}, dst6 = kDst6;
	Eth eth{.dst = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55}, .src = {0x0a, 0x66, 0x77, 0x88, 0x99, 0xaa}};
	Tcp syn{};
};

Bytes frame_of(const Client &c, const Tcp &t)
{
	if (c.v6)
		return tcp6(c.eth, Ipv6{.src = c.src6, .dst = c.dst6}, t);
	return tcp4(c.eth, Ipv4{.src = c.src4, .dst = c.dst4, .id = 0x1234}, t);
}

Client client4(const char *src, std::uint32_t tsval = 0x01020304, std::uint16_t sport = 40001)
{
	Client c;
	c.src4 = ip4(src);
	c.syn = Tcp{.sport = sport, .dport = kPort, .seq = 0x11223344, .flags = kTcpSyn,
		    .options = linux_syn_options(1400, tsval, 9)};
	return c;
}

Client client6(const char *src, std::uint32_t tsval = 0x05060708, std::uint16_t sport = 40002)
{
	Client c;
	c.v6 = true;
	c.src6 = ip6(src);
	c.syn = Tcp{.sport = sport, .dport = kPort, .seq = 0xfedcba98, .flags = kTcpSyn,
		    .options = linux_syn_options(1380, tsval, 9)};
	return c;
}

std::uint32_t be32_at(const Bytes &b, std::size_t at)
{
	return std::uint32_t(b.at(at)) << 24 | std::uint32_t(b.at(at + 1)) << 16 | std::uint32_t(b.at(at + 2)) << 8 |
	       b.at(at + 3);
}

// What the SYN offered, parsed by the test (not by cookie.h).
struct Offered {
	bool ts = false, sack = false, ws = false;
	std::uint8_t wscale = 0;
	std::uint32_t tsval = 0;
};

Offered offered(const Tcp &t)
{
	Offered o;
	const Bytes &b = t.options;
	for (std::size_t i = 0; i < b.size();) {
		if (b[i] == 0)
			break;
		if (b[i] == 1) {
			i++;
			continue;
		}
		std::size_t len = b.at(i + 1);
		if (b[i] == 4)
			o.sack = true;
		if (b[i] == 3) {
			o.ws = true;
			o.wscale = b.at(i + 2);
		}
		if (b[i] == 8) {
			o.ts = true;
			o.tsval = be32_at(b, i + 2);
		}
		i += len;
	}
	return o;
}

// The reply the test expects, every byte, for the cookie and our timestamp
// the program chose (checked apart), checksums by frames.h's sum.
Bytes expected_synack(const Client &c, std::uint32_t cookie, std::uint32_t tsval)
{
	Offered o = offered(c.syn);
	std::uint32_t mss = c.v6 ? kMss6 : kMss4;
	Bytes opt{2, 4};
	put16(opt, std::uint16_t(mss));
	if (o.ts) {
		put8(opt, o.sack ? 4 : 1);
		put8(opt, o.sack ? 2 : 1);
		put8(opt, 8);
		put8(opt, 10);
		put32(opt, tsval);
		put32(opt, o.tsval);
		if (o.ws) {
			put8(opt, 1);
			put8(opt, 3);
			put8(opt, 3);
			put8(opt, std::uint8_t(kOurWscale));
		}
	}
	Bytes th;
	put16(th, c.syn.dport);
	put16(th, c.syn.sport);
	put32(th, cookie);
	put32(th, c.syn.seq + 1);
	put8(th, std::uint8_t((20 + opt.size()) / 4 << 4));
	put8(th, 0x12);
	put16(th, std::uint16_t(65535 - 65535 % mss));
	put16(th, 0);
	put16(th, 0);
	put(th, opt);

	Eth e = c.eth;
	std::swap(e.dst, e.src);
	Bytes f;
	if (c.v6) {
		put_eth(f, e, kEthIpv6);
		put32(f, 0x60000000);
		put16(f, std::uint16_t(th.size()));
		put8(f, 6);
		put8(f, 64);
		put(f, c.dst6);
		put(f, c.src6);
		std::uint32_t sum = csum_add(0, c.dst6.data(), 16);
		sum = csum_add(sum, c.src6.data(), 16);
		set16(th, 16, csum_fold(csum_add(sum + 6 + std::uint32_t(th.size()), th.data(), th.size())));
	} else {
		put_eth(f, e, kEthIpv4);
		std::size_t at = f.size();
		Bytes ip{0x45, 0};
		put16(ip, std::uint16_t(20 + th.size()));
		put16(ip, 0);      // id
		put16(ip, 0x4000); // DF
		put8(ip, 64);
		put8(ip, 6);
		put16(ip, 0);
		put(ip, c.dst4);
		put(ip, c.src4);
		set16(ip, 10, csum_fold(csum_add(0, ip.data(), 20)));
		put(f, ip);
		(void)at;
		std::uint32_t sum = csum_add(0, c.dst4.data(), 4);
		sum = csum_add(sum, c.src4.data(), 4);
		set16(th, 16, csum_fold(csum_add(sum + 6 + std::uint32_t(th.size()), th.data(), th.size())));
	}
	put(f, th);
	return f;
}

// The reply's own checksums, summed again over what came back: the IPv4
// header's and TCP's (with its pseudo header) must fold to zero.
void expect_checksums_fold(const Client &c, const Bytes &out)
{
	std::size_t l3 = l3_offset(c.eth);
	ASSERT_GE(out.size(), l3 + (c.v6 ? 40u : 20u) + 20u);
	std::size_t ip_len = c.v6 ? 40 : 20;
	std::size_t tcp_len = out.size() - l3 - ip_len;
	std::uint32_t sum;
	if (c.v6) {
		sum = csum_add(0, out.data() + l3 + 8, 32);
	} else {
		EXPECT_EQ(csum_fold(csum_add(0, out.data() + l3, 20)), 0) << "IPv4 header checksum";
		sum = csum_add(0, out.data() + l3 + 12, 8);
	}
	sum += 6 + std::uint32_t(tcp_len);
	EXPECT_EQ(csum_fold(csum_add(sum, out.data() + l3 + ip_len, tcp_len)), 0) << "TCP checksum";
}

// The timestamp of a cookie SYN-ACK at now_ms (the kernel's encoding: the
// low 6 bits the client's wscale (0xf none) and SACK, never above now).
std::uint32_t tsval_at(std::uint64_t now_ms, const Offered &o)
{
	std::uint32_t opts = o.ws ? (o.wscale & 0xf) : 0xf;
	if (o.sack)
		opts |= 0x10;
	std::uint32_t now = std::uint32_t(now_ms);
	std::uint32_t ts = (now & ~63u) | opts;
	if (ts > now)
		ts -= 64;
	return ts;
}

struct Answer {
	std::uint32_t cookie = 0, tsval = 0;
	bool ok = false;
};

// Send c's SYN, expect the SYN-ACK, every byte; its cookie and timestamp.
Answer expect_synack(const Sluice &s, const Client &c)
{
	Answer a;
	Bytes syn = frame_of(c, c.syn);
	Counters before = s.counters();
	// The TSval's clock is CLOCK_MONOTONIC_COARSE (the stack's own), not
	// the data plane's.
	std::uint64_t c0 = mono_ns(CLOCK_MONOTONIC_COARSE);
	RunOut r = s.run_out(syn);
	std::uint64_t c1 = mono_ns(CLOCK_MONOTONIC_COARSE);
	EXPECT_EQ(r.err, 0) << std::strerror(-r.err);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_TX));
	if (r.err || r.retval != XDP_TX)
		return a;
	std::size_t th = l3_offset(c.eth) + (c.v6 ? 40 : 20);
	EXPECT_GE(r.out.size(), th + 24);
	if (r.out.size() < th + 24)
		return a;
	a.cookie = be32_at(r.out, th + 4);
	Offered o = offered(c.syn);
	if (o.ts && r.out.size() >= th + 36) {
		a.tsval = be32_at(r.out, th + 28);
		// our timestamp: CLOCK_MONOTONIC_COARSE in ms, as bracketed by
		// the host's readings around the run
		std::set<std::uint32_t> allowed;
		for (std::uint64_t ms = c0 / 1000000; ms <= c1 / 1000000; ms++)
			allowed.insert(tsval_at(ms, o));
		EXPECT_TRUE(allowed.count(a.tsval)) << "TSval " << a.tsval << " not the coarse clock's ms ["
						    << c0 / 1000000 << ", " << c1 / 1000000 << "] encoded";
		EXPECT_EQ(a.tsval & 63u, (o.ws ? o.wscale : 0xfu) | (o.sack ? 0x10u : 0u));
	}
	Bytes want = expected_synack(c, a.cookie, a.tsval);
	EXPECT_EQ(r.out, want) << "the SYN-ACK, byte for byte";
	expect_checksums_fold(c, r.out);

	Counters after = s.counters();
	EXPECT_EQ(after.packets(SLUICE_COOKIE_SENT), before.packets(SLUICE_COOKIE_SENT) + 1) << after.str();
	EXPECT_EQ(after.bytes(SLUICE_COOKIE_SENT), before.bytes(SLUICE_COOKIE_SENT) + want.size()) << after.str();
	EXPECT_EQ(after.total_packets(), before.total_packets() + 1) << "the SYN-ACK counted once, nothing else: "
								     << after.str();
	a.ok = !::testing::Test::HasFailure();
	return a;
}

// The client's ACK of the SYN-ACK: seq + 1, the cookie + 1, our timestamp echoed.
Tcp ack_of(const Client &c, const Answer &a)
{
	Offered o = offered(c.syn);
	Tcp t{.sport = c.syn.sport, .dport = c.syn.dport, .seq = c.syn.seq + 1, .ack = a.cookie + 1,
	      .flags = kTcpAck, .window = 502};
	if (o.ts) {
		t.options = Bytes{1, 1, 8, 10};
		put32(t.options, o.tsval + 1);
		put32(t.options, a.tsval);
	}
	return t;
}

template <class Addr>
std::int32_t standing_reason(const Sluice &s, const Addr &a)
{
	Standing st{s};
	std::uint64_t h = hash_of(s, a);
	int w = st.way_of(h);
	if (w < 0)
		return -1;
	return std::int32_t(sluice_standing_record_reason(st.read(st.set_of(h)).record[w]));
}

std::int32_t standing_reason(const Sluice &s, const Client &c)
{
	return c.v6 ? standing_reason(s, c.src6) : standing_reason(s, c.src4);
}

// The valid ACK passes and proves the source (standing, reason cookie).
void expect_proved(const Sluice &s, const Client &c, const Answer &a)
{
	Counters before = s.counters();
	EXPECT_EQ(standing_reason(s, c), -1) << "standing before the ACK";
	Bytes ack = frame_of(c, ack_of(c, a));
	RunOut r = s.run_out(ack);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	EXPECT_EQ(r.out, ack) << "an ACK passed as it came";
	Counters after = s.counters();
	EXPECT_EQ(after.packets(SLUICE_COOKIE_PROVED), before.packets(SLUICE_COOKIE_PROVED) + 1) << after.str();
	EXPECT_EQ(after.total_packets(), before.total_packets() + 1) << after.str();
	EXPECT_EQ(standing_reason(s, c), std::int32_t(SLUICE_BY_COOKIE));
}

} // namespace

// ------------------------------------------------------------------- 1 + 2

TEST(Cookie, ASynIsAnsweredWithASynAckIPv4)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	Client c = client4("198.18.7.1");
	Answer a = expect_synack(s, c);
	ASSERT_TRUE(a.ok);
	expect_proved(s, c, a); // seq was the kernel's cookie: it accepts it
}

TEST(Cookie, ASynIsAnsweredWithASynAckIPv6)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	Client c = client6("2001:2::7");
	Answer a = expect_synack(s, c);
	ASSERT_TRUE(a.ok);
	expect_proved(s, c, a);
}

TEST(Cookie, ASynBehindAVlanTagIsAnsweredOnTheSameTag)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	Client c = client4("198.18.7.2");
	c.eth.tags = {vlan(42)};
	c.eth.tags[0].pcp = 3;
	Answer a = expect_synack(s, c);
	ASSERT_TRUE(a.ok);
	expect_proved(s, c, a);
}

TEST(Cookie, ASynWithoutTimestampsIsAnsweredWithMssOnly)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	Client c = client4("198.18.7.3");
	c.syn.options = Bytes{2, 4, 0x05, 0x78, 1, 3, 3, 9, 4, 2}; // MSS, NOP, WS, SACK: no timestamp
	Answer a = expect_synack(s, c);
	ASSERT_TRUE(a.ok);
	expect_proved(s, c, a);

	Client d = client6("2001:2::8");
	d.syn.options = {}; // no options at all
	Answer b = expect_synack(s, d);
	ASSERT_TRUE(b.ok);
	expect_proved(s, d, b);
}

TEST(Cookie, TheFlagsLimitWhatTheReplyOffers)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	Options o = cookie_options();
	o.config.cookie_flags = SLUICE_COOKIE_TS; // no SACK, no window scale (the host's sysctls)
	SLUICE_LOAD_OR_FAIL(s, o);
	Client c = client4("198.18.7.4");
	RunOut r = s.run_out(frame_of(c, c.syn));
	ASSERT_EQ(r.err, 0);
	ASSERT_EQ(r.retval, std::uint32_t(XDP_TX));
	std::size_t th = 14 + 20;
	ASSERT_EQ(r.out.size(), th + 36);
	EXPECT_EQ(r.out[th + 12], 9 << 4);
	EXPECT_EQ(Bytes(r.out.begin() + th + 20, r.out.begin() + th + 28), (Bytes{2, 4, 0x05, 0xb4, 1, 1, 8, 10}));
	EXPECT_EQ(be32_at(r.out, th + 28) & 63u, 0xfu) << "no window scale, no SACK in the timestamp";
	EXPECT_EQ(be32_at(r.out, th + 32), 0x01020304u) << "the client's timestamp echoed";
	expect_checksums_fold(c, r.out);
}

TEST(Cookie, AProvedSourceHasStandingAndItsNextSynIsNotAnswered)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	for (auto [c, unlooked] : {std::pair{client4("198.18.7.5"), 1u}, std::pair{client6("2001:2::9"), 1u},
				   std::pair{client4("198.18.7.5"), 0u}, std::pair{client6("2001:2::9"), 0u}}) {
		SCOPED_TRACE(std::string(c.v6 ? "IPv6" : "IPv4") + (unlooked ? ", checked alone" : ", after the lookup"));
		Options o = cookie_options();
		o.config.cookie_acks_unlooked = unlooked;
		SLUICE_LOAD_OR_FAIL(s, o);
		Answer a = expect_synack(s, c);
		ASSERT_TRUE(a.ok);
		expect_proved(s, c, a);

		Counters before = s.counters();
		Client again = c;
		again.syn.sport++;
		again.syn.seq += 1000;
		RunOut r = s.run_out(frame_of(again, again.syn));
		ASSERT_EQ(r.err, 0);
		EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS)) << "judged by its buckets, not answered";
		EXPECT_EQ(r.out, frame_of(again, again.syn));
		Counters after = s.counters();
		EXPECT_EQ(after.packets(SLUICE_STANDING), before.packets(SLUICE_STANDING) + 1) << after.str();
		EXPECT_EQ(after.packets(SLUICE_COOKIE_SENT), before.packets(SLUICE_COOKIE_SENT)) << after.str();
	}
}

// ------------------------------------------------------------------------ 3

class CookieAcks : public ::testing::TestWithParam<std::uint32_t> {};

// Both ways of checking an ACK: alone (config.cookie_acks_unlooked 1, as
// sluiced with its feeders) and after the listener lookup (0).
INSTANTIATE_TEST_SUITE_P(Cookie, CookieAcks, ::testing::Values(1u, 0u),
			 [](const auto &i) { return i.param ? "CheckedAlone" : "AfterTheLookup"; });

TEST_P(CookieAcks, ForgedAndMangledAcksAreDropped)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	Options o = cookie_options();
	o.config.cookie_acks_unlooked = GetParam();
	SLUICE_LOAD_OR_FAIL(s, o);
	Client c = client4("198.18.8.1");
	Answer a = expect_synack(s, c); // the listener has sent cookies now: the check is armed
	ASSERT_TRUE(a.ok);
	Client c6 = client6("2001:2::a");
	Answer a6 = expect_synack(s, c6);
	ASSERT_TRUE(a6.ok);

	// Forged: random acknowledgement numbers (never the cookie + 1).
	constexpr int kForged = 100000;
	std::mt19937 rng(20261202);
	Counters before = s.counters();
	int passed = 0, other = 0;
	for (int i = 0; i < kForged; i++) {
		const Client &k = (i & 1) ? c6 : c;
		const Answer &ka = (i & 1) ? a6 : a;
		Tcp t = ack_of(k, ka);
		do
			t.ack = std::uint32_t(rng());
		while (t.ack == ka.cookie + 1);
		RunResult r = s.run(frame_of(k, t));
		ASSERT_EQ(r.err, 0);
		if (r.retval == XDP_PASS)
			passed++;
		else if (r.retval != XDP_DROP)
			other++;
	}
	Counters after = s.counters();
	std::uint64_t dropped = after.packets(SLUICE_DROP_COOKIE) - before.packets(SLUICE_DROP_COOKIE);
	std::uint64_t proved = after.packets(SLUICE_COOKIE_PROVED) - before.packets(SLUICE_COOKIE_PROVED);
	std::printf("FORGED ACKS: sent=%d dropped(drop_cookie)=%llu accepted=%llu passed=%d "
		    "(expected accepted: %.2g at 2^-29 each)\n",
		    kForged, (unsigned long long)dropped, (unsigned long long)proved, passed,
		    double(kForged) / double(1u << 29));
	EXPECT_EQ(passed, 0);
	EXPECT_EQ(other, 0);
	EXPECT_EQ(proved, 0u);
	EXPECT_EQ(dropped, std::uint64_t(kForged)) << after.str();
	EXPECT_EQ(after.total_packets() - before.total_packets(), std::uint64_t(kForged)) << after.str();
	EXPECT_EQ(standing_reason(s, c), -1);
	EXPECT_EQ(standing_reason(s, c6), -1);

	// Mangled: the right cookie on another 4-tuple or sequence number.
	struct Mangled {
		const char *what;
		Client k;
		Tcp t;
	};
	std::vector<Mangled> mangled;
	for (const auto &[k, ka] : {std::pair{c, a}, std::pair{c6, a6}}) {
		Tcp t = ack_of(k, ka);
		Tcp port = t;
		port.sport++;
		mangled.push_back({"another source port", k, port});
		// (Not off by one to three: the kernel's cookie keeps the MSS
		// index in its low bits, hash + index, and the sequence number
		// is subtracted from it, so an ACK whose seq or ack is a little
		// off still decodes to a valid index (another MSS). The cookie
		// itself must be known for that: nothing an off-path forger has.)
		Tcp seq = t;
		seq.seq += 4096;
		mangled.push_back({"another sequence number", k, seq});
		Tcp ackm = t;
		ackm.ack += 4096;
		mangled.push_back({"another cookie", k, ackm});
		Client other_src = k;
		if (k.v6)
			other_src.src6 = ip6("2001:2::b"); // its /64 too: one source to the buckets, another to the cookie
		else
			other_src.src4 = ip4("198.18.8.2");
		mangled.push_back({"another source address", other_src, t});
		Client other_dst = k;
		if (k.v6)
			other_dst.dst6 = ip6("2001:2:0:1::3");
		else
			other_dst.dst4 = ip4("198.18.1.3");
		mangled.push_back({"another destination address", other_dst, t});
	}
	for (const Mangled &m : mangled) {
		SCOPED_TRACE(std::string(m.what) + (m.k.v6 ? " (IPv6)" : " (IPv4)"));
		Counters b = s.counters();
		EXPECT_VERDICT(s, frame_of(m.k, m.t), XDP_DROP);
		Counters e = s.counters();
		EXPECT_EQ(e.packets(SLUICE_DROP_COOKIE), b.packets(SLUICE_DROP_COOKIE) + 1) << e.str();
		EXPECT_EQ(e.total_packets(), b.total_packets() + 1) << e.str();
		EXPECT_EQ(standing_reason(s, m.k), -1);
	}

	// And the genuine ACKs still prove their sources: the checks above
	// failed on the cookie, not on a check that refuses everything.
	expect_proved(s, c, a);
	expect_proved(s, c6, a6);
}

TEST(Cookie, AnAckBeforeAnyCookieWasSentIsDropped)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	// A listener of another port that never sent a cookie: the kernel's
	// check refuses any ACK (no recent SYN queue overflow).
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(fd, 0);
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(8082);
	ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)), 0);
	ASSERT_EQ(listen(fd, 16), 0);
	Client c = client4("198.18.8.3");
	Tcp t{.sport = 40010, .dport = 8082, .seq = 7, .ack = 0x12345678, .flags = kTcpAck};
	EXPECT_VERDICT(s, frame_of(c, t), XDP_DROP);
	Counters e = s.counters();
	EXPECT_EQ(e.packets(SLUICE_DROP_COOKIE), 1u) << e.str();
	EXPECT_EQ(standing_reason(s, c), -1);
	close(fd);
}

// The listener's own cookies: a real connect() over loopback, answered by
// the stack itself (tcp_syncookies 2: always a cookie), its sequence numbers
// read back with TCP_REPAIR. The ACK that carries that cookie proves its
// source on the program's path too (the check needs no socket lookup, and
// the stack's secret is the one the program checks against); the same
// cookie moved back three minutes (the kernel accepts two) is dropped and
// proves nothing. The stale one runs first: a proved source has standing,
// and its next ACK would pass by that.
struct StackCookie {
	std::uint16_t sport = 0;
	std::uint32_t seq = 0, ack = 0; // the client's next byte; the cookie + 1
};

StackCookie stack_cookie(bool v6)
{
	StackCookie out;
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_GE(fd, 0) << std::strerror(errno);
	if (fd < 0)
		return out;
	sockaddr_storage ss{};
	socklen_t len;
	if (v6) {
		auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(kPort);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		auto *a = reinterpret_cast<sockaddr_in *>(&ss);
		a->sin_family = AF_INET;
		a->sin_port = htons(kPort);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	int one = 1, recv_q = TCP_RECV_QUEUE, send_q = TCP_SEND_QUEUE;
	std::uint32_t rcv_nxt = 0, snd_nxt = 0;
	socklen_t sl = sizeof(rcv_nxt);
	sockaddr_storage me{};
	socklen_t ml = sizeof(me);
	bool ok = connect(fd, reinterpret_cast<sockaddr *>(&ss), len) == 0 &&
		  getsockname(fd, reinterpret_cast<sockaddr *>(&me), &ml) == 0 &&
		  setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &one, sizeof(one)) == 0 &&
		  setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &recv_q, sizeof(recv_q)) == 0 &&
		  getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &rcv_nxt, &sl) == 0 &&
		  setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &send_q, sizeof(send_q)) == 0 &&
		  getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &snd_nxt, &sl) == 0;
	EXPECT_TRUE(ok) << "a loopback connection and its sequence numbers: " << std::strerror(errno);
	close(fd); // in repair mode: closed without a FIN
	if (!ok)
		return out;
	out.sport = ntohs(v6 ? reinterpret_cast<sockaddr_in6 *>(&me)->sin6_port
			     : reinterpret_cast<sockaddr_in *>(&me)->sin_port);
	out.seq = snd_nxt;
	out.ack = rcv_nxt;
	return out;
}

// The loopback client whose connection stack_cookie made, and its ACK that
// carries the stack's cookie.
Client loopback_client(bool v6)
{
	Client c;
	c.v6 = v6;
	if (v6)
		c.src6 = c.dst6 = ip6("::1");
	else
		c.src4 = c.dst4 = ip4("127.0.0.1");
	return c;
}

Tcp stack_cookie_ack(const StackCookie &k)
{
	return Tcp{.sport = k.sport, .dport = kPort, .seq = k.seq, .ack = k.ack, .flags = kTcpAck, .window = 502};
}

// t is dropped as drop_cookie and c gets no standing.
void expect_cookie_refused(const Sluice &s, const Client &c, const Tcp &t)
{
	Counters b = s.counters();
	EXPECT_VERDICT(s, frame_of(c, t), XDP_DROP);
	Counters e = s.counters();
	EXPECT_EQ(e.packets(SLUICE_DROP_COOKIE), b.packets(SLUICE_DROP_COOKIE) + 1) << e.str();
	EXPECT_EQ(e.total_packets(), b.total_packets() + 1) << e.str();
	EXPECT_EQ(standing_reason(s, c), -1);
}

// t passes as cookie_proved and c has standing (cookie).
void expect_cookie_proves(const Sluice &s, const Client &c, const Tcp &t)
{
	Counters b = s.counters();
	EXPECT_VERDICT(s, frame_of(c, t), XDP_PASS);
	Counters f = s.counters();
	EXPECT_EQ(f.packets(SLUICE_COOKIE_PROVED), b.packets(SLUICE_COOKIE_PROVED) + 1) << f.str();
	EXPECT_EQ(f.total_packets(), b.total_packets() + 1) << f.str();
	EXPECT_EQ(standing_reason(s, c), std::int32_t(SLUICE_BY_COOKIE));
}

TEST(Cookie, TheListenersOwnCookieProvesAndOneOlderThanTwoMinutesDoesNot)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options()); // checked alone: with the lookup this 4-tuple finds the
						   // host's socket (the handshake completed) and goes on
	for (bool v6 : {false, true}) {
		SCOPED_TRACE(v6 ? "IPv6" : "IPv4");
		StackCookie k = stack_cookie(v6);
		ASSERT_NE(k.sport, 0);
		Client c = loopback_client(v6);
		Tcp t = stack_cookie_ack(k);
		Tcp stale = t;
		stale.ack -= 3u << 24; // the cookie's minute counter, three back
		expect_cookie_refused(s, c, stale);
		expect_cookie_proves(s, c, t);
	}
}

// The SYN stamps (config.cookie_acks_stamped_from): once they are asked
// for, a genuine cookie ACK (the listener's own, from a loopback connect())
// from a source whose SYN the program never saw is dropped unchecked and
// proves nothing; after that source's SYN has come through the program (and
// been answered with the program's own cookie), the same ACK proves it. In
// the grace (stamped_from still ahead) it proves without any SYN seen.
TEST(Cookie, OnceStampsAreAskedAnAckProvesOnlyFromASourceWhoseSynWasSeen)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	for (bool v6 : {false, true}) {
		SCOPED_TRACE(v6 ? "IPv6" : "IPv4");
		for (bool in_grace : {false, true}) {
			SCOPED_TRACE(in_grace ? "in the grace" : "stamps asked");
			Options o = cookie_options();
			o.config.cookie_acks_stamped_from = in_grace ? ~0ull : 1;
			SLUICE_LOAD_OR_FAIL(s, o);
			StackCookie k = stack_cookie(v6);
			ASSERT_NE(k.sport, 0);
			Client c = loopback_client(v6);
			// A SYN of the same source from another port: the stamp is the
			// source's, and k's own 4-tuple is a connection, not the listener.
			c.syn = Tcp{.sport = std::uint16_t(k.sport ^ 0x4000), .dport = kPort, .seq = 7, .flags = kTcpSyn,
				    .options = linux_syn_options(1400, 0x01020304, 9)};
			Tcp t = stack_cookie_ack(k);
			if (!in_grace) {
				expect_cookie_refused(s, c, t);
				Answer a = expect_synack(s, c); // the SYN stamps its source
				ASSERT_TRUE(a.ok);
			}
			expect_cookie_proves(s, c, t);
		}
	}
}

// The program's own cookie proves its client with the stamps asked (the
// SYN that got it stamped the source), and a forged ACK from a source
// beside it, which sent no SYN, is drop_cookie like any forgery.
TEST(Cookie, WithStampsAskedTheProgramsOwnCookieProvesAndAForgeryIsDropped)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	Options o = cookie_options();
	o.config.cookie_acks_stamped_from = 1;
	SLUICE_LOAD_OR_FAIL(s, o);
	for (Client c : {client4("198.18.9.1"), client6("2001:2::9:1")}) {
		SCOPED_TRACE(c.v6 ? "IPv6" : "IPv4");
		Client forger = c.v6 ? client6("2001:2:0:99::1") : client4("198.18.99.1");
		Answer a = expect_synack(s, c);
		ASSERT_TRUE(a.ok);
		expect_cookie_refused(s, forger, ack_of(forger, a));
		expect_proved(s, c, a);
	}
}

// Without the feeders (config.cookie_acks_unlooked 0) the listener lookup
// comes first, and an ACK of a connection the host has goes on (here to the
// shed: no newcomer budget). With them (1) an ACK is checked as a cookie
// alone: a later segment of that connection carries none and is dropped
// (its peer would have standing, given by the feeders as it connected).
TEST(Cookie, AnAckOfAConnectionTheHostHasGoesOnOnlyWithoutTheFeeders)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	for (std::uint32_t unlooked : {0u, 1u}) {
		SCOPED_TRACE(unlooked ? "checked alone" : "after the lookup");
		Options o = cookie_options();
		o.config.cookie_acks_unlooked = unlooked;
		SLUICE_LOAD_OR_FAIL(s, o);
		StackCookie k = stack_cookie(false); // the host's side stays ESTABLISHED in the accept queue
		ASSERT_NE(k.sport, 0);
		Client c = loopback_client(false);
		Tcp later{.sport = k.sport, .dport = kPort, .seq = k.seq + 100, .ack = k.ack, .flags = kTcpAck, .window = 502};
		EXPECT_VERDICT(s, frame_of(c, later), XDP_DROP);
		Counters e = s.counters();
		EXPECT_EQ(e.packets(unlooked ? SLUICE_DROP_COOKIE : SLUICE_DROP_SHED), 1u) << e.str();
		EXPECT_EQ(e.total_packets(), 1u) << e.str();
		EXPECT_EQ(standing_reason(s, c), -1);
	}
}

// ------------------------------------------------------------------------ 4

// The first two CPUs of an affinity mask (one on a one-CPU machine).
static std::vector<int> two_cpus_of(const cpu_set_t &mask)
{
	std::vector<int> cpus;
	for (int i = 0; i < CPU_SETSIZE && cpus.size() < 2; i++)
		if (CPU_ISSET(i, &mask))
			cpus.push_back(i);
	return cpus;
}

TEST(Cookie, TheCookieBudgetBoundsEachCpu)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	constexpr std::uint64_t kB = 5, kN = 12;
	SLUICE_LOAD_OR_FAIL(s, cookie_options(SLUICE_COOKIES_SHEDDING, 100'000'000'000ull, kB)); // a token a 100 s

	cpu_set_t was;
	ASSERT_EQ(sched_getaffinity(0, sizeof(was), &was), 0);
	std::vector<int> cpus = two_cpus_of(was);
	ASSERT_GE(cpus.size(), 1u);
	if (cpus.size() < 2)
		std::printf("COOKIE BUDGET: one CPU only: the second CPU's share not measured\n");

	std::uint32_t n = 0;
	for (int cpu : cpus) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
		std::uint64_t tx = 0, dropped = 0;
		for (std::uint64_t i = 0; i < kN; i++, n++) {
			Client c = client4("198.18.9.1");
			c.src4 = ip4_plus(ip4("198.18.9.1"), n);
			RunResult r = s.run(frame_of(c, c.syn));
			ASSERT_EQ(r.err, 0);
			ASSERT_EQ(sched_getcpu(), cpu);
			if (r.retval == XDP_TX)
				tx++;
			else if (r.retval == XDP_DROP)
				dropped++;
		}
		EXPECT_EQ(tx, kB) << "CPU " << cpu;
		EXPECT_EQ(dropped, kN - kB) << "CPU " << cpu;
		std::vector<std::uint64_t> sent = s.per_cpu_packets(SLUICE_COOKIE_SENT);
		std::vector<std::uint64_t> spent = s.per_cpu_packets(SLUICE_DROP_COOKIE_BUDGET);
		std::printf("COOKIE BUDGET: CPU %d: %llu SYNs, %llu answered, %llu drop_cookie_budget\n", cpu,
			    (unsigned long long)kN, (unsigned long long)sent.at(std::size_t(cpu)),
			    (unsigned long long)spent.at(std::size_t(cpu)));
		EXPECT_EQ(sent.at(std::size_t(cpu)), kB);
		EXPECT_EQ(spent.at(std::size_t(cpu)), kN - kB);
	}
	ASSERT_EQ(sched_setaffinity(0, sizeof(was), &was), 0);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_COOKIE_SENT), kB * cpus.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_COOKIE_BUDGET), (kN - kB) * cpus.size()) << c.str();
	EXPECT_EQ(c.total_packets(), kN * cpus.size()) << c.str();
}

// The per-destination SYN-ACK bound (issue 29 item 4): SYNs whose source is
// in one /24 (a spoofed flood naming one victim network) get at most the
// network's burst + its refill over the run of SYN-ACKs, from both CPUs
// together (one bucket the CPUs share); the rest are drop_cookie_reflect,
// paying nothing of the cookie budget. Another host of the same /24, and one
// of the same /48 in another /64, are refused too; a SYN from another /24,
// and an IPv6 one (the families never share a slot), still get their cookies.
TEST(Cookie, TheSynAcksTowardOneNetworkAreBoundedByItsBucket)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	constexpr std::uint64_t kB = 5, kN = 24, kCost = SLUICE_NSEC_PER_SEC; // a token a second
	Options o = cookie_options();
	o.config.cookie_dest_cost_ns = std::uint32_t(kCost);
	o.config.cookie_dest_burst = std::uint32_t(kB);
	SLUICE_LOAD_OR_FAIL(s, o);
	auto slot4 = [&](const char *a) {
		sluice_source src = source_of(ip4(a));
		return sluice_dest_slot(s.options().key, &src, 0);
	};
	auto slot6 = [&](const char *a) {
		sluice_source src = source_of(ip6(a));
		return sluice_dest_slot(s.options().key, &src, 1);
	};
	// One slot per network: the /24's hosts share one, as the /48's do.
	ASSERT_EQ(slot4("198.18.11.1"), slot4("198.18.11.254"));
	ASSERT_EQ(slot6("2001:2::1"), slot6("2001:2:0:ffff::1"));
	// The fixed test key: the networks the test calls "another" do not share the victim's slot.
	ASSERT_NE(slot4("198.18.11.1"), slot4("198.18.12.1"));
	ASSERT_NE(slot4("198.18.11.1"), slot6("2001:2::1"));

	cpu_set_t was;
	ASSERT_EQ(sched_getaffinity(0, sizeof(was), &was), 0);
	std::vector<int> cpus = two_cpus_of(was);
	ASSERT_GE(cpus.size(), 1u);
	std::uint64_t tx = 0, dropped = 0;
	std::uint64_t c0 = dataplane_ns();
	for (std::uint64_t i = 0; i < kN; i++) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpus[i % cpus.size()], &one); // the victim's SYNs over both CPUs
		ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
		Client c = client4("198.18.11.1", 0x01020304, std::uint16_t(41000 + i));
		c.src4 = ip4_plus(ip4("198.18.11.1"), std::uint32_t(i)); // spoofed hosts of one /24
		RunResult r = s.run(frame_of(c, c.syn));
		ASSERT_EQ(r.err, 0);
		tx += r.retval == XDP_TX;
		dropped += r.retval == XDP_DROP;
	}
	std::uint64_t c1 = dataplane_ns();
	ASSERT_EQ(sched_setaffinity(0, sizeof(was), &was), 0);
	// The bucket starts full (a zeroed slot); the program's clock is
	// bracketed by c0 and c1.
	std::uint64_t most = kB + (c1 - c0) / kCost;
	std::printf("COOKIE DEST: %llu SYNs from one /24 on %zu CPU(s) in %.3f s: %llu answered (at most %llu)\n",
		    (unsigned long long)kN, cpus.size(), double(c1 - c0) / 1e9, (unsigned long long)tx,
		    (unsigned long long)most);
	EXPECT_GE(tx, kB);
	EXPECT_LE(tx, most);
	EXPECT_EQ(tx + dropped, kN);
	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_COOKIE_SENT), tx) << k.str();
	EXPECT_EQ(k.packets(SLUICE_DROP_COOKIE_REFLECT), kN - tx) << k.str();
	EXPECT_EQ(k.total_packets(), kN) << k.str();

	// The /24's last host too; the visitor of another /24 and an IPv6 one answered.
	if (dataplane_ns() - c0 < kCost) { // no token refilled yet: exact
		Client same = client4("198.18.11.254");
		EXPECT_VERDICT(s, frame_of(same, same.syn), XDP_DROP);
		EXPECT_EQ(s.counters().packets(SLUICE_DROP_COOKIE_REFLECT), kN - tx + 1) << s.counters().str();
	}
	EXPECT_TRUE(expect_synack(s, client4("198.18.12.1")).ok);
	EXPECT_TRUE(expect_synack(s, client6("2001:2::1")).ok);

	// The /48: its burst spent from one /64, another /64 of it is refused.
	std::uint64_t c6 = dataplane_ns();
	for (std::uint64_t i = 1; i < kB; i++) { // 2001:2::1 took one token above
		Client c = client6("2001:2::1", 0x05060708, std::uint16_t(42000 + i));
		EXPECT_VERDICT(s, frame_of(c, c.syn), XDP_TX);
	}
	if (dataplane_ns() - c6 < kCost) {
		Client other64 = client6("2001:2:0:ffff::1");
		Counters before = s.counters();
		EXPECT_VERDICT(s, frame_of(other64, other64.syn), XDP_DROP);
		EXPECT_EQ(s.counters().packets(SLUICE_DROP_COOKIE_REFLECT),
			  before.packets(SLUICE_DROP_COOKIE_REFLECT) + 1)
			<< s.counters().str();
	}
}

// With the bound off (cookie_dest_cost_ns 0, --cookie-dest-pps 0) a /24 is
// held by the cookie budget alone.
TEST(Cookie, WithoutThePerDestinationBoundOneNetworkHasTheWholeBudget)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	for (std::uint32_t i = 0; i < 20; i++) {
		Client c = client4("198.18.11.1", 0x01020304, std::uint16_t(43000 + i));
		c.src4 = ip4_plus(ip4("198.18.11.1"), i);
		EXPECT_VERDICT(s, frame_of(c, c.syn), XDP_TX);
	}
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_COOKIE_REFLECT), 0u) << s.counters().str();
}

// ------------------------------------------------------------------------ 5

TEST(Cookie, ASynToNoListenerIsShedAsBefore)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	Client c = client4("198.18.10.1");
	c.syn.dport = kClosedPort;
	Client c6 = client6("2001:2::10");
	c6.syn.dport = kClosedPort;
	Bytes f4 = frame_of(c, c.syn), f6 = frame_of(c6, c6.syn);
	RunOut r = s.run_out(f4);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	EXPECT_EQ(r.out, f4) << "not rewritten";
	EXPECT_VERDICT(s, f6, XDP_DROP);
	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_DROP_SHED), 2u) << k.str();
	EXPECT_EQ(k.total_packets(), 2u) << k.str();
}

// The port hint: a SYN to a listener whose port is not marked in
// listen_ports is not looked up and not answered (shed as to a closed port);
// once marked, the same SYN is answered.
TEST(Cookie, ASynToAnUnmarkedPortIsShedWithoutTheLookup)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	Options o = cookie_options();
	o.listen_ports = {};
	{
		SLUICE_LOAD_OR_FAIL(s, o);
		Client c = client4("198.18.10.9");
		Bytes f4 = frame_of(c, c.syn);
		RunOut r = s.run_out(f4);
		ASSERT_EQ(r.err, 0);
		EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
		EXPECT_EQ(r.out, f4) << "not rewritten";
		Counters k = s.counters();
		EXPECT_EQ(k.packets(SLUICE_DROP_SHED), 1u) << k.str();
		EXPECT_EQ(k.packets(SLUICE_COOKIE_SENT), 0u) << k.str();
	}
	o.listen_ports = {kPort};
	SLUICE_LOAD_OR_FAIL(s, o);
	Answer a = expect_synack(s, client4("198.18.10.9"));
	EXPECT_TRUE(a.ok);
}

// A SYN past the cookie budget is refused before the socket lookup (most of
// the path's cost). What shows it: to a marked port whose listener is gone,
// the spent budget counts it drop_cookie_budget, where with a token left the
// lookup finds no listener and the SYN is shed as before. To an unmarked
// port a SYN is shed whatever the budget; to the listener, spent means
// drop_cookie_budget and a token means its SYN-ACK.
TEST(Cookie, ASynPastTheBudgetIsRefusedBeforeTheLookup)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	constexpr std::uint16_t kMarkedNoListener = 8083; // marked, nobody listens
	for (bool spent : {false, true}) {
		SCOPED_TRACE(spent ? "budget spent" : "a token left");
		Options o = cookie_options(SLUICE_COOKIES_SHEDDING, 0, spent ? 0 : 1000);
		o.listen_ports.push_back(kMarkedNoListener);
		SLUICE_LOAD_OR_FAIL(s, o);
		Client gone = client4("198.18.10.20"), closed = client4("198.18.10.21"), open4 = client4("198.18.10.22");
		Client gone6 = client6("2001:2::20"), open6 = client6("2001:2::22");
		gone.syn.dport = kMarkedNoListener;
		gone6.syn.dport = kMarkedNoListener;
		closed.syn.dport = kClosedPort;
		for (const Bytes &f : {frame_of(gone, gone.syn), frame_of(gone6, gone6.syn), frame_of(closed, closed.syn)})
			EXPECT_VERDICT(s, f, XDP_DROP);
		Counters k = s.counters();
		EXPECT_EQ(k.packets(SLUICE_DROP_COOKIE_BUDGET), spent ? 2u : 0u) << k.str();
		EXPECT_EQ(k.packets(SLUICE_DROP_SHED), spent ? 1u : 3u) << k.str();
		EXPECT_VERDICT(s, frame_of(open4, open4.syn), spent ? XDP_DROP : XDP_TX);
		EXPECT_VERDICT(s, frame_of(open6, open6.syn), spent ? XDP_DROP : XDP_TX);
		k = s.counters();
		EXPECT_EQ(k.packets(SLUICE_COOKIE_SENT), spent ? 0u : 2u) << k.str();
		EXPECT_EQ(k.packets(SLUICE_DROP_COOKIE_BUDGET), spent ? 4u : 0u) << k.str();
		EXPECT_EQ(k.total_packets(), 5u) << k.str();
	}
}

TEST(Cookie, CookiesOffLeavesASynToTheNewcomerBudget)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options(SLUICE_COOKIES_OFF));
	Client c = client4("198.18.10.2");
	Client c6 = client6("2001:2::11");
	Bytes f4 = frame_of(c, c.syn);
	RunOut r = s.run_out(f4);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	EXPECT_EQ(r.out, f4);
	EXPECT_VERDICT(s, frame_of(c6, c6.syn), XDP_DROP);
	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_DROP_SHED), 2u) << k.str();
	EXPECT_EQ(k.total_packets(), 2u) << k.str();
}

TEST(Cookie, ServingCookiesAnswerOnlyInModeAlways)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	Options o = cookie_options(SLUICE_COOKIES_SHEDDING);
	o.config.breaker_state = SLUICE_SERVING;
	SLUICE_LOAD_OR_FAIL(s, o);
	Client c = client4("198.18.11.1");
	EXPECT_VERDICT(s, frame_of(c, c.syn), XDP_PASS); // shedding mode, serving: the buckets
	Counters k = s.counters();
	EXPECT_EQ(k.packets(SLUICE_PASSED), 1u) << k.str();

	sluice_config cfg = s.config();
	cfg.cookie_mode = SLUICE_COOKIES_ALWAYS;
	ASSERT_EQ(s.set_config(cfg), 0);
	for (const Client &x : {client4("198.18.11.2"), client6("2001:2::12")}) {
		SCOPED_TRACE(x.v6 ? "IPv6" : "IPv4");
		Answer a = expect_synack(s, x);
		ASSERT_TRUE(a.ok);
		// A frame of the same source that is no SYN (nor an ACK to a
		// listener) passes by its buckets.
		Counters b = s.counters();
		Bytes udp = x.v6 ? udp6({}, {.src = x.src6, .dst = x.dst6}) : udp4({}, {.src = x.src4, .dst = x.dst4});
		EXPECT_VERDICT(s, udp, XDP_PASS);
		Tcp data{.sport = x.syn.sport, .dport = kClosedPort, .seq = 5, .ack = 9, .flags = kTcpAck};
		EXPECT_VERDICT(s, frame_of(x, data), XDP_PASS); // an ACK to no listener
		Counters e = s.counters();
		EXPECT_EQ(e.packets(SLUICE_PASSED), b.packets(SLUICE_PASSED) + 2) << e.str();
		EXPECT_EQ(e.total_packets(), b.total_packets() + 2) << e.str();
		// Its ACK proves it in serving too.
		expect_proved(s, x, a);
	}
	// A source with standing is not answered: its SYN passes by its buckets.
	Client p = client4("198.18.11.2");
	p.syn.sport = 50000;
	Counters b = s.counters();
	EXPECT_VERDICT(s, frame_of(p, p.syn), XDP_PASS);
	Counters e = s.counters();
	EXPECT_EQ(e.packets(SLUICE_PASSED), b.packets(SLUICE_PASSED) + 1) << e.str();
	EXPECT_EQ(e.packets(SLUICE_COOKIE_SENT), b.packets(SLUICE_COOKIE_SENT)) << e.str();
}

// ------------------------------------------------------------------------ 6

TEST(Cookie, UnfitShapesAreDroppedWhileShedding)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	Client c = client4("198.18.12.1");
	Tcp syn = c.syn;
	Bytes tcp_seg = tcp_bytes(syn, pseudo_v4(Ipv4{.src = c.src4, .dst = kDst4, .proto = kIpProtoTcp}, 0));
	struct Shape {
		const char *what;
		Bytes frame;
	};
	std::vector<Shape> shapes;
	shapes.push_back({"IPv4 with options",
			  ip4_frame({}, Ipv4{.src = c.src4, .dst = kDst4, .proto = kIpProtoTcp, .options = {1, 1, 1, 0}},
				    tcp_seg)});
	shapes.push_back({"IPv4 first fragment (MF)",
			  ip4_frame({}, Ipv4{.src = c.src4, .dst = kDst4, .proto = kIpProtoTcp, .frag = 0x2000}, tcp_seg)});
	shapes.push_back({"IPv4 later fragment",
			  ip4_frame({}, Ipv4{.src = c.src4, .dst = kDst4, .proto = kIpProtoTcp, .frag = 0x0005},
				    udp_payload(24))});
	Client c6 = client6("2001:2::20");
	shapes.push_back({"IPv6 hop-by-hop before TCP",
			  tcp6({}, Ipv6{.src = c6.src6, .dst = kDst6}, c6.syn, {ipv6_opts(0)})});
	shapes.push_back({"IPv6 destination options before TCP",
			  tcp6({}, Ipv6{.src = c6.src6, .dst = kDst6}, c6.syn, {ipv6_opts(60)})});
	shapes.push_back({"IPv6 fragment of TCP",
			  tcp6({}, Ipv6{.src = c6.src6, .dst = kDst6}, c6.syn, {ipv6_fragment(0, true)})});
	for (const Shape &sh : shapes) {
		SCOPED_TRACE(sh.what);
		Counters b = s.counters();
		RunOut r = s.run_out(sh.frame);
		ASSERT_EQ(r.err, 0);
		EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
		EXPECT_EQ(r.out, sh.frame);
		Counters e = s.counters();
		EXPECT_EQ(e.packets(SLUICE_DROP_COOKIE_UNFIT), b.packets(SLUICE_DROP_COOKIE_UNFIT) + 1) << e.str();
		EXPECT_EQ(e.total_packets(), b.total_packets() + 1) << e.str();
	}
}

// ------------------------------------------------------------------------ 7

TEST(Cookie, TheKernelMakesNoCookieWithSyncookiesOneAndAnEmptyQueue)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options(SLUICE_COOKIES_SHEDDING, 100'000'000'000ull, 2)); // two cookies
	{
		SyncookiesFor one("1");
		ASSERT_EQ(read_file(kSyncookies), "1\n");
		for (const Client &c : {client4("198.18.13.1"), client6("2001:2::30")}) {
			SCOPED_TRACE(c.v6 ? "IPv6" : "IPv4");
			Bytes f = frame_of(c, c.syn);
			RunOut r = s.run_out(f);
			ASSERT_EQ(r.err, 0);
			EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
			EXPECT_EQ(r.out, f);
		}
		Counters k = s.counters();
		EXPECT_EQ(k.packets(SLUICE_DROP_SHED), 2u) << k.str();
		EXPECT_EQ(k.packets(SLUICE_COOKIE_SENT), 0u) << k.str();
		EXPECT_EQ(k.total_packets(), 2u) << k.str();
	}
	// With 2 again the same SYNs are answered: the refusals above spent
	// none of the budget of two (a third SYN finds it spent).
	ASSERT_EQ(read_file(kSyncookies), "2\n");
	EXPECT_TRUE(expect_synack(s, client4("198.18.13.1")).ok);
	EXPECT_TRUE(expect_synack(s, client6("2001:2::30")).ok);
	Client third = client4("198.18.13.2");
	EXPECT_VERDICT(s, frame_of(third, third.syn), XDP_DROP);
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_COOKIE_BUDGET), 1u) << s.counters().str();
}

// ---------------------------------------------- under a policy: judge()'s way

// With port rules, the cookie path runs from judge() (sluice_judge_policy
// defers it) and the frame it does not take is judged again: each frame
// counted once, in the counters and its class's.
TEST(Cookie, UnderAPolicyTheClassOfTheListenersPortIsAnsweredAndCountedOnce)
{
	SLUICE_REQUIRE_COOKIE_NETNS();
	SLUICE_LOAD_OR_FAIL(s, cookie_options());
	ClassTables t(s);
	t.set_class(0, 3, make_class({.rate = 1000, .burst = 100, .name = "web"}));
	for (std::uint16_t port : {kPort, kClosedPort}) {
		t.set_port(0, SLUICE_L4_TCP_SYN, port, 3);
		t.set_port(0, SLUICE_L4_TCP, port, 3);
	}
	t.set_flags(SLUICE_CLASS_PORTS);

	for (const Client &c : {client4("198.18.14.1"), client6("2001:2::40")}) {
		SCOPED_TRACE(c.v6 ? "IPv6" : "IPv4");
		Counters k0 = t.class_counters(3);
		Answer a = expect_synack(s, c);
		ASSERT_TRUE(a.ok);
		expect_proved(s, c, a);
		Counters k1 = t.class_counters(3);
		EXPECT_EQ(k1.packets(SLUICE_COOKIE_SENT), k0.packets(SLUICE_COOKIE_SENT) + 1) << k1.str();
		EXPECT_EQ(k1.packets(SLUICE_COOKIE_PROVED), k0.packets(SLUICE_COOKIE_PROVED) + 1) << k1.str();
		EXPECT_EQ(k1.total_packets(), k0.total_packets() + 2) << k1.str();

		// No listener: judged again without the cookie path, shed once.
		Client closed = c;
		closed.syn.dport = kClosedPort;
		closed.syn.sport = 41000;
		if (c.v6)
			closed.src6 = ip6("2001:2:0:99::41"); // another /64: the proved one has standing
		else
			closed.src4 = ip4("198.18.14.2");
		Counters b = s.counters();
		EXPECT_VERDICT(s, frame_of(closed, closed.syn), XDP_DROP);
		Counters e = s.counters();
		Counters k2 = t.class_counters(3);
		EXPECT_EQ(e.packets(SLUICE_DROP_SHED), b.packets(SLUICE_DROP_SHED) + 1) << e.str();
		EXPECT_EQ(e.total_packets(), b.total_packets() + 1) << e.str();
		EXPECT_EQ(k2.packets(SLUICE_DROP_SHED), k1.packets(SLUICE_DROP_SHED) + 1) << k2.str();
		EXPECT_EQ(k2.total_packets(), k1.total_packets() + 1) << k2.str();
	}
}
