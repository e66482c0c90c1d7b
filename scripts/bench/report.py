"""The report of a run: the table on stdout, results.md, the chart
(gnuplot) and, from a complete run, the generated part of docs/benchmarks.md
and docs/benchmarks.png."""

import contextlib
import datetime
import os
import platform
import shutil

from . import ROOT
from .procs import log, run
from .system import NCPU, meminfo

DOC_BEGIN, DOC_END = "<!-- bench.sh results: begin -->", "<!-- bench.sh results: end -->"


def machine(xdp_filter_object):
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ver = lambda *c: (run(list(c), check=False).stdout.strip().splitlines() or [""])[0]
    debian = ""
    with contextlib.suppress(OSError):
        debian = open("/etc/debian_version").read().strip()
    return {
        "kernel": platform.release(), "cpu": cpu, "cpus": NCPU,
        "memory_gib": round(meminfo("MemTotal") / 2**30, 1), "debian": debian,
        "loadavg": open("/proc/loadavg").read().split()[:3],
        "nft": ver("nft", "--version"), "iptables": ver("iptables", "--version"),
        "xdp_tools": ver("dpkg-query", "-W", "-f=${Version}", "xdp-tools"),
        "xdp_filter_object": xdp_filter_object,
    }


def table(rows):
    lines = [f"{'fig':>3}  {'name':<52} {'value':>14} {'baseline':>14} {'ratio':>8}  floor"]
    fmt = lambda v: "-" if v is None else (f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}")
    for r in rows:
        fl = "" if r.floor is None else (str(r.floor) + (" ok" if r.floor_met else " MISSED"))
        lines.append(f"{r.figure:>3}  {r.name:<52} {fmt(r.value):>14} {fmt(r.baseline):>14} "
                     f"{fmt(r.ratio):>8}  {fl}")
    return "\n".join(lines)


def markdown(rows, meta):
    m = meta["machine"]
    out = []
    out.append(f"Measured {meta['finished']} by `{meta['command']}` ({meta['mode']} run, "
               f"{meta['wall_seconds']:.0f} s wall).\n")
    out.append(f"Machine: {m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, Linux {m['kernel']}, "
               f"Debian {m['debian']}; {m['nft']}; {m['iptables']}; xdp-tools {m['xdp_tools']}. "
               f"Load average at the start {' '.join(meta['loadavg_start'])}, at the end "
               f"{' '.join(m['loadavg'])} (other work shared the machine: absolute numbers are noisy, the "
               f"ratios are side by side).\n")
    out.append("### Floors\n")
    out.append("| figure | measured | ratio | floor | met |")
    out.append("|---|---|---|---|---|")
    for r in rows:
        if r.floor is not None:
            ratio = "-" if r.ratio is None else f"{r.ratio:.3g}"
            met = {True: "yes", False: "**no**", None: "not measured"}[r.floor_met]
            out.append(f"| {r.figure} | `{r.name}` | {ratio} | {r.floor} | {met} |")
    out.append("")
    out.append("### Results\n")
    out.append("| fig | name | value | unit | baseline | ratio | what |")
    out.append("|---|---|---|---|---|---|---|")

    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            if v != 0 and abs(v) < 0.01:
                return f"{v:.2g}"
            return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return f"{v:,}"
    for r in rows:
        out.append(f"| {r.figure} | `{r.name}` | {fmt(r.value)} | {r.unit} | "
                   f"{fmt(r.baseline)} ({r.baseline_name}) | {fmt(r.ratio)} | {r.note} |")
    out.append("")
    out.append("![benchmarks](benchmarks.png)\n")
    return "\n".join(out)


def value(row):
    return (row.value if row else None) or 0


def baseline(row):
    return (row.baseline if row else None) or 0


def chart(outdir, quick, cost, flood, full, collateral):
    """The four panels, from the figures' own rows (a figure not run: its
    from_rows([]), every value 0)."""
    gp = shutil.which("gnuplot")
    if not gp:
        log("gnuplot missing: no chart")
        return None
    dat = os.path.join(outdir, "chart")
    os.makedirs(dat, exist_ok=True)
    with open(os.path.join(dat, "cost.dat"), "w") as f:
        v4, v6 = cost.test_run_floor["v4"], cost.test_run_floor["v6"]
        f.write(f'"XDP_DROP" {value(v4)} {value(v6)}\n')
        v4, v6 = cost.sluice_vs_xdp_filter["v4"], cost.sluice_vs_xdp_filter["v6"]
        f.write(f'"xdp-filter" {baseline(v4)} {baseline(v6)}\n')
        f.write(f'"sluice" {value(v4)} {value(v6)}\n')
        v4, v6 = cost.sluice_vs_lru["v4"], cost.sluice_vs_lru["v6"]
        f.write(f'"LRU limiter" {baseline(v4)} {baseline(v6)}\n')
        v4, v6 = cost.new_source["v4"], cost.new_source["v6"]
        f.write(f'"sluice, new src" {value(v4)} {value(v6)}\n')
        f.write(f'"LRU, new src" {baseline(v4)} {baseline(v6)}\n')
    with open(os.path.join(dat, "flood.dat"), "w") as f:
        for label, row in flood.cpu_per_packet:
            f.write(f'"{label}" {value(row)}\n')
    with open(os.path.join(dat, "collateral.dat"), "w") as f:
        for p in collateral.points:
            f.write(f"{p.heavy_pct} {value(p.one_choice)} {value(p.two_choices)} "
                    f"{baseline(p.one_choice)} {baseline(p.two_choices)}\n")
    with open(os.path.join(dat, "full.dat"), "w") as f:
        for o in full.outcomes:
            f.write(f'"{o.label}" {value(o.spoofed_let_through)} {value(o.new_flooder_let_through)} '
                    f'{value(o.new_client_delivered)}\n')
    png = os.path.join(outdir, "benchmarks.png")
    script = f"""
set terminal pngcairo size 1400,1000 font "DejaVu Sans,11" noenhanced
set output "{png}"
set multiplot layout 2,2 title "sluice benchmarks ({'quick' if quick else 'full'} run, {datetime.date.today()})"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
set title "1. Per-packet program cost, 64-byte UDP (BPF_PROG_TEST_RUN)"
set ylabel "ns per packet"
plot "{dat}/cost.dat" using 2:xtic(1) title "IPv4", "" using 3 title "IPv6"
set title "2. Receive-side CPU per flood frame received (veth, NET_RX softirq)"
set ylabel "ns per packet"
plot "{dat}/flood.dat" using 2:xtic(1) notitle lc rgb "#4477aa"
set title "3. After 1,000,000 spoofed sources: a new flooder and a new client"
set ylabel "% of its frames let through"
set yrange [0:135]
set offsets 0, 0, 0, 0
set key top right
plot "{dat}/full.dat" using 2:xtic(1) title "1M spoofed sources (each under its limit)", \\
     "" using 3 title "new flooder (100x its limit)", "" using 4 title "new client (under its limit)"
set title "6. Legitimate sources blocked by h heavy sources (N = 2^18 slots)"
set style data linespoints
set logscale xy
set xrange [0.8:70]
set yrange [0.01:150]
set xlabel "heavy sources h, % of N"
set ylabel "% of legitimate sources losing frames"
set key top left
plot "{dat}/collateral.dat" using 1:2 title "one choice, measured" pt 7 ps 1.5, \\
     "" using 1:3 title "two choices, measured" pt 5 ps 1.5, \\
     "" using 1:4 title "h/N" dt 2 lw 2, \\
     "" using 1:5 title "(2h/N)^2" dt 3 lw 2
unset multiplot
"""
    with open(os.path.join(dat, "chart.gp"), "w") as f:
        f.write(script)
    p = run([gp, os.path.join(dat, "chart.gp")], check=False)
    if p.returncode != 0:
        log(f"gnuplot failed: {p.stderr.strip()}")
        return None
    return png


def publish(out, rows, charted, meta, quick, update_docs, rc):
    """Table on stdout; results.md and the chart in the results directory;
    with update_docs, the generated section of docs/benchmarks.md and
    docs/benchmarks.png (only from a complete run). charted: the typed
    results of figures 1, 2, 3 and 6, for the chart."""
    print(table(rows))
    png = chart(out, quick, *charted) if rows else None
    md = markdown(rows, meta)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(md)
    log(f"results in {out}" + (f", chart {png}" if png else ""))
    if update_docs:
        if rc != 0 or not meta.get("complete", False):
            log("not updating docs/benchmarks.md: the run did not complete")
        else:
            docp = os.path.join(ROOT, "docs", "benchmarks.md")
            text = open(docp).read()
            i, j = text.index(DOC_BEGIN), text.index(DOC_END)
            text = text[:i + len(DOC_BEGIN)] + "\n" + md + "\n" + text[j:]
            with open(docp, "w") as f:
                f.write(text)
            if png:
                shutil.copyfile(png, os.path.join(ROOT, "docs", "benchmarks.png"))
            log("updated docs/benchmarks.md and docs/benchmarks.png")
    failed = [r.name for r in rows if r.floor_met is False]
    if failed:
        log("floors missed: " + ", ".join(failed))
