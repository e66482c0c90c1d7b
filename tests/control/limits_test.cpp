// base/limits: every bound at its edges, in both voices; the message names the
// rejected value and the bound, and named() puts the caller's name in front.
#include "base/limits.h"

#include "base/defaults.h"
#include "bpf/sluice_abi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace sluice {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

void expect_ok(const Status &s, const std::string &what)
{
	EXPECT_TRUE(s.has_value()) << what << ": " << (s ? "" : s.error().message);
}

void expect_invalid(const Status &s, const std::string &message)
{
	ASSERT_FALSE(s.has_value()) << "accepted what should say: " << message;
	EXPECT_EQ(s.error().kind, ErrorKind::invalid);
	EXPECT_EQ(s.error().code, 0);
	EXPECT_EQ(s.error().message, message);
}

void expect_refused(const Status &s, const std::string &message)
{
	ASSERT_FALSE(s.has_value()) << "accepted what should say: " << message;
	EXPECT_EQ(s.error().kind, ErrorKind::refused);
	EXPECT_EQ(s.error().message, message);
}

TEST(Given, ComparesAndPrintsEveryIntegerAsGiven)
{
	EXPECT_EQ(Given(int64_t{-1}).str(), "-1");
	EXPECT_EQ(Given(INT64_MIN).str(), "-9223372036854775808");
	EXPECT_EQ(Given(UINT64_MAX).str(), "18446744073709551615");
	EXPECT_EQ(Given(0u).str(), "0");
	EXPECT_FALSE(Given(-1).within(0, UINT64_MAX));
	EXPECT_TRUE(Given(UINT64_MAX).within(0, UINT64_MAX));
	EXPECT_TRUE(Given(uint32_t{5}).within(5, 5));
	EXPECT_FALSE(Given(int64_t{4}).within(5, 6));
}

TEST(Named, LeadsTheMessageWithTheName)
{
	expect_invalid(named("--rate", check_rate(0)), "--rate 0 is outside 1..100000000");
	expect_ok(named("--rate", check_rate(1)), "a good rate");
	// the kind stays what the check said
	auto r = named("x", check_rate(0, Voice::invariant));
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().kind, ErrorKind::refused);
}

TEST(Limits, Rate)
{
	expect_ok(check_rate(SLUICE_RATE_MIN), "min");
	expect_ok(check_rate(SLUICE_RATE_MAX), "max");
	expect_invalid(check_rate(0), "0 is outside 1..100000000");
	expect_invalid(check_rate(SLUICE_RATE_MAX + 1), "100000001 is outside 1..100000000");
	expect_invalid(check_rate(int64_t{-5}), "-5 is outside 1..100000000");
	expect_refused(check_rate(0, Voice::invariant), "invariant 1 <= rate <= 100000000 violated: rejected rate 0");
	expect_refused(check_rate(int64_t{-1}, Voice::invariant),
		       "invariant 1 <= rate <= 100000000 violated: rejected rate -1");
	expect_refused(check_rate(UINT64_MAX, Voice::invariant),
		       "invariant 1 <= rate <= 100000000 violated: rejected rate 18446744073709551615");
}

TEST(Limits, Burst)
{
	expect_ok(check_burst(SLUICE_BURST_MIN), "min");
	expect_ok(check_burst(SLUICE_BURST_MAX), "max");
	expect_invalid(check_burst(0), "0 is outside 1..1000000");
	expect_invalid(check_burst(SLUICE_BURST_MAX + 1), "1000001 is outside 1..1000000");
	expect_refused(check_burst(1000001, Voice::invariant),
		       "invariant 1 <= burst <= 1000000 violated: rejected burst 1000001");
	expect_refused(check_burst(int64_t{-3}, Voice::invariant),
		       "invariant 1 <= burst <= 1000000 violated: rejected burst -3");
}

TEST(Limits, CostNs)
{
	expect_ok(check_cost_ns(SLUICE_NSEC_PER_SEC / SLUICE_RATE_MAX), "the highest rate");
	expect_ok(check_cost_ns(SLUICE_NSEC_PER_SEC), "the lowest rate");
	expect_refused(check_cost_ns(9),
		       "invariant 10 <= cost_ns <= 1000000000 (rate 1..100000000) violated: rejected cost_ns 9");
	expect_refused(check_cost_ns(SLUICE_NSEC_PER_SEC + 1),
		       "invariant 10 <= cost_ns <= 1000000000 (rate 1..100000000) violated: rejected cost_ns 1000000001");
}

TEST(Limits, AdmissionPpmAndPercent)
{
	expect_ok(check_admission_ppm(SLUICE_PPM_MIN), "min");
	expect_ok(check_admission_ppm(SLUICE_PPM_FULL), "full");
	expect_invalid(check_admission_ppm(999), "999 is outside 1000..1000000");
	expect_refused(check_admission_ppm(1000001, Voice::invariant),
		       "invariant 1000 <= admission_ppm <= 1000000 violated: rejected admission_ppm 1000001");
	expect_ok(check_admission_percent(0.1), "0.1%");
	expect_ok(check_admission_percent(100), "100%");
	expect_ok(check_admission_percent(SLUICE_PPM_MIN / 10000.0), "the least ppm, as percent");
	expect_invalid(check_admission_percent(0.09), "must be 0.1..100 percent, got 0.09");
	expect_invalid(check_admission_percent(100.5), "must be 0.1..100 percent, got 100.5");
	expect_invalid(check_admission_percent(nan), "must be 0.1..100 percent, got nan");
}

TEST(Limits, TableSlots)
{
	expect_ok(check_table_slots(SLUICE_SLOTS_MIN), "min");
	expect_ok(check_table_slots(SLUICE_SLOTS_MAX), "max");
	expect_ok(check_table_slots(SLUICE_SLOTS_DEFAULT), "default");
	for (int64_t bad : {int64_t{0}, int64_t{8}, int64_t{1000}, int64_t{SLUICE_SLOTS_MAX} * 2, int64_t{-16},
			    int64_t{1} << 32, int64_t{SLUICE_SLOTS_MIN} + 1})
		expect_invalid(check_table_slots(bad),
			       std::to_string(bad) + " must be a power of two between 16 and 67108864");
}

TEST(Limits, Prefixes)
{
	expect_ok(check_v4_prefix(0), "v4 0");
	expect_ok(check_v4_prefix(32), "v4 32");
	expect_invalid(check_v4_prefix(33), "33 is outside 0..32");
	expect_invalid(check_v4_prefix(int64_t{-1}), "-1 is outside 0..32");
	expect_ok(check_v6_prefix(0), "v6 0");
	expect_ok(check_v6_prefix(128), "v6 128");
	expect_invalid(check_v6_prefix(129), "129 is outside 0..128");
	expect_invalid(check_v6_prefix((int64_t{1} << 32) + 64), "4294967360 is outside 0..128");
}

TEST(Limits, SampleEvery)
{
	expect_ok(check_sample_every(0), "off");
	expect_ok(check_sample_every(1), "every drop");
	expect_ok(check_sample_every(SLUICE_SAMPLE_EVERY_DEFAULT), "default");
	expect_ok(check_sample_every(SLUICE_SAMPLE_EVERY_MAX), "max");
	for (int64_t bad : {int64_t{3}, int64_t{1000}, int64_t{SLUICE_SAMPLE_EVERY_MAX} * 2, int64_t{-1}})
		expect_invalid(check_sample_every(bad),
			       std::to_string(bad) + " must be 0 (off) or a power of two up to 16777216");
}

TEST(Limits, Standing)
{
	expect_ok(check_standing_sets(SLUICE_STANDING_SETS_MIN), "sets min");
	expect_ok(check_standing_sets(SLUICE_STANDING_SETS_DEFAULT), "sets default");
	expect_ok(check_standing_sets(SLUICE_STANDING_SETS_MAX), "sets max");
	for (int64_t bad : {int64_t{0}, int64_t{8}, int64_t{1000}, int64_t{SLUICE_STANDING_SETS_MAX} * 2, int64_t{-16}})
		expect_invalid(check_standing_sets(bad),
			       std::to_string(bad) + " must be a power of two between 16 and 4194304");
	expect_ok(check_standing_lapse_s(SLUICE_STANDING_LAPSE_MIN_S), "lapse min");
	expect_ok(check_standing_lapse_s(SLUICE_STANDING_LAPSE_DEFAULT_S), "lapse default");
	expect_ok(check_standing_lapse_s(SLUICE_STANDING_LAPSE_MAX_S), "lapse max");
	for (int64_t bad : {int64_t{0}, int64_t{SLUICE_STANDING_LAPSE_MAX_S} + 1, int64_t{-1}})
		expect_invalid(check_standing_lapse_s(bad), std::to_string(bad) + " is outside 1..604800 seconds");
}

TEST(Limits, StandingBucketAndObserved)
{
	expect_ok(check_standing_rate(1), "standing rate min");
	expect_ok(check_standing_rate(defaults::kStandingRatePps), "standing rate default");
	expect_ok(check_standing_rate(SLUICE_RATE_MAX), "standing rate max");
	expect_invalid(check_standing_rate(0), "0 is outside 1..100000000");
	expect_invalid(check_standing_rate(int64_t{-1}), "-1 is outside 1..100000000");
	expect_refused(check_standing_rate(SLUICE_RATE_MAX + 1, Voice::invariant),
		       "invariant 1 <= standing rate <= 100000000 violated: rejected standing rate 100000001");
	expect_ok(check_standing_burst(defaults::kStandingBurst), "standing burst default");
	expect_ok(check_standing_burst(SLUICE_BURST_MAX), "standing burst max");
	expect_invalid(check_standing_burst(0), "0 is outside 1..1000000");
	expect_invalid(named("--standing-burst", check_standing_burst(SLUICE_BURST_MAX + 1)),
		       "--standing-burst 1000001 is outside 1..1000000");
	expect_refused(check_cost_ns(0, "standing_cost_ns"),
		       "invariant 10 <= standing_cost_ns <= 1000000000 (rate 1..100000000) violated: rejected standing_cost_ns 0");

	expect_ok(check_observe_periods(0), "observe off");
	expect_ok(check_observe_periods(defaults::kObservePeriods), "observe default");
	expect_ok(check_observe_periods(SLUICE_OBSERVE_PERIODS_MAX), "observe max");
	expect_invalid(check_observe_periods(256), "256 is outside 0 (off)..255");
	expect_invalid(check_observe_periods(int64_t{-1}), "-1 is outside 0 (off)..255");
}

TEST(Limits, NewcomerBudget)
{
	// Per CPU: cost ceil(1e9 x cpus / pps) <= 1e12, burst pps / 10 / cpus <= 1e6.
	expect_ok(check_newcomer_pps(0, 8), "none");
	expect_ok(check_newcomer_pps(1, 8), "1 pps over 8 CPUs: cost 8e9 per CPU");
	expect_ok(check_newcomer_pps(80000000, 8), "1e7 per CPU: burst 1e6 per CPU");
	expect_invalid(check_newcomer_pps(80000001, 8), "80000001 is outside 0 (none) or 1..80000000 (8 CPUs)");
	expect_invalid(check_newcomer_pps(int64_t{-1}, 8), "-1 is outside 0 (none) or 1..80000000 (8 CPUs)");
	// More CPUs than 1000: one token a second over them all costs more than 1e12 per CPU.
	EXPECT_EQ(newcomer_pps_min(1000), 1u);
	EXPECT_EQ(newcomer_pps_min(1001), 2u);
	expect_invalid(check_newcomer_pps(1, 1001), "1 is outside 0 (none) or 2..10010000000 (1001 CPUs)");
	expect_ok(check_newcomer_pps(2, 1001), "2 over 1001 CPUs");
	expect_invalid(check_newcomer_pps(5, 0), "the newcomer budget needs a CPU count of 1..1048576, got 0");

	expect_ok(check_newcomer_bucket(0, 0), "no budget");
	expect_ok(check_newcomer_bucket(10, 1), "cheapest");
	expect_ok(check_newcomer_bucket(1000000000000ull, 1000000), "dearest");
	expect_refused(check_newcomer_bucket(0, 5),
		       "invariant newcomer_cost_ns 0 or 10..1000000000000 (per CPU) violated: rejected newcomer_cost_ns 0");
	expect_refused(check_newcomer_bucket(1000000000001ull, 5),
		       "invariant newcomer_cost_ns 0 or 10..1000000000000 (per CPU) violated: rejected newcomer_cost_ns 1000000000001");
	expect_refused(check_newcomer_bucket(100, 0),
		       "invariant 1 <= newcomer_burst <= 1000000 (per CPU, with a budget) violated: rejected newcomer_burst 0");
}

TEST(Limits, DaemonTunables)
{
	expect_ok(check_period_s(0.01), "period min");
	expect_ok(check_period_s(60), "period max");
	expect_invalid(check_period_s(0), "must be between 0.01 and 60 seconds, got 0");
	expect_invalid(check_period_s(61), "must be between 0.01 and 60 seconds, got 61");
	expect_invalid(check_period_s(nan), "must be between 0.01 and 60 seconds, got nan");

	expect_ok(check_trip_pps(1), "trip 1");
	expect_invalid(check_trip_pps(0), "must be at least 1, got 0");
	expect_invalid(check_trip_pps(int64_t{-3}), "must be at least 1, got -3");

	expect_ok(check_clear_pps(1, 1000), "clear 1");
	expect_ok(check_clear_pps(1000, 1000), "clear = trip");
	expect_invalid(check_clear_pps(1001, 1000), "must be between 1 and --trip-pps (1000), got 1001");
	expect_invalid(check_clear_pps(0, 1000), "must be between 1 and --trip-pps (1000), got 0");

	expect_ok(check_trip_periods(1), "periods min");
	expect_ok(check_trip_periods(3600), "periods max");
	expect_invalid(check_trip_periods(0), "must be 1..3600, got 0");
	expect_invalid(check_trip_periods(3601), "must be 1..3600, got 3601");

	expect_ok(check_rt_priority(0), "rt priority off");
	expect_ok(check_rt_priority(49), "rt priority under the threaded IRQs");
	expect_invalid(check_rt_priority(50), "must be 0 (off)..49, got 50");
	expect_invalid(check_rt_priority(-1), "must be 0 (off)..49, got -1");

	expect_ok(check_hold_s(0), "hold 0");
	expect_ok(check_hold_s(86400), "hold a day");
	expect_invalid(check_hold_s(-1), "must be 0..86400 seconds, got -1");
	expect_invalid(check_hold_s(inf), "must be 0..86400 seconds, got inf");

	expect_ok(check_recovery_s(86400), "recovery a day");
	expect_invalid(check_recovery_s(0), "must be more than 0 and at most 86400 seconds, got 0");
	expect_invalid(check_recovery_s(nan), "must be more than 0 and at most 86400 seconds, got nan");

	expect_ok(check_audit_slots(1u << 24), "audit max");
	expect_invalid(check_audit_slots(0), "must be 1..16777216, got 0");
	expect_invalid(check_audit_slots((1u << 24) + 1), "must be 1..16777216, got 16777217");

	expect_ok(check_max_clients(1024), "clients max");
	expect_invalid(check_max_clients(0), "must be 1..1024, got 0");
	expect_invalid(check_max_clients(1025), "must be 1..1024, got 1025");

	expect_ok(check_top_capacity(1u << 20), "capacity max");
	expect_invalid(check_top_capacity(0), "must be 1..1048576, got 0");
	expect_ok(check_top_window_s(0.1), "window min");
	expect_ok(check_top_window_s(3600), "window max");
	expect_invalid(check_top_window_s(0.01), "must be between 0.1 and 3600 seconds, got 0.01");

	expect_ok(check_top_count(1), "top 1");
	expect_ok(check_top_count(1 << 20), "top max");
	expect_invalid(check_top_count(0), "must be 1..1048576, got 0");
	expect_invalid(named("\"n\"", check_top_count((1 << 20) + 1)), "\"n\" must be 1..1048576, got 1048577");

	expect_ok(check_interval_s(86400), "interval a day");
	expect_invalid(check_interval_s(0), "must be seconds (0 < SEC <= 86400), got 0");
	expect_invalid(check_interval_s(inf), "must be seconds (0 < SEC <= 86400), got inf");
}

TEST(Limits, Revocation)
{
	expect_ok(check_revoke_factor(1.01), "factor just over 1");
	expect_ok(check_revoke_factor(1e6), "factor large");
	expect_invalid(check_revoke_factor(1), "must be more than 1 (and finite), got 1");
	expect_invalid(check_revoke_factor(-4), "must be more than 1 (and finite), got -4");
	expect_invalid(check_revoke_factor(inf), "must be more than 1 (and finite), got inf");
	expect_invalid(check_revoke_factor(nan), "must be more than 1 (and finite), got nan");

	expect_ok(check_revoke_periods(1), "periods min");
	expect_ok(check_revoke_periods(64), "periods max");
	expect_invalid(check_revoke_periods(0), "must be 1..64, got 0");
	expect_invalid(check_revoke_periods(int64_t{-1}), "must be 1..64, got -1");
	expect_invalid(check_revoke_periods(65), "must be 1..64, got 65");

	expect_ok(check_revoke_penalty_s(1), "penalty a second");
	expect_ok(check_revoke_penalty_s(604800), "penalty a week");
	expect_invalid(check_revoke_penalty_s(0.5), "must be between 1 and 604800 seconds, got 0.5");
	expect_invalid(check_revoke_penalty_s(604801), "must be between 1 and 604800 seconds, got 604801");
	expect_invalid(check_revoke_penalty_s(nan), "must be between 1 and 604800 seconds, got nan");

	expect_ok(check_revoke_penalty_max_s(60, 60), "max = penalty");
	expect_ok(check_revoke_penalty_max_s(604800, 60), "max a week");
	expect_invalid(check_revoke_penalty_max_s(59, 60),
		       "must be between --revoke-penalty (60) and 604800 seconds, got 59");
	expect_invalid(check_revoke_penalty_max_s(inf, 60),
		       "must be between --revoke-penalty (60) and 604800 seconds, got inf");
}

TEST(Limits, InterfaceNames)
{
	for (const char *good : {"eth0", "lo", "veth-host", "eth0.100", "a", "abcdefghijklmno", "br_0", "x..y"})
		expect_ok(check_managed_interface_name(good), good);
	expect_invalid(check_interface_name(""), "interface name is empty");
	expect_invalid(check_interface_name("abcdefghijklmnop"),
		       "interface name 'abcdefghijklmnop' is longer than 15 characters");
	expect_invalid(check_interface_name("."), "interface name '.' is not a name");
	expect_invalid(check_interface_name(".."), "interface name '..' is not a name");
	for (const char *bad : {"eth/0", "eth 0", "eth0:1", "eth\t0", "eth\n", "a\x01", "a\x7f"})
		expect_invalid(check_interface_name(bad),
			       "interface name '" + std::string(bad) + "' has a character interface names cannot have");
	// Bytes above ASCII: a kernel name, not one sluiced manages.
	expect_ok(check_interface_name("\xff\xfe\xc3\x28"), "non-ASCII for the CLI");
	expect_invalid(check_managed_interface_name("\xc3\x28\xff"),
		       "interface name '\xc3\x28\xff' has a character interface names cannot have");
	// The managed rule is the CLI's and more.
	expect_invalid(check_managed_interface_name("abcdefghijklmnop"),
		       "interface name 'abcdefghijklmnop' is longer than 15 characters");
}

TEST(Limits, PolicyClassesAndRules)
{
	expect_ok(check_class_count(1), "the default class alone");
	expect_ok(check_class_count(kMaxClasses), "64");
	expect_invalid(check_class_count(0), "0 is outside 1..64");
	expect_invalid(check_class_count(kMaxClasses + 1), "65 is outside 1..64");
	expect_ok(check_rule_count(0), "no rules");
	expect_ok(check_rule_count(kMaxRules), "256");
	expect_invalid(check_rule_count(kMaxRules + 1), "257 is outside 0..256");
	for (const char *good : {"default", "a", "nat-gw", "dns_53", "0"})
		expect_ok(check_class_name(good), good);
	expect_ok(check_class_name(std::string(kClassNameMax, 'z')), "32 characters");
	expect_invalid(check_class_name(""), "class name '' must be 1 to 32 characters long");
	expect_invalid(check_class_name(std::string(kClassNameMax + 1, 'z')),
		       "class name '" + std::string(kClassNameMax + 1, 'z') + "' must be 1 to 32 characters long");
	for (const char *bad : {"DNS", "a b", "a.b", "caf\xc3\xa9", "a/b", "a\n"})
		expect_invalid(check_class_name(bad),
			       "class name '" + std::string(bad) + "' may hold only a-z, 0-9, '_' and '-'");
}

TEST(Limits, Ports)
{
	expect_ok(check_port(0), "0");
	expect_ok(check_port(65535), "65535");
	expect_invalid(check_port(65536), "65536 is outside 0..65535");
	expect_invalid(check_port(-1), "-1 is outside 0..65535");
	expect_ok(check_port_range(53, 53), "one port");
	expect_ok(check_port_range(0, 65535), "every port");
	expect_invalid(check_port_range(10, 9), "port range 10-9 is empty: the first port must be at most the last");
	expect_invalid(check_port_range(1, 70000), "70000 is outside 0..65535");
	expect_invalid(named("rule 3 ports", check_port_range(-2, 5)), "rule 3 ports -2 is outside 0..65535");
}

TEST(Limits, ByteBudgets)
{
	expect_ok(check_byte_rate(1), "1 byte/s");
	expect_ok(check_byte_rate(kByteRateMax), "100 Gbit/s");
	expect_invalid(check_byte_rate(0), "0 is outside 1..12500000000");
	expect_invalid(check_byte_rate(kByteRateMax + 1), "12500000001 is outside 1..12500000000");
	expect_ok(check_byte_burst(kByteBurstMin), "one full-size frame");
	expect_ok(check_byte_burst(kByteBurstMax), "1 GB");
	expect_invalid(check_byte_burst(kByteBurstMin - 1), "1513 is outside 1514..1000000000");
	expect_invalid(check_byte_burst(kByteBurstMax + 1), "1000000001 is outside 1514..1000000000");
}

TEST(Limits, PolicyFileBounds)
{
	expect_ok(check_list_entries(0), "empty");
	expect_ok(check_list_entries(SLUICE_LIST_MAX_ENTRIES), "full");
	expect_invalid(check_list_entries(SLUICE_LIST_MAX_ENTRIES + 1),
		       "65537 prefixes are more than one list of one family holds (65536)");
	expect_ok(check_file_bytes(kPolicyFileBytesMax), "16 MiB");
	expect_invalid(check_file_bytes(kPolicyFileBytesMax + 1),
		       "16777217 bytes are more than a policy or netset file may hold (16777216)");
	expect_ok(check_nesting_depth(kPolicyDepthMax), "8 levels");
	expect_invalid(check_nesting_depth(kPolicyDepthMax + 1), "nesting depth 9 is deeper than 8");
	expect_ok(check_node_count(kPolicyNodesMax), "the most nodes");
	expect_invalid(check_node_count(kPolicyNodesMax + 1),
		       "262145 nodes are more than a policy document may hold (262144; long lists belong in netset files)");
}

TEST(Limits, SocketPath)
{
	expect_ok(check_socket_path("/run/sluice/sluiced.sock"), "the default");
	expect_ok(check_socket_path(std::string(kSocketPathMax, 'x')), "107 bytes");
	expect_invalid(check_socket_path(""), "'' must be 1 to 107 bytes long");
	std::string long_path(kSocketPathMax + 1, 'x');
	expect_invalid(check_socket_path(long_path), "'" + long_path + "' must be 1 to 107 bytes long");
}

} // namespace
} // namespace sluice
