// maps.h - typed, validated access to the data plane's maps. Every write the
// control plane makes goes through here, and the invariants live here:
//
//   config:  1 <= rate <= SLUICE_RATE_MAX, 1 <= burst <= SLUICE_BURST_MAX,
//            the standing bucket within the same bounds, the newcomer
//            bucket (per CPU) none (0, 0) or within bucket.h's,
//            breaker_state a known state, admission_ppm in [SLUICE_PPM_MIN, 1e6],
//            valve_closed 0 or 1, and 1 only while shedding, policy_flags
//            only the bits sluice_abi.h defines
//   slots:   0 <= tokens <= burst at every write
//
// A refused write leaves the map unchanged and its error names the invariant
// and the rejected value.
#pragma once

#include "base/address.h"
#include "base/clock.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace sluice {

// (The data plane's clock, dataplane_now(), is in clock/dataplane_clock.h.)

// Nanoseconds per token for a rate in tokens per second, rounded to nearest
// (logic/budgets.h's cost_ns_for_rate, refused outside the rate's bounds).
Result<uint64_t> cost_for_rate(uint64_t rate_pps);

// Check a config against the invariants above (the bounds are base/limits.h's).
Status validate_config(const sluice_config &cfg);

// The possible CPUs (libbpf_num_possible_cpus): what a per-CPU map, and so the
// newcomer budget (logic/budgets.h), is divided over.
Result<uint32_t> possible_cpus();

class ConfigMap {
public:
	explicit ConfigMap(int fd) : fd_(fd) {}
	Result<sluice_config> read() const;
	// Validates, bumps generation, writes. Refused: nothing written.
	Status write(sluice_config cfg) const;

private:
	int fd_;
};

// The listen_ports map (sluice_abi.h): a bit for each TCP port that has had
// a listener. Bits are only ever set, here and by the sockops feeder.
class ListenPorts {
public:
	explicit ListenPorts(int fd) : fd_(fd) {}
	// Set the bits of `ports`, a word at a time (read, or, write): a bit
	// the feeder sets in the same word meanwhile may be lost, to be set
	// again by the next mark() of a port that still listens.
	Status mark(std::span<const uint16_t> ports) const;
	// Every port whose bit is set, ascending.
	Result<std::vector<uint16_t>> ports() const;

private:
	int fd_;
};

class SlotTable {
public:
	SlotTable(int fd, uint32_t slots) : fd_(fd), slots_(slots) {}
	uint32_t size() const { return slots_; }

	Result<uint64_t> empty_at(uint32_t index) const;
	// Whole tokens in a slot now, under cfg (rate and burst in force).
	Result<uint64_t> tokens(uint32_t index, const sluice_config &cfg) const;
	// The seed's tokens.set: every slot gets exactly `tokens`, or, if
	// tokens is outside [0, burst], nothing is written and the error says
	// "invariant 0 <= tokens <= burst violated: rejected write of N ...".
	Status set_tokens(std::span<const uint32_t> indices, int64_t tokens, const sluice_config &cfg) const;
	// The seed's refill: every slot gains n (n may be negative); refused, with
	// no slot changed, if any slot would leave [0, burst].
	Status refill(std::span<const uint32_t> indices, int64_t n, const sluice_config &cfg) const;

	// Read [first, first + count) in one batched syscall where the kernel has it.
	Result<std::vector<uint64_t>> read_range(uint32_t first, uint32_t count) const;

private:
	Status write_checked(std::span<const uint32_t> indices, std::span<const int64_t> tokens,
			     const sluice_config &cfg, const char *what) const;
	int fd_;
	uint32_t slots_;
};

using CounterSet = std::array<sluice_counter, SLUICE_OUTCOMES>;

// Per-CPU counters, summed over the CPUs.
class Counters {
public:
	explicit Counters(int fd) : fd_(fd) {}
	Result<CounterSet> read() const;

private:
	int fd_;
};

const char *outcome_name(uint32_t outcome); // "passed", "drop_rate", ...

enum class ListKind { allow, deny };
const char *to_string(ListKind k);
// Who put a list entry there (its value in the trie, sluice_abi.h).
enum class ListOrigin : uint8_t { run_time = SLUICE_LIST_AT_RUN_TIME, file = SLUICE_LIST_FROM_FILE };

// The allow and deny lists: one LPM trie per family each, holding both
// policy sets (sluice_abi.h: the key's first data byte is the set), and for
// each list a hash map per family beside its trie holding its whole
// addresses (a /32, a /128; struct sluice_exact_v4), where the data plane's
// lookup does not grow with the list. Which map an entry is in follows from
// its list and prefix length alone; callers name CIDRs, never maps. What an
// operator adds or removes at run time, and what the lists are said to hold,
// is the set in force (config.policy_flags' SLUICE_POLICY_SET); a reload
// (bpf/policy_tables) writes the other set with insert() and clear() and
// flips config itself.
//
// Each list holds at most SLUICE_LIST_MAX_ENTRIES prefixes of a family in
// each set (base/limits' check_list_entries). What it holds is counted once,
// from the tries, on the first call that needs it, and kept by every write
// after, so an add or remove is a few map operations however full the list
// is. The count is shared by the copies of a PrefixLists and by those of one
// Dataplane (Dataplane::lists()); it holds while they are the maps' only
// writer (sluiced is its lists' only writer). A write that fails half way
// drops it, to be counted again.
class PrefixLists {
public:
	struct Fds {
		int allow_v4, allow_v6, deny_v4, deny_v6, deny_exact_v4, deny_exact_v6, allow_exact_v4, allow_exact_v6;
	};
	// One of the eight maps: list, family, and trie or exact (whole addresses).
	enum class Table : uint8_t {
		allow_v4,
		allow_v6,
		deny_v4,
		deny_v6,
		deny_exact_v4,
		deny_exact_v6,
		allow_exact_v4,
		allow_exact_v6
	};
	static constexpr size_t kTables = 8;
	// Prefixes held, by map and set.
	struct Counts {
		bool counted = false;
		std::array<std::array<size_t, SLUICE_POLICY_SETS>, kTables> held{};
	};
	// Lists with a count of their own.
	PrefixLists(Fds fds, ConfigMap config) : PrefixLists(fds, config, nullptr) {}
	// Lists sharing `counts` with every other PrefixLists of the same maps.
	PrefixLists(Fds fds, ConfigMap config, std::shared_ptr<Counts> counts)
		: fds_(fds), config_(config), counts_(counts ? std::move(counts) : std::make_shared<Counts>())
	{
	}

	// The set in force. All or nothing: every CIDR is parsed and checked
	// first; if one insert fails the ones already made are removed again.
	// Keeps the set's list bits of config.policy_flags in step so the data
	// plane skips empty lists.
	Status add(ListKind list, std::span<const Cidr> cidrs) const;
	Status remove(ListKind list, std::span<const Cidr> cidrs) const;
	Result<std::vector<Cidr>> entries(ListKind list, std::optional<ListOrigin> only = {}) const;
	// Set the list bits of config.policy_flags from what the set in force
	// holds (the class bits and the set bit are kept). add/remove call it
	// last; a daemon adopting pins calls it too, since a daemon killed
	// between a list write and this left the flags behind the lists.
	Status sync_flags() const;

	// One policy set, in force or not; config is not touched.
	// insert: all or nothing, as add(); an entry there already takes
	// `origin` too (an operator's add of what the file named makes it
	// theirs). entries: with `only`, those of that origin. clear: every
	// entry of the set, in all eight maps. list_flags: the SLUICE_LIST_*
	// bits of what it holds.
	Status insert(ListKind list, uint32_t set, std::span<const Cidr> cidrs,
		      ListOrigin origin = ListOrigin::run_time) const;
	Result<std::vector<Cidr>> entries(ListKind list, uint32_t set, std::optional<ListOrigin> only = {}) const;
	Status clear(uint32_t set) const;
	Result<uint32_t> list_flags(uint32_t set) const;

private:
	int fd_of(Table t) const;
	Result<uint32_t> set_in_force() const;
	// Count the maps if not yet counted (or dropped by a failed write).
	Status count() const;
	size_t &held(Table t, uint32_t set) const;
	// What a list holds of a family in a set, in both of its maps.
	size_t held(ListKind list, Family f, uint32_t set) const;
	Fds fds_;
	ConfigMap config_;
	std::shared_ptr<Counts> counts_;
};

} // namespace sluice
