// managed_standing.cpp - ManagedInterface's part in earned, bounded trust:
// the fair share written once a period, revocation by the governor and by
// the operator (docs/architecture.md, "Standing buys a share").
#include "sluiced/managed_interface.h"

#include "base/clock.h"
#include "base/log.h"
#include "logic/budgets.h"
#include "sluiced/local_sockets.h"

namespace sluice {

void ManagedInterface::govern_standing(double now_s, sluice_config &next)
{
	if (!governor_)
		return;
	// Nothing reached a standing bucket this period (no frame was admitted
	// as standing, none refused by a rate) and no share is in force: the
	// table's scan would find no demand, so it is skipped.
	if (rates_ && (*rates_)[SLUICE_STANDING].pps == 0 && (*rates_)[SLUICE_DROP_RATE].pps == 0 &&
	    governor_->level_pps() == 0) {
		governor_->idle(now_s);
		return;
	}
	const sluice_config was = next; // the share in force (no other step of a tick changes it)
	auto step = governor_->step(now_s, dp_->standing(), was.standing_rate_pps, name_);
	if (!step) {
		log_error(name_ + ": the standing share: " + step.error().describe());
		return;
	}
	const uint64_t cost = step->level_pps ? cost_ns_for_rate(step->level_pps) : 0;
	const uint64_t capacity = governor_->config().capacity_pps;
	if (cost == was.standing_share_cost_ns && was.standing_capacity_pps == capacity)
		return;
	next.standing_share_cost_ns = cost;
	next.standing_share_pps = step->level_pps;
	next.standing_capacity_pps = capacity;
	if (step->level_pps && !was.standing_share_pps)
		log_warn(name_ + ": standing sources ask " + std::to_string(uint64_t(step->demand_pps)) + " pps together (" +
			 std::to_string(step->asking) + " of them), over the " + std::to_string(capacity) +
			 " pps they may take: each held to a share of " + std::to_string(step->level_pps) + " pps");
	else if (!step->level_pps && was.standing_share_pps)
		log_info(name_ + ": standing sources ask " + std::to_string(uint64_t(step->demand_pps)) +
			 " pps together, within " + std::to_string(capacity) + " pps: no share in force");
	else
		log_debug(name_ + ": standing share " + std::to_string(step->level_pps) + " pps");
}

Result<size_t> ManagedInterface::grant_established_peers(double now_s)
{
	peers_granted_s_ = now_s;
	const auto &settings = dp_->settings();
	auto peers = established_peers(PortSpan{uint16_t(settings.ephemeral_lo), uint16_t(settings.ephemeral_hi)});
	if (!peers)
		return std::unexpected(peers.error());
	// A TCP peer completed a handshake; a connected UDP socket's peer is
	// what a UDP feeder's grant is, for its port alone (so a local user's
	// open UDP sockets buy no more than their connect() did).
	if (auto ok = dp_->standing().grant(peers->tcp, SLUICE_BY_EXISTING); !ok)
		return std::unexpected(ok.error());
	for (const auto &[addr, port] : peers->udp)
		if (auto ok = dp_->standing().grant(std::span<const Address>(&addr, 1), SLUICE_BY_UDP, port); !ok)
			return std::unexpected(ok.error());
	return peers->tcp.size() + peers->udp.size();
}

Result<RevocationEvent> ManagedInterface::revoke_standing(const std::string &addr_text)
{
	auto addr = parse_address(addr_text);
	if (!addr)
		return std::unexpected(addr.error());
	if (!governor_)
		return refused(name_ + ": standing is not governed here");
	const RevocationConfig &rc = governor_->config().revoke;
	auto r = dp_->standing().revoke(*addr, [&rc](uint32_t before) { return penalty_s_for(before, rc); });
	if (!r)
		return std::unexpected(r.error());
	RevocationEvent e;
	e.at_realtime_ns = realtime_ns();
	e.source = r->source;
	e.reason = r->reason;
	e.revocations = r->revocations;
	e.until_realtime_ns = r->until_realtime_ns;
	e.by_operator = true;
	e.why = std::string(r->had_standing ? "revoked" : "no standing to revoke; barred") + " by the operator";
	log_warn(name_ + ": standing of " + e.source.str() + " " + e.why + " for " +
		 std::to_string((e.until_realtime_ns - e.at_realtime_ns + 500000000) / 1000000000) + " s (revocation " +
		 std::to_string(e.revocations) + ")");
	governor_->record(e);
	return e;
}

} // namespace sluice
