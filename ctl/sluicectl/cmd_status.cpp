// cmd_status.cpp - `status [IFACE]`: from the daemon or, when it is not
// running, straight from the pins, so an operator can see that enforcement
// outlived the daemon (it is fail-static).
#include "sluicectl/client.h"
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "bpf/status.h"
#include "ipc/encode.h"
#include "sluicectl/table.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace sluicectl {

namespace {

std::string attachment(const json &s)
{
	std::string text = s.value("attached", false) ? text_of(s.value("attach_mode", json())) + ", prog " +
								    text_of(s.value("prog_id", json()))
						       : "no (its interface is gone?)";
	// The daemon watches the link: "up", "down", or "gone".
	if (auto oper = s.value("oper_state", std::string()); !oper.empty())
		text += ", link " + oper;
	return text;
}

std::string breaker(const json &b)
{
	std::string text = b.at("state").get<std::string>();
	if (auto since = b.value("since", std::string()); !since.empty())
		text += " since " + since;
	if (b.value("manual", false))
		text += ", manual";
	return text;
}

// What the daemon's rule saw at the last period: the windowed rate it
// judged, its threshold, and its verdict ("over", "under", "filling":
// the window is not full yet, "manual").
std::string breaker_rule(const json &r)
{
	std::string text = text_of(r.at("text"));
	return text + ": " + text_of(r.at("verdict"));
}

// "2026-12-03T08:01:02Z serving -> shedding (admitted ...)"
std::string breaker_step(const json &b)
{
	return text_of(b.at("at")) + " " + text_of(b.at("from")) + " -> " + text_of(b.at("to")) + " (" +
	       text_of(b.at("why")) + ")";
}

// The daemon audits a slice of the table every period; from pins there is no
// "audit" at all.
std::string last_audit(const json &s)
{
	const json audit = s.value("audit", json());
	if (!audit.is_object())
		return "-";
	std::string text = text_of(audit.value("swept", json())) + " slots swept, " +
			   text_of(audit.value("violations", json())) + " violations";
	auto last = audit.value("last_sweep", std::string());
	return text + (last.empty() ? "; no full sweep yet" : "; last full sweep " + last);
}

// "2 new keys by this daemon, the last 3600 s ago; next in 82800 s (every
// 86400 s)": the daemon's alone (from pins there is none).
std::string hash_key(const json &k)
{
	std::string text = k.at("rekeys").get<uint64_t>() == 0
				   ? std::string("as loaded or adopted, none new by this daemon")
				   : text_of(k.at("rekeys")) + " new by this daemon, the last " +
					     fixed(k.at("last_s_ago").get<double>(), 0) + " s ago";
	const json next = k.at("next_in_s");
	if (next.is_null())
		return text + "; no schedule (--rekey-every 0)";
	const double in = next.get<double>();
	return text + "; next " +
	       (in > 0 ? "in " + fixed(in, 0) + " s" : std::string("due, waiting for the breaker to serve")) +
	       " (every " + fixed(k.at("every_s").get<double>(), 0) + " s)";
}

void print_interface(std::ostream &out, const json &s)
{
	out << s.at("iface").get<std::string>() << '\n';
	// The daemon could not read this interface's maps; it says why.
	if (s.contains("error")) {
		out << "  error: " << text_of(s["error"]) << '\n';
		return;
	}
	Table block;
	block.row({"attached", attachment(s)})
		.row({"breaker", breaker(s.at("breaker"))});
	// The daemon's rule and path (from pins there is neither).
	if (const json r = s.at("breaker").value("rule", json()); r.is_object())
		block.row({"breaker rule", breaker_rule(r)});
	if (const json p = s.at("breaker").value("path", json()); p.is_array())
		for (const auto &b : p)
			block.row({"breaker path", breaker_step(b)});
	block.row({"admission", fixed(s.at("admission_ppm").get<double>() / 1e4, 1) + "%"})
		.row({"rate", text_of(s.at("rate_pps")) + " pps"})
		.row({"burst", text_of(s.at("burst")) + " tokens"})
		.row({"table", text_of(s.at("table_slots")) + " slots"})
		.row({"prefixes", "IPv4 /" + text_of(s.at("v4_prefix")) + ", IPv6 /" + text_of(s.at("v6_prefix"))})
		.row({"dry run", text_of(s.at("dry_run"))});
	// Pins of a build without standing have no "standing" object.
	if (s.contains("standing"))
		standing_rows(block, s.at("standing"));
	if (s.contains("cookies"))
		cookie_rows(block, s.at("cookies"));
	block.row({"last audit", last_audit(s)});
	if (const json k = s.value("hash_key", json()); k.is_object())
		block.row({"hash key", hash_key(k)});
	// The daemon's policy file (null: none; absent: from pins).
	if (const json p = s.value("policy_file", json()); p.is_object()) {
		std::string classes;
		for (const auto &c : p.at("classes"))
			classes += (classes.empty() ? "" : ", ") + c.at("name").get<std::string>();
		block.row({"policy", text_of(p.at("file")) + ", generation " + text_of(p.at("generation")) + " applied " +
					     text_of(p.at("applied"))})
			.row({"classes", classes})
			.row({"reloads", text_of(p.at("reloads_applied")) + " applied, " + text_of(p.at("reloads_refused")) +
						 " refused"});
		if (!p.at("last_refused").is_null())
			block.row({"last refused", text_of(p.at("last_refused"))});
	}
	block.print(out, 2);
	out << '\n';
	print_counters(out, s, 2);
}

void print_interfaces(std::ostream &out, const json &interfaces)
{
	if (interfaces.empty())
		out << "no interfaces (sluicectl attach IFACE)\n";
	for (const auto &s : interfaces) {
		out << '\n';
		print_interface(out, s);
	}
}

// "sluiced: running (pid 812, up 3600 s)"
void print_daemon(std::ostream &out, const json &daemon)
{
	out << "sluiced: running";
	if (daemon.contains("pid"))
		out << " (pid " << text_of(daemon["pid"]) << ", up " << text_of(daemon.value("uptime_s", json()))
		    << " s)";
	out << '\n';
	// The loop's period as measured, how late its last tick started, and
	// the scheduling it runs under (--rt-priority).
	if (const json l = daemon.value("loop", json()); l.is_object()) {
		auto ms = [](const json &v) { return fixed(v.get<double>() * 1000, 1) + " ms"; };
		out << "loop: period " << fixed(l.at("period_s").get<double>(), 3) << " s, measured "
		    << fixed(l.at("last_period_s").get<double>(), 3) << " s (max "
		    << fixed(l.at("max_period_s").get<double>(), 3) << " s); last tick " << ms(l.at("last_late_s"))
		    << " late (max " << ms(l.at("max_late_s")) << ", " << text_of(l.at("late_ticks")) << " of "
		    << text_of(l.at("ticks")) << " ticks late)\n";
	}
	if (const json sc = daemon.value("scheduling", json()); sc.is_object()) {
		out << "scheduling: " << text_of(sc.at("policy"));
		if (sc.at("policy") != "other")
			out << " " << text_of(sc.at("priority"));
		out << ", nice " << text_of(sc.at("nice"));
		if (sc.at("rt_priority_asked").get<int>() > 0)
			out << " (--rt-priority " << text_of(sc.at("rt_priority_asked")) << ", RLIMIT_RTTIME "
			    << fixed(sc.at("rttime_limit_s").get<double>(), 2) << " s"
			    << (sc.at("demoted").get<bool>() ? "; DEMOTED: the loop hit it" : "") << ")";
		out << '\n';
	}
	// --upstream: one line; `sluicectl upstream` has the rules.
	if (daemon.contains("upstream") && !daemon["upstream"].is_null()) {
		const json &u = daemon["upstream"];
		size_t announced = 0;
		for (const auto &r : u.at("rules"))
			announced += r.at("state") == "announced";
		out << "upstream: speaker " << u.at("speaker").at("address").get<std::string>()
		    << (u.at("speaker").at("up").get<bool>() ? " up" : " DOWN") << ", " << announced
		    << (announced == 1 ? " rule" : " rules") << " announced"
		    << (u.at("dry_run").get<bool>() ? " (dry run: nothing is)" : "");
		if (u.contains("auto"))
			for (const auto &i : u.at("auto").at("interfaces"))
				if (i.at("firing").get<bool>())
					out << "; automatic FIRING on " << i.at("iface").get<std::string>();
		if (u.contains("blackholed") && !u.at("blackholed").empty()) {
			out << "; OFFLINE upstream (blackholed):";
			for (const auto &b : u.at("blackholed"))
				out << " " << b.get<std::string>();
		}
		out << " (sluicectl upstream)\n";
	}
}

Status status_from_pins(Context &ctx, const std::optional<std::string> &only, const Error &unreachable)
{
	auto neither = [&](const std::string &why) {
		return sluice::fail(sluice::ErrorKind::system, unreachable.message + "; and " + why);
	};
	if (::access(ctx.pin_dir.c_str(), R_OK | X_OK) != 0 && errno != ENOENT)
		return neither("the pins under " + ctx.pin_dir + " cannot be read: " + std::strerror(errno) +
			       "; run as root");
	std::vector<std::string> ifaces = sluice::pinned_interfaces(ctx.pin_dir);
	if (only) {
		if (std::find(ifaces.begin(), ifaces.end(), *only) == ifaces.end())
			return neither("there are no pins for " + *only + " under " + ctx.pin_dir);
		ifaces = {*only};
	}
	if (ifaces.empty())
		return neither("there are no pins under " + ctx.pin_dir +
			       ", so nothing is enforcing (--pin-dir to use another directory)");

	sluice::PinsStatusReply reply{ctx.socket, {}};
	for (const auto &iface : ifaces) {
		auto dp = sluice::Dataplane::adopt(ctx.pin_dir + "/" + iface);
		if (!dp && (dp.error().code == EACCES || dp.error().code == EPERM))
			return neither("reading the pins under " + ctx.pin_dir + " needs root: " +
				       std::strerror(dp.error().code) + "; run as root");
		if (!dp)
			return std::unexpected(dp.error());
		auto s = sluice::interface_status(*dp, iface);
		if (!s)
			return std::unexpected(s.error());
		reply.interfaces.push_back(std::move(*s));
	}
	// Encoded as the daemon encodes its status, so text and -j read alike.
	json body = sluice::encode(reply);
	if (ctx.json) {
		print_json(ctx, body);
		return {};
	}
	ctx.out << "sluiced: not running (socket " << ctx.socket << "); enforcement from pins under "
		<< ctx.pin_dir << '\n';
	print_interfaces(ctx.out, body.at("interfaces"));
	return {};
}

} // namespace

Status do_status(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	auto name = inv.optional_iface(0);
	if (!name)
		return std::unexpected(name.error());
	const std::optional<std::string> &iface = *name;

	Client client(ctx.socket);
	if (auto connected = client.connect(); !connected) {
		if (client.daemon_not_running())
			return status_from_pins(ctx, iface, connected.error());
		return connected;
	}
	json request = request_for(sluice::Command::status);
	if (iface)
		request["iface"] = *iface;
	auto reply = client.call(request);
	if (!reply)
		return std::unexpected(reply.error());
	if (ctx.json) {
		print_json(ctx, *reply);
		return {};
	}
	print_daemon(ctx.out, reply->value("daemon", json::object()));
	print_interfaces(ctx.out, reply->at("interfaces"));
	return {};
}

} // namespace sluicectl
