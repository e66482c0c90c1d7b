// Daemon::handle without a kernel: a daemon that manages no interface yet
// (no BPF needed to start one), asked every command of the registry. What
// comes back before any interface is touched: the schema's argument errors,
// the unmanaged-interface error, the status of an empty daemon.
#include "temp_dir.h"
#include "sluiced/daemon.h"

#include "base/defaults.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace sluice {
namespace {

class DaemonTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		DaemonOptions opts;
		opts.socket_path = dir.path() + "/sluiced.sock";
		opts.pin_dir = dir.path() + "/pins";
		opts.period_s = 0.5;
		opts.policy.trip_pps = 1234;
		auto d = Daemon::start(opts);
		ASSERT_TRUE(d.has_value()) << d.error().describe();
		daemon = std::move(*d);
	}

	json ask(json args)
	{
		std::string cmd = args.at("cmd").get<std::string>();
		return daemon->handle(Request{cmd, std::move(args), nullptr});
	}

	void expect_error(json args, const std::string &kind, const std::string &message)
	{
		SCOPED_TRACE(args.dump());
		json reply = ask(std::move(args));
		EXPECT_EQ(reply.value("ok", true), false);
		EXPECT_EQ(reply.value("kind", ""), kind);
		EXPECT_EQ(reply.value("error", ""), message);
	}

	TempDir dir{"sluiced-daemon-test"};
	std::unique_ptr<Daemon> daemon;
};

TEST_F(DaemonTest, StatusOfADaemonWithNoInterface)
{
	json r = ask({{"cmd", "status"}});
	EXPECT_EQ(r["ok"], true);
	EXPECT_EQ(r["interfaces"], json::array());
	const json &d = r["daemon"];
	EXPECT_EQ(d["running"], true);
	EXPECT_EQ(d["pid"], getpid());
	EXPECT_EQ(d["socket"], dir.path() + "/sluiced.sock");
	EXPECT_EQ(d["pin_dir"], dir.path() + "/pins");
	EXPECT_EQ(d["period_s"], 0.5);
	EXPECT_EQ(d["policy"]["trip_pps"], 1234);
	EXPECT_TRUE(d["uptime_s"].is_number_float());
	for (const char *k : {"clear_pps", "trip_periods", "hold_s", "recovery_s", "recovery_start_ppm"})
		EXPECT_TRUE(d["policy"].contains(k)) << k;

	r = ask({{"cmd", "stats"}});
	EXPECT_EQ(r, (json{{"ok", true}, {"interfaces", json::array()}}));
}

TEST_F(DaemonTest, EveryCommandAboutAnInterfaceWantsAManagedOne)
{
	const std::string unmanaged = "sluiced does not manage interface 'eth9' (it manages: none; "
				      "`sluicectl attach eth9` adds it)";
	// The smallest well-formed request of each, for an interface not managed.
	for (json args : {json{{"cmd", "breaker"}, {"to", "shedding"}}, json{{"cmd", "set"}, {"rate", 5}},
			  json{{"cmd", "bucket"}, {"addr", "10.0.0.1"}},
			  json{{"cmd", "refill"}, {"addr", "10.0.0.1"}, {"n", 1}},
			  json{{"cmd", "list_add"}, {"list", "deny"}, {"cidrs", {"10.0.0.0/8"}}},
			  json{{"cmd", "list_del"}, {"list", "deny"}, {"cidrs", {"10.0.0.0/8"}}},
			  json{{"cmd", "list_show"}, {"list", "allow"}}, json{{"cmd", "detach"}},
			  json{{"cmd", "audit"}}, json{{"cmd", "top"}}, json{{"cmd", "standing"}},
			  json{{"cmd", "standing"}, {"addr", "10.0.0.1"}}}) {
		args["iface"] = "eth9";
		expect_error(args, "invalid", unmanaged);
	}
	expect_error({{"cmd", "status"}, {"iface", "eth9"}}, "invalid", "sluiced does not manage interface 'eth9'");
	expect_error({{"cmd", "stats"}, {"iface", "eth9"}}, "invalid", "sluiced does not manage interface 'eth9'");
}

TEST_F(DaemonTest, ArgumentsAreCheckedBeforeTheHandlerRuns)
{
	expect_error({{"cmd", "detach"}}, "invalid", "'detach' needs \"iface\"");
	expect_error({{"cmd", "stats"}, {"iface", 7}}, "invalid", "\"iface\" must be a string");
	expect_error({{"cmd", "set"}, {"rate", 5}}, "invalid", "'set' needs \"iface\"");
	expect_error({{"cmd", "set"}, {"iface", "eth9"}, {"rate", "100"}}, "invalid", "\"rate\" must be an integer");
	expect_error({{"cmd", "refill"}, {"iface", "eth9"}, {"addr", "10.0.0.1"}}, "invalid", "'refill' needs \"n\"");
	expect_error({{"cmd", "list_add"}, {"iface", "eth9"}, {"list", "deny"}, {"cidrs", "10.0.0.0/8"}}, "invalid",
		     "\"cidrs\" must be an array of strings");
	expect_error({{"cmd", "top"}, {"iface", "eth9"}, {"n", 1.5}}, "invalid", "\"n\" must be an integer");
	expect_error({{"cmd", "standing"}}, "invalid", "'standing' needs \"iface\"");
	expect_error({{"cmd", "standing"}, {"iface", "eth9"}, {"addr", 7}}, "invalid", "\"addr\" must be a string");
	expect_error({{"cmd", "reboot"}}, "invalid", "unknown command 'reboot'");
}

TEST_F(DaemonTest, AttachRefusesABadNameBeforeTouchingAnything)
{
	const std::string name_rule =
		"interface name must be 1..15 characters of printable ASCII, no '/', ':' or spaces";
	expect_error({{"cmd", "attach"}, {"iface", "abcdefghijklmnopq"}}, "invalid", name_rule);
	expect_error({{"cmd", "attach"}, {"iface", "eth0:1"}}, "invalid", name_rule);
	expect_error({{"cmd", "attach"}, {"iface", "lo"}, {"mode", "turbo"}}, "invalid",
		     "attach mode 'turbo' is not one of native, skb, auto");
	EXPECT_FALSE(std::filesystem::exists(dir.path() + "/pins"));
}

TEST_F(DaemonTest, PolicyCommandsWithoutAPolicyFile)
{
	// (No --policy and, on a test host, no /etc/sluice/policy.yaml: the
	// fixture's daemon runs without a file.)
	if (std::filesystem::exists(defaults::kPolicyPath))
		GTEST_SKIP() << "this host has " << defaults::kPolicyPath;
	expect_error({{"cmd", "reload"}}, "refused",
		     "sluiced runs without a policy file (--no-policy, or none at /etc/sluice/policy.yaml): start it "
		     "with --policy PATH to reload one");
	expect_error({{"cmd", "reload"}, {"iface", "eth9"}}, "invalid", "sluiced does not manage interface 'eth9'");
	expect_error({{"cmd", "reload"}, {"iface", 7}}, "invalid", "\"iface\" must be a string");
	// explain: an interface not managed is a refusal (exit 1), bad input is invalid (exit 2)
	expect_error({{"cmd", "explain"}, {"iface", "eth9"}, {"src", "198.18.0.1"}}, "refused",
		     "sluiced does not manage interface 'eth9'");
	expect_error({{"cmd", "explain"}, {"iface", "eth9"}}, "invalid", "'explain' needs \"src\"");
	expect_error({{"cmd", "explain"}, {"src", "198.18.0.1"}}, "invalid", "'explain' needs \"iface\"");
	expect_error({{"cmd", "explain"}, {"iface", "eth9"}, {"src", "198.18.0.1"}, {"proto", 17}}, "invalid",
		     "\"proto\" must be a string");
}

class PolicyDaemonTest : public ::testing::Test {
protected:
	std::string write(const std::string &name, const std::string &text)
	{
		std::string path = dir.path() + "/" + name;
		std::ofstream(path) << text;
		return path;
	}
	Result<std::unique_ptr<Daemon>> start(const std::string &policy)
	{
		DaemonOptions opts;
		opts.socket_path = dir.path() + "/sluiced.sock";
		opts.pin_dir = dir.path() + "/pins";
		opts.policy_file = policy;
		return Daemon::start(opts);
	}
	json ask(Daemon &d, json args)
	{
		std::string cmd = args.at("cmd").get<std::string>();
		return d.handle(Request{cmd, std::move(args), nullptr});
	}
	TempDir dir{"sluiced-policy-test"};
};

TEST_F(PolicyDaemonTest, ABadFileStopsTheStartWithItsLine)
{
	std::string path = write("policy.yaml", "version: 1\nclasses:\n  dns:\n    rte: 1\n");
	auto d = start(path);
	ASSERT_FALSE(d.has_value());
	EXPECT_EQ(d.error().kind, ErrorKind::invalid);
	EXPECT_EQ(d.error().exit_code(), 2);
	EXPECT_NE(d.error().message.find(path + ":4:5: unknown_key"), std::string::npos) << d.error().message;
	// A missing file is bad input at start too, named.
	d = start(dir.path() + "/nope.yaml");
	ASSERT_FALSE(d.has_value());
	EXPECT_EQ(d.error().exit_code(), 2);
	EXPECT_NE(d.error().message.find(dir.path() + "/nope.yaml"), std::string::npos) << d.error().message;
	EXPECT_NE(d.error().message.find("not_found"), std::string::npos) << d.error().message;
}

TEST_F(PolicyDaemonTest, AReloadOfABadFileIsRefusedWithItsLine)
{
	std::string path = write("policy.yaml", "version: 1\nclasses:\n  dns:\n    rate: 5\n    burst: 10\n");
	auto d = start(path);
	ASSERT_TRUE(d.has_value()) << d.error().describe();
	json r = ask(**d, {{"cmd", "reload"}});
	EXPECT_EQ(r, (json{{"ok", true}, {"interfaces", json::array()}}));
	write("policy.yaml", "version: 1\nclasses:\n  dns:\n    rate: 0\n    burst: 10\n");
	r = ask(**d, {{"cmd", "reload"}});
	EXPECT_EQ(r.value("ok", true), false);
	EXPECT_EQ(r.value("kind", ""), "invalid");
	EXPECT_NE(r.value("error", "").find(path + ":4:"), std::string::npos) << r.dump();
	EXPECT_NE(r.value("error", "").find("class dns rate 0 is outside 1..100000000"), std::string::npos) << r.dump();
}

} // namespace
} // namespace sluice
