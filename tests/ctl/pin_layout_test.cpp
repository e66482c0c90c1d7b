// The pin layout table against the program's own map definitions: every map
// of the embedded object has one row, of its type and sizes, and every row
// fills its own MapFds member. Opens the skeleton only (no load, no kernel).
#include "bpf/pin_layout.h"

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
		// Internal maps other than .rodata (the settings) are the program's own business.
		if (bpf_map__is_internal(map) && map != skel->maps.rodata)
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

} // namespace
} // namespace sluice
