// Standing through the control plane's code on a real program: the feeders
// attached for real (cgroup v2 root, bpf_links) and fed by real sockets, each
// kind of feeder's reason and since read back with StandingTable::lookup;
// sock_diag's kind of grant (StandingTable::grant); occupancy; and adopting
// pins of an older layout refused, naming the path and the fix.
#include "fixture.h"
#include "require.h"

#include "base/clock.h"
#include "base/standing_reason.h"
#include "bpf/dataplane.h"
#include "bpf/maps.h"
#include "bpf/standing.h"
#include "bpf/standing_table.h"
#include "logic/budgets.h"
#include "logic/source.h"

#include <bpf/bpf.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sched.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace sluice;

constexpr uint64_t kTickNs = 1ull << SLUICE_STANDING_TICK_SHIFT;

sluice_config initial_config()
{
	sluice_config c = test::make_config(1000, 100, 1000, 50);
	// the UDP feeders' budget per user, at sluiced's defaults
	c.grant_cost_ns = cost_ns_for_rate(defaults::kGrantRatePerS);
	c.grant_burst = defaults::kGrantBurst;
	c.grant_rate_per_s = defaults::kGrantRatePerS;
	return c;
}

Dataplane load(uint32_t standing_sets = defaults::kStandingSets)
{
	LoadOptions o;
	o.standing_sets = standing_sets;
	auto dp = Dataplane::load(o, initial_config());
	if (!dp)
		throw std::runtime_error(dp.error().describe());
	return std::move(*dp);
}

Address v4(const char *text)
{
	auto a = parse_address(text);
	if (!a)
		throw std::runtime_error(a.error().describe());
	return *a;
}

sockaddr_in sin_of(const char *ip, uint16_t port)
{
	sockaddr_in s{};
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

struct Fd {
	int fd;
	explicit Fd(int f) : fd(f) {}
	~Fd()
	{
		if (fd >= 0)
			close(fd);
	}
};

// The feeders refuse loopback peers, so the tests that make connections run
// in a network namespace of their own (this test process only: gtest runs one
// test a process here), on a veth holding 198.18.77.1-9/24 (no dummy driver
// on every kernel): real
// addresses, none of the machine's.
void enter_private_net()
{
	if (unshare(CLONE_NEWNET) != 0)
		throw std::runtime_error(std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno));
	std::string cmd = "ip link set lo up && ip link add sluice-dummy0 type veth peer name sluice-dummy1 && ip link set sluice-dummy0 up && ip link set sluice-dummy1 up";
	for (int i = 1; i <= 9; i++)
		cmd += " && ip addr add 198.18.77." + std::to_string(i) + "/24 dev sluice-dummy0";
	if (std::system(cmd.c_str()) != 0)
		throw std::runtime_error("setting up the private namespace's addresses failed: " + cmd);
}

// A TCP connection to `server` (any port) from the address the kernel
// picks: the listener, the client and the accepted socket, open (the
// caller closes them); fewer when a step failed.
std::vector<int> tcp_connection(const char *server)
{
	std::vector<int> fds;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds.push_back(l);
	sockaddr_in at = sin_of(server, 0);
	socklen_t len = sizeof(at);
	if (bind(l, reinterpret_cast<sockaddr *>(&at), sizeof(at)) != 0 ||
	    getsockname(l, reinterpret_cast<sockaddr *>(&at), &len) != 0 || listen(l, 4) != 0)
		return fds;
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds.push_back(c);
	if (connect(c, reinterpret_cast<sockaddr *>(&at), sizeof(at)) != 0)
		return fds;
	fds.push_back(accept(l, nullptr, nullptr));
	return fds;
}

// The record's times are to a tick: within a tick (and the program's
// clock's lag) of when the grant happened.
void expect_about(uint64_t realtime, uint64_t t0, uint64_t t1, const char *what)
{
	EXPECT_GE(realtime + kTickNs + 20'000'000, t0) << what;
	EXPECT_LE(realtime, t1 + 20'000'000) << what;
}

} // namespace

TEST(DataplaneStanding, EachFeederRecordsItsReasonAndSince)
{
	SLUICE_REQUIRE_ROOT();
	enter_private_net();
	Dataplane dp = load();
	ASSERT_TRUE(dp.attach_feeders()) << "the feeders attach to the cgroup v2 root";
	uint64_t t0 = realtime_ns();

	// TCP between two addresses of the namespace: the client's handshake
	// grants the server (connected, when it completes), the server's the
	// client (accepted).
	Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in server = sin_of("198.18.77.2", 0);
	ASSERT_EQ(bind(listener.fd, reinterpret_cast<sockaddr *>(&server), sizeof(server)), 0);
	socklen_t len = sizeof(server);
	ASSERT_EQ(getsockname(listener.fd, reinterpret_cast<sockaddr *>(&server), &len), 0);
	ASSERT_EQ(listen(listener.fd, 4), 0);
	Fd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in from = sin_of("198.18.77.3", 0);
	ASSERT_EQ(bind(client.fd, reinterpret_cast<sockaddr *>(&from), sizeof(from)), 0);
	ASSERT_EQ(connect(client.fd, reinterpret_cast<sockaddr *>(&server), sizeof(server)), 0);
	Fd accepted(accept(listener.fd, nullptr, nullptr));
	ASSERT_GE(accepted.fd, 0);

	// UDP: connect() on an unbound socket (a client's), and sendto() from
	// an autobound one (the kernel binds it in the ephemeral range).
	Fd udp_connected(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	sockaddr_in udp_peer = sin_of("198.18.77.4", 9);
	ASSERT_EQ(connect(udp_connected.fd, reinterpret_cast<sockaddr *>(&udp_peer), sizeof(udp_peer)), 0);
	Fd udp_sender(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	sockaddr_in sendto_peer = sin_of("198.18.77.5", 9);
	ASSERT_EQ(sendto(udp_sender.fd, "x", 1, 0, reinterpret_cast<sockaddr *>(&sendto_peer), sizeof(sendto_peer)), 1);
	// A UDP server's socket (bound outside the ephemeral range) grants nothing.
	Fd udp_server(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	sockaddr_in server_port = sin_of("198.18.77.1", 53);
	ASSERT_EQ(bind(udp_server.fd, reinterpret_cast<sockaddr *>(&server_port), sizeof(server_port)), 0);
	sockaddr_in spoofed = sin_of("198.18.77.6", 9);
	ASSERT_EQ(sendto(udp_server.fd, "x", 1, 0, reinterpret_cast<sockaddr *>(&spoofed), sizeof(spoofed)), 1);
	uint64_t t1 = realtime_ns();

	const sluice_config cfg = initial_config();
	struct Want {
		const char *addr;
		sluice_standing_reason reason;
	};
	for (Want w : {Want{"198.18.77.2", SLUICE_BY_CONNECTED}, Want{"198.18.77.3", SLUICE_BY_ACCEPTED},
		       Want{"198.18.77.4", SLUICE_BY_UDP}, Want{"198.18.77.5", SLUICE_BY_UDP}}) {
		auto r = dp.standing().lookup(v4(w.addr), cfg);
		ASSERT_TRUE(r) << r.error().describe();
		EXPECT_TRUE(r->live) << w.addr;
		EXPECT_EQ(standing_reason_name(r->reason), standing_reason_name(w.reason)) << w.addr;
		expect_about(r->since_realtime_ns, t0, t1, w.addr);
		expect_about(r->last_seen_realtime_ns, t0, t1, w.addr);
		EXPECT_EQ(r->tokens, cfg.standing_burst) << w.addr << ": a new source's standing bucket is full";
	}
	auto none = dp.standing().lookup(v4("198.18.77.6"), cfg);
	ASSERT_TRUE(none);
	EXPECT_FALSE(none->live) << "a UDP server's reply grants nothing";
	EXPECT_EQ(standing_reason_name(none->reason), "unknown");
	// Every live way records the source it was granted for (masked).
	std::vector<std::string> sources;
	ASSERT_TRUE(dp.standing().for_each_live([&](const StandingWay &w) { sources.push_back(w.source.str()); }));
	for (const char *a : {"198.18.77.2", "198.18.77.3", "198.18.77.4", "198.18.77.5"})
		EXPECT_NE(std::find(sources.begin(), sources.end(), a), sources.end()) << a << " not named by its way";
}

TEST(DataplaneStanding, NoGrantForLoopbackARefusedConnectOrTheConnectionsOwnAddress)
{
	SLUICE_REQUIRE_ROOT();
	enter_private_net();
	Dataplane dp = load();
	ASSERT_TRUE(dp.attach_feeders());
	// .7 is the host's own address here, as sluiced marks every address of
	// its namespace (the others stay peers for the other cases)
	ASSERT_TRUE(dp.standing().set_own_addresses(std::vector<Address>{v4("198.18.77.7")}));
	const sluice_config cfg = initial_config();
	// loopback, both ways; a connection to the host's own address
	const std::vector<int> lo = tcp_connection("127.0.0.2");
	const std::vector<int> own = tcp_connection("198.18.77.7");
	ASSERT_EQ(lo.size(), 3u);
	ASSERT_EQ(own.size(), 3u);
	// a refused connect(): nothing listens on 198.18.77.8
	Fd refused(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in closed = sin_of("198.18.77.8", 9);
	EXPECT_NE(connect(refused.fd, reinterpret_cast<sockaddr *>(&closed), sizeof(closed)), 0);
	// UDP to multicast and to loopback
	Fd mc(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	sockaddr_in group = sin_of("239.1.2.3", 9);
	connect(mc.fd, reinterpret_cast<sockaddr *>(&group), sizeof(group));
	Fd lo_udp(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	sockaddr_in lo_peer = sin_of("127.0.0.9", 9);
	ASSERT_EQ(connect(lo_udp.fd, reinterpret_cast<sockaddr *>(&lo_peer), sizeof(lo_peer)), 0);
	for (const char *a : {"127.0.0.1", "127.0.0.2", "127.0.0.9", "198.18.77.7", "198.18.77.8", "239.1.2.3"}) {
		auto r = dp.standing().lookup(v4(a), cfg);
		ASSERT_TRUE(r);
		EXPECT_FALSE(r->live) << a << " was granted standing";
	}
	for (int fd : lo)
		close(fd);
	for (int fd : own)
		close(fd);
}

TEST(DataplaneStanding, AUsersUdpGrantsStopAtItsBudgetAndEvictNoHandshake)
{
	SLUICE_REQUIRE_ROOT();
	enter_private_net();
	// 16 sets of 8: 128 ways, so the budget's 100 UDP grants fill the sets
	// the handshakes hold too
	Dataplane dp = load(16);
	ASSERT_TRUE(dp.attach_feeders());
	const sluice_config cfg = initial_config();
	// five handshakes: a server and clients bound to addresses of the dummy
	Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in server = sin_of("198.18.77.1", 0);
	ASSERT_EQ(bind(listener.fd, reinterpret_cast<sockaddr *>(&server), sizeof(server)), 0);
	socklen_t len = sizeof(server);
	ASSERT_EQ(getsockname(listener.fd, reinterpret_cast<sockaddr *>(&server), &len), 0);
	ASSERT_EQ(listen(listener.fd, 64), 0);
	std::vector<std::string> proved;
	for (int i = 2; i <= 6; i++) {
		Fd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
		std::string a = "198.18.77." + std::to_string(i);
		sockaddr_in from = sin_of(a.c_str(), 0);
		ASSERT_EQ(bind(c.fd, reinterpret_cast<sockaddr *>(&from), sizeof(from)), 0);
		ASSERT_EQ(connect(c.fd, reinterpret_cast<sockaddr *>(&server), sizeof(server)), 0);
		Fd acc(accept(listener.fd, nullptr, nullptr));
		proved.push_back(a);
	}
	auto before = dp.standing().occupancy();
	ASSERT_TRUE(before);
	// 5,000 UDP connect()s to addresses of the caller's choosing
	for (uint32_t i = 0; i < 5000; i++) {
		Fd u(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
		sockaddr_in peer{};
		peer.sin_family = AF_INET;
		peer.sin_port = htons(53);
		peer.sin_addr.s_addr = htonl((198u << 24) | (19u << 16) | i);
		connect(u.fd, reinterpret_cast<sockaddr *>(&peer), sizeof(peer));
	}
	auto after = dp.standing().occupancy();
	ASSERT_TRUE(after);
	EXPECT_LE(after->live - before->live, defaults::kGrantBurst + 5 * defaults::kGrantRatePerS)
		<< "at most the user's budget of UDP grants";
	EXPECT_GT(after->live - before->live, 10u) << "the budget's grants were made";
	for (const auto &a : proved) {
		auto r = dp.standing().lookup(v4(a.c_str()), cfg);
		ASSERT_TRUE(r);
		EXPECT_TRUE(r->live) << a << " (a handshake) was evicted by UDP grants";
	}
}

// So many in all: a user's second bucket (grant_quota's upper half) holds
// grant_max grants and refills them over the lapse time, so with the rate's
// burst to spare the user's UDP grants stop at grant_max, and another user
// has a total of its own.
TEST(DataplaneStanding, AUsersUdpGrantsStopAtItsTotalForTheLapseTime)
{
	SLUICE_REQUIRE_ROOT();
	enter_private_net();
	sluice_config cfg = initial_config();
	BudgetAsk ask = budgets_of(cfg);
	ask.grant_max = 7;
	ask.grant_window_s = defaults::kStandingLapseS;
	auto budgeted = config_with_budgets(cfg, ask, 1);
	ASSERT_TRUE(budgeted) << budgeted.error().describe();
	EXPECT_EQ(budgeted->grant_total_cost_ns, (uint64_t(defaults::kStandingLapseS) * SLUICE_NSEC_PER_SEC + 6) / 7);
	LoadOptions o;
	auto loaded = Dataplane::load(o, *budgeted);
	ASSERT_TRUE(loaded) << loaded.error().describe();
	Dataplane dp = std::move(*loaded);
	ASSERT_TRUE(dp.attach_feeders());
	auto connects = [](uint32_t first, uint32_t n) {
		for (uint32_t i = first; i < first + n; i++) {
			Fd u(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
			sockaddr_in peer{};
			peer.sin_family = AF_INET;
			peer.sin_port = htons(53);
			peer.sin_addr.s_addr = htonl((198u << 24) | (19u << 16) | (i << 8) | 1u); // a /24 each
			connect(u.fd, reinterpret_cast<sockaddr *>(&peer), sizeof(peer));
		}
	};
	auto live = [&] {
		auto occ = dp.standing().occupancy();
		EXPECT_TRUE(occ);
		return occ ? occ->live : 0;
	};
	const uint64_t before = live();
	connects(0, 40); // 40 < the rate's burst of 100
	EXPECT_EQ(live() - before, 7u) << "the user's total, not its rate, stopped the grants";
	// another user (its own buckets): a child process as uid 65534
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		if (setresuid(65534, 65534, 65534) != 0)
			_exit(2);
		connects(100, 20);
		_exit(0);
	}
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(live() - before, 14u) << "a second user has a total of its own";
}

TEST(DataplaneStanding, GrantsFromTheHostRecordTheirReasonAndARefreshKeepsIt)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	const sluice_config cfg = initial_config();
	std::vector<Address> peers{v4("192.0.2.1"), v4("198.51.100.7")};
	uint64_t t0 = realtime_ns();
	ASSERT_TRUE(dp.standing().grant(peers, SLUICE_BY_EXISTING));
	uint64_t t1 = realtime_ns();
	for (const auto &p : peers) {
		auto r = dp.standing().lookup(p, cfg);
		ASSERT_TRUE(r);
		EXPECT_TRUE(r->live);
		EXPECT_EQ(r->reason, SLUICE_BY_EXISTING);
		expect_about(r->since_realtime_ns, t0, t1, "since");
		EXPECT_EQ(r->tokens, cfg.standing_burst);
	}
	// Granted again for another reason: a refresh, the first reason stays.
	ASSERT_TRUE(dp.standing().grant(std::span(peers).first(1), SLUICE_BY_UDP));
	EXPECT_EQ(dp.standing().lookup(peers[0], cfg)->reason, SLUICE_BY_EXISTING);
	// The address is masked as the program masks it (/32 for IPv4 here).
	EXPECT_FALSE(dp.standing().lookup(v4("192.0.2.2"), cfg)->live);
}

TEST(DataplaneStanding, OccupancyCountsLiveEntriesCapacityAndFullSets)
{
	SLUICE_REQUIRE_ROOT();
	constexpr uint32_t kSets = SLUICE_STANDING_SETS_MIN;
	Dataplane dp = load(kSets);
	auto empty = dp.standing().occupancy();
	ASSERT_TRUE(empty);
	EXPECT_EQ(empty->live, 0u);
	EXPECT_EQ(empty->capacity, uint64_t(kSets) * SLUICE_STANDING_WAYS);
	EXPECT_EQ(empty->full_sets, 0u);

	// Eight sources of one set fill it; one more of another set does not.
	std::vector<Address> same_set;
	uint32_t set0 = UINT32_MAX;
	Address other{};
	bool have_other = false;
	for (uint32_t i = 1; same_set.size() < SLUICE_STANDING_WAYS || !have_other; i++) {
		Address a = v4(("10.77." + std::to_string(i / 256) + "." + std::to_string(i % 256)).c_str());
		uint32_t set = sluice_standing_set_of(source_hash(dp.settings(), a), kSets - 1);
		if (set0 == UINT32_MAX)
			set0 = set;
		if (set == set0 && same_set.size() < SLUICE_STANDING_WAYS)
			same_set.push_back(a);
		else if (set != set0 && !have_other) {
			other = a;
			have_other = true;
		}
	}
	ASSERT_TRUE(dp.standing().grant(same_set, SLUICE_BY_EXISTING));
	ASSERT_TRUE(dp.standing().grant(std::span(&other, 1), SLUICE_BY_EXISTING));
	auto o = dp.standing().occupancy();
	ASSERT_TRUE(o);
	EXPECT_EQ(o->live, SLUICE_STANDING_WAYS + 1u);
	EXPECT_EQ(o->full_sets, 1u);
	EXPECT_EQ(*dp.standing().live_entries(), o->live);

	// Counted in parts (as sluiced counts it, a part each period): the parts
	// sum to the whole whatever their size, each part counts its own sets
	// alone, and a part past the end is clipped to the table.
	for (uint32_t part : {1u, 3u, 500u, 512u, 513u, kSets - 1, kSets}) {
		StandingOccupancy sum{0, 0, 0};
		for (uint32_t first = 0; first < kSets; first += part) {
			auto p = dp.standing().occupancy(first, part);
			ASSERT_TRUE(p) << p.error().describe();
			EXPECT_EQ(p->capacity, uint64_t(std::min(part, kSets - first)) * SLUICE_STANDING_WAYS);
			sum.live += p->live;
			sum.full_sets += p->full_sets;
			sum.capacity += p->capacity;
		}
		EXPECT_EQ(sum.live, o->live) << "parts of " << part;
		EXPECT_EQ(sum.full_sets, o->full_sets) << "parts of " << part;
		EXPECT_EQ(sum.capacity, o->capacity) << "parts of " << part;
	}
	auto full_set = dp.standing().occupancy(set0, 1);
	ASSERT_TRUE(full_set);
	EXPECT_EQ(full_set->live, SLUICE_STANDING_WAYS);
	EXPECT_EQ(full_set->full_sets, 1u);
	auto past = dp.standing().occupancy(kSets, 8);
	ASSERT_TRUE(past);
	EXPECT_EQ(past->capacity, 0u);
	EXPECT_EQ(past->live, 0u);
	auto tail = dp.standing().occupancy(kSets - 2, 100);
	ASSERT_TRUE(tail);
	EXPECT_EQ(tail->capacity, 2u * SLUICE_STANDING_WAYS);
}

// Pins whose settings say `version`, `settings_size` bytes long (the layout
// version where it has always been): adopt refuses them, naming the path,
// both layouts and the fix.
void expect_old_layout_refused(uint32_t version, uint32_t settings_size)
{
	std::string dir = "/sys/fs/bpf/sluice-dp-test-" + std::to_string(getpid());
	ASSERT_EQ(mkdir(dir.c_str(), 0700), 0) << std::strerror(errno);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "settings", 4, settings_size, 1, nullptr);
	ASSERT_GE(fd, 0);
	std::vector<unsigned char> value(settings_size);
	uint32_t zero = 0;
	std::memcpy(value.data() + offsetof(sluice_settings, layout_version), &version, sizeof(version));
	ASSERT_EQ(bpf_map_update_elem(fd, &zero, value.data(), BPF_ANY), 0);
	std::string pin = dir + "/" SLUICE_PIN_SETTINGS;
	ASSERT_EQ(bpf_obj_pin(fd, pin.c_str()), 0);
	close(fd);

	auto dp = Dataplane::adopt(dir);
	unlink(pin.c_str());
	rmdir(dir.c_str());
	ASSERT_FALSE(dp);
	const std::string &m = dp.error().message;
	EXPECT_EQ(dp.error().kind, ErrorKind::refused) << m;
	EXPECT_NE(m.find(dir), std::string::npos) << m;
	EXPECT_NE(m.find("layout " + std::to_string(version)), std::string::npos) << m;
	EXPECT_NE(m.find("layout " + std::to_string(SLUICE_LAYOUT_VERSION)), std::string::npos) << m;
	EXPECT_NE(m.find("sluicectl detach"), std::string::npos) << m;
}

TEST(DataplaneStanding, AdoptingPinsOfLayout3IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 3's settings: 16 bytes shorter (no observe_periods/observe_set_mask,
	// and no clock_tick_ns with its padding).
	expect_old_layout_refused(3, sizeof(sluice_settings) - 16);
}

TEST(DataplaneStanding, AdoptingPinsOfLayout4IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 4's settings are layout 16's (the policy classes, the SYN
	// cookies, the port hint, capture, the drop sample's signature, the
	// trust maps, the per-destination SYN-ACK bound, the penalty's source
	// and the SYN stamps changed maps and config, not settings;
	// penalty_set_mask took the padding): the version alone tells them
	// apart, before any map (the lists' keys grew a set byte) is compared.
	// Layout 17 added clock_tick_ns, 8 bytes with its padding; layouts 18
	// and 19 changed maps only.
	static_assert(SLUICE_LAYOUT_VERSION == 19);
	expect_old_layout_refused(4, sizeof(sluice_settings) - 8);
}

TEST(DataplaneStanding, AdoptingPinsOfLayout16IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// The pins a daemon of the release before leaves: slots whose empty_at
	// is on CLOCK_MONOTONIC_COARSE, months behind the jiffies clock, so every
	// bucket would read as full (and every stamp as months old) if adopted.
	expect_old_layout_refused(16, sizeof(sluice_settings) - 8);
}

TEST(DataplaneStanding, AdoptingPinsOfLayout17IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 17's settings are layout 18's; its deny list keeps whole
	// addresses in the trie, where the lists' writer (which looks for them
	// in deny_exact_v4/_v6) would never find them to remove: the version
	// refuses it before the missing exact maps would.
	expect_old_layout_refused(17, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout18IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 18's settings are layout 19's; its allow list keeps whole
	// addresses in the trie, where the lists' writer (which looks for them
	// in allow_exact_v4/_v6) would never find them to remove.
	expect_old_layout_refused(18, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout5IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 5's settings are layout 11's; its config is 48 bytes shorter
	// (no cookie fields): the version tells them apart first.
	expect_old_layout_refused(5, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout6IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 6's settings are layout 11's; it has no listen_ports map: the
	// version tells them apart first.
	expect_old_layout_refused(6, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout7IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 7's settings are layout 11's; it has no capture maps: the
	// version tells them apart first.
	expect_old_layout_refused(7, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout8IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 8's settings are layout 11's; its drop samples are 16 bytes
	// shorter (no signature) in a ring half the size: the version tells
	// them apart first.
	expect_old_layout_refused(8, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout9IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 9's settings are layout 11's (penalty_set_mask was padding);
	// its standing sets are 160 bytes shorter (no seen counters, no
	// sources) and it has no standing_penalty or grant_quota map: the
	// version tells them apart first.
	expect_old_layout_refused(9, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout10IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 10's settings are layout 11's; its standing sets are 16 bytes
	// shorter (no peer ports) and it has no prefix_full map: the version
	// tells them apart first.
	expect_old_layout_refused(10, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout11IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 11's settings are layout 13's; its config is 8 bytes shorter
	// (no prefix_quota) and its prefix quota is a bit map (prefix_full),
	// not counts: the version tells them apart first.
	expect_old_layout_refused(11, sizeof(sluice_settings));
}

TEST(DataplaneStanding, AdoptingPinsOfLayout12IsRefusedWithThePathAndTheFix)
{
	SLUICE_REQUIRE_ROOT();
	// Layout 12's settings are layout 13's; its config is 24 bytes shorter
	// (no tenure line, no newer share): the version tells them apart first.
	expect_old_layout_refused(12, sizeof(sluice_settings));
}

// The cookie path's port hint (sluice_abi.h, listen_ports): the sockops
// feeder marks the port of a listen() as it happens; sluiced's mark() adds
// ports and never takes one away; ports() reads back exactly what is set.
TEST(DataplaneListenPorts, TheFeederMarksAListenersPortAndMarkAddsPorts)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto none = dp.listen_ports().ports();
	ASSERT_TRUE(none) << none.error().describe();
	EXPECT_TRUE(none->empty()) << "a fresh program has no port marked";

	ASSERT_TRUE(dp.attach_feeders()) << "the feeders attach to the cgroup v2 root";
	Fd bound(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in at = sin_of("127.0.0.2", 0);
	ASSERT_EQ(bind(bound.fd, reinterpret_cast<sockaddr *>(&at), sizeof(at)), 0);
	socklen_t len = sizeof(at);
	ASSERT_EQ(getsockname(bound.fd, reinterpret_cast<sockaddr *>(&at), &len), 0);
	const uint16_t port = ntohs(at.sin_port);
	auto before = dp.listen_ports().ports();
	ASSERT_TRUE(before);
	EXPECT_EQ(std::count(before->begin(), before->end(), port), 0) << "bound, not listening: not marked";
	ASSERT_EQ(listen(bound.fd, 4), 0);
	auto after = dp.listen_ports().ports();
	ASSERT_TRUE(after);
	EXPECT_EQ(std::count(after->begin(), after->end(), port), 1) << "listen() marked port " << port;

	// mark(): 0 and 65535 (the words' edges), a port twice, and the
	// feeder's port kept.
	const std::vector<uint16_t> more{0, 65535, 8080, 8080};
	ASSERT_TRUE(dp.listen_ports().mark(more));
	auto all = dp.listen_ports().ports();
	ASSERT_TRUE(all);
	for (uint16_t p : {uint16_t(0), uint16_t(65535), uint16_t(8080), port})
		EXPECT_EQ(std::count(all->begin(), all->end(), p), 1) << p;
	EXPECT_TRUE(std::is_sorted(all->begin(), all->end()));
}
