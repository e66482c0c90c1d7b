#include "bpf/dataplane.h"

#include "sluice_bpf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <net/if.h>
#include <sys/random.h>
#include <sys/stat.h>

namespace sluice {

// Every pinned map: its pin name, where its fd lives, and the layout this
// build expects (max_entries 0: any, checked elsewhere).
struct MapSpec {
	const char *pin;
	UniqueFd Dataplane::*fd;
	bpf_map_type type;
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
};

// Spelled out here (not in the header) so the member pointers can name privates.
struct DataplaneLayout {
	static const std::array<MapSpec, 9> &maps();
};

} // namespace sluice

namespace sluice {

Status validate_load_options(const LoadOptions &o)
{
	if (o.slots < SLUICE_SLOTS_MIN || o.slots > SLUICE_SLOTS_MAX || (o.slots & (o.slots - 1)) != 0)
		return invalid("table size " + std::to_string(o.slots) + " must be a power of two between " +
			       std::to_string(SLUICE_SLOTS_MIN) + " and " + std::to_string(SLUICE_SLOTS_MAX));
	if (o.v4_prefix > 32)
		return invalid("IPv4 prefix length " + std::to_string(o.v4_prefix) + " is outside 0..32");
	if (o.v6_prefix > 128)
		return invalid("IPv6 prefix length " + std::to_string(o.v6_prefix) + " is outside 0..128");
	if (o.sample_every > SLUICE_SAMPLE_EVERY_MAX || (o.sample_every & (o.sample_every - 1)) != 0)
		return invalid("drop sampling 1 in " + std::to_string(o.sample_every) +
			       " must be 0 (off) or a power of two up to " + std::to_string(SLUICE_SAMPLE_EVERY_MAX));
	return {};
}

const std::array<MapSpec, 9> &DataplaneLayout::maps()
{
	static const std::array<MapSpec, 9> specs{{
		{SLUICE_PIN_SLOTS, &Dataplane::slots_, BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_slot), 0},
		{SLUICE_PIN_CONFIG, &Dataplane::config_, BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_config), 1},
		{SLUICE_PIN_COUNTERS, &Dataplane::counters_, BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(sluice_counter),
		 SLUICE_OUTCOMES},
		{SLUICE_PIN_SETTINGS, &Dataplane::settings_map_, BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_settings), 1},
		{SLUICE_PIN_ALLOW_V4, &Dataplane::allow_v4_, BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v4), 1,
		 SLUICE_LIST_MAX_ENTRIES},
		{SLUICE_PIN_ALLOW_V6, &Dataplane::allow_v6_, BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v6), 1,
		 SLUICE_LIST_MAX_ENTRIES},
		{SLUICE_PIN_DENY_V4, &Dataplane::deny_v4_, BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v4), 1,
		 SLUICE_LIST_MAX_ENTRIES},
		{SLUICE_PIN_DENY_V6, &Dataplane::deny_v6_, BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v6), 1,
		 SLUICE_LIST_MAX_ENTRIES},
		{SLUICE_PIN_DROP_SAMPLES, &Dataplane::drop_samples_, BPF_MAP_TYPE_RINGBUF, 0, 0,
		 SLUICE_SAMPLE_RING_BYTES},
	}};
	return specs;
}

namespace {

struct SkelDeleter {
	void operator()(sluice_bpf *s) const { sluice_bpf__destroy(s); }
};

int dup_fd(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

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

} // namespace

void Dataplane::take_fds(sluice_bpf *skel)
{
	prog_.reset(dup_fd(bpf_program__fd(skel->progs.sluice_xdp)));
	const std::pair<bpf_map *, UniqueFd Dataplane::*> maps[] = {
		{skel->maps.slots, &Dataplane::slots_},       {skel->maps.config, &Dataplane::config_},
		{skel->maps.counters, &Dataplane::counters_}, {skel->maps.rodata, &Dataplane::settings_map_},
		{skel->maps.allow_v4, &Dataplane::allow_v4_}, {skel->maps.allow_v6, &Dataplane::allow_v6_},
		{skel->maps.deny_v4, &Dataplane::deny_v4_},   {skel->maps.deny_v6, &Dataplane::deny_v6_},
		{skel->maps.drop_samples, &Dataplane::drop_samples_},
	};
	for (auto [map, member] : maps)
		(this->*member).reset(dup_fd(bpf_map__fd(map)));
}

Result<Dataplane> Dataplane::load(const LoadOptions &opts, const sluice_config &initial)
{
	if (auto ok = validate_load_options(opts); !ok)
		return std::unexpected(ok.error());
	if (auto ok = validate_config(initial); !ok)
		return std::unexpected(ok.error());

	std::unique_ptr<sluice_bpf, SkelDeleter> skel(sluice_bpf::open());
	if (!skel)
		return fail_errno("opening the embedded BPF object");

	auto &s = const_cast<sluice_settings &>(skel->rodata->settings);
	if (opts.hash_key) {
		s.hash_key[0] = (*opts.hash_key)[0];
		s.hash_key[1] = (*opts.hash_key)[1];
	} else {
		uint64_t key[2];
		if (getrandom(key, sizeof(key), 0) != sizeof(key))
			return fail_errno("reading the hash key from getrandom()");
		s.hash_key[0] = key[0];
		s.hash_key[1] = key[1];
	}
	s.layout_version = SLUICE_LAYOUT_VERSION;
	s.slot_mask = opts.slots - 1;
	s.v4_prefix = opts.v4_prefix;
	s.v6_prefix = opts.v6_prefix;
	s.dry_run = opts.dry_run;
	s.one_choice = opts.one_choice;
	s.sample_every = opts.sample_every;
	if (int err = bpf_map__set_max_entries(skel->maps.slots, opts.slots); err)
		return fail_bpf(err, "sizing the slot table to " + std::to_string(opts.slots));

	Dataplane dp;
	dp.settings_ = s;
	if (opts.multiprog) {
		// libxdp loads the object in attach(), as an extension of its
		// dispatcher. The config map is made here and handed to the object,
		// so that the program reads the initial config from its first frame.
		int cfd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "config", sizeof(uint32_t), sizeof(sluice_config), 1, nullptr);
		if (cfd < 0)
			return fail_errno("creating the config map");
		dp.config_.reset(cfd);
		if (auto ok = dp.config().write(initial); !ok)
			return std::unexpected(ok.error());
		if (int err = bpf_map__reuse_fd(skel->maps.config, cfd); err)
			return fail_bpf(err, "handing the config map to the program");
		dp.multiprog_ = true;
		dp.pending_ = std::shared_ptr<sluice_bpf>(skel.release(), SkelDeleter());
		return dp;
	}

	if (int err = sluice_bpf::load(skel.get()); err)
		return fail_bpf(err, "loading the XDP program (the kernel log has the verifier's reason; "
				     "sluice needs Linux >= 5.12 with BTF)");

	dp.take_fds(skel.get());
	if (!dp.prog_)
		return fail_errno("duplicating the program fd");

	if (auto ok = dp.config().write(initial); !ok)
		return std::unexpected(ok.error());
	return dp;
}

bool Dataplane::has_pins(const std::string &dir)
{
	struct stat st {};
	return ::stat((dir + "/" + SLUICE_PIN_LINK).c_str(), &st) == 0 ||
	       ::stat((dir + "/" + SLUICE_PIN_MULTIPROG).c_str(), &st) == 0;
}

Result<Dataplane> Dataplane::adopt(const std::string &dir)
{
	const std::string fix = "; if no sluice of this version made it, detach with the sluicectl that did, or "
				"remove it with `rm -r " +
				dir + "` (that detaches its program)";
	Dataplane dp;
	for (const auto &spec : DataplaneLayout::maps()) {
		std::string path = dir + "/" + spec.pin;
		int fd = bpf_obj_get(path.c_str());
		if (fd < 0)
			return fail(ErrorKind::system, "pin " + path + " cannot be opened" + fix, errno);
		(dp.*spec.fd).reset(fd);
		bpf_map_info info{};
		uint32_t len = sizeof(info);
		if (int err = bpf_obj_get_info_by_fd(fd, &info, &len); err)
			return fail_bpf(err, "reading map info of " + path);
		if (info.type != static_cast<uint32_t>(spec.type) || info.key_size != spec.key_size ||
		    info.value_size != spec.value_size || (spec.max_entries && info.max_entries != spec.max_entries))
			return refused("pin " + path + " has another map layout (type " + std::to_string(info.type) +
				       ", key " + std::to_string(info.key_size) + " B, value " +
				       std::to_string(info.value_size) + " B, " + std::to_string(info.max_entries) +
				       " entries) than this build's layout " + std::to_string(SLUICE_LAYOUT_VERSION) +
				       " expects" + fix);
	}
	if (auto ok = dp.read_settings(); !ok)
		return std::unexpected(ok.error());
	if (dp.settings_.layout_version != SLUICE_LAYOUT_VERSION)
		return refused("pins under " + dir + " were made under layout " +
			       std::to_string(dp.settings_.layout_version) + ", this build uses layout " +
			       std::to_string(SLUICE_LAYOUT_VERSION) + fix);
	bpf_map_info slots_info{};
	uint32_t len = sizeof(slots_info);
	bpf_obj_get_info_by_fd(dp.slots_.get(), &slots_info, &len);
	if (slots_info.max_entries != dp.settings_.slot_mask + 1)
		return refused("pins under " + dir + " disagree with themselves (slot table of " +
			       std::to_string(slots_info.max_entries) + ", settings say " +
			       std::to_string(dp.settings_.slot_mask + 1) + ")" + fix);

	std::string link_path = dir + "/" + SLUICE_PIN_LINK;
	std::string multiprog_path = dir + "/" + SLUICE_PIN_MULTIPROG;
	struct stat st {};
	if (::stat(link_path.c_str(), &st) != 0 && ::stat(multiprog_path.c_str(), &st) == 0) {
		// Attached through libxdp's dispatcher: the program is pinned, libxdp
		// holds (and replaces) the links; the pin directory names the interface.
		int prog = bpf_obj_get(multiprog_path.c_str());
		if (prog < 0)
			return fail(ErrorKind::system, "pin " + multiprog_path + " cannot be opened" + fix, errno);
		dp.prog_.reset(prog);
		dp.multiprog_ = true;
		dp.ifname_ = std::filesystem::path(dir).filename().string();
		return dp;
	}
	int link = bpf_obj_get(link_path.c_str());
	if (link < 0)
		return fail(ErrorKind::system, "pin " + link_path + " cannot be opened" + fix, errno);
	dp.link_.reset(link);
	bpf_link_info li{};
	len = sizeof(li);
	if (int err = bpf_obj_get_info_by_fd(link, &li, &len); err)
		return fail_bpf(err, "reading link info of " + link_path);
	int prog = bpf_prog_get_fd_by_id(li.prog_id);
	if (prog < 0)
		return fail_errno("opening the program of " + link_path);
	dp.prog_.reset(prog);
	return dp;
}

Status Dataplane::read_settings()
{
	uint32_t zero = 0;
	if (int err = bpf_map_lookup_elem(settings_map_.get(), &zero, &settings_); err)
		return fail_bpf(err, "reading the settings map");
	return {};
}

Result<AttachMode> Dataplane::attach(int ifindex, AttachMode mode)
{
	if (multiprog_)
		return attach_multiprog(ifindex, mode);
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

Status Dataplane::pin(const std::string &dir) const
{
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	if (ec)
		return fail(ErrorKind::system, "creating pin directory " + dir, ec.value());
	auto pin_one = [&](int fd, const char *name) -> Status {
		std::string path = dir + "/" + name;
		if (int err = bpf_obj_pin(fd, path.c_str()); err && errno != EEXIST)
			return fail_errno("pinning " + path);
		return {};
	};
	for (const auto &spec : DataplaneLayout::maps())
		if (auto ok = pin_one((this->*spec.fd).get(), spec.pin); !ok)
			return ok;
	if (link_)
		if (auto ok = pin_one(link_.get(), SLUICE_PIN_LINK); !ok)
			return ok;
	if (multiprog_ && prog_)
		if (auto ok = pin_one(prog_.get(), SLUICE_PIN_MULTIPROG); !ok)
			return ok;
	return {};
}

Status Dataplane::detach(const std::string &dir)
{
	if (link_) {
		// Detach first: then the pin removal cannot leave a live link behind.
		if (int err = bpf_link_detach(link_.get()); err && err != -EINVAL)
			return fail_bpf(err, "detaching the XDP link");
	}
	link_.reset();
	if (multiprog_ && prog_ && !pending_)
		if (auto ok = detach_multiprog(); !ok)
			return ok;
	std::error_code ec;
	std::filesystem::remove(dir + "/" + SLUICE_PIN_LINK, ec);
	std::filesystem::remove(dir + "/" + SLUICE_PIN_MULTIPROG, ec);
	for (const auto &spec : DataplaneLayout::maps())
		std::filesystem::remove(dir + "/" + spec.pin, ec);
	std::filesystem::remove(dir, ec);
	if (ec)
		return fail(ErrorKind::system, "removing pin directory " + dir, ec.value());
	return {};
}

Result<uint32_t> Dataplane::prog_id() const
{
	bpf_prog_info info{};
	uint32_t len = sizeof(info);
	if (int err = bpf_obj_get_info_by_fd(prog_.get(), &info, &len); err)
		return fail_bpf(err, "reading program info");
	return info.id;
}

Result<uint32_t> Dataplane::link_ifindex() const
{
	if (multiprog_)
		return multiprog_ifindex();
	if (!link_)
		return 0u;
	bpf_link_info li{};
	uint32_t len = sizeof(li);
	if (int err = bpf_obj_get_info_by_fd(link_.get(), &li, &len); err)
		return fail_bpf(err, "reading link info");
	return li.xdp.ifindex;
}

Result<AttachMode> Dataplane::attach_multiprog(int ifindex, AttachMode mode)
{
	LibxdpLog log;
	const std::string where = "ifindex " + std::to_string(ifindex);
	xdp_program *xp = nullptr;
	if (pending_) {
		DECLARE_LIBXDP_OPTS(xdp_program_opts, xo, .obj = pending_->obj, .prog_name = "sluice_xdp");
		xp = xdp_program__create(&xo);
	} else {
		// Loaded before (the interface came back): libxdp links it again.
		int fd = dup_fd(prog_.get());
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
		take_fds(pending_.get());
		pending_.reset();
		if (!prog_)
			return fail_errno("duplicating the program fd");
	}
	char name[IF_NAMESIZE] = {};
	if (if_indextoname(static_cast<unsigned>(ifindex), name))
		ifname_ = name;
	return in_force;
}

Result<uint32_t> Dataplane::multiprog_ifindex() const
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

Status Dataplane::detach_multiprog()
{
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

} // namespace sluice
