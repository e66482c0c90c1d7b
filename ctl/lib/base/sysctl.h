// sysctl.h - the kernel's settings under /proc/sys, as the calling process's
// network namespace sees them (net.* is per namespace: sluiced reads and
// writes the protected host's, never another's). Names in dotted form
// ("net.ipv4.tcp_syncookies").
#pragma once

#include "base/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// Every integer the setting holds, in order ("4096 131072 6291456" for
// net.ipv4.tcp_rmem); an error names the file.
Result<std::vector<int64_t>> read_sysctl_values(std::string_view name);
// The setting's one integer (the first, for a vector setting).
Result<int64_t> read_sysctl(std::string_view name);
// Write one integer; an error names the setting, the value and errno.
Status write_sysctl(std::string_view name, int64_t value);

// /proc/sys/net/ipv4/tcp_syncookies for "net.ipv4.tcp_syncookies".
std::string sysctl_path(std::string_view name);

} // namespace sluice
