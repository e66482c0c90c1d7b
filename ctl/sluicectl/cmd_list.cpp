// cmd_list.cpp - `allow|deny add|del IFACE CIDR...`, `... --from FILE` and
// `allow|deny list IFACE`. Every prefix is checked here first, so a typo in
// line 900 of a file sends nothing rather than half a list.
#include "client.h"
#include "command.h"
#include "output.h"
#include "table.h"

#include <fstream>

namespace sluicectl {

void list_options(po::options_description &options)
{
	options.add_options()("from", po::value<std::string>()->value_name("FILE"),
			      "add or del the CIDRs in FILE: one a line, '#' comments and blank lines ignored");
}

namespace {

// The file's CIDRs in canonical form, or the first bad line as FILE:LINE.
Result<std::vector<std::string>> read_cidr_file(const std::string &path)
{
	std::ifstream in(path);
	if (!in)
		return sluice::fail(sluice::ErrorKind::invalid, "cannot read --from " + path, errno);
	std::vector<std::string> cidrs;
	std::string line;
	for (size_t number = 1; std::getline(in, line); number++) {
		std::string text = line.substr(0, line.find('#'));
		text.erase(0, text.find_first_not_of(" \t\r"));
		text.erase(text.find_last_not_of(" \t\r") + 1);
		if (text.empty())
			continue;
		auto cidr = sluice::parse_cidr(text);
		if (!cidr)
			return sluice::invalid("nothing was sent: " + path + ":" + std::to_string(number) + ": " +
					       cidr.error().message);
		cidrs.push_back(cidr->str());
	}
	if (in.bad())
		return sluice::fail(sluice::ErrorKind::invalid, "cannot read --from " + path, errno);
	return cidrs;
}

Status show(Context &ctx, const Invocation &inv, const std::string &iface)
{
	if (inv.option("from"))
		return std::unexpected(inv.usage_error("--from is for add and del"));
	if (auto ok = inv.at_most(2); !ok)
		return ok;
	auto reply = Client(ctx.socket).call({{"cmd", "list_show"}, {"iface", iface}, {"list", inv.command}});
	if (!reply)
		return std::unexpected(reply.error());
	if (ctx.json) {
		print_json(ctx, *reply);
		return {};
	}
	const json &cidrs = reply->at("cidrs");
	ctx.out << iface << ": " << inv.command << " list, " << cidrs.size()
		<< (cidrs.size() == 1 ? " prefix" : " prefixes") << '\n';
	Table table;
	for (const auto &c : cidrs)
		table.row({c.get<std::string>()});
	table.print(ctx.out, 2);
	return {};
}

} // namespace

Status do_list(Context &ctx, const Invocation &inv)
{
	auto action = inv.arg(0, "ACTION (add, del or list)");
	if (!action)
		return std::unexpected(action.error());
	if (*action != "add" && *action != "del" && *action != "list")
		return std::unexpected(inv.usage_error("unknown " + inv.command + " action '" + *action +
						       "' (add, del or list)"));
	auto iface = inv.iface(1);
	if (!iface)
		return std::unexpected(iface.error());
	if (*action == "list")
		return show(ctx, inv, *iface);
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;

	std::vector<std::string> cidrs;
	for (size_t i = 2; i < inv.args.size(); i++) {
		auto cidr = sluice::parse_cidr(inv.args[i]);
		if (!cidr)
			return std::unexpected(cidr.error());
		cidrs.push_back(cidr->str());
	}
	if (auto file = inv.option("from")) {
		auto from_file = read_cidr_file(*file);
		if (!from_file)
			return std::unexpected(from_file.error());
		if (from_file->empty())
			return sluice::invalid("--from " + *file + " holds no CIDRs");
		cidrs.insert(cidrs.end(), from_file->begin(), from_file->end());
	}
	if (cidrs.empty())
		return std::unexpected(inv.usage_error("missing CIDR (or --from FILE)"));

	bool add = *action == "add";
	auto reply = Client(ctx.socket).call({{"cmd", add ? "list_add" : "list_del"},
					      {"iface", *iface},
					      {"list", inv.command},
					      {"cidrs", cidrs}});
	if (!reply)
		return std::unexpected(reply.error());
	ctx.out << *iface << ": " << (add ? "added " : "removed ") << cidrs.size()
		<< (cidrs.size() == 1 ? " prefix" : " prefixes") << (add ? " to" : " from") << " the "
		<< inv.command << " list\n";
	return {};
}

} // namespace sluicectl
