// managed_requests.cpp - ManagedInterface's answers to the operator: status,
// stats and metrics, the breaker and the policy set by hand, a source's
// bucket (read, set, refilled), the allow and deny lists, the audit, the
// heaviest dropped sources, the flood's signals for upstream, the standing
// table. Each a typed reply; only the protocol layer speaks JSON.
#include "sluiced/managed_interface.h"

#include "sluiced/local_sockets.h"
#include "sluiced/period.h"

#include "base/address.h"
#include "base/clock.h"
#include "base/limits.h"
#include "base/log.h"
#include "bpf/class_maps.h"
#include "bpf/status.h"
#include "logic/budgets.h"
#include "logic/source.h"

#include <algorithm>
#include <cmath>

namespace sluice {

ManagedStatus ManagedInterface::status() const
{
	ManagedStatus st;
	st.iface = name_;
	auto counted = counted_occupancy();
	if (auto s = interface_status(*dp_, name_, counted ? &*counted : nullptr))
		st.maps = std::move(*s);
	else
		st.error = s.error().describe();
	st.audit = auditor_->report();
	st.rates = rates_;
	st.oper_state = gone_ ? "gone" : oper_state_;
	st.pin_dir = dir_;
	if (in_force_) {
		PolicyStatus ps;
		ps.file = in_force_->path;
		ps.generation = in_force_->generation;
		ps.applied_ns = in_force_->applied_ns;
		ps.set = in_force_->set;
		for (uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++)
			if (!in_force_->compiled.ids.names[id].empty())
				ps.classes.push_back({id, in_force_->compiled.ids.names[id]});
		ps.rules = in_force_->policy.rules.size();
		ps.reloads_applied = reloads_applied_;
		ps.reloads_refused = reloads_refused_;
		ps.last_refused = last_refused_;
		st.policy = std::move(ps);
	}
	st.rule = rule_;
	st.path.assign(path_.begin(), path_.end());
	if (cookie_mode_ != SLUICE_COOKIES_OFF) {
		st.cookies_asked = cookie_mode_;
		st.xdp_tx = xdp_tx_;
	}
	st.key.rekeys = rekeys_;
	const double now_s = monotonic_seconds();
	if (rekeys_)
		st.key.last_s_ago = now_s - last_rekey_s_;
	st.key.every_s = rekey_every_s_;
	if (rekey_every_s_ > 0)
		st.key.next_in_s = next_rekey_s_ - now_s;
	return st;
}

InterfaceStats ManagedInterface::stats() const
{
	return {name_, last_counters_, rates_};
}

InterfaceMetrics ManagedInterface::metrics() const
{
	InterfaceMetrics m;
	m.iface = name_;
	m.counters = last_counters_;
	m.breaker = breaker_.state();
	m.transitions = transitions_;
	if (auto cfg = dp_->config().read()) {
		m.admission_fraction = double(cfg->admission_ppm) / double(SLUICE_PPM_FULL);
		m.valve_closed = cfg->valve_closed != 0;
	}
	m.audit_violations = auditor_->report().violations;
	m.table_slots = dp_->slots().size();
	if (auto counted = counted_occupancy())
		m.standing_entries = counted->occupancy.live;
	m.standing_capacity = uint64_t(dp_->standing().sets()) * SLUICE_STANDING_WAYS;
	m.valve_closes = valve_closes_;
	if (in_force_) {
		m.has_policy = true;
		m.reloads_applied = reloads_applied_;
		m.reloads_refused = reloads_refused_;
		m.last_reload_success = last_reload_ok_;
		auto rows = read_class_counters(dp_->policy_maps().class_counters);
		if (!rows)
			log_error(name_ + ": reading the class counters: " + rows.error().describe());
		for (uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++) {
			const std::string &n = in_force_->compiled.ids.names[id];
			if (n.empty())
				continue;
			InterfaceMetrics::Class c{n, {}};
			if (rows)
				c.counters = (*rows)[id];
			m.classes.push_back(std::move(c));
		}
	}
	return m;
}

Result<BreakerMove> ManagedInterface::move_breaker(BreakerState to)
{
	BreakerState from = breaker_.state();
	if (auto ok = transition(to, true, "operator"); !ok)
		return std::unexpected(ok.error());
	return BreakerMove{name_, from, to, breaker_.state()};
}

Result<PolicySet> ManagedInterface::set_policy(std::optional<int64_t> rate, std::optional<int64_t> burst)
{
	if (!rate && !burst)
		return invalid("'set' needs \"rate\" or \"burst\"");
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	BudgetAsk ask = budgets_of(*cfg);
	if (rate) {
		if (auto ok = check_rate(*rate, Voice::invariant); !ok) // negative too: the ask takes no sign
			return std::unexpected(ok.error());
		ask.rate_pps = static_cast<uint64_t>(*rate);
	}
	if (burst) {
		if (auto ok = check_burst(*burst, Voice::invariant); !ok)
			return std::unexpected(ok.error());
		ask.burst = static_cast<uint64_t>(*burst);
	}
	auto next = config_with_budgets(*cfg, ask, cpus_);
	if (!next)
		return std::unexpected(next.error());
	if (auto ok = dp_->config().write(*next); !ok)
		return std::unexpected(ok.error());
	log_info(name_ + ": policy rate " + std::to_string(next->rate_pps) + " burst " + std::to_string(next->burst) +
		 " (was rate " + std::to_string(cfg->rate_pps) + " burst " + std::to_string(cfg->burst) + ")");
	return PolicySet{name_, next->rate_pps, next->burst};
}

Result<ManagedInterface::SourceTokens> ManagedInterface::source_tokens(const SourceSlots &ss,
									 const sluice_config &cfg) const
{
	SourceTokens st;
	for (size_t i = 0; i < ss.slots.size(); i++) {
		auto t = dp_->slots().tokens(ss.slots[i], cfg);
		if (!t)
			return std::unexpected(t.error());
		st.tokens[i] = *t;
		st.fuller = std::max(st.fuller, *t);
	}
	return st;
}

Result<ManagedInterface::SourceNow> ManagedInterface::source_now(const std::string &addr_text) const
{
	auto addr = parse_address(addr_text);
	if (!addr)
		return std::unexpected(addr.error());
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	return SourceNow{*addr, source_slots(dp_->settings(), *addr), *cfg};
}

Result<BucketView> ManagedInterface::bucket_reply(const std::string &addr_text) const
{
	auto at = source_now(addr_text);
	if (!at)
		return std::unexpected(at.error());
	const SourceSlots &ss = at->slots;
	auto t = source_tokens(ss, at->cfg);
	if (!t)
		return std::unexpected(t.error());
	return BucketView{name_, at->addr, ss.source, ss.slots, t->tokens, t->fuller, at->cfg.burst, at->cfg.rate_pps};
}

Result<BucketView> ManagedInterface::write_source(const std::string &addr_text, const std::string &what,
					    const SlotWrite &write)
{
	auto at = source_now(addr_text);
	if (!at)
		return std::unexpected(at.error());
	const SourceSlots &ss = at->slots;
	const sluice_config *cfg = &at->cfg;
	// A source whose two indices coincide has one slot: write it once.
	std::span<const uint32_t> which(ss.slots.data(), ss.slots[0] == ss.slots[1] ? 1 : 2);
	if (auto ok = write(which, *cfg); !ok) {
		log_warn(name_ + ": refused write: " + ok.error().message);
		return std::unexpected(ok.error());
	}
	log_info(name_ + ": " + what + " " + ss.source.str());
	return bucket_reply(addr_text);
}

Result<BucketView> ManagedInterface::bucket(const std::string &addr_text, std::optional<int64_t> set_tokens)
{
	if (!set_tokens)
		return bucket_reply(addr_text);
	int64_t n = *set_tokens;
	return write_source(addr_text, "set to " + std::to_string(n) + " tokens:",
			    [&](std::span<const uint32_t> slots, const sluice_config &cfg) {
				    return dp_->slots().set_tokens(slots, n, cfg);
			    });
}

Result<BucketView> ManagedInterface::refill(const std::string &addr_text, int64_t n)
{
	return write_source(addr_text, "refilled " + std::to_string(n) + " tokens:",
			    [&](std::span<const uint32_t> slots, const sluice_config &cfg) {
				    return dp_->slots().refill(slots, n, cfg);
			    });
}

Result<ListChange> ManagedInterface::list_change(ListKind list, const std::vector<std::string> &texts, bool add)
{
	std::vector<Cidr> cidrs;
	for (const auto &t : texts) {
		auto c = parse_cidr(t);
		if (!c)
			return std::unexpected(c.error());
		cidrs.push_back(*c);
	}
	if (cidrs.empty())
		return invalid("no CIDR given");
	auto lists = dp_->lists();
	auto ok = add ? lists.add(list, cidrs) : lists.remove(list, cidrs);
	if (!ok)
		return std::unexpected(ok.error());
	log_info(name_ + ": " + (add ? "added " : "removed ") + std::to_string(cidrs.size()) + " prefixes " +
		 (add ? "to" : "from") + " the " + to_string(list) + " list");
	return ListChange{name_, list, cidrs.size()};
}

Result<ListShow> ManagedInterface::list_show(ListKind list) const
{
	auto entries = dp_->lists().entries(list);
	if (!entries)
		return std::unexpected(entries.error());
	return ListShow{name_, list, std::move(*entries)};
}

Result<AuditResult> ManagedInterface::audit_now()
{
	if (auto ok = auditor_->full(dp_->slots()); !ok)
		return std::unexpected(ok.error());
	return AuditResult{name_, dp_->slots().size(), auditor_->report()};
}

Result<TopView> ManagedInterface::top(size_t n, double now_s) const
{
	if (!sampler_)
		return refused(name_ + ": drop sampling is off (the program was loaded with --sample-every 0); "
			       "`sluicectl detach " + name_ + "` and start sluiced with --sample-every N to turn it on");
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	auto w = sampler_->window(now_s);
	double every = sampler_->sample_every();
	TopView view;
	view.iface = name_;
	for (const auto &it : w.summary->top(n)) {
		Cidr source = key_cidr(it.key);
		auto t = source_tokens(source_slots(dp_->settings(), source.addr), *cfg);
		if (!t)
			return std::unexpected(t.error());
		view.sources.push_back({source, w.seconds > 0 ? std::round(double(it.count) * every / w.seconds) : 0.0,
					it.count, it.error, t->fuller});
	}
	// What the counters say was dropped in the last period, for comparison
	// (samples lost to a full ring make the estimates fall short of it).
	view.dropped_pps = dropped_pps(rates_);
	view.sample_every = sampler_->sample_every();
	view.window_s = std::round(w.seconds * 1000) / 1000;
	view.window_complete = w.complete;
	view.samples = w.summary->total();
	view.capacity = w.summary->capacity();
	view.summary_size = w.summary->size();
	return view;
}

FloodSignals ManagedInterface::flood_signals(double now_s, size_t heaviest, bool addresses) const
{
	FloodSignals f;
	f.reading.now_s = now_s;
	f.reading.shedding = breaker_.state() == BreakerState::shedding;
	if (rates_) {
		double pps = 0, bps = 0;
		for (const auto &r : *rates_) {
			pps += r.pps;
			bps += r.bps;
		}
		f.reading.pps = pps;
		f.reading.bps = bps;
	}
	if (sampler_) {
		auto w = sampler_->window(now_s);
		f.samples = w.summary->total();
		f.signature = *w.signature;
		for (const auto &it : w.summary->top(heaviest))
			f.heaviest.push_back({key_cidr(it.key), it.count, it.error});
	}
	if (addresses)
		f.addresses = interface_addresses(&name_);
	return f;
}

Result<StandingView> ManagedInterface::standing(const std::optional<std::string> &addr_text) const
{
	// The address first: a bad one is an input error whatever the maps say.
	std::optional<Address> addr;
	if (addr_text) {
		auto a = parse_address(*addr_text);
		if (!a)
			return std::unexpected(a.error());
		addr = *a;
	}
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	// The occupancy the sweep counted (a part of the table a period), never
	// a count of the whole table per request; only before the first sweep
	// is whole is the table counted here.
	const auto counted = counted_occupancy();
	auto table = standing_status(*dp_, *cfg, counted ? &*counted : nullptr);
	if (!table)
		return std::unexpected(table.error());
	StandingView view{name_, *table, std::nullopt};
	if (governor_) {
		view.share_pps = cfg->standing_share_pps;
		view.newer_share_pps = cfg->standing_newer_share_cost_ns ? cfg->standing_newer_share_pps : 0;
		view.tenure_s = governor_->config().tenure_s;
		view.capacity_pps = cfg->standing_capacity_pps;
		view.revocations = governor_->revocations();
		view.recent = governor_->recent();
	}
	if (quota_) {
		view.prefix_quota = quota_->quota();
		view.prefixes_full = quota_->prefixes_full();
		view.quota_evictions = quota_evictions_;
	}
	if (addr) {
		auto record = dp_->standing().lookup(*addr, *cfg);
		if (!record)
			return std::unexpected(record.error());
		auto penalty = dp_->standing().penalty(*addr);
		if (!penalty)
			return std::unexpected(penalty.error());
		view.lookup = StandingLookup{*addr, source_slots(dp_->settings(), *addr).source, *record, *penalty};
	}
	return view;
}

} // namespace sluice
