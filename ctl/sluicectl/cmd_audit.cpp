// cmd_audit.cpp - `audit IFACE`: the daemon sweeps the whole table now and
// reports what it found. The report's fields are printed as they come, so a
// daemon that reports more needs no change here.
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/table.h"

namespace sluicectl {

namespace {

void print_audit(Context &ctx, const json &reply)
{
	ctx.out << reply.at("iface").get<std::string>() << ": audit\n";
	Table report;
	for (const auto &[key, value] : reply.at("audit").items())
		report.row({key, value.is_structured() ? value.dump() : text_of(value)});
	report.print(ctx.out, 2);
}

} // namespace

Status do_audit(Context &ctx, const Invocation &inv)
{
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	return show_replies(ctx, inv, request_for(sluice::Command::audit, {{"iface", *iface}}), print_audit);
}

} // namespace sluicectl
