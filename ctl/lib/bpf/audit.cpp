#include "bpf/audit.h"

#include "base/clock.h"
#include "clock/dataplane_clock.h"
#include "logic/audit_check.h"

namespace sluice {

Status Auditor::check(const SlotTable &slots, uint32_t first, uint32_t count)
{
	auto values = slots.read_range(first, count);
	if (!values)
		return std::unexpected(values.error());
	// Read the clock after the slots: every legitimate write happened before.
	uint64_t outside = slots_outside_invariant(*values, first, dataplane_now()).size();
	report_.violations += outside;
	sweep_violations_ += outside;
	report_.swept += values->size();
	report_.cursor = first + static_cast<uint32_t>(values->size());
	if (report_.cursor >= slots.size()) {
		report_.cursor = 0;
		report_.full_sweeps++;
		report_.last_violations = sweep_violations_;
		report_.last_sweep_unix_ns = realtime_ns();
		sweep_violations_ = 0;
	}
	return {};
}

Status Auditor::step(const SlotTable &slots)
{
	return check(slots, report_.cursor, per_period_);
}

Status Auditor::full(const SlotTable &slots)
{
	report_.cursor = 0;
	sweep_violations_ = 0;
	constexpr uint32_t chunk = 1u << 16;
	for (uint32_t first = 0; first < slots.size(); first += chunk) {
		if (auto ok = check(slots, first, chunk); !ok)
			return ok;
	}
	return {};
}

} // namespace sluice
