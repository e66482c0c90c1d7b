"""Figure 4: accuracy. One source at 10x its limit on the two-queue pair,
flooding from one CPU and from both: frames admitted against the ideal
burst + rate x t."""

import dataclasses
import time

from .procs import log
from .rows import Rows, median
from .system import FLOOD_CPU, NCPU


@dataclasses.dataclass
class Accuracy:
    rows: list
    detail: dict | None


def measure(lab):
    log("figure 4: accuracy, one source at 10x its limit")
    seconds = 3 if lab.quick else 10
    repeats = 1 if lab.quick else 3
    rate, burst = 10000, 20000
    res = {"one_cpu": [], "two_cpus": []}
    with lab.daemon(iface=lab.acc_if, sock_name="acc.sock") as d:
        n = 0
        for rep in range(repeats):
            for mode, cpus, threads in (("one_cpu", FLOOD_CPU, 1), ("two_cpus", f"0-{NCPU - 1}", 2)):
                n += 1
                src = f"198.18.250.{n}"
                c0 = lab.counters(d)
                f = lab.flood("--dst", lab.acc_ip4, "--src", src, "--pps", 10 * rate, "--duration", seconds,
                              "--threads", threads, iface=lab.acc_peer, mac=lab.acc_mac, cpus=cpus)
                time.sleep(0.3)
                c1 = lab.counters(d)
                passed_cpu = [b - a for a, b in zip(c0["passed"], c1["passed"])]
                seen_cpu = [sum(c1[k][i] - c0[k][i] for k in ("passed", "drop_rate")) for i in range(len(c1["passed"]))]
                passed = sum(passed_cpu)
                # The paced schedule: frame i leaves at t0 + i / R (each
                # thread at R / threads), so the frames span sent / R.
                span = f["sent"] / (10 * rate)
                ideal = burst + rate * span
                share = min(seen_cpu) / max(1, sum(seen_cpu)) if len(seen_cpu) > 1 else 0
                r = {"sent": f["sent"], "seconds": f["seconds"], "span": span, "passed": passed, "ideal": ideal,
                     "error_pct": 100.0 * (passed - ideal) / ideal, "frames_per_cpu": seen_cpu,
                     "smaller_cpu_share": share}
                res[mode].append(r)
                log(f"  {mode} rep {rep}: {r}")
    rows = Rows(4)
    for mode, label in (("one_cpu", "flood on one CPU"), ("two_cpus", "flood spread over both CPUs")):
        rs = res[mode]
        err = median([r["error_pct"] for r in rs])
        share = median([r["smaller_cpu_share"] for r in rs])
        rows.add(f"accuracy_{mode}", "frames admitted", median([r["passed"] for r in rs]),
                 median([r["ideal"] for r in rs]), "ideal burst + rate x t",
                 samples=[r["passed"] for r in rs],
                 note=f"{label}, {seconds} s at 10x: error {err:+.3f}%"
                      + (f"; the less busy CPU ran {100 * share:.0f}% of the frames" if mode == "two_cpus" else ""))
    return Accuracy(rows, {"seconds": seconds, "limit": [rate, burst], "runs": res})
