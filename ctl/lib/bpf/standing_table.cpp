#include "bpf/standing_table.h"

#include "base/clock.h"
#include "bpf/bucket.h"
#include "bpf/standing.h"
#include "logic/source.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sluice {

namespace {

// CLOCK_REALTIME of a stamp `age` ticks before now: to a tick (2^30 ns), as
// precise as the table keeps time.
uint64_t realtime_ticks_ago(uint32_t age)
{
	uint64_t back = uint64_t(age) << SLUICE_STANDING_TICK_SHIFT;
	uint64_t now = realtime_ns();
	return back < now ? now - back : 0;
}

} // namespace

Status StandingTable::grant(std::span<const Address> peers, sluice_standing_reason reason) const
{
	for (const auto &p : peers)
		if (p.family != Family::v4 && p.family != Family::v6)
			return invalid("standing: address of unknown family " + std::to_string(static_cast<int>(p.family)));
	const uint32_t lapse = settings_.standing_lapse_ticks;
	for (const auto &p : peers) {
		uint64_t hash = source_hash(settings_, p);
		uint32_t idx = sluice_standing_set_of(hash, settings_.standing_set_mask);
		sluice_standing_set set{};
		if (int err = bpf_map_lookup_elem(fd_, &idx, &set); err)
			return fail_errno("reading standing set " + std::to_string(idx));
		uint32_t stamp = sluice_standing_stamp(dataplane_now());
		sluice_standing_grant(&set, sluice_standing_fingerprint(hash), stamp, lapse, reason);
		// The whole set is written back: a feeder's grant into the same set
		// between the read and this write is lost, as when two CPUs grant
		// at once (standing.h), and the set's standing buckets lose what
		// they paid meanwhile (the frames of that instant); the next
		// connection of that peer grants again.
		if (int err = bpf_map_update_elem(fd_, &idx, &set, BPF_EXIST); err)
			return fail_errno("writing standing set " + std::to_string(idx));
	}
	return {};
}

Result<bool> StandingTable::has_standing(const Address &addr) const
{
	uint64_t hash = source_hash(settings_, addr);
	uint32_t idx = sluice_standing_set_of(hash, settings_.standing_set_mask);
	sluice_standing_set set{};
	if (int err = bpf_map_lookup_elem(fd_, &idx, &set); err)
		return fail_errno("reading standing set " + std::to_string(idx));
	return sluice_standing_find(&set, sluice_standing_fingerprint(hash), sluice_standing_stamp(dataplane_now()),
				    settings_.standing_lapse_ticks) >= 0;
}

Result<StandingRecord> StandingTable::lookup(const Address &addr, const sluice_config &cfg) const
{
	if (addr.family != Family::v4 && addr.family != Family::v6)
		return invalid("standing: address of unknown family " + std::to_string(static_cast<int>(addr.family)));
	uint64_t hash = source_hash(settings_, addr);
	uint32_t idx = sluice_standing_set_of(hash, settings_.standing_set_mask);
	sluice_standing_set set{};
	if (int err = bpf_map_lookup_elem(fd_, &idx, &set); err)
		return fail_errno("reading standing set " + std::to_string(idx));
	const uint64_t now = dataplane_now();
	const uint32_t stamp = sluice_standing_stamp(now);
	const uint32_t fp = sluice_standing_fingerprint(hash);
	// The live entry if there is one, else a lapsed one of this fingerprint
	// (a set never holds one twice while it is live: standing.h).
	int w = sluice_standing_find(&set, fp, stamp, settings_.standing_lapse_ticks);
	for (int i = 0; w < 0 && i < SLUICE_STANDING_WAYS; i++)
		if (sluice_standing_entry_fp(set.way[i]) == fp)
			w = i;
	if (w < 0)
		return StandingRecord{false, sluice_standing_reason(0), 0, 0, 0};
	const uint64_t entry = set.way[w];
	const uint32_t record = set.record[w];
	StandingRecord r{};
	r.live = sluice_standing_live(entry, stamp, settings_.standing_lapse_ticks);
	r.reason = sluice_standing_reason(sluice_standing_record_reason(record));
	r.since_realtime_ns = realtime_ticks_ago(sluice_standing_record_age(record, stamp));
	r.last_seen_realtime_ns = realtime_ticks_ago(sluice_standing_age(entry, stamp));
	r.tokens = sluice_tokens(set.empty_at[w], now, cfg.standing_cost_ns, cfg.standing_burst);
	return r;
}

Result<StandingOccupancy> StandingTable::occupancy() const
{
	return occupancy(0, sets());
}

Result<StandingOccupancy> StandingTable::occupancy(uint32_t first_set, uint32_t count) const
{
	const uint32_t end = first_set < sets() ? first_set + std::min(count, sets() - first_set) : first_set;
	const uint32_t stamp = sluice_standing_stamp(dataplane_now());
	StandingOccupancy o{0, uint64_t(end - first_set) * SLUICE_STANDING_WAYS, 0};
	auto tally = [&](const sluice_standing_set &set) {
		uint32_t live = 0;
		for (uint64_t e : set.way)
			live += sluice_standing_live(e, stamp, settings_.standing_lapse_ticks);
		o.live += live;
		o.full_sets += live == SLUICE_STANDING_WAYS;
	};
	// Batched reads, a chunk of sets per syscall: one lookup per set took
	// 50 ms a status call at the default 65,536 sets. 512 sets (80 KiB) is
	// under malloc's mmap threshold: a chunk of 4,096 (640 KiB) was mapped
	// and unmapped the first time, which raises the threshold, so the next
	// count took it from the heap and the daemon's resident memory grew by
	// as much once, in the middle of a flood (tests/netns/test_e2e.py's
	// bound on that growth caught it).
	constexpr uint32_t kChunk = 512;
	std::vector<uint32_t> keys(kChunk);
	std::vector<sluice_standing_set> chunk(kChunk);
	for (uint32_t first = first_set; first < end; first += kChunk) {
		uint32_t n = std::min(kChunk, end - first), out_batch = 0;
		// Array batch lookups resume after in_batch; the first call starts
		// at the beginning.
		uint32_t in_batch = first - 1;
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		int err = bpf_map_lookup_batch(fd_, first == 0 ? nullptr : &in_batch, &out_batch, keys.data(),
					       chunk.data(), &n, &opts);
		if (err && err != -ENOENT) {
			// Kernels without batch ops: one lookup per set.
			for (uint32_t i = first; i < first + std::min(kChunk, end - first); i++) {
				sluice_standing_set set{};
				if (int e = bpf_map_lookup_elem(fd_, &i, &set); e)
					return fail_errno("reading standing set " + std::to_string(i));
				tally(set);
			}
			continue;
		}
		for (uint32_t i = 0; i < n; i++)
			tally(chunk[i]);
	}
	return o;
}

Result<uint64_t> StandingTable::live_entries() const
{
	auto o = occupancy();
	if (!o)
		return std::unexpected(o.error());
	return o->live;
}

} // namespace sluice
