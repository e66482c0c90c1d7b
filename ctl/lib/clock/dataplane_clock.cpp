#include "clock/dataplane_clock.h"

#include "base/log.h"
#include "bpf/jiffies_clock.h"
#include "clock_probe_bpf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>

namespace sluice {

namespace {

constexpr long kTickNsMin = 100'000;    // HZ 10000
constexpr long kTickNsMax = 10'000'000; // HZ 100

// The probe, loaded once for the process and kept until it exits (a static
// destroyed at exit, so that LeakSanitizer sees nothing held): its fd is all
// a reading needs, and BPF_PROG_TEST_RUN may run it from several threads at
// once.
struct Probe {
	std::unique_ptr<clock_probe_bpf, void (*)(clock_probe_bpf *)> skel{nullptr, clock_probe_bpf__destroy};
	int prog_fd = -1;
	Error error;
};

const Probe &probe()
{
	static Probe p;
	static std::once_flag once;
	std::call_once(once, [] {
		p.skel.reset(clock_probe_bpf::open_and_load());
		if (!p.skel) {
			p.error = Error{ErrorKind::system, errno,
					"loading the XDP program that reads the data plane's clock for the "
					"host (the clock probe, bpf/clock_probe.bpf.c; XDP needs CAP_BPF and "
					"CAP_NET_ADMIN)"};
			return;
		}
		p.prog_fd = bpf_program__fd(p.skel->progs.sluice_clock_probe);
	});
	return p;
}

} // namespace

Result<uint32_t> dataplane_tick_ns()
{
	timespec res{};
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0)
		return fail_errno("reading the resolution of CLOCK_MONOTONIC_COARSE (the kernel's tick)");
	if (res.tv_sec != 0 || res.tv_nsec < kTickNsMin || res.tv_nsec > kTickNsMax)
		return fail(ErrorKind::system,
			    "the kernel's tick (CLOCK_MONOTONIC_COARSE's resolution) is " + std::to_string(res.tv_sec) +
				    " s " + std::to_string(res.tv_nsec) +
				    " ns, outside the 100 us to 10 ms (HZ 100 to 10000) the data plane's clock is made for");
	return static_cast<uint32_t>(res.tv_nsec);
}

Result<uint64_t> read_dataplane_clock()
{
	static const Result<uint32_t> tick = dataplane_tick_ns();
	if (!tick)
		return std::unexpected(tick.error());
	const Probe &p = probe();
	if (p.prog_fd < 0)
		return std::unexpected(p.error);
	std::array<unsigned char, 64> in{}, out{};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in.data(), .data_out = out.data(),
		    .data_size_in = static_cast<__u32>(in.size()), .data_size_out = static_cast<__u32>(out.size()),
		    .repeat = 1);
	if (int err = bpf_prog_test_run_opts(p.prog_fd, &opts); err)
		return fail_bpf(err, "running the clock probe (BPF_PROG_TEST_RUN)");
	if (opts.retval != XDP_PASS || opts.data_size_out < sizeof(uint64_t))
		return fail(ErrorKind::system, "the clock probe returned " + std::to_string(opts.retval) + " with " +
						       std::to_string(opts.data_size_out) + " bytes, not its jiffies");
	uint64_t jiffies = 0;
	std::memcpy(&jiffies, out.data(), sizeof(jiffies));
	return sluice_clock_of_jiffies(jiffies, *tick);
}

uint64_t dataplane_now()
{
	auto now = read_dataplane_clock();
	if (!now) {
		log_error("the data plane's clock cannot be read: " + now.error().describe());
		std::abort();
	}
	return *now;
}

} // namespace sluice
