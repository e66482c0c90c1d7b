// The data plane's clock (bpf/jiffies_clock.h) as the program and the host
// read it: jiffies x the tick, the tick the kernel's, advancing with
// CLOCK_MONOTONIC. (That a slot the program writes is stamped with the time
// the host reads around the run: Slots.TouchedSlotsAreTheHostComputedPair.)
#include "fixture.h"
#include "require.h"

#include <cmath>
#include <cstdint>

using namespace sluice::test;

namespace {

// The tick is TICK_NSEC of a whole HZ, (10^9 + HZ / 2) / HZ: a clock built on
// any other tick would drift from real time by the difference.
TEST(DataplaneClock, TheTickIsTheKernelsTickOfAWholeHz)
{
	SLUICE_REQUIRE_ROOT();
	const std::uint64_t tick = tick_ns();
	const std::uint64_t hz = (1'000'000'000ull + tick / 2) / tick;
	EXPECT_GE(hz, 100u) << tick;
	EXPECT_LE(hz, 10000u) << tick;
	EXPECT_EQ((1'000'000'000ull + hz / 2) / hz, tick) << "HZ " << hz;
}

// Over a quarter of a second the program's clock moves as CLOCK_MONOTONIC
// does, to within two ticks (each reading is up to a tick behind): a wrong
// tick (HZ 250 read as 100 or 1000) would be off by 60% or more.
TEST(DataplaneClock, AdvancesWithClockMonotonicToWithinTwoTicks)
{
	SLUICE_REQUIRE_ROOT();
	const std::uint64_t d0 = dataplane_ns(), m0 = mono_ns();
	sleep_ns(250'000'000);
	wait_for_tick();
	const std::uint64_t d1 = dataplane_ns(), m1 = mono_ns();
	const double dev = double(d1 - d0) - double(m1 - m0);
	std::printf("CLOCK dataplane %+.3f ms over %.3f ms of CLOCK_MONOTONIC (tick %.3f ms)\n", dev / 1e6,
		    double(m1 - m0) / 1e6, double(tick_ns()) / 1e6);
	EXPECT_LE(std::abs(dev), 2.0 * double(tick_ns()));
}

// The host's readings never go back, and move in whole ticks.
TEST(DataplaneClock, HostReadingsAreMonotonicInWholeTicks)
{
	SLUICE_REQUIRE_ROOT();
	std::uint64_t prev = dataplane_ns();
	for (int i = 0; i < 2000; i++) {
		const std::uint64_t now = dataplane_ns();
		ASSERT_GE(now, prev);
		ASSERT_EQ((now - prev) % tick_ns(), 0u) << now << " after " << prev;
		prev = now;
	}
}

} // namespace
