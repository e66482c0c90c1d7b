// status.h - what `status` reports about one interface, built from its maps.
// The daemon adds what only it knows (audit, rates); sluicectl, with the
// daemon down, reports this part straight from the pins, so an operator can
// see that enforcement survived. Both encode it with ipc/encode.h.
#pragma once

#include "bpf/dataplane.h"
#include "bpf/maps.h"
#include "bpf/standing_table.h"
#include "logic/breaker.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

// The standing table and what it is served with (docs/architecture.md,
// "Standing"): its occupancy now, the valve, the budgets in force.
struct StandingStatus {
	StandingOccupancy occupancy{};
	double occupancy_age_s = 0;       // how long ago it was counted; 0: for this status
	uint64_t lapse_s = 0;             // the lapse, to a tick (2^30 ns)
	bool feeders = false;             // the feeders are attached (not --no-standing, not failed)
	bool valve_closed = false;
	uint64_t valve_since_ns = 0;      // CLOCK_REALTIME of its last move; 0: never moved
	uint64_t rate_pps = 0, burst = 0; // the standing bucket, as asked
	uint64_t newcomer_pps = 0;        // the newcomer budget, all CPUs together; 0: none
	uint64_t newcomer_burst = 0;      // likewise
	uint32_t observe_periods = 0;     // observed standing; 0: off

	// Live entries in percent of the capacity.
	double occupancy_pct() const
	{
		return occupancy.capacity ? 100.0 * double(occupancy.live) / double(occupancy.capacity) : 0;
	}
};

// Whether a cookie ACK's source must have sent a SYN the cookie path saw:
// not while the cookie path is out of force; from a grace after it came
// into force (so the ACK of a SYN the stack answered before is still
// checked); then asked.
enum class SynStamps { off, grace, asked };
const char *syn_stamps_name(SynStamps s); // "off", "grace", "asked"

// SYN cookies (docs/architecture.md, "SYN cookies"): the config's cookie
// fields, and the two sysctls arming changes as they are now (-1: could not
// be read) and as they were before sluiced armed them.
struct CookieStatus {
	sluice_cookie_mode mode = SLUICE_COOKIES_OFF;
	uint64_t pps = 0, burst = 0;  // the cookie budget, all CPUs together
	uint64_t dest_pps = 0, dest_burst = 0; // the per-destination bound (a /24 or /48); 0: none
	uint32_t mss4 = 0, mss6 = 0, wscale = 0;
	uint32_t flags = 0;           // SLUICE_COOKIE_TS | _SACK | _WSCALE
	bool armed = false;           // sluiced changed the sysctls and has not put them back
	uint32_t syncookies_was = 0, timestamps_was = 0; // when armed
	int64_t syncookies_now = -1, timestamps_now = -1;
	// How an ACK on the cookie path is judged: acks_looked_up, the
	// listener found first (config.cookie_acks_unlooked 0: no standing
	// feeders, so an ACK may belong to a connection the host has); else
	// on its headers alone, and then the SYN stamps
	// (config.cookie_acks_stamped_from) are not asked, asked after a grace
	// (syn_stamps_in_s from now), or asked.
	bool acks_looked_up = true;
	SynStamps syn_stamps = SynStamps::off;
	double syn_stamps_in_s = 0;
};

struct InterfaceStatus {
	std::string iface;
	uint32_t ifindex = 0;                  // of the program's link; 0: not attached
	std::optional<uint32_t> prog_id;       // none: the program cannot be read
	std::optional<AttachMode> attach_mode; // what the kernel reports for ifindex
	bool multiprog = false;
	// How the program was loaded (sluice_settings).
	uint64_t table_slots = 0;
	uint32_t v4_prefix = 0, v6_prefix = 0;
	bool dry_run = false;
	uint32_t sample_every = 0;
	// The config map now.
	uint64_t rate_pps = 0, burst = 0;
	uint32_t admission_ppm = 0;
	std::optional<BreakerState> breaker; // none: the map holds no known state
	uint64_t breaker_since_ns = 0;       // CLOCK_REALTIME; 0: unknown
	bool breaker_manual = false;
	StandingStatus standing;
	CookieStatus cookies;
	CounterSet counters{};

	bool attached() const { return ifindex != 0; }
};

// An occupancy of the standing table counted earlier, and how long ago:
// counting reads every set (one lookup each, up to 2^22), so a daemon
// answering status many times a second gives the one it counted last.
struct CountedOccupancy {
	StandingOccupancy occupancy{};
	double age_s = 0;
};

// With `counted`, the standing occupancy is that one; without, it is
// counted now.
Result<InterfaceStatus> interface_status(const Dataplane &dp, const std::string &iface,
					 const CountedOccupancy *counted = nullptr);
// The standing part alone, under the config `cfg` read from dp.
Result<StandingStatus> standing_status(const Dataplane &dp, const sluice_config &cfg,
				       const CountedOccupancy *counted = nullptr);

// The cookie part alone, from the config `cfg` and this namespace's sysctls.
// now: the program's clock (clock/dataplane_clock.h), which the SYN stamps' time is on.
CookieStatus cookie_status(const sluice_config &cfg, uint64_t now);

// The interfaces with pins under pin_root (one directory each).
std::vector<std::string> pinned_interfaces(const std::string &pin_root);

// "2026-11-30T05:55:33Z" from CLOCK_REALTIME nanoseconds; "" for 0.
std::string iso_time(uint64_t realtime_ns);

} // namespace sluice
