// Two CPUs updating one source's slots at once: the compare-and-swap in
// bucket.h must keep the admissions within burst + rate x interval.
#include "cpu_pin.h"
#include "fixture.h"
#include "require.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

struct Hammer {
	int cpu = 0;
	bool pinned = false;
	int ran_on = -1;
	RunResult result;
	std::uint64_t t0 = 0, t1 = 0; // CLOCK_MONOTONIC around this thread's run
	std::uint64_t c0 = 0, c1 = 0; // CLOCK_MONOTONIC_COARSE around it
};

} // namespace

TEST(Concurrency, TwoCpusHammeringOneSlotStayWithinBurstPlusRate)
{
	SLUICE_REQUIRE_ROOT();
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || !CPU_ISSET(0, &allowed) ||
	    !CPU_ISSET(1, &allowed) || libbpf_num_possible_cpus() < 2)
		SLUICE_CANNOT_RUN("needs CPUs 0 and 1 (found " + std::to_string(CPU_COUNT(&allowed)) + " usable)");

	constexpr std::uint64_t kRate = 10000, kBurst = 1000;
	constexpr int kRepeat = 2'000'000; // per CPU
	Options o;
	o.config = make_config(kRate, kBurst);
	SLUICE_LOAD_OR_FAIL(s, o);
	const std::uint64_t cost = s.config().cost_ns;
	Bytes f = udp4({}, {.src = ip4("10.60.0.1")});

	Hammer h[2];
	std::atomic<int> ready{0};
	std::atomic<bool> go{false};
	auto body = [&](Hammer &me) {
		me.pinned = pin_to(me.cpu);
		ready++;
		while (!go.load())
			std::this_thread::yield(); // let the main thread (unpinned) run
		me.c0 = coarse_ns();
		me.t0 = mono_ns();
		me.result = s.run(f, kRepeat);
		me.t1 = mono_ns();
		me.c1 = coarse_ns();
		me.ran_on = sched_getcpu();
	};
	h[0].cpu = 0;
	h[1].cpu = 1;

	const std::uint64_t f0 = mono_ns();
	std::thread a(body, std::ref(h[0])), b(body, std::ref(h[1]));
	while (ready.load() < 2)
		std::this_thread::yield();
	go = true;
	a.join();
	b.join();
	const std::uint64_t f1 = mono_ns();

	for (const Hammer &x : h) {
		ASSERT_TRUE(x.pinned) << "sched_setaffinity to CPU " << x.cpu;
		EXPECT_EQ(x.ran_on, x.cpu);
		ASSERT_EQ(x.result.err, 0) << std::strerror(-x.result.err);
	}
	// The runs overlapped in time, or this tested nothing.
	std::uint64_t overlap_from = std::max(h[0].t0, h[1].t0), overlap_to = std::min(h[0].t1, h[1].t1);
	ASSERT_LT(overlap_from, overlap_to) << "the two runs did not overlap";

	Counters c = s.counters();
	std::vector<std::uint64_t> pass_cpu = s.per_cpu_packets(SLUICE_PASSED);
	std::vector<std::uint64_t> drop_cpu = s.per_cpu_packets(SLUICE_DROP_RATE);
	const std::uint64_t passed = c.packets(SLUICE_PASSED);
	// The interval the program's clock can have covered: its coarse readings
	// all lie between the first run's start and the last run's end, as read
	// on the same clock (CLOCK_MONOTONIC_COARSE = bpf_ktime_get_coarse_ns).
	const std::uint64_t c0 = std::min(h[0].c0, h[1].c0), c1 = std::max(h[0].c1, h[1].c1);
	const std::uint64_t elapsed = c1 - c0;
	const std::uint64_t bound = kBurst + elapsed / cost + 2; // + at most 1 per CPU
	std::printf("CONCURRENCY passed=%llu (cpu0 %llu, cpu1 %llu) dropped=%llu elapsed=%.3fms (wall %.3fms incl. thread start, "
		    "overlap %.3fms) bound=burst+rate*elapsed+2=%llu\n",
		    (unsigned long long)passed, (unsigned long long)pass_cpu[0], (unsigned long long)pass_cpu[1],
		    (unsigned long long)c.packets(SLUICE_DROP_RATE), elapsed / 1e6, (f1 - f0) / 1e6,
		    (overlap_to - overlap_from) / 1e6, (unsigned long long)bound);

	EXPECT_EQ(c.packets(SLUICE_PASSED) + c.packets(SLUICE_DROP_RATE), 2ull * kRepeat) << c.str();
	EXPECT_EQ(pass_cpu[0] + drop_cpu[0], std::uint64_t(kRepeat)); // each run stayed on its CPU
	EXPECT_EQ(pass_cpu[1] + drop_cpu[1], std::uint64_t(kRepeat));
	EXPECT_LE(passed, bound);
	EXPECT_GE(passed, kBurst);
	// Overlapping for long enough to refill hundreds of tokens, both CPUs were
	// admitted some: they really took turns on the same slots.
	if (overlap_to - overlap_from >= 50'000'000) {
		EXPECT_GT(pass_cpu[0], 0u);
		EXPECT_GT(pass_cpu[1], 0u);
	}
}
