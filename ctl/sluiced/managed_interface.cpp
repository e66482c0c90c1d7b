// managed_interface.cpp - one protected interface's life: start (the pins
// adopted or a program loaded), the link watched, the period's tick (read,
// decide, write), the breaker's moves, the standing count, detach. Its other
// parts: managed_cookies, managed_policy, managed_requests, managed_standing.
#include "sluiced/managed_interface.h"

#include "sluiced/cookie_sysctls.h"
#include "sluiced/period.h"

#include "base/clock.h"
#include "base/log.h"
#include "bpf/cgroup_links.h"
#include "bpf/maps.h"
#include "logic/budgets.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <net/if.h>
#include <sys/file.h>

namespace sluice {

namespace {

std::string read_oper_state(const std::string &iface)
{
	std::ifstream f("/sys/class/net/" + iface + "/operstate");
	std::string s;
	std::getline(f, s);
	return s;
}

} // namespace

Result<std::unique_ptr<ManagedInterface>> ManagedInterface::start(const DaemonOptions &opts, const std::string &name,
								  AttachMode mode)
{
	unsigned idx = if_nametoindex(name.c_str());
	if (idx == 0)
		return invalid("unknown interface '" + name + "' (`ip link show` lists them)");
	if (auto ok = ensure_bpffs(opts.pin_dir); !ok)
		return std::unexpected(ok.error());

	std::unique_ptr<ManagedInterface> m(new ManagedInterface());
	m->name_ = name;
	m->dir_ = opts.pin_dir + "/" + name;
	m->mode_requested_ = mode;
	m->ifindex_ = idx;
	auto cpus = possible_cpus();
	if (!cpus)
		return std::unexpected(cpus.error());
	m->cpus_ = *cpus;
	if (auto ok = m->lock_pin_dir(); !ok)
		return std::unexpected(ok.error());
	// The pins of a sluiced before this one are adopted as they are (the
	// program never left the interface); else a fresh program is loaded.
	auto up = Dataplane::has_pins(m->dir_) ? m->adopt_pins(opts) : m->load_and_attach(opts, mode);
	if (!up)
		return std::unexpected(up.error());
	if (auto ok = m->prepare_control(opts); !ok)
		return std::unexpected(ok.error());
	return m;
}

Status ManagedInterface::lock_pin_dir()
{
	std::error_code ec;
	std::filesystem::create_directories(dir_, ec);
	if (ec)
		return fail(ErrorKind::system, "creating pin directory " + dir_, ec.value());
	// One daemon per interface: an exclusive lock on its pin directory.
	lock_.reset(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!lock_)
		return fail_errno("opening pin directory " + dir_);
	if (flock(lock_.get(), LOCK_EX | LOCK_NB) != 0)
		return fail(ErrorKind::refused,
			    "another sluiced already manages " + name_ + " (its pins under " + dir_ +
				    " are locked); stop that daemon first",
			    errno);
	return {};
}

BudgetAsk ManagedInterface::asked_budgets(const DaemonOptions &opts, const sluice_config *pinned) const
{
	// Over adopted pins the rate and burst stay the pins' (`sluicectl set`
	// may have changed them) unless given; the standing, newcomer, cookie
	// and grant budgets are the options' (no command changes them), over
	// this host's CPUs.
	BudgetAsk ask;
	ask.rate_pps = pinned && !opts.rate_given ? pinned->rate_pps : opts.rate_pps;
	ask.burst = pinned && !opts.burst_given ? pinned->burst : opts.burst;
	ask.standing_rate_pps = opts.standing_rate_pps;
	ask.standing_burst = opts.standing_burst;
	ask.newcomer_pps = newcomer_pps_asked(opts, cpus_);
	ask.cookie_pps = opts.cookie_pps;
	ask.cookie_dest_pps = opts.cookie_dest_pps;
	ask.grant_rate_per_s = opts.grant_rate_per_s;
	ask.grant_burst = opts.grant_burst;
	ask.prefix_quota = opts.standing_prefix_quota;
	ask.grant_max = opts.grant_max;
	ask.grant_window_s = opts.load.standing_lapse_s;
	return ask;
}

Status ManagedInterface::pins_match(const Dataplane &dp, const DaemonOptions &opts) const
{
	const auto &s = dp.settings();
	auto mismatch = [&](const std::string &what, uint64_t pinned, uint64_t asked) -> Status {
		if (pinned == asked)
			return {};
		return refused("pins under " + dir_ + " were made with " + what + " " + std::to_string(pinned) +
			       ", the options ask for " + std::to_string(asked) + "; run `sluicectl detach " + name_ +
			       "` to reload with the new setting, or start with the pinned one");
	};
	for (auto st : {mismatch("table size", s.slot_mask + 1, opts.load.slots),
			mismatch("IPv4 prefix", s.v4_prefix, opts.load.v4_prefix),
			mismatch("IPv6 prefix", s.v6_prefix, opts.load.v6_prefix),
			mismatch("dry-run", s.dry_run, opts.load.dry_run),
			mismatch("--sample-every", s.sample_every, opts.load.sample_every),
			mismatch("--standing-sets", s.standing_set_mask + 1, opts.load.standing_sets),
			mismatch("--standing-lapse (in ticks of 2^30 ns)", s.standing_lapse_ticks,
				 standing_lapse_ticks(opts.load.standing_lapse_s)),
			mismatch("--observe-periods", s.observe_periods, opts.load.observe_periods),
			mismatch("--multiprog", dp.multiprog(), opts.load.multiprog)})
		if (!st)
			return st;
	if (opts.no_standing && dp.feeders_attached())
		return refused("pins under " + dir_ + " were made with standing feeders attached, the options "
			       "ask for --no-standing; run `sluicectl detach " + name_ +
			       "` to reload without them, or start without --no-standing");
	if (!opts.no_standing && !dp.feeders_attached())
		log_warn(name_ + ": the pins under " + dir_ +
			 " have no standing feeders (they could not be attached when the program was loaded), so "
			 "new connections grant no standing; detach and start again to attach them");
	if (!opts.no_standing && dp.feeders_attached()) {
		auto asked = opts.feeder_cgroup.empty() ? open_cgroup2_root() : open_cgroup2_dir(opts.feeder_cgroup);
		auto id = asked ? cgroup_id_of(asked->get()) : Result<uint64_t>(std::unexpected(asked.error()));
		if (!id)
			return std::unexpected(id.error());
		if (*id != dp.feeders_cgroup_id())
			return refused("the standing feeders under " + dir_ + " are attached to another cgroup than " +
				       (opts.feeder_cgroup.empty() ? std::string("the cgroup v2 root")
								   : "--feeder-cgroup " + opts.feeder_cgroup) +
				       " asks; run `sluicectl detach " + name_ + "` to attach them again");
	}
	return {};
}

Status ManagedInterface::adopt_pins(const DaemonOptions &opts)
{
	auto dp = Dataplane::adopt(dir_);
	if (!dp)
		return std::unexpected(dp.error());
	// A capture a sluiced before this one left on (it was killed): off
	// now, its lease would end it within kCaptureLeaseS anyway.
	CaptureControl capture(dp->capture_maps());
	if (auto c = capture.read(); c && c->outcome_mask) {
		(void)capture.stop();
		log_info(name_ + ": a capture left on by a sluiced before this one: turned off");
	}
	if (auto ok = pins_match(*dp, opts); !ok)
		return ok;
	dp_.emplace(std::move(*dp));
	oper_state_ = read_oper_state(name_);
	// A daemon killed between a list write and its flag left a list the
	// program does not look up: the flags follow the lists again.
	if (auto ok = dp_->lists().sync_flags(); !ok)
		return ok;
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	auto budgeted = config_with_budgets(*cfg, asked_budgets(opts, &*cfg), cpus_);
	if (!budgeted)
		return std::unexpected(budgeted.error());
	if (std::memcmp(&*budgeted, &*cfg, sizeof(*cfg)) != 0) {
		if (auto ok = dp_->config().write(*budgeted); !ok)
			return ok;
		*cfg = *budgeted;
	}
	// The breaker goes on in the state the pins hold, from when it began.
	auto state = breaker_state_from(cfg->breaker_state);
	breaker_ = Breaker(state.value_or(BreakerState::serving));
	uint64_t now_real = realtime_ns();
	double age = cfg->breaker_since_ns && cfg->breaker_since_ns < now_real
			     ? double(now_real - cfg->breaker_since_ns) / 1e9
			     : 0;
	since_mono_s_ = monotonic_seconds() - age;
	auto prog = dp_->prog_id();
	log_info(name_ + ": adopted pins under " + dir_ + ": program " + (prog ? std::to_string(*prog) : "?") +
		 " stayed attached, breaker " + std::string(to_string(breaker_.state())) + ", rate " +
		 std::to_string(cfg->rate_pps) + " burst " + std::to_string(cfg->burst));
	watch_link(); // re-attaches if the interface was recreated meanwhile
	return {};
}

Status ManagedInterface::load_and_attach(const DaemonOptions &opts, AttachMode mode)
{
	std::error_code ec;
	if (!std::filesystem::is_empty(dir_, ec))
		return refused("pin directory " + dir_ +
			       " holds pins but no link (a stale or foreign directory); remove it with `rm -r " + dir_ +
			       "` and start again");
	sluice_config initial{};
	initial.breaker_state = SLUICE_SERVING;
	initial.admission_ppm = SLUICE_PPM_FULL;
	initial.breaker_since_ns = realtime_ns();
	initial.valve_since_ns = initial.breaker_since_ns;
	auto cfg = config_with_budgets(initial, asked_budgets(opts, nullptr), cpus_);
	if (!cfg)
		return std::unexpected(cfg.error());
	auto dp = Dataplane::load(opts.load, *cfg);
	if (!dp)
		return std::unexpected(dp.error());
	auto in_force = dp->attach(static_cast<int>(ifindex_), mode);
	if (!in_force)
		return std::unexpected(
			Error{in_force.error().kind, in_force.error().code, name_ + ": " + in_force.error().message});
	if (mode == AttachMode::automatic && *in_force == AttachMode::skb)
		log_warn(name_ + ": native XDP is not available; fell back to skb (generic) mode, which is slower");
	if (opts.no_standing)
		log_info(name_ + ": --no-standing: no standing feeders attached; shedding admits the allowlist "
			 "and the newcomer budget only");
	else if (auto ok = dp->attach_feeders(opts.feeder_cgroup); !ok)
		log_warn(name_ + ": standing is not fed by new connections: " + ok.error().describe() +
			 "; only the peers of connections found at start have standing while shedding");
	// Maps first, link last: a link pin means a complete set.
	if (auto ok = dp->pin(dir_); !ok) {
		(void)dp->detach(dir_);
		return ok;
	}
	dp_.emplace(std::move(*dp));
	since_mono_s_ = monotonic_seconds();
	auto prog = dp_->prog_id();
	log_info(name_ + ": attached program " + (prog ? std::to_string(*prog) : "?") + " in " +
		 std::string(to_string(*in_force)) + " mode, " + std::to_string(opts.load.slots) + " slots, rate " +
		 std::to_string(opts.rate_pps) + " burst " + std::to_string(opts.burst) +
		 (opts.load.dry_run ? ", dry run" : "") + "; pins under " + dir_);
	return {};
}

Status ManagedInterface::prepare_control(const DaemonOptions &opts)
{
	rekey_every_s_ = double(opts.rekey_every_s);
	if (rekey_every_s_ > 0 && dp_->multiprog()) {
		// libxdp's dispatcher holds the links: no new program can take them
		// (Dataplane::rekey refuses), so no schedule to fail on every turn.
		log_warn(name_ + ": --rekey-every " + std::to_string(opts.rekey_every_s) +
			 " is off with --multiprog (libxdp's dispatcher holds the program's links); the hash key "
			 "changes only with a fresh load");
		rekey_every_s_ = 0;
	}
	next_rekey_s_ = monotonic_seconds() + rekey_every_s_;
	// Connections older than the feeders' links (made before this daemon, or
	// while none ran): their peers are granted standing now.
	// (None with --no-standing: the table stays empty.)
	if (!opts.no_standing) {
		auto peers = grant_established_peers(monotonic_seconds());
		if (!peers)
			return std::unexpected(peers.error());
		log_info(name_ + ": standing granted to the " + std::to_string(*peers) +
			 " peers of established connections");
		peer_refresh_s_ = std::min(kPeerRefreshMaxS, double(dp_->settings().standing_lapse_ticks) *
								     double(1ull << SLUICE_STANDING_TICK_SHIFT) / 1e9 / 4);
	}
	// SYN cookies: a daemon restarted after SIGKILL holds the sysctls its
	// predecessor armed (and knows what was there before); then arm or
	// disarm for the mode and the state in force.
	cookie_mode_ = opts.cookie_mode;
	if (auto cfg = dp_->config().read(); cfg && cfg->cookie_sysctls_armed) {
		cookie_sysctls().adopt(name_, *cfg);
		log_info(name_ + ": the cookie sysctls are armed (by a sluiced before this one); adopted");
	}
	check_xdp_tx();
	if (auto cfg = dp_->config().read()) {
		sluice_config next = *cfg;
		apply_cookies(monotonic_seconds(), breaker_.state(), next);
		if (auto ok = write_config(*cfg, next); !ok)
			log_error(name_ + ": writing the cookie settings: " + ok.error().describe());
	} else {
		log_error(name_ + ": " + cfg.error().describe());
	}
	mark_listeners();
	// The control parts, each sized once here.
	policy_.emplace(opts.policy);
	governor_.emplace(GovernorConfig{standing_capacity(opts), opts.revoke, opts.standing_tenure_s},
			  dp_->standing().sets());
	{
		const uint32_t ways = dp_->standing().sets() * SLUICE_STANDING_WAYS;
		quota_.emplace(ways, opts.standing_prefix_quota, std::min<size_t>(ways, 65536));
		// sized once: a recount's reads and counts reuse them
		quota_before_.resize(ways);
		quota_after_.resize(ways);
	}
	valve_.emplace(ValveConfig{.capacity_pps = standing_capacity(opts),
				   .clear_pps = opts.policy.clear_pps,
				   .trip_periods = opts.policy.trip_periods});
	auditor_.emplace(opts.audit_per_period);
	if (dp_->settings().sample_every) {
		auto sampler = DropSampler::open(dp_->drop_samples_fd(), dp_->settings(), opts.top_capacity,
						 opts.top_window_s, monotonic_seconds());
		if (!sampler)
			return std::unexpected(sampler.error());
		sampler_ = std::move(*sampler);
	}
	oper_state_ = read_oper_state(name_);
	auto c = dp_->counters().read();
	if (c)
		last_counters_ = *c;
	last_tick_s_ = monotonic_seconds();
	// The standing count served until the first sweep is whole, and the part
	// counted each period after.
	const uint32_t sets = dp_->standing().sets();
	occupancy_part_sets_ = static_cast<uint32_t>(
		std::clamp(std::ceil(double(sets) * opts.period_s / kOccupancySweepS), 1.0, double(sets)));
	if (auto o = dp_->standing().occupancy()) {
		occupancy_ = *o;
		occupancy_at_s_ = monotonic_seconds();
	} else {
		log_error(name_ + ": counting standing entries: " + o.error().describe());
	}
	return {};
}

void ManagedInterface::watch_link()
{
	unsigned idx = if_nametoindex(name_.c_str());
	if (idx == 0) {
		if (!gone_)
			log_warn(name_ + ": interface is gone; its XDP link went with it. Waiting for it to come back");
		gone_ = true;
		return;
	}
	std::string oper = read_oper_state(name_);
	if (oper != oper_state_) {
		log_info(name_ + ": interface is " + oper + " (the program stays attached)");
		oper_state_ = oper;
	}
	auto linked = dp_->link_ifindex();
	if (linked && *linked == idx && !gone_) {
		ifindex_ = idx;
		return;
	}
	// The interface was deleted and created again (new ifindex), or the link
	// went defunct: attach the same program and maps to it again.
	auto mode = dp_->attach(static_cast<int>(idx), mode_requested_);
	if (!mode) {
		std::string why = mode.error().describe();
		if (why != last_error_)
			log_error(name_ + ": cannot re-attach: " + why);
		last_error_ = why;
		return;
	}
	Dataplane::remove_link_pin(dir_);
	if (auto ok = dp_->pin(dir_); !ok)
		log_error(name_ + ": re-attached but cannot pin the link: " + ok.error().describe());
	log_info(name_ + ": interface is back (ifindex " + std::to_string(idx) + "); re-attached in " +
		 std::string(to_string(*mode)) + " mode with the same buckets");
	gone_ = false;
	ifindex_ = idx;
	last_error_.clear();
}

void ManagedInterface::tick(double now_s)
{
	watch_link();
	if (sampler_)
		sampler_->tick(now_s);
	// A period as its steps: read the counters and the config once, decide
	// every change into one next config, write it once, then the work that
	// needs no write (the listeners' hint, the standing count, the audit).
	auto read = read_period();
	if (!read) {
		log_error(name_ + ": " + read.error().describe());
		return;
	}
	write_period(*read, decide_period(now_s, *read));
	after_period(now_s);
}

Result<ManagedInterface::PeriodReading> ManagedInterface::read_period()
{
	auto counters = dp_->counters().read();
	if (!counters)
		return std::unexpected(counters.error());
	// The time of this reading, not of the tick: what ran before it this
	// tick (the sampler, another interface) does not count in the rates.
	const double read_s = monotonic_seconds();
	double dt = read_s - last_tick_s_;
	if (dt > 0)
		rates_ = rates_between(last_counters_, *counters, dt);
	last_counters_ = *counters;
	last_tick_s_ = read_s;
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	return PeriodReading{*counters, read_s, *cfg};
}

ManagedInterface::PeriodPlan ManagedInterface::decide_period(double now_s, const PeriodReading &read)
{
	// Each step changes its fields in `next`; the program sees them all
	// land at once, in write_period().
	PeriodPlan plan;
	plan.next = read.cfg;
	sluice_config &next = plan.next;
	plan.policy = policy_->step(policy_sample(read.read_s, read.counters, breaker_.state(), since_mono_s_, read.cfg));
	const PolicyDecision &d = plan.policy;
	log_rule(d.rule, d.move.has_value());
	// The valve sees every period; a breaker move this period sets it itself
	// (leaving shedding opens the valve).
	plan.valve = valve_->step(valve_sample(now_s, read.counters, breaker_.state(), read.cfg));
	if (!d.move && plan.valve.close) {
		next = valve_config(next, *plan.valve.close, realtime_ns());
		plan.valve_moved = *plan.valve.close;
	}
	if (d.move) {
		const BreakerState from = breaker_.state();
		if (auto ok = stage_transition(next, *d.move, false); !ok)
			log_error(name_ + ": " + ok.error().describe());
		else
			plan.moved_from = from;
	} else if (auto admitted = admission_config(next, breaker_.state(), d)) {
		next = *admitted;
		plan.admission_moved = true;
	}
	govern_standing(now_s, next);
	if (peer_refresh_s_ > 0 && now_s - peers_granted_s_ >= peer_refresh_s_)
		if (auto ok = grant_established_peers(now_s); !ok)
			log_error(name_ + ": refreshing the standing of established connections' peers: " +
				  ok.error().describe());
	check_xdp_tx();
	apply_cookies(now_s, breaker_.state(), next);
	return plan;
}

void ManagedInterface::write_period(const PeriodReading &read, const PeriodPlan &plan)
{
	if (auto ok = write_config(read.cfg, plan.next); !ok) {
		log_error(name_ + ": writing the config" +
			  (plan.moved_from ? " (the breaker stays " + std::string(to_string(*plan.moved_from)) + ")" : "") +
			  ": " + ok.error().describe());
		if (plan.moved_from)
			breaker_ = Breaker(*plan.moved_from);
		return;
	}
	if (plan.valve_moved && *plan.valve_moved) {
		valve_closes_++;
		log_warn(name_ + ": standing valve closed (" + plan.valve.reason +
			 "): shedding admits the allowlist only");
	} else if (plan.valve_moved) {
		log_info(name_ + ": standing valve opened (" + plan.valve.reason + ")");
	}
	if (plan.moved_from)
		commit_transition(*plan.moved_from, *plan.policy.move, false, plan.policy.reason, read.cfg.valve_closed);
	if (plan.admission_moved)
		log_debug(name_ + ": admission " + std::to_string(plan.policy.admission_ppm / 10000.0) + "%");
}

void ManagedInterface::after_period(double now_s)
{
	if (!dp_->feeders_attached() || now_s - listeners_marked_s_ >= kListenerRescanS)
		mark_listeners();
	count_occupancy_part(now_s);
	rekey_when_due(now_s);

	auto before = auditor_->report().violations;
	if (auto ok = auditor_->step(dp_->slots()); !ok)
		log_error(name_ + ": audit: " + ok.error().describe());
	else if (auditor_->report().violations > before)
		log_warn(name_ + ": audit found " + std::to_string(auditor_->report().violations - before) +
			 " slots outside 0 <= tokens <= burst");
}

void ManagedInterface::log_rule(const RuleView &r, bool moving)
{
	// Every period at debug; at info only when the verdict changes within
	// a state (a move is logged by transition()).
	log_debug(name_ + ": breaker " + std::string(to_string(r.state)) + ", " + r.verdict() + ": " + r.text());
	// A window filling up after a transition says nothing new.
	if (!moving && rule_ && rule_->state == r.state && rule_->verdict() != r.verdict() &&
	    rule_->verdict() != "filling" && r.verdict() != "filling" && !r.manual)
		log_info(name_ + ": breaker " + std::string(to_string(r.state)) + ", window " + r.verdict() + ": " +
			 r.text());
	rule_ = r;
}

Status ManagedInterface::write_config(const sluice_config &was, const sluice_config &next)
{
	if (std::memcmp(&was, &next, sizeof(next)) == 0)
		return {};
	return dp_->config().write(next);
}

Status ManagedInterface::transition(BreakerState to, bool manual, const std::string &why)
{
	auto cfg = dp_->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	sluice_config next = *cfg;
	const BreakerState from = breaker_.state();
	if (auto ok = stage_transition(next, to, manual); !ok)
		return ok;
	if (auto ok = write_config(*cfg, next); !ok) {
		breaker_ = Breaker(from);
		return ok;
	}
	commit_transition(from, to, manual, why, cfg->valve_closed);
	return {};
}

Status ManagedInterface::stage_transition(sluice_config &next, BreakerState to, bool manual)
{
	const BreakerState from = breaker_.state();
	if (auto ok = breaker_.transition(to); !ok)
		return ok;
	// Cookies armed before the program sheds, in the same write as the
	// state: its first SYN finds the kernel ready to make a cookie.
	if (from == BreakerState::shedding)
		shed_left_s_ = monotonic_seconds();
	apply_cookies(monotonic_seconds(), to, next);
	next = breaker_config(next, to, manual, policy_->config().start_ppm, realtime_ns());
	return {};
}

void ManagedInterface::commit_transition(BreakerState from, BreakerState to, bool manual, const std::string &why,
					 bool valve_was_closed)
{
	since_mono_s_ = monotonic_seconds();
	transitions_[static_cast<uint32_t>(from)][static_cast<uint32_t>(to)]++;
	if (valve_was_closed && to != BreakerState::shedding)
		log_info(name_ + ": standing valve opened (the breaker left shedding)");
	policy_->reset_window();
	path_.push_back(BreakerStep{realtime_ns(), from, to, manual, manual ? "operator" : why});
	while (path_.size() > kBreakerPathKept)
		path_.pop_front();
	auto msg = name_ + ": breaker " + std::string(to_string(from)) + " -> " + std::string(to_string(to)) + " (" +
		   (manual ? "operator" : why) + ")";
	if (to == BreakerState::shedding)
		log_warn(msg);
	else
		log_info(msg);
}

// A part of the standing table each period, so that a whole sweep takes
// kOccupancySweepS; the sweep's sum becomes the count served once it is whole.
void ManagedInterface::count_occupancy_part(double now_s)
{
	const uint32_t sets = dp_->standing().sets();
	if (sweep_.next_set == 0) {
		sweep_.sum = {};
		sweep_.started_s = now_s;
	}
	auto part = dp_->standing().occupancy(sweep_.next_set, occupancy_part_sets_);
	if (!part) {
		// Start over next period: a sum with a hole in it is no count.
		log_error(name_ + ": counting standing entries: " + part.error().describe());
		sweep_.next_set = 0;
		return;
	}
	sweep_.sum.live += part->live;
	sweep_.sum.full_sets += part->full_sets;
	sweep_.sum.capacity += part->capacity;
	sweep_.next_set += std::min(occupancy_part_sets_, sets - sweep_.next_set);
	if (sweep_.next_set >= sets) {
		occupancy_ = sweep_.sum;
		occupancy_at_s_ = sweep_.started_s;
		sweep_.next_set = 0;
		enforce_prefix_quota();
	}
}

// Once a sweep: recount every prefix in one scan of the table (the data
// plane adds its new sources as it grants them, and never takes one away),
// take the excess of those over their quota (a second scan, only then), and
// write the counts back with what the data plane added during the scan
// (PrefixQuota::prefix_counts). A grant made between the second read and
// the write is lost from its prefix's count until the next recount (whose
// eviction then catches an excess).
void ManagedInterface::enforce_prefix_quota()
{
	if (!quota_)
		return;
	const StandingTable table = dp_->standing();
	if (auto ok = table.prefix_counts(quota_before_); !ok) {
		log_error(name_ + ": reading the standing prefix quota: " + ok.error().describe());
		return;
	}
	quota_->begin_sweep();
	if (auto ok = table.for_each_live([&](const StandingWay &w) { quota_->count(table.quota_bit(w.kept), w.handshake); });
	    !ok) {
		log_error(name_ + ": counting the standing prefix quota: " + ok.error().describe());
		return;
	}
	if (const uint32_t over = quota_->end_sweep()) {
		auto ok = table.for_each_live([&](const StandingWay &w) {
			const uint32_t bit = table.quota_bit(w.kept);
			if (quota_->over(bit))
				quota_->offer(bit, w.index, w.fp, w.proof, w.age);
		});
		if (!ok)
			log_error(name_ + ": the standing prefix quota's scan: " + ok.error().describe());
		uint64_t evicted = 0;
		for (const QuotaEviction &e : quota_->choose()) {
			auto r = table.evict_way(e.index, e.fp);
			if (!r)
				log_error(name_ + ": evicting a standing entry over its prefix's quota: " + r.error().describe());
			else
				evicted += *r;
		}
		quota_evictions_ += evicted;
		log_warn(name_ + ": " + std::to_string(over) + " source prefix(es) (/24, /48) held more than their quota of " +
			 std::to_string(quota_->quota()) + " standing entries: " + std::to_string(evicted) +
			 " evicted, weakest proof and least recently seen first; " + std::to_string(quota_->prefixes_full()) +
			 " prefix(es) at their quota take no new source");
	}
	if (auto ok = table.prefix_counts(quota_after_); !ok) {
		log_error(name_ + ": reading the standing prefix quota: " + ok.error().describe());
		return;
	}
	if (auto ok = table.set_prefix_counts(quota_->prefix_counts(quota_before_, quota_after_)); !ok)
		log_error(name_ + ": writing the standing prefix quota: " + ok.error().describe());
}

// The last whole count and its age; no reading here (requests call it).
std::optional<CountedOccupancy> ManagedInterface::counted_occupancy() const
{
	if (!occupancy_)
		return std::nullopt;
	return CountedOccupancy{*occupancy_, monotonic_seconds() - occupancy_at_s_};
}

Status ManagedInterface::detach()
{
	release_cookies();
	auto ok = dp_->detach(dir_);
	if (ok)
		log_info(name_ + ": detached; pins under " + dir_ + " removed");
	return ok;
}

} // namespace sluice
