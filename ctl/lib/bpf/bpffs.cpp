#include "bpf/bpffs.h"

#include <linux/magic.h>

#include <filesystem>
#include <sys/mount.h>
#include <sys/statfs.h>

namespace sluice {

Status ensure_bpffs(const std::string &pin_root)
{
	namespace fs = std::filesystem;
	// The nearest existing ancestor decides which filesystem the pins land on.
	fs::path p = pin_root;
	while (!p.empty() && !fs::exists(p))
		p = p.parent_path();
	struct statfs st {};
	if (!p.empty() && statfs(p.c_str(), &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return {};
	if (pin_root.starts_with("/sys/fs/bpf")) {
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") == 0)
			return {};
		return fail_errno("no BPF filesystem at /sys/fs/bpf and mounting one failed; run "
				  "`mount -t bpf bpf /sys/fs/bpf`");
	}
	return fail(ErrorKind::system,
		    "pin directory " + pin_root + " is not on a BPF filesystem; run `mkdir -p " + pin_root +
			    " && mount -t bpf bpf " + pin_root + "` or use a directory under /sys/fs/bpf");
}

} // namespace sluice
