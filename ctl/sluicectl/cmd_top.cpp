// cmd_top.cpp - `top IFACE [-n N] [--watch] [--interval SEC]`: who is being
// dropped the most. The data plane samples 1 in sample_every dropped frames;
// sluiced keeps a bounded Space-Saving summary of their source prefixes per
// window (protocol.h, "top"); this prints its heaviest entries with their
// estimated dropped pps and their bucket's tokens now, once or refreshed.
#include "base/defaults.h"
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/table.h"

namespace sluicectl {

void top_options(po::options_description &options)
{
	options.add_options()
		("count,n", po::value<std::string>()->value_name("N"), ("how many sources (default " + std::to_string(sluice::defaults::kTopCount) + ")").c_str())
		("watch", po::bool_switch(), "refresh in place until interrupted (with -j: a JSON line each time)")
		("interval", po::value<std::string>()->value_name("SEC"), "seconds between refreshes (default 1)");
}

namespace {

void print_top(Context &ctx, const json &reply)
{
	using A = Table::Align;
	ctx.out << reply.at("iface").get<std::string>() << ": 1 in " << text_of(reply.at("sample_every"))
		<< " drops sampled; " << text_of(reply.at("samples")) << " samples in "
		<< fixed(reply.at("window_s").get<double>(), 1) << " s"
		<< (reply.at("window_complete").get<bool>() ? "" : " (window still filling)") << "; tracking "
		<< text_of(reply.at("summary_size")) << " of " << text_of(reply.at("capacity")) << " sources";
	if (reply.contains("dropped_pps"))
		ctx.out << "; counters: " << text_of(reply.at("dropped_pps")) << " dropped pps";
	ctx.out << '\n';
	const json &sources = reply.at("sources");
	if (sources.empty()) {
		ctx.out << "  no sampled drops\n";
		return;
	}
	Table table({"SOURCE", "EST DROP PPS", "SAMPLES", "ERROR", "TOKENS"},
		    {A::left, A::right, A::right, A::right, A::right});
	for (const auto &s : sources)
		table.row({text_of(s.at("source")), text_of(s.at("est_dropped_pps")), text_of(s.at("samples")),
			   text_of(s.at("error")), text_of(s.at("tokens"))});
	table.print(ctx.out, 2);
}

} // namespace

Status do_top(Context &ctx, const Invocation &inv)
{
	auto iface = inv.iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	json request = request_for(sluice::Command::top, {{"iface", *iface}});
	if (auto text = inv.option("count")) {
		auto n = parse_count(*text, "-n");
		if (!n)
			return std::unexpected(n.error());
		if (*n < 1 || *n > (1 << 20))
			return std::unexpected(inv.usage_error("-n must be 1..1048576"));
		request["n"] = *n;
	}
	return show_replies(ctx, inv, request, print_top);
}

} // namespace sluicectl
