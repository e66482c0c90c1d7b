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

} // namespace sluice
