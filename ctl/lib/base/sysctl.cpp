#include "base/sysctl.h"

#include <fstream>
#include <sstream>

namespace sluice {

std::string sysctl_path(std::string_view name)
{
	std::string path = "/proc/sys/";
	for (char c : name)
		path += c == '.' ? '/' : c;
	return path;
}

Result<std::vector<int64_t>> read_sysctl_values(std::string_view name)
{
	std::string path = sysctl_path(name);
	std::ifstream in(path);
	if (!in)
		return fail_errno("reading " + std::string(name) + " (" + path + ")");
	std::vector<int64_t> values;
	int64_t v = 0;
	while (in >> v)
		values.push_back(v);
	if (values.empty())
		return fail(ErrorKind::system, "reading " + std::string(name) + " (" + path + "): no integer in it");
	return values;
}

Result<int64_t> read_sysctl(std::string_view name)
{
	auto values = read_sysctl_values(name);
	if (!values)
		return std::unexpected(values.error());
	return values->front();
}

Status write_sysctl(std::string_view name, int64_t value)
{
	std::string path = sysctl_path(name);
	std::ofstream out(path);
	if (!out)
		return fail_errno("setting " + std::string(name) + " = " + std::to_string(value) + " (" + path + ")");
	out << value << '\n';
	out.flush();
	if (!out)
		return fail_errno("setting " + std::string(name) + " = " + std::to_string(value) + " (" + path + ")");
	return {};
}

} // namespace sluice
