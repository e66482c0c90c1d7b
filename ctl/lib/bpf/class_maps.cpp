// A minimal reader of the classes and class_counters maps, written by the
// daemon's helper until the full one lands (class_maps.h is the interface).
#include "bpf/class_maps.h"

#include "bpf/class_match.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstring>

namespace sluice {

Result<std::vector<ClassRecord>> read_classes(int classes_fd, uint32_t set)
{
	if (set >= SLUICE_POLICY_SETS)
		return invalid("policy set " + std::to_string(set) + " (there are " + std::to_string(SLUICE_POLICY_SETS) + ")");
	std::vector<ClassRecord> out;
	for (uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++) {
		uint32_t key = sluice_class_index(set, id);
		sluice_class rec{};
		if (int err = bpf_map_lookup_elem(classes_fd, &key, &rec); err)
			return fail_bpf(err, "reading class record " + std::to_string(id) + " of set " + std::to_string(set));
		size_t len = strnlen(rec.name, sizeof(rec.name));
		if (len == 0)
			continue;
		out.push_back({id, std::string(rec.name, len), rec});
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
	for (uint32_t k = 0; k < SLUICE_CLASS_COUNTER_KEYS; k++) {
		if (int err = bpf_map_lookup_elem(class_counters_fd, &k, per_cpu.data()); err)
			return fail_bpf(err, "reading class counter " + std::to_string(k));
		auto &c = rows[k / SLUICE_OUTCOMES][k % SLUICE_OUTCOMES];
		for (const auto &p : per_cpu) {
			c.packets += p.packets;
			c.bytes += p.bytes;
		}
	}
	return rows;
}

} // namespace sluice
