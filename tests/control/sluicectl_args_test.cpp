// sluicectl in-process: what reaches the daemon, and what the operator sees.
// Bad input must fail with exit 2 and a message naming the problem before
// any request is sent; replies map to exit codes by their kind. A fake
// daemon (a thread serving a UNIX socket in a temp dir) answers with canned
// replies. No root needed.
#include "temp_dir.h"
#include "sluicectl/sluicectl.h"
#include "sluicectl/table.h"
#include "ipc/encode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>
#include <vector>

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace {

const std::string kNoSocket = "/nonexistent/sluicectl-test.sock";

struct Run {
	int code;
	std::string out;
	std::string err;
};

Run sluicectl(std::vector<std::string> args)
{
	args.insert(args.begin(), "sluicectl");
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	std::ostringstream out, err;
	int code = sluicectl_main(static_cast<int>(args.size()), argv.data(), out, err);
	return {code, out.str(), err.str()};
}

// Answers each request line with the next canned reply, in order; closes a
// connection when it has no replies left. Records the requests it got.
class FakeDaemon {
public:
	explicit FakeDaemon(std::vector<std::string> replies) : replies_(std::move(replies))
	{
		path_ = dir_.path() + "/sluiced.sock";
		listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
		if (::bind(listen_fd_, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
		    ::listen(listen_fd_, 4) != 0)
			throw std::runtime_error("fake daemon cannot listen");
		thread_ = std::thread([this] { serve(); });
	}
	explicit FakeDaemon(const json &reply) : FakeDaemon(std::vector<std::string>{reply.dump()}) {}
	~FakeDaemon()
	{
		// Wakes the blocked accept() on Linux.
		::shutdown(listen_fd_, SHUT_RDWR);
		thread_.join();
		::close(listen_fd_);
	}
	const std::string &socket() const { return path_; }
	std::vector<json> requests() const
	{
		std::lock_guard lock(mu_);
		return requests_;
	}

private:
	void serve()
	{
		size_t next = 0;
		for (;;) {
			int fd = ::accept(listen_fd_, nullptr, nullptr);
			if (fd < 0)
				return;
			std::string pending;
			char buf[4096];
			while (next < replies_.size()) {
				auto nl = pending.find('\n');
				if (nl == std::string::npos) {
					ssize_t n = ::read(fd, buf, sizeof(buf));
					if (n <= 0)
						break;
					pending.append(buf, static_cast<size_t>(n));
					continue;
				}
				{
					std::lock_guard lock(mu_);
					requests_.push_back(json::parse(pending.substr(0, nl)));
				}
				pending.erase(0, nl + 1);
				std::string line = replies_[next++] + "\n";
				(void)!::write(fd, line.data(), line.size());
			}
			::close(fd);
		}
	}

	TempDir dir_{"sluicectl-test"};
	std::string path_;
	int listen_fd_ = -1;
	std::vector<std::string> replies_;
	mutable std::mutex mu_;
	std::vector<json> requests_;
	std::thread thread_;
};

json refused_reply(const std::string &message)
{
	return {{"ok", false}, {"error", message}, {"kind", "refused"}};
}

json counters_body()
{
	json c = json::object();
	for (const char *name : {"passed", "drop_rate", "drop_shed", "drop_deny", "allowlisted", "non_ip",
				 "malformed", "would_drop"})
		c[name] = {{"packets", 0}, {"bytes", 0}};
	c["passed"] = {{"packets", 123456}, {"bytes", 7890123}};
	c["drop_rate"] = {{"packets", 42}, {"bytes", 2520}};
	return c;
}

// What sluiced answers to {"cmd": "status"} for one interface.
json status_reply()
{
	json rates = json::object();
	rates["passed"] = {{"pps", 1500.0}, {"bps", 960000.0}};
	rates["drop_rate"] = {{"pps", 7.0}, {"bps", 3360.0}};
	json iface = {
		{"iface", "eth0"},
		{"ifindex", 2},
		{"attached", true},
		{"attach_mode", "skb"},
		{"prog_id", 4711},
		{"breaker", {{"state", "shedding"}, {"since", "2026-11-30T05:55:33Z"}, {"manual", true}}},
		{"admission_ppm", 250000},
		{"rate_pps", 1000},
		{"burst", 2000},
		{"table_slots", 262144},
		{"v4_prefix", 32},
		{"v6_prefix", 64},
		{"dry_run", false},
		{"counters", counters_body()},
		{"audit",
		 {{"swept", 524288},
		  {"violations", 3},
		  {"last_sweep_violations", 0},
		  {"full_sweeps", 2},
		  {"last_sweep", "2026-11-30T06:00:00Z"}}},
		{"rates", rates},
		{"oper_state", "up"},
	};
	return {{"ok", true},
		{"daemon", {{"running", true}, {"pid", 812}, {"uptime_s", 3600.0}}},
		{"interfaces", json::array({iface})}};
}

json stats_reply()
{
	return {{"ok", true},
		{"interfaces",
		 json::array({{{"iface", "eth0"},
			       {"counters", counters_body()},
			       {"rates", {{"passed", {{"pps", 1500.0}, {"bps", 960000.0}}}}}}})}};
}

// Exit 2, one line on stderr containing `what`, nothing on stdout.
void expect_usage_error(const Run &r, const std::string &what)
{
	EXPECT_EQ(r.code, 2) << r.err;
	EXPECT_THAT(r.err, StartsWith("sluicectl: "));
	EXPECT_THAT(r.err, HasSubstr(what));
	EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
	EXPECT_EQ(r.out, "");
}

// --- usage and input errors: exit 2, nothing sent --------------------------

TEST(sluicectlArgs, NoCommandIsAUsageError)
{
	auto r = sluicectl({});
	expect_usage_error(r, "no command given");
	EXPECT_THAT(r.err, HasSubstr("sluicectl --help"));
}

TEST(sluicectlArgs, UnknownCommandListsTheCommands)
{
	auto r = sluicectl({"frobnicate"});
	expect_usage_error(r, "unknown command 'frobnicate'");
	EXPECT_THAT(r.err, HasSubstr("status, stats, breaker"));
}

TEST(sluicectlArgs, UnknownFlagNamesItAndShowsUsage)
{
	auto r = sluicectl({"--socket", kNoSocket, "status", "--bogus"});
	expect_usage_error(r, "unrecognised option '--bogus'");
	EXPECT_THAT(r.err, HasSubstr("usage: sluicectl status [IFACE]"));
}

TEST(sluicectlArgs, UnknownShortFlagAfterTheCommandIsRefused)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "audit", "-x", "eth0"}), "unrecognised option '-x'");
}

TEST(sluicectlArgs, UnknownGlobalFlagWithoutCommand)
{
	expect_usage_error(sluicectl({"--bogus"}), "unrecognised option '--bogus'");
}

TEST(sluicectlArgs, MissingIfaceShowsUsage)
{
	auto r = sluicectl({"--socket", kNoSocket, "set", "--rate", "10"});
	expect_usage_error(r, "missing IFACE");
	EXPECT_THAT(r.err, HasSubstr("usage: sluicectl set IFACE [--rate N] [--burst N]"));
}

TEST(sluicectlArgs, BadInterfaceNameIsRefused)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "detach", "a/b"}), "'a/b' is not an interface name");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "detach", "averyveryverylongname0"}),
			   "is not an interface name");
}

TEST(sluicectlArgs, BadAddressIsNamed)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "bucket", "eth0", "198.18.0"}),
			   "'198.18.0' is not an IPv4 or IPv6 address");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "refill", "eth0", "2001:2::g", "5"}),
			   "'2001:2::g' is not an IPv4 or IPv6 address");
}

TEST(sluicectlArgs, CidrWithHostBitsSuggestsThePrefix)
{
	auto r = sluicectl({"--socket", kNoSocket, "allow", "add", "eth0", "198.18.0.0/15", "10.1.1.1/16"});
	expect_usage_error(r, "CIDR 10.1.1.1/16 has host bits set; did you mean 10.1.0.0/16?");
}

TEST(sluicectlArgs, BadRateIsAUsageError)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "set", "eth0", "--rate", "fast"}),
			   "--rate wants a non-negative integer, got 'fast'");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "set", "eth0", "--burst", "-3"}),
			   "--burst wants a non-negative integer, got '-3'");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "set", "eth0", "--rate", "99999999999999999999"}),
			   "out of range");
}

TEST(sluicectlArgs, SetNeedsRateOrBurst)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "set", "eth0"}), "give --rate N, --burst N or both");
}

TEST(sluicectlArgs, BucketSetWithANonIntegerIsAUsageError)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "bucket", "eth0", "198.18.0.1", "--set", "1.5"}),
			   "--set wants an integer, got '1.5'");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "bucket", "eth0", "198.18.0.1", "--set", "many"}),
			   "--set wants an integer, got 'many'");
}

TEST(sluicectlArgs, RefillWithANonIntegerIsAUsageError)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "refill", "eth0", "198.18.0.1", "1e3"}),
			   "N wants an integer, got '1e3'");
}

TEST(sluicectlArgs, BreakerWithAnUnknownAction)
{
	auto r = sluicectl({"--socket", kNoSocket, "breaker", "open", "eth0"});
	expect_usage_error(r, "unknown breaker action 'open' (trip, recover or close)");
}

TEST(sluicectlArgs, AttachWithABogusMode)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "attach", "lo", "--mode", "bogus"}),
			   "attach mode 'bogus' is not one of native, skb, auto");
}

TEST(sluicectlArgs, AttachToAnInterfaceThatDoesNotExist)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "attach", "nosuchif0"}), "unknown interface 'nosuchif0'");
}

TEST(sluicectlArgs, JsonOnAWriteCommandIsAUsageError)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "-j", "breaker", "trip", "eth0"}),
			   "--json is for the read commands");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "bucket", "eth0", "198.18.0.1", "--set", "3", "-j"}),
			   "--json is for the read commands");
}

TEST(sluicectlArgs, IntervalNeedsWatchAndPositiveSeconds)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "stats", "--interval", "2"}), "--interval needs --watch");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "stats", "--watch", "--interval", "0"}),
			   "--interval wants seconds");
}

TEST(sluicectlArgs, ExtraArgumentsAreRefused)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "detach", "eth0", "eth1"}), "unexpected argument 'eth1'");
}

TEST(sluicectlArgs, SocketPathTooLong)
{
	expect_usage_error(sluicectl({"--socket", "/tmp/" + std::string(200, 's'), "audit", "eth0"}),
			   "must be 1 to 107 bytes long");
}

TEST(sluicectlArgs, FromFileWithABadLineSendsNothingAndNamesTheLine)
{
	FakeDaemon daemon(json{{"ok", true}, {"iface", "eth0"}, {"list", "deny"}, {"changed", 2}});
	TempDir dir{"sluicectl-test"};
	std::string file = dir.path() + "/deny.txt";
	std::ofstream(file) << "# blocklist\n198.18.0.0/15\n\n2001:2::/48  # lab\n10.0.0.300/8\n";
	auto r = sluicectl({"--socket", daemon.socket(), "deny", "add", "eth0", "--from", file});
	expect_usage_error(r, file + ":5: '10.0.0.300/8' is not a CIDR prefix");
	EXPECT_THAT(r.err, HasSubstr("nothing was sent"));
	EXPECT_TRUE(daemon.requests().empty());
}

// A list file of any length is one request: its descriptor travels with it
// (SCM_RIGHTS), so the 64 KiB line limit does not cap a list.
TEST(sluicectlArgs, FromFileOfAnySizeGoesAsADescriptor)
{
	FakeDaemon daemon(json{{"ok", true}, {"iface", "eth0"}, {"list", "deny"}, {"changed", 8192}});
	TempDir dir{"sluicectl-test"};
	std::string file = dir.path() + "/big.txt";
	{
		std::ofstream big(file);
		for (int i = 0; i < 8192; i++)
			big << "10." << i / 256 << '.' << i % 256 << ".0/24\n";
	}
	auto r = sluicectl({"--socket", daemon.socket(), "deny", "add", "eth0", "--from", file});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(r.out, "eth0: added 8192 prefixes to the deny list\n");
	EXPECT_EQ(daemon.requests().at(0),
		  (json{{"cmd", "list_add"}, {"iface", "eth0"}, {"list", "deny"}, {"cidrs", json::array()}, {"from_fd", true}}));
}

TEST(sluicectlArgs, HelpExitsZero)
{
	auto r = sluicectl({"--help"});
	EXPECT_EQ(r.code, 0);
	EXPECT_THAT(r.out, HasSubstr("Usage: sluicectl [OPTIONS] COMMAND"));
	EXPECT_THAT(r.out, HasSubstr("breaker"));
	EXPECT_THAT(r.out, HasSubstr("--pin-dir"));

	r = sluicectl({"bucket", "--help"});
	EXPECT_EQ(r.code, 0);
	EXPECT_THAT(r.out, HasSubstr("Usage: sluicectl bucket IFACE ADDR [--set N]"));
	EXPECT_THAT(r.out, HasSubstr("--set N"));
	EXPECT_EQ(r.err, "");
}

// --- the daemon is not there: exit 1 with the fix -------------------------

TEST(sluicectlArgs, WellFormedCommandWithoutDaemonSaysIsSluicedRunning)
{
	auto r = sluicectl({"--socket", kNoSocket, "breaker", "trip", "eth0"});
	EXPECT_EQ(r.code, 1);
	EXPECT_EQ(r.err, "sluicectl: cannot reach sluiced at " + kNoSocket +
				 ": No such file or directory; is sluiced running? (--socket to use another path)\n");
}

TEST(sluicectlArgs, StatusWithNeitherDaemonNorPins)
{
	TempDir pins{"sluicectl-test"};
	auto r = sluicectl({"--socket", kNoSocket, "--pin-dir", pins.path(), "status"});
	EXPECT_EQ(r.code, 1);
	EXPECT_THAT(r.err, HasSubstr("is sluiced running?"));
	EXPECT_THAT(r.err, HasSubstr("no pins under " + pins.path()));
	EXPECT_EQ(r.out, "");
}

// --- against a fake daemon -------------------------------------------------

TEST(sluicectlDaemon, RefusedBreakerPrintsTheDaemonsMessageAndExitsOne)
{
	std::string message = "invalid transition: shedding -> serving; current state 'shedding'; "
			      "valid targets: [recovering]";
	FakeDaemon daemon(refused_reply(message));
	auto r = sluicectl({"--socket", daemon.socket(), "breaker", "close", "eth0"});
	EXPECT_EQ(r.code, 1);
	EXPECT_EQ(r.err, "sluicectl: " + message + "\n");
	EXPECT_EQ(r.out, "");
	ASSERT_EQ(daemon.requests().size(), 1u);
	EXPECT_EQ(daemon.requests()[0], (json{{"cmd", "breaker"}, {"iface", "eth0"}, {"to", "serving"}}));
}

TEST(sluicectlDaemon, BreakerTransitionIsPrinted)
{
	FakeDaemon daemon(json{{"ok", true}, {"iface", "eth0"}, {"from", "shedding"}, {"to", "recovering"},
			       {"state", "recovering"}});
	auto r = sluicectl({"breaker", "recover", "eth0", "--socket", daemon.socket()});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(r.out, "eth0: breaker shedding -> recovering\n");
	EXPECT_EQ(daemon.requests().at(0)["to"], "recovering");
}

TEST(sluicectlDaemon, StatusPrintsAnAlignedTableWithTheValues)
{
	FakeDaemon daemon(status_reply());
	auto r = sluicectl({"--socket", daemon.socket(), "status"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, HasSubstr("sluiced: running (pid 812, up 3600 s)"));
	EXPECT_THAT(r.out, HasSubstr("\neth0\n"));
	EXPECT_THAT(r.out, HasSubstr("  attached    skb, prog 4711, link up\n"));
	EXPECT_THAT(r.out, HasSubstr("  breaker     shedding since 2026-11-30T05:55:33Z, manual\n"));
	EXPECT_THAT(r.out, HasSubstr("  admission   25.0%\n"));
	EXPECT_THAT(r.out, HasSubstr("  rate        1000 pps\n"));
	EXPECT_THAT(r.out, HasSubstr("  burst       2000 tokens\n"));
	EXPECT_THAT(r.out, HasSubstr("  table       262144 slots\n"));
	EXPECT_THAT(r.out, HasSubstr("  prefixes    IPv4 /32, IPv6 /64\n"));
	EXPECT_THAT(r.out, HasSubstr("  dry run     no\n"));
	EXPECT_THAT(r.out, HasSubstr("524288 slots swept, 3 violations; last full sweep 2026-11-30T06:00:00Z"));
	EXPECT_THAT(r.out, HasSubstr("  OUTCOME      PACKETS    BYTES   PPS\n"));
	EXPECT_THAT(r.out, HasSubstr("  passed        123456  7890123  1500\n"));
	EXPECT_THAT(r.out, HasSubstr("  drop_rate         42     2520     7\n"));
	EXPECT_THAT(r.out, HasSubstr("  would_drop         0        0     -\n"));
	EXPECT_THAT(r.out, Not(HasSubstr("{")));
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "status"}}));
}

TEST(sluicectlDaemon, StatusJsonPrintsTheReplyBody)
{
	FakeDaemon daemon(status_reply());
	auto r = sluicectl({"--socket", daemon.socket(), "status", "eth0", "-j"});
	EXPECT_EQ(r.code, 0) << r.err;
	json expected = status_reply();
	expected.erase("ok");
	EXPECT_EQ(json::parse(r.out), expected);
	EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "status"}, {"iface", "eth0"}}));
}

TEST(sluicectlDaemon, InvalidReplyExitsTwoSystemReplyExitsOne)
{
	FakeDaemon invalid(json{{"ok", false}, {"error", "sluiced does not manage interface 'eth9'"}, {"kind", "invalid"}});
	auto r = sluicectl({"--socket", invalid.socket(), "audit", "eth9"});
	EXPECT_EQ(r.code, 2);
	EXPECT_EQ(r.err, "sluicectl: sluiced does not manage interface 'eth9'\n");

	FakeDaemon system(json{{"ok", false}, {"error", "reading config: Bad file descriptor (errno 9)"}, {"kind", "system"}});
	r = sluicectl({"--socket", system.socket(), "detach", "eth0"});
	EXPECT_EQ(r.code, 1);
	EXPECT_THAT(r.err, HasSubstr("Bad file descriptor"));
}

TEST(sluicectlDaemon, NegativeBucketSetReachesTheDaemonsInvariant)
{
	FakeDaemon daemon(refused_reply("invariant 0 <= tokens <= burst violated: rejected write of -1 tokens"));
	auto r = sluicectl({"--socket", daemon.socket(), "bucket", "eth0", "198.18.0.1", "--set", "-1"});
	EXPECT_EQ(r.code, 1);
	EXPECT_THAT(r.err, HasSubstr("invariant 0 <= tokens <= burst violated"));
	ASSERT_EQ(daemon.requests().size(), 1u);
	EXPECT_EQ(daemon.requests()[0],
		  (json{{"cmd", "bucket"}, {"iface", "eth0"}, {"addr", "198.18.0.1"}, {"set", -1}}));
}

TEST(sluicectlDaemon, RefillSendsANegativeCountAndPrintsTheSlots)
{
	FakeDaemon daemon(json{{"ok", true},       {"iface", "eth0"},           {"addr", "2001:2::1"},
			       {"source", "2001:2::/64"}, {"slots", {17, 90210}}, {"tokens", {3, 12}},
			       {"tokens_left", 12},        {"burst", 20}});
	auto r = sluicectl({"--socket", daemon.socket(), "refill", "eth0", "2001:2::1", "-5"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(daemon.requests().at(0)["n"], -5);
	EXPECT_EQ(r.out, "eth0: 2001:2::1 (source 2001:2::/64)\n"
			 "   SLOT  TOKENS\n"
			 "     17       3\n"
			 "  90210      12\n"
			 "  tokens_left 12 of burst 20\n");
}

// --- standing ----------------------------------------------------------------

sluice::StandingStatus standing_table()
{
	sluice::StandingStatus s;
	s.occupancy = {1311, 524288, 2};
	s.lapse_s = 3600;
	s.feeders = true;
	s.valve_closed = false;
	s.valve_since_ns = 1764568533000000000ull;
	s.rate_pps = 1000000;
	s.burst = 100000;
	s.newcomer_pps = 100000;
	s.newcomer_burst = 10000;
	return s;
}

// What sluiced answers to standing, made by its own encoder.
json standing_reply(std::optional<sluice::StandingRecord> record)
{
	std::optional<sluice::StandingLookup> lookup;
	if (record)
		lookup = sluice::StandingLookup{*sluice::parse_address("198.51.100.7"),
						*sluice::parse_cidr("198.51.100.7/32"), *record};
	json j = sluice::encode(sluice::StandingView{"eth0", standing_table(), lookup});
	j["ok"] = true;
	return j;
}

TEST(sluicectlArgs, StandingChecksTheInterfaceAndTheAddressBeforeSending)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "standing"}), "missing IFACE");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "standing", "a/b"}), "'a/b' is not an interface name");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "standing", "eth0", "198.51.100"}),
			   "'198.51.100' is not an IPv4 or IPv6 address");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "standing", "eth0", "10.0.0.0/8"}),
			   "'10.0.0.0/8' is not an IPv4 or IPv6 address");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "standing", "eth0", "10.0.0.1", "extra"}), "extra");
}

TEST(sluicectlDaemon, StandingSummary)
{
	FakeDaemon daemon(std::vector<std::string>{standing_reply(std::nullopt).dump(),
						   standing_reply(std::nullopt).dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "standing", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, HasSubstr("eth0\n"));
	EXPECT_THAT(r.out, HasSubstr("standing         1311 of 524288 entries (0.25%), 2 full sets, lapse 3600 s\n"));
	EXPECT_THAT(r.out, HasSubstr("valve            open since 2025-12-01T05:55:33Z\n"));
	EXPECT_THAT(r.out, HasSubstr("standing bucket  1000000 pps, burst 100000"));
	EXPECT_THAT(r.out, HasSubstr("newcomers        100000 pps, burst 10000, shared while shedding\n"));
	EXPECT_THAT(r.out, HasSubstr("observed         off\n"));
	EXPECT_THAT(r.out, HasSubstr("feeders          attached\n"));
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "standing"}, {"iface", "eth0"}}));
	r = sluicectl({"--socket", daemon.socket(), "-j", "standing", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	json body = standing_reply(std::nullopt);
	body.erase("ok");
	EXPECT_EQ(json::parse(r.out), body);
}

TEST(sluicectlDaemon, StandingOfAnAddressExitsZeroWithStandingOneWithout)
{
	sluice::StandingRecord live{true, SLUICE_BY_CONNECTED, 1764568533000000000ull, 1764568600000000000ull, 4242};
	sluice::StandingRecord none{false, sluice_standing_reason(0), 0, 0, 0};
	FakeDaemon daemon(std::vector<std::string>{standing_reply(live).dump(), standing_reply(none).dump(),
						   standing_reply(none).dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "standing", "eth0", "198.51.100.7"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, HasSubstr("eth0: 198.51.100.7 has standing (looked up as 198.51.100.7/32)\n"));
	EXPECT_THAT(r.out, HasSubstr("  reason     connected\n"));
	EXPECT_THAT(r.out, HasSubstr("  since      2025-12-01T05:55:33Z\n"));
	EXPECT_THAT(r.out, HasSubstr("  last seen  2025-12-01T05:56:40Z\n"));
	EXPECT_THAT(r.out, HasSubstr("  tokens     4242 of 100000 (its standing bucket)\n"));
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "standing"}, {"iface", "eth0"}, {"addr", "198.51.100.7"}}));

	r = sluicectl({"--socket", daemon.socket(), "standing", "eth0", "198.51.100.7"});
	EXPECT_EQ(r.code, 1);
	EXPECT_EQ(r.out, "eth0: 198.51.100.7 has no standing (looked up as 198.51.100.7/32)\n");
	EXPECT_EQ(r.err, "sluicectl: 198.51.100.7 has no standing on eth0\n");

	// -j: the reply, and the same exit code.
	r = sluicectl({"--socket", daemon.socket(), "standing", "-j", "eth0", "198.51.100.7"});
	EXPECT_EQ(r.code, 1);
	EXPECT_EQ(json::parse(r.out).at("has_standing"), false);
}

TEST(sluicectlDaemon, StatusShowsStanding)
{
	json reply = status_reply();
	reply["interfaces"][0]["standing"] = sluice::encode(standing_table());
	FakeDaemon daemon(reply);
	auto r = sluicectl({"--socket", daemon.socket(), "status"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, HasSubstr("1311 of 524288 entries (0.25%)"));
	EXPECT_THAT(r.out, HasSubstr("open since 2025-12-01T05:55:33Z"));
	EXPECT_THAT(r.out, HasSubstr("100000 pps, burst 10000, shared while shedding"));
}

TEST(sluicectlDaemon, SetSendsIntegersAndPrintsTheNewValues)
{
	FakeDaemon daemon(json{{"ok", true}, {"iface", "eth0"}, {"rate_pps", 500}, {"burst", 2000}});
	auto r = sluicectl({"--socket", daemon.socket(), "set", "eth0", "--rate", "500"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(r.out, "eth0: rate 500 pps, burst 2000\n");
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "set"}, {"iface", "eth0"}, {"rate", 500}}));
}

TEST(sluicectlDaemon, FromFileSendsTheFileWithTheRequest)
{
	FakeDaemon daemon(json{{"ok", true}, {"iface", "eth0"}, {"list", "allow"}, {"changed", 3}});
	TempDir dir{"sluicectl-test"};
	std::string file = dir.path() + "/allow.txt";
	std::ofstream(file) << "# partners\n198.18.0.0/15\n\n  2001:2::/48  # lab\n203.0.113.7\n";
	auto r = sluicectl({"--socket", daemon.socket(), "allow", "add", "eth0", "--from", file});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(r.out, "eth0: added 3 prefixes to the allow list\n");
	// The file itself travels as a descriptor; the request says so.
	EXPECT_EQ(daemon.requests().at(0),
		  (json{{"cmd", "list_add"}, {"iface", "eth0"}, {"list", "allow"}, {"cidrs", json::array()}, {"from_fd", true}}));
}

TEST(sluicectlDaemon, ListShowAsTextAndJson)
{
	json reply{{"ok", true}, {"iface", "eth0"}, {"list", "deny"}, {"cidrs", {"198.18.0.0/15", "2001:2::/48"}}};
	FakeDaemon daemon(std::vector<std::string>{reply.dump(), reply.dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "deny", "list", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(r.out, "eth0: deny list, 2 prefixes\n  198.18.0.0/15\n  2001:2::/48\n");
	r = sluicectl({"--socket", daemon.socket(), "-j", "deny", "list", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(json::parse(r.out)["cidrs"], reply["cidrs"]);
	EXPECT_EQ(daemon.requests().at(1), (json{{"cmd", "list_show"}, {"iface", "eth0"}, {"list", "deny"}}));
}

TEST(sluicectlDaemon, StatsPrintsCountersAndRates)
{
	FakeDaemon daemon(stats_reply());
	auto r = sluicectl({"--socket", daemon.socket(), "stats", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, StartsWith("eth0\n  OUTCOME      PACKETS    BYTES   PPS\n"));
	EXPECT_THAT(r.out, HasSubstr("  passed        123456  7890123  1500\n"));
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "stats"}, {"iface", "eth0"}}));
}

TEST(sluicectlDaemon, StatsWatchJsonPrintsOneObjectPerLineUntilTheDaemonGoes)
{
	FakeDaemon daemon(std::vector<std::string>{stats_reply().dump(), stats_reply().dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "stats", "--watch", "--interval", "0.01", "-j"});
	// The fake daemon hangs up after two replies: the watch ends with the error.
	EXPECT_EQ(r.code, 1);
	EXPECT_THAT(r.err, HasSubstr("closed the connection"));
	std::istringstream lines(r.out);
	std::string line;
	int objects = 0;
	while (std::getline(lines, line)) {
		EXPECT_EQ(json::parse(line)["interfaces"][0]["iface"], "eth0");
		objects++;
	}
	EXPECT_EQ(objects, 2);
}

TEST(sluicectlDaemon, StatsWatchRedrawsInPlace)
{
	FakeDaemon daemon(std::vector<std::string>{stats_reply().dump(), stats_reply().dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "stats", "--watch", "--interval", "0.01"});
	EXPECT_EQ(r.code, 1);
	EXPECT_THAT(r.out, StartsWith("\033[H\033[2J"));
	EXPECT_THAT(r.out, HasSubstr("passed"));
}

TEST(sluicectlDaemon, AuditPrintsTheReport)
{
	FakeDaemon daemon(json{{"ok", true},
			       {"iface", "eth0"},
			       {"audit", {{"slots", 262144}, {"violations", 0}, {"swept", 262144}, {"full_sweeps", 1}}}});
	auto r = sluicectl({"--socket", daemon.socket(), "audit", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, StartsWith("eth0: audit\n"));
	EXPECT_THAT(r.out, HasSubstr("  violations   0\n"));
	EXPECT_THAT(r.out, HasSubstr("  swept        262144\n"));
}

TEST(sluicectlDaemon, AReplyThatIsNotJsonIsASystemError)
{
	FakeDaemon daemon(std::vector<std::string>{"hello"});
	auto r = sluicectl({"--socket", daemon.socket(), "audit", "eth0"});
	EXPECT_EQ(r.code, 1);
	EXPECT_THAT(r.err, HasSubstr("not a protocol reply"));
}

TEST(sluicectlDaemon, AReplyMissingFieldsIsASystemError)
{
	FakeDaemon daemon(json{{"ok", true}});
	auto r = sluicectl({"--socket", daemon.socket(), "breaker", "trip", "eth0"});
	EXPECT_EQ(r.code, 1);
	EXPECT_THAT(r.err, HasSubstr("unexpected reply from sluiced"));
}

// --- the table printer -----------------------------------------------------

TEST(sluicectlTable, ColumnsAreAsWideAsTheirWidestCell)
{
	using A = sluicectl::Table::Align;
	sluicectl::Table t({"NAME", "N"}, {A::left, A::right});
	t.row({"a", "100"}).row({"longer", "7"});
	std::ostringstream out;
	t.print(out, 1);
	EXPECT_EQ(out.str(), " NAME      N\n"
			     " a       100\n"
			     " longer    7\n");
}

TEST(sluicectlDaemon, TopSendsNAndPrintsTheHeaviestSources)
{
	json reply{{"ok", true},
		   {"iface", "eth0"},
		   {"sample_every", 1024},
		   {"window_s", 2.0},
		   {"window_complete", true},
		   {"samples", 300},
		   {"capacity", 1024},
		   {"summary_size", 2},
		   {"sources",
		    {{{"source", "198.18.3.7/32"}, {"est_dropped_pps", 102400.0}, {"samples", 200}, {"error", 0}, {"tokens", 0}},
		     {{"source", "2001:2:0:3::/64"}, {"est_dropped_pps", 51200.0}, {"samples", 100}, {"error", 3}, {"tokens", 17}}}}};
	for (auto args : std::vector<std::vector<std::string>>{{"top", "eth0", "-n", "2"}, {"top", "-n", "2", "eth0"},
								{"top", "eth0", "--count", "2"}, {"top", "eth0", "-n2"}}) {
		FakeDaemon daemon(reply);
		args.push_back("--socket");
		args.push_back(daemon.socket());
		auto r = sluicectl(args);
		EXPECT_EQ(r.code, 0) << r.err;
		ASSERT_EQ(daemon.requests().size(), 1u);
		EXPECT_EQ(daemon.requests()[0], (json{{"cmd", "top"}, {"iface", "eth0"}, {"n", 2}}));
		EXPECT_THAT(r.out, HasSubstr("1 in 1024 drops sampled; 300 samples in 2.0 s; tracking 2 of 1024 sources"));
		EXPECT_THAT(r.out, HasSubstr("SOURCE"));
		EXPECT_THAT(r.out, HasSubstr("198.18.3.7/32"));
		EXPECT_THAT(r.out, HasSubstr("102400"));
		EXPECT_THAT(r.out, HasSubstr("2001:2:0:3::/64"));
	}
	FakeDaemon daemon(reply);
	auto r = sluicectl({"-j", "top", "eth0", "--socket", daemon.socket()});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "top"}, {"iface", "eth0"}}));
	EXPECT_EQ(json::parse(r.out)["sources"][1]["tokens"], 17);
}

TEST(sluicectlArgs, TopRefusesABadCount)
{
	for (auto n : {"0", "x", "-3", "2000000"}) {
		auto r = sluicectl({"top", "eth0", "-n", n, "--socket", kNoSocket});
		EXPECT_EQ(r.code, 2) << n << ": " << r.err;
	}
	auto r = sluicectl({"top", "eth0", "--interval", "2", "--socket", kNoSocket});
	EXPECT_EQ(r.code, 2);
	EXPECT_THAT(r.err, HasSubstr("--interval needs --watch"));
}

TEST(sluicectlArgs, ExplainChecksItsInputBeforeSending)
{
	expect_usage_error(sluicectl({"--socket", kNoSocket, "explain", "eth0"}), "missing SRC");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "explain", "eth0", "198.18.0"}),
			   "'198.18.0' is not an IPv4 or IPv6 address");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "explain", "eth0", "198.18.0.1", "udp/53", "x"}), "x");
	expect_usage_error(sluicectl({"--socket", kNoSocket, "reload", "eth0", "eth1"}), "eth1");
}

TEST(sluicectlDaemon, ExplainSendsTheFrameAndPrintsTheAnswer)
{
	sluice::ExplainView e;
	e.iface = "eth0";
	e.frame = sluice::Frame{*sluice::parse_address("198.51.100.9"), sluice::Protocol::udp, 53};
	e.explanation.class_name = "dns";
	e.text = "class dns (limit): the most specific matching rule is rule 2 (line 9): udp port 53 -> dns\n"
		 "bucket 198.51.100.9/32\n";
	e.table_class = 4;
	e.table_class_name = "dns";
	e.bucket = *sluice::parse_cidr("198.51.100.9/32");
	e.slots = {7, 9};
	e.tokens = {3, 4};
	json reply = sluice::encode(e);
	reply["ok"] = true;
	FakeDaemon daemon(std::vector<std::string>{reply.dump(), reply.dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "explain", "eth0", "198.51.100.9", "udp/53"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, StartsWith(e.text));
	EXPECT_THAT(r.out, HasSubstr("data plane class  dns (id 4)"));
	EXPECT_THAT(r.out, HasSubstr("bucket            198.51.100.9/32, slots 7 and 9, tokens 3 and 4"));
	EXPECT_EQ(daemon.requests().at(0),
		  (json{{"cmd", "explain"}, {"iface", "eth0"}, {"src", "198.51.100.9"}, {"proto", "udp/53"}}));
	r = sluicectl({"--socket", daemon.socket(), "-j", "explain", "eth0", "198.51.100.9"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(json::parse(r.out)["table_class_name"], "dns");
	EXPECT_EQ(daemon.requests().at(1), (json{{"cmd", "explain"}, {"iface", "eth0"}, {"src", "198.51.100.9"}}));
}

TEST(sluicectlDaemon, AnUnmanagedInterfaceExplainsWithExitOne)
{
	FakeDaemon daemon(refused_reply("sluiced does not manage interface 'eth9'"));
	auto r = sluicectl({"--socket", daemon.socket(), "explain", "eth9", "198.51.100.9"});
	EXPECT_EQ(r.code, 1);
	EXPECT_EQ(r.err, "sluicectl: sluiced does not manage interface 'eth9'\n");
}

TEST(sluicectlDaemon, ReloadPrintsEachInterfaceOrTheRefusal)
{
	json ok = sluice::encode(sluice::ReloadReply{{sluice::PolicyApplied{"eth0", "/etc/sluice/policy.yaml", 2, 1, 4, 10,
									   3, 1, 12.5}}});
	ok["ok"] = true;
	json bad{{"ok", false},
		 {"kind", "invalid"},
		 {"error", "/etc/sluice/policy.yaml:12:5: unknown_key: class dns has no key 'rte'"}};
	FakeDaemon daemon(std::vector<std::string>{ok.dump(), bad.dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "reload"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_EQ(r.out, "eth0: policy /etc/sluice/policy.yaml applied (generation 2): 4 classes, 10 class prefixes, "
			 "3 list entries (1 added at run time, kept) in 12.5 ms\n");
	EXPECT_EQ(daemon.requests().at(0), (json{{"cmd", "reload"}}));
	r = sluicectl({"--socket", daemon.socket(), "reload", "eth0"});
	EXPECT_EQ(r.code, 2);
	EXPECT_EQ(r.err, "sluicectl: /etc/sluice/policy.yaml:12:5: unknown_key: class dns has no key 'rte'\n");
	EXPECT_EQ(daemon.requests().at(1), (json{{"cmd", "reload"}, {"iface", "eth0"}}));
}

// --- class list, stats' class rows, allow|deny save: they read the pins ----

TEST(sluicectlArgs, ClassAndSaveCheckTheirArgumentsFirst)
{
	expect_usage_error(sluicectl({"class"}), "missing ACTION (list)");
	expect_usage_error(sluicectl({"class", "show", "eth0"}), "unknown class action 'show' (list)");
	expect_usage_error(sluicectl({"class", "list"}), "missing IFACE");
	expect_usage_error(sluicectl({"class", "list", "bad/name"}), "is not an interface name");
	expect_usage_error(sluicectl({"class", "list", "eth0", "extra"}), "unexpected argument 'extra'");
	expect_usage_error(sluicectl({"allow", "save", "eth0"}), "missing FILE");
	expect_usage_error(sluicectl({"allow", "save", "eth0", "a", "b"}), "unexpected argument 'b'");
	expect_usage_error(sluicectl({"-j", "deny", "save", "eth0", "/tmp/x"}), "--json is for the read commands");
	expect_usage_error(sluicectl({"deny", "save", "eth0", "/tmp/x", "--from", "y"}), "--from is for add and del");
	expect_usage_error(sluicectl({"deny", "keep", "eth0"}), "(add, del, list or save)");
}

TEST(sluicectlArgs, ClassListAndSaveWithoutPinsSayWhereTheyLookedAndWriteNothing)
{
	TempDir pins("sluicectl-pins");
	auto r = sluicectl({"--pin-dir", pins.path(), "class", "list", "eth0"});
	EXPECT_EQ(r.code, 1) << r.err;
	EXPECT_THAT(r.err, HasSubstr("there are no pins for eth0 under " + pins.path()));
	EXPECT_EQ(r.out, "");
	std::string file = pins.path() + "/deny.netset";
	r = sluicectl({"--pin-dir", pins.path(), "deny", "save", "eth0", file});
	EXPECT_EQ(r.code, 1) << r.err;
	EXPECT_THAT(r.err, HasSubstr("there are no pins for eth0"));
	EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(sluicectlArgs, ClassHelpSaysItReadsThePins)
{
	auto r = sluicectl({"class", "--help"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, StartsWith("Usage: sluicectl class list IFACE\n"));
	EXPECT_THAT(r.out, HasSubstr("Requests to sluiced: none: it reads the pins under --pin-dir"));
	r = sluicectl({"allow", "--help"});
	EXPECT_THAT(r.out, HasSubstr("       sluicectl allow save IFACE FILE\n"));
}

TEST(sluicectlDaemon, StatsShowsTheDaemonsCountersAndSaysWhyThereAreNoClassRows)
{
	TempDir pins("sluicectl-pins");
	FakeDaemon daemon(std::vector<std::string>{stats_reply().dump(), stats_reply().dump()});
	auto r = sluicectl({"--socket", daemon.socket(), "--pin-dir", pins.path(), "stats", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	EXPECT_THAT(r.out, HasSubstr("  passed        123456  7890123  1500\n"));
	EXPECT_THAT(r.out, HasSubstr("  per-class counters not read: there are no pins for eth0 under " + pins.path()));
	r = sluicectl({"--socket", daemon.socket(), "--pin-dir", pins.path(), "-j", "stats", "eth0"});
	EXPECT_EQ(r.code, 0) << r.err;
	json entry = json::parse(r.out)["interfaces"][0];
	EXPECT_TRUE(entry["classes"].is_null());
	EXPECT_THAT(entry["classes_error"].get<std::string>(), HasSubstr("there are no pins for eth0"));
	EXPECT_EQ(entry["counters"], counters_body());
}

} // namespace
