// The command registry (ipc/commands.h): one list of commands that the
// protocol, the daemon's dispatch and sluicectl all take theirs from. The
// daemon's handler table is checked at compile time (daemon.cpp); this
// checks the protocol and sluicectl against the registry, and the argument
// schemas' errors.
#include "ipc/commands.h"
#include "sluicectl/command.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace sluice {
namespace {

Request request(json args)
{
	std::string cmd = args.at("cmd").get<std::string>();
	return Request{cmd, std::move(args), nullptr};
}

void expect_invalid(const Status &s, const std::string &message)
{
	ASSERT_FALSE(s.has_value()) << "accepted";
	EXPECT_EQ(s.error().kind, ErrorKind::invalid);
	EXPECT_EQ(s.error().message, message);
}

Status check(json args)
{
	Request req = request(std::move(args));
	const CommandSpec *spec = find_command(req.cmd);
	if (!spec)
		return invalid("no such command " + req.cmd);
	return check_args(*spec, req);
}

TEST(Commands, NamesAreUniqueAndTheProtocolKnowsEach)
{
	std::set<std::string_view> names;
	for (const auto &spec : kCommandSpecs) {
		SCOPED_TRACE(std::string(spec.name));
		EXPECT_TRUE(names.insert(spec.name).second) << "named twice";
		EXPECT_TRUE(known_command(spec.name));
		ASSERT_NE(find_command(spec.name), nullptr);
		EXPECT_EQ(find_command(spec.name)->id, spec.id);
		EXPECT_EQ(&command_spec(spec.id), &spec);
		EXPECT_FALSE(spec.summary.empty());
	}
	EXPECT_EQ(names.size(), kCommandCount);
	EXPECT_FALSE(known_command("reboot"));
	EXPECT_FALSE(known_command(""));
	EXPECT_FALSE(known_command("Status"));
}

TEST(Commands, ParseRequestRefusesWhatTheRegistryDoesNotName)
{
	auto r = parse_request(R"({"cmd": "reboot"})");
	ASSERT_FALSE(r.has_value());
	EXPECT_EQ(r.error().message, "unknown command 'reboot'");
	for (const auto &spec : kCommandSpecs)
		EXPECT_TRUE(parse_request(R"({"cmd": ")" + std::string(spec.name) + "\"}").has_value()) << spec.name;
}

TEST(Commands, EverySluicectlCommandSendsRegistryCommandsAndEveryOneIsSent)
{
	std::set<Command> sent;
	for (const auto &cmd : sluicectl::command_table()) {
		// A command that reads the pins itself (class list) says so.
		if (cmd.from_pins)
			EXPECT_EQ(cmd.sends.size(), 0u) << cmd.name << " reads the pins and sends too";
		else
			EXPECT_NE(cmd.sends.size(), 0u) << cmd.name << " sends nothing";
		for (auto c : cmd.sends)
			sent.insert(c);
	}
	for (const auto &spec : kCommandSpecs)
		EXPECT_TRUE(sent.count(spec.id)) << "no sluicectl command sends '" << spec.name << "'";
}

TEST(Commands, RequestForNamesTheCommand)
{
	EXPECT_EQ(sluicectl::request_for(Command::list_show, {{"iface", "eth0"}}),
		  (json{{"cmd", "list_show"}, {"iface", "eth0"}}));
	EXPECT_EQ(sluicectl::request_for(Command::status), (json{{"cmd", "status"}}));
}

TEST(Commands, ReadsAndWrites)
{
	for (auto c : {Command::status, Command::stats, Command::list_show, Command::audit, Command::top,
		       Command::standing})
		EXPECT_EQ(command_spec(c).access, Access::read) << command_name(c);
	for (auto c : {Command::breaker, Command::set, Command::refill, Command::list_add, Command::list_del,
		       Command::attach, Command::detach})
		EXPECT_EQ(command_spec(c).access, Access::write) << command_name(c);
	EXPECT_EQ(command_spec(Command::bucket).access, Access::read_or_write);
	EXPECT_STREQ(to_string(Access::read_or_write), "reads or writes");
}

TEST(Commands, ArgumentsCheckedWithTheGettersMessages)
{
	EXPECT_TRUE(check({{"cmd", "status"}}).has_value());
	EXPECT_TRUE(check({{"cmd", "status"}, {"iface", "eth0"}}).has_value());
	expect_invalid(check({{"cmd", "stats"}, {"iface", 7}}), "\"iface\" must be a string");
	expect_invalid(check({{"cmd", "detach"}}), "'detach' needs \"iface\"");
	expect_invalid(check({{"cmd", "breaker"}, {"iface", "eth0"}}), "'breaker' needs \"to\"");
	expect_invalid(check({{"cmd", "breaker"}, {"iface", "eth0"}, {"to", 1}}), "\"to\" must be a string");
	// In schema order: the interface first.
	expect_invalid(check({{"cmd", "set"}, {"rate", 5}}), "'set' needs \"iface\"");
	expect_invalid(check({{"cmd", "set"}, {"iface", "eth0"}, {"rate", 1.5}}), "\"rate\" must be an integer");
	expect_invalid(check({{"cmd", "set"}, {"iface", "eth0"}, {"rate", "100"}}), "\"rate\" must be an integer");
	expect_invalid(check({{"cmd", "set"}, {"iface", "eth0"}, {"burst", UINT64_MAX}}), "\"burst\" is too large");
	// "set" needs rate or burst: the handler says so, the schema has both optional.
	EXPECT_TRUE(check({{"cmd", "set"}, {"iface", "eth0"}}).has_value());
	expect_invalid(check({{"cmd", "refill"}, {"iface", "eth0"}, {"addr", "10.0.0.1"}}), "'refill' needs \"n\"");
	EXPECT_TRUE(check({{"cmd", "refill"}, {"iface", "eth0"}, {"addr", "10.0.0.1"}, {"n", -5}}).has_value());
	expect_invalid(check({{"cmd", "bucket"}, {"iface", "eth0"}}), "'bucket' needs \"addr\"");
	expect_invalid(check({{"cmd", "bucket"}, {"iface", "eth0"}, {"addr", "10.0.0.1"}, {"set", true}}),
		       "\"set\" must be an integer");
	// cidrs may be missing (the list comes as a file), never of another type.
	EXPECT_TRUE(check({{"cmd", "list_add"}, {"iface", "eth0"}, {"list", "deny"}}).has_value());
	expect_invalid(check({{"cmd", "list_add"}, {"iface", "eth0"}, {"list", "deny"}, {"cidrs", "10.0.0.0/8"}}),
		       "\"cidrs\" must be an array of strings");
	expect_invalid(check({{"cmd", "list_del"}, {"iface", "eth0"}, {"list", "deny"}, {"cidrs", {7}}}),
		       "\"cidrs\" must be an array of strings");
	expect_invalid(check({{"cmd", "list_show"}, {"iface", "eth0"}}), "'list_show' needs \"list\"");
	expect_invalid(check({{"cmd", "attach"}, {"iface", "eth0"}, {"mode", 1}}), "\"mode\" must be a string");
	expect_invalid(check({{"cmd", "top"}, {"iface", "eth0"}, {"n", "ten"}}), "\"n\" must be an integer");
	// standing: the interface, an address or not.
	expect_invalid(check({{"cmd", "standing"}}), "'standing' needs \"iface\"");
	EXPECT_TRUE(check({{"cmd", "standing"}, {"iface", "eth0"}}).has_value());
	EXPECT_TRUE(check({{"cmd", "standing"}, {"iface", "eth0"}, {"addr", "10.0.0.1"}}).has_value());
	expect_invalid(check({{"cmd", "standing"}, {"iface", "eth0"}, {"addr", 7}}), "\"addr\" must be a string");
	// reload: every interface, or one; explain: the interface, the source, a protocol or not.
	EXPECT_TRUE(check({{"cmd", "reload"}}).has_value());
	expect_invalid(check({{"cmd", "reload"}, {"iface", 7}}), "\"iface\" must be a string");
	expect_invalid(check({{"cmd", "explain"}, {"iface", "eth0"}}), "'explain' needs \"src\"");
	EXPECT_TRUE(check({{"cmd", "explain"}, {"iface", "eth0"}, {"src", "10.0.0.1"}}).has_value());
	EXPECT_TRUE(check({{"cmd", "explain"}, {"iface", "eth0"}, {"src", "10.0.0.1"}, {"proto", "udp/53"}}).has_value());
	expect_invalid(check({{"cmd", "explain"}, {"iface", "eth0"}, {"src", "10.0.0.1"}, {"proto", 17}}),
		       "\"proto\" must be a string");
	EXPECT_EQ(command_spec(Command::reload).access, Access::write);
	EXPECT_EQ(command_spec(Command::explain).access, Access::read);
	// Arguments the schema does not name are left alone.
	EXPECT_TRUE(check({{"cmd", "audit"}, {"iface", "eth0"}, {"extra", {1, 2}}}).has_value());
}

} // namespace
} // namespace sluice
