// policy_file.cpp - the YAML policy file into a Policy.
//
// yaml-cpp's event parser feeds a small tree of our own (Doc below), built
// under the bounds as it goes: the nesting depth and the node count are
// checked at every event, so a hostile file stops the parse where it crosses
// one instead of being built whole first; aliases are refused (an alias
// repeated in lists is how a small file becomes a large document). The tree
// keeps each node's line and column for the errors. Then the schema walk
// reads the tree into the Policy, refusing the first thing wrong. Inside the
// parse a refusal is thrown (Refusal) because yaml-cpp calls us from its own
// recursion; it never leaves this file.
#include "policyfile/policy_file.h"

#include "base/limits.h"
#include "bpf/sluice_abi.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <sstream>

namespace sluice {

namespace {

struct Refusal {
	PolicyFileError e;
};

struct Node {
	enum Kind { null, scalar, seq, map } kind = null;
	uint32_t line = 0, column = 0;
	std::string value;       // scalar
	std::vector<Node> items; // seq: the items; map: key, value, key, value, ...
};

class TreeBuilder : public YAML::EventHandler {
public:
	explicit TreeBuilder(const std::string &file) : file_(file) {}

	Node root;
	int documents = 0;

	void OnDocumentStart(const YAML::Mark &m) override
	{
		if (++documents > 1)
			refuse(m, PolicyError::not_one_document, "a policy file holds one YAML document");
	}
	void OnDocumentEnd() override {}
	void OnNull(const YAML::Mark &m, YAML::anchor_t) override { add(leaf(m, Node::null, {})); }
	void OnAlias(const YAML::Mark &m, YAML::anchor_t) override
	{
		refuse(m, PolicyError::alias, "aliases (*name) are not accepted: write the value out");
	}
	void OnScalar(const YAML::Mark &m, const std::string &, YAML::anchor_t, const std::string &value) override
	{
		add(leaf(m, Node::scalar, value));
	}
	void OnSequenceStart(const YAML::Mark &m, const std::string &, YAML::anchor_t, YAML::EmitterStyle::value) override
	{
		open(m, Node::seq);
	}
	void OnSequenceEnd() override { close(); }
	void OnMapStart(const YAML::Mark &m, const std::string &, YAML::anchor_t, YAML::EmitterStyle::value) override
	{
		open(m, Node::map);
	}
	void OnMapEnd() override { close(); }

	[[noreturn]] void refuse(const YAML::Mark &m, PolicyError e, std::string reason) const
	{
		throw Refusal{PolicyFileError{e, file_, uint32_t(m.line + 1), uint32_t(m.column + 1), std::move(reason), 0}};
	}

private:
	Node leaf(const YAML::Mark &m, Node::Kind kind, std::string value)
	{
		count(m);
		if (auto ok = check_nesting_depth(open_.size() + 1); !ok)
			refuse(m, PolicyError::too_deep, ok.error().message);
		Node n;
		n.kind = kind;
		n.line = uint32_t(m.line + 1);
		n.column = uint32_t(m.column + 1);
		n.value = std::move(value);
		return n;
	}
	void open(const YAML::Mark &m, Node::Kind kind) { open_.push_back(leaf(m, kind, {})); }
	void close()
	{
		Node n = std::move(open_.back());
		open_.pop_back();
		add(std::move(n));
	}
	void add(Node n)
	{
		if (open_.empty())
			root = std::move(n);
		else
			open_.back().items.push_back(std::move(n));
	}
	void count(const YAML::Mark &m)
	{
		if (auto ok = check_node_count(++nodes_); !ok)
			refuse(m, PolicyError::too_many_nodes, ok.error().message);
	}

	const std::string &file_;
	std::vector<Node> open_;
	uint64_t nodes_ = 0;
};

// The first byte that is not UTF-8 (or is NUL), as a line and column.
std::optional<std::pair<uint32_t, uint32_t>> bad_utf8_at(std::string_view s)
{
	uint32_t line = 1, column = 1;
	for (size_t i = 0; i < s.size();) {
		auto c = static_cast<unsigned char>(s[i]);
		size_t len = 0;
		uint32_t cp = 0, min = 0;
		if (c == 0)
			return std::pair{line, column};
		if (c < 0x80)
			len = 1, cp = c;
		else if ((c & 0xe0) == 0xc0)
			len = 2, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			len = 3, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			len = 4, cp = c & 0x07, min = 0x10000;
		else
			return std::pair{line, column};
		if (i + len > s.size())
			return std::pair{line, column};
		for (size_t k = 1; k < len; k++) {
			auto cc = static_cast<unsigned char>(s[i + k]);
			if ((cc & 0xc0) != 0x80)
				return std::pair{line, column};
			cp = (cp << 6) | (cc & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) // overlong, too large, surrogate
			return std::pair{line, column};
		if (c == '\n')
			line++, column = 1;
		else
			column++;
		i += len;
	}
	return std::nullopt;
}

// A prefix in one list, with where it was written (for the overlap errors).
struct Entry {
	Cidr cidr;
	std::string file;
	uint32_t line, column;
	size_t order; // as written
};

class Reader {
public:
	Reader(const std::string &file, const std::string &dir, std::vector<std::string> *files)
		: file_(file), dir_(dir), files_(files)
	{
	}

	Policy read(const Node &root)
	{
		if (root.kind == Node::null)
			refuse(root, PolicyError::missing_key, "the file is empty: it needs at least 'version: 1'");
		auto top = fields(root, "the policy", {"version", "classes", "rules", "allow", "deny"});
		const Node *version = top["version"];
		if (!version)
			refuse(root, PolicyError::missing_key, "the policy has no 'version' (write 'version: 1')");
		if (scalar(*version, "version") != "1")
			refuse(*version, PolicyError::bad_version,
			       "version '" + version->value + "' is not one this sluice reads (1)");

		Policy p = default_policy();
		// A key with nothing under it (every entry commented out) is empty.
		auto given = [&](const char *key) {
			const Node *n = top[key];
			return n && n->kind != Node::null ? n : nullptr;
		};
		if (const Node *classes = given("classes"))
			read_classes(*classes, p);
		if (const Node *rules = given("rules"))
			read_rules(*rules, p);
		if (const Node *allow = given("allow"))
			p.allow = read_list(*allow, "the allow list", allow_room_);
		if (const Node *deny = given("deny"))
			p.deny = read_list(*deny, "the deny list", deny_room_, &p.deny_upstream);
		// What the walk did not check itself (the reader checks as it
		// goes, with positions); this holds them all.
		if (auto ok = check_policy(p); !ok)
			refuse(root, PolicyError::bad_value, ok.error().message);
		return p;
	}

private:
	// Room left per family: {v4, v6}.
	struct Room {
		size_t v4 = SLUICE_LIST_MAX_ENTRIES, v6 = SLUICE_LIST_MAX_ENTRIES;
	};

	[[noreturn]] void refuse(const Node &n, PolicyError e, std::string reason) const
	{
		throw Refusal{PolicyFileError{e, file_, n.line, n.column, std::move(reason), 0}};
	}

	static const char *kind_name(Node::Kind k)
	{
		switch (k) {
		case Node::null:
			return "nothing";
		case Node::scalar:
			return "a value";
		case Node::seq:
			return "a list";
		case Node::map:
			return "a map";
		}
		return "?";
	}

	void expect(const Node &n, Node::Kind k, const std::string &what) const
	{
		if (n.kind != k)
			refuse(n, PolicyError::wrong_type,
			       what + " must be " + kind_name(k) + ", not " + kind_name(n.kind));
	}

	const std::string &scalar(const Node &n, const std::string &what) const
	{
		expect(n, Node::scalar, what);
		return n.value;
	}

	// A map's keys, each once and each one of `known`; key -> value.
	struct Fields {
		std::map<std::string, const Node *> by_key;
		const Node *operator[](const std::string &k) const
		{
			auto it = by_key.find(k);
			return it == by_key.end() ? nullptr : it->second;
		}
	};
	Fields fields(const Node &n, const std::string &what, std::initializer_list<const char *> known) const
	{
		expect(n, Node::map, what);
		Fields f;
		for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
			const Node &key = n.items[i];
			const std::string &k = scalar(key, "a key in " + what);
			if (std::find_if(known.begin(), known.end(), [&](const char *s) { return k == s; }) == known.end()) {
				std::string list;
				for (const char *s : known)
					list += (list.empty() ? "" : ", ") + std::string(s);
				refuse(key, PolicyError::unknown_key, what + " has no key '" + k + "' (its keys: " + list + ")");
			}
			if (!f.by_key.emplace(k, &n.items[i + 1]).second)
				refuse(key, PolicyError::duplicate_key, "'" + k + "' is given twice in " + what);
		}
		return f;
	}

	// A non-negative integer; '_' may group digits (1_000_000).
	uint64_t integer(const Node &n, const std::string &what) const
	{
		const std::string &text = scalar(n, what);
		std::string digits;
		bool negative = !text.empty() && text[0] == '-';
		for (size_t i = negative ? 1 : 0; i < text.size(); i++) {
			char c = text[i];
			if (c == '_' && !digits.empty() && i + 1 < text.size() && text[i + 1] != '_')
				continue;
			if (c < '0' || c > '9')
				refuse(n, PolicyError::wrong_type, what + " '" + text + "' is not a whole number");
			digits += c;
		}
		if (digits.empty())
			refuse(n, PolicyError::wrong_type, what + " '" + text + "' is not a whole number");
		uint64_t v = 0;
		auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
		if (ec != std::errc() || end != digits.data() + digits.size())
			refuse(n, PolicyError::bad_value, what + " " + text + " is too large");
		if (negative && v != 0)
			refuse(n, PolicyError::bad_value, what + " " + text + " is negative");
		return v;
	}

	uint64_t bounded(const Node &n, const std::string &what, Status (*check)(Given, Voice), PolicyError e) const
	{
		uint64_t v = integer(n, what);
		if (auto ok = named(what, check(v, Voice::input)); !ok)
			refuse(n, e, ok.error().message);
		return v;
	}
	uint64_t bounded(const Node &n, const std::string &what, Status (*check)(Given), PolicyError e) const
	{
		uint64_t v = integer(n, what);
		if (auto ok = named(what, check(v)); !ok)
			refuse(n, e, ok.error().message);
		return v;
	}

	// Two keys that come together (rate and burst): both, or neither.
	std::optional<Budget> pair(const Fields &f, const std::string &what, const char *rate_key,
				   const char *burst_key, Status (*rate_check)(Given, Voice),
				   Status (*burst_check)(Given, Voice)) const
	{
		const Node *rate = f[rate_key], *burst = f[burst_key];
		if (!rate && !burst)
			return std::nullopt;
		if (!rate || !burst)
			refuse(rate ? *rate : *burst, PolicyError::missing_key,
			       what + " gives '" + (rate ? rate_key : burst_key) + "' without '" +
				       (rate ? burst_key : rate_key) + "': they come together");
		return Budget{bounded(*rate, what + " " + rate_key, rate_check, PolicyError::bad_value),
			      bounded(*burst, what + " " + burst_key, burst_check, PolicyError::bad_value)};
	}

	static Status byte_rate(Given v, Voice) { return check_byte_rate(v); }
	static Status byte_burst(Given v, Voice) { return check_byte_burst(v); }
	static Status v4_prefix(Given v) { return check_v4_prefix(v); }
	static Status v6_prefix(Given v) { return check_v6_prefix(v); }

	void read_classes(const Node &n, Policy &p)
	{
		expect(n, Node::map, "classes");
		std::set<std::string> seen;
		for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
			const Node &key = n.items[i];
			const std::string &name = scalar(key, "a class name");
			if (auto ok = check_class_name(name); !ok)
				refuse(key, PolicyError::bad_name, ok.error().message);
			if (!seen.insert(name).second)
				refuse(key, PolicyError::duplicate_key, "class '" + name + "' is defined twice");
			PolicyClass c = read_class(n.items[i + 1], name);
			if (name == "default") {
				p.classes[0] = std::move(c);
				p.default_from_options = false;
				continue;
			}
			if (auto ok = check_class_count(p.classes.size() + 1); !ok)
				refuse(key, PolicyError::too_many_classes,
				       "class '" + name + "' is one more than the " + std::to_string(kMaxClasses) +
					       " a policy holds (the default class included)");
			p.classes.push_back(std::move(c));
		}
	}

	PolicyClass read_class(const Node &n, const std::string &name) const
	{
		std::string what = "class " + name;
		auto f = fields(n, what,
				{"action", "rate", "burst", "byte-rate", "byte-burst", "ipv4-prefix", "ipv6-prefix",
				 "standing-rate", "standing-burst"});
		PolicyClass c;
		c.name = name;
		if (const Node *a = f["action"]) {
			const std::string &s = scalar(*a, what + " action");
			if (s == "limit")
				c.action = ClassAction::limit;
			else if (s == "exempt")
				c.action = ClassAction::exempt;
			else if (s == "deny")
				c.action = ClassAction::deny;
			else
				refuse(*a, PolicyError::bad_value, what + " action '" + s + "' is not limit, exempt or deny");
		}
		if (c.action != ClassAction::limit) {
			// Nothing else applies to a class that is not limited.
			for (const auto &[k, v] : f.by_key)
				if (k != "action")
					refuse(*v, PolicyError::bad_value,
					       what + " is " + action_name(c.action) + ": '" + k + "' does not apply to it");
			if (name == "default")
				refuse(*f["action"], PolicyError::bad_value,
				       "the default class cannot be " + std::string(action_name(c.action)) +
					       ": it holds every source no rule names");
			return c;
		}
		auto packets = pair(f, what, "rate", "burst", check_rate, check_burst);
		if (!packets)
			refuse(n, PolicyError::missing_key, what + " needs 'rate' and 'burst' (packets per second and packets)");
		c.packets = *packets;
		c.bytes = pair(f, what, "byte-rate", "byte-burst", byte_rate, byte_burst);
		c.standing = pair(f, what, "standing-rate", "standing-burst", check_rate, check_burst);
		if (const Node *v = f["ipv4-prefix"])
			c.v4_prefix = uint32_t(bounded(*v, what + " ipv4-prefix", v4_prefix, PolicyError::bad_value));
		if (const Node *v = f["ipv6-prefix"])
			c.v6_prefix = uint32_t(bounded(*v, what + " ipv6-prefix", v6_prefix, PolicyError::bad_value));
		return c;
	}

	void read_rules(const Node &n, Policy &p)
	{
		expect(n, Node::seq, "rules");
		for (size_t i = 0; i < n.items.size(); i++) {
			const Node &item = n.items[i];
			if (auto ok = check_rule_count(i + 1); !ok)
				refuse(item, PolicyError::too_many_rules,
				       "rule " + std::to_string(i + 1) + " is one more than the " +
					       std::to_string(kMaxRules) + " a policy holds");
			p.rules.push_back(read_rule(item, i + 1, p));
		}
	}

	ClassRule read_rule(const Node &n, size_t number, const Policy &p)
	{
		std::string what = "rule " + std::to_string(number);
		auto f = fields(n, what, {"sources", "protocol", "ports", "class"});
		ClassRule r;
		r.line = n.line;
		const Node *cls = f["class"];
		if (!cls)
			refuse(n, PolicyError::missing_key, what + " names no 'class'");
		const std::string &name = scalar(*cls, what + " class");
		auto it = std::find_if(p.classes.begin(), p.classes.end(), [&](const PolicyClass &c) { return c.name == name; });
		if (it == p.classes.end())
			refuse(*cls, PolicyError::unknown_class, what + " names class '" + name + "', which 'classes' does not define");
		r.class_index = size_t(it - p.classes.begin());
		if (const Node *proto = f["protocol"]) {
			const std::string &s = scalar(*proto, what + " protocol");
			static const std::pair<const char *, Protocol> names[] = {
				{"tcp", Protocol::tcp},   {"tcp-syn", Protocol::tcp_syn}, {"udp", Protocol::udp},
				{"icmp", Protocol::icmp}, {"icmpv6", Protocol::icmpv6},
			};
			auto pn = std::find_if(std::begin(names), std::end(names), [&](const auto &e) { return s == e.first; });
			if (pn == std::end(names))
				refuse(*proto, PolicyError::bad_protocol,
				       what + " protocol '" + s + "' is not tcp, tcp-syn, udp, icmp or icmpv6");
			r.protocol = pn->second;
		}
		if (const Node *ports = f["ports"]) {
			if (!has_ports(r.protocol))
				refuse(*ports, PolicyError::bad_rule,
				       what + " names ports: give it protocol tcp, tcp-syn or udp (" +
					       protocol_name(r.protocol) + " has none)");
			r.ports = port_range(*ports, what + " ports");
		}
		if (const Node *sources = f["sources"])
			for (auto &e : read_entries(*sources, what + " sources", sources_room_))
				r.sources.push_back(e.cidr);
		if (r.sources.empty() && r.protocol == Protocol::any)
			refuse(n, PolicyError::bad_rule,
			       what + " matches every frame: give it sources or a protocol (or change the default class)");
		return r;
	}

	// "53" or "1024-2047".
	PortSpan port_range(const Node &n, const std::string &what) const
	{
		const std::string &text = scalar(n, what);
		if (text.starts_with('-'))
			refuse(n, PolicyError::bad_port, named(what, check_port(-1)).error().message);
		size_t dash = text.find('-', 1);
		Node lo_node = n, hi_node = n;
		lo_node.value = text.substr(0, dash);
		hi_node.value = dash == std::string::npos ? lo_node.value : text.substr(dash + 1);
		uint64_t lo = integer(lo_node, what), hi = integer(hi_node, what);
		if (auto ok = named(what, check_port_range(lo, hi)); !ok)
			refuse(n, PolicyError::bad_port, ok.error().message);
		return PortSpan{uint16_t(lo), uint16_t(hi)};
	}

	// `upstream`: where the entries marked `upstream: true` go (the deny
	// list only; elsewhere the key is refused).
	std::vector<Cidr> read_list(const Node &n, const std::string &what, Room &room,
				    std::vector<Cidr> *upstream = nullptr)
	{
		std::vector<Cidr> out;
		for (auto &e : read_entries(n, what, room, upstream))
			out.push_back(e.cidr);
		return out;
	}

	// `upstream: true|false` on an item of a list.
	bool upstream_flag(const Fields &f, const std::string &what, bool allowed) const
	{
		const Node *up = f["upstream"];
		if (!up)
			return false;
		if (!allowed)
			refuse(*up, PolicyError::bad_value,
			       "'upstream' in " + what + ": only the deny list's entries are announced upstream");
		const std::string &v = scalar(*up, "upstream");
		if (v == "true")
			return true;
		if (v == "false")
			return false;
		refuse(*up, PolicyError::wrong_type, "upstream '" + v + "' is not true or false");
	}

	// A list of prefixes: each item a prefix, {file: PATH} (a netset) or
	// {prefix: CIDR}; in the deny list a map item may add `upstream: true`.
	// Refused when a prefix is there twice or lies inside another.
	std::vector<Entry> read_entries(const Node &n, const std::string &what, Room &room,
					std::vector<Cidr> *upstream = nullptr)
	{
		expect(n, Node::seq, what);
		std::vector<Entry> out;
		for (const Node &item : n.items) {
			if (item.kind == Node::map) {
				auto f = fields(item, "an entry of " + what, {"file", "prefix", "upstream"});
				bool up = upstream_flag(f, what, upstream != nullptr);
				size_t first = out.size();
				const Node *file = f["file"];
				if (const Node *prefix = f["prefix"]) {
					if (file)
						refuse(item, PolicyError::bad_value,
						       "an entry of " + what + " names both 'file' and 'prefix': one of them");
					const std::string &text = scalar(*prefix, "an entry's prefix");
					auto c = parse_cidr(text);
					if (!c)
						refuse(*prefix, PolicyError::bad_prefix, c.error().message);
					add(out, room, Entry{*c, file_, prefix->line, prefix->column, out.size()}, *prefix, what);
					if (up)
						upstream->push_back(*c);
					continue;
				}
				if (!file)
					refuse(item, PolicyError::missing_key,
					       "an entry of " + what + " names no 'file' (a netset) or 'prefix'");
				std::string path = scalar(*file, "a netset's file");
				if (path.empty())
					refuse(*file, PolicyError::bad_value, "a netset's file is empty");
				if (path[0] != '/')
					path = dir_ + "/" + path;
				if (files_)
					files_->push_back(path);
				auto entries = read_netset(path, room.v4, room.v6);
				if (!entries) {
					// The netset's own errors carry its lines; an open
					// or type error is the policy file's, where it
					// names the netset.
					PolicyFileError e = std::move(entries.error());
					if (e.line == 0) {
						e.reason = "netset " + e.file + ": " + e.reason;
						e.file = file_;
						e.line = file->line;
						e.column = file->column;
					}
					throw Refusal{std::move(e)};
				}
				for (const auto &ne : *entries)
					add(out, room, Entry{ne.cidr, path, ne.line, ne.column, out.size()}, item, what);
				if (up)
					for (size_t i = first; i < out.size(); i++)
						upstream->push_back(out[i].cidr);
				continue;
			}
			const std::string &text = scalar(item, "an entry of " + what);
			auto c = parse_cidr(text);
			if (!c)
				refuse(item, PolicyError::bad_prefix, c.error().message);
			add(out, room, Entry{*c, file_, item.line, item.column, out.size()}, item, what);
		}
		no_overlaps(out, what);
		return out;
	}

	void add(std::vector<Entry> &out, Room &room, Entry e, const Node &at, const std::string &what)
	{
		size_t &left = e.cidr.addr.family == Family::v4 ? room.v4 : room.v6;
		if (left == 0) {
			std::string reason = what + " holds more IPv" + (e.cidr.addr.family == Family::v4 ? "4" : "6") +
					     " prefixes than its map (" + std::to_string(SLUICE_LIST_MAX_ENTRIES) + ")";
			if (e.file == file_)
				refuse(at, PolicyError::too_many_entries, reason);
			throw Refusal{PolicyFileError{PolicyError::too_many_entries, e.file, e.line, e.column, reason, 0}};
		}
		left--;
		out.push_back(std::move(e));
	}

	static std::string where(const Entry &e) { return e.file + ":" + std::to_string(e.line); }

	// Sorted by address, a prefix containing another comes before it and
	// every prefix between them lies inside it too, so an overlap anywhere
	// shows in some neighbouring pair.
	void no_overlaps(const std::vector<Entry> &entries, const std::string &what) const
	{
		std::vector<const Entry *> sorted;
		for (const auto &e : entries)
			sorted.push_back(&e);
		std::sort(sorted.begin(), sorted.end(), [](const Entry *a, const Entry *b) {
			if (a->cidr.addr.family != b->cidr.addr.family)
				return a->cidr.addr.family < b->cidr.addr.family;
			if (a->cidr.addr.bytes != b->cidr.addr.bytes)
				return a->cidr.addr.bytes < b->cidr.addr.bytes;
			if (a->cidr.prefix != b->cidr.prefix)
				return a->cidr.prefix < b->cidr.prefix;
			return a->order < b->order;
		});
		for (size_t i = 1; i < sorted.size(); i++) {
			const Entry &outer = *sorted[i - 1], &inner = *sorted[i];
			if (!contains(outer.cidr, inner.cidr))
				continue;
			bool same = outer.cidr == inner.cidr;
			std::string reason = same ? what + " holds " + inner.cidr.str() + " twice (also at " + where(outer) + ")"
						  : what + " holds " + inner.cidr.str() + ", which lies inside " +
							    outer.cidr.str() + " (at " + where(outer) +
							    "): one of them is a mistake";
			throw Refusal{PolicyFileError{same ? PolicyError::duplicate_prefix : PolicyError::overlapping_prefix,
						      inner.file, inner.line, inner.column, reason, 0}};
		}
	}

	const std::string &file_;
	std::string dir_;
	std::vector<std::string> *files_; // the netsets read, when asked
	Room allow_room_, deny_room_, sources_room_;
};

std::string directory_of(const std::string &path)
{
	size_t slash = path.rfind('/');
	if (slash == std::string::npos)
		return ".";
	if (slash == 0)
		return "/";
	return path.substr(0, slash);
}

} // namespace

PolicyResult<Policy> parse_policy(std::string_view text, const std::string &name, const std::string &dir,
				  std::vector<std::string> *files)
{
	if (auto ok = check_file_bytes(text.size()); !ok)
		return std::unexpected(PolicyFileError{PolicyError::too_large, name, 0, 0, ok.error().message, 0});
	if (auto at = bad_utf8_at(text))
		return std::unexpected(PolicyFileError{PolicyError::bad_utf8, name, at->first, at->second,
						       "not UTF-8 (or a NUL byte): a policy file is UTF-8 text", 0});
	try {
		std::istringstream in{std::string(text)};
		YAML::Parser parser(in);
		TreeBuilder tree(name);
		while (parser.HandleNextDocument(tree)) {
		}
		return Reader(name, dir, files).read(tree.root);
	} catch (const Refusal &r) {
		return std::unexpected(r.e);
	} catch (const YAML::DeepRecursion &e) {
		return std::unexpected(PolicyFileError{PolicyError::too_deep, name, uint32_t(e.mark.line + 1),
						       uint32_t(e.mark.column + 1), e.msg, 0});
	} catch (const YAML::Exception &e) {
		uint32_t line = e.mark.is_null() ? 0 : uint32_t(e.mark.line + 1);
		uint32_t column = e.mark.is_null() ? 0 : uint32_t(e.mark.column + 1);
		return std::unexpected(PolicyFileError{PolicyError::bad_yaml, name, line, column, e.msg, 0});
	}
}

PolicyResult<Policy> read_policy(const std::string &path, std::vector<std::string> *files)
{
	auto text = read_bounded_file(path);
	if (!text)
		return std::unexpected(std::move(text.error()));
	return parse_policy(*text, path, directory_of(path), files);
}

Result<Policy> load_policy(const std::string &path, std::vector<std::string> *files)
{
	auto p = read_policy(path, files);
	if (!p)
		return std::unexpected(p.error().as_error());
	return std::move(*p);
}

} // namespace sluice
