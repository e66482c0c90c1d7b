#include "sluiced/upstream_announcer.h"

#include "base/clock.h"
#include "base/defaults.h"
#include "base/log.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <pthread.h>

namespace sluice {

namespace {

std::string operator_reason(const std::string &iface, const Cidr &source)
{
	return "operator: sluicectl deny add " + iface + " " + source.str() + " --upstream";
}

// The source a rule is about: a FlowSpec rule's source, a source-based
// blackhole's prefix.
std::optional<Cidr> rule_source(const UpstreamRule &r)
{
	if (r.kind == UpstreamKind::blackhole_source)
		return r.destination;
	if (r.kind == UpstreamKind::flowspec)
		return r.source;
	return std::nullopt;
}

bool has_rule(const std::vector<UpstreamWanted> &v, const UpstreamRule &r)
{
	return std::any_of(v.begin(), v.end(), [&](const UpstreamWanted &w) { return w.rule == r; });
}

std::string action_text(const UpstreamAutoConfig &a)
{
	return a.action == UpstreamAction::discard ? "discard" : "rate " + std::to_string(a.rate_bytes) + " B/s";
}

} // namespace

std::vector<UpstreamRule> UpstreamAnnouncer::operator_rules(const Cidr &source) const
{
	return source_rules(opts_.guards, source, opts_.mode, UpstreamAction::discard, 0);
}

bool UpstreamAnnouncer::wanted_anywhere(const UpstreamRule &r) const
{
	if (has_rule(wanted_, r))
		return true;
	for (const auto &[_, v] : policy_)
		if (has_rule(v, r))
			return true;
	for (const auto &[_, a] : auto_)
		if (has_rule(a.wanted, r))
			return true;
	return false;
}

ProtectedSource UpstreamAnnouncer::protection(const std::string &iface, const std::vector<UpstreamRule> &rules) const
{
	std::vector<RuleReach> reaches;
	for (const auto &r : rules)
		if (auto reach = rule_reach(r); reach && std::find(reaches.begin(), reaches.end(), *reach) == reaches.end())
			reaches.push_back(*reach);
	// Fail closed: no hook, or an answer missing, refuses.
	std::vector<std::optional<std::string>> answers;
	if (hooks_.protection && !reaches.empty())
		answers = hooks_.protection(iface, reaches);
	answers.resize(reaches.size(), std::optional<std::string>("a source of unknown protection (no answer on " + iface + ")"));
	return [reaches = std::move(reaches), answers = std::move(answers)](const RuleReach &r) -> std::optional<std::string> {
		auto it = std::find(reaches.begin(), reaches.end(), r);
		if (it == reaches.end())
			return "a source of unknown protection (its reach " + r.sources.str() + " was not asked about)";
		return answers[static_cast<size_t>(it - reaches.begin())];
	};
}

bool UpstreamAnnouncer::protection_waived(const UpstreamRule &r) const
{
	// (The only FlowSpec rules without a source are the flood's signatures.)
	return opts_.last_resort && r.kind == UpstreamKind::flowspec && !r.source;
}

void UpstreamAnnouncer::refuse_auto(Auto &a, const UpstreamWanted &w, const std::string &why)
{
	auto it = std::find_if(a.refused.begin(), a.refused.end(), [&](const auto &x) { return x.first.rule == w.rule; });
	bool same = it != a.refused.end() && it->second == why;
	if (it == a.refused.end())
		a.refused.emplace_back(w, why);
	else
		*it = {w, why}; // the reason as of now (its sample counts)
	if (same)
		return;
	refusals_++;
	log_warn(why + " (automatic, " + w.iface + "): not announced");
}

void UpstreamAnnouncer::unrefuse_auto(Auto &a, const UpstreamRule &r)
{
	std::erase_if(a.refused, [&](const auto &x) { return x.first.rule == r; });
}

UpstreamAnnouncer::UpstreamAnnouncer(UpstreamOptions opts, Hooks hooks)
	: opts_(std::move(opts)), hooks_(std::move(hooks)), speaker_(opts_.speaker)
{
	// The worker blocks every signal: SIGTERM and the rest go to the loop's
	// signalfd, never to a thread that would take their default action.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	worker_ = std::thread([this] { work(); });
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

Result<std::vector<UpstreamRule>> UpstreamAnnouncer::check_sources(const std::string &iface,
								   const std::vector<Cidr> &sources) const
{
	std::vector<UpstreamRule> out, all;
	for (const auto &s : sources) {
		auto rules = operator_rules(s);
		all.insert(all.end(), rules.begin(), rules.end());
	}
	auto is_protected = protection(iface, all);
	for (const auto &s : sources) {
		auto rules = operator_rules(s);
		if (rules.empty())
			return refused("upstream: " + s.str() + " refused: no --upstream-prefixes of its family to match on");
		for (const auto &r : rules) {
			if (auto ok = check_rule(opts_.guards, r, is_protected); !ok)
				return std::unexpected(ok.error());
			out.push_back(r);
		}
	}
	// --upstream-max: refused here, before anything changes, rather than
	// left wanted and never announced.
	size_t total = wanted_.size();
	for (size_t i = 0; i < out.size(); i++) {
		bool known = std::any_of(wanted_.begin(), wanted_.end(), [&](const UpstreamWanted &w) { return w.rule == out[i]; });
		bool repeated = std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(i), out[i]) != out.begin() + static_cast<std::ptrdiff_t>(i);
		total += !known && !repeated;
	}
	if (total > opts_.guards.max)
		return refused("upstream: " + std::to_string(total) + " rules would be wanted, over --upstream-max " +
			       std::to_string(opts_.guards.max) + ": nothing changed");
	return out;
}

Result<std::vector<UpstreamRule>> UpstreamAnnouncer::add_sources(const std::string &iface,
								 const std::vector<Cidr> &sources, double now_s)
{
	auto rules = check_sources(iface, sources);
	if (!rules)
		return rules;
	for (const auto &s : sources)
		for (auto &r : operator_rules(s)) {
			bool known = std::any_of(wanted_.begin(), wanted_.end(),
						 [&](const UpstreamWanted &w) { return w.rule == r && w.iface == iface; });
			if (!known)
				wanted_.push_back({r, iface, operator_reason(iface, s), false});
		}
	reconcile(now_s, "deny add --upstream on " + iface);
	return rules;
}

void UpstreamAnnouncer::remove_sources(const std::string &iface, const std::vector<Cidr> &sources, double now_s)
{
	auto gone = [&](const UpstreamWanted &w) {
		auto src = rule_source(w.rule);
		return w.iface == iface && src && std::find(sources.begin(), sources.end(), *src) != sources.end();
	};
	size_t erased = std::erase_if(wanted_, gone);
	if (auto p = policy_.find(iface); p != policy_.end())
		erased += std::erase_if(p->second, gone);
	if (erased)
		reconcile(now_s, "deny del on " + iface);
}

void UpstreamAnnouncer::forget_interface(const std::string &iface, double now_s)
{
	size_t erased = std::erase_if(wanted_, [&](const UpstreamWanted &w) { return w.iface == iface; });
	erased += policy_.erase(iface) + auto_.erase(iface);
	if (erased)
		reconcile(now_s, iface + " no longer managed");
}

void UpstreamAnnouncer::set_policy_sources(const std::string &iface, const std::vector<Cidr> &sources,
					   const std::string &file, double now_s)
{
	std::vector<UpstreamWanted> next;
	for (const auto &s : sources) {
		auto rules = operator_rules(s);
		if (rules.empty())
			log_warn("upstream: " + s.str() + " (" + file + ", upstream: true) not announced: no --upstream-prefixes of its family to match on");
		for (const auto &r : rules)
			if (!has_rule(next, r))
				next.push_back({r, iface, "policy: " + file + " deny " + s.str() + " (upstream: true)", false});
	}
	auto &cur = policy_[iface];
	if (cur == next)
		return;
	cur = std::move(next);
	reconcile(now_s, "policy " + file + " on " + iface);
}

void UpstreamAnnouncer::observe(const std::string &iface, const FloodSignals &sig, double now_s)
{
	if (!opts_.automatic.enabled())
		return;
	auto it = auto_.try_emplace(iface, opts_.automatic).first;
	Auto &a = it->second;
	auto step = a.trigger.step(sig.reading);
	bool changed = false;
	if (step.ended_now) {
		log_info("upstream: " + iface + ": the breaker left shedding: the automatic rules (" +
			 std::to_string(a.wanted.size()) + ") are withdrawn once their hold (" +
			 std::to_string(static_cast<int>(opts_.hold_s)) + " s) is over");
		changed = !a.wanted.empty();
		a.wanted.clear();
		a.refused.clear();
		a.unmatched.clear();
		a.signature_recheck_s = 0;
		a.why.clear();
		a.sources.clear();
		a.signature.clear();
		a.spread = false;
	}
	if (step.fired_now) {
		log_warn("upstream: " + iface + ": " + step.why + ": announcing the flood's signature and the heaviest dropped "
			 "sources whose addresses are proved, then abused (at most " + std::to_string(opts_.automatic.top) +
			 ") upstream");
		a.why = step.why;
	}
	if (!step.firing) {
		if (changed)
			reconcile(now_s, iface + " left shedding");
		return;
	}
	// While firing, each period: the heaviest sources not yet wanted, up
	// to --upstream-top sources on this interface, each through the guards
	// and then the proof (logic/upstream.h, source_proof): heavy in the
	// samples is what a spoofed flood makes any address it names.
	auto picked = flood_sources(sig.heaviest, sig.samples, opts_.automatic.top);
	if (step.fired_now || picked.spread != a.spread)
		log_info("upstream: " + iface + ": " + picked.why);
	a.spread = picked.spread;
	a.sources = picked.why;
	auto auto_sources = [&] {
		std::vector<Cidr> out;
		for (const auto &w : a.wanted)
			if (auto src = rule_source(w.rule); src && std::find(out.begin(), out.end(), *src) == out.end())
				out.push_back(*src);
		return out;
	};
	// The flood's signature (logic/upstream.h, flood_signature): one rule
	// per interface while firing, the first the window's samples give; it
	// goes first among this interface's rules (--upstream-max keeps the
	// first), as it matches the flood whatever its sources, spoofed or not.
	// (The only FlowSpec rule of a.wanted without a source: source rules
	// carry theirs, the last resort is a blackhole.) A signature the
	// protection guard refused is looked at again every
	// kUpstreamReconcileS (an allowlist entry removed, standing lapsed).
	bool have_signature = std::any_of(a.wanted.begin(), a.wanted.end(), [](const UpstreamWanted &w) {
		return w.rule.kind == UpstreamKind::flowspec && !w.rule.source;
	});
	std::optional<UpstreamWanted> signature;
	if (!have_signature && now_s >= a.signature_recheck_s) {
		auto found = flood_signature(sig.signature, opts_.guards, opts_.automatic.action, opts_.automatic.rate_bytes);
		if (found.why != a.signature)
			log_info("upstream: " + iface + ": the flood's signature: " + found.why);
		a.signature = found.why;
		if (found.rule)
			signature = UpstreamWanted{*found.rule, iface,
						   "automatic: " + iface + " " + a.why + "; signature of " +
							   std::to_string(sig.signature.samples) + " drop samples: " + found.why,
						   true};
	}
	// The candidates' rules, so that one question to the daemon covers them
	// all (the signature's may scan the standing table).
	std::vector<std::pair<DroppedSource, std::vector<UpstreamRule>>> candidates;
	std::vector<UpstreamRule> asked;
	{
		auto have = auto_sources();
		for (const auto &d : picked.sources) {
			if (std::find(have.begin(), have.end(), d.source) != have.end())
				continue;
			auto rules = source_rules(opts_.guards, d.source, opts_.mode, opts_.automatic.action,
						  opts_.automatic.rate_bytes);
			asked.insert(asked.end(), rules.begin(), rules.end());
			candidates.emplace_back(d, std::move(rules));
		}
	}
	if (signature)
		asked.push_back(signature->rule);
	auto is_protected = protection(iface, asked);
	for (const auto &[d, rules] : candidates) {
		if (auto_sources().size() >= opts_.automatic.top)
			break;
		std::string reason = "automatic: " + iface + " " + a.why + "; " + d.source.str() + " heaviest dropped (" +
				     std::to_string(d.samples) + " samples)";
		std::optional<std::string> refusal;
		if (rules.empty())
			refusal = "upstream: " + d.source.str() + " refused: no --upstream-prefixes of its family to match on";
		for (const auto &r : rules)
			if (auto ok = check_rule(opts_.guards, r, is_protected); !ok && !refusal)
				refusal = ok.error().message;
		if (!refusal) {
			ProvedSource is_proved;
			if (hooks_.is_proved)
				is_proved = [&](const Cidr &c) { return hooks_.is_proved(iface, c); };
			if (auto proof = source_proof(d.source, is_proved))
				reason += "; proved, then abused: " + *proof;
			else
				refusal = proof.error().message;
		}
		if (refusal) {
			for (const auto &r : rules)
				refuse_auto(a, {r, iface, reason, true}, *refusal);
			if (rules.empty() && std::find(a.unmatched.begin(), a.unmatched.end(), d.source) == a.unmatched.end()) {
				a.unmatched.push_back(d.source);
				refusals_++;
				log_warn(*refusal + " (automatic, " + iface + "): not announced");
			}
			continue;
		}
		for (const auto &r : rules) {
			unrefuse_auto(a, r);
			if (!has_rule(a.wanted, r)) {
				a.wanted.push_back({r, iface, reason, true});
				changed = true;
			}
		}
	}
	if (signature) {
		auto ok = check_rule(opts_.guards, signature->rule, is_protected);
		if (!ok && opts_.last_resort && check_rule(opts_.guards, signature->rule, nullptr)) {
			// The operator opted in to the last resort, which takes the
			// address offline: a signature that drops protected sources'
			// frames of its shape is less than that.
			log_warn("upstream: " + iface + ": LAST RESORT (--upstream-blackhole): " +
				 std::string(opts_.dry_run ? "would announce " : "announcing ") + signature->rule.str() +
				 " although " + ok.error().message);
			signature->reason += "; LAST RESORT (--upstream-blackhole): announced over protected sources";
			ok = {};
		}
		if (!ok) {
			refuse_auto(a, *signature, ok.error().message);
			a.signature_recheck_s = now_s + defaults::kUpstreamReconcileS;
		} else {
			unrefuse_auto(a, signature->rule);
			a.wanted.insert(a.wanted.begin(), *signature);
			changed = true;
		}
	}
	// The last resort (--upstream-blackhole), within --upstream-prefixes:
	// the address actually attacked when the drop samples name one
	// (logic/upstream.h, attacked_address); until they do (too few samples,
	// or no one destination), the interface's own addresses of the flood's
	// families.
	if (opts_.last_resort) {
		std::vector<Address> targets;
		auto attacked = attacked_address(sig.signature);
		if (attacked) {
			targets.push_back(*attacked);
		} else {
			bool v4 = false, v6 = false;
			for (const auto &d : sig.heaviest)
				(d.source.addr.family == Family::v4 ? v4 : v6) = true;
			if (!v4 && !v6)
				v4 = v6 = true;
			for (const auto &addr : sig.addresses)
				if (addr.family == Family::v4 ? v4 : v6)
					targets.push_back(addr);
		}
		for (const auto &addr : targets) {
			UpstreamRule r = destination_blackhole(addr);
			if (!check_rule(opts_.guards, r, nullptr) || has_rule(a.wanted, r))
				continue;
			log_warn("upstream: " + iface + ": LAST RESORT (--upstream-blackhole): " +
				 std::string(opts_.dry_run ? "would announce " : "announcing ") + r.str() +
				 " with the blackhole community: the upstream drops EVERY packet to " + addr.str() +
				 ", which is offline from outside until the breaker leaves shedding and the hold (" +
				 std::to_string(static_cast<int>(opts_.hold_s)) + " s) is over");
			a.wanted.push_back({r, iface, "last resort (--upstream-blackhole): " + iface + " " + a.why + "; " +
							  addr.str() + " taken offline upstream" +
							  (attacked ? " (the drop samples' destination)" : ""),
					    true});
			changed = true;
		}
	}
	if (changed)
		reconcile(now_s, "automatic on " + iface);
}

void UpstreamAnnouncer::tick(double now_s)
{
	// Not started: the worker's first listing may be in (a read of the
	// published copy, no call).
	if (now_s >= next_reconcile_s_ || (!started_ && state_.read().first_rib))
		reconcile(now_s, started_ ? "periodic" : "start");
}

// The wanted rules, each still through the guards: an allowlist entry or
// standing that came after the announcement withdraws it.
std::vector<UpstreamWanted> UpstreamAnnouncer::wanted_now()
{
	// In priority order (--upstream-max keeps the first): the operator's,
	// the policy file's, the automatic ones.
	std::vector<UpstreamWanted> all = wanted_;
	for (const auto &[_, v] : policy_)
		all.insert(all.end(), v.begin(), v.end());
	for (const auto &[_, a] : auto_)
		all.insert(all.end(), a.wanted.begin(), a.wanted.end());
	// The protection guard, asked once per interface for all its rules
	// (the operator's or the policy file's wider prefixes, and a signature,
	// cost one scan of its standing table together).
	std::map<std::string, std::vector<UpstreamRule>> asked;
	for (const auto &w : all)
		if (!protection_waived(w.rule))
			asked[w.iface].push_back(w.rule);
	std::map<std::string, ProtectedSource> guard;
	for (const auto &[iface, rules] : asked)
		guard[iface] = protection(iface, rules);
	std::vector<UpstreamWanted> out, refused;
	auto held = state_.read().mine;
	for (const auto &w : all) {
		ProtectedSource is_protected;
		if (!protection_waived(w.rule))
			is_protected = guard.at(w.iface);
		if (auto ok = check_rule(opts_.guards, w.rule, is_protected); !ok) {
			bool was_mine = std::any_of(held.begin(), held.end(), [&](const UpstreamHeld &h) { return h.rule == w.rule; });
			bool known = has_rule(refused_, w.rule);
			if (was_mine)
				log_warn("upstream: " + ok.error().message + " (" + w.reason + "); withdrawing it");
			else if (!known)
				log_warn("upstream: " + ok.error().message + " (" + w.reason + "): not announced");
			if (!known)
				refusals_++;
			refused.push_back(w);
			continue;
		}
		out.push_back(w);
	}
	refused_ = std::move(refused);
	return out;
}

void UpstreamAnnouncer::reconcile(double now_s, const std::string &why)
{
	next_reconcile_s_ = now_s + defaults::kUpstreamReconcileS;
	// The first pass adopts what a previous daemon announced for a source
	// still on an interface's deny list, once the worker has listed the
	// speaker's paths; until then the worker withdraws nothing.
	if (!started_) {
		auto rib = state_.read().first_rib;
		if (rib) {
			started_ = true;
			for (const auto &r : *rib) {
				auto src = rule_source(r);
				if (!src || wanted_anywhere(r))
					continue;
				for (const auto &iface : hooks_.interfaces()) {
					auto deny = hooks_.deny_list(iface);
					if (std::find(deny.begin(), deny.end(), *src) == deny.end())
						continue;
					auto rules = operator_rules(*src);
					if (std::find(rules.begin(), rules.end(), r) == rules.end())
						continue;
					wanted_.push_back({r, iface, operator_reason(iface, *src) + " (adopted at start)", false});
					break;
				}
			}
		}
	}
	intended_ = wanted_now();
	slot_.post({intended_, started_, why});
}

void UpstreamAnnouncer::stop_worker()
{
	slot_.stop();
	if (worker_.joinable())
		worker_.join();
}

UpstreamAnnouncer::~UpstreamAnnouncer()
{
	stop_worker();
}

void UpstreamAnnouncer::work()
{
	Intent cur;
	uint64_t generation = 0;
	bool have = false;
	double next_due = 0;
	while (!slot_.stopping()) {
		double wait = have ? std::max(0.0, next_due - monotonic_seconds()) : defaults::kUpstreamRetryMaxS;
		auto taken = slot_.take(std::chrono::duration<double>(wait));
		if (slot_.stopping())
			break;
		bool changed = false;
		if (taken) {
			// A new set, or the adoption done, is worth a pass now; the
			// loop's periodic post of the same set waits for the pass's
			// own schedule (the retry backoff while the speaker is down).
			changed = !have || taken->intent.wanted != cur.wanted || taken->intent.adopted != cur.adopted;
			cur = std::move(taken->intent);
			generation = taken->generation;
			have = true;
		}
		double now = monotonic_seconds();
		if (!have || (!changed && now < next_due)) {
			// The same set again, reconciled by the last pass: that pass
			// stands for this intent too.
			if (taken && synced_)
				state_.update([&](SpeakerState &s) { s.applied = generation; });
			continue;
		}
		next_due = pass(cur, generation, now);
	}
}

void UpstreamAnnouncer::publish(std::optional<uint64_t> applied, std::optional<std::string> peer_state)
{
	state_.update([&](SpeakerState &s) {
		s.mine = mine_;
		s.over_max = over_max_;
		s.speaker_up = up_;
		s.last_error = last_error_;
		s.last_call_s = speaker_.last_call_s();
		s.answered_s = answered_s_;
		s.announcements = announcements_;
		s.withdrawals = withdrawals_;
		s.refusals = over_max_refusals_;
		if (peer_state)
			s.peer_state = *peer_state;
		if (applied)
			s.applied = *applied;
	});
}

double UpstreamAnnouncer::pass(const Intent &intent, uint64_t generation, double now_s)
{
	synced_ = false; // until this pass has reconciled its whole intent
	auto rib = speaker_.list();
	if (!rib) {
		// Retry at 5, 10, 20, 40, 60, 60... s rather than every 5 s: each
		// call to a speaker that does not answer costs up to the timeout.
		failures_++;
		double wait = std::min(defaults::kUpstreamReconcileS * double(1u << std::min(failures_ - 1, 4u)),
				       defaults::kUpstreamRetryMaxS);
		if (up_ || last_error_ != rib.error().describe())
			log_warn("upstream: the speaker at " + speaker_address(opts_.speaker) +
				 " does not answer (" + rib.error().describe() +
				 "); the deny lists keep enforcing here; retrying, at most every " +
				 std::to_string(static_cast<int>(defaults::kUpstreamRetryMaxS)) + " s");
		up_ = false;
		last_error_ = rib.error().describe();
		publish();
		return now_s + wait;
	}
	failures_ = 0;
	if (!up_)
		log_info("upstream: the speaker at " + speaker_address(opts_.speaker) +
			 " answers (" + std::to_string(rib->rules.size()) + " path(s) of sluice's)");
	up_ = true;
	last_error_.clear();
	answered_s_ = monotonic_seconds();
	if (rib->unknown)
		log_warn("upstream: " + std::to_string(rib->unknown) +
			 " path(s) carry sluice's marker with components sluice does not write: left alone");
	if (!intent.adopted) {
		// The loop adopts from this listing; nothing is withdrawn before.
		state_.update([&](SpeakerState &s) { s.first_rib = rib->rules; });
		publish();
		return now_s + defaults::kUpstreamReconcileS;
	}

	const auto &wanted = intent.wanted;
	const std::string &why = intent.why;
	// In dry run the speaker holds nothing of ours: what this daemon
	// "announced" stands in for it.
	std::vector<UpstreamRule> held;
	if (opts_.dry_run)
		for (const auto &h : mine_)
			held.push_back(h.rule);
	else
		held = rib->rules;
	auto plan = plan_upstream(wanted, held, mine_, opts_.guards.max, opts_.hold_s, now_s);
	const char *verb = opts_.dry_run ? "would " : "";
	bool complete = true;
	auto call_failed = [&](const std::string &what, const Error &e) {
		log_error("upstream: " + what + ": " + e.describe());
		up_ = false;
		last_error_ = e.describe();
		complete = false;
		publish();
	};
	auto call_answered = [&] {
		if (!opts_.dry_run)
			answered_s_ = monotonic_seconds();
	};

	for (const auto &r : plan.withdraw) {
		if (slot_.stopping()) { // shutdown: withdraw_all() lists and withdraws next
			complete = false;
			break;
		}
		if (!opts_.dry_run)
			if (auto ok = speaker_.withdraw(r); !ok) {
				call_failed("withdrawing " + r.str(), ok.error());
				continue;
			}
		call_answered();
		auto h = std::find_if(mine_.begin(), mine_.end(), [&](const UpstreamHeld &x) { return x.rule == r; });
		log_info(std::string("upstream: ") + verb + "withdraw " + r.str() +
			 (h != mine_.end() ? " (" + h->reason + ")" : " (stale: no longer wanted)") + " [" + why + "]");
		if (h != mine_.end())
			mine_.erase(h);
		withdrawals_++;
		publish(); // gone from the speaker: no longer listed
	}
	for (const auto &a : plan.adopt)
		if (std::none_of(mine_.begin(), mine_.end(), [&](const UpstreamHeld &h) { return h.rule == a; })) {
			auto w = std::find_if(wanted.begin(), wanted.end(), [&](const UpstreamWanted &x) { return x.rule == a; });
			mine_.push_back({a, w->iface, w->reason, now_s, w->held});
			log_info("upstream: adopted " + a.str() + " (" + w->reason + "), already held by the speaker");
		}
	if (!plan.adopt.empty())
		publish();
	for (const auto &w : plan.announce) {
		if (slot_.stopping()) {
			complete = false;
			break;
		}
		if (!opts_.dry_run)
			if (auto ok = speaker_.announce(w.rule); !ok) {
				call_failed("announcing " + w.rule.str(), ok.error());
				continue;
			}
		call_answered();
		bool again = std::any_of(mine_.begin(), mine_.end(), [&](const UpstreamHeld &h) { return h.rule == w.rule; });
		log_info(std::string("upstream: ") + verb + (again ? "announce again (the speaker lost it) " : "announce ") +
			 w.rule.str() + " (" + w.reason + ") [" + why + "]");
		if (!again)
			mine_.push_back({w.rule, w.iface, w.reason, monotonic_seconds(), w.held});
		announcements_++;
		publish(); // the speaker has it: listed as announced from now
	}
	for (const auto &w : plan.over_max)
		if (std::none_of(over_max_.begin(), over_max_.end(), [&](const UpstreamWanted &x) { return x.rule == w.rule; })) {
			log_warn("upstream: not announced, --upstream-max " + std::to_string(opts_.guards.max) + " reached: " +
				 w.rule.str() + " (" + w.reason + ")");
			over_max_refusals_++;
		}
	over_max_ = plan.over_max;
	// Held rules no longer on the speaker and not wanted (gone meanwhile).
	std::erase_if(mine_, [&](const UpstreamHeld &h) {
		bool on_speaker = std::find(held.begin(), held.end(), h.rule) != held.end();
		bool wanted_now = std::any_of(wanted.begin(), wanted.end(), [&](const UpstreamWanted &w) { return w.rule == h.rule; });
		return !on_speaker && !wanted_now &&
		       std::find(plan.withdraw.begin(), plan.withdraw.end(), h.rule) == plan.withdraw.end();
	});
	std::optional<std::string> peer;
	if (!opts_.peer.empty() && !slot_.stopping()) {
		auto st = speaker_.peer_state(opts_.peer);
		peer = st ? *st : "unknown (" + st.error().message + ")";
	}
	synced_ = complete;
	publish(complete ? std::optional(generation) : std::nullopt, peer);
	// A call that failed: the next pass retries after the usual period.
	return now_s + defaults::kUpstreamReconcileS;
}

void UpstreamAnnouncer::withdraw_all()
{
	stop_worker();
	if (opts_.dry_run) {
		for (const auto &h : mine_)
			log_info("upstream: would withdraw " + h.rule.str() + " (sluiced exiting)");
		mine_.clear();
		return;
	}
	auto rib = speaker_.list();
	if (!rib) {
		log_error("upstream: sluiced exiting and the speaker does not answer (" + rib.error().describe() +
			  "): its paths stay until the next sluiced withdraws them or gobgpd restarts");
		return;
	}
	for (const auto &r : rib->rules) {
		if (auto ok = speaker_.withdraw(r); !ok)
			log_error("upstream: withdrawing " + r.str() + ": " + ok.error().describe());
		else
			log_info("upstream: withdraw " + r.str() + " (sluiced exiting)");
	}
	mine_.clear();
}

UpstreamView UpstreamAnnouncer::view(const std::optional<std::string> &iface) const
{
	UpstreamView v;
	v.enabled = true;
	v.dry_run = opts_.dry_run;
	v.speaker = speaker_address(opts_.speaker);
	auto st = state_.read();
	v.speaker_up = st.speaker_up;
	v.last_error = st.last_error;
	v.last_call_ms = st.last_call_s * 1000;
	v.peer = opts_.peer;
	v.peer_state = st.peer_state;
	for (const auto &p : opts_.guards.own)
		v.prefixes.push_back(p.str());
	v.max = opts_.guards.max;
	v.hold_s = opts_.hold_s;
	double now_mono = monotonic_seconds();
	uint64_t now_real = realtime_ns();
	if (st.answered_s >= 0)
		v.answered_ago_s = std::max(0.0, now_mono - st.answered_s);
	v.intended = intended_.size();
	v.in_sync = started_ && st.applied == slot_.generation_seen();
	for (const auto &h : st.mine) {
		if (iface && h.iface != *iface)
			continue;
		bool wanted = wanted_anywhere(h.rule);
		double age = std::max(0.0, now_mono - h.since_s);
		v.rules.push_back({h.rule.str(), std::string(gobgp_family(h.rule)), h.iface, h.reason,
				   opts_.dry_run ? "dry-run" : (wanted ? "announced" : "holding"),
				   now_real - static_cast<uint64_t>(age * 1e9)});
		if (h.rule.kind == UpstreamKind::blackhole_destination)
			v.blackholed.push_back(h.rule.destination.addr.str());
	}
	// Wanted, not yet confirmed by the worker (the speaker slow, or not
	// answering): pending.
	for (const auto &w : intended_)
		if ((!iface || w.iface == *iface) &&
		    std::none_of(st.mine.begin(), st.mine.end(), [&](const UpstreamHeld &h) { return h.rule == w.rule; }) &&
		    std::none_of(st.over_max.begin(), st.over_max.end(), [&](const UpstreamWanted &x) { return x.rule == w.rule; }))
			v.rules.push_back({w.rule.str(), std::string(gobgp_family(w.rule)), w.iface, w.reason, "pending",
					   std::nullopt});
	for (const auto &w : st.over_max)
		if (!iface || w.iface == *iface)
			v.rules.push_back({w.rule.str(), std::string(gobgp_family(w.rule)), w.iface, w.reason,
					   "over-max", std::nullopt});
	for (const auto &w : refused_)
		if (!iface || w.iface == *iface)
			v.rules.push_back({w.rule.str(), std::string(gobgp_family(w.rule)), w.iface, w.reason, "refused",
					   std::nullopt});
	// The automatic rules refused while firing (a guard, or a source not
	// proved): why is in the reason, as the log said it.
	for (const auto &[name, a] : auto_)
		if (!iface || name == *iface)
			for (const auto &[w, why] : a.refused)
				v.rules.push_back({w.rule.str(), std::string(gobgp_family(w.rule)), w.iface,
						   w.reason + "; not announced: " + why, "refused", std::nullopt});
	v.mode = opts_.mode == UpstreamMode::flowspec ? "flowspec" : "blackhole";
	v.auto_bps = opts_.automatic.bps;
	v.auto_pps = opts_.automatic.pps;
	v.auto_after_s = opts_.automatic.after_s;
	v.auto_top = opts_.automatic.top;
	v.auto_action = action_text(opts_.automatic);
	v.last_resort = opts_.last_resort;
	for (const auto &[name, a] : auto_)
		if (!iface || name == *iface)
			v.automatic.push_back({name, a.trigger.firing(), a.why, a.sources});
	v.announcements = st.announcements;
	v.withdrawals = st.withdrawals;
	v.refusals = refusals_ + st.refusals;
	return v;
}

UpstreamMetricsSnapshot UpstreamAnnouncer::metrics() const
{
	auto st = state_.read();
	UpstreamMetricsSnapshot m{opts_.dry_run ? 0 : st.mine.size(), st.announcements, st.withdrawals,
				  refusals_ + st.refusals, st.speaker_up};
	for (const auto &[_, a] : auto_)
		m.firing += a.trigger.firing();
	if (!opts_.dry_run)
		for (const auto &h : st.mine)
			m.blackholed += h.rule.kind == UpstreamKind::blackhole_destination;
	return m;
}

} // namespace sluice
