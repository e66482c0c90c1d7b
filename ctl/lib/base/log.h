// log.h - one line per event on stderr, journald-friendly ("<N>" priority
// prefixes are left to the unit file: stderr lines are enough for journald).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice {

enum class LogLevel { debug, info, warn, error };

std::string_view to_string(LogLevel level);
std::optional<LogLevel> log_level_named(std::string_view name);
std::string log_level_names(); // "debug, info, warn, error"

void set_log_level(LogLevel level);
void log(LogLevel level, std::string_view message);
inline void log_debug(std::string_view m) { log(LogLevel::debug, m); }
inline void log_info(std::string_view m) { log(LogLevel::info, m); }
inline void log_warn(std::string_view m) { log(LogLevel::warn, m); }
inline void log_error(std::string_view m) { log(LogLevel::error, m); }

} // namespace sluice
