// dataplane.h - one loaded sluice program and its maps, for one interface.
//
// A Dataplane is made either by load() (a fresh program from the embedded
// skeleton, with a new hash key) or by adopt() (the pins a daemon left under
// <pin-dir>/<ifname>/, checked against this build's layout). Either way it
// holds plain file descriptors afterwards, so everything downstream works the
// same for a fresh program and an adopted one.
//
// Enforcement outlives the daemon: the bpf_link is pinned, so a daemon that
// exits or is killed leaves the program attached (fail-static). Only
// detach() (sluicectl detach) removes it.
#pragma once

#include "base/fd.h"
#include "base/result.h"
#include "bpf/attach_mode.h"
#include "bpf/bpffs.h"
#include "bpf/maps.h"
#include "bpf/sluice_abi.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct sluice_bpf; // the generated skeleton (sluice_bpf.skel.h)

namespace sluice {

struct LoadOptions {
	uint32_t slots = SLUICE_SLOTS_DEFAULT;
	uint32_t v4_prefix = 32;
	uint32_t v6_prefix = 64;
	bool dry_run = false;
	bool one_choice = false;
	// Drop sampling for `sluicectl top`: 1 in sample_every drops (a power of
	// two up to SLUICE_SAMPLE_EVERY_MAX), 0 off.
	uint32_t sample_every = SLUICE_SAMPLE_EVERY_DEFAULT;
	// Load and attach through libxdp's multiprog dispatcher (sluiced
	// --multiprog) instead of a bpf_link of our own; see attach().
	bool multiprog = false;
	std::optional<std::array<uint64_t, 2>> hash_key; // getrandom() when empty
};

Status validate_load_options(const LoadOptions &o);

struct DataplaneLayout;

class Dataplane {
public:
	// A fresh program, loaded and configured with `initial`, not attached.
	static Result<Dataplane> load(const LoadOptions &opts, const sluice_config &initial);
	// The pins under `dir`; refuses pins of another layout, naming the path and the fix.
	static Result<Dataplane> adopt(const std::string &dir);
	// Is there a link pin under `dir`?
	static bool has_pins(const std::string &dir);

	Dataplane(Dataplane &&) = default;
	Dataplane &operator=(Dataplane &&) = default;
	Dataplane(const Dataplane &) = delete;
	Dataplane &operator=(const Dataplane &) = delete;

	// Attach to ifindex with a bpf_link; returns the mode in force. native
	// fails naming --mode skb when the driver has no native XDP; automatic
	// falls back to skb and says so through the returned mode.
	//
	// Multiprog (LoadOptions::multiprog): libxdp loads the program as an
	// extension of its dispatcher and attaches that (xdp-loader status lists
	// sluice_xdp beside the interface's other programs); libxdp pins the
	// dispatcher and its links under <bpffs>/xdp/ ($LIBXDP_BPFFS or
	// /sys/fs/bpf). If libxdp cannot use its dispatcher on this kernel it
	// falls back to attaching the program alone; that is refused here (and
	// undone), since it would not share the interface.
	Result<AttachMode> attach(int ifindex, AttachMode mode);
	// Pin every map under dir (created if needed), then the link, or, for
	// multiprog, the program itself (SLUICE_PIN_MULTIPROG): libxdp replaces
	// its dispatcher and links whenever a program joins or leaves.
	Status pin(const std::string &dir) const;
	// Remove the pins under dir and drop the link (multiprog: remove the
	// program from libxdp's dispatcher): the program is detached.
	Status detach(const std::string &dir);
	bool multiprog() const { return multiprog_; }

	const sluice_settings &settings() const { return settings_; }
	bool attached() const { return static_cast<bool>(link_); }
	int prog_fd() const { return prog_.get(); }
	int link_fd() const { return link_.get(); }
	Result<uint32_t> prog_id() const;
	// The ifindex the link is attached to now (0: its interface went away).
	Result<uint32_t> link_ifindex() const;

	ConfigMap config() const { return ConfigMap(config_.get()); }
	SlotTable slots() const { return SlotTable(slots_.get(), settings_.slot_mask + 1); }
	Counters counters() const { return Counters(counters_.get()); }
	// The ring buffer of sampled drops (struct sluice_drop_sample).
	int drop_samples_fd() const { return drop_samples_.get(); }
	PrefixLists lists() const
	{
		return PrefixLists({allow_v4_.get(), allow_v6_.get(), deny_v4_.get(), deny_v6_.get()}, config());
	}

private:
	friend struct DataplaneLayout;
	Dataplane() = default;
	Status read_settings();

	UniqueFd prog_, link_, slots_, config_, counters_, settings_map_;
	UniqueFd allow_v4_, allow_v6_, deny_v4_, deny_v6_, drop_samples_;
	sluice_settings settings_{};
	// Multiprog: the opened skeleton until libxdp loads it in attach(); the
	// interface, by name (its dispatcher is found by ifindex each time).
	std::shared_ptr<sluice_bpf> pending_;
	bool multiprog_ = false;
	std::string ifname_;
	void take_fds(sluice_bpf *skel);
	Result<AttachMode> attach_multiprog(int ifindex, AttachMode mode);
	Status detach_multiprog();
	Result<uint32_t> multiprog_ifindex() const;
};

} // namespace sluice
