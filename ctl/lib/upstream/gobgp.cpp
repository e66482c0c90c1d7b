#include "upstream/gobgp.h"

#include "base/clock.h"
#include "base/fd.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace sluice {

using json = nlohmann::json;

namespace {

constexpr size_t kOutputMax = 4u << 20;

std::string first_line(const std::string &s)
{
	auto nl = s.find('\n');
	std::string line = s.substr(0, nl);
	return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

Status close_on_error(int rc, const char *what)
{
	if (rc != 0)
		return fail(ErrorKind::system, std::string("running the speaker's CLI: ") + what, rc);
	return {};
}

// "4200000000:7583:21" -> its three numbers.
std::optional<std::array<uint64_t, 3>> large_community(std::string_view text)
{
	std::array<uint64_t, 3> out{};
	size_t i = 0;
	for (auto &part : out) {
		size_t end = text.find(':', i);
		std::string piece(text.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
		if (piece.empty() || piece.find_first_not_of("0123456789") != std::string::npos || piece.size() > 10)
			return std::nullopt;
		part = std::stoull(piece);
		if (part > 0xffffffffull)
			return std::nullopt;
		if (&part != &out.back()) {
			if (end == std::string_view::npos)
				return std::nullopt;
			i = end + 1;
		} else if (end != std::string_view::npos) {
			return std::nullopt;
		}
	}
	return out;
}

bool has_marker(const json &attrs, const std::array<uint64_t, 3> &m);

// The blackhole tag a marked unicast path carries (marker's ASN:first:TAG).
std::optional<UpstreamKind> tag_of(const json &attrs, const std::array<uint64_t, 3> &m)
{
	for (const auto &a : attrs) {
		if (a.value("type", 0) != 32 || !a.contains("value"))
			continue;
		for (const auto &c : a.at("value")) {
			if (c.value("ASN", uint64_t(0)) != m[0] || c.value("LocalData1", uint64_t(0)) != m[1])
				continue;
			uint64_t t = c.value("LocalData2", uint64_t(0));
			if (t == kBlackholeSourceTag)
				return UpstreamKind::blackhole_source;
			if (t == kBlackholeDestinationTag)
				return UpstreamKind::blackhole_destination;
		}
	}
	return std::nullopt;
}

bool has_marker(const json &attrs, const std::array<uint64_t, 3> &m)
{
	for (const auto &a : attrs) {
		if (a.value("type", 0) != 32 || !a.contains("value"))
			continue;
		for (const auto &c : a.at("value"))
			if (c.value("ASN", uint64_t(0)) == m[0] && c.value("LocalData1", uint64_t(0)) == m[1] &&
			    c.value("LocalData2", uint64_t(0)) == m[2])
				return true;
	}
	return false;
}

// One operator-value list of a numeric component, when it is "== N" alone.
std::optional<uint64_t> equals_one(const json &v)
{
	// op 0x81: end of list, equals (RFC 8955 4.2.1.1), whatever the value's
	// length (bits 0x30: 1, 2, 4 or 8 bytes; gobgpd writes port 5353 with
	// 0x91).
	if (!v.is_array() || v.size() != 1 || (v[0].value("op", 0) & ~0x30) != 0x81)
		return std::nullopt;
	return v[0].value("value", uint64_t(0));
}

// The TCP flags gobgp's CLI names, bit by bit from FIN (0x01) to CWR (0x80).
constexpr char kTcpFlagLetters[] = "FSRPAUEC";

std::string tcp_flag_letters(uint8_t bits)
{
	std::string s;
	for (int i = 0; i < 8; i++)
		if (bits & (1u << i))
			s += kTcpFlagLetters[i];
	return s;
}

// The whole flags byte, as gobgp_rule_words writes it: "=SET&!CLEAR" (RFC
// 8955 4.2.1.2: the set bits all set, match bit; the others none set, not
// bit), or one of the two halves when the other is empty. Anything else
// (a partial mask, an OR) is not sluice's.
std::optional<uint8_t> exact_flags(const json &v)
{
	if (!v.is_array() || v.empty() || v.size() > 2)
		return std::nullopt;
	unsigned set = 0, clear = 0;
	for (size_t i = 0; i < v.size(); i++) {
		int op = v[i].value("op", 0);
		uint64_t bits = v[i].value("value", uint64_t(0));
		bool last = i + 1 == v.size();
		// end-of-list only on the last, AND on all but the first, length 1 byte
		if (bool(op & 0x80) != last || bool(op & 0x40) != (i > 0) || (op & 0x30) || bits > 0xff)
			return std::nullopt;
		if ((op & 0x03) == 0x01)
			set |= unsigned(bits);
		else if ((op & 0x03) == 0x02)
			clear |= unsigned(bits);
		else
			return std::nullopt;
	}
	if ((set & clear) || (set | clear) != 0xff)
		return std::nullopt;
	return static_cast<uint8_t>(set);
}

std::optional<UpstreamRule> rule_of(const json &path)
{
	UpstreamRule r;
	bool have_dst = false;
	for (const auto &c : path.at("nlri").at("value")) {
		int type = c.value("type", 0);
		const json &v = c.at("value");
		if (type == 1 || type == 2) {
			if (c.value("offset", 0) != 0)
				return std::nullopt;
			auto cidr = parse_cidr(v.at("prefix").get<std::string>());
			if (!cidr)
				return std::nullopt;
			(type == 1 ? r.destination : r.source.emplace()) = *cidr;
			have_dst |= type == 1;
		} else if (type == 3) {
			auto p = equals_one(v);
			if (!p || *p > 255)
				return std::nullopt;
			r.protocol = static_cast<uint8_t>(*p);
		} else if (type == 5) {
			auto p = equals_one(v);
			if (!p || *p > 65535)
				return std::nullopt;
			r.dport = static_cast<uint16_t>(*p);
		} else if (type == 9) {
			auto f = exact_flags(v);
			if (!f)
				return std::nullopt;
			r.tcp_flags = *f;
		} else if (type == 10) {
			auto p = equals_one(v);
			if (!p || *p > 65535)
				return std::nullopt;
			r.length = static_cast<uint16_t>(*p);
		} else {
			return std::nullopt;
		}
	}
	bool have_action = false;
	for (const auto &a : path.at("attrs")) {
		if (a.value("type", 0) != 16)
			continue;
		for (const auto &e : a.at("value")) {
			// traffic-rate (RFC 8955 7.3): 0 is discard.
			if (e.value("type", 0) == 128 && e.value("subtype", 0) == 6) {
				double rate = e.value("rate", 0.0);
				r.action = rate > 0 ? UpstreamAction::rate_limit : UpstreamAction::discard;
				r.rate_bytes = rate > 0 ? static_cast<uint64_t>(std::llround(rate)) : 0;
				have_action = true;
			}
		}
	}
	if (!have_dst || !have_action)
		return std::nullopt;
	return r;
}

} // namespace

std::string_view gobgp_family(Family f)
{
	return f == Family::v4 ? "ipv4-flowspec" : "ipv6-flowspec";
}

std::string_view gobgp_family(const UpstreamRule &rule)
{
	if (rule.blackhole())
		return rule.family() == Family::v4 ? "ipv4" : "ipv6";
	return gobgp_family(rule.family());
}

std::string blackhole_tag(std::string_view marker, UpstreamKind kind)
{
	auto m = large_community(marker);
	if (!m)
		return {};
	return std::to_string((*m)[0]) + ":" + std::to_string((*m)[1]) + ":" +
	       std::to_string(kind == UpstreamKind::blackhole_source ? kBlackholeSourceTag : kBlackholeDestinationTag);
}

std::vector<std::string> gobgp_rule_words(const UpstreamRule &rule)
{
	if (rule.blackhole())
		return {rule.destination.str()};
	std::vector<std::string> w{"match", "destination", rule.destination.str()};
	if (rule.source) {
		w.push_back("source");
		w.push_back(rule.source->str());
	}
	if (rule.protocol) {
		w.push_back("protocol");
		w.push_back(std::to_string(*rule.protocol));
	}
	if (rule.dport) {
		w.push_back("destination-port");
		w.push_back("==" + std::to_string(*rule.dport));
	}
	if (rule.tcp_flags) {
		// Exactly these flags: all of them set, none of the others.
		std::string set = tcp_flag_letters(*rule.tcp_flags), clear = tcp_flag_letters(uint8_t(~*rule.tcp_flags));
		w.push_back("tcp-flags");
		w.push_back(set.empty() ? "!" + clear : clear.empty() ? "=" + set : "=" + set + "&!" + clear);
	}
	if (rule.length) {
		w.push_back("packet-length");
		w.push_back("==" + std::to_string(*rule.length));
	}
	w.push_back("then");
	if (rule.action == UpstreamAction::discard) {
		w.push_back("discard");
	} else {
		w.push_back("rate-limit");
		w.push_back(std::to_string(rule.rate_bytes));
	}
	return w;
}

namespace {

// What the two RIB listings share: the marker, the JSON envelope, and the
// filter that keeps sluice's own local paths; each path that passes goes to
// one_path(path, marker, out), which adds a rule or counts it unknown.
template <class OnePath>
Result<GobgpRib> parse_marked_paths(std::string_view json_text, std::string_view marker, OnePath one_path)
{
	auto m = large_community(marker);
	if (!m)
		return invalid("the upstream marker '" + std::string(marker) + "' is not a large community ASN:N:N");
	json doc = json::parse(json_text, nullptr, false);
	if (doc.is_discarded())
		return fail(ErrorKind::system, "the speaker's RIB is not JSON: " + first_line(std::string(json_text)), EPROTO);
	GobgpRib out;
	if (doc.is_null() || (doc.is_array() && doc.empty()))
		return out;
	if (!doc.is_object())
		return fail(ErrorKind::system, "the speaker's RIB is not a JSON object", EPROTO);
	try {
		for (const auto &[key, paths] : doc.items())
			for (const auto &p : paths) {
				// Received paths name their neighbor: only local ones are sluice's.
				if (p.contains("neighbor-ip") && !p.at("neighbor-ip").template get<std::string>().empty() &&
				    p.at("neighbor-ip") != "<nil>")
					continue;
				if (!p.contains("attrs") || !has_marker(p.at("attrs"), *m))
					continue;
				one_path(p, *m, out);
			}
	} catch (const json::exception &e) {
		return fail(ErrorKind::system, std::string("the speaker's RIB: unexpected JSON: ") + e.what(), EPROTO);
	}
	return out;
}

} // namespace

Result<GobgpRib> parse_gobgp_rib(std::string_view json_text, std::string_view marker)
{
	return parse_marked_paths(json_text, marker, [](const json &p, const auto &, GobgpRib &out) {
		if (auto r = rule_of(p))
			out.rules.push_back(*r);
		else
			out.unknown++;
	});
}

Result<GobgpRib> parse_gobgp_unicast(std::string_view json_text, std::string_view marker)
{
	return parse_marked_paths(json_text, marker, [](const json &p, const auto &m, GobgpRib &out) {
		auto kind = tag_of(p.at("attrs"), m);
		auto prefix = parse_cidr(p.at("nlri").at("prefix").get<std::string>());
		if (!kind || !prefix) {
			out.unknown++;
			return;
		}
		UpstreamRule r;
		r.destination = *prefix;
		r.kind = *kind;
		out.rules.push_back(r);
	});
}

Result<std::string> parse_gobgp_neighbor_state(std::string_view json_text)
{
	json doc = json::parse(json_text, nullptr, false);
	if (doc.is_array() && doc.size() == 1)
		doc = doc[0];
	if (doc.is_discarded() || !doc.is_object())
		return fail(ErrorKind::system, "the speaker's neighbor is not JSON: " + first_line(std::string(json_text)),
			    EPROTO);
	const json *s = nullptr;
	if (doc.contains("state") && doc["state"].is_object()) {
		s = &doc["state"];
		if (s->contains("session_state")) {
			const json &st = s->at("session_state");
			if (st.is_string())
				return st.get<std::string>();
			// The API's enum: 6 is ESTABLISHED.
			static const char *names[] = {"unknown", "idle", "connect", "active", "opensent", "openconfirm",
						      "established"};
			int n = st.get<int>();
			return std::string(n >= 0 && n < 7 ? names[n] : "unknown");
		}
	}
	return std::string("unknown");
}

Result<std::string> run_captured(const std::vector<std::string> &argv, double timeout_s)
{
	int out_pipe[2], err_pipe[2];
	if (pipe2(out_pipe, O_CLOEXEC) != 0)
		return fail_errno("running " + argv.at(0) + ": pipe");
	UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
	if (pipe2(err_pipe, O_CLOEXEC) != 0)
		return fail_errno("running " + argv.at(0) + ": pipe");
	UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_w.get(), 1);
	posix_spawn_file_actions_adddup2(&fa, err_w.get(), 2);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none); // sluiced blocks its signals for signalfd
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	pid_t pid = 0;
	int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (auto ok = close_on_error(rc, argv[0].c_str()); !ok)
		return std::unexpected(ok.error());
	out_w.reset();
	err_w.reset();

	std::string out, err;
	double deadline = monotonic_seconds() + timeout_s;
	bool timed_out = false;
	while (out_r || err_r) {
		pollfd fds[2] = {{out_r ? out_r.get() : -1, POLLIN, 0}, {err_r ? err_r.get() : -1, POLLIN, 0}};
		double left = deadline - monotonic_seconds();
		if (left <= 0) {
			timed_out = true;
			break;
		}
		int n = poll(fds, 2, static_cast<int>(std::ceil(left * 1000)));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int i = 0; i < 2; i++) {
			if (!fds[i].revents)
				continue;
			UniqueFd &fd = i == 0 ? out_r : err_r;
			std::string &into = i == 0 ? out : err;
			char buf[65536];
			ssize_t got = read(fd.get(), buf, sizeof(buf));
			if (got <= 0) {
				fd.reset();
				continue;
			}
			if (into.size() < kOutputMax)
				into.append(buf, static_cast<size_t>(got));
		}
	}
	if (timed_out)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	std::string what = argv.at(0);
	for (size_t i = 1; i < argv.size() && i < 8; i++)
		what += " " + argv[i];
	if (timed_out)
		return fail(ErrorKind::system, what + ": no answer within " + std::to_string(timeout_s) + " s (killed)",
			    ETIMEDOUT);
	if (out.size() >= kOutputMax)
		return fail(ErrorKind::system, what + ": output over 4 MiB", E2BIG);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return out;
	std::string why = first_line(err.empty() ? out : err);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return fail(ErrorKind::system, what + ": cannot run it (is gobgp installed?)", ENOENT);
	return fail(ErrorKind::system,
		    what + (WIFEXITED(status) ? ": exit " + std::to_string(WEXITSTATUS(status))
					      : ": killed by signal " + std::to_string(WTERMSIG(status))) +
			    (why.empty() ? "" : ": " + why),
		    EIO);
}

std::string speaker_address(const GobgpConfig &cfg)
{
	if (!cfg.socket_uri.empty())
		return cfg.socket_uri;
	const bool v6 = cfg.host.find(':') != std::string::npos;
	return (v6 ? "[" + cfg.host + "]" : cfg.host) + ":" + std::to_string(cfg.port);
}

Result<std::string> GobgpSpeaker::run(const std::vector<std::string> &words) const
{
	std::vector<std::string> argv =
		cfg_.socket_uri.empty()
			? std::vector<std::string>{cfg_.cli, "-u", cfg_.host, "-p", std::to_string(cfg_.port)}
			: std::vector<std::string>{cfg_.cli, "--target", cfg_.socket_uri};
	argv.insert(argv.end(), words.begin(), words.end());
	double t0 = monotonic_seconds();
	auto r = run_captured(argv, cfg_.timeout_s);
	last_call_s_ = monotonic_seconds() - t0;
	return r;
}

Result<GobgpRib> GobgpSpeaker::list() const
{
	GobgpRib all;
	for (Family f : {Family::v4, Family::v6}) {
		auto text = run({"global", "rib", "-a", std::string(gobgp_family(f)), "-j"});
		if (!text)
			return std::unexpected(text.error());
		auto rib = parse_gobgp_rib(*text, cfg_.marker);
		if (!rib)
			return std::unexpected(rib.error());
		all.rules.insert(all.rules.end(), rib->rules.begin(), rib->rules.end());
		all.unknown += rib->unknown;
	}
	if (cfg_.unicast)
		for (const char *family : {"ipv4", "ipv6"}) {
			auto text = run({"global", "rib", "-a", family, "-j"});
			if (!text)
				return std::unexpected(text.error());
			auto rib = parse_gobgp_unicast(*text, cfg_.marker);
			if (!rib)
				return std::unexpected(rib.error());
			all.rules.insert(all.rules.end(), rib->rules.begin(), rib->rules.end());
			all.unknown += rib->unknown;
		}
	return all;
}

Status GobgpSpeaker::announce(const UpstreamRule &rule) const
{
	std::vector<std::string> w{"global", "rib", "-a", std::string(gobgp_family(rule)), "add"};
	auto words = gobgp_rule_words(rule);
	w.insert(w.end(), words.begin(), words.end());
	const std::string &nexthop = rule.family() == Family::v4 ? cfg_.nexthop4 : cfg_.nexthop6;
	if (rule.blackhole() && !nexthop.empty()) {
		w.push_back("nexthop");
		w.push_back(nexthop);
	}
	bool host = rule.destination.prefix == (rule.family() == Family::v4 ? 32u : 128u);
	const auto &communities = !rule.blackhole() ? cfg_.communities
				  : host	    ? cfg_.host_communities
						    : cfg_.subnet_communities;
	if (!communities.empty()) {
		std::string list;
		for (const auto &c : communities)
			list += (list.empty() ? "" : ",") + c;
		w.push_back("community");
		w.push_back(list);
	}
	w.push_back("large-community");
	w.push_back(rule.blackhole() ? cfg_.marker + "," + blackhole_tag(cfg_.marker, rule.kind) : cfg_.marker);
	if (auto r = run(w); !r)
		return std::unexpected(r.error());
	return {};
}

Status GobgpSpeaker::withdraw(const UpstreamRule &rule) const
{
	std::vector<std::string> w{"global", "rib", "-a", std::string(gobgp_family(rule)), "del"};
	auto words = gobgp_rule_words(rule);
	w.insert(w.end(), words.begin(), words.end());
	if (auto r = run(w); !r)
		return std::unexpected(r.error());
	return {};
}

Result<std::string> GobgpSpeaker::peer_state(const std::string &peer) const
{
	auto text = run({"neighbor", peer, "-j"});
	if (!text)
		return std::unexpected(text.error());
	return parse_gobgp_neighbor_state(*text);
}

} // namespace sluice
