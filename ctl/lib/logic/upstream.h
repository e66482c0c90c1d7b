// upstream.h - what sluice asks the network upstream to drop, decided with no
// I/O (docs/upstream.md): the rules (FlowSpec, RFC 8955), the guards every
// rule passes before it is announced (a bad announcement takes a network
// down), and the reconciliation of the rules wanted with the paths the BGP
// speaker holds (adopt what is wanted, announce what is missing, withdraw
// what is not wanted once its hold is over). The speaker itself is
// ctl/lib/upstream's.
#pragma once

#include "base/address.h"
#include "base/port_span.h"
#include "base/result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

enum class UpstreamAction : uint8_t { discard, rate_limit };

// What a rule is announced as: a FlowSpec rule (RFC 8955), or a blackhole
// route (RFC 7999's BLACKHOLE community): of a source, which the upstream
// drops by loose uRPF (source-based RTBH, RFC 5635, --upstream-mode
// blackhole), or of an own address, which takes it offline (the last resort,
// --upstream-blackhole).
enum class UpstreamKind : uint8_t { flowspec, blackhole_source, blackhole_destination };

// One rule. FlowSpec: traffic to `destination` (always inside the
// operator's own prefixes), from `source` when set, of `protocol` to `dport`
// when set, with exactly the TCP flags `tcp_flags` and of IP packet length
// `length` when set; dropped, or limited to `rate_bytes` bytes a second. A blackhole:
// `destination` is the prefix announced (the source's for blackhole_source).
struct UpstreamRule {
	Cidr destination;
	std::optional<Cidr> source;
	std::optional<uint8_t> protocol;
	std::optional<uint16_t> dport; // only with protocol 6 or 17
	std::optional<uint8_t> tcp_flags; // the whole flags byte (CWR..FIN), only with protocol 6
	std::optional<uint16_t> length;   // the IP packet's length (RFC 8955 type 10)
	UpstreamAction action = UpstreamAction::discard;
	uint64_t rate_bytes = 0; // rate_limit only
	UpstreamKind kind = UpstreamKind::flowspec;

	Family family() const { return destination.addr.family; }
	bool blackhole() const { return kind != UpstreamKind::flowspec; }
	// "dst 198.18.1.0/24 src 198.18.3.7/32 proto 17 dport 53 length 128 discard",
	// "dst 198.18.1.2/32 proto 6 dport 80 tcp-flags 0x02 discard",
	// "blackhole src 198.18.3.7/32", "blackhole dst 198.18.1.2/32": the
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

// What a rule would drop upstream, as the protection guard asks it: the
// sources it matches (its source prefix, the whole prefix; every address of
// its family when it names no source, as the flood's signature does) and
// what it names of the frames (none: every protocol, every port).
struct RuleReach {
	Cidr sources;
	std::optional<uint8_t> protocol;
	std::optional<uint16_t> dport;
	bool operator==(const RuleReach &) const = default;
};
// A rule's reach; none for a destination blackhole (the last resort drops
// every packet to the address, protected sources' too: that is what the
// operator opted in to with --upstream-blackhole).
std::optional<RuleReach> rule_reach(const UpstreamRule &rule);

// Whether a rule of that reach would drop a protected source: an allowlisted
// prefix overlapping it, or a source with standing anywhere inside it whose
// standing the rule's protocol and port reach (standing_reaches). Returns
// what it would drop ("an allowlisted prefix (198.18.2.0/24 on eth0)", "a
// source with standing (198.18.3.7/32 on eth0, accepted)") or none. A
// protection that cannot be read is an answer too (the guard fails closed).
using ProtectedSource = std::function<std::optional<std::string>(const RuleReach &reach)>;

// Refused (ErrorKind::refused, the guard named) when the rule must not be
// announced: a destination outside the own prefixes, a source prefix shorter
// than the bound or of the other family, a rule that would drop a protected
// source (a source rule: never; a rule that names no source, the flood's
// signature: only as a last resort, which the caller waives by passing no
// is_protected), a port without TCP or UDP, TCP flags without TCP, a rate of
// 0. A null is_protected checks no protection: for the operator's opt-in
// alone (--upstream-blackhole).
Status check_rule(const UpstreamGuards &guards, const UpstreamRule &rule, const ProtectedSource &is_protected);

// What a standing entry is known to send, from its proof, and so whether a
// rule of that reach would drop its frames (docs/upstream.md, "The
// guards"). A UDP grant (a port-bound entry, or reason udp) is the peer of
// a host's UDP client socket, and the feeders grant only from a socket bound
// inside the host's ephemeral port range: its frames are UDP to a port of
// `ephemeral`, so a rule reaches it when it names UDP and no port or a port
// of that range. A TCP proof (a handshake to a listener, a cookie, a
// connection the host opened, or one it found established) shows TCP: a
// rule reaches it when it names TCP. Observed standing, or a reason this
// build does not know, shows nothing in particular: every rule reaches it.
// A rule that names no protocol reaches every entry.
struct StandingProof {
	uint32_t reason = 0; // enum sluice_standing_reason
	uint16_t port = 0;   // 0: every frame; else a UDP grant's peer port
};
bool standing_reaches(const StandingProof &entry, const RuleReach &reach, PortSpan ephemeral);

// Which of a set of reaches hold an address, for one scan of the standing
// table against every wide reach at once: the reaches are grouped by
// family and prefix length and sorted, so an address costs a binary search
// per distinct length (at most 33 or 129, a few in practice), not one test
// per reach.
class ReachIndex {
public:
	explicit ReachIndex(const std::vector<RuleReach> &reaches);
	// fn(i) for every reach i whose sources hold `addr`.
	void holding(const Address &addr, const std::function<void(size_t)> &fn) const;

private:
	struct Group {
		Family family;
		uint32_t prefix;
		std::vector<std::pair<std::array<uint8_t, 16>, size_t>> keys; // masked address bytes, reach index; sorted
	};
	std::vector<Group> groups_;
};

// Whether a dropped source's address is proved, then abused: its standing,
// earned by a completed handshake, a SYN cookie or a grant, was revoked (by
// the daemon, for sending far over its share, or by the operator's
// `sluicectl standing revoke`) and its penalty runs. The proof said
// ("standing revoked (revocation 1), barred for another 58 s") or none; an
// error when that cannot be read.
using ProvedSource = std::function<Result<std::optional<std::string>>(const Cidr &source)>;

// An automatic source rule may name `source` only when its address is
// proved, then abused (is_proved): the drop samples' concentration alone
// never names a source, since a spoofed flood names whoever it likes. The
// proof's text, or refused (ErrorKind::refused) saying why not: no proof,
// no hook, or a proof that cannot be read.
Result<std::string> source_proof(const Cidr &source, const ProvedSource &is_proved);

// The FlowSpec rules that ask the network to drop `source` towards this
// host: one per own prefix of the source's family (a rule without a
// destination would drop the source's traffic to the upstream's other
// customers too). None when the operator has no own prefix of that family.
std::vector<UpstreamRule> source_rules(const UpstreamGuards &guards, const Cidr &source);
// The same as `mode` says: FlowSpec rules (as above, with `action`), or
// one source-based blackhole route of `source` (blackhole).
enum class UpstreamMode : uint8_t { flowspec, blackhole };
std::vector<UpstreamRule> source_rules(const UpstreamGuards &guards, const Cidr &source, UpstreamMode mode,
				       UpstreamAction action, uint64_t rate_bytes);
// The last resort: a host route of `address` (/32 or /128) with the
// blackhole community.
UpstreamRule destination_blackhole(const Address &address);

// A rule wanted, and why ("operator: sluicectl deny add eth0 ... --upstream").
struct UpstreamWanted {
	UpstreamRule rule;
	std::string iface;
	std::string reason;
	bool held = true; // withdrawn only after the hold once no longer wanted
	bool operator==(const UpstreamWanted &) const = default;
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

// Automatic announcements while shedding (docs/upstream.md): when what
// arrives on an interface (every frame its program counted, bits and packets
// a second over a control period) stays over --upstream-bps or --upstream-pps
// for --upstream-after seconds while its breaker sheds, the trigger fires;
// it stays fired until the breaker leaves shedding (what arrives falls once
// the upstream drops the flood: that is the rules working, not the flood
// ending).
struct UpstreamAutoConfig {
	uint64_t bps = 0;     // --upstream-bps, bits a second arriving (0: not a trigger)
	uint64_t pps = 0;     // --upstream-pps, packets a second arriving (0: not a trigger)
	double after_s = 10;  // --upstream-after: over a threshold this long, shedding all along
	size_t top = 4;       // --upstream-top: source rules at most per interface
	UpstreamAction action = UpstreamAction::discard; // --upstream-action discard|rate:BITS
	uint64_t rate_bytes = 0;                         // rate_limit: bytes a second (FlowSpec's unit)
	bool enabled() const { return bps != 0 || pps != 0; }
};

// One control period of an interface, as the trigger sees it.
struct FloodReading {
	double now_s = 0;
	bool shedding = false;
	std::optional<double> pps, bps; // arriving; none before the first period
};

class FloodTrigger {
public:
	explicit FloodTrigger(const UpstreamAutoConfig &cfg) : cfg_(cfg) {}
	struct Step {
		bool firing = false;     // the automatic rules are wanted now
		bool fired_now = false;  // this period crossed --upstream-after
		bool ended_now = false;  // this period the breaker left shedding
		std::string why;         // "arriving 52000 pps (over --upstream-pps 20000) for 10 s while shedding"
	};
	Step step(const FloodReading &r);
	bool firing() const { return firing_; }

private:
	// The reading's rates over a threshold, said ("arriving ... (over ...)"), or empty.
	std::string over(const FloodReading &r) const;
	UpstreamAutoConfig cfg_;
	std::optional<double> over_since_s_; // over a threshold and shedding since
	bool firing_ = false;
	std::string why_;
};

// A dropped source of the sampling window (`sluicectl top`'s data): the
// source prefix, its samples (an overestimate) and their error.
struct DroppedSource {
	Cidr source;
	uint64_t samples = 0;
	uint64_t error = 0; // samples - error is an underestimate
};

// The sources heavy enough for a source-match rule: of the heaviest `top`
// (heaviest first), those that surely (samples - error) carry at least
// kFloodSourceShare of the window's samples and kFloodSourceSamples samples;
// none when those `top` together surely carry less than kFloodTopShare of
// them (a flood spread over many sources, spoofed most likely: a rule per
// source would not stop it). `why` says which. Heavy is not enough: each
// must also pass the guards and source_proof (its address proved, then
// abused) before it is announced, since one forged source address carried
// by most of a flood is as heavy as a real flooder.
inline constexpr double kFloodTopShare = 0.5;
inline constexpr double kFloodSourceShare = 0.05;
inline constexpr uint64_t kFloodSourceSamples = 4;
struct FloodSources {
	std::vector<DroppedSource> sources;
	bool spread = false; // refused: the flood is spread over many sources
	std::string why;
};
FloodSources flood_sources(const std::vector<DroppedSource> &heaviest, uint64_t total_samples, size_t top);

// The flood's signature (docs/upstream.md): of a window's drop samples, the
// value of each component (destination, protocol, destination port, TCP
// flags, IP packet length) that at least kSignatureShare of them carry, in
// a tally of fixed size (no allocation per sample: the daemon keeps one per
// interface). A tally counts the first kSignatureValues distinct values of a
// component exactly and the rest as `other`: a value that first shows up
// after those is never the one 90% share, unless the window is tiny.
inline constexpr size_t kSignatureValues = 8;
// A component is part of the rule when at least this share of the samples
// carry the same value: 90%, so that a flood of one shape with some other
// drops mixed in (the legitimate traffic shed with it, a second smaller
// flood) still has its signature, while a component that truly varies (ports
// spread by the attacker, sizes drawn at random) is left out rather than
// pinned to the value of a minority, which would leave most of the flood
// unmatched. The rule then matches most of the flood and little else.
inline constexpr double kSignatureShare = 0.9;
// Fewer samples than this in the window: no signature. At 1 in 1024 drops,
// 64 samples are about 64k dropped frames: a real flood, and enough that a
// 90% share is not chance (a component of 64 samples with two values at
// 50/50 is at 90% with odds under 1e-10).
inline constexpr uint64_t kSignatureMinSamples = 64;

template <class V>
struct SignatureCounts {
	std::array<V, kSignatureValues> value{};
	std::array<uint64_t, kSignatureValues> count{};
	size_t used = 0;
	uint64_t other = 0;
	void add(const V &v)
	{
		for (size_t i = 0; i < used; i++)
			if (value[i] == v) {
				count[i]++;
				return;
			}
		if (used < kSignatureValues) {
			value[used] = v;
			count[used++] = 1;
		} else {
			other++;
		}
	}
	// The most common value and its count (none when empty).
	std::optional<std::pair<V, uint64_t>> top() const
	{
		if (!used)
			return std::nullopt;
		size_t best = 0;
		for (size_t i = 1; i < used; i++)
			if (count[i] > count[best])
				best = i;
		return std::make_pair(value[best], count[best]);
	}
	void clear() { *this = SignatureCounts{}; }
};

// One drop sample as the signature sees it: dport 0 and tcp_flags 0 where
// the frame has none (sluice_abi.h, struct sluice_drop_sample).
struct SignatureSample {
	Address dst;
	uint8_t proto = 0;
	uint16_t dport = 0;
	uint8_t tcp_flags = 0;
	uint16_t length = 0; // the IP packet's length
};

struct SignatureTally {
	uint64_t samples = 0;
	SignatureCounts<Address> dst;
	SignatureCounts<uint8_t> proto;
	SignatureCounts<uint16_t> dport;     // TCP and UDP samples only
	SignatureCounts<uint8_t> tcp_flags;  // TCP samples only
	SignatureCounts<uint16_t> length;
	void add(const SignatureSample &s);
	void clear() { *this = SignatureTally{}; }
};

// The signature rule of a window's tally, with `action`: the destination
// (/32 or /128) and the protocol are required (a rule of the destination
// alone would drop everything to it: the last resort, --upstream-blackhole,
// opt-in only); the port only with TCP or UDP, and only where that protocol
// is the kept one; the TCP flags only with TCP; the length always, each
// where its share over the whole window's samples is at least
// kSignatureShare. None (and `why` says why) with fewer than
// kSignatureMinSamples samples, a destination or protocol under that share,
// or a destination outside `guards.own` (check_rule's guard, said here
// first). The rule found still passes check_rule with the protection guard
// like every rule: naming no source, it reaches every source of its family.
struct Signature {
	std::optional<UpstreamRule> rule;
	std::string why; // "dst 198.18.1.2 (100%), proto 17 (100%), dport 9 (100%), length 128 (97%); tcp-flags -"
};
Signature flood_signature(const SignatureTally &tally, const UpstreamGuards &guards, UpstreamAction action,
			  uint64_t rate_bytes);

// The attacked address, for the last resort (--upstream-blackhole): the
// destination that at least kSignatureShare of a window's samples carry,
// with at least kSignatureMinSamples of them; none otherwise (the last
// resort then falls back to the interface's own addresses).
std::optional<Address> attacked_address(const SignatureTally &tally);

} // namespace sluice
