#include "bpf/standing_table.h"

#include "base/clock.h"
#include "clock/dataplane_clock.h"
#include "bpf/bucket.h"
#include "bpf/source_key.h"
#include "bpf/standing.h"
#include "logic/source.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <cmath>
#include <cstring>
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

// The address a grant records for `addr`: masked as the program masks it,
// in sluice_standing_source's 16 bytes.
void kept_source_of(const sluice_settings &s, const Address &addr, __u64 out[2])
{
	const SourceSlots ss = source_slots(s, addr);
	sluice_source src{};
	const bool v6 = addr.family == Family::v6;
	std::memcpy(src.w, ss.source.addr.bytes.data(), v6 ? 16 : 4);
	sluice_standing_source(src.w[0], src.w[1], v6, out);
}

// The way of a penalty set that a penalty of fp is written to: fp's own,
// else a free one (empty, or its penalty over), else the one whose penalty
// ends soonest, if that is within `ends_within` ticks of now (UINT32_MAX:
// whichever); -1 when none is.
int penalty_way(const sluice_penalty_set &pen, uint32_t fp, uint32_t stamp, uint32_t ends_within)
{
	for (int i = 0; i < SLUICE_STANDING_WAYS; i++)
		if (sluice_standing_entry_fp(pen.way[i]) == fp)
			return i;
	for (int i = 0; i < SLUICE_STANDING_WAYS; i++)
		if (sluice_standing_entry_fp(pen.way[i]) == 0 || !sluice_penalty_runs(pen.way[i], stamp))
			return i;
	int soonest = -1;
	uint32_t soonest_left = ends_within;
	for (int i = 0; i < SLUICE_STANDING_WAYS; i++)
		if (const uint32_t left = (sluice_penalty_until(pen.way[i]) - stamp) & SLUICE_PENALTY_TICK_MASK;
		    left < soonest_left) { // a tick count is 24 bits: below UINT32_MAX
			soonest_left = left;
			soonest = i;
		}
	return soonest;
}

} // namespace

Address standing_source_address(const __u64 kept[2])
{
	std::array<uint8_t, 16> b{};
	std::memcpy(b.data(), kept, 16);
	Address a;
	static constexpr std::array<uint8_t, 12> kMapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (std::equal(kMapped.begin(), kMapped.end(), b.begin())) {
		a.family = Family::v4;
		std::copy(b.begin() + 12, b.end(), a.bytes.begin());
	} else {
		a.family = Family::v6;
		a.bytes = b;
	}
	return a;
}

Status StandingTable::grant(std::span<const Address> peers, sluice_standing_reason reason, uint16_t udp_port) const
{
	for (const auto &p : peers)
		if (p.family != Family::v4 && p.family != Family::v6)
			return invalid("standing: address of unknown family " + std::to_string(static_cast<int>(p.family)));
	const uint32_t lapse = settings_.standing_lapse_ticks;
	// One reading for the batch (the clock probe runs a program a reading).
	const uint32_t stamp = sluice_standing_stamp(dataplane_now());
	for (const auto &p : peers) {
		uint64_t hash = source_hash(settings_, p);
		uint32_t idx = sluice_standing_set_of(hash, settings_.standing_set_mask);
		sluice_standing_set set{};
		if (int err = bpf_map_lookup_elem(fd_, &idx, &set); err)
			return fail_errno("reading standing set " + std::to_string(idx));
		// as the feeders: never an address that cannot be a remote peer
		const auto word = [&p](int i) {
			return uint32_t(p.bytes[i]) << 24 | uint32_t(p.bytes[i + 1]) << 16 | uint32_t(p.bytes[i + 2]) << 8 |
			       p.bytes[i + 3];
		};
		if (p.family == Family::v4 ? !sluice_v4_peer(p.bytes[0])
					   : !sluice_v6_peer(word(0), (word(4) | word(8)) == 0, word(12)))
			continue;
		__u64 kept[2];
		kept_source_of(settings_, p, kept);
		if (own_fd_ >= 0) {
			// as the feeders: never one of the host's own addresses
			sluice_source raw{};
			const bool v6 = p.family == Family::v6;
			std::memcpy(raw.w, p.bytes.data(), v6 ? 16 : 4);
			sluice_addr16 k{};
			uint8_t v = 0;
			sluice_standing_source(raw.w[0], raw.w[1], v6, k.w);
			if (bpf_map_lookup_elem(own_fd_, &k, &v) == 0)
				continue;
		}
		if (penalty_fd_ >= 0) {
			// as the program's sluice_grant: never while its penalty runs
			uint32_t pidx = sluice_standing_set_of(hash, settings_.penalty_set_mask);
			sluice_penalty_set pen{};
			if (int err = bpf_map_lookup_elem(penalty_fd_, &pidx, &pen); err)
				return fail_errno("reading penalty set " + std::to_string(pidx));
			if (sluice_penalized(&pen, sluice_standing_fingerprint(hash), stamp))
				continue;
		}
		if (sluice_standing_grant_from(&set, sluice_standing_fingerprint(hash), stamp, lapse, reason, kept[0],
					       kept[1], udp_port) < 0)
			continue; // every way holds a stronger proof
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
		return StandingRecord{false, sluice_standing_reason(0), 0, 0, 0, 0};
	const uint64_t entry = set.way[w];
	const uint32_t record = set.record[w];
	StandingRecord r{};
	r.live = sluice_standing_live(entry, stamp, settings_.standing_lapse_ticks);
	r.reason = sluice_standing_reason(sluice_standing_record_reason(record));
	r.since_realtime_ns = realtime_ticks_ago(sluice_standing_record_age(record, stamp));
	r.last_seen_realtime_ns = realtime_ticks_ago(sluice_standing_age(entry, stamp));
	r.tokens = sluice_tokens(set.empty_at[w], now, cfg.standing_cost_ns, cfg.standing_burst);
	r.port = set.port[w];
	return r;
}

Result<StandingOccupancy> StandingTable::occupancy() const
{
	return occupancy(0, sets());
}

Status StandingTable::for_each_set(uint32_t first_set, uint32_t count,
				   const std::function<void(uint32_t, const sluice_standing_set &)> &fn) const
{
	const uint32_t end = first_set < sets() ? first_set + std::min(count, sets() - first_set) : first_set;
	// Batched reads, a chunk of sets per syscall: one lookup per set took
	// 50 ms a status call at the default 65,536 sets. 256 sets (80 KiB) is
	// under malloc's mmap threshold: a chunk mapped and unmapped the first
	// time raises the threshold, so the next count took it from the heap
	// and the daemon's resident memory grew by as much once, in the middle
	// of a flood (tests/netns/test_e2e.py's bound on that growth caught it).
	constexpr uint32_t kChunk = 256;
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
				fn(i, set);
			}
			continue;
		}
		for (uint32_t i = 0; i < n; i++)
			fn(first + i, chunk[i]);
	}
	return {};
}

// One live way as a scan hands it on.
static StandingWay way_of(const sluice_standing_set &set, uint32_t idx, uint32_t w, uint32_t stamp)
{
	StandingWay out{idx * SLUICE_STANDING_WAYS + w, sluice_standing_entry_fp(set.way[w]), set.seen[w],
			sluice_standing_record_reason(set.record[w]),
			sluice_standing_proof(sluice_standing_record_reason(set.record[w])),
			sluice_standing_proof(sluice_standing_record_reason(set.record[w])) == SLUICE_PROOF_HANDSHAKE,
			standing_source_address(&set.source[2 * w]),
			sluice_standing_age(set.way[w], stamp), set.port[w], {set.source[2 * w], set.source[2 * w + 1]},
			set.record[w]};
	return out;
}

Result<StandingOccupancy> StandingTable::occupancy(uint32_t first_set, uint32_t count) const
{
	const uint32_t end = first_set < sets() ? first_set + std::min(count, sets() - first_set) : first_set;
	const uint32_t stamp = sluice_standing_stamp(dataplane_now());
	StandingOccupancy o{0, uint64_t(end - first_set) * SLUICE_STANDING_WAYS, 0};
	auto ok = for_each_set(first_set, count, [&](uint32_t idx, const sluice_standing_set &set) {
		uint32_t live = 0;
		for (uint32_t w = 0; w < SLUICE_STANDING_WAYS; w++) {
			if (!sluice_standing_live(set.way[w], stamp, settings_.standing_lapse_ticks))
				continue;
			live++;
		}
		o.live += live;
		o.full_sets += live == SLUICE_STANDING_WAYS;
	});
	if (!ok)
		return std::unexpected(ok.error());
	return o;
}

Status StandingTable::for_each_live(const std::function<void(const StandingWay &)> &fn) const
{
	const uint32_t stamp = sluice_standing_stamp(dataplane_now());
	return for_each_set(0, sets(), [&](uint32_t idx, const sluice_standing_set &set) {
		for (uint32_t w = 0; w < SLUICE_STANDING_WAYS; w++) {
			if (!sluice_standing_live(set.way[w], stamp, settings_.standing_lapse_ticks))
				continue;
			fn(way_of(set, idx, w, stamp));
		}
	});
}

Result<Revoked> StandingTable::revoke_at(uint32_t set_idx, uint32_t fp, const Address *asked,
					 const std::function<double(uint32_t)> &penalty_s) const
{
	if (penalty_fd_ < 0)
		return refused("standing: these pins have no standing_penalty map (made by an older build)");
	if (set_idx >= sets())
		return invalid("standing: set " + std::to_string(set_idx) + " is outside the table's " +
			       std::to_string(sets()));
	const uint32_t stamp = sluice_standing_stamp(dataplane_now());
	Revoked r{false, asked ? *asked : Address{}, sluice_standing_reason(0), 0, 0};
	sluice_standing_set set{};
	if (int err = bpf_map_lookup_elem(fd_, &set_idx, &set); err)
		return fail_errno("reading standing set " + std::to_string(set_idx));
	int w = sluice_standing_find(&set, fp, stamp, settings_.standing_lapse_ticks);
	if (w >= 0) {
		r.had_standing = true;
		r.reason = sluice_standing_reason(sluice_standing_record_reason(set.record[w]));
		if (!asked)
			r.source = standing_source_address(&set.source[2 * w]);
		// (A frame's refresh of this way between the read and the write is
		// lost with it: the entry is meant to go. The set is written whole,
		// as by grant(): the other ways' standing buckets and seen counts
		// lose what the frames of that instant paid and counted.)
		set.way[w] = 0;
		if (int err = bpf_map_update_elem(fd_, &set_idx, &set, BPF_EXIST); err)
			return fail_errno("writing standing set " + std::to_string(set_idx));
	}
	// The penalty: this fingerprint's way, else an empty one or one whose
	// penalty ended, else the one that ends soonest.
	const uint32_t pidx = set_idx & settings_.penalty_set_mask;
	sluice_penalty_set pen{};
	if (int err = bpf_map_lookup_elem(penalty_fd_, &pidx, &pen); err)
		return fail_errno("reading penalty set " + std::to_string(pidx));
	const int pw = penalty_way(pen, fp, stamp, UINT32_MAX);
	const uint32_t before =
		sluice_standing_entry_fp(pen.way[pw]) == fp ? sluice_penalty_revocations(pen.way[pw]) : 0;
	// The source it bars, kept so that a new hash key carries the penalty
	// (none when a way was revoked after its entry had gone: rare, and that
	// penalty then ends with the key).
	pen.source[2 * pw] = pen.source[2 * pw + 1] = 0;
	if (r.source.family == Family::v4 || r.source.family == Family::v6)
		kept_source_of(settings_, r.source, &pen.source[2 * pw]);
	const double seconds = penalty_s(before);
	const uint32_t ticks = static_cast<uint32_t>(
		std::ceil(seconds * double(SLUICE_NSEC_PER_SEC) / double(1ull << SLUICE_STANDING_TICK_SHIFT)));
	pen.way[pw] = sluice_penalty_entry(fp, stamp + std::max<uint32_t>(ticks, 1), before + 1);
	if (int err = bpf_map_update_elem(penalty_fd_, &pidx, &pen, BPF_EXIST); err)
		return fail_errno("writing penalty set " + std::to_string(pidx));
	r.revocations = sluice_penalty_revocations(pen.way[pw]);
	r.until_realtime_ns = realtime_ns() + (uint64_t(std::max<uint32_t>(ticks, 1)) << SLUICE_STANDING_TICK_SHIFT);
	return r;
}

uint32_t StandingTable::quota_bit(const uint64_t kept[2]) const
{
	const __u64 key[2] = {settings_.hash_key[0], settings_.hash_key[1]};
	return sluice_quota_bit(key, kept[0], kept[1], settings_.standing_set_mask);
}

Result<StandingTable::Carried> StandingTable::carry_entry(const sluice_standing_set &from, uint32_t w, uint32_t stamp) const
{
	const Address addr = standing_source_address(&from.source[2 * w]);
	const uint64_t hash = source_hash(settings_, addr);
	const uint32_t idx = sluice_standing_set_of(hash, settings_.standing_set_mask);
	const uint32_t fp = sluice_standing_fingerprint(hash);
	sluice_standing_set set{};
	if (int err = bpf_map_lookup_elem(fd_, &idx, &set); err)
		return fail_errno("reading standing set " + std::to_string(idx));
	if (sluice_standing_way_of(&set, fp) >= 0)
		return Carried::present; // carried already (or granted here since)
	const uint32_t reason = sluice_standing_record_reason(from.record[w]);
	const uint32_t proof = sluice_standing_proof(reason);
	const int v = sluice_standing_victim(&set, fp, stamp, settings_.standing_lapse_ticks, proof);
	if (v < 0)
		return Carried::lost;
	// A live way given up here is a carried source lost, as a grant into a
	// full set gives up its weakest.
	const bool evicts = sluice_standing_live(set.way[v], stamp, settings_.standing_lapse_ticks);
	set.way[v] = sluice_standing_entry(fp, uint32_t(from.way[w]));
	set.empty_at[v] = from.empty_at[w];
	set.record[v] = from.record[w];
	set.seen[v] = 0;
	set.source[2 * v] = from.source[2 * w];
	set.source[2 * v + 1] = from.source[2 * w + 1];
	set.port[v] = from.port[w];
	if (int err = bpf_map_update_elem(fd_, &idx, &set, BPF_EXIST); err)
		return fail_errno("writing standing set " + std::to_string(idx));
	if (prefix_fd_ >= 0) {
		// counted as the program counts a grant (standing_path.bpf.h)
		const __u64 key[2] = {settings_.hash_key[0], settings_.hash_key[1]};
		uint32_t bit = sluice_quota_bit(key, from.source[2 * w], from.source[2 * w + 1], settings_.standing_set_mask);
		uint32_t c = 0;
		if (bpf_map_lookup_elem(prefix_fd_, &bit, &c) == 0) {
			c = sluice_prefix_count((c & SLUICE_QUOTA_COUNT_MASK) + 1,
						(c >> SLUICE_QUOTA_HANDSHAKE_SHIFT) + (proof == SLUICE_PROOF_HANDSHAKE));
			if (bpf_map_update_elem(prefix_fd_, &bit, &c, BPF_EXIST))
				return fail_errno("writing prefix_count " + std::to_string(bit));
		}
	}
	return evicts ? Carried::evicting : Carried::written;
}

Result<StandingCarry> StandingTable::carry_into(const StandingTable &to) const
{
	if (to.sets() != sets() || to.settings_.penalty_set_mask != settings_.penalty_set_mask)
		return invalid("standing: carrying a table of " + std::to_string(sets()) + " sets into one of " +
			       std::to_string(to.sets()));
	StandingCarry c;
	const uint32_t stamp = sluice_standing_stamp(dataplane_now());
	Status failed;
	auto ok = for_each_set(0, sets(), [&](uint32_t, const sluice_standing_set &set) {
		for (uint32_t w = 0; w < SLUICE_STANDING_WAYS && failed; w++) {
			if (!sluice_standing_live(set.way[w], stamp, settings_.standing_lapse_ticks))
				continue;
			auto r = to.carry_entry(set, w, stamp);
			if (!r) {
				failed = std::unexpected(r.error());
				break;
			}
			c.entries += *r == Carried::written || *r == Carried::evicting;
			c.entries_lost += *r == Carried::lost || *r == Carried::evicting;
		}
	});
	if (!ok)
		return std::unexpected(ok.error());
	if (!failed)
		return std::unexpected(failed.error());
	if (penalty_fd_ < 0 || to.penalty_fd_ < 0)
		return c;
	for (uint32_t p = 0; p <= settings_.penalty_set_mask; p++) {
		sluice_penalty_set pen{};
		if (int err = bpf_map_lookup_elem(penalty_fd_, &p, &pen); err)
			return fail_errno("reading penalty set " + std::to_string(p));
		for (uint32_t w = 0; w < SLUICE_STANDING_WAYS; w++) {
			const uint64_t e = pen.way[w];
			if (sluice_standing_entry_fp(e) == 0 || !sluice_penalty_runs(e, stamp))
				continue;
			if ((pen.source[2 * w] | pen.source[2 * w + 1]) == 0) {
				c.penalties_lost++;
				continue;
			}
			const uint64_t hash = source_hash(to.settings_, standing_source_address(&pen.source[2 * w]));
			const uint32_t pidx = sluice_standing_set_of(hash, to.settings_.penalty_set_mask);
			const uint32_t fp = sluice_standing_fingerprint(hash);
			sluice_penalty_set dst{};
			if (int err = bpf_map_lookup_elem(to.penalty_fd_, &pidx, &dst); err)
				return fail_errno("reading penalty set " + std::to_string(pidx));
			// carried already; else the way revoke_at would choose, but
			// displacing only a penalty that ends before this one
			if (std::any_of(std::begin(dst.way), std::end(dst.way),
					[&](uint64_t d) { return sluice_standing_entry_fp(d) == fp; }))
				continue;
			const int dw = penalty_way(dst, fp, stamp,
						   (sluice_penalty_until(e) - stamp) & SLUICE_PENALTY_TICK_MASK);
			if (dw < 0) {
				c.penalties_lost++;
				continue;
			}
			if (sluice_standing_entry_fp(dst.way[dw]) != 0 && sluice_penalty_runs(dst.way[dw], stamp))
				c.penalties_lost++; // the one it displaces
			dst.way[dw] = sluice_penalty_entry(fp, sluice_penalty_until(e), sluice_penalty_revocations(e));
			dst.source[2 * dw] = pen.source[2 * w];
			dst.source[2 * dw + 1] = pen.source[2 * w + 1];
			if (int err = bpf_map_update_elem(to.penalty_fd_, &pidx, &dst, BPF_EXIST); err)
				return fail_errno("writing penalty set " + std::to_string(pidx));
			c.penalties++;
		}
	}
	return c;
}

Result<bool> StandingTable::evict_way(uint32_t index, uint32_t fp) const
{
	const uint32_t set_idx = index / SLUICE_STANDING_WAYS, w = index % SLUICE_STANDING_WAYS;
	if (set_idx >= sets())
		return invalid("standing: set " + std::to_string(set_idx) + " is outside the table's " +
			       std::to_string(sets()));
	sluice_standing_set set{};
	if (int err = bpf_map_lookup_elem(fd_, &set_idx, &set); err)
		return fail_errno("reading standing set " + std::to_string(set_idx));
	if (sluice_standing_entry_fp(set.way[w]) != fp)
		return false;
	// (Written whole, as revoke's: see there.)
	set.way[w] = 0;
	if (int err = bpf_map_update_elem(fd_, &set_idx, &set, BPF_EXIST); err)
		return fail_errno("writing standing set " + std::to_string(set_idx));
	return true;
}

namespace {
constexpr uint32_t kCountChunk = 4096; // counts a batch call moves (its keys: 16 KiB of stack)
} // namespace

Status StandingTable::set_prefix_counts(std::span<const uint32_t> counts) const
{
	if (prefix_fd_ < 0)
		return refused("standing: these pins have no prefix_count map (made by an older build)");
	const size_t n = size_t(sets()) * SLUICE_STANDING_WAYS;
	if (counts.size() != n)
		return invalid("standing: " + std::to_string(counts.size()) + " prefix counts for a map of " +
			       std::to_string(n));
	std::array<uint32_t, kCountChunk> keys;
	for (uint32_t first = 0; first < n; first += kCountChunk) {
		uint32_t count = uint32_t(std::min<size_t>(kCountChunk, n - first));
		for (uint32_t k = 0; k < count; k++)
			keys[k] = first + k;
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		if (int err = bpf_map_update_batch(prefix_fd_, keys.data(), counts.data() + first, &count, &opts); err) {
			if (err != -EINVAL && err != -EOPNOTSUPP && err != -524 /* ENOTSUPP */)
				return fail_bpf(err, "writing prefix_count from " + std::to_string(first));
			// Kernels without batch updates: one count at a time.
			for (uint32_t k = 0; k < uint32_t(std::min<size_t>(kCountChunk, n - first)); k++)
				if (bpf_map_update_elem(prefix_fd_, &keys[k], &counts[first + k], BPF_EXIST))
					return fail_errno("writing prefix_count " + std::to_string(first + k));
		}
	}
	return {};
}

Status StandingTable::prefix_counts(std::span<uint32_t> out) const
{
	if (prefix_fd_ < 0)
		return refused("standing: these pins have no prefix_count map (made by an older build)");
	const size_t n = size_t(sets()) * SLUICE_STANDING_WAYS;
	if (out.size() != n)
		return invalid("standing: room for " + std::to_string(out.size()) + " prefix counts, the map has " +
			       std::to_string(n));
	std::array<uint32_t, kCountChunk> keys;
	for (uint32_t first = 0; first < n; first += kCountChunk) {
		uint32_t count = uint32_t(std::min<size_t>(kCountChunk, n - first)), out_batch = 0;
		uint32_t in_batch = first - 1; // array batches resume after in_batch
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		int err = bpf_map_lookup_batch(prefix_fd_, first == 0 ? nullptr : &in_batch, &out_batch, keys.data(),
					       out.data() + first, &count, &opts);
		if (err && err != -ENOENT) {
			// Kernels without batch ops: one count at a time.
			for (uint32_t i = first; i < first + uint32_t(std::min<size_t>(kCountChunk, n - first)); i++)
				if (bpf_map_lookup_elem(prefix_fd_, &i, &out[i]))
					return fail_errno("reading prefix_count " + std::to_string(i));
		}
	}
	return {};
}

Result<Revoked> StandingTable::revoke_way(uint32_t index, uint32_t fp,
					  const std::function<double(uint32_t)> &penalty_s) const
{
	return revoke_at(index / SLUICE_STANDING_WAYS, fp, nullptr, penalty_s);
}

Result<Revoked> StandingTable::revoke(const Address &addr, const std::function<double(uint32_t)> &penalty_s) const
{
	if (addr.family != Family::v4 && addr.family != Family::v6)
		return invalid("standing: address of unknown family " + std::to_string(static_cast<int>(addr.family)));
	const uint64_t hash = source_hash(settings_, addr);
	Address masked = source_slots(settings_, addr).source.addr;
	return revoke_at(sluice_standing_set_of(hash, settings_.standing_set_mask), sluice_standing_fingerprint(hash),
			 &masked, penalty_s);
}

Status StandingTable::set_own_addresses(std::span<const Address> own) const
{
	if (own_fd_ < 0)
		return refused("standing: these pins have no own_addrs map (made by an older build)");
	if (own.size() > SLUICE_OWN_ADDRS_MAX)
		return invalid("standing: " + std::to_string(own.size()) + " own addresses, the map holds " +
			       std::to_string(SLUICE_OWN_ADDRS_MAX));
	std::vector<sluice_addr16> want;
	for (const auto &a : own) {
		sluice_source src{};
		const bool v6 = a.family == Family::v6;
		std::memcpy(src.w, a.bytes.data(), v6 ? 16 : 4);
		sluice_addr16 k{};
		sluice_standing_source(src.w[0], src.w[1], v6, k.w);
		want.push_back(k);
	}
	auto same = [](const sluice_addr16 &a, const sluice_addr16 &b) { return a.w[0] == b.w[0] && a.w[1] == b.w[1]; };
	// What is there and no longer wanted goes first (the map is no bigger
	// than the addresses), then every wanted one is written.
	std::vector<sluice_addr16> stale;
	sluice_addr16 key{}, next{};
	for (void *at = nullptr; bpf_map_get_next_key(own_fd_, at, &next) == 0; at = &key) {
		key = next;
		if (std::none_of(want.begin(), want.end(), [&](const sluice_addr16 &w) { return same(w, key); }))
			stale.push_back(key);
	}
	for (const auto &k : stale)
		if (bpf_map_delete_elem(own_fd_, &k) != 0 && errno != ENOENT)
			return fail_errno("removing an old own address");
	const uint8_t one = 1;
	for (const auto &k : want)
		if (bpf_map_update_elem(own_fd_, &k, &one, BPF_ANY) != 0)
			return fail_errno("writing an own address");
	return {};
}

Result<std::optional<StandingPenalty>> StandingTable::penalty(const Address &addr) const
{
	if (penalty_fd_ < 0)
		return std::optional<StandingPenalty>{};
	const uint64_t hash = source_hash(settings_, addr);
	const uint32_t pidx = sluice_standing_set_of(hash, settings_.penalty_set_mask);
	const uint32_t fp = sluice_standing_fingerprint(hash);
	const uint32_t stamp = sluice_standing_stamp(dataplane_now());
	sluice_penalty_set pen{};
	if (int err = bpf_map_lookup_elem(penalty_fd_, &pidx, &pen); err)
		return fail_errno("reading penalty set " + std::to_string(pidx));
	for (uint64_t e : pen.way)
		if (sluice_standing_entry_fp(e) == fp && sluice_penalty_runs(e, stamp)) {
			uint32_t left = (sluice_penalty_until(e) - stamp) & SLUICE_PENALTY_TICK_MASK;
			return std::optional<StandingPenalty>{StandingPenalty{
				realtime_ns() + (uint64_t(left) << SLUICE_STANDING_TICK_SHIFT), sluice_penalty_revocations(e)}};
		}
	return std::optional<StandingPenalty>{};
}

Result<uint64_t> StandingTable::live_entries() const
{
	auto o = occupancy();
	if (!o)
		return std::unexpected(o.error());
	return o->live;
}

} // namespace sluice
