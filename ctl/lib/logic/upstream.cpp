#include "logic/upstream.h"

#include "bpf/sluice_abi.h"
#include "logic/classes.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace sluice {

std::string UpstreamRule::str() const
{
	if (kind == UpstreamKind::blackhole_source)
		return "blackhole src " + destination.str();
	if (kind == UpstreamKind::blackhole_destination)
		return "blackhole dst " + destination.str();
	std::string s = "dst " + destination.str();
	if (source)
		s += " src " + source->str();
	if (protocol)
		s += " proto " + std::to_string(*protocol);
	if (dport)
		s += " dport " + std::to_string(*dport);
	if (tcp_flags) {
		static const char hex[] = "0123456789abcdef";
		s += std::string(" tcp-flags 0x") + hex[*tcp_flags >> 4] + hex[*tcp_flags & 15];
	}
	if (length)
		s += " length " + std::to_string(*length);
	s += action == UpstreamAction::discard ? " discard" : " rate " + std::to_string(rate_bytes) + " B/s";
	return s;
}

std::optional<RuleReach> rule_reach(const UpstreamRule &rule)
{
	if (rule.kind == UpstreamKind::blackhole_destination)
		return std::nullopt;
	if (rule.kind == UpstreamKind::blackhole_source)
		return RuleReach{rule.destination, std::nullopt, std::nullopt}; // everything from the prefix
	// FlowSpec: its source, or every address of its family (the prefix /0).
	Cidr sources = rule.source ? *rule.source : Cidr{Address{rule.family(), {}}, 0};
	return RuleReach{sources, rule.protocol, rule.dport};
}

Status check_rule(const UpstreamGuards &guards, const UpstreamRule &rule, const ProtectedSource &is_protected)
{
	std::string what = "upstream rule '" + rule.str() + "' refused: ";
	bool own = std::any_of(guards.own.begin(), guards.own.end(),
			       [&](const Cidr &p) { return contains(p, rule.destination); });
	uint32_t host = rule.family() == Family::v4 ? 32 : 128;
	if (rule.kind == UpstreamKind::blackhole_destination) {
		if (!own)
			return refused(what + "its address is outside --upstream-prefixes");
		if (rule.destination.prefix != host)
			return refused(what + "a destination blackhole is of one address (/" + std::to_string(host) + ")");
		return {};
	}
	if (rule.kind == UpstreamKind::blackhole_source) {
		// The announced prefix is a source's: never one of the operator's
		// own (that would blackhole the operator's own network).
		bool overlaps = std::any_of(guards.own.begin(), guards.own.end(), [&](const Cidr &p) {
			return contains(p, rule.destination) || contains(rule.destination, p);
		});
		if (overlaps)
			return refused(what + "it overlaps --upstream-prefixes: a blackhole of the operator's own network");
		uint32_t min = rule.family() == Family::v4 ? guards.min_source4 : guards.min_source6;
		if (rule.destination.prefix < min)
			return refused(what + "its source prefix is shorter than /" + std::to_string(min) + " (--upstream-min-prefix" +
				       (rule.family() == Family::v4 ? "4" : "6") + ")");
		if (is_protected)
			if (auto why = is_protected(*rule_reach(rule)))
				return refused(what + "it would drop " + *why + ": never announced");
		return {};
	}
	if (!own)
		return refused(what + "its destination is outside --upstream-prefixes");
	if (rule.source) {
		if (rule.source->addr.family != rule.family())
			return refused(what + "its source and destination are of different families");
		uint32_t min = rule.family() == Family::v4 ? guards.min_source4 : guards.min_source6;
		if (rule.source->prefix < min)
			return refused(what + "its source prefix is shorter than /" + std::to_string(min) + " (--upstream-min-prefix" +
				       (rule.family() == Family::v4 ? "4" : "6") + ")");
		if (is_protected)
			if (auto why = is_protected(*rule_reach(rule)))
				return refused(what + "it would drop " + *why + ": never announced");
	} else if (is_protected) {
		// No source: the rule drops whatever matches it, from anyone (the
		// flood's signature). Dropping a protected source with it is the
		// last resort's call, the operator's alone.
		if (auto why = is_protected(*rule_reach(rule)))
			return refused(what + "it names no source, so it would drop " + *why +
				       " too: a last resort, announced only with --upstream-blackhole");
	}
	if (rule.dport && (!rule.protocol || (*rule.protocol != 6 && *rule.protocol != 17)))
		return refused(what + "a destination port needs protocol TCP (6) or UDP (17)");
	if (rule.tcp_flags && (!rule.protocol || *rule.protocol != 6))
		return refused(what + "TCP flags need protocol TCP (6)");
	if (rule.action == UpstreamAction::rate_limit && rule.rate_bytes == 0)
		return refused(what + "a rate limit of 0 B/s is a discard: say discard");
	return {};
}

bool standing_reaches(const StandingProof &entry, const RuleReach &reach, PortSpan ephemeral)
{
	if (!reach.protocol)
		return true;
	if (entry.port != 0 || entry.reason == SLUICE_BY_UDP)
		return *reach.protocol == 17 && (!reach.dport || (*reach.dport >= ephemeral.lo && *reach.dport <= ephemeral.hi));
	switch (entry.reason) {
	case SLUICE_BY_ACCEPTED:
	case SLUICE_BY_CONNECTED:
	case SLUICE_BY_EXISTING:
	case SLUICE_BY_COOKIE:
		return *reach.protocol == 6;
	default: // observed, or a reason of another build: anything
		return true;
	}
}

namespace {
// The address's bytes with the bits past `prefix` cleared (aggregate()'s
// result, a byte at a time: a scan asks this of every standing entry).
std::array<uint8_t, 16> masked_bytes(const Address &a, uint32_t prefix)
{
	std::array<uint8_t, 16> b = a.bytes;
	const uint32_t bits = a.family == Family::v4 ? 32 : 128;
	prefix = std::min(prefix, bits);
	if (prefix % 8)
		b[prefix / 8] &= static_cast<uint8_t>(0xff00u >> (prefix % 8));
	for (uint32_t i = (prefix + 7) / 8; i < 16; i++)
		b[i] = 0;
	return b;
}
} // namespace

ReachIndex::ReachIndex(const std::vector<RuleReach> &reaches)
{
	for (size_t i = 0; i < reaches.size(); i++) {
		const Cidr &c = reaches[i].sources;
		auto g = std::find_if(groups_.begin(), groups_.end(), [&](const Group &x) {
			return x.family == c.addr.family && x.prefix == c.prefix;
		});
		if (g == groups_.end())
			g = groups_.insert(groups_.end(), Group{c.addr.family, c.prefix, {}});
		g->keys.emplace_back(masked_bytes(c.addr, c.prefix), i);
	}
	for (auto &g : groups_)
		std::sort(g.keys.begin(), g.keys.end());
}

void ReachIndex::holding(const Address &addr, const std::function<void(size_t)> &fn) const
{
	for (const auto &g : groups_) {
		if (g.family != addr.family)
			continue;
		auto key = masked_bytes(addr, g.prefix);
		auto lo = std::lower_bound(g.keys.begin(), g.keys.end(), std::make_pair(key, size_t(0)));
		for (auto it = lo; it != g.keys.end() && it->first == key; ++it)
			fn(it->second);
	}
}

Result<std::string> source_proof(const Cidr &source, const ProvedSource &is_proved)
{
	std::string what = "upstream: " + source.str() + " refused: ";
	if (!is_proved)
		return refused(what + "nothing here can prove its address");
	auto proof = is_proved(source);
	if (!proof)
		return refused(what + "whether its address is proved cannot be read (" + proof.error().describe() + ")");
	if (!*proof)
		return refused(what + "its address is not proved (no standing it earned by a handshake or a cookie was "
				      "revoked for abuse: no penalty runs); a flood's samples alone never name a source, since "
				      "a spoofed flood carries whatever source address it likes");
	return **proof;
}

std::vector<UpstreamRule> source_rules(const UpstreamGuards &guards, const Cidr &source)
{
	std::vector<UpstreamRule> out;
	for (const auto &own : guards.own)
		if (own.addr.family == source.addr.family) {
			UpstreamRule r;
			r.destination = own;
			r.source = source;
			out.push_back(r);
		}
	return out;
}

std::vector<UpstreamRule> source_rules(const UpstreamGuards &guards, const Cidr &source, UpstreamMode mode,
				       UpstreamAction action, uint64_t rate_bytes)
{
	if (mode == UpstreamMode::blackhole) {
		UpstreamRule r;
		r.destination = source;
		r.kind = UpstreamKind::blackhole_source;
		return {r};
	}
	auto out = source_rules(guards, source);
	for (auto &r : out) {
		r.action = action;
		r.rate_bytes = action == UpstreamAction::rate_limit ? rate_bytes : 0;
	}
	return out;
}

UpstreamRule destination_blackhole(const Address &address)
{
	UpstreamRule r;
	r.destination = Cidr{address, address.family == Family::v4 ? 32u : 128u};
	r.kind = UpstreamKind::blackhole_destination;
	return r;
}

UpstreamPlan plan_upstream(const std::vector<UpstreamWanted> &wanted, const std::vector<UpstreamRule> &speaker,
			   const std::vector<UpstreamHeld> &mine, size_t max, double hold_s, double now_s)
{
	UpstreamPlan plan;
	auto on_speaker = [&](const UpstreamRule &r) { return std::find(speaker.begin(), speaker.end(), r) != speaker.end(); };
	std::vector<UpstreamRule> kept; // wanted and within max, each once
	for (const auto &w : wanted) {
		if (std::find(kept.begin(), kept.end(), w.rule) != kept.end())
			continue;
		if (kept.size() >= max) {
			plan.over_max.push_back(w);
			continue;
		}
		kept.push_back(w.rule);
		if (on_speaker(w.rule))
			plan.adopt.push_back(w.rule);
		else
			plan.announce.push_back(w);
	}
	for (const auto &r : speaker) {
		if (std::find(kept.begin(), kept.end(), r) != kept.end())
			continue;
		auto known = std::find_if(mine.begin(), mine.end(), [&](const UpstreamHeld &h) { return h.rule == r; });
		if (known != mine.end() && known->held && now_s - known->since_s < hold_s)
			plan.holding.push_back(r);
		else
			plan.withdraw.push_back(r);
	}
	// Announced ones still held count against max: the next plan sees them on
	// the speaker. An announcement over max waits for a withdrawal.
	size_t busy = kept.size() + plan.holding.size();
	while (busy > max && !plan.announce.empty()) {
		plan.over_max.insert(plan.over_max.begin(), plan.announce.back());
		plan.announce.pop_back();
		busy--;
	}
	return plan;
}

namespace {
std::string whole(double v)
{
	return std::to_string(static_cast<uint64_t>(v < 0 ? 0 : v + 0.5));
}
} // namespace

std::string FloodTrigger::over(const FloodReading &r) const
{
	std::string s;
	if (cfg_.pps && r.pps && *r.pps > double(cfg_.pps))
		s = "arriving " + whole(*r.pps) + " pps (over --upstream-pps " + std::to_string(cfg_.pps) + ")";
	if (cfg_.bps && r.bps && *r.bps > double(cfg_.bps))
		s += (s.empty() ? "arriving " : ", ") + whole(*r.bps) + " bit/s (over --upstream-bps " +
		     std::to_string(cfg_.bps) + ")";
	return s;
}

FloodTrigger::Step FloodTrigger::step(const FloodReading &r)
{
	Step out;
	if (!r.shedding) {
		out.ended_now = firing_;
		firing_ = false;
		over_since_s_.reset();
		why_.clear();
		return out;
	}
	std::string over_now = cfg_.enabled() ? over(r) : std::string();
	if (over_now.empty())
		over_since_s_.reset();
	else if (!over_since_s_)
		over_since_s_ = r.now_s;
	if (!firing_ && over_since_s_ && r.now_s - *over_since_s_ >= cfg_.after_s) {
		firing_ = true;
		out.fired_now = true;
		why_ = over_now + " for " + whole(r.now_s - *over_since_s_) + " s while shedding";
	}
	out.firing = firing_;
	out.why = why_;
	return out;
}

FloodSources flood_sources(const std::vector<DroppedSource> &heaviest, uint64_t total_samples, size_t top)
{
	FloodSources out;
	if (total_samples == 0 || top == 0) {
		out.why = "no drop samples in the window";
		return out;
	}
	auto sure = [](const DroppedSource &d) { return d.samples > d.error ? d.samples - d.error : 0; };
	uint64_t top_sure = 0;
	size_t n = std::min(top, heaviest.size());
	for (size_t i = 0; i < n; i++)
		top_sure += sure(heaviest[i]);
	double share = double(top_sure) / double(total_samples);
	if (share < kFloodTopShare) {
		out.spread = true;
		out.why = "the " + std::to_string(n) + " heaviest sources carry " + whole(share * 100) +
			  "% of the drop samples (under " + whole(kFloodTopShare * 100) +
			  "%): a flood spread over many sources (spoofed?), which source rules would not stop";
		return out;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t s = sure(heaviest[i]);
		if (s >= kFloodSourceSamples && double(s) >= kFloodSourceShare * double(total_samples))
			out.sources.push_back(heaviest[i]);
	}
	out.why = "the " + std::to_string(n) + " heaviest sources carry " + whole(share * 100) + "% of the drop samples";
	return out;
}

void SignatureTally::add(const SignatureSample &s)
{
	samples++;
	dst.add(s.dst);
	proto.add(s.proto);
	if (s.proto == 6 || s.proto == 17)
		dport.add(s.dport);
	if (s.proto == 6)
		tcp_flags.add(s.tcp_flags);
	length.add(s.length);
}

std::optional<Address> attacked_address(const SignatureTally &t)
{
	auto top = t.dst.top();
	if (t.samples < kSignatureMinSamples || !top || double(top->second) < kSignatureShare * double(t.samples))
		return std::nullopt;
	return top->first;
}

Signature flood_signature(const SignatureTally &t, const UpstreamGuards &guards, UpstreamAction action,
			  uint64_t rate_bytes)
{
	Signature out;
	if (t.samples < kSignatureMinSamples) {
		out.why = std::to_string(t.samples) + " drop samples in the window (a signature needs " +
			  std::to_string(kSignatureMinSamples) + ")";
		return out;
	}
	// A component's most common value, when it carries kSignatureShare of
	// every sample of the window (not only of those the component applies
	// to: a port carried by 90% of the UDP samples but 40% of all is no
	// signature of the flood); its share said either way.
	std::string said;
	auto kept = [&](const auto &counts, const std::string &name, auto show) {
		using V = std::decay_t<decltype(counts.value[0])>;
		auto top = counts.top();
		if (!top) {
			said += (said.empty() ? "" : ", ") + name + " -";
			return std::optional<V>();
		}
		double share = double(top->second) / double(t.samples);
		bool keep = share >= kSignatureShare;
		said += (said.empty() ? "" : ", ") + name + " " + show(top->first) + " (" +
			std::to_string(std::lround(share * 100)) + "%" + (keep ? "" : ", left out") + ")";
		return keep ? std::optional<V>(top->first) : std::optional<V>();
	};
	auto num = [](auto v) { return std::to_string(v); };
	auto dst = kept(t.dst, "dst", [](const Address &a) { return a.str(); });
	auto proto = kept(t.proto, "proto", num);
	std::optional<uint16_t> dport;
	std::optional<uint8_t> flags;
	if (proto && (*proto == 6 || *proto == 17))
		dport = kept(t.dport, "dport", num);
	if (proto && *proto == 6)
		flags = kept(t.tcp_flags, "tcp-flags", num);
	auto length = kept(t.length, "length", num);
	out.why = said;
	if (!dst || !proto) {
		out.why += "; no signature: " + std::string(!dst ? "the destination" : "the protocol") + " is not one in " +
			   std::to_string(static_cast<int>(kSignatureShare * 100)) + "% of the samples";
		return out;
	}
	UpstreamRule r;
	r.destination = Cidr{*dst, dst->family == Family::v4 ? 32u : 128u};
	bool own = std::any_of(guards.own.begin(), guards.own.end(),
			       [&](const Cidr &p) { return contains(p, r.destination); });
	if (!own) {
		out.why += "; no signature: " + r.destination.str() + " is outside --upstream-prefixes";
		return out;
	}
	r.protocol = proto;
	r.dport = dport;
	r.tcp_flags = flags;
	r.length = length;
	r.action = action;
	r.rate_bytes = action == UpstreamAction::rate_limit ? rate_bytes : 0;
	out.rule = r;
	return out;
}

} // namespace sluice
