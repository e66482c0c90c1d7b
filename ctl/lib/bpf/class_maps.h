// class_maps.h - reading the policy classes and their counters from the
// pinned maps (bpf/sluice_abi.h: classes, class_counters): what sluicectl
// class list and stats show, what sluiced exports and what a restarted
// daemon keeps its class ids from. Writes go through bpf/policy_tables.
#pragma once

#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

struct ClassRecord {
	uint32_t id = 0;
	std::string name; // from the record (sluice_class.name)
	sluice_class record{};
};

// The named classes of policy set `set` (0 or 1), by id; free ids are left out.
Result<std::vector<ClassRecord>> read_classes(int classes_fd, uint32_t set);

using ClassCounterRow = std::array<sluice_counter, SLUICE_OUTCOMES>;

// Every class id's counters, summed over the CPUs: row id, outcome.
Result<std::vector<ClassCounterRow>> read_class_counters(int class_counters_fd);

} // namespace sluice
