#include "bpf/maps.h"

#include "base/limits.h"
#include "clock/dataplane_clock.h"
#include "bpf/bucket.h"
#include "bpf/standing.h"
#include "logic/budgets.h"
#include "logic/source.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

namespace sluice {

namespace {

// The bits config.policy_flags may carry (sluice_abi.h).
constexpr uint32_t kPolicyFlags = SLUICE_LIST_ALLOW_V4 | SLUICE_LIST_ALLOW_V6 | SLUICE_LIST_DENY_V4 |
				  SLUICE_LIST_DENY_V6 | SLUICE_LIST_DENY_EXACT_V4 | SLUICE_LIST_DENY_EXACT_V6 |
				  SLUICE_LIST_ALLOW_EXACT_V4 | SLUICE_LIST_ALLOW_EXACT_V6 | SLUICE_CLASS_ANY |
				  SLUICE_POLICY_SET;
static_assert(kPolicyFlags == 0x80000fffu);

} // namespace

Result<uint64_t> cost_for_rate(uint64_t rate)
{
	if (auto ok = check_rate(rate, Voice::invariant); !ok)
		return std::unexpected(ok.error());
	return cost_ns_for_rate(rate);
}

Status validate_config(const sluice_config &c)
{
	if (auto ok = check_cost_ns(c.cost_ns); !ok)
		return ok;
	if (auto ok = check_burst(c.burst, Voice::invariant); !ok)
		return ok;
	if (c.breaker_state >= SLUICE_BREAKER_STATES)
		return refused("invariant breaker_state in {serving, shedding, recovering} violated: rejected state " +
			       std::to_string(c.breaker_state));
	if (auto ok = check_admission_ppm(c.admission_ppm, Voice::invariant); !ok)
		return ok;
	if (c.policy_flags & ~kPolicyFlags) {
		char known[16];
		std::snprintf(known, sizeof(known), "0x%08x", kPolicyFlags);
		return refused(std::string("invariant policy_flags within ") + known + " violated: rejected " +
			       std::to_string(c.policy_flags));
	}
	if (auto ok = check_cost_ns(c.standing_cost_ns, "standing_cost_ns"); !ok)
		return ok;
	if (auto ok = check_standing_burst(c.standing_burst, Voice::invariant); !ok)
		return ok;
	if (auto ok = check_per_cpu_bucket("cookie", c.cookie_cost_ns, c.cookie_burst); !ok)
		return ok;
	if (auto ok = check_cookie_dest_bucket(c.cookie_dest_cost_ns, c.cookie_dest_burst); !ok)
		return ok;
	if (c.cookie_mode >= SLUICE_COOKIE_MODES)
		return refused("invariant cookie_mode < " + std::to_string(SLUICE_COOKIE_MODES) +
			       " violated: rejected cookie_mode " + std::to_string(c.cookie_mode));
	if (auto ok = check_newcomer_bucket(c.newcomer_cost_ns, c.newcomer_burst); !ok)
		return ok;
	if (c.standing_share_cost_ns)
		if (auto ok = check_cost_ns(c.standing_share_cost_ns, "standing_share_cost_ns"); !ok)
			return ok;
	if (c.standing_newer_share_cost_ns)
		if (auto ok = check_cost_ns(c.standing_newer_share_cost_ns, "standing_newer_share_cost_ns"); !ok)
			return ok;
	if (c.standing_tenure_tick > SLUICE_STANDING_RECORD_TICK_MASK)
		return refused("invariant standing_tenure_tick < 2^28 violated: rejected " +
			       std::to_string(c.standing_tenure_tick));
	if (c.grant_cost_ns) {
		if (auto ok = check_cost_ns(c.grant_cost_ns, "grant_cost_ns"); !ok)
			return ok;
		if (auto ok = check_grant_burst(c.grant_burst, Voice::invariant); !ok)
			return ok;
	}
	if (c.valve_closed > 1 || (c.valve_closed && c.breaker_state != SLUICE_SHEDDING))
		return refused("invariant valve_closed in {0, 1}, 1 only while shedding violated: rejected valve_closed " +
			       std::to_string(c.valve_closed) + " in breaker_state " + std::to_string(c.breaker_state));
	return {};
}

Result<uint32_t> possible_cpus()
{
	int n = libbpf_num_possible_cpus();
	if (n <= 0)
		return fail_bpf(n, "counting possible CPUs");
	return static_cast<uint32_t>(n);
}

Result<sluice_config> ConfigMap::read() const
{
	uint32_t zero = 0;
	sluice_config c{};
	if (int err = bpf_map_lookup_elem(fd_, &zero, &c); err)
		return fail_bpf(err, "reading the config map");
	return c;
}

Status ConfigMap::write(sluice_config c) const
{
	if (auto ok = validate_config(c); !ok)
		return std::unexpected(ok.error());
	c.generation++;
	uint32_t zero = 0;
	if (int err = bpf_map_update_elem(fd_, &zero, &c, BPF_ANY); err)
		return fail_bpf(err, "writing the config map");
	return {};
}

Status ListenPorts::mark(std::span<const uint16_t> ports) const
{
	for (uint16_t port : ports) {
		uint32_t word = sluice_listen_port_word(port);
		uint64_t bits = 0;
		if (bpf_map_lookup_elem(fd_, &word, &bits))
			return fail_errno("reading listen_ports word " + std::to_string(word));
		uint64_t bit = sluice_listen_port_bit(port);
		if (bits & bit)
			continue;
		bits |= bit;
		if (bpf_map_update_elem(fd_, &word, &bits, BPF_ANY))
			return fail_errno("marking TCP port " + std::to_string(port) + " in listen_ports");
	}
	return {};
}

Result<std::vector<uint16_t>> ListenPorts::ports() const
{
	std::vector<uint16_t> out;
	for (uint32_t word = 0; word < SLUICE_LISTEN_PORT_WORDS; word++) {
		uint64_t bits = 0;
		if (bpf_map_lookup_elem(fd_, &word, &bits))
			return fail_errno("reading listen_ports word " + std::to_string(word));
		for (uint32_t b = 0; b < SLUICE_LISTEN_PORT_BITS; b++)
			if (bits >> b & 1)
				out.push_back(uint16_t(word * SLUICE_LISTEN_PORT_BITS + b));
	}
	return out;
}

Result<uint64_t> SlotTable::empty_at(uint32_t index) const
{
	if (index >= slots_)
		return invalid("slot " + std::to_string(index) + " is outside the table of " + std::to_string(slots_));
	sluice_slot s{};
	if (int err = bpf_map_lookup_elem(fd_, &index, &s); err)
		return fail_bpf(err, "reading slot " + std::to_string(index));
	return s.empty_at;
}

Result<uint64_t> SlotTable::tokens(uint32_t index, const sluice_config &cfg) const
{
	auto e = empty_at(index);
	if (!e)
		return std::unexpected(e.error());
	uint64_t cost = sluice_effective_cost(cfg.cost_ns, cfg.breaker_state, cfg.admission_ppm);
	return sluice_tokens(*e, dataplane_now(), cost, cfg.burst);
}

Status SlotTable::write_checked(std::span<const uint32_t> indices, std::span<const int64_t> tokens,
				const sluice_config &cfg, const char *what) const
{
	// Check every slot before writing any: a refused write changes nothing.
	for (size_t i = 0; i < indices.size(); i++) {
		if (indices[i] >= slots_)
			return invalid("slot " + std::to_string(indices[i]) + " is outside the table");
		if (tokens[i] < 0 || static_cast<uint64_t>(tokens[i]) > cfg.burst)
			return refused(std::string("invariant 0 <= tokens <= burst violated: rejected write of ") +
				       std::to_string(tokens[i]) + " (" + what + ", burst " + std::to_string(cfg.burst) +
				       ") to slot " + std::to_string(indices[i]) + "; the slots are unchanged");
	}
	uint64_t now = dataplane_now();
	uint64_t cost = sluice_effective_cost(cfg.cost_ns, cfg.breaker_state, cfg.admission_ppm);
	for (size_t i = 0; i < indices.size(); i++) {
		sluice_slot s{sluice_empty_at_for(now, static_cast<uint64_t>(tokens[i]), cost)};
		uint32_t idx = indices[i];
		if (int err = bpf_map_update_elem(fd_, &idx, &s, BPF_ANY); err)
			return fail_bpf(err, "writing slot " + std::to_string(idx));
	}
	return {};
}

Status SlotTable::set_tokens(std::span<const uint32_t> indices, int64_t tokens, const sluice_config &cfg) const
{
	std::vector<int64_t> values(indices.size(), tokens);
	return write_checked(indices, values, cfg, "set");
}

Status SlotTable::refill(std::span<const uint32_t> indices, int64_t n, const sluice_config &cfg) const
{
	std::vector<int64_t> values;
	for (uint32_t idx : indices) {
		auto t = tokens(idx, cfg);
		if (!t)
			return std::unexpected(t.error());
		if ((n > 0 && static_cast<uint64_t>(n) > SLUICE_BURST_MAX) || (n < 0 && n < -(INT64_MAX / 2)) /* not -n: -INT64_MIN overflows */)
			return refused("invariant 0 <= tokens <= burst violated: rejected refill of " + std::to_string(n) +
				       "; the slots are unchanged");
		values.push_back(static_cast<int64_t>(*t) + n);
	}
	return write_checked(indices, values, cfg, "refill");
}

Result<std::vector<uint64_t>> SlotTable::read_range(uint32_t first, uint32_t count) const
{
	if (first >= slots_)
		return std::vector<uint64_t>{};
	if (count > slots_ - first)
		count = slots_ - first;
	std::vector<uint32_t> keys(count);
	std::vector<uint64_t> values(count);
	uint32_t out_batch = 0, n = count;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	// Array batch lookups resume from the key after in_batch; the first call
	// starts at the beginning, so position to `first` with its predecessor.
	uint32_t in_batch = first - 1;
	int err = bpf_map_lookup_batch(fd_, first == 0 ? nullptr : &in_batch, &out_batch, keys.data(),
				       values.data(), &n, &opts);
	if (err && err != -ENOENT) {
		// Kernels without batch ops: one lookup per slot.
		for (uint32_t i = 0; i < count; i++) {
			uint32_t k = first + i;
			sluice_slot s{};
			if (int e = bpf_map_lookup_elem(fd_, &k, &s); e)
				return fail_bpf(e, "reading slot " + std::to_string(k));
			values[i] = s.empty_at;
		}
		return values;
	}
	values.resize(n);
	return values;
}

Result<CounterSet> Counters::read() const
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return fail_bpf(ncpu, "counting possible CPUs");
	CounterSet total{};
	std::vector<sluice_counter> per_cpu(static_cast<size_t>(ncpu));
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++) {
		if (int err = bpf_map_lookup_elem(fd_, &k, per_cpu.data()); err)
			return fail_bpf(err, "reading counter " + std::string(outcome_name(k)));
		for (const auto &c : per_cpu) {
			total[k].packets += c.packets;
			total[k].bytes += c.bytes;
		}
	}
	return total;
}

namespace {

// From sluice_abi.h's table, each name at its value (a value out of range
// does not compile; a value missing leaves a null the assert below finds).
constexpr std::array<const char *, SLUICE_OUTCOMES> outcome_names = [] {
	std::array<const char *, SLUICE_OUTCOMES> names{};
#define SLUICE_OUTCOME_NAME(sym, value, name, verdict) names[value] = name;
	SLUICE_OUTCOME_TABLE(SLUICE_OUTCOME_NAME)
#undef SLUICE_OUTCOME_NAME
	return names;
}();
static_assert(std::find(outcome_names.begin(), outcome_names.end(), nullptr) == outcome_names.end(),
	      "SLUICE_OUTCOME_TABLE must give every value 0..SLUICE_OUTCOMES-1 a name");

} // namespace

const char *outcome_name(uint32_t outcome)
{
	return outcome < SLUICE_OUTCOMES ? outcome_names[outcome] : "unknown";
}

const char *to_string(ListKind k)
{
	return k == ListKind::allow ? "allow" : "deny";
}

namespace {

using Table = PrefixLists::Table;

// sluice_lpm_v6's layout; a v4 key is its first sizeof(sluice_lpm_v4) bytes
// (the same prefixlen and set, the address's first four bytes, zeros). Every
// entry is handled in this form, whichever map holds it; MapKey makes the
// key of its own map from it.
struct LpmKey {
	uint32_t prefixlen;
	uint8_t set;
	uint8_t addr[16];
	uint8_t pad[3];
};
static_assert(sizeof(LpmKey) == sizeof(sluice_lpm_v6) && offsetof(LpmKey, addr) == offsetof(sluice_lpm_v6, addr) &&
	      offsetof(LpmKey, addr) == offsetof(sluice_lpm_v4, addr));

// One row a map: the list and family it serves, whether it holds whole
// addresses only (a hash map) or any prefix (an LPM trie), its descriptor
// among the Fds, and the SLUICE_LIST_* bit that says a set has entries there.
// Every other reading of a map (its key, where an entry goes, what the flags
// say) comes from here.
struct TableRow {
	Table table;
	ListKind list;
	Family family;
	bool exact;
	int PrefixLists::Fds::*fd;
	uint32_t flag;
};
constexpr std::array<TableRow, PrefixLists::kTables> kTableRows{{
	{Table::allow_v4, ListKind::allow, Family::v4, false, &PrefixLists::Fds::allow_v4, SLUICE_LIST_ALLOW_V4},
	{Table::allow_v6, ListKind::allow, Family::v6, false, &PrefixLists::Fds::allow_v6, SLUICE_LIST_ALLOW_V6},
	{Table::deny_v4, ListKind::deny, Family::v4, false, &PrefixLists::Fds::deny_v4, SLUICE_LIST_DENY_V4},
	{Table::deny_v6, ListKind::deny, Family::v6, false, &PrefixLists::Fds::deny_v6, SLUICE_LIST_DENY_V6},
	{Table::deny_exact_v4, ListKind::deny, Family::v4, true, &PrefixLists::Fds::deny_exact_v4,
	 SLUICE_LIST_DENY_EXACT_V4},
	{Table::deny_exact_v6, ListKind::deny, Family::v6, true, &PrefixLists::Fds::deny_exact_v6,
	 SLUICE_LIST_DENY_EXACT_V6},
	{Table::allow_exact_v4, ListKind::allow, Family::v4, true, &PrefixLists::Fds::allow_exact_v4,
	 SLUICE_LIST_ALLOW_EXACT_V4},
	{Table::allow_exact_v6, ListKind::allow, Family::v6, true, &PrefixLists::Fds::allow_exact_v6,
	 SLUICE_LIST_ALLOW_EXACT_V6},
}};
static_assert([] {
	for (size_t i = 0; i < kTableRows.size(); i++)
		if (static_cast<size_t>(kTableRows[i].table) != i)
			return false;
	return true;
}());

constexpr const TableRow &row(Table t)
{
	return kTableRows[static_cast<size_t>(t)];
}

constexpr std::array<Table, PrefixLists::kTables> kAllTables = [] {
	std::array<Table, PrefixLists::kTables> out{};
	for (size_t i = 0; i < out.size(); i++)
		out[i] = kTableRows[i].table;
	return out;
}();

// The size of map t's key (sluice_abi.h).
constexpr size_t key_size(Table t)
{
	const TableRow &r = row(t);
	if (r.exact)
		return r.family == Family::v4 ? sizeof(sluice_exact_v4) : sizeof(sluice_exact_v6);
	return r.family == Family::v4 ? sizeof(sluice_lpm_v4) : sizeof(sluice_lpm_v6);
}

constexpr uint8_t address_bits(Family f)
{
	return f == Family::v4 ? 32 : 128;
}

// The map a list's entry lives in: a whole address in the list's exact map
// of its family, anything else in the family's trie (each list has both).
Table table_for(ListKind list, const Cidr &c)
{
	const bool whole = c.prefix == address_bits(c.addr.family);
	for (const TableRow &r : kTableRows)
		if (r.list == list && r.family == c.addr.family && r.exact == whole)
			return r.table;
	return list == ListKind::allow ? Table::allow_v4 : Table::deny_v4; // not reached: kTableRows has every pairing
}

// An entry's key in the layout of map t (sluice_abi.h).
struct MapKey {
	std::array<uint8_t, sizeof(LpmKey)> bytes{};
	size_t size = 0;

	MapKey(Table t, const LpmKey &k)
	{
		if (row(t).exact) {
			const uint32_t set = k.set;
			if (row(t).family == Family::v4) {
				sluice_exact_v4 e{};
				std::memcpy(e.addr, k.addr, 4);
				e.set = set;
				put(&e);
			} else {
				sluice_exact_v6 e{};
				std::memcpy(e.addr, k.addr, 16);
				e.set = set;
				put(&e);
			}
		} else {
			put(&k);
		}
		size = key_size(t);
	}
	explicit MapKey(Table t) : size(key_size(t)) {}
	template <typename K> void put(const K *k)
	{
		static_assert(sizeof(K) <= sizeof(bytes));
		std::memcpy(bytes.data(), k, sizeof(K)); // size says how much of it map t reads
	}
	// The entry this key of map t names.
	LpmKey entry(Table t) const
	{
		LpmKey k{};
		if (!row(t).exact) {
			std::memcpy(&k, bytes.data(), size);
			return k;
		}
		const Family f = row(t).family;
		uint32_t set;
		if (f == Family::v4) {
			sluice_exact_v4 e;
			std::memcpy(&e, bytes.data(), sizeof(e));
			std::memcpy(k.addr, e.addr, 4);
			set = e.set;
		} else {
			sluice_exact_v6 e;
			std::memcpy(&e, bytes.data(), sizeof(e));
			std::memcpy(k.addr, e.addr, 16);
			set = e.set;
		}
		k.prefixlen = SLUICE_LPM_SET_BITS + address_bits(f);
		k.set = static_cast<uint8_t>(set > 0xff ? 0xff : set); // a foreign set stays foreign
		return k;
	}
};

LpmKey key_of(const Cidr &c, uint32_t set)
{
	LpmKey k{};
	k.prefixlen = SLUICE_LPM_SET_BITS + c.prefix;
	k.set = static_cast<uint8_t>(set);
	std::memcpy(k.addr, c.addr.bytes.data(), c.addr.family == Family::v4 ? 4 : 16);
	return k;
}

// Does map t hold exactly this prefix? Not a lookup: in an LPM trie that
// finds the longest prefix containing the key, so 198.18.7.0/24 would be
// "there" beside 198.18.0.0/16 alone. An update that may only replace
// (BPF_EXIST) fails with ENOENT unless the very prefix is there, and else
// writes `origin` as its value. (Kernels before 6.13 refuse any update,
// ENOSPC, of a trie at max_entries: both sets full.)
Result<bool> holds_exactly(int fd, Table t, const LpmKey &k, ListOrigin origin)
{
	uint8_t value = static_cast<uint8_t>(origin);
	MapKey key(t, k);
	int err = bpf_map_update_elem(fd, key.bytes.data(), &value, BPF_EXIST);
	if (err == 0)
		return true;
	if (err == -ENOENT)
		return false;
	return fail_bpf(err, "looking up " + std::string(row(t).family == Family::v4 ? "an IPv4" : "an IPv6") +
				     " list entry");
}

// Every key of map t (fd) as an entry, or those of policy set `set` only;
// both sets share the map.
Result<std::vector<LpmKey>> entries_in(int fd, Table t, std::optional<uint32_t> set)
{
	std::vector<LpmKey> out;
	MapKey cur(t), next(t);
	void *prev = nullptr;
	int err;
	while ((err = bpf_map_get_next_key(fd, prev, next.bytes.data())) == 0) {
		LpmKey k = next.entry(t);
		if (!set || k.set == *set)
			out.push_back(k);
		cur = next;
		prev = cur.bytes.data();
	}
	if (err != -ENOENT)
		return fail_bpf(err, std::string("reading the ") + to_string(row(t).list) + " list's entries");
	return out;
}

// How many keys of each policy set map t (fd) holds: one walk.
Result<std::array<size_t, SLUICE_POLICY_SETS>> count_by_set(int fd, Table t)
{
	auto keys = entries_in(fd, t, std::nullopt);
	if (!keys)
		return std::unexpected(keys.error());
	std::array<size_t, SLUICE_POLICY_SETS> out{};
	for (const LpmKey &k : *keys)
		if (k.set < SLUICE_POLICY_SETS)
			out[k.set]++;
	return out;
}

Status policy_set_exists(uint32_t set)
{
	if (set >= SLUICE_POLICY_SETS)
		return invalid("policy set " + std::to_string(set) + " does not exist (0 or 1)");
	return {};
}

constexpr uint32_t kListBits = [] {
	uint32_t bits = 0;
	for (Table t : kAllTables)
		bits |= row(t).flag;
	return bits;
}();

} // namespace

int PrefixLists::fd_of(Table t) const
{
	return fds_.*row(t).fd;
}

Result<uint32_t> PrefixLists::set_in_force() const
{
	auto cfg = config_.read();
	if (!cfg)
		return std::unexpected(cfg.error());
	return SLUICE_POLICY_SET_OF(cfg->policy_flags);
}

Status PrefixLists::count() const
{
	if (counts_->counted)
		return {};
	Counts c;
	for (Table t : kAllTables) {
		auto sets = count_by_set(fd_of(t), t);
		if (!sets)
			return std::unexpected(sets.error());
		c.held[static_cast<size_t>(t)] = *sets;
	}
	c.counted = true;
	*counts_ = c;
	return {};
}

size_t &PrefixLists::held(Table t, uint32_t set) const
{
	return counts_->held[static_cast<size_t>(t)][set];
}

size_t PrefixLists::held(ListKind list, Family f, uint32_t set) const
{
	size_t n = 0;
	for (Table t : kAllTables)
		if (row(t).list == list && row(t).family == f)
			n += held(t, set);
	return n;
}

Result<uint32_t> PrefixLists::list_flags(uint32_t set) const
{
	if (auto ok = policy_set_exists(set); !ok)
		return std::unexpected(ok.error());
	if (auto ok = count(); !ok)
		return std::unexpected(ok.error());
	uint32_t flags = 0;
	for (Table t : kAllTables)
		if (held(t, set))
			flags |= row(t).flag;
	return flags;
}

Status PrefixLists::sync_flags() const
{
	auto cfg = config_.read();
	if (!cfg)
		return std::unexpected(cfg.error());
	auto held_flags = list_flags(SLUICE_POLICY_SET_OF(cfg->policy_flags));
	if (!held_flags)
		return std::unexpected(held_flags.error());
	uint32_t flags = (cfg->policy_flags & ~kListBits) | *held_flags;
	if (flags == cfg->policy_flags)
		return {};
	cfg->policy_flags = flags;
	return config_.write(*cfg);
}

Status PrefixLists::insert(ListKind list, uint32_t set, std::span<const Cidr> cidrs, ListOrigin origin) const
{
	if (auto ok = policy_set_exists(set); !ok)
		return std::unexpected(ok.error());
	// Only the prefixes not yet present are inserted (and would be rolled
	// back), so a failed add never removes one that was there before.
	std::array<std::vector<LpmKey>, kTables> fresh;
	for (const auto &c : cidrs) {
		LpmKey k = key_of(c, set);
		Table t = table_for(list, c);
		auto there = holds_exactly(fd_of(t), t, k, origin);
		if (!there)
			return std::unexpected(there.error());
		if (!*there)
			fresh[static_cast<size_t>(t)].push_back(k);
	}
	for (auto &keys : fresh) { // the same prefix twice in one request is one insert
		auto less = [](const LpmKey &x, const LpmKey &y) { return std::memcmp(&x, &y, sizeof(x)) < 0; };
		auto same = [](const LpmKey &x, const LpmKey &y) { return std::memcmp(&x, &y, sizeof(x)) == 0; };
		std::sort(keys.begin(), keys.end(), less);
		keys.erase(std::unique(keys.begin(), keys.end(), same), keys.end());
	}
	// Each set holds at most SLUICE_LIST_MAX_ENTRIES a family (the maps
	// twice that): so a reload always has room to write the other set.
	if (auto ok = count(); !ok)
		return ok;
	for (Family f : {Family::v4, Family::v6}) {
		size_t adding = 0;
		for (Table t : kAllTables)
			if (row(t).list == list && row(t).family == f)
				adding += fresh[static_cast<size_t>(t)].size();
		if (!adding)
			continue;
		size_t before = held(list, f, set);
		if (!check_list_entries(before + adding))
			return refused("invariant a list holds at most " + std::to_string(SLUICE_LIST_MAX_ENTRIES) +
				       " prefixes per family violated: rejected " + std::to_string(adding) + " new IPv" +
				       (f == Family::v6 ? "6" : "4") + " prefixes beside the " + std::to_string(before) +
				       " of the " + to_string(list) + " list; nothing was added");
	}
	std::array<size_t, kTables> done{};
	auto rollback = [&] {
		for (Table t : kAllTables)
			for (size_t i = 0; i < done[static_cast<size_t>(t)]; i++) {
				MapKey key(t, fresh[static_cast<size_t>(t)][i]);
				if (int err = bpf_map_delete_elem(fd_of(t), key.bytes.data()); err && err != -ENOENT)
					counts_->counted = false; // the map holds what is not counted
			}
	};
	for (Table t : kAllTables) {
		const auto &adding = fresh[static_cast<size_t>(t)];
		if (adding.empty())
			continue;
		int fd = fd_of(t);
		const size_t ksize = key_size(t);
		// The kernel's batch takes packed keys of the map's own key size.
		std::vector<uint8_t> keys(adding.size() * ksize);
		for (size_t i = 0; i < adding.size(); i++)
			std::memcpy(keys.data() + i * ksize, MapKey(t, adding[i]).bytes.data(), ksize);
		std::vector<uint8_t> values(adding.size(), static_cast<uint8_t>(origin));
		uint32_t count = static_cast<uint32_t>(adding.size());
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		int err = bpf_map_update_batch(fd, keys.data(), values.data(), &count, &opts);
		if (err == -EINVAL || err == -EOPNOTSUPP || err == -524 /* ENOTSUPP */) {
			// A kernel without batch updates for LPM tries: one at a time.
			err = 0;
			for (count = 0; count < adding.size(); count++) {
				if ((err = bpf_map_update_elem(fd, keys.data() + count * ksize, &values[count], BPF_ANY)))
					break;
			}
		}
		done[static_cast<size_t>(t)] = count;
		if (err) {
			rollback();
			return fail_bpf(err, std::string("adding ") + std::to_string(cidrs.size()) + " prefixes to the " +
						     to_string(list) + " list; nothing was added");
		}
	}
	for (Table t : kAllTables)
		held(t, set) += fresh[static_cast<size_t>(t)].size();
	return {};
}

Status PrefixLists::add(ListKind list, std::span<const Cidr> cidrs) const
{
	auto set = set_in_force();
	if (!set)
		return std::unexpected(set.error());
	if (auto ok = insert(list, *set, cidrs); !ok)
		return ok;
	return sync_flags();
}

Status PrefixLists::remove(ListKind list, std::span<const Cidr> cidrs) const
{
	auto set = set_in_force();
	if (!set)
		return std::unexpected(set.error());
	for (const auto &c : cidrs) {
		// (the origin written here goes with the entry just after)
		Table t = table_for(list, c);
		auto there = holds_exactly(fd_of(t), t, key_of(c, *set), ListOrigin::run_time);
		if (!there)
			return std::unexpected(there.error());
		if (!*there)
			return invalid(c.str() + " is not in the " + std::string(to_string(list)) + " list; nothing was removed");
	}
	if (auto ok = count(); !ok)
		return ok;
	for (const auto &c : cidrs) {
		Table t = table_for(list, c);
		MapKey key(t, key_of(c, *set));
		int err = bpf_map_delete_elem(fd_of(t), key.bytes.data());
		if (err == -ENOENT)
			continue; // named twice in this request: gone with the first
		if (err)
			return fail_bpf(err, "removing " + c.str() + " from the " + to_string(list) + " list");
		held(t, *set)--;
	}
	return sync_flags();
}

Result<std::vector<Cidr>> PrefixLists::entries(ListKind list, uint32_t set, std::optional<ListOrigin> only) const
{
	std::vector<Cidr> out;
	for (Table t : kAllTables) {
		if (row(t).list != list)
			continue;
		const Family f = row(t).family;
		auto keys = entries_in(fd_of(t), t, set);
		if (!keys)
			return std::unexpected(keys.error());
		for (const LpmKey &k : *keys) {
			if (only) {
				// A lookup with the entry's own prefix length finds the
				// entry itself: no longer prefix of it can match.
				uint8_t value = 0;
				MapKey key(t, k);
				if (int err = bpf_map_lookup_elem(fd_of(t), key.bytes.data(), &value); err == -ENOENT)
					continue; // deleted since the walk
				else if (err)
					return fail_bpf(err, std::string("reading a ") + to_string(list) + " list entry's origin");
				// Anything but the file's mark is an operator's (1 before marks were kept)
				ListOrigin origin = value == SLUICE_LIST_FROM_FILE ? ListOrigin::file : ListOrigin::run_time;
				if (origin != *only)
					continue;
			}
			Cidr c;
			c.addr.family = f;
			c.prefix = k.prefixlen - SLUICE_LPM_SET_BITS;
			std::memcpy(c.addr.bytes.data(), k.addr, f == Family::v4 ? 4 : 16);
			out.push_back(c);
		}
	}
	return out;
}

Result<std::vector<Cidr>> PrefixLists::entries(ListKind list, std::optional<ListOrigin> only) const
{
	auto set = set_in_force();
	if (!set)
		return std::unexpected(set.error());
	return entries(list, *set, only);
}

Status PrefixLists::clear(uint32_t set) const
{
	if (auto ok = policy_set_exists(set); !ok)
		return std::unexpected(ok.error());
	if (auto ok = count(); !ok)
		return ok;
	for (Table t : kAllTables) {
		int fd = fd_of(t);
		auto keys = entries_in(fd, t, set);
		if (!keys) {
			counts_->counted = false; // it may have been part way through
			return std::unexpected(keys.error());
		}
		for (const LpmKey &k : *keys) {
			MapKey key(t, k);
			if (int err = bpf_map_delete_elem(fd, key.bytes.data()); err && err != -ENOENT) {
				counts_->counted = false; // some deleted, some not
				return fail_bpf(err, std::string("clearing policy set ") + std::to_string(set) + " of the " +
							     to_string(row(t).list) + " list");
			}
		}
		held(t, set) = 0;
	}
	return {};
}

} // namespace sluice
