// outcomes.h - what the policy counts, read from SLUICE_OUTCOME_TABLE's verdict
// column (bpf/sluice_abi.h), so an outcome added there is counted here without
// a second list to keep in step.
//
//   incoming  every frame that is an IP source's verdict: each outcome whose
//             verdict is admitted, dropped or answered (a SYN answered with a
//             cookie), not non-IP, malformed, or would-drop (which overlays
//             the others in a dry run)
//   admitted  the serving trip signal: frames the buckets and budgets passed
//             (passed, standing, newcomer, and cookie_proved: a handshake a
//             cookie completed); allowlisted frames are the operator's, not a
//             flood's
//   dropped   every outcome whose verdict is dropped
#pragma once

#include "bpf/sluice_abi.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

enum class Verdict { admitted, dropped, answered, none };

namespace detail {
constexpr std::array<Verdict, SLUICE_OUTCOMES> outcome_verdicts()
{
	std::array<Verdict, SLUICE_OUTCOMES> v{};
#define SLUICE_OUTCOME_VERDICT(sym, value, name, verdict) v[value] = Verdict::verdict;
	SLUICE_OUTCOME_TABLE(SLUICE_OUTCOME_VERDICT)
#undef SLUICE_OUTCOME_VERDICT
	return v;
}
} // namespace detail

// The verdict column, indexed by outcome.
inline constexpr std::array<Verdict, SLUICE_OUTCOMES> kOutcomeVerdicts = detail::outcome_verdicts();

// The policy's admitted outcomes.
inline constexpr std::array<uint32_t, 4> kPolicyAdmitted = {SLUICE_PASSED, SLUICE_STANDING, SLUICE_NEWCOMER,
							      SLUICE_COOKIE_PROVED};

using OutcomeCounters = std::array<sluice_counter, SLUICE_OUTCOMES>;

// The names column, indexed by outcome, and the outcome of a name.
namespace detail {
constexpr std::array<std::string_view, SLUICE_OUTCOMES> outcome_names()
{
	std::array<std::string_view, SLUICE_OUTCOMES> n{};
#define SLUICE_OUTCOME_NAME_OF(sym, value, name, verdict) n[value] = name;
	SLUICE_OUTCOME_TABLE(SLUICE_OUTCOME_NAME_OF)
#undef SLUICE_OUTCOME_NAME_OF
	return n;
}
} // namespace detail
inline constexpr std::array<std::string_view, SLUICE_OUTCOMES> kOutcomeNames = detail::outcome_names();
std::optional<uint32_t> outcome_named(std::string_view name);

// Capture's outcome masks (bit 1 << outcome): by default every dropped
// verdict and malformed (dropped too, though no source's verdict); --passed
// adds every admitted one. Neither has SLUICE_CAPTURE_NEVER's.
uint32_t capture_dropped_mask();
uint32_t capture_admitted_mask();
// "drop_rate,drop_shed,..." in value order.
std::string outcome_list(uint32_t mask);

uint64_t incoming_packets(const OutcomeCounters &c);
uint64_t admitted_packets(const OutcomeCounters &c); // kPolicyAdmitted's
uint64_t dropped_packets(const OutcomeCounters &c);

} // namespace sluice
