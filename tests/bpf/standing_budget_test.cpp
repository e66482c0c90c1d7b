// The budgets around standing on the real program (BPF_PROG_TEST_RUN):
//   - a source with standing has a second bucket (its way's empty_at), drawn
//     on only when its slot pair is empty: rate + standing-rate, in serving,
//     recovering (where the ramp applies to the others only) and shedding;
//   - shedding, the sources without standing share the newcomer budget, one
//     bucket per CPU, which pays only for a frame its slot pair admits too;
//   - the valve makes shedding allowlist-only (standing -> drop_valve);
//   - observed standing: a source admitted in K distinct ticks earns it.
// Every run checks that every frame is counted under exactly one outcome.
#include "fixture.h"
#include "require.h"
#include "standing_support.h"

#include <sched.h>

#include <thread>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

constexpr std::uint64_t kSlow = 1; // 1 token/s: no refill within a test's runs

Options with(std::uint64_t rate, std::uint64_t burst, std::uint32_t state)
{
	Options o;
	o.config = make_config(rate, burst);
	o.config.breaker_state = state;
	return o;
}

void set_standing_budget(sluice_config &c, std::uint64_t rate, std::uint64_t burst)
{
	c.standing_cost_ns = rate ? (SLUICE_NSEC_PER_SEC + rate / 2) / rate : 0;
	c.standing_burst = burst;
	c.standing_rate_pps = rate;
}

void set_newcomer_budget(sluice_config &c, std::uint64_t per_cpu_rate, std::uint64_t per_cpu_burst)
{
	c.newcomer_cost_ns = per_cpu_rate ? (SLUICE_NSEC_PER_SEC + per_cpu_rate / 2) / per_cpu_rate : 0;
	c.newcomer_burst = per_cpu_burst;
}

// `n` frames of `f`, one run; the packets counted under each outcome since `before`.
// With t0 and t1, the program's clock just before and just after the run itself.
std::array<std::uint64_t, SLUICE_OUTCOMES> run_counted(const Sluice &s, const Bytes &f, int n,
						       std::uint64_t *t0 = nullptr, std::uint64_t *t1 = nullptr)
{
	Counters before = s.counters();
	if (t0)
		*t0 = dataplane_ns();
	RunResult r = s.run(f, n);
	if (t1)
		*t1 = dataplane_ns();
	EXPECT_EQ(r.err, 0);
	Counters after = s.counters();
	std::array<std::uint64_t, SLUICE_OUTCOMES> d{};
	std::uint64_t sum = 0;
	for (unsigned o = 0; o < SLUICE_OUTCOMES; o++) {
		d[o] = after.packets(o) - before.packets(o);
		if (o != SLUICE_WOULD_DROP)
			sum += d[o];
	}
	EXPECT_EQ(sum, std::uint64_t(n)) << "every frame counted once: " << after.str();
	return d;
}

} // namespace

TEST(StandingBudget, ServingAStandingSourceBeyondItsSlotPairIsAdmittedByItsStandingBucket)
{
	SLUICE_REQUIRE_ROOT();
	Options o = with(kSlow, 5, SLUICE_SERVING);
	set_standing_budget(o.config, kSlow, 7);
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	Ip4 a = ip4("10.41.0.1"), b = ip4("10.41.0.2");
	st.grant(hash_of(s, a), stamp_now());

	auto da = run_counted(s, udp4({}, {.src = a}), 20);
	EXPECT_EQ(da[SLUICE_PASSED], 5u) << "the slot pair first";
	EXPECT_EQ(da[SLUICE_STANDING], 7u) << "then the standing bucket, to its burst";
	EXPECT_EQ(da[SLUICE_DROP_RATE], 8u);
	auto db = run_counted(s, udp4({}, {.src = b}), 20);
	EXPECT_EQ(db[SLUICE_PASSED], 5u);
	EXPECT_EQ(db[SLUICE_STANDING], 0u) << "no standing, no second bucket";
	EXPECT_EQ(db[SLUICE_DROP_RATE], 15u);

	// The bucket drawn on is the source's own way's, now empty.
	std::uint64_t h = hash_of(s, a);
	int w = st.way_of(h);
	ASSERT_GE(w, 0);
	std::uint64_t now = dataplane_ns() + SLUICE_TIME_BIAS;
	EXPECT_EQ(sluice_tokens(st.read(st.set_of(h)).empty_at[w], now, s.config().standing_cost_ns, 7), 0u);
}

// Offer `f` far over its budget for about `secs`: runs of `per_run` frames,
// a millisecond apart (each bucket's burst holds the refill between runs, so
// none is capped away). The caller has just emptied the buckets, in a run
// bracketed by the program's clock at [e0, e1]; the last run is bracketed at
// [l0, l1]. The program's clock readings lie inside those brackets, so a
// bucket of cost c admits between (l0 - e1) / c and (l1 - e0) / c + 1 frames
// in the window: exact, and wide only by what a run itself took (a loaded
// machine that preempts this thread between runs widens nothing).
struct Window {
	std::uint64_t e0 = 0, e1 = 0, l0 = 0, l1 = 0;

	std::uint64_t least(std::uint64_t cost_ns) const { return (l0 - e1) / cost_ns; }
	std::uint64_t most(std::uint64_t cost_ns) const { return (l1 - e0) / cost_ns + 1; }
	double secs() const { return double(l1 - e0) / 1e9; }
};

struct Offered {
	std::uint64_t admitted = 0, standing = 0;
	Window w;
};

// Frames `f`, `drain` of them to empty the buckets, then offered as above.
// The drain starts just after a tick of the program's clock; see expect_burst.
Offered offer_after_drain(const Sluice &s, const Bytes &f, int drain, double secs, int per_run,
			  std::array<std::uint64_t, SLUICE_OUTCOMES> &drained)
{
	Offered r;
	wait_for_tick();
	drained = run_counted(s, f, drain, &r.w.e0, &r.w.e1);
	for (;;) {
		sleep_ns(1'000'000);
		r.w.l0 = dataplane_ns();
		auto d = run_counted(s, f, per_run);
		r.w.l1 = dataplane_ns();
		r.admitted += d[SLUICE_PASSED] + d[SLUICE_STANDING];
		r.standing += d[SLUICE_STANDING];
		if (double(r.w.l1 - r.w.e1) >= secs * 1e9)
			break;
	}
	return r;
}

// What a full bucket of `burst` and cost c admitted in a drain bracketed by
// the program's clock at [e0, e1]: the burst exactly when no tick passed (every
// frame saw the same time); when one did (the thread preempted mid-run: 101
// of a burst of 100 was seen in CI), at most what refilled over the bracket.
void expect_burst(std::uint64_t got, std::uint64_t burst, const Window &w, std::uint64_t cost_ns, const char *what)
{
	std::uint64_t most = w.e1 == w.e0 ? burst : burst + (w.e1 - w.e0) / cost_ns + 1;
	std::printf("%s: %llu admitted in a drain of %.3f s, bracket [%llu, %llu]\n", what, (unsigned long long)got,
		    double(w.e1 - w.e0) / 1e9, (unsigned long long)burst, (unsigned long long)most);
	EXPECT_GE(got, burst) << what;
	EXPECT_LE(got, most) << what;
}

void expect_admitted_within(std::uint64_t got, const Window &w, std::uint64_t cost_ns, const char *what)
{
	std::printf("%s: %llu admitted in [%.3f, %.3f] s, bracket [%llu, %llu]\n", what, (unsigned long long)got,
		    double(w.l0 - w.e1) / 1e9, w.secs(), (unsigned long long)w.least(cost_ns),
		    (unsigned long long)w.most(cost_ns));
	EXPECT_GE(got, w.least(cost_ns)) << what;
	EXPECT_LE(got, w.most(cost_ns)) << what;
}


TEST(StandingBudget, AStandingSourceIsHeldToRatePlusStandingRate)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kRate = 200, kStandingRate = 400;
	Options o = with(kRate, 50, SLUICE_SERVING);
	set_standing_budget(o.config, kStandingRate, 100);
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	Ip4 a = ip4("10.41.0.3");
	st.grant(hash_of(s, a), stamp_now());
	Bytes f = udp4({}, {.src = a});

	std::array<std::uint64_t, SLUICE_OUTCOMES> burst{};
	Offered r = offer_after_drain(s, f, 500, 0.3, 300, burst);
	expect_burst(burst[SLUICE_PASSED], 50, r.w, s.config().cost_ns, "the slot pair's burst");
	expect_burst(burst[SLUICE_STANDING], 100, r.w, s.config().standing_cost_ns, "then the standing burst");
	expect_admitted_within(r.admitted - r.standing, r.w, s.config().cost_ns, "STANDING RATE: the slot pair");
	expect_admitted_within(r.standing, r.w, s.config().standing_cost_ns, "STANDING RATE: the standing bucket");
}

TEST(StandingBudget, RecoveringRampsTheOthersWhileAStandingSourceKeepsItsBudget)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kRate = 200;
	constexpr std::uint32_t kPpm = 100'000; // a tenth of the rate
	Options o = with(kRate, 50, SLUICE_RECOVERING);
	o.config.admission_ppm = kPpm;
	set_standing_budget(o.config, 0, 0); // no standing bucket: the unramped retry alone
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	Ip4 a = ip4("10.41.0.4"), b = ip4("10.41.0.5");
	st.grant(hash_of(s, a), stamp_now());
	Bytes fa = udp4({}, {.src = a}), fb = udp4({}, {.src = b});

	Window wa, wb; // as offer_after_drain's, one per source
	wait_for_tick();
	wa.e0 = dataplane_ns();
	run_counted(s, fa, 100); // both bursts spent
	wa.e1 = wb.e0 = dataplane_ns();
	run_counted(s, fb, 100);
	wb.e1 = dataplane_ns();
	std::uint64_t got_a = 0, got_b = 0, standing_a = 0;
	for (;;) {
		sleep_ns(1'000'000);
		wa.l0 = dataplane_ns();
		auto da = run_counted(s, fa, 100);
		wa.l1 = wb.l0 = dataplane_ns();
		auto db = run_counted(s, fb, 100);
		wb.l1 = dataplane_ns();
		got_a += da[SLUICE_PASSED] + da[SLUICE_STANDING];
		standing_a += da[SLUICE_STANDING];
		got_b += db[SLUICE_PASSED] + db[SLUICE_STANDING];
		EXPECT_EQ(db[SLUICE_STANDING], 0u);
		if (wb.l1 - wb.e1 >= 300'000'000ull)
			break;
	}
	std::uint64_t cost = s.config().cost_ns;
	EXPECT_EQ(standing_a, 0u) << "no standing bucket configured";
	expect_admitted_within(got_a, wa, cost, "RECOVERING: a source with standing keeps its whole rate");
	expect_admitted_within(got_b, wb, sluice_effective_cost(cost, SLUICE_RECOVERING, kPpm),
			       "RECOVERING: the ramp applies to the rest");
}

TEST(StandingBudget, SheddingWithStandingTheStandingBucketAlone)
{
	SLUICE_REQUIRE_ROOT();
	Options o = with(kSlow, 3, SLUICE_SHEDDING);
	set_standing_budget(o.config, kSlow, 4);
	set_newcomer_budget(o.config, 0, 0); // no newcomers: shedding as before
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	Ip4 a = ip4("10.41.0.6"), b = ip4("10.41.0.7");
	st.grant(hash_of(s, a), stamp_now());

	auto da = run_counted(s, udp4({}, {.src = a}), 10);
	EXPECT_EQ(da[SLUICE_STANDING], 4u) << "its standing bucket (4), not its slot pair too";
	EXPECT_EQ(da[SLUICE_DROP_RATE], 6u);
	const int w = st.way_of(hash_of(s, a));
	ASSERT_GE(w, 0);
	EXPECT_EQ(st.read(st.set_of(hash_of(s, a))).seen[w], 10u) << "every frame that reached the bucket is seen";
	sluice_slot_pair pa0 = s.slots_of(a);
	EXPECT_EQ(s.slot(pa0.a), 0u) << "its slot pair is not asked while shedding";
	auto db = run_counted(s, udp4({}, {.src = b}), 10);
	EXPECT_EQ(db[SLUICE_DROP_SHED], 10u) << "without standing and without a newcomer budget: shed";
	sluice_slot_pair pb = s.slots_of(b);
	sluice_slot_pair pa = s.slots_of(a);
	if (pb.a != pa.a && pb.a != pa.b)
		EXPECT_EQ(s.slot(pb.a), 0u) << "a shed frame touches no slot";
}

// The fair share (config.standing_share_cost_ns, the daemon's water-filled
// level): every standing bucket refills at its own rate or the share,
// whichever is lower, and holds the time its own burst lasts, so at half
// the rate half the tokens.
TEST(StandingBudget, TheShareCapsTheStandingBucket)
{
	SLUICE_REQUIRE_ROOT();
	Options o = with(kSlow, 3, SLUICE_SHEDDING);
	set_standing_budget(o.config, kSlow, 8);
	set_newcomer_budget(o.config, 0, 0);
	o.config.standing_share_cost_ns = 2 * o.config.standing_cost_ns; // half the standing rate
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	Ip4 a = ip4("10.41.0.16");
	st.grant(hash_of(s, a), stamp_now());
	auto da = run_counted(s, udp4({}, {.src = a}), 10);
	EXPECT_EQ(da[SLUICE_STANDING], 4u) << "8 tokens' time at twice the cost: 4";
	EXPECT_EQ(da[SLUICE_DROP_RATE], 6u);

	// A share above the bucket's own rate changes nothing.
	Options o2 = with(kSlow, 3, SLUICE_SHEDDING);
	set_standing_budget(o2.config, kSlow, 8);
	set_newcomer_budget(o2.config, 0, 0);
	o2.config.standing_share_cost_ns = o2.config.standing_cost_ns / 2;
	SLUICE_LOAD_OR_FAIL(s2, o2);
	Standing st2{s2};
	st2.grant(hash_of(s2, a), stamp_now());
	auto d2 = run_counted(s2, udp4({}, {.src = a}), 10);
	EXPECT_EQ(d2[SLUICE_STANDING], 8u);
}

// Tenure (config.standing_newer_share_cost_ns and standing_tenure_tick): a
// source whose first grant (record[w]'s tick) came after the tenure line
// refills at the newer sources' share; one granted before it, or at its very
// tick, at the tenured share (here none: its own rate). Without a newer
// share every source has the one share.
TEST(StandingBudget, SourcesGrantedAfterTheTenureLineHaveTheNewerShare)
{
	SLUICE_REQUIRE_ROOT();
	const std::uint32_t now = stamp_now();
	const std::uint32_t line = (now - 5) & SLUICE_STANDING_RECORD_TICK_MASK;
	struct Case {
		const char *addr;
		std::uint32_t granted; // the record's tick
		std::uint32_t admitted_with_tiers;
	};
	const Case cases[] = {
		{"10.41.0.21", (line - 1) & SLUICE_STANDING_RECORD_TICK_MASK, 8}, // before the line: its own rate
		{"10.41.0.22", line, 8},                                          // at it: tenured
		{"10.41.0.23", now, 4},                                           // after it: 8 tokens' time at twice the cost
	};
	for (bool tiers : {true, false}) {
		Options o = with(kSlow, 3, SLUICE_SHEDDING);
		set_standing_budget(o.config, kSlow, 8);
		set_newcomer_budget(o.config, 0, 0);
		if (tiers) {
			o.config.standing_newer_share_cost_ns = 2 * o.config.standing_cost_ns;
			o.config.standing_tenure_tick = line;
		}
		SLUICE_LOAD_OR_FAIL(s, o);
		Standing st{s};
		int way = 0;
		for (const Case &c : cases) {
			const std::uint64_t h = hash_of(s, ip4(c.addr));
			st.grant(h, now, way);
			sluice_standing_set set = st.read(st.set_of(h));
			set.record[way] = sluice_standing_record(SLUICE_BY_ACCEPTED, c.granted);
			st.write(st.set_of(h), set);
			way++;
		}
		for (const Case &c : cases) {
			auto d = run_counted(s, udp4({}, {.src = ip4(c.addr)}), 10);
			EXPECT_EQ(d[SLUICE_STANDING], tiers ? c.admitted_with_tiers : 8u) << c.addr << (tiers ? " tiers" : "");
		}
	}
}

TEST(StandingBudget, TheNewcomerBudgetAdmitsItsBurstThenSheds)
{
	SLUICE_REQUIRE_ROOT();
	Options o = with(kSlow, 2, SLUICE_SHEDDING); // each source's own slot pair: 2
	set_newcomer_budget(o.config, kSlow, 5);     // the budget: 5 on this CPU
	SLUICE_LOAD_OR_FAIL(s, o);
	Ip4 heavy = ip4("10.41.1.1");

	// Pinned, so that every run is one CPU's bucket.
	cpu_set_t saved, one;
	ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);

	auto dh = run_counted(s, udp4({}, {.src = heavy}), 10);
	EXPECT_EQ(dh[SLUICE_NEWCOMER], 2u) << "its own slot pair holds a heavy newcomer to its rate";
	EXPECT_EQ(dh[SLUICE_DROP_RATE], 8u) << "and what its pair refused spent none of the budget";
	std::uint64_t admitted = dh[SLUICE_NEWCOMER];
	for (int i = 2; admitted < 5 + 2 && i < 10; i++) {
		Ip4 src = ip4(("10.41.1." + std::to_string(i)).c_str());
		auto d = run_counted(s, udp4({}, {.src = src}), 1);
		admitted += d[SLUICE_NEWCOMER];
		EXPECT_EQ(d[SLUICE_NEWCOMER] + d[SLUICE_DROP_SHED], 1u);
	}
	EXPECT_EQ(admitted, 5u) << "exactly the budget's burst on this CPU";
	auto dn = run_counted(s, udp4({}, {.src = ip4("10.41.1.200")}), 3);
	EXPECT_EQ(dn[SLUICE_DROP_SHED], 3u) << "the budget is empty: shed";
	EXPECT_EQ(dn[SLUICE_NEWCOMER], 0u);
	sluice_slot_pair p = s.slots_of(ip4("10.41.1.200")), ph = s.slots_of(heavy);
	if (p.a != ph.a && p.a != ph.b)
		EXPECT_EQ(s.slot(p.a), 0u) << "a shed frame pays no slot";

	// Serving again, a newcomer is simply passed.
	sluice_config c = s.config();
	c.breaker_state = SLUICE_SERVING;
	ASSERT_EQ(s.set_config(c), 0);
	auto ds = run_counted(s, udp4({}, {.src = ip4("10.41.1.201")}), 1);
	EXPECT_EQ(ds[SLUICE_PASSED], 1u);
	sched_setaffinity(0, sizeof(saved), &saved);
}

TEST(StandingBudget, TwoCpusHaveABucketEachAndTogetherStayWithinTheBudget)
{
	SLUICE_REQUIRE_ROOT();
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || !CPU_ISSET(0, &allowed) ||
	    !CPU_ISSET(1, &allowed) || libbpf_num_possible_cpus() < 2)
		SLUICE_CANNOT_RUN("needs CPUs 0 and 1 (found " + std::to_string(CPU_COUNT(&allowed)) + " usable)");
	constexpr std::uint64_t kPerCpuBurst = 40;
	Options o = with(kSlow, 1, SLUICE_SHEDDING); // one frame per source
	set_newcomer_budget(o.config, kSlow, kPerCpuBurst);
	SLUICE_LOAD_OR_FAIL(s, o);

	// Each CPU offers 100 distinct newcomers at once: 200 offered, a budget
	// of 40 per CPU.
	auto offer = [&s](int cpu, std::uint32_t base, bool *pinned) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		*pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
		for (std::uint32_t i = 0; i < 100; i++) {
			Ip4 a = ip4(("10.42." + std::to_string(base) + "." + std::to_string(i)).c_str());
			s.run(udp4({}, {.src = a}));
		}
	};
	bool p0 = false, p1 = false;
	std::thread t0(offer, 0, 0, &p0), t1(offer, 1, 1, &p1);
	t0.join();
	t1.join();
	ASSERT_TRUE(p0 && p1);
	std::vector<std::uint64_t> per = s.per_cpu_packets(SLUICE_NEWCOMER);
	EXPECT_EQ(per.at(0), kPerCpuBurst) << "CPU 0 admits its own burst, exactly";
	EXPECT_EQ(per.at(1), kPerCpuBurst) << "CPU 1 too: the CPUs do not share a bucket";
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_NEWCOMER), 2 * kPerCpuBurst) << "the total within the budget: " << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_SHED), 200 - 2 * kPerCpuBurst) << c.str();
	EXPECT_EQ(c.total_packets(), 200u) << c.str();

	// Each CPU's bucket is its own value in the per-CPU map.
	std::vector<sluice_slot> b(static_cast<std::size_t>(libbpf_num_possible_cpus()));
	std::uint32_t zero = 0;
	ASSERT_EQ(bpf_map_lookup_elem(s.map_fd(s.skel()->maps.newcomers), &zero, b.data()), 0);
	EXPECT_NE(b[0].empty_at, 0u);
	EXPECT_NE(b[1].empty_at, 0u);
	for (std::size_t i = 2; i < b.size(); i++)
		EXPECT_EQ(b[i].empty_at, 0u) << "CPU " << i << " never ran a frame";
}

TEST(StandingBudget, TheValveClosedSheddingIsAllowlistOnly)
{
	SLUICE_REQUIRE_ROOT();
	Options o = with(1000, 1000, SLUICE_SHEDDING);
	set_standing_budget(o.config, 1000, 1000);
	set_newcomer_budget(o.config, 1000, 1000);
	o.config.valve_closed = 1;
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	Ip4 standing = ip4("10.41.2.1"), newcomer = ip4("10.41.2.2"), allowed = ip4("10.41.2.3");
	st.grant(hash_of(s, standing), stamp_now());
	st.grant(hash_of(s, allowed), stamp_now(), 1);
	ASSERT_EQ(s.list_add(s.skel()->maps.allow_v4, allowed, 32), 0);
	sluice_config c = s.config();
	c.policy_flags = SLUICE_LIST_ALLOW_V4;
	ASSERT_EQ(s.set_config(c), 0);

	auto ds = run_counted(s, udp4({}, {.src = standing}), 4);
	EXPECT_EQ(ds[SLUICE_DROP_VALVE], 4u) << "a source with standing is dropped as drop_valve";
	const int w = st.way_of(hash_of(s, standing));
	ASSERT_GE(w, 0);
	EXPECT_EQ(st.read(st.set_of(hash_of(s, standing))).seen[w], 4u)
		<< "seen all the same: the governor's demand, or a flood the valve drops keeps its standing";
	auto dn = run_counted(s, udp4({}, {.src = newcomer}), 4);
	EXPECT_EQ(dn[SLUICE_DROP_SHED], 4u) << "no newcomers while the valve is closed";
	auto da = run_counted(s, udp4({}, {.src = allowed}), 4);
	EXPECT_EQ(da[SLUICE_ALLOWLISTED], 4u) << "the allowlist still passes";
	EXPECT_VERDICT(s, udp4({}, {.src = standing}), XDP_DROP);

	// Opened, the same sources are admitted again.
	c.valve_closed = 0;
	ASSERT_EQ(s.set_config(c), 0);
	EXPECT_EQ(run_counted(s, udp4({}, {.src = standing}), 1)[SLUICE_STANDING], 1u);
	EXPECT_EQ(run_counted(s, udp4({}, {.src = newcomer}), 1)[SLUICE_NEWCOMER], 1u);
	for (unsigned k = 0; k < SLUICE_OUTCOMES; k++)
		if (k != SLUICE_DROP_VALVE && k != SLUICE_DROP_SHED && k != SLUICE_ALLOWLISTED &&
		    k != SLUICE_STANDING && k != SLUICE_NEWCOMER)
			EXPECT_EQ(s.counters().packets(k), 0u) << outcome_name(k);
}

TEST(StandingBudget, ObservedStandingIsEarnedInTwoDistinctTicks)
{
	SLUICE_REQUIRE_ROOT();
	Options o = with(1000, 1000, SLUICE_SERVING);
	o.observe_periods = 2;
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	Ip4 a = ip4("10.41.3.1");
	Bytes f = udp4({}, {.src = a});
	std::uint64_t h = hash_of(s, a);

	// Start just after a tick (2^30 ns) begins, so that the frames below
	// fall in this tick and the next one.
	std::uint32_t t = stamp_now();
	while (stamp_now() == t)
		sleep_ns(5'000'000);
	std::uint32_t t0 = stamp_now();
	EXPECT_EQ(run_counted(s, f, 50)[SLUICE_PASSED], 50u);
	EXPECT_EQ(st.way_of(h), -1) << "one tick is not enough, however many frames";
	while (stamp_now() == t0)
		sleep_ns(5'000'000);
	std::uint32_t t1 = stamp_now();
	EXPECT_EQ(run_counted(s, f, 1)[SLUICE_PASSED], 1u);
	int w = st.way_of(h);
	ASSERT_GE(w, 0) << "the second distinct tick earns standing";
	sluice_standing_set set = st.read(st.set_of(h));
	EXPECT_EQ(sluice_standing_record_reason(set.record[w]), std::uint32_t(SLUICE_BY_OBSERVED));
	EXPECT_EQ(set.record[w] & SLUICE_STANDING_RECORD_TICK_MASK, t1 & SLUICE_STANDING_RECORD_TICK_MASK);
	EXPECT_TRUE(sluice_standing_live(set.way[w], stamp_now(), kLapse));

	// A source with standing is no candidate: the observed map holds nothing for it.
	std::uint32_t idx = sluice_standing_set_of(h, o.standing_sets - 1);
	sluice_observed_set obs{};
	ASSERT_EQ(bpf_map_lookup_elem(s.map_fd(s.skel()->maps.observed), &idx, &obs), 0);
	for (std::uint64_t e : obs.way)
		EXPECT_NE(sluice_standing_entry_fp(e), sluice_standing_fingerprint(h));
}

TEST(StandingBudget, ObservedStandingOffHasOneSetAndCountsNothing)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, with(1000, 1000, SLUICE_SERVING));
	EXPECT_EQ(bpf_map__max_entries(s.skel()->maps.observed), 1u);
	run_counted(s, udp4({}, {.src = ip4("10.41.3.2")}), 10);
	sluice_observed_set obs{};
	std::uint32_t zero = 0;
	ASSERT_EQ(bpf_map_lookup_elem(s.map_fd(s.skel()->maps.observed), &zero, &obs), 0);
	for (std::uint64_t e : obs.way)
		EXPECT_EQ(e, 0u);
}

// The per-prefix quota holds at once (sluice_abi.h, prefix_count): a grant of
// a new source adds it to its /24's count, and a prefix at its quota takes no
// new weak source, while another /24 still does; the daemon's recount (a
// write of the counts) opens it again.
TEST(StandingBudget, APrefixAtItsQuotaTakesNoNewSourceUntilItsCountIsWrittenLower)
{
	SLUICE_REQUIRE_ROOT();
	Options o = with(1000, 1000, SLUICE_SERVING);
	o.observe_periods = 1; // a source's first frame earns (observed) standing
	o.config.prefix_quota = 3;
	SLUICE_LOAD_OR_FAIL(s, o);
	Standing st{s};
	const int counts_fd = s.map_fd(s.skel()->maps.prefix_count);
	const std::uint32_t bits = bpf_map__max_entries(s.skel()->maps.prefix_count);
	EXPECT_EQ(bits, o.standing_sets * SLUICE_STANDING_WAYS) << "one count per way of the table";
	auto nonzero = [&] {
		std::vector<std::uint32_t> out;
		for (std::uint32_t b = 0; b < bits; b++) {
			std::uint32_t c = 0;
			EXPECT_EQ(bpf_map_lookup_elem(counts_fd, &b, &c), 0);
			if (c)
				out.push_back(c);
		}
		std::sort(out.begin(), out.end());
		return out;
	};
	auto has_standing = [&](const char *addr) { return st.way_of(hash_of(s, ip4(addr))) >= 0; };
	for (int i = 1; i <= 6; i++) {
		std::string a = "10.41.5." + std::to_string(i);
		run_counted(s, udp4({}, {.src = ip4(a.c_str())}), 1);
	}
	for (int i = 1; i <= 6; i++) {
		std::string a = "10.41.5." + std::to_string(i);
		EXPECT_EQ(has_standing(a.c_str()), i <= 3) << a << ": the first 3 of the /24, then none";
	}
	run_counted(s, udp4({}, {.src = ip4("10.41.6.1")}), 1);
	EXPECT_TRUE(has_standing("10.41.6.1")) << "another /24 has a quota of its own";
	EXPECT_EQ(nonzero(), (std::vector<std::uint32_t>{sluice_prefix_count(1, 0), sluice_prefix_count(3, 0)}));

	// A refresh of a source it holds is no new source: the count stays.
	run_counted(s, udp4({}, {.src = ip4("10.41.5.1")}), 1);
	EXPECT_EQ(nonzero(), (std::vector<std::uint32_t>{sluice_prefix_count(1, 0), sluice_prefix_count(3, 0)}));

	// The daemon's recount writes every count: 10.41.5.0/24's entries went.
	for (std::uint32_t b = 0; b < bits; b++) {
		std::uint32_t c = 0;
		ASSERT_EQ(bpf_map_lookup_elem(counts_fd, &b, &c), 0);
		if (c == sluice_prefix_count(3, 0)) {
			std::uint32_t two = sluice_prefix_count(2, 0);
			ASSERT_EQ(bpf_map_update_elem(counts_fd, &b, &two, BPF_EXIST), 0);
		}
	}
	run_counted(s, udp4({}, {.src = ip4("10.41.5.4")}), 1);
	EXPECT_TRUE(has_standing("10.41.5.4")) << "under its quota again: a new source is granted";
	EXPECT_EQ(nonzero(), (std::vector<std::uint32_t>{sluice_prefix_count(1, 0), sluice_prefix_count(3, 0)}));
	run_counted(s, udp4({}, {.src = ip4("10.41.5.5")}), 1);
	EXPECT_FALSE(has_standing("10.41.5.5")) << "and at it once more";
}
