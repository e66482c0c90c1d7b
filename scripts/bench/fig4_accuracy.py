"""Figure 4: accuracy. One source at 10x its limit on the two-queue pair,
flooding from one CPU and from both: frames admitted against the ideal
burst + rate x t, sluice (one CAS per slot) against the hand-written
LRU-hash limiter (a read-modify-write without atomics)."""

import dataclasses
import time

from . import baselines
from .procs import log
from .rows import Rows, median
from .system import FLOOD_CPU, NCPU

LIMITERS = (("sluice", "sluice"), ("lru", "LRU-hash limiter"))
MODES = (("one_cpu", "flood on one CPU"), ("two_cpus", "flood spread over both CPUs"))


def accuracy_name(limiter, mode):
    return f"accuracy_{mode}" if limiter == "sluice" else f"accuracy_{limiter}_{mode}"


@dataclasses.dataclass
class Accuracy:
    rows: list
    detail: dict | None


def measure(lab):
    log("figure 4: accuracy, one source at 10x its limit")
    seconds = 3 if lab.quick else 10
    repeats = 1 if lab.quick else 3
    rate, burst = 10000, 20000
    res = {lim: {"one_cpu": [], "two_cpus": []} for lim, _ in LIMITERS}
    n = 0

    def runs(limiter, counters):
        """Flood one source per run; counters() -> (passed, seen) per CPU."""
        nonlocal n
        for rep in range(repeats):
            for mode, cpus, threads in (("one_cpu", FLOOD_CPU, 1), ("two_cpus", f"0-{NCPU - 1}", 2)):
                n += 1
                src = f"198.18.250.{n}"
                p0, s0 = counters()
                f = lab.flood("--dst", lab.acc_ip4, "--src", src, "--pps", 10 * rate, "--duration", seconds,
                              "--threads", threads, iface=lab.acc_peer, mac=lab.acc_mac, cpus=cpus)
                time.sleep(0.3)
                p1, s1 = counters()
                passed = sum(b - a for a, b in zip(p0, p1))
                seen_cpu = [b - a for a, b in zip(s0, s1)]
                # The paced schedule: frame i leaves at t0 + i / R (each
                # thread at R / threads), so the frames span sent / R.
                span = f["sent"] / (10 * rate)
                ideal = burst + rate * span
                share = min(seen_cpu) / max(1, sum(seen_cpu)) if len(seen_cpu) > 1 else 0
                r = {"sent": f["sent"], "seconds": f["seconds"], "span": span, "passed": passed, "ideal": ideal,
                     "error_pct": 100.0 * (passed - ideal) / ideal, "frames_per_cpu": seen_cpu,
                     "smaller_cpu_share": share}
                res[limiter][mode].append(r)
                log(f"  {limiter} {mode} rep {rep}: {r}")

    with lab.daemon(iface=lab.acc_if, sock_name="acc.sock") as d:
        def sluice_counters():
            c = lab.counters(d)
            return c["passed"], [a + b for a, b in zip(c["passed"], c["drop_rate"])]
        runs("sluice", sluice_counters)
    with baselines.lru(lab, rate, burst, 32768, iface=lab.acc_if) as lru:
        def lru_counters():
            c = lru.counters()
            return c["passed"], [a + b for a, b in zip(c["passed"], c["dropped"])]
        runs("lru", lru_counters)
    rows = Rows(4)
    for limiter, lname in LIMITERS:
        for mode, label in MODES:
            rs = res[limiter][mode]
            err = median([r["error_pct"] for r in rs])
            share = median([r["smaller_cpu_share"] for r in rs])
            # sluice on two CPUs: within 1% of the ideal (issue 13's floor);
            # the baseline's error is reported beside it.
            floor = ("within", 0.01) if (limiter, mode) == ("sluice", "two_cpus") else None
            rows.add(accuracy_name(limiter, mode), "frames admitted", median([r["passed"] for r in rs]),
                     median([r["ideal"] for r in rs]), "ideal burst + rate x t", floor=floor,
                     samples=[r["passed"] for r in rs],
                     note=f"{lname}, {label}, {seconds} s at 10x: error {err:+.3f}%"
                          + (f"; the less busy CPU ran {100 * share:.0f}% of the frames"
                             if mode == "two_cpus" else ""))
    return Accuracy(rows, {"seconds": seconds, "limit": [rate, burst], "runs": res})
