#include "bpf/dataplane.h"

#include "bpf/attachment.h"

#include <bpf/bpf.h>

#include <filesystem>

namespace sluice {

Dataplane::Dataplane() = default;
Dataplane::Dataplane(Dataplane &&) noexcept = default;
Dataplane &Dataplane::operator=(Dataplane &&) noexcept = default;
Dataplane::~Dataplane() = default;

bool Dataplane::has_pins(const std::string &dir)
{
	return pin_exists(dir, kLinkPin) || pin_exists(dir, kProgramPin);
}

void Dataplane::remove_link_pin(const std::string &dir)
{
	remove_pin(dir, kLinkPin);
}

Status Dataplane::read_settings()
{
	uint32_t zero = 0;
	if (int err = bpf_map_lookup_elem(maps_.settings.get(), &zero, &settings_); err)
		return fail_bpf(err, "reading the settings map");
	return {};
}

Result<AttachMode> Dataplane::attach(int ifindex, AttachMode mode)
{
	return attachment_->attach(ifindex, mode, maps_, feeder_progs_);
}

Status Dataplane::attach_feeders(const std::string &cgroup)
{
	if (feeder_links_.attached())
		return {};
	if (!feeder_progs_.sockops)
		return fail(ErrorKind::system,
			    "the standing feeders were not loaded with this program (pins adopted without them, or "
			    "libxdp loaded the XDP program alone)",
			    ENOENT);
	return feeder_links_.attach(feeder_progs_, cgroup);
}

uint64_t Dataplane::feeders_cgroup_id() const
{
	return feeder_links_.cgroup_id();
}

bool Dataplane::feeders_attached() const
{
	return feeder_links_.attached();
}

Status Dataplane::pin(const std::string &dir) const
{
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	if (ec)
		return fail(ErrorKind::system, "creating pin directory " + dir, ec.value());
	for (const auto &m : map_pins())
		if (auto ok = pin_object((maps_.*m.fd).get(), dir, m.pin); !ok)
			return ok;
	if (auto ok = feeder_links_.pin(dir); !ok)
		return ok;
	// Last: the attachment's pin means a complete set.
	return attachment_->pin(dir);
}

Status Dataplane::detach(const std::string &dir)
{
	// Detach first: then the pins' removal cannot leave a live program behind.
	if (auto ok = attachment_->detach(); !ok)
		return ok;
	if (auto ok = feeder_links_.detach(); !ok)
		return ok;
	return remove_pins(dir);
}

bool Dataplane::multiprog() const
{
	return attachment_->multiprog();
}

int Dataplane::prog_fd() const
{
	return attachment_->prog_fd();
}

Result<uint32_t> Dataplane::prog_id() const
{
	return attachment_->prog_id();
}

Result<uint32_t> Dataplane::link_ifindex() const
{
	return attachment_->ifindex();
}

} // namespace sluice
