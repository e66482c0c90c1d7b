// class_fixture.h - the class maps of a loaded program written raw, as
// sluice_abi.h lays them out (records, port blocks, class prefix entries,
// per-class counters), and a class's slots computed on the host with the same
// headers: what the classes tests and the cost test put under the program
// without the control plane's compiler (logic/class_tables).
#pragma once

#include "fixture.h"
#include "bpf/class_match.h"

namespace sluice::test {

// A class record: rate (packets/s) and burst, the action, the prefixes, and
// optionally a byte budget (bytes/s, bytes) and a standing budget. The rate
// is 1/s unless asked: nothing refills within a test's runs, so counts are
// exact whatever the program's clock does meanwhile.
struct ClassSpec {
	std::uint64_t rate = 1, burst = 10;
	std::uint32_t action = SLUICE_CLASS_LIMIT;
	std::uint32_t v4_prefix = 32, v6_prefix = 64;
	std::uint64_t byte_rate = 0, byte_burst = 0;
	std::uint64_t standing_rate = 0, standing_burst = 0;
	const char *name = "c";
};

inline sluice_class make_class(const ClassSpec &c)
{
	sluice_class r{};
	r.cost_ns = (SLUICE_NSEC_PER_SEC + c.rate / 2) / c.rate;
	r.burst = c.burst;
	r.rate_pps = c.rate;
	r.action = c.action;
	r.v4_prefix = c.v4_prefix;
	r.v6_prefix = c.v6_prefix;
	if (c.byte_rate) {
		r.byte_cost_fp = ((unsigned __int128)SLUICE_NSEC_PER_SEC << SLUICE_BYTE_COST_SHIFT) / c.byte_rate;
		r.byte_burst_ns = (unsigned __int128)c.byte_burst * SLUICE_NSEC_PER_SEC / c.byte_rate;
		r.byte_rate = c.byte_rate;
		r.byte_burst = c.byte_burst;
	}
	if (c.standing_rate) {
		r.standing_cost_ns = (SLUICE_NSEC_PER_SEC + c.standing_rate / 2) / c.standing_rate;
		r.standing_burst = c.standing_burst;
		r.standing_rate_pps = c.standing_rate;
	}
	std::snprintf(r.name, sizeof(r.name), "%s", c.name);
	return r;
}

inline sluice_class_match match(std::uint32_t kinds, std::uint16_t lo, std::uint16_t hi, std::uint8_t id)
{
	sluice_class_match m{};
	m.lo = lo;
	m.hi = hi;
	m.kinds = std::uint8_t(kinds);
	m.class_id = id;
	return m;
}

inline constexpr std::uint32_t kAllKinds = (1u << SLUICE_L4_KINDS) - 1;

class ClassTables {
public:
	explicit ClassTables(Sluice &s) : s_(s) {}

	void set_class(std::uint32_t set, std::uint32_t id, const sluice_class &c)
	{
		std::uint32_t idx = sluice_class_index(set, id);
		check(bpf_map_update_elem(s_.map_fd(s_.skel()->maps.classes), &idx, &c, BPF_ANY), "classes");
	}
	sluice_class get_class(std::uint32_t set, std::uint32_t id) const
	{
		std::uint32_t idx = sluice_class_index(set, id);
		sluice_class c{};
		check(bpf_map_lookup_elem(s_.map_fd(s_.skel()->maps.classes), &idx, &c), "classes");
		return c;
	}
	// (kind, port) of set -> class id, the rest of its block kept.
	void set_port(std::uint32_t set, std::uint32_t kind, std::uint32_t port, std::uint8_t id)
	{
		int fd = s_.map_fd(s_.skel()->maps.port_classes);
		std::uint32_t idx = sluice_port_block_index(set, kind, port);
		sluice_port_block b{};
		check(bpf_map_lookup_elem(fd, &idx, &b), "port_classes");
		b.class_of[port % SLUICE_PORTS_PER_BLOCK] = id;
		check(bpf_map_update_elem(fd, &idx, &b, BPF_ANY), "port_classes");
	}
	void set_prefix(std::uint32_t set, const frames::Ip4 &a, std::uint32_t len,
			std::initializer_list<sluice_class_match> ms)
	{
		sluice_lpm_v4 k = Sluice::lpm_key(a, len, set);
		sluice_class_matches v = matches(ms);
		check(bpf_map_update_elem(s_.map_fd(s_.skel()->maps.class_v4), &k, &v, BPF_ANY), "class_v4");
	}
	void set_prefix(std::uint32_t set, const frames::Ip6 &a, std::uint32_t len,
			std::initializer_list<sluice_class_match> ms)
	{
		sluice_lpm_v6 k = Sluice::lpm_key(a, len, set);
		sluice_class_matches v = matches(ms);
		check(bpf_map_update_elem(s_.map_fd(s_.skel()->maps.class_v6), &k, &v, BPF_ANY), "class_v6");
	}
	// config.policy_flags, the rest of config kept.
	void set_flags(std::uint32_t flags)
	{
		sluice_config c = s_.config();
		c.policy_flags = flags;
		check(s_.set_config(c), "config");
	}

	// A class's counters, summed over the CPUs.
	Counters class_counters(std::uint32_t id) const
	{
		int ncpu = libbpf_num_possible_cpus();
		std::vector<sluice_counter> per(std::size_t(ncpu > 0 ? ncpu : 1));
		Counters out;
		for (std::uint32_t o = 0; o < SLUICE_OUTCOMES; o++) {
			std::uint32_t key = id * SLUICE_OUTCOMES + o;
			check(bpf_map_lookup_elem(s_.map_fd(s_.skel()->maps.class_counters), &key, per.data()),
			      "class_counters");
			for (const auto &c : per) {
				out.c[o].packets += c.packets;
				out.c[o].bytes += c.bytes;
			}
		}
		return out;
	}

	// The packet and byte slots of a source in class id (record c), as the program hashes them.
	std::uint64_t class_hash(const frames::Ip4 &a, std::uint32_t id, const sluice_class &c) const
	{
		sluice_source src = source_of(a);
		__u64 key[2];
		sluice_mask_prefixes(&src, 0, c.v4_prefix, c.v6_prefix);
		sluice_class_key(s_.options().key, id, key);
		return sluice_source_hash(key, &src, 0);
	}
	sluice_slot_pair class_slots(const frames::Ip4 &a, std::uint32_t id, const sluice_class &c) const
	{
		return sluice_slots_of(class_hash(a, id, c), s_.options().slots - 1, s_.options().one_choice);
	}
	sluice_slot_pair byte_slots(const frames::Ip4 &a, std::uint32_t id, const sluice_class &c) const
	{
		return sluice_slots_of(sluice_byte_hash(class_hash(a, id, c)), s_.options().slots - 1,
				       s_.options().one_choice);
	}

private:
	static sluice_class_matches matches(std::initializer_list<sluice_class_match> ms)
	{
		sluice_class_matches v{};
		for (const auto &m : ms)
			if (v.count < SLUICE_CLASS_MATCHES)
				v.m[v.count++] = m;
		return v;
	}
	static void check(int err, const char *what)
	{
		if (err)
			throw std::runtime_error(std::string("writing/reading ") + what + ": " + std::strerror(errno));
	}
	Sluice &s_;
};

} // namespace sluice::test
