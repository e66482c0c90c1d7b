// logic/valve: the standing valve driven by made-up counter series, one sample
// per period, its moves applied the way the daemon applies them.
#include "logic/valve.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace sluice {
namespace {

struct Driver {
	// Capacity 1000 pps: the valve closes over 2000 (kValveFactor x it).
	explicit Driver(BreakerState initial)
		: valve({.capacity_pps = 1000, .clear_pps = 500, .trip_periods = 3}), state(initial)
	{
	}

	Valve valve;
	BreakerState state;
	bool closed = false;
	bool shared = false; // a standing share in force (the governor's level)
	double now = 500;
	uint64_t standing = 7'000'000, dropped = 3'000; // cumulative, not from 0
	int closes = 0, opens = 0;
	ValveDecision last;

	// One period at these rates, then a sample; the decision is applied.
	ValveDecision period_at(uint64_t standing_pps, uint64_t dropped_pps)
	{
		now += 1;
		standing += standing_pps;
		dropped += dropped_pps;
		last = valve.step({now, standing, dropped, state, closed, shared});
		if (last.close) {
			closed = *last.close;
			(closed ? closes : opens)++;
		}
		return last;
	}
};

TEST(Valve, ClosesAfterTripPeriodsOfStandingOverTwiceTheCapacityWhileShedding)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0); // the first sample: no rate yet
	EXPECT_FALSE(d.period_at(5000, 0).close);
	EXPECT_FALSE(d.period_at(5000, 0).close);
	auto dec = d.period_at(5000, 0);
	ASSERT_TRUE(dec.close);
	EXPECT_TRUE(*dec.close);
	EXPECT_DOUBLE_EQ(dec.standing_pps, 5000);
	EXPECT_EQ(dec.reason, "standing 5000 pps > 2 x capacity 1000 pps for 3 periods");
	EXPECT_EQ(d.closes, 1);
}

// A standing flood's onset: the first period runs before any share (the
// sources at their own rates), the next one with the governor's first level
// landing somewhere in it. Neither is the share failing: the streak starts
// over after the onset, and only trip_periods periods under the share close
// the valve.
TEST(Valve, ThePeriodTheShareCameIntoForceEndsAStreak)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	EXPECT_FALSE(d.period_at(27000, 0).close); // no share yet: 1
	EXPECT_FALSE(d.period_at(27000, 0).close); // 2
	d.shared = true;
	EXPECT_FALSE(d.period_at(9000, 0).close) << "the onset's period: the streak ends, not 3";
	EXPECT_FALSE(d.period_at(1100, 0).close) << "held to about the capacity";
	EXPECT_FALSE(d.period_at(1100, 0).close);
	EXPECT_EQ(d.closes, 0);
	// The share failing (more sources than the capacity over the floor):
	// trip_periods periods with the share in force close it.
	EXPECT_FALSE(d.period_at(4400, 0).close);
	EXPECT_FALSE(d.period_at(4400, 0).close);
	auto dec = d.period_at(4400, 0);
	ASSERT_TRUE(dec.close);
	EXPECT_TRUE(*dec.close);
	EXPECT_EQ(dec.reason, "standing 4400 pps > 2 x capacity 1000 pps for 3 periods");
}

// The last resort does not rest on the governor: standing over twice the
// capacity with no share ever written (the table's scan failing, say) still
// closes it, and a share lifted and put back is an onset again.
TEST(Valve, WithoutAShareItStillClosesAndAShareBackIsAnOnsetAgain)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	d.period_at(5000, 0);
	d.period_at(5000, 0);
	ASSERT_TRUE(d.period_at(5000, 0).close);
	EXPECT_TRUE(d.closed);
	for (int i = 0; i < 3; i++)
		d.period_at(0, 100); // drop_valve under clear-pps
	ASSERT_FALSE(d.closed);
	d.shared = true;
	d.period_at(5000, 0); // onset
	d.period_at(5000, 0);
	d.period_at(5000, 0);
	EXPECT_FALSE(d.closed) << "two periods under the share, not three";
	d.period_at(5000, 0);
	EXPECT_TRUE(d.closed);
	EXPECT_EQ(d.closes, 2);
}

// The fair share holds the standing sum to the capacity: a set of sources
// under their shares, overshooting it by half, is no failure of the share.
TEST(Valve, AStandingRateAtOneAndAHalfTimesTheCapacityNeverClosesIt)
{
	static_assert(kValveFactor == 2);
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	for (int i = 0; i < 50; i++)
		EXPECT_FALSE(d.period_at(1500, 0).close) << "period " << i;
	d.period_at(2000, 0); // at 2 x capacity is not over it
	d.period_at(2000, 0);
	d.period_at(2000, 0);
	EXPECT_EQ(d.closes, 0);
	EXPECT_FALSE(d.closed);
}

TEST(Valve, AStandingRateAtTwoAndAHalfTimesTheCapacityClosesItAfterTripPeriods)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	EXPECT_FALSE(d.period_at(2500, 0).close);
	EXPECT_FALSE(d.period_at(2500, 0).close);
	auto dec = d.period_at(2500, 0);
	ASSERT_TRUE(dec.close);
	EXPECT_TRUE(*dec.close);
	EXPECT_EQ(dec.reason, "standing 2500 pps > 2 x capacity 1000 pps for 3 periods");
	EXPECT_EQ(d.closes, 1);
}

TEST(Valve, AStreakBrokenByOnePeriodStartsAgain)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	d.period_at(5000, 0);
	d.period_at(5000, 0);
	d.period_at(2000, 0); // at 2 x capacity is not over it
	d.period_at(5000, 0);
	d.period_at(5000, 0);
	EXPECT_EQ(d.closes, 0);
	d.period_at(5000, 0);
	EXPECT_EQ(d.closes, 1);
}

TEST(Valve, OpensAfterTripPeriodsOfDropValveUnderClearPps)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	for (int i = 0; i < 3; i++)
		d.period_at(5000, 0);
	ASSERT_TRUE(d.closed);
	// Closed: standing sources are now dropped as drop_valve.
	d.period_at(0, 4000);
	d.period_at(0, 400);
	d.period_at(0, 400);
	EXPECT_TRUE(d.closed);
	auto dec = d.period_at(0, 100);
	ASSERT_TRUE(dec.close);
	EXPECT_FALSE(*dec.close);
	EXPECT_EQ(dec.reason, "drop_valve 100 pps < clear-pps 500 for 3 periods");
	EXPECT_FALSE(d.closed);
	EXPECT_EQ(d.opens, 1);
	// Open again, it takes a fresh streak to close.
	d.period_at(5000, 0);
	d.period_at(5000, 0);
	EXPECT_FALSE(d.closed);
	d.period_at(5000, 0);
	EXPECT_TRUE(d.closed);
}

TEST(Valve, OpensAtOnceOnLeavingShedding)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	for (int i = 0; i < 3; i++)
		d.period_at(5000, 0);
	ASSERT_TRUE(d.closed);
	d.state = BreakerState::recovering;
	auto dec = d.period_at(0, 90000); // however much it still drops
	ASSERT_TRUE(dec.close);
	EXPECT_FALSE(*dec.close);
	EXPECT_EQ(dec.reason, "the breaker left shedding (recovering)");
	EXPECT_FALSE(d.closed);
}

TEST(Valve, NeverClosesWhileServingOrRecovering)
{
	for (BreakerState s : {BreakerState::serving, BreakerState::recovering}) {
		Driver d(s);
		for (int i = 0; i < 20; i++)
			EXPECT_FALSE(d.period_at(1'000'000, 0).close) << to_string(s);
		EXPECT_EQ(d.closes, 0);
	}
}

TEST(Valve, AStreakDoesNotSpanABreakerMove)
{
	Driver d(BreakerState::serving);
	d.period_at(0, 0);
	d.period_at(5000, 0);
	d.period_at(5000, 0); // serving: these do not count
	d.state = BreakerState::shedding;
	d.period_at(5000, 0);
	d.period_at(5000, 0);
	EXPECT_FALSE(d.closed);
	d.period_at(5000, 0);
	EXPECT_TRUE(d.closed);
}

TEST(Valve, RestartedCountersGiveNoRate)
{
	Driver d(BreakerState::shedding);
	d.period_at(0, 0);
	d.period_at(5000, 0);
	d.period_at(5000, 0);
	d.standing = 0; // the program was reloaded
	auto dec = d.period_at(5000, 0);
	EXPECT_FALSE(dec.close);
	EXPECT_DOUBLE_EQ(dec.standing_pps, 0);
	EXPECT_FALSE(d.closed);
}

} // namespace
} // namespace sluice
