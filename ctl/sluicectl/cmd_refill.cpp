// cmd_refill.cpp - `refill IFACE ADDR N`: add N tokens (N < 0 takes them) to
// an address's two slots; the daemon refuses a result outside [0, burst].
#include "sluicectl/client.h"
#include "sluicectl/command.h"
#include "sluicectl/output.h"

namespace sluicectl {

Status do_refill(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	auto text = inv.arg(1, "ADDR");
	if (!text)
		return std::unexpected(text.error());
	auto addr = sluice::parse_address(*text);
	if (!addr)
		return std::unexpected(addr.error());
	auto n_text = inv.arg(2, "N");
	if (!n_text)
		return std::unexpected(n_text.error());
	auto n = parse_integer(*n_text, "N");
	if (!n)
		return std::unexpected(n.error());
	if (auto ok = inv.at_most(3); !ok)
		return ok;

	auto reply = Client(ctx.socket).call(
		request_for(sluice::Command::refill, {{"iface", *iface}, {"addr", addr->str()}, {"n", *n}}));
	if (!reply)
		return std::unexpected(reply.error());
	print_bucket(ctx, *reply);
	return {};
}

} // namespace sluicectl
