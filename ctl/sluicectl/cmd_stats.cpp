// cmd_stats.cpp - `stats [IFACE] [--watch] [--interval SEC]`: counters and
// the daemon's per-second rates, once or refreshed in place; under a policy,
// each named class's counters per outcome too, read from the pins (the
// program's class_counters map).
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/pins.h"
#include "sluicectl/table.h"

#include "ipc/encode.h"

namespace sluicectl {

void stats_options(po::options_description &options)
{
	options.add_options()
		("watch", po::bool_switch(), "refresh in place until interrupted (with -j: a JSON line each time)")
		("interval", po::value<std::string>()->value_name("SEC"), "seconds between refreshes (default 1)");
}

namespace {

// Each interface entry gets "classes": [{id, name, counters}] (empty without
// a policy). Pins that cannot be read (not root, another --pin-dir) leave
// "classes" null and say why in "classes_error": the daemon's counters are
// still worth showing.
void add_class_counters(Context &ctx, json &reply)
{
	for (auto &entry : reply.at("interfaces")) {
		auto rows = [&]() -> Result<std::vector<sluice::ClassCounters>> {
			auto dp = open_pins(ctx, entry.at("iface").get<std::string>());
			if (!dp)
				return std::unexpected(dp.error());
			return read_named_class_counters(*dp);
		}();
		if (!rows) {
			entry["classes"] = nullptr;
			entry["classes_error"] = "per-class counters not read: " + rows.error().describe();
			continue;
		}
		json classes = json::array();
		for (const auto &c : *rows)
			classes.push_back(sluice::encode(c));
		entry["classes"] = classes;
	}
}

// CLASS OUTCOME PACKETS BYTES: the outcomes a class counted frames under,
// in the data plane's order; a class that counted none, one row of zeros.
void print_class_counters(std::ostream &out, const json &entry, size_t indent)
{
	if (entry.value("classes", json()).is_null()) {
		if (entry.contains("classes_error"))
			out << std::string(indent, ' ') << text_of(entry.at("classes_error")) << '\n';
		return;
	}
	const json &classes = entry.at("classes");
	if (classes.empty())
		return;
	using A = Table::Align;
	Table table({"CLASS", "OUTCOME", "PACKETS", "BYTES"}, {A::left, A::left, A::right, A::right});
	for (const auto &c : classes) {
		const json &counters = c.at("counters");
		std::string name = c.at("name").get<std::string>();
		bool any = false;
		for (uint32_t k = 0; k < SLUICE_OUTCOMES; k++) {
			const char *outcome = sluice::outcome_name(k);
			if (!counters.contains(outcome) || counters.at(outcome).at("packets").get<uint64_t>() == 0)
				continue;
			const json &n = counters.at(outcome);
			table.row({name, outcome, text_of(n.at("packets")), text_of(n.at("bytes"))});
			any = true;
		}
		if (!any)
			table.row({name, "-", "0", "0"});
	}
	out << '\n';
	table.print(out, indent);
}

} // namespace

Status do_stats(Context &ctx, const Invocation &inv)
{
	if (auto ok = inv.at_most(1); !ok)
		return ok;
	auto iface = inv.optional_iface(0);
	if (!iface)
		return std::unexpected(iface.error());
	json request = request_for(sluice::Command::stats);
	if (*iface)
		request["iface"] = **iface;
	return show_replies(
		ctx, inv, request,
		[](Context &c, const json &reply) {
			for (const auto &entry : reply.at("interfaces")) {
				c.out << entry.at("iface").get<std::string>() << '\n';
				print_counters(c.out, entry, 2);
				print_class_counters(c.out, entry, 2);
			}
		},
		add_class_counters);
}

} // namespace sluicectl
