// --rt-priority's bound, for real: a loop at SCHED_FIFO that spins without
// blocking is put back to SCHED_OTHER by RLIMIT_RTTIME's SIGXCPU, not left
// to hold a CPU (and not killed by the hard limit). Run in a child process,
// so the test's own scheduling and limits stay as they were; skipped where
// the kernel refuses real-time priority (no CAP_SYS_NICE, RLIMIT_RTPRIO 0).
#include "sluiced/scheduling.h"

#include "base/limits.h"

#include <gtest/gtest.h>

#include <ctime>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice {
namespace {

constexpr int kSkip = 77;

double cpu_seconds()
{
	timespec t{};
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

TEST(Scheduling, ASpinningRealTimeLoopIsDemotedNotLeftHoldingTheCpu)
{
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		if (auto ok = raise_loop_priority(1); !ok)
			_exit(kSkip);
		SchedulingView before = loop_scheduling(1);
		if (before.policy != "fifo" || before.priority != 1 || before.rttime_limit_s != kRtTimeSoftS)
			_exit(2);
		// Spin without a blocking call until demoted, or well past the
		// soft limit's CPU time (the hard limit would kill us first).
		double start = cpu_seconds();
		while (sched_getscheduler(0) != SCHED_OTHER && cpu_seconds() - start < 3 * kRtTimeSoftS) {
		}
		double spun = cpu_seconds() - start;
		SchedulingView after = loop_scheduling(1);
		if (after.policy != "other" || !after.demoted || !take_demotion() || take_demotion())
			_exit(3);
		// Demoted at the soft limit (the kernel checks it on its tick).
		_exit(spun >= 0.8 * kRtTimeSoftS && spun < kRtTimeHardS ? 0 : 4);
	}
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status)
				       << " (the hard limit: the soft one did not demote it)";
	if (WEXITSTATUS(status) == kSkip)
		GTEST_SKIP() << "SCHED_FIFO refused here (no CAP_SYS_NICE, RLIMIT_RTPRIO 0)";
	EXPECT_EQ(WEXITSTATUS(status), 0) << "2: not fifo 1 with the soft limit set; 3: not demoted or not "
					     "told once; 4: demoted outside the soft limit's CPU time";
}

} // namespace
} // namespace sluice
