// load.cpp - a fresh program from the embedded skeleton: the load options
// checked, the settings written into its read-only data, the maps sized, the
// initial config in place before the first frame.
#include "bpf/attachment.h"
#include "bpf/dataplane.h"

#include "base/limits.h"
#include "clock/dataplane_clock.h"

#include "sluice_bpf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <fstream>
#include <memory>
#include <utility>
#include <sys/random.h>

namespace sluice {

Status validate_load_options(const LoadOptions &o)
{
	if (auto ok = named("table size", check_table_slots(o.slots)); !ok)
		return ok;
	if (auto ok = named("IPv4 prefix length", check_v4_prefix(o.v4_prefix)); !ok)
		return ok;
	if (auto ok = named("IPv6 prefix length", check_v6_prefix(o.v6_prefix)); !ok)
		return ok;
	if (auto ok = named("drop sampling 1 in", check_sample_every(o.sample_every)); !ok)
		return ok;
	if (auto ok = named("standing sets", check_standing_sets(o.standing_sets)); !ok)
		return ok;
	if (auto ok = named("standing lapse", check_standing_lapse_s(o.standing_lapse_s)); !ok)
		return ok;
	return named("observe periods", check_observe_periods(o.observe_periods));
}

uint32_t standing_lapse_ticks(uint32_t lapse_s)
{
	return SLUICE_STANDING_TICKS_OF(lapse_s);
}

namespace {

// The kernel's ephemeral port range (net.ipv4.ip_local_port_range, which
// IPv6 shares): the ports UDP client sockets are bound to. Its default when
// unreadable.
std::pair<uint32_t, uint32_t> ephemeral_ports()
{
	std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
	uint32_t lo = 0, hi = 0;
	if (in >> lo >> hi && lo > 0 && lo <= hi && hi <= 65535)
		return {lo, hi};
	return {SLUICE_EPHEMERAL_LO_DEFAULT, SLUICE_EPHEMERAL_HI_DEFAULT};
}

} // namespace

void SkelDeleter::operator()(sluice_bpf *s) const
{
	sluice_bpf__destroy(s);
}

Result<std::array<uint64_t, 2>> draw_hash_key()
{
	std::array<uint64_t, 2> key{};
	if (getrandom(key.data(), sizeof(key), 0) != sizeof(key))
		return fail_errno("reading the hash key from getrandom()");
	return key;
}

Status size_maps(sluice_bpf *skel, const sluice_settings &s)
{
	auto size = [&](const MapPin &m, uint32_t n, const std::string &what) -> Status {
		if (int err = bpf_map__set_max_entries(m.of(skel), n); err)
			return fail_bpf(err, "sizing the " + what + " to " + std::to_string(n));
		return {};
	};
	const uint32_t standing_sets = s.standing_set_mask + 1;
	for (const auto &m : map_pins()) {
		Status ok;
		if (m.entries == Entries::table_slots)
			ok = size(m, s.slot_mask + 1, "slot table");
		else if (m.entries == Entries::standing_sets)
			ok = size(m, standing_sets, "standing table (sets)");
		else if (m.entries == Entries::penalty_sets)
			ok = size(m, s.penalty_set_mask + 1, "penalty map (sets)");
		else if (m.entries == Entries::quota_counts)
			ok = size(m, standing_sets * SLUICE_STANDING_WAYS, "prefix quota's map (counts)");
		else if (m.entries == Entries::observed_sets)
			ok = size(m, s.observe_set_mask + 1, "observed map (sets)");
		if (!ok)
			return ok;
	}
	return {};
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
		auto key = draw_hash_key();
		if (!key)
			return std::unexpected(key.error());
		s.hash_key[0] = (*key)[0];
		s.hash_key[1] = (*key)[1];
	}
	s.layout_version = SLUICE_LAYOUT_VERSION;
	s.slot_mask = opts.slots - 1;
	s.v4_prefix = opts.v4_prefix;
	s.v6_prefix = opts.v6_prefix;
	s.dry_run = opts.dry_run;
	s.one_choice = opts.one_choice;
	s.sample_every = opts.sample_every;
	s.standing_set_mask = opts.standing_sets - 1;
	s.standing_lapse_ticks = standing_lapse_ticks(opts.standing_lapse_s);
	const uint32_t observed_sets = opts.observe_periods ? opts.standing_sets : 1;
	s.observe_periods = opts.observe_periods;
	s.observe_set_mask = observed_sets - 1;
	s.penalty_set_mask = penalty_sets(opts.standing_sets) - 1;
	auto [lo, hi] = ephemeral_ports();
	s.ephemeral_lo = lo;
	s.ephemeral_hi = hi;
	// The program's clock (bpf/jiffies_clock.h), and a first reading of it
	// from the host: where the probe cannot run, nothing is loaded.
	auto tick = dataplane_tick_ns();
	if (!tick)
		return std::unexpected(tick.error());
	s.clock_tick_ns = *tick;
	if (auto now = read_dataplane_clock(); !now)
		return std::unexpected(now.error());
	if (auto ok = size_maps(skel.get(), s); !ok)
		return std::unexpected(ok.error());

	Dataplane dp;
	dp.settings_ = s;
	if (opts.multiprog) {
		// libxdp loads the object in attach(), as an extension of its
		// dispatcher. The config map is made here and handed to the object,
		// so that the program reads the initial config from its first frame.
		int cfd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "config", sizeof(uint32_t), sizeof(sluice_config), 1, nullptr);
		if (cfd < 0)
			return fail_errno("creating the config map");
		dp.maps_.config.reset(cfd);
		if (auto ok = dp.config().write(initial); !ok)
			return std::unexpected(ok.error());
		if (int err = bpf_map__reuse_fd(skel->maps.config, cfd); err)
			return fail_bpf(err, "handing the config map to the program");
		dp.attachment_ = libxdp_attachment(std::shared_ptr<sluice_bpf>(skel.release(), SkelDeleter()));
		return dp;
	}

	if (int err = sluice_bpf::load(skel.get()); err)
		return fail_bpf(err, "loading the XDP program (the kernel log has the verifier's reason; "
				     "sluice needs Linux >= 5.12 with BTF)");

	UniqueFd prog = take_fds(skel.get(), dp.maps_, dp.feeder_progs_);
	if (!prog)
		return fail_errno("duplicating the program fd");
	dp.attachment_ = link_attachment(std::move(prog));

	if (auto ok = dp.config().write(initial); !ok)
		return std::unexpected(ok.error());
	return dp;
}

} // namespace sluice
