// audit.h - a bounded sweep of the slot table.
//
// Each control period the daemon reads the next `per_period` slots (one
// batched syscall) and checks each against the invariant 0 <= tokens <= burst
// (logic/audit_check.h: only a slot whose empty_at lies in the future, tokens
// below zero, can break it). Those are counted as violations, never repaired
// silently.
#pragma once

#include "bpf/maps.h"

#include <cstdint>

namespace sluice {

struct AuditReport {
	uint64_t swept = 0;            // slots checked in all
	uint64_t violations = 0;       // slots found outside the invariant, in all
	uint64_t last_violations = 0;  // in the last completed full sweep
	uint64_t full_sweeps = 0;
	uint64_t last_sweep_unix_ns = 0; // when the last full sweep ended
	uint32_t cursor = 0;           // next slot to check
};

class Auditor {
public:
	explicit Auditor(uint32_t per_period) : per_period_(per_period ? per_period : 1) {}

	// Check the next per_period slots (wrapping to a new sweep at the end).
	Status step(const SlotTable &slots);
	// Check the whole table now (sluicectl audit).
	Status full(const SlotTable &slots);

	const AuditReport &report() const { return report_; }

private:
	Status check(const SlotTable &slots, uint32_t first, uint32_t count);
	uint32_t per_period_;
	AuditReport report_;
	uint64_t sweep_violations_ = 0;
};

} // namespace sluice
