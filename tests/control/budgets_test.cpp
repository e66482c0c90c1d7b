// logic/budgets: the config's budgets built from what is asked and the CPU
// count, the one derivation the daemon and the commands share.
#include "logic/budgets.h"

#include "base/limits.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace sluice {
namespace {

TEST(Budgets, NewcomerBucketDividesTheAskedBudgetOverTheCpus)
{
	// 100,000 pps over 8 CPUs: 12,500 pps each, one token per 80,000 ns;
	// burst 0.1 s of the budget, 10,000 tokens, 1,250 per CPU.
	PerCpuBucket b = per_cpu_bucket(100000, 8);
	EXPECT_EQ(b.cost_ns, 80000u);
	EXPECT_EQ(b.burst, 1250u);
	EXPECT_EQ(b.burst_total, 10000u);
	// The cost rounds up: the CPUs together never refill faster than asked.
	b = per_cpu_bucket(3, 2); // 1.5 pps per CPU: 666,666,666.67 ns
	EXPECT_EQ(b.cost_ns, 666666667u);
	EXPECT_LE(2.0 * 1e9 / double(b.cost_ns), 3.0);
	// The burst is at least one token per CPU, and exact in integers:
	// 30 pps x 0.1 s is 3 tokens, not 4.
	EXPECT_EQ(per_cpu_bucket(30, 1).burst, 3u);
	EXPECT_EQ(per_cpu_bucket(30, 1).burst_total, 3u);
	EXPECT_EQ(per_cpu_bucket(5, 8).burst, 1u);
	EXPECT_EQ(per_cpu_bucket(5, 8).burst_total, 1u); // ceil(0.5), as asked
	EXPECT_EQ(per_cpu_bucket(31, 1).burst, 4u);      // ceil(3.1)
	// None.
	b = per_cpu_bucket(0, 8);
	EXPECT_EQ(b.cost_ns, 0u);
	EXPECT_EQ(b.burst, 0u);
	EXPECT_EQ(b.burst_total, 0u);
}

TEST(Budgets, NewcomerBucketStaysInBoundsAtTheEdgesOfItsCheck)
{
	for (uint64_t cpus : {uint64_t{1}, uint64_t{2}, uint64_t{7}, uint64_t{64}, uint64_t{1000}, uint64_t{1001},
			      uint64_t{4096}, uint64_t{1} << 20}) {
		for (uint64_t pps : {newcomer_pps_min(cpus), newcomer_pps_min(cpus) + 1, newcomer_pps_max(cpus) - 1,
				     newcomer_pps_max(cpus)}) {
			ASSERT_TRUE(check_newcomer_pps(pps, cpus).has_value()) << pps << " over " << cpus;
			PerCpuBucket b = per_cpu_bucket(pps, cpus);
			EXPECT_TRUE(check_newcomer_bucket(b.cost_ns, b.burst).has_value())
				<< pps << " over " << cpus << ": cost " << b.cost_ns << " burst " << b.burst;
		}
		EXPECT_FALSE(check_newcomer_pps(newcomer_pps_max(cpus) + 1, cpus).has_value()) << cpus;
	}
}

TEST(Budgets, DefaultNewcomerIsATenthOfTripPpsWithinTheBounds)
{
	EXPECT_EQ(default_newcomer_pps(1000000, 8), 100000u);
	EXPECT_EQ(default_newcomer_pps(15, 8), 1u);
	EXPECT_EQ(default_newcomer_pps(9, 8), 0u); // under ten: none, as asked for 0
	EXPECT_EQ(default_newcomer_pps(UINT64_MAX, 8), newcomer_pps_max(8));
	EXPECT_EQ(default_newcomer_pps(10, 4096), newcomer_pps_min(4096)); // 1 pps cannot be spread over 4096 CPUs
}

TEST(Budgets, ConfigWithBudgetsSetsEveryBudgetAndItsBookkeeping)
{
	sluice_config before{};
	before.breaker_state = SLUICE_SHEDDING;
	before.admission_ppm = SLUICE_PPM_FULL;
	before.generation = 41;
	before.policy_flags = SLUICE_LIST_DENY_V4;
	BudgetAsk ask{10000, 20000, 1000000, 100000, 100000};
	auto c = config_with_budgets(before, ask, 8);
	ASSERT_TRUE(c.has_value()) << c.error().message;
	EXPECT_EQ(c->cost_ns, 100000u);
	EXPECT_EQ(c->burst, 20000u);
	EXPECT_EQ(c->rate_pps, 10000u);
	EXPECT_EQ(c->standing_cost_ns, 1000u);
	EXPECT_EQ(c->standing_burst, 100000u);
	EXPECT_EQ(c->standing_rate_pps, 1000000u);
	EXPECT_EQ(c->newcomer_cost_ns, 80000u);
	EXPECT_EQ(c->newcomer_burst, 1250u);
	EXPECT_EQ(c->newcomer_pps, 100000u);
	EXPECT_EQ(c->newcomer_burst_total, 10000u);
	// The rest is the config's.
	EXPECT_EQ(c->breaker_state, uint32_t(SLUICE_SHEDDING));
	EXPECT_EQ(c->generation, 41u);
	EXPECT_EQ(c->policy_flags, uint32_t(SLUICE_LIST_DENY_V4));
	// What it asks for reads back.
	BudgetAsk again = budgets_of(*c);
	EXPECT_EQ(again.rate_pps, ask.rate_pps);
	EXPECT_EQ(again.burst, ask.burst);
	EXPECT_EQ(again.standing_rate_pps, ask.standing_rate_pps);
	EXPECT_EQ(again.standing_burst, ask.standing_burst);
	EXPECT_EQ(again.newcomer_pps, ask.newcomer_pps);

	ask.newcomer_pps = 0;
	c = config_with_budgets(*c, ask, 8);
	ASSERT_TRUE(c.has_value());
	EXPECT_EQ(c->newcomer_cost_ns, 0u);
	EXPECT_EQ(c->newcomer_burst, 0u);
	EXPECT_EQ(c->newcomer_pps, 0u);
}

TEST(Budgets, ThePerDestinationBoundIsOneBucketTheCpusShare)
{
	// 1,000 a second: a token a millisecond, burst 0.1 s of it, whatever the CPUs.
	SharedBucket b = cookie_dest_bucket(defaults::kCookieDestPps);
	EXPECT_EQ(b.cost_ns, 1000000u);
	EXPECT_EQ(b.burst, 100u);
	// The cost rounds up (never faster than asked), the burst at least one.
	EXPECT_EQ(cookie_dest_bucket(3).cost_ns, 333333334u);
	EXPECT_EQ(cookie_dest_bucket(3).burst, 1u);
	EXPECT_EQ(cookie_dest_bucket(1).cost_ns, SLUICE_NSEC_PER_SEC);
	b = cookie_dest_bucket(kCookieDestPpsMax);
	EXPECT_EQ(b.cost_ns, 100u);
	EXPECT_EQ(b.burst, SLUICE_BURST_MAX);
	EXPECT_TRUE(check_cookie_dest_bucket(b.cost_ns, b.burst).has_value());
	b = cookie_dest_bucket(0);
	EXPECT_EQ(b.cost_ns, 0u);
	EXPECT_EQ(b.burst, 0u);
	EXPECT_TRUE(check_cookie_dest_bucket(0, 0).has_value());

	BudgetAsk ask;
	ask.cookie_dest_pps = 200;
	auto c = config_with_budgets(sluice_config{}, ask, 8);
	ASSERT_TRUE(c.has_value()) << c.error().message;
	EXPECT_EQ(c->cookie_dest_cost_ns, 5000000u);
	EXPECT_EQ(c->cookie_dest_burst, 20u);
	EXPECT_EQ(c->cookie_dest_pps, 200u);
	EXPECT_EQ(budgets_of(*c).cookie_dest_pps, 200u);
	ask.cookie_dest_pps = 0; // no bound: all three 0
	c = config_with_budgets(*c, ask, 8);
	ASSERT_TRUE(c.has_value());
	EXPECT_EQ(c->cookie_dest_cost_ns + c->cookie_dest_burst + c->cookie_dest_pps, 0u);

	ask.cookie_dest_pps = kCookieDestPpsMax + 1;
	c = config_with_budgets(sluice_config{}, ask, 8);
	ASSERT_FALSE(c.has_value());
	EXPECT_EQ(c.error().message, "per-destination SYN-ACK bound 10000001 is outside 0 (none) or 1..10000000");
	EXPECT_FALSE(check_cookie_dest_pps(-1).has_value());
	// The config as written: both 0, or a cost of a rate in bounds and a burst.
	EXPECT_FALSE(check_cookie_dest_bucket(1000000, 0).has_value());
	EXPECT_FALSE(check_cookie_dest_bucket(0, 100).has_value());
	EXPECT_FALSE(check_cookie_dest_bucket(9, 100).has_value());
	EXPECT_FALSE(check_cookie_dest_bucket(1000000, SLUICE_BURST_MAX + 1).has_value());
}

TEST(Budgets, ConfigWithBudgetsRefusesWhatIsOutOfBounds)
{
	auto refused_with = [](BudgetAsk ask, uint64_t cpus, const std::string &message) {
		auto c = config_with_budgets(sluice_config{}, ask, cpus);
		ASSERT_FALSE(c.has_value()) << message;
		EXPECT_EQ(c.error().message, message);
	};
	refused_with({0, 20000, 1000000, 100000, 0}, 8, "invariant 1 <= rate <= 100000000 violated: rejected rate 0");
	refused_with({10000, 0, 1000000, 100000, 0}, 8, "invariant 1 <= burst <= 1000000 violated: rejected burst 0");
	refused_with({10000, 20000, 0, 100000, 0}, 8,
		     "invariant 1 <= standing rate <= 100000000 violated: rejected standing rate 0");
	refused_with({10000, 20000, 1000000, 1000001, 0}, 8,
		     "invariant 1 <= standing_burst <= 1000000 violated: rejected standing_burst 1000001");
	refused_with({10000, 20000, 1000000, 100000, 80000001}, 8,
		     "newcomer budget 80000001 is outside 0 (none) or 1..80000000 (8 CPUs)");
}

} // namespace
} // namespace sluice
