// cmd_rekey.cpp - `rekey IFACE`: a new hash key now. The daemon loads a new
// program, carries the standing table to the new key's places and puts the
// program on the link; this prints what it carried and what it lost.
#include "sluicectl/command.h"
#include "sluicectl/output.h"

namespace sluicectl {

namespace {

void print_rekey(Context &ctx, const json &r)
{
	ctx.out << r.at("iface").get<std::string>() << ": new hash key, program " << r.at("prog_id_before").dump()
		<< " -> " << r.at("prog_id_after").dump() << " in " << text_of(r.at("took_ms")) << " ms\n";
	ctx.out << "  buckets: all anew, full (as a source never seen gets one)\n";
	ctx.out << "  standing carried: " << r.at("standing_carried").dump() << " entries ("
		<< r.at("standing_carried_late").dump() << " granted during the change), "
		<< r.at("penalties_carried").dump() << " penalties\n";
	if (r.at("standing_lost").get<uint64_t>() || r.at("penalties_lost").get<uint64_t>())
		ctx.out << "  lost (their set under the new key was full): " << r.at("standing_lost").dump()
			<< " entries, " << r.at("penalties_lost").dump() << " penalties\n";
	const json &next = r.at("next_rekey_in_s");
	ctx.out << "  next scheduled: " << (next.is_null() ? std::string("none (--rekey-every 0)")
						     : "in " + text_of(next) + " s")
		<< "\n";
}

} // namespace

Status do_rekey(Context &ctx, const Invocation &inv)
{
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	return show_replies(ctx, inv, request_for(sluice::Command::rekey, {{"iface", *iface}}), print_rekey);
}

} // namespace sluicectl
