// cgroup_links.h - the standing table's feeders (bpf/feeders.bpf.h: sock_ops,
// connect4/6, sendmsg4/6) attached with one bpf_link each to the root of the
// cgroup v2 hierarchy by default, so that every socket of the host feeds the
// table, whatever its cgroup or network namespace; or to one cgroup of it
// (--feeder-cgroup: the service's own, so that only its sockets grant). Pinned beside the XDP attachment
// (pin_layout.h's feeder_pins()), before it: an XDP pin still means a complete
// set. Like the XDP link, the links outlive the daemon; detach() removes them.
#pragma once

#include "base/fd.h"
#include "base/result.h"
#include "bpf/pin_layout.h"

#include <array>
#include <cstdint>
#include <string>

namespace sluice {

// The mount point of the cgroup v2 hierarchy, the first cgroup2 line of
// `mounts` (the text of /proc/self/mounts); empty if there is none.
std::string cgroup2_root_in(const std::string &mounts);

// The root directory of the cgroup v2 hierarchy, opened: where
// /proc/self/mounts says it is mounted, or, when this mount namespace has
// none (`ip netns exec` remounts /sys, and the cgroup mounts under it go),
// through a mount of our own on a temporary directory, detached again once
// the root is open (one hierarchy: every mount of it shows the same root).
Result<UniqueFd> open_cgroup2_root();

// A cgroup v2 directory, opened: refused (ErrorKind::invalid) unless it is a
// directory of a cgroup2 file system.
Result<UniqueFd> open_cgroup2_dir(const std::string &path);

// The cgroup id of an open cgroup v2 directory (its inode number).
Result<uint64_t> cgroup_id_of(int dir_fd);

class FeederLinks {
public:
	bool attached() const;
	// One bpf_link per feeder of progs on the cgroup `cgroup` (empty: the
	// cgroup v2 root).
	Status attach(const FeederFds &progs, const std::string &cgroup = {});
	// The cgroup id the links are attached to (0: none attached).
	uint64_t cgroup_id() const { return cgroup_id_; }
	// Pin every link under dir; a pin already there is left as it is.
	Status pin(const std::string &dir) const;
	// The links pinned under dir: all of them, or none if the set was
	// pinned without feeders (they could not be attached). `fix` ends every
	// refusal.
	static Result<FeederLinks> adopt(const std::string &dir, const std::string &fix);
	// Take every feeder off the cgroup. The pins are the caller's.
	Status detach();
	// Put `progs` in place of the feeders the links run (a new program's,
	// Dataplane::rekey), each link atomically; nothing while none is attached.
	Status replace(const FeederFds &progs);

private:
	std::array<UniqueFd, 5> links_;
	uint64_t cgroup_id_ = 0;
};

} // namespace sluice
