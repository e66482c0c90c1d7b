// rekey.cpp - a new hash key for a running data plane (dataplane.h's
// Dataplane::rekey; docs/architecture.md, "A new hash key").
//
// The key lives in the program's read-only data, which the kernel froze at
// load: a new key is a new program. It is loaded beside the old one with
// every map that does not depend on the key handed over as it is (config,
// counters, lists, classes, budgets, capture, ...), and new maps for those
// whose entries the key places. The standing table is carried entry by
// entry to where the new key puts it before the links change, so that no
// frame of the new program finds a standing source missing; the links then
// change atomically (each frame runs the old program or the new one), and a
// second pass carries what the old feeders granted in between.
#include "bpf/attachment.h"
#include "bpf/dataplane.h"

#include "base/clock.h"

#include "sluice_bpf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstdio>
#include <fcntl.h>
#include <memory>

namespace sluice {

namespace {

// Pin every keyed map of `fresh` over its pin under dir: each pinned under a
// temporary name first (the step that can fail, with nothing changed yet),
// then renamed over the old pin, the settings (which hold the key) last, so
// that a restarted daemon adopts one key's maps.
Status repin_keyed(const MapFds &fresh, const std::string &dir)
{
	std::vector<const MapPin *> keyed;
	for (const auto &m : map_pins())
		if (m.keyed && std::string(m.pin) != SLUICE_PIN_SETTINGS)
			keyed.push_back(&m);
	for (const auto &m : map_pins())
		if (m.keyed && std::string(m.pin) == SLUICE_PIN_SETTINGS)
			keyed.push_back(&m);
	const auto temp = [&](const MapPin *m) { return pin_path(dir, (std::string("rekeying_") + m->pin).c_str()); };
	for (const MapPin *m : keyed) {
		std::remove(temp(m).c_str());
		if (bpf_obj_pin((fresh.*m->fd).get(), temp(m).c_str()))
			return fail_errno("pinning the new " + std::string(m->pin) + " map as " + temp(m));
	}
	for (const MapPin *m : keyed)
		if (std::rename(temp(m).c_str(), pin_path(dir, m->pin).c_str()))
			return fail_errno("renaming " + temp(m) + " over " + pin_path(dir, m->pin));
	return {};
}

} // namespace

Result<RekeyReport> Dataplane::rekey(const std::string &dir, std::optional<std::array<uint64_t, 2>> key)
{
	if (multiprog())
		return refused("a new hash key needs the program on sluiced's own XDP link; with --multiprog libxdp's "
			       "dispatcher holds it: detach (sluicectl detach) and start sluiced again for a new key");
	const double began = monotonic_seconds();
	RekeyReport report;
	if (auto id = prog_id())
		report.prog_id_before = *id;

	std::unique_ptr<sluice_bpf, SkelDeleter> skel(sluice_bpf::open());
	if (!skel)
		return fail_errno("opening the embedded BPF object");
	auto &s = const_cast<sluice_settings &>(skel->rodata->settings);
	s = settings_;
	if (!key) {
		auto drawn = draw_hash_key();
		if (!drawn)
			return std::unexpected(drawn.error());
		key = *drawn;
	}
	s.hash_key[0] = (*key)[0];
	s.hash_key[1] = (*key)[1];
	if (auto ok = size_maps(skel.get(), s); !ok)
		return std::unexpected(ok.error());
	for (const auto &m : map_pins())
		if (!m.keyed)
			if (int err = bpf_map__reuse_fd(m.of(skel.get()), (maps_.*m.fd).get()); err)
				return fail_bpf(err, "handing the " + std::string(m.pin) + " map to the new program");
	if (int err = sluice_bpf::load(skel.get()); err)
		return fail_bpf(err, "loading the program with the new key (the kernel log has the verifier's reason)");
	MapFds fresh;
	FeederFds feeders;
	UniqueFd prog = take_fds(skel.get(), fresh, feeders);
	if (!prog)
		return fail_errno("duplicating the new program's fd");

	const StandingTable from = standing();
	const StandingTable to(fresh.standing.get(), s, fresh.standing_penalty.get(), maps_.own_addrs.get(),
			       fresh.prefix_count.get());
	auto first = from.carry_into(to);
	if (!first)
		return std::unexpected(first.error());

	// The links: the XDP program first (its frames then read the new
	// table), then the feeders (their grants then go to it too). A feeder
	// link that refuses puts the old program back on the XDP link.
	UniqueFd old_prog(fcntl(prog_fd(), F_DUPFD_CLOEXEC, 3));
	if (!old_prog)
		return fail_errno("duplicating the old program's fd");
	if (auto ok = attachment_->replace_program(std::move(prog)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = feeder_links_.replace(feeders); !ok) {
		if (auto back = attachment_->replace_program(std::move(old_prog)); !back)
			return fail(ok.error().kind,
				    ok.error().describe() + "; and putting the old program back: " + back.error().describe());
		return std::unexpected(ok.error());
	}
	auto late = from.carry_into(to);
	if (!late)
		return std::unexpected(late.error());

	// In force from here: this Dataplane is the new program's.
	for (const auto &m : map_pins())
		if (m.keyed)
			(maps_.*m.fd) = std::move(fresh.*m.fd);
	feeder_progs_ = std::move(feeders);
	settings_ = s;
	report.carried = *first;
	report.carried.entries += late->entries;
	report.carried.entries_lost += late->entries_lost;
	report.carried_late = late->entries;
	if (auto id = prog_id())
		report.prog_id_after = *id;
	if (has_pins(dir))
		if (auto ok = repin_keyed(maps_, dir); !ok)
			return std::unexpected(ok.error());
	report.took_ms = (monotonic_seconds() - began) * 1e3;
	return report;
}

} // namespace sluice
