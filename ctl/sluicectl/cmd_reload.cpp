// cmd_reload.cpp - `reload [IFACE]`: sluiced reads its policy file again and
// applies it, all or nothing (as SIGHUP does). A bad file is refused with its
// file:line:col and nothing changes; the refusal is the exit code (2 for a
// file's content, 1 for a refusal of the maps or the daemon).
#include "sluicectl/command.h"
#include "sluicectl/output.h"

namespace sluicectl {

namespace {

void print_applied(Context &ctx, const json &reply)
{
	for (const auto &i : reply.at("interfaces"))
		ctx.out << i.at("iface").get<std::string>() << ": policy " << i.at("file").get<std::string>()
			<< " applied (generation " << text_of(i.at("generation")) << "): " << text_of(i.at("classes"))
			<< " classes, " << text_of(i.at("prefixes")) << " class prefixes, " << text_of(i.at("list_entries"))
			<< " list entries (" << text_of(i.at("kept_runtime_entries")) << " added at run time, kept) in "
			<< fixed(i.at("apply_ms").get<double>(), 1) << " ms\n";
}

} // namespace

Status do_reload(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	auto iface = inv.optional_iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	json request = request_for(sluice::Command::reload);
	if (*iface)
		request["iface"] = **iface;
	return show_replies(ctx, inv, request, print_applied);
}

} // namespace sluicectl
