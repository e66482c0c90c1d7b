// commands.h - the one registry of the commands sluiced answers: for each
// its name, its arguments (name, type, required or not), whether it reads or
// writes, and a one-line summary. The protocol's known_command(), the
// daemon's dispatch table (sluiced/daemon.cpp) and sluicectl's command table
// (each sluicectl command names the requests it sends) all come from here;
// a command added here and not there fails to compile (the daemon) or fails
// tests/control/commands_test.cpp (sluicectl).
//
// "from_fd" is not in any schema: it may come with any request, and the
// control server takes it (control_server.cpp).
#pragma once

#include "ipc/protocol.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace sluice {

// In the registry's order; kCommandSpecs[i].id == Command(i).
enum class Command : uint8_t {
	status,
	stats,
	breaker,
	set,
	bucket,
	refill,
	list_add,
	list_del,
	list_show,
	attach,
	detach,
	audit,
	top,
	standing,
	reload,
	explain,
	upstream,
	capture,
	standing_revoke,
	capture_renew,
	rekey,
};
inline constexpr size_t kCommandCount = static_cast<size_t>(Command::rekey) + 1;

enum class ArgType : uint8_t {
	string,      // Request::str
	integer,     // Request::integer (a JSON integer that fits int64)
	string_list, // Request::str_list
};

struct ArgSpec {
	std::string_view name;
	ArgType type;
	bool required;
};

// What a command does to the data plane or the daemon's settings.
enum class Access : uint8_t {
	read,
	write,
	read_or_write, // bucket: reads, and writes with "set"
};
const char *to_string(Access a); // "reads", "writes", "reads or writes"

struct CommandSpec {
	Command id;
	std::string_view name;
	Access access;
	std::span<const ArgSpec> args; // checked in this order
	std::string_view summary;
	bool reveals_slots = false; // its reply names bucket slot indices
};

// Who may send it: root always; the socket's group (--socket-group) only a
// command that reads and names no slot index. A slot index is what the hash
// key decides: enough of them, for sources of one's choosing, let a caller
// find sources that share a bucket (a collision oracle for the key).
inline constexpr bool needs_root(const CommandSpec &s)
{
	return s.access != Access::read || s.reveals_slots;
}

namespace command_args {
using T = ArgType;
inline constexpr ArgSpec optional_iface[] = {{"iface", T::string, false}};
inline constexpr ArgSpec iface[] = {{"iface", T::string, true}};
inline constexpr ArgSpec breaker[] = {{"iface", T::string, true}, {"to", T::string, true}};
inline constexpr ArgSpec set[] = {{"iface", T::string, true}, {"rate", T::integer, false},
				  {"burst", T::integer, false}};
inline constexpr ArgSpec bucket[] = {{"iface", T::string, true}, {"addr", T::string, true},
				     {"set", T::integer, false}};
inline constexpr ArgSpec refill[] = {{"iface", T::string, true}, {"addr", T::string, true},
				     {"n", T::integer, true}};
// cidrs is optional: with from_fd the list comes as a file. upstream (1):
// deny add ... --upstream, the prefixes announced upstream too.
inline constexpr ArgSpec list_change[] = {{"iface", T::string, true}, {"list", T::string, true},
					  {"cidrs", T::string_list, false}, {"upstream", T::integer, false}};
inline constexpr ArgSpec list_show[] = {{"iface", T::string, true}, {"list", T::string, true}};
inline constexpr ArgSpec attach[] = {{"iface", T::string, true}, {"mode", T::string, false}};
inline constexpr ArgSpec top[] = {{"iface", T::string, true}, {"n", T::integer, false}};
inline constexpr ArgSpec standing[] = {{"iface", T::string, true}, {"addr", T::string, false}};
inline constexpr ArgSpec standing_revoke[] = {{"iface", T::string, true}, {"addr", T::string, true}};
// proto: "tcp", "tcp-syn/443", "udp/53", "icmp", ...; none: any protocol.
inline constexpr ArgSpec explain[] = {{"iface", T::string, true}, {"src", T::string, true},
				      {"proto", T::string, false}};
// capture: the outcomes by name, the bytes copied of each frame, 1 in
// sample_every; the pipe the frames go to comes with it (from_fd). count:
// frames sluiced passes on at most (the client's --count when it filters
// nothing); duration_ms: how long at most (--duration). sluiced ends the
// capture at either, and when its client stops renewing it (capture_renew).
inline constexpr ArgSpec capture[] = {{"iface", T::string, true}, {"outcomes", T::string_list, true},
				      {"snaplen", T::integer, true}, {"sample_every", T::integer, true},
				      {"count", T::integer, false}, {"duration_ms", T::integer, false}};
} // namespace command_args

inline constexpr std::array<CommandSpec, kCommandCount> kCommandSpecs = {{
	{Command::status, "status", Access::read, command_args::optional_iface,
	 "the daemon and each interface: attachment, breaker, limits, audit, counters, rates"},
	{Command::stats, "stats", Access::read, command_args::optional_iface,
	 "counters and per-second rates per outcome"},
	{Command::breaker, "breaker", Access::write, command_args::breaker, "move an interface's breaker"},
	{Command::set, "set", Access::write, command_args::set, "change the rate and burst every source gets"},
	{Command::bucket, "bucket", Access::read_or_write, command_args::bucket,
	 "an address's two slots and their tokens (set: write them)", true},
	{Command::refill, "refill", Access::write, command_args::refill, "add n tokens to an address's two slots"},
	{Command::list_add, "list_add", Access::write, command_args::list_change,
	 "add prefixes to the allow or deny list (all or nothing)"},
	{Command::list_del, "list_del", Access::write, command_args::list_change,
	 "remove prefixes from the allow or deny list (all or nothing)"},
	{Command::list_show, "list_show", Access::read, command_args::list_show,
	 "the prefixes of the allow or deny list"},
	{Command::attach, "attach", Access::write, command_args::attach,
	 "load the data plane and attach it to an interface"},
	{Command::detach, "detach", Access::write, command_args::iface,
	 "detach the data plane from an interface and remove its pins"},
	{Command::audit, "audit", Access::read, command_args::iface,
	 "sweep an interface's table now and report invariant violations"},
	{Command::top, "top", Access::read, command_args::top,
	 "the sources dropped the most in the last sampling window"},
	{Command::standing, "standing", Access::read, command_args::standing,
	 "the standing table's occupancy, share, valve, budgets and last revocations; with addr, whether it has standing and why"},
	{Command::reload, "reload", Access::write, command_args::optional_iface,
	 "read the policy file again and apply it (all or nothing), to one interface or all"},
	{Command::explain, "explain", Access::read, command_args::explain,
	 "the policy class a frame gets and why, its compiled class and its bucket's slots", true},
	{Command::upstream, "upstream", Access::read, command_args::optional_iface,
	 "what is announced upstream over BGP (FlowSpec through gobgpd), why and since when; the speaker's state"},
	{Command::capture, "capture", Access::read, command_args::capture,
	 "copy the frames of the outcomes asked for to the pipe passed with the request, until it closes"},
	{Command::standing_revoke, "standing_revoke", Access::write, command_args::standing_revoke,
	 "take an address's standing, and bar it from earning standing for its penalty (doubled on each revocation)"},
	{Command::capture_renew, "capture_renew", Access::read, command_args::iface,
	 "renew the lease of the capture this client holds on an interface (sluiced ends one not renewed in time)"},
	{Command::rekey, "rekey", Access::write, command_args::iface,
	 "a new hash key for an interface now: a new program, every bucket anew, the standing table carried"},
}};

constexpr bool registry_in_order()
{
	for (size_t i = 0; i < kCommandSpecs.size(); i++)
		if (static_cast<size_t>(kCommandSpecs[i].id) != i)
			return false;
	return true;
}
static_assert(registry_in_order(), "kCommandSpecs must list the commands in enum order");

constexpr const CommandSpec &command_spec(Command c)
{
	return kCommandSpecs[static_cast<size_t>(c)];
}
constexpr std::string_view command_name(Command c)
{
	return command_spec(c).name;
}

// The command named `name`, or none.
const CommandSpec *find_command(std::string_view name);

// A request's arguments against its command's schema, in schema order: a
// missing required argument or one of the wrong type is an input error
// (the messages of Request's getters). Arguments the schema does not name
// are ignored.
Status check_args(const CommandSpec &spec, const Request &req);

} // namespace sluice
