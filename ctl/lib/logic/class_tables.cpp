#include "logic/class_tables.h"

#include "bpf/class_match.h"
#include "logic/budgets.h"

#include <netinet/in.h>

#include <algorithm>
#include <bitset>
#include <cstring>
#include <limits>

namespace sluice {

namespace {

// --- Byte budgets: the program's arithmetic and its bounds ---

// A byte costs 1e9 / byte_rate ns of refill, held in 1/65536 ns
// (sluice_abi.h SLUICE_BYTE_COST_SHIFT): (1e9 << 16) / byte_rate.
constexpr uint64_t kByteCostNumerator = uint64_t(SLUICE_NSEC_PER_SEC) << SLUICE_BYTE_COST_SHIFT;
// The program pays (len x byte_cost_fp) >> 16 for a frame of len bytes; the
// costliest byte (rate 1) times the longest frame an XDP program sees (64 KiB)
// fits in 64 bits.
static_assert(kByteCostNumerator <= std::numeric_limits<uint64_t>::max() / 0xffff);
// The burst in nanoseconds: byte_burst x 1e9 fits before the division, and
// the result stays within bucket.h's 1e18 bound on burst_ns.
static_assert(kByteBurstMax <= std::numeric_limits<uint64_t>::max() / SLUICE_NSEC_PER_SEC - kByteRateMax);
static_assert(kByteBurstMax * SLUICE_NSEC_PER_SEC <= 1'000'000'000'000'000'000ull);

uint64_t byte_cost_fp(uint64_t byte_rate)
{
	return (kByteCostNumerator + byte_rate / 2) / byte_rate;
}

// Rounded up: byte_cost_fp, rounded to nearest, can charge a frame up to half
// a nanosecond more than its exact cost, so a frame of byte_burst bytes (at
// most 64 KiB) still fits a full bucket.
uint64_t byte_burst_ns(uint64_t byte_burst, uint64_t byte_rate)
{
	return (byte_burst * SLUICE_NSEC_PER_SEC + byte_rate - 1) / byte_rate;
}

uint32_t action_of(ClassAction a)
{
	switch (a) {
	case ClassAction::limit:
		return SLUICE_CLASS_LIMIT;
	case ClassAction::exempt:
		return SLUICE_CLASS_EXEMPT;
	case ClassAction::deny:
		return SLUICE_CLASS_DENY;
	}
	return SLUICE_CLASS_LIMIT;
}

// An exempt or deny class is never held to a budget: its record carries none.
sluice_class class_record(const PolicyClass &c)
{
	sluice_class r{};
	r.action = action_of(c.action);
	r.v4_prefix = c.v4_prefix;
	r.v6_prefix = c.v6_prefix;
	std::memcpy(r.name, c.name.data(), std::min(c.name.size(), kClassNameMax));
	if (c.action != ClassAction::limit)
		return r;
	r.cost_ns = cost_ns_for_rate(c.packets.rate);
	r.burst = c.packets.burst;
	r.rate_pps = c.packets.rate;
	if (c.bytes) {
		r.byte_cost_fp = byte_cost_fp(c.bytes->rate);
		r.byte_burst_ns = byte_burst_ns(c.bytes->burst, c.bytes->rate);
		r.byte_rate = c.bytes->rate;
		r.byte_burst = c.bytes->burst;
	}
	if (c.standing) {
		r.standing_cost_ns = cost_ns_for_rate(c.standing->rate);
		r.standing_burst = c.standing->burst;
		r.standing_rate_pps = c.standing->rate;
	}
	return r;
}

// --- What a rule covers, as class_match.h's (kinds, lo..hi) ---

constexpr uint8_t kind_bit(uint32_t kind)
{
	return uint8_t(1u << kind);
}
constexpr uint8_t kTcpKinds = kind_bit(SLUICE_L4_TCP) | kind_bit(SLUICE_L4_TCP_SYN);
constexpr uint8_t kAllKinds = (1u << SLUICE_L4_KINDS) - 1;
static_assert(SLUICE_L4_KINDS <= 8, "sluice_class_match.kinds is a u8");

// A rule's frames as at most two matches: a tcp or udp rule without ports
// also holds the protocol's non-first fragments (SLUICE_L4_IP, which carry no
// ports); a rule without a protocol holds every frame.
struct Pieces {
	std::array<sluice_class_match, 2> m{};
	size_t n = 0;
	void add(uint8_t kinds, uint16_t lo, uint16_t hi, uint8_t class_id)
	{
		m[n++] = sluice_class_match{lo, hi, kinds, class_id, {}};
	}
};

Pieces pieces_of(const ClassRule &r, uint8_t class_id)
{
	Pieces p;
	const uint16_t lo = r.ports ? r.ports->lo : 0, hi = r.ports ? r.ports->hi : 65535;
	switch (r.protocol) {
	case Protocol::any:
		p.add(kAllKinds, 0, 65535, class_id);
		break;
	case Protocol::tcp:
		p.add(kTcpKinds, lo, hi, class_id);
		if (!r.ports)
			p.add(kind_bit(SLUICE_L4_IP), IPPROTO_TCP, IPPROTO_TCP, class_id);
		break;
	case Protocol::tcp_syn:
		p.add(kind_bit(SLUICE_L4_TCP_SYN), lo, hi, class_id);
		break;
	case Protocol::udp:
		p.add(kind_bit(SLUICE_L4_UDP), lo, hi, class_id);
		if (!r.ports)
			p.add(kind_bit(SLUICE_L4_IP), IPPROTO_UDP, IPPROTO_UDP, class_id);
		break;
	case Protocol::icmp:
		p.add(kind_bit(SLUICE_L4_IP), IPPROTO_ICMP, IPPROTO_ICMP, class_id);
		break;
	case Protocol::icmpv6:
		p.add(kind_bit(SLUICE_L4_IP), IPPROTO_ICMPV6, IPPROTO_ICMPV6, class_id);
		break;
	}
	return p;
}

bool covers(const sluice_class_match &outer, const sluice_class_match &inner)
{
	return (inner.kinds & ~outer.kinds) == 0 && outer.lo <= inner.lo && inner.hi <= outer.hi;
}

bool covers_everything(const sluice_class_match &m)
{
	return m.kinds == kAllKinds && m.lo == 0 && m.hi == 65535;
}

// --- The port table: rules without sources ---

// Every (kind, port) painted with its class: the rules in reverse precedence
// order, so the most specific rule holding a cell paints it last.
std::vector<sluice_port_block> port_table(const Policy &p, const std::array<uint8_t, SLUICE_CLASSES_MAX> &id_of_class)
{
	std::vector<sluice_port_block> blocks(size_t(SLUICE_L4_KINDS) * SLUICE_PORT_BLOCKS);
	std::vector<RuleSpecificity> order;
	for (size_t i = 0; i < p.rules.size(); i++)
		if (p.rules[i].sources.empty())
			order.push_back(specificity(p, i, -1));
	std::sort(order.begin(), order.end(), more_specific);
	for (auto it = order.rbegin(); it != order.rend(); ++it) {
		const ClassRule &r = p.rules[it->rule];
		Pieces pc = pieces_of(r, id_of_class[r.class_index]);
		for (size_t k = 0; k < pc.n; k++) {
			const sluice_class_match &m = pc.m[k];
			for (uint32_t kind = 0; kind < SLUICE_L4_KINDS; kind++) {
				if (!(m.kinds & kind_bit(kind)))
					continue;
				for (uint32_t port = m.lo; port <= m.hi; port++)
					blocks[sluice_port_block_index(0, kind, port)].class_of[port % SLUICE_PORTS_PER_BLOCK] =
						m.class_id;
			}
		}
	}
	return blocks;
}

// --- The prefix entries: rules with sources ---

bool address_less(const Address &a, const Address &b)
{
	return a.bytes < b.bytes;
}

std::string rule_name(const Policy &p, size_t rule)
{
	std::string s = "rule " + std::to_string(rule + 1);
	if (p.rules[rule].line)
		s += " (line " + std::to_string(p.rules[rule].line) + ")";
	return s;
}

// The matches of one prefix entry from its rules in precedence order. A
// match that an earlier one covers is never first, so it is left out (and
// everything after a match that covers everything); one that only widens the
// last match of the same class is merged into it. Neither changes the first
// match of any frame. Refused past SLUICE_CLASS_MATCHES.
Result<sluice_class_matches> matches_of(const Policy &p, const std::array<uint8_t, SLUICE_CLASSES_MAX> &id_of_class,
					const Cidr &prefix, const std::vector<RuleSpecificity> &order)
{
	std::vector<sluice_class_match> kept;
	std::vector<std::vector<size_t>> rules_of; // per kept match, the rules it carries
	for (const RuleSpecificity &s : order) {
		const ClassRule &r = p.rules[s.rule];
		Pieces pc = pieces_of(r, id_of_class[r.class_index]);
		for (size_t k = 0; k < pc.n; k++) {
			const sluice_class_match &m = pc.m[k];
			if (std::any_of(kept.begin(), kept.end(), [&](const sluice_class_match &e) { return covers(e, m); }))
				continue;
			if (!kept.empty() && kept.back().class_id == m.class_id) {
				sluice_class_match &last = kept.back();
				bool same_range = last.lo == m.lo && last.hi == m.hi;
				bool touching = last.kinds == m.kinds && uint32_t(m.lo) <= uint32_t(last.hi) + 1 &&
						uint32_t(last.lo) <= uint32_t(m.hi) + 1;
				if (same_range || touching) {
					last.kinds |= m.kinds;
					last.lo = std::min(last.lo, m.lo);
					last.hi = std::max(last.hi, m.hi);
					if (rules_of.back().back() != s.rule)
						rules_of.back().push_back(s.rule);
					continue;
				}
			}
			kept.push_back(m);
			rules_of.push_back({s.rule});
		}
		if (!kept.empty() && covers_everything(kept.back()))
			break;
	}
	if (kept.size() > SLUICE_CLASS_MATCHES) {
		std::vector<size_t> rules;
		for (const auto &list : rules_of)
			for (size_t r : list)
				if (std::find(rules.begin(), rules.end(), r) == rules.end())
					rules.push_back(r);
		std::string names;
		for (size_t r : rules)
			names += (names.empty() ? "" : ", ") + rule_name(p, r);
		return refused("too_many_matches: the sources " + prefix.str() + " need " + std::to_string(kept.size()) +
			       " class matches, more than the " + std::to_string(SLUICE_CLASS_MATCHES) +
			       " a class prefix entry holds (SLUICE_CLASS_MATCHES), for " + names +
			       ": give fewer of these rules sources containing " + prefix.str());
	}
	sluice_class_matches out{};
	out.count = uint32_t(kept.size());
	std::copy(kept.begin(), kept.end(), out.m);
	return out;
}

// Every distinct source prefix of the family, with its entry. Sorted by
// address then length, the prefixes containing a prefix come before it and
// are the stack of those not yet left behind; the nearest's rule order, with
// the prefix's own rules in front (their source is the longest), is its own.
Result<std::vector<std::pair<Cidr, sluice_class_matches>>>
prefix_entries(const Policy &p, const std::array<uint8_t, SLUICE_CLASSES_MAX> &id_of_class, Family family)
{
	std::vector<std::pair<Cidr, size_t>> owned; // (source, rule)
	for (size_t i = 0; i < p.rules.size(); i++)
		for (const Cidr &c : p.rules[i].sources)
			if (c.addr.family == family)
				owned.emplace_back(c, i);
	auto before = [](const std::pair<Cidr, size_t> &a, const std::pair<Cidr, size_t> &b) {
		if (a.first.addr != b.first.addr)
			return address_less(a.first.addr, b.first.addr);
		if (a.first.prefix != b.first.prefix)
			return a.first.prefix < b.first.prefix;
		return a.second < b.second;
	};
	std::sort(owned.begin(), owned.end(), before);
	owned.erase(std::unique(owned.begin(), owned.end()), owned.end());

	struct Open {
		Cidr prefix;
		std::vector<RuleSpecificity> order;
	};
	std::vector<Open> stack;
	std::vector<std::pair<Cidr, sluice_class_matches>> out;
	for (size_t i = 0; i < owned.size();) {
		const Cidr prefix = owned[i].first;
		Open here{prefix, {}};
		std::bitset<kMaxRules> own;
		for (; i < owned.size() && owned[i].first == prefix; i++) {
			here.order.push_back(specificity(p, owned[i].second, int(prefix.prefix)));
			own.set(owned[i].second);
		}
		std::sort(here.order.begin(), here.order.end(), more_specific);
		while (!stack.empty() && !contains(stack.back().prefix, prefix))
			stack.pop_back();
		if (!stack.empty())
			for (const RuleSpecificity &s : stack.back().order)
				if (!own.test(s.rule))
					here.order.push_back(s);
		auto matches = matches_of(p, id_of_class, prefix, here.order);
		if (!matches)
			return std::unexpected(matches.error());
		out.emplace_back(prefix, *matches);
		stack.push_back(std::move(here));
	}
	return out;
}

} // namespace

ClassIds assign_class_ids(const Policy &p, const ClassIds &previous)
{
	ClassIds ids;
	ids.names[SLUICE_CLASS_DEFAULT] = "default";
	std::vector<const std::string *> fresh;
	for (size_t i = 1; i < p.classes.size() && i < kMaxClasses; i++) {
		const std::string &name = p.classes[i].name;
		auto kept = std::find(previous.names.begin() + 1, previous.names.end(), name);
		if (kept != previous.names.end() && !name.empty())
			ids.names[kept - previous.names.begin()] = name;
		else
			fresh.push_back(&name);
	}
	size_t free_id = 1;
	for (const std::string *name : fresh) {
		while (!ids.names[free_id].empty())
			free_id++;
		ids.names[free_id] = *name;
	}
	return ids;
}

Result<CompiledPolicy> compile_policy(const Policy &p, const ClassIds &previous)
{
	if (auto ok = check_policy(p); !ok)
		return std::unexpected(ok.error());
	CompiledPolicy c;
	c.ids = assign_class_ids(p, previous);
	for (size_t i = 0; i < p.classes.size(); i++) {
		auto at = std::find(c.ids.names.begin(), c.ids.names.end(), p.classes[i].name);
		c.id_of_class[i] = uint8_t(at - c.ids.names.begin());
		c.classes[c.id_of_class[i]] = class_record(p.classes[i]);
	}
	c.ports = port_table(p, c.id_of_class);
	auto v4 = prefix_entries(p, c.id_of_class, Family::v4);
	if (!v4)
		return std::unexpected(v4.error());
	auto v6 = prefix_entries(p, c.id_of_class, Family::v6);
	if (!v6)
		return std::unexpected(v6.error());
	c.prefixes_v4 = std::move(*v4);
	c.prefixes_v6 = std::move(*v6);
	if (std::any_of(p.rules.begin(), p.rules.end(), [](const ClassRule &r) { return r.sources.empty(); }))
		c.class_flags |= SLUICE_CLASS_PORTS;
	if (!c.prefixes_v4.empty())
		c.class_flags |= SLUICE_CLASS_PREFIX_V4;
	if (!c.prefixes_v6.empty())
		c.class_flags |= SLUICE_CLASS_PREFIX_V6;
	if (p.classes[0].bytes)
		c.class_flags |= SLUICE_CLASS_DEFAULT_BYTES;
	return c;
}

uint32_t classify_l4(const CompiledPolicy &c, const Address &source, uint32_t kind, uint32_t port)
{
	bool v4 = source.family == Family::v4;
	if (c.class_flags & (v4 ? SLUICE_CLASS_PREFIX_V4 : SLUICE_CLASS_PREFIX_V6)) {
		// The LPM lookup, as a scan: the longest entry containing the source.
		const sluice_class_matches *entry = nullptr;
		uint32_t longest = 0;
		for (const auto &[prefix, matches] : v4 ? c.prefixes_v4 : c.prefixes_v6)
			if ((!entry || prefix.prefix > longest) && contains(prefix, source)) {
				entry = &matches;
				longest = prefix.prefix;
			}
		if (entry)
			if (uint32_t id = sluice_match_class(entry, kind, port); id != SLUICE_CLASS_NO_MATCH)
				return id;
	}
	if ((c.class_flags & SLUICE_CLASS_PORTS) && !c.ports.empty())
		return sluice_port_block_class(&c.ports[sluice_port_block_index(0, kind, port)], port);
	return SLUICE_CLASS_DEFAULT;
}

uint32_t classify(const CompiledPolicy &c, const Frame &frame)
{
	auto [kind, port] = l4_key(frame);
	return classify_l4(c, frame.source, kind, port);
}

std::pair<uint32_t, uint32_t> l4_key(const Frame &frame, uint32_t ip_protocol)
{
	switch (frame.protocol) {
	case Protocol::tcp:
		return {SLUICE_L4_TCP, frame.port};
	case Protocol::tcp_syn:
		return {SLUICE_L4_TCP_SYN, frame.port};
	case Protocol::udp:
		return {SLUICE_L4_UDP, frame.port};
	case Protocol::icmp:
		return {SLUICE_L4_IP, IPPROTO_ICMP};
	case Protocol::icmpv6:
		return {SLUICE_L4_IP, IPPROTO_ICMPV6};
	case Protocol::any:
		break;
	}
	return {SLUICE_L4_IP, ip_protocol};
}

} // namespace sluice
