#include "sluicectl/output.h"

#include "sluicectl/client.h"
#include "bpf/maps.h"
#include "bpf/status.h"
#include "sluicectl/table.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace sluicectl {

void print_json(const Context &ctx, const json &body)
{
	ctx.out << body.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

std::string text_of(const json &value)
{
	if (value.is_string())
		return value.get<std::string>();
	if (value.is_boolean())
		return value.get<bool>() ? "yes" : "no";
	if (value.is_null())
		return "-";
	// Counts the daemon rounded (uptime, pps) come as doubles: "12", not "12.0".
	if (value.is_number_float() && std::abs(value.get<double>()) < 1e15 &&
	    value.get<double>() == std::round(value.get<double>()))
		return fixed(value.get<double>(), 0);
	return value.dump();
}

std::string fixed(double value, int digits)
{
	char buf[64];
	std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
	return buf;
}

namespace {

// sluiced sends {outcome: {"pps", "bps"}}; a bare number is taken as pps.
std::string pps_text(const json &rates, const char *outcome)
{
	auto it = rates.find(outcome);
	if (it == rates.end())
		return "-";
	const json &rate = it->is_object() ? it->value("pps", json()) : *it;
	return rate.is_number() ? text_of(rate) : "-";
}

// The daemon counts standing entries at most every few seconds: say how
// old the count is when it is not from this reply.
std::string counted_ago(double seconds)
{
	return seconds >= 1 ? " (counted " + fixed(seconds, 0) + " s ago)" : "";
}

} // namespace

void print_counters(std::ostream &out, const json &entry, size_t indent)
{
	using A = Table::Align;
	Table table({"OUTCOME", "PACKETS", "BYTES", "PPS"}, {A::left, A::right, A::right, A::right});
	const json &counters = entry.at("counters");
	const json rates = entry.value("rates", json::object());
	// In the data plane's order (passed first), not JSON's alphabetical one.
	for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++) {
		const char *name = sluice::outcome_name(k);
		if (!counters.contains(name))
			continue;
		const json &c = counters.at(name);
		table.row({name, text_of(c.at("packets")), text_of(c.at("bytes")), pps_text(rates, name)});
	}
	table.print(out, indent);
}

void print_bucket(const Context &ctx, const json &reply)
{
	if (ctx.json)
		return print_json(ctx, reply);
	ctx.out << reply.at("iface").get<std::string>() << ": " << reply.at("addr").get<std::string>()
		<< " (source " << text_of(reply.value("source", json())) << ")\n";
	using A = Table::Align;
	Table slots({"SLOT", "TOKENS"}, {A::right, A::right});
	const json &index = reply.at("slots");
	const json &tokens = reply.at("tokens");
	for (size_t i = 0; i < index.size() && i < tokens.size(); i++)
		slots.row({text_of(index[i]), text_of(tokens[i])});
	slots.print(ctx.out, 2);
	ctx.out << "  tokens_left " << text_of(reply.at("tokens_left")) << " of burst "
		<< text_of(reply.at("burst")) << '\n';
}

void standing_rows(Table &block, const json &s)
{
	const json &valve = s.at("valve");
	std::string valve_text = valve.at("closed").get<bool>() ? "closed (shedding is allowlist-only)" : "open";
	if (auto since = valve.value("since", std::string()); !since.empty())
		valve_text += " since " + since;
	const json &newcomer = s.at("newcomer");
	const json &observed = s.at("observed");
	block.row({"standing", text_of(s.at("entries")) + " of " + text_of(s.at("capacity")) + " entries (" +
				       fixed(s.at("occupancy_pct").get<double>(), 2) + "%), " +
				       text_of(s.at("full_sets")) + " full sets, lapse " + text_of(s.at("lapse_s")) +
				       " s" + counted_ago(s.value("counted_s_ago", 0.0))})
		.row({"valve", valve_text})
		.row({"standing bucket", text_of(s.at("rate_pps")) + " pps, burst " + text_of(s.at("burst")) +
						 " (serving: beside the rate; shedding: alone)"})
		.row({"newcomers", newcomer.at("pps").get<uint64_t>() == 0
					   ? std::string("none (shedding admits no source without standing)")
					   : text_of(newcomer.at("pps")) + " pps, burst " + text_of(newcomer.at("burst")) +
						     ", shared while shedding"})
		.row({"observed", observed.at("on").get<bool>()
					  ? "on, " + text_of(observed.at("periods")) + " periods"
					  : std::string("off")})
		.row({"feeders", s.at("feeders").get<bool>() ? "attached" : "not attached (no new standing)"});
	if (!s.contains("share"))
		return;
	const json &share = s.at("share");
	const std::string over = " (the standing sources ask over " + text_of(share.at("capacity_pps")) + " pps together)";
	if (share.contains("newer_level_pps") && !share.at("newer_level_pps").is_null())
		block.row({"share", (share.at("level_pps").is_null() ? std::string("their own rate")
								      : text_of(share.at("level_pps")) + " pps each at most") +
					    " with standing from over " + text_of(share.at("tenure_s")) +
					    " s before the contention, " + text_of(share.at("newer_level_pps")) +
					    " pps each granted since" + over});
	else
		block.row({"share", share.at("level_pps").is_null()
					    ? "none in force (the standing sources ask within " +
						      text_of(share.at("capacity_pps")) + " pps together)"
					    : text_of(share.at("level_pps")) + " pps each at most" + over});
	block.row({"revoked", text_of(share.at("revocations")) + " since sluiced started"});
	if (!s.contains("prefix_quota"))
		return;
	const json &q = s.at("prefix_quota");
	block.row({"prefix quota", text_of(q.at("quota")) + " entries per /24 or /48; " + text_of(q.at("prefixes_full")) +
					   " prefixes at it; " + text_of(q.at("evictions")) + " entries evicted over it"});
}

void cookie_rows(Table &block, const json &c)
{
	std::string mode = c.at("mode").get<std::string>();
	std::string when = mode == "shedding" ? " (answered while shedding)"
			   : mode == "always"    ? " (answered in every state)"
						 : " (a SYN without standing draws on the newcomer budget)";
	// Through the daemon: off here although asked, because the SYN-ACKs
	// could not leave the interface (logic/cookies.h, xdp_tx_verdict).
	const json xdp_tx = c.value("xdp_tx", json());
	if (mode == "off" && xdp_tx.is_object() && !xdp_tx.at("delivers").get<bool>()) {
		block.row({"cookies", "off on this interface (--cookies " + text_of(c.at("asked")) +
					      " asked): " + text_of(xdp_tx.at("why")) + when})
			.row({"cookie fix", text_of(xdp_tx.at("fix"))});
		return;
	}
	block.row({"cookies", mode + when});
	if (mode == "off")
		return;
	if (xdp_tx.is_object())
		block.row({"cookie replies", text_of(xdp_tx.at("why"))});
	const json &offers = c.at("offers");
	std::string offer = "MSS " + text_of(c.at("mss4")) + " (IPv6 " + text_of(c.at("mss6")) + ")";
	if (offers.at("timestamps").get<bool>()) {
		offer += ", timestamps";
		if (offers.at("window_scaling").get<bool>())
			offer += ", window scale " + text_of(c.at("wscale"));
		if (offers.at("sack").get<bool>())
			offer += ", SACK";
	} else {
		offer += " only (no timestamps: no window scaling, no SACK)";
	}
	block.row({"cookie budget", c.at("pps").get<uint64_t>() == 0
					    ? std::string("none (every cookie SYN is shed)")
					    : text_of(c.at("pps")) + " SYN-ACKs/s, burst " + text_of(c.at("burst"))})
		.row({"cookies per network", c.value("dest_pps", uint64_t{0}) == 0
						   ? std::string("no bound (--cookie-dest-pps 0)")
						   : text_of(c.at("dest_pps")) + " SYN-ACKs/s toward one /24 or /48, burst " +
							     text_of(c.at("dest_burst"))})
		.row({"SYN-ACK offers", offer});
	// How a cookie's ACK is judged (bpf/status.h, CookieStatus).
	if (const json acks = c.value("acks", json()); acks.is_object()) {
		const std::string stamps = acks.at("syn_stamps").get<std::string>();
		std::string how;
		if (acks.at("looked_up").get<bool>())
			how = "the listener looked up first, then the kernel's cookie check (no standing feeders)";
		else if (stamps == sluice::syn_stamps_name(sluice::SynStamps::grace))
			how = "the kernel's cookie check alone; SYN stamps asked in " +
			      fixed(acks.at("syn_stamps_in_s").get<double>(), 1) +
			      " s (the grace after the cookie path came into force)";
		else if (stamps == sluice::syn_stamps_name(sluice::SynStamps::asked))
			how = "refused unless their source sent a SYN the cookie path saw (a SYN stamp), then the "
			      "kernel's cookie check";
		else
			how = "the kernel's cookie check alone (SYN stamps asked only while the cookie path is in force)";
		block.row({"cookie ACKs", how});
	}
	std::string sysctls;
	for (const auto &[name, v] : c.at("sysctls").items()) {
		sysctls += (sysctls.empty() ? "" : ", ") + name + "=" + text_of(v.at("now"));
		if (!v.at("was").is_null())
			sysctls += " (was " + text_of(v.at("was")) + ")";
	}
	block.row({"cookie sysctls", std::string(c.at("sysctls_armed").get<bool>() ? "armed by sluiced: " : "") +
					     sysctls});
}

Status show_replies(Context &ctx, const Invocation &inv, const json &request,
		    void (*print_text)(Context &, const json &reply), void (*amend)(Context &, json &reply))
{
	bool watch = inv.flag("watch");
	double interval = 1;
	if (auto text = inv.option("interval")) {
		if (!watch)
			return std::unexpected(inv.usage_error("--interval needs --watch"));
		auto seconds = parse_seconds(*text, "--interval");
		if (!seconds)
			return std::unexpected(seconds.error());
		interval = *seconds;
	}

	// One connection for the whole watch; any error ends it.
	Client client(ctx.socket);
	for (;;) {
		auto reply = client.call(request);
		if (!reply)
			return std::unexpected(reply.error());
		if (amend)
			amend(ctx, *reply);
		if (ctx.json) {
			print_json(ctx, *reply);
		} else {
			if (watch)
				ctx.out << "\033[H\033[2J" << "every " << fixed(interval, 1) << " s; Ctrl-C to stop\n";
			print_text(ctx, *reply);
		}
		if (!watch)
			return {};
		ctx.out.flush();
		std::this_thread::sleep_for(std::chrono::duration<double>(interval));
	}
}

} // namespace sluicectl
