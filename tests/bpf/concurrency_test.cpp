// Two CPUs updating one source's slots at once: the compare-and-swap in
// bucket.h must keep the admissions within burst + rate x interval.
#include "cpu_pin.h"
#include "fixture.h"
#include "require.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>
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
	std::uint64_t c0 = 0, c1 = 0; // the program's clock around it
};

// Both CPUs run `repeat` frames of f at once, each thread pinned to its CPU;
// false (with the test failed) if they did not.
bool hammer_both(Sluice &s, const Bytes &f, int repeat, Hammer (&h)[2])
{
	std::atomic<int> ready{0};
	std::atomic<bool> go{false};
	auto body = [&](Hammer &me) {
		me.pinned = pin_to(me.cpu);
		ready++;
		while (!go.load())
			std::this_thread::yield();
		me.c0 = dataplane_ns();
		me.t0 = mono_ns();
		me.result = s.run(f, repeat);
		me.t1 = mono_ns();
		me.c1 = dataplane_ns();
		me.ran_on = sched_getcpu();
	};
	h[0].cpu = 0;
	h[1].cpu = 1;
	std::thread a(body, std::ref(h[0])), b(body, std::ref(h[1]));
	while (ready.load() < 2)
		std::this_thread::yield();
	go = true;
	a.join();
	b.join();
	for (const Hammer &x : h) {
		EXPECT_TRUE(x.pinned) << "sched_setaffinity to CPU " << x.cpu;
		EXPECT_EQ(x.ran_on, x.cpu);
		EXPECT_EQ(x.result.err, 0) << std::strerror(-x.result.err);
	}
	EXPECT_LT(std::max(h[0].t0, h[1].t0), std::min(h[0].t1, h[1].t1)) << "the two runs did not overlap";
	return !::testing::Test::HasFailure();
}

bool two_cpus_usable(std::string *why)
{
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || !CPU_ISSET(0, &allowed) ||
	    !CPU_ISSET(1, &allowed) || libbpf_num_possible_cpus() < 2) {
		*why = "needs CPUs 0 and 1 (found " + std::to_string(CPU_COUNT(&allowed)) + " usable)";
		return false;
	}
	return true;
}

// Each CPU's lease entry for the pair of src (bucket.h, "Leases").
std::vector<sluice_lease> leases_of(Sluice &s, const Ip4 &src)
{
	const sluice_slot_pair p = s.slots_of(src);
	const __u32 key = p.a & (SLUICE_LEASE_ENTRIES - 1);
	std::vector<sluice_lease> per(libbpf_num_possible_cpus());
	EXPECT_EQ(bpf_map_lookup_elem(s.map_fd(s.skel()->maps.leases), &key, per.data()), 0);
	return per;
}

} // namespace

TEST(Concurrency, TwoCpusHammeringOneSlotStayWithinBurstPlusRate)
{
	SLUICE_REQUIRE_ROOT();
	std::string why;
	if (!two_cpus_usable(&why))
		SLUICE_CANNOT_RUN(why);

	constexpr std::uint64_t kRate = 10000, kBurst = 1000;
	constexpr int kRepeat = 2'000'000; // per CPU
	Options o;
	o.config = make_config(kRate, kBurst);
	SLUICE_LOAD_OR_FAIL(s, o);
	const std::uint64_t cost = s.config().cost_ns;
	Bytes f = udp4({}, {.src = ip4("10.60.0.1")});

	Hammer h[2];
	ASSERT_TRUE(hammer_both(s, f, kRepeat, h));
	Counters c = s.counters();
	std::vector<std::uint64_t> pass_cpu = s.per_cpu_packets(SLUICE_PASSED);
	std::vector<std::uint64_t> drop_cpu = s.per_cpu_packets(SLUICE_DROP_RATE);
	const std::uint64_t passed = c.packets(SLUICE_PASSED);
	// The interval the program's clock can have covered: its readings all
	// lie between the first run's start and the last run's end, as read on
	// the same clock (the clock probe's, clock/dataplane_clock.h).
	const std::uint64_t c0 = std::min(h[0].c0, h[1].c0), c1 = std::max(h[0].c1, h[1].c1);
	const std::uint64_t elapsed = c1 - c0;
	const std::uint64_t bound = kBurst + elapsed / cost + 2; // + at most 1 per CPU
	const std::uint64_t overlap_from = std::max(h[0].t0, h[1].t0), overlap_to = std::min(h[0].t1, h[1].t1);
	std::printf("CONCURRENCY passed=%llu (cpu0 %llu, cpu1 %llu) dropped=%llu elapsed=%.3fms (overlap %.3fms) "
		    "bound=burst+rate*elapsed+2=%llu\n",
		    (unsigned long long)passed, (unsigned long long)pass_cpu[0], (unsigned long long)pass_cpu[1],
		    (unsigned long long)c.packets(SLUICE_DROP_RATE), elapsed / 1e6, (overlap_to - overlap_from) / 1e6,
		    (unsigned long long)bound);

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

// Issue 29 item 5: one source within its limit on two CPUs at once, every
// frame paying its pair. Before leases a frame that lost its swap
// SLUICE_CAS_TRIES times was dropped (drop_rate, 0.5-12% of such a source's
// frames in figure 13); with them the CPU that loses a swap leases a batch
// and admits its next frames from it, so (nearly) every frame of the source
// passes, and each CPU's entry leases the pair.
TEST(Concurrency, TwoCpusLeasingAlmostNeverDropAWithinLimitSource)
{
	SLUICE_REQUIRE_ROOT();
	std::string why;
	if (!two_cpus_usable(&why))
		SLUICE_CANNOT_RUN(why);
	constexpr std::uint64_t kRate = SLUICE_RATE_MAX, kBurst = SLUICE_BURST_MAX;
	constexpr int kRepeat = 2'000'000; // per CPU: 4,000,000, under burst + rate x 30 ms
	Options o;
	o.config = make_config(kRate, kBurst);
	SLUICE_LOAD_OR_FAIL(s, o);
	const Ip4 src = ip4("10.60.0.2");
	Bytes f = udp4({}, {.src = src});

	Hammer h[2];
	ASSERT_TRUE(hammer_both(s, f, kRepeat, h));
	Counters c = s.counters();
	const std::vector<sluice_lease> l = leases_of(s, src);
	const __u64 pair = sluice_lease_pair(s.slots_of(src).a, s.slots_of(src).b);
	std::printf("LEASES passed=%llu dropped=%llu overlap=%.3fms cpu0 lease %s (%llu left) cpu1 lease %s (%llu left)\n",
		    (unsigned long long)c.packets(SLUICE_PASSED), (unsigned long long)c.packets(SLUICE_DROP_RATE),
		    (std::min(h[0].t1, h[1].t1) - std::max(h[0].t0, h[1].t0)) / 1e6, l[0].pair == pair ? "yes" : "no",
		    (unsigned long long)l[0].tokens, l[1].pair == pair ? "yes" : "no", (unsigned long long)l[1].tokens);
	// Nearly none: a frame whose CPU loses SLUICE_CAS_TRIES swaps in a row
	// (now only when both CPUs take their batches at once) is still dropped;
	// 1 of 4,000,000 was seen in 3 runs of 14 here (0 in the others), against 20,000 to
	// 480,000 (0.5-12%) without leases.
	EXPECT_LE(c.packets(SLUICE_DROP_RATE), 10u) << c.str();
	EXPECT_EQ(c.packets(SLUICE_PASSED) + c.packets(SLUICE_DROP_RATE), 2ull * kRepeat) << c.str();
	// The new path ran: a CPU that lost a swap leased the pair. (Both runs
	// overlapped; on two CPUs swapping one pair at this pace each loses
	// swaps within microseconds.)
	const __u64 batch = sluice_lease_batch(kBurst);
	for (int cpu : {0, 1}) {
		EXPECT_EQ(l[cpu].pair, pair) << "CPU " << cpu << " never leased";
		EXPECT_LT(l[cpu].tokens, batch) << "CPU " << cpu;
	}
}

// The exact bound with leases in play: one source over its limit hammered from
// both CPUs at 1,000,000/s (each 4 ms tick brings 4,000 tokens both CPUs'
// leases race for), burst 1,000,000 (a batch of 32): the admitted count is at
// most burst + elapsed / cost with no tolerance, since a leased token was
// taken from the pair when leased; and the leases stranded at the end are at
// most (batch - 1) a CPU, so the count is at least the bound less those and
// the ticks the readings around the runs may have seen and no frame. The
// burst is a second of the rate, longer than the runs, so that a pause of
// both threads (ctest -j 2 runs another test beside this one: a burst of
// 20 ms once lost 60 ms of refill that way) loses no refill to the cap.
TEST(Concurrency, TwoCpusLeasingStayWithinTheExactBound)
{
	SLUICE_REQUIRE_ROOT();
	std::string why;
	if (!two_cpus_usable(&why))
		SLUICE_CANNOT_RUN(why);
	constexpr std::uint64_t kRate = 1'000'000, kBurst = 1'000'000;
	constexpr int kRepeat = 3'000'000; // per CPU
	Options o;
	o.config = make_config(kRate, kBurst);
	SLUICE_LOAD_OR_FAIL(s, o);
	const std::uint64_t cost = s.config().cost_ns;
	const Ip4 src = ip4("10.60.0.3");
	Bytes f = udp4({}, {.src = src});

	Hammer h[2];
	ASSERT_TRUE(hammer_both(s, f, kRepeat, h));
	Counters c = s.counters();
	const std::uint64_t passed = c.packets(SLUICE_PASSED);
	const std::uint64_t c0 = std::min(h[0].c0, h[1].c0), c1 = std::max(h[0].c1, h[1].c1);
	const std::uint64_t bound = kBurst + (c1 - c0) / cost;
	const std::vector<sluice_lease> l = leases_of(s, src);
	const __u64 pair = sluice_lease_pair(s.slots_of(src).a, s.slots_of(src).b);
	const __u64 batch = sluice_lease_batch(kBurst);
	std::printf("LEASES passed=%llu dropped=%llu bound=burst+elapsed/cost=%llu elapsed=%.3fms stranded %llu+%llu\n",
		    (unsigned long long)passed, (unsigned long long)c.packets(SLUICE_DROP_RATE),
		    (unsigned long long)bound, (c1 - c0) / 1e6, (unsigned long long)l[0].tokens,
		    (unsigned long long)l[1].tokens);
	EXPECT_EQ(passed + c.packets(SLUICE_DROP_RATE), 2ull * kRepeat) << c.str();
	EXPECT_LE(passed, bound);
	EXPECT_LE(passed + l[0].tokens + l[1].tokens, bound) << "taken from the pair";
	// Under it only by the leases left and three ticks, counted over the
	// time frames ran: the kernel's own measure of each run's loop (duration
	// x repeat, pauses to reschedule left out), not our readings around the
	// runs. Those also hold what BPF_PROG_TEST_RUN does before the first
	// frame and after the last: with repeat > 1 it puts the program into
	// the XDP dispatcher and takes it out again (bpf_prog_change_xdp, an
	// RCU grace period each), 16-28 ms on one 2-CPU VM, where no frame
	// takes the refill the readings count. Figure 13 saw 1-3 ticks short
	// against the readings on a faster one, 5-7 here.
	const std::uint64_t ran = std::max(std::uint64_t(h[0].result.duration), std::uint64_t(h[1].result.duration)) *
				  std::uint64_t(kRepeat);
	std::printf("LEASES frames ran %.3f ms by the kernel's count (the longer run)\n", ran / 1e6);
	EXPECT_GE(passed + 2 * (batch - 1) + 3 * tick_ns() / cost, kBurst + ran / cost)
		<< "under-admitted past the stranded leases and three ticks";
	for (int cpu : {0, 1})
		EXPECT_EQ(l[cpu].pair, pair) << "CPU " << cpu << " never leased";
}
