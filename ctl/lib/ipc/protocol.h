// protocol.h - the control socket's messages.
//
// A UNIX stream socket; one JSON object per line each way (nlohmann-json).
// A request line is at most kMaxLineBytes; longer lines, malformed JSON,
// unknown commands and wrong types get an error reply and the connection
// carries on.
//
// Request:  {"cmd": "<name>", ...arguments}
// Reply:    {"ok": true, ...result}
//           {"ok": false, "error": "<message>", "kind": "refused|invalid|system"}
//           (kind decides sluicectl's exit code: refused/system 1, invalid 2)
//           {"ok": false, "error": "...", "kind": "system", "busy": true}
//           (sent on connecting when max_clients are connected, before any
//           request is read: nothing was done, and the client may connect
//           again; sluicectl does, for a few seconds)
//
// Commands and their arguments (iface is an interface name; the registry,
// ipc/commands.h, holds the same list and checks the arguments' types):
//   status      [iface]                     -> {"daemon": {...}, "interfaces": [status...]}
//   stats       [iface]                     -> {"interfaces": [{"iface", "counters", "rates"}...]}
//   breaker     iface, to: serving|shedding|recovering
//                                           -> {"iface", "from", "to", "state"}
//   set         iface, [rate], [burst]      -> {"iface", "rate_pps", "burst"}
//   bucket      iface, addr, [set: int]     -> {"iface", "addr", "source", "slots": [a, b],
//                                               "tokens": [ta, tb], "tokens_left", "burst"}
//   refill      iface, addr, n: int         -> same as bucket
//   list_add    iface, list: allow|deny, cidrs: [str...], [from_fd: true]
//               (all or nothing; with from_fd the request carries an open
//               list file as SCM_RIGHTS ancillary data, one CIDR a line: how
//               sluicectl --from sends lists larger than one request line,
//               read with the client's own access to the file)
//   list_del    iface, list, cidrs
//   list_show   iface, list                 -> {"iface", "list", "cidrs": [...]}
//   attach      iface, [mode: native|skb|auto] -> {"iface", "mode"}
//   detach      iface                       -> {"iface"}
//   audit       iface                       -> {"iface", "audit": {...}} (a full sweep now)
//   rekey       iface                       -> {"iface", "prog_id_before", "prog_id_after",
//                                               "standing_carried", "standing_lost",
//                                               "standing_carried_late", "penalties_carried",
//                                               "penalties_lost", "took_ms", "rekeys",
//                                               "next_rekey_in_s" (null: no schedule)}
//               (a new hash key now: Dataplane::rekey; refused with --multiprog)
//   top         iface, [n: int 1..2^20, default 10]
//                                           -> {"iface", "dropped_pps", "sample_every", "window_s",
//                                               "window_complete", "samples", "capacity",
//                                               "summary_size", "sources": [{"source",
//                                               "est_dropped_pps", "samples", "error",
//                                               "tokens"}...]}
//               (the heaviest dropped sources of the last complete sampling
//               window, or of the current one until one completes; refused
//               when the program was loaded with --sample-every 0)
//   standing    iface, [addr]               -> {"iface", "standing": {...}} and, with addr,
//                                               "addr", "source", "has_standing", "reason",
//                                               "since", "last_seen", "tokens"
//               (reason, since and last_seen null when the table has no
//               entry of it; tokens, its standing bucket's, null when it has
//               no standing)
//   reload      [iface]                     -> {"interfaces": [{"iface", "file", "generation", "set",
//                                               "classes", "prefixes", "list_entries",
//                                               "kept_runtime_entries", "apply_ms"}...]}
//               (the policy file read again, all or nothing: a bad file is
//               refused with file:line:col and nothing changes; refused
//               without a policy file)
//   explain     iface, src, [proto: tcp|tcp-syn|udp|icmp|icmpv6[/PORT]]
//                                           -> {"iface", "source", "protocol", "port", "decided",
//                                               "class", "action", "rule", "rule_text", "deny_entry",
//                                               "allow_entry", "source_prefix", "losers", "why", "text",
//                                               "table_class", "table_class_name", "bucket", "slots",
//                                               "tokens", "has_standing"}
//
// Shapes of the larger replies (the daemon builds them as typed structs,
// ipc/replies.h, and ipc/encode.cpp alone turns those into JSON):
//   status.daemon:      {running, pid, uptime_s, socket, pin_dir, period_s,
//                        policy: {trip_pps, clear_pps, trip_periods, hold_s,
//                                 recovery_s, recovery_start_ppm}}
//   status.interfaces[]: interface_status() (status.h) plus
//                        audit: {swept, violations (all sweeps), last_sweep_violations,
//                                full_sweeps, last_sweep (ISO time)},
//                        rates: {<outcome>: {pps, bps}}, oper_state (up, down,
//                        gone, ...), pin_dir, policy_file: null or {file,
//                        generation, applied, set, classes: [{id, name}], rules,
//                        reloads_applied, reloads_refused, last_refused},
//                        hash_key: {rekeys (by this daemon), last_s_ago (null:
//                        none yet), every_s (--rekey-every, 0: none), next_in_s
//                        (null: no schedule; <= 0: due, waiting for serving)},
//                        cookies.asked (--cookies; absent when off) and
//                        cookies.xdp_tx: null (not read yet) or {delivers,
//                        why, fix (null when it delivers)}: whether the
//                        SYN-ACKs XDP_TX sends can leave (a veth needs an XDP
//                        program on its peer); where not, cookies.mode is off;
//                        or {iface, error} if its maps cannot be read
//   stats.interfaces[]: {iface, counters: {<outcome>: {packets, bytes}}, rates}
//   audit.audit:        {slots, swept, violations, last_sweep_violations,
//                        full_sweeps, last_sweep}
//   list_add/list_del:  {iface, list, changed: number of prefixes in the request}
//   status.interfaces[].standing, standing.standing:
//                       {entries (live now), capacity, full_sets, occupancy_pct,
//                        lapse_s, feeders, valve: {closed, since},
//                        rate_pps, burst (the standing bucket),
//                        newcomer: {pps, burst} (all CPUs together; 0: none),
//                        observed: {on, periods}}
//   top:                dropped_pps: every dropped outcome per second over the
//                        last control period, from the counters;
//                        samples: sampled drops in the window (1 in sample_every
//                        drops of IP frames: rate, shed and deny drops);
//                        capacity: sources the summary can track (--top-capacity),
//                        summary_size: sources it tracks now (<= capacity);
//                        sources[], heaviest first: source (the prefix sluice
//                        limits), samples (Space-Saving count, an overestimate by
//                        at most error), est_dropped_pps = samples x sample_every /
//                        window_s, tokens (the fuller of its two slots, now)
// Outcomes: passed, drop_rate, drop_shed, drop_deny, allowlisted, non_ip,
// malformed, would_drop, standing, newcomer, drop_valve (outcome_name() in
// maps.h, from SLUICE_OUTCOME_TABLE).
#pragma once

#include "base/fd.h"
#include "base/result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

using json = nlohmann::json;

inline constexpr size_t kMaxLineBytes = 64 * 1024;

struct Request {
	std::string cmd;
	json args; // the whole object; typed access through the getters below
	// A file descriptor passed with the request ("from_fd": true), or none.
	std::shared_ptr<UniqueFd> passed_fd;
	// Who sent it (SO_PEERCRED at connect), for the log of who captured
	// what; none for a request that did not come through the socket.
	struct Peer {
		int64_t pid = 0, uid = 0, gid = 0;
	};
	std::optional<Peer> peer;

	// Typed argument access: missing required or wrong-typed arguments are
	// input errors naming the argument and the type wanted.
	Result<std::string> str(const char *name) const;
	Result<std::optional<std::string>> opt_str(const char *name) const;
	Result<int64_t> integer(const char *name) const;
	Result<std::optional<int64_t>> opt_integer(const char *name) const;
	Result<std::vector<std::string>> str_list(const char *name) const;
};

// A command of the registry? (ipc/commands.h; defined in commands.cpp)
bool known_command(std::string_view cmd);

// Parse one request line (without the newline).
Result<Request> parse_request(std::string_view line);

json ok_reply(json body = json::object());
json error_reply(const Error &e);
// The refusal of a connection over max_clients, and the test for it.
json busy_reply(size_t max_clients);
bool is_busy_reply(const json &reply);
const char *kind_name(ErrorKind k);
std::optional<ErrorKind> kind_from(std::string_view name);

} // namespace sluice
