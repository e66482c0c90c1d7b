#include "sluiced/scheduling.h"

#include "base/limits.h"

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sluice {

namespace {

// Written before the handler is installed, read in it.
pid_t g_loop_tid = 0;
volatile sig_atomic_t g_demoted = 0;
std::atomic<bool> g_demotion_unlogged{false};
double g_rttime_soft_s = 0;

// SIGXCPU: the loop ran kRtTimeSoftS at real-time priority without blocking.
// Back to SCHED_OTHER (a system call, safe here); the hard limit's SIGKILL
// stays the bound should this fail.
void on_xcpu(int)
{
	sched_param p{};
	p.sched_priority = 0;
	if (g_loop_tid && syscall(SYS_sched_setscheduler, g_loop_tid, SCHED_OTHER, &p) == 0) {
		g_demoted = 1;
		g_demotion_unlogged = true;
	}
}

Status set_fifo(uint32_t priority)
{
	sched_param p{};
	p.sched_priority = static_cast<int>(priority);
	// RESET_ON_FORK: a child (gobgp's CLI, --upstream) runs at normal
	// priority, not the loop's.
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &p) == 0)
		return {};
	int e = errno;
	rlimit rt{};
	getrlimit(RLIMIT_RTPRIO, &rt);
	return fail(ErrorKind::system,
		    "--rt-priority " + std::to_string(priority) + ": SCHED_FIFO refused: " + std::strerror(e) +
			    " (RLIMIT_RTPRIO is " + std::to_string(rt.rlim_cur) +
			    "); it needs CAP_SYS_NICE or RLIMIT_RTPRIO >= the priority (systemd: LimitRTPRIO=, and no "
			    "RestrictRealtime=yes); --rt-priority 0 runs without it",
		    e);
}

Status set_other()
{
	sched_param p{};
	if (sched_setscheduler(0, SCHED_OTHER, &p) == 0)
		return {};
	return fail(ErrorKind::system, std::string("--rt-priority: back to SCHED_OTHER: ") + std::strerror(errno), errno);
}

} // namespace

Status probe_loop_priority(uint32_t priority)
{
	if (priority == 0)
		return {};
	if (auto ok = set_fifo(priority); !ok)
		return ok;
	return set_other();
}

Status raise_loop_priority(uint32_t priority)
{
	if (priority == 0)
		return {};
	rlimit now{};
	if (getrlimit(RLIMIT_RTTIME, &now) != 0)
		return fail(ErrorKind::system, std::string("--rt-priority: reading RLIMIT_RTTIME: ") + std::strerror(errno),
			    errno);
	// Microseconds of CPU at real-time priority without a blocking call.
	rlim_t soft = static_cast<rlim_t>(kRtTimeSoftS * 1e6), hard = static_cast<rlim_t>(kRtTimeHardS * 1e6);
	if (now.rlim_max != RLIM_INFINITY && now.rlim_max < hard)
		hard = now.rlim_max;
	soft = std::min(soft, hard);
	rlimit want{soft, hard};
	if (setrlimit(RLIMIT_RTTIME, &want) != 0)
		return fail(ErrorKind::system, std::string("--rt-priority: setting RLIMIT_RTTIME: ") + std::strerror(errno),
			    errno);
	g_rttime_soft_s = double(soft) / 1e6;
	g_loop_tid = static_cast<pid_t>(syscall(SYS_gettid));
	struct sigaction sa {};
	sa.sa_handler = on_xcpu;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGXCPU, &sa, nullptr) != 0)
		return fail(ErrorKind::system, std::string("--rt-priority: SIGXCPU handler: ") + std::strerror(errno), errno);
	return set_fifo(priority);
}

SchedulingView loop_scheduling(uint32_t asked)
{
	SchedulingView v;
	v.asked = static_cast<int>(asked);
	int policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
	v.policy = policy == SCHED_FIFO ? "fifo" : policy == SCHED_RR ? "rr" : "other";
	sched_param p{};
	if (sched_getparam(0, &p) == 0)
		v.priority = p.sched_priority;
	errno = 0;
	v.nice = getpriority(PRIO_PROCESS, 0);
	v.rttime_limit_s = g_rttime_soft_s;
	v.demoted = g_demoted != 0;
	return v;
}

bool take_demotion()
{
	return g_demotion_unlogged.exchange(false);
}

} // namespace sluice
