"""python3 -m bench (from scripts/, as scripts/bench.sh runs it): measure the
figures asked for, write results.json (and --json FILE), then the report."""

import argparse
import datetime
import json
import os
import signal
import sys
import time
import traceback

from . import ROOT, __doc__ as package_doc
from . import (fig1_cost, fig2_flood, fig3_full_table, fig4_accuracy, fig5_memory, fig6_collateral,
               fig7_control, fig8_standing, fig9_classes, fig10_cookies, fig11_shapes, fig12_trust,
               fig13_contention, report)
from .lab import Lab
from .procs import kill_all, log
from .rows import Row

# Figure number: its module (measure(lab) returns its typed result).
FIGURES = {1: fig1_cost, 2: fig2_flood, 3: fig3_full_table, 4: fig4_accuracy, 5: fig5_memory,
           6: fig6_collateral, 7: fig7_control, 8: fig8_standing,
           9: fig9_classes, 10: fig10_cookies, 11: fig11_shapes, 12: fig12_trust,
           13: fig13_contention}
# A figure's name, for --only: its module's, less "figN_" (standing: 8).
NAMES = {m.__name__.rsplit(".", 1)[-1].split("_", 1)[1]: n for n, m in FIGURES.items()}


def figures_asked(text):
    """--only's list: numbers or names (--only 8, --only standing, --only 1,standing)."""
    asked = set()
    for x in (t.strip() for t in text.split(",")):
        if not x:
            continue
        n = int(x) if x.isdigit() else NAMES.get(x)
        if n not in FIGURES:
            raise SystemExit(f"bench: --only: no figure '{x}' (1-{max(FIGURES)} or {', '.join(NAMES)})")
        asked.add(n)
    return asked
# The figures the chart draws, in its order, each as its typed result.
CHARTED = {1: fig1_cost.Cost, 2: fig2_flood.FloodAbsorption, 3: fig3_full_table.FullTable,
           6: fig6_collateral.Collateral}


def charted(results, rows):
    """The chart's figures: measured in this run, or rebuilt from their rows
    (none: every value 0)."""
    return [results[n] if n in results else kind.from_rows([r for r in rows if r.figure == n])
            for n, kind in CHARTED.items()]


def main():
    ap = argparse.ArgumentParser(prog="bench", description=package_doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--from-json", help="measure nothing: render the table, chart and docs from a results.json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--out", required=True, help="results directory (bench/results/<stamp>)")
    ap.add_argument("--update-docs", action="store_true")
    ap.add_argument("--command", default="scripts/bench.sh")
    ap.add_argument("--only", default=",".join(str(n) for n in FIGURES),
                    help="figures to run, by number or name (debugging)")
    a = ap.parse_args()

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    os.makedirs(a.out, exist_ok=True)
    if a.from_json:
        return render_only(a)
    lab = Lab(a.build, a.quick)
    t0 = time.monotonic()
    load0 = open("/proc/loadavg").read().split()[:3]
    only = figures_asked(a.only)
    results, timing = {}, {}
    rc = 0
    try:
        lab.setup_acc()
        for n, module in FIGURES.items():
            if n in only:
                tf = time.monotonic()
                results[n] = module.measure(lab)
                timing[f"fig{n}"] = round(time.monotonic() - tf, 1)
                log(f"figure {n} took {timing[f'fig{n}']:.0f} s")
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Exception as e:  # report what was measured so far, then fail
        traceback.print_exc()
        log(f"failed: {e}")
        rc = 1
    finally:
        kill_all()
        lab.teardown_acc()
    wall = time.monotonic() - t0
    rows = [r for n in sorted(results) for r in results[n].rows]
    meta = {"mode": "quick" if a.quick else "full", "command": a.command, "wall_seconds": wall,
            "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "loadavg_start": load0, "machine": report.machine(lab.xdpfilt), "complete": rc == 0,
            "seconds_per_figure": timing}
    doc = {"meta": meta, "results": [r.to_json() for r in rows],
           "detail": {f"fig{n}": results[n].detail for n in sorted(results)}}
    for path in [os.path.join(a.out, "results.json")] + ([a.json] if a.json else []):
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
    report.publish(a.out, rows, charted(results, rows), meta, a.quick, a.update_docs, rc)
    return rc


def render_only(a):
    with open(a.from_json) as f:
        doc = json.load(f)
    rows = [Row.from_json(r) for r in doc["results"]]
    report.publish(a.out, rows, charted({}, rows), doc["meta"], doc["meta"]["mode"] == "quick", a.update_docs, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
