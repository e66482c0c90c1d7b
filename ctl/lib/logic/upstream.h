// upstream.h - what sluice asks the network upstream to drop, decided with no
// I/O (docs/upstream.md): the rules (FlowSpec, RFC 8955), the guards every
// rule passes before it is announced (a bad announcement takes a network
// down), and the reconciliation of the rules wanted with the paths the BGP
// speaker holds (adopt what is wanted, announce what is missing, withdraw
// what is not wanted once its hold is over). The speaker itself is
// ctl/lib/upstream's.
#pragma once

#include "base/address.h"
#include "base/result.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

enum class UpstreamAction : uint8_t { discard, rate_limit };

// One FlowSpec rule: traffic to `destination` (always inside the operator's
// own prefixes), from `source` when set, of `protocol` to `dport` when set;
// dropped, or limited to `rate_bytes` bytes a second.
struct UpstreamRule {
	Cidr destination;
	std::optional<Cidr> source;
	std::optional<uint8_t> protocol;
	std::optional<uint16_t> dport; // only with protocol 6 or 17
	UpstreamAction action = UpstreamAction::discard;
	uint64_t rate_bytes = 0; // rate_limit only

	Family family() const { return destination.addr.family; }
	// "dst 198.18.1.0/24 src 198.18.3.7/32 proto 17 dport 53 discard": the
	// one text a rule is logged, listed and compared by.
	std::string str() const;
	bool operator==(const UpstreamRule &) const = default;
};

// The guards (--upstream-prefixes, --upstream-min-prefix4/6, --upstream-max).
struct UpstreamGuards {
	std::vector<Cidr> own;      // destinations must fall inside one of these
	uint32_t min_source4 = 24;  // a source prefix is never shorter than this
	uint32_t min_source6 = 48;
	size_t max = 16;            // announcements at most, all interfaces together
};

// Whether a source must never be announced: allowlisted or with standing.
// Returns the reason ("allowlisted (198.18.2.0/24)") or none.
using ProtectedSource = std::function<std::optional<std::string>(const Cidr &source)>;

// Refused (ErrorKind::refused, the guard named) when the rule must not be
// announced: a destination outside the own prefixes, a source prefix shorter
// than the bound or of the other family, a protected source, a port without
// TCP or UDP, a rate of 0.
Status check_rule(const UpstreamGuards &guards, const UpstreamRule &rule, const ProtectedSource &is_protected);

// The FlowSpec rules that ask the network to drop `source` towards this
// host: one per own prefix of the source's family (a rule without a
// destination would drop the source's traffic to the upstream's other
// customers too). None when the operator has no own prefix of that family.
std::vector<UpstreamRule> source_rules(const UpstreamGuards &guards, const Cidr &source);

// A rule wanted, and why ("operator: sluicectl deny add eth0 ... --upstream").
struct UpstreamWanted {
	UpstreamRule rule;
	std::string iface;
	std::string reason;
	bool held = true; // withdrawn only after the hold once no longer wanted
};

// A rule this daemon announced or adopted.
struct UpstreamHeld {
	UpstreamRule rule;
	std::string iface;
	std::string reason;
	double since_s = 0; // announced (or adopted) at, on the daemon's clock
	bool held = true;
};

struct UpstreamPlan {
	std::vector<UpstreamWanted> announce; // wanted, not held by the speaker
	std::vector<UpstreamRule> withdraw;   // held by the speaker, not wanted (hold over)
	std::vector<UpstreamRule> adopt;      // held by the speaker and wanted: kept as they are
	std::vector<UpstreamWanted> over_max; // wanted, refused: --upstream-max reached
	std::vector<UpstreamRule> holding;    // not wanted, kept until the hold is over
};

// The one reconciliation. `wanted` in priority order (the first max win),
// `speaker` the sluice-marked paths the speaker holds now, `mine` what this
// daemon announced or adopted (for the hold). A path on the speaker this
// daemon does not know (a previous daemon's) is adopted when wanted and
// withdrawn at once when not. Duplicates in `wanted` count once.
UpstreamPlan plan_upstream(const std::vector<UpstreamWanted> &wanted, const std::vector<UpstreamRule> &speaker,
			   const std::vector<UpstreamHeld> &mine, size_t max, double hold_s, double now_s);

} // namespace sluice
