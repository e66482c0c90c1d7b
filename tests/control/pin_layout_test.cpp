// The pin layout table against the program's own map definitions: every map
// of the embedded object has one row, of its type and sizes, and every row
// fills its own MapFds member. Opens the skeleton only (no load, no kernel).
#include "bpf/pin_layout.h"
#include "bpf/cgroup_links.h"

#include "sluice_bpf.skel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace sluice {
namespace {

struct SkelDeleter {
	void operator()(sluice_bpf *s) const { sluice_bpf__destroy(s); }
};

TEST(PinLayout, EveryRowMatchesTheProgramsMap)
{
	std::unique_ptr<sluice_bpf, SkelDeleter> skel(sluice_bpf::open());
	ASSERT_TRUE(skel);
	for (const auto &m : map_pins()) {
		SCOPED_TRACE(m.pin);
		const bpf_map *map = m.of(skel.get());
		ASSERT_NE(map, nullptr);
		EXPECT_EQ(bpf_map__type(map), m.type);
		EXPECT_EQ(bpf_map__key_size(map), m.key_size);
		EXPECT_EQ(bpf_map__value_size(map), m.value_size);
		if (m.entries == Entries::exact)
			EXPECT_EQ(bpf_map__max_entries(map), m.max_entries);
	}
}

TEST(PinLayout, EveryMapOfTheProgramHasOneRow)
{
	std::unique_ptr<sluice_bpf, SkelDeleter> skel(sluice_bpf::open());
	ASSERT_TRUE(skel);
	std::set<const bpf_map *> rows;
	for (const auto &m : map_pins())
		EXPECT_TRUE(rows.insert(m.of(skel.get())).second) << m.pin << " shares its map with another row";
	size_t maps = 0;
	const bpf_map *map = nullptr;
	bpf_object__for_each_map(map, skel->obj)
	{
		// Internal maps other than .rodata (the settings) and .data.capture
		// (the capture's control word) are the program's own business, and
		// so are the cookie path's per-CPU scratch, the drop sampling's
		// per-CPU countdown and the slot pairs' per-CPU leases (no state:
		// pin_layout.cpp says why they have no row).
		if ((bpf_map__is_internal(map) && map != skel->maps.rodata && map != skel->maps.data_capture) ||
		    map == skel->maps.cookie_scratch || map == skel->maps.sample_countdown ||
		    map == skel->maps.leases)
			continue;
		maps++;
		EXPECT_TRUE(rows.count(map)) << bpf_map__name(map) << " has no row in map_pins()";
	}
	EXPECT_EQ(maps, rows.size());
}

TEST(PinLayout, RowsFillDistinctMembersAndPins)
{
	std::set<std::string> pins{kLinkPin, kProgramPin};
	std::vector<UniqueFd MapFds::*> members; // member pointers compare equal, not less
	for (const auto &m : map_pins()) {
		EXPECT_TRUE(pins.insert(m.pin).second) << m.pin << " is pinned twice";
		EXPECT_EQ(std::count(members.begin(), members.end(), m.fd), 0) << m.pin << " fills another row's member";
		members.push_back(m.fd);
	}
	// Every member of MapFds has its row.
	EXPECT_EQ(map_pins().size(), sizeof(MapFds) / sizeof(UniqueFd));
}

TEST(PinLayout, EveryFeederIsAProgramOfTheObjectWithItsOwnPin)
{
	std::unique_ptr<sluice_bpf, SkelDeleter> skel(sluice_bpf::open());
	ASSERT_TRUE(skel);
	std::set<std::string> pins{kLinkPin, kProgramPin};
	for (const auto &m : map_pins())
		pins.insert(m.pin);
	std::set<const bpf_program *> progs;
	for (const auto &f : feeder_pins()) {
		SCOPED_TRACE(f.link_pin);
		EXPECT_TRUE(pins.insert(f.link_pin).second) << f.link_pin << " is pinned twice";
		const bpf_program *p = f.of(skel.get());
		ASSERT_NE(p, nullptr);
		EXPECT_TRUE(progs.insert(p).second) << "two rows share a program";
		EXPECT_NE(p, skel->progs.sluice_xdp);
		EXPECT_EQ(bpf_program__expected_attach_type(p), f.attach_type);
	}
	// Every program of the object but the XDP one is a feeder with its row.
	size_t n = 0;
	bpf_program *prog = nullptr;
	bpf_object__for_each_program(prog, skel->obj)
		n += prog != skel->progs.sluice_xdp;
	EXPECT_EQ(n, progs.size());
	EXPECT_EQ(feeder_pins().size(), sizeof(FeederFds) / sizeof(UniqueFd));
}

TEST(PinLayout, TheCgroupV2RootIsTheFirstCgroup2Mount)
{
	EXPECT_EQ(cgroup2_root_in("sysfs /sys sysfs rw 0 0\n"
				  "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
				  "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
				  "cgroup2 /other cgroup2 rw 0 0\n"),
		  "/sys/fs/cgroup/unified");
	EXPECT_EQ(cgroup2_root_in("proc /proc proc rw 0 0\n"), "");
}

} // namespace
} // namespace sluice
