// policy_tables.h - a compiled policy (logic/class_tables.h) and its allow
// and deny lists written into the data plane's double-buffered policy sets
// (bpf/sluice_abi.h: classes, port_classes, class_v4/v6, the lists; the set
// in force is config.policy_flags' SLUICE_POLICY_SET).
//
// apply() is all or nothing, and no frame sees half a policy:
//   1. the set NOT in force is cleared, then written whole: class records,
//      port blocks, class prefix entries, list entries (each key carries the
//      set byte; the lists through PrefixLists, which bounds each set);
//   2. one ConfigMap write flips SLUICE_POLICY_SET and sets the new set's
//      flags (list bits + class flags) together, with the caller's own config
//      changes (the default class's budgets) in the same write;
//   3. the old set's entries are deleted and its records zeroed.
// A failure before 2 deletes what was written in the new set and leaves the
// set in force untouched; a failure in 3 leaves stale entries in a set no
// frame reads (the next apply clears it first): the new policy is in force,
// and AppliedSet::warning says what was left.
#pragma once

#include "base/address.h"
#include "base/result.h"
#include "bpf/maps.h"
#include "bpf/sluice_abi.h"
#include "logic/class_tables.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sluice {

// The allow and deny lists a policy puts in force (both families each):
// the file's, and the entries added at run time that are kept beside them
// (written with their origin, maps.h's ListOrigin).
struct PolicyLists {
	std::vector<Cidr> allow, deny;
	std::vector<Cidr> kept_allow, kept_deny;

	const std::vector<Cidr> &file(ListKind list) const { return list == ListKind::allow ? allow : deny; }
	const std::vector<Cidr> &kept(ListKind list) const { return list == ListKind::allow ? kept_allow : kept_deny; }
	size_t size() const { return allow.size() + deny.size() + kept_allow.size() + kept_deny.size(); }
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
	std::string warning;       // the old set could not be cleared: in force all the same
};

class PolicyTables {
public:
	// The class maps of one data plane (Dataplane::policy_maps()), its lists
	// (PrefixLists: both sets) and its config.
	struct Fds {
		int classes, port_classes, class_v4, class_v6;
	};
	PolicyTables(Fds fds, PrefixLists lists, ConfigMap config) : fds_(fds), lists_(lists), config_(config) {}

	// The set the program reads now.
	Result<uint32_t> set_in_force() const;
	// The class names of the set in force, by id (what a reload keeps ids from).
	Result<ClassIds> ids_in_force() const;
	// A list's prefixes in the set in force (with `only`, of that origin).
	Result<std::vector<Cidr>> list_in_force(ListKind list, std::optional<ListOrigin> only = {}) const
	{
		return lists_.entries(list, only);
	}

	Result<AppliedSet> apply(const CompiledPolicy &c, const PolicyLists &lists, const ConfigEdit &edit = {}) const;

private:
	struct TrieKeys;
	// The class tries' keys, by set: one walk serves a whole apply.
	Result<TrieKeys> walk() const;
	// Every entry of `set`: the class tries' (as the walk found them) and the
	// lists', its records zeroed and its port blocks.
	Status clear_set(uint32_t set, const TrieKeys &keys) const;
	Status clear_set(uint32_t set) const; // walks first
	Status write_set(uint32_t set, const CompiledPolicy &c, const PolicyLists &lists) const;

	Fds fds_;
	PrefixLists lists_;
	ConfigMap config_;
};

} // namespace sluice
