#include "bpf/status.h"

#include "logic/breaker.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <net/if.h>

namespace sluice {

json counters_json(const CounterSet &c)
{
	json j = json::object();
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++)
		j[outcome_name(k)] = {{"packets", c[k].packets}, {"bytes", c[k].bytes}};
	return j;
}

std::string iso_time(uint64_t ns)
{
	if (ns == 0)
		return "";
	time_t secs = static_cast<time_t>(ns / 1000000000ull);
	tm t{};
	gmtime_r(&secs, &t);
	char buf[32];
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &t);
	return buf;
}

Result<json> interface_status(const Dataplane &dp, const std::string &iface)
{
	auto cfg = dp.config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	auto counters = dp.counters().read();
	if (!counters)
		return std::unexpected(counters.error());
	const auto &s = dp.settings();
	auto state = breaker_state_from(cfg->breaker_state);
	json j{
		{"iface", iface},
		{"table_slots", s.slot_mask + 1},
		{"v4_prefix", s.v4_prefix},
		{"v6_prefix", s.v6_prefix},
		{"dry_run", s.dry_run != 0},
		{"sample_every", s.sample_every},
		{"multiprog", dp.multiprog()},
		{"rate_pps", cfg->rate_pps},
		{"burst", cfg->burst},
		{"admission_ppm", cfg->admission_ppm},
		{"breaker",
		 {{"state", state ? std::string(to_string(*state)) : "invalid"},
		  {"since", iso_time(cfg->breaker_since_ns)},
		  {"manual", cfg->breaker_manual != 0}}},
		{"counters", counters_json(*counters)},
	};
	auto prog = dp.prog_id();
	j["prog_id"] = prog ? json(*prog) : json(nullptr);
	auto ifindex = dp.link_ifindex();
	uint32_t idx = ifindex ? *ifindex : 0;
	j["ifindex"] = idx;
	j["attached"] = idx != 0;
	auto mode = idx ? attached_mode(static_cast<int>(idx)) : Result<AttachMode>(std::unexpected(Error{}));
	j["attach_mode"] = mode ? json(std::string(to_string(*mode))) : json(nullptr);
	return j;
}

std::vector<std::string> pinned_interfaces(const std::string &pin_root)
{
	std::vector<std::string> out;
	std::error_code ec;
	for (const auto &e : std::filesystem::directory_iterator(pin_root, ec))
		if (e.is_directory() && Dataplane::has_pins(e.path().string()))
			out.push_back(e.path().filename().string());
	std::sort(out.begin(), out.end());
	return out;
}

} // namespace sluice
