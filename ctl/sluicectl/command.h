// command.h - what every subcommand gets (the global options, the output
// streams, its parsed command line) and the checks that keep bad input from
// ever reaching the daemon.
#pragma once

#include "base/address.h"
#include "ipc/commands.h"
#include "base/defaults.h"
#include "ipc/protocol.h"
#include "base/result.h"

#include <boost/program_options.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace sluicectl {

namespace po = boost::program_options;
using sluice::Error;
using sluice::json;
using sluice::Result;
using sluice::Status;

inline constexpr const char *kDefaultSocket = sluice::defaults::kSocketPath;
inline constexpr const char *kDefaultPinDir = sluice::defaults::kPinDir;

struct Context {
	std::ostream &out;
	std::ostream &err;
	std::string socket = kDefaultSocket;
	std::string pin_dir = kDefaultPinDir;
	bool json = false; // -j: print the daemon's reply body instead of text
};

// One subcommand's command line after option parsing.
struct Invocation {
	std::string command;           // "allow", "set", ...
	std::string usage;             // "usage: sluicectl set IFACE [--rate N] [--burst N]"
	std::vector<std::string> args; // positional arguments, in order
	po::variables_map options;

	// "WHAT; usage: ..." as an input error (exit 2).
	Error usage_error(const std::string &what) const;
	// Positional argument i, or "missing NAME; usage: ...".
	Result<std::string> arg(size_t i, const char *name) const;
	// Positional argument i as an interface name.
	Result<std::string> iface(size_t i) const;
	// The optional [IFACE] of status, stats and reload: argument i checked
	// as iface(i) when given, nullopt when not.
	Result<std::optional<std::string>> optional_iface(size_t i) const;
	// Refuses positional arguments beyond the first n.
	Status at_most(size_t n) const;
	std::optional<std::string> option(const char *name) const;
	bool flag(const char *name) const;
	// -j on a command that only writes: an input error naming the read commands.
	Status no_json(const Context &ctx) const;
};

// bpftool's struct cmd: name, handler, one-line help; plus the syntax that
// `COMMAND --help` prints and the options the command line is parsed with.
struct Cmd {
	const char *name;
	Status (*handler)(Context &, const Invocation &);
	// The daemon's commands it sends (ipc/commands.h); every command of the
	// registry is sent by some sluicectl command (tests/control/commands_test.cpp).
	std::initializer_list<sluice::Command> sends;
	const char *help;
	const char *synopsis;                        // forms separated by '\n'
	void (*options)(po::options_description &); // nullptr: no options
	// Short options after the command (top's -n). Off for the others, so
	// that "-5" stays a number there (refill ... -5, --set -1).
	bool short_options = false;
	// It reads the pins itself (class list) and sends nothing: `sends` is
	// empty on purpose.
	bool from_pins = false;
};

// sluicectl's commands, in `sluicectl --help` order.
std::span<const Cmd> command_table();

// A request: `args` with "cmd" the command's registry name.
json request_for(sluice::Command c, json args = json::object());

// Input checks; the errors name the argument, the text, and what is wanted.
Result<int64_t> parse_integer(std::string_view text, const std::string &what);
Result<int64_t> parse_count(std::string_view text, const std::string &what); // >= 0
Result<double> parse_seconds(std::string_view text, const std::string &what); // > 0
Status check_iface_name(std::string_view name);
bool looks_like_integer(std::string_view text);

// The subcommands (cmd_*.cpp).
Status do_status(Context &, const Invocation &);
Status do_stats(Context &, const Invocation &);
void stats_options(po::options_description &);
Status do_breaker(Context &, const Invocation &);
Status do_set(Context &, const Invocation &);
void set_options(po::options_description &);
Status do_bucket(Context &, const Invocation &);
void bucket_options(po::options_description &);
Status do_refill(Context &, const Invocation &);
Status do_list(Context &, const Invocation &); // allow and deny
void list_options(po::options_description &);
Status do_attach(Context &, const Invocation &);
void attach_options(po::options_description &);
Status do_detach(Context &, const Invocation &);
Status do_audit(Context &, const Invocation &);
Status do_rekey(Context &, const Invocation &);
Status do_top(Context &, const Invocation &);
void top_options(po::options_description &);
Status do_standing(Context &, const Invocation &);
Status do_reload(Context &, const Invocation &);
Status do_explain(Context &, const Invocation &);
Status do_class(Context &, const Invocation &);
Status do_upstream(Context &, const Invocation &);
Status do_capture(Context &, const Invocation &);
void capture_options(po::options_description &);

} // namespace sluicectl
