// dataplane.h - one loaded sluice program and its maps, for one interface.
//
// A Dataplane is made either by load() (a fresh program from the embedded
// skeleton, with a new hash key; load.cpp) or by adopt() (the pins a daemon
// left under <pin-dir>/<ifname>/, checked against this build's layout;
// adopt.cpp). Either way it holds plain file descriptors afterwards, so
// everything downstream works the same for a fresh program and an adopted one.
// What the maps and pins are is pin_layout.h; how the program is attached (a
// bpf_link, or libxdp's dispatcher with --multiprog) is attachment.h.
//
// Enforcement outlives the daemon: the attachment is pinned, so a daemon that
// exits or is killed leaves the program attached (fail-static). Only
// detach() (sluicectl detach) removes it.
#pragma once

#include "base/defaults.h"
#include "base/result.h"
#include "bpf/attach_mode.h"
#include "bpf/bpffs.h"
#include "bpf/cgroup_links.h"
#include "bpf/maps.h"
#include "bpf/capture_maps.h"
#include "bpf/pin_layout.h"
#include "bpf/sluice_abi.h"
#include "bpf/standing_table.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace sluice {

class Attachment;

struct LoadOptions {
	uint32_t slots = defaults::kTableSlots;
	uint32_t v4_prefix = defaults::kV4Prefix;
	uint32_t v6_prefix = defaults::kV6Prefix;
	bool dry_run = false;
	bool one_choice = false;
	// Drop sampling for `sluicectl top`: 1 in sample_every drops (a power of
	// two up to SLUICE_SAMPLE_EVERY_MAX), 0 off.
	uint32_t sample_every = defaults::kSampleEvery;
	// The standing table: sets (a power of two, SLUICE_STANDING_SETS_MIN..MAX)
	// and the idle time after which an entry lapses, in seconds.
	uint32_t standing_sets = defaults::kStandingSets;
	uint32_t standing_lapse_s = defaults::kStandingLapseS;
	// Observed standing: a source admitted in this many distinct ticks
	// (2^30 ns) while serving earns standing; 0 off (the observed map then
	// has one set and the program carries none of it).
	uint32_t observe_periods = defaults::kObservePeriods;
	// Load and attach through libxdp's multiprog dispatcher (sluiced
	// --multiprog) instead of a bpf_link of our own; see attach().
	bool multiprog = false;
	std::optional<std::array<uint64_t, 2>> hash_key; // getrandom() when empty
};

Status validate_load_options(const LoadOptions &o);

// What Dataplane::rekey() did.
struct RekeyReport {
	uint32_t prog_id_before = 0, prog_id_after = 0;
	StandingCarry carried;  // the standing table's entries and penalties, both passes together
	uint64_t carried_late = 0; // of carried.entries, those the second pass found (granted while the programs changed)
	double took_ms = 0;        // from the new program's load to the last pin
};

// The lapse time in standing ticks (2^30 ns), rounded up.
uint32_t standing_lapse_ticks(uint32_t lapse_s);

class Dataplane {
public:
	// A fresh program, loaded and configured with `initial`, not attached.
	static Result<Dataplane> load(const LoadOptions &opts, const sluice_config &initial);
	// A new hash key (sluicectl rekey, sluiced --rekey-every): a new program
	// with `key` (none: from getrandom) and the settings it was loaded
	// with, made anew the maps the key places entries in (pin_layout.h's
	// keyed rows: the slots, which start full, as for a source never seen;
	// the standing table, observed candidates, penalties, prefix counts and
	// the per-destination SYN-ACK buckets) and handed every other map as it
	// is; the standing table's entries and penalties carried where the new
	// key puts them (StandingTable::carry_into); then the new program put on
	// the XDP link and the feeders' links atomically, what the old feeders
	// granted meanwhile carried, and the new maps pinned over the old pins
	// under `dir`. The fds this Dataplane hands out for the maps kept stay
	// valid. Until the links change nothing is changed (an error leaves
	// the old program in force); refused with --multiprog.
	Result<RekeyReport> rekey(const std::string &dir, std::optional<std::array<uint64_t, 2>> key = std::nullopt);
	// The pins under `dir`; refuses pins of another layout, naming the path and the fix.
	static Result<Dataplane> adopt(const std::string &dir);
	// Is there an attachment pin under `dir` (the link, or the multiprog
	// program): a complete set to adopt?
	static bool has_pins(const std::string &dir);

	Dataplane(Dataplane &&) noexcept;
	Dataplane &operator=(Dataplane &&) noexcept;
	Dataplane(const Dataplane &) = delete;
	Dataplane &operator=(const Dataplane &) = delete;
	~Dataplane();

	// Attach to ifindex; returns the mode in force (attachment.h says how
	// each mode fails or falls back). Multiprog (LoadOptions::multiprog):
	// libxdp loads the program here, as an extension of its dispatcher, and
	// refuses (undoing it) to attach the program alone.
	Result<AttachMode> attach(int ifindex, AttachMode mode);
	// Attach the standing feeders of a freshly loaded program to the cgroup
	// v2 root (cgroup_links.h), once; they do not depend on the interface,
	// so a re-attach keeps them. A Dataplane whose feeders cannot be
	// attached still enforces; only new connections grant no standing.
	// The feeders on cgroup `cgroup` (empty: the cgroup v2 root).
	Status attach_feeders(const std::string &cgroup = {});
	bool feeders_attached() const;
	// The cgroup id the feeders are attached to (0: none).
	uint64_t feeders_cgroup_id() const;
	// Pin every map under dir (created if needed), the feeders' cgroup links,
	// then the attachment: the link, or for multiprog the program itself
	// (SLUICE_PIN_MULTIPROG).
	Status pin(const std::string &dir) const;
	// Take the program off its interface (the link dropped, or removed from
	// libxdp's dispatcher) and the feeders off the cgroup, then remove the
	// pins under dir.
	Status detach(const std::string &dir);
	// After a re-attach (the interface came back) the link pin under dir is
	// the old, defunct link's: remove it so that pin() pins the new one.
	static void remove_link_pin(const std::string &dir);
	bool multiprog() const;

	const sluice_settings &settings() const { return settings_; }
	int prog_fd() const;
	Result<uint32_t> prog_id() const;
	// The ifindex the program is attached to now (0: its interface went away).
	Result<uint32_t> link_ifindex() const;

	ConfigMap config() const { return ConfigMap(maps_.config.get()); }
	SlotTable slots() const { return SlotTable(maps_.slots.get(), settings_.slot_mask + 1); }
	Counters counters() const { return Counters(maps_.counters.get()); }
	// The ring buffer of sampled drops (struct sluice_drop_sample).
	int drop_samples_fd() const { return maps_.drop_samples.get(); }
	ListenPorts listen_ports() const { return ListenPorts(maps_.listen_ports.get()); }
	StandingTable standing() const
	{
		return StandingTable(maps_.standing.get(), settings_, maps_.standing_penalty.get(),
				     maps_.own_addrs.get(), maps_.prefix_count.get());
	}
	// The capture's maps (bpf/capture.h, bpf/capture_maps.h).
	CaptureMapFds capture_maps() const
	{
		return {maps_.capture.get(), maps_.capture_events.get(), maps_.capture_stats.get()};
	}
	// Every PrefixLists of this Dataplane shares one count of what the lists
	// hold (PrefixLists::Counts): the tries are counted once, not per write.
	PrefixLists lists() const { return PrefixLists(list_fds(), config(), list_counts_); }
	// The lists' maps, plain fds owned by this Dataplane (for lists(); a
	// bench writes a trie straight through them).
	PrefixLists::Fds list_fds() const
	{
		return {maps_.allow_v4.get(),	   maps_.allow_v6.get(),      maps_.deny_v4.get(),
			maps_.deny_v6.get(), maps_.deny_exact_v4.get(), maps_.deny_exact_v6.get(),
			maps_.allow_exact_v4.get(), maps_.allow_exact_v6.get()};
	}
	// The policy classes' maps (sluice_abi.h), both sets: bpf/policy_tables
	// writes them, bpf/class_maps reads them. Plain fds, owned by this Dataplane.
	struct PolicyMapFds {
		int classes, class_v4, class_v6, port_classes, class_counters;
	};
	PolicyMapFds policy_maps() const
	{
		return {maps_.classes.get(), maps_.class_v4.get(), maps_.class_v6.get(), maps_.port_classes.get(),
			maps_.class_counters.get()};
	}

private:
	Dataplane();
	Status read_settings();

	MapFds maps_;
	FeederFds feeder_progs_;
	FeederLinks feeder_links_;
	sluice_settings settings_{};
	std::unique_ptr<Attachment> attachment_;
	std::shared_ptr<PrefixLists::Counts> list_counts_ = std::make_shared<PrefixLists::Counts>();
};

} // namespace sluice
