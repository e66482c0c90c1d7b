// standing_table.h - the standing table (bpf/standing.h, struct
// sluice_standing_set) as the control plane reads and writes it. The data
// plane's feeders grant into it; the daemon is its one writer on the host
// side (sock_diag's grants at start), through here.
#pragma once

#include "base/address.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <cstdint>
#include <functional>
#include <vector>
#include <optional>
#include <span>

namespace sluice {

// One source's entry, as `sluicectl standing` shows it.
struct StandingRecord {
	bool live;                      // has standing now (false: no entry, or lapsed)
	sluice_standing_reason reason;  // why (the first grant's feeder); 0 without an entry
	uint64_t since_realtime_ns;     // the first grant, CLOCK_REALTIME (to a tick, 2^30 ns)
	uint64_t last_seen_realtime_ns; // the entry's stamp: last grant or shed frame
	uint64_t tokens;                // the standing bucket's whole tokens now, under the config
	uint16_t port;                  // 0: every frame; else UDP from this peer port alone (a UDP grant)
};

// A revoked source's penalty (struct sluice_penalty_set).
struct StandingPenalty {
	uint64_t until_realtime_ns; // when it may earn standing again (to a tick)
	uint32_t revocations;       // so far: its penalty doubled with each
};

// What revoke() did.
struct Revoked {
	bool had_standing;           // a live entry was emptied (false: only the penalty was written)
	Address source;              // as its record kept it (masked), or the address asked
	sluice_standing_reason reason; // the emptied entry's first grant, 0 without one
	uint32_t revocations;        // counting this one
	uint64_t until_realtime_ns;
};

// A standing source's entry as a scan of the table sees it.
struct StandingWay {
	uint32_t index;   // set x SLUICE_STANDING_WAYS + way: its place, fixed while it lives
	uint32_t fp;      // its fingerprint
	uint32_t seen;    // frames that reached its standing bucket, wrapping (sluice_abi.h)
	uint32_t reason;  // enum sluice_standing_reason of its strongest grant
	uint32_t proof;   // that reason's strength (bpf/standing.h: higher is stronger)
	bool handshake;   // that proof is a handshake the kernel verified (the strongest)
	Address source;   // as the grant recorded it (masked)
	uint32_t age;     // ticks (2^30 ns) since it was last stamped (a grant, or a shed frame)
	uint16_t port;    // 0: every frame; else UDP from this peer port alone
	uint64_t kept[2]; // the source as the record keeps it (sluice_standing_source's 16 bytes)
	uint32_t record;  // record[w]: its reason and its first grant's tick (sluice_standing_granted_after)
};

// The source a standing record keeps (sluice_standing_source's 16 bytes).
Address standing_source_address(const __u64 kept[2]);

struct StandingOccupancy {
	uint64_t live;      // entries live now
	uint64_t capacity;  // sets x ways
	uint64_t full_sets; // sets whose every way is live: a grant there replaces a source
};

// What carry_into() moved to a table under another hash key.
struct StandingCarry {
	uint64_t entries = 0;        // live entries written where the new key puts them
	uint64_t entries_lost = 0;   // entries that found their new set full of stronger or newer ones
	uint64_t penalties = 0;      // running penalties written where the new key puts them
	uint64_t penalties_lost = 0; // penalties without their source (written before it was kept), or
	                             // that found their new set full of later-ending ones
};

class StandingTable {
public:
	// penalty_fd: the standing_penalty map (-1: none; revoke and penalty
	// are then refused, as on pins of a build without it).
	StandingTable(int fd, const sluice_settings &settings, int penalty_fd = -1, int own_fd = -1,
		      int prefix_fd = -1)
		: fd_(fd), penalty_fd_(penalty_fd), own_fd_(own_fd), prefix_fd_(prefix_fd), settings_(settings)
	{
	}
	uint32_t sets() const { return settings_.standing_set_mask + 1; }

	// Grant every peer standing for `reason`, stamped now, as the feeders
	// do: the address masked to the configured prefix, its set read, the way
	// standing.h picks written (a new source's record and full bucket with
	// it, a live one refreshed). An address of neither family is refused
	// before any write; a failed write stops there (the grants before it
	// stay: each is a grant the kernel verified).
	// udp_port: the peer port a UDP grant holds for (0: every frame).
	Status grant(std::span<const Address> peers, sluice_standing_reason reason, uint16_t udp_port = 0) const;
	// Has this address live standing now?
	Result<bool> has_standing(const Address &addr) const;
	// The entry of this address (masked as the program masks it); live
	// false and reason 0 when it has none.
	Result<StandingRecord> lookup(const Address &addr, const sluice_config &cfg) const;
	// Every live entry, a set at a time, in set order (batched reads): the
	// daemon's measure of what each standing source asks, once a period.
	Status for_each_live(const std::function<void(const StandingWay &)> &fn) const;
	// Take the standing of the source in way `index` if it still holds
	// fingerprint `fp` (a checked write: the set is read, that way emptied,
	// written back), and write its penalty: penalty_s(revocations so far)
	// seconds in which no grant can give it standing again.
	Result<Revoked> revoke_way(uint32_t index, uint32_t fp, const std::function<double(uint32_t)> &penalty_s) const;
	// The same for an address (the operator's `sluicectl standing revoke`):
	// the penalty is written whether it has standing now or not.
	Result<Revoked> revoke(const Address &addr, const std::function<double(uint32_t)> &penalty_s) const;
	// The host's own addresses, which no feeder grants (own_addrs): the map
	// made to hold exactly these (at most SLUICE_OWN_ADDRS_MAX; more is an
	// input error, the map unchanged).
	Status set_own_addresses(std::span<const Address> own) const;
	// Its penalty, if one runs now.
	Result<std::optional<StandingPenalty>> penalty(const Address &addr) const;
	// Entries live now, over the whole table.
	Result<uint64_t> live_entries() const;
	Result<StandingOccupancy> occupancy() const;
	// The sets [first, first + count) alone (clipped to the table; capacity
	// is that part's): the daemon counts the table a part per period.
	Result<StandingOccupancy> occupancy(uint32_t first, uint32_t count) const;
	// The per-prefix quota's bit of a kept source (bpf/standing.h,
	// sluice_quota_bit, under this table's key and size).
	uint32_t quota_bit(const uint64_t kept[2]) const;
	// Empty way `index` if it still holds fingerprint fp, with no penalty
	// (a prefix over its quota gives up its excess; the source may earn
	// standing again). false: it held another source, or none, by then.
	Result<bool> evict_way(uint32_t index, uint32_t fp) const;
	// prefix_count as `counts` (one per way's bit, bpf/standing.h's
	// sluice_prefix_count words), written whole. Refused on pins without the
	// map, and for a span of another size (the map unchanged).
	Status set_prefix_counts(std::span<const uint32_t> counts) const;
	// prefix_count as the program reads it, every count, into `out` (of
	// the map's size, or refused).
	Status prefix_counts(std::span<uint32_t> out) const;
	// Every live entry and running penalty of this table written into `to`,
	// a table of the same sizes under another hash key (sluicectl rekey),
	// where `to`'s key puts them: each entry with its reason, first grant,
	// stamp, standing bucket and UDP port (its seen count from 0: the
	// governor's demand is a difference, and the entry's place is new), its
	// prefix counted in `to`'s prefix_count as a grant counts it; each
	// penalty with its end and revocations. A source `to` holds already is
	// left as it is, so a second call carries only what this table gained
	// since the first (the old feeders' grants while the programs change).
	Result<StandingCarry> carry_into(const StandingTable &to) const;

private:
	// One entry of another table (set `from`, way w) into this one.
	enum class Carried { written, present, evicting, lost };
	Result<Carried> carry_entry(const sluice_standing_set &from, uint32_t w, uint32_t stamp) const;
	Status for_each_set(uint32_t first, uint32_t count,
			    const std::function<void(uint32_t, const sluice_standing_set &)> &fn) const;
	Result<Revoked> revoke_at(uint32_t set_idx, uint32_t fp, const Address *asked,
				  const std::function<double(uint32_t)> &penalty_s) const;
	int fd_;
	int penalty_fd_;
	int own_fd_;
	int prefix_fd_;
	sluice_settings settings_;
};

} // namespace sluice
