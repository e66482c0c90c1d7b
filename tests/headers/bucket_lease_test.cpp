// Leases (bpf/bucket.h, "Leases"): a CPU that lost a swap on a slot pair takes
// a batch of tokens at once and admits the pair's next frames on this CPU from
// it. With a fake clock: the batch's size, that a batch is exactly n single
// admissions at its instant, that a CPU alone never leases, that a lost swap
// (injected through the CAS hook, as another CPU's admission would land)
// starts leasing, the cache entry's rules, and the exact bound with two CPUs'
// entries interleaved at random over time.
//
// Its own translation unit: the hook replaces the builtin for the bucket.h it
// includes (bucket_interleave_test.cpp does the same). It does not include
// fake_clock.h: that header's inline helpers call bucket.h, and two
// translation units defining them with different CAS would be one definition
// to the linker (the interleave test's hook would then never fire).
#include <linux/types.h>

#include <functional>

namespace lease_hook {
std::function<void()> before_cas; // run once, before the next CAS, then cleared
int cas_calls = 0;
__u64 now = 0, burst_ns = 0; // set: every value a CAS writes is checked against them
int bad_writes = 0;
} // namespace lease_hook

static inline __u64 lease_hooked_cas(__u64 *p, __u64 expected, __u64 desired)
{
	lease_hook::cas_calls++;
	if (lease_hook::before_cas) {
		auto f = std::move(lease_hook::before_cas);
		lease_hook::before_cas = nullptr;
		f();
	}
	// 0 <= tokens <= burst at every write: the slot written at `now` holds
	// between none and burst_ns of credit.
	if (lease_hook::burst_ns && (desired > lease_hook::now || lease_hook::now - desired > lease_hook::burst_ns))
		lease_hook::bad_writes++;
	return __sync_val_compare_and_swap(p, expected, desired);
}

#define __sync_val_compare_and_swap(p, expected, desired) lease_hooked_cas((p), (expected), (desired))
#include "bpf/bucket.h"
#undef __sync_val_compare_and_swap

#include <gtest/gtest.h>

#include <random>

namespace {

// The fake clock (fake_clock.h's, by value): `ns` after boot, biased.
constexpr __u64 at(__u64 ns)
{
	return SLUICE_TIME_BIAS + ns;
}
constexpr __u64 kSecond = SLUICE_NSEC_PER_SEC;
constexpr __u64 kDay = 86400 * kSecond;

constexpr __u64 kCost = 1000;
constexpr __u64 kNow = at(kDay);
constexpr __u64 kPair = (7ull << 32) | 9;

__u64 tokens(const sluice_slot &s, __u64 now, __u64 burst)
{
	return sluice_tokens(s.empty_at, now, kCost, burst);
}

TEST(Lease, BatchIsASmallShareOfBurstAndNoneUnderTheThreshold)
{
	EXPECT_EQ(sluice_lease_batch(0), 0u);
	EXPECT_EQ(sluice_lease_batch(2 * SLUICE_LEASE_BURST_SHARE - 1), 1u); // no leasing
	EXPECT_EQ(sluice_lease_batch(2 * SLUICE_LEASE_BURST_SHARE), 2u);
	EXPECT_EQ(sluice_lease_batch(1000), 15u);
	EXPECT_EQ(sluice_lease_batch(20000), __u64(SLUICE_LEASE_MAX));
	EXPECT_EQ(sluice_lease_batch(1000000), __u64(SLUICE_LEASE_MAX));
	for (__u64 burst : {1ull, 100ull, 128ull, 1000ull, 5000ull, 20000ull, 1000000ull})
		EXPECT_LE(sluice_lease_batch(burst) * SLUICE_LEASE_BURST_SHARE, burst) << burst;
}

// A batch of n at one instant leaves both slots exactly where n single
// admissions at that instant would, whichever slot is the fuller.
TEST(Lease, BatchIsNSingleAdmissionsAtItsInstant)
{
	constexpr __u64 kBurst = 100;
	const __u64 burst_ns = kBurst * kCost;
	for (__u64 ca : {0ull, 500ull, 3 * kCost, 40 * kCost + 17, kBurst * kCost})
		for (__u64 cb : {0ull, 2 * kCost + 999, 20 * kCost, kBurst * kCost})
			for (__u64 want : {1ull, 2ull, 5ull, 32ull}) {
				SCOPED_TRACE(testing::Message() << "ca " << ca << " cb " << cb << " want " << want);
				sluice_slot a{kNow - ca}, b{kNow - cb}, sa = a, sb = b;
				__u64 singles = 0;
				while (singles < want && sluice_admit2(&sa, &sb, kNow, kCost, burst_ns))
					singles++;
				const __u64 n = sluice_admit2_n(&a, &b, kNow, kCost, burst_ns, want);
				EXPECT_EQ(n, singles);
				EXPECT_EQ(a.empty_at, sa.empty_at);
				EXPECT_EQ(b.empty_at, sb.empty_at);
				EXPECT_LE(tokens(a, kNow, kBurst), kBurst);
				EXPECT_LE(tokens(b, kNow, kBurst), kBurst);
			}
}

// What limit() does (buckets_path.bpf.h): a pair this CPU's entry does not
// lease takes one inlined try; only a lost swap, or a pair the entry leases,
// goes to sluice_admit2_leased (the global function).
int admit_as_xdp(sluice_lease *l, sluice_slot *a, sluice_slot *b, __u64 now, __u64 burst)
{
	if (sluice_lease_held(l, kPair))
		return sluice_admit2_leased(l, kPair, a, b, now, kCost, burst, 0);
	const int r = sluice_admit2_once(a, b, now, kCost, burst * kCost);
	return r >= 0 ? r : sluice_admit2_leased(l, kPair, a, b, now, kCost, burst, 1);
}

// One CPU alone never loses a swap, so it never leases: every frame pays its
// pair, its entry stays empty, and it is held to burst then the rate exactly
// as sluice_admit2 holds it.
TEST(Lease, ACpuAloneNeverLeases)
{
	constexpr __u64 kBurst = 1000;
	sluice_lease l{};
	sluice_slot a{0}, b{0}, ra{0}, rb{0};
	__u64 admitted = 0, ref = 0;
	for (__u64 t = 0; t < 3 * kSecond / 1000; t += 100) {
		for (int i = 0; i < 3; i++) {
			admitted += sluice_admit2_leased(&l, kPair, &a, &b, kNow + t, kCost, kBurst, 0);
			ref += sluice_admit2(&ra, &rb, kNow + t, kCost, kBurst * kCost);
		}
		ASSERT_EQ(l.tokens, 0u);
		ASSERT_EQ(a.empty_at, ra.empty_at);
		ASSERT_EQ(b.empty_at, rb.empty_at);
	}
	EXPECT_EQ(admitted, ref);
	EXPECT_EQ(l.pair, 0u) << "the entry was never taken";
}

// A lost swap (another CPU's admission lands between this CPU's read and its
// swap) makes this CPU lease a batch: it is admitted, keeps batch - 1, and
// admits that many more frames without touching the slots; then, its entry
// leasing that pair, it takes the next batch at once.
TEST(Lease, ALostSwapLeasesABatchAndItsFramesTouchNoSlot)
{
	constexpr __u64 kBurst = 20000;
	const __u64 batch = sluice_lease_batch(kBurst);
	sluice_lease l{};
	sluice_slot a{0}, b{0};
	lease_hook::before_cas = [&] { ASSERT_TRUE(sluice_admit2(&a, &b, kNow, kCost, kBurst * kCost)); };
	ASSERT_TRUE(admit_as_xdp(&l, &a, &b, kNow, kBurst));
	EXPECT_EQ(l.pair, kPair);
	EXPECT_EQ(l.cost_ns, kCost);
	EXPECT_EQ(l.tokens, batch - 1);
	// Taken: 1 by the other CPU, batch by this one.
	EXPECT_EQ(tokens(a, kNow, kBurst), kBurst - 1 - batch);
	EXPECT_EQ(tokens(b, kNow, kBurst), kBurst - 1 - batch);

	const sluice_slot sa = a, sb = b;
	const int calls = lease_hook::cas_calls;
	for (__u64 i = 0; i < batch - 1; i++)
		ASSERT_TRUE(sluice_admit2_leased(&l, kPair, &a, &b, kNow + i, kCost, kBurst, 0));
	EXPECT_EQ(l.tokens, 0u);
	EXPECT_EQ(a.empty_at, sa.empty_at);
	EXPECT_EQ(b.empty_at, sb.empty_at);
	EXPECT_EQ(lease_hook::cas_calls, calls) << "a leased frame swaps nothing";

	// The entry still leases the pair: its next frame takes a batch at once.
	ASSERT_TRUE(sluice_admit2_leased(&l, kPair, &a, &b, kNow + batch, kCost, kBurst, 0));
	EXPECT_EQ(l.tokens, batch - 1);
	EXPECT_EQ(lease_hook::cas_calls, calls + 2);
}

// A batch is never more than the fuller slot's whole tokens: a pair near
// empty leases what it has, and an empty one refuses.
TEST(Lease, ABatchTakesNoMoreThanThePairHolds)
{
	constexpr __u64 kBurst = 20000;
	sluice_lease l{kPair, kCost, kNow, 0}; // leasing this pair, spent
	sluice_slot a{kNow - 5 * kCost - 999}, b{kNow - 2 * kCost};
	ASSERT_TRUE(sluice_admit2_leased(&l, kPair, &a, &b, kNow, kCost, kBurst, 0));
	EXPECT_EQ(l.tokens, 4u);
	EXPECT_EQ(a.empty_at, kNow - 999) << "the remainder stays in the credit";
	EXPECT_EQ(b.empty_at, kNow);
	for (int i = 0; i < 4; i++)
		ASSERT_TRUE(sluice_admit2_leased(&l, kPair, &a, &b, kNow, kCost, kBurst, 0));
	EXPECT_FALSE(sluice_admit2_leased(&l, kPair, &a, &b, kNow, kCost, kBurst, 0));
	EXPECT_EQ(l.tokens, 0u);
}

// The entry: a lease at another cost (the rate changed, the ramp moved) is
// not spent; another pair's lease that still holds tokens is not taken over
// until idle for SLUICE_LEASE_IDLE_NS; under the threshold nothing leases.
TEST(Lease, EntryRules)
{
	constexpr __u64 kBurst = 20000;
	const __u64 batch = sluice_lease_batch(kBurst);
	{
		SCOPED_TRACE("another cost");
		sluice_lease l{kPair, 2 * kCost, kNow, 5};
		sluice_slot a{0}, b{0};
		ASSERT_TRUE(sluice_admit2_leased(&l, kPair, &a, &b, kNow, kCost, kBurst, 0));
		EXPECT_EQ(tokens(a, kNow, kBurst), kBurst - batch) << "its pair, at a new cost: a new batch";
		EXPECT_EQ(l.cost_ns, kCost);
		EXPECT_EQ(l.tokens, batch - 1);
	}
	for (bool idle : {false, true}) {
		SCOPED_TRACE(idle ? "another pair's, idle" : "another pair's, in use");
		const __u64 last = idle ? kNow - SLUICE_LEASE_IDLE_NS - 1 : kNow - SLUICE_LEASE_IDLE_NS;
		const __u64 foreign = (3ull << 32) | 4;
		sluice_lease l{foreign, kCost, last, 5};
		sluice_slot a{0}, b{0};
		lease_hook::before_cas = [&] { ASSERT_TRUE(sluice_admit2(&a, &b, kNow, kCost, kBurst * kCost)); };
		ASSERT_TRUE(admit_as_xdp(&l, &a, &b, kNow, kBurst));
		EXPECT_EQ(l.pair, idle ? kPair : foreign);
		EXPECT_EQ(l.tokens, idle ? batch - 1 : 5u);
		EXPECT_EQ(tokens(a, kNow, kBurst), kBurst - 1 - (idle ? batch : 1));
	}
	{
		SCOPED_TRACE("burst under the threshold");
		const __u64 small = 2 * SLUICE_LEASE_BURST_SHARE - 1;
		sluice_lease l{kPair, kCost, kNow, 0};
		sluice_slot a{0}, b{0};
		lease_hook::before_cas = [&] { ASSERT_TRUE(sluice_admit2(&a, &b, kNow, kCost, small * kCost)); };
		ASSERT_TRUE(sluice_admit2_leased(&l, kPair, &a, &b, kNow, kCost, small, 0));
		EXPECT_EQ(l.tokens, 0u);
		EXPECT_EQ(tokens(a, kNow, small), small - 2);
		sluice_lease held{kPair, kCost, kNow, 3}; // a lease from before burst was lowered: not spent
		sluice_slot c{kNow}, d{kNow};              // empty
		EXPECT_FALSE(sluice_admit2_leased(&held, kPair, &c, &d, kNow, kCost, small, 0));
	}
	ASSERT_FALSE(lease_hook::before_cas);
}

// The inlined try, lost: the leased path's first try takes a batch.
TEST(Lease, ALostInlinedTryLeasesOnTheNextTry)
{
	constexpr __u64 kBurst = 20000;
	const __u64 batch = sluice_lease_batch(kBurst);
	sluice_lease l{};
	sluice_slot a{0}, b{0};
	ASSERT_FALSE(sluice_lease_held(&l, kPair));
	ASSERT_EQ(sluice_admit2_once(&a, &b, kNow, kCost, kBurst * kCost), 1); // alone: one token, no lease
	ASSERT_FALSE(sluice_lease_held(&l, kPair));
	sluice_slot c{0}, d{0};
	lease_hook::before_cas = [&] { ASSERT_EQ(sluice_admit2_once(&c, &d, kNow, kCost, kBurst * kCost), 1); };
	ASSERT_TRUE(admit_as_xdp(&l, &c, &d, kNow, kBurst)); // lost once, then leased
	EXPECT_TRUE(sluice_lease_held(&l, kPair));
	EXPECT_EQ(l.tokens, batch - 1);
	// Both slots paid 1 (the other CPU) + batch: exactly that many admissions.
	EXPECT_EQ(sluice_credit(c.empty_at, kNow, kBurst * kCost), (kBurst - 1 - batch) * kCost);
	EXPECT_EQ(sluice_credit(d.empty_at, kNow, kBurst * kCost), (kBurst - 1 - batch) * kCost);
}

// Two CPUs' entries on one pair, frames interleaved at random over a fake
// clock, every so often a swap lost to the other CPU: at every write
// 0 <= tokens <= burst, the admitted count never exceeds the tokens taken
// from the pair, which never exceed burst + elapsed / cost, and what the two
// entries hold at the end (stranded) is at most (batch - 1) each.
TEST(Lease, TwoCpusStayWithinTheExactBound)
{
	for (__u64 burst : {128ull, 1000ull, 20000ull}) {
		SCOPED_TRACE(burst);
		const __u64 burst_ns = burst * kCost, batch = sluice_lease_batch(burst);
		std::mt19937_64 rng(burst);
		sluice_lease l[2]{};
		sluice_slot a{0}, b{0};
		__u64 admitted = 0, t = 0;
		for (int i = 0; i < 400000; i++) {
			t += rng() % 3 == 0 ? rng() % 700 : 0;
			const __u64 now = kNow + t;
			const int cpu = int(rng() % 2);
			if (rng() % 8 == 0) // the other CPU's admission lands before this CPU's swap
				lease_hook::before_cas = [&, now] {
					admitted += admit_as_xdp(&l[1 - cpu], &a, &b, now, burst);
				};
			lease_hook::now = now;
			lease_hook::burst_ns = burst_ns;
			admitted += admit_as_xdp(&l[cpu], &a, &b, now, burst);
			lease_hook::burst_ns = 0;
			lease_hook::before_cas = nullptr;
			ASSERT_EQ(lease_hook::bad_writes, 0) << "a write outside 0 <= tokens <= burst at frame " << i;
			ASSERT_LE(sluice_credit(a.empty_at, now, burst_ns), burst_ns);
			const __u64 held = l[0].tokens + l[1].tokens;
			// Taken from the pair = admitted + held; never more than the bound.
			ASSERT_LE(admitted + held, burst + t / kCost) << "at frame " << i;
			ASSERT_LE(l[0].tokens, batch ? batch - 1 : 0);
			ASSERT_LE(l[1].tokens, batch ? batch - 1 : 0);
		}
		// Admitted frames from a pair drained at every tick: within what the
		// leases held of the bound.
		EXPECT_GE(admitted + 2 * (batch ? batch - 1 : 0), burst + t / kCost - 2) << "under-admitted";
	}
}

} // namespace
