// sluice-bench - the BPF_PROG_TEST_RUN half of scripts/bench.sh. Loads XDP
// objects from files (sluice and its variants, xdp_drop, xdp-filter's
// programs), never pins anything, attaches only for `attach`, and prints JSON
// on stdout.
//
//   sluice-bench cost [--repeat N] [--rounds R] [--new-source WRAPPER]
//                     NAME=OBJECT[,drop|,new|,policy=FILE|,path=PATH] ...
//       Per-packet cost, in ns, of each program on a 64-byte IPv4 UDP and a
//       64-byte IPv6 UDP frame: bpf_prog_test_run_opts with `repeat` N (the
//       kernel times the loop and excludes the time it was preempted), R
//       rounds, the programs interleaved within each round so that a change
//       of machine load hits all of them alike. An object with a `settings`
//       variable in .rodata is a sluice object: it is loaded with a fixed key,
//       the default table size and a config that admits every frame (rate 1e8,
//       burst 1e6: the pass path, both slots paid), or with ",drop" one that
//       admits none (rate 1, burst 1, slots drained first: the flood path).
//       Any other object (xdp_drop, xdpfilt_dny_ip.o, the LRU baseline) is
//       loaded as it is, its maps empty and unpinned. ",new" runs the object
//       behind the WRAPPER object (new_source.bpf.o, its own copy per
//       program), which gives every repetition a new source address and
//       tail-calls it: the spoofed flood's path. ",policy=FILE" (sluice
//       objects) puts a policy file in force, as sluiced would (figure 9).
//       "@sluiced,PATH" instead of an object is the program as sluiced
//       loads and configures it by default, on one path (sluiced_program()).
//       ",path=PATH" puts a sluice object (a cut-point build) on that path
//       the same way, its key still the fixed one (put_on_path()).
//       --frame KIND times another frame pair (cost_frames()).
//       -> {"repeat":N,"rounds":R,"progs":{NAME:{"v4":[ns...],"v6":[ns...],
//           "retval_v4":V,"retval_v6":V}}}
//
//   sluice-bench collateral --obj SLUICE_OBJECT [--slots N] [--legit L]
//       [--heavy-frac F,F,...] [--burst B] [--seed S]
//       Collateral damage of heavy sources on legitimate ones, one choice
//       against two, on a loaded sluice object driven by BPF_PROG_TEST_RUN
//       with the clock taken out: rate 1/s while `recovering` at the 0.1%
//       floor, so a token refills in 1000 s and nothing refills during the
//       run. h = F x N heavy sources each send B+1 frames (each frame pays
//       both slots, so their slots end drained, as under a sustained flood); then L legitimate sources each
//       send B/2 frames (half of what their bucket allows), one frame per
//       source per round, in B/2 rounds. A legitimate source "loses" when any
//       of its frames is dropped.
//       -> {"slots":N,"legit":L,"burst":B,"runs":[{"heavy":h,"heavy_frac":F,
//           "one_choice":0|1,"losers":n,"share":x,"drained_slots":d}...]}
//
//   sluice-bench attach --iface IFACE [--rate R] [--burst B] [--entries N]
//                       [--v6-prefix 64|128] OBJECT
//       Loads OBJECT as `cost` does (a sluice object: fixed key, default
//       table, a config of rate R and burst B, default 1000 and 1000; the
//       LRU baseline: its .rodata rate_pps, burst and v6_prefix set, its
//       tables sized N, default as compiled, 32768) and attaches it to IFACE in native
//       mode; prints {"attached":IFACE,"prog_fd":N,"maps_memlock":BYTES} and
//       holds it there until end of input, then detaches. Each line read
//       meanwhile prints the LRU baseline's per-CPU counters,
//       {"passed":[...],"dropped":[...]} (an object without them: []).
//       For figure 2's breakdown on the receive path: the cut-point builds
//       need a config the daemon would not give them. (The one exception to
//       "never attaches".)
//
//   sluice-bench cookie-cost --obj SLUICE_OBJECT --drop-obj XDP_DROP_OBJECT
//                            --restore RESTORE_OBJECT [--calls N] [--rounds R] [--repeat M]
//       The SYN cookie paths' cost (figure 10): first moves into a network
//       namespace of its own (unshare(CLONE_NEWNET): BPF_PROG_TEST_RUN runs
//       XDP in the caller's namespace, and the kernel's cookie helpers need a
//       listener there and net.ipv4.tcp_syncookies = 2), brings lo up, sets
//       tcp_syncookies and tcp_timestamps to 2 there, listens on
//       0.0.0.0:8080 and [::]:8080 (the root namespace is not touched; it all
//       ends with the process). Then, IPv4 and IPv6, sluice shedding with no
//       newcomer budget, cookies while shedding and a budget no run spends:
//         syn     a Linux SYN (MSS, SACK, timestamps, window scale) to the
//                 listener from a source without standing: the SYN-ACK
//                 (XDP_TX, cookie_sent)
//         ack     a forged ACK to the listener from a source that sent no
//                 SYN (the SYN stamps asked, as sluiced asks them after
//                 its grace): drop_cookie before the kernel's check
//         ack_stamped  the forged ACK from the SYN's source (its slot
//                 stamped by the syn path; after SYNs, so the kernel's
//                 check runs whole): drop_cookie
//         shed    the same SYN with cookies off: drop_shed (no budget)
//         syn_spent  the same SYN past a spent cookie budget:
//                 drop_cookie_budget
//         syn_reflect the same SYN past a spent per-destination bound
//                 (its /24's or /48's): drop_cookie_reflect (the other
//                 paths run with the bound in force, never spent)
//         ack_lookup the forged ACK with config.cookie_acks_unlooked 0
//                 (sluiced without its feeders): the listener lookup
//                 first (the other paths run with it 1, as sluiced with
//                 its feeders)
//         drop    figure 1's drop path (64-byte UDP over its limit, serving)
//         xdp_drop  the XDP_DROP program
//       Timed figure 1's way (one call, repeat M, the kernel's loop), each
//       behind the RESTORE wrapper (restore_frame.bpf.o, its own copy a path),
//       which puts the frame back before every repetition: XDP_TX rewrites the
//       SYN into its SYN-ACK in place, and BPF_PROG_TEST_RUN does not reset
//       the buffer between repetitions. The wrapper's own cost is the
//       "wrapped" xdp_drop less the bare one ("xdp_drop_bare"), both reported.
//       Also, as a cross-check, one frame a call (repeat 1, N calls, the
//       median: "single_v4"/"single_v6"), which needs no wrapper but pays a
//       cold start and the timer every call. Rounds interleave the paths.
//       -> {"calls":N,"rounds":R,"repeat":M,"paths":{PATH:{"v4":[ns...],
//           "v6":[ns...],"single_v4":[ns...],"single_v6":[ns...],
//           "retval_v4":V,"retval_v6":V}},"outcomes":{PATH:{NAME:packets}}}
//       With --raw-obj COOKIE_ALT_RAW --listener-obj COOKIE_ALT_LISTENER
//       --reqsk-obj COOKIE_REQSK (each optional), the other ways of making
//       the cookie beside sluice's, in the same rounds (docs/architecture.md,
//       "SYN cookies"): cookie_alt.bpf.o alone, the raw helpers
//       (raw_syn, raw_ack) and the listener's cookies as sluice makes them
//       (listener_syn, listener_ack), the same SYN and forged ACK, wrapped;
//       and the tc program cookie_reqsk.bpf.o (not wrapped: tc does not
//       rewrite an ACK) on an ACK carrying its own valid cookie
//       (reqsk_ack_valid) and on the forged one (reqsk_ack_forged), with what
//       bpf_sk_assign_tcp_reqsk last answered ("reqsk_last_assign", 0 or a
//       negative errno, and "reqsk_last_assign_error").
//
//   sluice-bench cookie-attach --obj COOKIE_ALT_OBJECT --iface IFACE
//                              [--mss4 M] [--mss6 M] [--wscale W]
//       Attaches cookie_alt.bpf.o (raw or listener) to IFACE in native mode
//       with our side's MSS and window scale (defaults 1460, 1440, 7; all
//       options offered), a connection's frames after its proving ACK passed
//       (params.remember); prints {"attached":IFACE}, then for each line read
//       on stdin its outcome counters {"sent":N,"proved":N,...}; detaches at
//       end of input (tests/netns/test_cookie_alternatives.py).
//
//   sluice-bench contention [--repeat N] [--rounds R] [--seconds S] [--fast-rate P]
//       One source on two CPUs against two sources, one a CPU (figure 13).
//       The program as sluiced loads it (sluiced_program()) on its pass path
//       (every frame pays its slot pair by compare-and-swap) and its drop
//       path (over its limit: the pair read, not written), the frames of
//       cost_frames() (source A) and of a source B whose slots are at least
//       8 slots (a cache line) from A's. Each round, each path and family,
//       three shapes of bpf_prog_test_run_opts with `repeat` N, each thread
//       pinned: "alone" (A on CPU 0), "one_source" (A on CPUs 0 and 1 at
//       once: the same two slots) and "two_sources" (A on CPU 0, B on CPU 1
//       at once). ns a frame as the kernel times each thread's loop, and
//       how much of the longer run the two overlapped.
//       Then the admitted count of A from both CPUs at once for S seconds,
//       each thread calling the program until the deadline, on a fresh
//       program (its slots full) at sluiced's default rate and burst and at
//       P pps with the default burst (default 1,000,000: a tick's 4,000
//       tokens raced for by both CPUs after every tick of the clock): the
//       outcome counters' passed
//       against the bound burst + (c1 - c0) / cost_ns, c0 and c1 the
//       program's own clock (clock/dataplane_clock.h) read before the
//       first run and after the last.
//       -> {"repeat":N,"rounds":R,"slots":{"v4":{"a":[i,j],"b":[k,l]},...},
//           "cost":{PATH:{FAM:{SHAPE:{"ns":[[cpu0,cpu1]...],"overlap":[...],
//           "outcomes":{NAME:packets}}}}},"admitted":[{"rate":..,"burst":..,
//           "cost_ns":..,"elapsed_ns":..,"passed":..,"dropped":..,"bound":..}]}
//
//   sluice-bench netrx --obj NETRX_CLOCK_OBJECT
//       Attaches netrx_clock.bpf.o to the softirq_entry/exit raw tracepoints; prints
//       {"ns":N,"count":C} (NET_RX softirq time and runs, every CPU, since the
//       attach) for each line read on stdin; detaches at end of input.
//
// Needs root (BPF_PROG_LOAD, BPF_PROG_TEST_RUN, tracepoints).
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <memory>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cookie_netns.h"
#include "cpu_pin.h"
#include "cookie_reqsk.h"
#include "frames.h"
#include "base/defaults.h"
#include "base/address.h"
#include "bpf/dataplane.h"
#include "clock/dataplane_clock.h"
#include "bpf/policy_tables.h"
#include "bpf/sluice_abi.h"
#include "logic/budgets.h"
#include "logic/class_tables.h"
#include "logic/source.h"
#include "policyfile/policy_file.h"

using json = nlohmann::ordered_json;
using sluice::frames::Bytes;

namespace {

struct Error : std::runtime_error {
	using std::runtime_error::runtime_error;
};

int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	// xdp-filter's object carries a section for libxdp that libbpf skips
	// with a warning: not news.
	if (level == LIBBPF_WARN && !std::strstr(fmt, "skipping unrecognized data section"))
		return std::vfprintf(stderr, fmt, ap);
	return 0;
}

// A loaded object: sluice (settings in .rodata) or anything else.
class Loaded {
public:
	struct SluiceSetup {
		__u64 key[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
		__u32 slots = SLUICE_SLOTS_DEFAULT;
		__u32 one_choice = 0;
		// The LRU baseline's (any object's) u64 .rodata variables to set,
		// and the size of its bucket tables (0: as compiled).
		std::map<std::string, __u64> rodata_u64;
		__u32 lru_entries = 0;
	};

	Loaded(const std::string &path, const SluiceSetup &setup)
	{
		obj_ = bpf_object__open_file(path.c_str(), nullptr);
		if (!obj_)
			throw Error("open " + path + ": " + std::strerror(errno));
		// Nothing of a benchmark is pinned: xdp-filter's maps ask for
		// pinning by name under /sys/fs/bpf; drop that.
		bpf_map *m;
		bpf_object__for_each_map(m, obj_)
		{
			bpf_map__set_pin_path(m, nullptr);
			const char *name = bpf_map__name(m);
			std::string n = name ? name : "";
			if (n.size() >= 7 && n.compare(n.size() - 7, 7, ".rodata") == 0)
				rodata_ = m;
			if (n == "slots")
				slots_ = m;
			if (n == "config")
				config_ = m;
		}
		if (rodata_ && !setup.rodata_u64.empty() && !(slots_ && config_)) {
			size_t size = 0;
			const void *init = bpf_map__initial_value(rodata_, &size);
			std::vector<char> data(static_cast<const char *>(init), static_cast<const char *>(init) + size);
			for (const auto &[var, v] : setup.rodata_u64) {
				size_t off = rodata_offset(var.c_str());
				if (off == size_t(-1) || off + sizeof(__u64) > size)
					throw Error(path + ": no .rodata variable " + var);
				std::memcpy(data.data() + off, &v, sizeof(v));
			}
			if (int e = bpf_map__set_initial_value(rodata_, data.data(), data.size()))
				throw Error("set .rodata: " + std::string(std::strerror(-e)));
		}
		if (setup.lru_entries) {
			bpf_object__for_each_map(m, obj_)
			{
				if (bpf_map__type(m) == BPF_MAP_TYPE_LRU_HASH)
					if (int e = bpf_map__set_max_entries(m, setup.lru_entries))
						throw Error("set_max_entries: " + std::string(std::strerror(-e)));
			}
		}
		if (rodata_ && slots_ && config_) {
			size_t off = rodata_offset("settings");
			size_t size = 0;
			const void *init = bpf_map__initial_value(rodata_, &size);
			if (init && off != size_t(-1) && off + sizeof(sluice_settings) <= size) {
				std::vector<char> data(static_cast<const char *>(init), static_cast<const char *>(init) + size);
				auto *s = reinterpret_cast<sluice_settings *>(data.data() + off);
				s->hash_key[0] = setup.key[0];
				s->hash_key[1] = setup.key[1];
				s->layout_version = SLUICE_LAYOUT_VERSION;
				s->slot_mask = setup.slots - 1;
				s->v4_prefix = 32;
				s->v6_prefix = 64;
				s->dry_run = 0;
				s->one_choice = setup.one_choice;
				auto tick = sluice::dataplane_tick_ns();
				if (!tick)
					throw Error(tick.error().describe());
				s->clock_tick_ns = *tick;
				if (int e = bpf_map__set_initial_value(rodata_, data.data(), data.size()))
					throw Error("set .rodata: " + std::string(std::strerror(-e)));
				if (int e = bpf_map__set_max_entries(slots_, setup.slots))
					throw Error("set_max_entries: " + std::string(std::strerror(-e)));
				settings_ = *s;
				sluice_ = true;
			}
		}
		bpf_program *p;
		bpf_object__for_each_program(p, obj_)
		{
			if (!prog_) {
				prog_ = p;
				// A tc program (figure 10's cookie_reqsk) stays one;
				// anything else is run as XDP (xdp-filter's sections
				// are not libbpf's).
				if (bpf_program__type(p) != BPF_PROG_TYPE_SCHED_CLS)
					bpf_program__set_type(p, BPF_PROG_TYPE_XDP);
			} else {
				bpf_program__set_autoload(p, false);
			}
		}
		if (!prog_)
			throw Error(path + ": no program");
		if (int e = bpf_object__load(obj_))
			throw Error("load " + path + ": " + std::strerror(-e));
	}
	~Loaded() { bpf_object__close(obj_); }
	Loaded(const Loaded &) = delete;
	Loaded &operator=(const Loaded &) = delete;

	bool sluice() const { return sluice_; }
	const sluice_settings &settings() const { return settings_; }
	bpf_object *object() const { return obj_; }
	int prog_fd() const { return bpf_program__fd(prog_); }
	bool has_map(const char *name) const { return bpf_object__find_map_by_name(obj_, name) != nullptr; }
	int map_fd(const char *name) const
	{
		bpf_map *m = bpf_object__find_map_by_name(obj_, name);
		if (!m)
			throw Error(std::string("no map '") + name + "'");
		return bpf_map__fd(m);
	}

	void set_config(__u64 rate, __u64 burst, __u32 state = SLUICE_SERVING, __u32 ppm = SLUICE_PPM_FULL)
	{
		sluice_config c{};
		c.cost_ns = (SLUICE_NSEC_PER_SEC + rate / 2) / rate;
		c.burst = burst;
		c.breaker_state = state;
		c.admission_ppm = ppm;
		c.rate_pps = rate;
		// The standing bucket at sluiced's defaults (looked up only for a
		// refused frame; a policy write checks the whole config).
		c.standing_rate_pps = sluice::defaults::kStandingRatePps;
		c.standing_cost_ns = SLUICE_NSEC_PER_SEC / c.standing_rate_pps;
		c.standing_burst = sluice::defaults::kStandingBurst;
		__u32 zero = 0;
		if (bpf_map_update_elem(bpf_map__fd(config_), &zero, &c, BPF_ANY))
			throw Error(std::string("config update: ") + std::strerror(errno));
	}

	// Slots whose credit is below one token at `cost_ns` (drained), counted
	// with one batched read of the whole table.
	uint64_t drained_slots(__u32 nslots, __u64 cost_ns) const
	{
		const __u64 now = sluice::dataplane_now();
		std::vector<__u32> keys(nslots);
		std::vector<__u64> vals(nslots);
		__u32 out_batch = 0, count = nslots;
		LIBBPF_OPTS(bpf_map_batch_opts, o);
		int r = bpf_map_lookup_batch(bpf_map__fd(slots_), nullptr, &out_batch, keys.data(), vals.data(),
					     &count, &o);
		if (r && errno != ENOENT)
			throw Error(std::string("slots batch lookup: ") + std::strerror(errno));
		uint64_t n = 0;
		for (__u32 i = 0; i < count; i++)
			if (now <= vals[i] || now - vals[i] < cost_ns)
				n++;
		return n;
	}

private:
	// Offset of a variable in .rodata, from the opened object's BTF (libbpf
	// has filled in the section's variable offsets by then; the ELF's own
	// BTF may leave them 0).
	size_t rodata_offset(const char *var) const
	{
		const btf *b = bpf_object__btf(obj_);
		if (!b)
			return size_t(-1);
		size_t off = size_t(-1);
		__s32 id = btf__find_by_name_kind(b, ".rodata", BTF_KIND_DATASEC);
		if (id > 0) {
			const btf_type *t = btf__type_by_id(b, id);
			const btf_var_secinfo *v = btf_var_secinfos(t);
			for (unsigned i = 0; i < btf_vlen(t); i++, v++) {
				const btf_type *vt = btf__type_by_id(b, v->type);
				if (vt && std::strcmp(btf__name_by_offset(b, vt->name_off), var) == 0)
					off = v->offset;
			}
		}
		return off;
	}

	bpf_object *obj_ = nullptr;
	bpf_program *prog_ = nullptr;
	bpf_map *rodata_ = nullptr, *slots_ = nullptr, *config_ = nullptr;
	bool sluice_ = false;
	sluice_settings settings_{}; // a sluice object's, as written into its .rodata
};

struct Run {
	__u32 retval = 0;
	__u32 duration = 0;
};

Run test_run(int fd, const Bytes &frame, int repeat)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	o.data_in = frame.data();
	o.data_size_in = __u32(frame.size());
	o.repeat = repeat;
	if (bpf_prog_test_run_opts(fd, &o))
		throw Error(std::string("bpf_prog_test_run_opts: ") + std::strerror(errno));
	return {o.retval, o.duration};
}

Bytes frame_v4(uint32_t src_host_order)
{
	using namespace sluice::frames;
	Ip4 a{uint8_t(src_host_order >> 24), uint8_t(src_host_order >> 16), uint8_t(src_host_order >> 8),
	      uint8_t(src_host_order)};
	return udp4_sized(64, {}, {.src = a, .dst = ip4("198.18.1.2")});
}

Bytes frame_v6()
{
	using namespace sluice::frames;
	return udp6_sized(64, {}, {.src = ip6("2001:2:0:ff::1"), .dst = ip6("2001:2:0:1::2")});
}

// `cost --frame KIND`: the frame pair (v4, v6) every program of the run is
// timed on, from the same sources as frame_v4(0xc612ff01)/frame_v6().
//   udp64    64-byte UDP (the default)
//   udp60z   60-byte UDP whose UDP header is all zero (ports 0, length 0)
//   udp1514  1514-byte UDP (a full-size frame)
//   syn      a TCP SYN without options to port 80 (no listener there)
std::pair<Bytes, Bytes> cost_frames(const std::string &kind)
{
	using namespace sluice::frames;
	const Ipv4 ip4h{.src = ip4("198.18.255.1"), .dst = ip4("198.18.1.2")};
	const Ipv6 ip6h{.src = ip6("2001:2:0:ff::1"), .dst = ip6("2001:2:0:1::2")};
	if (kind == "udp64")
		return {frame_v4(0xc612ff01u), frame_v6()};
	if (kind == "udp1514")
		return {udp4_sized(1514, {}, ip4h), udp6_sized(1514, {}, ip6h)};
	if (kind == "udp60z") {
		Bytes a = udp4_sized(60, {}, ip4h), b = udp6_sized(62, {}, ip6h);
		// IPv6's headers alone are 62 bytes: its shortest UDP frame.
		std::fill(a.begin() + 34, a.begin() + 42, 0);
		std::fill(b.begin() + 54, b.begin() + 62, 0);
		return {a, b};
	}
	if (kind == "syn") {
		Ipv4 t4 = ip4h;
		t4.proto = kIpProtoTcp;
		Bytes seg = tcp_segment(40000, 80, kTcpSyn);
		return {ip4_frame({}, t4, seg), ip6_frame({}, ip6h, {}, kIpProtoTcp, seg)};
	}
	throw Error("--frame: '" + kind + "' is not udp64, udp60z, udp1514 or syn");
}

// "NAME=@sluiced,PATH": the program as sluiced loads and configures it by
// default: the embedded object, Dataplane::load with the default LoadOptions
// (a fresh random key, the default table sizes and sampling), the config
// sluiced writes at start (config_with_budgets at the default rates, cookies
// in their default mode), then put on one path for the source of
// cost_frames():
//   pass      serving, the highest rate and burst (the bucket never empties)
//   drop      serving, the default rate, the slots drained: over its limit
//   shed      shedding, no standing, the newcomer budget drained
//   standing  shedding, the source has standing, the pass path's budget
//   deny      serving, the source on the deny list
//   deny_full serving, the deny list full: SLUICE_LIST_MAX_ENTRIES whole
//             addresses of each family, the source's among them, added as
//             sluicectl deny add does (so in the exact maps)
//   deny_full_trie  the same addresses written straight into the deny
//             tries, as a deny list held them until layout 18
//   allow_full  shed, the allow list full: SLUICE_LIST_MAX_ENTRIES whole
//             addresses of each family, not the source's (a flood's frame
//             asks the list and is shed), added as sluicectl allow add
//             does (so in the exact maps)
//   allow_full_trie  the same addresses written straight into the allow
//             tries, as an allow list held them until layout 19
// Nothing is attached or pinned.
void check(const sluice::Status &ok, const std::string &what)
{
	if (!ok)
		throw Error(what + ": " + ok.error().describe());
}

// The maps a path is set up through: sluiced's Dataplane's, or a bench
// object's (a cut-point build, ",path=PATH").
struct PathMaps {
	sluice::ConfigMap config;
	sluice::PrefixLists lists;
	sluice::StandingTable standing;
	int prog_fd;
	sluice::PrefixLists::Fds list_fds; // the tries, written straight (*_full_trie)
};

const char *const kPaths[] = {"pass",	   "drop",	     "shed",	   "standing",	  "deny",
			      "deny_full", "deny_full_trie", "allow_full", "allow_full_trie"};

bool is_path(const std::string &path)
{
	return std::find(std::begin(kPaths), std::end(kPaths), path) != std::end(kPaths);
}

std::string path_names()
{
	std::string out;
	for (const char *p : kPaths)
		out += std::string(out.empty() ? "" : ", ") + p;
	return out;
}

// A full list of whole addresses: 198.18.0.0 + first + 2i and
// 2001:2:0:ff::(first + 2i), i < SLUICE_LIST_MAX_ENTRIES. The bench source
// (198.18.255.1, 2001:2:0:ff::1) is among them when first is odd (1), not
// when it is even (2).
std::vector<sluice::Cidr> full_list(uint32_t first)
{
	using namespace sluice;
	std::vector<Cidr> out;
	for (uint32_t i = 0; i < SLUICE_LIST_MAX_ENTRIES; i++) {
		uint32_t a = (198u << 24 | 18u << 16) + first + 2 * i;
		Cidr c4{};
		c4.addr.family = Family::v4;
		for (int b = 0; b < 4; b++)
			c4.addr.bytes[b] = uint8_t(a >> (24 - 8 * b));
		c4.prefix = 32;
		out.push_back(c4);
		Cidr c6 = *parse_cidr("2001:2:0:ff::/128");
		uint32_t low = first + 2 * i;
		for (int b = 0; b < 4; b++)
			c6.addr.bytes[12 + b] = uint8_t(low >> (24 - 8 * b));
		out.push_back(c6);
	}
	return out;
}

// The addresses straight into a list's tries of set 0 (as /32s, /128s),
// their bits set in config: the deny list before layout 18, the allow list
// before layout 19.
void in_tries(const PathMaps &m, sluice::ListKind kind, const std::vector<sluice::Cidr> &list)
{
	using namespace sluice;
	std::vector<sluice_lpm_v4> k4;
	std::vector<sluice_lpm_v6> k6;
	for (const auto &c : list) {
		if (c.addr.family == Family::v4) {
			sluice_lpm_v4 k{};
			k.prefixlen = SLUICE_LPM_SET_BITS + 32;
			std::memcpy(k.addr, c.addr.bytes.data(), 4);
			k4.push_back(k);
		} else {
			sluice_lpm_v6 k{};
			k.prefixlen = SLUICE_LPM_SET_BITS + 128;
			std::memcpy(k.addr, c.addr.bytes.data(), 16);
			k6.push_back(k);
		}
	}
	const bool deny = kind == ListKind::deny;
	uint8_t one = 1;
	for (const auto &k : k4)
		if (bpf_map_update_elem(deny ? m.list_fds.deny_v4 : m.list_fds.allow_v4, &k, &one, BPF_ANY))
			throw Error(std::string("v4 trie update: ") + std::strerror(errno));
	for (const auto &k : k6)
		if (bpf_map_update_elem(deny ? m.list_fds.deny_v6 : m.list_fds.allow_v6, &k, &one, BPF_ANY))
			throw Error(std::string("v6 trie update: ") + std::strerror(errno));
	auto cfg = m.config.read();
	if (!cfg)
		throw Error("config read: " + cfg.error().describe());
	cfg->policy_flags |= deny ? SLUICE_LIST_DENY_V4 | SLUICE_LIST_DENY_V6 : SLUICE_LIST_ALLOW_V4 | SLUICE_LIST_ALLOW_V6;
	check(m.config.write(*cfg), "config write");
}

// The config sluiced writes at start (config_with_budgets at the default
// rates, cookies in their default mode; the pass and standing paths at the
// highest rate and burst), with the path's breaker state.
sluice_config path_config(const std::string &path)
{
	using namespace sluice;
	if (!is_path(path))
		throw Error("path '" + path + "' is not one of " + path_names());
	const bool high_rate = path == "pass" || path == "standing";
	int cpus = libbpf_num_possible_cpus();
	if (cpus <= 0)
		throw Error("libbpf_num_possible_cpus failed");
	sluice_config initial{};
	initial.breaker_state = SLUICE_SERVING;
	initial.admission_ppm = SLUICE_PPM_FULL;
	BudgetAsk ask; // sluiced's defaults, the newcomer budget at a tenth of trip-pps
	if (high_rate) {
		// The burst too: the program's clock moves once a jiffy (4 ms), and a
		// run takes a jiffy's worth of frames (about 10^5) from the bucket
		// with no refill in between; at the default burst (20,000) most of
		// them would be dropped, a "pass" row timing the drop path.
		ask.rate_pps = SLUICE_RATE_MAX;
		ask.burst = SLUICE_BURST_MAX;
	}
	auto cfg = config_with_budgets(initial, ask, uint64_t(cpus));
	if (!cfg)
		throw Error("config_with_budgets: " + cfg.error().describe());
	cfg->cookie_mode = defaults::kCookieMode; // as apply_cookies() writes it at start
	if (path == "shed" || path == "standing" || path.starts_with("allow_full"))
		cfg->breaker_state = SLUICE_SHEDDING;
	return *cfg;
}

// The path's config (path_config), then its state, see sluiced_program().
void put_on_path(const std::string &path, const PathMaps &m, const std::pair<Bytes, Bytes> &frames)
{
	using namespace sluice;
	check(m.config.write(path_config(path)), "config write");
	const auto a4 = *parse_address("198.18.255.1"), a6 = *parse_address("2001:2:0:ff::1");
	if (path == "deny") {
		std::vector<Cidr> c{*parse_cidr("198.18.255.1/32"), *parse_cidr("2001:2:0:ff::/64")};
		check(m.lists.add(ListKind::deny, c), "deny add");
	}
	if (path == "deny_full")
		check(m.lists.add(ListKind::deny, full_list(1)), "deny add");
	if (path == "deny_full_trie")
		in_tries(m, ListKind::deny, full_list(1));
	if (path == "allow_full")
		check(m.lists.add(ListKind::allow, full_list(2)), "allow add");
	if (path == "allow_full_trie")
		in_tries(m, ListKind::allow, full_list(2));
	if (path == "standing") {
		std::vector<Address> peers{a4, a6};
		check(m.standing.grant(peers, SLUICE_BY_ACCEPTED), "standing grant");
	}
	// Drain what the path must find empty: the source's slots (drop), the
	// newcomer budget of this CPU and the source's slots (shed). A run of
	// repeat frames takes a few ms, in which the default budgets refill a
	// few hundred tokens: a share of a percent or less of the frames.
	if (path == "drop" || path == "shed" || path.starts_with("allow_full")) {
		test_run(m.prog_fd, frames.first, int(defaults::kBurst) * 4);
		test_run(m.prog_fd, frames.second, int(defaults::kBurst) * 4);
	}
}

std::unique_ptr<sluice::Dataplane> sluiced_program(const std::string &path, const std::pair<Bytes, Bytes> &frames)
{
	using namespace sluice;
	if (!is_path(path))
		throw Error("@sluiced: '" + path + "' is not one of " + path_names());
	auto dp = Dataplane::load(LoadOptions{}, path_config(path));
	if (!dp)
		throw Error("Dataplane::load: " + dp.error().describe());
	auto out = std::make_unique<Dataplane>(std::move(*dp));
	put_on_path(path, PathMaps{out->config(), out->lists(), out->standing(), out->prog_fd(), out->list_fds()},
		    frames);
	return out;
}

std::map<std::string, std::string> parse_opts(int argc, char **argv, std::vector<std::string> &positional)
{
	std::map<std::string, std::string> o;
	for (int i = 0; i < argc; i++) {
		std::string a = argv[i];
		if (a.rfind("--", 0) == 0) {
			if (i + 1 >= argc)
				throw Error(a + " needs a value");
			o[a.substr(2)] = argv[++i];
		} else {
			positional.push_back(a);
		}
	}
	return o;
}

uint64_t opt_u64(const std::map<std::string, std::string> &o, const char *k, uint64_t def)
{
	auto it = o.find(k);
	return it == o.end() ? def : std::stoull(it->second);
}

// A bench object's list maps, as PrefixLists takes them.
sluice::PrefixLists::Fds list_fds(const Loaded &obj)
{
	return {obj.map_fd(SLUICE_PIN_ALLOW_V4),       obj.map_fd(SLUICE_PIN_ALLOW_V6),
		obj.map_fd(SLUICE_PIN_DENY_V4),	       obj.map_fd(SLUICE_PIN_DENY_V6),
		obj.map_fd(SLUICE_PIN_DENY_EXACT_V4),  obj.map_fd(SLUICE_PIN_DENY_EXACT_V6),
		obj.map_fd(SLUICE_PIN_ALLOW_EXACT_V4), obj.map_fd(SLUICE_PIN_ALLOW_EXACT_V6)};
}

// ",policy=FILE": the policy file read, checked and compiled as sluiced does
// (policyfile, logic/class_tables) and written into the object's maps by
// sluiced's own writer (bpf/policy_tables).
void install_policy(const Loaded &obj, const std::string &path)
{
	auto policy = sluice::load_policy(path);
	if (!policy)
		throw Error(path + ": " + policy.error().describe());
	auto compiled = sluice::compile_policy(*policy, sluice::ClassIds{});
	if (!compiled)
		throw Error(path + ": " + compiled.error().describe());
	sluice::ConfigMap config(obj.map_fd("config"));
	sluice::PrefixLists lists(list_fds(obj), config);
	sluice::PolicyTables tables({obj.map_fd(SLUICE_PIN_CLASSES), obj.map_fd(SLUICE_PIN_PORT_CLASSES),
				     obj.map_fd(SLUICE_PIN_CLASS_V4), obj.map_fd(SLUICE_PIN_CLASS_V6)},
				    lists, config);
	auto applied = tables.apply(*compiled, sluice::PolicyLists{policy->allow, policy->deny});
	if (!applied)
		throw Error(path + ": " + applied.error().describe());
}

int cmd_cost(int argc, char **argv)
{
	std::vector<std::string> specs;
	auto o = parse_opts(argc, argv, specs);
	int repeat = int(opt_u64(o, "repeat", 1000000));
	int rounds = int(opt_u64(o, "rounds", 5));
	if (specs.empty())
		throw Error("cost: give NAME=OBJECT[,drop] ...");

	struct Prog {
		std::string name;
		std::unique_ptr<Loaded> obj;
		std::vector<__u32> v4, v6;
		__u32 ret4 = 0, ret6 = 0;
		std::unique_ptr<Loaded> wrapper; // ",new": runs first, tail-calls obj
		std::unique_ptr<sluice::Dataplane> dp; // "@sluiced,PATH": instead of obj
		int run_fd() const { return dp ? dp->prog_fd() : wrapper ? wrapper->prog_fd() : obj->prog_fd(); }
	};
	std::vector<Prog> progs;
	const auto [f4, f6] = cost_frames(o.count("frame") ? o["frame"] : "udp64"); // 198.18.255.1, 2001:2:0:ff::1
	auto strip = [](std::string &path, const char *suffix) {
		size_t n = std::strlen(suffix);
		if (path.size() > n && path.compare(path.size() - n, n, suffix) == 0) {
			path.resize(path.size() - n);
			return true;
		}
		return false;
	};
	for (const auto &s : specs) {
		auto eq = s.find('=');
		if (eq == std::string::npos)
			throw Error("cost: '" + s + "' is not NAME=OBJECT[,drop|,new|,policy=FILE|,path=PATH]");
		std::string name = s.substr(0, eq), path = s.substr(eq + 1);
		if (path.rfind("@sluiced,", 0) == 0) {
			Prog p{name, nullptr, {}, {}};
			p.dp = sluiced_program(path.substr(9), {f4, f6});
			progs.push_back(std::move(p));
			continue;
		}
		std::string on_path; // ",path=PATH": a sluice object put on PATH as @sluiced is
		if (auto at = path.find(",path="); at != std::string::npos) {
			on_path = path.substr(at + 6);
			path.resize(at);
		}
		bool drop = strip(path, ",drop");
		std::string policy;
		if (auto at = path.find(",policy="); at != std::string::npos) {
			policy = path.substr(at + 8);
			path.resize(at);
		}
		bool fresh = !drop && strip(path, ",new");
		Prog p{name, std::make_unique<Loaded>(path, Loaded::SluiceSetup{}), {}, {}};
		if (!on_path.empty()) {
			if (!p.obj->sluice() || drop || !policy.empty())
				throw Error(name + ": ,path= is for sluice objects, alone");
			const Loaded &l = *p.obj;
			sluice::ConfigMap config(l.map_fd("config"));
			const sluice::PrefixLists::Fds fds = list_fds(l);
			sluice::PrefixLists lists(fds, config);
			put_on_path(on_path, PathMaps{config, lists, sluice::StandingTable(l.map_fd(SLUICE_PIN_STANDING), l.settings()),
						      l.prog_fd(), fds},
				    {f4, f6});
		} else if (p.obj->sluice()) {
			if (drop) {
				// One token, then nothing: drain both sources' slots first.
				p.obj->set_config(1, 1);
				test_run(p.obj->prog_fd(), f4, 4);
				test_run(p.obj->prog_fd(), f6, 4);
			} else {
				p.obj->set_config(SLUICE_RATE_MAX, SLUICE_BURST_MAX);
			}
			if (!policy.empty())
				install_policy(*p.obj, policy);
		} else if (!policy.empty()) {
			throw Error(name + ": ,policy= is for sluice objects");
		} else if (drop) {
			throw Error(name + ": ,drop is for sluice objects");
		}
		if (fresh) {
			auto w = o.find("new-source");
			if (w == o.end())
				throw Error(name + ": ,new needs --new-source WRAPPER");
			p.wrapper = std::make_unique<Loaded>(w->second, Loaded::SluiceSetup{});
			__u32 zero = 0;
			int fd = p.obj->prog_fd();
			if (bpf_map_update_elem(p.wrapper->map_fd("target"), &zero, &fd, BPF_ANY))
				throw Error(name + ": tail-call slot: " + std::strerror(errno));
		}
		progs.push_back(std::move(p));
	}
	// Warm up (first runs page in the program and the maps).
	for (auto &p : progs) {
		test_run(p.run_fd(), f4, 10000);
		test_run(p.run_fd(), f6, 10000);
	}
	for (int r = 0; r < rounds; r++) {
		for (auto &p : progs) {
			Run a = test_run(p.run_fd(), f4, repeat);
			Run b = test_run(p.run_fd(), f6, repeat);
			p.v4.push_back(a.duration);
			p.v6.push_back(b.duration);
			p.ret4 = a.retval;
			p.ret6 = b.retval;
		}
	}
	json out;
	out["repeat"] = repeat;
	out["rounds"] = rounds;
	json jp = json::object();
	for (const auto &p : progs) {
		jp[p.name] = {{"v4", p.v4}, {"v6", p.v6}, {"retval_v4", p.ret4}, {"retval_v6", p.ret6}};
	}
	out["progs"] = jp;
	std::cout << out.dump() << std::endl;
	return 0;
}

std::vector<double> parse_fracs(const std::string &s)
{
	std::vector<double> v;
	size_t i = 0;
	while (i < s.size()) {
		size_t j = s.find(',', i);
		if (j == std::string::npos)
			j = s.size();
		v.push_back(std::stod(s.substr(i, j - i)));
		i = j + 1;
	}
	return v;
}

int cmd_collateral(int argc, char **argv)
{
	std::vector<std::string> pos;
	auto o = parse_opts(argc, argv, pos);
	if (!o.count("obj"))
		throw Error("collateral: --obj SLUICE_OBJECT is required");
	const std::string path = o["obj"];
	const __u32 slots = __u32(opt_u64(o, "slots", SLUICE_SLOTS_DEFAULT));
	const uint64_t legit = opt_u64(o, "legit", 10000);
	const uint64_t burst = opt_u64(o, "burst", 2);
	uint64_t seed = opt_u64(o, "seed", 0);
	if (!o.count("seed") && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = 1;
	std::vector<double> fracs = parse_fracs(o.count("heavy-frac") ? o["heavy-frac"] : "0.01,0.1,0.5");
	if (slots < SLUICE_SLOTS_MIN || (slots & (slots - 1)))
		throw Error("--slots must be a power of two >= 16");
	if (burst < 2)
		throw Error("--burst must be at least 2");

	std::mt19937_64 rng(seed);
	json runs = json::array();
	for (double frac : fracs) {
		const uint64_t heavy = uint64_t(frac * slots + 0.5);
		if (heavy + legit > (1u << 24))
			throw Error("too many sources for 10.0.0.0/8");
		for (__u32 one : {1u, 0u}) {
			Loaded::SluiceSetup setup;
			setup.key[0] = rng();
			setup.key[1] = rng();
			setup.slots = slots;
			setup.one_choice = one;
			Loaded l(path, setup);
			if (!l.sluice())
				throw Error(path + " is not a sluice object");
			// Rate 1/s at the 0.1% recovery floor: one token per 1000 s.
			l.set_config(1, burst, SLUICE_RECOVERING, SLUICE_PPM_MIN);
			const int fd = l.prog_fd();
			// Heavy sources 10.0.0.0 upwards, legitimate 10.128.0.0 upwards.
			// One frame per call: a call with repeat > 1 re-patches the
			// kernel's XDP dispatcher twice (about a millisecond here).
			for (uint64_t i = 0; i < heavy; i++) {
				Bytes f = frame_v4(0x0a000000u + uint32_t(i));
				for (uint64_t k = 0; k < burst + 1; k++)
					test_run(fd, f, 1);
			}
			uint64_t drained = l.drained_slots(slots, 1000000000ull * 1000);
			std::vector<Bytes> lf;
			lf.reserve(legit);
			for (uint64_t i = 0; i < legit; i++)
				lf.push_back(frame_v4(0x0a800000u + uint32_t(i)));
			std::vector<char> lost(legit, 0);
			for (uint64_t r = 0; r < burst / 2; r++)
				for (uint64_t i = 0; i < legit; i++)
					if (test_run(fd, lf[i], 1).retval != XDP_PASS)
						lost[i] = 1;
			uint64_t losers = 0;
			for (char c : lost)
				losers += c;
			runs.push_back({{"heavy", heavy},
					{"heavy_frac", frac},
					{"one_choice", one},
					{"losers", losers},
					{"share", double(losers) / double(legit)},
					{"drained_slots", drained},
					{"drained_frac", double(drained) / double(slots)}});
		}
	}
	json out;
	out["slots"] = slots;
	out["legit"] = legit;
	out["burst"] = burst;
	out["seed"] = seed;
	out["runs"] = runs;
	std::cout << out.dump() << std::endl;
	return 0;
}

// Attach OBJECT (sluice or a cut-point build, configured like `cost` does)
// to --iface in native XDP mode until end of input.
int cmd_attach(int argc, char **argv)
{
	std::vector<std::string> pos;
	auto o = parse_opts(argc, argv, pos);
	if (pos.size() != 1 || !o.count("iface"))
		throw Error("attach: give --iface IFACE OBJECT");
	unsigned ifindex = if_nametoindex(o["iface"].c_str());
	if (!ifindex)
		throw Error("attach: no interface " + o["iface"] + ": " + std::strerror(errno));
	Loaded::SluiceSetup setup;
	setup.rodata_u64 = {{"rate_pps", opt_u64(o, "rate", 1000)},
			    {"burst", opt_u64(o, "burst", 1000)},
			    {"v6_prefix", opt_u64(o, "v6-prefix", 64)}};
	setup.lru_entries = __u32(opt_u64(o, "entries", 0));
	Loaded obj(pos[0], setup);
	if (obj.sluice())
		obj.set_config(opt_u64(o, "rate", 1000), opt_u64(o, "burst", 1000));
	if (int e = bpf_xdp_attach(int(ifindex), obj.prog_fd(), XDP_FLAGS_DRV_MODE, nullptr))
		throw Error("attach to " + o["iface"] + ": " + std::strerror(-e));
	// The maps' memory as the kernel charges it (fdinfo's memlock).
	uint64_t memlock = 0;
	bpf_map *m;
	bpf_object__for_each_map(m, obj.object())
	{
		FILE *f = std::fopen(("/proc/self/fdinfo/" + std::to_string(bpf_map__fd(m))).c_str(), "r");
		char line[256];
		while (f && std::fgets(line, sizeof(line), f)) {
			unsigned long long v;
			if (std::sscanf(line, "memlock: %llu", &v) == 1)
				memlock += v;
		}
		if (f)
			std::fclose(f);
	}
	std::cout << json{{"attached", o["iface"]}, {"prog_fd", obj.prog_fd()}, {"maps_memlock", memlock}}.dump()
		  << std::endl;
	bpf_map *stats = bpf_object__find_map_by_name(obj.object(), "stats");
	int ncpu = libbpf_num_possible_cpus();
	std::string line;
	while (std::getline(std::cin, line)) {
		json j = {{"passed", json::array()}, {"dropped", json::array()}};
		if (stats && ncpu > 0) {
			std::vector<__u64> v(size_t(ncpu), 0);
			for (__u32 k = 0; k < 2; k++) {
				if (bpf_map_lookup_elem(bpf_map__fd(stats), &k, v.data()))
					throw Error(std::string("stats lookup: ") + std::strerror(errno));
				j[k == 0 ? "passed" : "dropped"] = v;
			}
		}
		std::cout << j.dump() << std::endl;
	}
	bpf_xdp_detach(int(ifindex), XDP_FLAGS_DRV_MODE, nullptr);
	return 0;
}

// ---------------------------------------------------------------- contention

std::uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts{};
	clock_gettime(clk, &ts);
	return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

// One pinned thread's share of a run: `work` called once both threads are
// ready, timed on CLOCK_MONOTONIC around it.
struct Pinned {
	int cpu = 0;
	std::function<void()> work;
	bool pinned = false;
	int ran_on = -1;
	std::uint64_t t0 = 0, t1 = 0;
	std::string error;
};

// Runs each Pinned's work on its own thread, all released together (the
// threads spin, yielding, until the last is pinned and ready).
void run_together(std::vector<Pinned> &ps)
{
	std::atomic<size_t> ready{0};
	std::atomic<bool> go{false};
	std::vector<std::thread> ts;
	for (auto &p : ps)
		ts.emplace_back([&ready, &go, &p] {
			p.pinned = sluice::test::pin_to(p.cpu);
			ready++;
			while (!go.load())
				std::this_thread::yield();
			p.t0 = clock_ns(CLOCK_MONOTONIC);
			try {
				p.work();
			} catch (const std::exception &e) {
				p.error = e.what();
			}
			p.t1 = clock_ns(CLOCK_MONOTONIC);
			p.ran_on = sched_getcpu();
		});
	while (ready.load() < ps.size())
		std::this_thread::yield();
	go = true;
	for (auto &t : ts)
		t.join();
	for (const auto &p : ps) {
		if (!p.pinned)
			throw Error("sched_setaffinity to CPU " + std::to_string(p.cpu) + ": " + std::strerror(errno));
		if (!p.error.empty())
			throw Error("on CPU " + std::to_string(p.cpu) + ": " + p.error);
		if (p.ran_on != p.cpu)
			throw Error("the thread pinned to CPU " + std::to_string(p.cpu) + " ended on CPU " +
				    std::to_string(p.ran_on));
	}
}

// Packets of each outcome, every CPU summed, by name.
std::map<std::string, __u64> outcome_totals(const sluice::Dataplane &dp)
{
	auto c = dp.counters().read();
	if (!c)
		throw Error("counters: " + c.error().describe());
	std::map<std::string, __u64> out;
	for (__u32 k = 0; k < SLUICE_OUTCOMES; k++)
		out[sluice::outcome_name(k)] = (*c)[k].packets;
	return out;
}

std::map<std::string, __u64> outcome_delta(const std::map<std::string, __u64> &a,
					   const std::map<std::string, __u64> &b)
{
	std::map<std::string, __u64> d;
	for (const auto &[name, n] : b)
		if (n != a.at(name))
			d[name] = n - a.at(name);
	return d;
}

// Source B of one family: the first of a run of candidates none of whose
// slots is within 8 slots (8 u64s, a cache line at any alignment of the
// array) of A's, so that one CPU a source shares no line with the other.
sluice::Address far_source(const sluice_settings &s, const sluice::Address &a, bool v6)
{
	const auto sa = sluice::source_slots(s, a).slots;
	for (unsigned i = 1; i < 256; i++) {
		char text[64];
		// IPv6 a /64 each (a v6 source is its /64): 2001:2:0:f01::1 on
		if (v6)
			std::snprintf(text, sizeof(text), "2001:2:0:%x::1", 0xf00 + i);
		else
			std::snprintf(text, sizeof(text), "198.18.254.%u", i);
		const sluice::Address b = *sluice::parse_address(text);
		const auto sb = sluice::source_slots(s, b).slots;
		bool apart = true;
		for (uint32_t x : sa)
			for (uint32_t y : sb)
				apart = apart && (x > y ? x - y : y - x) >= 8;
		if (apart)
			return b;
	}
	throw Error("no source within 256 tries has its slots a cache line from A's");
}

int cmd_contention(int argc, char **argv)
{
	using namespace sluice;
	std::vector<std::string> pos;
	auto o = parse_opts(argc, argv, pos);
	const int repeat = int(opt_u64(o, "repeat", 1000000));
	const int rounds = int(opt_u64(o, "rounds", 5));
	const double seconds = std::stod(o.count("seconds") ? o["seconds"] : "1");
	const uint64_t fast_rate = opt_u64(o, "fast-rate", 1000000);
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || !CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed))
		throw Error("contention needs CPUs 0 and 1 (" + std::to_string(CPU_COUNT(&allowed)) + " usable)");

	using namespace sluice::frames;
	const auto [a4, a6] = cost_frames("udp64"); // 198.18.255.1, 2001:2:0:ff::1 (put_on_path's)
	struct Family {
		const char *name;
		Bytes a, b;
	};
	struct Path {
		std::string name;
		std::unique_ptr<Dataplane> dp;
		std::vector<Family> fams;
	};
	std::vector<Path> paths;
	json slots = json::object();
	for (const char *name : {"pass", "drop"}) {
		Path p{name, sluiced_program(name, {a4, a6}), {}};
		const sluice_settings &s = p.dp->settings();
		const Address aa4 = *parse_address("198.18.255.1"), aa6 = *parse_address("2001:2:0:ff::1");
		const Address b4 = far_source(s, aa4, false), b6 = far_source(s, aa6, true);
		Bytes fb4 = udp4_sized(64, {}, {.src = ip4(b4.str().c_str()), .dst = ip4("198.18.1.2")});
		Bytes fb6 = udp6_sized(64, {}, {.src = ip6(b6.str().c_str()), .dst = ip6("2001:2:0:1::2")});
		if (p.name == "drop") {
			// B over its limit too, as put_on_path() left A.
			test_run(p.dp->prog_fd(), fb4, int(defaults::kBurst) * 4);
			test_run(p.dp->prog_fd(), fb6, int(defaults::kBurst) * 4);
		}
		slots[p.name] = {{"v4", {{"a", source_slots(s, aa4).slots}, {"b", source_slots(s, b4).slots},
					 {"b_source", b4.str()}}},
				 {"v6", {{"a", source_slots(s, aa6).slots}, {"b", source_slots(s, b6).slots},
					 {"b_source", b6.str()}}}};
		p.fams = {{"v4", a4, fb4}, {"v6", a6, fb6}};
		paths.push_back(std::move(p));
	}
	// Warm up (first runs page in the program and the maps).
	for (auto &p : paths)
		for (const auto &f : p.fams) {
			test_run(p.dp->prog_fd(), f.a, 10000);
			test_run(p.dp->prog_fd(), f.b, 10000);
		}

	json cost = json::object();
	for (int r = 0; r < rounds; r++) {
		for (auto &p : paths) {
			for (const auto &f : p.fams) {
				const int fd = p.dp->prog_fd();
				struct Shape {
					const char *name;
					std::vector<const Bytes *> frames; // one a thread, thread i on CPU i
				};
				const Shape shapes[] = {{"alone", {&f.a}},
							{"one_source", {&f.a, &f.a}},
							{"two_sources", {&f.a, &f.b}}};
				for (const auto &sh : shapes) {
					std::vector<Pinned> ps(sh.frames.size());
					std::vector<__u32> ns(sh.frames.size());
					for (size_t i = 0; i < ps.size(); i++) {
						ps[i].cpu = int(i);
						ps[i].work = [&, i] { ns[i] = test_run(fd, *sh.frames[i], repeat).duration; };
					}
					const auto c0 = outcome_totals(*p.dp);
					run_together(ps);
					json &j = cost[p.name][f.name][sh.name];
					if (j.is_null())
						j = {{"ns", json::array()}, {"overlap", json::array()}, {"outcomes", json::object()}};
					j["ns"].push_back(ns);
					// The share of the longer run during which both ran.
					std::uint64_t from = 0, to = ~0ull, longest = 0;
					for (const auto &x : ps) {
						from = std::max(from, x.t0);
						to = std::min(to, x.t1);
						longest = std::max(longest, x.t1 - x.t0);
					}
					j["overlap"].push_back(to > from ? double(to - from) / double(longest) : 0.0);
					for (const auto &[name, n] : outcome_delta(c0, outcome_totals(*p.dp)))
						j["outcomes"][name] = j["outcomes"].value(name, __u64(0)) + n;
				}
			}
		}
	}

	// The admitted count of one source on both CPUs, on a fresh program.
	json admitted = json::array();
	for (uint64_t rate : {defaults::kRatePps, fast_rate}) {
		BudgetAsk ask; // sluiced's defaults but the rate
		ask.rate_pps = rate;
		sluice_config initial{};
		initial.breaker_state = SLUICE_SERVING;
		initial.admission_ppm = SLUICE_PPM_FULL;
		auto cfg = config_with_budgets(initial, ask, uint64_t(libbpf_num_possible_cpus()));
		if (!cfg)
			throw Error("config_with_budgets: " + cfg.error().describe());
		auto dp = Dataplane::load(LoadOptions{}, *cfg);
		if (!dp)
			throw Error("Dataplane::load: " + dp.error().describe());
		const int fd = dp->prog_fd();
		const std::uint64_t chunk = 100000; // a few ms a call: the deadline is kept to that
		std::vector<Pinned> ps(2);
		std::vector<std::uint64_t> calls(2, 0);
		std::uint64_t deadline = 0;
		for (size_t i = 0; i < 2; i++) {
			ps[i].cpu = int(i);
			ps[i].work = [&, i] {
				while (clock_ns(CLOCK_MONOTONIC) < deadline) {
					test_run(fd, a4, int(chunk));
					calls[i]++;
				}
			};
		}
		const auto before = outcome_totals(*dp);
		// c0 before any run can read the clock, c1 after the last has: every
		// `now` the program read lies in [c0, c1] on the same clock.
		const std::uint64_t c0 = sluice::dataplane_now();
		deadline = clock_ns(CLOCK_MONOTONIC) + std::uint64_t(seconds * 1e9);
		run_together(ps);
		const std::uint64_t c1 = sluice::dataplane_now();
		const auto d = outcome_delta(before, outcome_totals(*dp));
		const __u64 passed = d.count("passed") ? d.at("passed") : 0;
		__u64 frames = 0;
		for (const auto &[name, n] : d)
			frames += n;
		admitted.push_back({{"rate", rate},
				    {"burst", cfg->burst},
				    {"cost_ns", cfg->cost_ns},
				    {"elapsed_ns", c1 - c0},
				    {"frames", frames},
				    {"frames_sent", (calls[0] + calls[1]) * chunk},
				    {"passed", passed},
				    {"outcomes", d},
				    {"bound", cfg->burst + (c1 - c0) / cfg->cost_ns}});
	}

	json out;
	out["repeat"] = repeat;
	out["rounds"] = rounds;
	out["seconds"] = seconds;
	out["slots"] = slots;
	out["cost"] = cost;
	out["admitted"] = admitted;
	std::cout << out.dump() << std::endl;
	return 0;
}

// ---------------------------------------------------------------- cookie-cost

// A network namespace of this process's own: lo up, the two sysctls at 2,
// listeners on 0.0.0.0:port and [::]:port (tests/support/cookie_netns.h).
void cookie_netns(uint16_t port)
{
	if (std::string why = sluice::test::enter_cookie_netns(port); !why.empty())
		throw Error(why);
}

// Total packets of each outcome (every CPU) of a sluice object.
std::vector<__u64> outcome_packets(const Loaded &obj)
{
	int ncpu = libbpf_num_possible_cpus();
	std::vector<sluice_counter> v(size_t(ncpu > 0 ? ncpu : 1));
	std::vector<__u64> out(SLUICE_OUTCOMES, 0);
	for (__u32 k = 0; k < SLUICE_OUTCOMES; k++) {
		if (bpf_map_lookup_elem(obj.map_fd("counters"), &k, v.data()))
			throw Error(std::string("counters lookup: ") + std::strerror(errno));
		for (const auto &c : v)
			out[k] += c.packets;
	}
	return out;
}

const char *outcome_name(__u32 k)
{
#define SLUICE_BENCH_OUTCOME_NAME(sym, value, name, verdict) \
	if (k == value)                                      \
		return name;
	SLUICE_OUTCOME_TABLE(SLUICE_BENCH_OUTCOME_NAME)
#undef SLUICE_BENCH_OUTCOME_NAME
	return "?";
}

// What the benchmark-only cookie programs count (cookie_alt.bpf.c's and
// cookie_reqsk.bpf.c's `outcomes`), by name; {} for any other object.
std::map<std::string, __u64> alt_outcomes(const Loaded &obj, bool tc)
{
	static const char *alt[] = {"sent", "proved", "forged", "no_cookie", "other", "unfit"};
	static const char *reqsk[] = {"assigned", "refused", "forged", "other"};
	std::map<std::string, __u64> out;
	if (!obj.has_map("outcomes"))
		return out;
	const char **names = tc ? reqsk : alt;
	__u32 n = tc ? 4 : 6;
	int ncpu = libbpf_num_possible_cpus();
	std::vector<__u64> v(size_t(ncpu > 0 ? ncpu : 1));
	for (__u32 k = 0; k < n; k++) {
		if (bpf_map_lookup_elem(obj.map_fd("outcomes"), &k, v.data()))
			throw Error(std::string("outcomes lookup: ") + std::strerror(errno));
		__u64 sum = 0;
		for (__u64 x : v)
			sum += x;
		out[names[k]] = sum;
	}
	return out;
}

// cookie_reqsk.bpf.c's last answer from bpf_sk_assign_tcp_reqsk (its .data).
int reqsk_last_assign(const Loaded &obj)
{
	bpf_map *m;
	bpf_object__for_each_map(m, obj.object())
	{
		const char *name = bpf_map__name(m);
		std::string n = name ? name : "";
		if (n.size() >= 5 && n.compare(n.size() - 5, 5, ".data") == 0) {
			int v = 0;
			std::vector<char> buf(bpf_map__value_size(m));
			__u32 zero = 0;
			if (bpf_map_lookup_elem(bpf_map__fd(m), &zero, buf.data()))
				throw Error(std::string(".data lookup: ") + std::strerror(errno));
			std::memcpy(&v, buf.data(), sizeof(v)); // last_assign is its one variable
			return v;
		}
	}
	throw Error("cookie_reqsk object without .data");
}

int cmd_cookie_cost(int argc, char **argv)
{
	std::vector<std::string> pos;
	auto o = parse_opts(argc, argv, pos);
	if (!o.count("obj") || !o.count("drop-obj") || !o.count("restore"))
		throw Error("cookie-cost: give --obj SLUICE_OBJECT --drop-obj XDP_DROP_OBJECT --restore RESTORE_OBJECT");
	const int calls = int(opt_u64(o, "calls", 2000));
	const int rounds = int(opt_u64(o, "rounds", 5));
	const int repeat = int(opt_u64(o, "repeat", 1000000));
	constexpr uint16_t kPort = 8080;
	cookie_netns(kPort);

	using namespace sluice::frames;
	const Eth eth{.dst = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55}, .src = {0x0a, 0x66, 0x77, 0x88, 0x99, 0xaa}};
	const Ipv4 ip4h{.src = ip4("198.18.8.1"), .dst = ip4("198.18.1.2"), .id = 0x1234};
	const Ipv6 ip6h{.src = ip6("2001:2:0:8::1"), .dst = ip6("2001:2:0:1::2")};
	const Tcp syn{.sport = 40001, .dport = kPort, .seq = 0x11223344, .flags = kTcpSyn,
		      .options = linux_syn_options(1460, 0x01020304, 7)};
	Tcp ack{.sport = 40001, .dport = kPort, .seq = 0x11223345, .ack = 0x5a5a5a5a, .flags = kTcpAck, .window = 502};
	ack.options = Bytes{1, 1, 8, 10};
	put32(ack.options, 0x01020305);
	put32(ack.options, 0x00abcd0f);
	struct Frames {
		Bytes v4, v6;
	};
	const Frames syn_f{tcp4(eth, ip4h, syn), tcp6(eth, ip6h, syn)};
	const Frames ack_f{tcp4(eth, ip4h, ack), tcp6(eth, ip6h, ack)};
	// The same ACK from a source beside it that sends no SYN (an ACK flood's).
	const Ipv4 unseen4{.src = ip4("198.18.9.1"), .dst = ip4h.dst, .id = ip4h.id};
	const Ipv6 unseen6{.src = ip6("2001:2:0:9::1"), .dst = ip6h.dst};
	const Frames ack_unseen_f{tcp4(eth, unseen4, ack), tcp6(eth, unseen6, ack)};
	const Frames udp_f{frame_v4(0xc612ff01u), frame_v6()};
	// An ACK carrying a valid cookie of cookie_reqsk's own (cookie_reqsk.h):
	// the same connection as `ack`, its ack number the cookie + 1.
	auto reqsk_ack = [&](bool v6) {
		const __u64 key[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
		Tcp a = ack;
		const Bytes f = v6 ? tcp6(eth, ip6h, a) : tcp4(eth, ip4h, a);
		const size_t l3 = 14, th = v6 ? 54 : 34;
		__u32 s0, d0;
		__u16 sp, dp;
		std::memcpy(&s0, f.data() + l3 + (v6 ? 8 : 12), 4);
		std::memcpy(&d0, f.data() + l3 + (v6 ? 24 : 16), 4);
		std::memcpy(&sp, f.data() + th, 2);
		std::memcpy(&dp, f.data() + th + 2, 2);
		__u32 h = reqsk_cookie_hash(key, __u64(s0) << 32 | d0, a.seq - 1, sp, dp);
		a.ack = reqsk_cookie(h, 3, 1, 7) + 1;
		return v6 ? tcp6(eth, ip6h, a) : tcp4(eth, ip4h, a);
	};
	const Frames reqsk_valid_f{reqsk_ack(false), reqsk_ack(true)};

	// Shedding, no newcomer budget; cookies while shedding (or off), a budget
	// of a token a nanosecond and a burst of 1e9 (never spent here).
	auto shedding = [&](Loaded &l, __u32 mode, bool budget_spent = false, bool acks_looked_up = false,
			    bool dest_spent = false) {
		l.set_config(1000, 1000);
		const uint16_t listening[] = {kPort}; // as sluiced marks its listeners
		if (auto ok = sluice::ListenPorts(l.map_fd("listen_ports")).mark(listening); !ok)
			throw Error(ok.error().describe());
		sluice_config c{};
		__u32 zero = 0;
		if (bpf_map_lookup_elem(l.map_fd("config"), &zero, &c))
			throw Error(std::string("config lookup: ") + std::strerror(errno));
		c.breaker_state = SLUICE_SHEDDING;
		c.newcomer_cost_ns = 0;
		c.newcomer_burst = 0;
		c.cookie_mode = mode;
		c.cookie_acks_unlooked = acks_looked_up ? 0 : 1; // as sluiced with its feeders (ack_lookup: without)
		// Spent: a burst of 0 never pays a token (syn_spent's budget).
		c.cookie_cost_ns = 1;
		c.cookie_burst = budget_spent ? 0 : 1000000000ull;
		// The per-destination bound in force (its hash and token paid on
		// every SYN), refilled faster than any run spends it; spent: a
		// burst of 0 (syn_reflect's).
		c.cookie_dest_cost_ns = dest_spent ? SLUICE_NSEC_PER_SEC : SLUICE_NSEC_PER_SEC / SLUICE_RATE_MAX;
		c.cookie_dest_burst = dest_spent ? 0 : SLUICE_BURST_MAX;
		c.cookie_mss4 = 1460;
		c.cookie_mss6 = 1440;
		c.cookie_wscale = 7;
		c.cookie_flags = SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK | SLUICE_COOKIE_WSCALE;
		c.cookie_acks_stamped_from = 1; // the SYN stamps asked, as sluiced past its grace
		if (bpf_map_update_elem(l.map_fd("config"), &zero, &c, BPF_ANY))
			throw Error(std::string("config update: ") + std::strerror(errno));
	};
	// The other ways of making the cookie (figure 10's alternatives), each
	// alone: the raw helpers and the listener's cookies without sluice around
	// them (cookie_alt.bpf.c, XDP), and the tc kfunc's ACK half
	// (cookie_reqsk.bpf.c). Optional: --raw-obj, --listener-obj, --reqsk-obj.
	std::unique_ptr<Loaded> raw, listener, reqsk;
	auto alt_params = [](Loaded &l) {
		struct {
			__u32 mss4, mss6, wscale, flags, remember;
		} pv{1460, 1440, 7, SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK | SLUICE_COOKIE_WSCALE, 0};
		__u32 zero = 0;
		if (bpf_map_update_elem(l.map_fd("params"), &zero, &pv, BPF_ANY))
			throw Error(std::string("params update: ") + std::strerror(errno));
	};
	if (o.count("raw-obj")) {
		raw = std::make_unique<Loaded>(o["raw-obj"], Loaded::SluiceSetup{});
		alt_params(*raw);
	}
	if (o.count("listener-obj")) {
		listener = std::make_unique<Loaded>(o["listener-obj"], Loaded::SluiceSetup{});
		alt_params(*listener);
	}
	if (o.count("reqsk-obj"))
		reqsk = std::make_unique<Loaded>(o["reqsk-obj"], Loaded::SluiceSetup{});
	Loaded cookies(o["obj"], Loaded::SluiceSetup{}), off(o["obj"], Loaded::SluiceSetup{}),
		spent(o["obj"], Loaded::SluiceSetup{}), looked_up(o["obj"], Loaded::SluiceSetup{}),
		reflect(o["obj"], Loaded::SluiceSetup{}),
		over(o["obj"], Loaded::SluiceSetup{}),
		xdp_drop(o["drop-obj"], Loaded::SluiceSetup{});
	if (!cookies.sluice())
		throw Error(o["obj"] + " is not a sluice object");
	shedding(cookies, SLUICE_COOKIES_SHEDDING);
	shedding(off, SLUICE_COOKIES_OFF);
	shedding(spent, SLUICE_COOKIES_SHEDDING, true);
	shedding(looked_up, SLUICE_COOKIES_SHEDDING, false, true);
	shedding(reflect, SLUICE_COOKIES_SHEDDING, false, false, true);
	over.set_config(1, 1);
	test_run(over.prog_fd(), udp_f.v4, 4);
	test_run(over.prog_fd(), udp_f.v6, 4);

	struct Path {
		const char *name;
		const Loaded *obj;
		const Frames *frames;
		bool wrapped;
		std::unique_ptr<Loaded> wrapper;
		std::vector<__u32> v4, v6, single4, single6;
		__u32 ret4 = 0, ret6 = 0;
		bool tc = false; // a tc program: BPF_PROG_TEST_RUN with an skb
	};
	std::vector<Path> paths;
	paths.push_back({"syn", &cookies, &syn_f, true});
	paths.push_back({"ack", &cookies, &ack_unseen_f, true});
	paths.push_back({"ack_stamped", &cookies, &ack_f, true});
	paths.push_back({"shed", &off, &syn_f, true});
	paths.push_back({"syn_spent", &spent, &syn_f, true});
	paths.push_back({"ack_lookup", &looked_up, &ack_f, true});
	paths.push_back({"syn_reflect", &reflect, &syn_f, true});
	paths.push_back({"drop", &over, &udp_f, true});
	paths.push_back({"xdp_drop", &xdp_drop, &syn_f, true});
	paths.push_back({"xdp_drop_bare", &xdp_drop, &syn_f, false});
	if (raw) {
		paths.push_back({"raw_syn", raw.get(), &syn_f, true});
		paths.push_back({"raw_ack", raw.get(), &ack_f, true});
	}
	if (listener) {
		paths.push_back({"listener_syn", listener.get(), &syn_f, true});
		paths.push_back({"listener_ack", listener.get(), &ack_f, true});
	}
	if (reqsk) {
		// tc does not rewrite an ACK: no wrapper (it is XDP's)
		paths.push_back({"reqsk_ack_valid", reqsk.get(), &reqsk_valid_f, false});
		paths.back().tc = true;
		paths.push_back({"reqsk_ack_forged", reqsk.get(), &ack_f, false});
		paths.back().tc = true;
	}
	for (auto &p : paths) {
		if (!p.wrapped)
			continue;
		p.wrapper = std::make_unique<Loaded>(o["restore"], Loaded::SluiceSetup{});
		__u32 zero = 0;
		int fd = p.obj->prog_fd();
		if (bpf_map_update_elem(p.wrapper->map_fd("target"), &zero, &fd, BPF_ANY))
			throw Error(std::string(p.name) + ": tail-call slot: " + std::strerror(errno));
	}
	// The wrapper's frame: what it puts back before every repetition.
	auto hold = [](const Path &p, const Bytes &f) {
		struct {
			__u32 len;
			__u8 bytes[128];
		} v{};
		if (f.size() > sizeof(v.bytes))
			throw Error("frame too long for the wrapper");
		v.len = __u32(f.size());
		std::memcpy(v.bytes, f.data(), f.size());
		__u32 zero = 0;
		if (bpf_map_update_elem(p.wrapper->map_fd("frame"), &zero, &v, BPF_ANY))
			throw Error(std::string("wrapper frame: ") + std::strerror(errno));
	};
	auto loop = [&](const Path &p, const Bytes &f, int n) {
		if (!p.wrapped)
			return test_run(p.obj->prog_fd(), f, n);
		hold(p, f);
		return test_run(p.wrapper->prog_fd(), f, n);
	};
	// Warm up (and the SYNs first: the listeners have sent cookies, so the
	// kernel checks an ACK whole).
	for (auto &p : paths) {
		loop(p, p.frames->v4, 10000);
		loop(p, p.frames->v6, 10000);
	}
	std::vector<__u32> d4(static_cast<size_t>(calls)), d6(static_cast<size_t>(calls));
	auto median = [](std::vector<__u32> v) {
		std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
		return v[v.size() / 2];
	};
	json counts = json::object();
	for (int r = 0; r < rounds; r++) {
		for (auto &p : paths) {
			// The ack and syn paths share an object: counted apart.
			std::vector<__u64> c0 = p.obj->sluice() ? outcome_packets(*p.obj) : std::vector<__u64>{};
			std::map<std::string, __u64> a0 = alt_outcomes(*p.obj, p.tc);
			Run a = loop(p, p.frames->v4, repeat);
			Run b = loop(p, p.frames->v6, repeat);
			p.v4.push_back(a.duration);
			p.v6.push_back(b.duration);
			p.ret4 = a.retval;
			p.ret6 = b.retval;
			if (p.obj->sluice()) {
				std::vector<__u64> c1 = outcome_packets(*p.obj);
				json &j = counts[p.name];
				if (j.is_null())
					j = json::object();
				for (__u32 k = 0; k < SLUICE_OUTCOMES; k++)
					if (c1[k] != c0[k])
						j[outcome_name(k)] = j.value(outcome_name(k), __u64(0)) + (c1[k] - c0[k]);
			}
			for (const auto &[name, n1] : alt_outcomes(*p.obj, p.tc)) {
				if (n1 == a0[name])
					continue;
				json &j = counts[p.name];
				if (j.is_null())
					j = json::object();
				j[name] = j.value(name, __u64(0)) + (n1 - a0[name]);
			}
			if (calls > 0 && !p.wrapped) {
				for (int i = 0; i < calls; i++) {
					d4[size_t(i)] = test_run(p.obj->prog_fd(), p.frames->v4, 1).duration;
					d6[size_t(i)] = test_run(p.obj->prog_fd(), p.frames->v6, 1).duration;
				}
				p.single4.push_back(median(d4));
				p.single6.push_back(median(d6));
			}
		}
		// The single-call cross-check of the sluice paths (no wrapper).
		for (auto &p : paths) {
			if (calls <= 0 || !p.obj->sluice())
				continue;
			for (int i = 0; i < calls; i++) {
				d4[size_t(i)] = test_run(p.obj->prog_fd(), p.frames->v4, 1).duration;
				d6[size_t(i)] = test_run(p.obj->prog_fd(), p.frames->v6, 1).duration;
			}
			p.single4.push_back(median(d4));
			p.single6.push_back(median(d6));
		}
	}
	json out;
	out["calls"] = calls;
	out["rounds"] = rounds;
	out["repeat"] = repeat;
	json jp = json::object();
	for (const auto &p : paths) {
		jp[p.name] = {{"v4", p.v4},
			      {"v6", p.v6},
			      {"single_v4", p.single4},
			      {"single_v6", p.single6},
			      {"retval_v4", p.ret4},
			      {"retval_v6", p.ret6},
			      {"wrapped", p.wrapped},
			      {"tc", p.tc},
			      {"frame_bytes_v4", p.frames->v4.size()},
			      {"frame_bytes_v6", p.frames->v6.size()}};
	}
	out["paths"] = jp;
	out["outcomes"] = counts;
	if (reqsk) {
		// What bpf_sk_assign_tcp_reqsk answered the valid ACK (its last call).
		int r = reqsk_last_assign(*reqsk);
		out["reqsk_last_assign"] = r;
		out["reqsk_last_assign_error"] = r < 0 ? std::string(strerrorname_np(-r) ? strerrorname_np(-r) : "?") + " (" +
								 std::strerror(-r) + ")"
						       : std::string(r == 0 ? "assigned" : "never called");
	}
	std::cout << out.dump() << std::endl;
	return 0;
}

// Attach a cookie_alt object (the raw helpers' or the listener's cookies
// alone) to IFACE in native mode, with our side's MSS and window scale; then
// for every line read on stdin print its outcome counters; detach at end of
// input. tests/netns/test_cookie_alternatives.py drives it.
int cmd_cookie_attach(int argc, char **argv)
{
	std::vector<std::string> pos;
	auto o = parse_opts(argc, argv, pos);
	if (!o.count("obj") || !o.count("iface"))
		throw Error("cookie-attach: give --obj COOKIE_ALT_OBJECT --iface IFACE [--mss4 M] [--mss6 M] [--wscale W]");
	unsigned ifindex = if_nametoindex(o["iface"].c_str());
	if (!ifindex)
		throw Error("no interface " + o["iface"]);
	Loaded obj(o["obj"], Loaded::SluiceSetup{});
	// remember: the frames after a connection's proving ACK pass (cookie_alt.bpf.c, `proved`)
	struct {
		__u32 mss4, mss6, wscale, flags, remember;
	} pv{__u32(opt_u64(o, "mss4", 1460)), __u32(opt_u64(o, "mss6", 1440)), __u32(opt_u64(o, "wscale", 7)),
	     SLUICE_COOKIE_TS | SLUICE_COOKIE_SACK | SLUICE_COOKIE_WSCALE, 1};
	__u32 zero = 0;
	if (bpf_map_update_elem(obj.map_fd("params"), &zero, &pv, BPF_ANY))
		throw Error(std::string("params update: ") + std::strerror(errno));
	if (int e = bpf_xdp_attach(int(ifindex), obj.prog_fd(), XDP_FLAGS_DRV_MODE, nullptr))
		throw Error("attach to " + o["iface"] + ": " + std::strerror(-e));
	std::cout << json{{"attached", o["iface"]}}.dump() << std::endl;
	std::string line;
	while (std::getline(std::cin, line)) {
		json j = json::object();
		for (const auto &[name, n] : alt_outcomes(obj, false))
			j[name] = n;
		std::cout << j.dump() << std::endl;
	}
	bpf_xdp_detach(int(ifindex), XDP_FLAGS_DRV_MODE, nullptr);
	return 0;
}

// Attach netrx_clock.bpf.o's two tracepoint programs; then, for every line
// read on stdin, print {"ns":N,"count":C}: the NET_RX softirq time summed over
// every CPU since the attach. Ends (and detaches) at end of input.
int cmd_netrx(int argc, char **argv)
{
	std::vector<std::string> pos;
	auto o = parse_opts(argc, argv, pos);
	if (!o.count("obj"))
		throw Error("netrx: --obj NETRX_CLOCK_OBJECT is required");
	bpf_object *obj = bpf_object__open_file(o["obj"].c_str(), nullptr);
	if (!obj)
		throw Error("open " + o["obj"] + ": " + std::strerror(errno));
	if (int e = bpf_object__load(obj))
		throw Error("load " + o["obj"] + ": " + std::strerror(-e));
	std::vector<bpf_link *> links;
	bpf_program *p;
	bpf_object__for_each_program(p, obj)
	{
		bpf_link *l = bpf_program__attach(p);
		if (!l)
			throw Error(std::string("attach ") + bpf_program__name(p) + ": " + std::strerror(errno));
		links.push_back(l);
	}
	bpf_map *m = bpf_object__find_map_by_name(obj, "netrx");
	int ncpu = libbpf_num_possible_cpus();
	std::vector<__u64> vals(size_t(ncpu > 0 ? ncpu : 1));
	std::string line;
	while (std::getline(std::cin, line)) {
		__u64 sums[2] = {0, 0};
		for (__u32 k = 1; k <= 2; k++) {
			if (bpf_map_lookup_elem(bpf_map__fd(m), &k, vals.data()))
				throw Error(std::string("netrx lookup: ") + std::strerror(errno));
			for (__u64 v : vals)
				sums[k - 1] += v;
		}
		std::cout << json{{"ns", sums[0]}, {"count", sums[1]}}.dump() << std::endl;
	}
	for (auto *l : links)
		bpf_link__destroy(l);
	bpf_object__close(obj);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	libbpf_set_print(quiet_libbpf);
	if (argc < 2) {
		std::cerr << "usage: sluice-bench cost|collateral|attach|contention|netrx|cookie-cost|cookie-attach [options] "
			     "(see the comment at the top of tests/tools/bench/sluice_bench.cpp)\n";
		return 2;
	}
	std::string cmd = argv[1];
	try {
		if (cmd == "cost")
			return cmd_cost(argc - 2, argv + 2);
		if (cmd == "collateral")
			return cmd_collateral(argc - 2, argv + 2);
		if (cmd == "netrx")
			return cmd_netrx(argc - 2, argv + 2);
		if (cmd == "cookie-cost")
			return cmd_cookie_cost(argc - 2, argv + 2);
		if (cmd == "cookie-attach")
			return cmd_cookie_attach(argc - 2, argv + 2);
		if (cmd == "attach")
			return cmd_attach(argc - 2, argv + 2);
		if (cmd == "contention")
			return cmd_contention(argc - 2, argv + 2);
		std::cerr << "sluice-bench: unknown command '" << cmd << "'\n";
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "sluice-bench " << cmd << ": " << e.what() << "\n";
		return 1;
	}
}
