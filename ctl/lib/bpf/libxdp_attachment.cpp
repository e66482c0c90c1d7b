// libxdp_attachment.cpp - the program attached through libxdp's multiprog
// dispatcher (sluiced --multiprog): libxdp loads it as an extension of the
// dispatcher and attaches that (xdp-loader status lists sluice_xdp beside the
// interface's other programs). If libxdp cannot use its dispatcher on this
// kernel it falls back to attaching the program alone; that is refused here
// (and undone), since it would not share the interface.
#include "bpf/attachment.h"

#include "sluice_bpf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <net/if.h>

namespace sluice {

namespace {

// libxdp's messages while it attaches or detaches (info and warnings),
// collected for the error that names what went wrong; the daemon is single
// threaded, so one collector at a time.
std::string g_libxdp_log;

int collect_libxdp(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBXDP_DEBUG)
		return 0;
	char line[512];
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n > 0 && g_libxdp_log.size() < 4096) {
		std::string text(line);
		while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
			text.pop_back();
		text.erase(0, text.find_first_not_of(' '));
		g_libxdp_log += (g_libxdp_log.empty() ? "" : "; ") + text;
	}
	return 0;
}

class LibxdpLog {
public:
	LibxdpLog() : old_(libxdp_set_print(collect_libxdp)) { g_libxdp_log.clear(); }
	~LibxdpLog() { libxdp_set_print(old_); }
	// " (libxdp: ...; libxdp: ...)" or "".
	std::string said() const { return g_libxdp_log.empty() ? "" : " (" + g_libxdp_log + ")"; }

private:
	libxdp_print_fn_t old_;
};

struct XdpProgramCloser {
	void operator()(xdp_program *p) const { xdp_program__close(p); }
};
struct XdpMultiprogCloser {
	void operator()(xdp_multiprog *m) const { xdp_multiprog__close(m); }
};
using XdpMultiprogPtr = std::unique_ptr<xdp_multiprog, XdpMultiprogCloser>;

// libxdp's view of an interface's XDP programs, or null when there is none.
XdpMultiprogPtr multiprog_of(unsigned ifindex)
{
	xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(static_cast<int>(ifindex));
	if (!mp || libxdp_get_error(mp))
		return nullptr;
	return XdpMultiprogPtr(mp);
}

// Our program among the dispatcher's, or null.
xdp_program *find_in(const xdp_multiprog *mp, uint32_t prog_id)
{
	if (!mp || xdp_multiprog__is_legacy(mp))
		return nullptr;
	for (xdp_program *p = xdp_multiprog__next_prog(nullptr, mp); p; p = xdp_multiprog__next_prog(p, mp))
		if (xdp_program__id(p) == prog_id)
			return p;
	return nullptr;
}

class LibxdpAttachment final : public Attachment {
public:
	explicit LibxdpAttachment(std::shared_ptr<sluice_bpf> opened) : pending_(std::move(opened)) {}
	LibxdpAttachment(UniqueFd prog, std::string ifname) : prog_(std::move(prog)), ifname_(std::move(ifname)) {}

	Result<AttachMode> attach(int ifindex, AttachMode mode, MapFds &maps, FeederFds &feeders) override;
	Status pin(const std::string &dir) const override;
	Status detach() override;
	Result<uint32_t> ifindex() const override;
	Status replace_program(UniqueFd) override
	{
		return refused("the program is one of libxdp's dispatcher's (--multiprog), which holds its links: a new "
			       "hash key needs sluiced restarted without its pins (sluicectl detach, then start it)");
	}
	int prog_fd() const override { return prog_.get(); }
	bool multiprog() const override { return true; }

private:
	// The opened skeleton until libxdp loads it on the first attach.
	std::shared_ptr<sluice_bpf> pending_;
	UniqueFd prog_;
	// The interface, by name: its dispatcher is found by ifindex each time.
	std::string ifname_;
};

Result<AttachMode> LibxdpAttachment::attach(int ifindex, AttachMode mode, MapFds &maps, FeederFds &feeders)
{
	LibxdpLog log;
	const std::string where = "ifindex " + std::to_string(ifindex);
	xdp_program *xp = nullptr;
	if (pending_) {
		DECLARE_LIBXDP_OPTS(xdp_program_opts, xo, .obj = pending_->obj, .prog_name = "sluice_xdp");
		xp = xdp_program__create(&xo);
	} else {
		// Loaded before (the interface came back): libxdp links it again.
		int fd = fcntl(prog_.get(), F_DUPFD_CLOEXEC, 3);
		xp = xdp_program__from_fd(fd);
		if (!xp || libxdp_get_error(xp))
			::close(fd);
	}
	if (!xp || libxdp_get_error(xp))
		return fail(ErrorKind::system, "libxdp cannot take the program" + log.said(),
			    xp ? static_cast<int>(-libxdp_get_error(xp)) : EINVAL);
	std::unique_ptr<xdp_program, XdpProgramCloser> owner(xp);

	int err = -EINVAL;
	AttachMode in_force = AttachMode::native;
	if (mode == AttachMode::native || mode == AttachMode::automatic) {
		err = xdp_program__attach(xp, ifindex, XDP_MODE_NATIVE, 0);
		if (err && mode == AttachMode::native)
			return fail(ErrorKind::system,
				    "native XDP attach through libxdp failed on " + where +
					    " (the driver may not support native XDP, or another program is attached "
					    "without libxdp: see `xdp-loader status`); use --mode skb, or --mode auto" +
					    log.said(),
				    -err);
	}
	if (err) {
		err = xdp_program__attach(xp, ifindex, XDP_MODE_SKB, 0);
		in_force = AttachMode::skb;
	}
	if (err)
		return fail(ErrorKind::system, "XDP attach through libxdp failed on " + where + log.said(), -err);

	// libxdp falls back to attaching a lone program when its dispatcher
	// cannot be loaded (the kernel refuses freplace programs): then nothing
	// else could share the interface, which is what --multiprog is for.
	auto mp = multiprog_of(static_cast<unsigned>(ifindex));
	if (!mp || xdp_multiprog__is_legacy(mp.get())) {
		std::string said = log.said();
		(void)xdp_program__detach(xp, ifindex, in_force == AttachMode::native ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
		return fail(ErrorKind::system,
			    "libxdp attached sluice alone on " + where +
				    ", not through its multiprog dispatcher, so no other XDP program could run beside "
				    "it; undone. The dispatcher needs the kernel to load freplace (BPF_PROG_TYPE_EXT) "
				    "programs, which kernels under lockdown or without BPF trampolines refuse" +
				    said + "; run sluiced without --multiprog",
			    ENOTSUP);
	}
	if (pending_) {
		prog_ = take_fds(pending_.get(), maps, feeders);
		pending_.reset();
		if (!prog_)
			return fail_errno("duplicating the program fd");
	}
	char name[IF_NAMESIZE] = {};
	if (if_indextoname(static_cast<unsigned>(ifindex), name))
		ifname_ = name;
	return in_force;
}

Status LibxdpAttachment::pin(const std::string &dir) const
{
	if (!prog_)
		return {};
	return pin_object(prog_.get(), dir, kProgramPin);
}

Status LibxdpAttachment::detach()
{
	if (!prog_ || pending_)
		return {}; // never attached
	LibxdpLog log;
	unsigned idx = if_nametoindex(ifname_.c_str());
	if (idx == 0)
		return {}; // the interface is gone, and its programs with it
	auto id = prog_id();
	if (!id)
		return std::unexpected(id.error());
	auto mp = multiprog_of(idx);
	xdp_program *ours = find_in(mp.get(), *id);
	if (!ours)
		return {}; // not attached (any more)
	if (int err = xdp_program__detach(ours, static_cast<int>(idx), xdp_multiprog__attach_mode(mp.get()), 0); err)
		return fail(ErrorKind::system, "removing sluice from libxdp's dispatcher on " + ifname_ + log.said(), -err);
	return {};
}

Result<uint32_t> LibxdpAttachment::ifindex() const
{
	unsigned idx = if_nametoindex(ifname_.c_str());
	if (idx == 0)
		return 0u;
	auto id = prog_id();
	if (!id)
		return std::unexpected(id.error());
	auto mp = multiprog_of(idx);
	return find_in(mp.get(), *id) ? idx : 0u;
}

} // namespace

std::unique_ptr<Attachment> libxdp_attachment(std::shared_ptr<sluice_bpf> opened)
{
	return std::make_unique<LibxdpAttachment>(std::move(opened));
}

Result<std::unique_ptr<Attachment>> adopt_libxdp_attachment(const std::string &dir, const std::string &fix)
{
	std::string path = pin_path(dir, kProgramPin);
	UniqueFd prog(bpf_obj_get(path.c_str()));
	if (!prog)
		return fail(ErrorKind::system, "pin " + path + " cannot be opened" + fix, errno);
	return std::make_unique<LibxdpAttachment>(std::move(prog), std::filesystem::path(dir).filename().string());
}

} // namespace sluice
