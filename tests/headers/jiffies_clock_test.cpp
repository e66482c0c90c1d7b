// bpf/jiffies_clock.h on the host: the data plane's time from jiffies.
#include "bpf/jiffies_clock.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

TEST(JiffiesClock, IsJiffiesTimesTheTickPlusTheBias)
{
	EXPECT_EQ(sluice_clock_of_jiffies(0, 4'000'000), SLUICE_TIME_BIAS);
	EXPECT_EQ(sluice_clock_of_jiffies(1000, 4'000'000), SLUICE_TIME_BIAS + 4'000'000'000ull);
	// One jiffy later is one tick later, whatever the HZ.
	for (std::uint64_t tick : {10'000'000ull, 4'000'000ull, 3'333'333ull, 1'000'000ull})
		EXPECT_EQ(sluice_clock_of_jiffies(4'295'000'000ull, tick) + tick,
			  sluice_clock_of_jiffies(4'295'000'001ull, tick));
}

// bucket.h's bound: every time below 2^63, after a century of uptime at the
// coarsest tick (HZ 100) and the finest (HZ 10000), from INITIAL_JIFFIES.
TEST(JiffiesClock, StaysBelowTwoToTheSixtyThreeForACentury)
{
	constexpr std::uint64_t kCentury = 100ull * 366 * 86400;
	for (std::uint64_t hz : {100ull, 10000ull}) {
		const std::uint64_t tick = (1'000'000'000ull + hz / 2) / hz;
		const std::uint64_t jiffies = (1ull << 32) + kCentury * hz;
		EXPECT_LT(sluice_clock_of_jiffies(jiffies, tick), 1ull << 63) << "HZ " << hz;
	}
}

} // namespace
