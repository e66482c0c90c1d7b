#include "bpf/status.h"

#include "base/sysctl.h"
#include "clock/dataplane_clock.h"
#include "logic/cookies.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <net/if.h>

namespace sluice {

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

Result<StandingStatus> standing_status(const Dataplane &dp, const sluice_config &cfg, const CountedOccupancy *counted)
{
	StandingStatus st;
	if (counted) {
		st.occupancy = counted->occupancy;
		st.occupancy_age_s = counted->age_s;
	} else {
		auto occupancy = dp.standing().occupancy();
		if (!occupancy)
			return std::unexpected(occupancy.error());
		st.occupancy = *occupancy;
	}
	const auto &s = dp.settings();
	st.lapse_s = (uint64_t(s.standing_lapse_ticks) << SLUICE_STANDING_TICK_SHIFT) / SLUICE_NSEC_PER_SEC;
	st.feeders = dp.feeders_attached();
	st.valve_closed = cfg.valve_closed != 0;
	st.valve_since_ns = cfg.valve_since_ns;
	st.rate_pps = cfg.standing_rate_pps;
	st.burst = cfg.standing_burst;
	st.newcomer_pps = cfg.newcomer_pps;
	st.newcomer_burst = cfg.newcomer_burst_total;
	st.observe_periods = s.observe_periods;
	return st;
}

const char *syn_stamps_name(SynStamps s)
{
	switch (s) {
	case SynStamps::off:
		return "off";
	case SynStamps::grace:
		return "grace";
	case SynStamps::asked:
		return "asked";
	}
	return "off";
}

CookieStatus cookie_status(const sluice_config &cfg, uint64_t now)
{
	CookieStatus c;
	c.mode = cfg.cookie_mode < SLUICE_COOKIE_MODES ? sluice_cookie_mode(cfg.cookie_mode) : SLUICE_COOKIES_OFF;
	c.pps = cfg.cookie_pps;
	c.burst = cfg.cookie_burst_total;
	c.dest_pps = cfg.cookie_dest_pps;
	c.dest_burst = cfg.cookie_dest_burst;
	c.mss4 = cfg.cookie_mss4;
	c.mss6 = cfg.cookie_mss6;
	c.wscale = cfg.cookie_wscale;
	c.flags = cfg.cookie_flags;
	c.armed = cfg.cookie_sysctls_armed != 0;
	c.syncookies_was = cfg.cookie_syncookies_was;
	c.timestamps_was = cfg.cookie_timestamps_was;
	c.syncookies_now = read_sysctl(kSysctlSyncookies).value_or(-1);
	c.timestamps_now = read_sysctl(kSysctlTimestamps).value_or(-1);
	c.acks_looked_up = cfg.cookie_acks_unlooked == 0;
	const uint64_t from = cfg.cookie_acks_stamped_from;
	if (from && now < from) {
		c.syn_stamps = SynStamps::grace;
		c.syn_stamps_in_s = double(from - now) / 1e9;
	} else if (from) {
		c.syn_stamps = SynStamps::asked;
	}
	return c;
}

Result<InterfaceStatus> interface_status(const Dataplane &dp, const std::string &iface, const CountedOccupancy *counted)
{
	auto cfg = dp.config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	auto counters = dp.counters().read();
	if (!counters)
		return std::unexpected(counters.error());
	const auto &s = dp.settings();
	InterfaceStatus st;
	st.iface = iface;
	st.table_slots = s.slot_mask + 1;
	st.v4_prefix = s.v4_prefix;
	st.v6_prefix = s.v6_prefix;
	st.dry_run = s.dry_run != 0;
	st.sample_every = s.sample_every;
	st.multiprog = dp.multiprog();
	st.rate_pps = cfg->rate_pps;
	st.burst = cfg->burst;
	st.admission_ppm = cfg->admission_ppm;
	st.breaker = breaker_state_from(cfg->breaker_state);
	st.breaker_since_ns = cfg->breaker_since_ns;
	st.breaker_manual = cfg->breaker_manual != 0;
	auto now = read_dataplane_clock();
	if (!now)
		return std::unexpected(now.error());
	st.cookies = cookie_status(*cfg, *now);
	auto standing = standing_status(dp, *cfg, counted);
	if (!standing)
		return std::unexpected(standing.error());
	st.standing = *standing;
	st.counters = *counters;
	if (auto prog = dp.prog_id())
		st.prog_id = *prog;
	auto ifindex = dp.link_ifindex();
	st.ifindex = ifindex ? *ifindex : 0;
	if (st.ifindex)
		if (auto mode = attached_mode(static_cast<int>(st.ifindex)))
			st.attach_mode = *mode;
	return st;
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
