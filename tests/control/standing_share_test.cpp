// logic/standing_share: the water-filling level over made-up demands, and the
// unresponsive-source tracker driven by synthetic period sequences.
#include "logic/standing_share.h"

#include "bpf/sluice_abi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace sluice {
namespace {

constexpr double kCeiling = 1'000'000, kFloor = 1;

double level(std::vector<double> demands, double capacity, double ceiling = kCeiling, double floor = kFloor)
{
	return fair_share_level(demands, capacity, ceiling, floor);
}

// What the sources get at level L: each min(d, L).
double served(const std::vector<double> &demands, double l)
{
	double sum = 0;
	for (double d : demands)
		sum += std::min(d, l);
	return sum;
}

// --- fair_share_level ---

TEST(FairShareLevel, TheLightKeepAllOfTheirsAndTheHeavyShareTheRestEqually)
{
	std::vector<double> demands{10, 20, 1000, 2000, 5000};
	double l = level(demands, 330);
	EXPECT_DOUBLE_EQ(l, 100); // 330 - 10 - 20 = 300, over the three heavy
	EXPECT_DOUBLE_EQ(std::min(10.0, l), 10);
	EXPECT_DOUBLE_EQ(std::min(20.0, l), 20);
	EXPECT_DOUBLE_EQ(served(demands, l), 330);
}

TEST(FairShareLevel, NoContentionGivesTheCeiling)
{
	EXPECT_DOUBLE_EQ(level({10, 20, 30}, 100), kCeiling);
	EXPECT_DOUBLE_EQ(level({10, 20, 70}, 100), kCeiling); // the sum at the capacity is no contention
	EXPECT_DOUBLE_EQ(level({10, 20, 70.5}, 100), 70);
}

TEST(FairShareLevel, EmptyGivesTheCeiling)
{
	EXPECT_DOUBLE_EQ(level({}, 100), kCeiling);
	EXPECT_DOUBLE_EQ(level({}, 0), kCeiling);
}

TEST(FairShareLevel, OneSourceGetsTheCapacity)
{
	EXPECT_DOUBLE_EQ(level({500}, 100), 100);
	EXPECT_DOUBLE_EQ(level({50}, 100), kCeiling);
}

TEST(FairShareLevel, AllEqualShareEqually)
{
	EXPECT_DOUBLE_EQ(level({100, 100, 100, 100}, 200), 50);
	std::vector<double> many(1000, 7);
	EXPECT_DOUBLE_EQ(level(many, 3500), 3.5);
}

TEST(FairShareLevel, ZerosKeepTheirNothing)
{
	EXPECT_DOUBLE_EQ(level({0, 0, 0, 300}, 100), 100);
	EXPECT_DOUBLE_EQ(level({0, 0, 0}, 0), kCeiling); // nothing offered: no contention
	EXPECT_DOUBLE_EQ(level({0, 0, 0}, 100), kCeiling);
}

TEST(FairShareLevel, NoCapacityGivesTheFloor)
{
	EXPECT_DOUBLE_EQ(level({5, 5}, 0), kFloor);
	EXPECT_DOUBLE_EQ(level({5, 5}, 0, kCeiling, 0), 0);
	EXPECT_DOUBLE_EQ(level({5, 5}, -10), kFloor);
	EXPECT_DOUBLE_EQ(level({5, 5}, std::numeric_limits<double>::quiet_NaN()), kFloor);
}

TEST(FairShareLevel, ClampedToTheCeiling)
{
	// 1490 over the two heavy would be 745 each; the ceiling is 500.
	EXPECT_DOUBLE_EQ(level({10, 1000, 1000}, 1500, 500), 500);
}

TEST(FairShareLevel, ClampedToTheFloor)
{
	// More sources than capacity / floor: the level would be 1, the floor is 5
	// (and their sum is then 5x the capacity: the valve's business).
	std::vector<double> many(1000, 100);
	EXPECT_DOUBLE_EQ(level(many, 1000, kCeiling, 5), 5);
	EXPECT_DOUBLE_EQ(level(many, 1000, kCeiling, 0.5), 1);
}

TEST(FairShareLevel, TheCeilingWinsOverAFloorAboveIt)
{
	EXPECT_DOUBLE_EQ(level({1000, 1000}, 10, 50, 100), 50);
}

TEST(FairShareLevel, NegativeAndNaNDemandsOfferNothing)
{
	double nan = std::numeric_limits<double>::quiet_NaN();
	EXPECT_DOUBLE_EQ(level({-50, nan, 300, 300}, 100), 50);
	EXPECT_DOUBLE_EQ(level({-50, nan, 30}, 100), kCeiling);
}

TEST(FairShareLevel, SortsTheScratchInPlace)
{
	std::vector<double> scratch{300, 5, 100, 40};
	EXPECT_DOUBLE_EQ(fair_share_level(scratch, 200, kCeiling, kFloor), 77.5); // (200 - 5 - 40) / 2
	EXPECT_TRUE(std::is_sorted(scratch.begin(), scratch.end()));
	std::span<double> part(scratch.data(), 2); // a part of a larger buffer
	scratch[0] = 90, scratch[1] = 10, scratch[2] = scratch[3] = 500;
	EXPECT_DOUBLE_EQ(fair_share_level(part, 50, kCeiling, kFloor), 40);
	EXPECT_EQ(scratch, (std::vector<double>{10, 90, 500, 500}));
}

TEST(FairShareLevel, TheServedSumIsTheCapacityForRandomDemands)
{
	std::mt19937_64 rng(42);
	std::lognormal_distribution<double> pps(6, 2); // a few pps to a few 100k
	for (int round = 0; round < 200; round++) {
		std::vector<double> demands(1 + rng() % 300);
		double sum = 0;
		for (double &d : demands)
			sum += d = pps(rng);
		double capacity = sum * std::uniform_real_distribution<double>(0.01, 0.99)(rng);
		double l = level(demands, capacity, std::numeric_limits<double>::infinity(), 0);
		ASSERT_GT(l, 0);
		EXPECT_NEAR(served(demands, l), capacity, capacity * 1e-9) << "round " << round;
		// Those under the level keep all of theirs; some source is at it.
		EXPECT_TRUE(std::any_of(demands.begin(), demands.end(), [&](double d) { return d >= l; }));
	}
}

// --- UnresponsiveTracker ---

constexpr size_t kWays = 64 * SLUICE_STANDING_WAYS;
constexpr size_t kWay = 5 * SLUICE_STANDING_WAYS + 3; // set 5, way 3
constexpr uint32_t kFp = 0xc0ffee;
constexpr double kShare = 100;

// A period in which kWay alone is observed.
bool next_period(UnresponsiveTracker &t, uint32_t fp, double offered_pps, double share_pps)
{
	t.begin_period();
	return t.observe(kWay, fp, offered_pps, share_pps);
}

// --- tiered_share_levels, TenureLine ---

TieredLevels tiers(std::vector<double> tenured, std::vector<double> newer, double capacity)
{
	return tiered_share_levels(tenured, newer, capacity, kCeiling, kFloor);
}

TEST(TieredShareLevels, TheTenuredKeepTheirRateWhileAThousandNewerShareTheRest)
{
	// figure 12's shape: one regular at 60 pps with standing from before,
	// 1,000 bots at 150 pps granted just before their flood, a capacity of
	// 10,000. One level for all would give each 9.99 pps.
	std::vector<double> all(1000, 150.0);
	all.push_back(60);
	EXPECT_LT(level(all, 10000), 10);
	auto t = tiers({60}, std::vector<double>(1000, 150.0), 10000);
	EXPECT_DOUBLE_EQ(t.tenured, kCeiling); // the regular keeps all of its 60
	EXPECT_DOUBLE_EQ(t.newer, 9.94);       // (10,000 - 60) / 1,000
	EXPECT_NEAR(60 + served(std::vector<double>(1000, 150.0), t.newer), 10000, 1e-6);
}

TEST(TieredShareLevels, TenuredOverTheCapacityLeaveTheNewerTheFloor)
{
	auto t = tiers({5000, 5000, 100}, {10, 20}, 6000);
	EXPECT_DOUBLE_EQ(t.tenured, 2950); // 6,000 - 100 over the two heavy
	EXPECT_DOUBLE_EQ(t.newer, kFloor);
	// exactly at the capacity: no level for the tenured, nothing left either
	t = tiers({4000, 2000}, {10}, 6000);
	EXPECT_DOUBLE_EQ(t.tenured, kCeiling);
	EXPECT_DOUBLE_EQ(t.newer, kFloor);
}

TEST(TieredShareLevels, NoTenuredIsOneLevelForTheNewer)
{
	std::vector<double> newer{10, 20, 1000, 2000, 5000};
	auto t = tiers({}, newer, 330);
	EXPECT_DOUBLE_EQ(t.tenured, kCeiling);
	EXPECT_DOUBLE_EQ(t.newer, level(newer, 330));
}

TEST(TieredShareLevels, NoContentionGivesBothTheCeiling)
{
	auto t = tiers({10, 20}, {30, 40}, 100);
	EXPECT_DOUBLE_EQ(t.tenured, kCeiling);
	EXPECT_DOUBLE_EQ(t.newer, kCeiling);
}

TEST(TieredShareLevels, TheServedSumIsTheCapacityForRandomDemands)
{
	std::mt19937_64 rng(27);
	std::uniform_real_distribution<double> d(0, 1000);
	for (int round = 0; round < 200; round++) {
		std::vector<double> tenured(rng() % 20), newer(1 + rng() % 50);
		for (double &x : tenured)
			x = d(rng);
		for (double &x : newer)
			x = d(rng);
		const double capacity = d(rng) * 10;
		const std::vector<double> t0 = tenured, n0 = newer;
		auto t = tiered_share_levels(tenured, newer, capacity, kCeiling, 0);
		const double total = served(t0, t.tenured) + served(n0, t.newer);
		double asked = 0;
		for (double x : t0)
			asked += x;
		for (double x : n0)
			asked += x;
		EXPECT_NEAR(total, std::min(capacity, asked), 1e-6 * (1 + capacity)) << round;
		// a newer source never gets more than a tenured one held to a level
		if (t.tenured < kCeiling)
			EXPECT_LE(t.newer, t.tenured) << round;
	}
}

TEST(TenureLine, DrawnTenureBeforeTheContentionAndHeldThroughAPauseShorterThanTheTenure)
{
	TenureLine line(300);
	EXPECT_FALSE(line.observe(100, false));
	EXPECT_FALSE(line.held());
	EXPECT_TRUE(line.observe(1000, true)); // drawn now
	EXPECT_TRUE(line.held());
	EXPECT_DOUBLE_EQ(line.line_s(), 700);
	EXPECT_FALSE(line.observe(1001, true)); // held, not drawn again
	EXPECT_FALSE(line.observe(1200, false));
	EXPECT_TRUE(line.held());                // a pause of 199 s
	EXPECT_FALSE(line.observe(1250, true));  // the flood is back: the same line
	EXPECT_DOUBLE_EQ(line.line_s(), 700);
	EXPECT_FALSE(line.observe(1549, false));
	EXPECT_TRUE(line.held());
	EXPECT_FALSE(line.observe(1550, false)); // 300 s without contention: released
	EXPECT_FALSE(line.held());
	EXPECT_TRUE(line.observe(2000, true)); // a new contention: a new line
	EXPECT_DOUBLE_EQ(line.line_s(), 1700);
}

TEST(TenureLine, ContentionAfterAGapLongerThanTheTenureDrawsANewLine)
{
	// the daemon skips the periods in which nothing reached a standing
	// bucket: the next call may come long after the last
	TenureLine line(60);
	EXPECT_TRUE(line.observe(100, true));
	EXPECT_TRUE(line.observe(500, true));
	EXPECT_DOUBLE_EQ(line.line_s(), 440);
	EXPECT_FALSE(line.observe(559, true)); // 59 s since: the same line
	EXPECT_DOUBLE_EQ(line.line_s(), 440);
}

TEST(TenureLine, ATenureOfZeroNeverDrawsALine)
{
	TenureLine line(0);
	EXPECT_FALSE(line.observe(1000, true));
	EXPECT_FALSE(line.held());
}

TEST(UnresponsiveTracker, AFloodIsRevokedAtExactlyItsOverPeriodsThPeriod)
{
	RevocationConfig cfg; // 4 x share, 3 periods
	UnresponsiveTracker t(cfg, kWays);
	EXPECT_EQ(t.ways(), kWays);
	for (uint32_t i = 1; i <= 10; i++) {
		t.begin_period();
		bool revoke = t.observe(kWay, kFp, 3012, kShare);
		EXPECT_EQ(revoke, i >= 3) << "period " << i;
		EXPECT_EQ(t.streak(kWay), std::min(i, 3u));
		if (revoke)
			break;
	}
	// Revoked and forgotten: a fresh streak.
	t.forget(kWay);
	EXPECT_EQ(t.streak(kWay), 0u);
	t.begin_period();
	EXPECT_FALSE(t.observe(kWay, kFp, 3012, kShare));
	t.begin_period();
	EXPECT_FALSE(t.observe(kWay, kFp, 3012, kShare));
	t.begin_period();
	EXPECT_TRUE(t.observe(kWay, kFp, 3012, kShare));
}

TEST(UnresponsiveTracker, UntilForgottenItStaysRevokedWhileOver)
{
	UnresponsiveTracker t({}, kWays);
	for (int i = 0; i < 3; i++)
		next_period(t, kFp, 1000, kShare);
	t.begin_period();
	EXPECT_TRUE(t.observe(kWay, kFp, 1000, kShare));
	t.begin_period();
	EXPECT_FALSE(t.observe(kWay, kFp, 10, kShare));
}

TEST(UnresponsiveTracker, OverIsStrictlyMoreThanTheFactorTimesTheShare)
{
	UnresponsiveTracker t({}, kWays);
	for (int i = 0; i < 10; i++) {
		t.begin_period();
		EXPECT_FALSE(t.observe(kWay, kFp, 4 * kShare, kShare));
	}
}

TEST(UnresponsiveTracker, OnePeriodUnderRestartsTheStreak)
{
	UnresponsiveTracker t({}, kWays);
	double series[] = {1000, 1000, 300, 1000, 1000};
	for (double pps : series) {
		t.begin_period();
		EXPECT_FALSE(t.observe(kWay, kFp, pps, kShare)) << pps;
	}
	t.begin_period();
	EXPECT_TRUE(t.observe(kWay, kFp, 1000, kShare));
}

TEST(UnresponsiveTracker, APeriodNotObservedRestartsTheStreak)
{
	UnresponsiveTracker t({}, kWays);
	EXPECT_FALSE(next_period(t, kFp, 1000, kShare));
	EXPECT_FALSE(next_period(t, kFp, 1000, kShare));
	t.begin_period(); // not observed (it sent nothing, or the daemon skipped it)
	EXPECT_EQ(t.streak(kWay), 2u); // the last period's, until it is observed again
	EXPECT_FALSE(next_period(t, kFp, 1000, kShare));
	EXPECT_EQ(t.streak(kWay), 1u);
	EXPECT_FALSE(next_period(t, kFp, 1000, kShare));
	EXPECT_TRUE(next_period(t, kFp, 1000, kShare));
}

TEST(UnresponsiveTracker, ATcpLikeSourceThatHalvesWhenOverIsNeverRevoked)
{
	UnresponsiveTracker t({}, kWays);
	// Slow start at its most aggressive: it doubles each period it is
	// under its share, halves each period after it was over (the loss).
	double rate = 1;
	for (int i = 0; i < 10000; i++) {
		t.begin_period();
		ASSERT_FALSE(t.observe(kWay, kFp, rate, kShare)) << "period " << i << " at " << rate;
		rate = rate > kShare ? rate / 2 : rate * 2;
	}
	// Congestion avoidance: a tenth of its share more each period, half
	// after one over it; and a burst far over for one period (a queue emptied
	// at once), after which it is back under within the period's round trips.
	for (int i = 0; i < 1000; i++) {
		t.begin_period();
		ASSERT_FALSE(t.observe(kWay, kFp, rate, kShare)) << "period " << i << " at " << rate;
		rate = rate > kShare ? rate / 2 : rate + kShare / 10;
	}
	double burst[] = {5000, 90, 100, 110, 55, 5000, 60};
	for (double pps : burst) {
		t.begin_period();
		EXPECT_FALSE(t.observe(kWay, kFp, pps, kShare)) << pps;
	}
}

TEST(UnresponsiveTracker, ANewFingerprintInTheWayRestartsTheStreak)
{
	UnresponsiveTracker t({}, kWays);
	EXPECT_FALSE(next_period(t, kFp, 1000, kShare));
	EXPECT_FALSE(next_period(t, kFp, 1000, kShare));
	EXPECT_FALSE(next_period(t, kFp + 1, 1000, kShare)); // another source took the way
	EXPECT_FALSE(next_period(t, kFp + 1, 1000, kShare));
	EXPECT_TRUE(next_period(t, kFp + 1, 1000, kShare));
}

TEST(UnresponsiveTracker, WaysAreIndependent)
{
	UnresponsiveTracker t({}, kWays);
	size_t other = kWay + 1; // same set, next way
	for (int i = 1; i <= 3; i++) {
		t.begin_period();
		EXPECT_EQ(t.observe(kWay, kFp, 1000, kShare), i == 3);
		EXPECT_FALSE(t.observe(other, kFp, 10, kShare)); // under, same fingerprint
		EXPECT_EQ(t.observe(kWays - 1, 7, 1000, kShare), i == 3); // the table's last way
	}
	EXPECT_EQ(t.streak(other), 0u);
	EXPECT_EQ(t.streak(kWays - 1), 3u);
}

TEST(UnresponsiveTracker, ASecondObservationInAPeriodReplacesTheFirst)
{
	UnresponsiveTracker t({}, kWays);
	next_period(t, kFp, 1000, kShare);
	next_period(t, kFp, 1000, kShare);
	t.begin_period();
	EXPECT_FALSE(t.observe(kWay, kFp, 10, kShare));
	EXPECT_TRUE(t.observe(kWay, kFp, 1000, kShare)); // the period's: over, the third
	EXPECT_FALSE(t.observe(kWay, kFp, 10, kShare));  // and back
	EXPECT_EQ(t.streak(kWay), 0u);
}

TEST(UnresponsiveTracker, TheShareItHadDecides)
{
	UnresponsiveTracker t({}, kWays);
	// The level moves with contention: 1000 pps is over 4 x 200 but not 4 x 300.
	EXPECT_FALSE(next_period(t, kFp, 1000, 200));
	EXPECT_FALSE(next_period(t, kFp, 1000, 200));
	EXPECT_FALSE(next_period(t, kFp, 1000, 300));
	// A share of 0 (a floor of 0): anything offered is over.
	UnresponsiveTracker z({.over_periods = 1}, 8);
	z.begin_period();
	EXPECT_TRUE(z.observe(0, kFp, 1, 0));
	EXPECT_FALSE(z.observe(1, kFp, 0, 0));
}

TEST(UnresponsiveTracker, OnePeriodAndCustomFactors)
{
	UnresponsiveTracker t({.over_factor = 1.5, .over_periods = 1}, 8);
	t.begin_period();
	EXPECT_TRUE(t.observe(0, kFp, 151, kShare));
	EXPECT_FALSE(t.observe(1, kFp, 150, kShare));
	UnresponsiveTracker slow({.over_periods = 64}, 8);
	for (int i = 1; i <= 64; i++) {
		slow.begin_period();
		EXPECT_EQ(slow.observe(0, kFp, 1000, kShare), i == 64) << i;
	}
}

TEST(UnresponsiveTracker, AWayOutOfRangeIsNeverRevoked)
{
	UnresponsiveTracker t({.over_periods = 1}, 8);
	t.begin_period();
	EXPECT_FALSE(t.observe(8, kFp, 1e9, kShare));
	EXPECT_EQ(t.streak(8), 0u);
	t.forget(8); // nothing to forget
	UnresponsiveTracker none({}, 0);
	none.begin_period();
	EXPECT_FALSE(none.observe(0, kFp, 1e9, kShare));
}

TEST(UnresponsiveTracker, NaNOfferedIsNotOver)
{
	UnresponsiveTracker t({.over_periods = 1}, 8);
	t.begin_period();
	EXPECT_FALSE(t.observe(0, kFp, std::numeric_limits<double>::quiet_NaN(), kShare));
}

// --- Penalties, validation, the log's reason ---

TEST(Revocation, PenaltyDoublesEachRepeatUpToTheCap)
{
	RevocationConfig c; // 60 s, at most 3600 s
	EXPECT_DOUBLE_EQ(penalty_s_for(0, c), 60);
	EXPECT_DOUBLE_EQ(penalty_s_for(1, c), 120);
	EXPECT_DOUBLE_EQ(penalty_s_for(2, c), 240);
	EXPECT_DOUBLE_EQ(penalty_s_for(5, c), 1920);
	EXPECT_DOUBLE_EQ(penalty_s_for(6, c), 3600); // 3840, capped
	EXPECT_DOUBLE_EQ(penalty_s_for(63, c), 3600);
	EXPECT_DOUBLE_EQ(penalty_s_for(64, c), 3600);
	EXPECT_DOUBLE_EQ(penalty_s_for(1100, c), 3600);
	EXPECT_DOUBLE_EQ(penalty_s_for(UINT32_MAX, c), 3600);
	c.penalty_s = c.penalty_max_s = 5;
	EXPECT_DOUBLE_EQ(penalty_s_for(0, c), 5);
	EXPECT_DOUBLE_EQ(penalty_s_for(3, c), 5);
}

void expect_invalid(const Status &s, const std::string &message)
{
	ASSERT_FALSE(s) << "expected: " << message;
	EXPECT_EQ(s.error().kind, ErrorKind::invalid);
	EXPECT_EQ(s.error().message, message);
}

TEST(Revocation, ValidationNamesTheOption)
{
	EXPECT_TRUE(validate_revocation({}));
	EXPECT_TRUE(validate_revocation({.over_factor = 1.01, .over_periods = 1, .penalty_s = 1, .penalty_max_s = 1}));
	EXPECT_TRUE(validate_revocation({.over_factor = 100, .over_periods = 64, .penalty_s = 604800, .penalty_max_s = 604800}));

	double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
	expect_invalid(validate_revocation({.over_factor = 1}), "--revoke-factor must be more than 1 (and finite), got 1");
	expect_invalid(validate_revocation({.over_factor = 0.5}),
		       "--revoke-factor must be more than 1 (and finite), got 0.5");
	expect_invalid(validate_revocation({.over_factor = inf}),
		       "--revoke-factor must be more than 1 (and finite), got inf");
	expect_invalid(validate_revocation({.over_factor = nan}),
		       "--revoke-factor must be more than 1 (and finite), got nan");
	expect_invalid(validate_revocation({.over_periods = 0}), "--revoke-periods must be 1..64, got 0");
	expect_invalid(validate_revocation({.over_periods = 65}), "--revoke-periods must be 1..64, got 65");
	expect_invalid(validate_revocation({.penalty_s = 0.5}),
		       "--revoke-penalty must be between 1 and 604800 seconds, got 0.5");
	expect_invalid(validate_revocation({.penalty_s = nan}),
		       "--revoke-penalty must be between 1 and 604800 seconds, got nan");
	expect_invalid(validate_revocation({.penalty_s = 60, .penalty_max_s = 30}),
		       "--revoke-penalty-max must be between --revoke-penalty (60) and 604800 seconds, got 30");
	expect_invalid(validate_revocation({.penalty_max_s = 700000}),
		       "--revoke-penalty-max must be between --revoke-penalty (60) and 604800 seconds, got 700000");
}

TEST(Revocation, TheReasonCarriesTheNumbers)
{
	EXPECT_EQ(revocation_reason(3012, 196, 4, 3, 60), "offered 3012 pps > 4 x share 196 pps for 3 periods; penalty 60 s");
	EXPECT_EQ(revocation_reason(3012.4, 195.6, 2.5, 5, 240),
		  "offered 3012 pps > 2.5 x share 196 pps for 5 periods; penalty 240 s");
	RevocationConfig c;
	EXPECT_EQ(revocation_reason(1e6, 1, c.over_factor, c.over_periods, penalty_s_for(9, c)),
		  "offered 1000000 pps > 4 x share 1 pps for 3 periods; penalty 3600 s");
}

} // namespace
} // namespace sluice
