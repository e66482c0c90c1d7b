// cmd_attach.cpp - `attach IFACE [--mode native|skb|auto]`: the daemon loads
// the data plane, attaches it with a bpf_link and pins it.
#include "sluicectl/client.h"
#include "sluicectl/command.h"
#include "bpf/dataplane.h"
#include "sluicectl/output.h"

#include <net/if.h>

namespace sluicectl {

void attach_options(po::options_description &options)
{
	options.add_options()("mode", po::value<std::string>()->value_name("MODE"),
			      "native (driver XDP), skb (generic XDP) or auto (native, else skb); "
			      "the daemon's default when not given");
}

Status do_attach(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	json request = request_for(sluice::Command::attach, {{"iface", *iface}});
	if (auto mode = inv.option("mode")) {
		if (auto parsed = sluice::parse_attach_mode(*mode); !parsed)
			return std::unexpected(inv.usage_error(parsed.error().message));
		request["mode"] = *mode;
	}
	// The daemon runs on this host: an interface missing here is a typo.
	if (if_nametoindex(iface->c_str()) == 0)
		return sluice::invalid("unknown interface '" + *iface + "' ('ip link' lists them)");

	auto reply = Client(ctx.socket).call(request);
	if (!reply)
		return std::unexpected(reply.error());
	ctx.out << reply->at("iface").get<std::string>() << ": attached in "
		<< text_of(reply->value("mode", json())) << " mode\n";
	return {};
}

} // namespace sluicectl
