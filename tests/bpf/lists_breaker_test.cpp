// The breaker states, the allow/deny lists and their policy_flags, and dry run,
// on the real program.
#include "fixture.h"
#include "require.h"

#include <set>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

Options limits(std::uint64_t rate, std::uint64_t burst, std::uint32_t state = SLUICE_SERVING)
{
	Options o;
	o.config = make_config(rate, burst);
	o.config.breaker_state = state;
	return o;
}

} // namespace

TEST(Breaker, SheddingDropsEveryIpFrameButPassesNonIp)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1000, 1000, SLUICE_SHEDDING));
	Bytes v4 = udp4({}, {.src = ip4("10.20.0.1")});
	Bytes v6 = udp6({}, {.src = ip6("2001:db8:20::1")});
	Bytes v4_qinq = udp4({.tags = {svlan(1), vlan(2)}}, {.src = ip4("10.20.0.2")});
	Bytes arp = arp_request(ip4("10.20.0.1"), ip4("10.20.0.254"));
	Bytes ll = lldp();

	// Full buckets do not matter: shedding drops before the bucket.
	EXPECT_VERDICT(s, v4, XDP_DROP);
	EXPECT_VERDICT(s, v6, XDP_DROP);
	EXPECT_VERDICT(s, v4_qinq, XDP_DROP);
	EXPECT_VERDICT(s, arp, XDP_PASS);
	EXPECT_VERDICT(s, ll, XDP_PASS);
	RunResult r = s.run(v4, 100);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));

	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 103u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_DROP_SHED), 101 * v4.size() + v6.size() + v4_qinq.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_NON_IP), 2u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_NON_IP), arp.size() + ll.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 0u) << c.str();
	EXPECT_EQ(c.total_packets(), 105u) << c.str();
	for (std::uint64_t v : s.all_slots())
		ASSERT_EQ(v, 0u); // shedding never touches a bucket

	// Back to serving: the same source passes again.
	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_SERVING;
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, v4, XDP_PASS);
	EXPECT_EQ(s.counters().packets(SLUICE_PASSED), 1u);
}

TEST(Breaker, SheddingPassesAllowlistedSources)
{
	SLUICE_REQUIRE_ROOT();
	Options o = limits(1, 2, SLUICE_SHEDDING);
	o.config.policy_flags = SLUICE_LIST_ALLOW_V4 | SLUICE_LIST_ALLOW_V6;
	SLUICE_LOAD_OR_FAIL(s, o);
	ASSERT_EQ(s.list_add(s.skel()->maps.allow_v4, ip4("10.30.7.0"), 24), 0);
	ASSERT_EQ(s.list_add(s.skel()->maps.allow_v6, ip6("2001:db8:30::"), 48), 0);

	Bytes in1 = udp4({}, {.src = ip4("10.30.7.1")});
	Bytes in2 = udp4({.tags = {vlan(3)}}, {.src = ip4("10.30.7.254")});
	Bytes out1 = udp4({}, {.src = ip4("10.30.8.1")}); // next /24
	Bytes in6 = udp6({}, {.src = ip6("2001:db8:30:ffff::1")});
	Bytes out6 = udp6({}, {.src = ip6("2001:db8:31::1")});

	// Allowlisted while shedding: passed, and not rate limited (burst is 2).
	RunResult r = s.run(in1, 50);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	EXPECT_VERDICT(s, in2, XDP_PASS);
	EXPECT_VERDICT(s, in6, XDP_PASS);
	EXPECT_VERDICT(s, out1, XDP_DROP);
	EXPECT_VERDICT(s, out6, XDP_DROP);

	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_ALLOWLISTED), 52u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_ALLOWLISTED), 50 * in1.size() + in2.size() + in6.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 0u) << c.str();
	for (std::uint64_t v : s.all_slots())
		ASSERT_EQ(v, 0u);

	// The same entries with the family's bit clear are not looked up.
	sluice_config cfg = s.config();
	cfg.policy_flags = SLUICE_LIST_ALLOW_V6;
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, in1, XDP_DROP);
	EXPECT_VERDICT(s, in6, XDP_PASS);
	c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 3u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_ALLOWLISTED), 53u) << c.str();
}

// Serving: the allowlist is not consulted; an allowlisted source is limited
// like any other.
TEST(Breaker, AllowlistIsNotConsultedWhileServing)
{
	SLUICE_REQUIRE_ROOT();
	Options o = limits(1, 2, SLUICE_SERVING);
	o.config.policy_flags = SLUICE_LIST_ALLOW_V4;
	SLUICE_LOAD_OR_FAIL(s, o);
	ASSERT_EQ(s.list_add(s.skel()->maps.allow_v4, ip4("10.31.0.0"), 16), 0);
	Bytes f = udp4({}, {.src = ip4("10.31.2.3")});

	EXPECT_VERDICT(s, f, XDP_PASS);
	EXPECT_VERDICT(s, f, XDP_PASS);
	EXPECT_VERDICT(s, f, XDP_DROP);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_ALLOWLISTED), 0u) << c.str();

	// Recovering is not shedding either: still limited, not allowlisted.
	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_RECOVERING;
	cfg.admission_ppm = 500000;
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, f, XDP_DROP);
	EXPECT_EQ(s.counters().packets(SLUICE_ALLOWLISTED), 0u);
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_RATE), 2u);
}

TEST(Lists, DenylistDropsInEveryState)
{
	SLUICE_REQUIRE_ROOT();
	Options o = limits(1000, 1000);
	o.config.policy_flags = SLUICE_LIST_DENY_V4 | SLUICE_LIST_DENY_V6 | SLUICE_LIST_ALLOW_V4;
	o.config.admission_ppm = 100000;
	SLUICE_LOAD_OR_FAIL(s, o);
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v4, ip4("192.0.2.0"), 24), 0);
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v6, ip6("2001:db8:bad::"), 48), 0);
	// Also allowlisted: deny wins, even while shedding.
	ASSERT_EQ(s.list_add(s.skel()->maps.allow_v4, ip4("192.0.2.0"), 24), 0);

	Bytes d4 = udp4({}, {.src = ip4("192.0.2.9")});
	Bytes d6 = udp6({.tags = {vlan(4)}}, {.src = ip6("2001:db8:bad:1::7")});
	Bytes ok4 = udp4({}, {.src = ip4("192.0.3.9")});
	Bytes ok6 = udp6({}, {.src = ip6("2001:db8:bae::7")});

	std::uint64_t deny = 0;
	for (std::uint32_t state : {SLUICE_SERVING, SLUICE_SHEDDING, SLUICE_RECOVERING}) {
		sluice_config cfg = s.config();
		cfg.breaker_state = state;
		ASSERT_EQ(s.set_config(cfg), 0);
		EXPECT_VERDICT(s, d4, XDP_DROP);
		EXPECT_VERDICT(s, d6, XDP_DROP);
		deny += 2;
		Counters c = s.counters();
		EXPECT_EQ(c.packets(SLUICE_DROP_DENY), deny) << "state " << state << "\n" << c.str();
		// Neighbours outside the lists are judged by the state as usual.
		EXPECT_VERDICT(s, ok4, state == SLUICE_SHEDDING ? XDP_DROP : XDP_PASS);
		EXPECT_VERDICT(s, ok6, state == SLUICE_SHEDDING ? XDP_DROP : XDP_PASS);
	}
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_DROP_DENY), 6u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_DROP_DENY), 3 * (d4.size() + d6.size())) << c.str();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 4u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_ALLOWLISTED), 0u) << c.str();
	// A denied source never reaches its bucket: only ok4/ok6 wrote slots.
	std::set<std::uint32_t> expect_written;
	for (sluice_slot_pair p : {s.slots_of(ip4("192.0.3.9")), s.slots_of(ip6("2001:db8:bae::7"))}) {
		expect_written.insert(p.a);
		expect_written.insert(p.b);
	}
	std::vector<std::uint64_t> v = s.all_slots();
	for (std::uint32_t i = 0; i < v.size(); i++)
		EXPECT_EQ(v[i] != 0, expect_written.count(i) == 1) << "slot " << i;
}

// policy_flags is the program's only way to know a list is empty: with the
// family's bit clear, the list is not looked up at all, so an entry in it has
// no effect. The daemon keeps the bits in sync with the lists' contents
// (setting the bit when it inserts the first entry, clearing it when it
// removes the last); this shows what a stale bit would mean.
TEST(Lists, ClearListFlagsMeanNoLookup)
{
	SLUICE_REQUIRE_ROOT();
	Options o = limits(1000, 1000);
	o.config.policy_flags = 0;
	SLUICE_LOAD_OR_FAIL(s, o);
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v4, ip4("198.51.100.0"), 24), 0);
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v6, ip6("2001:db8:dead::"), 48), 0);
	Bytes d4 = udp4({}, {.src = ip4("198.51.100.1")});
	Bytes d6 = udp6({}, {.src = ip6("2001:db8:dead::1")});

	EXPECT_VERDICT(s, d4, XDP_PASS); // flags clear: entry ignored
	EXPECT_VERDICT(s, d6, XDP_PASS);

	sluice_config cfg = s.config();
	cfg.policy_flags = SLUICE_LIST_DENY_V4; // v4 only
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, d4, XDP_DROP);
	EXPECT_VERDICT(s, d6, XDP_PASS);

	cfg.policy_flags = SLUICE_LIST_DENY_V4 | SLUICE_LIST_DENY_V6;
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, d4, XDP_DROP);
	EXPECT_VERDICT(s, d6, XDP_DROP);

	cfg.policy_flags = 0;
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, d4, XDP_PASS);
	EXPECT_VERDICT(s, d6, XDP_PASS);

	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_DROP_DENY), 3u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 5u) << c.str();
}

// Recovering refills at admission_ppm / 1e6 of the rate: drain, sleep, count,
// once serving and once recovering at 25%, and compare.
TEST(Breaker, RecoveringRefillsAtAdmissionPpmOfTheRate)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kRate = 2000, kBurst = 1000;
	constexpr std::uint32_t kPpm = 250000;
	constexpr std::uint64_t kSleep = 200'000'000;
	SLUICE_LOAD_OR_FAIL(s, limits(kRate, kBurst));
	const std::uint64_t cost = s.config().cost_ns;
	Bytes serving_src = udp4({}, {.src = ip4("10.40.0.1")});
	Bytes recovering_src = udp4({}, {.src = ip4("10.40.0.2")});

	RefillMeasurement serv = measure_refill(s, serving_src, 3000, kSleep, 3000);
	ASSERT_EQ(serv.err, 0);
	EXPECT_EQ(serv.exhaust_retval, std::uint32_t(XDP_DROP));
	EXPECT_GE(serv.passed_exhaust, kBurst);
	ASSERT_LT(serv.passed_refill, kBurst);
	expect_refill_matches(serv, cost, "serving");

	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_RECOVERING;
	cfg.admission_ppm = kPpm;
	ASSERT_EQ(s.set_config(cfg), 0);
	const std::uint64_t rec_cost = sluice_effective_cost(cost, SLUICE_RECOVERING, kPpm);
	ASSERT_EQ(rec_cost, 4 * cost);

	RefillMeasurement rec = measure_refill(s, recovering_src, 3000, kSleep, 3000);
	ASSERT_EQ(rec.err, 0);
	EXPECT_EQ(rec.exhaust_retval, std::uint32_t(XDP_DROP));
	// A fresh source still starts with a whole burst while recovering.
	EXPECT_GE(rec.passed_exhaust, kBurst);
	EXPECT_LE(rec.passed_exhaust, kBurst + (rec.e1 - rec.e0) / rec_cost + 1);
	expect_refill_matches(rec, rec_cost, "recovering 25%");

	// Per unit of time slept, recovering admitted a quarter of serving.
	double serv_rate = double(serv.passed_refill) / (serv.sleep_on_clock() / 1e9);
	double rec_rate = double(rec.passed_refill) / (rec.sleep_on_clock() / 1e9);
	double ratio = rec_rate / serv_rate;
	std::printf("RECOVERING serving=%.1f/s recovering=%.1f/s ratio=%.3f (ppm %u)\n", serv_rate, rec_rate,
		    ratio, kPpm);
	EXPECT_NEAR(ratio, 0.25, 0.05);
}

// Dry run: every frame passes; what would have dropped is counted under its
// reason and under WOULD_DROP.
TEST(DryRun, EveryFramePassesAndDropsAreCountedTwice)
{
	SLUICE_REQUIRE_ROOT();
	Options o = limits(1, 2);
	o.dry_run = 1;
	o.config.policy_flags = SLUICE_LIST_DENY_V4 | SLUICE_LIST_ALLOW_V4;
	SLUICE_LOAD_OR_FAIL(s, o);
	ASSERT_EQ(s.list_add(s.skel()->maps.deny_v4, ip4("203.0.113.0"), 24), 0);
	ASSERT_EQ(s.list_add(s.skel()->maps.allow_v4, ip4("10.50.9.0"), 24), 0);

	Bytes lim = udp4({}, {.src = ip4("10.50.0.1")});
	Bytes den = udp4({}, {.src = ip4("203.0.113.5")});
	Bytes mal = udp4({.tags = {vlan(1), vlan(2), vlan(3)}});
	Bytes cut = truncated(udp6(), 30);
	Bytes arp = arp_request(ip4("10.50.0.1"), ip4("10.50.0.2"));
	Bytes allowed = udp4({}, {.src = ip4("10.50.9.9")});

	// Serving: 2 pass, 3 would drop on rate, 1 on deny, 2 malformed; ARP non-IP.
	for (int i = 0; i < 5; i++)
		EXPECT_VERDICT(s, lim, XDP_PASS);
	EXPECT_VERDICT(s, den, XDP_PASS);
	EXPECT_VERDICT(s, mal, XDP_PASS);
	EXPECT_VERDICT(s, cut, XDP_PASS);
	EXPECT_VERDICT(s, arp, XDP_PASS);
	// Shedding: one would-shed, one allowlisted (not a would-drop).
	sluice_config cfg = s.config();
	cfg.breaker_state = SLUICE_SHEDDING;
	ASSERT_EQ(s.set_config(cfg), 0);
	EXPECT_VERDICT(s, udp4({}, {.src = ip4("10.50.1.1")}), XDP_PASS);
	EXPECT_VERDICT(s, allowed, XDP_PASS);

	Counters c = s.counters();
	const std::uint64_t shed_len = udp4().size();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 3u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_DROP_RATE), 3 * lim.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_DENY), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_MALFORMED), 2u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_MALFORMED), mal.size() + cut.size()) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_ALLOWLISTED), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_NON_IP), 1u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_WOULD_DROP), 3u + 1 + 2 + 1) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_WOULD_DROP), 3 * lim.size() + den.size() + mal.size() + cut.size() + shed_len)
		<< c.str();
	// Frames seen = the sum of every outcome but WOULD_DROP.
	EXPECT_EQ(c.total_packets(), 11u) << c.str(); // 5 + 1 + 2 + 1 + 2
}
