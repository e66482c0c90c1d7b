// output.h - how replies are shown: -j prints the reply body as one JSON
// line; text output is aligned tables built from the same fields.
#pragma once

#include "sluicectl/command.h"

#include <string>

namespace sluicectl {

// The reply body as one line of JSON (jq and `--watch -j` want lines).
void print_json(const Context &ctx, const json &body);

// A scalar as text: strings as they are, booleans yes/no, null "-".
std::string text_of(const json &value);
// 12.5 -> "12.5" with `digits` decimals.
std::string fixed(double value, int digits);

// OUTCOME PACKETS BYTES PPS for one interface entry of a status or stats
// reply: "counters" {outcome: {packets, bytes}} and, from the daemon,
// "rates" {outcome: {pps, bps}} ("-" when there are none: read from pins).
void print_counters(std::ostream &out, const json &entry, size_t indent);

// The reply of bucket and refill: the source's two slots and their tokens.
void print_bucket(const Context &ctx, const json &reply);

// The rows of a "standing" object (status, standing): entries, valve,
// buckets, newcomers, observed standing, feeders.
class Table;
void standing_rows(Table &block, const json &standing);
// status's SYN cookie rows: mode, budget, what a SYN-ACK offers, the sysctls.
void cookie_rows(Table &block, const json &cookies);

// What a command that asks the daemon and shows its reply does: send
// `request`, show the reply (-j: one JSON line; else `print_text`), or the
// daemon's error (its kind picks the exit code). A read command that takes
// --watch [--interval S] asks again every interval on one connection,
// redrawing in place, until an error or Ctrl-C (the commands without those
// options never see them). --interval without --watch is an input error. `amend`, if
// given, adds to each reply before it is shown (stats: the per-class
// counters sluicectl reads from the pins).
Status show_replies(Context &ctx, const Invocation &inv, const json &request,
		    void (*print_text)(Context &, const json &reply), void (*amend)(Context &, json &reply) = nullptr);

} // namespace sluicectl
