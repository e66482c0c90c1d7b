// pin_layout.h - what one sluice data plane is made of and leaves under
// <pin-dir>/<ifname>/: one row per map, and the attachment's pin.
//
// Load fills the Dataplane's fds from the skeleton, adopt opens the pins and
// checks each against its row, pin and detach walk the same rows: adding a map
// is adding its member to MapFds and its row to map_pins() (pin_layout.cpp).
// Adding or changing a row changes what this build adopts: bump
// SLUICE_LAYOUT_VERSION (sluice_abi.h).
#pragma once

#include "base/fd.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <linux/bpf.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>

struct bpf_map;    // libbpf
struct bpf_program;
struct sluice_bpf; // the generated skeleton (sluice_bpf.skel.h)

namespace sluice {

// Every map of one program, as the Dataplane holds them.
struct MapFds {
	UniqueFd slots, config, counters, settings, allow_v4, allow_v6, deny_v4, deny_v6, deny_exact_v4, deny_exact_v6,
		allow_exact_v4, allow_exact_v6,
		drop_samples, standing,
		newcomers, observed, classes, class_v4, class_v6, port_classes, class_counters, cookie_budget,
		listen_ports, capture, capture_events, capture_stats, standing_penalty, grant_quota, own_addrs,
		prefix_count, cookie_dest, cookie_syns;
};

// The standing table's feeders (bpf/feeders.bpf.h), attached with one bpf_link
// each to the cgroup v2 root (cgroup_links.h).
struct FeederFds {
	UniqueFd sockops, connect4, connect6, sendmsg4, sendmsg6;
};

// How many entries a map of this build has.
enum class Entries {
	exact,       // MapPin::max_entries, a constant of this build
	table_slots, // the table size the program is loaded with (LoadOptions::slots, settings.slot_mask + 1)
	standing_sets, // the standing sets it is loaded with (LoadOptions::standing_sets, settings.standing_set_mask + 1)
	observed_sets, // observed standing's sets: the standing sets when on, else 1 (settings.observe_set_mask + 1)
	penalty_sets,  // revoked standing's sets: penalty_sets(standing sets) (settings.penalty_set_mask + 1)
	quota_counts,  // prefix_count's counts: one per standing way ((settings.standing_set_mask + 1) x ways)
	possible_cpus, // one per possible CPU (a perf event array: libbpf sizes it at load)
};

struct MapPin {
	const char *pin;                  // its file under the pin directory
	UniqueFd MapFds::*fd;             // the fd it fills
	bpf_map *(*of)(sluice_bpf *skel); // the skeleton's map
	bpf_map_type type;
	uint32_t key_size;
	uint32_t value_size;
	Entries entries;
	uint32_t max_entries; // Entries::exact only
	// Its entries are placed by the hash key (or hold it: the settings), so
	// a new key needs a new map (Dataplane::rekey, rekey.cpp); the others
	// are handed to the new program as they are.
	bool keyed = false;
};

// The sets of the standing_penalty map for a standing table of `standing_sets`.
uint32_t penalty_sets(uint32_t standing_sets);

// Every map, in the order they are pinned.
std::span<const MapPin> map_pins();

// One feeder program and its cgroup link's pin, pinned after every map and
// before the XDP attachment's pin.
struct FeederPin {
	const char *link_pin;
	UniqueFd FeederFds::*prog;
	bpf_program *(*of)(sluice_bpf *skel);
	bpf_attach_type attach_type;
};

// Every feeder, in the order their links are pinned.
std::span<const FeederPin> feeder_pins();

// The attachment's pin, made after every map's, so that it means a complete
// set: the bpf_link, or with --multiprog the program itself (libxdp holds and
// replaces the links whenever a program joins or leaves the dispatcher).
inline constexpr const char *kLinkPin = SLUICE_PIN_LINK;
inline constexpr const char *kProgramPin = SLUICE_PIN_MULTIPROG;

std::string pin_path(const std::string &dir, const char *name);
bool pin_exists(const std::string &dir, const char *name);
// Pin fd as dir/name; a pin already there is left as it is.
Status pin_object(int fd, const std::string &dir, const char *name);
void remove_pin(const std::string &dir, const char *name);
// Remove the attachment's pin, every map's and the directory.
Status remove_pins(const std::string &dir);

// Closes an opened or loaded skeleton (load.cpp).
struct SkelDeleter {
	void operator()(sluice_bpf *s) const;
};

// Every map of an opened skeleton sized as the settings say (the slot table,
// the standing table and the maps sized with it): load.cpp.
Status size_maps(sluice_bpf *skel, const sluice_settings &s);
// A new hash key, from getrandom().
Result<std::array<uint64_t, 2>> draw_hash_key();

// Of a loaded skeleton: every map's fd into maps, every feeder's into
// feeders, and the XDP program's fd, each duplicated (the skeleton closes its own).
UniqueFd take_fds(sluice_bpf *skel, MapFds &maps, FeederFds &feeders);

} // namespace sluice
