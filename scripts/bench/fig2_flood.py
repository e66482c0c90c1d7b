"""Figure 2: flood absorption on veth, the IPv6 source rotating through one
/64: receive-side CPU per flood frame (NET_RX softirq, exact), the sender's,
the highest flood rate a client survives, and what gets through, for sluice
and every baseline; and where sluice's time goes on this path."""

import contextlib
import dataclasses
import time

from . import baselines
from .procs import finish, last_json, log, wait_rusage
from .rows import Rows, by_name, median
from .system import CLK_TCK, FLOOD_CPU, NetRxClock, ksoftirqd_pid, softirq_ticks, task_runtime_s

PROBE_PORT = 7001

# (key, what it is, its label on the chart), in the order they run.
CONFIGS = (("a_none", "no filter", "none"),
           ("b_xdp_drop", "XDP_DROP only", "XDP_DROP"),
           ("b2_xdp_filter", "xdp-filter deny-ip (reference)", "xdp-filter"),
           ("c_sluice", "sluice", "sluice"),
           ("d_nft", "nftables netdev dynamic set", "nftables"),
           ("e_hashlimit", "iptables hashlimit (raw)", "hashlimit"))
# Where sluice's time goes on this path: the cut-point builds of figure 1,
# attached without the daemon, each dropping every frame after one more
# stage; "full" is the default object the same way.
STAGES = ("parse", "hash", "lookup", "clock", "bucket")
CUTS = tuple((f"s_cut_{st}", f"sluice cut after {st}") for st in STAGES) + (("s_full", "sluice without the daemon"),)


def cpu_per_packet_name(key):
    return f"flood_cpu_per_packet_{key}"


@dataclasses.dataclass
class FloodAbsorption:
    rows: list
    detail: dict | None
    # (chart label, the row of its receive-side CPU per frame), in CONFIGS' order
    cpu_per_packet: list

    @classmethod
    def from_rows(cls, rows):
        get = by_name(rows)
        return cls(rows, None, [(short, get.get(cpu_per_packet_name(key))) for key, _, short in CONFIGS])


class Clocks:
    """The receive side's clocks, less what they count without the flood."""

    def __init__(self, lab):
        self.netrx = NetRxClock(lab.bench_tool, lab.netrx_obj)
        self.idle_softirq_rate = 0.0
        self.idle_netrx_rate = 0.0

    def measure_idle(self, seconds):
        s0, n0, t0 = softirq_ticks(), self.netrx.ns(), time.monotonic()
        time.sleep(seconds)
        s1, n1, t1 = softirq_ticks(), self.netrx.ns(), time.monotonic()
        self.idle_softirq_rate = (s1 - s0) / (t1 - t0)
        self.idle_netrx_rate = (n1 - n0) / (t1 - t0)
        log(f"without the flood: softirq {self.idle_softirq_rate / CLK_TCK * 1000:.1f} ms/s (sampled), "
            f"NET_RX {self.idle_netrx_rate / 1e6:.2f} ms/s (exact), every CPU")


def one_run(lab, clocks, ksd, pps, seconds, client_pps):
    tb = lab.tb
    sink = lab.start_sink(PROBE_PORT)
    try:
        time.sleep(0.1)
        n0 = lab.noports()
        tx0 = lab.link_tx_dropped()
        k0 = task_runtime_s(ksd) if ksd else 0.0
        s0, x0, t0 = softirq_ticks(), clocks.netrx.ns(), time.monotonic()
        pr = lab.probe(PROBE_PORT, client_pps, seconds)
        args = ["--dst", tb.host_ip6, "--random-src", "--v6", "--v6-same64", "--duration", seconds]
        if pps:
            args += ["--pps", pps]
        fl = lab.flood(*args, background=True)
        fout, flood_cpu = wait_rusage(fl, seconds + 60)
        s1, x1, t1 = softirq_ticks(), clocks.netrx.ns(), time.monotonic()
        k1 = task_runtime_s(ksd) if ksd else 0.0
        rc2, pout, perr = finish(pr, seconds + 60)
        time.sleep(0.3)
    finally:
        sj = lab.end_sink(sink)
    n1 = lab.noports()
    tx1 = lab.link_tx_dropped()
    fj, pj = last_json(fout), last_json(pout)
    sent = fj["sent"]
    ticks = (s1 - s0) - clocks.idle_softirq_rate * (t1 - t0)
    delivered = sj["by_source"].get(tb.client_ip6, 0)
    netrx = (x1 - x0) - clocks.idle_netrx_rate * (t1 - t0)
    # With an XDP program on veth-host, frames the generator sent while
    # veth-host's receive ring was full are dropped by the router's veth
    # on transmit and never reach the host: costs are per frame received.
    got = sent - (tx1 - tx0)
    return {"offered_pps": fj["pps"], "sent": sent, "received": got, "seconds": fj["seconds"],
            "netrx_ns_per_packet": netrx / got if got > 0 else None, "netrx_s": (x1 - x0) / 1e9,
            "cpu_ns_per_packet": ticks / CLK_TCK * 1e9 / got if got > 0 else None,
            "softirq_s": (s1 - s0) / CLK_TCK,
            "sender_cpu_s": flood_cpu, "ksoftirqd_s": k1 - k0,
            "sender_ns_per_packet": (flood_cpu + k1 - k0) * 1e9 / got if got > 0 else None,
            "client_sent": pj["sent"], "client_delivered": delivered,
            "client_loss": 1 - delivered / pj["sent"] if pj["sent"] else None,
            "link_tx_dropped": tx1 - tx0,
            "flood_through": n1 - n0,
            "flood_through_pps": (n1 - n0) / fj["seconds"] if fj["seconds"] else None}


def measure(lab):
    log("figure 2: flood absorption on veth (IPv6 source rotating through one /64)")
    seconds = 1.5 if lab.quick else 4
    repeats = 1 if lab.quick else 3
    rates = [0, 100000] if lab.quick else [0, 50000, 100000, 200000]
    rate, burst = 1000, 1000
    client_pps = rate // 2
    ksd = ksoftirqd_pid(FLOOD_CPU)
    filters = {
        "a_none": contextlib.nullcontext,
        "b_xdp_drop": lambda: baselines.xdp_drop(lab),
        "b2_xdp_filter": lambda: baselines.xdp_filter(lab),
        "c_sluice": lambda: lab.daemon("--rate", rate, "--burst", burst),
        "d_nft": lambda: baselines.nft(lab, True, rate, burst, 262144),
        "e_hashlimit": lambda: baselines.hashlimit(lab, 64, rate, burst, 262144),
    }
    for st in STAGES:
        filters[f"s_cut_{st}"] = (lambda o: (lambda: baselines.bpf_attached(lab, o, rate, burst)))(
            lab.obj(f"sluice_cut_{st}_bpf"))
    filters["s_full"] = lambda: baselines.bpf_attached(lab, lab.obj("sluice_bpf"), rate, burst)
    order = [c[0] for c in CONFIGS] + [c[0] for c in CUTS]
    labels = dict([(c[0], c[1]) for c in CONFIGS] + list(CUTS))
    # The reference program and the cuts are there for their cost only.
    cost_only = {"b2_xdp_filter"} | {c[0] for c in CUTS}
    clocks = Clocks(lab)
    try:
        clocks.measure_idle(1 if lab.quick else 2)
        res = {k: [] for k in order}
        for rep in range(repeats):
            for key in order:
                with filters[key]():
                    time.sleep(0.3)
                    runs = []
                    for pps in (rates[:1] if key in cost_only else rates):
                        r = one_run(lab, clocks, ksd, pps, seconds, client_pps)
                        r["paced_pps"] = pps
                        runs.append(r)
                        log(f"  {key} rep {rep} pace {pps or 'max'}: offered {r['offered_pps']} pps, NET_RX "
                            f"{r['netrx_ns_per_packet'] or 0:.0f} ns/pkt, softirq (sampled) "
                            f"{r['cpu_ns_per_packet'] or 0:.0f} ns/pkt, sender+ksoftirqd "
                            f"{r['sender_ns_per_packet'] or 0:.0f} ns/pkt, client loss "
                            f"{100 * (r['client_loss'] or 0):.2f}%, through {r['flood_through']}")
                    res[key].append(runs)
    finally:
        clocks.netrx.close()
    detail = {"seconds": seconds, "rates": rates, "limit": [rate, burst], "client_pps": client_pps, "runs": res}

    def per_rep(key, f):
        return [f(runs) for runs in res[key]]

    unpaced = lambda field: (lambda runs: runs[0][field])
    cost = {k: median(per_rep(k, unpaced("netrx_ns_per_packet"))) for k in res}
    sampled = {k: median(per_rep(k, unpaced("cpu_ns_per_packet"))) for k in res}
    exact = {k: median(per_rep(k, unpaced("sender_ns_per_packet"))) for k in res}
    offered = {k: median(per_rep(k, unpaced("offered_pps"))) for k in res}
    maxok = {k: median(per_rep(k, lambda runs: max([r["offered_pps"] for r in runs
                                                     if r["client_loss"] is not None and r["client_loss"] < 0.01],
                                                    default=0))) for k in res}
    through = {k: median(per_rep(k, unpaced("flood_through_pps"))) for k in res}
    loss = {k: median(per_rep(k, unpaced("client_loss"))) for k in res}
    linkdrop = {k: median(per_rep(k, lambda runs: max(r["link_tx_dropped"] for r in runs))) for k in res}
    ideal = median([(burst + rate * runs[0]["seconds"]) / runs[0]["seconds"] for runs in res["c_sluice"]])
    rows = Rows(2)
    cpu_rows = []
    for key, label, short in CONFIGS:
        cpu_rows.append((short, rows.add(
            cpu_per_packet_name(key), "ns/packet", cost[key], cost["b_xdp_drop"], "XDP_DROP only",
            samples=per_rep(key, unpaced("netrx_ns_per_packet")),
            note=f"{label}: receive-side CPU, NET_RX softirq time per frame received, unpaced "
                 f"({offered[key]:.0f} pps offered; /proc/stat's sampled softirq gives "
                 f"{sampled[key] or 0:.0f} ns)")))
    for other in ("d_nft", "e_hashlimit"):
        rows.add(f"flood_cpu_per_packet_sluice_vs_{other}", "ns/packet", cost["c_sluice"], cost[other],
                 labels[other])
    # The breakdown on this path, as figure 1's: stage k = cut_k - cut_(k-1)
    # from XDP_DROP up; then the counters (the whole object less the last
    # cut) and what the daemon adds (sluiced's program less the same object
    # attached without it: the drop sampling, the daemon's own work).
    prev = cost["b_xdp_drop"]
    for st in STAGES:
        v = cost[f"s_cut_{st}"]
        rows.add(f"flood_breakdown_{st}", "ns/packet", v - prev, cost["c_sluice"], "sluice total",
                 samples=per_rep(f"s_cut_{st}", unpaced("netrx_ns_per_packet")),
                 note=f"NET_RX time per frame of the build cut after {st}, less the one before it")
        prev = v
    rows.add("flood_breakdown_counters", "ns/packet", cost["s_full"] - prev, cost["c_sluice"], "sluice total",
             samples=per_rep("s_full", unpaced("netrx_ns_per_packet")),
             note="the whole object without the daemon, less the bucket cut")
    rows.add("flood_breakdown_daemon", "ns/packet", cost["c_sluice"] - cost["s_full"], cost["c_sluice"],
             "sluice total", note="sluiced's program (drop sampling on) less the same object without the daemon")
    for key, label, _ in CONFIGS:
        rows.add(f"flood_sender_cpu_per_packet_{key}", "ns/packet", exact[key], exact["b_xdp_drop"],
                 "XDP_DROP only", samples=per_rep(key, unpaced("sender_ns_per_packet")),
                 note=f"{label}: exact runtime of the generator (its sends and the receive work that ran in "
                      f"its softirq) + ksoftirqd on its CPU, per frame received")
    for key, label, _ in CONFIGS:
        if key in ("b_xdp_drop", "b2_xdp_filter"):
            continue  # they drop the client too
        rows.add(f"flood_max_rate_client_ok_{key}", "pps", maxok[key], maxok["a_none"], "no filter",
                 note=f"{label}: highest offered flood rate with the client ({client_pps}/s) losing < 1%; "
                      f"client loss at the unpaced rate {100 * (loss[key] or 0):.2f}%; the router's veth "
                      f"dropped up to {linkdrop[key]:.0f} frames on transmit in a run")
    for key, label, _ in CONFIGS:
        if key == "b2_xdp_filter":
            continue
        rows.add(f"flood_let_through_{key}", "pps", through[key], ideal,
                 "exact per-source limit, (burst + rate x t) / t",
                 note=f"{label}: flood frames that reached the host's UDP layer, unpaced run")
    return FloodAbsorption(rows, detail, cpu_rows)
