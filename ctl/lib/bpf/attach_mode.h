// attach_mode.h - how an XDP program runs on an interface: as operators type
// it (--mode native|skb|auto), and as the kernel reports it.
#pragma once

#include "base/result.h"

#include <string_view>

namespace sluice {

enum class AttachMode { native, skb, automatic };
Result<AttachMode> parse_attach_mode(std::string_view text);
std::string_view to_string(AttachMode m);

// The mode an interface's XDP program runs in now, from the kernel.
Result<AttachMode> attached_mode(int ifindex);

} // namespace sluice
