#include "bpf/class_maps.h"

#include "bpf/maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstring>

namespace sluice {

Result<std::vector<ClassRecord>> read_classes(int classes_fd, uint32_t set)
{
	if (set >= SLUICE_POLICY_SETS)
		return invalid("policy set " + std::to_string(set) + " does not exist (0 or 1)");
	std::vector<ClassRecord> out;
	for (uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++) {
		uint32_t index = set * SLUICE_CLASSES_MAX + id;
		sluice_class record{};
		if (int err = bpf_map_lookup_elem(classes_fd, &index, &record); err)
			return fail_bpf(err, "reading class " + std::to_string(id) + " of policy set " +
						     std::to_string(set) + " (classes[" + std::to_string(index) + "])");
		// The name is NUL-padded; a record that fills it has no NUL at all.
		size_t length = strnlen(record.name, sizeof(record.name));
		if (length == 0)
			continue; // a free id
		out.push_back({id, std::string(record.name, length), record});
	}
	return out;
}

Result<std::vector<ClassCounterRow>> read_class_counters(int class_counters_fd)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return fail_bpf(ncpu, "counting possible CPUs");
	std::vector<ClassCounterRow> rows(SLUICE_CLASSES_MAX);
	std::vector<sluice_counter> per_cpu(static_cast<size_t>(ncpu));
	for (uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++) {
		for (uint32_t outcome = 0; outcome < SLUICE_OUTCOMES; outcome++) {
			uint32_t key = id * SLUICE_OUTCOMES + outcome;
			if (int err = bpf_map_lookup_elem(class_counters_fd, &key, per_cpu.data()); err)
				return fail_bpf(err, "reading the counters of class " + std::to_string(id) +
							     ", outcome " + outcome_name(outcome) + " (class_counters[" +
							     std::to_string(key) + "])");
			for (const auto &c : per_cpu) {
				rows[id][outcome].packets += c.packets;
				rows[id][outcome].bytes += c.bytes;
			}
		}
	}
	return rows;
}

} // namespace sluice
