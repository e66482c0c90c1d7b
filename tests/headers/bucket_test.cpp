// bucket.h, one slot at a time, with a fake clock: refill exactness, the cap,
// huge idle gaps, a clock going backwards, config changes (burst, rate, ppm),
// the helpers (pay_floored, empty_at_for), and an exhaustive-ish sweep of the
// invariants over small burst / cost / time grids.
#include "fake_clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace {

using namespace sluice::unit;

struct Shape {
	__u64 burst;
	__u64 cost;
};

// From the smallest bucket to the largest one the ABI limits allow: burst up
// to SLUICE_BURST_MAX, cost up to 1e9 (rate 1/s) x 1000 (recovering at the
// minimum ppm) = 1e12.
const Shape kShapes[] = {
	{1, 10},
	{1, 1},
	{10, 1000},
	{64, 333'333'333},
	{SLUICE_BURST_MAX, 10},
	{SLUICE_BURST_MAX, SLUICE_NSEC_PER_SEC},
	{SLUICE_BURST_MAX, 1'000'000'000'000ull},
	{1, 1'000'000'000'000ull},
};

TEST(BucketCredit, ZeroedSlotReadsFull)
{
	for (const Shape &s : kShapes) {
		for (__u64 t : {0ull, 1ull, kSecond, kDay, kYear, kClockMax}) {
			SCOPED_TRACE(testing::Message() << "burst " << s.burst << " cost " << s.cost
							<< " t " << t);
			EXPECT_EQ(sluice_tokens(0, at(t), s.cost, s.burst), s.burst);
			EXPECT_EQ(sluice_credit(0, at(t), s.burst * s.cost), s.burst * s.cost);
			sluice_slot slot{0};
			EXPECT_TRUE(admit1(slot, at(t), s.cost, s.burst));
			EXPECT_EQ(tokens_of(slot, at(t), s.cost, s.burst), s.burst - 1);
		}
	}
}

TEST(BucketCredit, TokensAreWholeCreditOverCostCappedAtBurst)
{
	const __u64 cost = 7, burst = 3;
	const __u64 now = at(kSecond);
	for (__u64 credit = 0; credit <= 6 * cost; credit++) {
		SCOPED_TRACE(credit);
		const __u64 empty_at = now - credit;
		EXPECT_EQ(sluice_credit(empty_at, now, burst * cost), std::min(credit, burst * cost));
		EXPECT_EQ(sluice_tokens(empty_at, now, cost, burst), std::min(credit / cost, burst));
	}
}

TEST(BucketCredit, ZeroCostReadsEmptyInsteadOfDividingByZero)
{
	EXPECT_EQ(sluice_tokens(0, at(kSecond), 0, 10), 0u);
}

TEST(BucketRefill, RemainderIsCarriedBetweenReadings)
{
	const __u64 cost = 1000, burst = 5;
	sluice_slot s{at(0)}; // empty at boot
	EXPECT_EQ(tokens_of(s, at(999), cost, burst), 0u);
	EXPECT_FALSE(admit1(s, at(999), cost, burst));
	EXPECT_EQ(s.empty_at, at(0)) << "a drop must not touch the slot";
	EXPECT_EQ(tokens_of(s, at(1000), cost, burst), 1u);

	// Admit at 1.5 tokens: the half token stays in the credit.
	ASSERT_TRUE(admit1(s, at(1500), cost, burst));
	EXPECT_EQ(credit_of(s, at(1500), cost, burst), 500u);
	EXPECT_FALSE(admit1(s, at(1500), cost, burst));
	EXPECT_EQ(tokens_of(s, at(1999), cost, burst), 0u);
	EXPECT_EQ(tokens_of(s, at(2000), cost, burst), 1u) << "the carried 500 ns were lost";
	ASSERT_TRUE(admit1(s, at(2000), cost, burst));
	EXPECT_EQ(credit_of(s, at(2000), cost, burst), 0u);
}

// A source admitted as soon as it can be, reading the clock every `step`,
// is admitted exactly floor(T / cost) times over T from empty: no rounding is
// lost at any reading, however small the steps. One big step to T reads the
// same number of tokens, and the remainder T mod cost is still in the credit.
TEST(BucketRefill, SmallStepsAdmitExactlyWhatOneBigStepReads)
{
	std::mt19937_64 rng(42);
	for (__u64 cost : {1ull, 3ull, 7ull, 10ull, 1000ull, 33'333ull, 333'333'333ull}) {
		const __u64 burst = SLUICE_BURST_MAX;
		// 1 ns steps where that is cheap, random steps otherwise.
		const bool one_ns = cost <= 1000;
		const __u64 horizon = one_ns ? 200 * cost + 17 : 300 * cost + cost / 2;
		SCOPED_TRACE(testing::Message() << "cost " << cost << " horizon " << horizon);

		const __u64 big_step_tokens = sluice_tokens(at(0), at(horizon), cost, burst);
		ASSERT_EQ(big_step_tokens, horizon / cost);

		sluice_slot s{at(0)};
		__u64 admitted = 0;
		std::uniform_int_distribution<__u64> step(1, cost / 3 + 1);
		for (__u64 t = 0; t <= horizon;) {
			while (admit1(s, at(t), cost, burst))
				admitted++;
			if (t == horizon)
				break;
			t = std::min(horizon, t + (one_ns ? 1 : step(rng)));
		}
		EXPECT_EQ(admitted, big_step_tokens);
		EXPECT_EQ(credit_of(s, at(horizon), cost, burst), horizon % cost);
	}
}

// Conservation while the cap is never reached: refill time = admitted x cost +
// credit left, whatever the pattern of readings and admissions.
TEST(BucketRefill, CreditIsConservedUnderRandomReadings)
{
	std::mt19937_64 rng(7);
	for (__u64 cost : {1ull, 2ull, 999ull, 1'000'003ull}) {
		const __u64 burst = SLUICE_BURST_MAX;
		sluice_slot s{at(0)};
		__u64 t = 0, admitted = 0;
		for (int i = 0; i < 20000; i++) {
			t += std::uniform_int_distribution<__u64>(0, 2 * cost)(rng);
			if (rng() & 1)
				admitted += admit1(s, at(t), cost, burst);
			ASSERT_EQ(admitted * cost + credit_of(s, at(t), cost, burst), t)
				<< "cost " << cost << " step " << i;
		}
		EXPECT_GT(admitted, 0u);
	}
}

TEST(BucketRefill, CapAtBurstDiscardsTheExcess)
{
	const __u64 cost = 1000, burst = 5;
	sluice_slot s{at(0)};
	EXPECT_EQ(tokens_of(s, at(4999), cost, burst), 4u);
	EXPECT_EQ(tokens_of(s, at(5000), cost, burst), 5u);
	for (__u64 t : {5001ull, 10'000ull, kSecond, kDay})
		EXPECT_EQ(tokens_of(s, at(t), cost, burst), 5u) << t;
	EXPECT_EQ(credit_of(s, at(kDay), cost, burst), 5000u);

	// Full for a day; one admission leaves exactly burst - 1 and no extra
	// credit: the next token takes one whole cost to come back.
	ASSERT_TRUE(admit1(s, at(kDay), cost, burst));
	EXPECT_EQ(credit_of(s, at(kDay), cost, burst), 4000u);
	EXPECT_EQ(tokens_of(s, at(kDay + 999), cost, burst), 4u);
	EXPECT_EQ(tokens_of(s, at(kDay + 1000), cost, burst), 5u);

	// And a full bucket admits exactly burst at one instant.
	sluice_slot full{0};
	EXPECT_EQ(drain_pair(full, full, at(kDay), cost, burst), burst);
}

// A slot idle for a day, a year, a century or the whole 2^62 ns clock range
// reads full, with the largest bucket the ABI allows and the smallest cost:
// neither the gap nor burst x cost overflows.
TEST(BucketIdle, HugeGapsReadFullWithoutOverflow)
{
	for (const Shape &s : kShapes) {
		for (__u64 drained_at : {0ull, 1ull, kSecond, 1ull << 61}) {
			for (__u64 gap : {kDay, kYear, 100 * kYear, kClockMax - drained_at}) {
				if (gap > kClockMax - drained_at)
					continue; // beyond the clock range bucket.h promises
				const __u64 now = at(drained_at + gap);
				SCOPED_TRACE(testing::Message() << "burst " << s.burst << " cost "
								<< s.cost << " drained " << drained_at
								<< " gap " << gap);
				sluice_slot slot{at(drained_at)};
				const __u64 expect = std::min<__u64>(s.burst, gap / s.cost);
				EXPECT_EQ(tokens_of(slot, now, s.cost, s.burst), expect);
				EXPECT_LE(credit_of(slot, now, s.cost, s.burst), s.burst * s.cost);
				if (expect > 0) {
					EXPECT_TRUE(admit1(slot, now, s.cost, s.burst));
					EXPECT_EQ(tokens_of(slot, now, s.cost, s.burst), expect - 1);
				}
			}
		}
	}
	// The very end of the range: empty_at = 0 (never touched), clock at 2^62 - 1.
	sluice_slot slot{0};
	EXPECT_EQ(tokens_of(slot, at(kClockMax), 1'000'000'000'000ull, SLUICE_BURST_MAX),
		  SLUICE_BURST_MAX);
}

// A clock that reads earlier than the slot's empty_at (a jump backwards, or
// a slot written by a CPU whose coarse clock ran ahead) reads as empty, never
// as the 2^64 - d a bare subtraction would give; the slot is left alone, and
// it refills normally once the clock passes empty_at.
TEST(BucketClock, GoingBackwardsReadsEmptyNeverHuge)
{
	const __u64 cost = 1000, burst = 10;
	const __u64 empty_at = at(kDay);
	for (__u64 back : {1ull, 999ull, 1000ull, 1001ull, kSecond, kDay, kDay - 1}) {
		SCOPED_TRACE(back);
		const __u64 now = empty_at - back;
		EXPECT_EQ(sluice_credit(empty_at, now, burst * cost), 0u);
		EXPECT_EQ(sluice_tokens(empty_at, now, cost, burst), 0u);
		sluice_slot s{empty_at};
		EXPECT_FALSE(admit1(s, now, cost, burst));
		EXPECT_EQ(s.empty_at, empty_at);
		EXPECT_EQ(sluice_pay_floored(empty_at, now, cost, burst * cost), empty_at);
	}
	// Even from the far end: a slot stamped at the last representable time
	// and a clock at boot.
	EXPECT_EQ(sluice_tokens(at(kClockMax), at(0), cost, burst), 0u);
	EXPECT_EQ(sluice_tokens(~0ull, at(0), cost, burst), 0u);

	sluice_slot s{empty_at};
	EXPECT_EQ(tokens_of(s, empty_at, cost, burst), 0u);
	EXPECT_EQ(tokens_of(s, empty_at + cost - 1, cost, burst), 0u);
	EXPECT_EQ(tokens_of(s, empty_at + cost, cost, burst), 1u);
	EXPECT_TRUE(admit1(s, empty_at + cost, cost, burst));
}

// Burst lowered while a slot holds more than the new burst: it reads (and
// admits) at most the new burst. The excess is not destroyed until the slot
// is next paid from.
TEST(BucketConfig, LoweredBurstNeverYieldsMoreThanTheNewBurst)
{
	const __u64 cost = 1000, now = at(kDay);
	for (__u64 held : {11ull, 50ull, 100ull}) {
		SCOPED_TRACE(held);
		sluice_slot s = slot_with_tokens(now, held, cost);
		EXPECT_EQ(tokens_of(s, now, cost, 100), held);
		EXPECT_EQ(tokens_of(s, now, cost, 10), 10u);
		EXPECT_EQ(tokens_of(s, now, cost, 1), 1u);

		sluice_slot untouched = s;
		EXPECT_EQ(drain_pair(s, s, now, cost, 10), 10u);
		EXPECT_EQ(s.empty_at, now) << "drained under the new burst: empty";
		EXPECT_EQ(tokens_of(s, now, cost, 100), 0u) << "the excess must not come back";
		// Raised again before any payment: the credit was never touched.
		EXPECT_EQ(tokens_of(untouched, now, cost, 100), held);
	}
	// A zeroed (full) slot under a lowered burst.
	sluice_slot z{0};
	EXPECT_EQ(drain_pair(z, z, now, cost, 3), 3u);
}

// The credit is kept in nanoseconds: a new cost re-denominates it (a rate
// change applies to the refill already accrued), and from then on the slot
// refills at the new rate exactly.
TEST(BucketConfig, RateChangeRedenominatesTheCredit)
{
	const __u64 burst = 100;
	sluice_slot s{at(0)};
	EXPECT_EQ(tokens_of(s, at(10'000), 1000, burst), 10u);
	EXPECT_EQ(tokens_of(s, at(10'000), 500, burst), 20u);
	EXPECT_EQ(tokens_of(s, at(10'000), 3000, burst), 3u);

	// Drain at the new rate, then refill at the new rate.
	EXPECT_EQ(drain_pair(s, s, at(10'000), 500, burst), 20u);
	EXPECT_EQ(tokens_of(s, at(12'499), 500, burst), 4u);
	EXPECT_EQ(tokens_of(s, at(12'500), 500, burst), 5u);

	// The cap is in tokens: a full (long idle) slot holds burst tokens at any
	// cost; a slot with exactly burst x old_cost of credit holds fewer at a
	// higher cost.
	EXPECT_EQ(tokens_of(sluice_slot{0}, at(kDay), 2000, 5), 5u);
	sluice_slot five = slot_with_tokens(at(kDay), 5, 1000);
	EXPECT_EQ(tokens_of(five, at(kDay), 2000, 5), 2u);
	EXPECT_EQ(tokens_of(five, at(kDay), 250, 5), 5u) << "capped at burst x new cost";
}

TEST(BucketConfig, EffectiveCostScalesOnlyWhileRecovering)
{
	const __u64 cost = 1'000'000;
	for (__u32 state : {(__u32)SLUICE_SERVING, (__u32)SLUICE_SHEDDING}) {
		for (__u32 ppm : {0u, 1u, 999u, SLUICE_PPM_MIN, 500'000u, SLUICE_PPM_FULL, ~0u})
			EXPECT_EQ(sluice_effective_cost(cost, state, ppm), cost)
				<< "state " << state << " ppm " << ppm;
	}
	const __u32 R = SLUICE_RECOVERING;
	EXPECT_EQ(sluice_effective_cost(cost, R, SLUICE_PPM_FULL), cost);
	EXPECT_EQ(sluice_effective_cost(cost, R, SLUICE_PPM_FULL + 1), cost);
	EXPECT_EQ(sluice_effective_cost(cost, R, ~0u), cost);
	EXPECT_EQ(sluice_effective_cost(cost, R, 500'000), 2 * cost);
	EXPECT_EQ(sluice_effective_cost(cost, R, 250'000), 4 * cost);
	EXPECT_EQ(sluice_effective_cost(cost, R, 100'000), 10 * cost);
	EXPECT_EQ(sluice_effective_cost(1000, R, 333'333), 1000u * 1'000'000 / 333'333);
	EXPECT_EQ(sluice_effective_cost(cost, R, SLUICE_PPM_MIN), 1000 * cost);
	// Below the minimum (a corrupted config), and 0: clamped to the minimum,
	// never a division by zero, never a larger cost than 0.1% of the rate.
	for (__u32 ppm : {0u, 1u, 500u, SLUICE_PPM_MIN - 1})
		EXPECT_EQ(sluice_effective_cost(cost, R, ppm), 1000 * cost) << ppm;
	// The largest cost the ABI allows (rate 1/s) at the minimum ppm: 1e12,
	// and the largest burst on top of it still fits.
	const __u64 worst = sluice_effective_cost(SLUICE_NSEC_PER_SEC / SLUICE_RATE_MIN, R, 0);
	EXPECT_EQ(worst, 1'000'000'000'000ull);
	EXPECT_LT(worst * SLUICE_BURST_MAX, 1ull << 60);
}

// Recovering at ppm p admits p / 1e6 of the rate over time.
TEST(BucketConfig, RecoveringAdmitsTheScaledRate)
{
	const __u64 cost = 1000, burst = 1;
	for (__u32 ppm : {SLUICE_PPM_FULL, 500'000u, 100'000u, SLUICE_PPM_MIN, 0u}) {
		const __u64 eff = sluice_effective_cost(cost, SLUICE_RECOVERING, ppm);
		sluice_slot s{at(0)};
		__u64 admitted = 0;
		const __u64 horizon = 10'000'000; // 10k tokens at the full rate
		for (__u64 t = 0; t <= horizon; t += 100)
			admitted += admit1(s, at(t), eff, burst);
		const __u64 expect = horizon / cost * std::max(ppm, SLUICE_PPM_MIN) / SLUICE_PPM_FULL;
		EXPECT_EQ(admitted, std::min<__u64>(expect, horizon / cost)) << "ppm " << ppm;
	}
}

TEST(BucketHelpers, PayFlooredTakesOneTokenOrEmpties)
{
	const __u64 cost = 1000, burst_ns = 10 * cost, now = at(kDay);
	// Nothing to pay: unchanged (so the caller can skip the CAS).
	EXPECT_EQ(sluice_pay_floored(now, now, cost, burst_ns), now);
	EXPECT_EQ(sluice_pay_floored(now + 5, now, cost, burst_ns), now + 5);
	// Less than a token: floored to empty.
	for (__u64 c : {1ull, 500ull, 999ull}) {
		__u64 paid = sluice_pay_floored(now - c, now, cost, burst_ns);
		EXPECT_EQ(paid, now) << c;
		EXPECT_EQ(sluice_credit(paid, now, burst_ns), 0u);
	}
	// A token or more: exactly one cost less, the remainder kept.
	for (__u64 c : {1000ull, 1001ull, 2500ull, 10'000ull}) {
		__u64 paid = sluice_pay_floored(now - c, now, cost, burst_ns);
		EXPECT_EQ(sluice_credit(paid, now, burst_ns), c - cost) << c;
	}
	// Over the cap (long idle, or zeroed): paid from the cap, not from the
	// raw gap.
	__u64 paid = sluice_pay_floored(0, now, cost, burst_ns);
	EXPECT_EQ(sluice_credit(paid, now, burst_ns), burst_ns - cost);
	EXPECT_EQ(paid, now - (burst_ns - cost));
}

TEST(BucketHelpers, EmptyAtForRoundTripsWithTokens)
{
	for (const Shape &s : kShapes) {
		for (__u64 t : {0ull, 1ull, kDay, kClockMax}) {
			const __u64 now = at(t);
			std::vector<__u64> ks;
			for (__u64 k = 0; k < s.burst; k += std::max<__u64>(1, s.burst / 37))
				ks.push_back(k);
			ks.push_back(s.burst);
			for (__u64 k : ks) {
				const __u64 e = sluice_empty_at_for(now, k, s.cost);
				ASSERT_EQ(sluice_tokens(e, now, s.cost, s.burst), k)
					<< "burst " << s.burst << " cost " << s.cost << " t " << t;
				// Exactly k tokens, no remainder: one ns earlier is one less,
				// one cost later is one more (up to the cap).
				if (k > 0) {
					ASSERT_EQ(sluice_tokens(e, now - 1, s.cost, s.burst), k - 1);
				}
				ASSERT_EQ(sluice_tokens(e, now + s.cost, s.cost, s.burst),
					  std::min(k + 1, s.burst));
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Sweep: every small burst x cost, random clocks (including many readings at
// one instant, and long idles), one-choice and private two-slot sources.
// Always 0 <= tokens <= burst; a drop happens exactly when the source has no
// whole token; and over every window [t_i, t_j] of admissions,
// count <= burst + (t_j - t_i) / cost.

struct Trace {
	std::vector<__u64> admit_times; // clock (without bias), non-decreasing
};

static void check_windows(const Trace &tr, __u64 burst, __u64 cost)
{
	const auto &v = tr.admit_times;
	for (size_t i = 0; i < v.size(); i++) {
		for (size_t j = i; j < v.size(); j++) {
			const __u64 n = j - i + 1;
			const __u64 bound = burst + (v[j] - v[i]) / cost;
			if (n > bound) {
				ADD_FAILURE() << n << " admissions in [" << v[i] << ", " << v[j]
					      << "], bound " << bound << " (burst " << burst
					      << ", cost " << cost << ")";
				return;
			}
		}
	}
}

TEST(BucketSweep, InvariantsOverSmallGrids)
{
	std::mt19937_64 rng(20240601);
	size_t total_admitted = 0, total_dropped = 0;
	for (__u64 burst : {1ull, 2ull, 3ull, 5ull, 8ull}) {
		for (__u64 cost : {1ull, 2ull, 3ull, 7ull, 10ull, 64ull}) {
			for (int pair = 0; pair < 2; pair++) {
				for (int seed = 0; seed < 4; seed++) {
					SCOPED_TRACE(testing::Message()
						     << "burst " << burst << " cost " << cost
						     << (pair ? " pair" : " one-choice") << " seed " << seed);
					const __u64 burst_ns = burst * cost;
					__u64 t = std::uniform_int_distribution<__u64>(0, 100)(rng);
					// Random start: anything from empty to full (and zeroed).
					sluice_slot a{t >= burst_ns ? at(t - rng() % (burst_ns + 1)) : 0};
					sluice_slot b{pair ? at(t) - rng() % (burst_ns + 1) : 0};
					sluice_slot &bb = pair ? b : a;
					Trace tr;
					for (int step = 0; step < 300; step++) {
						switch (rng() % 8) {
						case 0:
						case 1:
							break; // same instant
						case 2:
							t += 1;
							break;
						case 7:
							t += rng() % (4 * burst_ns + 1); // idle
							break;
						default:
							t += rng() % (cost + 1);
						}
						const __u64 now = at(t);
						const __u64 ta = tokens_of(a, now, cost, burst);
						const __u64 tb = tokens_of(bb, now, cost, burst);
						ASSERT_LE(ta, burst);
						ASSERT_LE(tb, burst);
						const bool ok = admit_pair(a, bb, now, cost, burst);
						ASSERT_EQ(ok, std::max(ta, tb) >= 1)
							<< "admit iff the fuller slot has a whole token";
						if (ok) {
							tr.admit_times.push_back(t);
							total_admitted++;
							// The fuller slot paid exactly one token.
							ASSERT_EQ(std::max(tokens_of(a, now, cost, burst),
									   tokens_of(bb, now, cost, burst)),
								  std::max(ta, tb) - 1);
						} else {
							total_dropped++;
						}
						ASSERT_LE(tokens_of(a, now, cost, burst), burst);
						ASSERT_LE(credit_of(a, now, cost, burst), burst_ns);
						ASSERT_LE(credit_of(bb, now, cost, burst), burst_ns);
					}
					check_windows(tr, burst, cost);
				}
			}
		}
	}
	// The sweep exercised both outcomes a lot.
	EXPECT_GT(total_admitted, 10'000u);
	EXPECT_GT(total_dropped, 10'000u);
}

}  // namespace
