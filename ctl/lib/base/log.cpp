#include "base/log.h"

#include <cstdio>
#include <string>

namespace sluice {

namespace {
LogLevel g_level = LogLevel::info;
const char *name(LogLevel l)
{
	switch (l) {
	case LogLevel::debug:
		return "debug";
	case LogLevel::info:
		return "info";
	case LogLevel::warn:
		return "warn";
	case LogLevel::error:
		return "error";
	}
	return "info";
}
} // namespace

void set_log_level(LogLevel level)
{
	g_level = level;
}

void log(LogLevel level, std::string_view message)
{
	if (level < g_level)
		return;
	std::string line = std::string(name(level)) + ": " + std::string(message) + "\n";
	std::fwrite(line.data(), 1, line.size(), stderr);
	std::fflush(stderr);
}

} // namespace sluice
