// gobgp.h - the BGP speaker's client: Debian's gobgpd (3.x), driven through
// its own CLI, `gobgp`, run as a child process with a timeout (why the CLI
// and not the gRPC API: docs/upstream.md, measured). sluice writes no BGP:
// gobgpd holds the session to the upstream router and announces what it is
// given here.
//
// Every path sluice adds carries a marker large community
// (defaults::kUpstreamMarker); list() returns only marked paths, so a daemon
// that starts again finds its own paths (and only those) to adopt or
// withdraw.
#pragma once

#include "base/result.h"
#include "logic/upstream.h"

#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct GobgpConfig {
	std::string cli = "gobgp";          // the CLI, found on PATH unless a path
	std::string host = "127.0.0.1";     // gobgpd's API (--upstream-speaker)
	uint16_t port = 50051;
	// "unix:///PATH": gobgpd's API on a unix socket (gobgpd --api-hosts
	// unix:///PATH), which its file mode guards; host and port unused.
	std::string socket_uri;
	double timeout_s = 5;               // one CLI call at most; then killed
	std::string marker;                 // "ASN:DATA1:DATA2", the large community of sluice's paths
	std::vector<std::string> communities; // standard communities every FlowSpec rule carries ("no-export")
	// Blackhole routes (RFC 7999): their communities for a host route (/32,
	// /128) and for a shorter prefix, their next hops (empty: gobgpd's own;
	// gobgpd sets itself as the next hop towards an eBGP neighbor anyway).
	// `unicast`: blackholes are in use, so list() reads the unicast RIBs too.
	bool unicast = false;
	std::vector<std::string> host_communities, subnet_communities;
	std::string nexthop4, nexthop6;
};

// Where the speaker's API is, as the operator gave it: "unix:///PATH" or
// "HOST:PORT" ("[HOST]:PORT" for IPv6).
std::string speaker_address(const GobgpConfig &cfg);

// The CLI's words for one rule, after `global rib -a FAMILY add|del`:
// "match destination 198.18.1.0/24 source 198.18.3.7/32 then discard".
// For add, the communities and the marker follow.
std::vector<std::string> gobgp_rule_words(const UpstreamRule &rule);
// "ipv4-flowspec" or "ipv6-flowspec".
std::string_view gobgp_family(Family f);
// The rule's RIB: a FlowSpec family, or "ipv4"/"ipv6" for a blackhole.
std::string_view gobgp_family(const UpstreamRule &rule);
// A blackhole path carries, beside the marker, a tag: the marker's ASN and
// first number with kBlackholeSourceTag (source-based, RFC 5635) or
// kBlackholeDestinationTag (the last resort), so a restarted sluiced knows
// which kind it announced.
inline constexpr uint32_t kBlackholeSourceTag = 5635, kBlackholeDestinationTag = 7999;
std::string blackhole_tag(std::string_view marker, UpstreamKind kind);

// The marked paths of `gobgp global rib -a FAMILY -j`'s output, as rules.
// A marked path with a component sluice does not write is counted in
// `unknown` and left out (sluice did not write it as it is now).
struct GobgpRib {
	std::vector<UpstreamRule> rules;
	size_t unknown = 0;
};
Result<GobgpRib> parse_gobgp_rib(std::string_view json_text, std::string_view marker);
// The marked paths of `gobgp global rib -a ipv4|ipv6 -j`: blackhole routes,
// their kind from the tag (a marked path without one is `unknown`).
Result<GobgpRib> parse_gobgp_unicast(std::string_view json_text, std::string_view marker);

// The BGP session's state from `gobgp neighbor ADDR -j` ("established", ...).
Result<std::string> parse_gobgp_neighbor_state(std::string_view json_text);

class GobgpSpeaker {
public:
	explicit GobgpSpeaker(GobgpConfig cfg) : cfg_(std::move(cfg)) {}
	const GobgpConfig &config() const { return cfg_; }

	// The sluice-marked paths gobgpd holds: FlowSpec, both families, and
	// with `unicast` the blackhole routes.
	Result<GobgpRib> list() const;
	Status announce(const UpstreamRule &rule) const;
	Status withdraw(const UpstreamRule &rule) const;
	// The session's state with `peer` as gobgpd reports it.
	Result<std::string> peer_state(const std::string &peer) const;

	// The last call's duration, seconds (for the docs' measurement and status).
	double last_call_s() const { return last_call_s_; }

private:
	Result<std::string> run(const std::vector<std::string> &words) const;
	GobgpConfig cfg_;
	mutable double last_call_s_ = 0;
};

// Run argv[0] (searched on PATH) with argv, no shell, stdin /dev/null, and
// return its standard output (at most 4 MiB); a non-zero exit, a signal or
// `timeout_s` passed (the child killed) is an error with its standard error
// or output's first line.
Result<std::string> run_captured(const std::vector<std::string> &argv, double timeout_s);

} // namespace sluice
