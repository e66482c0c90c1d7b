// sluice_admit2 under every single-preemption interleaving, deterministically.
//
// Threads (bucket_admit2_test.cpp) find races only by luck. Here every
// compare-and-swap of bucket.h goes through a hook, so the test can stop one
// admission just before or just after any of its CAS operations and run other
// admissions of the same source there, as another CPU would. At one instant a
// source's two slots must then never admit more than the tokens they held.
//
// This file must be its own translation unit: the hook replaces the builtin
// for the bucket.h it includes (its functions are static inline, so the other
// test files keep the real builtin).
#include <linux/types.h>

#include <functional>

namespace hook {
int depth = 0;           // > 0 while an injected admission runs
int cas_calls = 0;       // CAS operations of the outer admission so far
int inject_at = -1;      // which of them is preempted
bool after = false;      // preempted just after it (true) or just before
std::function<void()> inject;
int fired = 0;

inline void run()
{
	fired++;
	depth++;
	inject();
	depth--;
}
}  // namespace hook

static inline __u64 hooked_cas(__u64 *p, __u64 expected, __u64 desired)
{
	const bool fire = hook::depth == 0 && hook::inject && hook::cas_calls++ == hook::inject_at;

	if (fire && !hook::after)
		hook::run();
	const __u64 seen = __sync_val_compare_and_swap(p, expected, desired);
	if (fire && hook::after)
		hook::run();
	return seen;
}

#define __sync_val_compare_and_swap(p, expected, desired) hooked_cas((p), (expected), (desired))
#include "fake_clock.h"
#undef __sync_val_compare_and_swap

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

using namespace sluice::unit;

constexpr __u64 kCost = 1000;
constexpr __u64 kNow = at(kDay);

struct Start {
	__u64 credit_a, credit_b; // ~0: zeroed (full)
};

sluice_slot make(__u64 credit)
{
	return credit == ~0ull ? sluice_slot{0} : sluice_slot{kNow - credit};
}

enum class Injected { one, drain };

// One scenario: the outer admission is preempted at CAS number `at`, before
// or after it, by `what` (one more admission, or a drain) on the same slots.
// Returns outer + injected + what a sequential drain finds afterwards.
__u64 scenario(__u64 burst, Start st, bool one_choice, int at_cas, bool after, Injected what,
	       bool *fired)
{
	sluice_slot a = make(st.credit_a), b = make(st.credit_b);
	sluice_slot &bb = one_choice ? a : b;
	__u64 injected = 0;

	hook::depth = 0;
	hook::cas_calls = 0;
	hook::inject_at = at_cas;
	hook::after = after;
	hook::fired = 0;
	hook::inject = [&] {
		if (what == Injected::one)
			injected += admit_pair(a, bb, kNow, kCost, burst);
		else
			injected += drain_pair(a, bb, kNow, kCost, burst);
	};
	const __u64 outer = admit_pair(a, bb, kNow, kCost, burst);
	hook::inject = nullptr;
	*fired = hook::fired > 0;
	return outer + injected + drain_pair(a, bb, kNow, kCost, burst);
}

TEST(Admit2Interleave, NoPreemptionPointLetsAPairAdmitMoreThanItHeld)
{
	const std::vector<Start> starts = {
		{~0ull, ~0ull},                 // both full
		{~0ull, kCost},                 // one full, one with a token
		{kCost, ~0ull},
		{kCost, kCost},                 // one token each
		{kCost + 400, kCost + 300},     // one token each, different remainders
		{2 * kCost, kCost - 1},         // only one slot has tokens
		{kCost - 1, 2 * kCost + 1},
		{0, ~0ull},
		{3 * kCost + 1, 3 * kCost},
	};
	int scenarios = 0, preempted = 0;
	for (__u64 burst : {1ull, 2ull, 3ull, 5ull}) {
		for (const Start &st : starts) {
			for (bool one_choice : {false, true}) {
				const __u64 ca = credit_of(make(st.credit_a), kNow, kCost, burst);
				const __u64 cb = credit_of(make(st.credit_b), kNow, kCost, burst);
				// What the source held: the fuller slot's whole tokens
				// (a sequential drain takes exactly that many).
				const __u64 held = (one_choice ? ca : std::max(ca, cb)) / kCost;
				for (int at_cas = 0; at_cas < 2 * SLUICE_CAS_TRIES; at_cas++) {
					for (bool after : {false, true}) {
						for (Injected what : {Injected::one, Injected::drain}) {
							bool fired = false;
							const __u64 total = scenario(burst, st, one_choice,
										     at_cas, after, what,
										     &fired);
							scenarios++;
							preempted += fired;
							// An admission that can succeed makes at
							// least one CAS: the first is always hit.
							if (at_cas == 0 && held > 0) {
								EXPECT_TRUE(fired);
							}
							EXPECT_EQ(total, held)
								<< "burst " << burst << " credits "
								<< st.credit_a << "/" << st.credit_b
								<< (one_choice ? " one-choice" : " pair")
								<< ", preempted "
								<< (after ? "after" : "before") << " CAS #"
								<< at_cas << " by "
								<< (what == Injected::one ? "one admission"
											  : "a drain");
						}
					}
				}
			}
		}
	}
	// The hook really preempted admissions (not just ran them sequentially):
	// most admissions make one or two CAS, so about 1/8 of the points fire.
	EXPECT_GT(preempted, scenarios / 8);
}

}  // namespace
