// commands.cpp - the dispatch table and the two-stage command line: global
// options (anywhere on the line) first, then the subcommand's own.
#include "sluicectl/sluicectl.h"

#include "sluicectl/command.h"
#include "base/option_text.h"

#include <algorithm>
#include <exception>

namespace sluicectl {

namespace {

// bpftool's table: name, handler, the daemon's commands it sends (the
// registry's, ipc/commands.h), one-line help; then the syntax for --help.
using C = sluice::Command;
const Cmd kCommands[] = {
	{"status", do_status, {C::status}, "show each interface: attachment, breaker, limits, audit, counters",
	 "status [IFACE]", nullptr},
	{"stats", do_stats, {C::stats}, "show counters and per-second rates per outcome",
	 "stats [IFACE] [--watch] [--interval SEC]", stats_options},
	{"breaker", do_breaker, {C::breaker},
	 "move the breaker: trip (shedding), recover (recovering), close (serving)", "breaker trip|recover|close IFACE",
	 nullptr},
	{"set", do_set, {C::set}, "change the rate and burst every source gets", "set IFACE [--rate N] [--burst N]",
	 set_options},
	{"bucket", do_bucket, {C::bucket}, "show (or --set) the tokens of an address's two slots",
	 "bucket IFACE ADDR [--set N]", bucket_options},
	{"refill", do_refill, {C::refill}, "add N tokens (N may be negative) to an address's two slots",
	 "refill IFACE ADDR N", nullptr},
	{"allow", do_list, {C::list_add, C::list_del, C::list_show},
	 "add, remove, list or save (to a netset file) prefixes that pass while shedding",
	 "allow add|del IFACE CIDR...\nallow add|del IFACE --from FILE\nallow list IFACE\nallow save IFACE FILE",
	 list_options},
	{"deny", do_list, {C::list_add, C::list_del, C::list_show},
	 "add, remove, list or save (to a netset file) prefixes that are always dropped",
	 "deny add|del IFACE CIDR... [--upstream]\ndeny add|del IFACE --from FILE\ndeny list IFACE\ndeny save IFACE FILE",
	 list_options},
	{"attach", do_attach, {C::attach}, "load the data plane and attach it to an interface",
	 "attach IFACE [--mode native|skb|auto]", attach_options},
	{"detach", do_detach, {C::detach}, "detach the data plane from an interface and remove its pins",
	 "detach IFACE", nullptr},
	{"audit", do_audit, {C::audit}, "sweep an interface's table now and report invariant violations",
	 "audit IFACE", nullptr},
	{"rekey", do_rekey, {C::rekey},
	 "a new hash key now: a new program, every bucket anew, the standing table and its penalties carried",
	 "rekey IFACE", nullptr},
	{"top", do_top, {C::top}, "show the sources dropped the most (sampled) and their buckets' tokens",
	 "top IFACE [-n N] [--watch] [--interval SEC]", top_options, true},
	{"standing", do_standing, {C::standing, C::standing_revoke},
	 "show the standing table (occupancy, share, valve, budgets, revocations), whether an address has standing "
	 "and why, or revoke an address's standing",
	 "standing IFACE\nstanding IFACE ADDR\nstanding revoke IFACE ADDR", nullptr},
	{"reload", do_reload, {C::reload}, "read the policy file again and apply it, all or nothing (as SIGHUP)",
	 "reload [IFACE]", nullptr},
	{"explain", do_explain, {C::explain},
	 "show the policy class a frame from SRC gets and why, its data plane class and bucket",
	 "explain IFACE SRC [PROTO[/PORT]]", nullptr},
	{"upstream", do_upstream, {C::upstream},
	 "show what is announced upstream over BGP (FlowSpec through gobgpd), why and since when",
	 "upstream [IFACE]", nullptr},
	{"capture", do_capture, {C::capture, C::capture_renew},
	 "write the frames sluice drops (or passes) to a pcapng or pcap file tcpdump and Wireshark read",
	 "capture IFACE -w FILE|- [--outcome LIST] [--passed] [--count N] [--duration SEC] [--snaplen N] "
	 "[--sample-every N] [--pcap] [EXPRESSION]",
	 capture_options, true},
	{"class", do_class, {}, "list the policy classes in force: budgets, prefixes, standing (from the pins)",
	 "class list IFACE", nullptr, false, true},
};

// Guessing is off: "--s" must not quietly mean --socket.
constexpr int kGlobalStyle = po::command_line_style::unix_style ^ po::command_line_style::allow_guessing;
// No short options after the command, so "-5" (refill ... -5, --set -1) is a
// number, not an option.
constexpr int kCommandStyle = kGlobalStyle ^ po::command_line_style::allow_short;

const Cmd *find_command(std::string_view name)
{
	for (const auto &cmd : kCommands)
		if (name == cmd.name)
			return &cmd;
	return nullptr;
}

std::string command_names()
{
	std::string names;
	for (const auto &cmd : kCommands)
		names += (names.empty() ? "" : ", ") + std::string(cmd.name);
	return names;
}

// "usage: sluicectl allow add|del IFACE CIDR... | sluicectl allow list IFACE"
std::string usage_line(const Cmd &cmd)
{
	std::string usage = "usage: sluicectl ";
	for (char c : std::string_view(cmd.synopsis))
		usage += c == '\n' ? std::string(" | sluicectl ") : std::string(1, c);
	return usage;
}

po::options_description command_options(const Cmd &cmd)
{
	po::options_description options("Options");
	if (cmd.options)
		cmd.options(options);
	return options;
}

void print_global_help(std::ostream &out, const po::options_description &global)
{
	out << "Usage: sluicectl [OPTIONS] COMMAND [ARGS...]\n"
	       "Operate sluiced, the per-source XDP token-bucket admission controller.\n\n"
	       "Commands:\n";
	size_t width = 0;
	for (const auto &cmd : kCommands)
		width = std::max(width, std::string_view(cmd.name).size());
	for (const auto &cmd : kCommands)
		out << "  " << cmd.name << std::string(width - std::string_view(cmd.name).size() + 2, ' ')
		    << cmd.help << '\n';
	out << '\n' << global << "\nRun 'sluicectl COMMAND --help' for a command's arguments and options.\n"
	    << "Exit codes: 0 ok, 1 refused or system error, 2 usage or input error.\n";
}

void print_command_help(std::ostream &out, const Cmd &cmd)
{
	std::string_view synopsis = cmd.synopsis;
	const char *lead = "Usage: ";
	while (!synopsis.empty()) {
		auto line = synopsis.substr(0, synopsis.find('\n'));
		out << lead << "sluicectl " << line << '\n';
		lead = "       ";
		synopsis.remove_prefix(std::min(synopsis.size(), line.size() + 1));
	}
	out << cmd.help << ".\n";
	// What it asks of sluiced, from the registry (ipc/commands.h).
	out << "\nRequests to sluiced:";
	for (size_t i = 0; auto c : cmd.sends) {
		const auto &spec = sluice::command_spec(c);
		out << (i++ ? ", " : " ") << spec.name << " (" << sluice::to_string(spec.access)
		    << (sluice::needs_root(spec) ? ", root only" : ", root or the socket's group") << ")";
	}
	if (cmd.from_pins)
		out << " none: it reads the pins under --pin-dir (root), daemon or not";
	out << '\n';
	if (cmd.options)
		out << '\n' << command_options(cmd);
	out << "\nGlobal options (-j/--json, --socket PATH, --pin-dir DIR): see 'sluicectl --help'.\n";
}

Result<Invocation> parse_invocation(const Cmd &cmd, const std::vector<std::string> &tokens)
{
	Invocation inv;
	inv.command = cmd.name;
	inv.usage = usage_line(cmd);
	po::options_description options = command_options(cmd);
	options.add_options()("args", po::value<std::vector<std::string>>());
	po::positional_options_description positional;
	positional.add("args", -1);
	try {
		po::store(po::command_line_parser(tokens)
				  .options(options)
				  .positional(positional)
				  .style(cmd.short_options ? kGlobalStyle : kCommandStyle)
				  .run(),
			  inv.options);
	} catch (const po::error &e) {
		return std::unexpected(inv.usage_error(e.what()));
	}
	if (inv.options.count("args"))
		inv.args = inv.options["args"].as<std::vector<std::string>>();
	// With short options off, "-x" arrives as an argument: refuse it here.
	for (const auto &a : inv.args)
		if (a.size() > 1 && a.starts_with('-') && !looks_like_integer(a))
			return std::unexpected(inv.usage_error("unrecognised option '" + a + "'"));
	return inv;
}

Status run(Context &ctx, const std::vector<std::string> &tokens)
{
	bool help = false;
	po::options_description global("Global options");
	global.add_options()
		("json,j", po::bool_switch(&ctx.json), "print the daemon's reply as JSON (read commands)")
		("socket", po::value(&ctx.socket)->value_name("PATH")->default_value(kDefaultSocket),
		 "sluiced's control socket")
		("pin-dir", po::value(&ctx.pin_dir)->value_name("DIR")->default_value(kDefaultPinDir),
		 "the data plane's pins (status reads them when sluiced is down)")
		("help,h", po::bool_switch(&help), "show this help; COMMAND --help shows a command's");
	po::options_description all;
	all.add(global).add_options()
		("command", po::value<std::string>())
		("args", po::value<std::vector<std::string>>());
	po::positional_options_description positional;
	positional.add("command", 1).add("args", -1);

	// Global options are taken wherever they are; everything else, in order,
	// is the subcommand's to parse.
	for (const auto &t : tokens) // Boost would hang on these (options.h)
		if (auto ok = sluice::refuse_option_placeholders(t, "argument '" + t + "'"); !ok)
			return std::unexpected(ok.error());
	std::string command;
	std::vector<std::string> rest;
	try {
		auto parsed = po::command_line_parser(tokens)
				      .options(all)
				      .positional(positional)
				      .style(kGlobalStyle)
				      .allow_unregistered()
				      .run();
		for (const auto &opt : parsed.options) {
			if (opt.position_key == 0)
				command = opt.value.at(0);
			else if (opt.unregistered || opt.position_key > 0)
				rest.insert(rest.end(), opt.original_tokens.begin(), opt.original_tokens.end());
		}
		po::variables_map vm;
		po::store(parsed, vm);
		po::notify(vm);
	} catch (const po::error &e) {
		return sluice::invalid(std::string(e.what()) + "; see 'sluicectl --help'");
	}

	if (command.empty()) {
		if (help) {
			print_global_help(ctx.out, global);
			return {};
		}
		if (!rest.empty())
			return sluice::invalid("unrecognised option '" + rest[0] + "'; see 'sluicectl --help'");
		return sluice::invalid("no command given; commands: " + command_names() + " (see 'sluicectl --help')");
	}
	const Cmd *cmd = find_command(command);
	if (!cmd)
		return sluice::invalid("unknown command '" + command + "'; commands: " + command_names() +
				       " (see 'sluicectl --help')");
	if (help) {
		print_command_help(ctx.out, *cmd);
		return {};
	}
	auto inv = parse_invocation(*cmd, rest);
	if (!inv)
		return std::unexpected(inv.error());
	return cmd->handler(ctx, *inv);
}

} // namespace

std::span<const Cmd> command_table()
{
	return kCommands;
}

} // namespace sluicectl

int sluicectl_main(int argc, char **argv, std::ostream &out, std::ostream &err)
{
	sluicectl::Context ctx{out, err};
	std::vector<std::string> tokens(argv + std::min(argc, 1), argv + argc);
	sluice::Status status;
	try {
		status = sluicectl::run(ctx, tokens);
	} catch (const sluice::json::exception &e) {
		// A reply without the fields protocol.h promises: a daemon of another version.
		status = sluice::fail(sluice::ErrorKind::system,
				      std::string("unexpected reply from sluiced (another version?): ") + e.what());
	} catch (const std::exception &e) {
		status = sluice::fail(sluice::ErrorKind::system, e.what());
	}
	out.flush();
	if (status)
		return 0;
	err << "sluicectl: " << status.error().describe() << '\n';
	return status.error().exit_code();
}
