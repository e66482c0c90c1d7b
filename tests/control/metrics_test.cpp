// Prometheus metrics: the text format (HELP/TYPE once per family, label
// escaping, value formatting), sluice's families from a snapshot, the health
// rule, --metrics-listen parsing, and the HTTP server on loopback (plain
// sockets as the client: the bytes a scraper gets).
#include "sluiced/metrics.h"
#include "sluiced/metrics_server.h"
#include "sluiced/options.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace sluice {
namespace {

double mono_s()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

std::vector<std::string> lines_of(const std::string &text)
{
	std::vector<std::string> out;
	std::istringstream in(text);
	for (std::string l; std::getline(in, l);)
		out.push_back(l);
	return out;
}

// "name{labels} value" -> value, for one exact series text.
std::map<std::string, std::string> series(const std::string &text)
{
	std::map<std::string, std::string> out;
	for (const auto &l : lines_of(text)) {
		if (l.empty() || l[0] == '#')
			continue;
		auto sp = l.rfind(' ');
		out[l.substr(0, sp)] = l.substr(sp + 1);
	}
	return out;
}

TEST(MetricsFormat, EscapesLabelValues)
{
	EXPECT_EQ(escape_label_value("eth0"), "eth0");
	EXPECT_EQ(escape_label_value("a\\b"), "a\\\\b");
	EXPECT_EQ(escape_label_value("say \"hi\""), "say \\\"hi\\\"");
	EXPECT_EQ(escape_label_value("two\nlines"), "two\\nlines");
	EXPECT_EQ(escape_label_value("\\\"\n"), "\\\\\\\"\\n");
	EXPECT_EQ(escape_label_value("tab\tstays"), "tab\tstays");
	EXPECT_EQ(escape_help("a \"quote\" stays, \\ and \n do not"), "a \"quote\" stays, \\\\ and \\n do not");
}

TEST(MetricsFormat, FormatsValues)
{
	EXPECT_EQ(format_value(uint64_t{0}), "0");
	EXPECT_EQ(format_value(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
	EXPECT_EQ(format_value(1.0), "1");
	EXPECT_EQ(format_value(0.1), "0.1");
	EXPECT_EQ(format_value(0.001), "0.001");
	EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
	EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
	EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(MetricsFormat, HelpAndTypeOncePerFamilyThenSamples)
{
	std::vector<MetricFamily> fams{
		{"a_total", "Things \\ counted.", "counter",
		 {{{{"x", "1"}}, uint64_t{3}}, {{{"x", "2\"q"}, {"y", "n\nl"}}, uint64_t{4}}}},
		{"b", "A gauge.", "gauge", {{{}, 0.5}}},
		{"c", "Empty family.", "gauge", {}},
	};
	EXPECT_EQ(render_families(fams), "# HELP a_total Things \\\\ counted.\n"
					 "# TYPE a_total counter\n"
					 "a_total{x=\"1\"} 3\n"
					 "a_total{x=\"2\\\"q\",y=\"n\\nl\"} 4\n"
					 "# HELP b A gauge.\n"
					 "# TYPE b gauge\n"
					 "b 0.5\n"
					 "# HELP c Empty family.\n"
					 "# TYPE c gauge\n");
}

MetricsSnapshot two_interfaces()
{
	MetricsSnapshot s;
	InterfaceMetrics a;
	a.iface = "eth0";
	a.counters[SLUICE_PASSED] = {100, 6400};
	a.counters[SLUICE_DROP_RATE] = {7, 448};
	a.breaker = BreakerState::recovering;
	a.transitions[SLUICE_SERVING][SLUICE_SHEDDING] = 2;
	a.transitions[SLUICE_SHEDDING][SLUICE_RECOVERING] = 1;
	a.admission_fraction = 0.25;
	a.audit_violations = 3;
	a.table_slots = 4096;
	a.standing_entries = 42;
	a.standing_capacity = 524288;
	a.valve_closed = true;
	a.valve_closes = 5;
	InterfaceMetrics b;
	b.iface = "we\"ird\\if\n";
	b.admission_fraction = 1.0;
	b.table_slots = 16;
	s.interfaces = {a, b};
	return s;
}

TEST(SluiceMetrics, EveryFamilyOnceWithHelpAndType)
{
	std::string text = render_metrics(two_interfaces());
	const std::vector<std::pair<std::string, std::string>> fams{
		{"sluice_packets_total", "counter"},        {"sluice_bytes_total", "counter"},
		{"sluice_breaker_state", "gauge"},          {"sluice_breaker_transitions_total", "counter"},
		{"sluice_admission_fraction", "gauge"},     {"sluice_audit_violations_total", "counter"},
		{"sluice_table_slots", "gauge"},            {"sluice_standing_entries", "gauge"},
		{"sluice_standing_capacity", "gauge"},      {"sluice_standing_valve_closed", "gauge"},
		{"sluice_standing_valve_closes_total", "counter"},
		{"sluice_class_packets_total", "counter"},  {"sluice_class_bytes_total", "counter"},
		{"sluice_policy_reloads_total", "counter"}, {"sluice_policy_classes", "gauge"},
		{"sluice_policy_last_reload_success", "gauge"},
	};
	for (const auto &[name, type] : fams) {
		int help = 0, typ = 0;
		for (const auto &l : lines_of(text)) {
			help += l.starts_with("# HELP " + name + " ");
			typ += l == "# TYPE " + name + " " + type;
		}
		EXPECT_EQ(help, 1) << name;
		EXPECT_EQ(typ, 1) << name;
	}
	// Samples of a family follow its TYPE line, with no other family between.
	std::string current;
	for (const auto &l : lines_of(text)) {
		if (l.starts_with("# TYPE ")) {
			current = l.substr(7, l.find(' ', 7) - 7);
			continue;
		}
		if (l.starts_with("#"))
			continue;
		auto name = l.substr(0, l.find_first_of("{ "));
		EXPECT_EQ(name, current) << l;
	}
	EXPECT_EQ(text.back(), '\n');
}

TEST(SluiceMetrics, ValuesAndLabels)
{
	auto s = series(render_metrics(two_interfaces()));
	EXPECT_EQ(s["sluice_packets_total{iface=\"eth0\",verdict=\"passed\"}"], "100");
	EXPECT_EQ(s["sluice_bytes_total{iface=\"eth0\",verdict=\"passed\"}"], "6400");
	EXPECT_EQ(s["sluice_packets_total{iface=\"eth0\",verdict=\"drop_rate\"}"], "7");
	EXPECT_EQ(s["sluice_bytes_total{iface=\"eth0\",verdict=\"drop_rate\"}"], "448");
	for (const char *v : {"drop_shed", "drop_deny", "allowlisted", "non_ip", "malformed", "would_drop", "standing",
			      "newcomer", "drop_valve"})
		EXPECT_EQ(s["sluice_packets_total{iface=\"eth0\",verdict=\"" + std::string(v) + "\"}"], "0") << v;
	EXPECT_EQ(s["sluice_breaker_state{iface=\"eth0\",state=\"serving\"}"], "0");
	EXPECT_EQ(s["sluice_breaker_state{iface=\"eth0\",state=\"shedding\"}"], "0");
	EXPECT_EQ(s["sluice_breaker_state{iface=\"eth0\",state=\"recovering\"}"], "1");
	EXPECT_EQ(s["sluice_breaker_transitions_total{iface=\"eth0\",from=\"serving\",to=\"shedding\"}"], "2");
	EXPECT_EQ(s["sluice_breaker_transitions_total{iface=\"eth0\",from=\"shedding\",to=\"recovering\"}"], "1");
	EXPECT_EQ(s["sluice_breaker_transitions_total{iface=\"eth0\",from=\"recovering\",to=\"serving\"}"], "0");
	EXPECT_EQ(s["sluice_breaker_transitions_total{iface=\"eth0\",from=\"recovering\",to=\"shedding\"}"], "0");
	EXPECT_EQ(s["sluice_admission_fraction{iface=\"eth0\"}"], "0.25");
	EXPECT_EQ(s["sluice_audit_violations_total{iface=\"eth0\"}"], "3");
	EXPECT_EQ(s["sluice_table_slots{iface=\"eth0\"}"], "4096");
	EXPECT_EQ(s["sluice_standing_entries{iface=\"eth0\"}"], "42");
	EXPECT_EQ(s["sluice_standing_capacity{iface=\"eth0\"}"], "524288");
	EXPECT_EQ(s["sluice_standing_valve_closed{iface=\"eth0\"}"], "1");
	EXPECT_EQ(s["sluice_standing_valve_closes_total{iface=\"eth0\"}"], "5");
	EXPECT_EQ(s["sluice_standing_valve_closed{iface=\"we\\\"ird\\\\if\\n\"}"], "0");
	// The table's entries could not be counted on the second: no sample, not a made-up 0.
	EXPECT_EQ(s.count("sluice_standing_entries{iface=\"we\\\"ird\\\\if\\n\"}"), 0u);
	// The second interface's name is escaped in every label.
	EXPECT_EQ(s["sluice_breaker_state{iface=\"we\\\"ird\\\\if\\n\",state=\"serving\"}"], "1");
	EXPECT_EQ(s["sluice_table_slots{iface=\"we\\\"ird\\\\if\\n\"}"], "16");
	// Exactly the series expected: every verdict x 2 families, 3 states, 4
	// edges, 3 single gauges/counters and 4 of standing per interface (less
	// the entries the second could not count). Nothing per source.
	EXPECT_EQ(s.size(), 2u * (2 * SLUICE_OUTCOMES + 3 + 4 + 3 + 4) - 1);
	// No invalid edge is ever exported.
	for (const auto &[k, v] : s)
		EXPECT_EQ(k.find("from=\"shedding\",to=\"serving\""), std::string::npos) << k;
}

TEST(SluiceMetrics, PolicyClassesAndReloads)
{
	MetricsSnapshot snap;
	InterfaceMetrics m{.iface = "eth0"};
	m.has_policy = true;
	m.reloads_applied = 3;
	m.reloads_refused = 1;
	m.last_reload_success = false;
	InterfaceMetrics::Class def{"default", {}}, dns{"dns", {}};
	dns.counters[SLUICE_PASSED] = {10, 640};
	dns.counters[SLUICE_DROP_RATE] = {4, 256};
	m.classes = {def, dns};
	snap.interfaces.push_back(m);
	// Without a policy file: no class, reload or policy series at all.
	snap.interfaces.push_back(InterfaceMetrics{.iface = "eth1"});
	auto s = series(render_metrics(snap));
	EXPECT_EQ(s["sluice_class_packets_total{iface=\"eth0\",class=\"dns\",verdict=\"passed\"}"], "10");
	EXPECT_EQ(s["sluice_class_bytes_total{iface=\"eth0\",class=\"dns\",verdict=\"passed\"}"], "640");
	EXPECT_EQ(s["sluice_class_packets_total{iface=\"eth0\",class=\"dns\",verdict=\"drop_rate\"}"], "4");
	EXPECT_EQ(s["sluice_class_packets_total{iface=\"eth0\",class=\"default\",verdict=\"passed\"}"], "0");
	EXPECT_EQ(s["sluice_policy_reloads_total{iface=\"eth0\",result=\"applied\"}"], "3");
	EXPECT_EQ(s["sluice_policy_reloads_total{iface=\"eth0\",result=\"refused\"}"], "1");
	EXPECT_EQ(s["sluice_policy_classes{iface=\"eth0\"}"], "2");
	EXPECT_EQ(s["sluice_policy_last_reload_success{iface=\"eth0\"}"], "0");
	size_t eth1 = 0, eth0_policy = 0;
	for (const auto &[k, v] : s) {
		if (k.find("iface=\"eth1\"") != std::string::npos &&
		    (k.starts_with("sluice_class_") || k.starts_with("sluice_policy_")))
			eth1++;
		if (k.find("iface=\"eth0\"") != std::string::npos &&
		    (k.starts_with("sluice_class_") || k.starts_with("sluice_policy_")))
			eth0_policy++;
	}
	EXPECT_EQ(eth1, 0u);
	// 2 classes x every verdict x packets and bytes, 2 reload results, classes, last success.
	EXPECT_EQ(eth0_policy, 2u * SLUICE_OUTCOMES * 2 + 2 + 1 + 1);
}

TEST(SluiceMetrics, NoInterfacesStillDescribesTheFamilies)
{
	std::string text = render_metrics(MetricsSnapshot{});
	EXPECT_NE(text.find("# TYPE sluice_packets_total counter\n"), std::string::npos);
	EXPECT_TRUE(series(text).empty());
}

TEST(SluiceMetrics, AdmissionOmittedWhenUnknown)
{
	MetricsSnapshot s;
	s.interfaces.push_back(InterfaceMetrics{.iface = "eth0"});
	auto text = render_metrics(s);
	EXPECT_EQ(series(text).count("sluice_admission_fraction{iface=\"eth0\"}"), 0u);
	EXPECT_NE(text.find("# TYPE sluice_admission_fraction gauge"), std::string::npos);
}

TEST(Health, StaleAfterThreePeriodsAtLeastFiveSeconds)
{
	EXPECT_DOUBLE_EQ(health_stale_after_s(1), 5);
	EXPECT_DOUBLE_EQ(health_stale_after_s(0.01), 5);
	EXPECT_DOUBLE_EQ(health_stale_after_s(10), 30);
	EXPECT_TRUE(loop_healthy(100, 96, 5));
	EXPECT_TRUE(loop_healthy(100, 95, 5));
	EXPECT_FALSE(loop_healthy(100, 94.9, 5));
}

TEST(ListenAddress, Parses)
{
	auto a = parse_listen_address("127.0.0.1:9464");
	ASSERT_TRUE(a) << a.error().message;
	EXPECT_EQ(a->host, "127.0.0.1");
	EXPECT_EQ(a->port, 9464);
	EXPECT_EQ(a->str(), "127.0.0.1:9464");
	auto b = parse_listen_address("[::1]:80");
	ASSERT_TRUE(b) << b.error().message;
	EXPECT_EQ(b->host, "::1");
	EXPECT_EQ(b->str(), "[::1]:80");
	EXPECT_TRUE(parse_listen_address("0.0.0.0:65535"));
	EXPECT_TRUE(parse_listen_address("[::]:9464"));
}

TEST(ListenAddress, RefusesWithTheReason)
{
	for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
		     {"127.0.0.1", "no port"},
		     {"127.0.0.1:", "not a number"},
		     {"127.0.0.1:0", "1..65535"},
		     {"127.0.0.1:65536", "1..65535"},
		     {"127.0.0.1:94x", "not a number"},
		     {"localhost:9464", "not a numeric IPv4"},
		     {"::1:9464", "needs brackets"},
		     {"[::1]9464", "no port"},
		     {"[::1:9464", "closing"},
		     {"[1.2.3.4]:80", "not an IPv6"},
		     {":9464", "not a numeric IPv4"},
	     }) {
		auto r = parse_listen_address(text);
		ASSERT_FALSE(r) << text;
		EXPECT_EQ(r.error().kind, ErrorKind::invalid) << text;
		EXPECT_NE(r.error().message.find(why), std::string::npos) << text << ": " << r.error().message;
		EXPECT_NE(r.error().message.find("--metrics-listen"), std::string::npos);
	}
}

Result<ParsedOptions> parse(std::vector<std::string> args)
{
	args.insert(args.begin(), "sluiced");
	std::vector<const char *> argv;
	for (const auto &a : args)
		argv.push_back(a.c_str());
	argv.push_back(nullptr);
	return parse_daemon_options(static_cast<int>(args.size()), argv.data());
}

TEST(MetricsOption, OffByDefaultAndParsed)
{
	auto off = parse({"-i", "eth0"});
	ASSERT_TRUE(off);
	EXPECT_FALSE(off->options.metrics_listen);
	auto on = parse({"-i", "eth0", "--metrics-listen", "127.0.0.1:9464"});
	ASSERT_TRUE(on) << on.error().message;
	ASSERT_TRUE(on->options.metrics_listen);
	EXPECT_EQ(on->options.metrics_listen->str(), "127.0.0.1:9464");
	auto bad = parse({"-i", "eth0", "--metrics-listen", "9464"});
	ASSERT_FALSE(bad);
	EXPECT_EQ(bad.error().exit_code(), 2);
	auto help = parse({"--help"});
	ASSERT_TRUE(help);
	EXPECT_NE(help->usage.find("--metrics-listen"), std::string::npos);
}

// ---------------------------------------------------------------- the server, on loopback

struct Reply {
	int status = 0;
	std::map<std::string, std::string> headers; // lower-case names
	std::string body;
};

int connect_loopback(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	timeval tv{10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

Reply get(uint16_t port, const std::string &path)
{
	Reply r;
	int fd = connect_loopback(port);
	if (fd < 0)
		return r;
	std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	if (write(fd, req.data(), req.size()) != ssize_t(req.size())) {
		close(fd);
		return r;
	}
	std::string raw;
	char buf[4096];
	for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;)
		raw.append(buf, size_t(n));
	close(fd);
	auto end = raw.find("\r\n\r\n");
	if (end == std::string::npos)
		return r;
	std::istringstream head(raw.substr(0, end));
	std::string line, version;
	std::getline(head, line);
	std::istringstream(line) >> version >> r.status;
	while (std::getline(head, line)) {
		if (!line.empty() && line.back() == '\r')
			line.pop_back();
		auto colon = line.find(':');
		if (colon == std::string::npos)
			continue;
		std::string k = line.substr(0, colon);
		for (auto &c : k)
			c = char(std::tolower(c));
		r.headers[k] = line.substr(line.find_first_not_of(' ', colon + 1));
	}
	r.body = raw.substr(end + 4);
	return r;
}

std::unique_ptr<MetricsServer> serve(double stale_after_s = 5)
{
	auto m = MetricsServer::start(ListenAddress{"127.0.0.1", 0}, stale_after_s);
	EXPECT_TRUE(m) << (m ? "" : m.error().describe());
	return m ? std::move(*m) : nullptr;
}

TEST(MetricsServer, ServesTheLatestSnapshot)
{
	auto m = serve();
	ASSERT_TRUE(m);
	ASSERT_NE(m->port(), 0);
	auto snap = two_interfaces();
	snap.tick_mono_s = mono_s();
	m->publish(snap);
	auto r = get(m->port(), "/metrics");
	EXPECT_EQ(r.status, 200);
	EXPECT_EQ(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
	EXPECT_EQ(r.body, render_metrics(snap));
	// A newer snapshot replaces it.
	snap.interfaces[0].counters[SLUICE_PASSED].packets = 101;
	m->publish(snap);
	EXPECT_NE(get(m->port(), "/metrics").body.find("verdict=\"passed\"} 101\n"), std::string::npos);
	EXPECT_EQ(get(m->port(), "/nothing").status, 404);
}

TEST(MetricsServer, HealthzFollowsTheLastTick)
{
	auto m = serve(5);
	ASSERT_TRUE(m);
	auto r = get(m->port(), "/healthz");
	EXPECT_EQ(r.status, 503); // nothing published yet
	MetricsSnapshot s;
	s.tick_mono_s = mono_s();
	m->publish(s);
	r = get(m->port(), "/healthz");
	EXPECT_EQ(r.status, 200);
	EXPECT_TRUE(r.body.starts_with("ok")) << r.body;
	s.tick_mono_s = mono_s() - 6; // the loop stopped ticking 6 s ago
	m->publish(s);
	r = get(m->port(), "/healthz");
	EXPECT_EQ(r.status, 503);
	EXPECT_TRUE(r.body.starts_with("stale")) << r.body;
	EXPECT_NE(r.body.find("limit 5.0 s"), std::string::npos) << r.body;
	EXPECT_EQ(m->healthz(s.tick_mono_s + 4.9).first, 200);
	EXPECT_EQ(m->healthz(s.tick_mono_s + 5.1).first, 503);
}

TEST(MetricsServer, TakenPortFailsTheStart)
{
	auto first = serve();
	ASSERT_TRUE(first);
	auto second = MetricsServer::start(ListenAddress{"127.0.0.1", first->port()}, 5);
	ASSERT_FALSE(second);
	EXPECT_NE(second.error().describe().find("127.0.0.1:" + std::to_string(first->port())), std::string::npos)
		<< second.error().describe();
}

// Idle and half-sent requests (slow scrapers) hold workers, not publish(),
// and a real scrape still gets through.
TEST(MetricsServer, SlowScrapersDoNotBlockPublishOrOthers)
{
	auto m = serve();
	ASSERT_TRUE(m);
	std::vector<int> slow;
	for (int i = 0; i < 6; i++) {
		int fd = connect_loopback(m->port());
		ASSERT_GE(fd, 0);
		if (i % 2)
			(void)!write(fd, "GET /metrics HTTP/1.1\r\nHo", 25); // never finished
		slow.push_back(fd);
	}
	auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < 1000; i++) {
		MetricsSnapshot s = two_interfaces();
		s.tick_mono_s = mono_s();
		m->publish(std::move(s));
	}
	auto spent = std::chrono::steady_clock::now() - t0;
	EXPECT_LT(spent, std::chrono::seconds(1)); // ~1000 pointer swaps, no waiting on HTTP
	auto r = get(m->port(), "/healthz");
	EXPECT_EQ(r.status, 200);
	for (int fd : slow)
		close(fd);
}

TEST(MetricsServer, StopsPromptlyRightAfterStart)
{
	for (int i = 0; i < 20; i++) {
		auto t0 = std::chrono::steady_clock::now();
		{
			auto m = serve();
			ASSERT_TRUE(m);
		}
		EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
	}
}

} // namespace
} // namespace sluice
