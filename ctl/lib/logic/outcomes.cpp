#include "logic/outcomes.h"

namespace sluice {

namespace {
uint64_t packets_with(const OutcomeCounters &c, bool incoming, bool dropped)
{
	uint64_t n = 0;
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++)
		if ((incoming && kOutcomeVerdicts[k] != Verdict::none) ||
		    (dropped && kOutcomeVerdicts[k] == Verdict::dropped))
			n += c[k].packets;
	return n;
}
} // namespace

uint64_t incoming_packets(const OutcomeCounters &c)
{
	return packets_with(c, true, true);
}

uint64_t admitted_packets(const OutcomeCounters &c)
{
	uint64_t n = 0;
	for (uint32_t k : kPolicyAdmitted)
		n += c[k].packets;
	return n;
}

uint64_t dropped_packets(const OutcomeCounters &c)
{
	return packets_with(c, false, true);
}

std::optional<uint32_t> outcome_named(std::string_view name)
{
	for (uint32_t o = 0; o < SLUICE_OUTCOMES; o++)
		if (kOutcomeNames[o] == name)
			return o;
	return std::nullopt;
}

uint32_t capture_dropped_mask()
{
	uint32_t mask = 1u << SLUICE_MALFORMED;
	for (uint32_t o = 0; o < SLUICE_OUTCOMES; o++)
		if (kOutcomeVerdicts[o] == Verdict::dropped)
			mask |= 1u << o;
	return mask & ~uint32_t(SLUICE_CAPTURE_NEVER);
}

uint32_t capture_admitted_mask()
{
	uint32_t mask = 0;
	for (uint32_t o = 0; o < SLUICE_OUTCOMES; o++)
		if (kOutcomeVerdicts[o] == Verdict::admitted)
			mask |= 1u << o;
	return mask & ~uint32_t(SLUICE_CAPTURE_NEVER);
}

std::string outcome_list(uint32_t mask)
{
	std::string out;
	for (uint32_t o = 0; o < SLUICE_OUTCOMES; o++)
		if (mask & (1u << o))
			out += (out.empty() ? "" : ",") + std::string(kOutcomeNames[o]);
	return out;
}

} // namespace sluice
