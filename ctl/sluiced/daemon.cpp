#include "sluiced/daemon.h"
#include "sluiced/scheduling.h"

#include "base/clock.h"
#include "base/defaults.h"
#include "base/limits.h"
#include "base/log.h"
#include "ipc/commands.h"
#include "ipc/encode.h"
#include "logic/outcomes.h"
#include "policyfile/policy_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <ctime>
#include <grp.h>
#include <iterator>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <climits>
#include <cstdlib>

namespace sluice {

namespace {

Result<std::optional<gid_t>> group_id(const std::string &name)
{
	if (name.empty())
		return std::optional<gid_t>{};
	if (group *g = getgrnam(name.c_str()))
		return std::optional<gid_t>{g->gr_gid};
	return invalid("--socket-group '" + name + "' is not a group on this host");
}

// A list file passed by sluicectl --from: read with the client's access,
// bounded, a regular file only (a pipe could stall the control loop).
Result<std::vector<Cidr>> read_list_file(int fd)
{
	constexpr size_t max_bytes = 16u << 20;
	struct stat st {};
	if (fstat(fd, &st) != 0)
		return fail_errno("reading the passed list file");
	if (!S_ISREG(st.st_mode))
		return invalid("the passed list file is not a regular file");
	if (static_cast<size_t>(st.st_size) > max_bytes)
		return invalid("the passed list file is over " + std::to_string(max_bytes >> 20) + " MiB");
	std::string text(static_cast<size_t>(st.st_size), '\0');
	size_t got = 0;
	while (got < text.size()) {
		ssize_t n = pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail_errno("reading the passed list file");
		if (n == 0)
			break;
		got += static_cast<size_t>(n);
	}
	text.resize(got);
	return parse_cidr_lines(text, "list file");
}

// Prefixes the request already carried as checked text (list_change).
std::vector<Cidr> parse_all(const std::vector<std::string> &cidrs)
{
	std::vector<Cidr> out;
	for (const auto &c : cidrs)
		if (auto p = parse_cidr(c))
			out.push_back(*p);
	return out;
}

template <class T>
json reply_of(const Result<T> &r)
{
	return r ? ok_reply(encode(*r)) : error_reply(r.error());
}

} // namespace

Result<std::unique_ptr<Daemon>> Daemon::start(DaemonOptions opts)
{
	std::unique_ptr<Daemon> d(new Daemon());
	d->opts_ = std::move(opts);
	d->started_s_ = monotonic_seconds();
	// The policy file first (it is only read): a bad one stops the start with
	// its file:line:col (exit 2), and its default class decides the budgets
	// and the prefixes a fresh program is loaded with.
	if (!d->opts_.policy_file.empty()) {
		// Any refusal of the file at start is bad input (exit 2): the
		// operator named it, and a daemon must not start without it.
		auto p = d->load_watched_policy();
		if (!p)
			return fail(ErrorKind::invalid, p.error().message, p.error().code);
		if (!p->default_from_options && !p->classes.empty()) {
			const PolicyClass &def = p->classes[0];
			d->opts_.rate_pps = def.packets.rate;
			d->opts_.burst = def.packets.burst;
			d->opts_.rate_given = d->opts_.burst_given = true;
			d->opts_.load.v4_prefix = def.v4_prefix;
			d->opts_.load.v6_prefix = def.v6_prefix;
			if (def.standing) {
				d->opts_.standing_rate_pps = def.standing->rate;
				d->opts_.standing_burst = def.standing->burst;
			}
		}
		d->file_policy_ = std::move(*p);
	}
	auto gid = group_id(d->opts_.socket_group);
	if (!gid)
		return std::unexpected(gid.error());
	// The socket next: a second daemon with the same socket stops here,
	// before it touches any interface.
	auto server = ControlServer::listen(d->opts_.socket_path, *gid, d->opts_.max_clients);
	if (!server)
		return std::unexpected(server.error());
	d->server_.emplace(std::move(*server));
	// --rt-priority: refused here, before any interface is touched.
	if (auto ok = probe_loop_priority(d->opts_.rt_priority); !ok)
		return std::unexpected(ok.error());
	// Metrics next: a taken port also stops the start before any interface.
	if (d->opts_.metrics_listen) {
		auto metrics = MetricsServer::start(*d->opts_.metrics_listen, health_stale_after_s(d->opts_.period_s));
		if (!metrics)
			return std::unexpected(metrics.error());
		d->metrics_ = std::move(*metrics);
	}
	for (const auto &name : d->opts_.interfaces) {
		if (d->ifaces_.count(name))
			continue;
		auto m = ManagedInterface::start(d->opts_, name, d->opts_.mode);
		if (!m)
			return std::unexpected(m.error());
		if (d->file_policy_)
			if (auto ok = (*m)->apply_policy(*d->file_policy_, d->opts_.policy_file, false); !ok)
				return std::unexpected(ok.error());
		d->ifaces_.emplace(name, std::move(*m));
	}
	if (d->opts_.upstream.enabled) {
		d->upstream_ = std::make_unique<UpstreamAnnouncer>(d->opts_.upstream, d->upstream_hooks());
		// The policy file's `upstream: true` entries are wanted before the
		// first reconcile, which adopts what a previous daemon left and
		// withdraws the rest.
		for (const auto &[name, _] : d->ifaces_)
			d->policy_upstream(name);
		d->upstream_->tick(monotonic_seconds());
	} else if (d->file_policy_ && !d->file_policy_->deny_upstream.empty()) {
		log_warn("policy " + d->opts_.policy_file + ": " + std::to_string(d->file_policy_->deny_upstream.size()) +
			 " deny entries say upstream: true, and sluiced runs without --upstream: dropped here only");
	}
	// Now that the programs are loaded (the verifier is not run at
	// real-time priority): the loop's own.
	if (auto ok = raise_loop_priority(d->opts_.rt_priority); !ok)
		return std::unexpected(ok.error());
	if (d->opts_.rt_priority)
		log_info("control loop at SCHED_FIFO priority " + std::to_string(d->opts_.rt_priority) +
			 " (--rt-priority), back to normal after " + std::to_string(int(kRtTimeSoftS * 1000)) +
			 " ms of CPU without blocking (RLIMIT_RTTIME)");
	d->publish_metrics(monotonic_seconds());
	log_info("sluiced " + std::to_string(getpid()) + ": control socket " + d->opts_.socket_path + ", " +
		 std::to_string(d->ifaces_.size()) + " interface(s), period " + std::to_string(d->opts_.period_s) + " s");
	return d;
}

void Daemon::time_tick(double now, double due)
{
	if (take_demotion())
		log_warn("the control loop ran " + std::to_string(int(kRtTimeSoftS * 1000)) +
			 " ms at real-time priority without blocking (RLIMIT_RTTIME): back to SCHED_OTHER");
	loop_.ticks++;
	loop_.last_late_s = std::max(0.0, now - due);
	loop_.max_late_s = std::max(loop_.max_late_s, loop_.last_late_s);
	if (loop_.last_late_s > kLateTickShare * opts_.period_s) {
		loop_.late_ticks++;
		log_debug("tick " + std::to_string(loop_.last_late_s * 1000) + " ms late");
	}
	if (last_tick_at_s_ > 0) {
		loop_.last_period_s = now - last_tick_at_s_;
		loop_.max_period_s = std::max(loop_.max_period_s, loop_.last_period_s);
	}
	last_tick_at_s_ = now;
}

void Daemon::policy_upstream(const std::string &iface)
{
	if (!upstream_)
		return;
	static const std::vector<Cidr> none;
	upstream_->set_policy_sources(iface, file_policy_ ? file_policy_->deny_upstream : none, opts_.policy_file,
				      monotonic_seconds());
}

void Daemon::publish_metrics(double tick_mono_s)
{
	if (!metrics_)
		return;
	MetricsSnapshot snap;
	snap.tick_mono_s = tick_mono_s;
	for (const auto &[_, m] : ifaces_)
		snap.interfaces.push_back(m->metrics());
	if (upstream_)
		snap.upstream = upstream_->metrics();
	metrics_->publish(std::move(snap));
}

Result<ManagedInterface *> Daemon::find(const Request &req)
{
	auto name = req.str("iface");
	if (!name)
		return std::unexpected(name.error());
	auto it = ifaces_.find(*name);
	if (it == ifaces_.end()) {
		std::string known;
		for (const auto &[n, _] : ifaces_)
			known += (known.empty() ? "" : ", ") + n;
		return invalid("sluiced does not manage interface '" + *name + "' (it manages: " +
			       (known.empty() ? "none" : known) + "; `sluicectl attach " + *name + "` adds it)");
	}
	return it->second.get();
}

Result<std::optional<std::string>> Daemon::only(const Request &req) const
{
	auto only = req.opt_str("iface");
	if (!only)
		return std::unexpected(only.error());
	if (*only && !ifaces_.count(**only))
		return invalid("sluiced does not manage interface '" + **only + "'");
	return only;
}

json Daemon::status(const Request &req)
{
	auto only = this->only(req);
	if (!only)
		return error_reply(only.error());
	auto wanted = [&](const std::string &name) { return !*only || **only == name; };
	StatusReply r;
	r.daemon = {getpid(),	   std::round(monotonic_seconds() - started_s_),
		    opts_.socket_path, opts_.pin_dir,
		    opts_.period_s,    opts_.policy,
		    upstream_ ? std::optional(upstream_->view(*only)) : std::nullopt,
		    loop_,	   loop_scheduling(opts_.rt_priority)};
	for (const auto &[name, m] : ifaces_)
		if (wanted(name))
			r.interfaces.push_back(m->status());
	return ok_reply(encode(r));
}

json Daemon::stats(const Request &req)
{
	auto only = this->only(req);
	if (!only)
		return error_reply(only.error());
	StatsReply r;
	for (const auto &[name, m] : ifaces_)
		if (!*only || **only == name)
			r.interfaces.push_back(m->stats());
	return ok_reply(encode(r));
}

json Daemon::attach(const Request &req)
{
	auto name = req.str("iface");
	auto mode_text = req.opt_str("mode");
	if (!name)
		return error_reply(name.error());
	if (!mode_text)
		return error_reply(mode_text.error());
	AttachMode mode = opts_.mode;
	if (*mode_text) {
		auto m = parse_attach_mode(**mode_text);
		if (!m)
			return error_reply(m.error());
		mode = *m;
	}
	if (ifaces_.count(*name))
		return error_reply(Error{ErrorKind::refused, EEXIST, *name + " is already attached"});
	if (!check_managed_interface_name(*name))
		return error_reply(Error{ErrorKind::invalid, 0,
					 "interface name must be 1.." + std::to_string(kInterfaceNameMax) +
						 " characters of printable ASCII, no '/', ':' or spaces"});
	auto m = ManagedInterface::start(opts_, *name, mode);
	if (!m)
		return error_reply(m.error());
	if (file_policy_)
		if (auto ok = (*m)->apply_policy(*file_policy_, opts_.policy_file, false); !ok)
			return error_reply(ok.error());
	ManagedInterface &added = *ifaces_.emplace(*name, std::move(*m)).first->second;
	policy_upstream(*name);
	auto st = added.status();
	return ok_reply(encode(AttachResult{*name, st.maps ? st.maps->attach_mode : std::nullopt}));
}

json Daemon::breaker(ManagedInterface &mi, const Request &req)
{
	auto to = req.str("to");
	if (!to)
		return error_reply(to.error());
	auto state = breaker_state_from(*to);
	if (!state)
		return error_reply(
			Error{ErrorKind::invalid, 0, "breaker state '" + *to + "' is not one of " + breaker_state_names()});
	return reply_of(mi.move_breaker(*state));
}

json Daemon::set(ManagedInterface &mi, const Request &req)
{
	auto rate = req.opt_integer("rate");
	auto burst = req.opt_integer("burst");
	if (!rate)
		return error_reply(rate.error());
	if (!burst)
		return error_reply(burst.error());
	return reply_of(mi.set_policy(*rate, *burst));
}

json Daemon::bucket(ManagedInterface &mi, const Request &req)
{
	auto addr = req.str("addr");
	if (!addr)
		return error_reply(addr.error());
	auto set = req.opt_integer("set");
	return set ? reply_of(mi.bucket(*addr, *set)) : error_reply(set.error());
}

json Daemon::refill(ManagedInterface &mi, const Request &req)
{
	auto addr = req.str("addr");
	if (!addr)
		return error_reply(addr.error());
	auto n = req.integer("n");
	return n ? reply_of(mi.refill(*addr, *n)) : error_reply(n.error());
}

namespace {

Result<ListKind> list_of(const Request &req)
{
	auto list = req.str("list");
	if (!list)
		return std::unexpected(list.error());
	if (*list != "allow" && *list != "deny")
		return invalid("\"list\" must be \"allow\" or \"deny\"");
	return *list == "allow" ? ListKind::allow : ListKind::deny;
}

} // namespace

json Daemon::list_change(ManagedInterface &mi, const Request &req)
{
	auto kind = list_of(req);
	if (!kind)
		return error_reply(kind.error());
	std::vector<std::string> cidrs;
	if (req.args.contains("cidrs")) {
		auto inline_cidrs = req.str_list("cidrs");
		if (!inline_cidrs)
			return error_reply(inline_cidrs.error());
		cidrs = std::move(*inline_cidrs);
	}
	if (req.passed_fd) {
		auto from_file = read_list_file(req.passed_fd->get());
		if (!from_file)
			return error_reply(from_file.error());
		for (const auto &c : *from_file)
			cidrs.push_back(c.str());
	}
	bool add = req.cmd == command_name(Command::list_add);
	auto up = req.opt_integer("upstream");
	if (!up)
		return error_reply(up.error());
	bool announce = up->value_or(0) != 0;
	if (!announce || !add) {
		auto changed = mi.list_change(*kind, cidrs, add);
		// A prefix off the deny list is no longer asked of the network either.
		if (changed && !add && *kind == ListKind::deny && upstream_)
			upstream_->remove_sources(mi.name(), parse_all(cidrs), monotonic_seconds());
		return reply_of(changed);
	}
	if (*kind != ListKind::deny)
		return error_reply(Error{ErrorKind::invalid, 0, "--upstream is for the deny list"});
	if (!upstream_)
		return error_reply(Error{ErrorKind::refused, 0,
					 "sluiced runs without --upstream: nothing is announced upstream (docs/upstream.md)"});
	// The guards first: a refused source changes nothing, here or upstream.
	auto sources = parse_all(cidrs);
	if (auto ok = upstream_->check_sources(mi.name(), sources); !ok) {
		log_warn(ok.error().message + " (sluicectl deny add " + mi.name() + " --upstream: nothing changed)");
		return error_reply(ok.error());
	}
	auto changed = mi.list_change(*kind, cidrs, true);
	if (!changed)
		return error_reply(changed.error());
	auto rules = upstream_->add_sources(mi.name(), sources, monotonic_seconds());
	if (!rules)
		return error_reply(rules.error());
	UpstreamListChange reply{*changed, {}, upstream_->speaker_up(), opts_.upstream.dry_run};
	for (const auto &r : *rules)
		reply.upstream.push_back(r.str());
	return ok_reply(encode(reply));
}

json Daemon::upstream(const Request &req)
{
	auto only = this->only(req);
	if (!only)
		return error_reply(only.error());
	if (!upstream_) {
		UpstreamView off;
		return ok_reply(encode(off));
	}
	return ok_reply(encode(upstream_->view(*only)));
}

UpstreamAnnouncer::Hooks Daemon::upstream_hooks()
{
	UpstreamAnnouncer::Hooks h;
	h.protection = [this](const std::string &iface, const std::vector<RuleReach> &reaches) {
		using Answers = std::vector<std::optional<std::string>>;
		auto it = ifaces_.find(iface);
		if (it == ifaces_.end())
			return Answers(reaches.size()); // no longer managed: its rules are forgotten
		auto answers = it->second->upstream_protection(reaches);
		if (!answers) {
			// Fail closed: what cannot be read may be protected.
			log_error("upstream: the protection guard: " + answers.error().describe());
			return Answers(reaches.size(), "a source of unknown protection (" + answers.error().describe() + ")");
		}
		return *answers;
	};
	h.is_proved = [this](const std::string &iface, const Cidr &source) -> Result<std::optional<std::string>> {
		auto it = ifaces_.find(iface);
		if (it == ifaces_.end())
			return std::optional<std::string>{};
		return it->second->upstream_proof(source.addr);
	};
	h.deny_list = [this](const std::string &iface) {
		auto it = ifaces_.find(iface);
		std::vector<Cidr> out;
		if (it != ifaces_.end())
			if (auto deny = it->second->list_show(ListKind::deny))
				out = deny->cidrs;
		return out;
	};
	h.interfaces = [this] {
		std::vector<std::string> out;
		for (const auto &[name, _] : ifaces_)
			out.push_back(name);
		return out;
	};
	return h;
}

json Daemon::list_show(ManagedInterface &mi, const Request &req)
{
	auto kind = list_of(req);
	return kind ? reply_of(mi.list_show(*kind)) : error_reply(kind.error());
}

json Daemon::detach(ManagedInterface &mi, const Request &)
{
	std::string name = mi.name();
	end_capture(name, "the interface was detached (sluicectl detach)");
	auto ok = mi.detach();
	if (!ok)
		return error_reply(ok.error());
	ifaces_.erase(name);
	if (upstream_)
		upstream_->forget_interface(name, monotonic_seconds());
	return ok_reply(encode(DetachResult{name}));
}

json Daemon::audit(ManagedInterface &mi, const Request &)
{
	return reply_of(mi.audit_now());
}

json Daemon::top(ManagedInterface &mi, const Request &req)
{
	auto n = req.opt_integer("n");
	if (!n)
		return error_reply(n.error());
	int64_t count = n->value_or(defaults::kTopCount);
	if (auto ok = named("\"n\"", check_top_count(count)); !ok)
		return error_reply(ok.error());
	return reply_of(mi.top(static_cast<size_t>(count), monotonic_seconds()));
}

json Daemon::rekey(ManagedInterface &mi, const Request &)
{
	return reply_of(mi.rekey("the operator's sluicectl rekey"));
}

json Daemon::standing_revoke(ManagedInterface &mi, const Request &req)
{
	auto addr = req.str("addr");
	if (!addr)
		return error_reply(addr.error());
	auto e = mi.revoke_standing(*addr);
	if (!e)
		return error_reply(e.error());
	return reply_of(Result<StandingRevokeReply>(StandingRevokeReply{mi.name(), *e}));
}

json Daemon::standing(ManagedInterface &mi, const Request &req)
{
	auto addr = req.opt_str("addr");
	if (!addr)
		return error_reply(addr.error());
	return reply_of(mi.standing(*addr));
}

Result<ReloadReply> Daemon::reload_policy(const std::optional<std::string> &only, const std::string &why)
{
	if (opts_.policy_file.empty())
		return refused("sluiced runs without a policy file (--no-policy, or none at " +
			       std::string(defaults::kPolicyPath) + "): start it with --policy PATH to reload one");
	auto targets = [&] {
		std::vector<ManagedInterface *> out;
		for (auto &[name, m] : ifaces_)
			if (!only || *only == name)
				out.push_back(m.get());
		return out;
	}();
	auto p = load_watched_policy();
	if (!p) {
		for (auto *m : targets)
			m->refuse_reload(p.error());
		return std::unexpected(p.error());
	}
	log_info("policy " + opts_.policy_file + ": reloading (" + why + ")");
	ReloadReply r;
	std::optional<Error> first_error;
	std::vector<std::string> applied_to;
	for (auto *m : targets) {
		auto applied = m->apply_policy(*p, opts_.policy_file, true);
		if (applied) {
			r.interfaces.push_back(*applied);
			applied_to.push_back(m->name());
		} else if (!first_error) {
			first_error = applied.error();
		}
	}
	if (!r.interfaces.empty() || targets.empty())
		file_policy_ = std::move(*p);
	// What the file asks upstream follows it where it was applied.
	for (const auto &name : applied_to)
		policy_upstream(name);
	if (first_error)
		return std::unexpected(*first_error);
	return r;
}

std::optional<Daemon::FileIdentity> Daemon::identity_of(const std::string &path)
{
	struct stat st {};
	if (stat(path.c_str(), &st) != 0)
		return std::nullopt;
	FileIdentity id;
	char buf[PATH_MAX];
	if (realpath(path.c_str(), buf))
		id.resolved = buf;
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	id.size = static_cast<uint64_t>(st.st_size);
	id.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
	return id;
}

// An identity is taken before the read for a file known from the last read
// (a change while it is read is then seen at the next look) and after it for
// a netset named for the first time.
Result<Policy> Daemon::load_watched_policy()
{
	std::vector<WatchedFile> before;
	before.push_back({opts_.policy_file, identity_of(opts_.policy_file)});
	for (const auto &w : watched_)
		if (w.path != opts_.policy_file)
			before.push_back({w.path, identity_of(w.path)});
	std::vector<std::string> netsets;
	auto p = load_policy(opts_.policy_file, &netsets);
	auto find = [](std::vector<WatchedFile> &in, const std::string &path) {
		return std::find_if(in.begin(), in.end(), [&](const WatchedFile &w) { return w.path == path; });
	};
	std::vector<WatchedFile> watched{before.front()};
	for (const auto &path : netsets) {
		if (find(watched, path) != watched.end())
			continue; // named twice
		auto known = find(before, path);
		watched.push_back(known != before.end() ? *known : WatchedFile{path, identity_of(path)});
	}
	watched_ = std::move(watched);
	return p;
}

void Daemon::watch_policy()
{
	if (!opts_.policy_watch || opts_.policy_file.empty())
		return;
	for (const auto &w : watched_) {
		if (identity_of(w.path) == w.identity)
			continue;
		// A vanished file (a ConfigMap mid-swap) is refused like any bad
		// file, once: the identities are taken anew, so it is not retried
		// every period.
		(void)reload_policy(std::nullopt, "--policy-watch: " + w.path + " changed");
		return;
	}
}

json Daemon::reload(const Request &req)
{
	auto only = this->only(req);
	if (!only)
		return error_reply(only.error());
	return reply_of(reload_policy(*only, "sluicectl reload"));
}

json Daemon::explain(const Request &req)
{
	// An interface sluiced does not manage is a refusal here (exit 1), not
	// bad input: the question was well formed.
	auto name = req.str("iface");
	if (!name)
		return error_reply(name.error());
	auto it = ifaces_.find(*name);
	if (it == ifaces_.end())
		return error_reply(Error{ErrorKind::refused, 0, "sluiced does not manage interface '" + *name + "'"});
	ManagedInterface &mi = *it->second;
	auto src = req.str("src");
	if (!src)
		return error_reply(src.error());
	auto proto = req.opt_str("proto");
	if (!proto)
		return error_reply(proto.error());
	return reply_of(mi.explain(*src, *proto));
}

json Daemon::capture(ManagedInterface &mi, const Request &req)
{
	auto names = req.str_list("outcomes");
	auto snaplen = req.integer("snaplen");
	auto every = req.integer("sample_every");
	if (!names || !snaplen || !every)
		return error_reply(!names ? names.error() : !snaplen ? snaplen.error() : every.error());
	uint32_t mask = 0;
	for (const auto &n : *names) {
		auto o = outcome_named(n);
		if (!o)
			return error_reply(Error{ErrorKind::invalid, 0, "\"outcomes\": no outcome is named '" + n + "'"});
		mask |= 1u << *o;
	}
	if (auto ok = named("\"outcomes\"", check_capture_outcomes(mask)); !ok)
		return error_reply(ok.error());
	if (auto ok = named("\"snaplen\"", check_capture_snaplen(*snaplen)); !ok)
		return error_reply(ok.error());
	if (auto ok = named("\"sample_every\"", check_capture_sample_every(*every)); !ok)
		return error_reply(ok.error());
	if (auto it = captures_.find(mi.name()); it != captures_.end())
		return error_reply(Error{ErrorKind::refused, EBUSY,
					 mi.name() + ": a capture is running already, by " + it->second->holder() +
						 "; one capture per interface at a time"});
	auto maps = mi.capture_maps();
	if (!maps)
		return error_reply(Error{ErrorKind::refused, 0, mi.name() + ": the data plane is not loaded"});
	auto count = req.opt_integer("count");
	auto duration_ms = req.opt_integer("duration_ms");
	if (!count || !duration_ms)
		return error_reply(!count ? count.error() : duration_ms.error());
	if (*count)
		if (auto ok = named("\"count\"", check_capture_count(**count)); !ok)
			return error_reply(ok.error());
	if (*duration_ms)
		if (auto ok = named("\"duration_ms\"", check_capture_duration_s(double(**duration_ms) / 1000)); !ok)
			return error_reply(ok.error());
	Request::Peer peer = req.peer.value_or(Request::Peer{});
	CaptureAsk ask{mask, static_cast<uint32_t>(*every), static_cast<uint32_t>(*snaplen),
		       *count ? uint64_t(**count) : 0, *duration_ms ? double(**duration_ms) / 1000 : 0};
	auto session = CaptureSession::start(mi.name(), *maps, req.passed_fd, ask, peer);
	if (!session)
		return error_reply(session.error());
	captures_[mi.name()] = std::move(*session);
	return ok_reply({{"iface", mi.name()},
			 {"outcomes", outcome_list(mask)},
			 {"snaplen", *snaplen},
			 {"sample_every", *every}});
}

json Daemon::capture_renew(ManagedInterface &mi, const Request &req)
{
	auto it = captures_.find(mi.name());
	if (it == captures_.end())
		return error_reply(Error{ErrorKind::refused, ENOENT, mi.name() + ": no capture is running"});
	Request::Peer peer = req.peer.value_or(Request::Peer{});
	if (!it->second->renew(peer, monotonic_seconds()))
		return error_reply(Error{ErrorKind::refused, EPERM,
					 mi.name() + ": the capture is " + it->second->holder() +
						 "'s; only the process that holds it renews it"});
	return ok_reply({{"iface", mi.name()}, {"lease_s", kCaptureLeaseS}});
}

void Daemon::end_capture(const std::string &iface, const std::string &why)
{
	auto it = captures_.find(iface);
	if (it == captures_.end())
		return;
	it->second->end(why);
	captures_.erase(it);
}

// One handler per command of the registry, in its order: a command added to
// ipc/commands.h and not here (or here out of order) fails the static_assert.
struct Daemon::Handler {
	Command cmd;
	json (Daemon::*daemon)(const Request &);                      // commands about the daemon
	json (Daemon::*managed)(ManagedInterface &, const Request &); // about one managed interface
};

const Daemon::Handler &Daemon::handler(Command c)
{
	static constexpr Handler handlers[] = {
		{Command::status, &Daemon::status, nullptr},
		{Command::stats, &Daemon::stats, nullptr},
		{Command::breaker, nullptr, &Daemon::breaker},
		{Command::set, nullptr, &Daemon::set},
		{Command::bucket, nullptr, &Daemon::bucket},
		{Command::refill, nullptr, &Daemon::refill},
		{Command::list_add, nullptr, &Daemon::list_change},
		{Command::list_del, nullptr, &Daemon::list_change},
		{Command::list_show, nullptr, &Daemon::list_show},
		{Command::attach, &Daemon::attach, nullptr},
		{Command::detach, nullptr, &Daemon::detach},
		{Command::audit, nullptr, &Daemon::audit},
		{Command::top, nullptr, &Daemon::top},
		{Command::standing, nullptr, &Daemon::standing},
		{Command::reload, &Daemon::reload, nullptr},
		{Command::explain, &Daemon::explain, nullptr},
		{Command::upstream, &Daemon::upstream, nullptr},
		{Command::capture, nullptr, &Daemon::capture},
		{Command::standing_revoke, nullptr, &Daemon::standing_revoke},
		{Command::capture_renew, nullptr, &Daemon::capture_renew},
		{Command::rekey, nullptr, &Daemon::rekey},
	};
	static_assert(std::size(handlers) == kCommandCount, "every command of the registry needs a handler");
	static_assert(
		[] {
			for (size_t i = 0; i < std::size(handlers); i++)
				if (static_cast<size_t>(handlers[i].cmd) != i || !handlers[i].daemon == !handlers[i].managed)
					return false;
			return true;
		}(),
		"handlers in registry order, each with exactly one function");
	return handlers[static_cast<size_t>(c)];
}

json Daemon::handle(const Request &req)
{
	const CommandSpec *spec = find_command(req.cmd);
	if (!spec)
		return error_reply(Error{ErrorKind::invalid, 0, "unknown command '" + req.cmd + "'"});
	if (auto ok = check_args(*spec, req); !ok)
		return error_reply(ok.error());
	if (needs_root(*spec) && req.peer && req.peer->uid != 0) {
		log_warn("control: refused \"" + req.cmd + "\" from uid " + std::to_string(req.peer->uid) + " pid " +
			 std::to_string(req.peer->pid) + " (root only)");
		return error_reply(Error{ErrorKind::refused, EPERM,
					 "\"" + req.cmd + "\" " +
						 (spec->reveals_slots ? "names bucket slot indices"
								      : "changes what sluiced does") +
						 ": root only (the socket's group may send the commands that only read)"});
	}
	const Handler &h = handler(spec->id);
	if (h.daemon)
		return (this->*h.daemon)(req);
	auto m = find(req);
	if (!m)
		return error_reply(m.error());
	return (this->*h.managed)(**m, req);
}

int Daemon::run()
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, nullptr);
	signal(SIGPIPE, SIG_IGN);
	UniqueFd sfd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));

	// systemd (Type=notify): ready once every interface is attached, which
	// start() did; WATCHDOG=1 from the loop itself, at half the interval, so
	// a stalled loop is what the watchdog catches. No-ops without systemd.
	uint64_t watchdog_us = 0;
	double watchdog_every = 0, next_watchdog = 0;
	if (sd_watchdog_enabled(0, &watchdog_us) > 0 && watchdog_us > 0) {
		watchdog_every = double(watchdog_us) / 2e6;
		next_watchdog = monotonic_seconds();
	}
	sd_notifyf(0, "READY=1\nSTATUS=protecting %zu interface(s)", ifaces_.size());

	double next_tick = monotonic_seconds() + opts_.period_s;
	std::vector<pollfd> fds;
	for (;;) {
		if (watchdog_every > 0 && monotonic_seconds() >= next_watchdog) {
			sd_notify(0, "WATCHDOG=1");
			next_watchdog = monotonic_seconds() + watchdog_every;
		}
		fds.clear();
		server_->poll_fds(fds);
		const size_t server_fds = fds.size();
		for (const auto &[_, c] : captures_)
			c->poll_fds(fds);
		fds.push_back({sfd.get(), POLLIN, 0});
		double wait = std::min(next_tick, watchdog_every > 0 ? next_watchdog : next_tick) - monotonic_seconds();
		if (!captures_.empty())
			wait = std::min(wait, kCaptureStatsEveryS); // renew the lease, send the counts
		int timeout = wait > 0 ? static_cast<int>(std::ceil(wait * 1000)) : 0;
		int n = poll(fds.data(), fds.size(), timeout);
		if (n < 0 && errno != EINTR) {
			log_error(std::string("poll: ") + std::strerror(errno));
			return 1;
		}
		if (fds.back().revents & POLLIN) {
			signalfd_siginfo si{};
			if (read(sfd.get(), &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo != SIGHUP)
					break;
				if (opts_.policy_file.empty())
					log_info("SIGHUP: no policy file to reload (--no-policy)");
				else
					(void)reload_policy(std::nullopt, "SIGHUP");
			}
		}
		fds.pop_back();
		fds.resize(server_fds);
		for (auto it = captures_.begin(); it != captures_.end();)
			it = it->second->serve(monotonic_seconds()) ? std::next(it) : captures_.erase(it);
		if (n > 0)
			server_->serve(fds, [this](const Request &r) { return handle(r); });
		double now = monotonic_seconds();
		if (now >= next_tick) {
			time_tick(now, next_tick);
			for (auto &[name, m] : ifaces_) {
				m->tick(now);
				if (upstream_ && upstream_->automatic())
					upstream_->observe(name,
							  m->flood_signals(now, opts_.upstream.automatic.top,
									   upstream_->last_resort()),
							  now);
			}
			if (upstream_)
				upstream_->tick(now);
			watch_policy();
			publish_metrics(now);
			// Keep the period's phase; after a long stall, skip ahead
			// rather than tick in a burst.
			next_tick += opts_.period_s;
			if (next_tick < now)
				next_tick = now + opts_.period_s;
		}
	}
	sd_notify(0, "STOPPING=1");
	for (auto &[_, c] : captures_)
		c->end("sluiced is exiting");
	captures_.clear();
	if (upstream_)
		upstream_->withdraw_all(); // a clean exit asks the network for nothing more
	for (auto &[name, m] : ifaces_) {
		m->release_cookies();
		if (opts_.detach_on_exit) {
			if (auto ok = m->detach(); !ok)
				log_error(name + ": " + ok.error().describe());
		} else {
			log_info(name + ": sluiced exiting; enforcement stays attached (pins under " + m->pin_path() +
				 "); `sluicectl detach " + name + "` removes it");
		}
	}
	return 0;
}

} // namespace sluice
