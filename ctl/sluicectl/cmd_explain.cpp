// cmd_explain.cpp - `explain IFACE SRC [PROTO[/PORT]]`: the class sluiced's
// policy in force gives a frame from SRC, why (the rule, and every matching
// rule that lost and on which step), the class the compiled tables give it
// (what the data plane does: the two must agree), and its bucket's slots.
// Bad input exits 2, an interface sluiced does not manage 1.
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/table.h"

namespace sluicectl {

namespace {

void print_explain(Context &ctx, const json &r)
{
	ctx.out << r.at("text").get<std::string>();
	if (!r.at("text").get<std::string>().ends_with('\n'))
		ctx.out << '\n';
	Table t;
	t.row({"data plane class", r.at("table_class_name").get<std::string>() + " (id " + text_of(r.at("table_class")) + ")"})
		.row({"bucket", text_of(r.at("bucket")) + ", slots " + text_of(r.at("slots")[0]) + " and " +
					text_of(r.at("slots")[1]) + ", tokens " + text_of(r.at("tokens")[0]) + " and " +
					text_of(r.at("tokens")[1])})
		.row({"standing", text_of(r.at("has_standing"))});
	if (r.contains("cookie"))
		t.row({"SYN cookie", r.at("cookie").at("why").get<std::string>()});
	t.print(ctx.out, 0);
}

} // namespace

Status do_explain(Context &ctx, const Invocation &inv)
{
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	auto src = inv.arg(1, "SRC");
	if (!src)
		return std::unexpected(src.error());
	if (auto ok = inv.at_most(3); !ok)
		return ok;
	auto addr = sluice::parse_address(*src);
	if (!addr)
		return std::unexpected(addr.error());
	json request = request_for(sluice::Command::explain, {{"iface", *iface}, {"src", addr->str()}});
	if (inv.args.size() > 2)
		request["proto"] = inv.args[2];
	return show_replies(ctx, inv, request, print_explain);
}

} // namespace sluicectl
