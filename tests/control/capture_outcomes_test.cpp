// The capture's outcome masks and names (logic/outcomes.h), made from
// SLUICE_OUTCOME_TABLE, and the bounds limits.h checks them against.
#include "base/limits.h"
#include "logic/outcomes.h"

#include <gtest/gtest.h>

using namespace sluice;

TEST(CaptureOutcomes, NamesRoundTripThroughTheTable)
{
	for (uint32_t o = 0; o < SLUICE_OUTCOMES; o++)
		EXPECT_EQ(outcome_named(kOutcomeNames[o]), o);
	EXPECT_FALSE(outcome_named("drop_everything"));
	EXPECT_FALSE(outcome_named(""));
	EXPECT_EQ(outcome_list((1u << SLUICE_DROP_RATE) | (1u << SLUICE_PASSED)), "passed,drop_rate");
}

TEST(CaptureOutcomes, DefaultIsEveryDropAndMalformedNotPasses)
{
	uint32_t d = capture_dropped_mask();
	for (uint32_t o = 0; o < SLUICE_OUTCOMES; o++) {
		bool want = kOutcomeVerdicts[o] == Verdict::dropped || o == SLUICE_MALFORMED;
		EXPECT_EQ(bool(d & (1u << o)), want) << kOutcomeNames[o];
	}
	uint32_t a = capture_admitted_mask();
	EXPECT_TRUE(a & (1u << SLUICE_PASSED));
	EXPECT_TRUE(a & (1u << SLUICE_STANDING));
	EXPECT_FALSE(a & (1u << SLUICE_DROP_RATE));
	EXPECT_TRUE(check_capture_outcomes(d));
	EXPECT_TRUE(check_capture_outcomes(a | d));
}

TEST(CaptureOutcomes, BoundsRefuseWhatTheDataPlaneCannotDo)
{
	EXPECT_FALSE(check_capture_outcomes(0));
	EXPECT_FALSE(check_capture_outcomes(1u << SLUICE_NON_IP));
	EXPECT_FALSE(check_capture_outcomes(1u << SLUICE_WOULD_DROP));
	EXPECT_FALSE(check_capture_outcomes(1u << 31));
	EXPECT_TRUE(check_capture_snaplen(SLUICE_CAPTURE_SNAPLEN_MIN));
	EXPECT_TRUE(check_capture_snaplen(SLUICE_CAPTURE_SNAPLEN_MAX));
	EXPECT_FALSE(check_capture_snaplen(SLUICE_CAPTURE_SNAPLEN_MAX + 1));
	EXPECT_FALSE(check_capture_snaplen(13));
	EXPECT_FALSE(check_capture_snaplen(-1));
	EXPECT_FALSE(check_capture_sample_every(0));
	EXPECT_TRUE(check_capture_sample_every(SLUICE_CAPTURE_SAMPLE_EVERY_MAX));
	EXPECT_FALSE(check_capture_sample_every(SLUICE_CAPTURE_SAMPLE_EVERY_MAX + 1));
	EXPECT_FALSE(check_capture_count(0));
	EXPECT_FALSE(check_capture_duration_s(0));
	EXPECT_FALSE(check_capture_duration_s(kCaptureDurationMaxS + 1));
	EXPECT_EQ(check_capture_snaplen(99999).error().message, "99999 is outside 14..2048");
}
