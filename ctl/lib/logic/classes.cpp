#include "logic/classes.h"

#include "bpf/sluice_abi.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace sluice {

const char *action_name(ClassAction a)
{
	switch (a) {
	case ClassAction::limit:
		return "limit";
	case ClassAction::exempt:
		return "exempt";
	case ClassAction::deny:
		return "deny";
	}
	return "?";
}

const char *protocol_name(Protocol p)
{
	switch (p) {
	case Protocol::any:
		return "any";
	case Protocol::tcp:
		return "tcp";
	case Protocol::tcp_syn:
		return "tcp-syn";
	case Protocol::udp:
		return "udp";
	case Protocol::icmp:
		return "icmp";
	case Protocol::icmpv6:
		return "icmpv6";
	}
	return "?";
}

bool has_ports(Protocol p)
{
	return p == Protocol::tcp || p == Protocol::tcp_syn || p == Protocol::udp;
}

const char *lost_on_name(LostOn l)
{
	switch (l) {
	case LostOn::deny_list:
		return "deny list";
	case LostOn::source_prefix:
		return "source prefix";
	case LostOn::port_range:
		return "port range";
	case LostOn::protocol:
		return "protocol";
	case LostOn::order:
		return "order";
	}
	return "?";
}

Policy default_policy()
{
	Policy p;
	p.classes.emplace_back().name = "default";
	return p;
}

namespace {

uint32_t family_bits(Family f)
{
	return f == Family::v4 ? 32 : 128;
}

Status check_budget(const Budget &b, const std::string &what)
{
	if (auto ok = named(what + " rate", check_rate(b.rate)); !ok)
		return ok;
	return named(what + " burst", check_burst(b.burst));
}

// Per family: how many prefixes, against the LPM map's size.
Status check_entries(const std::vector<Cidr> &list, const std::string &what)
{
	size_t v4 = std::count_if(list.begin(), list.end(), [](const Cidr &c) { return c.addr.family == Family::v4; });
	if (auto ok = named(what + " (IPv4)", check_list_entries(v4)); !ok)
		return ok;
	return named(what + " (IPv6)", check_list_entries(list.size() - v4));
}

Status check_prefixes(const std::vector<Cidr> &list, const std::string &what)
{
	for (const auto &c : list)
		if (c.prefix > family_bits(c.addr.family) || aggregate(c.addr, c.prefix) != c)
			return invalid(what + " holds " + c.str() + ", which is not a prefix (host bits set or too long)");
	return {};
}

} // namespace

Status check_policy(const Policy &p)
{
	if (auto ok = named("classes:", check_class_count(p.classes.size())); !ok)
		return ok;
	if (p.classes[0].name != "default")
		return invalid("the first class must be 'default', not '" + p.classes[0].name + "'");
	std::set<std::string> names;
	for (const auto &c : p.classes) {
		if (auto ok = check_class_name(c.name); !ok)
			return ok;
		if (!names.insert(c.name).second)
			return invalid("class name '" + c.name + "' is given twice");
		std::string what = "class " + c.name;
		if (auto ok = check_budget(c.packets, what); !ok)
			return ok;
		if (c.bytes) {
			if (auto ok = named(what + " byte rate", check_byte_rate(c.bytes->rate)); !ok)
				return ok;
			if (auto ok = named(what + " byte burst", check_byte_burst(c.bytes->burst)); !ok)
				return ok;
		}
		if (c.standing)
			if (auto ok = check_budget(*c.standing, what + " standing"); !ok)
				return ok;
		if (auto ok = named(what + " ipv4-prefix", check_v4_prefix(c.v4_prefix)); !ok)
			return ok;
		if (auto ok = named(what + " ipv6-prefix", check_v6_prefix(c.v6_prefix)); !ok)
			return ok;
	}
	if (auto ok = named("rules:", check_rule_count(p.rules.size())); !ok)
		return ok;
	std::vector<Cidr> all_sources;
	for (size_t i = 0; i < p.rules.size(); i++) {
		const auto &r = p.rules[i];
		std::string what = "rule " + std::to_string(i + 1);
		if (r.class_index >= p.classes.size())
			return invalid(what + " names class " + std::to_string(r.class_index) + " of " +
				       std::to_string(p.classes.size()));
		if (r.sources.empty() && r.protocol == Protocol::any)
			return invalid(what + " matches every frame: name sources or a protocol (or change the default class)");
		if (r.ports) {
			if (!has_ports(r.protocol))
				return invalid(what + " names ports, which only tcp, tcp-syn and udp have");
			if (auto ok = named(what, check_port_range(r.ports->lo, r.ports->hi)); !ok)
				return ok;
		}
		if (auto ok = check_prefixes(r.sources, what); !ok)
			return ok;
		all_sources.insert(all_sources.end(), r.sources.begin(), r.sources.end());
	}
	if (auto ok = check_entries(all_sources, "the rules' sources"); !ok)
		return ok;
	for (auto [list, what] : {std::pair{&p.allow, "the allow list"}, std::pair{&p.deny, "the deny list"}}) {
		if (auto ok = check_prefixes(*list, what); !ok)
			return ok;
		if (auto ok = check_entries(*list, what); !ok)
			return ok;
	}
	return {};
}

Cidr aggregate(const Address &a, uint32_t prefix)
{
	Cidr c{a, std::min(prefix, family_bits(a.family))};
	for (uint32_t bit = c.prefix; bit < family_bits(a.family); bit++)
		c.addr.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
	return c;
}

bool contains(const Cidr &outer, const Address &a)
{
	return outer.addr.family == a.family && aggregate(a, outer.prefix).addr == outer.addr;
}

bool contains(const Cidr &outer, const Cidr &inner)
{
	return outer.prefix <= inner.prefix && contains(outer, inner.addr);
}

namespace {

bool protocol_matches(Protocol rule, Protocol frame)
{
	if (rule == Protocol::any)
		return true;
	if (rule == Protocol::tcp)
		return frame == Protocol::tcp || frame == Protocol::tcp_syn;
	return rule == frame;
}

// tcp-syn inside tcp inside any; udp, icmp, icmpv6 as narrow as tcp.
int protocol_rank(Protocol p)
{
	return p == Protocol::any ? 0 : p == Protocol::tcp_syn ? 2 : 1;
}

// A matching rule, its place in the precedence and the source it matched by.
struct Candidate : RuleSpecificity {
	std::optional<Cidr> source;
};

std::optional<Candidate> match(const Policy &p, size_t i, const Frame &f)
{
	const ClassRule &r = p.rules[i];
	if (!protocol_matches(r.protocol, f.protocol))
		return std::nullopt;
	if (r.ports && (f.port < r.ports->lo || f.port > r.ports->hi))
		return std::nullopt;
	Candidate c{specificity(p, i, -1), std::nullopt};
	if (!r.sources.empty()) {
		for (const auto &s : r.sources)
			if (contains(s, f.source) && int(s.prefix) > c.source_len) {
				c.source_len = int(s.prefix);
				c.source = s;
			}
		if (!c.source)
			return std::nullopt;
	}
	return c;
}

std::string source_text(const Candidate &c)
{
	return c.source ? "/" + std::to_string(c.source_len) : "no source";
}

std::string ports_text(uint32_t width)
{
	return width == 65536 ? "every port" : std::to_string(width) + (width == 1 ? " port" : " ports");
}

// Where `loser` fell behind `winner` (winner is the better), and why.
std::pair<LostOn, std::string> compare(const Policy &p, const Candidate &winner, const Candidate &loser)
{
	std::string w = "rule " + std::to_string(winner.rule + 1) + "'s ";
	if (winner.source_len != loser.source_len)
		return {LostOn::source_prefix, "its source (" + source_text(loser) + ") is less specific than " + w +
						       "(" + source_text(winner) + ")"};
	if (winner.width != loser.width)
		return {LostOn::port_range, "its ports (" + ports_text(loser.width) + ") are wider than " + w + "(" +
						    ports_text(winner.width) + ")"};
	if (winner.protocol_rank != loser.protocol_rank)
		return {LostOn::protocol, std::string("its protocol (") + protocol_name(p.rules[loser.rule].protocol) +
						  ") is wider than " + w + "(" +
						  protocol_name(p.rules[winner.rule].protocol) + ")"};
	return {LostOn::order, "it is as specific as rule " + std::to_string(winner.rule + 1) + " and written after it"};
}

std::optional<Cidr> longest_in(const std::vector<Cidr> &list, const Address &a)
{
	std::optional<Cidr> best;
	for (const auto &c : list)
		if (contains(c, a) && (!best || c.prefix > best->prefix))
			best = c;
	return best;
}

} // namespace

RuleSpecificity specificity(const Policy &p, size_t rule, int source_len)
{
	const ClassRule &r = p.rules[rule];
	return {rule, source_len, r.ports ? r.ports->width() : 65536u, protocol_rank(r.protocol)};
}

bool more_specific(const RuleSpecificity &a, const RuleSpecificity &b)
{
	if (a.source_len != b.source_len)
		return a.source_len > b.source_len;
	if (a.width != b.width)
		return a.width < b.width;
	if (a.protocol_rank != b.protocol_rank)
		return a.protocol_rank > b.protocol_rank;
	return a.rule < b.rule;
}

std::string describe_rule(const Policy &p, size_t i)
{
	const ClassRule &r = p.rules[i];
	std::string s = "rule " + std::to_string(i + 1);
	if (r.line)
		s += " (line " + std::to_string(r.line) + ")";
	s += ":";
	if (!r.sources.empty()) {
		constexpr size_t shown = 3;
		s += " sources";
		for (size_t k = 0; k < r.sources.size() && k < shown; k++)
			s += (k ? ", " : " ") + r.sources[k].str();
		if (r.sources.size() > shown)
			s += " and " + std::to_string(r.sources.size() - shown) + " more";
	}
	if (r.protocol != Protocol::any)
		s += std::string(" ") + protocol_name(r.protocol);
	if (r.ports) {
		if (r.ports->lo == r.ports->hi)
			s += " port " + std::to_string(r.ports->lo);
		else
			s += " ports " + std::to_string(r.ports->lo) + "-" + std::to_string(r.ports->hi);
	}
	return s + " -> " + p.classes[r.class_index].name;
}

Explanation explain(const Policy &p, const Frame &f)
{
	Explanation e;
	std::vector<Candidate> matching;
	for (size_t i = 0; i < p.rules.size(); i++)
		if (auto c = match(p, i, f))
			matching.push_back(*c);
	e.allow_entry = longest_in(p.allow, f.source);
	e.deny_entry = longest_in(p.deny, f.source);

	std::optional<Candidate> best;
	for (const auto &c : matching)
		if (!best || more_specific(c, *best))
			best = c;

	if (e.deny_entry) {
		e.decided = Decided::deny_list;
		e.action = ClassAction::deny;
		e.class_index = 0;
		e.class_name = p.classes[0].name;
		e.why = "the deny list holds " + e.deny_entry->str() + ": dropped, whatever the rules say";
	} else if (best) {
		e.decided = Decided::rule;
		e.rule = best->rule;
		e.rule_text = describe_rule(p, best->rule);
		e.source_prefix = best->source;
		e.class_index = p.rules[best->rule].class_index;
		e.why = "the most specific matching rule is " + e.rule_text;
	} else {
		e.decided = Decided::fallback;
		e.class_index = 0;
		e.why = "no rule matches: the default class";
	}
	const PolicyClass &cls = p.classes[e.class_index];
	if (e.decided != Decided::deny_list) {
		e.class_name = cls.name;
		e.action = cls.action;
	}
	e.bucket = aggregate(f.source, f.source.family == Family::v4 ? cls.v4_prefix : cls.v6_prefix);
	for (const auto &c : matching) {
		if (e.decided == Decided::rule && c.rule == best->rule)
			continue;
		LosingRule l{c.rule, describe_rule(p, c.rule), LostOn::deny_list, "the deny list decides first"};
		if (e.decided == Decided::rule)
			std::tie(l.lost_on, l.why) = compare(p, *best, c);
		e.losers.push_back(std::move(l));
	}
	return e;
}

std::string describe(const Explanation &e)
{
	std::string s;
	if (e.decided == Decided::deny_list)
		s = "denied: " + e.why + "\n";
	else
		s = "class " + e.class_name + " (" + action_name(e.action) + "): " + e.why + "\n";
	if (e.decided != Decided::deny_list && e.action != ClassAction::deny)
		s += "bucket " + e.bucket.str() + "\n";
	if (e.allow_entry && e.decided != Decided::deny_list)
		s += "allowlisted by " + e.allow_entry->str() + ": passes while the breaker is shedding\n";
	for (const auto &l : e.losers)
		s += "lost: " + l.text + ": on " + lost_on_name(l.lost_on) + ", " + l.why + "\n";
	return s;
}

} // namespace sluice
