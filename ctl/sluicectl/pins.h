// pins.h - what sluicectl reads straight from an interface's pins rather than
// asking sluiced: the policy classes and their counters (class list, stats),
// the running lists (allow|deny save), status with the daemon down. Reading
// the pins needs root, as the maps do.
#pragma once

#include "bpf/dataplane.h"
#include "ipc/replies.h"
#include "sluicectl/command.h"

#include <string>
#include <vector>

namespace sluicectl {

// The pins of `iface` under --pin-dir, adopted for reading. The errors say
// what to do: run as root, attach the interface, use --pin-dir.
Result<sluice::Dataplane> open_pins(const Context &ctx, const std::string &iface);

// The named classes of the policy set in force, the default class as the
// program reads it (config, settings); without a policy, the default alone.
Result<sluice::ClassList> read_class_list(const sluice::Dataplane &dp, const std::string &iface);

// The named classes of the set in force and their counters, by id; none
// while the set has no SLUICE_CLASS_* flag (a policy of lists alone, or none:
// the program counts per class only with one).
Result<std::vector<sluice::ClassCounters>> read_named_class_counters(const sluice::Dataplane &dp);

} // namespace sluicectl
