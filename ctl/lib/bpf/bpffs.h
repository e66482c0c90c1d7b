// bpffs.h - the BPF filesystem the pins live on.
#pragma once

#include "base/result.h"

#include <string>

namespace sluice {

// Make sure `pin_root` lies on a BPF filesystem: mounts one at /sys/fs/bpf if
// that is where it should be and nothing is mounted, else says what to run.
Status ensure_bpffs(const std::string &pin_root);

} // namespace sluice
