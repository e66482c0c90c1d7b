// fixture.h - the bpf tests' harness: an RAII owner of a loaded sluice program
// (chosen hash key, table size, settings and config), frame runs through
// bpf_prog_test_run_opts, and readers for the counters and slots.
#pragma once

#include <gtest/gtest.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "frames.h"
#include "bpf/sluice_abi.h"
#include "bpf/bucket.h"
#include "bpf/parse.h"
#include "bpf/source_key.h"
#include "clock/dataplane_clock.h"
#include "sluice_bpf.skel.h"
#include "xdp_drop_bpf.skel.h"

namespace sluice::test {

using frames::Bytes;

inline constexpr __u64 kTestKey[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

// The kernel's tick in ns (4 ms at HZ=250): the data plane's clock moves in
// these steps (bpf/jiffies_clock.h). What the fixture writes into settings.
inline std::uint64_t tick_ns()
{
	static const std::uint64_t t = [] {
		auto r = sluice::dataplane_tick_ns();
		if (!r)
			throw std::runtime_error(r.error().describe());
		return std::uint64_t(*r);
	}();
	return t;
}

// The enumerator without "SLUICE_" ("DROP_RATE"), from sluice_abi.h's table.
inline const char *outcome_name(unsigned o)
{
	static constexpr auto names = [] {
		std::array<const char *, SLUICE_OUTCOMES> n{};
#define SLUICE_OUTCOME_SYMBOL(sym, value, name, verdict) n[value] = &#sym[sizeof("SLUICE_") - 1];
		SLUICE_OUTCOME_TABLE(SLUICE_OUTCOME_SYMBOL)
#undef SLUICE_OUTCOME_SYMBOL
		return n;
	}();
	return o < SLUICE_OUTCOMES ? names[o] : "?";
}

// Counters summed over every possible CPU.
struct Counters {
	std::array<sluice_counter, SLUICE_OUTCOMES> c{};

	std::uint64_t packets(unsigned o) const { return c.at(o).packets; }
	std::uint64_t bytes(unsigned o) const { return c.at(o).bytes; }
	std::uint64_t total_packets() const
	{
		std::uint64_t n = 0;
		for (unsigned o = 0; o < SLUICE_OUTCOMES; o++)
			if (o != SLUICE_WOULD_DROP)
				n += c[o].packets;
		return n;
	}
	std::string str() const
	{
		std::string s;
		for (unsigned o = 0; o < SLUICE_OUTCOMES; o++)
			s += std::string(outcome_name(o)) + "=" + std::to_string(c[o].packets) + "/" +
			     std::to_string(c[o].bytes) + "B ";
		return s;
	}
};

struct RunResult {
	int err = 0;             // bpf_prog_test_run_opts, -errno
	std::uint32_t retval = 0; // XDP_PASS / XDP_DROP ...
	std::uint32_t duration = 0; // ns per repetition
};

// What to load: settings (rodata, fixed at load), table size and the config.
struct Options {
	__u64 key[2] = {kTestKey[0], kTestKey[1]};
	std::uint32_t slots = 1024; // power of two; slot_mask = slots - 1
	std::uint32_t v4_prefix = 32;
	std::uint32_t v6_prefix = 64;
	std::uint32_t dry_run = 0;
	std::uint32_t one_choice = 0;
	std::uint32_t standing_sets = 256;       // power of two; standing_set_mask = standing_sets - 1
	std::uint32_t standing_lapse_ticks = 64; // 2^30 ns each
	std::uint32_t observe_periods = 0;       // observed standing; on: the observed map has standing_sets sets
	std::vector<std::uint16_t> listen_ports; // TCP ports marked in listen_ports (the cookie path's hint)
	std::uint32_t sample_every = SLUICE_SAMPLE_EVERY_DEFAULT; // drop sampling: 1 in this many drops
	sluice_config config{};
};

// Nanoseconds per token at rate_pps, rounded to nearest (as the control
// plane's cost_for_rate).
inline std::uint64_t cost_ns_of(std::uint64_t rate_pps)
{
	return (SLUICE_NSEC_PER_SEC + rate_pps / 2) / rate_pps;
}

// A config for rate (tokens/s) and burst; serving, no lists.
inline sluice_config make_config(std::uint64_t rate_pps, std::uint64_t burst)
{
	sluice_config c{};
	c.cost_ns = cost_ns_of(rate_pps);
	c.burst = burst;
	c.breaker_state = SLUICE_SERVING;
	c.admission_ppm = SLUICE_PPM_FULL;
	c.policy_flags = 0;
	c.rate_pps = rate_pps;
	return c;
}

// The same with a standing bucket beside it: what Dataplane::load takes (the
// control plane's config invariants refuse a standing bucket of nothing).
inline sluice_config make_config(std::uint64_t rate_pps, std::uint64_t burst, std::uint64_t standing_rate_pps,
				 std::uint64_t standing_burst)
{
	sluice_config c = make_config(rate_pps, burst);
	c.standing_cost_ns = cost_ns_of(standing_rate_pps);
	c.standing_burst = standing_burst;
	c.standing_rate_pps = standing_rate_pps;
	return c;
}

inline std::uint64_t mono_ns(clockid_t clk = CLOCK_MONOTONIC)
{
	timespec ts{};
	clock_gettime(clk, &ts);
	return std::uint64_t(ts.tv_sec) * 1'000'000'000ull + std::uint64_t(ts.tv_nsec);
}

inline void sleep_ns(std::uint64_t ns)
{
	timespec ts{time_t(ns / 1'000'000'000ull), long(ns % 1'000'000'000ull)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

// Run `frame` through program `prog_fd` `repeat` times.
//
// Frames shorter than an Ethernet header: BPF_PROG_TEST_RUN refuses
// data_size_in < ETH_HLEN, but (since the multi-buffer test_run rework) it
// takes xdp_md.data_end as the length of the linear area and puts the rest of
// data_in in fragments. So a short frame is sent as [frame][zero filler up to
// ETH_HLEN] with data_end = frame length: the program's data..data_end is
// exactly `frame`, which is what a truncated frame looks like to it.
inline RunResult run_prog(int prog_fd, const Bytes &frame, int repeat = 1)
{
	Bytes in = frame;
	xdp_md ctx{};
	bool short_frame = frame.size() < frames::kEthHeaderLen;

	if (short_frame)
		in.resize(frames::kEthHeaderLen, 0);
	ctx.data = 0;
	ctx.data_end = std::uint32_t(frame.size());

	LIBBPF_OPTS(bpf_test_run_opts, opts);
	opts.data_in = in.data();
	opts.data_size_in = std::uint32_t(in.size());
	if (short_frame) {
		opts.ctx_in = &ctx;
		opts.ctx_size_in = sizeof(ctx);
	}
	opts.repeat = repeat;

	RunResult r;
	r.err = bpf_prog_test_run_opts(prog_fd, &opts);
	if (r.err)
		r.err = -errno;
	r.retval = opts.retval;
	r.duration = opts.duration;
	return r;
}

// run_prog with the frame as the program left it (data_out): an XDP_TX
// reply written in the frame's place, grown or cut by bpf_xdp_adjust_tail.
struct RunOut : RunResult {
	Bytes out;
};

inline RunOut run_prog_out(int prog_fd, const Bytes &frame)
{
	Bytes in = frame;
	RunOut r;
	r.out.assign(4096, 0);
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	opts.data_in = in.data();
	opts.data_size_in = std::uint32_t(in.size());
	opts.data_out = r.out.data();
	opts.data_size_out = std::uint32_t(r.out.size());
	opts.repeat = 1;
	r.err = bpf_prog_test_run_opts(prog_fd, &opts);
	if (r.err)
		r.err = -errno;
	r.retval = opts.retval;
	r.duration = opts.duration;
	r.out.resize(std::min<std::size_t>(opts.data_size_out, r.out.size()));
	return r;
}

// The source as the parser yields it from the address bytes.
inline sluice_source source_of(const frames::Ip4 &a)
{
	sluice_source s{};
	std::uint32_t w;
	std::memcpy(&w, a.data(), 4);
	s.w[0] = w;
	return s;
}

inline sluice_source source_of(const frames::Ip6 &a)
{
	sluice_source s{};
	std::memcpy(&s.w[0], a.data(), 8);
	std::memcpy(&s.w[1], a.data() + 8, 8);
	return s;
}

// The loaded sluice program. Construction failure is reported through ok()
// and error(), so the test can assert (not throw) on it.
// An LPM trie's key type for an address of frames.h.
template <class Addr>
	requires std::is_same_v<Addr, frames::Ip4> || std::is_same_v<Addr, frames::Ip6>
using LpmKeyOf = std::conditional_t<std::is_same_v<Addr, frames::Ip4>, sluice_lpm_v4, sluice_lpm_v6>;

class Sluice {
public:
	explicit Sluice(const Options &o = {}) : opt_(o)
	{
		skel_ = sluice_bpf::open();
		if (!skel_) {
			err_ = "sluice_bpf::open: " + std::string(std::strerror(errno));
			return;
		}
		auto &s = skel_->rodata->settings;
		s.hash_key[0] = o.key[0];
		s.hash_key[1] = o.key[1];
		s.layout_version = SLUICE_LAYOUT_VERSION;
		s.slot_mask = o.slots - 1;
		s.v4_prefix = o.v4_prefix;
		s.v6_prefix = o.v6_prefix;
		s.dry_run = o.dry_run;
		s.one_choice = o.one_choice;
		s.standing_set_mask = o.standing_sets - 1;
		s.standing_lapse_ticks = o.standing_lapse_ticks;
		s.clock_tick_ns = static_cast<__u32>(tick_ns());
		s.observe_periods = o.observe_periods;
		s.sample_every = o.sample_every;
		s.observe_set_mask = o.observe_periods ? o.standing_sets - 1 : 0;
		if (int e = bpf_map__set_max_entries(skel_->maps.observed, o.observe_periods ? o.standing_sets : 1)) {
			err_ = "set_max_entries (observed): " + std::string(std::strerror(-e));
			return;
		}
		if (int e = bpf_map__set_max_entries(skel_->maps.standing, o.standing_sets)) {
			err_ = "set_max_entries (standing): " + std::string(std::strerror(-e));
			return;
		}
		if (int e = bpf_map__set_max_entries(skel_->maps.prefix_count, o.standing_sets * SLUICE_STANDING_WAYS)) {
			err_ = "set_max_entries (prefix_count): " + std::string(std::strerror(-e));
			return;
		}
		if (int e = bpf_map__set_max_entries(skel_->maps.slots, o.slots)) {
			err_ = "set_max_entries: " + std::string(std::strerror(-e));
			return;
		}
		if (int e = sluice_bpf::load(skel_)) {
			err_ = "sluice_bpf::load: " + std::string(std::strerror(-e));
			return;
		}
		if (int e = set_config(o.config)) {
			err_ = "config update: " + std::string(std::strerror(-e));
			return;
		}
		for (std::uint16_t port : o.listen_ports) {
			__u32 word = sluice_listen_port_word(port);
			__u64 bits = 0;
			bpf_map_lookup_elem(map_fd(skel_->maps.listen_ports), &word, &bits);
			bits |= sluice_listen_port_bit(port);
			if (bpf_map_update_elem(map_fd(skel_->maps.listen_ports), &word, &bits, BPF_ANY)) {
				err_ = "listen_ports update: " + std::string(std::strerror(errno));
				return;
			}
		}
		ok_ = true;
	}
	~Sluice() { sluice_bpf__destroy(skel_); }
	Sluice(const Sluice &) = delete;
	Sluice &operator=(const Sluice &) = delete;

	bool ok() const { return ok_; }
	const std::string &error() const { return err_; }
	sluice_bpf *skel() const { return skel_; }
	const Options &options() const { return opt_; }
	int prog_fd() const { return bpf_program__fd(skel_->progs.sluice_xdp); }
	int map_fd(bpf_map *m) const { return bpf_map__fd(m); }

	int set_config(const sluice_config &c)
	{
		std::uint32_t zero = 0;
		opt_.config = c;
		return bpf_map_update_elem(map_fd(skel_->maps.config), &zero, &c, BPF_ANY) ? -errno : 0;
	}
	const sluice_config &config() const { return opt_.config; }

	RunResult run(const Bytes &frame, int repeat = 1) const { return run_prog(prog_fd(), frame, repeat); }
	RunOut run_out(const Bytes &frame) const { return run_prog_out(prog_fd(), frame); }

	Counters counters() const
	{
		int ncpu = libbpf_num_possible_cpus();
		std::vector<sluice_counter> per(std::size_t(ncpu > 0 ? ncpu : 1));
		Counters out;
		for (std::uint32_t o = 0; o < SLUICE_OUTCOMES; o++) {
			if (bpf_map_lookup_elem(map_fd(skel_->maps.counters), &o, per.data()))
				throw std::runtime_error("counters lookup failed");
			for (const auto &c : per) {
				out.c[o].packets += c.packets;
				out.c[o].bytes += c.bytes;
			}
		}
		return out;
	}

	// One outcome's packet count on each possible CPU.
	std::vector<std::uint64_t> per_cpu_packets(std::uint32_t outcome) const
	{
		int ncpu = libbpf_num_possible_cpus();
		std::vector<sluice_counter> per(std::size_t(ncpu > 0 ? ncpu : 1));
		if (bpf_map_lookup_elem(map_fd(skel_->maps.counters), &outcome, per.data()))
			throw std::runtime_error("counters lookup failed");
		std::vector<std::uint64_t> out;
		for (const auto &c : per)
			out.push_back(c.packets);
		return out;
	}

	std::uint64_t slot(std::uint32_t i) const
	{
		sluice_slot v{};
		if (bpf_map_lookup_elem(map_fd(skel_->maps.slots), &i, &v))
			throw std::runtime_error("slot lookup failed");
		return v.empty_at;
	}

	std::vector<std::uint64_t> all_slots() const
	{
		std::vector<std::uint64_t> v(opt_.slots);
		for (std::uint32_t i = 0; i < opt_.slots; i++)
			v[i] = slot(i);
		return v;
	}

	// The slots the program picks for a source, computed on the host with the
	// same headers and key.
	sluice_slot_pair slots_of(const frames::Ip4 &a) const
	{
		sluice_source s = source_of(a);
		s.w[0] = sluice_mask_v4(std::uint32_t(s.w[0]), opt_.v4_prefix);
		return sluice_slots_of(sluice_source_hash(opt_.key, &s, 0), opt_.slots - 1, opt_.one_choice);
	}
	sluice_slot_pair slots_of(const frames::Ip6 &a) const
	{
		sluice_source s = source_of(a);
		sluice_mask_v6(&s, opt_.v6_prefix);
		return sluice_slots_of(sluice_source_hash(opt_.key, &s, 1), opt_.slots - 1, opt_.one_choice);
	}

	// LPM list entries (value 1) in allow_v4 / deny_v4 / allow_v6 / deny_v6,
	// of policy set `set`: prefixlen is the address's (the set byte's 8
	// bits are added here).
	template <class Addr>
	int list_add(bpf_map *m, const Addr &a, std::uint32_t prefixlen, std::uint32_t set = 0)
	{
		auto k = lpm_key(a, prefixlen, set);
		std::uint8_t one = 1;
		return bpf_map_update_elem(map_fd(m), &k, &one, BPF_ANY) ? -errno : 0;
	}
	// The list or class trie key of a (sluice_lpm_v4 for frames::Ip4, v6 for Ip6).
	template <class Addr>
	static LpmKeyOf<Addr> lpm_key(const Addr &a, std::uint32_t prefixlen, std::uint32_t set)
	{
		LpmKeyOf<Addr> k{};
		static_assert(sizeof(k.addr) == sizeof(Addr));
		k.prefixlen = SLUICE_LPM_SET_BITS + prefixlen;
		k.set = std::uint8_t(set);
		std::memcpy(k.addr, a.data(), sizeof(k.addr));
		return k;
	}

private:
	Options opt_;
	sluice_bpf *skel_ = nullptr;
	bool ok_ = false;
	std::string err_;
};

// The baseline program (returns XDP_DROP).
class XdpDrop {
public:
	XdpDrop() : skel_(xdp_drop_bpf::open_and_load()) {}
	~XdpDrop() { xdp_drop_bpf__destroy(skel_); }
	XdpDrop(const XdpDrop &) = delete;
	XdpDrop &operator=(const XdpDrop &) = delete;
	bool ok() const { return skel_ != nullptr; }
	int prog_fd() const { return bpf_program__fd(skel_->progs.xdp_drop_all); }
	RunResult run(const Bytes &frame, int repeat = 1) const { return run_prog(prog_fd(), frame, repeat); }

private:
	xdp_drop_bpf *skel_;
};

} // namespace sluice::test

// Load or fail the test with libbpf's reason.
#define SLUICE_LOAD_OR_FAIL(var, options)                                        \
	::sluice::test::Sluice var{options};                                     \
	ASSERT_TRUE(var.ok()) << var.error()

// Run one frame and assert the call worked and the verdict.
#define EXPECT_VERDICT(prog, frame, verdict)                                     \
	do {                                                                     \
		auto r_ = (prog).run(frame);                                     \
		ASSERT_EQ(r_.err, 0) << "bpf_prog_test_run_opts: " << std::strerror(-r_.err); \
		EXPECT_EQ(r_.retval, std::uint32_t(verdict)) << "frame of " << (frame).size() << " bytes"; \
	} while (0)

namespace sluice::test {

// The program's own clock, without the bias (jiffies x tick, read by the
// clock probe: clock/dataplane_clock.h). Host readings of it bracket every
// reading the program makes in between, exactly; intervals measured with
// CLOCK_MONOTONIC differ from what the program sees by up to a tick.
inline std::uint64_t dataplane_ns()
{
	auto now = sluice::read_dataplane_clock();
	if (!now)
		throw std::runtime_error(now.error().describe());
	return *now - SLUICE_TIME_BIAS;
}

// Spin until the program's clock moves: a run started right after a tick
// finishes long before the next one, so the program reads the same time as
// the host read just before it. (After an idle sleep jiffies can be several
// ticks stale until the next tick catches them up, possibly in the middle of
// a run.)
inline std::uint64_t wait_for_tick()
{
	std::uint64_t c = dataplane_ns(), n;
	while ((n = dataplane_ns()) == c) {
	}
	return n;
}

// Drain a source's buckets, sleep, and count what refilled.
struct RefillMeasurement {
	std::uint64_t passed_exhaust = 0; // PASSED during the draining run
	std::uint64_t passed_refill = 0;  // PASSED during the run after the sleep
	std::uint64_t e0 = 0, e1 = 0;     // program's clock around the draining run
	std::uint64_t r0 = 0, r1 = 0;     // program's clock around the counting run
	std::uint64_t fine_sleep = 0;     // CLOCK_MONOTONIC from end of drain to start of count
	std::uint32_t exhaust_retval = 0, refill_retval = 0;
	int err = 0;

	std::uint64_t sleep_on_clock() const { return r0 - e1; }
};

inline RefillMeasurement measure_refill(const Sluice &s, const Bytes &frame, int drain_repeat,
					std::uint64_t sleep, int count_repeat)
{
	RefillMeasurement m;
	std::uint64_t p0 = s.counters().packets(SLUICE_PASSED);
	wait_for_tick();
	m.e0 = dataplane_ns();
	RunResult a = s.run(frame, drain_repeat);
	m.e1 = dataplane_ns();
	std::uint64_t f0 = mono_ns();
	std::uint64_t p1 = s.counters().packets(SLUICE_PASSED);
	sleep_ns(sleep);
	wait_for_tick();
	std::uint64_t f1 = mono_ns();
	m.r0 = dataplane_ns();
	RunResult b = s.run(frame, count_repeat);
	m.r1 = dataplane_ns();
	std::uint64_t p2 = s.counters().packets(SLUICE_PASSED);
	m.passed_exhaust = p1 - p0;
	m.passed_refill = p2 - p1;
	m.fine_sleep = f1 - f0;
	m.exhaust_retval = a.retval;
	m.refill_retval = b.retval;
	m.err = a.err ? a.err : b.err;
	return m;
}

// Check a refill measurement against tokens arriving every cost_ns:
//  - exact bracket: the credit at the last admission of the counting run is
//    (residual < cost) + (c_r - c_last) with c_last in [e0, e1] and c_r in
//    [r0, r1], so passed_refill is in [floor((r0-e1)/cost), floor((r1-e0)/cost) + 1];
//  - and rate x the measured sleep, within one tick worth of tokens
//    (more only if a run itself straddled ticks, which widens the bracket;
//    measure_refill starts each run just after a tick so that it does not).
inline void expect_refill_matches(const RefillMeasurement &m, std::uint64_t cost_ns, const char *what)
{
	double rate = 1e9 / double(cost_ns);
	std::uint64_t lo = (m.r0 - m.e1) / cost_ns;
	std::uint64_t hi = (m.r1 - m.e0) / cost_ns + 1;
	double expected = rate * double(m.sleep_on_clock()) / 1e9;
	double straddle = double((m.e1 - m.e0) + (m.r1 - m.r0));
	double tol = rate * std::max(double(tick_ns()), straddle) / 1e9 + 1;
	double dev = double(m.passed_refill) - expected;
	double fine_expected = rate * double(m.fine_sleep) / 1e9;

	std::printf("REFILL %s: rate=%.1f/s sleep=%.3fms (fine %.3fms) refilled=%llu expected=%.2f "
		    "dev=%+.2f tokens (fine-clock dev %+.2f) tolerance=%.2f bracket=[%llu,%llu]\n",
		    what, rate, m.sleep_on_clock() / 1e6, m.fine_sleep / 1e6,
		    (unsigned long long)m.passed_refill, expected, dev, double(m.passed_refill) - fine_expected, tol,
		    (unsigned long long)lo, (unsigned long long)hi);
	EXPECT_GE(m.passed_refill, lo) << what;
	EXPECT_LE(m.passed_refill, hi) << what;
	EXPECT_LE(std::abs(dev), tol) << what;
}

} // namespace sluice::test
