// policy_tables.h - a compiled policy (logic/class_tables.h) and its allow
// and deny lists written into the data plane's double-buffered policy sets
// (bpf/sluice_abi.h: classes, port_classes, class_v4/v6, the lists; the set
// in force is config.policy_flags' SLUICE_POLICY_SET).
//
// apply() is all or nothing, and no frame sees half a policy:
//   1. the set NOT in force is cleared, then written whole: class records,
//      port blocks, class prefix entries, list entries (each key carries the
//      set byte);
//   2. one ConfigMap write flips SLUICE_POLICY_SET and sets the new set's
//      flags (list bits + class flags) together, with the caller's own config
//      changes (the default class's budgets) in the same write;
//   3. the old set's entries are deleted and its records zeroed.
// A failure before 2 deletes what was written in the new set and leaves the
// set in force untouched; a failure in 3 leaves stale entries in a set no
// frame reads (the next apply clears it first) and is reported, not undone.
#pragma once

#include "base/address.h"
#include "base/fd.h"
#include "base/result.h"
#include "bpf/maps.h"
#include "bpf/sluice_abi.h"
#include "logic/class_tables.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sluice {

// The allow and deny lists a policy puts in force (both families each).
struct PolicyLists {
	std::vector<Cidr> allow, deny;
};

// A change the caller makes to config in the flip's write (the default
// class's budgets); it gets the config as read just before the write.
using ConfigEdit = std::function<Result<sluice_config>(const sluice_config &)>;

struct AppliedSet {
	uint32_t set = 0;          // the set now in force
	uint32_t policy_flags = 0; // as written
	size_t classes = 0;        // named classes (the default included)
	size_t prefixes = 0;       // class prefix entries, both families
	size_t list_entries = 0;   // allow + deny, both families
};

class PolicyTables {
public:
	// The policy maps pinned under `dir` (<pin-dir>/<ifname>), opened by
	// their pin names; `config` is the same data plane's config.
	static Result<PolicyTables> open(const std::string &dir, ConfigMap config);

	// The set the program reads now.
	Result<uint32_t> set_in_force() const;
	// The class names of the set in force, by id (what a reload keeps ids from).
	Result<ClassIds> ids_in_force() const;
	// A list's prefixes in the set in force.
	Result<std::vector<Cidr>> list_in_force(ListKind list) const;

	Result<AppliedSet> apply(const CompiledPolicy &c, const PolicyLists &lists, const ConfigEdit &edit = {}) const;

	int classes_fd() const { return classes_.get(); }

private:
	PolicyTables(ConfigMap config) : config_(config) {}
	int list_fd(ListKind list, Family f) const;
	struct TrieKeys;
	Result<TrieKeys> walk() const;
	// Delete every entry of `set` from the class tries and the lists (as a
	// walk found them), zero its records and port blocks.
	Status clear_set(uint32_t set, const TrieKeys &keys) const;
	Status clear_set(uint32_t set) const; // walks first
	Status write_set(uint32_t set, const CompiledPolicy &c, const PolicyLists &lists) const;

	ConfigMap config_;
	UniqueFd classes_, port_classes_, class_v4_, class_v6_, allow_v4_, allow_v6_, deny_v4_, deny_v6_;
};

} // namespace sluice
