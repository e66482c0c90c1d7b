// link_attachment.cpp - the program attached with a bpf_link of our own. The
// link is pinned, so it outlives the daemon (fail-static); only detach()
// takes it off.
#include "bpf/attachment.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include <cerrno>

namespace sluice {

namespace {

class LinkAttachment final : public Attachment {
public:
	LinkAttachment(UniqueFd prog, UniqueFd link) : prog_(std::move(prog)), link_(std::move(link)) {}

	Result<AttachMode> attach(int ifindex, AttachMode mode, MapFds &, FeederFds &) override;
	Status pin(const std::string &dir) const override;
	Status detach() override;
	Result<uint32_t> ifindex() const override;
	Status replace_program(UniqueFd prog) override;
	int prog_fd() const override { return prog_.get(); }
	bool multiprog() const override { return false; }

private:
	UniqueFd prog_, link_;
};

Result<AttachMode> LinkAttachment::attach(int ifindex, AttachMode mode, MapFds &, FeederFds &)
{
	auto try_mode = [&](uint32_t flags) {
		LIBBPF_OPTS(bpf_link_create_opts, o, .flags = flags);
		return bpf_link_create(prog_.get(), ifindex, BPF_XDP, &o);
	};
	if (mode == AttachMode::native || mode == AttachMode::automatic) {
		int fd = try_mode(XDP_FLAGS_DRV_MODE);
		if (fd >= 0) {
			link_.reset(fd);
			return AttachMode::native;
		}
		int err = errno;
		if (err == EBUSY || err == EEXIST)
			return fail(ErrorKind::system,
				    "ifindex " + std::to_string(ifindex) +
					    " already has an XDP program attached (see `bpftool net`); detach it first",
				    err);
		if (mode == AttachMode::native)
			return fail(ErrorKind::system,
				    "native XDP attach failed on ifindex " + std::to_string(ifindex) +
					    " (the driver may not support native XDP); use --mode skb, or --mode auto to "
					    "fall back",
				    err);
	}
	int fd = try_mode(XDP_FLAGS_SKB_MODE);
	if (fd < 0)
		return fail_errno("generic (skb) XDP attach failed on ifindex " + std::to_string(ifindex));
	link_.reset(fd);
	return AttachMode::skb;
}

Status LinkAttachment::pin(const std::string &dir) const
{
	if (!link_)
		return {};
	return pin_object(link_.get(), dir, kLinkPin);
}

Status LinkAttachment::detach()
{
	if (link_) {
		// Detach before the pins go: then their removal cannot leave a live link behind.
		if (int err = bpf_link_detach(link_.get()); err && err != -EINVAL)
			return fail_bpf(err, "detaching the XDP link");
	}
	link_.reset();
	return {};
}

Status LinkAttachment::replace_program(UniqueFd prog)
{
	if (link_) {
		// BPF_F_REPLACE: only if the link still runs the program we hold.
		LIBBPF_OPTS(bpf_link_update_opts, o, .flags = BPF_F_REPLACE, .old_prog_fd = static_cast<__u32>(prog_.get()));
		if (int err = bpf_link_update(link_.get(), prog.get(), &o); err)
			return fail_bpf(err, "putting the new program on the XDP link");
	}
	prog_ = std::move(prog);
	return {};
}

Result<uint32_t> LinkAttachment::ifindex() const
{
	if (!link_)
		return 0u;
	bpf_link_info li{};
	uint32_t len = sizeof(li);
	if (int err = bpf_obj_get_info_by_fd(link_.get(), &li, &len); err)
		return fail_bpf(err, "reading link info");
	return li.xdp.ifindex;
}

} // namespace

std::unique_ptr<Attachment> link_attachment(UniqueFd prog)
{
	return std::make_unique<LinkAttachment>(std::move(prog), UniqueFd());
}

Result<std::unique_ptr<Attachment>> adopt_link_attachment(const std::string &dir, const std::string &fix)
{
	std::string link_path = pin_path(dir, kLinkPin);
	UniqueFd link(bpf_obj_get(link_path.c_str()));
	if (!link)
		return fail(ErrorKind::system, "pin " + link_path + " cannot be opened" + fix, errno);
	bpf_link_info li{};
	uint32_t len = sizeof(li);
	if (int err = bpf_obj_get_info_by_fd(link.get(), &li, &len); err)
		return fail_bpf(err, "reading link info of " + link_path);
	UniqueFd prog(bpf_prog_get_fd_by_id(li.prog_id));
	if (!prog)
		return fail_errno("opening the program of " + link_path);
	return std::make_unique<LinkAttachment>(std::move(prog), std::move(link));
}

} // namespace sluice
