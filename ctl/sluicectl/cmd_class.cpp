// cmd_class.cpp - `class list IFACE`: the policy classes in force, read from
// the pins (the classes map of the policy set config.policy_flags names), so
// that it shows what the program enforces, daemon or not.
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/pins.h"
#include "sluicectl/table.h"

#include "ipc/encode.h"

namespace sluicectl {

namespace {

// "10000 / 20000", or "-" for an exempt or deny class (no budget).
std::string pair_text(const json &a, const json &b)
{
	if (a.is_null())
		return "-";
	return text_of(a) + " / " + text_of(b);
}

std::string standing_text(const json &s)
{
	if (s.is_null())
		return "-";
	return text_of(s.at("rate_pps")) + " / " + text_of(s.at("burst")) + " (" + text_of(s.at("from")) + ")";
}

void print_classes(std::ostream &out, const json &list)
{
	const json &classes = list.at("classes");
	out << list.at("iface").get<std::string>() << ": policy set " << text_of(list.at("set")) << ", "
	    << classes.size() << (classes.size() == 1 ? " class" : " classes") << '\n';
	using A = Table::Align;
	Table table({"ID", "NAME", "ACTION", "RATE / BURST", "BYTE RATE / BURST", "PREFIXES", "STANDING RATE / BURST"},
		    {A::right, A::left, A::left, A::right, A::right, A::left, A::right});
	for (const auto &c : classes) {
		std::string prefixes =
			c.at("v4_prefix").is_null() ? "-" : "/" + text_of(c.at("v4_prefix")) + " /" + text_of(c.at("v6_prefix"));
		table.row({text_of(c.at("id")), text_of(c.at("name")), text_of(c.at("action")),
			   pair_text(c.at("rate_pps"), c.at("burst")), pair_text(c.at("byte_rate"), c.at("byte_burst")),
			   prefixes, standing_text(c.at("standing"))});
	}
	table.print(out, 2);
}

} // namespace

Status do_class(Context &ctx, const Invocation &inv)
{
	auto action = inv.arg(0, "ACTION (list)");
	if (!action)
		return std::unexpected(action.error());
	if (*action != "list")
		return std::unexpected(inv.usage_error("unknown class action '" + *action + "' (list)"));
	auto iface = inv.iface(1);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(2); !ok)
		return ok;
	auto dp = open_pins(ctx, *iface);
	if (!dp)
		return std::unexpected(dp.error());
	auto list = read_class_list(*dp, *iface);
	if (!list)
		return std::unexpected(list.error());
	// Encoded as any reply is, so text and -j read alike.
	json body = sluice::encode(*list);
	if (ctx.json)
		print_json(ctx, body);
	else
		print_classes(ctx.out, body);
	return {};
}

} // namespace sluicectl
