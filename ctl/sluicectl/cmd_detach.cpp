// cmd_detach.cpp - `detach IFACE`: the only way enforcement stops; the daemon
// removes the link and the pins.
#include "sluicectl/client.h"
#include "sluicectl/command.h"

namespace sluicectl {

Status do_detach(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	auto reply = Client(ctx.socket).call(request_for(sluice::Command::detach, {{"iface", *iface}}));
	if (!reply)
		return std::unexpected(reply.error());
	ctx.out << reply->at("iface").get<std::string>() << ": detached\n";
	return {};
}

} // namespace sluicectl
