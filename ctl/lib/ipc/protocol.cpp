#include "ipc/protocol.h"

#include "base/names.h"

#include <cerrno>

namespace sluice {

namespace {
constexpr std::array<Named<ErrorKind>, 3> kKindNames{{
	{ErrorKind::refused, "refused"},
	{ErrorKind::invalid, "invalid"},
	{ErrorKind::system, "system"},
}};
} // namespace

Result<Request> parse_request(std::string_view line)
{
	if (line.size() > kMaxLineBytes)
		return invalid("request line of " + std::to_string(line.size()) + " bytes is over the limit of " +
			       std::to_string(kMaxLineBytes));
	if (line.find('\0') != std::string_view::npos)
		return invalid("request holds a NUL byte"); // the parser would stop there and take the prefix
	json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
	if (j.is_discarded())
		return invalid("request is not valid JSON");
	if (!j.is_object())
		return invalid("request must be a JSON object");
	auto it = j.find("cmd");
	if (it == j.end() || !it->is_string())
		return invalid("request needs \"cmd\" as a string");
	std::string cmd = it->get<std::string>();
	if (!known_command(cmd))
		return invalid("unknown command '" + cmd + "'");
	return Request{cmd, std::move(j), nullptr};
}

Result<std::string> Request::str(const char *name) const
{
	auto it = args.find(name);
	if (it == args.end())
		return invalid("'" + cmd + "' needs \"" + name + "\"");
	if (!it->is_string())
		return invalid("\"" + std::string(name) + "\" must be a string");
	return it->get<std::string>();
}

Result<std::optional<std::string>> Request::opt_str(const char *name) const
{
	if (!args.contains(name))
		return std::optional<std::string>{};
	auto s = str(name);
	if (!s)
		return std::unexpected(s.error());
	return std::optional<std::string>{*s};
}

Result<int64_t> Request::integer(const char *name) const
{
	auto it = args.find(name);
	if (it == args.end())
		return invalid("'" + cmd + "' needs \"" + name + "\"");
	if (!it->is_number_integer())
		return invalid("\"" + std::string(name) + "\" must be an integer");
	if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
		return invalid("\"" + std::string(name) + "\" is too large");
	return it->get<int64_t>();
}

Result<std::optional<int64_t>> Request::opt_integer(const char *name) const
{
	if (!args.contains(name))
		return std::optional<int64_t>{};
	auto v = integer(name);
	if (!v)
		return std::unexpected(v.error());
	return std::optional<int64_t>{*v};
}

Result<std::vector<std::string>> Request::str_list(const char *name) const
{
	auto it = args.find(name);
	if (it == args.end() || !it->is_array())
		return invalid("\"" + std::string(name) + "\" must be an array of strings");
	std::vector<std::string> out;
	for (const auto &e : *it) {
		if (!e.is_string())
			return invalid("\"" + std::string(name) + "\" must be an array of strings");
		out.push_back(e.get<std::string>());
	}
	return out;
}

const char *kind_name(ErrorKind k)
{
	return name_of(kKindNames, k, "system").data(); // the rows are literals: NUL-terminated
}

std::optional<ErrorKind> kind_from(std::string_view name)
{
	return value_named(kKindNames, name);
}

json ok_reply(json body)
{
	body["ok"] = true;
	return body;
}

json error_reply(const Error &e)
{
	return json{{"ok", false}, {"error", e.describe()}, {"kind", kind_name(e.kind)}};
}

json busy_reply(size_t max_clients)
{
	json r = error_reply(Error{ErrorKind::system, EBUSY,
				   "too many control clients (" + std::to_string(max_clients) + " connected); try again"});
	r["busy"] = true;
	return r;
}

bool is_busy_reply(const json &reply)
{
	auto it = reply.find("busy");
	return reply.is_object() && it != reply.end() && *it == true;
}

} // namespace sluice
