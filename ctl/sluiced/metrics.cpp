#include "sluiced/metrics.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace sluice {

std::string escape_label_value(std::string_view v)
{
	std::string out;
	out.reserve(v.size());
	for (char c : v) {
		if (c == '\\')
			out += "\\\\";
		else if (c == '"')
			out += "\\\"";
		else if (c == '\n')
			out += "\\n";
		else
			out += c;
	}
	return out;
}

std::string escape_help(std::string_view v)
{
	std::string out;
	out.reserve(v.size());
	for (char c : v) {
		if (c == '\\')
			out += "\\\\";
		else if (c == '\n')
			out += "\\n";
		else
			out += c;
	}
	return out;
}

std::string format_value(const MetricValue &v)
{
	if (const auto *u = std::get_if<uint64_t>(&v))
		return std::to_string(*u);
	double d = std::get<double>(v);
	if (std::isnan(d))
		return "NaN";
	if (std::isinf(d))
		return d > 0 ? "+Inf" : "-Inf";
	char buf[64];
	auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
	if (ec != std::errc())
		return "NaN";
	return std::string(buf, end);
}

std::string render_families(const std::vector<MetricFamily> &families)
{
	std::string out;
	for (const auto &f : families) {
		out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
		out += "# TYPE " + f.name + " " + f.type + "\n";
		for (const auto &s : f.samples) {
			out += f.name;
			if (!s.labels.empty()) {
				out += '{';
				bool first = true;
				for (const auto &[k, v] : s.labels) {
					if (!first)
						out += ',';
					first = false;
					out += k + "=\"" + escape_label_value(v) + "\"";
				}
				out += '}';
			}
			out += ' ' + format_value(s.value) + '\n';
		}
	}
	return out;
}

namespace {

constexpr BreakerState kStates[] = {BreakerState::serving, BreakerState::shedding, BreakerState::recovering};

MetricFamily family(std::string name, std::string help, std::string type)
{
	return MetricFamily{std::move(name), std::move(help), std::move(type), {}};
}

} // namespace

std::vector<MetricFamily> sluice_families(const MetricsSnapshot &s)
{
	auto packets = family("sluice_packets_total",
			      "Frames seen by the XDP program, by verdict (would_drop overlays the others in dry-run mode).",
			      "counter");
	auto bytes = family("sluice_bytes_total", "Bytes of the frames seen by the XDP program, by verdict.", "counter");
	auto state = family("sluice_breaker_state", "1 for the circuit breaker state in force, 0 for the others.", "gauge");
	auto transitions = family("sluice_breaker_transitions_total",
				  "Circuit breaker transitions made by this sluiced (automatic and operator).", "counter");
	auto admission = family("sluice_admission_fraction",
				"Fraction of the refill rate in force (below 1 only while recovering).", "gauge");
	auto violations = family("sluice_audit_violations_total",
				 "Bucket slots the audit found outside 0 <= tokens <= burst.", "counter");
	auto slots = family("sluice_table_slots", "Slots in the bucket table.", "gauge");
	auto standing_entries = family("sluice_standing_entries", "Live entries of the standing table.", "gauge");
	auto standing_capacity =
		family("sluice_standing_capacity", "Entries the standing table can hold (sets x ways).", "gauge");
	auto valve_closed = family("sluice_standing_valve_closed",
				   "1 while the standing valve is closed (shedding admits the allowlist only).", "gauge");
	auto valve_closes = family("sluice_standing_valve_closes_total",
				   "Standing valve closes made by this sluiced (standing over trip-pps while shedding).",
				   "counter");
	auto class_packets = family("sluice_class_packets_total",
				    "Frames of each policy class in force, by verdict (counted while a policy is in force).",
				    "counter");
	auto class_bytes = family("sluice_class_bytes_total", "Bytes of each policy class in force, by verdict.", "counter");
	auto reloads = family("sluice_policy_reloads_total", "Policy reloads, applied or refused.", "counter");
	auto policy_classes = family("sluice_policy_classes", "Policy classes in force, the default included.", "gauge");
	auto last_reload = family("sluice_policy_last_reload_success",
				  "1 when the last policy reload was applied, 0 when it was refused.", "gauge");

	for (const auto &i : s.interfaces) {
		for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++) {
			std::vector<std::pair<std::string, std::string>> labels{{"iface", i.iface},
										{"verdict", outcome_name(k)}};
			packets.samples.push_back({labels, i.counters[k].packets});
			bytes.samples.push_back({labels, i.counters[k].bytes});
		}
		for (auto st : kStates)
			state.samples.push_back({{{"iface", i.iface}, {"state", std::string(to_string(st))}},
						 uint64_t(i.breaker == st ? 1 : 0)});
		// Every valid edge, zero until it happens, so rate() and increase()
		// see the first one.
		for (auto from : kStates)
			for (auto to : Breaker::valid_targets(from))
				transitions.samples.push_back(
					{{{"iface", i.iface},
					  {"from", std::string(to_string(from))},
					  {"to", std::string(to_string(to))}},
					 i.transitions[static_cast<uint32_t>(from)][static_cast<uint32_t>(to)]});
		if (i.admission_fraction)
			admission.samples.push_back({{{"iface", i.iface}}, *i.admission_fraction});
		violations.samples.push_back({{{"iface", i.iface}}, i.audit_violations});
		slots.samples.push_back({{{"iface", i.iface}}, i.table_slots});
		if (i.standing_entries)
			standing_entries.samples.push_back({{{"iface", i.iface}}, *i.standing_entries});
		standing_capacity.samples.push_back({{{"iface", i.iface}}, i.standing_capacity});
		valve_closed.samples.push_back({{{"iface", i.iface}}, uint64_t(i.valve_closed ? 1 : 0)});
		valve_closes.samples.push_back({{{"iface", i.iface}}, i.valve_closes});
		for (const auto &c : i.classes)
			for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++) {
				std::vector<std::pair<std::string, std::string>> labels{
					{"iface", i.iface}, {"class", c.name}, {"verdict", outcome_name(k)}};
				class_packets.samples.push_back({labels, c.counters[k].packets});
				class_bytes.samples.push_back({labels, c.counters[k].bytes});
			}
		if (i.has_policy) {
			reloads.samples.push_back({{{"iface", i.iface}, {"result", "applied"}}, i.reloads_applied});
			reloads.samples.push_back({{{"iface", i.iface}, {"result", "refused"}}, i.reloads_refused});
			policy_classes.samples.push_back({{{"iface", i.iface}}, uint64_t(i.classes.size())});
		}
		if (i.last_reload_success)
			last_reload.samples.push_back({{{"iface", i.iface}}, uint64_t(*i.last_reload_success ? 1 : 0)});
	}
	std::vector<MetricFamily> out{packets,      bytes,          state,         transitions,    admission,
				      violations,   slots,          standing_entries, standing_capacity, valve_closed,
				      valve_closes, class_packets,  class_bytes,   reloads,        policy_classes,
				      last_reload};
	if (s.upstream) {
		const auto &u = *s.upstream;
		auto one = [&](const char *name, const char *help, const char *type, MetricValue v) {
			auto f = family(name, help, type);
			f.samples.push_back({{}, v});
			out.push_back(std::move(f));
		};
		one("sluice_upstream_announced", "Rules (FlowSpec, blackhole routes) the BGP speaker holds for sluice now.",
		    "gauge", u.announced);
		one("sluice_upstream_announcements_total", "Announcements made upstream by this sluiced.", "counter",
		    u.announcements);
		one("sluice_upstream_withdrawals_total", "Withdrawals made upstream by this sluiced.", "counter",
		    u.withdrawals);
		one("sluice_upstream_refusals_total", "Rules not announced: a guard refused them or --upstream-max was reached.",
		    "counter", u.refusals);
		one("sluice_upstream_automatic_firing",
		    "Interfaces whose automatic announcements fire now (shedding a flood over --upstream-bps/-pps).", "gauge",
		    u.firing);
		one("sluice_upstream_blackholed",
		    "Own addresses announced as blackhole routes now (--upstream-blackhole): offline from outside.", "gauge",
		    u.blackholed);
		one("sluice_upstream_speaker_up", "1 while the BGP speaker (gobgpd) answers, 0 when it does not.", "gauge",
		    uint64_t(u.speaker_up ? 1 : 0));
	}
	return out;
}

std::string render_metrics(const MetricsSnapshot &s)
{
	return render_families(sluice_families(s));
}

double health_stale_after_s(double period_s)
{
	return std::max(3 * period_s, 5.0);
}

bool loop_healthy(double now_mono_s, double tick_mono_s, double stale_after_s)
{
	return now_mono_s - tick_mono_s <= stale_after_s;
}

std::string ListenAddress::str() const
{
	bool v6 = host.find(':') != std::string::npos;
	return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text)
{
	auto bad = [&](const std::string &why) {
		return invalid("--metrics-listen '" + std::string(text) + "': " + why +
			       " (expected ADDRESS:PORT, e.g. 127.0.0.1:9464 or [::1]:9464)");
	};
	ListenAddress a;
	std::string_view port;
	if (text.starts_with('[')) {
		auto close = text.find(']');
		if (close == std::string_view::npos)
			return bad("no closing ']'");
		a.host = std::string(text.substr(1, close - 1));
		if (close + 1 >= text.size() || text[close + 1] != ':')
			return bad("no port after the address");
		port = text.substr(close + 2);
		in6_addr a6{};
		if (inet_pton(AF_INET6, a.host.c_str(), &a6) != 1)
			return bad("'" + a.host + "' is not an IPv6 address");
	} else {
		auto colon = text.rfind(':');
		if (colon == std::string_view::npos)
			return bad("no port");
		a.host = std::string(text.substr(0, colon));
		port = text.substr(colon + 1);
		if (a.host.find(':') != std::string::npos)
			return bad("an IPv6 address needs brackets");
		in_addr a4{};
		if (inet_pton(AF_INET, a.host.c_str(), &a4) != 1)
			return bad("'" + a.host + "' is not a numeric IPv4 address");
	}
	unsigned value = 0;
	auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
	if (port.empty() || ec != std::errc() || end != port.data() + port.size())
		return bad("the port is not a number");
	if (value < 1 || value > 65535)
		return bad("the port must be 1..65535");
	a.port = static_cast<uint16_t>(value);
	return a;
}

} // namespace sluice
