"""Figure 11: the breaker against the flood's shape, before and after the
window rule (issue 28). A UDP flood from random spoofed sources (each far
under its own limit, so the buckets admit it all until the breaker sheds),
injected into the host's interface at a peak of 10x --trip-pps: steady,
bursty (on 0.3 s of every 0.7 s: a mean of 4.3x) and pulsed (0.2 s of every
1 s: 2x). For each: how long after the flood's start the breaker was seen
shedding (polled every 50 ms on the control socket; "never" when it was not
within the flood), and the share of the flood's frames admitted (passed,
newcomer, standing) over the flood. After: this tree's sluiced. Before: the
sluiced of the build in $SLUICE_BEFORE_BUILD (default /work/before/build,
commit 30d29e0, the consecutive-periods rule); the flood is this tree's
generator for both. Without that build the figure says so and measures the
after half alone."""

import dataclasses
import os
import time

import sluice_netns

from .procs import finish, last_json, log
from .rows import Rows, by_name

TRIP = 10000
ARGS = ("--rate", 5000, "--burst", 10000, "--period", 0.5, "--trip-pps", TRIP, "--trip-periods", 2,
        "--hold", 5, "--recovery", 5)
# (name, pulse on s, pulse every s); None: steady
SHAPES = (("steady", None, None), ("bursty", 0.3, 0.7), ("pulsed", 0.2, 1.0))
ADMITTED = ("passed", "newcomer", "standing", "allowlisted", "exempt", "cookie_proved")


def before_build():
    return os.environ.get("SLUICE_BEFORE_BUILD", "/work/before/build")


def builds(lab, figure):
    """[(which, sluiced, sluicectl)]: "before" (from before_build(), when it
    is there) then "after" (this tree's); figures 11 and 12 run both."""
    old = before_build()
    out = [("after", lab.sluiced, lab.sluicectl)]
    old_sluiced = os.path.join(old, "ctl", "sluiced", "sluiced")
    old_sluicectl = os.path.join(old, "ctl", "sluicectl", "sluicectl")
    if os.path.exists(old_sluiced) and os.path.exists(old_sluicectl):
        out.insert(0, ("before", old_sluiced, old_sluicectl))
    else:
        log(f"  figure {figure}: no before build at {old} (SLUICE_BEFORE_BUILD): after only")
    return out


def trip_name(which, shape):
    return f"shapes_{shape}_{which}_trip_s"


def share_name(which, shape):
    return f"shapes_{shape}_{which}_admitted_pct"


@dataclasses.dataclass
class Shapes:
    rows: list
    detail: list | None

    @classmethod
    def from_rows(cls, rows):
        return cls(rows, None)


def admitted(lab, d):
    c = lab.counters(d)
    return sum(sum(c.get(o, [])) for o in ADMITTED)


def one_flood(lab, sluiced, sluicectl, shape, on, every, seconds):
    """sluiced (the build given) on the host; the flood; (seconds to shed or
    None, % of the flood admitted, frames sent)."""
    sluice_netns.use_tools(sluiced, sluicectl, lab.traffic)
    try:
        with lab.daemon(*ARGS) as d:
            time.sleep(1.5)  # a serving window or two before the flood
            a0 = admitted(lab, d)
            args = ["--dst", lab.tb.host_ip4, "--random-src", "--pps", 10 * TRIP, "--duration", seconds]
            if on is not None:
                args += ["--pulse-on", on, "--pulse-every", every]
            t0 = time.monotonic()
            p = lab.flood(*args, background=True)
            tripped = None
            while p.poll() is None:
                if tripped is None and lab.breaker_state(d) == "shedding":
                    tripped = time.monotonic() - t0
                time.sleep(0.05)
            rc, out, err = finish(p, 30)
            sent = last_json(out)["sent"]
            time.sleep(0.3)
            a1 = admitted(lab, d)
            return tripped, 100.0 * (a1 - a0) / max(sent, 1), sent
    finally:
        sluice_netns.use_tools(lab.sluiced, lab.sluicectl, lab.traffic)


def measure(lab):
    log("figure 11: the breaker against steady, bursty and pulsed floods, before and after the window rule")
    seconds = 6 if lab.quick else 10
    rows = Rows(11)
    detail = []
    bound = 2 * 0.5 + 0.5
    for shape, on, every in SHAPES:
        got = {}
        for which, sluiced, sluicectl in builds(lab, 11):
            tripped, pct, sent = one_flood(lab, sluiced, sluicectl, shape, on, every, seconds)
            got[which] = (tripped, pct)
            detail.append({"shape": shape, "build": which, "trip_s": tripped, "admitted_pct": pct, "sent": sent,
                           "seconds": seconds})
            mean = 10 * TRIP * (on / every if on else 1)
            rows.add(trip_name(which, shape), "s", None if tripped is None else round(tripped, 2), bound,
                     "the rule's bound: trip-periods x period + one period",
                     note=f"{shape}: peak 10x trip-pps, mean {mean / TRIP:.1f}x, {seconds} s, {sent} frames sent; "
                          + ("never seen shedding within the flood" if tripped is None else
                             "first seen shedding (50 ms polls, from before the generator started)"))
            rows.add(share_name(which, shape), "% of flood frames", round(pct, 1), 100.0,
                     "every frame of the flood", note=f"{shape}: passed, newcomer, standing over the flood")
    return Shapes(rows, detail)
