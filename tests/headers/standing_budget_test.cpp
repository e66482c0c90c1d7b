// The budgets beside standing with a fake clock: bucket.h's one-bucket admit
// (the standing bucket, the newcomer budget), what a grant does to a way's
// bucket and record (standing.h), the standing bucket's lapse with its
// entry, and observed standing's candidates.
#include "bpf/bucket.h"
#include "bpf/sluice_abi.h"
#include "bpf/standing.h"
#include "fake_clock.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using sluice::unit::at;
using sluice::unit::kSecond;

constexpr __u32 kLapse = 3600; // ticks
constexpr __u64 kCost = 1000;  // ns per token: 1e6 per second
constexpr __u64 kBurst = 10;
constexpr __u64 kTick = 1ull << SLUICE_STANDING_TICK_SHIFT;

__u32 stamp_at(__u64 ns)
{
	return sluice_standing_stamp(at(ns));
}

TEST(OneBucket, AFullBucketAdmitsItsBurstThenRefillsAtItsRate)
{
	__u64 e = 0; // full
	__u64 now = at(5 * kSecond);
	int admitted = 0;
	while (sluice_admit1(&e, now, kCost, kBurst * kCost))
		admitted++;
	EXPECT_EQ(admitted, int(kBurst));
	EXPECT_EQ(sluice_tokens(e, now, kCost, kBurst), 0u);
	EXPECT_FALSE(sluice_admit1(&e, now + kCost - 1, kCost, kBurst * kCost)) << "not a whole token yet";
	EXPECT_TRUE(sluice_admit1(&e, now + kCost, kCost, kBurst * kCost));
	EXPECT_EQ(sluice_tokens(e, now + 3 * kCost, kCost, kBurst), 2u) << "the remainder is carried exactly";
}

TEST(OneBucket, NoCostIsNoBudgetNeverAFreeOne)
{
	__u64 e = 0;
	EXPECT_EQ(sluice_take1(e, at(kSecond), 0, 0), 0u);
	EXPECT_FALSE(sluice_admit1(&e, at(kSecond), 0, 5 * kCost));
	EXPECT_EQ(e, 0u) << "a refused admission writes nothing";
}

TEST(OneBucket, TakeNeverReturnsZeroForAnAdmission)
{
	// 0 means "refused"; the earliest admission possible still gives a
	// biased, non-zero empty_at.
	EXPECT_NE(sluice_take1(0, at(0), kCost, kBurst * kCost), 0u);
	EXPECT_EQ(sluice_take1(at(10), at(5), kCost, kBurst * kCost), 0u) << "a clock that goes back: empty";
}

TEST(StandingRecord, ANewSourceGetsAFullBucketAndItsReasonAndTick)
{
	sluice_standing_set set{};
	__u32 t = stamp_at(1000 * kSecond);
	set.empty_at[0] = at(999 * kSecond); // a previous owner's spent bucket
	set.record[0] = sluice_standing_record(SLUICE_BY_UDP, 1);
	int w = sluice_standing_grant(&set, 42, t, kLapse, SLUICE_BY_ACCEPTED);
	ASSERT_EQ(w, 0);
	EXPECT_EQ(set.empty_at[0], 0u) << "full";
	EXPECT_EQ(sluice_standing_record_reason(set.record[0]), __u32(SLUICE_BY_ACCEPTED));
	EXPECT_EQ(sluice_standing_record_age(set.record[0], t + 7), 7u);
}

TEST(StandingRecord, ARefreshKeepsTheRecordAndTheBucket)
{
	sluice_standing_set set{};
	__u32 t = stamp_at(1000 * kSecond);
	int w = sluice_standing_grant(&set, 42, t, kLapse, SLUICE_BY_CONNECTED);
	set.empty_at[w] = at(1000 * kSecond); // spent
	int again = sluice_standing_grant(&set, 42, t + 100, kLapse, SLUICE_BY_UDP);
	EXPECT_EQ(again, w);
	EXPECT_EQ(set.empty_at[w], at(1000 * kSecond)) << "a new connection refills nothing";
	EXPECT_EQ(sluice_standing_record_reason(set.record[w]), __u32(SLUICE_BY_CONNECTED)) << "the first grant's reason";
	EXPECT_EQ(sluice_standing_record_age(set.record[w], t + 100), 100u) << "since the first grant";
	EXPECT_EQ(sluice_standing_age(set.way[w], t + 100), 0u) << "but stamped now";
}

TEST(StandingRecord, ASourceWhoseEntryLapsedStartsAfresh)
{
	sluice_standing_set set{};
	__u32 t = stamp_at(1000 * kSecond);
	int w = sluice_standing_grant(&set, 42, t, kLapse, SLUICE_BY_CONNECTED);
	set.empty_at[w] = at(1000 * kSecond);
	__u32 later = t + kLapse + 1; // lapsed
	EXPECT_EQ(sluice_standing_find(&set, 42, later, kLapse), -1);
	EXPECT_EQ(sluice_standing_grant(&set, 42, later, kLapse, SLUICE_BY_EXISTING), w);
	EXPECT_EQ(set.empty_at[w], 0u);
	EXPECT_EQ(sluice_standing_record_reason(set.record[w]), __u32(SLUICE_BY_EXISTING));
	EXPECT_EQ(sluice_standing_record_age(set.record[w], later), 0u);
}

TEST(StandingRecord, TheStandingBucketGoesWithItsEntry)
{
	// The bucket is only ever read through a live entry: once the entry
	// lapses the source has no second bucket, whatever the bucket holds.
	sluice_standing_set set{};
	__u64 t0 = 1000 * kSecond;
	int w = sluice_standing_grant(&set, 42, stamp_at(t0), kLapse, SLUICE_BY_CONNECTED);
	EXPECT_TRUE(sluice_admit1(&set.empty_at[w], at(t0), kCost, kBurst * kCost));
	__u64 lapsed = t0 + (kLapse + 1) * kTick;
	EXPECT_EQ(sluice_standing_find(&set, 42, stamp_at(lapsed), kLapse), -1);
	EXPECT_EQ(sluice_tokens(set.empty_at[w], at(lapsed), kCost, kBurst), kBurst) << "full, and unreachable";
}

TEST(StandingRecord, TheRecordTickWrapsAt2To28)
{
	__u32 rec = sluice_standing_record(SLUICE_BY_OBSERVED, 0x0ffffff0u);
	EXPECT_EQ(sluice_standing_record_reason(rec), __u32(SLUICE_BY_OBSERVED));
	EXPECT_EQ(sluice_standing_record_age(rec, 0x10000010u), 0x20u);
}

// Observed standing's candidates.
struct Observe {
	sluice_observed_set set{};
	__u32 periods;
	// One admitted frame of fp at stamp t, as the program handles it.
	bool frame(__u32 fp, __u32 t)
	{
		if (sluice_observed_seen_now(&set, fp, t))
			return false;
		return sluice_observed_count(&set, fp, t, kLapse, periods);
	}
};

TEST(Observed, KDistinctTicksEarnStandingAndEmptyTheCandidate)
{
	Observe o{.periods = 3};
	__u32 t = stamp_at(0);
	EXPECT_FALSE(o.frame(7, t));
	for (int i = 0; i < 100; i++)
		EXPECT_FALSE(o.frame(7, t)) << "one tick counts once, however many frames";
	EXPECT_FALSE(o.frame(7, t + 5));
	EXPECT_TRUE(o.frame(7, t + 9)) << "the third distinct tick";
	for (__u64 e : o.set.way)
		EXPECT_EQ(e, 0u) << "the candidate is emptied when it earns standing";
}

TEST(Observed, OnePeriodEarnsItAtTheFirstFrame)
{
	Observe o{.periods = 1};
	EXPECT_TRUE(o.frame(7, stamp_at(0)));
}

TEST(Observed, ACandidateNotSeenForTheLapseTimeStartsAgain)
{
	Observe o{.periods = 2};
	__u32 t = stamp_at(0);
	EXPECT_FALSE(o.frame(7, t));
	EXPECT_FALSE(o.frame(7, t + kLapse + 1)) << "counted from 1 again";
	EXPECT_TRUE(o.frame(7, t + kLapse + 2));
}

TEST(Observed, AFullSetReusesLapsedWaysThenTheOneSeenLongestAgo)
{
	Observe o{.periods = 2};
	__u32 t = stamp_at(0);
	for (__u32 fp = 1; fp <= SLUICE_STANDING_WAYS; fp++)
		EXPECT_FALSE(o.frame(fp, t + fp)); // fp 1 the oldest
	EXPECT_FALSE(o.frame(100, t + 20));
	EXPECT_EQ(sluice_observed_way_of(&o.set, 1), -1) << "the one seen longest ago gave way";
	EXPECT_GE(sluice_observed_way_of(&o.set, 100), 0);
	EXPECT_TRUE(o.frame(100, t + 21));
	// Later, all but fp 8 lapse; fp 8 is kept, a lapsed way is reused.
	__u32 late = t + kLapse + 7;
	EXPECT_TRUE(o.frame(8, late)) << "fp 8 was seen at t + 8, within the lapse time: its second tick";
	EXPECT_FALSE(o.frame(200, late));
	EXPECT_GE(sluice_observed_way_of(&o.set, 200), 0);
}

TEST(Observed, TheEntryFieldsRoundTrip)
{
	__u64 e = sluice_observed_entry(0xabcdef01u, 0x12345678u, 9);
	EXPECT_EQ(sluice_standing_entry_fp(e), 0xabcdef01u);
	EXPECT_EQ(sluice_observed_count_of(e), 9u);
	EXPECT_EQ(sluice_observed_age(e, 0x12345678u), 0u);
	EXPECT_EQ(sluice_observed_age(e, 0x12345679u), 1u);
	EXPECT_EQ(sluice_observed_age(e, 0x13000000u + 0x345678u), 0u) << "ticks modulo 2^24";
}

} // namespace
