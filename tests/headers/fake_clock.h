// Shared helpers of the bucket unit tests: a fake clock (the caller passes
// `now`, exactly as the XDP program does) and small views of a slot.
#pragma once

#include "bpf/bucket.h"

#include <cstdint>

namespace sluice::unit {

// Boot: the monotonic clock at 0, plus the bias every timestamp carries.
inline constexpr __u64 kBoot = SLUICE_TIME_BIAS;

// The fake clock: `ns` nanoseconds after boot, as the data plane would pass it.
constexpr __u64 at(__u64 ns)
{
	return kBoot + ns;
}

inline constexpr __u64 kSecond = SLUICE_NSEC_PER_SEC;
inline constexpr __u64 kDay = 86400 * kSecond;
inline constexpr __u64 kYear = 31557600 * kSecond; // Julian year
// The largest clock reading bucket.h promises to handle: < 2^62 ns of uptime.
inline constexpr __u64 kClockMax = (1ull << 62) - 1;

// A slot holding exactly `tokens` whole tokens (and no remainder) at `now`.
inline sluice_slot slot_with_tokens(__u64 now, __u64 tokens, __u64 cost)
{
	return sluice_slot{sluice_empty_at_for(now, tokens, cost)};
}

inline __u64 tokens_of(const sluice_slot &s, __u64 now, __u64 cost, __u64 burst)
{
	return sluice_tokens(s.empty_at, now, cost, burst);
}

inline __u64 credit_of(const sluice_slot &s, __u64 now, __u64 cost, __u64 burst)
{
	return sluice_credit(s.empty_at, now, burst * cost);
}

// One admission attempt of a one-choice source (a == b).
inline bool admit1(sluice_slot &s, __u64 now, __u64 cost, __u64 burst)
{
	return sluice_admit2(&s, &s, now, cost, burst * cost) == 1;
}

inline bool admit_pair(sluice_slot &a, sluice_slot &b, __u64 now, __u64 cost, __u64 burst)
{
	return sluice_admit2(&a, &b, now, cost, burst * cost) == 1;
}

// Admit until the first drop at one instant; returns how many were admitted.
inline __u64 drain_pair(sluice_slot &a, sluice_slot &b, __u64 now, __u64 cost, __u64 burst)
{
	__u64 n = 0;
	while (admit_pair(a, b, now, cost, burst))
		n++;
	return n;
}

}  // namespace sluice::unit
