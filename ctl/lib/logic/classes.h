// classes.h - policy classes and the rules that give a frame its class: the
// typed model the policy file (policyfile/) is read into, and the one matcher
// (`explain`) that says which class a frame gets and why. Pure: no kernel, no
// files. docs/policy.md describes the file and the same precedence.
//
// THE PRECEDENCE (one order, first difference decides):
//   1. the deny list: a source in it is dropped, whatever the rules say;
//   2. the rules that match the frame, the most specific first:
//      a. the longest matching source prefix (a rule without sources is less
//         specific than any rule with them, /0 included);
//      b. the narrowest port range (a rule without ports covers all 65,536);
//      c. the narrowest protocol: tcp-syn inside tcp inside "any protocol"
//         (udp, icmp and icmpv6 are as narrow as tcp; a frame has only one);
//      d. a tie goes to the rule written first;
//   3. no rule matches: the default class (classes[0]).
// Why this order: it is longest-prefix match, as routing and every firewall
// set work, extended to ports the same way (the narrower wins), so a carve-out
// ("this /24 inside the NAT /16", "port 53 inside all UDP") needs no ordering
// by hand; rule order only breaks exact ties. And it is what one LPM lookup
// can answer: the prefixes that contain an address are nested, so the entry
// of the longest one can carry, compiled in, every rule of the prefixes
// around it in this order.
//
// The allow list keeps its meaning (docs/architecture.md): while the breaker
// is shedding an allowlisted source passes; otherwise it is held to its class
// like any source. `explain` reports it beside the class. A class with action
// `exempt` is the way to exempt a source in every state.
#pragma once

#include "base/address.h"
#include "base/defaults.h"
#include "base/limits.h"
#include "base/port_span.h"
#include "base/result.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

enum class ClassAction {
	limit,  // held to the class's budgets
	exempt, // counted, never limited
	deny,   // dropped
};
const char *action_name(ClassAction a);

// A budget in tokens: tokens per second and bucket capacity.
struct Budget {
	uint64_t rate = 0;
	uint64_t burst = 0;
	bool operator==(const Budget &) const = default;
};

struct PolicyClass {
	std::string name;                  // check_class_name; unique in a Policy
	ClassAction action = ClassAction::limit;
	Budget packets{defaults::kRatePps, defaults::kBurst}; // packets/s and packets (check_rate, check_burst)
	std::optional<Budget> bytes;       // bytes/s and bytes (check_byte_rate, check_byte_burst);
	                                   // a frame passes only when both budgets allow it
	uint32_t v4_prefix = defaults::kV4Prefix; // sources share a bucket per prefix
	uint32_t v6_prefix = defaults::kV6Prefix;
	std::optional<Budget> standing;    // the standing bucket; none = sluiced's
	                                   // --standing-rate/--standing-burst
	bool operator==(const PolicyClass &) const = default;
};

// What a rule matches on besides the source. A frame is one of tcp, udp,
// icmp, icmpv6 or something else; tcp_syn is a TCP frame with SYN set and
// ACK clear (a connection's first frame), which tcp rules match too.
enum class Protocol { any, tcp, tcp_syn, udp, icmp, icmpv6 };
const char *protocol_name(Protocol p); // "any", "tcp", "tcp-syn", "udp", "icmp", "icmpv6"
// Whether the protocol has destination ports a rule may name.
bool has_ports(Protocol p);

// A rule: the frames it matches get its class. It matches a frame when every
// part it names matches: a source in one of `sources` (either family; none =
// any source), the protocol, and the destination port in `ports`.
struct ClassRule {
	std::vector<Cidr> sources;
	Protocol protocol = Protocol::any;
	std::optional<PortSpan> ports; // destination ports; only with tcp, tcp_syn, udp
	size_t class_index = 0;         // into Policy::classes
	uint32_t line = 0;              // where the file wrote it (0: not from a file)
	bool operator==(const ClassRule &) const = default;
};

struct Policy {
	// classes[0] is the default class, named "default"; at most kMaxClasses.
	std::vector<PolicyClass> classes;
	std::vector<ClassRule> rules; // at most kMaxRules, in the order written
	std::vector<Cidr> allow;      // both families; per family at most SLUICE_LIST_MAX_ENTRIES
	std::vector<Cidr> deny;
	// The deny list's entries the file marks `upstream: true` (each also in
	// deny): announced upstream when sluiced runs with --upstream
	// (docs/upstream.md); in the order written.
	std::vector<Cidr> deny_upstream;
	// The file named no `default` class: the daemon's --rate/--burst and
	// prefixes apply to it (classes[0] then holds defaults.h's values).
	bool default_from_options = true;
	bool operator==(const Policy &) const = default;
};

// A rule's place in the precedence (steps 2a-2d above) for the frames it
// matches: the one order explain picks the winner by and logic/class_tables
// compiles the tables in.
struct RuleSpecificity {
	size_t rule = 0;        // index into Policy::rules
	int source_len = -1;    // the longest matching source prefix; -1: the rule names no sources
	uint32_t width = 65536; // destination ports covered (65,536 without ports)
	int protocol_rank = 0;  // tcp-syn 2; tcp, udp, icmp, icmpv6 1; any 0
};
// Of rules[rule] matching with a source prefix of `source_len` (-1: none).
RuleSpecificity specificity(const Policy &p, size_t rule, int source_len);
// a wins over b: more specific at the first step that differs, or written first.
bool more_specific(const RuleSpecificity &a, const RuleSpecificity &b);

// The default class alone: what sluiced enforces without a policy file.
Policy default_policy();

// Every invariant of a Policy, each bound by base/limits: the class count and
// names (unique, classes[0] "default"), rates, bursts, byte budgets and
// prefixes; rules' class indices, protocols with ports, port ranges, source
// and list entry counts per family. The loader ends with it; so does
// anything that builds a Policy by hand.
Status check_policy(const Policy &p);

bool contains(const Cidr &outer, const Address &a);
bool contains(const Cidr &outer, const Cidr &inner); // inner lies inside outer (or is it)
// The address with its host bits under `prefix` cleared, as a prefix.
Cidr aggregate(const Address &a, uint32_t prefix);

// A frame, as explain takes it: a source, the protocol the frame carries
// (Protocol::any for one that is none of the named ones; tcp_syn for a TCP
// SYN without ACK) and its destination port (ignored without ports).
struct Frame {
	Address source;
	Protocol protocol = Protocol::any;
	uint16_t port = 0;
};

enum class Decided {
	deny_list, // the source is in the deny list
	rule,      // a rule chose the class
	fallback,  // no rule matched: the default class
};

// Why a matching rule did not win: the first step of the precedence at which
// the winner was more specific.
enum class LostOn { deny_list, source_prefix, port_range, protocol, order };
const char *lost_on_name(LostOn l);

struct LosingRule {
	size_t rule = 0;
	std::string text;   // describe_rule
	LostOn lost_on = LostOn::order;
	std::string why;    // "/16 is shorter than /24", "written after rule 2"
};

struct Explanation {
	Decided decided = Decided::fallback;
	// The class (for the deny list: the frame is dropped before any class
	// applies; class_index is then 0 and action deny).
	size_t class_index = 0;
	std::string class_name;
	ClassAction action = ClassAction::limit;
	std::optional<size_t> rule;              // the rule that matched (Decided::rule)
	std::string rule_text;
	std::optional<Cidr> deny_entry;          // the deny list's matching prefix
	std::optional<Cidr> allow_entry;         // allowlisted: passes while shedding
	std::optional<Cidr> source_prefix;       // the winning rule's matching source prefix
	Cidr bucket;                             // the source aggregated to the class's prefix
	std::vector<LosingRule> losers;          // every other matching rule, in rule order
	std::string why;                         // one sentence
};

// "rule 2 (line 31): sources 198.51.100.0/24 udp port 53 -> dns": rules are
// numbered from 1 in texts, as an operator counts them in the file (`rule`
// fields are indices, from 0).
std::string describe_rule(const Policy &p, size_t rule);

// The class a frame gets and why. `p` must pass check_policy.
Explanation explain(const Policy &p, const Frame &frame);
inline Explanation explain(const Policy &p, const Address &source, Protocol protocol, uint16_t port)
{
	return explain(p, Frame{source, protocol, port});
}

// The explanation as lines an operator reads (sluicectl explain prints this).
std::string describe(const Explanation &e);

} // namespace sluice
