// cmd_bucket.cpp - `bucket IFACE ADDR [--set N]`: an address's two slots.
// --set takes any integer, negative too: the 0 <= tokens <= burst invariant
// is the daemon's to enforce, and the seed's tokens.set("meta", -1) must
// reach it and be refused there (exit 1), not be stopped here as a typo.
#include "sluicectl/client.h"
#include "sluicectl/command.h"
#include "sluicectl/output.h"

namespace sluicectl {

void bucket_options(po::options_description &options)
{
	options.add_options()("set", po::value<std::string>()->value_name("N"),
			      "set both slots to N tokens (refused unless 0 <= N <= burst)");
}

Status do_bucket(Context &ctx, const Invocation &inv)
{
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	auto text = inv.arg(1, "ADDR");
	if (!text)
		return std::unexpected(text.error());
	auto addr = sluice::parse_address(*text);
	if (!addr)
		return std::unexpected(addr.error());
	if (auto ok = inv.at_most(2); !ok)
		return ok;

	json request = request_for(sluice::Command::bucket, {{"iface", *iface}, {"addr", addr->str()}});
	if (auto set = inv.option("set")) {
		if (auto ok = inv.no_json(ctx); !ok)
			return ok;
		auto tokens = parse_integer(*set, "--set");
		if (!tokens)
			return std::unexpected(tokens.error());
		request["set"] = *tokens;
	}
	auto reply = Client(ctx.socket).call(request);
	if (!reply)
		return std::unexpected(reply.error());
	print_bucket(ctx, *reply);
	return {};
}

} // namespace sluicectl
