#include "sluiced/options.h"

#include "base/cookie_mode.h"
#include "base/fd.h"
#include "base/limits.h"
#include "bpf/cgroup_links.h"
#include "bpf/maps.h"
#include "logic/budgets.h"

#include <boost/program_options.hpp>

#include <algorithm>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace po = boost::program_options;

namespace sluice {

namespace {

Result<std::array<uint64_t, 2>> parse_key(const std::string &hex, const std::string &path)
{
	if (hex.size() != 32)
		return invalid("--hash-key-file " + path + " must hold 32 hex digits (128 bits), got " +
			       std::to_string(hex.size()) + " characters");
	std::array<uint64_t, 2> key{};
	for (int i = 0; i < 2; i++) {
		auto part = hex.substr(static_cast<size_t>(i) * 16, 16);
		auto [end, ec] = std::from_chars(part.data(), part.data() + 16, key[static_cast<size_t>(i)], 16);
		if (ec != std::errc() || end != part.data() + 16)
			return invalid("--hash-key-file " + path + " must hold 32 hex digits");
	}
	return key;
}

// The key from a file, never from the command line (every user reads
// /proc/PID/cmdline): a regular file, not a symbolic link, owned by this
// user, with no bit for the group or others; 32 hex digits and an optional
// newline.
Result<std::array<uint64_t, 2>> read_key_file(const std::string &path)
{
	UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	if (!fd)
		return fail(ErrorKind::invalid, "--hash-key-file " + path, errno);
	struct stat st{};
	if (::fstat(fd.get(), &st) != 0)
		return fail(ErrorKind::invalid, "--hash-key-file " + path, errno);
	if (!S_ISREG(st.st_mode))
		return invalid("--hash-key-file " + path + " is not a regular file");
	if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
		return invalid("--hash-key-file " + path + " must be this user's alone (owner uid " +
			       std::to_string(::geteuid()) + ", no group or other bits: chmod 600)");
	char buf[64] = {};
	ssize_t n = ::read(fd.get(), buf, sizeof(buf));
	if (n < 0)
		return fail(ErrorKind::invalid, "--hash-key-file " + path, errno);
	std::string hex(buf, size_t(n));
	if (!hex.empty() && hex.back() == '\n')
		hex.pop_back();
	return parse_key(hex, path);
}

Result<LogLevel> parse_level(const std::string &s)
{
	if (auto l = log_level_named(s))
		return *l;
	return invalid("--log-level '" + s + "' is not one of " + log_level_names());
}

// The config file's text: a regular file of at most 1 MiB (a FIFO would
// block, /dev/zero would fill memory).
Result<std::string> read_config_file(const std::string &path)
{
	constexpr std::uintmax_t max_bytes = 1 << 20;
	std::error_code ec;
	auto st = std::filesystem::status(path, ec);
	if (ec || !std::filesystem::exists(st))
		return invalid("cannot read config file " + path);
	if (!std::filesystem::is_regular_file(st))
		return invalid("config file " + path + " is not a regular file");
	std::ifstream f(path, std::ios::binary);
	if (!f)
		return invalid("cannot read config file " + path);
	std::string text;
	char buf[4096];
	while (f.read(buf, sizeof(buf)) || f.gcount() > 0) {
		text.append(buf, static_cast<size_t>(f.gcount()));
		if (text.size() > max_bytes)
			return invalid("config file " + path + " is over 1 MiB");
	}
	return text;
}

// The --upstream-* options, checked whether --upstream is given or not (a
// typo in sluice.conf is found before the day it is turned on).
// The --upstream-* options read as text or numbers, checked into UpstreamOptions.
struct UpstreamExtra {
	std::string mode = "flowspec";
	int64_t bps = 0, pps = 0, top = defaults::kUpstreamTop;
	double after_s = defaults::kUpstreamAfterS;
	std::string action = "discard";
	std::string nexthop4, nexthop6;
	std::string community_host = defaults::kUpstreamBlackholeCommunities;
	std::string community_subnet = defaults::kUpstreamBlackholeCommunities;
};

// A community list "65535:666,no-export": each ASN:VALUE (16 bits each) or
// a well-known name gobgp knows.
Result<std::vector<std::string>> parse_communities(const std::string &flag, const std::string &text)
{
	static const char *names[] = {"no-export", "no-advertise", "no-export-subconfed", "no-peer", "blackhole"};
	std::vector<std::string> out;
	size_t i = 0;
	while (i <= text.size()) {
		size_t end = text.find(',', i);
		std::string c = text.substr(i, end == std::string::npos ? std::string::npos : end - i);
		bool ok = std::any_of(std::begin(names), std::end(names), [&](const char *n) { return c == n; });
		if (!ok) {
			size_t colon = c.find(':');
			auto num = [](const std::string &d) {
				return !d.empty() && d.size() <= 5 && d.find_first_not_of("0123456789") == std::string::npos &&
				       std::stoul(d) <= 65535;
			};
			ok = colon != std::string::npos && num(c.substr(0, colon)) && num(c.substr(colon + 1));
		}
		if (!ok)
			return invalid(flag + ": '" + c + "' is not a community (ASN:VALUE, 16 bits each, or one of no-export, "
						   "no-advertise, no-export-subconfed, no-peer, blackhole)");
		out.push_back(c);
		if (end == std::string::npos)
			break;
		i = end + 1;
	}
	return out;
}

// "discard" or "rate:BITS" (bits a second; FlowSpec carries bytes).
Status parse_upstream_action(const std::string &text, UpstreamAutoConfig &a)
{
	if (text == "discard") {
		a.action = UpstreamAction::discard;
		return {};
	}
	std::string digits = text.starts_with("rate:") ? text.substr(5) : std::string();
	if (digits.empty() || digits.size() > 13 || digits.find_first_not_of("0123456789") != std::string::npos)
		return invalid("--upstream-action '" + text + "' is not discard or rate:BITS (bits a second, e.g. rate:8000000)");
	uint64_t bits = std::stoull(digits);
	if (auto ok = named("--upstream-action rate", check_upstream_bps(bits)); !ok)
		return ok;
	if (bits < 8)
		return invalid("--upstream-action rate:" + digits + ": at least 8 bits a second (FlowSpec's rate is bytes); "
									  "to drop all, say discard");
	a.action = UpstreamAction::rate_limit;
	a.rate_bytes = bits / 8;
	return {};
}

Status parse_upstream_options(const po::variables_map &vm, const std::string &speaker,
			      const std::vector<std::string> &prefixes, int64_t max, int64_t min4, int64_t min6,
			      const UpstreamExtra &extra, UpstreamOptions &up)
{
	// unix:///PATH: gobgpd's API on a unix socket (docs/upstream.md, "Who can
	// reach gobgpd's API"), the path absolute and one a sockaddr_un holds.
	constexpr std::string_view unix_scheme = "unix://";
	if (speaker.starts_with(unix_scheme)) {
		const std::string path = speaker.substr(unix_scheme.size());
		if (!path.starts_with("/") || !check_socket_path(path))
			return invalid("--upstream-speaker " + speaker + ": unix:// takes an absolute path of 1.." +
				       std::to_string(kSocketPathMax) + " bytes (unix:///run/gobgpd/api.sock)");
		up.speaker.socket_uri = speaker;
	} else {
		auto addr = parse_listen_address(speaker);
		if (!addr)
			return invalid("--upstream-speaker: " + addr.error().message);
		up.speaker.host = addr->host;
		up.speaker.port = addr->port;
	}
	up.speaker.timeout_s = defaults::kUpstreamCallTimeoutS;
	up.speaker.marker = defaults::kUpstreamMarker;
	up.speaker.communities = {defaults::kUpstreamCommunity};
	if (up.speaker.cli.empty())
		return invalid("--upstream-gobgp needs a program");
	if (vm.count("upstream-peer"))
		if (auto a = parse_address(up.peer); !a)
			return invalid("--upstream-peer: " + a.error().message);
	if (!prefixes.empty())
		if (auto ok = named("--upstream-prefixes", check_upstream_prefixes(prefixes.size())); !ok)
			return ok;
	for (const auto &p : prefixes) {
		auto c = parse_cidr(p);
		if (!c)
			return invalid("--upstream-prefixes: " + c.error().message);
		up.guards.own.push_back(*c);
	}
	if (auto ok = named("--upstream-max", check_upstream_max(max)); !ok)
		return ok;
	if (auto ok = named("--upstream-min-prefix4", check_upstream_min_prefix4(min4)); !ok)
		return ok;
	if (auto ok = named("--upstream-min-prefix6", check_upstream_min_prefix6(min6)); !ok)
		return ok;
	if (auto ok = named("--upstream-hold", check_upstream_hold_s(up.hold_s)); !ok)
		return ok;
	if (extra.mode == "flowspec")
		up.mode = UpstreamMode::flowspec;
	else if (extra.mode == "blackhole")
		up.mode = UpstreamMode::blackhole;
	else
		return invalid("--upstream-mode '" + extra.mode + "' is not flowspec or blackhole");
	if (auto ok = named("--upstream-bps", check_upstream_bps(extra.bps)); !ok)
		return ok;
	if (auto ok = named("--upstream-pps", check_upstream_pps(extra.pps)); !ok)
		return ok;
	if (auto ok = named("--upstream-top", check_upstream_top(extra.top)); !ok)
		return ok;
	if (auto ok = named("--upstream-after", check_upstream_after_s(extra.after_s)); !ok)
		return ok;
	up.automatic.bps = static_cast<uint64_t>(extra.bps);
	up.automatic.pps = static_cast<uint64_t>(extra.pps);
	up.automatic.top = static_cast<size_t>(extra.top);
	up.automatic.after_s = extra.after_s;
	if (auto ok = parse_upstream_action(extra.action, up.automatic); !ok)
		return ok;
	auto host = parse_communities("--upstream-community-host", extra.community_host);
	if (!host)
		return std::unexpected(host.error());
	auto subnet = parse_communities("--upstream-community-subnet", extra.community_subnet);
	if (!subnet)
		return std::unexpected(subnet.error());
	up.speaker.host_communities = *host;
	up.speaker.subnet_communities = *subnet;
	if (!extra.nexthop4.empty()) {
		auto a = parse_address(extra.nexthop4);
		if (!a || a->family != Family::v4)
			return invalid("--upstream-nexthop4 '" + extra.nexthop4 + "' is not an IPv4 address");
		up.speaker.nexthop4 = a->str();
	}
	if (!extra.nexthop6.empty()) {
		auto a = parse_address(extra.nexthop6);
		if (!a || a->family != Family::v6)
			return invalid("--upstream-nexthop6 '" + extra.nexthop6 + "' is not an IPv6 address");
		up.speaker.nexthop6 = a->str();
	}
	up.speaker.unicast = up.mode == UpstreamMode::blackhole || up.last_resort;
	if (up.last_resort && !up.automatic.enabled())
		return invalid("--upstream-blackhole needs --upstream-bps or --upstream-pps: the last resort is announced "
			       "only while shedding a flood over them");
	if (!up.enabled && (up.automatic.enabled() || up.last_resort))
		return invalid("--upstream-bps, --upstream-pps and --upstream-blackhole need --upstream");
	up.guards.max = static_cast<size_t>(max);
	up.guards.min_source4 = static_cast<uint32_t>(min4);
	up.guards.min_source6 = static_cast<uint32_t>(min6);
	if (up.enabled && up.guards.own.empty())
		return invalid("--upstream needs --upstream-prefixes: the operator's own prefixes, every rule's destination");
	if (!up.enabled && up.dry_run)
		return invalid("--upstream-dry-run needs --upstream");
	return {};
}

} // namespace

uint64_t standing_capacity(const DaemonOptions &o)
{
	return o.standing_capacity_pps ? o.standing_capacity_pps : o.policy.trip_pps;
}

uint64_t newcomer_pps_asked(const DaemonOptions &o, uint64_t cpus)
{
	return o.newcomer_pps ? *o.newcomer_pps : default_newcomer_pps(o.policy.trip_pps, cpus);
}

Result<ParsedOptions> parse_daemon_options(int argc, const char *const *argv)
{
	ParsedOptions out;
	DaemonOptions &o = out.options;
	std::string mode = "native", level = "info", key_file, metrics_listen;
	int64_t rate = static_cast<int64_t>(o.rate_pps), burst = static_cast<int64_t>(o.burst);
	int64_t slots = o.load.slots, v4 = o.load.v4_prefix, v6 = o.load.v6_prefix;
	int64_t trip = static_cast<int64_t>(o.policy.trip_pps), clear = -1, periods = o.policy.trip_periods;
	int64_t audit = o.audit_per_period, clients = o.max_clients;
	int64_t rt_priority = o.rt_priority;
	int64_t sample_every = o.load.sample_every, top_capacity = static_cast<int64_t>(o.top_capacity);
	int64_t standing_sets = o.load.standing_sets, standing_lapse = o.load.standing_lapse_s;
	int64_t standing_rate = static_cast<int64_t>(o.standing_rate_pps);
	int64_t standing_burst = static_cast<int64_t>(o.standing_burst);
	int64_t newcomer_pps = -1, observe_periods = o.load.observe_periods;
	int64_t cookie_pps = static_cast<int64_t>(o.cookie_pps);
	int64_t cookie_dest_pps = static_cast<int64_t>(o.cookie_dest_pps);
	int64_t rekey_every = static_cast<int64_t>(o.rekey_every_s);
	int64_t standing_pps = static_cast<int64_t>(o.standing_capacity_pps);
	int64_t grant_rate = static_cast<int64_t>(o.grant_rate_per_s), grant_burst = static_cast<int64_t>(o.grant_burst);
	int64_t grant_max = static_cast<int64_t>(o.grant_max);
	int64_t revoke_periods = o.revoke.over_periods;
	int64_t prefix_quota = o.standing_prefix_quota;
	std::string cookies(cookie_mode_name(o.cookie_mode));
	double start_pct = o.policy.start_ppm / 10000.0;
	bool no_policy = false;
	std::string upstream_speaker = defaults::kUpstreamSpeaker;
	std::vector<std::string> upstream_prefixes;
	int64_t upstream_max = defaults::kUpstreamMax, upstream_min4 = defaults::kUpstreamMinPrefix4,
		upstream_min6 = defaults::kUpstreamMinPrefix6;
	UpstreamOptions &up = o.upstream;
	UpstreamExtra up_extra;
	up.hold_s = defaults::kUpstreamHoldS;
	up.speaker.cli = defaults::kUpstreamCli;

	po::options_description desc("sluiced options");
	desc.add_options()
		("help,h", "show this help")
		("config", po::value(&o.config_file), "INI config file (keys as the long options; the command line wins)")
		("interface,i", po::value(&o.interfaces)->composing(), "interface to protect (repeatable)")
		("mode", po::value(&mode)->default_value(mode), "attach mode: native (fails naming --mode skb when the driver lacks it), skb, auto (falls back to skb, loudly)")
		("rate", po::value(&rate)->default_value(rate), "tokens per second per source")
		("burst", po::value(&burst)->default_value(burst), "bucket capacity per source")
		("table-size", po::value(&slots)->default_value(slots), "slots in the bucket table (power of two)")
		("ipv4-prefix", po::value(&v4)->default_value(v4), "IPv4 source prefix length (0..32)")
		("ipv6-prefix", po::value(&v6)->default_value(v6), "IPv6 source prefix length (0..128)")
		("dry-run", po::bool_switch(&o.load.dry_run), "compute verdicts, count would-drops, pass everything")
		("multiprog", po::bool_switch(&o.load.multiprog), "attach through libxdp's dispatcher, beside other XDP programs (xdp-loader status lists it)")
		("sample-every", po::value(&sample_every)->default_value(sample_every), "sample 1 in N dropped frames for `sluicectl top` (a power of two; 0: off)")
		("standing-sets", po::value(&standing_sets)->default_value(standing_sets), "sets of 8 entries in the standing table (power of two; 336 B each)")
		("standing-lapse", po::value(&standing_lapse)->default_value(standing_lapse), "seconds a source keeps standing after the host last saw it")
		("standing-rate", po::value(&standing_rate)->default_value(standing_rate), "tokens per second of a standing source's second bucket, drawn on when its own is empty: its budget is rate + standing-rate, in every breaker state")
		("standing-burst", po::value(&standing_burst)->default_value(standing_burst), "capacity of a standing source's second bucket")
		("standing-pps", po::value(&standing_pps)->default_value(standing_pps), "what the standing sources together may take through their standing buckets before the daemon lowers their share so that the sum fits (water-filling; the light keep all of theirs); 0: --trip-pps")
		("standing-prefix-quota", po::value(&prefix_quota)->default_value(prefix_quota), "standing entries one IPv4 /24 or IPv6 /48 may hold (at most 32000), counted as they are granted: a new UDP or observed source of a prefix at its quota earns none, a new handshake none only once its quota is all handshakes; the excess (handshakes over weaker entries) is evicted at the 5 s recount, weakest proof and least recently seen first")
		("standing-tenure", po::value(&o.standing_tenure_s)->default_value(o.standing_tenure_s), "while the standing sources ask over --standing-pps together, those with standing from over this many seconds before that began are given their share first, and those granted later share what is left; 0: one share for all")
		("revoke-factor", po::value(&o.revoke.over_factor)->default_value(o.revoke.over_factor), "a standing source that sends more than this many times its share ...")
		("revoke-periods", po::value(&revoke_periods)->default_value(revoke_periods), "... for this many periods in a row loses its standing (logged, counted, `sluicectl standing`)")
		("revoke-penalty", po::value(&o.revoke.penalty_s)->default_value(o.revoke.penalty_s), "seconds a revoked source cannot earn standing again; doubled with each revocation ...")
		("revoke-penalty-max", po::value(&o.revoke.penalty_max_s)->default_value(o.revoke.penalty_max_s), "... up to this many seconds")
		("grant-rate", po::value(&grant_rate)->default_value(grant_rate), "standing grants a second one local user's UDP sockets may make (connect/sendto to a peer); 0: UDP grants none")
		("grant-burst", po::value(&grant_burst)->default_value(grant_burst), "UDP grants one local user may make at once")
		("grant-max", po::value(&grant_max)->default_value(grant_max), "UDP grants one local user may make in a lapse time (--standing-lapse), so many in all; 0: no such bound")
		("newcomer-pps", po::value(&newcomer_pps), "while shedding, the pps the sources without standing share, all CPUs together (default: --trip-pps / 10; 0: none)")
		("cookies", po::value(&cookies)->default_value(cookies), "answer a TCP SYN from a source without standing to a listening port with a SYN cookie from XDP: shedding (while the breaker sheds), always, off (the newcomer budget alone)")
		("cookie-pps", po::value(&cookie_pps)->default_value(cookie_pps), "SYN-ACKs a second the program may send, all CPUs together (a ceiling on reflection; 0: none, cookie SYNs are shed)")
		("cookie-dest-pps", po::value(&cookie_dest_pps)->default_value(cookie_dest_pps), "SYN-ACKs a second the program may send toward one /24 or /48 (the SYN's source network), all CPUs together (a ceiling on reflection toward one victim; 0: no such bound)")
		("observe-periods", po::value(&observe_periods)->default_value(observe_periods), "grant standing to a source admitted while serving in this many distinct ticks of ~1.07 s (0: off; at most 255)")
		("no-standing", po::bool_switch(&o.no_standing), "attach no standing feeders and grant none at start: shedding admits only the allowlist and the newcomer budget")
		("feeder-cgroup", po::value(&o.feeder_cgroup), "the cgroup v2 directory whose sockets grant standing (its descendants too); default: the hierarchy's root, every socket of the host")
		("top-capacity", po::value(&top_capacity)->default_value(top_capacity), "sources the `sluicectl top` summary tracks (its memory is fixed by this)")
		("top-window", po::value(&o.top_window_s)->default_value(o.top_window_s), "seconds each `sluicectl top` summary covers")
		("rekey-every", po::value(&rekey_every)->default_value(rekey_every), "a new SipHash key this often, in seconds (0: only `sluicectl rekey`; else 5..2592000): a new program, every source's bucket anew and full, the standing table and its penalties carried; put off while the breaker is not serving")
		("hash-key-file", po::value(&key_file), "a file holding the SipHash key as 32 hex digits, mode 0600 (tests only; default from getrandom)")
		("socket", po::value(&o.socket_path)->default_value(o.socket_path), "control socket path")
		("socket-group", po::value(&o.socket_group), "group allowed on the control socket (mode 0660)")
		("pin-dir", po::value(&o.pin_dir)->default_value(o.pin_dir), "bpffs directory for pins (one subdirectory per interface)")
		("period", po::value(&o.period_s)->default_value(o.period_s), "control period in seconds")
		("rt-priority", po::value(&rt_priority)->default_value(rt_priority), "once attached, run the control loop at SCHED_FIFO with this priority (1..49; 0: off), bounded by RLIMIT_RTTIME (0.5 s without blocking: back to normal scheduling); needs CAP_SYS_NICE or RLIMIT_RTPRIO (the unit's LimitRTPRIO=)")
		("trip-pps", po::value(&trip)->default_value(trip), "admitted pps that trips the breaker")
		("clear-pps", po::value(&clear), "incoming pps under which shedding may end (default: --trip-pps)")
		("trip-periods", po::value(&periods)->default_value(periods), "periods in the breaker's window: the rate it judges is their frames over their real elapsed time")
		("hold", po::value(&o.policy.hold_s)->default_value(o.policy.hold_s), "least seconds in shedding")
		("recovery", po::value(&o.policy.recovery_s)->default_value(o.policy.recovery_s), "seconds the recovery ramp takes")
		("recovery-start", po::value(&start_pct)->default_value(start_pct), "admission percent the ramp starts at")
		("audit-slots", po::value(&audit)->default_value(audit), "slots audited per period")
		("max-clients", po::value(&clients)->default_value(clients), "concurrent control clients")
		("log-level", po::value(&level)->default_value(level), "debug, info, warn, error")
		("metrics-listen", po::value(&metrics_listen), "serve Prometheus /metrics and /healthz on ADDRESS:PORT (e.g. 127.0.0.1:9464; default: off)")
		("detach-on-exit", po::bool_switch(&o.detach_on_exit), "detach the program when sluiced exits (default: enforcement stays)")
		("policy", po::value(&o.policy_file), "policy file (YAML, docs/policy.md; default: /etc/sluice/policy.yaml when it exists); reloaded on SIGHUP and `sluicectl reload`")
		("no-policy", po::bool_switch(&no_policy), "read no policy file, even at the default path")
		("policy-watch", po::bool_switch(&o.policy_watch), "reload the policy file when it or a netset it names changes (the path's target, inode, mtime or size; checked once a period)")
		("upstream", po::bool_switch(&up.enabled), "announce FlowSpec rules upstream over BGP through gobgpd (`sluicectl deny add IFACE PREFIX --upstream`; docs/upstream.md); nothing is announced without it")
		("upstream-speaker", po::value(&upstream_speaker)->default_value(upstream_speaker), "gobgpd's API: ADDRESS:PORT, or unix:///PATH for its API on a unix socket")
		("upstream-gobgp", po::value(&up.speaker.cli)->default_value(up.speaker.cli), "gobgpd's CLI, run with a timeout for each change")
		("upstream-peer", po::value(&up.peer), "the BGP neighbor gobgpd announces to (its session state in `sluicectl upstream`)")
		("upstream-prefixes", po::value(&upstream_prefixes)->composing(), "the operator's own prefixes (repeatable): every rule's destination lies inside one; required with --upstream")
		("upstream-max", po::value(&upstream_max)->default_value(upstream_max), "announcements at most, all interfaces together")
		("upstream-min-prefix4", po::value(&upstream_min4)->default_value(upstream_min4), "no IPv4 source prefix shorter than this is announced")
		("upstream-min-prefix6", po::value(&upstream_min6)->default_value(upstream_min6), "no IPv6 source prefix shorter than this is announced")
		("upstream-hold", po::value(&up.hold_s)->default_value(up.hold_s), "least seconds an automatic announcement stays before its withdrawal")
		("upstream-dry-run", po::bool_switch(&up.dry_run), "log and show what would be announced; announce nothing")
		("upstream-mode", po::value(&up_extra.mode)->default_value(up_extra.mode), "how a source is announced: flowspec (a source-match discard rule per own prefix) or blackhole (a source-based blackhole route, RFC 5635: the upstream drops it by loose uRPF)")
		("upstream-bps", po::value(&up_extra.bps)->default_value(up_extra.bps), "announce the flood's signature (unless it would drop an allowlisted source or one with standing) and those of the heaviest dropped sources whose addresses are proved, then abused (their standing revoked) when more than this many bits a second arrive on an interface for --upstream-after seconds while its breaker sheds (0: off)")
		("upstream-pps", po::value(&up_extra.pps)->default_value(up_extra.pps), "the same in packets a second (0: off)")
		("upstream-after", po::value(&up_extra.after_s)->default_value(up_extra.after_s), "seconds over --upstream-bps or --upstream-pps, shedding all along, before the automatic announcements")
		("upstream-top", po::value(&up_extra.top)->default_value(up_extra.top), "dropped sources announced at most per interface (each proved, then abused)")
		("upstream-action", po::value(&up_extra.action)->default_value(up_extra.action), "the automatic FlowSpec rules' action: discard, or rate:BITS (traffic-rate, bits a second)")
		("upstream-blackhole", po::bool_switch(&up.last_resort), "the last resort: while the automatic announcements fire, also a /32 or /128 blackhole route of the interface's own addresses within --upstream-prefixes, which takes them offline upstream; and the flood's signature even where it would drop allowlisted sources or sources with standing")
		("upstream-nexthop4", po::value(&up_extra.nexthop4), "the next hop of IPv4 blackhole routes (default: gobgpd's own)")
		("upstream-nexthop6", po::value(&up_extra.nexthop6), "the next hop of IPv6 blackhole routes (default: gobgpd's own)")
		("upstream-community-host", po::value(&up_extra.community_host)->default_value(up_extra.community_host), "the communities of a /32 or /128 blackhole route, comma-separated")
		("upstream-community-subnet", po::value(&up_extra.community_subnet)->default_value(up_extra.community_subnet), "the communities of a shorter blackhole route, comma-separated");

	std::ostringstream usage;
	usage << "usage: sluiced -i IFACE [-i IFACE...] [options]\n" << desc;
	out.usage = usage.str();

	for (int i = 1; i < argc && argv[i]; i++)
		if (auto ok = refuse_option_placeholders(argv[i], "argument '" + std::string(argv[i]) + "'"); !ok)
			return std::unexpected(ok.error());
	po::variables_map vm;
	try {
		po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
		if (vm.count("config")) {
			std::string path = vm["config"].as<std::string>();
			auto text = read_config_file(path);
			if (!text)
				return std::unexpected(text.error());
			if (auto ok = refuse_option_placeholders(*text, "config file " + path); !ok)
				return std::unexpected(ok.error());
			std::istringstream f(*text);
			po::store(po::parse_config_file(f, desc), vm); // earlier store wins: the command line
		}
		po::notify(vm);
	} catch (const po::error &e) {
		return invalid(e.what());
	}
	if (vm.count("help")) {
		out.help = true;
		return out;
	}

	if (o.interfaces.empty())
		return invalid("no interface given: use -i IFACE");
	for (const auto &i : o.interfaces)
		if (auto ok = check_managed_interface_name(i); !ok)
			return invalid(i.empty() ? "--interface needs a name" : ok.error().message);
	auto m = parse_attach_mode(mode);
	if (!m)
		return invalid("--mode: " + m.error().message);
	o.mode = *m;
	if (auto ok = named("--rate", check_rate(rate)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--burst", check_burst(burst)); !ok)
		return std::unexpected(ok.error());
	o.rate_pps = static_cast<uint64_t>(rate);
	o.burst = static_cast<uint64_t>(burst);
	o.rate_given = !vm["rate"].defaulted();
	o.burst_given = !vm["burst"].defaulted();
	if (auto ok = named("--table-size", check_table_slots(slots)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--ipv4-prefix", check_v4_prefix(v4)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--ipv6-prefix", check_v6_prefix(v6)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--sample-every", check_sample_every(sample_every)); !ok)
		return std::unexpected(ok.error());
	o.load.slots = static_cast<uint32_t>(slots);
	o.load.v4_prefix = static_cast<uint32_t>(v4);
	o.load.v6_prefix = static_cast<uint32_t>(v6);
	o.load.sample_every = static_cast<uint32_t>(sample_every);
	if (auto ok = named("--standing-sets", check_standing_sets(standing_sets)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--standing-lapse", check_standing_lapse_s(standing_lapse)); !ok)
		return std::unexpected(ok.error());
	o.load.standing_sets = static_cast<uint32_t>(standing_sets);
	o.load.standing_lapse_s = static_cast<uint32_t>(standing_lapse);
	if (auto ok = named("--standing-rate", check_standing_rate(standing_rate)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--standing-burst", check_standing_burst(standing_burst)); !ok)
		return std::unexpected(ok.error());
	o.standing_rate_pps = static_cast<uint64_t>(standing_rate);
	o.standing_burst = static_cast<uint64_t>(standing_burst);
	if (auto ok = named("--standing-pps", check_standing_capacity(standing_pps)); !ok)
		return std::unexpected(ok.error());
	o.standing_capacity_pps = static_cast<uint64_t>(standing_pps);
	if (auto ok = named("--standing-tenure", check_standing_tenure_s(o.standing_tenure_s)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--standing-prefix-quota",
			    check_standing_prefix_quota(prefix_quota, uint64_t(o.load.standing_sets) * SLUICE_STANDING_WAYS));
	    !ok)
		return std::unexpected(ok.error());
	o.standing_prefix_quota = static_cast<uint32_t>(prefix_quota);
	if (!o.feeder_cgroup.empty()) {
		if (o.no_standing)
			return std::unexpected(invalid("--feeder-cgroup names where the standing feeders attach; "
						       "--no-standing attaches none: give one or the other"));
		if (auto cg = open_cgroup2_dir(o.feeder_cgroup); !cg)
			return std::unexpected(Error{ErrorKind::invalid, cg.error().code,
						     "--feeder-cgroup: " + cg.error().message});
	}
	if (revoke_periods < 0 || revoke_periods > UINT32_MAX)
		return std::unexpected(invalid("--revoke-periods: " + std::to_string(revoke_periods) + " is out of range"));
	o.revoke.over_periods = static_cast<uint32_t>(revoke_periods);
	if (auto ok = validate_revocation(o.revoke); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--grant-rate", check_grant_rate(grant_rate)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--grant-burst", check_grant_burst(grant_burst)); !ok)
		return std::unexpected(ok.error());
	o.grant_rate_per_s = static_cast<uint64_t>(grant_rate);
	o.grant_burst = static_cast<uint64_t>(grant_burst);
	if (auto ok = named("--grant-max", check_grant_max(grant_max)); !ok)
		return std::unexpected(ok.error());
	o.grant_max = static_cast<uint64_t>(grant_max);
	if (auto ok = named("--observe-periods", check_observe_periods(observe_periods)); !ok)
		return std::unexpected(ok.error());
	o.load.observe_periods = static_cast<uint32_t>(observe_periods);
	if (vm.count("hash-key-file")) { // given but empty is a bad path, not "random"
		auto k = read_key_file(key_file);
		if (!k)
			return std::unexpected(k.error());
		o.load.hash_key = *k;
	}
	if (!check_socket_path(o.socket_path))
		return invalid("--socket path must be 1.." + std::to_string(kSocketPathMax) + " characters");
	if (o.pin_dir.empty() || o.pin_dir[0] != '/')
		return invalid("--pin-dir must be an absolute path");
	if (auto ok = named("--period", check_period_s(o.period_s)); !ok)
		return std::unexpected(ok.error());
	if (auto ok = named("--rt-priority", check_rt_priority(rt_priority)); !ok)
		return std::unexpected(ok.error());
	o.rt_priority = static_cast<uint32_t>(rt_priority);
	if (auto ok = named("--trip-pps", check_trip_pps(trip)); !ok)
		return std::unexpected(ok.error());
	o.policy.trip_pps = static_cast<uint64_t>(trip);
	// -1 marks "not given"; a negative value given must not pass for it.
	if (vm.count("clear-pps"))
		if (auto ok = named("--clear-pps", check_clear_pps(clear, trip)); !ok)
			return std::unexpected(ok.error());
	o.policy.clear_pps = vm.count("clear-pps") ? static_cast<uint64_t>(clear) : o.policy.trip_pps;
	if (auto ok = named("--trip-periods", check_trip_periods(periods)); !ok)
		return std::unexpected(ok.error());
	o.policy.trip_periods = static_cast<uint32_t>(periods);
	if (auto ok = named("--recovery-start", check_admission_percent(start_pct)); !ok)
		return std::unexpected(ok.error());
	o.policy.start_ppm = static_cast<uint32_t>(start_pct * 10000.0 + 0.5);
	if (auto ok = validate_policy(o.policy); !ok)
		return std::unexpected(ok.error());
	// The newcomer budget is per CPU in the data plane: its bounds are the
	// CPUs' (check_newcomer_pps). -1 marks "not given", as for --clear-pps.
	if (vm.count("newcomer-pps")) {
		auto cpus = possible_cpus();
		if (!cpus)
			return std::unexpected(cpus.error());
		if (auto ok = named("--newcomer-pps", check_newcomer_pps(newcomer_pps, *cpus)); !ok)
			return std::unexpected(ok.error());
		o.newcomer_pps = static_cast<uint64_t>(newcomer_pps);
	}
	if (auto m = value_named(kCookieModeNames, cookies); m)
		o.cookie_mode = *m;
	else
		return invalid("--cookies: '" + cookies + "' is not one of " + names_of(kCookieModeNames));
	{
		auto cpus = possible_cpus();
		if (!cpus)
			return std::unexpected(cpus.error());
		if (auto ok = named("--cookie-pps", check_per_cpu_pps(cookie_pps, *cpus, "cookie")); !ok)
			return std::unexpected(ok.error());
		o.cookie_pps = static_cast<uint64_t>(cookie_pps);
	}
	if (auto ok = named("--cookie-dest-pps", check_cookie_dest_pps(cookie_dest_pps)); !ok)
		return std::unexpected(ok.error());
	o.cookie_dest_pps = static_cast<uint64_t>(cookie_dest_pps);
	if (auto ok = named("--rekey-every", check_rekey_every_s(rekey_every)); !ok)
		return std::unexpected(ok.error());
	o.rekey_every_s = static_cast<uint64_t>(rekey_every);
	if (auto ok = named("--audit-slots", check_audit_slots(audit)); !ok)
		return std::unexpected(ok.error());
	o.audit_per_period = static_cast<uint32_t>(audit);
	if (auto ok = named("--max-clients", check_max_clients(clients)); !ok)
		return std::unexpected(ok.error());
	o.max_clients = static_cast<uint32_t>(clients);
	if (auto ok = named("--top-capacity", check_top_capacity(top_capacity)); !ok)
		return std::unexpected(ok.error());
	o.top_capacity = static_cast<size_t>(top_capacity);
	if (auto ok = named("--top-window", check_top_window_s(o.top_window_s)); !ok)
		return std::unexpected(ok.error());
	auto lvl = parse_level(level);
	if (!lvl)
		return std::unexpected(lvl.error());
	o.log_level = *lvl;
	if (vm.count("metrics-listen")) {
		auto addr = parse_listen_address(metrics_listen);
		if (!addr)
			return std::unexpected(addr.error());
		o.metrics_listen = *addr;
	}
	if (no_policy && vm.count("policy"))
		return invalid("--policy and --no-policy: give one");
	if (vm.count("policy") && o.policy_file.empty())
		return invalid("--policy needs a path");
	if (no_policy) {
		o.policy_file.clear();
	} else if (!vm.count("policy")) {
		std::error_code ec;
		if (std::filesystem::exists(defaults::kPolicyPath, ec))
			o.policy_file = defaults::kPolicyPath;
	}
	if (o.policy_watch && o.policy_file.empty())
		return invalid("--policy-watch needs a policy file (--policy PATH)");
	if (auto ok = parse_upstream_options(vm, upstream_speaker, upstream_prefixes, upstream_max, upstream_min4,
					     upstream_min6, up_extra, up);
	    !ok)
		return std::unexpected(ok.error());
	return out;
}

} // namespace sluice
