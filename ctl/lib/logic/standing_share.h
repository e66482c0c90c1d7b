// standing_share.h - standing buys a fair share, not a blank check. Pure
// logic, like the policy and the valve (policy.h, valve.h): no I/O, no clock;
// the daemon measures, each control period, the frames each standing source
// (one way of the standing table: index = set x SLUICE_STANDING_WAYS + way)
// offered to its standing bucket, and asks two things of them:
//
//   fair_share_level    the one water-filling level L all standing buckets
//                       refill at: the sources that send less than L keep all
//                       of theirs, the rest share what is left equally, and
//                       together they offer no more than the capacity.
//   UnresponsiveTracker which sources keep sending far beyond their share,
//                       period after period. A TCP flow halves on loss and
//                       falls back under its share within a round trip or
//                       two; a flood does not back off. Those lose their
//                       standing, for penalty_s_for() seconds.
//
// Memory is fixed: the tracker is sized once (one small record a way), and
// the level sorts a scratch span its caller owns, so a period allocates
// nothing whatever the sources do.
#pragma once

#include "base/address.h"
#include "base/defaults.h"
#include "base/result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sluice {

// The max-min fair (water-filling) level of `demands_scratch` (pps each
// source offered) for `capacity_pps`:
//   sum(demands) <= capacity   ceiling_pps: no contention, every source keeps
//                              what it sends, up to the ceiling
//   otherwise                  the L with sum_i min(d_i, L) == capacity,
//                              clamped to [floor_pps, ceiling_pps]
// The span is the caller's scratch, sized once: it is SORTED IN PLACE (and a
// negative or NaN demand in it is set to 0), so a caller that needs its
// demands in their ways' order passes a copy. O(n log n), no allocation.
// An empty span, or all demands 0, is no contention (the ceiling); a
// capacity of 0 (or less, or NaN) with any demand gives the floor. When
// floor_pps > ceiling_pps the ceiling wins.
double fair_share_level(std::span<double> demands_scratch, double capacity_pps, double ceiling_pps, double floor_pps);

// Tenure: standing from before the contention first (docs/architecture.md,
// "Tenure"). Max-min fairness alone gives every standing source the same
// level; when more sources earned standing than the capacity has room for
// at a regular client's rate (a thousand bots, each with one handshake made
// just before their flood), that level falls under what the regulars need.
// So while the standing sources contend, those whose standing predates the
// contention by the tenure are water-filled first, and those granted later
// share what the first left.

// The two levels: `tenured_scratch` water-filled under capacity_pps, then
// `newer_scratch` under what the tenured take at their level (sum of
// min(d, tenured level)). Each span is sorted in place as fair_share_level
// sorts it. When the tenured alone are over the capacity the newer get the
// floor, whatever they ask (nothing is left for them).
struct TieredLevels {
	double tenured = 0;
	double newer = 0;
};
TieredLevels tiered_share_levels(std::span<double> tenured_scratch, std::span<double> newer_scratch,
				 double capacity_pps, double ceiling_pps, double floor_pps);

// Where the tenure line is, period by period. It is drawn when the standing
// sources begin to contend, tenure_s before that moment, and held while they
// contend and for tenure_s after the last period they did: a flood that
// pauses for less than the tenure finds the same line when it comes back,
// so standing earned during the pause buys no tenure. tenure_s 0: never.
class TenureLine {
public:
	explicit TenureLine(double tenure_s) : tenure_s_(tenure_s) {}
	double tenure_s() const { return tenure_s_; }
	// One period at monotonic now_s: whether the standing sources contended
	// in it. True when a line was drawn in this call (the caller then fixes
	// the data plane's tick for it).
	bool observe(double now_s, bool contended);
	bool held() const { return held_; }
	double line_s() const { return line_s_; } // when held: the line, on now_s's clock

private:
	double tenure_s_;
	bool held_ = false;
	double line_s_ = 0;
	double last_contended_s_ = 0;
};

// When a standing source is unresponsive, and what it costs it.
struct RevocationConfig {
	double over_factor = defaults::kRevokeOverFactor;     // --revoke-factor: over this x its share ...
	uint32_t over_periods = defaults::kRevokeOverPeriods; // --revoke-periods: ... this many periods in a row
	double penalty_s = defaults::kRevokePenaltyS;         // --revoke-penalty: the first revocation's penalty
	double penalty_max_s = defaults::kRevokePenaltyMaxS;  // --revoke-penalty-max: the doubling's cap
};

// Each bound by base/limits' check, the error naming the option:
// "--revoke-factor must be more than 1, got 1".
Status validate_revocation(const RevocationConfig &c);

// The penalty after the (repeats + 1)-th revocation of a source:
// penalty_s x 2^repeats, at most penalty_max_s (any repeats: no overflow).
double penalty_s_for(uint32_t repeats, const RevocationConfig &c);

// What the daemon logs when it revokes:
// "offered 3012 pps > 4 x share 196 pps for 3 periods; penalty 60 s".
std::string revocation_reason(double offered_pps, double share_pps, double over_factor, uint32_t periods,
			      double penalty_s);

// The streaks of periods each way of the standing table offered more than
// over_factor x its share. One record a way, allocated at construction;
// nothing keyed by source.
//
// Each control period: begin_period(), then observe() each standing way once
// (a way observed twice in a period: the second observation replaces the
// first). A streak counts consecutive periods the way was over; it restarts
// when the way was under, when it was not observed in the period before, and
// when the way's fingerprint changed (another source took it).
class UnresponsiveTracker {
public:
	UnresponsiveTracker(RevocationConfig cfg, size_t ways);
	const RevocationConfig &config() const { return cfg_; }
	size_t ways() const { return ways_.size(); }

	// One control period starts.
	void begin_period();
	// The way's observation this period: its source's fingerprint, the frames
	// per second it offered to its standing bucket, the share it had (the
	// level in force). True when the way is to be revoked now: offered >
	// over_factor x share in over_periods consecutive periods, this one
	// included (and in each later period it stays over, until forget()).
	// A way_index out of range is never revoked.
	bool observe(size_t way_index, uint32_t fp, double offered_pps, double share_pps);
	// Consecutive periods the way has been over, this one's observation
	// included (at most over_periods); 0 for a way not observed.
	uint32_t streak(size_t way_index) const;
	// The way starts afresh: after its revocation, or when it is emptied.
	void forget(size_t way_index);

private:
	static constexpr uint32_t kNever = 0; // a way's period before it is observed
	struct Way {
		uint32_t fp = 0;
		uint32_t period = kNever; // the period it was last observed in
		uint8_t streak = 0;       // consecutive periods over, that one included
		uint8_t before = 0;       // the streak it had before that period's observation
	};
	RevocationConfig cfg_;
	std::vector<Way> ways_;
	uint32_t period_ = 1; // kNever is never a period
};

// One revocation, for the log, `sluicectl standing` and /metrics.
struct RevocationEvent {
	uint64_t at_realtime_ns = 0;
	Address source;                  // as its standing record kept it (masked)
	uint32_t reason = 0;             // enum sluice_standing_reason of the grant it loses (0: had none)
	double offered_pps = 0;          // what it sent to its standing bucket (0: by hand)
	double share_pps = 0;            // the share it had
	uint32_t revocations = 0;        // so far, this one included
	uint64_t until_realtime_ns = 0;  // its penalty's end
	bool by_operator = false;
	std::string why;                 // the figures, or the operator's word
};


} // namespace sluice
