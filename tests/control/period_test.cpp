// The daemon's per-period decisions without a kernel: ManagedInterface::tick
// reads the counters and the config, and these (sluiced/period.h) turn them
// into rates, the policy's sample and the config to write. Driven here with
// made-up counters and a fake clock, the way tick drives them.
#include "sluiced/period.h"

#include "logic/budgets.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

CounterSet counters(uint64_t passed, uint64_t rate_drops = 0, uint64_t other = 0)
{
	CounterSet c{};
	c[SLUICE_PASSED] = {passed, passed * 100};
	c[SLUICE_DROP_RATE] = {rate_drops, rate_drops * 100};
	c[SLUICE_NON_IP] = {other, other * 60};
	c[SLUICE_MALFORMED] = {other, other * 60};
	c[SLUICE_WOULD_DROP] = {other, other * 100};
	return c;
}

sluice_config config()
{
	sluice_config cfg{};
	cfg.rate_pps = 100;
	cfg.burst = 10;
	cfg.breaker_state = SLUICE_SERVING;
	cfg.admission_ppm = SLUICE_PPM_FULL;
	return cfg;
}

TEST(Period, IncomingIsEveryIpFrame)
{
	CounterSet c{};
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++)
		c[k].packets = 1ull << k;
	// passed, drop_rate, drop_shed, drop_deny, allowlisted, standing,
	// newcomer, drop_valve, exempt, drop_class, drop_bytes, and the cookie
	// path's (a SYN answered is incoming too); not non-IP, malformed or
	// would-drop (which overlays the others).
	EXPECT_EQ(incoming_of(c), (1ull << SLUICE_PASSED) + (1ull << SLUICE_DROP_RATE) + (1ull << SLUICE_DROP_SHED) +
					  (1ull << SLUICE_DROP_DENY) + (1ull << SLUICE_ALLOWLISTED) +
					  (1ull << SLUICE_STANDING) + (1ull << SLUICE_NEWCOMER) +
					  (1ull << SLUICE_DROP_VALVE) + (1ull << SLUICE_EXEMPT) +
					  (1ull << SLUICE_DROP_CLASS) + (1ull << SLUICE_DROP_BYTES) +
					  (1ull << SLUICE_COOKIE_SENT) + (1ull << SLUICE_COOKIE_PROVED) + (1ull << SLUICE_REPLY) +
					  (1ull << SLUICE_DROP_COOKIE) + (1ull << SLUICE_DROP_COOKIE_BUDGET) +
					  (1ull << SLUICE_DROP_COOKIE_UNFIT) + (1ull << SLUICE_DROP_COOKIE_REFLECT));
}

TEST(Period, AdmittedIsWhatTheBucketsAndBudgetsPassed)
{
	CounterSet c{};
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++)
		c[k].packets = 1ull << k;
	PolicySample s = policy_sample(1, c, BreakerState::serving, 0, config());
	EXPECT_EQ(s.admitted, (1ull << SLUICE_PASSED) + (1ull << SLUICE_STANDING) + (1ull << SLUICE_NEWCOMER) +
				      (1ull << SLUICE_COOKIE_PROVED));
}

TEST(Period, RatesAreCounterDeltasOverTheTimeBetweenReadings)
{
	CounterSet before = counters(1000, 10);
	CounterSet now = counters(3000, 13);
	RateSet r = rates_between(before, now, 2.0);
	EXPECT_DOUBLE_EQ(r[SLUICE_PASSED].pps, 1000);
	EXPECT_DOUBLE_EQ(r[SLUICE_PASSED].bps, 2000.0 * 100 * 8 / 2);
	EXPECT_DOUBLE_EQ(r[SLUICE_DROP_RATE].pps, 2); // 1.5 rounds to 2
	EXPECT_DOUBLE_EQ(r[SLUICE_DROP_SHED].pps, 0);
	// A period shorter than a second scales up.
	r = rates_between(before, counters(1001), 0.25);
	EXPECT_DOUBLE_EQ(r[SLUICE_PASSED].pps, 4);
}

TEST(Period, DroppedPpsSumsEveryDropOutcome)
{
	EXPECT_EQ(dropped_pps(std::nullopt), 0);
	RateSet r{};
	r[SLUICE_DROP_RATE].pps = 10;
	r[SLUICE_DROP_SHED].pps = 200;
	r[SLUICE_DROP_DENY].pps = 3000;
	r[SLUICE_DROP_VALVE].pps = 40000;
	r[SLUICE_PASSED].pps = 1e6;
	r[SLUICE_STANDING].pps = 1e6;
	r[SLUICE_WOULD_DROP].pps = 1e6;
	EXPECT_EQ(dropped_pps(r), 43210);
}

TEST(Period, PolicySampleCarriesTheCountersAndTheManualLatch)
{
	sluice_config cfg = config();
	cfg.breaker_manual = 1;
	PolicySample s = policy_sample(42.5, counters(700, 300, 99), BreakerState::shedding, 40, cfg);
	EXPECT_EQ(s.now_s, 42.5);
	EXPECT_EQ(s.incoming, 1000u);
	EXPECT_EQ(s.admitted, 700u);
	EXPECT_EQ(s.state, BreakerState::shedding);
	EXPECT_EQ(s.state_since_s, 40);
	EXPECT_TRUE(s.manual);
}

TEST(Period, BreakerConfigWritesStateTimeLatchAndAdmission)
{
	sluice_config cfg = config();
	cfg.rate_pps = 123;
	auto shed = breaker_config(cfg, BreakerState::shedding, true, 100000, 555);
	EXPECT_EQ(shed.breaker_state, uint32_t(SLUICE_SHEDDING));
	EXPECT_EQ(shed.breaker_since_ns, 555u);
	EXPECT_EQ(shed.breaker_manual, 1u);
	EXPECT_EQ(shed.admission_ppm, SLUICE_PPM_FULL);
	EXPECT_EQ(shed.rate_pps, 123u); // the rest stays

	// Only an operator's trip latches.
	EXPECT_EQ(breaker_config(cfg, BreakerState::shedding, false, 100000, 1).breaker_manual, 0u);
	EXPECT_EQ(breaker_config(shed, BreakerState::recovering, true, 100000, 1).breaker_manual, 0u);

	auto rec = breaker_config(shed, BreakerState::recovering, false, 100000, 777);
	EXPECT_EQ(rec.breaker_state, uint32_t(SLUICE_RECOVERING));
	EXPECT_EQ(rec.admission_ppm, 100000u); // the ramp's start
	auto serve = breaker_config(rec, BreakerState::serving, false, 100000, 999);
	EXPECT_EQ(serve.admission_ppm, SLUICE_PPM_FULL);
	EXPECT_EQ(serve.breaker_since_ns, 999u);
}

TEST(Period, ValveSampleAndConfig)
{
	CounterSet c{};
	c[SLUICE_STANDING].packets = 123;
	c[SLUICE_DROP_VALVE].packets = 45;
	sluice_config cfg = config();
	cfg.valve_closed = 1;
	ValveSample s = valve_sample(7.5, c, BreakerState::shedding, cfg);
	EXPECT_EQ(s.now_s, 7.5);
	EXPECT_EQ(s.standing, 123u);
	EXPECT_EQ(s.dropped, 45u);
	EXPECT_EQ(s.state, BreakerState::shedding);
	EXPECT_TRUE(s.closed);
	EXPECT_FALSE(s.shared) << "no standing share in the config";
	cfg.standing_newer_share_cost_ns = 1000000;
	EXPECT_TRUE(valve_sample(7.5, c, BreakerState::shedding, cfg).shared) << "the newer sources' share";
	cfg.standing_newer_share_cost_ns = 0;
	cfg.standing_share_cost_ns = 500000;
	EXPECT_TRUE(valve_sample(7.5, c, BreakerState::shedding, cfg).shared);
	auto opened = valve_config(cfg, false, 999);
	EXPECT_EQ(opened.valve_closed, 0u);
	EXPECT_EQ(opened.valve_since_ns, 999u);
	EXPECT_EQ(opened.rate_pps, cfg.rate_pps);
	EXPECT_EQ(valve_config(opened, true, 1000).valve_closed, 1u);
}

TEST(Period, LeavingSheddingOpensTheValveInTheSameWrite)
{
	auto budgeted = config_with_budgets(config(), BudgetAsk{}, 8);
	ASSERT_TRUE(budgeted.has_value());
	sluice_config shed = breaker_config(*budgeted, BreakerState::shedding, false, 100000, 555);
	shed.valve_closed = 1, shed.valve_since_ns = 600;
	auto rec = breaker_config(shed, BreakerState::recovering, false, 100000, 777);
	EXPECT_EQ(rec.valve_closed, 0u);
	EXPECT_EQ(rec.valve_since_ns, 777u);
	EXPECT_TRUE(validate_config(rec).has_value());
	// Opened already: when it opened stays.
	shed.valve_closed = 0;
	EXPECT_EQ(breaker_config(shed, BreakerState::recovering, false, 100000, 888).valve_since_ns, 600u);
}

TEST(Period, AdmissionIsWrittenOnlyWhileRecoveringAndOnlyWhenItChanges)
{
	sluice_config cfg = config();
	cfg.admission_ppm = 100000;
	PolicyDecision d;
	d.admission_ppm = 250000;
	auto next = admission_config(cfg, BreakerState::recovering, d);
	ASSERT_TRUE(next);
	EXPECT_EQ(next->admission_ppm, 250000u);
	EXPECT_EQ(next->rate_pps, cfg.rate_pps);

	EXPECT_FALSE(admission_config(cfg, BreakerState::serving, d));
	EXPECT_FALSE(admission_config(cfg, BreakerState::shedding, d));
	d.admission_ppm = 100000;
	EXPECT_FALSE(admission_config(cfg, BreakerState::recovering, d)); // unchanged
	d.admission_ppm = 250000;
	d.move = BreakerState::serving; // a move writes its own config
	EXPECT_FALSE(admission_config(cfg, BreakerState::recovering, d));
}

// The whole loop as tick runs it, with a fake clock and a fake config map:
// a flood trips the breaker, shedding holds, recovery ramps admission up,
// and the ramp's end closes the breaker.
TEST(Period, FloodTripsThenRecoveryRampsAndCloses)
{
	PolicyConfig pc;
	pc.trip_pps = 1000;
	pc.clear_pps = 500;
	pc.trip_periods = 2;
	pc.hold_s = 5;
	pc.recovery_s = 4;
	pc.start_ppm = 200000;
	AutoPolicy policy(pc);
	sluice_config map = config(); // what the data plane holds
	BreakerState state = BreakerState::serving;
	double since = 0, now = 0;
	CounterSet last = counters(0);
	std::optional<RateSet> rates;
	uint64_t passed = 0, dropped = 0;
	std::vector<BreakerState> moves;
	std::vector<uint32_t> admissions;

	auto tick = [&](uint64_t passed_per_s, uint64_t dropped_per_s) {
		now += 1;
		passed += passed_per_s;
		dropped += dropped_per_s;
		CounterSet c = counters(passed, dropped);
		rates = rates_between(last, c, 1.0);
		last = c;
		PolicyDecision d = policy.step(policy_sample(now, c, state, since, map));
		if (d.move) {
			map = breaker_config(map, *d.move, false, pc.start_ppm, uint64_t(now * 1e9));
			state = *d.move;
			since = now;
			policy.reset_window();
			moves.push_back(state);
		} else if (auto next = admission_config(map, state, d)) {
			map = *next;
			admissions.push_back(map.admission_ppm);
		}
	};

	tick(100, 0); // the first sample has no rate
	tick(5000, 0);
	EXPECT_TRUE(moves.empty()) << "one period over the trip is not enough";
	tick(5000, 0);
	ASSERT_EQ(moves.size(), 1u);
	EXPECT_EQ(state, BreakerState::shedding);
	EXPECT_EQ(map.breaker_state, uint32_t(SLUICE_SHEDDING));
	EXPECT_EQ(map.breaker_manual, 0u);

	// The flood is shed; incoming falls under clear, but the hold keeps it.
	tick(0, 5000);
	EXPECT_DOUBLE_EQ(dropped_pps(rates), 5000);
	for (int i = 0; i < 3; i++)
		tick(10, 0); // the window under clear, but within the hold
	EXPECT_EQ(moves.size(), 1u);
	// 5 s after the trip, but the flood was still there in the hold's first
	// period: the window has been under clear for 4 s of the 5 s hold.
	tick(10, 0);
	EXPECT_EQ(moves.size(), 1u);
	tick(10, 0); // 5 s of windows under clear
	ASSERT_EQ(moves.size(), 2u);
	EXPECT_EQ(state, BreakerState::recovering);
	EXPECT_EQ(map.admission_ppm, 200000u);

	// The ramp: admission written each period as it rises, then serving.
	for (int i = 0; i < 6 && state == BreakerState::recovering; i++)
		tick(10, 0);
	EXPECT_EQ(state, BreakerState::serving);
	EXPECT_EQ(map.admission_ppm, SLUICE_PPM_FULL);
	ASSERT_FALSE(admissions.empty());
	for (size_t i = 1; i < admissions.size(); i++)
		EXPECT_GT(admissions[i], admissions[i - 1]);
	EXPECT_GT(admissions.front(), 200000u);
}

} // namespace
} // namespace sluice
