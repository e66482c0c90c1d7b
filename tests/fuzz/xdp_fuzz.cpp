// xdp_fuzz.cpp - libFuzzer harness for the real, loaded XDP program.
//
// Every input is run through sluice_xdp with BPF_PROG_TEST_RUN
// (bpf_prog_test_run_opts), and after every run the harness checks, from the
// maps:
//   - the verdict is XDP_PASS or XDP_DROP, or XDP_TX for a SYN answered with
//     a cookie (never XDP_ABORTED or anything else), and the one the outcome
//     calls for;
//   - the counters add up: every repetition counted under exactly one outcome
//     (packets and bytes), the outcome the host's own parse of the frame
//     (bpf/parse.h) and the lists call for; would_drop only in dry-run, and
//     there exactly once per drop verdict;
//   - the bucket did what bpf/bucket.h says: the frame's two slots (computed
//     with bpf/source_key.h) are the only slots of the table that changed, a
//     changed slot holds between 0 and burst tokens of credit at the time of
//     the run, and the number admitted is what the fuller slot held;
//   - every slot of the (small) table is swept after every run and compared
//     with the harness's copy;
//   - standing: the frame's source has a live entry planted (or none), its
//     standing bucket is the only one that may change, and holds between 0
//     and standing_burst tokens; what it admitted is what it held; the
//     newcomer budget (one bucket per CPU) changed on at most one CPU,
//     only when its packet budget admitted a newcomer (counted newcomer, or
//     drop_bytes when a byte budget then refused it: the token stays spent),
//     within [0, newcomer_burst], and admitted no more than it held.
//   - under a policy (an input starting "SP", see "policies" below): the
//     frame's class, from the host's copy of the tables and bpf/class_match.h,
//     counts it in class_counters exactly as the global counters do (no other
//     class row moves; without a class flag none does); a deny class drops
//     (drop_class), an exempt class passes (exempt), a limit class's frames
//     are held by the slot pair of its own key (source_key.h's class key,
//     its prefixes) and, with a byte budget, by the byte pair too: those are
//     the only slots that change, each within its own burst (packets x cost,
//     byte_burst_ns); without a byte budget, admitted exactly as above with
//     the class's budgets.
//   - SYN cookies (an input with "SC", see "cookies" below): the harness
//     runs in a network namespace of its own with net.ipv4.tcp_syncookies = 2
//     and a listening socket on port 80 for each family, so the program's
//     cookie path runs for real (bpf_skc_lookup_tcp, bpf_tcp_gen_syncookie,
//     bpf_tcp_raw_check_syncookie_*). While cookies are in force, a TCP frame of a
//     source without standing that reaches the budgets is counted once, as
//     the host's own reading of its headers calls for: IPv4 options, a
//     fragment, IPv6 extension headers before TCP or a cut TCP header ->
//     drop_cookie_unfit; a SYN to port 80 -> cookie_sent (XDP_TX) or
//     drop_cookie_budget, and only with a token of the cookie budget left or
//     none (one CPU's bucket at most changes, within [0, burst]; the
//     per-destination bound is off in every config here, so never
//     drop_cookie_reflect: tests/bpf/cookie_test.cpp has it); an ACK to
//     port 80 -> cookie_proved or drop_cookie; anything else as without
//     cookies. A SYN-ACK sent is one frame, at most 8 bytes longer than the
//     SYN, its Ethernet addresses, IP addresses and ports swapped, its VLAN
//     tags kept, SYN|ACK, ack = the SYN's seq + 1, and its IPv4 and TCP
//     checksums right. Standing changes only for cookie_proved, and then as
//     bpf/standing.h grants it, reason cookie. An input may then send the
//     ACK a client would, with the cookie the SYN-ACK carried plus a delta:
//     delta 0 must be proved, a delta no kernel check accepts (a minute
//     counter off by 2 or more: a cookie older than the two minutes the
//     kernel accepts) dropped as drop_cookie, with no standing.
// The program is the production object (the skeleton embeds it); three
// instances are loaded with different load-time settings (two choices; dry run
// with /24 and /48 prefixes; one choice), chosen per input.
//
// Input: ["SP" policy...] ["SC" cookies...] [scenario][tuning][standing][frame...]
//   scenario bits 0-1: instance (0 two-choice, 1 dry-run, 2 one-choice; 3 = 0)
//            bits 2-3: breaker state (0 serving, 1 shedding, 2 recovering, 3 serving)
//            bit 4: the deny lists are flagged non-empty, bit 5: the allow lists
//            bits 6-7: repetitions - 1 (BPF_PROG_TEST_RUN repeat, 1..4)
//   tuning   bits 0-2: burst - 1 (1..8), bits 3-7: admission while recovering
//   standing bit 0: the source has standing (a live entry planted; else its
//            entry is removed), bit 1: the valve is closed (shedding only),
//            bits 2-3: newcomer burst (0: no newcomer budget), bits 4-5:
//            standing burst (0: no standing bucket), bit 6: the planted
//            entry's standing bucket is refilled to full first, bit 7: the
//            daemon's fair share is in force, at half the standing rate
//   (an input may carry "SU" and a port first: its entry bound to that UDP
//   peer port, see kUdpPortMagic)
//   frame    at most kMaxFrame bytes (longer inputs are cut there); shorter
//            than an Ethernet header is run as a truncated frame.
// The lists hold deny 10.66.0.0/16, 2001:db8:66::/48, 10.77.0.1/32,
// 2001:db8:77::1/128 and allow 10.77.0.0/16, 10.66.77.0/24 (deny wins),
// 2001:db8:77::/48, 10.88.0.1/32, 2001:db8:88::1/128.
//
// Extra flags (libFuzzer ignores flags that start with "--"):
//   --write-corpus=DIR   write the seed corpus (valid IPv4/IPv6/VLAN/QinQ/ARP/
//                        LLDP frames and malformed ones, per scenario) and exit
// Needs root (BPF); exits 125 (ctest: skipped; libFuzzer itself exits 77 on a crash unless told otherwise) without it, or fails in CI (CI=true).
#include "frames.h"
#include "fuzz_support.h"
#include "bpf/sluice_abi.h"
#include "bpf/bucket.h"
#include "bpf/class_match.h"
#include "bpf/cookie.h"
#include "bpf/parse.h"
#include "bpf/source_key.h"
#include "bpf/standing.h"
#include "clock/dataplane_clock.h"
#include "sluice_bpf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

// The port the harness's listeners listen on (see "cookies" below).
constexpr std::uint16_t kListenPort = 80;

using namespace sluice::frames;

constexpr std::size_t kMaxFrame = 1600;
constexpr std::uint64_t kRate = 1000; // tokens/s: cost 1 ms, nothing refills within one run
constexpr __u64 kKey[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};

[[noreturn]] void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::fputs("xdp_fuzz: ", stderr);
	std::vfprintf(stderr, fmt, ap);
	std::fputc('\n', stderr);
	va_end(ap);
	std::fflush(stderr);
	std::abort(); // libFuzzer saves the input as a crash
}

// The program's own clock without the bias (clock/dataplane_clock.h): host
// readings of it bracket the program's readings in between, exactly.
std::uint64_t dataplane_ns()
{
	auto now = sluice::read_dataplane_clock();
	if (!now)
		die("%s", now.error().describe().c_str());
	return *now - SLUICE_TIME_BIAS;
}

struct Prefix {
	bool v6;
	std::array<std::uint8_t, 16> addr;
	std::uint32_t len;
};

const Prefix kDeny[] = {
	{false, {10, 66}, 16},
	{true, {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x66}, 48},
};
// The deny list's whole addresses (deny_exact_v4/_v6, sluiced puts a /32 or
// /128 there): inside an allowed prefix, so only the exact map denies them.
const Prefix kDenyExact[] = {
	{false, {10, 77, 0, 1}, 32},
	{true, {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128},
};
// The allow list's whole addresses (allow_exact_v4/_v6): outside every
// other prefix, so only the exact map allows them.
const Prefix kAllowExact[] = {
	{false, {10, 88, 0, 1}, 32},
	{true, {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x88, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128},
};
const Prefix kAllow[] = {
	{false, {10, 77}, 16},
	{false, {10, 66, 77}, 24},
	{true, {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x77}, 48},
};

// Does the (unmasked) source fall in one of the prefixes? The program looks
// the address up before masking it to the bucket prefix.
template <std::size_t N>
bool in_list(const Prefix (&list)[N], const sluice_source &src, bool v6)
{
	std::uint8_t bytes[16];
	std::memcpy(bytes, src.w, 16);
	for (const Prefix &p : list) {
		if (p.v6 != v6)
			continue;
		bool match = true;
		for (std::uint32_t bit = 0; bit < p.len && match; bit++) {
			std::uint8_t m = std::uint8_t(0x80u >> (bit % 8));
			match = (bytes[bit / 8] & m) == (p.addr[bit / 8] & m);
		}
		if (match)
			return true;
	}
	return false;
}

struct Instance {
	Instance(const char *n, std::uint32_t s, std::uint32_t v4, std::uint32_t v6, std::uint32_t dry,
		 std::uint32_t one)
	    : name(n), slots(s), v4_prefix(v4), v6_prefix(v6), dry_run(dry), one_choice(one)
	{
	}
	const char *name;
	std::uint32_t slots, v4_prefix, v6_prefix, dry_run, one_choice;
	sluice_bpf *skel = nullptr;
	int prog = -1, slots_fd = -1, config_fd = -1, counters_fd = -1, standing_fd = -1, newcomers_fd = -1;
	int cookie_budget_fd = -1;
	sluice_config cfg{};
	std::vector<std::uint64_t> shadow; // every slot's empty_at as last read
	std::vector<sluice_standing_set> standing; // every standing set as last read
	std::vector<std::uint64_t> newcomers;      // each CPU's newcomer bucket as last read
	std::vector<std::uint64_t> cookie_budget;  // each CPU's cookie bucket as last read
	std::array<sluice_counter, SLUICE_OUTCOMES> counters{};
	int classes_fd = -1, port_classes_fd = -1, class_v4_fd = -1, class_v6_fd = -1, class_counters_fd = -1;
	std::vector<sluice_counter> class_counters; // SLUICE_CLASS_COUNTER_KEYS, summed over CPUs
	std::vector<__u32> port_blocks;             // port_classes elements written (zeroed again next input)
	std::vector<sluice_lpm_v4> v4_keys;         // class_v4 / class_v6 entries written
	std::vector<sluice_lpm_v6> v6_keys;
};

Instance g_inst[3] = {
	{"two-choice", 64, 32, 64, 0, 0},
	{"dry-run", 16, 24, 48, 1, 0},
	{"one-choice", 16, 32, 128, 0, 1},
};
int g_ncpu = 1;
bool g_batch = true;
bool g_trace = false; // SLUICE_FUZZ_TRACE=1: one line per input, what it was judged
constexpr std::uint32_t kStandingSets = 16;
constexpr std::uint32_t kStandingLapse = 64; // ticks

void read_standing(const Instance &in, std::vector<sluice_standing_set> &out)
{
	out.assign(kStandingSets, sluice_standing_set{});
	for (__u32 i = 0; i < kStandingSets; i++)
		if (bpf_map_lookup_elem(in.standing_fd, &i, &out[i]))
			die("standing set %u lookup: %s", i, std::strerror(errno));
}

// A per-CPU budget (the newcomer or the cookie budget): each CPU's bucket.
void read_per_cpu(int fd, const char *what, std::vector<std::uint64_t> &out)
{
	std::vector<sluice_slot> per(static_cast<std::size_t>(g_ncpu));
	__u32 zero = 0;
	if (bpf_map_lookup_elem(fd, &zero, per.data()))
		die("%s lookup: %s", what, std::strerror(errno));
	out.resize(per.size());
	for (std::size_t i = 0; i < per.size(); i++)
		out[i] = per[i].empty_at;
}

void read_slots(Instance &in, std::vector<std::uint64_t> &out)
{
	out.assign(in.slots, 0);
	if (g_batch) {
		std::vector<__u32> keys(in.slots);
		__u32 count = in.slots, out_batch = 0;
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		int err = bpf_map_lookup_batch(in.slots_fd, nullptr, &out_batch, keys.data(), out.data(), &count, &opts);
		if ((err == 0 || err == -ENOENT) && count == in.slots) {
			for (__u32 i = 0; i < in.slots; i++)
				if (keys[i] != i)
					die("batch lookup of slots returned key %u at %u", keys[i], i);
			return;
		}
		g_batch = false; // an older kernel: one lookup per slot from now on
	}
	for (__u32 i = 0; i < in.slots; i++)
		if (bpf_map_lookup_elem(in.slots_fd, &i, &out[i]))
			die("slot %u lookup: %s", i, std::strerror(errno));
}

std::array<sluice_counter, SLUICE_OUTCOMES> read_counters(const Instance &in)
{
	std::array<sluice_counter, SLUICE_OUTCOMES> sum{};
	if (g_batch) {
		std::vector<sluice_counter> all(static_cast<std::size_t>(g_ncpu) * SLUICE_OUTCOMES);
		__u32 keys[SLUICE_OUTCOMES], count = SLUICE_OUTCOMES, out_batch = 0;
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		int err = bpf_map_lookup_batch(in.counters_fd, nullptr, &out_batch, keys, all.data(), &count, &opts);
		if ((err == 0 || err == -ENOENT) && count == SLUICE_OUTCOMES) {
			for (__u32 i = 0; i < SLUICE_OUTCOMES; i++) {
				if (keys[i] >= SLUICE_OUTCOMES)
					die("batch lookup of counters returned key %u", keys[i]);
				for (int cpu = 0; cpu < g_ncpu; cpu++) {
					sum[keys[i]].packets += all[std::size_t(i) * std::size_t(g_ncpu) + std::size_t(cpu)].packets;
					sum[keys[i]].bytes += all[std::size_t(i) * std::size_t(g_ncpu) + std::size_t(cpu)].bytes;
				}
			}
			return sum;
		}
		g_batch = false;
	}
	std::vector<sluice_counter> per(static_cast<std::size_t>(g_ncpu));
	for (__u32 o = 0; o < SLUICE_OUTCOMES; o++) {
		if (bpf_map_lookup_elem(in.counters_fd, &o, per.data()))
			die("counter %u lookup: %s", o, std::strerror(errno));
		for (const auto &c : per) {
			sum[o].packets += c.packets;
			sum[o].bytes += c.bytes;
		}
	}
	return sum;
}

// The per-class counters, summed over the CPUs (one batch lookup when the
// kernel has it).
void read_class_counters(const Instance &in, std::vector<sluice_counter> &sum)
{
	sum.assign(SLUICE_CLASS_COUNTER_KEYS, sluice_counter{});
	static std::vector<sluice_counter> all;
	all.resize(std::size_t(g_ncpu) * SLUICE_CLASS_COUNTER_KEYS);
	if (g_batch) {
		static std::vector<__u32> keys(SLUICE_CLASS_COUNTER_KEYS);
		__u32 count = SLUICE_CLASS_COUNTER_KEYS, out_batch = 0;
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		int err = bpf_map_lookup_batch(in.class_counters_fd, nullptr, &out_batch, keys.data(), all.data(), &count,
					       &opts);
		if ((err == 0 || err == -ENOENT) && count == SLUICE_CLASS_COUNTER_KEYS) {
			for (__u32 i = 0; i < count; i++) {
				if (keys[i] >= SLUICE_CLASS_COUNTER_KEYS)
					die("batch lookup of class counters returned key %u", keys[i]);
				for (int cpu = 0; cpu < g_ncpu; cpu++) {
					const sluice_counter &c = all[std::size_t(i) * std::size_t(g_ncpu) + std::size_t(cpu)];
					sum[keys[i]].packets += c.packets;
					sum[keys[i]].bytes += c.bytes;
				}
			}
			return;
		}
		g_batch = false;
	}
	for (__u32 k = 0; k < SLUICE_CLASS_COUNTER_KEYS; k++) {
		if (bpf_map_lookup_elem(in.class_counters_fd, &k, all.data()))
			die("class counter %u lookup: %s", k, std::strerror(errno));
		for (int cpu = 0; cpu < g_ncpu; cpu++) {
			sum[k].packets += all[std::size_t(cpu)].packets;
			sum[k].bytes += all[std::size_t(cpu)].bytes;
		}
	}
}

// A list entry of policy set `set`.
void add_prefix(int fd, const Prefix &p, std::uint32_t set)
{
	std::uint8_t one = 1;
	if (p.v6) {
		sluice_lpm_v6 k{};
		k.prefixlen = SLUICE_LPM_SET_BITS + p.len;
		k.set = std::uint8_t(set);
		std::memcpy(k.addr, p.addr.data(), 16);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			die("list update: %s", std::strerror(errno));
	} else {
		sluice_lpm_v4 k{};
		k.prefixlen = SLUICE_LPM_SET_BITS + p.len;
		k.set = std::uint8_t(set);
		std::memcpy(k.addr, p.addr.data(), 4);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			die("list update: %s", std::strerror(errno));
	}
}

// A list's whole address of policy set `set`.
void add_exact(int fd, const Prefix &p, std::uint32_t set)
{
	std::uint8_t one = 1;
	int err;
	if (p.v6) {
		sluice_exact_v6 k{};
		std::memcpy(k.addr, p.addr.data(), 16);
		k.set = set;
		err = bpf_map_update_elem(fd, &k, &one, BPF_ANY);
	} else {
		sluice_exact_v4 k{};
		std::memcpy(k.addr, p.addr.data(), 4);
		k.set = set;
		err = bpf_map_update_elem(fd, &k, &one, BPF_ANY);
	}
	if (err)
		die("deny exact update: %s", std::strerror(errno));
}

void load(Instance &in)
{
	in.skel = sluice_bpf::open();
	if (!in.skel)
		die("open: %s", std::strerror(errno));
	auto &s = in.skel->rodata->settings;
	s.hash_key[0] = kKey[0];
	s.hash_key[1] = kKey[1];
	s.layout_version = SLUICE_LAYOUT_VERSION;
	s.slot_mask = in.slots - 1;
	s.v4_prefix = in.v4_prefix;
	s.v6_prefix = in.v6_prefix;
	s.dry_run = in.dry_run;
	auto tick = sluice::dataplane_tick_ns();
	if (!tick)
		die("%s", tick.error().describe().c_str());
	s.clock_tick_ns = *tick;
	s.one_choice = in.one_choice;
	s.standing_set_mask = kStandingSets - 1;
	s.standing_lapse_ticks = kStandingLapse;
	if (int e = bpf_map__set_max_entries(in.skel->maps.slots, in.slots))
		die("set_max_entries: %s", std::strerror(-e));
	if (int e = bpf_map__set_max_entries(in.skel->maps.standing, kStandingSets))
		die("set_max_entries (standing): %s", std::strerror(-e));
	if (int e = sluice_bpf::load(in.skel))
		die("load %s: %s", in.name, std::strerror(-e));
	in.prog = bpf_program__fd(in.skel->progs.sluice_xdp);
	in.slots_fd = bpf_map__fd(in.skel->maps.slots);
	in.config_fd = bpf_map__fd(in.skel->maps.config);
	in.counters_fd = bpf_map__fd(in.skel->maps.counters);
	in.standing_fd = bpf_map__fd(in.skel->maps.standing);
	in.newcomers_fd = bpf_map__fd(in.skel->maps.newcomers);
	in.cookie_budget_fd = bpf_map__fd(in.skel->maps.cookie_budget);
	in.classes_fd = bpf_map__fd(in.skel->maps.classes);
	in.port_classes_fd = bpf_map__fd(in.skel->maps.port_classes);
	in.class_v4_fd = bpf_map__fd(in.skel->maps.class_v4);
	in.class_v6_fd = bpf_map__fd(in.skel->maps.class_v6);
	in.class_counters_fd = bpf_map__fd(in.skel->maps.class_counters);
	// The listeners' port marked in listen_ports, as sluiced and the sockops
	// feeder mark it (the cookie path looks a socket up only on a marked
	// port; every other port stays unmarked, as a closed one).
	{
		std::uint32_t word = sluice_listen_port_word(kListenPort);
		std::uint64_t bits = sluice_listen_port_bit(kListenPort);
		if (bpf_map_update_elem(bpf_map__fd(in.skel->maps.listen_ports), &word, &bits, BPF_ANY))
			die("listen_ports update: %s", std::strerror(errno));
	}
	// The lists in both policy sets, as a reload writes them: a policy
	// input may put either in force.
	for (std::uint32_t set = 0; set < SLUICE_POLICY_SETS; set++) {
		for (const Prefix &p : kDeny)
			add_prefix(bpf_map__fd(p.v6 ? in.skel->maps.deny_v6 : in.skel->maps.deny_v4), p, set);
		for (const Prefix &p : kDenyExact)
			add_exact(bpf_map__fd(p.v6 ? in.skel->maps.deny_exact_v6 : in.skel->maps.deny_exact_v4), p, set);
		for (const Prefix &p : kAllow)
			add_prefix(bpf_map__fd(p.v6 ? in.skel->maps.allow_v6 : in.skel->maps.allow_v4), p, set);
		for (const Prefix &p : kAllowExact)
			add_exact(bpf_map__fd(p.v6 ? in.skel->maps.allow_exact_v6 : in.skel->maps.allow_exact_v4), p, set);
	}
	read_slots(in, in.shadow);
	read_standing(in, in.standing);
	read_per_cpu(in.newcomers_fd, "newcomers", in.newcomers);
	read_per_cpu(in.cookie_budget_fd, "cookie_budget", in.cookie_budget);
	in.counters = read_counters(in);
	read_class_counters(in, in.class_counters);
}

// ------------------------------------------------------------- cookies
//
// The harness's own network namespace (private to this process, gone with
// it), where BPF_PROG_TEST_RUN runs the program (the frame's device is the
// namespace's loopback): net.ipv4.tcp_syncookies = 2, so that the kernel
// makes a cookie for the program, and a listening socket on kListenPort for
// IPv4 and for IPv6, so that a SYN or ACK to that port finds a listener and
// one to any other port does not. Nothing else ever connects there, so the
// listeners' accept queues stay empty (a full one would make the kernel
// refuse a cookie). Without it (no CAP_SYS_ADMIN for unshare, a sysctl that
// cannot be written) cookie inputs run with cookies off, and say so; in CI
// (CI=true) that fails the run instead.
bool g_private_netns = false;
bool g_cookies_ok = false;

bool write_proc_sys(const char *path, const char *value)
{
	std::FILE *f = std::fopen(path, "w");
	if (!f)
		return false;
	bool ok = std::fputs(value, f) >= 0;
	return std::fclose(f) == 0 && ok;
}

int listen_on(int family)
{
	int fd = socket(family, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	int rc;
	if (family == AF_INET) {
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_port = htons(kListenPort);
		rc = bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a));
	} else {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		sockaddr_in6 a{};
		a.sin6_family = AF_INET6;
		a.sin6_port = htons(kListenPort);
		rc = bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a));
	}
	if (rc != 0 || listen(fd, 4096) != 0) {
		close(fd);
		return -1;
	}
	return fd; // kept open for the process's life
}

bool in_ci()
{
	const char *ci = std::getenv("CI");
	return ci && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

void private_netns()
{
	if (unshare(CLONE_NEWNET) != 0) {
		std::fprintf(stderr, "xdp_fuzz: unshare(CLONE_NEWNET): %s; cookie inputs run with cookies off\n",
			     std::strerror(errno));
		return;
	}
	g_private_netns = true;
	if (!write_proc_sys("/proc/sys/net/ipv4/tcp_syncookies", "2") ||
	    !write_proc_sys("/proc/sys/net/ipv4/tcp_timestamps", "2")) {
		std::fprintf(stderr, "xdp_fuzz: cannot set tcp_syncookies = 2 in the private namespace: %s; "
				     "cookie inputs run with cookies off\n",
			     std::strerror(errno));
		return;
	}
	if (listen_on(AF_INET) < 0 || listen_on(AF_INET6) < 0) {
		std::fprintf(stderr, "xdp_fuzz: cannot listen on port %u: %s; cookie inputs run with cookies off\n",
			     kListenPort, std::strerror(errno));
		return;
	}
	g_cookies_ok = true;
}

// BPF_PROG_TEST_RUN of an XDP program adds it to the kernel's XDP dispatcher
// and removes it again, on every run: each time the kernel patches the
// dispatcher's code, with IPIs to every CPU, which on a loaded VM costs
// hundreds of microseconds. A program the dispatcher already holds (one
// attached in native mode somewhere) skips that. So each instance is attached
// to a veth of its own, in the harness's private network namespace (above),
// never brought up: no frame ever reaches it there. If that cannot be done
// the harness runs as is, only slower. SLUICE_FUZZ_NO_DISPATCH_PIN=1 skips it.
void pin_in_dispatcher()
{
	if (std::getenv("SLUICE_FUZZ_NO_DISPATCH_PIN"))
		return;
	if (!g_private_netns) {
		std::fprintf(stderr, "xdp_fuzz: no private network namespace; running unpinned\n");
		return;
	}
	for (int i = 0; i < 3; i++) {
		std::string a = "fz" + std::to_string(i), b = "fzp" + std::to_string(i);
		std::string cmd = "ip link add " + a + " type veth peer name " + b + " >/dev/null 2>&1";
		unsigned idx = 0;
		if (std::system(cmd.c_str()) != 0 || (idx = if_nametoindex(a.c_str())) == 0 ||
		    bpf_xdp_attach(int(idx), g_inst[i].prog, XDP_FLAGS_DRV_MODE, nullptr) != 0) {
			std::fprintf(stderr, "xdp_fuzz: cannot attach %s to a private veth; running unpinned\n",
				     g_inst[i].name);
			return;
		}
	}
}

// An input that carries kCookieBytes after kCookieMagic (after the policy's,
// if any) runs with SYN cookies configured (zeros past the end):
//   c[0]  bits 0-1 cookie_mode (0 off, 1 shedding, 2 and 3 always)
//         bit 2 the frame's TCP destination port is set to kListenPort (when
//               the host's parse reaches it: IPv4 without later-fragment
//               offset, IPv6 with TCP next)
//         bits 3-4 the cookie budget per CPU: 0 none, 1 and 2 that burst at
//               1,000 SYN-ACKs a second (spent within a few inputs), 3 a
//               burst of 64 at 1,000,000 a second (seldom spent)
//         bit 5 prove: after a cookie_sent, send the ACK the client would,
//               its ack number the cookie + 1 + delta (no policy inputs: an
//               ACK's class may differ from its SYN's)
//         bit 6 the SYN-ACK may offer timestamps, SACK and window scale
//               (config.cookie_flags as with tcp_timestamps = 2), else MSS only
//         bit 7 config.cookie_acks_unlooked: an ACK checked on its headers
//               alone (as sluiced with the feeders), else after the
//               listener lookup (the same outcomes here: no connections)
//   c[1..4] delta, little-endian
// A cookie input runs its frame once (no repetitions: a repetition after
// XDP_TX would run on the SYN-ACK the first one wrote).
constexpr std::uint8_t kCookieMagic[2] = {'S', 'C'};
constexpr std::size_t kCookieBytes = 5;

// An input that carries two bytes after kUdpPortMagic (after the cookies',
// if any) plants its standing entry bound to that UDP peer port (big-endian;
// 0 is taken as 53), as a UDP feeder's grant is: the entry then holds only
// for UDP from that port, read in place (bpf/parse.h,
// sluice_udp_source_port); any other frame of the source has no standing,
// and its entry's bucket and stamp stay as they were.
constexpr std::uint8_t kUdpPortMagic[2] = {'S', 'U'};

struct Cookies {
	bool on = false;
	std::uint8_t c0 = 0;
	std::uint32_t delta = 0;
};

sluice_config config_for(std::uint8_t scenario, std::uint8_t tuning, std::uint8_t standing, const Cookies &ck)
{
	sluice_config c{};
	c.rate_pps = kRate;
	c.cost_ns = SLUICE_NSEC_PER_SEC / kRate;
	c.burst = 1 + (tuning & 7);
	std::uint32_t state = (scenario >> 2) & 3;
	c.breaker_state = state == 3 ? SLUICE_SERVING : state;
	c.admission_ppm = c.breaker_state == SLUICE_RECOVERING
				  ? SLUICE_PPM_MIN + (tuning >> 3) * ((SLUICE_PPM_FULL - SLUICE_PPM_MIN) / 31)
				  : SLUICE_PPM_FULL;
	if (scenario & 0x10)
		c.policy_flags |= SLUICE_LIST_DENY_V4 | SLUICE_LIST_DENY_V6 | SLUICE_LIST_DENY_EXACT_V4 |
				  SLUICE_LIST_DENY_EXACT_V6;
	if (scenario & 0x20)
		c.policy_flags |= SLUICE_LIST_ALLOW_V4 | SLUICE_LIST_ALLOW_V6 | SLUICE_LIST_ALLOW_EXACT_V4 |
				  SLUICE_LIST_ALLOW_EXACT_V6;
	c.valve_closed = c.breaker_state == SLUICE_SHEDDING && (standing & 2);
	if (std::uint32_t nb = (standing >> 2) & 3) {
		c.newcomer_cost_ns = SLUICE_NSEC_PER_SEC / kRate;
		c.newcomer_burst = nb;
	}
	if (std::uint32_t sb = (standing >> 4) & 3) {
		c.standing_cost_ns = SLUICE_NSEC_PER_SEC / kRate;
		c.standing_burst = sb;
		if (standing & 0x80)
			c.standing_share_cost_ns = 2 * c.standing_cost_ns;
	}
	if (ck.on && g_cookies_ok) {
		std::uint32_t mode = ck.c0 & 3;
		c.cookie_mode = mode == 3 ? SLUICE_COOKIES_ALWAYS : mode;
		if (std::uint32_t cb = (ck.c0 >> 3) & 3) {
			c.cookie_cost_ns = cb == 3 ? 1000 : SLUICE_NSEC_PER_SEC / kRate;
			c.cookie_burst = cb == 3 ? 64 : cb;
		}
		c.cookie_flags = (ck.c0 & 0x40) ? SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK | SLUICE_COOKIE_WSCALE : 0;
		c.cookie_acks_unlooked = (ck.c0 & 0x80) ? 1 : 0;
		c.cookie_mss4 = 1460;
		c.cookie_mss6 = 1440;
		c.cookie_wscale = 7;
	}
	return c;
}

// What the cookie path makes of an IP frame of a source without standing,
// from the host's reading of its headers (sluice_cookie's tests, in its
// order): not a TCP frame it answers (on to the budgets), one it cannot
// answer (unfit), a SYN or an ACK to a listener (only kListenPort has one in
// the harness's namespace, and it has no connections).
enum class CookieWay { go_on, unfit, syn, ack };

CookieWay cookie_way_of(const std::uint8_t *end, const std::uint8_t *l3, bool v6, std::uint32_t *seq)
{
	std::uint32_t ip_len;
	bool unfit = false;
	if (!v6) {
		if (l3 + 20 > end || l3[9] != SLUICE_IPPROTO_TCP)
			return CookieWay::go_on;
		unfit = l3[0] != 0x45 || (sluice_be16_at(l3 + 6) & 0x3fff) != 0;
		ip_len = 20;
	} else {
		if (l3 + 40 > end)
			return CookieWay::go_on;
		if (l3[6] != SLUICE_IPPROTO_TCP) {
			sluice_l4 l4{};
			if (!sluice_ipv6_ext(l3[6]) || sluice_parse_l4(l3, end, 1, &l4))
				return CookieWay::go_on;
			if (l4.kind != SLUICE_L4_TCP && l4.kind != SLUICE_L4_TCP_SYN &&
			    !(l4.kind == SLUICE_L4_IP && l4.port == SLUICE_IPPROTO_TCP))
				return CookieWay::go_on;
			unfit = true;
		}
		ip_len = 40;
	}
	if (unfit)
		return CookieWay::unfit;
	const std::uint8_t *th = l3 + ip_len;
	if (th + 20 > end)
		return CookieWay::unfit;
	std::uint8_t fl = th[13];
	bool syn = (fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST | SLUICE_TCP_FLAG_FIN)) ==
		   SLUICE_TCP_FLAG_SYN;
	bool ack = (fl & (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK | SLUICE_TCP_FLAG_RST)) == SLUICE_TCP_FLAG_ACK;
	if (!syn && !ack)
		return CookieWay::go_on;
	std::uint32_t tcp_len = std::uint32_t(th[12] >> 4) * 4;
	if (tcp_len < 20 || th + tcp_len > end)
		return CookieWay::unfit;
	if (sluice_be16_at(th + 2) != kListenPort)
		return CookieWay::go_on;
	*seq = std::uint32_t(th[4]) << 24 | std::uint32_t(th[5]) << 16 | std::uint32_t(th[6]) << 8 | th[7];
	return syn ? CookieWay::syn : CookieWay::ack;
}

// A delta added to a valid cookie that no kernel check can accept: the
// check (net/ipv4/syncookies.c, check_tcp_syn_cookie) takes the cookie's top
// byte as a minute counter and accepts it only 0 or 1 minutes old, so a
// delta whose top byte moves it by 2 or more (carry or not) fails whatever
// the hash. Deltas with a top byte of -2..1 may land on another MSS index of
// this minute's or the previous one's hash (probability up to 2^-22): the
// harness then asks only that standing came with cookie_proved.
bool surely_stale(std::uint32_t delta)
{
	std::uint32_t hi = delta >> 24;
	return !(hi == 0 || hi == 1 || hi == 0xff || hi == 0xfe);
}

std::uint32_t be32_at(const std::uint8_t *p)
{
	return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}

// RFC 1071: the one's complement sum of 16-bit words, folded.
std::uint32_t sum16(std::uint32_t s, const std::uint8_t *p, std::size_t n)
{
	for (std::size_t i = 0; i + 1 < n; i += 2)
		s += std::uint32_t(p[i]) << 8 | p[i + 1];
	if (n & 1)
		s += std::uint32_t(p[n - 1]) << 8;
	return s;
}

std::uint16_t fold(std::uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return std::uint16_t(s);
}

// The SYN-ACK the program wrote in place of `syn` (l3 at l3_off): one frame,
// at most 8 bytes longer, the SYN's Ethernet header with its addresses
// swapped and its tags kept, IP addresses and ports swapped, SYN|ACK, ack =
// the SYN's seq + 1, right checksums. Returns the cookie (its seq).
std::uint32_t check_synack(const std::uint8_t *syn, std::size_t syn_len, const std::uint8_t *out, std::size_t out_len,
			   std::size_t l3_off, bool v6, const std::string &what)
{
	std::size_t ip_len = v6 ? 40 : 20;
	if (out_len > syn_len + 8)
		die("SYN-ACK of %zu bytes for a SYN of %zu (more than 8 bytes longer): %s", out_len, syn_len, what.c_str());
	if (out_len < l3_off + ip_len + 24 || out_len > l3_off + ip_len + 40)
		die("SYN-ACK of %zu bytes: not one IP header and 24..40 bytes of TCP: %s", out_len, what.c_str());
	if (std::memcmp(out, syn + 6, 6) != 0 || std::memcmp(out + 6, syn, 6) != 0 ||
	    std::memcmp(out + 12, syn + 12, l3_off - 12) != 0)
		die("SYN-ACK's Ethernet header is not the SYN's, addresses swapped, tags kept: %s", what.c_str());
	const std::uint8_t *si = syn + l3_off, *oi = out + l3_off;
	std::size_t tcp_len = out_len - l3_off - ip_len;
	std::uint32_t pseudo = 0;
	if (!v6) {
		if (oi[0] != 0x45 || oi[9] != SLUICE_IPPROTO_TCP || sluice_be16_at(oi + 2) != ip_len + tcp_len ||
		    std::memcmp(oi + 12, si + 16, 4) != 0 || std::memcmp(oi + 16, si + 12, 4) != 0)
			die("SYN-ACK's IPv4 header: not 0x45, TCP, its length, the SYN's addresses swapped: %s", what.c_str());
		if (fold(sum16(0, oi, 20)) != 0xffff)
			die("SYN-ACK's IPv4 checksum is wrong: %s", what.c_str());
		pseudo = sum16(0, oi + 12, 8) + SLUICE_IPPROTO_TCP + std::uint32_t(tcp_len);
	} else {
		if ((oi[0] >> 4) != 6 || oi[6] != SLUICE_IPPROTO_TCP || sluice_be16_at(oi + 4) != tcp_len ||
		    std::memcmp(oi + 8, si + 24, 16) != 0 || std::memcmp(oi + 24, si + 8, 16) != 0)
			die("SYN-ACK's IPv6 header: not 6, TCP, its length, the SYN's addresses swapped: %s", what.c_str());
		pseudo = sum16(0, oi + 8, 32) + SLUICE_IPPROTO_TCP + std::uint32_t(tcp_len);
	}
	const std::uint8_t *st = si + ip_len, *ot = oi + ip_len;
	if (std::memcmp(ot, st + 2, 2) != 0 || std::memcmp(ot + 2, st, 2) != 0)
		die("SYN-ACK's ports are not the SYN's swapped: %s", what.c_str());
	if (ot[13] != (SLUICE_TCP_FLAG_SYN | SLUICE_TCP_FLAG_ACK) || std::size_t(ot[12] >> 4) * 4 != tcp_len)
		die("SYN-ACK's flags 0x%02x or data offset %u wrong (%zu bytes of TCP): %s", ot[13], ot[12] >> 4, tcp_len,
		    what.c_str());
	if (be32_at(ot + 8) != be32_at(st + 4) + 1)
		die("SYN-ACK acks %u, the SYN's seq is %u: %s", be32_at(ot + 8), be32_at(st + 4), what.c_str());
	if (fold(sum16(pseudo, ot, tcp_len)) != 0xffff)
		die("SYN-ACK's TCP checksum is wrong: %s", what.c_str());
	return be32_at(ot + 4);
}

// ------------------------------------------------------------- policies
//
// An input that starts with kPolicyMagic carries kPolicyBytes of a random
// policy before [scenario][tuning][standing][frame]: raw class tables, as
// sluice_abi.h lays them out (what logic/class_tables would write, without
// its checks), written into the set the flags put in force; the other set
// gets a decoy that would deny the frame (a program reading the wrong set
// fails the outcome check). Bytes past the end of a short input read as 0.
//   p[0]       bit 0 SLUICE_CLASS_PORTS, 1 PREFIX_V4, 2 PREFIX_V6,
//              3 DEFAULT_BYTES, 4 the set in force (SLUICE_POLICY_SET)
//   p[1..12]   records of classes 0..3, three bytes each:
//              a: bits 0-1 action (0 limit, 1 exempt, 2 deny, 3 a limit
//                 record never written: no packet budget), bits 2-4 burst - 1,
//                 bit 5 a byte budget, bit 6 a standing budget
//              b: v4 prefix b % 33, v6 prefix (b * 7) % 129
//              c: byte burst 1514 + 64 c bytes; standing burst 1 + c % 4
//   p[13..16]  two port_classes entries, two bytes each: e0 bits 0-1 kind,
//              2-3 class, 4-5 port (0 the frame's, 1 the frame's ^ 1,
//              2 e1, 3 e1 << 8), e1
//   p[17..18]  one class_v4 (or class_v6, by the frame's family) entry: the
//              frame's source to p[17] bits (v4 % 33, v6 % 129); p[18] bit 7:
//              one bit inside the prefix flipped (the source outside it);
//              bits 0-1: matches - 1
//   p[19..26]  up to four matches, two bytes each: m0 bits 0-3 kinds,
//              4-5 class, 6-7 range (0 every port, 1 the frame's port,
//              2 above it, 3 [0, m1 << 8]); m1
constexpr std::uint8_t kPolicyMagic[2] = {'S', 'P'};
constexpr std::size_t kPolicyBytes = 27;
constexpr std::uint32_t kPolicyClasses = 4;
constexpr std::uint64_t kByteRate = 1'000'000; // bytes/s: 1 us a byte, nothing refills within one run

struct Policy {
	bool on = false;
	std::uint32_t flags = 0; // config.policy_flags' class and set bits
	std::uint32_t set = 0;
	sluice_class rec[kPolicyClasses]{};
	struct Port {
		std::uint32_t kind, port;
		std::uint8_t id;
	} ports[2]{};
	bool has_prefix = false, v6 = false;
	std::array<std::uint8_t, 16> prefix{};
	std::uint32_t prefix_len = 0;
	sluice_class_matches matches{};
};

// A class record as logic/class_tables writes one (rates into costs).
sluice_class class_record(std::uint8_t a, std::uint8_t b, std::uint8_t c)
{
	sluice_class r{};
	std::uint32_t action = a & 3;
	r.action = action == 3 ? SLUICE_CLASS_LIMIT : action;
	r.v4_prefix = b % 33;
	r.v6_prefix = (b * 7u) % 129;
	if (action == SLUICE_CLASS_LIMIT) {
		r.rate_pps = kRate;
		r.cost_ns = SLUICE_NSEC_PER_SEC / kRate;
		r.burst = 1 + ((a >> 2) & 7);
		if (a & 0x20) {
			r.byte_rate = kByteRate;
			r.byte_burst = SLUICE_BYTE_BURST_MIN + 64ull * c;
			r.byte_cost_fp = (SLUICE_NSEC_PER_SEC << SLUICE_BYTE_COST_SHIFT) / kByteRate;
			r.byte_burst_ns = r.byte_burst * SLUICE_NSEC_PER_SEC / kByteRate;
		}
		if (a & 0x40) {
			r.standing_rate_pps = kRate;
			r.standing_cost_ns = SLUICE_NSEC_PER_SEC / kRate;
			r.standing_burst = 1 + c % 4;
		}
	}
	std::snprintf(r.name, sizeof(r.name), "c%u", unsigned(b % 100));
	return r;
}

bool prefix_holds(const std::array<std::uint8_t, 16> &p, std::uint32_t len, const std::uint8_t *addr)
{
	for (std::uint32_t bit = 0; bit < len; bit++) {
		std::uint8_t m = std::uint8_t(0x80u >> (bit % 8));
		if ((addr[bit / 8] & m) != (p[bit / 8] & m))
			return false;
	}
	return true;
}

Policy policy_for(const std::uint8_t *p, int kind, const sluice_source &src, const sluice_l4 &l4)
{
	Policy pol;
	pol.on = true;
	pol.flags = (p[0] & 1 ? SLUICE_CLASS_PORTS : 0) | (p[0] & 2 ? SLUICE_CLASS_PREFIX_V4 : 0) |
		    (p[0] & 4 ? SLUICE_CLASS_PREFIX_V6 : 0) | (p[0] & 8 ? SLUICE_CLASS_DEFAULT_BYTES : 0) |
		    (p[0] & 0x10 ? SLUICE_POLICY_SET : 0);
	pol.set = SLUICE_POLICY_SET_OF(pol.flags);
	for (std::uint32_t id = 0; id < kPolicyClasses; id++)
		pol.rec[id] = class_record(p[1 + 3 * id], p[2 + 3 * id], p[3 + 3 * id]);
	for (int i = 0; i < 2; i++) {
		std::uint8_t e0 = p[13 + 2 * i], e1 = p[14 + 2 * i];
		Policy::Port &pt = pol.ports[i];
		pt.kind = e0 & 3;
		pt.id = std::uint8_t((e0 >> 2) & 3);
		switch ((e0 >> 4) & 3) {
		case 0: pt.port = l4.port & 0xffff; break;
		case 1: pt.port = (l4.port ^ 1) & 0xffff; break;
		case 2: pt.port = e1; break;
		default: pt.port = std::uint32_t(e1) << 8; break;
		}
	}
	if (kind == SLUICE_PARSE_IPV4 || kind == SLUICE_PARSE_IPV6) {
		pol.has_prefix = true;
		pol.v6 = kind == SLUICE_PARSE_IPV6;
		pol.prefix_len = p[17] % (pol.v6 ? 129u : 33u);
		std::memcpy(pol.prefix.data(), src.w, pol.v6 ? 16 : 4);
		for (std::uint32_t bit = pol.prefix_len; bit < (pol.v6 ? 128u : 32u); bit++)
			pol.prefix[bit / 8] &= std::uint8_t(~(0x80u >> (bit % 8)));
		if ((p[18] & 0x80) && pol.prefix_len)
			pol.prefix[(p[18] % pol.prefix_len) / 8] ^= std::uint8_t(0x80u >> ((p[18] % pol.prefix_len) % 8));
		pol.matches.count = 1 + (p[18] & 3);
		for (std::uint32_t i = 0; i < pol.matches.count; i++) {
			std::uint8_t m0 = p[19 + 2 * i], m1 = p[20 + 2 * i];
			sluice_class_match &m = pol.matches.m[i];
			m.kinds = m0 & 15;
			m.class_id = std::uint8_t((m0 >> 4) & 3);
			switch (m0 >> 6) {
			case 0: m.lo = 0, m.hi = 0xffff; break;
			case 1: m.lo = m.hi = std::uint16_t(l4.port); break;
			case 2: m.lo = std::uint16_t(l4.port + 1), m.hi = 0xffff; break;
			default: m.lo = 0, m.hi = std::uint16_t(m1 << 8); break;
			}
		}
	}
	return pol;
}

// Every class id of the frame's way, as sluice_classify and
// sluice_judge_policy give it, from the host's copy of the tables.
std::uint32_t expected_class(const Policy &pol, bool v6, const sluice_source &src, const sluice_l4 &l4)
{
	std::uint32_t id = SLUICE_CLASS_NO_MATCH;
	if ((pol.flags & (v6 ? SLUICE_CLASS_PREFIX_V6 : SLUICE_CLASS_PREFIX_V4)) && pol.has_prefix && pol.v6 == v6) {
		std::uint8_t addr[16];
		std::memcpy(addr, src.w, 16);
		if (prefix_holds(pol.prefix, pol.prefix_len, addr))
			id = sluice_match_class(&pol.matches, l4.kind, l4.port);
	}
	if (id == SLUICE_CLASS_NO_MATCH) {
		id = SLUICE_CLASS_DEFAULT;
		if (pol.flags & SLUICE_CLASS_PORTS)
			for (int i = 1; i >= 0; i--) // the later entry wins a shared (kind, port)
				if (pol.ports[i].kind == l4.kind && pol.ports[i].port == l4.port) {
					id = pol.ports[i].id;
					break;
				}
	}
	const sluice_class &r = pol.rec[id % kPolicyClasses];
	if (id != SLUICE_CLASS_DEFAULT && r.action == SLUICE_CLASS_LIMIT && r.cost_ns == 0)
		id = SLUICE_CLASS_DEFAULT;
	return id;
}

void policy_check(int err, const char *what)
{
	if (err)
		die("writing %s: %s", what, std::strerror(errno));
}

// Clears what the previous input wrote and writes pol (set in force) and
// its decoy (the other set: every entry there sends the frame to a deny class).
void write_policy(Instance &in, const Policy &pol)
{
	sluice_port_block zero_block{};
	for (__u32 idx : in.port_blocks)
		policy_check(bpf_map_update_elem(in.port_classes_fd, &idx, &zero_block, BPF_ANY), "port_classes");
	for (const auto &k : in.v4_keys)
		bpf_map_delete_elem(in.class_v4_fd, &k);
	for (const auto &k : in.v6_keys)
		bpf_map_delete_elem(in.class_v6_fd, &k);
	in.port_blocks.clear();
	in.v4_keys.clear();
	in.v6_keys.clear();
	if (!pol.on)
		return;
	sluice_class decoy = class_record(SLUICE_CLASS_DENY, 0, 0);
	for (std::uint32_t set = 0; set < SLUICE_POLICY_SETS; set++) {
		bool live = set == pol.set;
		for (std::uint32_t id = 0; id < kPolicyClasses; id++) {
			__u32 idx = sluice_class_index(set, id);
			policy_check(bpf_map_update_elem(in.classes_fd, &idx, live ? &pol.rec[id] : &decoy, BPF_ANY),
				     "classes");
		}
		for (const auto &pt : pol.ports) {
			__u32 idx = sluice_port_block_index(set, pt.kind, pt.port);
			sluice_port_block b{};
			policy_check(bpf_map_lookup_elem(in.port_classes_fd, &idx, &b), "port_classes (read)");
			b.class_of[pt.port % SLUICE_PORTS_PER_BLOCK] = live ? pt.id : 1;
			policy_check(bpf_map_update_elem(in.port_classes_fd, &idx, &b, BPF_ANY), "port_classes");
			in.port_blocks.push_back(idx);
		}
		if (!pol.has_prefix)
			continue;
		sluice_class_matches any{};
		any.count = 1;
		any.m[0].hi = 0xffff;
		any.m[0].kinds = (1u << SLUICE_L4_KINDS) - 1;
		any.m[0].class_id = 1;
		const sluice_class_matches &v = live ? pol.matches : any;
		if (pol.v6) {
			sluice_lpm_v6 k{};
			k.prefixlen = SLUICE_LPM_SET_BITS + pol.prefix_len;
			k.set = std::uint8_t(set);
			std::memcpy(k.addr, pol.prefix.data(), 16);
			policy_check(bpf_map_update_elem(in.class_v6_fd, &k, &v, BPF_ANY), "class_v6");
			in.v6_keys.push_back(k);
		} else {
			sluice_lpm_v4 k{};
			k.prefixlen = SLUICE_LPM_SET_BITS + pol.prefix_len;
			k.set = std::uint8_t(set);
			std::memcpy(k.addr, pol.prefix.data(), 4);
			policy_check(bpf_map_update_elem(in.class_v4_fd, &k, &v, BPF_ANY), "class_v4");
			in.v4_keys.push_back(k);
		}
	}
}

// What the program must count a frame as, from the host's parse. For frames
// that reach the budgets, PASSED or DROP_RATE (returned as PASSED here; the
// caller decides the cookie path and an absent newcomer budget, which come
// after a class's action).
std::uint32_t expected_outcome(const sluice_config &c, int kind, const sluice_source &src, bool has_standing)
{
	if (kind == SLUICE_PARSE_NON_IP)
		return SLUICE_NON_IP;
	if (kind == SLUICE_PARSE_MALFORMED)
		return SLUICE_MALFORMED;
	bool v6 = kind == SLUICE_PARSE_IPV6;
	if (((c.policy_flags & (v6 ? SLUICE_LIST_DENY_V6 : SLUICE_LIST_DENY_V4)) && in_list(kDeny, src, v6)) ||
	    ((c.policy_flags & (v6 ? SLUICE_LIST_DENY_EXACT_V6 : SLUICE_LIST_DENY_EXACT_V4)) && in_list(kDenyExact, src, v6)))
		return SLUICE_DROP_DENY;
	if (c.breaker_state == SLUICE_SHEDDING) {
		if (((c.policy_flags & (v6 ? SLUICE_LIST_ALLOW_V6 : SLUICE_LIST_ALLOW_V4)) && in_list(kAllow, src, v6)) ||
		    ((c.policy_flags & (v6 ? SLUICE_LIST_ALLOW_EXACT_V6 : SLUICE_LIST_ALLOW_EXACT_V4)) &&
		     in_list(kAllowExact, src, v6)))
			return SLUICE_ALLOWLISTED;
		if (c.valve_closed)
			return has_standing ? SLUICE_DROP_VALVE : SLUICE_DROP_SHED;
	}
	return SLUICE_PASSED;
}

bool drop_outcome(std::uint32_t o)
{
	return o == SLUICE_DROP_RATE || o == SLUICE_DROP_SHED || o == SLUICE_DROP_DENY || o == SLUICE_MALFORMED ||
	       o == SLUICE_DROP_VALVE || o == SLUICE_DROP_CLASS || o == SLUICE_DROP_BYTES || o == SLUICE_DROP_COOKIE ||
	       o == SLUICE_DROP_COOKIE_BUDGET || o == SLUICE_DROP_COOKIE_UNFIT || o == SLUICE_DROP_COOKIE_REFLECT;
}

std::string hex(const std::uint8_t *p, std::size_t n)
{
	std::string s;
	char b[4];
	for (std::size_t i = 0; i < n && i < 96; i++) {
		std::snprintf(b, sizeof(b), "%02x", p[i]);
		s += b;
	}
	return n > 96 ? s + "..." : s;
}

// A cookie_proved run: the source's standing set (in.standing[set_idx] as
// the harness wrote it before the run) now holds exactly what
// sluice_standing_grant writes for its fingerprint at the run's clock
// (between c0 and c1), reason cookie, and the source the grant recorded (its
// masked address: not modelled here, taken from the run). in.standing takes
// it, so that the sweep that follows finds nothing else changed.
void expect_cookie_grant(Instance &in, const std::vector<sluice_standing_set> &sets, std::uint32_t set_idx,
			 std::uint32_t fpr, std::uint64_t c0, std::uint64_t c1, const std::string &what)
{
	for (std::uint64_t t : {c0, c1}) {
		const sluice_standing_set &before = in.standing[set_idx];
		sluice_standing_set exp = before;
		const std::uint32_t stamp = sluice_standing_stamp(t + SLUICE_TIME_BIAS);
		int w = sluice_standing_grant(&exp, fpr, stamp, kStandingLapse, SLUICE_BY_COOKIE);
		// A way given to the source anew records its masked address (taken
		// from the run); a refresh keeps the one recorded.
		if (w >= 0 && !(sluice_standing_entry_fp(before.way[w]) == fpr &&
				sluice_standing_live(before.way[w], stamp, kStandingLapse)))
			std::memcpy(&exp.source[2 * w], &sets[set_idx].source[2 * w], 16);
		if (std::memcmp(&exp, &sets[set_idx], sizeof(exp)) == 0) {
			in.standing[set_idx] = sets[set_idx];
			return;
		}
	}
	die("cookie_proved, but standing set %u is not the cookie grant of its fingerprint %08x: %s", set_idx, fpr,
	    what.c_str());
}

// The cookie budget after a run that sent `sent` SYN-ACKs and dropped
// `spent` SYNs on the budget: see the caller.
void check_cookie_budget(Instance &in, const sluice_config &cfg, std::uint64_t sent, std::uint64_t spent,
			 std::uint64_t c0, std::uint64_t c1, const std::string &what)
{
	static std::vector<std::uint64_t> now;
	read_per_cpu(in.cookie_budget_fd, "cookie_budget", now);
	std::uint64_t burst_ns = cfg.cookie_burst * cfg.cookie_cost_ns;
	std::uint64_t changed = 0;
	for (std::size_t i = 0; i < now.size(); i++) {
		if (now[i] == in.cookie_budget[i])
			continue;
		changed++;
		std::uint64_t lo = c0 + SLUICE_TIME_BIAS - burst_ns, hi = c1 + SLUICE_TIME_BIAS;
		if (!sent || now[i] < lo || now[i] > hi)
			die("cookie bucket of CPU %zu written as %llu (%llu SYN-ACKs sent; want [%llu, %llu]): %s", i,
			    (unsigned long long)now[i], (unsigned long long)sent, (unsigned long long)lo,
			    (unsigned long long)hi, what.c_str());
	}
	if (changed != sent)
		die("%llu cookie buckets paid for %llu SYN-ACKs: %s", (unsigned long long)changed,
		    (unsigned long long)sent, what.c_str());
	if (spent && cfg.cookie_cost_ns) {
		bool all_held = true;
		for (std::uint64_t e : in.cookie_budget)
			all_held = all_held && sluice_credit(e, c0 + SLUICE_TIME_BIAS, burst_ns) >= cfg.cookie_cost_ns;
		if (all_held)
			die("drop_cookie_budget while every CPU's cookie bucket held a token: %s", what.c_str());
	}
	in.cookie_budget.swap(now);
}

// The ACK a client sends back for the SYN-ACK the program sent: the SYN's
// Ethernet and IP headers (its own addresses), TCP seq = the SYN's + 1, ack =
// cookie + 1 + delta, no options. Run once; it is counted once, as
// cookie_proved (passed, its source granted standing, reason cookie) or
// drop_cookie (dropped, nothing granted): delta 0 must be proved, a surely
// stale one dropped. Nothing else changes: no slot, no other standing set,
// no newcomer or cookie bucket, no class counter.
void prove(Instance &in, const sluice_config &cfg, const std::uint8_t *syn, std::size_t l3_off, bool v6,
	   std::uint32_t syn_seq, std::uint32_t cookie, std::uint32_t delta, std::uint32_t set_idx, std::uint32_t fpr,
	   const std::string &syn_what)
{
	std::size_t ip_len = v6 ? 40 : 20;
	std::uint8_t ack[kMaxFrame];
	std::size_t len = l3_off + ip_len + 20;
	std::memcpy(ack, syn, l3_off + ip_len);
	std::uint8_t *ip = ack + l3_off, *th = ip + ip_len;
	std::uint32_t pseudo;
	if (!v6) {
		ip[2] = 0, ip[3] = 40;
		ip[10] = ip[11] = 0;
		std::uint16_t c = std::uint16_t(~fold(sum16(0, ip, 20)));
		ip[10] = std::uint8_t(c >> 8), ip[11] = std::uint8_t(c);
		pseudo = sum16(0, ip + 12, 8) + SLUICE_IPPROTO_TCP + 20;
	} else {
		ip[4] = 0, ip[5] = 20;
		pseudo = sum16(0, ip + 8, 32) + SLUICE_IPPROTO_TCP + 20;
	}
	std::memcpy(th, syn + l3_off + ip_len, 4); // the SYN's ports
	auto put32 = [](std::uint8_t *p, std::uint32_t v) {
		p[0] = std::uint8_t(v >> 24), p[1] = std::uint8_t(v >> 16), p[2] = std::uint8_t(v >> 8), p[3] = std::uint8_t(v);
	};
	put32(th + 4, syn_seq + 1);
	put32(th + 8, cookie + 1 + delta);
	th[12] = 5 << 4;
	th[13] = SLUICE_TCP_FLAG_ACK;
	th[14] = 0x01, th[15] = 0xf6; // window 502
	th[16] = th[17] = th[18] = th[19] = 0;
	std::uint16_t c = std::uint16_t(~fold(sum16(pseudo, th, 20)));
	th[16] = std::uint8_t(c >> 8), th[17] = std::uint8_t(c);
	char d[16];
	std::snprintf(d, sizeof(d), "%08x", delta);
	std::string what = "the ACK (cookie + 1 + delta " + std::string(d) + ") " + hex(ack, len) + " to " + syn_what;

	std::uint8_t out[4096];
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	opts.data_in = ack;
	opts.data_size_in = std::uint32_t(len);
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = 1;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	std::uint64_t c0 = dataplane_ns();
	int err = bpf_prog_test_run_opts(in.prog, &opts);
	int run_errno = errno;
	std::uint64_t c1 = dataplane_ns();
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (err)
		die("bpf_prog_test_run_opts (the ACK): %s", std::strerror(run_errno));

	auto now_counters = read_counters(in);
	std::uint32_t got = SLUICE_OUTCOMES;
	for (std::uint32_t o = 0; o < SLUICE_OUTCOMES; o++) {
		std::uint64_t p = now_counters[o].packets - in.counters[o].packets;
		std::uint64_t b = now_counters[o].bytes - in.counters[o].bytes;
		if (!p && !b)
			continue;
		if (p != 1 || b != len || got != SLUICE_OUTCOMES)
			die("outcome %u counted %llu packets, %llu bytes: %s", o, (unsigned long long)p,
			    (unsigned long long)b, what.c_str());
		got = o;
	}
	in.counters = now_counters;
	if (got != SLUICE_COOKIE_PROVED && got != SLUICE_DROP_COOKIE)
		die("counted as %u, not cookie_proved or drop_cookie: %s", got, what.c_str());
	if (delta == 0 && got != SLUICE_COOKIE_PROVED)
		die("the cookie the program sent was not proved: %s", what.c_str());
	if (surely_stale(delta) && got != SLUICE_DROP_COOKIE)
		die("a cookie no kernel check accepts was proved: %s", what.c_str());
	std::uint32_t want_verdict = got == SLUICE_COOKIE_PROVED ? XDP_PASS : XDP_DROP;
	if (opts.retval != want_verdict)
		die("verdict %u, want %u: %s", opts.retval, want_verdict, what.c_str());
	if (opts.data_size_out != len || std::memcmp(out, ack, len) != 0)
		die("the ACK was changed: %s", what.c_str());
	if (g_trace)
		std::fprintf(stderr, "xdp_fuzz: counted %u, verdict %u: %s\n", got, opts.retval, what.c_str());

	static std::vector<sluice_counter> now_class;
	read_class_counters(in, now_class);
	if (std::memcmp(now_class.data(), in.class_counters.data(), now_class.size() * sizeof(sluice_counter)) != 0)
		die("a class counter moved without a policy: %s", what.c_str());
	static std::vector<std::uint64_t> table;
	read_slots(in, table);
	if (table != in.shadow)
		die("a slot changed: %s", what.c_str());
	static std::vector<sluice_standing_set> sets;
	read_standing(in, sets);
	if (got == SLUICE_COOKIE_PROVED)
		expect_cookie_grant(in, sets, set_idx, fpr, c0, c1, what);
	if (std::memcmp(sets.data(), in.standing.data(), sets.size() * sizeof(sluice_standing_set)) != 0)
		die("standing changed%s: %s", got == SLUICE_COOKIE_PROVED ? " beyond the grant" : " without a proof",
		    what.c_str());
	static std::vector<std::uint64_t> nc;
	read_per_cpu(in.newcomers_fd, "newcomers", nc);
	if (nc != in.newcomers)
		die("a newcomer bucket changed: %s", what.c_str());
	check_cookie_budget(in, cfg, 0, 0, c0, c1, what);
}

// ------------------------------------------------------------- seed corpus

void write_file(const std::filesystem::path &p, std::uint8_t scenario, std::uint8_t tuning, std::uint8_t standing,
		const Bytes &frame, const Bytes &policy = {}, const Bytes &cookie = {}, std::uint16_t udp_port = 0)
{
	std::ofstream f(p, std::ios::binary);
	if (!policy.empty()) {
		f.write(reinterpret_cast<const char *>(kPolicyMagic), sizeof(kPolicyMagic));
		Bytes padded = policy;
		padded.resize(kPolicyBytes, 0);
		f.write(reinterpret_cast<const char *>(padded.data()), std::streamsize(padded.size()));
	}
	if (!cookie.empty()) {
		f.write(reinterpret_cast<const char *>(kCookieMagic), sizeof(kCookieMagic));
		Bytes padded = cookie;
		padded.resize(kCookieBytes, 0);
		f.write(reinterpret_cast<const char *>(padded.data()), std::streamsize(padded.size()));
	}
	if (udp_port) {
		f.write(reinterpret_cast<const char *>(kUdpPortMagic), sizeof(kUdpPortMagic));
		f.put(char(udp_port >> 8));
		f.put(char(udp_port & 0xff));
	}
	f.put(char(scenario));
	f.put(char(tuning));
	f.put(char(standing));
	f.write(reinterpret_cast<const char *>(frame.data()), std::streamsize(frame.size()));
	if (!f)
		die("cannot write %s", p.c_str());
}

void write_corpus(const std::string &dir)
{
	std::filesystem::create_directories(dir);
	Ipv4 v4{};
	v4.src = ip4("198.18.0.7");
	Ipv6 v6{};
	v6.src = ip6("2001:2::7");
	Ipv4 deny4 = v4, allow4 = v4, both4 = v4;
	deny4.src = ip4("10.66.1.2");
	allow4.src = ip4("10.77.3.4");
	both4.src = ip4("10.66.77.1");
	Ipv6 deny6 = v6, allow6 = v6;
	deny6.src = ip6("2001:db8:66::9");
	allow6.src = ip6("2001:db8:77::9");
	Ipv4 allow_exact4 = v4;
	allow_exact4.src = ip4("10.88.0.1");
	Ipv6 allow_exact6 = v6;
	allow_exact6.src = ip6("2001:db8:88::1");
	Ipv4 opts = v4;
	opts.options = {0x01, 0x01, 0x01, 0x00}; // NOPs, EOL: IHL 6
	Ipv4 ihl4 = v4;
	ihl4.ihl = 4;
	Ipv4 ver6 = v4;
	ver6.version = 6;
	Ipv6 ver4 = v6;
	ver4.version = 4;
	Eth one_tag{}, qinq{}, three{};
	one_tag.tags = {vlan(10)};
	qinq.tags = {svlan(100), vlan(10)};
	three.tags = {svlan(100), vlan(10), vlan(20)};

	struct Seed {
		const char *name;
		std::uint8_t scenario, tuning;
		Bytes frame;
		std::uint8_t standing = 0;
		Bytes policy = {}; // kPolicyBytes (zeros past the end): "policies" above
		Bytes cookie = {}; // kCookieBytes (zeros past the end): "cookies" above
		std::uint16_t udp_port = 0; // the planted entry bound to it (kUdpPortMagic)
	};
	// Frames for the class path: TCP (SYN, ACK, a header cut short), ICMP,
	// non-first fragments, IPv6 extension headers.
	Ipv4 tcp4 = v4, icmp4 = v4, frag4 = v4;
	tcp4.proto = 6;
	icmp4.proto = kIpProtoIcmp;
	frag4.frag = 0x0010; // offset 16 x 8 bytes: no L4 header here
	Ipv6 tcp6 = v6;
	Bytes syn4 = ip4_frame({}, tcp4, tcp_segment(40000, 80, kTcpSyn));
	Bytes ack4 = ip4_frame({}, tcp4, tcp_segment(40000, 443, kTcpAck));
	Bytes syn4_short = truncated(syn4, kEthHeaderLen + 20 + 10);
	Bytes ping4 = ip4_frame({}, icmp4, icmp_echo());
	Bytes frag_udp4 = ip4_frame({}, frag4, udp_payload(32));
	Bytes ext_udp6 = ip6_frame({}, v6, {ipv6_opts(0), ipv6_opts(60, 1)}, kIpProtoUdp, [] {
		Bytes u;
		put16(u, 40000);
		put16(u, 53);
		put16(u, 16);
		put16(u, 0);
		put(u, udp_payload(8));
		return u;
	}());
	Bytes frag6 = ip6_frame({}, v6, {ipv6_opts(0), ipv6_fragment(8, false)}, kIpProtoUdp, udp_payload(16));
	Bytes syn6 = ip6_frame({}, tcp6, {}, 6, tcp_segment(40000, 22, kTcpSyn));
	Bytes ping6 = ip6_frame({}, v6, {ipv6_opts(60)}, kIpProtoIcmp6, icmp_echo(128));
	Bytes ext_short6 = truncated(ext_udp6, kEthHeaderLen + 40 + 4);
	// Policy bytes (see "policies"): flags; records 0..3 (action/burst,
	// prefixes, bytes); two port entries; a prefix entry and its matches.
	const Bytes port_limit = {0x01, 0, 32, 0, 0x08, 32, 0, 0, 0, 0, 0, 0, 0, 0x06};
	const Bytes syn_exempt = {0x01, 0, 32, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x05};
	const Bytes ack_deny = {0x01, 0, 32, 0, 0x08, 0, 0, 0x02, 0, 0, 0, 0, 0, 0x08, 0, 0x05};
	const Bytes ip_deny = {0x01, 0, 32, 0, 0x08, 0, 0, 0x02, 0, 0, 0, 0, 0, 0x0b};
	const Bytes ip_limit = {0x01, 0, 32, 0, 0x0c, 24, 0, 0, 0, 0, 0, 0, 0, 0x07};
	const Bytes port_bytes = {0x01, 0, 32, 0, 0x28, 32, 0, 0, 0, 0, 0, 0, 0, 0x06};
	const Bytes prefix4 = {0x02, 0, 32, 0, 0x08, 32, 0, 0x02, 0, 0, 0x04, 24, 0,
			       0, 0, 0, 0, 24, 0x01, 0x74, 0, 0x1f, 0};
	const Bytes prefix6_miss = {0x07, 0, 32, 0, 0x08, 16, 0, 0x02, 0, 0, 0x04, 24, 0,
				    0x06, 0, 0x0b, 0, 48, 0x82, 0x3f, 0, 0x1c, 0, 0x0f, 0};
	const Bytes prefix6_ports = {0x05, 0, 32, 0, 0x2c, 16, 3, 0x01, 0, 0, 0x44, 24, 2,
				     0x0d, 0, 0x05, 0, 32, 0x03, 0x73, 0, 0x4f, 0, 0x20, 0, 0x13, 0};
	const Bytes default_bytes = {0x08, 0x20, 32, 0};
	const Bytes set1 = {0x11, 0, 32, 0, 0x08, 32, 0, 0, 0, 0, 0, 0, 0, 0x06};
	const Bytes standing_class = {0x01, 0, 32, 0, 0x48, 32, 1, 0, 0, 0, 0, 0, 0, 0x06};
	const Bytes unwritten = {0x01, 0, 32, 0, 0x03, 32, 0, 0, 0, 0, 0, 0, 0, 0x06};
	std::vector<Seed> seeds = {
		{"ipv4-udp", 0x00, 0x03, udp4({}, v4)},
		{"ipv4-udp-64", 0x40, 0x01, udp4_sized(64, {}, v4)},
		{"ipv4-udp-1514", 0x00, 0x07, udp4_sized(1514, {}, v4)},
		{"ipv4-options", 0x00, 0x02, udp4({}, opts)},
		{"ipv6-udp", 0x00, 0x03, udp6({}, v6)},
		{"ipv6-udp-dry-run", 0x01, 0x00, udp6({}, v6)},
		{"ipv4-vlan", 0x00, 0x02, udp4(one_tag, v4)},
		{"ipv6-vlan", 0x02, 0x02, udp6(one_tag, v6)},
		{"ipv4-qinq", 0x80, 0x01, udp4(qinq, v4)},
		{"ipv6-qinq", 0x01, 0x01, udp6(qinq, v6)},
		{"arp", 0x00, 0x00, arp_request(ip4("198.18.0.7"), ip4("198.18.0.1"))},
		{"arp-vlan", 0x04, 0x00, arp_request(ip4("198.18.0.7"), ip4("198.18.0.1"), [] {
			 Eth e = eth_to(kBroadcast);
			 e.tags = {vlan(7)};
			 return e;
		 }())},
		{"lldp", 0x00, 0x00, lldp()},
		{"ipv4-deny", 0x10, 0x01, udp4({}, deny4)},
		{"ipv6-deny", 0x11, 0x01, udp6({}, deny6)},
		{"ipv4-allow-shedding", 0x24, 0x01, udp4({}, allow4)},
		{"ipv6-allow-shedding", 0x26, 0x01, udp6({}, allow6)},
		{"ipv4-deny-and-allow-shedding", 0x34, 0x01, udp4({}, both4)},
		{"ipv4-allow-exact-shedding", 0x24, 0x01, udp4({}, allow_exact4)},
		{"ipv6-allow-exact-shedding", 0x26, 0x01, udp6({}, allow_exact6)},
		{"ipv4-shedding", 0x04, 0x00, udp4({}, v4)},
		{"ipv4-recovering", 0xc8, 0x0f, udp4({}, v4)},
		{"ipv6-recovering-one-choice", 0x4a, 0x81, udp6({}, v6)},
		{"ipv4-drain", 0xc0, 0x00, udp4({}, v4)},
		{"ipv4-ihl4", 0x00, 0x00, udp4({}, ihl4)},
		{"ipv4-version6", 0x00, 0x00, udp4({}, ver6)},
		{"ipv6-version4", 0x01, 0x00, udp6({}, ver4)},
		{"ipv4-truncated", 0x00, 0x00, truncated(udp4({}, v4), 30)},
		{"ipv4-options-truncated", 0x00, 0x00, truncated(udp4({}, opts), 35)},
		{"ipv6-truncated", 0x00, 0x00, truncated(udp6({}, v6), 50)},
		{"vlan-truncated", 0x00, 0x00, truncated(udp4(one_tag, v4), 16)},
		{"three-tags", 0x00, 0x00, udp4(three, v4)},
		{"eth-only", 0x00, 0x00, raw({}, kEthIpv4)},
		{"runt-10", 0x00, 0x00, truncated(udp4({}, v4), 10)},
		{"empty", 0x00, 0x00, {}},
		{"ipv4-standing-serving", 0xc0, 0x00, udp4({}, v4), 0x31},
		{"ipv4-standing-shedding", 0xc4, 0x01, udp4({}, v4), 0x71},
		{"ipv4-standing-share-shedding", 0xc4, 0x01, udp4({}, v4), 0xf1},
		// a UDP grant's entry: its port's answers (the frames' source port
		// is 40000), not another port's, not TCP
		{"ipv4-standing-udp-port-shedding", 0xc4, 0x01, udp4({}, v4), 0x71, {}, {}, 40000},
		{"ipv4-standing-udp-other-port-shedding", 0xc4, 0x01, udp4({}, v4), 0x71, {}, {}, 53},
		{"ipv6-standing-udp-port-vlan-shedding", 0xc4, 0x01, udp6(one_tag, v6), 0x71, {}, {}, 40000},
		{"ipv4-standing-udp-port-tcp-serving", 0xc0, 0x00, ack4, 0x31, {}, {}, 40000},
		{"ipv6-standing-share-serving", 0xc0, 0x00, udp6({}, v6), 0xb1},
		{"ipv6-standing-valve", 0x44, 0x01, udp6({}, v6), 0x13},
		{"ipv4-newcomer", 0xc4, 0x00, udp4({}, v4), 0x0c},
		{"ipv4-newcomer-valve", 0x44, 0x00, udp4({}, v4), 0x0e},
		{"ipv4-standing-recovering", 0xc8, 0x03, udp4({}, v4), 0x21},
		{"policy-udp-port-limit", 0xc0, 0x07, udp4({}, v4), 0, port_limit},
		{"policy-udp-port-limit-set1", 0xc0, 0x07, udp4({}, v4), 0, set1},
		{"policy-tcp-syn-exempt", 0x04, 0x00, syn4, 0, syn_exempt},
		{"policy-tcp-ack-deny", 0x00, 0x00, ack4, 0, ack_deny},
		{"policy-tcp-ack-deny-dry-run", 0x01, 0x00, ack4, 0, ack_deny},
		{"policy-tcp-truncated", 0x00, 0x00, syn4_short, 0, port_limit},
		{"policy-icmp-deny", 0x00, 0x00, ping4, 0, ip_deny},
		{"policy-fragment-v4", 0xc0, 0x01, frag_udp4, 0, ip_limit},
		{"policy-ipv6-ext-bytes", 0xc0, 0x07, ext_udp6, 0, port_bytes},
		{"policy-ipv6-fragment", 0x80, 0x01, frag6, 0, ip_limit},
		{"policy-ipv6-syn-prefix", 0x40, 0x02, syn6, 0, prefix6_ports},
		{"policy-ipv6-icmp-miss", 0x00, 0x02, ping6, 0, prefix6_miss},
		{"policy-ipv6-ext-truncated", 0x00, 0x00, ext_short6, 0, prefix6_ports},
		{"policy-prefix-v4", 0xc0, 0x03, udp4({}, v4), 0, prefix4},
		{"policy-prefix-v4-recovering", 0xc8, 0x0f, udp4({}, v4), 0, prefix4},
		{"policy-default-bytes", 0xc0, 0x07, udp4_sized(1514, {}, v4), 0, default_bytes},
		{"policy-standing-class-shedding", 0xc4, 0x01, udp4({}, v4), 0x71, standing_class},
		{"policy-standing-class-serving", 0xc0, 0x00, udp4({}, v4), 0x31, standing_class},
		{"policy-newcomer-class", 0xc4, 0x00, udp4({}, v4), 0x0c, port_limit},
		{"policy-unwritten-class", 0x40, 0x01, udp4({}, v4), 0, unwritten},
		{"policy-deny-list", 0x10, 0x01, udp4({}, deny4), 0, port_limit},
		{"policy-allow-shedding", 0x24, 0x01, udp4({}, allow4), 0, port_limit},
		{"policy-arp", 0x00, 0x00, arp_request(ip4("198.18.0.7"), ip4("198.18.0.1")), 0, port_limit},
	};
	// SYN cookies: SYNs as clients send them (Linux's options, none, MSS
	// only, Windows's, VLAN-tagged, IPv6), ACKs with random and proved
	// cookies, frames the path cannot answer, and frames it leaves alone.
	Tcp linux_syn;
	linux_syn.seq = 0x1a2b3c4d;
	linux_syn.options = linux_syn_options(1460, 0x01020304, 7);
	Tcp bare_syn;
	bare_syn.seq = 7;
	Tcp mss_syn = bare_syn;
	mss_syn.options = {2, 4, 0x05, 0xb4};
	Tcp windows_syn = bare_syn; // MSS, NOP, WS 8, NOP NOP SACK_PERM: no timestamps
	windows_syn.options = {2, 4, 0x05, 0xb4, 1, 3, 3, 8, 1, 1, 4, 2};
	Tcp syn_data = linux_syn;
	syn_data.payload_len = 100;
	Tcp random_ack = bare_syn;
	random_ack.flags = kTcpAck;
	random_ack.seq = 8;
	random_ack.ack = 0x5eed5eed;
	Tcp rst = random_ack;
	rst.flags = kTcpRst;
	Tcp synack = random_ack;
	synack.flags = kTcpSyn | kTcpAck;
	Tcp closed = linux_syn;
	closed.dport = 81;
	Tcp cut_syn = linux_syn;
	Ipv4 opts_tcp4 = v4;
	opts_tcp4.options = {0x01, 0x01, 0x01, 0x00};
	Ipv4 frag_tcp4 = v4;
	frag_tcp4.frag = 0x2000; // MF, offset 0: a first fragment
	Ipv4 allow_tcp4 = allow4;
	Bytes syn4_linux = sluice::frames::tcp4({}, v4, linux_syn);
	Bytes syn4_cut = truncated(sluice::frames::tcp4({}, v4, cut_syn), kEthHeaderLen + 20 + 30); // doff 10, 30 bytes there
	// c[0]: mode | listener 0x04 | burst << 3 | prove 0x20 | offers 0x40; c[1..4] delta
	const std::uint8_t shed = 0x01, always = 0x02, at_listener = 0x04, burst2 = 0x10, big = 0x18, prove_it = 0x20,
			   offers = 0x40;
	const Bytes ck_shed = {std::uint8_t(shed | burst2 | offers)};
	const Bytes ck_prove = {std::uint8_t(shed | big | offers | prove_it)};
	const Bytes ck_always_prove = {std::uint8_t(always | big | offers | prove_it)};
	const Bytes ck_forged = {std::uint8_t(shed | big | prove_it), 0x78, 0x56, 0x34, 0x12};
	const Bytes ck_stale = {std::uint8_t(shed | big | offers | prove_it), 0, 0, 0, 0xfe};
	const Bytes ck_next_mss = {std::uint8_t(shed | big | offers | prove_it), 1};
	const Bytes ck_no_budget = {std::uint8_t(shed | offers)};
	const Bytes ck_listener = {std::uint8_t(always | burst2 | at_listener)};
	const Bytes ck_shed_mode = {std::uint8_t(shed | burst2)};
	std::vector<Seed> cookie_seeds = {
		{"cookie-syn4-linux-shedding", 0x04, 0x00, syn4_linux, 0, {}, ck_shed},
		{"cookie-syn4-linux-prove", 0x04, 0x00, syn4_linux, 0, {}, ck_prove},
		{"cookie-syn4-bare-prove", 0x04, 0x00, sluice::frames::tcp4({}, v4, bare_syn), 0, {}, ck_prove},
		{"cookie-syn4-mss-always-serving-prove", 0x00, 0x01, sluice::frames::tcp4({}, v4, mss_syn), 0, {}, ck_always_prove},
		{"cookie-syn4-windows-recovering-prove", 0x08, 0x03, sluice::frames::tcp4({}, v4, windows_syn), 0, {}, ck_always_prove},
		{"cookie-syn4-data-prove", 0x04, 0x00, sluice::frames::tcp4({}, v4, syn_data), 0, {}, ck_prove},
		{"cookie-syn4-vlan-prove", 0x04, 0x00, sluice::frames::tcp4(one_tag, v4, linux_syn), 0, {}, ck_prove},
		{"cookie-syn4-qinq-prove", 0x04, 0x00, sluice::frames::tcp4(qinq, v4, linux_syn), 0, {}, ck_prove},
		{"cookie-syn6-linux-prove", 0x04, 0x00, sluice::frames::tcp6({}, v6, linux_syn), 0, {}, ck_prove},
		{"cookie-syn6-vlan-always-prove", 0x00, 0x00, sluice::frames::tcp6(one_tag, v6, mss_syn), 0, {}, ck_always_prove},
		{"cookie-syn4-forged", 0x04, 0x00, syn4_linux, 0, {}, ck_forged},
		{"cookie-syn4-stale", 0x04, 0x00, syn4_linux, 0, {}, ck_stale},
		{"cookie-syn6-next-mss", 0x04, 0x00, sluice::frames::tcp6({}, v6, windows_syn), 0, {}, ck_next_mss},
		{"cookie-syn4-no-budget", 0x04, 0x00, syn4_linux, 0, {}, ck_no_budget},
		{"cookie-ack4-random", 0x04, 0x00, sluice::frames::tcp4({}, v4, random_ack), 0, {}, ck_shed},
		{"cookie-ack6-random-always", 0x00, 0x00, sluice::frames::tcp6({}, v6, random_ack), 0, {}, ck_listener},
		{"cookie-rst4", 0x04, 0x00, sluice::frames::tcp4({}, v4, rst), 0x0c, {}, ck_shed},
		{"cookie-synack4", 0x04, 0x00, sluice::frames::tcp4({}, v4, synack), 0x0c, {}, ck_shed},
		{"cookie-syn4-closed-port", 0x04, 0x00, sluice::frames::tcp4({}, v4, closed), 0x0c, {}, ck_shed},
		{"cookie-syn4-closed-port-to-listener", 0x00, 0x00, sluice::frames::tcp4({}, v4, closed), 0, {}, ck_listener},
		{"cookie-syn4-ip-options", 0x04, 0x00, sluice::frames::tcp4({}, opts_tcp4, linux_syn), 0, {}, ck_shed},
		{"cookie-syn4-fragment", 0x04, 0x00, sluice::frames::tcp4({}, frag_tcp4, linux_syn), 0, {}, ck_shed},
		{"cookie-syn6-ext-header", 0x04, 0x00, sluice::frames::tcp6({}, v6, linux_syn, {ipv6_opts(0)}), 0, {}, ck_shed},
		{"cookie-syn4-cut", 0x04, 0x00, syn4_cut, 0, {}, ck_shed},
		{"cookie-syn4-standing", 0x04, 0x01, syn4_linux, 0x31, {}, ck_shed},
		{"cookie-syn4-allowlisted", 0x24, 0x00, sluice::frames::tcp4({}, allow_tcp4, linux_syn), 0, {}, ck_shed},
		{"cookie-syn4-valve", 0x04, 0x00, syn4_linux, 0x0e, {}, ck_shed},
		{"cookie-syn4-dry-run", 0x05, 0x00, syn4_linux, 0, {}, ck_prove},
		{"cookie-syn4-shedding-mode-serving", 0x00, 0x01, syn4_linux, 0, {}, ck_shed_mode},
		{"cookie-udp4-shedding", 0x04, 0x00, udp4({}, v4), 0x0c, {}, ck_listener},
		{"cookie-syn4-policy-limit", 0x04, 0x00, syn4_linux, 0, port_limit, ck_shed},
		{"cookie-syn4-policy-exempt", 0x04, 0x00, syn4_linux, 0, syn_exempt, ck_shed},
		{"cookie-ack4-policy-deny", 0x04, 0x00, sluice::frames::tcp4({}, v4, random_ack), 0, ack_deny, ck_shed},
	};
	seeds.insert(seeds.end(), cookie_seeds.begin(), cookie_seeds.end());
	for (const auto &s : seeds)
		write_file(std::filesystem::path(dir) / s.name, s.scenario, s.tuning, s.standing, s.frame, s.policy,
			   s.cookie, s.udp_port);
	std::printf("wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sluice::fuzz::write_corpus_if_asked(*argc, *argv, write_corpus);
	if (geteuid() != 0) {
		const char *ci = std::getenv("CI");
		if (ci && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0))
			die("cannot run in CI: needs root (BPF)");
		std::fprintf(stderr, "xdp_fuzz: skipped: needs root (BPF)\n");
		std::exit(125);
	}
	g_trace = std::getenv("SLUICE_FUZZ_TRACE") != nullptr;
	g_ncpu = libbpf_num_possible_cpus();
	if (g_ncpu < 1)
		die("libbpf_num_possible_cpus: %d", g_ncpu);
	for (Instance &in : g_inst)
		load(in);
	private_netns();
	if (!g_cookies_ok && in_ci())
		die("cannot run the cookie inputs in CI (see above)");
	pin_in_dispatcher();
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
	// A policy input: the magic, then the policy's bytes (zeros past the end).
	std::uint8_t pbytes[kPolicyBytes] = {};
	bool with_policy = size >= sizeof(kPolicyMagic) && std::memcmp(data, kPolicyMagic, sizeof(kPolicyMagic)) == 0;
	if (with_policy) {
		data += sizeof(kPolicyMagic);
		size -= sizeof(kPolicyMagic);
		std::size_t n = std::min(size, kPolicyBytes);
		std::memcpy(pbytes, data, n);
		data += n;
		size -= n;
	}
	// A cookie input: the magic, then the cookie bytes (zeros past the end).
	Cookies ck;
	if (size >= sizeof(kCookieMagic) && std::memcmp(data, kCookieMagic, sizeof(kCookieMagic)) == 0) {
		data += sizeof(kCookieMagic);
		size -= sizeof(kCookieMagic);
		std::uint8_t cb[kCookieBytes] = {};
		std::size_t n = std::min(size, kCookieBytes);
		std::memcpy(cb, data, n);
		data += n;
		size -= n;
		ck.on = true;
		ck.c0 = cb[0];
		ck.delta = std::uint32_t(cb[1]) | std::uint32_t(cb[2]) << 8 | std::uint32_t(cb[3]) << 16 |
			   std::uint32_t(cb[4]) << 24;
		static bool told = false;
		if (!g_cookies_ok && !told) {
			std::fprintf(stderr, "xdp_fuzz: cookie inputs run with cookies off (see above)\n");
			told = true;
		}
	}
	// A UDP-port input: the magic, then the port (big-endian).
	std::uint32_t bound_port = 0;
	if (size >= sizeof(kUdpPortMagic) && std::memcmp(data, kUdpPortMagic, sizeof(kUdpPortMagic)) == 0) {
		data += sizeof(kUdpPortMagic);
		size -= sizeof(kUdpPortMagic);
		std::uint8_t pb[2] = {};
		std::size_t n = std::min<std::size_t>(size, 2);
		std::memcpy(pb, data, n);
		data += n;
		size -= n;
		bound_port = std::uint32_t(pb[0]) << 8 | pb[1];
		if (bound_port == 0)
			bound_port = 53;
	}
	std::uint8_t scenario = size > 0 ? data[0] : 0;
	std::uint8_t tuning = size > 1 ? data[1] : 0;
	std::uint8_t standing = size > 2 ? data[2] : 0;
	std::size_t flen = size > 3 ? std::min(size - 3, kMaxFrame) : 0;
	static std::uint8_t frame[kMaxFrame];
	std::memcpy(frame, size > 3 ? data + 3 : data, flen);
	const std::uint8_t *fp = frame;
	Instance &in = g_inst[(scenario & 3) % 3];
	int repeat = ck.on ? 1 : 1 + (scenario >> 6);
	bool has_standing = standing & 1;

	// The host's parse, down to L4 (for the class).
	sluice_source src{};
	const std::uint8_t *l3 = fp;
	int kind = sluice_parse_at(fp, fp + flen, &src, &l3);
	bool ip = kind == SLUICE_PARSE_IPV4 || kind == SLUICE_PARSE_IPV6;
	bool v6 = kind == SLUICE_PARSE_IPV6;
	// A cookie input may point its TCP frame at the listener.
	if (ck.on && (ck.c0 & 4) && ip) {
		// (the host's parse: an IP header whole, its options included)
		std::size_t at = std::size_t(l3 - fp), th = 0;
		if (!v6 && frame[at + 9] == SLUICE_IPPROTO_TCP && !sluice_ipv4_later_fragment(frame + at))
			th = at + std::size_t(frame[at] & 0x0f) * 4;
		else if (v6 && at + 40 <= flen && frame[at + 6] == SLUICE_IPPROTO_TCP)
			th = at + 40;
		if (th && th + 4 <= flen) {
			frame[th + 2] = std::uint8_t(kListenPort >> 8);
			frame[th + 3] = std::uint8_t(kListenPort);
		}
	}
	sluice_l4 l4{};
	bool l4_ok = ip && sluice_parse_l4(l3, fp + flen, v6, &l4) == 0;

	sluice_config cfg = config_for(scenario, tuning, standing, ck);
	Policy pol;
	if (with_policy)
		pol = policy_for(pbytes, kind, src, l4);
	cfg.policy_flags |= pol.flags;
	bool classed = (cfg.policy_flags & SLUICE_CLASS_ANY) != 0;
	if (pol.on || !in.port_blocks.empty() || !in.v4_keys.empty() || !in.v6_keys.empty())
		write_policy(in, pol);
	if (std::memcmp(&cfg, &in.cfg, sizeof(cfg)) != 0) {
		__u32 zero = 0;
		if (bpf_map_update_elem(in.config_fd, &zero, &cfg, BPF_ANY))
			die("config update: %s", std::strerror(errno));
		in.cfg = cfg;
	}

	// The host's view of the frame: its outcome class, its two slots and
	// its standing set and way.
	sluice_slot_pair pair{0, 0};
	std::uint32_t set_idx = 0, way = 0, fpr = 0;
	std::uint64_t plain_hash = 0;
	if (ip) {
		sluice_source m = src;
		if (v6)
			sluice_mask_v6(&m, in.v6_prefix);
		else
			m.w[0] = sluice_mask_v4(std::uint32_t(m.w[0]), in.v4_prefix);
		std::uint64_t hash = sluice_source_hash(kKey, &m, v6);
		plain_hash = hash;
		pair = sluice_slots_of(hash, in.slots - 1, in.one_choice);
		if (pair.a >= in.slots || pair.b >= in.slots || (!in.one_choice && pair.a == pair.b))
			die("sluice_slots_of gave slots %u, %u of %u", pair.a, pair.b, in.slots);
		set_idx = sluice_standing_set_of(hash, kStandingSets - 1);
		fpr = sluice_standing_fingerprint(hash);
		way = fpr & (SLUICE_STANDING_WAYS - 1);
		// Plant (or remove) the source's entry: every way of its set
		// that holds its fingerprint is cleared, then, with standing,
		// one live entry stamped now.
		sluice_standing_set &set = in.standing[set_idx];
		for (int w = 0; w < SLUICE_STANDING_WAYS; w++)
			if (sluice_standing_entry_fp(set.way[w]) == fpr)
				set.way[w] = 0;
		set.port[way] = 0;
		if (has_standing) {
			set.way[way] = sluice_standing_entry(fpr, sluice_standing_stamp(dataplane_ns() + SLUICE_TIME_BIAS));
			if (standing & 0x40)
				set.empty_at[way] = 0;
			// bound to a UDP port: standing for this frame only if it
			// is UDP from that port, as the host reads it in place
			set.port[way] = std::uint16_t(bound_port);
			if (bound_port)
				has_standing = sluice_udp_source_port(fp, fp + flen) == bound_port;
		}
		if (bpf_map_update_elem(in.standing_fd, &set_idx, &set, BPF_ANY))
			die("standing set update: %s", std::strerror(errno));
	}
	std::uint32_t want = expected_outcome(cfg, kind, src, has_standing);
	// Under a policy: the frame's class (counted there), and the class's
	// verdict before any bucket: the deny list first, then a frame too short
	// for the L4 header a class flag needs, then the class's action.
	std::uint32_t want_class = SLUICE_CLASS_DEFAULT;
	const sluice_class *crec = nullptr; // the class's record (for class 0: its byte budget)
	if (classed && ip && want != SLUICE_DROP_DENY) {
		bool needs_l4 = cfg.policy_flags & (SLUICE_CLASS_PORTS | (v6 ? SLUICE_CLASS_PREFIX_V6 : SLUICE_CLASS_PREFIX_V4));
		if (needs_l4 && !l4_ok) {
			want = SLUICE_MALFORMED;
		} else {
			if (needs_l4)
				want_class = expected_class(pol, v6, src, l4);
			crec = &pol.rec[want_class];
			if (want_class != SLUICE_CLASS_DEFAULT && crec->action == SLUICE_CLASS_DENY)
				want = SLUICE_DROP_CLASS;
			else if (want_class != SLUICE_CLASS_DEFAULT && crec->action == SLUICE_CLASS_EXEMPT)
				want = SLUICE_EXEMPT;
			if (want_class == SLUICE_CLASS_DEFAULT && !(cfg.policy_flags & SLUICE_CLASS_DEFAULT_BYTES))
				crec = nullptr;
		}
	}
	// The cookie path, while cookies are in force, for a frame of a source
	// without standing that reaches the budgets (the dry-run program sends
	// nothing); then the newcomer budget, which may be none.
	bool shedding_now = cfg.breaker_state == SLUICE_SHEDDING;
	bool cookies_in_force = cfg.cookie_mode == SLUICE_COOKIES_ALWAYS ||
				(cfg.cookie_mode == SLUICE_COOKIES_SHEDDING && shedding_now);
	CookieWay cway = CookieWay::go_on;
	std::uint32_t syn_seq = 0;
	std::uint32_t want_alt = SLUICE_OUTCOMES; // a second outcome the frame may get instead of want
	if (want == SLUICE_PASSED && ip && !has_standing && !in.dry_run && cookies_in_force) {
		cway = cookie_way_of(fp + flen, l3, v6, &syn_seq);
		switch (cway) {
		case CookieWay::unfit: want = SLUICE_DROP_COOKIE_UNFIT; break;
		case CookieWay::syn:
			// Sent if this CPU's bucket holds a token, else the budget's drop.
			want = cfg.cookie_cost_ns ? SLUICE_COOKIE_SENT : SLUICE_DROP_COOKIE_BUDGET;
			if (cfg.cookie_cost_ns)
				want_alt = SLUICE_DROP_COOKIE_BUDGET;
			break;
		case CookieWay::ack:
			want = SLUICE_DROP_COOKIE; // a random ack number: proved at most 2^-29 of the time
			want_alt = SLUICE_COOKIE_PROVED;
			break;
		case CookieWay::go_on: break;
		}
	}
	if (want == SLUICE_PASSED && shedding_now && !has_standing && cfg.newcomer_cost_ns == 0)
		want = SLUICE_DROP_SHED;
	bool bucket_path = want == SLUICE_PASSED;
	// A class's own buckets (another key, its budgets, a byte pair): the
	// harness checks their bounds, not their exact counts.
	bool class_buckets = bucket_path && crec != nullptr;
	bool bytes_budget = class_buckets && crec->byte_cost_fp != 0;
	bool shedding = cfg.breaker_state == SLUICE_SHEDDING;
	// The slot pair's cost: recovering ramps only sources without standing.
	// A class of its own: its packet budget, its key (the source masked to
	// its prefixes, the class folded into the hash key: source_key.h), its
	// standing budget if it has one.
	std::uint64_t pkt_cost = cfg.cost_ns, pkt_burst = cfg.burst;
	std::uint64_t st_cost = cfg.standing_cost_ns, st_burst = cfg.standing_burst;
	std::uint64_t pkt_hash = plain_hash;
	if (class_buckets && want_class != SLUICE_CLASS_DEFAULT) {
		pkt_cost = crec->cost_ns;
		pkt_burst = crec->burst;
		if (crec->standing_cost_ns) {
			st_cost = crec->standing_cost_ns;
			st_burst = crec->standing_burst;
		}
		sluice_source cs = src;
		__u64 ckey[2];
		sluice_mask_prefixes(&cs, v6, crec->v4_prefix, crec->v6_prefix);
		sluice_class_key(kKey, want_class, ckey);
		pkt_hash = sluice_source_hash(ckey, &cs, v6);
		pair = sluice_slots_of(pkt_hash, in.slots - 1, in.one_choice);
	}
	// The byte budget's pair, never ramped.
	sluice_slot_pair byte_pair = bytes_budget ? sluice_slots_of(sluice_byte_hash(pkt_hash), in.slots - 1, in.one_choice)
						  : pair;
	std::uint64_t byte_burst_ns = bytes_budget ? crec->byte_burst_ns : 0;
	std::uint64_t cost = has_standing ? pkt_cost
					  : sluice_effective_cost(pkt_cost, cfg.breaker_state, cfg.admission_ppm);
	std::uint64_t burst_ns = pkt_burst * cost;
	// A standing bucket holds the time its own rate's burst lasts, and
	// refills at its own rate or the share, whichever is lower.
	std::uint64_t st_burst_ns = st_burst * st_cost;
	st_cost = std::max<std::uint64_t>(st_cost, cfg.standing_share_cost_ns);
	std::uint64_t nc_burst_ns = cfg.newcomer_burst * cfg.newcomer_cost_ns;

	// Run it. Frames shorter than an Ethernet header: BPF_PROG_TEST_RUN
	// wants at least ETH_HLEN of data_in, so the frame is padded and
	// xdp_md.data_end says where it ends (see tests/bpf/fixture.h).
	std::uint8_t in_buf[kMaxFrame + kEthHeaderLen];
	std::memcpy(in_buf, fp, flen);
	std::size_t in_len = flen;
	xdp_md ctx{};
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	if (flen < kEthHeaderLen) {
		std::memset(in_buf + flen, 0, kEthHeaderLen - flen);
		in_len = kEthHeaderLen;
		ctx.data = 0;
		ctx.data_end = std::uint32_t(flen);
		opts.ctx_in = &ctx;
		opts.ctx_size_in = sizeof(ctx);
	}
	opts.data_in = in_buf;
	opts.data_size_in = std::uint32_t(in_len);
	static std::uint8_t out_buf[4096]; // the frame as the program left it (a SYN-ACK, for XDP_TX)
	opts.data_out = out_buf;
	opts.data_size_out = sizeof(out_buf);
	opts.repeat = repeat;
	// Signals blocked: a signal pending during a run of several repetitions
	// ends it early with EINTR, after some of them (libFuzzer's timer is
	// one); it is delivered right after.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	std::uint64_t c0 = dataplane_ns();
	int err = bpf_prog_test_run_opts(in.prog, &opts);
	int run_errno = errno;
	std::uint64_t c1 = dataplane_ns();
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (err)
		die("bpf_prog_test_run_opts (%zu bytes): %s", flen, std::strerror(run_errno));

	// Counters: exactly one outcome per repetition.
	auto now_counters = read_counters(in);
	std::array<std::uint64_t, SLUICE_OUTCOMES> dp{}, db{};
	std::uint64_t seen = 0, seen_bytes = 0, drops = 0;
	for (unsigned o = 0; o < SLUICE_OUTCOMES; o++) {
		dp[o] = now_counters[o].packets - in.counters[o].packets;
		db[o] = now_counters[o].bytes - in.counters[o].bytes;
		if (o != SLUICE_WOULD_DROP) {
			seen += dp[o];
			seen_bytes += db[o];
			if (drop_outcome(o))
				drops += dp[o];
		}
	}
	in.counters = now_counters;
	static std::vector<sluice_counter> now_class;
	read_class_counters(in, now_class);
	std::string what = std::string(in.name) + " scenario " + std::to_string(scenario) + " tuning " +
			   std::to_string(tuning) + " frame " + hex(fp, flen);
	if (with_policy)
		what = "policy " + hex(pbytes, kPolicyBytes) + " (class " + std::to_string(want_class) + ") " + what;
	// Under a policy every IP frame is counted in its class too, exactly as
	// globally; otherwise no class counter moves.
	for (std::uint32_t k = 0; k < SLUICE_CLASS_COUNTER_KEYS; k++) {
		std::uint32_t id = k / SLUICE_OUTCOMES, o = k % SLUICE_OUTCOMES;
		std::uint64_t p = now_class[k].packets - in.class_counters[k].packets;
		std::uint64_t b = now_class[k].bytes - in.class_counters[k].bytes;
		bool mine = classed && ip && id == want_class;
		if (p != (mine ? dp[o] : 0) || b != (mine ? db[o] : 0))
			die("class %u outcome %u counted %llu packets %llu bytes, want %llu, %llu: %s", id, o,
			    (unsigned long long)p, (unsigned long long)b, (unsigned long long)(mine ? dp[o] : 0),
			    (unsigned long long)(mine ? db[o] : 0), what.c_str());
	}
	in.class_counters.swap(now_class);
	if (g_trace) {
		std::string outs;
		for (unsigned o = 0; o < SLUICE_OUTCOMES; o++)
			if (dp[o])
				outs += " " + std::to_string(o) + "x" + std::to_string(dp[o]);
		std::fprintf(stderr, "xdp_fuzz: want %u class %u, counted%s, verdict %u: %s\n", want, want_class,
			     outs.c_str(), opts.retval, what.c_str());
	}
	if (seen != std::uint64_t(repeat))
		die("%d repetitions counted %llu times: %s", repeat, (unsigned long long)seen, what.c_str());
	// A SYN answered is counted with the SYN-ACK's bytes (what left the host).
	bool sent = dp[SLUICE_COOKIE_SENT] != 0;
	std::uint64_t want_bytes = sent ? opts.data_size_out : std::uint64_t(repeat) * flen;
	if (seen_bytes != want_bytes)
		die("bytes counted %llu, want %llu (%d x %zu%s): %s", (unsigned long long)seen_bytes,
		    (unsigned long long)want_bytes, repeat, flen, sent ? ", a SYN-ACK" : "", what.c_str());
	if (in.dry_run ? dp[SLUICE_WOULD_DROP] != drops : dp[SLUICE_WOULD_DROP] != 0)
		die("would_drop %llu with %llu drops (dry run %u): %s", (unsigned long long)dp[SLUICE_WOULD_DROP],
		    (unsigned long long)drops, in.dry_run, what.c_str());
	// On the bucket path a frame is admitted by its slot pair (passed; while
	// shedding: standing, or newcomer), by its standing bucket (standing),
	// or dropped by its rate; while shedding a newcomer may also find the
	// newcomer budget empty (drop_shed).
	std::uint64_t admitted = 0;
	if (bucket_path) {
		admitted = dp[SLUICE_PASSED] + dp[SLUICE_STANDING] + dp[SLUICE_NEWCOMER];
		std::uint64_t shed = shedding && !has_standing ? dp[SLUICE_DROP_SHED] : 0;
		std::uint64_t over_bytes = bytes_budget ? dp[SLUICE_DROP_BYTES] : 0;
		if (admitted + dp[SLUICE_DROP_RATE] + shed + over_bytes != std::uint64_t(repeat))
			die("a bucket frame counted outside its outcomes: %s", what.c_str());
		if (!has_standing && dp[SLUICE_STANDING])
			die("standing counted for a source without standing: %s", what.c_str());
		if (shedding ? dp[SLUICE_PASSED] != 0 : dp[SLUICE_NEWCOMER] != 0)
			die("passed while shedding, or newcomer while not: %s", what.c_str());
	} else if (dp[want] + (want_alt < SLUICE_OUTCOMES ? dp[want_alt] : 0) != std::uint64_t(repeat)) {
		die("want outcome %u (or %u) x %d, got %llu: %s", want, want_alt, repeat, (unsigned long long)dp[want],
		    what.c_str());
	}
	std::uint32_t got = bucket_path || dp[want] ? want : want_alt; // repeat is 1 when want_alt is set

	// The verdict: XDP_TX only for a SYN answered with a cookie.
	if (opts.retval != XDP_PASS && opts.retval != XDP_DROP && opts.retval != XDP_TX)
		die("verdict %u (not XDP_PASS, XDP_DROP or XDP_TX): %s", opts.retval, what.c_str());
	bool last_drop;
	if (!bucket_path)
		last_drop = drop_outcome(got);
	else if (admitted == 0 || admitted == std::uint64_t(repeat))
		last_drop = admitted == 0;
	else
		last_drop = opts.retval == XDP_DROP; // mixed: either may be last
	std::uint32_t want_verdict = sent ? XDP_TX : last_drop && !in.dry_run ? XDP_DROP : XDP_PASS;
	if (opts.retval != want_verdict)
		die("verdict %u, want %u: %s", opts.retval, want_verdict, what.c_str());
	std::uint32_t cookie = 0;
	if (sent)
		cookie = check_synack(fp, flen, out_buf, opts.data_size_out, std::size_t(l3 - fp), v6, what);

	// The table: only the frame's slots changed, and what they changed to.
	static std::vector<std::uint64_t> table;
	read_slots(in, table);
	for (std::uint32_t i = 0; i < in.slots; i++) {
		if (table[i] == in.shadow[i])
			continue;
		bool of_pair = i == pair.a || i == pair.b;
		bool of_bytes = bytes_budget && (i == byte_pair.a || i == byte_pair.b);
		if (!bucket_path || (!of_pair && !of_bytes))
			die("slot %u changed (%llu -> %llu), not one of the frame's (%s): %s", i,
			    (unsigned long long)in.shadow[i], (unsigned long long)table[i],
			    bucket_path ? "bucket frame" : "no bucket", what.c_str());
		// Written during the run: the credit left at the program's clock
		// (in [c0, c1]) is within [0, burst x cost] (the byte pair's:
		// [0, byte_burst_ns]): no slot ever holds more than its class's burst.
		std::uint64_t cap = std::max(of_pair ? burst_ns : 0, of_bytes ? byte_burst_ns : 0);
		std::uint64_t lo = c0 + SLUICE_TIME_BIAS - cap, hi = c1 + SLUICE_TIME_BIAS;
		if (table[i] < lo || table[i] > hi)
			die("slot %u written as %llu, outside [%llu, %llu] (credit over burst or in the future): %s", i,
			    (unsigned long long)table[i], (unsigned long long)lo, (unsigned long long)hi, what.c_str());
	}
	for (std::uint32_t i = 0; i < in.slots; i++) {
		std::uint64_t t = sluice_tokens(table[i], c1 + SLUICE_TIME_BIAS, cost, pkt_burst);
		if (t > pkt_burst)
			die("slot %u holds %llu tokens, burst %llu", i, (unsigned long long)t,
			    (unsigned long long)pkt_burst);
	}
	// Admitted by a bucket of `shadow_empty_at` (cost, burst_ns): at least
	// what it held at c0, at most what it held at c1 plus what can refill
	// during the run (nothing when the clock did not move), of `offered`.
	auto held = [](std::uint64_t e, std::uint64_t now, std::uint64_t c, std::uint64_t b_ns) -> std::uint64_t {
		return c ? sluice_credit(e, now + SLUICE_TIME_BIAS, b_ns) / c : 0;
	};
	auto check_admitted = [&](const char *bucket, std::uint64_t got, std::uint64_t offered, std::uint64_t lo_held,
				  std::uint64_t hi_held, std::uint64_t c) {
		std::uint64_t lo = std::min(offered, lo_held);
		std::uint64_t hi = std::min(offered, hi_held + (c ? (c1 - c0 + c - 1) / c : 0));
		if (got < lo || got > hi)
			die("%s admitted %llu of %llu, want [%llu, %llu]: %s", bucket, (unsigned long long)got,
			    (unsigned long long)offered, (unsigned long long)lo, (unsigned long long)hi, what.c_str());
	};
	// With a byte budget the packet pair's admissions are split between
	// the outcomes of the byte pair: their bounds above, not their counts.
	if (bucket_path && !bytes_budget) {
		auto pair_held = [&](std::uint64_t now) {
			return std::max(held(in.shadow[pair.a], now, cost, burst_ns), held(in.shadow[pair.b], now, cost, burst_ns));
		};
		auto st_held = [&](std::uint64_t now) {
			return held(in.standing[set_idx].empty_at[way], now, st_cost, st_burst_ns);
		};
		if (!shedding && !has_standing) {
			// The slot pair alone decides: what the fuller slot held.
			check_admitted("slot pair", dp[SLUICE_PASSED], repeat, pair_held(c0), pair_held(c1), cost);
		} else if (!shedding) {
			check_admitted("slot pair", dp[SLUICE_PASSED], repeat, pair_held(c0), pair_held(c1), cost);
			check_admitted("standing bucket", dp[SLUICE_STANDING], repeat - dp[SLUICE_PASSED], st_held(c0),
				       st_held(c1), st_cost);
		} else if (has_standing) {
			// Shedding: the standing bucket alone (its slot pair is not
			// asked: the share bounds the standing sources together).
			check_admitted("standing bucket", dp[SLUICE_STANDING], repeat, st_held(c0), st_held(c1), st_cost);
		} else {
			// A newcomer: no more than its slot pair or the budget held.
			std::uint64_t nc_hi = 0;
			for (std::uint64_t e : in.newcomers)
				nc_hi = std::max(nc_hi, held(e, c1, cfg.newcomer_cost_ns, nc_burst_ns));
			check_admitted("newcomer (slot pair)", dp[SLUICE_NEWCOMER], repeat, 0, pair_held(c1), cost);
			check_admitted("newcomer (budget)", dp[SLUICE_NEWCOMER], repeat, 0, nc_hi, cfg.newcomer_cost_ns);
		}
	}

	// The standing table: only the frame's standing bucket may have
	// changed (the program may also stamp its entry again), within
	// [0, standing_burst].
	static std::vector<sluice_standing_set> sets;
	read_standing(in, sets);
	if (dp[SLUICE_COOKIE_PROVED])
		expect_cookie_grant(in, sets, set_idx, fpr, c0, c1, what);
	for (std::uint32_t i = 0; i < kStandingSets; i++) {
		const sluice_standing_set &a = in.standing[i], &b = sets[i];
		for (int w = 0; w < SLUICE_STANDING_WAYS; w++) {
			bool mine = ip && has_standing && i == set_idx && std::uint32_t(w) == way;
			if (a.record[w] != b.record[w])
				die("standing record %u/%d changed: %s", i, w, what.c_str());
			if (a.port[w] != b.port[w])
				die("standing port %u/%d changed (%u -> %u): %s", i, w, a.port[w], b.port[w], what.c_str());
			// seen: every frame of the way's source that reached its
			// standing bucket or the closed valve, and no other
			std::uint64_t reached = !mine                      ? 0
						: want == SLUICE_DROP_VALVE ? repeat
						: !bucket_path              ? 0
						: shedding                  ? repeat
									    : repeat - dp[SLUICE_PASSED];
			if (bucket_path && mine && bytes_budget)
				reached = b.seen[w] - a.seen[w]; // split by the byte pair's outcomes: not counted here
			if (std::uint32_t(b.seen[w] - a.seen[w]) != reached)
				die("standing seen %u/%d moved by %u, want %llu: %s", i, w, b.seen[w] - a.seen[w],
				    (unsigned long long)reached, what.c_str());
			if (std::memcmp(&a.source[2 * w], &b.source[2 * w], 16) != 0)
				die("standing source %u/%d changed: %s", i, w, what.c_str());
			if (a.way[w] != b.way[w] && !(mine && sluice_standing_entry_fp(b.way[w]) == fpr))
				die("standing way %u/%d changed (%llx -> %llx): %s", i, w, (unsigned long long)a.way[w],
				    (unsigned long long)b.way[w], what.c_str());
			if (a.empty_at[w] == b.empty_at[w])
				continue;
			if (!mine || !bucket_path)
				die("standing bucket %u/%d changed, not the frame's: %s", i, w, what.c_str());
			std::uint64_t lo = c0 + SLUICE_TIME_BIAS - st_burst_ns, hi = c1 + SLUICE_TIME_BIAS;
			if (b.empty_at[w] < lo || b.empty_at[w] > hi)
				die("standing bucket written as %llu, outside [%llu, %llu]: %s",
				    (unsigned long long)b.empty_at[w], (unsigned long long)lo, (unsigned long long)hi,
				    what.c_str());
		}
		for (int w = 0; w < SLUICE_STANDING_WAYS; w++)
			if (st_cost && sluice_tokens(b.empty_at[w], c1 + SLUICE_TIME_BIAS, st_cost, st_burst) > st_burst)
				die("standing bucket %u/%d over its burst: %s", i, w, what.c_str());
	}
	in.standing.swap(sets);

	// The newcomer budget: one CPU's bucket at most changed, and only for a
	// newcomer's frame its packet budget admitted; within [0, newcomer_burst].
	// Admitted by the packet budget: newcomer, or with a byte budget also
	// drop_bytes (the byte pair refused it after the newcomer budget and the
	// slot pair had paid, and the packet token stays spent:
	// buckets_path.bpf.h, judge_buckets; docs/architecture.md).
	static std::vector<std::uint64_t> nc;
	read_per_cpu(in.newcomers_fd, "newcomers", nc);
	int changed = 0;
	std::uint64_t nc_paid = dp[SLUICE_NEWCOMER] + (bytes_budget ? dp[SLUICE_DROP_BYTES] : 0);
	for (std::size_t i = 0; i < nc.size(); i++) {
		if (nc[i] == in.newcomers[i])
			continue;
		changed++;
		if (!bucket_path || !shedding || has_standing || nc_paid == 0)
			die("newcomer bucket of CPU %zu changed without a newcomer admitted by its packet budget: %s", i,
			    what.c_str());
		std::uint64_t lo = c0 + SLUICE_TIME_BIAS - nc_burst_ns, hi = c1 + SLUICE_TIME_BIAS;
		if (nc[i] < lo || nc[i] > hi)
			die("newcomer bucket written as %llu, outside [%llu, %llu]: %s", (unsigned long long)nc[i],
			    (unsigned long long)lo, (unsigned long long)hi, what.c_str());
	}
	if (changed > 1)
		die("%d CPUs' newcomer buckets changed in one run: %s", changed, what.c_str());
	in.newcomers.swap(nc);
	in.shadow.swap(table);

	// The cookie budget: one CPU's bucket pays for a SYN-ACK sent, within
	// [0, cookie_burst]; none changes otherwise; the budget's drop only when
	// some CPU's bucket had no token.
	check_cookie_budget(in, cfg, dp[SLUICE_COOKIE_SENT], dp[SLUICE_DROP_COOKIE_BUDGET], c0, c1, what);

	// The client's ACK to the SYN-ACK, its cookie moved by the input's delta.
	if (sent && (ck.c0 & 0x20) && !with_policy)
		prove(in, cfg, fp, std::size_t(l3 - fp), v6, syn_seq, cookie, ck.delta, set_idx, fpr, what);
	return 0;
}
