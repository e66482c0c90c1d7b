// managed_policy.cpp - ManagedInterface's part of the policy file: applying
// a policy (start, reload), and explaining a frame's class under it.
#include "sluiced/managed_interface.h"

#include "base/clock.h"
#include "base/limits.h"
#include "base/log.h"
#include "logic/budgets.h"
#include "logic/source.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace sluice {

namespace {

// Prefixes in `running` that `named` does not hold.
std::vector<Cidr> not_named(const std::vector<Cidr> &running, const std::vector<Cidr> &named)
{
	std::set<std::string> in_file;
	for (const auto &c : named)
		in_file.insert(c.str());
	std::vector<Cidr> out;
	for (const auto &c : running)
		if (!in_file.count(c.str()))
			out.push_back(c);
	return out;
}

Result<Frame> parse_frame(const std::string &src, const std::optional<std::string> &proto)
{
	auto addr = parse_address(src);
	if (!addr)
		return std::unexpected(addr.error());
	Frame f;
	f.source = *addr;
	if (!proto)
		return f;
	std::string name = *proto, port;
	bool has_port = false;
	if (auto slash = name.find('/'); slash != std::string::npos) {
		port = name.substr(slash + 1);
		name.resize(slash);
		has_port = true;
	}
	bool known = false;
	for (Protocol p : {Protocol::any, Protocol::tcp, Protocol::tcp_syn, Protocol::udp, Protocol::icmp, Protocol::icmpv6})
		if (name == protocol_name(p)) {
			f.protocol = p;
			known = true;
		}
	if (!known)
		return invalid("protocol '" + name + "' is not one of any, tcp, tcp-syn, udp, icmp, icmpv6");
	if (has_port) {
		if (!has_ports(f.protocol))
			return invalid("protocol " + name + " has no ports ('" + *proto + "')");
		if (port.empty() || port.size() > 6 || !std::all_of(port.begin(), port.end(), ::isdigit))
			return invalid("port '" + port + "' in '" + *proto + "' is not a number 0..65535");
		int64_t n = std::stoll(port);
		if (auto ok = named("port", check_port(n)); !ok)
			return std::unexpected(ok.error());
		f.port = static_cast<uint16_t>(n);
	}
	return f;
}

} // namespace

PolicyTables ManagedInterface::tables() const
{
	auto m = dp_->policy_maps();
	return PolicyTables({m.classes, m.port_classes, m.class_v4, m.class_v6}, dp_->lists(), dp_->config());
}

Policy ManagedInterface::policy_of_file(const Policy &p, const sluice_config &cfg) const
{
	Policy out = p;
	if (p.default_from_options && !out.classes.empty()) {
		// The file named no default: the options' (and `sluicectl set`'s)
		// budgets stay in force; the record says what they are.
		PolicyClass &d = out.classes[0];
		d.packets = {cfg.rate_pps, cfg.burst};
		d.v4_prefix = dp_->settings().v4_prefix;
		d.v6_prefix = dp_->settings().v6_prefix;
	}
	return out;
}

Result<PolicyApplied> ManagedInterface::apply_policy(const Policy &file, const std::string &path, bool reload)
{
	auto refuse = [&](const Error &e) -> std::unexpected<Error> {
		if (reload)
			refuse_reload(e);
		return std::unexpected(e);
	};
	const PolicyTables tables = this->tables();
	double t0 = monotonic_seconds();
	const sluice_settings &s = dp_->settings();
	if (!file.default_from_options && !file.classes.empty()) {
		const PolicyClass &d = file.classes[0];
		if (d.v4_prefix != s.v4_prefix || d.v6_prefix != s.v6_prefix)
			return refuse(Error{
				ErrorKind::refused, 0,
				path + ": the default class has ipv4-prefix " + std::to_string(d.v4_prefix) + " and ipv6-prefix " +
					std::to_string(d.v6_prefix) + ", the program on " + name_ + " was loaded with " +
					std::to_string(s.v4_prefix) + " and " + std::to_string(s.v6_prefix) +
					" (fixed at load: `sluicectl detach " + name_ +
					"` and start sluiced again to change them); nothing changed"});
	}
	auto cfg = dp_->config().read();
	if (!cfg)
		return refuse(cfg.error());
	Policy p = policy_of_file(file, *cfg);
	auto previous = tables.ids_in_force();
	if (!previous)
		return refuse(previous.error());
	auto compiled = compile_policy(p, *previous);
	if (!compiled)
		return refuse(Error{compiled.error().kind, compiled.error().code, path + ": " + compiled.error().message});

	// The running lists: the entries a file put there (their origin in the
	// trie says so, whichever daemon wrote them) are replaced by this
	// file's; those `sluicectl allow|deny add` added at run time are kept
	// beside them, unless this file names them (then they are the file's).
	PolicyLists lists{file.allow, file.deny, {}, {}};
	size_t kept = 0;
	for (ListKind list : {ListKind::allow, ListKind::deny}) {
		auto added = tables.list_in_force(list, ListOrigin::run_time);
		if (!added)
			return refuse(added.error());
		auto extra = not_named(*added, lists.file(list));
		kept += extra.size();
		(list == ListKind::allow ? lists.kept_allow : lists.kept_deny) = std::move(extra);
	}

	ConfigEdit edit;
	if (!file.default_from_options && !file.classes.empty()) {
		const PolicyClass &d = file.classes[0];
		edit = [this, d](const sluice_config &c) -> Result<sluice_config> {
			BudgetAsk ask = budgets_of(c);
			ask.rate_pps = d.packets.rate;
			ask.burst = d.packets.burst;
			if (d.standing) {
				ask.standing_rate_pps = d.standing->rate;
				ask.standing_burst = d.standing->burst;
			}
			return config_with_budgets(c, ask, cpus_);
		};
	}
	auto applied = tables.apply(*compiled, lists, edit);
	if (!applied)
		return refuse(Error{applied.error().kind, applied.error().code, name_ + ": " + applied.error().message});

	if (!applied->warning.empty())
		log_warn(name_ + ": " + applied->warning);
	uint64_t generation = in_force_ ? in_force_->generation + 1 : 1;
	in_force_ = PolicyInForce{std::move(p), file, std::move(*compiled), path, generation, realtime_ns(), applied->set};
	if (reload) {
		reloads_applied_++;
		last_reload_ok_ = true;
	}
	PolicyApplied out{name_,
			  path,
			  generation,
			  applied->set,
			  applied->classes,
			  applied->prefixes,
			  applied->list_entries,
			  kept,
			  std::round((monotonic_seconds() - t0) * 1e6) / 1e3};
	log_info(name_ + ": policy " + path + " " + (reload ? "reloaded" : "applied") + " (generation " +
		 std::to_string(generation) + ", set " + std::to_string(out.set) + "): " + std::to_string(out.classes) +
		 " classes, " + std::to_string(out.prefixes) + " class prefixes, " + std::to_string(out.list_entries) +
		 " list entries, in " + std::to_string(out.apply_ms) + " ms" +
		 (kept ? "; kept " + std::to_string(kept) + " list entries added at run time that the file does not name"
		       : ""));
	return out;
}

void ManagedInterface::refuse_reload(const Error &why)
{
	reloads_refused_++;
	last_reload_ok_ = false;
	last_refused_ = why.describe();
	log_error(name_ + ": policy reload refused, nothing changed: " + last_refused_);
}

namespace {
// What the cookie path (bpf/cookie_path.bpf.h, sluice_cookie) does with a frame of
// this explanation under cfg: the program's own order (the deny list, the
// class's action, the allowlist while shedding, standing, the valve).
ExplainView::CookieWay cookie_way(const sluice_config &cfg, const ExplainView &v, const std::string &withheld)
{
	ExplainView::CookieWay w;
	bool shedding = cfg.breaker_state == SLUICE_SHEDDING;
	w.in_force = cookie_path_in_force(cfg.cookie_mode, shedding);
	Protocol p = v.frame.protocol;
	const Explanation &x = v.explanation;
	if (cfg.cookie_mode == SLUICE_COOKIES_OFF && !withheld.empty())
		w.why = "off on this interface: " + withheld + "; a SYN without standing takes the newcomer budget while shedding";
	else if (cfg.cookie_mode == SLUICE_COOKIES_OFF)
		w.why = "off (--cookies off): a SYN without standing takes the newcomer budget while shedding";
	else if (p != Protocol::any && p != Protocol::tcp && p != Protocol::tcp_syn)
		w.why = "not for this frame: cookies answer TCP SYNs only";
	else if (x.deny_entry || x.action != ClassAction::limit)
		w.why = "not for this frame: its class's action (or the deny list) decides first";
	else if (x.allow_entry && shedding)
		w.why = "not for this source: the allowlist passes it while shedding";
	else if (v.has_standing)
		w.why = "not for this source: it has standing";
	else if (shedding && cfg.valve_closed)
		w.why = "not now: the standing valve is closed (shedding is allowlist-only)";
	else
		w.applies = true;
	if (w.applies)
		w.why = w.in_force ? "a SYN to a listening port is answered with a SYN cookie now; the ACK that brings it "
				     "back earns standing (cookie)"
				   : "while the breaker sheds, a SYN to a listening port would be answered with a SYN cookie";
	return w;
}
} // namespace

Result<ExplainView> ManagedInterface::explain(const std::string &src, const std::optional<std::string> &proto) const
{
	auto frame = parse_frame(src, proto);
	if (!frame)
		return std::unexpected(frame.error());
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	ExplainView v;
	v.iface = name_;
	v.frame = *frame;
	std::optional<CompiledPolicy> fallback;
	Policy fallback_policy;
	const Policy *p = nullptr;
	const CompiledPolicy *c = nullptr;
	if (in_force_) {
		p = &in_force_->policy;
		c = &in_force_->compiled;
	} else {
		fallback_policy = policy_of_file(default_policy(), *cfg);
		auto compiled = compile_policy(fallback_policy, ClassIds{});
		if (!compiled)
			return std::unexpected(compiled.error());
		fallback = std::move(*compiled);
		p = &fallback_policy;
		c = &*fallback;
	}
	v.explanation = sluice::explain(*p, *frame);
	v.text = describe(v.explanation);
	v.table_class = classify(*c, *frame);
	v.table_class_name = v.table_class < SLUICE_CLASSES_MAX ? c->ids.names[v.table_class] : "";
	const sluice_settings &s = dp_->settings();
	SourceSlots ss;
	sluice_config bucket_cfg = *cfg;
	if (v.table_class == SLUICE_CLASS_DEFAULT || v.table_class >= SLUICE_CLASSES_MAX) {
		ss = source_slots(s, frame->source);
	} else {
		const sluice_class &rec = c->classes[v.table_class];
		ss = class_source_slots(s, frame->source, v.table_class, rec.v4_prefix, rec.v6_prefix);
		bucket_cfg.cost_ns = rec.cost_ns;
		bucket_cfg.burst = rec.burst;
	}
	v.bucket = ss.source;
	v.slots = ss.slots;
	for (size_t i = 0; i < 2; i++) {
		auto t = dp_->slots().tokens(ss.slots[i], bucket_cfg);
		if (!t)
			return std::unexpected(t.error());
		v.tokens[i] = *t;
	}
	auto standing = dp_->standing().lookup(frame->source, *cfg);
	if (!standing)
		return std::unexpected(standing.error());
	v.has_standing = standing->live;
	v.cookie = cookie_way(*cfg, v, xdp_tx_ && !xdp_tx_->delivers && cookie_mode_ != SLUICE_COOKIES_OFF ? xdp_tx_->why : "");
	return v;
}

} // namespace sluice
