"""Figure 6: collateral damage, two choices against one, by
BPF_PROG_TEST_RUN with the clock taken out (sluice-bench collateral): the
share of legitimate sources that lose frames beside h heavy ones."""

import dataclasses
import math

from .procs import last_json, log, run
from .rows import Rows, by_name, median

SLOTS = 262144
HEAVY_FRACTIONS = (0.01, 0.1, 0.5)


def pct_text(frac):
    return f"{frac * 100:g}"


def one_choice_name(frac):
    return f"collateral_h{pct_text(frac)}pct_one_choice"


def two_choices_name(frac):
    return f"collateral_h{pct_text(frac)}pct_two_choices"


@dataclasses.dataclass
class Point:
    """One heavy fraction: the measured shares, each row's baseline the
    prediction (h/N for one choice, (2h/N)^2 for two)."""
    heavy_pct: str
    one_choice: object
    two_choices: object


@dataclasses.dataclass
class Collateral:
    rows: list
    detail: list | None
    points: list        # of Point, by heavy fraction, ascending

    @classmethod
    def from_rows(cls, rows):
        get = by_name(rows)
        return cls(rows, None, [Point(pct_text(f), get.get(one_choice_name(f)), get.get(two_choices_name(f)))
                                for f in HEAVY_FRACTIONS])


def measure(lab):
    log("figure 6: collateral damage, two choices vs one (BPF_PROG_TEST_RUN, clock taken out)")
    repeats = 1 if lab.quick else 3
    legit = 10000
    outs = []
    for rep in range(repeats):
        outs.append(last_json(run([lab.bench_tool, "collateral", "--obj", lab.obj("sluice_bpf"), "--slots",
                                   SLOTS, "--legit", legit, "--heavy-frac", ",".join(map(str, HEAVY_FRACTIONS)),
                                   "--seed", 1000 + rep], timeout=900).stdout))
    rows = Rows(6)
    points = []
    for f in HEAVY_FRACTIONS:
        one = median([r["share"] for o in outs for r in o["runs"] if r["heavy_frac"] == f and r["one_choice"]])
        two = median([r["share"] for o in outs for r in o["runs"] if r["heavy_frac"] == f and not r["one_choice"]])
        pct = pct_text(f)
        exact1 = 1 - math.exp(-f)
        exact2 = (1 - math.exp(-2 * f)) ** 2
        r1 = rows.add(one_choice_name(f), "% of legit sources", 100 * one, 100 * f, "h/N",
                      note=f"h = {f * SLOTS:.0f} heavy in N = {SLOTS} slots, {legit} legitimate at half their limit;"
                           f" occupancy prediction 1-e^(-h/N) = {100 * exact1:.3g}%")
        r2 = rows.add(two_choices_name(f), "% of legit sources", 100 * two, 100 * (2 * f) ** 2, "(2h/N)^2",
                      note=f"occupancy prediction (1-e^(-2h/N))^2 = {100 * exact2:.3g}%; h/N = {pct}%")
        rows.add(f"collateral_h{pct}pct_two_vs_one", "% of legit sources", 100 * two, 100 * one,
                 "one choice, measured")
        points.append(Point(pct, r1, r2))
    return Collateral(rows, outs, points)
