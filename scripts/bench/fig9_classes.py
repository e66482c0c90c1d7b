"""Figure 9: policy classes. Figure 1's program cost (sluice-bench cost,
BPF_PROG_TEST_RUN, the same 64-byte UDP frame) with no policy, with port
rules only (the frame in the default class: what looking a class up costs),
with a port rule that gives the frame a class of its own, and with 65,536
prefix classes per family (the frame's source among them: an LPM lookup);
and the time sluiced takes to apply a reload of 65,536 prefixes per family."""

import dataclasses
import ipaddress
import math
import os
import time

from .procs import last_json, log, run
from .rows import Rows, median

FAMILIES = (("v4", "IPv4"), ("v6", "IPv6"))
PREFIXES = 65536
# What the issue allows port rules to add to the pass path, in ns a frame.
PORT_RULES_NS = 3.0


@dataclasses.dataclass
class Classes:
    rows: list
    detail: dict | None


def write_prefix_policy(directory, rate):
    """A policy whose one rule holds 65,536 IPv4 /32s (198.18.0.0/16, the
    benchmark frame's 198.18.255.1 among them) and 65,536 IPv6 /64s
    (2001:2:0:0::/64 .. 2001:2:0:ffff::/64, the frame's among them), in a
    netset file; the class at `rate` (two rates: two policies a reload
    really changes)."""
    netset = os.path.join(directory, "fig9-prefixes.netset")
    if not os.path.exists(netset):
        with open(netset, "w") as f:
            f.write("# figure 9: 65,536 IPv4 /32s and 65,536 IPv6 /64s\n")
            base4 = int(ipaddress.IPv4Address("198.18.0.0"))
            f.writelines(f"{ipaddress.IPv4Address(base4 + i)}\n" for i in range(PREFIXES))
            base6 = int(ipaddress.IPv6Address("2001:2::"))
            f.writelines(f"{ipaddress.IPv6Address(base6 + (i << 64))}/64\n" for i in range(PREFIXES))
    path = os.path.join(directory, f"fig9-prefixes-{rate}.yaml")
    with open(path, "w") as f:
        f.write("version: 1\n"
                f"classes:\n  customer: {{rate: {rate}, burst: 1000000}}\n"
                "rules:\n  - sources: [{file: fig9-prefixes.netset}]\n    class: customer\n")
    return path


def measure(lab):
    log("figure 9: policy classes (BPF_PROG_TEST_RUN; reload time)")
    rounds = 3 if lab.quick else 11
    repeat = 1000000
    work = os.path.join(lab.tb.rundir, "fig9")
    os.makedirs(work, exist_ok=True)
    prefixes = write_prefix_policy(work, 100000000)
    sluice = lab.obj("sluice_bpf")
    policies = {"none": None, "ports": lab.tool_src("bench/policy_ports.yaml"),
                "port_class": lab.tool_src("bench/policy_port_class.yaml"), "prefixes": prefixes}
    progs = [f"{n}={sluice}" + (f",policy={p}" if p else "") for n, p in policies.items()]
    out = last_json(run([lab.bench_tool, "cost", "--repeat", repeat, "--rounds", rounds] + progs,
                        timeout=900).stdout)
    d = out["progs"]
    med = {n: {f: median(d[n][f]) for f, _ in FAMILIES} for n in d}
    rows = Rows(9)
    for fam, label in FAMILIES:
        none = med["none"][fam]
        rows.add(f"classes_{fam}_ports_vs_none", "ns/packet", med["ports"][fam], none, "sluice, no policy",
                 floor=("<=", math.ceil((none + PORT_RULES_NS) / none * 1e4) / 1e4), samples=d["ports"][fam],
                 note=f"64-byte {label} UDP to port 9; port rules only, none matching: the frame stays in "
                      f"the default class (L4 parse, port table, class counter); floor: at most "
                      f"{PORT_RULES_NS:g} ns more, {med['ports'][fam] - none:+.1f} ns measured")
        rows.add(f"classes_{fam}_port_class_vs_none", "ns/packet", med["port_class"][fam], none,
                 "sluice, no policy", samples=d["port_class"][fam],
                 note=f"a port rule matching the frame: its class's record and key; "
                      f"{med['port_class'][fam] - none:+.1f} ns")
        rows.add(f"classes_{fam}_prefixes_vs_none", "ns/packet", med["prefixes"][fam], none, "sluice, no policy",
                 samples=d["prefixes"][fam],
                 note=f"{PREFIXES:,} prefix classes per family, the frame's source among them (an LPM "
                      f"lookup); {med['prefixes'][fam] - none:+.1f} ns")

    # A reload of 65,536 prefixes per family, through sluiced: the two
    # policies differ in their class's rate, so each reload rewrites the
    # set not in force whole and flips it.
    other = write_prefix_policy(work, 50000000)
    n = 3 if lab.quick else 10
    live = os.path.join(work, "fig9-live.yaml")
    os.symlink(prefixes, live + ".new")
    os.replace(live + ".new", live)
    round_trip, applied = [], []
    with lab.daemon("--policy", live) as dmn:
        for i in range(n):
            os.symlink(other if i % 2 == 0 else prefixes, live + ".new")
            os.replace(live + ".new", live)
            t0 = time.perf_counter()
            reply = lab.ctl_request(dmn.socket, {"cmd": "reload"}, timeout=60)
            round_trip.append(time.perf_counter() - t0)
            applied.append(reply["interfaces"][0]["apply_ms"] / 1000)
    rows.add("reload_65536_prefixes", "s", median(round_trip), 1.0, "the issue's bound (1 s)", floor=("<=", 1.0),
             samples=[round(x, 4) for x in round_trip],
             note=f"`reload` round trip (read, check, compile, write the set not in force, flip, clear the "
                  f"old): {PREFIXES:,} IPv4 and {PREFIXES:,} IPv6 class prefixes; the apply alone "
                  f"{1000 * median(applied):.0f} ms")
    return Classes(rows, {"cost": out, "reload_round_trip_s": round_trip, "reload_apply_s": applied})
