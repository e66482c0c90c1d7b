// adopt.cpp - the pins a daemon left under <pin-dir>/<ifname>/, each map
// checked against its row of the pin layout and the settings against this
// build's layout version, before anything is read from or written to them.
#include "bpf/attachment.h"
#include "bpf/dataplane.h"
#include "clock/dataplane_clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

namespace sluice {

namespace {

// The layout version the settings pin under dir was made under, read before
// any map is checked: the settings' size changes with the layout, the
// version's place (after the hash key) never has. nullopt when it cannot be
// read (the map checks below then say what is wrong).
std::optional<uint32_t> pinned_layout_version(const std::string &dir)
{
	UniqueFd fd(bpf_obj_get(pin_path(dir, SLUICE_PIN_SETTINGS).c_str()));
	if (!fd)
		return std::nullopt;
	bpf_map_info info{};
	uint32_t len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) || info.type != BPF_MAP_TYPE_ARRAY ||
	    info.value_size < offsetof(sluice_settings, layout_version) + sizeof(uint32_t))
		return std::nullopt;
	std::vector<unsigned char> value(info.value_size);
	uint32_t zero = 0;
	if (bpf_map_lookup_elem(fd.get(), &zero, value.data()))
		return std::nullopt;
	uint32_t version;
	std::memcpy(&version, value.data() + offsetof(sluice_settings, layout_version), sizeof(version));
	return version;
}

} // namespace

Result<Dataplane> Dataplane::adopt(const std::string &dir)
{
	const std::string fix = "; if no sluice of this version made it, detach with the sluicectl that did, or "
				"remove it with `rm -r " +
				dir + "` (that detaches its program)";
	// Pins of another layout are refused as such, before their maps are
	// compared with this build's rows (which would fail on the first map
	// whose layout changed, a less telling message).
	if (auto version = pinned_layout_version(dir); version && *version != SLUICE_LAYOUT_VERSION)
		return refused("pins under " + dir + " were made under layout " + std::to_string(*version) +
			       ", this build uses layout " + std::to_string(SLUICE_LAYOUT_VERSION) +
			       ": detach them with the sluicectl of that version (`sluicectl detach`), or remove them "
			       "with `rm -r " +
			       dir + "` (that detaches its program)");
	Dataplane dp;
	std::vector<uint32_t> max_entries;
	for (const auto &m : map_pins()) {
		std::string path = pin_path(dir, m.pin);
		int fd = bpf_obj_get(path.c_str());
		if (fd < 0)
			return fail(ErrorKind::system, "pin " + path + " cannot be opened" + fix, errno);
		(dp.maps_.*m.fd).reset(fd);
		bpf_map_info info{};
		uint32_t len = sizeof(info);
		if (int err = bpf_obj_get_info_by_fd(fd, &info, &len); err)
			return fail_bpf(err, "reading map info of " + path);
		if (info.type != static_cast<uint32_t>(m.type) || info.key_size != m.key_size ||
		    info.value_size != m.value_size || (m.entries == Entries::exact && info.max_entries != m.max_entries))
			return refused("pin " + path + " has another map layout (type " + std::to_string(info.type) +
				       ", key " + std::to_string(info.key_size) + " B, value " +
				       std::to_string(info.value_size) + " B, " + std::to_string(info.max_entries) +
				       " entries) than this build's layout " + std::to_string(SLUICE_LAYOUT_VERSION) +
				       " expects" + fix);
		max_entries.push_back(info.max_entries);
	}
	if (auto ok = dp.read_settings(); !ok)
		return std::unexpected(ok.error());
	if (dp.settings_.layout_version != SLUICE_LAYOUT_VERSION)
		return refused("pins under " + dir + " were made under layout " +
			       std::to_string(dp.settings_.layout_version) + ", this build uses layout " +
			       std::to_string(SLUICE_LAYOUT_VERSION) + fix);
	// The daemon writes times on the program's clock, which it computes
	// with this kernel's tick and reads with the clock probe: both must
	// hold for the pinned program too.
	auto tick = dataplane_tick_ns();
	if (!tick)
		return std::unexpected(tick.error());
	if (dp.settings_.clock_tick_ns != *tick)
		return refused("pins under " + dir + " were made for a tick of " +
			       std::to_string(dp.settings_.clock_tick_ns) + " ns, this kernel's is " +
			       std::to_string(*tick) + " ns" + fix);
	if (auto now = read_dataplane_clock(); !now)
		return std::unexpected(now.error());
	const auto maps = map_pins();
	for (size_t i = 0; i < maps.size(); i++)
		if (maps[i].entries == Entries::table_slots && max_entries[i] != dp.settings_.slot_mask + 1)
			return refused("pins under " + dir + " disagree with themselves (slot table of " +
				       std::to_string(max_entries[i]) + ", settings say " +
				       std::to_string(dp.settings_.slot_mask + 1) + ")" + fix);
		else if (maps[i].entries == Entries::standing_sets && max_entries[i] != dp.settings_.standing_set_mask + 1)
			return refused("pins under " + dir + " disagree with themselves (standing table of " +
				       std::to_string(max_entries[i]) + " sets, settings say " +
				       std::to_string(dp.settings_.standing_set_mask + 1) + ")" + fix);
		else if (maps[i].entries == Entries::possible_cpus &&
			 max_entries[i] != static_cast<uint32_t>(libbpf_num_possible_cpus()))
			return refused("pins under " + dir + " were made for " + std::to_string(max_entries[i]) +
				       " CPUs (" + maps[i].pin + "), this host has " +
				       std::to_string(libbpf_num_possible_cpus()) + fix);
		else if (maps[i].entries == Entries::penalty_sets && max_entries[i] != dp.settings_.penalty_set_mask + 1)
			return refused("pins under " + dir + " disagree with themselves (penalty map of " +
				       std::to_string(max_entries[i]) + " sets, settings say " +
				       std::to_string(dp.settings_.penalty_set_mask + 1) + ")" + fix);
		else if (maps[i].entries == Entries::quota_counts &&
			 max_entries[i] != (dp.settings_.standing_set_mask + 1) * SLUICE_STANDING_WAYS)
			return refused("pins under " + dir + " disagree with themselves (prefix quota map of " +
				       std::to_string(max_entries[i]) + " counts, settings say " +
				       std::to_string((dp.settings_.standing_set_mask + 1) * SLUICE_STANDING_WAYS) + ")" +
				       fix);
		else if (maps[i].entries == Entries::observed_sets && max_entries[i] != dp.settings_.observe_set_mask + 1)
			return refused("pins under " + dir + " disagree with themselves (observed map of " +
				       std::to_string(max_entries[i]) + " sets, settings say " +
				       std::to_string(dp.settings_.observe_set_mask + 1) + ")" + fix);
	auto feeders = FeederLinks::adopt(dir, fix);
	if (!feeders)
		return std::unexpected(feeders.error());
	dp.feeder_links_ = std::move(*feeders);

	// Attached through libxdp's dispatcher, the program is pinned instead of
	// a link (libxdp holds and replaces the links); a link pin decides.
	auto attachment = !pin_exists(dir, kLinkPin) && pin_exists(dir, kProgramPin)
				  ? adopt_libxdp_attachment(dir, fix)
				  : adopt_link_attachment(dir, fix);
	if (!attachment)
		return std::unexpected(attachment.error());
	dp.attachment_ = std::move(*attachment);
	return dp;
}

} // namespace sluice
