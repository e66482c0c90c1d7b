#include "logic/upstream.h"

#include "logic/classes.h"

#include <algorithm>

namespace sluice {

std::string UpstreamRule::str() const
{
	std::string s = "dst " + destination.str();
	if (source)
		s += " src " + source->str();
	if (protocol)
		s += " proto " + std::to_string(*protocol);
	if (dport)
		s += " dport " + std::to_string(*dport);
	s += action == UpstreamAction::discard ? " discard" : " rate " + std::to_string(rate_bytes) + " B/s";
	return s;
}

Status check_rule(const UpstreamGuards &guards, const UpstreamRule &rule, const ProtectedSource &is_protected)
{
	std::string what = "upstream rule '" + rule.str() + "' refused: ";
	bool own = std::any_of(guards.own.begin(), guards.own.end(),
			       [&](const Cidr &p) { return contains(p, rule.destination); });
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
			if (auto why = is_protected(*rule.source))
				return refused(what + "its source is " + *why + ": never announced");
	}
	if (rule.dport && (!rule.protocol || (*rule.protocol != 6 && *rule.protocol != 17)))
		return refused(what + "a destination port needs protocol TCP (6) or UDP (17)");
	if (rule.action == UpstreamAction::rate_limit && rule.rate_bytes == 0)
		return refused(what + "a rate limit of 0 B/s is a discard: say discard");
	return {};
}

std::vector<UpstreamRule> source_rules(const UpstreamGuards &guards, const Cidr &source)
{
	std::vector<UpstreamRule> out;
	for (const auto &own : guards.own)
		if (own.addr.family == source.addr.family)
			out.push_back(UpstreamRule{own, source, std::nullopt, std::nullopt, UpstreamAction::discard, 0});
	return out;
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

} // namespace sluice
