// cmd_list.cpp - `allow|deny add|del IFACE CIDR...`, `... --from FILE`,
// `allow|deny list IFACE` and `allow|deny save IFACE FILE`. Every prefix is
// checked here first, so a typo in line 900 of a file sends nothing rather
// than half a list.
#include "sluicectl/client.h"
#include "sluicectl/command.h"
#include "sluicectl/output.h"
#include "sluicectl/pins.h"
#include "sluicectl/table.h"

#include "base/clock.h"
#include "bpf/status.h"
#include "policyfile/policy_file.h"

#include <fcntl.h>
#include <fstream>
#include <sstream>

namespace sluicectl {

void list_options(po::options_description &options)
{
	options.add_options()("from", po::value<std::string>()->value_name("FILE"),
			      "add or del the CIDRs in FILE: one a line, '#' comments and blank lines ignored")(
		"upstream", po::bool_switch(),
		"deny add: also ask the network upstream to drop these sources (FlowSpec through gobgpd; sluiced --upstream)");
}

namespace {

// The file checked here first (a typo in line 900 sends nothing), then sent
// to the daemon as an open descriptor: a list of any length in one request,
// read with the caller's own access to the file.
Result<sluice::UniqueFd> open_cidr_file(const std::string &path, size_t &count)
{
	std::ifstream in(path);
	if (!in)
		return sluice::fail(sluice::ErrorKind::invalid, "cannot read --from " + path, errno);
	std::stringstream text;
	text << in.rdbuf();
	auto cidrs = sluice::parse_cidr_lines(text.str(), path);
	if (!cidrs)
		return sluice::invalid("nothing was sent: " + cidrs.error().message);
	count = cidrs->size();
	sluice::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		return sluice::fail(sluice::ErrorKind::invalid, "cannot open --from " + path, errno);
	return fd;
}

void print_list(Context &ctx, const json &reply)
{
	const json &cidrs = reply.at("cidrs");
	ctx.out << reply.at("iface").get<std::string>() << ": " << reply.at("list").get<std::string>() << " list, "
		<< cidrs.size() << (cidrs.size() == 1 ? " prefix" : " prefixes") << '\n';
	Table table;
	for (const auto &c : cidrs)
		table.row({c.get<std::string>()});
	table.print(ctx.out, 2);
}

Status show(Context &ctx, const Invocation &inv, const std::string &iface)
{
	if (inv.option("from") || inv.flag("upstream"))
		return std::unexpected(inv.usage_error("--from and --upstream are for add and del"));
	if (auto ok = inv.at_most(2); !ok)
		return ok;
	return show_replies(ctx, inv, request_for(sluice::Command::list_show, {{"iface", iface}, {"list", inv.command}}),
			    print_list);
}

// The running list (the policy set in force, both families), as the pins
// hold it, written to FILE as a netset atomically (policyfile's
// write_netset): what `add` put there at run time survives in a file the
// policy can name. From the pins, so it works with the daemon down too.
Status save(Context &ctx, const Invocation &inv, const std::string &iface)
{
	if (inv.option("from"))
		return std::unexpected(inv.usage_error("--from is for add and del"));
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;
	auto path = inv.arg(2, "FILE");
	if (!path)
		return std::unexpected(path.error());
	if (auto ok = inv.at_most(3); !ok)
		return ok;
	auto dp = open_pins(ctx, iface);
	if (!dp)
		return std::unexpected(dp.error());
	// One read of the set in force, so that the header names the set the
	// prefixes are from even if a reload flips it meanwhile.
	auto cfg = dp->config().read();
	if (!cfg)
		return std::unexpected(cfg.error());
	uint32_t set = SLUICE_POLICY_SET_OF(cfg->policy_flags);
	sluice::ListKind kind = inv.command == "allow" ? sluice::ListKind::allow : sluice::ListKind::deny;
	auto cidrs = dp->lists().entries(kind, set);
	if (!cidrs)
		return std::unexpected(cidrs.error());
	std::string header = "the " + inv.command + " list of " + iface + " (policy set " + std::to_string(set) + "), " +
			     std::to_string(cidrs->size()) + (cidrs->size() == 1 ? " prefix" : " prefixes") +
			     ", saved by sluicectl " + sluice::iso_time(sluice::realtime_ns());
	if (auto ok = sluice::write_netset(*path, *cidrs, header); !ok)
		return ok;
	ctx.out << iface << ": saved " << cidrs->size() << (cidrs->size() == 1 ? " prefix" : " prefixes")
		<< " of the " << inv.command << " list to " << *path << '\n';
	return {};
}

} // namespace

Status do_list(Context &ctx, const Invocation &inv)
{
	auto action = inv.arg(0, "ACTION (add, del, list or save)");
	if (!action)
		return std::unexpected(action.error());
	if (*action != "add" && *action != "del" && *action != "list" && *action != "save")
		return std::unexpected(inv.usage_error("unknown " + inv.command + " action '" + *action +
						       "' (add, del, list or save)"));
	auto iface = inv.iface(1);
	if (!iface)
		return std::unexpected(iface.error());
	if (*action == "list")
		return show(ctx, inv, *iface);
	if (*action == "save")
		return save(ctx, inv, *iface);
	if (auto ok = inv.no_json(ctx); !ok)
		return ok;

	std::vector<std::string> cidrs;
	for (size_t i = 2; i < inv.args.size(); i++) {
		auto cidr = sluice::parse_cidr(inv.args[i]);
		if (!cidr)
			return std::unexpected(cidr.error());
		cidrs.push_back(cidr->str());
	}
	sluice::UniqueFd file_fd;
	size_t from_file = 0;
	if (auto file = inv.option("from")) {
		auto fd = open_cidr_file(*file, from_file);
		if (!fd)
			return std::unexpected(fd.error());
		if (from_file == 0)
			return sluice::invalid("--from " + *file + " holds no CIDRs");
		file_fd = std::move(*fd);
	}
	if (cidrs.empty() && !file_fd)
		return std::unexpected(inv.usage_error("missing CIDR (or --from FILE)"));

	bool add = *action == "add";
	bool upstream = inv.flag("upstream");
	if (upstream && (!add || inv.command != "deny"))
		return std::unexpected(inv.usage_error("--upstream is for deny add (deny del withdraws by itself)"));
	json request = request_for(add ? sluice::Command::list_add : sluice::Command::list_del,
				   {{"iface", *iface}, {"list", inv.command}, {"cidrs", cidrs}});
	if (upstream)
		request["upstream"] = 1;
	if (file_fd)
		request["from_fd"] = true;
	auto reply = Client(ctx.socket).call(request, file_fd.get());
	if (!reply)
		return std::unexpected(reply.error());
	size_t total = cidrs.size() + from_file;
	ctx.out << *iface << ": " << (add ? "added " : "removed ") << total << (total == 1 ? " prefix" : " prefixes")
		<< (add ? " to" : " from") << " the " << inv.command << " list\n";
	if (reply->contains("upstream")) {
		bool up = reply->value("speaker_up", false), dry = reply->value("dry_run", false);
		for (const auto &rule : reply->at("upstream"))
			ctx.out << *iface << ": upstream: " << rule.get<std::string>()
				<< (dry ? " (dry run: not announced)"
				    : up ? ""
					 : " (the speaker does not answer: announced once it does)")
				<< '\n';
	}
	return {};
}

} // namespace sluicectl
