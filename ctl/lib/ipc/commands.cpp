#include "ipc/commands.h"

#include "base/names.h"

#include <string>

namespace sluice {

const CommandSpec *find_command(std::string_view name)
{
	for (const auto &spec : kCommandSpecs)
		if (spec.name == name)
			return &spec;
	return nullptr;
}

const char *to_string(Access a)
{
	static constexpr std::array<Named<Access>, 3> names{{
		{Access::read, "reads"},
		{Access::write, "writes"},
		{Access::read_or_write, "reads or writes"},
	}};
	return name_of(names, a, "writes").data(); // the rows are literals: NUL-terminated
}

bool known_command(std::string_view cmd)
{
	return find_command(cmd) != nullptr;
}

Status check_args(const CommandSpec &spec, const Request &req)
{
	for (const auto &arg : spec.args) {
		std::string name(arg.name);
		if (!arg.required && !req.args.contains(name))
			continue;
		Status ok;
		switch (arg.type) {
		case ArgType::string:
			if (auto v = req.str(name.c_str()); !v)
				ok = std::unexpected(v.error());
			break;
		case ArgType::integer:
			if (auto v = req.integer(name.c_str()); !v)
				ok = std::unexpected(v.error());
			break;
		case ArgType::string_list:
			if (auto v = req.str_list(name.c_str()); !v)
				ok = std::unexpected(v.error());
			break;
		}
		if (!ok)
			return ok;
	}
	return {};
}

} // namespace sluice
