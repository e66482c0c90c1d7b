// standing_support.h - the standing tests' view of the program's standing
// table: a source's hash and set as the program computes them (same headers,
// same key), the stamp it reads now, and entries written from the host.
#pragma once

#include "fixture.h"

#include "bpf/standing.h"

#include <stdexcept>

namespace sluice::test {

using frames::Ip4;
using frames::Ip6;

inline constexpr std::uint32_t kLapse = 64; // ticks of 2^30 ns, the fixture's default

inline std::uint64_t hash_of(const Sluice &s, const Ip4 &a)
{
	sluice_source src = source_of(a);
	src.w[0] = sluice_mask_v4(std::uint32_t(src.w[0]), s.options().v4_prefix);
	return sluice_source_hash(s.options().key, &src, 0);
}

inline std::uint64_t hash_of(const Sluice &s, const Ip6 &a)
{
	sluice_source src = source_of(a);
	sluice_mask_v6(&src, s.options().v6_prefix);
	return sluice_source_hash(s.options().key, &src, 1);
}

// The stamp the program reads now (its clock, biased).
inline std::uint32_t stamp_now()
{
	return sluice_standing_stamp(dataplane_ns() + SLUICE_TIME_BIAS);
}

struct Standing {
	const Sluice &s;

	int fd() const { return s.map_fd(s.skel()->maps.standing); }
	std::uint32_t set_of(std::uint64_t hash) const
	{
		return sluice_standing_set_of(hash, s.options().standing_sets - 1);
	}
	sluice_standing_set read(std::uint32_t idx) const
	{
		sluice_standing_set set{};
		if (bpf_map_lookup_elem(fd(), &idx, &set))
			throw std::runtime_error("standing lookup failed");
		return set;
	}
	void write(std::uint32_t idx, const sluice_standing_set &set) const
	{
		if (bpf_map_update_elem(fd(), &idx, &set, BPF_ANY))
			throw std::runtime_error("standing update failed");
	}
	// Put the entry (fp, stamp) in way `way` of the hash's set.
	void put(std::uint64_t hash, std::uint32_t fp, std::uint32_t stamp, int way = 0) const
	{
		sluice_standing_set set = read(set_of(hash));
		set.way[way] = sluice_standing_entry(fp, stamp);
		write(set_of(hash), set);
	}
	void grant(std::uint64_t hash, std::uint32_t stamp, int way = 0) const
	{
		put(hash, sluice_standing_fingerprint(hash), stamp, way);
	}
	// The way of the hash's set holding its fingerprint; -1 if none.
	int way_of(std::uint64_t hash) const
	{
		sluice_standing_set set = read(set_of(hash));
		for (int w = 0; w < SLUICE_STANDING_WAYS; w++)
			if (sluice_standing_entry_fp(set.way[w]) == sluice_standing_fingerprint(hash))
				return w;
		return -1;
	}
};

} // namespace sluice::test
