// AutoPolicy driven by synthetic counter series: cumulative counters and fake
// monotonic times, one sample per control period, transitions applied the way
// the daemon applies them (state and state_since_s change when a move is made).
#include "logic/policy.h"

#include "bpf/sluice_abi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace sluice {
namespace {

PolicyConfig test_config()
{
	PolicyConfig c;
	c.trip_pps = 1000;
	c.clear_pps = 500;
	c.trip_periods = 3;
	c.hold_s = 10;
	c.recovery_s = 60;
	c.start_ppm = 100000;
	return c;
}

// A fake daemon: keeps cumulative counters and the breaker state, feeds the
// policy one sample per period and applies its moves.
struct Driver {
	explicit Driver(PolicyConfig cfg, BreakerState initial = BreakerState::serving, bool manual_trip = false)
		: policy(cfg), state(initial), manual(manual_trip)
	{
	}

	AutoPolicy policy;
	double now = 1000; // fake monotonic seconds
	double period = 1;
	uint64_t incoming = 5'000'000; // cumulative, not starting at 0
	uint64_t admitted = 4'000'000;
	BreakerState state;
	double since = 0;
	bool manual;
	int moves = 0;

	PolicyDecision sample()
	{
		PolicyDecision d = policy.step({now, incoming, admitted, state, since, manual});
		if (d.move) {
			state = *d.move;
			since = now;
			manual = false;
			moves++;
		}
		return d;
	}
	// One period at these rates (packets per second), then a sample.
	PolicyDecision period_at(uint64_t incoming_pps, uint64_t admitted_pps)
	{
		now += period;
		incoming += static_cast<uint64_t>(incoming_pps * period);
		admitted += static_cast<uint64_t>(admitted_pps * period);
		return sample();
	}
	// Prime the policy with a first sample (no rate can be computed yet).
	PolicyDecision prime() { return sample(); }
};

// Serving -> shedding, by a sustained admitted rate; returns the trip time.
double trip(Driver &d)
{
	d.prime();
	for (uint32_t i = 0; i < d.policy.config().trip_periods; i++)
		d.period_at(5000, 5000);
	EXPECT_EQ(d.state, BreakerState::shedding);
	return d.since;
}

TEST(Policy, FirstSampleHasNoRateAndNoMove)
{
	Driver d(test_config());
	auto r = d.prime();
	EXPECT_FALSE(r.move.has_value());
	EXPECT_EQ(r.incoming_pps, 0);
	EXPECT_EQ(r.admitted_pps, 0);
	EXPECT_EQ(r.admission_ppm, SLUICE_PPM_FULL);
}

TEST(Policy, RatesAreDeltasOverTime)
{
	Driver d(test_config());
	d.period = 2;
	d.prime();
	auto r = d.period_at(300, 200);
	EXPECT_DOUBLE_EQ(r.incoming_pps, 300);
	EXPECT_DOUBLE_EQ(r.admitted_pps, 200);
	d.period = 0.5;
	r = d.period_at(800, 100);
	EXPECT_DOUBLE_EQ(r.incoming_pps, 800);
	EXPECT_DOUBLE_EQ(r.admitted_pps, 100);
}

TEST(Policy, SustainedAdmittedRateTripsAfterTripPeriodsNotBefore)
{
	Driver d(test_config());
	d.prime();
	auto r = d.period_at(2000, 2000);
	EXPECT_FALSE(r.move) << "tripped after 1 period";
	r = d.period_at(2000, 2000);
	EXPECT_FALSE(r.move) << "tripped after 2 periods (one early)";
	EXPECT_EQ(d.state, BreakerState::serving);
	r = d.period_at(2000, 2000);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::shedding);
	EXPECT_DOUBLE_EQ(r.admitted_pps, 2000);
	EXPECT_EQ(r.reason, "admitted 2000 pps over 3 periods (3.00 s) > trip 1000 pps");
	EXPECT_EQ(r.rule.verdict(), "over");
	EXPECT_DOUBLE_EQ(r.rule.rate_pps, 2000);
	EXPECT_EQ(r.rule.threshold_pps, 1000u);
}

TEST(Policy, TripThresholdIsStrictlyOver)
{
	Driver d(test_config());
	d.prime();
	for (int i = 0; i < 20; i++)
		EXPECT_FALSE(d.period_at(1000, 1000).move) << "period " << i;
	EXPECT_EQ(d.state, BreakerState::serving);
}

TEST(Policy, TripPeriodsOfOneTripsAtOnce)
{
	auto cfg = test_config();
	cfg.trip_periods = 1;
	Driver d(cfg);
	d.prime();
	EXPECT_FALSE(d.period_at(900, 900).move);
	auto r = d.period_at(1001, 1001);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::shedding);
}

TEST(Policy, SpikeWhoseWindowAverageIsNotOverTripDoesNotTrip)
{
	// One period in three at 2800 pps, the others at 100: every window of
	// three periods averages exactly 1000, which is not over the trip.
	Driver d(test_config());
	d.prime();
	for (int round = 0; round < 10; round++) {
		EXPECT_FALSE(d.period_at(2800, 2800).move) << "round " << round;
		EXPECT_FALSE(d.period_at(100, 100).move) << "round " << round;
		EXPECT_FALSE(d.period_at(100, 100).move) << "round " << round;
	}
	EXPECT_EQ(d.state, BreakerState::serving);
	EXPECT_EQ(d.moves, 0);
	// Three frames more in the spike: the window averages 1001, and trips.
	auto r = d.period_at(2803, 2803);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::shedding);
	EXPECT_DOUBLE_EQ(r.rule.rate_pps, 1001);
}

TEST(Policy, PeriodsThatEachStayUnderTripStillTripWhenTheWindowIsOver)
{
	// The consecutive-periods rule never tripped on this: two periods of
	// three under the trip, the window's average over it (issue 28's
	// recorded rates: the flood's SYN handling saturates the CPUs and the
	// frames arrive in bursts).
	auto cfg = test_config();
	cfg.trip_pps = 50000;
	cfg.clear_pps = 25000;
	Driver d(cfg);
	d.prime();
	EXPECT_FALSE(d.period_at(140000, 140000).move);
	EXPECT_FALSE(d.period_at(9000, 9000).move);
	auto r = d.period_at(4000, 4000);
	ASSERT_TRUE(r.move.has_value()) << r.rule.text();
	EXPECT_EQ(*r.move, BreakerState::shedding);
	EXPECT_DOUBLE_EQ(r.rule.rate_pps, 51000);
	EXPECT_EQ(r.rule.periods, 3u);
	EXPECT_DOUBLE_EQ(r.rule.window_s, 3);
}

TEST(Policy, SingleSourceFloodHeldByBucketsDoesNotTripWhileServing)
{
	// 10 Mpps incoming, but the buckets admit only 100 pps of it.
	Driver d(test_config());
	d.prime();
	for (int i = 0; i < 50; i++) {
		auto r = d.period_at(10'000'000, 100);
		EXPECT_FALSE(r.move) << "period " << i;
		EXPECT_DOUBLE_EQ(r.incoming_pps, 10'000'000);
		EXPECT_DOUBLE_EQ(r.admitted_pps, 100);
	}
	EXPECT_EQ(d.state, BreakerState::serving);
}

TEST(Policy, SheddingHoldsForHoldEvenIfIncomingDrops)
{
	auto cfg = test_config();
	Driver d(cfg);
	double tripped = trip(d);
	// The flood stops at once: incoming 0, far under clear_pps.
	for (int i = 1; i < 10; i++) {
		auto r = d.period_at(0, 0);
		EXPECT_FALSE(r.move) << "left shedding " << i << " s into a " << cfg.hold_s << " s hold";
		EXPECT_EQ(d.state, BreakerState::shedding);
	}
	EXPECT_DOUBLE_EQ(d.now - tripped, 9);
	// hold_s reached, and incoming has been under clear_pps for >= trip_periods.
	auto r = d.period_at(0, 0);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::recovering);
	EXPECT_EQ(r.admission_ppm, cfg.start_ppm);
	EXPECT_NE(r.reason.find("clear"), std::string::npos) << r.reason;
	EXPECT_DOUBLE_EQ(d.now - tripped, 10);
}

TEST(Policy, SheddingEndsAHoldAfterTheWindowFallsUnderClear)
{
	Driver d(test_config()); // clear 500, window 3 periods, hold 10 s
	trip(d);
	// The flood goes on well past the hold: no move.
	for (int i = 0; i < 30; i++)
		EXPECT_FALSE(d.period_at(1'000'000, 0).move);
	// Between clear_pps (500) and trip_pps (1000) is not under clear.
	for (int i = 0; i < 10; i++)
		EXPECT_FALSE(d.period_at(700, 0).move);
	// Exactly clear_pps is not under it either.
	for (int i = 0; i < 5; i++)
		EXPECT_FALSE(d.period_at(500, 0).move);
	// 499 once: the window (500, 500, 499) is under clear, and says so for
	// its whole span: quiet since 3 s ago. The hold (10 s) must pass quiet.
	auto r = d.period_at(499, 0);
	EXPECT_FALSE(r.move);
	EXPECT_EQ(r.rule.verdict(), "under");
	EXPECT_DOUBLE_EQ(r.rule.quiet_s, 3);
	const double quiet_since = d.now - 3;
	while (d.now - quiet_since < 9) {
		r = d.period_at(100, 0);
		EXPECT_FALSE(r.move) << "left " << d.now - quiet_since << " s into a 10 s quiet hold";
	}
	r = d.period_at(100, 0);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::recovering);
	EXPECT_DOUBLE_EQ(d.now - quiet_since, 10);
	EXPECT_EQ(r.reason, "incoming 100 pps over 3 periods (3.00 s) < clear 500 pps, under it for 10.00 s of a "
			    "10.00 s hold");
}

TEST(Policy, SheddingQuietRunIsBrokenByARise)
{
	Driver d(test_config());
	trip(d);
	for (int i = 0; i < 20; i++)
		d.period_at(1'000'000, 0);
	// Quiet for 9 s of a 10 s hold once the window is under clear...
	while (d.period_at(10, 0).rule.quiet_s < 9)
		ASSERT_EQ(d.state, BreakerState::shedding);
	// ... then one period at 5000 pps: the windows holding it are over
	// clear (5020 frames in 3 s: 1673 pps), and the run starts over once
	// they are gone.
	EXPECT_FALSE(d.period_at(5000, 0).move);
	int periods = 0;
	while (d.state == BreakerState::shedding && periods < 100) {
		d.period_at(10, 0);
		periods++;
	}
	EXPECT_EQ(d.state, BreakerState::recovering);
	// The first window without the rise starts where the rise's period
	// ended: the 10 s quiet hold counts from there.
	EXPECT_EQ(periods, 10);
}

TEST(Policy, ManualSheddingNeverRecoversAutomatically)
{
	Driver d(test_config(), BreakerState::shedding, /*manual=*/true);
	d.since = d.now;
	d.prime();
	for (int i = 0; i < 10000; i++) {
		auto r = d.period_at(0, 0);
		ASSERT_FALSE(r.move) << "a manual trip left shedding after " << i + 1 << " periods";
	}
	EXPECT_EQ(d.state, BreakerState::shedding);
	EXPECT_GE(d.now - d.since, 1000 * test_config().hold_s);
}

TEST(Policy, RampIsLinearFromStartToFull)
{
	auto cfg = test_config(); // 10% -> 100% over 60 s
	AutoPolicy p(cfg);
	EXPECT_EQ(p.ramp_ppm(0), 100000u);
	EXPECT_EQ(p.ramp_ppm(15), 325000u); // 25%
	EXPECT_EQ(p.ramp_ppm(30), 550000u); // 50%
	EXPECT_EQ(p.ramp_ppm(45), 775000u); // 75%
	EXPECT_EQ(p.ramp_ppm(60), 1000000u); // 100%
	EXPECT_EQ(p.ramp_ppm(6000), 1000000u); // clamped after the end
	EXPECT_EQ(p.ramp_ppm(-5), 100000u);    // and before the start
	// Monotonic, never below the data plane's floor.
	uint32_t prev = 0;
	for (double t = 0; t <= 61; t += 0.25) {
		uint32_t v = p.ramp_ppm(t);
		EXPECT_GE(v, prev);
		EXPECT_GE(v, SLUICE_PPM_MIN);
		EXPECT_LE(v, SLUICE_PPM_FULL);
		prev = v;
	}
	// The floor holds for the lowest start the options allow.
	cfg.start_ppm = SLUICE_PPM_MIN;
	AutoPolicy low(cfg);
	EXPECT_EQ(low.ramp_ppm(0), SLUICE_PPM_MIN);
	EXPECT_EQ(low.ramp_ppm(30), SLUICE_PPM_MIN + (SLUICE_PPM_FULL - SLUICE_PPM_MIN) / 2);
}

TEST(Policy, RecoveringRampsThroughStepAndClosesAtTheEnd)
{
	auto cfg = test_config();
	Driver d(cfg, BreakerState::recovering);
	d.since = d.now;
	double start = d.since;
	auto r = d.prime();
	EXPECT_EQ(r.admission_ppm, 100000u); // at 0
	EXPECT_FALSE(r.move);
	for (int i = 1; i <= 60; i++) {
		r = d.period_at(200, 100); // quiet traffic
		double elapsed = d.now - start;
		if (elapsed == 15)
			EXPECT_EQ(r.admission_ppm, 325000u);
		if (elapsed == 30)
			EXPECT_EQ(r.admission_ppm, 550000u);
		if (i < 60) {
			EXPECT_FALSE(r.move) << "closed at " << elapsed << " s of a 60 s ramp";
			EXPECT_LT(r.admission_ppm, SLUICE_PPM_FULL);
			EXPECT_EQ(d.state, BreakerState::recovering);
		}
	}
	EXPECT_DOUBLE_EQ(d.now - start, 60);
	EXPECT_EQ(r.admission_ppm, SLUICE_PPM_FULL);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::serving);
	EXPECT_EQ(r.reason, "recovery ramp complete");
	// Serving afterwards: full admission, and it stays serving.
	for (int i = 0; i < 10; i++) {
		r = d.period_at(200, 100);
		EXPECT_FALSE(r.move);
		EXPECT_EQ(r.admission_ppm, SLUICE_PPM_FULL);
	}
}

TEST(Policy, FullCycleShedRecoverServe)
{
	auto cfg = test_config();
	Driver d(cfg);
	double tripped = trip(d);
	while (d.state == BreakerState::shedding && d.now - tripped < 100)
		d.period_at(0, 0);
	ASSERT_EQ(d.state, BreakerState::recovering);
	double recovering_since = d.since;
	auto r = d.period_at(0, 0);
	EXPECT_EQ(r.admission_ppm, d.policy.ramp_ppm(1));
	EXPECT_GT(r.admission_ppm, cfg.start_ppm);
	EXPECT_LT(r.admission_ppm, cfg.start_ppm + 20000);
	while (d.state == BreakerState::recovering && d.now - recovering_since < 200)
		d.period_at(0, 0);
	EXPECT_EQ(d.state, BreakerState::serving);
	EXPECT_DOUBLE_EQ(d.since - recovering_since, cfg.recovery_s);
	EXPECT_EQ(d.moves, 3);
}

TEST(Policy, FloodBackDuringRecoveryRetripsOnAFullWindow)
{
	auto cfg = test_config();
	Driver d(cfg, BreakerState::recovering);
	d.since = d.now;
	d.prime();
	// Incoming above trip_pps; admitted stays low (the ramp holds it), so
	// only the incoming rate can be what re-trips. The window fills in
	// trip_periods periods; the rule decides on a full one only.
	EXPECT_FALSE(d.period_at(50000, 200).move);
	EXPECT_FALSE(d.period_at(50000, 200).move);
	EXPECT_EQ(d.state, BreakerState::recovering);
	auto r = d.period_at(50000, 200);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::shedding);
	EXPECT_NE(r.reason.find("flood back during recovery"), std::string::npos) << r.reason;
}

TEST(Policy, ShortSpikeDuringRecoveryDoesNotRetrip)
{
	// A spike whose windows average under trip_pps (2500 + 200 + 200 over
	// 3 s: 967 pps) is not a flood coming back.
	Driver d(test_config(), BreakerState::recovering);
	d.since = d.now;
	d.prime();
	for (int i = 0; i < 5; i++) {
		EXPECT_FALSE(d.period_at(2500, 200).move);
		EXPECT_FALSE(d.period_at(200, 100).move);
		EXPECT_FALSE(d.period_at(200, 100).move);
	}
	EXPECT_EQ(d.state, BreakerState::recovering);
}

TEST(Policy, WindowDoesNotSpanATransition)
{
	// Two over-periods in recovering, then an (operator's) move to serving:
	// serving must count its own three periods from scratch.
	Driver d(test_config(), BreakerState::recovering);
	d.since = d.now;
	d.prime();
	d.period_at(50000, 50000);
	d.period_at(50000, 50000);
	d.state = BreakerState::serving; // a manual transition
	d.since = d.now;
	EXPECT_FALSE(d.period_at(50000, 50000).move);
	EXPECT_FALSE(d.period_at(50000, 50000).move);
	EXPECT_TRUE(d.period_at(50000, 50000).move);
}

TEST(Policy, ResetWindowForgetsAPartialWindow)
{
	Driver d(test_config());
	d.prime();
	d.period_at(5000, 5000);
	d.period_at(5000, 5000);
	d.policy.reset_window();
	EXPECT_FALSE(d.period_at(5000, 5000).move);
	EXPECT_FALSE(d.period_at(5000, 5000).move);
	EXPECT_TRUE(d.period_at(5000, 5000).move);
}

TEST(Policy, CountersGoingBackwardsGiveNoBogusRate)
{
	auto cfg = test_config();
	cfg.trip_periods = 1; // any bogus rate would trip at once
	Driver d(cfg);
	d.prime();
	EXPECT_FALSE(d.period_at(100, 100).move);
	// The daemon restarted / the program was reloaded: counters restart low.
	d.now += 1;
	d.incoming = 10;
	d.admitted = 10;
	auto r = d.sample();
	EXPECT_FALSE(r.move) << "bogus rate " << r.admitted_pps;
	EXPECT_EQ(r.incoming_pps, 0);
	EXPECT_EQ(r.admitted_pps, 0);
	EXPECT_EQ(d.state, BreakerState::serving);
	// Rates resume from the new base.
	r = d.period_at(300, 200);
	EXPECT_FALSE(r.move);
	EXPECT_DOUBLE_EQ(r.incoming_pps, 300);
	EXPECT_DOUBLE_EQ(r.admitted_pps, 200);
	// Only one of the two going backwards is just as bogus.
	d.now += 1;
	d.admitted -= 50;
	d.incoming += 100;
	r = d.sample();
	EXPECT_FALSE(r.move);
	EXPECT_EQ(r.admitted_pps, 0);
	EXPECT_EQ(r.incoming_pps, 0);
	EXPECT_TRUE(std::isfinite(r.incoming_pps));
}

TEST(Policy, CountersGoingBackwardsInRecoveryDoNotRetrip)
{
	auto cfg = test_config();
	cfg.trip_periods = 1;
	Driver d(cfg, BreakerState::recovering);
	d.since = d.now;
	d.prime();
	d.period_at(100, 100);
	d.now += 1;
	d.incoming = 0;
	d.admitted = 0;
	auto r = d.sample();
	EXPECT_FALSE(r.move);
	EXPECT_EQ(d.state, BreakerState::recovering);
	EXPECT_EQ(r.admission_ppm, AutoPolicy(cfg).ramp_ppm(2));
}

TEST(Policy, TimeNotAdvancingGivesNoRate)
{
	auto cfg = test_config();
	cfg.trip_periods = 1;
	Driver d(cfg);
	d.prime();
	d.incoming += 1'000'000;
	d.admitted += 1'000'000;
	auto r = d.sample(); // same `now`: dt = 0
	EXPECT_FALSE(r.move);
	EXPECT_TRUE(std::isfinite(r.admitted_pps));
	EXPECT_EQ(r.admitted_pps, 0);
	d.now -= 5; // and backwards
	r = d.sample();
	EXPECT_FALSE(r.move);
	EXPECT_EQ(r.admitted_pps, 0);
}

TEST(Policy, ValidateAcceptsDefaultsAndTestConfig)
{
	EXPECT_TRUE(validate_policy(PolicyConfig{}).has_value());
	EXPECT_TRUE(validate_policy(test_config()).has_value());
	auto edge = test_config();
	edge.clear_pps = edge.trip_pps; // equal is allowed
	edge.trip_periods = 3600;
	edge.hold_s = 0;
	edge.recovery_s = 86400;
	edge.start_ppm = SLUICE_PPM_FULL;
	EXPECT_TRUE(validate_policy(edge).has_value());
	edge.start_ppm = SLUICE_PPM_MIN;
	EXPECT_TRUE(validate_policy(edge).has_value());
}

void expect_refused(const PolicyConfig &c, const std::string &names)
{
	auto r = validate_policy(c);
	ASSERT_FALSE(r.has_value()) << "accepted a config that should mention " << names;
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	EXPECT_NE(r.error().message.find(names), std::string::npos) << r.error().message;
}

TEST(Policy, ValidateRefusesBadValues)
{
	const double nan = std::numeric_limits<double>::quiet_NaN();
	const double inf = std::numeric_limits<double>::infinity();
	auto c = test_config();

	c = test_config(), c.trip_pps = 0, c.clear_pps = 0;
	expect_refused(c, "--trip-pps");
	c = test_config(), c.clear_pps = 0;
	expect_refused(c, "--clear-pps");
	c = test_config(), c.clear_pps = c.trip_pps + 1;
	expect_refused(c, "--clear-pps must be between 1 and --trip-pps (1000)");
	c = test_config(), c.trip_periods = 0;
	expect_refused(c, "--trip-periods");
	c = test_config(), c.trip_periods = 3601;
	expect_refused(c, "--trip-periods");
	for (double bad : {-1.0, 86401.0, nan, inf}) {
		c = test_config(), c.hold_s = bad;
		expect_refused(c, "--hold");
	}
	for (double bad : {0.0, -1.0, 86401.0, nan, inf}) {
		c = test_config(), c.recovery_s = bad;
		expect_refused(c, "--recovery");
	}
	for (uint32_t bad : {0u, SLUICE_PPM_MIN - 1, SLUICE_PPM_FULL + 1}) {
		c = test_config(), c.start_ppm = bad;
		expect_refused(c, "--recovery-start");
	}
}

// ---- Recorded shapes: floods as functions of time, sampled by ticks ----

// A flood that is on for on_s of every every_s seconds at pps, from start_s
// (steady: on_s == every_s). frames(t) is exact, so a window's rate is what
// the rule should see whatever the ticks' phase.
struct Shape {
	const char *name;
	double on_s, every_s, pps;
	double mean_pps() const { return pps * on_s / every_s; }
	uint64_t frames(double t) const // since the flood's start
	{
		if (t <= 0)
			return 0;
		double cycles = std::floor(t / every_s);
		double rem = t - cycles * every_s;
		return static_cast<uint64_t>(std::floor(pps * (cycles * on_s + std::min(rem, on_s))));
	}
};

// Ticks every `period` from the driver's clock, some late by up to
// late_share of a period (a fixed pseudo-random sequence), the flood
// starting `phase` into a period. Everything the flood sends is admitted
// while serving (every source under its own limit) and incoming always.
struct ShapeRun {
	Driver d;
	Shape shape;
	double flood_start = 0;
	double late_share = 0;
	uint64_t base_in = 0, base_adm = 0;
	uint32_t lcg = 12345;
	double next_due = 0;

	ShapeRun(PolicyConfig cfg, Shape sh, double period, double phase, double late = 0,
		 BreakerState initial = BreakerState::serving)
		: d(cfg, initial), shape(sh), late_share(late)
	{
		d.period = period;
		d.since = d.now;
		d.prime();
		base_in = d.incoming;
		base_adm = d.admitted;
		flood_start = d.now + phase * period;
		next_due = d.now + period;
	}
	double jitter()
	{
		lcg = lcg * 1103515245u + 12345u;
		return late_share * d.period * double((lcg >> 8) % 1000) / 1000.0;
	}
	// One tick at the next due time (maybe late); the flood's frames so far.
	PolicyDecision tick()
	{
		d.now = next_due + jitter();
		// As the daemon's loop: keep the phase, but after a late tick the
		// next is due a period after it, never in its past.
		next_due += d.period;
		if (next_due < d.now)
			next_due = d.now + d.period;
		uint64_t f = shape.frames(d.now - flood_start);
		d.incoming = base_in + f;
		if (d.state == BreakerState::serving)
			d.admitted = base_adm + f;
		else
			base_adm = d.admitted - f; // shedding and recovering admit next to none
		return d.sample();
	}
	// Ticks until the breaker leaves `from` or `limit_s` pass; seconds from
	// the flood's start to the move (infinity: none).
	double until_move_from(BreakerState from, double limit_s)
	{
		double end = d.now + limit_s;
		while (d.now < end) {
			tick();
			if (d.state != from)
				return d.now - flood_start;
		}
		return std::numeric_limits<double>::infinity();
	}
};

PolicyConfig shape_config(uint32_t trip_periods)
{
	PolicyConfig c = test_config(); // trip 1000 pps, clear 500, hold 10 s
	c.trip_periods = trip_periods;
	return c;
}

const Shape kSteady{"steady at 2x", 1, 1, 2000};
const Shape kBursty{"bursty: on 0.3 s / off 0.4 s at 5x", 0.3, 0.7, 5000};
const Shape kPulse02{"pulsed: 0.2 s every 1 s at 10x", 0.2, 1, 10000};
const Shape kPulse04{"pulsed: 0.4 s every 1 s at 10x", 0.4, 1, 10000};

TEST(PolicyShapes, EveryFloodShapeTripsWithinTheWindowAndOnePeriod)
{
	// trip_periods x period + one period, for the defaults' 3 x 1 s and the
	// demo's 2 x 0.5 s, at several phases of the flood against the ticks.
	struct Setting {
		uint32_t trip_periods;
		double period;
	};
	for (Setting st : {Setting{3, 1.0}, Setting{2, 0.5}, Setting{4, 0.25}}) {
		const double bound = st.trip_periods * st.period + st.period;
		for (const Shape &sh : {kSteady, kBursty, kPulse02, kPulse04}) {
			ASSERT_GT(sh.mean_pps(), 1000) << sh.name;
			for (double phase : {0.0, 0.13, 0.5, 0.77, 0.99}) {
				ShapeRun run(shape_config(st.trip_periods), sh, st.period, phase);
				double took = run.until_move_from(BreakerState::serving, 60);
				EXPECT_LE(took, bound + 1e-9)
					<< sh.name << ", " << st.trip_periods << " x " << st.period << " s, phase " << phase;
				EXPECT_EQ(run.d.state, BreakerState::shedding) << sh.name;
			}
		}
	}
}

TEST(PolicyShapes, LateTicksAreJudgedOverTheirRealElapsedTime)
{
	// Ticks up to 2.5 periods late: a steady 900 pps must never look over
	// 1000 (dividing a late tick's frames by the nominal period would say
	// up to 3150), and 1100 pps must trip within the window's real span and
	// one more (late) tick.
	for (double pps : {900.0, 1100.0}) {
		Shape sh{"steady", 1, 1, pps};
		ShapeRun run(shape_config(3), sh, 1.0, 0.3, /*late=*/2.5);
		double took = run.until_move_from(BreakerState::serving, 600);
		if (pps < 1000) {
			EXPECT_EQ(took, std::numeric_limits<double>::infinity()) << "900 pps tripped";
		} else {
			EXPECT_LE(took, (3 + 1) * (1 + 2.5)) << "1100 pps";
			EXPECT_EQ(run.d.state, BreakerState::shedding);
		}
	}
}

TEST(PolicyShapes, AFloodJustUnderTripNeverTrips)
{
	// Steady at 99% of trip-pps, with late ticks; and a pulse wave whose
	// every 3 s window averages 98% (0.2 s every 1 s at 4.9x).
	Shape steady{"steady at 0.99x", 1, 1, 990};
	ShapeRun a(shape_config(3), steady, 1.0, 0.41, /*late=*/0.5);
	EXPECT_EQ(a.until_move_from(BreakerState::serving, 600), std::numeric_limits<double>::infinity());
	Shape pulsed{"pulsed at 0.98x", 0.2, 1, 4900};
	for (double phase : {0.0, 0.37, 0.9}) {
		ShapeRun b(shape_config(3), pulsed, 1.0, phase);
		EXPECT_EQ(b.until_move_from(BreakerState::serving, 600), std::numeric_limits<double>::infinity())
			<< "phase " << phase;
	}
}

TEST(PolicyShapes, APulseWaveNeverLetsSheddingEnd)
{
	// Tripped by the pulse wave itself, then 5 minutes of pulses: never
	// recovering, let alone serving. When the pulses stop, recovering
	// after the hold plus the window (and a period), then serving.
	for (const Shape &sh : {kPulse02, kPulse04, kBursty}) {
		PolicyConfig cfg = shape_config(3);
		ShapeRun run(cfg, sh, 1.0, 0.21);
		ASSERT_LT(run.until_move_from(BreakerState::serving, 10), 5) << sh.name;
		for (int i = 0; i < 300; i++) {
			auto r = run.tick();
			ASSERT_EQ(run.d.state, BreakerState::shedding) << sh.name << " left shedding at tick " << i;
			EXPECT_GT(r.rule.rate_pps, double(cfg.clear_pps)) << sh.name;
		}
		EXPECT_EQ(run.d.moves, 1) << sh.name;
		// The pulses stop: the flood's frames stay where they are.
		run.shape.every_s = 1e9;
		run.shape.on_s = 0;
		run.base_in = run.d.incoming;
		double stopped = run.d.now;
		while (run.d.state == BreakerState::shedding && run.d.now - stopped < 60)
			run.tick();
		EXPECT_EQ(run.d.state, BreakerState::recovering) << sh.name;
		EXPECT_LE(run.d.now - stopped, cfg.hold_s + 3 + 1 + 1e-9) << sh.name;
		EXPECT_GE(run.d.now - stopped, cfg.hold_s) << sh.name;
	}
}

TEST(PolicyShapes, SparsePulsesInsideTheHoldKeepItShedding)
{
	// 0.2 s at 10x every 5 s averages 0.4x trip: it would not trip from
	// serving, but once shedding it is a flood still there: each pulse
	// lifts the 3 s windows that hold it over clear (2000 frames / 3 s),
	// and the gaps between (about 2 s of quiet windows) never span the
	// 10 s hold.
	PolicyConfig cfg = shape_config(3);
	Shape sparse{"0.2 s every 5 s at 10x", 0.2, 5, 10000};
	ShapeRun run(cfg, sparse, 1.0, 0.6, 0, BreakerState::shedding);
	for (int i = 0; i < 300; i++) {
		run.tick();
		ASSERT_EQ(run.d.state, BreakerState::shedding) << "left at tick " << i;
	}
}

TEST(PolicyShapes, APulseWaveDuringRecoveryGoesBackToSheddingOnceAndStays)
{
	// Recovering (its 60 s ramp just begun) when a pulse wave starts: back to
	// shedding within the window and a period, and no flapping after.
	for (const Shape &sh : {kPulse02, kPulse04}) {
		PolicyConfig cfg = shape_config(3);
		ShapeRun run(cfg, sh, 1.0, 0.5, 0, BreakerState::recovering);
		double took = run.until_move_from(BreakerState::recovering, 30);
		EXPECT_LE(took, 3 * 1.0 + 1.0 + 1e-9) << sh.name;
		ASSERT_EQ(run.d.state, BreakerState::shedding) << sh.name;
		for (int i = 0; i < 120; i++) {
			run.tick();
			ASSERT_EQ(run.d.state, BreakerState::shedding) << sh.name << " tick " << i;
		}
		EXPECT_EQ(run.d.moves, 1) << sh.name;
	}
}

TEST(PolicyShapes, TheWindowIsARingOfTripPeriodsThatNeverGrows)
{
	RateWindow w(3);
	EXPECT_EQ(w.capacity(), 3u);
	EXPECT_FALSE(w.full());
	for (uint64_t i = 1; i <= 1000; i++) {
		w.push({0.5, i, i});
		EXPECT_LE(w.periods(), 3u);
		EXPECT_EQ(w.capacity(), 3u);
	}
	EXPECT_TRUE(w.full());
	// The last three: 998 + 999 + 1000 frames over 1.5 s.
	EXPECT_DOUBLE_EQ(w.seconds(), 1.5);
	EXPECT_DOUBLE_EQ(w.incoming_pps(), 2997 / 1.5);
	w.clear();
	EXPECT_EQ(w.periods(), 0u);
	EXPECT_EQ(w.incoming_pps(), 0);
	EXPECT_EQ(AutoPolicy(shape_config(7)).config().trip_periods, 7u);
}

} // namespace
} // namespace sluice
