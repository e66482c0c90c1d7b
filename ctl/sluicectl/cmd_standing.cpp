// cmd_standing.cpp - `standing IFACE [ADDR]`: the standing table's summary
// (occupancy, share, valve, budgets, the last revocations) or one address's
// entry. With ADDR the exit code answers the question, as grep's does: 0 it
// has standing, 1 it has none (the reply is printed either way), 2 a bad
// address or interface. `standing revoke IFACE ADDR` takes an address's
// standing and bars it for its penalty.
#include "sluicectl/client.h"
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/table.h"

namespace sluicectl {

namespace {

void print_summary(std::ostream &out, const json &reply)
{
	out << reply.at("iface").get<std::string>() << '\n';
	Table block;
	standing_rows(block, reply.at("standing"));
	block.print(out, 2);
	const json &recent = reply.at("standing").at("share").at("recent");
	if (recent.empty())
		return;
	out << "  last revocations:\n";
	Table list;
	list.row({"at", "source", "reason", "by", "until", "why"});
	for (const json &e : recent)
		list.row({text_of(e.at("at")), text_of(e.at("source")), text_of(e.at("reason")), text_of(e.at("by")),
			  text_of(e.at("until")), text_of(e.at("why"))});
	list.print(out, 4);
}

Status do_revoke(Context &ctx, const Invocation &inv)
{
	auto iface = inv.iface(1);
	if (!iface)
		return std::unexpected(iface.error());
	auto text = inv.arg(2, "ADDR");
	if (!text)
		return std::unexpected(text.error());
	if (auto ok = inv.at_most(3); !ok)
		return ok;
	auto addr = sluice::parse_address(*text);
	if (!addr)
		return std::unexpected(addr.error());
	auto reply = Client(ctx.socket)
			     .call(request_for(sluice::Command::standing_revoke, {{"iface", *iface}, {"addr", addr->str()}}));
	if (!reply)
		return std::unexpected(reply.error());
	if (ctx.json) {
		print_json(ctx, *reply);
		return {};
	}
	const json &r = reply->at("revoked");
	ctx.out << *iface << ": " << text_of(r.at("source")) << " "
		<< (r.at("reason").is_null() ? "had no standing; " : "lost its standing (" + text_of(r.at("reason")) + "); ")
		<< "barred until " << text_of(r.at("until")) << " (revocation " << text_of(r.at("revocations")) << ")\n";
	return {};
}

void print_entry(std::ostream &out, const json &reply)
{
	bool live = reply.at("has_standing").get<bool>();
	out << reply.at("iface").get<std::string>() << ": " << reply.at("addr").get<std::string>()
	    << (live ? " has standing" : " has no standing") << " (looked up as "
	    << reply.at("source").get<std::string>() << ")\n";
	// A lapsed entry still says why and since when it had standing.
	if (reply.at("reason").is_null())
		return;
	Table block;
	block.row({"reason", text_of(reply.at("reason")) +
				     (reply.contains("udp_port") && !reply.at("udp_port").is_null()
					      ? " (for UDP from port " + text_of(reply.at("udp_port")) + " alone)"
					      : "")})
		.row({"since", text_of(reply.at("since"))})
		.row({"last seen", text_of(reply.at("last_seen")) + (live ? "" : " (lapsed)")});
	if (!reply.at("penalty").is_null())
		block.row({"barred", "until " + text_of(reply.at("penalty").at("until")) + " (revocation " +
					     text_of(reply.at("penalty").at("revocations")) + ")"});
	if (live)
		block.row({"tokens", text_of(reply.at("tokens")) + " of " +
					     text_of(reply.at("standing").at("burst")) + " (its standing bucket)"});
	block.print(out, 2);
}

} // namespace

Status do_standing(Context &ctx, const Invocation &inv)
{
	if (!inv.args.empty() && inv.args[0] == "revoke" && inv.args.size() > 1)
		return do_revoke(ctx, inv);
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(2); !ok)
		return ok;
	json request = request_for(sluice::Command::standing, {{"iface", *iface}});
	std::optional<sluice::Address> addr;
	if (inv.args.size() > 1) {
		auto a = sluice::parse_address(inv.args[1]);
		if (!a)
			return std::unexpected(a.error());
		addr = *a;
		request["addr"] = addr->str();
	}
	auto reply = Client(ctx.socket).call(request);
	if (!reply)
		return std::unexpected(reply.error());
	if (ctx.json)
		print_json(ctx, *reply);
	else if (addr)
		print_entry(ctx.out, *reply);
	else
		print_summary(ctx.out, *reply);
	if (addr && !reply->at("has_standing").get<bool>())
		return sluice::refused(addr->str() + " has no standing on " + *iface);
	return {};
}

} // namespace sluicectl
