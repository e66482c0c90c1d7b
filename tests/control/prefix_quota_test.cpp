// The per-prefix quota's choices (logic/prefix_quota.h): the counts written
// back (read as the data plane reads them, bpf/standing.h's
// sluice_prefix_closed), and which entries of a prefix over its quota go
// first.
#include "logic/prefix_quota.h"

#include "bpf/standing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace sluice {
namespace {

// Does the data plane refuse a new weak source of this prefix?
bool bit_set(PrefixQuota &q, uint32_t bit)
{
	return sluice_prefix_closed(q.prefix_counts()[bit], q.quota(), 1);
}

std::vector<uint32_t> indices(std::span<const QuotaEviction> ev)
{
	std::vector<uint32_t> out;
	for (const auto &e : ev)
		out.push_back(e.index);
	std::sort(out.begin(), out.end());
	return out;
}

TEST(PrefixQuota, AnEmptyTableHasNoFullPrefix)
{
	PrefixQuota q(1024, 4);
	q.begin_sweep();
	EXPECT_EQ(q.end_sweep(), 0u);
	EXPECT_EQ(q.prefixes_full(), 0u);
	auto counts = q.prefix_counts();
	EXPECT_EQ(counts.size(), 1024u);
	EXPECT_TRUE(std::all_of(counts.begin(), counts.end(), [](uint32_t w) { return w == 0; }));
	EXPECT_TRUE(q.choose().empty());
}

TEST(PrefixQuota, APrefixAtItsQuotaIsFullButLosesNothing)
{
	PrefixQuota q(1024, 4);
	q.begin_sweep();
	for (int i = 0; i < 4; i++)
		q.count(77, false);
	for (int i = 0; i < 3; i++)
		q.count(78, false);
	EXPECT_EQ(q.end_sweep(), 0u) << "at the quota is not over it";
	EXPECT_TRUE(bit_set(q, 77));
	EXPECT_FALSE(bit_set(q, 78)) << "one under the quota: still takes new sources";
	EXPECT_EQ(q.prefixes_full(), 1u);
	EXPECT_FALSE(q.over(77));
	q.offer(77, 1, 1, 1, 100);
	EXPECT_TRUE(q.choose().empty()) << "a prefix within its quota gives up nothing";
}

TEST(PrefixQuota, TheExcessGoesWeakestProofFirstThenOldest)
{
	PrefixQuota q(1024, 3);
	q.begin_sweep();
	for (int i = 0; i < 6; i++)
		q.count(5, i < 2);
	q.count(9, false); // another prefix, within its quota
	EXPECT_EQ(q.end_sweep(), 1u);
	EXPECT_TRUE(q.over(5));
	EXPECT_FALSE(q.over(9));
	// index, proof (1 udp, 2 observed, 3 handshake), age in ticks
	q.offer(5, 100, 0xa, 3, 1);  // handshake, seen just now: stays
	q.offer(5, 101, 0xb, 3, 50); // handshake, idle: goes after the weaker ones
	q.offer(5, 102, 0xc, 1, 0);  // udp, fresh: goes (weakest proof)
	q.offer(5, 103, 0xd, 2, 0);  // observed: goes
	q.offer(5, 104, 0xe, 3, 2);  // handshake, recent: stays
	q.offer(5, 105, 0xf, 3, 3);  // handshake: stays (the excess is 3)
	q.offer(9, 200, 0x1, 1, 99); // not over: never offered
	auto chosen = q.choose();
	EXPECT_EQ(indices(chosen), (std::vector<uint32_t>{101, 102, 103}));
	for (const auto &e : chosen)
		EXPECT_EQ(e.bit, 5u);
	EXPECT_TRUE(bit_set(q, 5)) << "after the excess goes it still holds its quota";
	EXPECT_EQ(q.prefix_counts()[5], sluice_prefix_count(3, 1)) << "101, a handshake, left the count: 100 is left";
	EXPECT_EQ(q.prefix_counts()[9], sluice_prefix_count(1, 0));
}

// Does the data plane refuse a new handshake of this prefix?
bool handshakes_full(PrefixQuota &q, uint32_t bit)
{
	return sluice_prefix_closed(q.prefix_counts()[bit], q.quota(), SLUICE_PROOF_HANDSHAKE);
}

TEST(PrefixQuota, WeakEntriesNeverCloseAPrefixToHandshakes)
{
	PrefixQuota q(1024, 4);
	q.begin_sweep();
	for (int i = 0; i < 10; i++)
		q.count(40, false); // a local user's UDP grants
	for (int i = 0; i < 3; i++)
		q.count(41, true);
	q.count(41, false);
	for (int i = 0; i < 4; i++)
		q.count(42, true);
	q.end_sweep();
	EXPECT_TRUE(bit_set(q, 40));
	EXPECT_FALSE(handshakes_full(q, 40)) << "UDP grants alone: a real client's handshake still earns standing";
	EXPECT_TRUE(bit_set(q, 41));
	EXPECT_FALSE(handshakes_full(q, 41));
	EXPECT_TRUE(handshakes_full(q, 42)) << "a quota of handshakes: a new handshake is refused too";
	EXPECT_EQ(q.prefix_counts()[41], sluice_prefix_count(4, 3));
}

TEST(PrefixQuota, AHandshakeWithRecentTrafficGoesOnlyWhenNothingWeakerIsLeft)
{
	PrefixQuota q(64, 1);
	q.begin_sweep();
	q.count(3, true);
	q.count(3, true);
	q.end_sweep();
	q.offer(3, 10, 1, 3, 0);       // the regular: a handshake, seen now
	q.offer(3, 11, 2, 3, 0x1000);  // a handshake long idle
	EXPECT_EQ(indices(q.choose()), (std::vector<uint32_t>{11}));
}

TEST(PrefixQuota, ASweepStartsItsCountsAfresh)
{
	PrefixQuota q(64, 2);
	q.begin_sweep();
	for (int i = 0; i < 5; i++)
		q.count(1, false);
	EXPECT_EQ(q.end_sweep(), 1u);
	q.begin_sweep();
	q.count(1, false);
	EXPECT_EQ(q.end_sweep(), 0u);
	EXPECT_FALSE(bit_set(q, 1)) << "the prefix's entries lapsed: it may take new sources again";
}

TEST(PrefixQuota, ACountSaturatesAtSixteenBits)
{
	PrefixQuota q(64, 1);
	q.begin_sweep();
	for (int i = 0; i < 70000; i++)
		q.count(4, true);
	q.end_sweep();
	EXPECT_EQ(q.prefix_counts()[4], 0xffffffffu) << "entries and handshakes each stop at 65535, neither spills";
	EXPECT_TRUE(handshakes_full(q, 4));
}

TEST(PrefixQuota, GrantsTheDataPlaneMadeDuringTheScanAreAddedNotLost)
{
	PrefixQuota q(4, 8);
	q.begin_sweep();
	q.count(0, true);
	q.count(1, false);
	q.end_sweep();
	// the map before the scan, and after it: bit 0 rose by 2 entries, one of
	// them a handshake; bit 1 fell (written meanwhile: no rise); bit 2 rose
	// by 3 weak ones; bit 3 is unchanged
	const std::vector<uint32_t> before{sluice_prefix_count(1, 1), sluice_prefix_count(5, 0), 0,
					   sluice_prefix_count(2, 0)};
	const std::vector<uint32_t> after{sluice_prefix_count(3, 2), sluice_prefix_count(4, 0), sluice_prefix_count(3, 0),
					  sluice_prefix_count(2, 0)};
	auto counts = q.prefix_counts(before, after);
	EXPECT_EQ(counts[0], sluice_prefix_count(3, 2));
	EXPECT_EQ(counts[1], sluice_prefix_count(1, 0));
	EXPECT_EQ(counts[2], sluice_prefix_count(3, 0));
	EXPECT_EQ(counts[3], 0u) << "entries gone since the last write leave the count";
	EXPECT_EQ(q.prefix_counts(before, std::vector<uint32_t>(3))[0], sluice_prefix_count(1, 1))
		<< "spans of another size: the recount alone";
}

TEST(PrefixQuota, OffersBeyondItsCapacityWaitForTheNextSweep)
{
	PrefixQuota q(64, 1, /*candidates=*/4);
	q.begin_sweep();
	for (int i = 0; i < 10; i++)
		q.count(2, false);
	q.end_sweep();
	for (uint32_t i = 0; i < 10; i++)
		q.offer(2, i, i + 1, 1, i);
	EXPECT_EQ(q.choose().size(), 4u) << "at most its capacity a sweep; the rest next time";
}

} // namespace
} // namespace sluice
