#include "sluicectl/pins.h"

#include "bpf/class_maps.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace sluicectl {

Result<sluice::Dataplane> open_pins(const Context &ctx, const std::string &iface)
{
	std::string dir = ctx.pin_dir + "/" + iface;
	if (::access(ctx.pin_dir.c_str(), R_OK | X_OK) != 0 && errno != ENOENT)
		return sluice::fail(sluice::ErrorKind::system,
				    "the pins under " + ctx.pin_dir + " cannot be read: " + std::strerror(errno) +
					    "; run as root");
	if (!sluice::Dataplane::has_pins(dir))
		return sluice::fail(sluice::ErrorKind::system,
				    "there are no pins for " + iface + " under " + ctx.pin_dir +
					    " (is it attached? --pin-dir names another directory)");
	auto dp = sluice::Dataplane::adopt(dir);
	if (!dp && (dp.error().code == EACCES || dp.error().code == EPERM))
		return sluice::fail(sluice::ErrorKind::system, "reading the pins under " + dir + " needs root: " +
								       std::strerror(dp.error().code) + "; run as root");
	return dp;
}

namespace {

sluice::ClassAction action_of(const sluice::ClassRecord &c)
{
	switch (c.record.action) {
	case SLUICE_CLASS_EXEMPT:
		return sluice::ClassAction::exempt;
	case SLUICE_CLASS_DENY:
		return sluice::ClassAction::deny;
	default:
		return sluice::ClassAction::limit;
	}
}

// A class != 0 as its record says; the default class as the program reads
// it (sluice_abi.h: config's budgets, settings' prefixes, the record's byte
// budget only with SLUICE_CLASS_DEFAULT_BYTES).
sluice::ClassView view_of(const sluice::ClassRecord &c, const sluice_config &cfg, const sluice_settings &settings)
{
	sluice::ClassView v;
	v.id = c.id;
	v.name = c.name;
	v.action = action_of(c);
	if (c.id == SLUICE_CLASS_DEFAULT) {
		v.action = sluice::ClassAction::limit;
		v.rate_pps = cfg.rate_pps;
		v.burst = cfg.burst;
		v.v4_prefix = settings.v4_prefix;
		v.v6_prefix = settings.v6_prefix;
		if (cfg.policy_flags & SLUICE_CLASS_DEFAULT_BYTES) {
			v.byte_rate = c.record.byte_rate;
			v.byte_burst = c.record.byte_burst;
		}
	} else {
		v.rate_pps = c.record.rate_pps;
		v.burst = c.record.burst;
		v.v4_prefix = c.record.v4_prefix;
		v.v6_prefix = c.record.v6_prefix;
		if (c.record.byte_cost_fp) {
			v.byte_rate = c.record.byte_rate;
			v.byte_burst = c.record.byte_burst;
		}
	}
	v.standing_own = c.id != SLUICE_CLASS_DEFAULT && c.record.standing_cost_ns != 0;
	v.standing_rate_pps = v.standing_own ? c.record.standing_rate_pps : cfg.standing_rate_pps;
	v.standing_burst = v.standing_own ? c.record.standing_burst : cfg.standing_burst;
	return v;
}

} // namespace

Result<sluice::ClassList> read_class_list(const sluice::Dataplane &dp, const std::string &iface)
{
	auto cfg = dp.config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	sluice::ClassList list{iface, SLUICE_POLICY_SET_OF(cfg->policy_flags), cfg->policy_flags, {}};
	auto records = sluice::read_classes(dp.policy_maps().classes, list.set);
	if (!records)
		return std::unexpected(records.error());
	// Every frame no rule names is in the default class, policy or not; it
	// has a record of its own only under a policy.
	if (records->empty() || records->front().id != SLUICE_CLASS_DEFAULT)
		records->insert(records->begin(), sluice::ClassRecord{SLUICE_CLASS_DEFAULT, "default", {}});
	for (const auto &c : *records)
		list.classes.push_back(view_of(c, *cfg, dp.settings()));
	return list;
}

Result<std::vector<sluice::ClassCounters>> read_named_class_counters(const sluice::Dataplane &dp)
{
	auto cfg = dp.config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	// The program counts per class only while the set in force has a class
	// flag (sluice_abi.h); rows of zeros for classes it does not count
	// would say they saw no frames.
	std::vector<sluice::ClassCounters> out;
	if (!(cfg->policy_flags & SLUICE_CLASS_ANY))
		return out;
	auto records = sluice::read_classes(dp.policy_maps().classes, SLUICE_POLICY_SET_OF(cfg->policy_flags));
	if (!records)
		return std::unexpected(records.error());
	if (records->empty())
		return out;
	auto rows = sluice::read_class_counters(dp.policy_maps().class_counters);
	if (!rows)
		return std::unexpected(rows.error());
	for (const auto &c : *records)
		out.push_back({c.id, c.name, (*rows)[c.id]});
	return out;
}

} // namespace sluicectl
