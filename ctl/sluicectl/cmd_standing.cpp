// cmd_standing.cpp - `standing IFACE [ADDR]`: the standing table's summary
// (occupancy, valve, budgets) or one address's entry. With ADDR the exit
// code answers the question, as grep's does: 0 it has standing, 1 it has
// none (the reply is printed either way), 2 a bad address or interface.
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
	block.row({"reason", text_of(reply.at("reason"))})
		.row({"since", text_of(reply.at("since"))})
		.row({"last seen", text_of(reply.at("last_seen")) + (live ? "" : " (lapsed)")});
	if (live)
		block.row({"tokens", text_of(reply.at("tokens")) + " of " +
					     text_of(reply.at("standing").at("burst")) + " (its standing bucket)"});
	block.print(out, 2);
}

} // namespace

Status do_standing(Context &ctx, const Invocation &inv)
{
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
