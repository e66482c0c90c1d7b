// The seed quota behaviours, asserted against the real program: a source is
// admitted up to its limit and refused after; a new window is a new budget; an
// unlimited setting admits everything; many distinct sources do not grow the
// table; and rotating sources are bounded by the table, not by their number.
#include "fixture.h"
#include "require.h"

#include <map>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

Options limits(std::uint64_t rate, std::uint64_t burst, std::uint32_t slots = 1024)
{
	Options o;
	o.slots = slots;
	o.config = make_config(rate, burst);
	return o;
}

// A frame whose source address can be rewritten in place (the program reads
// only the address; the header checksum does not matter to it).
struct V4Source {
	Bytes frame = udp4();
	static constexpr std::size_t kSrcAt = 14 + 12;
	void set(const Ip4 &a) { std::copy(a.begin(), a.end(), frame.begin() + kSrcAt); }
};

bpf_map_info map_info(int fd)
{
	bpf_map_info info{};
	__u32 len = sizeof(info);
	// bpf_map_get_info_by_fd() is libbpf >= 1.2; this is the same syscall.
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		throw std::runtime_error("BPF_OBJ_GET_INFO_BY_FD (map) failed");
	return info;
}

struct ProgMaps {
	std::vector<__u32> ids;
};

ProgMaps prog_maps(int prog_fd)
{
	bpf_prog_info info{};
	__u32 len = sizeof(info);
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		throw std::runtime_error("BPF_OBJ_GET_INFO_BY_FD (prog) failed");
	ProgMaps m;
	m.ids.resize(info.nr_map_ids);
	bpf_prog_info again{};
	again.nr_map_ids = info.nr_map_ids;
	again.map_ids = reinterpret_cast<__u64>(m.ids.data());
	len = sizeof(again);
	if (bpf_obj_get_info_by_fd(prog_fd, &again, &len))
		throw std::runtime_error("BPF_OBJ_GET_INFO_BY_FD (prog map ids) failed");
	m.ids.resize(again.nr_map_ids);
	return m;
}

struct MapShape {
	__u32 type, key_size, value_size, max_entries, map_flags;
	bool operator==(const MapShape &) const = default;
};

std::map<__u32, MapShape> shapes_of(const ProgMaps &pm)
{
	std::map<__u32, MapShape> out;
	for (__u32 id : pm.ids) {
		int fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			throw std::runtime_error("bpf_map_get_fd_by_id failed");
		bpf_map_info i = map_info(fd);
		close(fd);
		out[id] = {i.type, i.key_size, i.value_size, i.max_entries, i.map_flags};
	}
	return out;
}

} // namespace

// (1) Admitted up to the limit, refused after.
TEST(SeedQuotaParity, AdmitsUpToTheLimitAndRefusesAfter)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 3));
	Bytes f = udp4({}, {.src = ip4("10.70.0.1")});

	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, f, XDP_PASS);
	for (int i = 0; i < 3; i++)
		EXPECT_VERDICT(s, f, XDP_DROP);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 3u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 3u) << c.str();
}

// (2) A new window is a new budget: once the refill time has passed, the
// source is admitted again, a whole burst (the bucket is capped at the burst),
// and refused after it.
TEST(SeedQuotaParity, ANewWindowIsANewBudget)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kRate = 10, kBurst = 3; // a full refill takes 300 ms
	SLUICE_LOAD_OR_FAIL(s, limits(kRate, kBurst));
	Bytes f = udp4({}, {.src = ip4("10.70.0.2")});

	for (std::uint64_t i = 0; i < kBurst; i++)
		EXPECT_VERDICT(s, f, XDP_PASS);
	EXPECT_VERDICT(s, f, XDP_DROP);

	// Full refill by the program's clock, with two ticks of margin.
	std::uint64_t c0 = dataplane_ns();
	sleep_ns(kBurst * s.config().cost_ns + 2 * tick_ns());
	while (dataplane_ns() - c0 < kBurst * s.config().cost_ns + tick_ns())
		sleep_ns(tick_ns());

	for (std::uint64_t i = 0; i < kBurst; i++)
		EXPECT_VERDICT(s, f, XDP_PASS);
	EXPECT_VERDICT(s, f, XDP_DROP);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 2 * kBurst) << c.str();
	EXPECT_EQ(c.packets(SLUICE_DROP_RATE), 2u) << c.str();
}

// (3) An unlimited setting admits everything: the largest rate and burst the
// control plane accepts, 10,000 frames from one source, all passed.
TEST(SeedQuotaParity, UnlimitedSettingAdmitsEverything)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(SLUICE_RATE_MAX, SLUICE_BURST_MAX));
	Bytes f = udp4({}, {.src = ip4("10.70.0.3")});
	std::uint64_t not_passed = 0;

	for (int i = 0; i < 10'000; i++) {
		RunResult r = s.run(f);
		ASSERT_EQ(r.err, 0);
		not_passed += r.retval != XDP_PASS;
	}
	EXPECT_EQ(not_passed, 0u);
	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED), 10'000u) << c.str();
	EXPECT_EQ(c.bytes(SLUICE_PASSED), 10'000u * f.size()) << c.str();
	EXPECT_EQ(c.total_packets(), 10'000u) << c.str();
}

// (4) 10,000 distinct sources leave the table as it was: same maps, same
// sizes. The table is a fixed array; sources share it, they do not add to it.
TEST(SeedQuotaParity, DistinctSourcesDoNotGrowTheTable)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(100, 4));
	const int slots_fd = s.map_fd(s.skel()->maps.slots);

	bpf_map_info before = map_info(slots_fd);
	ProgMaps maps_before = prog_maps(s.prog_fd());
	auto shapes_before = shapes_of(maps_before);
	EXPECT_EQ(before.max_entries, 1024u);
	EXPECT_EQ(before.value_size, sizeof(sluice_slot));
	EXPECT_EQ(before.type, std::uint32_t(BPF_MAP_TYPE_ARRAY));

	V4Source src;
	for (std::uint32_t i = 0; i < 10'000; i++) {
		src.set(ip4_plus(ip4("10.80.0.0"), i));
		RunResult r = s.run(src.frame);
		ASSERT_EQ(r.err, 0);
	}

	bpf_map_info after = map_info(slots_fd);
	ProgMaps maps_after = prog_maps(s.prog_fd());
	EXPECT_EQ(after.id, before.id);
	EXPECT_EQ(after.max_entries, before.max_entries);
	EXPECT_EQ(after.value_size, before.value_size);
	EXPECT_EQ(after.key_size, before.key_size);
	EXPECT_EQ(maps_after.ids.size(), maps_before.ids.size());
	EXPECT_EQ(maps_after.ids, maps_before.ids);
	EXPECT_TRUE(shapes_of(maps_after) == shapes_before);

	Counters c = s.counters();
	EXPECT_EQ(c.packets(SLUICE_PASSED) + c.packets(SLUICE_DROP_RATE), 10'000u) << c.str();
	std::size_t used = 0;
	for (std::uint64_t v : s.all_slots())
		used += v != 0;
	std::printf("QUOTA 10000 sources: %zu maps, slots max_entries=%u value_size=%u, %zu/1024 slots written, "
		    "passed=%llu\n",
		    maps_after.ids.size(), after.max_entries, after.value_size, used,
		    (unsigned long long)c.packets(SLUICE_PASSED));
	EXPECT_LE(used, 1024u);
}

// (5) 200,000 rotating sources (distinct /32s) with burst L = 4 on a 1024-slot
// table: at most 1024 x L admitted, however many sources, and more than half of
// that (each admission costs at most two tokens: one from each slot).
//
// "Negligible rate": cost_ns = 1e12 ns (one token per 1000 s), which is the
// effective cost of the lowest rate (1/s) at the lowest admission_ppm (1000)
// while recovering, see sluice_effective_cost(). At 1/s, the run's own
// duration (~1 s) would refill up to 1024 more tokens.
TEST(SeedQuotaParity, RotatingSourcesAreBoundedByTheTable)
{
	SLUICE_REQUIRE_ROOT();
	constexpr std::uint64_t kL = 4, kSlots = 1024;
	constexpr std::uint32_t kSources = 200'000;
	Options o = limits(1, kL, kSlots);
	o.config.cost_ns = 1'000'000'000'000ull;
	ASSERT_EQ(o.config.cost_ns, sluice_effective_cost(SLUICE_NSEC_PER_SEC, SLUICE_RECOVERING, SLUICE_PPM_MIN));
	SLUICE_LOAD_OR_FAIL(s, o);

	V4Source src;
	std::uint64_t passed_verdicts = 0;
	std::uint64_t t0 = mono_ns();
	for (std::uint32_t i = 0; i < kSources; i++) {
		src.set(ip4_plus(ip4("10.0.0.0"), i));
		RunResult r = s.run(src.frame);
		ASSERT_EQ(r.err, 0);
		passed_verdicts += r.retval == XDP_PASS;
	}
	std::uint64_t t1 = mono_ns();

	Counters c = s.counters();
	const std::uint64_t passed = c.packets(SLUICE_PASSED);
	std::printf("QUOTA rotating: %u sources, passed=%llu (bound %llu, half %llu) in %.0f ms\n", kSources,
		    (unsigned long long)passed, (unsigned long long)(kSlots * kL),
		    (unsigned long long)(kSlots * kL / 2), (t1 - t0) / 1e6);
	EXPECT_EQ(passed, passed_verdicts);
	EXPECT_EQ(passed + c.packets(SLUICE_DROP_RATE), kSources) << c.str();
	EXPECT_LE(passed, kSlots * kL);
	EXPECT_GT(passed, kSlots * kL / 2);
	// Every slot was drained: no whole token left anywhere.
	std::uint64_t now = dataplane_ns() + SLUICE_TIME_BIAS;
	std::uint64_t left = 0;
	for (std::uint64_t v : s.all_slots())
		left += sluice_tokens(v, now, o.config.cost_ns, kL);
	EXPECT_EQ(left, 0u);
}
