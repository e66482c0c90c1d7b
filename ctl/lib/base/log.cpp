#include "base/log.h"

#include "base/names.h"

#include <cstdio>
#include <string>

namespace sluice {

namespace {
LogLevel g_level = LogLevel::info;
constexpr std::array<Named<LogLevel>, 4> kLevelNames{{
	{LogLevel::debug, "debug"},
	{LogLevel::info, "info"},
	{LogLevel::warn, "warn"},
	{LogLevel::error, "error"},
}};
} // namespace

std::string_view to_string(LogLevel level)
{
	return name_of(kLevelNames, level, "info");
}

std::optional<LogLevel> log_level_named(std::string_view name)
{
	return value_named(kLevelNames, name);
}

std::string log_level_names()
{
	return names_of(kLevelNames);
}

void set_log_level(LogLevel level)
{
	g_level = level;
}

void log(LogLevel level, std::string_view message)
{
	if (level < g_level)
		return;
	std::string line = std::string(to_string(level)) + ": " + std::string(message) + "\n";
	std::fwrite(line.data(), 1, line.size(), stderr);
	std::fflush(stderr);
}

} // namespace sluice
