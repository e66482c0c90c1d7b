#include "sluicectl/command.h"

#include "base/limits.h"

#include <cctype>
#include <charconv>
#include <cmath>

namespace sluicectl {

Error Invocation::usage_error(const std::string &what) const
{
	return Error{sluice::ErrorKind::invalid, 0, what + "; " + usage};
}

Result<std::string> Invocation::arg(size_t i, const char *name) const
{
	if (i >= args.size())
		return std::unexpected(usage_error(std::string("missing ") + name));
	return args[i];
}

Result<std::string> Invocation::iface(size_t i) const
{
	auto name = arg(i, "IFACE");
	if (!name)
		return name;
	if (auto ok = check_iface_name(*name); !ok)
		return std::unexpected(ok.error());
	return name;
}

Result<std::optional<std::string>> Invocation::optional_iface(size_t i) const
{
	if (args.size() <= i)
		return std::nullopt;
	auto name = iface(i);
	if (!name)
		return std::unexpected(name.error());
	return *name;
}

Status Invocation::at_most(size_t n) const
{
	if (args.size() > n)
		return std::unexpected(usage_error("unexpected argument '" + args[n] + "'"));
	return {};
}

std::optional<std::string> Invocation::option(const char *name) const
{
	if (!options.count(name))
		return std::nullopt;
	return options[name].as<std::string>();
}

bool Invocation::flag(const char *name) const
{
	return options.count(name) && options[name].as<bool>();
}

Status Invocation::no_json(const Context &ctx) const
{
	if (!ctx.json)
		return {};
	return sluice::invalid("--json is for the read commands (status, stats, bucket without --set, "
			       "allow|deny list, audit, standing, top, class list); '" + command + "' prints text only");
}

json request_for(sluice::Command c, json args)
{
	args["cmd"] = std::string(sluice::command_name(c));
	return args;
}

bool looks_like_integer(std::string_view text)
{
	if (text.starts_with('-'))
		text.remove_prefix(1);
	if (text.empty())
		return false;
	for (char c : text)
		if (!std::isdigit(static_cast<unsigned char>(c)))
			return false;
	return true;
}

Result<int64_t> parse_integer(std::string_view text, const std::string &what)
{
	int64_t v = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
	if (ec == std::errc::result_out_of_range)
		return sluice::invalid(what + " " + std::string(text) + " is out of range");
	if (text.empty() || ec != std::errc() || end != text.data() + text.size())
		return sluice::invalid(what + " wants an integer, got '" + std::string(text) + "'");
	return v;
}

Result<int64_t> parse_count(std::string_view text, const std::string &what)
{
	if (looks_like_integer(text) && !text.starts_with('-'))
		return parse_integer(text, what); // can only be out of range now
	return sluice::invalid(what + " wants a non-negative integer, got '" + std::string(text) + "'");
}

Result<double> parse_seconds(std::string_view text, const std::string &what)
{
	double v = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
	if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !sluice::check_interval_s(v))
		return sluice::invalid(what + " wants seconds (0 < SEC <= " + std::to_string(int(sluice::kIntervalMaxS)) +
				       "), got '" + std::string(text) + "'");
	return v;
}

Status check_iface_name(std::string_view name)
{
	// Only the rule: whether sluiced manages the name is sluiced's to say.
	if (!sluice::check_interface_name(name))
		return sluice::invalid("'" + std::string(name) + "' is not an interface name (1 to " +
				       std::to_string(sluice::kInterfaceNameMax) +
				       " characters, no '/', ':', spaces or control characters)");
	return {};
}

} // namespace sluicectl
