// A new hash key (Dataplane::rekey, StandingTable::carry_into) on real maps
// and a real program: every standing entry and penalty found again under the
// new key with what it recorded, the prefix counts as a recount makes them,
// a second pass that carries nothing twice, a full set's losses counted; and
// on a veth with the feeders attached, the new program on the XDP link and
// the feeders' links, grants after the change going to the new table, and
// the pins a restarted daemon adopts holding the new key's maps.
#include "fixture.h"
#include "require.h"

#include "base/clock.h"
#include "base/standing_reason.h"
#include "bpf/dataplane.h"
#include "bpf/standing.h"
#include "bpf/standing_table.h"
#include "logic/budgets.h"
#include "logic/source.h"

#include <bpf/bpf.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace sluice;

sluice_config initial_config()
{
	sluice_config c = test::make_config(1000, 100, 1000, 50);
	c.grant_cost_ns = cost_ns_for_rate(defaults::kGrantRatePerS);
	c.grant_burst = defaults::kGrantBurst;
	c.grant_rate_per_s = defaults::kGrantRatePerS;
	return c;
}

Dataplane load(uint32_t standing_sets)
{
	LoadOptions o;
	o.standing_sets = standing_sets;
	o.slots = 1024;
	o.v6_prefix = 128; // every test source its own (they share 2001:2::/48)
	auto dp = Dataplane::load(o, initial_config());
	if (!dp)
		throw std::runtime_error(dp.error().describe());
	return std::move(*dp);
}

Address addr(const std::string &text)
{
	auto a = parse_address(text);
	if (!a)
		throw std::runtime_error(a.error().describe());
	return *a;
}

// 198.18.x.y and 2001:2::x:y, `n` of each family's half.
std::vector<Address> sources(uint32_t n)
{
	std::vector<Address> out;
	for (uint32_t i = 0; i < n; i++) {
		if (i % 2)
			out.push_back(addr("198.18." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256)));
		else
			out.push_back(addr("2001:2::" + std::to_string(i % 7) + ":" + std::to_string(i)));
	}
	return out;
}

double penalty_s(uint32_t before)
{
	return 600.0 * (before + 1);
}

uint64_t map_id(int fd)
{
	bpf_map_info info{};
	uint32_t len = sizeof(info);
	return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

uint32_t link_prog_id(const std::string &pin)
{
	int fd = bpf_obj_get(pin.c_str());
	if (fd < 0)
		return 0;
	bpf_link_info li{};
	uint32_t len = sizeof(li);
	uint32_t id = bpf_obj_get_info_by_fd(fd, &li, &len) == 0 ? li.prog_id : 0;
	close(fd);
	return id;
}

} // namespace

TEST(Rekey, CarriesEveryEntryAndPenaltyToTheNewKeysPlaces)
{
	SLUICE_REQUIRE_ROOT();
	const sluice_config cfg = initial_config();
	// 32,768 ways for 600 sources, so that no set overflows under either
	// random key (nine of one set: about 1e-12 a set). At 256 sets a set
	// held nine about one run in five, and a grant or a carry was refused.
	constexpr uint32_t kSets = 4096;
	Dataplane a = load(kSets), b = load(kSets);
	ASSERT_NE(a.settings().hash_key[0], b.settings().hash_key[0]);
	const auto peers = sources(600);
	ASSERT_TRUE(a.standing().grant(std::span(peers).first(300), SLUICE_BY_EXISTING));
	ASSERT_TRUE(a.standing().grant(std::span(peers).subspan(300), SLUICE_BY_UDP, 5353));
	// Penalties: ten revoked with standing, ten without (never granted).
	const auto barred = sources(620);
	for (uint32_t i = 0; i < 10; i++)
		ASSERT_TRUE(a.standing().revoke(peers[i * 7], penalty_s));
	for (uint32_t i = 600; i < 620; i += 2)
		ASSERT_TRUE(a.standing().revoke(barred[i], penalty_s));
	ASSERT_TRUE(a.standing().revoke(barred[600], penalty_s)); // twice: its revocations say 2
	std::map<std::string, StandingRecord> before;
	for (const auto &p : peers)
		before[p.str()] = *a.standing().lookup(p, cfg);
	const uint64_t live = *a.standing().live_entries();
	EXPECT_EQ(live, 590u);

	auto c = a.standing().carry_into(b.standing());
	ASSERT_TRUE(c) << c.error().describe();
	EXPECT_EQ(c->entries, live);
	EXPECT_EQ(c->entries_lost, 0u);
	EXPECT_EQ(c->penalties, 20u);
	EXPECT_EQ(c->penalties_lost, 0u);
	EXPECT_EQ(*b.standing().live_entries(), live);
	for (const auto &p : peers) {
		const StandingRecord &was = before[p.str()];
		auto now = b.standing().lookup(p, cfg);
		ASSERT_TRUE(now);
		EXPECT_EQ(now->live, was.live) << p.str();
		if (!was.live)
			continue;
		EXPECT_EQ(standing_reason_name(now->reason), standing_reason_name(was.reason)) << p.str();
		// "since" is now minus the record's age in ticks (2^30 ns): read a
		// moment apart, the two readings may straddle a tick.
		EXPECT_NEAR(double(now->since_realtime_ns), double(was.since_realtime_ns), double(1ull << 30) + 2e8)
			<< p.str();
		EXPECT_EQ(now->port, was.port) << p.str();
		EXPECT_EQ(now->tokens, was.tokens) << p.str();
	}
	for (uint32_t i = 0; i < 10; i++) {
		auto pa = a.standing().penalty(peers[i * 7]), pb = b.standing().penalty(peers[i * 7]);
		ASSERT_TRUE(pa && pb && *pa && *pb) << peers[i * 7].str();
		EXPECT_EQ((*pb)->revocations, (*pa)->revocations);
		EXPECT_NEAR(double((*pb)->until_realtime_ns), double((*pa)->until_realtime_ns), 2.2e9);
	}
	auto twice = b.standing().penalty(barred[600]);
	ASSERT_TRUE(twice && *twice);
	EXPECT_EQ((*twice)->revocations, 2u);
	EXPECT_FALSE(*b.standing().penalty(peers[1])) << "no penalty where none ran";
	// A penalty still bars a grant under the new key.
	ASSERT_TRUE(b.standing().grant(std::span(&barred[602], 1), SLUICE_BY_EXISTING));
	EXPECT_FALSE(*b.standing().has_standing(barred[602]));

	// The prefix counts are what a recount under the new key makes them.
	const size_t ways = size_t(kSets) * SLUICE_STANDING_WAYS;
	std::vector<uint32_t> got(ways), want_e(ways), want_h(ways);
	ASSERT_TRUE(b.standing().prefix_counts(got));
	const StandingTable tb = b.standing();
	ASSERT_TRUE(tb.for_each_live([&](const StandingWay &w) {
		const uint32_t bit = tb.quota_bit(w.kept);
		want_e[bit]++;
		want_h[bit] += w.handshake;
	}));
	for (size_t i = 0; i < ways; i++)
		ASSERT_EQ(got[i], sluice_prefix_count(want_e[i], want_h[i])) << "bit " << i;
	// Seen counts start again (the governor's demand is a difference).
	ASSERT_TRUE(tb.for_each_live([&](const StandingWay &w) { EXPECT_EQ(w.seen, 0u); }));

	// A second pass carries nothing twice.
	auto again = a.standing().carry_into(b.standing());
	ASSERT_TRUE(again);
	EXPECT_EQ(again->entries, 0u);
	EXPECT_EQ(again->penalties, 0u);
	EXPECT_EQ(*b.standing().live_entries(), live);
}

TEST(Rekey, AFullTableLosesWhatItsNewSetsCannotHoldAndCountsIt)
{
	SLUICE_REQUIRE_ROOT();
	constexpr uint32_t kSets = SLUICE_STANDING_SETS_MIN;
	Dataplane a = load(kSets), b = load(kSets);
	// Every way filled under a's key: b's key spreads them unevenly.
	std::vector<Address> fill;
	std::vector<uint32_t> per_set(kSets);
	for (uint32_t i = 0; fill.size() < kSets * SLUICE_STANDING_WAYS; i++) {
		Address p = addr("198.19." + std::to_string(i / 256) + "." + std::to_string(i % 256));
		uint32_t set = sluice_standing_set_of(source_hash(a.settings(), p), kSets - 1);
		if (per_set[set] < SLUICE_STANDING_WAYS) {
			per_set[set]++;
			fill.push_back(p);
		}
	}
	ASSERT_TRUE(a.standing().grant(fill, SLUICE_BY_EXISTING));
	ASSERT_EQ(*a.standing().live_entries(), uint64_t(kSets) * SLUICE_STANDING_WAYS);
	auto c = b.standing().carry_into(b.standing()); // same table: nothing to do, nothing counted
	ASSERT_TRUE(c);
	EXPECT_EQ(c->entries + c->entries_lost, 0u);
	c = a.standing().carry_into(b.standing());
	ASSERT_TRUE(c) << c.error().describe();
	const uint64_t held = *b.standing().live_entries();
	EXPECT_GT(c->entries_lost, 0u) << "a full table under a new key overflows some sets";
	EXPECT_EQ(held + c->entries_lost, fill.size()) << "every entry is carried or counted lost";
	EXPECT_LE(c->entries - c->entries_lost, held);
}

TEST(Rekey, TheNewProgramTakesTheLinksAndThePinsAndGrantsGoToItsTable)
{
	SLUICE_REQUIRE_ROOT();
	if (unshare(CLONE_NEWNET) != 0)
		FAIL() << "unshare(CLONE_NEWNET): " << std::strerror(errno);
	ASSERT_EQ(std::system("ip link set lo up && ip link add sluice-rk0 type veth peer name sluice-rk1 && "
			      "ip link set sluice-rk0 up && ip link set sluice-rk1 up && "
			      "ip addr add 198.18.78.1/24 dev sluice-rk0 && ip addr add 198.18.78.2/24 dev sluice-rk0 && "
			      "ip addr add 198.18.78.3/24 dev sluice-rk0"),
		  0);
	const sluice_config cfg = initial_config();
	Dataplane dp = load(1024);
	auto mode = dp.attach(int(if_nametoindex("sluice-rk0")), AttachMode::skb);
	ASSERT_TRUE(mode) << mode.error().describe();
	ASSERT_TRUE(dp.attach_feeders());
	const std::string dir = "/sys/fs/bpf/sluice-rekey-test-" + std::to_string(getpid());
	ASSERT_TRUE(dp.pin(dir));
	struct Cleanup {
		Dataplane &dp;
		std::string dir;
		~Cleanup() { (void)dp.detach(dir); }
	} cleanup{dp, dir};

	// A TCP connection from .3 to .2: each grants the other.
	auto connect_pair = [](const char *server, const char *client) {
		std::vector<int> fds;
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_in at{AF_INET, 0, {}, {}};
		inet_pton(AF_INET, server, &at.sin_addr);
		socklen_t len = sizeof(at);
		bind(l, reinterpret_cast<sockaddr *>(&at), sizeof(at));
		getsockname(l, reinterpret_cast<sockaddr *>(&at), &len);
		listen(l, 4);
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_in from{AF_INET, 0, {}, {}};
		inet_pton(AF_INET, client, &from.sin_addr);
		bind(c, reinterpret_cast<sockaddr *>(&from), sizeof(from));
		bool ok = connect(c, reinterpret_cast<sockaddr *>(&at), sizeof(at)) == 0;
		int a = accept(l, nullptr, nullptr);
		for (int fd : {l, c, a})
			if (fd >= 0)
				close(fd);
		return ok && a >= 0;
	};
	ASSERT_TRUE(connect_pair("198.18.78.2", "198.18.78.3"));
	ASSERT_TRUE(*dp.standing().has_standing(addr("198.18.78.3")));
	const uint64_t key0[2] = {dp.settings().hash_key[0], dp.settings().hash_key[1]};
	const uint32_t prog0 = *dp.prog_id();
	const uint32_t sockops0 = link_prog_id(dir + "/" SLUICE_PIN_SOCKOPS_LINK);
	const uint64_t standing_map0 = map_id(bpf_obj_get((dir + "/" SLUICE_PIN_STANDING).c_str()));
	const uint64_t config_map0 = map_id(bpf_obj_get((dir + "/" SLUICE_PIN_CONFIG).c_str()));

	// A capture's control word (a global of the program's data section,
	// handed over like every map the key does not place) keeps its value.
	const int capture = dp.capture_maps().control;
	sluice_capture cap{};
	const uint32_t zero = 0;
	cap.generation = 77;
	cap.lease_ns = 1; // long past: the program copies nothing
	ASSERT_EQ(bpf_map_update_elem(capture, &zero, &cap, BPF_ANY), 0);

	auto r = dp.rekey(dir);
	ASSERT_TRUE(r) << r.error().describe();
	sluice_capture after{};
	ASSERT_EQ(bpf_map_lookup_elem(dp.capture_maps().control, &zero, &after), 0);
	EXPECT_EQ(after.generation, 77u) << "the capture's control word is the same map, its value kept";
	EXPECT_NE(dp.settings().hash_key[0], key0[0]);
	EXPECT_EQ(r->prog_id_before, prog0);
	EXPECT_EQ(r->prog_id_after, *dp.prog_id());
	EXPECT_NE(r->prog_id_after, prog0);
	EXPECT_GE(r->carried.entries, 2u);
	EXPECT_EQ(link_prog_id(dir + "/" SLUICE_PIN_LINK), r->prog_id_after) << "the XDP link runs the new program";
	const uint32_t sockops1 = link_prog_id(dir + "/" SLUICE_PIN_SOCKOPS_LINK);
	EXPECT_NE(sockops1, 0u);
	EXPECT_NE(sockops1, sockops0) << "the sockops link runs the new program's feeder";
	EXPECT_TRUE(*dp.standing().has_standing(addr("198.18.78.3"))) << "carried";
	// Grants after the change reach the new table (the new feeders write it).
	ASSERT_TRUE(connect_pair("198.18.78.1", "198.18.78.2"));
	EXPECT_TRUE(*dp.standing().has_standing(addr("198.18.78.1")));
	EXPECT_TRUE(dp.standing().lookup(addr("198.18.78.1"), cfg)->live);

	// The pins: the keyed maps replaced (no temporary pin left), the others the same maps.
	const uint64_t standing_map1 = map_id(bpf_obj_get((dir + "/" SLUICE_PIN_STANDING).c_str()));
	EXPECT_NE(standing_map1, standing_map0);
	EXPECT_EQ(map_id(bpf_obj_get((dir + "/" SLUICE_PIN_CONFIG).c_str())), config_map0);
	struct stat st {};
	EXPECT_NE(stat((dir + "/" "rekeying_" SLUICE_PIN_STANDING).c_str(), &st), 0);
	auto adopted = Dataplane::adopt(dir);
	ASSERT_TRUE(adopted) << adopted.error().describe();
	EXPECT_EQ(adopted->settings().hash_key[0], dp.settings().hash_key[0]);
	EXPECT_EQ(adopted->settings().hash_key[1], dp.settings().hash_key[1]);
	EXPECT_EQ(*adopted->prog_id(), r->prog_id_after);
	EXPECT_TRUE(*adopted->standing().has_standing(addr("198.18.78.3")));
	EXPECT_TRUE(*adopted->standing().has_standing(addr("198.18.78.1")));

	// And again, from the adopted pins (no feeder programs of its own held).
	auto r2 = adopted->rekey(dir);
	ASSERT_TRUE(r2) << r2.error().describe();
	EXPECT_NE(link_prog_id(dir + "/" SLUICE_PIN_SOCKOPS_LINK), sockops1);
	EXPECT_TRUE(*adopted->standing().has_standing(addr("198.18.78.3")));
	auto readopted = Dataplane::adopt(dir);
	ASSERT_TRUE(readopted);
	EXPECT_TRUE(*readopted->standing().has_standing(addr("198.18.78.1")));
}
