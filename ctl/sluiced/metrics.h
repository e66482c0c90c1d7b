// metrics.h - sluiced's Prometheus metrics: what one control period publishes
// (a snapshot per interface) and its rendering in the Prometheus text
// exposition format (version 0.0.4). Pure: no maps, no sockets, no clocks;
// the daemon fills the snapshot, the metrics server renders it per scrape.
//
//   sluice_packets_total{iface,verdict}            counter  per outcome (maps.h names)
//   sluice_bytes_total{iface,verdict}              counter
//   sluice_breaker_state{iface,state}              gauge    1 for the state in force, 0 for the other two
//   sluice_breaker_transitions_total{iface,from,to} counter  every valid edge, counted by this daemon
//   sluice_admission_fraction{iface}               gauge    0.001..1 (below 1 only while recovering)
//   sluice_audit_violations_total{iface}           counter  slots found outside 0 <= tokens <= burst
//   sluice_table_slots{iface}                      gauge    slots in the bucket table
//   sluice_standing_entries{iface}                 gauge    live entries of the standing table
//   sluice_standing_capacity{iface}                gauge    its entries (sets x ways)
//   sluice_standing_valve_closed{iface}            gauge    1 while the standing valve is closed
//   sluice_standing_valve_closes_total{iface}      counter  valve closes made by this daemon
//   sluice_class_packets_total{iface,class,verdict} counter per policy class in force and outcome
//   sluice_class_bytes_total{iface,class,verdict}  counter
//   sluice_policy_reloads_total{iface,result}      counter  result "applied" or "refused"
//   sluice_policy_classes{iface}                   gauge    classes in force (the default included)
//   sluice_policy_last_reload_success{iface}       gauge    1: the last reload was applied, 0: refused
//   sluice_upstream_announced                      gauge    rules the BGP speaker holds for sluice (--upstream)
//   sluice_upstream_announcements_total            counter  announcements made by this sluiced
//   sluice_upstream_withdrawals_total              counter  withdrawals made by this sluiced
//   sluice_upstream_refusals_total                 counter  rules not announced: --upstream-max reached
//   sluice_upstream_speaker_up                     gauge    1 while gobgpd answers
//
// No label is per source: the series count is fixed by the interfaces and
// their classes (at most SLUICE_CLASSES_MAX each).
#pragma once

#include "logic/breaker.h"
#include "bpf/maps.h"
#include "base/result.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sluice {

// ---------------------------------------------------------------- generic exposition

using MetricValue = std::variant<uint64_t, double>;

struct MetricSample {
	std::vector<std::pair<std::string, std::string>> labels; // name, value (escaped on output)
	MetricValue value;
};

struct MetricFamily {
	std::string name;
	std::string help;
	std::string type; // "counter", "gauge"
	std::vector<MetricSample> samples;
};

// A label value as the exposition format wants it inside double quotes:
// backslash, double quote and line feed escaped as \\, \" and \n.
std::string escape_label_value(std::string_view v);
// HELP text: backslash and line feed escaped (quotes stay).
std::string escape_help(std::string_view v);
// A sample value: integers exactly, doubles in the shortest form that reads
// back the same, NaN, +Inf and -Inf as Prometheus spells them.
std::string format_value(const MetricValue &v);

// "# HELP" and "# TYPE" once per family, then its samples; families in the
// order given. A family with no samples still gets its HELP and TYPE.
std::string render_families(const std::vector<MetricFamily> &families);

// ---------------------------------------------------------------- sluice's snapshot

struct InterfaceMetrics {
	std::string iface;
	CounterSet counters{};                               // summed over CPUs, as of the last tick
	BreakerState breaker = BreakerState::serving;
	// transitions[from][to], indexed by the raw state values (sluice_abi.h).
	std::array<std::array<uint64_t, SLUICE_BREAKER_STATES>, SLUICE_BREAKER_STATES> transitions{};
	std::optional<double> admission_fraction;            // none when the config map could not be read
	uint64_t audit_violations = 0;
	uint64_t table_slots = 0;
	std::optional<uint64_t> standing_entries; // none when the table could not be read
	uint64_t standing_capacity = 0;
	bool valve_closed = false;
	uint64_t valve_closes = 0;
	// The policy classes in force (none without a policy file: no class
	// series), their counters summed over CPUs, by name.
	struct Class {
		std::string name;
		std::array<sluice_counter, SLUICE_OUTCOMES> counters{};
	};
	std::vector<Class> classes;
	bool has_policy = false;
	uint64_t reloads_applied = 0, reloads_refused = 0;
	std::optional<bool> last_reload_success; // none before the first reload
};

// --upstream (sluiced/upstream_announcer.h): none when off, and no series.
struct UpstreamMetricsSnapshot {
	uint64_t announced = 0, announcements = 0, withdrawals = 0, refusals = 0;
	bool speaker_up = false;
	uint64_t firing = 0;     // interfaces whose automatic announcements fire now
	uint64_t blackholed = 0; // own addresses announced as blackholes now (the last resort)
};

struct MetricsSnapshot {
	std::vector<InterfaceMetrics> interfaces;
	std::optional<UpstreamMetricsSnapshot> upstream;
	double tick_mono_s = 0; // CLOCK_MONOTONIC of the control period that made it
};

// The families above, one sample set per interface.
std::vector<MetricFamily> sluice_families(const MetricsSnapshot &s);
std::string render_metrics(const MetricsSnapshot &s);

// /healthz: the control loop is alive when its last tick is at most
// stale_after_s old. stale_after_s = max(3 periods, 5 s): one slow period (a
// large list update, a slow map read) is not a failure; three missed ones are.
double health_stale_after_s(double period_s);
bool loop_healthy(double now_mono_s, double tick_mono_s, double stale_after_s);

// ---------------------------------------------------------------- --metrics-listen

struct ListenAddress {
	std::string host; // numeric IPv4 or IPv6 (without brackets)
	uint16_t port = 0;
	std::string str() const; // "127.0.0.1:9464", "[::1]:9464"
};

// "127.0.0.1:9464", "0.0.0.0:9464", "[::1]:9464", "[::]:9464". The host must
// be a numeric address (no name lookup at start); the port 1..65535.
Result<ListenAddress> parse_listen_address(std::string_view text);

} // namespace sluice
