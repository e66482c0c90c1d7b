// The audit's invariant on slot values alone, no kernel: which slots are
// outside 0 <= tokens <= burst, against the bucket math the program uses.
#include "logic/audit_check.h"

#include "bpf/bucket.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace sluice {
namespace {

constexpr uint64_t kNow = SLUICE_TIME_BIAS + 5'000'000'000ull; // 5 s after boot
constexpr uint64_t kCost = 1'000'000;                          // 1000 pps
constexpr uint64_t kBurst = 100;

TEST(AuditCheck, NoSlotsNoViolations)
{
	EXPECT_TRUE(slots_outside_invariant({}, 0, kNow).empty());
}

TEST(AuditCheck, EveryWriteTheControlPlaneCanMakeIsInside)
{
	// 0..burst tokens written at now (SlotTable::write_checked's form), a
	// zeroed slot (reads full) and a slot idle for long (capped at burst).
	std::vector<uint64_t> values;
	for (uint64_t t = 0; t <= kBurst; t++)
		values.push_back(sluice_empty_at_for(kNow, t, kCost));
	values.push_back(0);
	values.push_back(kNow - 3600 * SLUICE_NSEC_PER_SEC);
	EXPECT_TRUE(slots_outside_invariant(values, 0, kNow).empty());
	for (uint64_t v : values)
		EXPECT_LE(sluice_tokens(v, kNow, kCost, kBurst), kBurst);
}

TEST(AuditCheck, EmptyAtNowIsZeroTokensAndInside)
{
	std::vector<uint64_t> values{kNow};
	EXPECT_TRUE(slots_outside_invariant(values, 0, kNow).empty());
	EXPECT_EQ(sluice_tokens(kNow, kNow, kCost, kBurst), 0u);
}

TEST(AuditCheck, EmptyAfterNowIsBelowZeroAndOutside)
{
	// One nanosecond in the future is already less than nothing; the program
	// reads such a slot as empty, so only the audit can see it.
	std::vector<uint64_t> values{kNow + 1, kNow + kCost * kBurst, std::numeric_limits<uint64_t>::max()};
	EXPECT_EQ(slots_outside_invariant(values, 0, kNow), (std::vector<uint32_t>{0, 1, 2}));
	EXPECT_EQ(sluice_tokens(kNow + 1, kNow, kCost, kBurst), 0u);
}

TEST(AuditCheck, NamesTheSlotsByTheirIndexInTheTable)
{
	// values[i] is slot first + i: a chunk from the middle of a sweep.
	std::vector<uint64_t> values{kNow, kNow + 7, 0, kNow - 1, kNow + 1};
	EXPECT_EQ(slots_outside_invariant(values, 4096, kNow), (std::vector<uint32_t>{4097, 4100}));
}

TEST(AuditCheck, ChecksAgainstTheNowItIsGiven)
{
	// The sweep reads the clock after the slots, so a write made between the
	// read and the clock is in the past, never a false violation.
	std::vector<uint64_t> values{kNow + 10, kNow + 20};
	EXPECT_EQ(slots_outside_invariant(values, 0, kNow + 10), (std::vector<uint32_t>{1}));
	EXPECT_TRUE(slots_outside_invariant(values, 0, kNow + 20).empty());
}

} // namespace
} // namespace sluice
