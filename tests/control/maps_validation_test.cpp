// The config invariants the control plane enforces before any map write, and
// the rate -> cost conversion. No maps needed: these are pure functions.
#include "bpf/maps.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace sluice {
namespace {

sluice_config good_config()
{
	sluice_config c{};
	c.cost_ns = 100000; // 10000 pps
	c.burst = 20000;
	c.breaker_state = SLUICE_SERVING;
	c.admission_ppm = SLUICE_PPM_FULL;
	c.policy_flags = 0;
	c.rate_pps = 10000;
	c.standing_cost_ns = 1000; // 1e6 pps
	c.standing_burst = 100000;
	c.newcomer_cost_ns = 80000; // 1e5 pps over 8 CPUs
	c.newcomer_burst = 1250;
	return c;
}

void expect_refused(const sluice_config &c, const std::string &message)
{
	auto r = validate_config(c);
	ASSERT_FALSE(r.has_value()) << "accepted; wanted: " << message;
	EXPECT_EQ(r.error().kind, ErrorKind::refused);
	EXPECT_EQ(r.error().code, 0);
	EXPECT_EQ(r.error().message, message);
}

TEST(CostForRate, RoundsToNearest)
{
	EXPECT_EQ(*cost_for_rate(1), 1000000000u);
	EXPECT_EQ(*cost_for_rate(2), 500000000u);
	EXPECT_EQ(*cost_for_rate(3), 333333333u);  // 333333333.33 rounds down
	EXPECT_EQ(*cost_for_rate(6), 166666667u);  // 166666666.67 rounds up
	EXPECT_EQ(*cost_for_rate(7), 142857143u);  // 142857142.86 rounds up
	EXPECT_EQ(*cost_for_rate(10000), 100000u);
	EXPECT_EQ(*cost_for_rate(3000000), 333u);  // 333.33
	EXPECT_EQ(*cost_for_rate(1600000), 625u);  // exact
	EXPECT_EQ(*cost_for_rate(80000000), 13u);  // 12.5: half rounds up
	EXPECT_EQ(*cost_for_rate(66666667), 15u);  // 14.99999...
	EXPECT_EQ(*cost_for_rate(100000000), 10u); // the maximum rate
}

TEST(CostForRate, IsNearestForManyRates)
{
	for (uint64_t rate = 1; rate <= SLUICE_RATE_MAX; rate = rate * 3 + 1) {
		auto c = cost_for_rate(rate);
		ASSERT_TRUE(c.has_value()) << rate;
		// |cost * rate - 1e9| <= rate / 2: no other integer cost is nearer.
		int64_t err = static_cast<int64_t>(*c * rate) - static_cast<int64_t>(SLUICE_NSEC_PER_SEC);
		EXPECT_LE(2 * (err < 0 ? -err : err), static_cast<int64_t>(rate)) << rate;
		EXPECT_GE(*c, 10u);
		EXPECT_LE(*c, SLUICE_NSEC_PER_SEC);
	}
}

TEST(CostForRate, RefusesZeroAndAboveMax)
{
	for (uint64_t bad : std::initializer_list<uint64_t>{0, SLUICE_RATE_MAX + 1, 1000000000, UINT64_MAX}) {
		auto r = cost_for_rate(bad);
		ASSERT_FALSE(r.has_value()) << bad;
		EXPECT_EQ(r.error().kind, ErrorKind::refused);
		EXPECT_EQ(r.error().message,
			  "invariant 1 <= rate <= 100000000 violated: rejected rate " + std::to_string(bad));
	}
}

TEST(ValidateConfig, AcceptsGoodAndBoundaryValues)
{
	EXPECT_TRUE(validate_config(good_config()).has_value());
	auto c = good_config();
	c.cost_ns = SLUICE_NSEC_PER_SEC / SLUICE_RATE_MAX; // the highest rate
	EXPECT_TRUE(validate_config(c).has_value());
	c.cost_ns = SLUICE_NSEC_PER_SEC;
	EXPECT_TRUE(validate_config(c).has_value());
	c = good_config(), c.burst = SLUICE_BURST_MIN;
	EXPECT_TRUE(validate_config(c).has_value());
	c.burst = SLUICE_BURST_MAX;
	EXPECT_TRUE(validate_config(c).has_value());
	for (uint32_t s : {SLUICE_SERVING, SLUICE_SHEDDING, SLUICE_RECOVERING}) {
		c = good_config(), c.breaker_state = s;
		EXPECT_TRUE(validate_config(c).has_value()) << s;
	}
	c = good_config(), c.admission_ppm = SLUICE_PPM_MIN;
	EXPECT_TRUE(validate_config(c).has_value());
	c = good_config(), c.policy_flags = SLUICE_LIST_ALLOW_V4 | SLUICE_LIST_ALLOW_V6 | SLUICE_LIST_DENY_V4 |
					  SLUICE_LIST_DENY_V6;
	EXPECT_EQ(c.policy_flags, 0xfu);
	EXPECT_TRUE(validate_config(c).has_value());
	// Bookkeeping fields are not the program's business.
	c = good_config(), c.generation = UINT64_MAX, c.breaker_manual = 1, c.breaker_since_ns = 1;
	EXPECT_TRUE(validate_config(c).has_value());
}

TEST(ValidateConfig, RefusesBadCost)
{
	auto c = good_config();
	c.cost_ns = 0;
	expect_refused(c, "invariant 10 <= cost_ns <= 1000000000 (rate 1..100000000) violated: rejected cost_ns 0");
	c.cost_ns = SLUICE_NSEC_PER_SEC + 1;
	expect_refused(c, "invariant 10 <= cost_ns <= 1000000000 (rate 1..100000000) violated: rejected cost_ns 1000000001");
	c.cost_ns = UINT64_MAX;
	expect_refused(c, "invariant 10 <= cost_ns <= 1000000000 (rate 1..100000000) violated: rejected cost_ns 18446744073709551615");
	c.cost_ns = 9; // a rate above SLUICE_RATE_MAX
	expect_refused(c, "invariant 10 <= cost_ns <= 1000000000 (rate 1..100000000) violated: rejected cost_ns 9");
	c.cost_ns = 10;
	EXPECT_TRUE(validate_config(c).has_value());
}

TEST(ValidateConfig, RefusesBadBurst)
{
	auto c = good_config();
	c.burst = 0;
	expect_refused(c, "invariant 1 <= burst <= 1000000 violated: rejected burst 0");
	c.burst = SLUICE_BURST_MAX + 1;
	expect_refused(c, "invariant 1 <= burst <= 1000000 violated: rejected burst 1000001");
	c.burst = UINT64_MAX;
	expect_refused(c, "invariant 1 <= burst <= 1000000 violated: rejected burst 18446744073709551615");
}

TEST(ValidateConfig, RefusesUnknownBreakerState)
{
	auto c = good_config();
	c.breaker_state = SLUICE_BREAKER_STATES;
	expect_refused(c, "invariant breaker_state in {serving, shedding, recovering} violated: rejected state 3");
	c.breaker_state = 0xffffffffu;
	expect_refused(c, "invariant breaker_state in {serving, shedding, recovering} violated: rejected state 4294967295");
}

TEST(ValidateConfig, RefusesAdmissionOutOfRange)
{
	auto c = good_config();
	c.admission_ppm = SLUICE_PPM_MIN - 1;
	expect_refused(c, "invariant 1000 <= admission_ppm <= 1000000 violated: rejected admission_ppm 999");
	c.admission_ppm = 0;
	expect_refused(c, "invariant 1000 <= admission_ppm <= 1000000 violated: rejected admission_ppm 0");
	c.admission_ppm = SLUICE_PPM_FULL + 1;
	expect_refused(c, "invariant 1000 <= admission_ppm <= 1000000 violated: rejected admission_ppm 1000001");
	// Whatever the state: recovering is where it matters.
	c.breaker_state = SLUICE_RECOVERING;
	c.admission_ppm = 500;
	expect_refused(c, "invariant 1000 <= admission_ppm <= 1000000 violated: rejected admission_ppm 500");
}

TEST(ValidateConfig, RefusesUnknownPolicyFlags)
{
	auto c = good_config();
	c.policy_flags = 0x1000;
	expect_refused(c, "invariant policy_flags within 0x80000fff violated: rejected 4096");
	c.policy_flags = 0x1fff;
	expect_refused(c, "invariant policy_flags within 0x80000fff violated: rejected 8191");
	c.policy_flags = 0x40000000u;
	expect_refused(c, "invariant policy_flags within 0x80000fff violated: rejected 1073741824");
	c.policy_flags = SLUICE_POLICY_SET | SLUICE_CLASS_ANY | 0xfu | SLUICE_LIST_DENY_EXACT_V4 |
			 SLUICE_LIST_DENY_EXACT_V6 | SLUICE_LIST_ALLOW_EXACT_V4 |
			 SLUICE_LIST_ALLOW_EXACT_V6; // every known bit
	EXPECT_TRUE(validate_config(c));
}

TEST(ValidateConfig, RefusesABadStandingBucketNamingTheField)
{
	auto c = good_config();
	c.standing_cost_ns = 0;
	expect_refused(c, "invariant 10 <= standing_cost_ns <= 1000000000 (rate 1..100000000) violated: rejected "
			  "standing_cost_ns 0");
	c.standing_cost_ns = SLUICE_NSEC_PER_SEC + 1;
	expect_refused(c, "invariant 10 <= standing_cost_ns <= 1000000000 (rate 1..100000000) violated: rejected "
			  "standing_cost_ns 1000000001");
	c = good_config(), c.standing_burst = 0;
	expect_refused(c, "invariant 1 <= standing_burst <= 1000000 violated: rejected standing_burst 0");
	c.standing_burst = SLUICE_BURST_MAX + 1;
	expect_refused(c, "invariant 1 <= standing_burst <= 1000000 violated: rejected standing_burst 1000001");
	c = good_config(), c.standing_cost_ns = 10, c.standing_burst = SLUICE_BURST_MAX;
	EXPECT_TRUE(validate_config(c).has_value());
}

TEST(ValidateConfig, NewcomerBucketIsNoneOrWithinBucketBounds)
{
	auto c = good_config();
	c.newcomer_cost_ns = 0, c.newcomer_burst = 0; // no newcomer budget
	EXPECT_TRUE(validate_config(c).has_value());
	c.newcomer_cost_ns = 1000000000000ull, c.newcomer_burst = 1; // bucket.h's dearest token
	EXPECT_TRUE(validate_config(c).has_value());
	c.newcomer_cost_ns = 1000000000001ull;
	expect_refused(c, "invariant newcomer_cost_ns 0 or 10..1000000000000 (per CPU) violated: rejected "
			  "newcomer_cost_ns 1000000000001");
	c.newcomer_cost_ns = 0, c.newcomer_burst = 7; // half a budget
	expect_refused(c, "invariant newcomer_cost_ns 0 or 10..1000000000000 (per CPU) violated: rejected "
			  "newcomer_cost_ns 0");
	c.newcomer_cost_ns = 100, c.newcomer_burst = 0;
	expect_refused(c, "invariant 1 <= newcomer_burst <= 1000000 (per CPU, with a budget) violated: rejected "
			  "newcomer_burst 0");
	c.newcomer_burst = SLUICE_BURST_MAX + 1;
	expect_refused(c, "invariant 1 <= newcomer_burst <= 1000000 (per CPU, with a budget) violated: rejected "
			  "newcomer_burst 1000001");
}

TEST(ValidateConfig, ValveClosesOnlyWhileShedding)
{
	auto c = good_config();
	c.breaker_state = SLUICE_SHEDDING, c.valve_closed = 1;
	EXPECT_TRUE(validate_config(c).has_value());
	c.valve_closed = 2;
	expect_refused(c, "invariant valve_closed in {0, 1}, 1 only while shedding violated: rejected valve_closed 2 in "
			  "breaker_state 1");
	for (uint32_t s : {SLUICE_SERVING, SLUICE_RECOVERING}) {
		c.breaker_state = s, c.valve_closed = 1;
		expect_refused(c, "invariant valve_closed in {0, 1}, 1 only while shedding violated: rejected valve_closed "
				  "1 in breaker_state " + std::to_string(s));
		c.valve_closed = 0;
		EXPECT_TRUE(validate_config(c).has_value()) << s;
	}
}

TEST(ValidateConfig, ZeroedConfigIsRefused)
{
	// A config map nobody wrote (all zero) must never pass for a valid one.
	sluice_config zero{};
	auto r = validate_config(zero);
	ASSERT_FALSE(r.has_value());
	EXPECT_EQ(r.error().kind, ErrorKind::refused);
}

TEST(OutcomeNames, AreStable)
{
	EXPECT_STREQ(outcome_name(SLUICE_PASSED), "passed");
	EXPECT_STREQ(outcome_name(SLUICE_DROP_RATE), "drop_rate");
	EXPECT_STREQ(outcome_name(SLUICE_DROP_SHED), "drop_shed");
	EXPECT_STREQ(outcome_name(SLUICE_DROP_DENY), "drop_deny");
	EXPECT_STREQ(outcome_name(SLUICE_ALLOWLISTED), "allowlisted");
	EXPECT_STREQ(outcome_name(SLUICE_NON_IP), "non_ip");
	EXPECT_STREQ(outcome_name(SLUICE_MALFORMED), "malformed");
	EXPECT_STREQ(outcome_name(SLUICE_WOULD_DROP), "would_drop");
	EXPECT_STREQ(outcome_name(SLUICE_STANDING), "standing");
	EXPECT_STREQ(outcome_name(SLUICE_NEWCOMER), "newcomer");
	EXPECT_STREQ(outcome_name(SLUICE_DROP_VALVE), "drop_valve");
	EXPECT_STREQ(outcome_name(SLUICE_OUTCOMES), "unknown");
	EXPECT_STREQ(to_string(ListKind::allow), "allow");
	EXPECT_STREQ(to_string(ListKind::deny), "deny");
}

} // namespace
} // namespace sluice
