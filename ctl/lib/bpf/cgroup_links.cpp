#include "bpf/cgroup_links.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <cstdlib>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace sluice {

std::string cgroup2_root_in(const std::string &mounts)
{
	std::istringstream in(mounts);
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream f(line);
		std::string dev, dir, type;
		if (f >> dev >> dir >> type && type == "cgroup2")
			return dir;
	}
	return {};
}

Result<UniqueFd> open_cgroup2_root()
{
	std::ifstream in("/proc/self/mounts");
	if (!in)
		return fail_errno("reading /proc/self/mounts");
	std::stringstream text;
	text << in.rdbuf();
	if (std::string root = cgroup2_root_in(text.str()); !root.empty()) {
		UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		if (!fd)
			return fail_errno("opening the cgroup v2 root " + root);
		return fd;
	}
	char tmpl[] = "/tmp/sluice-cgroup2-XXXXXX";
	if (!::mkdtemp(tmpl))
		return fail_errno("making a directory to mount the cgroup v2 hierarchy on");
	if (::mount("none", tmpl, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
		int err = errno;
		::rmdir(tmpl);
		return fail(ErrorKind::system,
			    "no cgroup v2 hierarchy is mounted here and mounting one failed, so standing cannot be fed; "
			    "mount it (`mount -t cgroup2 none /sys/fs/cgroup`) and start again",
			    err);
	}
	UniqueFd fd(::open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	int err = errno;
	::umount2(tmpl, MNT_DETACH);
	::rmdir(tmpl);
	if (!fd)
		return fail(ErrorKind::system, "opening the cgroup v2 root mounted on " + std::string(tmpl), err);
	return fd;
}

Result<UniqueFd> open_cgroup2_dir(const std::string &path)
{
	UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!fd)
		return fail(ErrorKind::invalid, "opening the cgroup " + path, errno);
	struct statfs fs{};
	if (::fstatfs(fd.get(), &fs) != 0)
		return fail(ErrorKind::invalid, "reading the file system of " + path, errno);
	if (fs.f_type != CGROUP2_SUPER_MAGIC)
		return invalid(path + " is not a cgroup v2 directory (its file system is not cgroup2)");
	return fd;
}

Result<uint64_t> cgroup_id_of(int dir_fd)
{
	struct stat st{};
	if (::fstat(dir_fd, &st) != 0)
		return fail_errno("reading a cgroup's inode");
	return uint64_t(st.st_ino);
}

bool FeederLinks::attached() const
{
	return static_cast<bool>(links_[0]);
}

Status FeederLinks::attach(const FeederFds &progs, const std::string &cgroup)
{
	auto cg = cgroup.empty() ? open_cgroup2_root() : open_cgroup2_dir(cgroup);
	if (!cg)
		return std::unexpected(cg.error());
	auto id = cgroup_id_of(cg->get());
	if (!id)
		return std::unexpected(id.error());
	const auto feeders = feeder_pins();
	std::array<UniqueFd, 5> made;
	for (size_t i = 0; i < feeders.size(); i++) {
		int fd = bpf_link_create((progs.*feeders[i].prog).get(), cg->get(), feeders[i].attach_type, nullptr);
		if (fd < 0)
			return fail_errno("attaching the standing feeder " + std::string(feeders[i].link_pin) +
					  " to the cgroup " + (cgroup.empty() ? std::string("v2 root") : cgroup) +
					  " (needs Linux >= 5.7)");
		made[i].reset(fd);
	}
	links_ = std::move(made);
	cgroup_id_ = *id;
	return {};
}

Status FeederLinks::replace(const FeederFds &progs)
{
	const auto feeders = feeder_pins();
	for (size_t i = 0; i < feeders.size(); i++)
		if (links_[i])
			if (int err = bpf_link_update(links_[i].get(), (progs.*feeders[i].prog).get(), nullptr); err)
				return fail_bpf(err, "putting the new program's feeder " + std::string(feeders[i].link_pin) +
							     " on its cgroup link");
	return {};
}

Status FeederLinks::pin(const std::string &dir) const
{
	const auto feeders = feeder_pins();
	for (size_t i = 0; i < feeders.size(); i++)
		if (links_[i])
			if (auto ok = pin_object(links_[i].get(), dir, feeders[i].link_pin); !ok)
				return ok;
	return {};
}

Result<FeederLinks> FeederLinks::adopt(const std::string &dir, const std::string &fix)
{
	FeederLinks out;
	const auto feeders = feeder_pins();
	size_t pinned = 0;
	for (const auto &f : feeders)
		pinned += pin_exists(dir, f.link_pin);
	if (pinned == 0)
		return out;
	for (size_t i = 0; i < feeders.size(); i++) {
		std::string path = pin_path(dir, feeders[i].link_pin);
		UniqueFd link(bpf_obj_get(path.c_str()));
		if (!link)
			return fail(ErrorKind::system, "pin " + path + " cannot be opened" + fix, errno);
		bpf_link_info li{};
		uint32_t len = sizeof(li);
		if (int err = bpf_obj_get_info_by_fd(link.get(), &li, &len); err)
			return fail_bpf(err, "reading link info of " + path);
		if (li.type != BPF_LINK_TYPE_CGROUP || li.cgroup.attach_type != feeders[i].attach_type)
			return refused("pin " + path + " is not the cgroup link this build's layout " +
				       std::to_string(SLUICE_LAYOUT_VERSION) + " expects" + fix);
		out.links_[i] = std::move(link);
		out.cgroup_id_ = li.cgroup.cgroup_id;
	}
	return out;
}

Status FeederLinks::detach()
{
	for (auto &link : links_) {
		if (link)
			if (int err = bpf_link_detach(link.get()); err && err != -EINVAL)
				return fail_bpf(err, "detaching a standing feeder's cgroup link");
		link.reset();
	}
	cgroup_id_ = 0;
	return {};
}

} // namespace sluice
