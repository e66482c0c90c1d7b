// sluiced's options: defaults, every refused value (ErrorKind::invalid, the
// message naming the option), and the INI config file under the command line.
#include "temp_dir.h"
#include "sluiced/options.h"

#include "base/limits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sys/stat.h>
#include <unistd.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace sluice {
namespace {

Result<ParsedOptions> parse(std::vector<std::string> args)
{
	args.insert(args.begin(), "sluiced");
	std::vector<const char *> argv;
	for (const auto &a : args)
		argv.push_back(a.c_str());
	argv.push_back(nullptr);
	return parse_daemon_options(static_cast<int>(args.size()), argv.data());
}

// The options with one interface and `extra`, which must parse.
// A key file for --hash-key-file, `mode` (0600 by default), in a directory
// that lives as long as the test program.
std::string key_file(const std::string &content, mode_t mode = 0600)
{
	static TempDir dir{"sluice-key-test"};
	static int n = 0;
	std::string p = dir.file("key" + std::to_string(n++), content);
	::chmod(p.c_str(), mode);
	return p;
}

DaemonOptions good(std::initializer_list<std::string> extra = {})
{
	std::vector<std::string> args{"-i", "eth0"};
	args.insert(args.end(), extra);
	auto r = parse(args);
	EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
	return r ? r->options : DaemonOptions{};
}

// `args` must be refused as invalid input with every one of `needles` in the message.
void expect_invalid(const std::vector<std::string> &args, std::initializer_list<std::string> needles)
{
	std::string joined;
	for (const auto &a : args)
		joined += a + " ";
	SCOPED_TRACE("sluiced " + joined);
	auto r = parse(args);
	ASSERT_FALSE(r.has_value()) << "accepted";
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	EXPECT_EQ(r.error().exit_code(), 2);
	for (const auto &n : needles)
		EXPECT_NE(r.error().message.find(n), std::string::npos)
			<< "message '" << r.error().message << "' does not name '" << n << "'";
}

// `option value` after a valid interface must be refused, naming the option.
void expect_bad_value(const std::string &option, const std::string &value,
		      std::initializer_list<std::string> more = {})
{
	std::vector<std::string> args{"-i", "eth0", option + "=" + value};
	SCOPED_TRACE(option + "=" + value);
	auto r = parse(args);
	ASSERT_FALSE(r.has_value()) << "accepted";
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	EXPECT_NE(r.error().message.find(option), std::string::npos)
		<< "message '" << r.error().message << "' does not name " << option;
	for (const auto &n : more)
		EXPECT_NE(r.error().message.find(n), std::string::npos)
			<< "message '" << r.error().message << "' does not contain '" << n << "'";
}

TEST(Options, Defaults)
{
	auto r = parse({"-i", "eth0"});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_FALSE(r->help);
	const DaemonOptions &o = r->options;
	EXPECT_EQ(o.interfaces, std::vector<std::string>{"eth0"});
	EXPECT_EQ(o.mode, AttachMode::native);
	EXPECT_EQ(o.rate_pps, 10000u);
	EXPECT_EQ(o.burst, 20000u);
	EXPECT_FALSE(o.rate_given);
	EXPECT_FALSE(o.burst_given);
	EXPECT_EQ(o.load.slots, 262144u);
	EXPECT_EQ(o.load.v4_prefix, 32u);
	EXPECT_EQ(o.load.v6_prefix, 64u);
	EXPECT_FALSE(o.load.dry_run);
	EXPECT_FALSE(o.load.one_choice);
	EXPECT_FALSE(o.load.hash_key.has_value());
	EXPECT_EQ(o.socket_path, "/run/sluice/sluiced.sock");
	EXPECT_EQ(o.socket_group, "");
	EXPECT_EQ(o.pin_dir, "/sys/fs/bpf/sluice");
	EXPECT_DOUBLE_EQ(o.period_s, 1.0);
	EXPECT_EQ(o.policy.trip_pps, 1000000u);
	EXPECT_EQ(o.policy.clear_pps, o.policy.trip_pps); // --clear-pps defaults to --trip-pps
	EXPECT_EQ(o.policy.trip_periods, 3u);
	EXPECT_EQ(o.rt_priority, 0u); // off unless asked: the packaged unit asks
	EXPECT_DOUBLE_EQ(o.policy.hold_s, 10);
	EXPECT_DOUBLE_EQ(o.policy.recovery_s, 60);
	EXPECT_EQ(o.policy.start_ppm, 100000u);
	EXPECT_EQ(o.audit_per_period, 65536u);
	EXPECT_EQ(o.rekey_every_s, 86400u); // a new hash key a day
	EXPECT_EQ(o.max_clients, 64u);
	EXPECT_EQ(o.log_level, LogLevel::info);
	EXPECT_FALSE(o.detach_on_exit);
	EXPECT_EQ(o.config_file, "");
}

TEST(Options, Help)
{
	auto r = parse({"--help"});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_TRUE(r->help);
	EXPECT_NE(r->usage.find("usage: sluiced"), std::string::npos);
	EXPECT_NE(r->usage.find("--rate"), std::string::npos);
	EXPECT_NE(r->usage.find("--table-size"), std::string::npos);
	// Boost wraps the descriptions: compare with the whitespace runs made one space.
	std::string flat;
	for (char ch : r->usage)
		if (!std::isspace(static_cast<unsigned char>(ch)) || (!flat.empty() && flat.back() != ' '))
			flat += std::isspace(static_cast<unsigned char>(ch)) ? ' ' : ch;
	EXPECT_NE(flat.find("its budget is rate + standing-rate"), std::string::npos) << flat;
}

TEST(Options, GoodValuesAreTaken)
{
	auto o = good({"-i", "veth1", "--mode", "skb", "--rate", "100000000", "--burst", "1000000", "--table-size",
		       "16", "--ipv4-prefix", "24", "--ipv6-prefix", "128", "--dry-run", "--socket", "/tmp/x.sock",
		       "--socket-group", "sluice", "--pin-dir", "/sys/fs/bpf/other", "--period", "0.5", "--trip-pps",
		       "5000", "--clear-pps", "2000", "--trip-periods", "7", "--hold", "3", "--recovery", "30",
		       "--recovery-start", "25", "--audit-slots", "1024", "--max-clients", "8", "--log-level", "debug",
		       "--detach-on-exit", "--hash-key-file", key_file("000102030405060708090a0b0c0d0E0F\n"),
		       "--rekey-every", "5"});
	EXPECT_EQ(o.interfaces, (std::vector<std::string>{"eth0", "veth1"}));
	EXPECT_EQ(o.rekey_every_s, 5u);
	EXPECT_EQ(o.mode, AttachMode::skb);
	EXPECT_EQ(o.rate_pps, 100000000u);
	EXPECT_EQ(o.burst, 1000000u);
	EXPECT_TRUE(o.rate_given);
	EXPECT_TRUE(o.burst_given);
	EXPECT_EQ(o.load.slots, 16u);
	EXPECT_EQ(o.load.v4_prefix, 24u);
	EXPECT_EQ(o.load.v6_prefix, 128u);
	EXPECT_TRUE(o.load.dry_run);
	EXPECT_EQ(o.socket_path, "/tmp/x.sock");
	EXPECT_EQ(o.socket_group, "sluice");
	EXPECT_EQ(o.pin_dir, "/sys/fs/bpf/other");
	EXPECT_DOUBLE_EQ(o.period_s, 0.5);
	EXPECT_EQ(o.policy.trip_pps, 5000u);
	EXPECT_EQ(o.policy.clear_pps, 2000u);
	EXPECT_EQ(o.policy.trip_periods, 7u);
	EXPECT_DOUBLE_EQ(o.policy.hold_s, 3);
	EXPECT_DOUBLE_EQ(o.policy.recovery_s, 30);
	EXPECT_EQ(o.policy.start_ppm, 250000u);
	EXPECT_EQ(o.audit_per_period, 1024u);
	EXPECT_EQ(o.max_clients, 8u);
	EXPECT_EQ(o.log_level, LogLevel::debug);
	EXPECT_TRUE(o.detach_on_exit);
	ASSERT_TRUE(o.load.hash_key.has_value());
	EXPECT_EQ((*o.load.hash_key)[0], 0x0001020304050607ull);
	EXPECT_EQ((*o.load.hash_key)[1], 0x08090a0b0c0d0e0full);
}

TEST(Options, ModesAndLevels)
{
	EXPECT_EQ(good({"--mode", "native"}).mode, AttachMode::native);
	EXPECT_EQ(good({"--mode", "auto"}).mode, AttachMode::automatic);
	EXPECT_EQ(good({"--log-level", "warn"}).log_level, LogLevel::warn);
	EXPECT_EQ(good({"--log-level", "error"}).log_level, LogLevel::error);
	EXPECT_EQ(good({"--recovery-start", "0.1"}).policy.start_ppm, 1000u);
	EXPECT_EQ(good({"--recovery-start", "100"}).policy.start_ppm, 1000000u);
	EXPECT_EQ(good({"--interface", "lo"}).interfaces, (std::vector<std::string>{"eth0", "lo"}));
	EXPECT_EQ(good({"-i", "abcdefghijklmno"}).interfaces.back(), "abcdefghijklmno"); // 15: the longest
}

TEST(Options, ExplicitDefaultValueCountsAsGiven)
{
	auto o = good({"--rate", "10000"});
	EXPECT_EQ(o.rate_pps, 10000u);
	EXPECT_TRUE(o.rate_given);
	EXPECT_FALSE(o.burst_given);
	o = good({"--burst", "20000"});
	EXPECT_FALSE(o.rate_given);
	EXPECT_TRUE(o.burst_given);
}

TEST(Options, RefusesMissingOrBadInterface)
{
	expect_invalid({}, {"no interface given", "-i IFACE"});
	expect_invalid({"--rate", "5"}, {"no interface given", "-i IFACE"});
	expect_invalid({"-i", "abcdefghijklmnop"}, {"interface name 'abcdefghijklmnop'", "longer than 15"});
	expect_invalid({"-i", "a-very-long-interface-name"}, {"interface name", "longer than 15"});
	expect_invalid({"-i", "eth/0"}, {"interface name 'eth/0'"});
	expect_invalid({"-i", "eth 0"}, {"interface name 'eth 0'"});
	expect_invalid({"-i", "eth0:1"}, {"interface name 'eth0:1'"});
	expect_invalid({"-i", "eth0", "-i", "bad/name"}, {"interface name 'bad/name'"});
	expect_invalid({"-i", ""}, {"--interface"});
	expect_invalid({"-i"}, {"interface"});
}

TEST(Options, RefusesBadMode)
{
	expect_bad_value("--mode", "bogus", {"bogus", "native, skb, auto"});
	expect_bad_value("--mode", "", {});
	expect_bad_value("--mode", "NATIVE", {});
}

TEST(Options, RefusesBadRate)
{
	expect_bad_value("--rate", "0", {"--rate 0 is outside 1..100000000"});
	expect_bad_value("--rate", "-1", {"-1"});
	expect_bad_value("--rate", "100000001", {"100000001"});
	expect_bad_value("--rate", "99999999999999999999999999"); // over int64: boost's message
	expect_bad_value("--rate", "abc", {"abc"});
	expect_bad_value("--rate", "12x");
	expect_bad_value("--rate", "1.5");
	expect_bad_value("--rate", "");
}

TEST(Options, RefusesBadBurst)
{
	expect_bad_value("--burst", "0", {"--burst 0 is outside 1..1000000"});
	expect_bad_value("--burst", "1000001", {"1000001"});
	expect_bad_value("--burst", "-5");
	expect_bad_value("--burst", "lots");
}

TEST(Options, RefusesBadTableSize)
{
	expect_bad_value("--table-size", "1000", {"1000", "power of two"}); // not a power of two
	expect_bad_value("--table-size", "8", {"8", "power of two between 16"}); // too small
	expect_bad_value("--table-size", "0", {"power of two"});
	expect_bad_value("--table-size", "-16");
	expect_bad_value("--table-size", "134217728"); // 2^27: too large
	expect_bad_value("--table-size", "4294967296"); // 2^32: would wrap a uint32_t
}

TEST(Options, RefusesBadPrefixes)
{
	expect_bad_value("--ipv4-prefix", "33", {"33", "0..32"});
	expect_bad_value("--ipv4-prefix", "-1");
	expect_bad_value("--ipv6-prefix", "129", {"129", "0..128"});
	expect_bad_value("--ipv6-prefix", "4294967360"); // 2^32 + 64: would wrap a uint32_t
	EXPECT_EQ(good({"--ipv4-prefix", "0", "--ipv6-prefix", "0"}).load.v4_prefix, 0u);
}

TEST(Options, RefusesBadPolicyValues)
{
	expect_bad_value("--period", "0", {"between 0.01 and 60"});
	expect_bad_value("--period", "61");
	expect_bad_value("--period", "nan");
	expect_bad_value("--trip-pps", "0", {"at least 1"});
	expect_bad_value("--trip-pps", "-3");
	expect_invalid({"-i", "eth0", "--trip-pps", "1000", "--clear-pps", "1001"},
		       {"--clear-pps must be between 1 and --trip-pps (1000)"});
	// Above the default --trip-pps too.
	expect_bad_value("--clear-pps", "1000001", {"--trip-pps (1000000)"});
	expect_bad_value("--clear-pps", "0");
	expect_bad_value("--trip-periods", "0", {"1..3600"});
	expect_bad_value("--trip-periods", "3601");
	expect_bad_value("--rt-priority", "50", {"0 (off)..49"});
	expect_bad_value("--rt-priority", "-1");
	expect_bad_value("--hold", "-1");
	expect_bad_value("--hold", "86401");
	expect_bad_value("--recovery", "0");
	expect_bad_value("--recovery", "inf");
	expect_bad_value("--recovery-start", "0", {"0.1..100 percent"});
	expect_bad_value("--recovery-start", "0.09");
	expect_bad_value("--recovery-start", "100.5");
	expect_bad_value("--recovery-start", "nan");
}

TEST(Options, NegativeClearPpsIsNotTakenForTheDefault)
{
	// The "not given" marker must not be reachable from the command line.
	expect_bad_value("--clear-pps", "-1");
	expect_bad_value("--clear-pps", "-5");
}

TEST(Options, UpstreamIsOffByDefaultAndTakesItsValues)
{
	auto off = good();
	EXPECT_FALSE(off.upstream.enabled);
	EXPECT_EQ(off.upstream.speaker.host, "127.0.0.1");
	EXPECT_EQ(off.upstream.speaker.port, 50051);
	EXPECT_EQ(off.upstream.guards.max, defaults::kUpstreamMax);
	EXPECT_EQ(off.upstream.guards.min_source4, 24u);
	EXPECT_EQ(off.upstream.guards.min_source6, 48u);
	EXPECT_EQ(off.upstream.speaker.marker, defaults::kUpstreamMarker);

	auto on = good({"--upstream", "--upstream-prefixes", "198.51.100.0/24", "--upstream-prefixes",
			"2001:db8:100::/48", "--upstream-speaker", "[::1]:50052", "--upstream-peer", "192.0.2.1",
			"--upstream-max", "3", "--upstream-min-prefix4", "32", "--upstream-hold", "0", "--upstream-dry-run"});
	EXPECT_TRUE(on.upstream.enabled);
	EXPECT_TRUE(on.upstream.dry_run);
	ASSERT_EQ(on.upstream.guards.own.size(), 2u);
	EXPECT_EQ(on.upstream.guards.own[1].str(), "2001:db8:100::/48");
	EXPECT_EQ(on.upstream.speaker.host, "::1");
	EXPECT_EQ(on.upstream.speaker.port, 50052);
	EXPECT_EQ(on.upstream.peer, "192.0.2.1");
	EXPECT_EQ(on.upstream.guards.max, 3u);
	EXPECT_EQ(on.upstream.guards.min_source4, 32u);
	EXPECT_EQ(on.upstream.hold_s, 0);
	EXPECT_EQ(speaker_address(on.upstream.speaker), "[::1]:50052");
	EXPECT_EQ(speaker_address(off.upstream.speaker), "127.0.0.1:50051");

	auto sock = good({"--upstream", "--upstream-prefixes", "198.51.100.0/24", "--upstream-speaker",
			  "unix:///run/gobgpd/api.sock"});
	EXPECT_EQ(sock.upstream.speaker.socket_uri, "unix:///run/gobgpd/api.sock");
	EXPECT_EQ(speaker_address(sock.upstream.speaker), "unix:///run/gobgpd/api.sock");
}

TEST(Options, RefusesBadUpstreamValues)
{
	expect_invalid({"-i", "eth0", "--upstream"}, {"--upstream needs --upstream-prefixes"});
	expect_invalid({"-i", "eth0", "--upstream-dry-run"}, {"--upstream-dry-run needs --upstream"});
	expect_bad_value("--upstream-prefixes", "198.51.100.1/24");
	expect_bad_value("--upstream-speaker", "localhost:50051");
	expect_bad_value("--upstream-speaker", "unix://run/gobgpd.sock", {"absolute path"});
	expect_bad_value("--upstream-speaker", "unix://", {"absolute path"});
	expect_bad_value("--upstream-speaker", "unix:///" + std::string(107, 'a'), {"1..107 bytes"});
	expect_bad_value("--upstream-peer", "router");
	expect_bad_value("--upstream-max", "0", {"1..1024"});
	expect_bad_value("--upstream-max", "1025");
	expect_bad_value("--upstream-min-prefix4", "7", {"8..32"}); // a /0 source is one typo from the Internet
	expect_bad_value("--upstream-min-prefix4", "33");
	expect_bad_value("--upstream-min-prefix6", "15", {"16..128"});
	expect_bad_value("--upstream-hold", "-1");
	expect_bad_value("--upstream-gobgp", "");
	// The automatic announcements, the modes, the blackhole routes.
	const char *on[] = {"-i", "eth0", "--upstream", "--upstream-prefixes", "198.51.100.0/24"};
	auto with = [&](std::initializer_list<const char *> more) {
		std::vector<std::string> v(std::begin(on), std::end(on));
		v.insert(v.end(), more.begin(), more.end());
		return v;
	};
	expect_invalid(with({"--upstream-mode", "rtbh"}), {"--upstream-mode 'rtbh' is not flowspec or blackhole"});
	expect_invalid(with({"--upstream-action", "drop"}), {"not discard or rate:BITS"});
	expect_invalid(with({"--upstream-action", "rate:"}), {"not discard or rate:BITS"});
	expect_invalid(with({"--upstream-action", "rate:4"}), {"at least 8 bits a second"});
	expect_invalid(with({"--upstream-community-host", "65535:666,65536:1"}), {"'65536:1' is not a community"});
	expect_invalid(with({"--upstream-community-subnet", "blackhole,"}), {"'' is not a community"});
	expect_invalid(with({"--upstream-nexthop4", "2001:db8::1"}), {"not an IPv4 address"});
	expect_invalid(with({"--upstream-nexthop6", "192.0.2.1"}), {"not an IPv6 address"});
	expect_invalid(with({"--upstream-blackhole"}), {"--upstream-blackhole needs --upstream-bps or --upstream-pps"});
	expect_invalid({"-i", "eth0", "--upstream-pps", "10"}, {"need --upstream"});
	expect_bad_value("--upstream-top", "0", {"1..64"});
	expect_bad_value("--upstream-top", "65");
	expect_bad_value("--upstream-after", "-1");
	expect_bad_value("--upstream-after", "3601");
	expect_bad_value("--upstream-bps", "-1");
	expect_bad_value("--upstream-pps", "10000000001");
}

TEST(Options, UpstreamAutomaticBlackholeAndCommunities)
{
	auto off = good();
	EXPECT_FALSE(off.upstream.automatic.enabled());
	EXPECT_EQ(off.upstream.mode, UpstreamMode::flowspec);
	EXPECT_FALSE(off.upstream.last_resort);
	EXPECT_FALSE(off.upstream.speaker.unicast);
	EXPECT_EQ(off.upstream.speaker.host_communities, (std::vector<std::string>{"65535:666", "no-export"}));
	EXPECT_EQ(off.upstream.speaker.subnet_communities, (std::vector<std::string>{"65535:666", "no-export"}));
	EXPECT_EQ(off.upstream.automatic.after_s, 10);
	EXPECT_EQ(off.upstream.automatic.top, 4u);

	auto on = good({"--upstream", "--upstream-prefixes", "198.51.100.0/24", "--upstream-bps", "1000000000",
			"--upstream-pps", "200000", "--upstream-after", "5", "--upstream-top", "8", "--upstream-action",
			"rate:8000000", "--upstream-mode", "blackhole", "--upstream-blackhole", "--upstream-nexthop4",
			"192.0.2.1", "--upstream-nexthop6", "100::1", "--upstream-community-host", "65535:666,no-export",
			"--upstream-community-subnet", "64500:666,no-advertise"});
	EXPECT_TRUE(on.upstream.automatic.enabled());
	EXPECT_EQ(on.upstream.automatic.bps, 1000000000u);
	EXPECT_EQ(on.upstream.automatic.pps, 200000u);
	EXPECT_EQ(on.upstream.automatic.after_s, 5);
	EXPECT_EQ(on.upstream.automatic.top, 8u);
	EXPECT_EQ(on.upstream.automatic.action, UpstreamAction::rate_limit);
	EXPECT_EQ(on.upstream.automatic.rate_bytes, 1000000u); // 8 Mbit/s is 1 MB/s
	EXPECT_EQ(on.upstream.mode, UpstreamMode::blackhole);
	EXPECT_TRUE(on.upstream.last_resort);
	EXPECT_TRUE(on.upstream.speaker.unicast);
	EXPECT_EQ(on.upstream.speaker.nexthop4, "192.0.2.1");
	EXPECT_EQ(on.upstream.speaker.nexthop6, "100::1");
	EXPECT_EQ(on.upstream.speaker.subnet_communities, (std::vector<std::string>{"64500:666", "no-advertise"}));
}

TEST(Options, RefusesBadHashKeyFiles)
{
	expect_bad_value("--hash-key-file", key_file("0123"), {"32 hex digits", "got 4 characters"});
	expect_bad_value("--hash-key-file", key_file("000102030405060708090a0b0c0d0e0f00"), {"32 hex digits"}); // 34
	expect_bad_value("--hash-key-file", key_file("000102030405060708090a0b0c0d0e0g"), {"32 hex digits"});
	expect_bad_value("--hash-key-file", key_file("0x0102030405060708090a0b0c0d0e0f"), {"32 hex digits"});
	expect_bad_value("--hash-key-file", key_file("0001020304050607 8090a0b0c0d0e0f"), {"32 hex digits"});
	expect_bad_value("--hash-key-file", key_file(""), {"32 hex digits", "got 0"}); // empty: not "random"
	// readable by others: refused, whatever it holds
	expect_bad_value("--hash-key-file", key_file("000102030405060708090a0b0c0d0e0f", 0644), {"chmod 600"});
	expect_bad_value("--hash-key-file", key_file("000102030405060708090a0b0c0d0e0f", 0640), {"chmod 600"});
	expect_bad_value("--hash-key-file", "/nonexistent/key", {"--hash-key-file /nonexistent/key"});
	expect_bad_value("--hash-key-file", "/tmp", {"not a regular file"});
	// a symbolic link to a good key file is not followed
	const std::string good = key_file("000102030405060708090a0b0c0d0e0f");
	const std::string link = good + ".link";
	ASSERT_EQ(::symlink(good.c_str(), link.c_str()), 0);
	expect_bad_value("--hash-key-file", link, {"--hash-key-file " + link});
	::unlink(link.c_str());
	// the key on the command line is gone
	expect_invalid({"-i", "eth0", "--hash-key", "000102030405060708090a0b0c0d0e0f"}, {"--hash-key"});
}

TEST(Options, RefusesOtherBadValues)
{
	expect_bad_value("--log-level", "bogus", {"bogus", "debug, info, warn, error"});
	expect_bad_value("--log-level", "INFO");
	expect_bad_value("--audit-slots", "0");
	expect_bad_value("--audit-slots", "16777217");
	expect_bad_value("--rekey-every", "4", {"--rekey-every", "0 (never) or 5..2592000 seconds"});
	expect_bad_value("--rekey-every", "2592001", {"0 (never) or 5..2592000"});
	expect_bad_value("--rekey-every", "-1");
	expect_bad_value("--max-clients", "0");
	expect_bad_value("--max-clients", "1025");
	expect_bad_value("--pin-dir", "relative/dir", {"absolute"});
	expect_invalid({"-i", "eth0", "--pin-dir", ""}, {"--pin-dir", "absolute"});
	expect_invalid({"-i", "eth0", "--socket", ""}, {"--socket", "1..107"});
	expect_bad_value("--socket", "/tmp/" + std::string(120, 's'), {"1..107"});
}

TEST(Options, RefusesUnknownOptions)
{
	expect_invalid({"-i", "eth0", "--bogus"}, {"--bogus"});
	expect_invalid({"-i", "eth0", "--bogus=3"}, {"--bogus"});
	expect_invalid({"-i", "eth0", "-z"}, {"-z"});
	expect_invalid({"-i", "eth0", "--rate"}, {"--rate"}); // value missing
}

TEST(Options, ConfigFileIsRead)
{
	TempDir dir{"sluice-options-test"};
	auto path = dir.file("sluiced.conf", "interface = veth0\nrate = 50\nburst = 7\n");
	auto r = parse({"--config", path});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	const auto &o = r->options;
	EXPECT_EQ(o.config_file, path);
	EXPECT_EQ(o.interfaces, std::vector<std::string>{"veth0"});
	EXPECT_EQ(o.rate_pps, 50u);
	EXPECT_EQ(o.burst, 7u);
	EXPECT_TRUE(o.rate_given);
	EXPECT_TRUE(o.burst_given);
	// Untouched options keep their defaults.
	EXPECT_EQ(o.load.slots, 262144u);
	EXPECT_EQ(o.socket_path, "/run/sluice/sluiced.sock");
}

TEST(Options, CommandLineWinsOverConfigFile)
{
	TempDir dir{"sluice-options-test"};
	auto path = dir.file("sluiced.conf", "interface = veth0\nrate = 50\nburst = 7\nmode = skb\n");
	// Before and after --config: the command line wins either way.
	for (bool first : {true, false}) {
		std::vector<std::string> args;
		if (first)
			args = {"--rate", "80", "--mode", "auto", "--config", path};
		else
			args = {"--config", path, "--rate", "80", "--mode", "auto"};
		auto r = parse(args);
		ASSERT_TRUE(r.has_value()) << r.error().message;
		const auto &o = r->options;
		EXPECT_EQ(o.rate_pps, 80u);
		EXPECT_EQ(o.burst, 7u); // from the file
		EXPECT_EQ(o.mode, AttachMode::automatic);
		EXPECT_TRUE(o.rate_given);
		EXPECT_TRUE(o.burst_given);
	}
	// An explicit default on the command line still beats the file.
	auto r = parse({"--config", path, "--rate", "10000"});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->options.rate_pps, 10000u);
	EXPECT_TRUE(r->options.rate_given);
	// An interface on the command line is protected.
	r = parse({"--config", path, "-i", "eth1"});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	const auto &ifs = r->options.interfaces;
	EXPECT_NE(std::find(ifs.begin(), ifs.end(), "eth1"), ifs.end());
}

TEST(Options, GivenFlagsFollowWhatTheFileSets)
{
	TempDir dir{"sluice-options-test"};
	auto path = dir.file("rate-only.conf", "interface = veth0\nrate = 50\n");
	auto r = parse({"--config", path});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->options.rate_pps, 50u);
	EXPECT_TRUE(r->options.rate_given);
	EXPECT_EQ(r->options.burst, 20000u);
	EXPECT_FALSE(r->options.burst_given);

	path = dir.file("iface-only.conf", "interface = veth0\n");
	r = parse({"--config", path, "--burst", "9"});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_FALSE(r->options.rate_given);
	EXPECT_TRUE(r->options.burst_given);
	EXPECT_EQ(r->options.burst, 9u);
}

TEST(Options, ConfigFileValuesAreValidatedToo)
{
	TempDir dir{"sluice-options-test"};
	expect_invalid({"--config", dir.file("a.conf", "interface = veth0\nrate = 0\n")}, {"--rate 0"});
	expect_invalid({"--config", dir.file("b.conf", "interface = veth0\ntable-size = 1000\n")},
		       {"--table-size", "1000"});
	expect_invalid({"--config", dir.file("c.conf", "interface = veth0\nbogus = 1\n")}, {"bogus"});
	expect_invalid({"--config", dir.file("d.conf", "interface = veth0\nrate = fast\n")}, {"rate", "fast"});
	expect_invalid({"--config", dir.file("e.conf", "rate = 5\n")}, {"no interface given"});
}

TEST(Options, MissingConfigFileIsAnError)
{
	TempDir dir{"sluice-options-test"};
	std::string missing = dir.path() + "/does-not-exist.conf";
	expect_invalid({"-i", "eth0", "--config", missing}, {"config file", missing});
	expect_invalid({"-i", "eth0", "--config", dir.path() + "/nodir/x.conf"}, {"config file"});
}

TEST(Options, TopAndMultiprog)
{
	auto d = good();
	EXPECT_EQ(d.load.sample_every, SLUICE_SAMPLE_EVERY_DEFAULT);
	EXPECT_EQ(d.top_capacity, 1024u);
	EXPECT_EQ(d.top_window_s, 2.0);
	EXPECT_FALSE(d.load.multiprog);
	auto o = good({"--sample-every", "64", "--top-capacity", "100", "--top-window", "5", "--multiprog"});
	EXPECT_EQ(o.load.sample_every, 64u);
	EXPECT_EQ(o.top_capacity, 100u);
	EXPECT_EQ(o.top_window_s, 5.0);
	EXPECT_TRUE(o.load.multiprog);
	EXPECT_EQ(good({"--sample-every", "0"}).load.sample_every, 0u);
	expect_bad_value("--sample-every", "1000", {"power of two"});
	expect_bad_value("--sample-every", "-1");
	expect_bad_value("--sample-every", std::to_string(2 * SLUICE_SAMPLE_EVERY_MAX));
	expect_bad_value("--top-capacity", "0");
	expect_bad_value("--top-window", "0.01");
}

TEST(Options, Standing)
{
	auto d = good();
	EXPECT_EQ(d.load.standing_sets, SLUICE_STANDING_SETS_DEFAULT);
	EXPECT_EQ(d.load.standing_lapse_s, SLUICE_STANDING_LAPSE_DEFAULT_S);
	auto o = good({"--standing-sets", "1024", "--standing-lapse", "60"});
	EXPECT_EQ(o.load.standing_sets, 1024u);
	EXPECT_EQ(o.load.standing_lapse_s, 60u);
	EXPECT_EQ(good({"--standing-sets", std::to_string(SLUICE_STANDING_SETS_MIN)}).load.standing_sets,
		  SLUICE_STANDING_SETS_MIN);
	EXPECT_EQ(good({"--standing-sets", std::to_string(SLUICE_STANDING_SETS_MAX)}).load.standing_sets,
		  SLUICE_STANDING_SETS_MAX);
	expect_bad_value("--standing-sets", "1000", {"power of two"});
	expect_bad_value("--standing-sets", "8");
	expect_bad_value("--standing-sets", std::to_string(2ull * SLUICE_STANDING_SETS_MAX));
	expect_bad_value("--standing-sets", "-16");
	expect_bad_value("--standing-lapse", "0");
	expect_bad_value("--standing-lapse", std::to_string(SLUICE_STANDING_LAPSE_MAX_S + 1ull));
	expect_bad_value("--standing-lapse", "-1");
	EXPECT_EQ(good({"--standing-lapse", std::to_string(SLUICE_STANDING_LAPSE_MAX_S)}).load.standing_lapse_s,
		  SLUICE_STANDING_LAPSE_MAX_S);
}

TEST(Options, StandingBucketNewcomersObservedAndNoStanding)
{
	auto cpus = possible_cpus();
	ASSERT_TRUE(cpus.has_value());
	auto d = good();
	EXPECT_EQ(d.standing_rate_pps, 1000000u);
	EXPECT_EQ(d.standing_burst, 100000u);
	EXPECT_FALSE(d.newcomer_pps.has_value());
	EXPECT_EQ(newcomer_pps_asked(d, *cpus), 100000u); // --trip-pps / 10
	EXPECT_EQ(d.load.observe_periods, 0u);
	EXPECT_FALSE(d.no_standing);
	auto o = good({"--standing-rate", "5000", "--standing-burst", "300", "--newcomer-pps", "0",
		       "--observe-periods", "255", "--no-standing"});
	EXPECT_EQ(o.standing_rate_pps, 5000u);
	EXPECT_EQ(o.standing_burst, 300u);
	EXPECT_EQ(o.newcomer_pps, 0u);
	EXPECT_EQ(o.load.observe_periods, 255u);
	EXPECT_TRUE(o.no_standing);
	// The newcomer default follows --trip-pps.
	EXPECT_EQ(newcomer_pps_asked(good({"--trip-pps", "5000"}), *cpus), 500u);
	EXPECT_EQ(newcomer_pps_asked(good({"--trip-pps", "5000", "--newcomer-pps", "0"}), *cpus), 0u);
	EXPECT_EQ(good({"--newcomer-pps", "7"}).newcomer_pps, 7u);

	expect_bad_value("--standing-rate", "0", {"0 is outside 1..100000000"});
	expect_bad_value("--standing-rate", "100000001");
	expect_bad_value("--standing-rate", "-1");
	expect_bad_value("--standing-burst", "0", {"0 is outside 1..1000000"});
	expect_bad_value("--standing-burst", "1000001");
	expect_bad_value("--observe-periods", "256", {"256 is outside 0 (off)..255"});
	expect_bad_value("--observe-periods", "-1");
	uint64_t max = newcomer_pps_max(*cpus);
	EXPECT_EQ(good({"--newcomer-pps", std::to_string(max)}).newcomer_pps, max);
	expect_bad_value("--newcomer-pps", std::to_string(max + 1),
			 {"is outside 0 (none) or", std::to_string(*cpus) + " CPUs"});
	expect_bad_value("--newcomer-pps", "-1"); // not taken for "not given"
	expect_bad_value("--newcomer-pps", "many");
	expect_bad_value("--no-standing", "1"); // a switch takes no value
}

TEST(Options, StandingPrefixQuotaAndFeederCgroup)
{
	auto d = good();
	EXPECT_EQ(d.standing_prefix_quota, 64u);
	EXPECT_TRUE(d.feeder_cgroup.empty()) << "the root by default";
	EXPECT_EQ(good({"--standing-prefix-quota", "1"}).standing_prefix_quota, 1u);
	// at most the table's entries: --standing-sets 16 x 8 ways
	EXPECT_EQ(good({"--standing-sets", "16", "--standing-prefix-quota", "128"}).standing_prefix_quota, 128u);
	expect_invalid({"-i", "eth0", "--standing-sets", "16", "--standing-prefix-quota", "129"},
		       {"--standing-prefix-quota", "129"});
	expect_bad_value("--standing-prefix-quota", "0", {"must be 1..", "got 0"});
	expect_bad_value("--standing-prefix-quota", "-3");
	// the largest a prefix's 16-bit count allows, whatever the table
	expect_bad_value("--standing-prefix-quota", "32001", {"--standing-prefix-quota", "32001"});
	EXPECT_EQ(good({"--standing-prefix-quota", "32000"}).standing_prefix_quota, 32000u);
	// tenure: seconds, 0 (one level) or 1 up to the longest lapse
	EXPECT_EQ(d.standing_tenure_s, 300);
	EXPECT_EQ(good({"--standing-tenure", "0"}).standing_tenure_s, 0);
	EXPECT_EQ(good({"--standing-tenure", "604800"}).standing_tenure_s, 604800);
	expect_bad_value("--standing-tenure", "0.5", {"--standing-tenure", "0.5"});
	expect_bad_value("--standing-tenure", "604801", {"--standing-tenure", "604801"});
	expect_bad_value("--standing-tenure", "-1");
	// so many in all: a user's UDP grants a lapse time; 0 is no such bound
	EXPECT_EQ(d.grant_max, 1000u);
	EXPECT_EQ(good({"--grant-max", "0"}).grant_max, 0u);
	EXPECT_EQ(good({"--grant-max", "1000000"}).grant_max, 1000000u);
	expect_bad_value("--grant-max", "1000001", {"--grant-max", "1000001"});
	expect_bad_value("--grant-max", "-1");
	// a cgroup v2 directory, checked at parse: a file, a missing path and a
	// directory of another file system are refused, naming the option
	expect_bad_value("--feeder-cgroup", "/nonexistent/sluice-cgroup", {"--feeder-cgroup", "/nonexistent"});
	expect_bad_value("--feeder-cgroup", "/tmp", {"not a cgroup v2 directory"});
	expect_invalid({"-i", "eth0", "--feeder-cgroup", "/tmp", "--no-standing"}, {"--feeder-cgroup"});
}

TEST(Options, StandingOptionsInTheConfigFile)
{
	TempDir dir{"sluice-options-test"};
	auto path = dir.file("sluiced.conf", "interface = veth0\nstanding-rate = 777\nstanding-burst = 55\n"
					     "newcomer-pps = 42\nobserve-periods = 4\nno-standing = true\n");
	auto r = parse({"--config", path});
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->options.standing_rate_pps, 777u);
	EXPECT_EQ(r->options.standing_burst, 55u);
	EXPECT_EQ(r->options.newcomer_pps, 42u);
	EXPECT_EQ(r->options.load.observe_periods, 4u);
	EXPECT_TRUE(r->options.no_standing);
	auto bad = dir.file("bad.conf", "interface = veth0\nstanding-rate = 0\n");
	expect_invalid({"--config", bad}, {"--standing-rate", "0 is outside"});
}

TEST(Options, StandingLapseInTicksRoundsUp)
{
	// A tick is 2^30 ns (1.07 s): a lapse never ends before the time asked.
	EXPECT_EQ(standing_lapse_ticks(1), 1u);
	EXPECT_EQ(standing_lapse_ticks(3600), 3353u); // 3600e9 / 2^30 = 3352.8
	EXPECT_GE(uint64_t(standing_lapse_ticks(SLUICE_STANDING_LAPSE_MAX_S)) << SLUICE_STANDING_TICK_SHIFT,
		  uint64_t(SLUICE_STANDING_LAPSE_MAX_S) * SLUICE_NSEC_PER_SEC);
}

} // namespace
} // namespace sluice

namespace sluice {
namespace {

TEST(Options, PolicyFile)
{
	// No --policy: the default path when it exists (this host has none, or
	// the test would depend on it), else none.
	DaemonOptions d = good();
	EXPECT_EQ(d.policy_file, std::filesystem::exists(defaults::kPolicyPath) ? defaults::kPolicyPath : "");
	EXPECT_FALSE(d.policy_watch);
	EXPECT_EQ(good({"--policy", "/tmp/p.yaml"}).policy_file, "/tmp/p.yaml");
	EXPECT_TRUE(good({"--policy", "/tmp/p.yaml", "--policy-watch"}).policy_watch);
	EXPECT_EQ(good({"--no-policy"}).policy_file, "");
	expect_invalid({"-i", "eth0", "--policy", "/tmp/p.yaml", "--no-policy"}, {"--policy and --no-policy"});
	expect_invalid({"-i", "eth0", "--policy", ""}, {"--policy needs a path"});
	expect_invalid({"-i", "eth0", "--no-policy", "--policy-watch"}, {"--policy-watch needs a policy file"});
	expect_invalid({"-i", "eth0", "--policy-watch=1"}, {"policy-watch"});
}

} // namespace
} // namespace sluice
