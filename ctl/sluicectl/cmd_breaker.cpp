// cmd_breaker.cpp - `breaker trip|recover|close IFACE`: operator words for
// the three states. The daemon's Breaker decides whether the move is valid.
#include "sluicectl/client.h"
#include "sluicectl/command.h"

#include <string_view>
#include <utility>

namespace sluicectl {

namespace {
constexpr std::pair<std::string_view, const char *> kActions[] = {
	{"trip", "shedding"},
	{"recover", "recovering"},
	{"close", "serving"},
};
} // namespace

Status do_breaker(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;
	auto action = inv.arg(0, "ACTION (trip, recover or close)");
	if (!action)
		return std::unexpected(action.error());
	const char *target = nullptr;
	for (const auto &[name, state] : kActions)
		if (*action == name)
			target = state;
	if (!target)
		return std::unexpected(inv.usage_error("unknown breaker action '" + *action + "' (trip, recover or close)"));
	auto iface = inv.iface(1);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(2); !ok)
		return ok;

	auto reply = Client(ctx.socket).call(request_for(sluice::Command::breaker, {{"iface", *iface}, {"to", target}}));
	if (!reply)
		return std::unexpected(reply.error());
	ctx.out << reply->at("iface").get<std::string>() << ": breaker " << reply->at("from").get<std::string>()
		<< " -> " << reply->at("to").get<std::string>() << '\n';
	return {};
}

} // namespace sluicectl
