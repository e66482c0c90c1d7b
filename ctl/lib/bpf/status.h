// status.h - what `status` reports about one interface, built from its maps.
// The daemon adds what only it knows (audit, rates); sluicectl, with the
// daemon down, reports this part straight from the pins, so an operator can
// see that enforcement survived.
#pragma once

#include "bpf/dataplane.h"
#include "bpf/maps.h"
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sluice {

using json = nlohmann::json; // interim: the typed InterfaceStatus replaces this

json counters_json(const CounterSet &c);

// {"iface", "ifindex", "attached", "attach_mode", "prog_id", "breaker": {state,
//  since, manual}, "admission_ppm", "rate_pps", "burst", "table_slots",
//  "v4_prefix", "v6_prefix", "dry_run", "counters"}
Result<json> interface_status(const Dataplane &dp, const std::string &iface);

// The interfaces with pins under pin_root (one directory each).
std::vector<std::string> pinned_interfaces(const std::string &pin_root);

// "2026-11-30T05:55:33Z" from CLOCK_REALTIME nanoseconds.
std::string iso_time(uint64_t realtime_ns);

} // namespace sluice
