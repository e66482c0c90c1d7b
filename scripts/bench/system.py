"""CPU time and memory as the kernel counts them (/proc), and the exact
NET_RX softirq clock (sluice-bench netrx)."""

import json
import os
import subprocess

import sluice_netns

from .procs import end_with_stdin, spawn

CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
FLOOD_CPU = str(NCPU - 1)          # the generator and, on veth, the receive path
OTHER_CPU = "0"                    # probe and sink (the legitimate side)


def softirq_ticks():
    """Softirq time of every CPU, in ticks (/proc/stat: sampled)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                return int(line.split()[7])
    return 0


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def rss_bytes(pid):
    """VmRSS of a process in bytes, or None once it is gone."""
    try:
        return sluice_netns.vm_rss_kib(pid) * 1024
    except (OSError, AssertionError):
        return None


def task_runtime_s(pid):
    """Exact runtime of a task (schedstat), in seconds."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat" if os.path.exists(f"/proc/{pid}/task/{pid}") else
                  f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except OSError:
        return 0.0


def proc_cpu_s(pid):
    """Exact runtime of every thread of a process (schedstat), in seconds."""
    total = 0.0
    for t in os.listdir(f"/proc/{pid}/task"):
        total += task_runtime_s(t)
    return total


def ksoftirqd_pid(cpu):
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() == f"ksoftirqd/{cpu}":
                        return int(d)
            except OSError:
                pass
    return None


class NetRxClock:
    """NET_RX softirq time summed over every CPU, exact, in ns: a BPF program
    on the softirq tracepoints (sluice-bench netrx), read on demand."""

    def __init__(self, bench_tool, obj):
        self.proc = spawn([bench_tool, "netrx", "--obj", obj], stdin=subprocess.PIPE, stderr=None)
        self.ns()

    def ns(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("sluice-bench netrx ended")
        return json.loads(line)["ns"]

    def close(self):
        end_with_stdin(self.proc, 10)
