// cmd_stats.cpp - `stats [IFACE] [--watch] [--interval SEC]`: counters and
// the daemon's per-second rates, once or refreshed in place.
#include "sluicectl/command.h"
#include "sluicectl/output.h"

namespace sluicectl {

void stats_options(po::options_description &options)
{
	options.add_options()
		("watch", po::bool_switch(), "refresh in place until interrupted (with -j: a JSON line each time)")
		("interval", po::value<std::string>()->value_name("SEC"), "seconds between refreshes (default 1)");
}

Status do_stats(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	json request = request_for(sluice::Command::stats);
	if (!inv.args.empty()) {
		auto iface = inv.iface(0);
		if (!iface)
			return std::unexpected(iface.error());
		request["iface"] = *iface;
	}
	return show_replies(ctx, inv, request, [](Context &c, const json &reply) {
		for (const auto &entry : reply.at("interfaces")) {
			c.out << entry.at("iface").get<std::string>() << '\n';
			print_counters(c.out, entry, 2);
		}
	});
}

} // namespace sluicectl
