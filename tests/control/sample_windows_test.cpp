// The drop sampler's windows (sluiced/drop_sampler.h, SampleWindows) with a
// fake clock: which window `top` reads, how long it collected, and when the
// current one becomes the last complete one.
#include "sluiced/drop_sampler.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

HitterKey key(uint64_t n)
{
	return HitterKey{0, n, 1};
}

TEST(SampleWindows, TheCurrentWindowUntilTheFirstCompletes)
{
	SampleWindows w(8, 10, 100, 1);
	auto first = w.window(100);
	EXPECT_FALSE(first.complete);
	EXPECT_EQ(first.seconds, 0);
	EXPECT_EQ(first.summary->total(), 0u);

	w.add(key(1));
	w.add(key(1));
	w.add(key(2));
	w.roll(104); // not due: nothing moves
	auto filling = w.window(104.5);
	EXPECT_FALSE(filling.complete);
	EXPECT_DOUBLE_EQ(filling.seconds, 4.5);
	EXPECT_EQ(filling.summary->total(), 3u);
	EXPECT_EQ(filling.summary->top(1).at(0).key, key(1));
	EXPECT_EQ(w.capacity(), 8u);
	EXPECT_EQ(w.window_s(), 10);
}

TEST(SampleWindows, RollsWhenTheWindowHasPassedAndReadsTheCompleteOne)
{
	SampleWindows w(8, 10, 100, 1);
	w.add(key(1));
	w.roll(110); // due exactly
	auto last = w.window(111);
	EXPECT_TRUE(last.complete);
	EXPECT_DOUBLE_EQ(last.seconds, 10);
	EXPECT_EQ(last.summary->total(), 1u);

	// New samples fill the next window; `top` still reads the complete one.
	w.add(key(2));
	w.add(key(2));
	w.roll(115);
	EXPECT_EQ(w.window(115).summary->total(), 1u);
	// A late period: the window ran 10.5 s, and says so.
	w.roll(120.5);
	last = w.window(121);
	EXPECT_TRUE(last.complete);
	EXPECT_DOUBLE_EQ(last.seconds, 10.5);
	EXPECT_EQ(last.summary->total(), 2u);
	EXPECT_EQ(last.summary->top(1).at(0).key, key(2));
	// An empty window rolls too, and shows no samples.
	w.roll(130.5);
	EXPECT_EQ(w.window(131).summary->total(), 0u);
}

TEST(SampleWindows, ARollAHairEarlyStillCounts)
{
	// Periods land on the window's edge give or take the clock's rounding.
	SampleWindows w(4, 1, 0, 7);
	w.add(key(3));
	w.roll(1 - 1e-7);
	EXPECT_TRUE(w.window(1).complete);
	SampleWindows v(4, 1, 0, 7);
	v.roll(1 - 1e-3);
	EXPECT_FALSE(v.window(1).complete);
}

} // namespace
} // namespace sluice
