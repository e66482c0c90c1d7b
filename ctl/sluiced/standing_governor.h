// standing_governor.h - standing buys a fair share, not a blank check
// (docs/architecture.md, "Standing buys a share"). Once a control period it
// reads what each standing source asked of its standing bucket (the seen
// counters of the standing table), water-fills one level under the standing
// capacity (logic/standing_share.h; two levels while a tenure line is held:
// the sources with standing from before the contention first, see
// "Tenure"), and revokes the standing of a source
// that kept sending far over its share: the table's way emptied, a penalty
// written that no grant can get past, a log line with the figures. Every
// per-source record is a vector sized to the table at start: nothing grows
// with the sources.
#pragma once

#include "base/address.h"
#include "base/result.h"
#include "bpf/standing_table.h"
#include "logic/standing_share.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

struct GovernorConfig {
	uint64_t capacity_pps = 0; // what the standing sources together may take
	RevocationConfig revoke;
	double tenure_s = 0; // --standing-tenure (0: one level for all)
};

// What one period decided.
struct GovernorStep {
	uint64_t level_pps = 0;       // the share now in force (0: none, every bucket at its own rate);
	                              // with a tenure line, the tenured sources' share
	uint64_t newer_level_pps = 0; // with a tenure line, the share of those granted after it (0: level_pps)
	bool tenure_held = false;     // a tenure line is in force
	uint32_t tenure_tick = 0;     // the line, as record[w]'s tick (sluice_standing_granted_after)
	uint32_t tenured = 0;         // of the asking sources, those granted before the line
	double demand_pps = 0;        // what the standing sources asked together
	uint32_t asking = 0;          // standing sources that asked anything this period
	uint32_t revoked = 0;         // revocations made this period
};

class StandingGovernor {
public:
	static constexpr size_t kRecent = 32; // revocations `sluicectl standing` lists

	StandingGovernor(GovernorConfig cfg, uint32_t sets);
	const GovernorConfig &config() const { return cfg_; }

	// One period at monotonic now_s: scan `table`, decide, revoke (logged
	// under `iface`). ceiling_pps is the standing rate (a share is never
	// above it). The level to write is the caller's (one config write a
	// tick).
	Result<GovernorStep> step(double now_s, const StandingTable &table, uint64_t ceiling_pps,
				  const std::string &iface);
	// A period whose scan the caller skipped (no frame reached a standing
	// bucket, so no seen count moved): the next one's demand is over one
	// period, not since the last scan.
	void idle(double now_s) { last_s_ = now_s; }
	// An operator's revocation, recorded like the automatic ones.
	void record(RevocationEvent e);

	uint64_t level_pps() const { return level_pps_; }
	uint64_t newer_level_pps() const { return newer_level_pps_; }
	uint64_t revocations() const { return revocations_; }
	// The last kRecent revocations, oldest first.
	std::vector<RevocationEvent> recent() const;

private:
	GovernorConfig cfg_;
	UnresponsiveTracker tracker_;
	// Per way of the table (set x 8 + way): the fingerprint and seen count
	// of the last scan, so that a period's demand is a difference.
	std::vector<uint32_t> last_fp_, last_seen_;
	// This period's asking ways, and the water-filling's scratch: sized to
	// the table once.
	std::vector<uint32_t> asking_index_, asking_fp_, asking_record_;
	std::vector<double> asking_pps_, scratch_;
	double last_s_ = -1;
	uint64_t level_pps_ = 0, newer_level_pps_ = 0;
	TenureLine tenure_;
	uint32_t tenure_tick_ = 0;
	uint64_t revocations_ = 0;
	std::vector<RevocationEvent> ring_; // kRecent, written round
	size_t ring_next_ = 0;
};

} // namespace sluice
