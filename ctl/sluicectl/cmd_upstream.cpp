// cmd_upstream.cpp - `upstream [IFACE]`: what sluiced asks the network
// upstream to drop over BGP (docs/upstream.md): each FlowSpec rule, its
// interface, why, since when and its state; the speaker (gobgpd) and the
// session with the upstream peer. Exit 1 when sluiced runs without --upstream.
#include "sluicectl/client.h"
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/table.h"

namespace sluicectl {

namespace {

void print_upstream(Context &ctx, const json &r)
{
	using A = Table::Align;
	const json &sp = r.at("speaker");
	ctx.out << "upstream" << (r.at("dry_run").get<bool>() ? " (dry run: nothing is announced)" : "") << ": speaker "
		<< sp.at("address").get<std::string>() << (sp.at("up").get<bool>() ? " up" : " DOWN");
	if (!sp.at("last_error").is_null())
		ctx.out << " (" << sp.at("last_error").get<std::string>() << ")";
	if (!r.at("peer").is_null())
		ctx.out << "; peer " << r.at("peer").at("address").get<std::string>() << " "
			<< r.at("peer").at("state").get<std::string>();
	ctx.out << '\n';
	std::string prefixes;
	for (const auto &p : r.at("prefixes"))
		prefixes += (prefixes.empty() ? "" : ", ") + p.get<std::string>();
	Table block;
	// What the worker has done with the loop's latest rules (it, not the
	// loop, waits on the speaker): the first thing to read when gobgpd hangs.
	const json &ago = sp.at("answered_ago_s");
	const uint64_t intended = r.at("intended").get<uint64_t>();
	const std::string rules_intended = std::to_string(intended) + (intended == 1 ? " rule" : " rules") + " intended";
	const std::string answered = ago.is_null() ? "the speaker never answered since sluiced started"
						   : "the speaker last answered " + fixed(ago.get<double>(), 1) + " s ago";
	block.row({"in sync", r.at("in_sync").get<bool>()
				      ? "yes (" + rules_intended + "); " + answered
				      : "NO: not all of the " + rules_intended + " are with the speaker yet (pending below); " +
						answered});
	block.row({"own prefixes", prefixes})
		.row({"max", text_of(r.at("max"))})
		.row({"hold", text_of(r.at("hold_s")) + " s"})
		.row({"made", text_of(r.at("announcements")) + " announcements, " + text_of(r.at("withdrawals")) +
				      " withdrawals, " + text_of(r.at("refusals")) + " refused (a guard, or over max)"});
	if (r.contains("mode"))
		block.row({"mode", r.at("mode").get<std::string>() == "blackhole"
					   ? "blackhole (a source is announced as a blackhole route, RFC 5635)"
					   : "flowspec (a source is announced as FlowSpec source-match rules)"});
	if (r.contains("auto")) {
		const json &a = r.at("auto");
		uint64_t bps = a.at("bps").get<uint64_t>(), pps = a.at("pps").get<uint64_t>();
		if (bps || pps) {
			std::string over;
			if (bps)
				over = text_of(a.at("bps")) + " bit/s";
			if (pps)
				over += (over.empty() ? "" : " or ") + text_of(a.at("pps")) + " pps";
			block.row({"automatic", "over " + over + " for " + text_of(a.at("after_s")) +
							" s while shedding: the flood's signature and the " + text_of(a.at("top")) +
							" heaviest dropped sources proved, then abused, " + a.at("action").get<std::string>() +
							(r.value("last_resort", false)
								 ? "; LAST RESORT on: own addresses blackholed, the signature even over protected sources"
								 : "")});
			for (const auto &i : a.at("interfaces"))
				block.row({"  " + i.at("iface").get<std::string>(),
					   i.at("firing").get<bool>() ? "FIRING: " + i.at("why").get<std::string>() +
										(i.at("sources").is_null() ? "" : "; " + i.at("sources").get<std::string>())
								      : "not firing"});
		} else {
			block.row({"automatic", "off (--upstream-bps, --upstream-pps)"});
		}
	}
	if (r.contains("blackholed") && !r.at("blackholed").empty()) {
		std::string list;
		for (const auto &b : r.at("blackholed"))
			list += (list.empty() ? "" : ", ") + b.get<std::string>();
		block.row({"OFFLINE", list + ": blackholed upstream (--upstream-blackhole)"});
	}
	block.print(ctx.out, 2);
	const json &rules = r.at("rules");
	if (rules.empty()) {
		ctx.out << "  nothing announced\n";
		return;
	}
	Table table({"RULE", "IFACE", "STATE", "SINCE", "WHY"}, {A::left, A::left, A::left, A::left, A::left});
	for (const auto &x : rules)
		table.row({x.at("rule").get<std::string>(), x.at("iface").get<std::string>(), x.at("state").get<std::string>(),
			   text_of(x.at("since")), x.at("reason").get<std::string>()});
	table.print(ctx.out, 2);
}

} // namespace

Status do_upstream(Context &ctx, const Invocation &inv)
{
	auto iface = inv.optional_iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	json request = request_for(sluice::Command::upstream);
	if (*iface)
		request["iface"] = **iface;
	auto reply = Client(ctx.socket).call(request);
	if (!reply)
		return std::unexpected(reply.error());
	if (ctx.json)
		print_json(ctx, *reply);
	if (!reply->at("enabled").get<bool>())
		return sluice::refused("sluiced runs without --upstream: nothing is announced upstream");
	if (!ctx.json)
		print_upstream(ctx, *reply);
	return {};
}

} // namespace sluicectl
