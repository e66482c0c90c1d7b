#include "bpf/pin_layout.h"

#include "sluice_bpf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>

namespace sluice {

namespace {

// Every LPM trie (lists, class prefixes) and exact map holds both policy sets.
constexpr uint32_t kLpmEntries = SLUICE_POLICY_SETS * SLUICE_LIST_MAX_ENTRIES;

const std::array<MapPin, 32> kMapPins{{
	{SLUICE_PIN_SLOTS, &MapFds::slots, [](sluice_bpf *s) { return s->maps.slots; }, BPF_MAP_TYPE_ARRAY, 4,
	 sizeof(sluice_slot), Entries::table_slots, 0, true},
	{SLUICE_PIN_CONFIG, &MapFds::config, [](sluice_bpf *s) { return s->maps.config; }, BPF_MAP_TYPE_ARRAY, 4,
	 sizeof(sluice_config), Entries::exact, 1},
	{SLUICE_PIN_COUNTERS, &MapFds::counters, [](sluice_bpf *s) { return s->maps.counters; },
	 BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(sluice_counter), Entries::exact, SLUICE_OUTCOMES},
	// The read-only data: hash key, layout version, table size, prefixes, dry-run.
	{SLUICE_PIN_SETTINGS, &MapFds::settings, [](sluice_bpf *s) { return s->maps.rodata; }, BPF_MAP_TYPE_ARRAY,
	 4, sizeof(sluice_settings), Entries::exact, 1, true},
	{SLUICE_PIN_ALLOW_V4, &MapFds::allow_v4, [](sluice_bpf *s) { return s->maps.allow_v4; },
	 BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v4), 1, Entries::exact, kLpmEntries},
	{SLUICE_PIN_ALLOW_V6, &MapFds::allow_v6, [](sluice_bpf *s) { return s->maps.allow_v6; },
	 BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v6), 1, Entries::exact, kLpmEntries},
	{SLUICE_PIN_DENY_V4, &MapFds::deny_v4, [](sluice_bpf *s) { return s->maps.deny_v4; },
	 BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v4), 1, Entries::exact, kLpmEntries},
	{SLUICE_PIN_DENY_V6, &MapFds::deny_v6, [](sluice_bpf *s) { return s->maps.deny_v6; },
	 BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v6), 1, Entries::exact, kLpmEntries},
	// The lists' whole addresses (/32, /128), both sets.
	{SLUICE_PIN_DENY_EXACT_V4, &MapFds::deny_exact_v4, [](sluice_bpf *s) { return s->maps.deny_exact_v4; },
	 BPF_MAP_TYPE_HASH, sizeof(sluice_exact_v4), 1, Entries::exact, kLpmEntries},
	{SLUICE_PIN_DENY_EXACT_V6, &MapFds::deny_exact_v6, [](sluice_bpf *s) { return s->maps.deny_exact_v6; },
	 BPF_MAP_TYPE_HASH, sizeof(sluice_exact_v6), 1, Entries::exact, kLpmEntries},
	{SLUICE_PIN_ALLOW_EXACT_V4, &MapFds::allow_exact_v4, [](sluice_bpf *s) { return s->maps.allow_exact_v4; },
	 BPF_MAP_TYPE_HASH, sizeof(sluice_exact_v4), 1, Entries::exact, kLpmEntries},
	{SLUICE_PIN_ALLOW_EXACT_V6, &MapFds::allow_exact_v6, [](sluice_bpf *s) { return s->maps.allow_exact_v6; },
	 BPF_MAP_TYPE_HASH, sizeof(sluice_exact_v6), 1, Entries::exact, kLpmEntries},
	{SLUICE_PIN_DROP_SAMPLES, &MapFds::drop_samples, [](sluice_bpf *s) { return s->maps.drop_samples; },
	 BPF_MAP_TYPE_RINGBUF, 0, 0, Entries::exact, SLUICE_SAMPLE_RING_BYTES},
	{SLUICE_PIN_STANDING, &MapFds::standing, [](sluice_bpf *s) { return s->maps.standing; }, BPF_MAP_TYPE_ARRAY,
	 4, sizeof(sluice_standing_set), Entries::standing_sets, 0, true},
	{SLUICE_PIN_NEWCOMERS, &MapFds::newcomers, [](sluice_bpf *s) { return s->maps.newcomers; },
	 BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(sluice_slot), Entries::exact, 1},
	{SLUICE_PIN_OBSERVED, &MapFds::observed, [](sluice_bpf *s) { return s->maps.observed; }, BPF_MAP_TYPE_ARRAY,
	 4, sizeof(sluice_observed_set), Entries::observed_sets, 0, true},
	// The policy classes, both sets (sluice_abi.h).
	{SLUICE_PIN_CLASSES, &MapFds::classes, [](sluice_bpf *s) { return s->maps.classes; }, BPF_MAP_TYPE_ARRAY, 4,
	 sizeof(sluice_class), Entries::exact, SLUICE_POLICY_SETS * SLUICE_CLASSES_MAX},
	{SLUICE_PIN_CLASS_V4, &MapFds::class_v4, [](sluice_bpf *s) { return s->maps.class_v4; },
	 BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v4), sizeof(sluice_class_matches), Entries::exact, kLpmEntries},
	{SLUICE_PIN_CLASS_V6, &MapFds::class_v6, [](sluice_bpf *s) { return s->maps.class_v6; },
	 BPF_MAP_TYPE_LPM_TRIE, sizeof(sluice_lpm_v6), sizeof(sluice_class_matches), Entries::exact, kLpmEntries},
	{SLUICE_PIN_PORT_CLASSES, &MapFds::port_classes, [](sluice_bpf *s) { return s->maps.port_classes; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_port_block), Entries::exact,
	 SLUICE_POLICY_SETS * SLUICE_L4_KINDS * SLUICE_PORT_BLOCKS},
	{SLUICE_PIN_CLASS_COUNTERS, &MapFds::class_counters, [](sluice_bpf *s) { return s->maps.class_counters; },
	 BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(sluice_counter), Entries::exact, SLUICE_CLASS_COUNTER_KEYS},
	// The cookie budget, one bucket per CPU (its scratch map is not state:
	// never pinned, made anew with each load; nor is the drop sampling's
	// countdown, which a new load starts at 0, nor the slot pairs' per-CPU
	// leases, whose tokens a new load loses: under-admitted, bpf/bucket.h).
	{SLUICE_PIN_COOKIE_BUDGET, &MapFds::cookie_budget, [](sluice_bpf *s) { return s->maps.cookie_budget; },
	 BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(sluice_slot), Entries::exact, 1},
	// The TCP ports that have had a listener (the cookie path's hint).
	{SLUICE_PIN_LISTEN_PORTS, &MapFds::listen_ports, [](sluice_bpf *s) { return s->maps.listen_ports; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(__u64), Entries::exact, SLUICE_LISTEN_PORT_WORDS},
	// Capture (bpf/capture.h): the control word is a global of its own data
	// section; the perf event array's entries are the capturing daemon's.
	{SLUICE_PIN_CAPTURE, &MapFds::capture, [](sluice_bpf *s) { return s->maps.data_capture; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_capture), Entries::exact, 1},
	{SLUICE_PIN_CAPTURE_EVENTS, &MapFds::capture_events, [](sluice_bpf *s) { return s->maps.capture_events; },
	 BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, Entries::possible_cpus, 0},
	{SLUICE_PIN_CAPTURE_STATS, &MapFds::capture_stats, [](sluice_bpf *s) { return s->maps.capture_stats; },
	 BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(sluice_capture_stats), Entries::exact, 1},
	// Earned, bounded trust: revoked standing, the UDP feeders' budget per user.
	{SLUICE_PIN_STANDING_PENALTY, &MapFds::standing_penalty, [](sluice_bpf *s) { return s->maps.standing_penalty; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_penalty_set), Entries::penalty_sets, 0, true},
	{SLUICE_PIN_GRANT_QUOTA, &MapFds::grant_quota, [](sluice_bpf *s) { return s->maps.grant_quota; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_slot), Entries::exact, SLUICE_GRANT_QUOTA_ENTRIES},
	{SLUICE_PIN_OWN_ADDRS, &MapFds::own_addrs, [](sluice_bpf *s) { return s->maps.own_addrs; }, BPF_MAP_TYPE_HASH,
	 sizeof(sluice_addr16), 1, Entries::exact, SLUICE_OWN_ADDRS_MAX},
	// The per-prefix quota's counts, one per standing way's bit.
	{SLUICE_PIN_PREFIX_COUNT, &MapFds::prefix_count, [](sluice_bpf *s) { return s->maps.prefix_count; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(__u32), Entries::quota_counts, 0, true},
	// The per-destination SYN-ACK bound, a bucket per slot of a network.
	{SLUICE_PIN_COOKIE_DEST, &MapFds::cookie_dest, [](sluice_bpf *s) { return s->maps.cookie_dest; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(sluice_slot), Entries::exact, SLUICE_COOKIE_DEST_SLOTS, true},
	// The cookie path's SYN stamps, a tick per slot of a source.
	{SLUICE_PIN_COOKIE_SYNS, &MapFds::cookie_syns, [](sluice_bpf *s) { return s->maps.cookie_syns; },
	 BPF_MAP_TYPE_ARRAY, 4, sizeof(__u64), Entries::exact, SLUICE_COOKIE_SYN_WORDS, true},
}};

const std::array<FeederPin, 5> kFeederPins{{
	{SLUICE_PIN_SOCKOPS_LINK, &FeederFds::sockops, [](sluice_bpf *s) { return s->progs.sluice_sockops; },
	 BPF_CGROUP_SOCK_OPS},
	{SLUICE_PIN_CONNECT4_LINK, &FeederFds::connect4, [](sluice_bpf *s) { return s->progs.sluice_connect4; },
	 BPF_CGROUP_INET4_CONNECT},
	{SLUICE_PIN_CONNECT6_LINK, &FeederFds::connect6, [](sluice_bpf *s) { return s->progs.sluice_connect6; },
	 BPF_CGROUP_INET6_CONNECT},
	{SLUICE_PIN_SENDMSG4_LINK, &FeederFds::sendmsg4, [](sluice_bpf *s) { return s->progs.sluice_sendmsg4; },
	 BPF_CGROUP_UDP4_SENDMSG},
	{SLUICE_PIN_SENDMSG6_LINK, &FeederFds::sendmsg6, [](sluice_bpf *s) { return s->progs.sluice_sendmsg6; },
	 BPF_CGROUP_UDP6_SENDMSG},
}};

int dup_fd(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

} // namespace

uint32_t penalty_sets(uint32_t standing_sets)
{
	return std::max<uint32_t>(1, standing_sets / SLUICE_PENALTY_SETS_DIVISOR);
}

std::span<const MapPin> map_pins()
{
	return kMapPins;
}

std::span<const FeederPin> feeder_pins()
{
	return kFeederPins;
}

std::string pin_path(const std::string &dir, const char *name)
{
	return dir + "/" + name;
}

bool pin_exists(const std::string &dir, const char *name)
{
	struct stat st {};
	return ::stat(pin_path(dir, name).c_str(), &st) == 0;
}

Status pin_object(int fd, const std::string &dir, const char *name)
{
	std::string path = pin_path(dir, name);
	if (int err = bpf_obj_pin(fd, path.c_str()); err && errno != EEXIST)
		return fail_errno("pinning " + path);
	return {};
}

void remove_pin(const std::string &dir, const char *name)
{
	std::error_code ec;
	std::filesystem::remove(pin_path(dir, name), ec);
}

Status remove_pins(const std::string &dir)
{
	remove_pin(dir, kLinkPin);
	remove_pin(dir, kProgramPin);
	for (const auto &f : feeder_pins())
		remove_pin(dir, f.link_pin);
	for (const auto &m : map_pins())
		remove_pin(dir, m.pin);
	std::error_code ec;
	std::filesystem::remove(dir, ec);
	if (ec)
		return fail(ErrorKind::system, "removing pin directory " + dir, ec.value());
	return {};
}

UniqueFd take_fds(sluice_bpf *skel, MapFds &maps, FeederFds &feeders)
{
	for (const auto &m : map_pins())
		(maps.*m.fd).reset(dup_fd(bpf_map__fd(m.of(skel))));
	for (const auto &f : feeder_pins())
		(feeders.*f.prog).reset(dup_fd(bpf_program__fd(f.of(skel))));
	return UniqueFd(dup_fd(bpf_program__fd(skel->progs.sluice_xdp)));
}

} // namespace sluice
