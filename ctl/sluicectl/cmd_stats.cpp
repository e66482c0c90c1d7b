// cmd_stats.cpp - `stats [IFACE] [--watch] [--interval SEC]`: counters and
// the daemon's per-second rates, once or refreshed in place.
#include "client.h"
#include "command.h"
#include "output.h"

#include <chrono>
#include <thread>

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
	json request{{"cmd", "stats"}};
	if (!inv.args.empty()) {
		auto iface = inv.iface(0);
		if (!iface)
			return std::unexpected(iface.error());
		request["iface"] = *iface;
	}
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
		if (ctx.json) {
			print_json(ctx, *reply);
		} else {
			if (watch)
				ctx.out << "\033[H\033[2J" << "every " << fixed(interval, 1) << " s; Ctrl-C to stop\n";
			for (const auto &entry : reply->at("interfaces")) {
				ctx.out << entry.at("iface").get<std::string>() << '\n';
				print_counters(ctx.out, entry, 2);
			}
		}
		if (!watch)
			return {};
		ctx.out.flush();
		std::this_thread::sleep_for(std::chrono::duration<double>(interval));
	}
}

} // namespace sluicectl
