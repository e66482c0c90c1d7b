// AutoPolicy driven by synthetic counter series: cumulative counters and fake
// monotonic times, one sample per control period, transitions applied the way
// the daemon applies them (state and state_since_s change when a move is made).
#include "logic/policy.h"

#include "bpf/sluice_abi.h"

#include <gtest/gtest.h>

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
	EXPECT_NE(r.reason.find("admitted 2000 pps > trip 1000 pps for 3 periods"), std::string::npos) << r.reason;
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

TEST(Policy, SpikeShorterThanTripPeriodsDoesNotTrip)
{
	Driver d(test_config());
	d.prime();
	for (int round = 0; round < 10; round++) {
		EXPECT_FALSE(d.period_at(50000, 50000).move);
		EXPECT_FALSE(d.period_at(50000, 50000).move);
		EXPECT_FALSE(d.period_at(100, 100).move) << "round " << round; // the streak breaks
	}
	EXPECT_EQ(d.state, BreakerState::serving);
	EXPECT_EQ(d.moves, 0);
	// The same spike held one period longer does trip.
	d.period_at(50000, 50000);
	d.period_at(50000, 50000);
	auto r = d.period_at(50000, 50000);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::shedding);
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

TEST(Policy, SheddingEndsTripPeriodsAfterIncomingFallsUnderClear)
{
	Driver d(test_config());
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
	// Under clear_pps: two periods are not enough, the third moves.
	EXPECT_FALSE(d.period_at(499, 0).move);
	EXPECT_FALSE(d.period_at(100, 0).move);
	EXPECT_EQ(d.state, BreakerState::shedding);
	auto r = d.period_at(100, 0);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::recovering);
}

TEST(Policy, SheddingUnderStreakIsBrokenByARise)
{
	Driver d(test_config());
	trip(d);
	for (int i = 0; i < 20; i++)
		d.period_at(1'000'000, 0);
	EXPECT_FALSE(d.period_at(10, 0).move);
	EXPECT_FALSE(d.period_at(10, 0).move);
	EXPECT_FALSE(d.period_at(5000, 0).move); // back up: streak broken
	EXPECT_FALSE(d.period_at(10, 0).move);
	EXPECT_FALSE(d.period_at(10, 0).move);
	EXPECT_EQ(d.state, BreakerState::shedding);
	EXPECT_TRUE(d.period_at(10, 0).move);
	EXPECT_EQ(d.state, BreakerState::recovering);
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

TEST(Policy, FloodBackDuringRecoveryRetripsAfterTripPeriods)
{
	auto cfg = test_config();
	Driver d(cfg, BreakerState::recovering);
	d.since = d.now;
	d.prime();
	d.period_at(100, 50);
	// Incoming above trip_pps; admitted stays low (the ramp holds it), so
	// only the incoming rate can be what re-trips.
	EXPECT_FALSE(d.period_at(50000, 200).move);
	EXPECT_FALSE(d.period_at(50000, 200).move);
	EXPECT_EQ(d.state, BreakerState::recovering);
	auto r = d.period_at(50000, 200);
	ASSERT_TRUE(r.move.has_value());
	EXPECT_EQ(*r.move, BreakerState::shedding);
	EXPECT_NE(r.reason.find("flood back during recovery"), std::string::npos) << r.reason;
}

TEST(Policy, ShortFloodDuringRecoveryDoesNotRetrip)
{
	Driver d(test_config(), BreakerState::recovering);
	d.since = d.now;
	d.prime();
	for (int i = 0; i < 5; i++) {
		EXPECT_FALSE(d.period_at(50000, 200).move);
		EXPECT_FALSE(d.period_at(50000, 200).move);
		EXPECT_FALSE(d.period_at(100, 100).move);
	}
	EXPECT_EQ(d.state, BreakerState::recovering);
}

TEST(Policy, StreaksDoNotSpanATransition)
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

TEST(Policy, ResetStreaksForgetsAPartialStreak)
{
	Driver d(test_config());
	d.prime();
	d.period_at(5000, 5000);
	d.period_at(5000, 5000);
	d.policy.reset_streaks();
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

} // namespace
} // namespace sluice
