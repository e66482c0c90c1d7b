// managed_standing.cpp - ManagedInterface's part in earned, bounded trust:
// the fair share written once a period, revocation by the governor and by
// the operator (docs/architecture.md, "Standing buys a share").
#include "sluiced/managed_interface.h"

#include "base/clock.h"
#include "base/log.h"
#include "base/standing_reason.h"
#include "logic/budgets.h"
#include "logic/classes.h"
#include "logic/source.h"
#include "logic/upstream.h"
#include "sluiced/local_sockets.h"

namespace sluice {

void ManagedInterface::govern_standing(double now_s, sluice_config &next)
{
	if (!governor_)
		return;
	// Nothing reached a standing bucket this period (no frame was admitted
	// as standing, none refused by a rate or by the closed valve) and no
	// share is in force: the table's scan would find no demand, so it is
	// skipped.
	if (rates_ && (*rates_)[SLUICE_STANDING].pps == 0 && (*rates_)[SLUICE_DROP_RATE].pps == 0 &&
	    (*rates_)[SLUICE_DROP_VALVE].pps == 0 &&
	    governor_->level_pps() == 0 && governor_->newer_level_pps() == 0) {
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
	const uint64_t newer_cost = step->newer_level_pps ? cost_ns_for_rate(step->newer_level_pps) : 0;
	const uint32_t line = newer_cost ? step->tenure_tick : 0;
	const uint64_t capacity = governor_->config().capacity_pps;
	if (cost == was.standing_share_cost_ns && newer_cost == was.standing_newer_share_cost_ns &&
	    line == was.standing_tenure_tick && was.standing_capacity_pps == capacity)
		return;
	next.standing_share_cost_ns = cost;
	next.standing_share_pps = step->level_pps;
	next.standing_newer_share_cost_ns = newer_cost;
	next.standing_newer_share_pps = step->newer_level_pps;
	next.standing_tenure_tick = line;
	next.standing_capacity_pps = capacity;
	const bool contended = step->level_pps || step->newer_level_pps;
	const bool was_contended = was.standing_share_pps || was.standing_newer_share_pps;
	const auto share = [](uint64_t pps) { return pps ? std::to_string(pps) + " pps" : std::string("their own rate"); };
	if (contended && !was_contended && step->tenure_held && step->tenured)
		log_warn(name_ + ": standing sources ask " + std::to_string(uint64_t(step->demand_pps)) + " pps together (" +
			 std::to_string(step->asking) + " of them), over the " + std::to_string(capacity) +
			 " pps they may take: the " + std::to_string(step->tenured) + " with standing from over " +
			 std::to_string(uint64_t(governor_->config().tenure_s)) + " s before held to " +
			 share(step->level_pps) + " each, the " + std::to_string(step->asking - step->tenured) +
			 " granted since to " + share(step->newer_level_pps ? step->newer_level_pps : step->level_pps) +
			 " each");
	else if (contended && !was_contended)
		log_warn(name_ + ": standing sources ask " + std::to_string(uint64_t(step->demand_pps)) + " pps together (" +
			 std::to_string(step->asking) + " of them), over the " + std::to_string(capacity) +
			 " pps they may take: each held to a share of " +
			 std::to_string(step->newer_level_pps ? step->newer_level_pps : step->level_pps) + " pps");
	else if (!contended && was_contended)
		log_info(name_ + ": standing sources ask " + std::to_string(uint64_t(step->demand_pps)) +
			 " pps together, within " + std::to_string(capacity) + " pps: no share in force");
	else
		log_debug(name_ + ": standing share " + share(step->level_pps) + ", granted after the tenure line " +
			  share(step->newer_level_pps ? step->newer_level_pps : step->level_pps));
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

Result<std::vector<std::optional<std::string>>>
ManagedInterface::upstream_protection(const std::vector<RuleReach> &reaches) const
{
	std::vector<std::optional<std::string>> out(reaches.size());
	if (reaches.empty())
		return out;
	const auto failed = [this](Error e, const std::string &what) {
		e.message = name_ + ": " + what + ": " + e.message;
		return std::unexpected(std::move(e));
	};
	// The allowlist passes every frame of its prefixes, whatever the state:
	// a rule overlapping one, either way, would drop what it passes.
	auto allow = list_show(ListKind::allow);
	if (!allow)
		return failed(allow.error(), "reading the allow list");
	for (size_t i = 0; i < reaches.size(); i++)
		for (const auto &a : allow->cidrs)
			if (contains(a, reaches[i].sources) || contains(reaches[i].sources, a)) {
				out[i] = "an allowlisted prefix (" + a.str() + " on " + name_ + ")";
				break;
			}
	// Standing: a reach of one source's prefix (or inside it) that names no
	// protocol is one set read, as a frame's lookup; anything wider, or
	// naming a protocol (the signature: every source of its family), is
	// answered by one scan of the table for all of them (bounded by the
	// table's fixed size: 7 to 26 ms at the default 65,536 sets).
	const sluice_settings &st = dp_->settings();
	const StandingTable table = dp_->standing();
	std::vector<size_t> wide;
	for (size_t i = 0; i < reaches.size(); i++) {
		if (out[i])
			continue;
		const Cidr &c = reaches[i].sources;
		const uint32_t grain = c.addr.family == Family::v4 ? st.v4_prefix : st.v6_prefix;
		if (reaches[i].protocol || c.prefix < grain) {
			wide.push_back(i);
			continue;
		}
		auto live = table.has_standing(c.addr);
		if (!live)
			return failed(live.error(), "reading the standing of " + c.addr.str());
		if (*live)
			out[i] = "a source with standing (" + source_slots(st, c.addr).source.str() + " on " + name_ + ")";
	}
	if (wide.empty())
		return out;
	std::vector<RuleReach> asked;
	for (size_t i : wide)
		asked.push_back(reaches[i]);
	const ReachIndex index(asked);
	const PortSpan ephemeral{uint16_t(st.ephemeral_lo), uint16_t(st.ephemeral_hi)};
	auto ok = table.for_each_live([&](const StandingWay &w) {
		index.holding(w.source, [&](size_t k) {
			const size_t i = wide[k];
			if (out[i] || !standing_reaches(StandingProof{w.reason, w.port}, reaches[i], ephemeral))
				return;
			const uint32_t grain = w.source.family == Family::v4 ? st.v4_prefix : st.v6_prefix;
			out[i] = "a source with standing (" + Cidr{w.source, grain}.str() + " on " + name_ + ", " +
				 std::string(standing_reason_name(sluice_standing_reason(w.reason))) +
				 (w.port ? " from port " + std::to_string(w.port) : "") + ")";
		});
	});
	if (!ok)
		return failed(ok.error(), "scanning the standing table");
	return out;
}

Result<std::optional<std::string>> ManagedInterface::upstream_proof(const Address &addr) const
{
	// The penalty is the trace of a revocation: the daemon's governor
	// writes it when a source with standing (earned by a handshake, a
	// cookie or a grant) sent far over its share, the operator's `sluicectl
	// standing revoke` when told to. No penalty map (older pins): nothing
	// is proved.
	auto p = dp_->standing().penalty(addr);
	if (!p)
		return std::unexpected(p.error());
	if (!*p)
		return std::optional<std::string>{};
	const uint64_t now = realtime_ns();
	const uint64_t left_s = (*p)->until_realtime_ns > now ? ((*p)->until_realtime_ns - now + 500000000) / 1000000000 : 0;
	return std::optional<std::string>{"its standing was revoked (revocation " + std::to_string((*p)->revocations) +
					  "; barred for another " + std::to_string(left_s) + " s)"};
}

} // namespace sluice
