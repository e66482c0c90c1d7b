// cmd_set.cpp - `set IFACE [--rate N] [--burst N]`. Only the syntax is checked
// here; the limits (1 <= rate <= ..., 1 <= burst <= ...) are the daemon's
// invariants, refused there with the value named.
#include "sluicectl/client.h"
#include "sluicectl/command.h"

namespace sluicectl {

void set_options(po::options_description &options)
{
	options.add_options()
		("rate", po::value<std::string>()->value_name("N"), "tokens per second each source earns")
		("burst", po::value<std::string>()->value_name("N"), "the most tokens a source can hold");
}

Status do_set(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	json request = request_for(sluice::Command::set, {{"iface", *iface}});
	for (const char *name : {"rate", "burst"}) {
		auto text = inv.option(name);
		if (!text)
			continue;
		auto value = parse_count(*text, std::string("--") + name);
		if (!value)
			return std::unexpected(value.error());
		request[name] = *value;
	}
	if (request.size() == 2)
		return std::unexpected(inv.usage_error("nothing to set: give --rate N, --burst N or both"));

	auto reply = Client(ctx.socket).call(request);
	if (!reply)
		return std::unexpected(reply.error());
	ctx.out << reply->at("iface").get<std::string>() << ": rate " << reply->at("rate_pps") << " pps, burst "
		<< reply->at("burst") << '\n';
	return {};
}

} // namespace sluicectl
