// standing_table.h - the standing table (bpf/standing.h, struct
// sluice_standing_set) as the control plane reads and writes it. The data
// plane's feeders grant into it; the daemon is its one writer on the host
// side (sock_diag's grants at start), through here.
#pragma once

#include "base/address.h"
#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <cstdint>
#include <span>

namespace sluice {

// One source's entry, as `sluicectl standing` shows it.
struct StandingRecord {
	bool live;                      // has standing now (false: no entry, or lapsed)
	sluice_standing_reason reason;  // why (the first grant's feeder); 0 without an entry
	uint64_t since_realtime_ns;     // the first grant, CLOCK_REALTIME (to a tick, 2^30 ns)
	uint64_t last_seen_realtime_ns; // the entry's stamp: last grant or shed frame
	uint64_t tokens;                // the standing bucket's whole tokens now, under the config
};

struct StandingOccupancy {
	uint64_t live;      // entries live now
	uint64_t capacity;  // sets x ways
	uint64_t full_sets; // sets whose every way is live: a grant there replaces a source
};

class StandingTable {
public:
	StandingTable(int fd, const sluice_settings &settings) : fd_(fd), settings_(settings) {}
	uint32_t sets() const { return settings_.standing_set_mask + 1; }

	// Grant every peer standing for `reason`, stamped now, as the feeders
	// do: the address masked to the configured prefix, its set read, the way
	// standing.h picks written (a new source's record and full bucket with
	// it, a live one refreshed). An address of neither family is refused
	// before any write; a failed write stops there (the grants before it
	// stay: each is a grant the kernel verified).
	Status grant(std::span<const Address> peers, sluice_standing_reason reason) const;
	// Has this address live standing now?
	Result<bool> has_standing(const Address &addr) const;
	// The entry of this address (masked as the program masks it); live
	// false and reason 0 when it has none.
	Result<StandingRecord> lookup(const Address &addr, const sluice_config &cfg) const;
	// Entries live now, over the whole table.
	Result<uint64_t> live_entries() const;
	Result<StandingOccupancy> occupancy() const;
	// The sets [first, first + count) alone (clipped to the table; capacity
	// is that part's): the daemon counts the table a part per period.
	Result<StandingOccupancy> occupancy(uint32_t first, uint32_t count) const;

private:
	int fd_;
	sluice_settings settings_;
};

} // namespace sluice
