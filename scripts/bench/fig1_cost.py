"""Figure 1: per-packet program cost, 64-byte UDP, by BPF_PROG_TEST_RUN
(sluice-bench cost): sluice against XDP_DROP and xdp-filter, the drop path,
two variants, and where the time goes (the cut-point builds)."""

import dataclasses

from .procs import last_json, log, run
from .rows import Rows, by_name, median

FAMILIES = (("v4", "IPv4"), ("v6", "IPv6"))
# The cut-point builds, in program order: each drops after one more stage.
STAGES = (("parse", "parse"), ("hash", "hash (config lookup, mask, SipHash-1-3, indices)"),
          ("lookup", "slot lookups"), ("clock", "time read (coarse clock)"),
          ("bucket", "bucket update (two-choice CAS)"))


def vs_xdp_filter_name(fam):
    return f"cost_{fam}_sluice_vs_xdp_filter"


def test_run_floor_name(fam):
    return f"breakdown_{fam}_test_run_floor"


@dataclasses.dataclass
class Cost:
    rows: list
    detail: dict | None
    # by family ("v4", "v6"): sluice's cost, its baseline xdp-filter's
    sluice_vs_xdp_filter: dict
    # ... and the XDP_DROP program's, the floor of BPF_PROG_TEST_RUN
    test_run_floor: dict

    @classmethod
    def from_rows(cls, rows):
        get = by_name(rows)
        return cls(rows, None, {f: get.get(vs_xdp_filter_name(f)) for f, _ in FAMILIES},
                   {f: get.get(test_run_floor_name(f)) for f, _ in FAMILIES})


def measure(lab):
    log("figure 1: per-packet program cost (BPF_PROG_TEST_RUN)")
    rounds = 3 if lab.quick else 11
    repeat = 1000000
    progs = [("xdp_drop", lab.obj("xdp_drop_bpf")), ("xdp_filter", lab.xdpfilt),
             ("sluice", lab.obj("sluice_bpf")), ("sluice_drop_path", lab.obj("sluice_bpf") + ",drop"),
             ("fine_clock", lab.obj("sluice_fineclock_bpf")), ("siphash24", lab.obj("sluice_sip24_bpf"))]
    progs += [(f"cut_{s}", lab.obj(f"sluice_cut_{s}_bpf")) for s, _ in STAGES]
    out = last_json(run([lab.bench_tool, "cost", "--repeat", repeat, "--rounds", rounds] +
                        [f"{n}={p}" for n, p in progs], timeout=900).stdout)
    d = out["progs"]
    med = {n: {f: median(d[n][f]) for f in ("v4", "v6")} for n in d}
    rows = Rows(1)
    vs_filter, floor = {}, {}
    for fam, label in FAMILIES:
        s, drop, xf = med["sluice"][fam], med["xdp_drop"][fam], med["xdp_filter"][fam]
        vs_filter[fam] = rows.add(vs_xdp_filter_name(fam), "ns/packet", s, xf, "xdp-filter deny-ip",
                                  floor=("<=", 2.5), samples=d["sluice"][fam],
                                  note=f"64-byte {label} UDP, pass path (both slots paid)")
        rows.add(f"cost_{fam}_sluice_vs_xdp_drop", "ns/packet", s, drop, "XDP_DROP only", samples=d["sluice"][fam])
        rows.add(f"cost_{fam}_xdp_filter_vs_xdp_drop", "ns/packet", xf, drop, "XDP_DROP only",
                 samples=d["xdp_filter"][fam],
                 note="xdpfilt_dny_ip.o, maps empty: looks the addresses up, then drops (default deny)")
        rows.add(f"cost_{fam}_sluice_drop_path_vs_xdp_filter", "ns/packet", med["sluice_drop_path"][fam],
                 xf, "xdp-filter deny-ip", samples=d["sluice_drop_path"][fam],
                 note="over its limit: dropped (no bucket write)")
        # The breakdown: stage k = cut_k - cut_(k-1); the floor is xdp_drop.
        prev = drop
        for st, what in STAGES:
            v = med[f"cut_{st}"][fam]
            rows.add(f"breakdown_{fam}_{st}", "ns/packet", v - prev, s, "sluice total", note=what)
            prev = v
        rows.add(f"breakdown_{fam}_counters", "ns/packet", s - prev, s, "sluice total",
                 note="per-CPU outcome counter")
        floor[fam] = rows.add(test_run_floor_name(fam), "ns/packet", drop, s, "sluice total",
                              note="BPF_PROG_TEST_RUN loop + XDP_DROP program")
        rows.add(f"variant_{fam}_fine_clock", "ns/packet", med["fine_clock"][fam], s, "sluice (coarse clock)",
                 samples=d["fine_clock"][fam], note="bpf_ktime_get_ns instead of the coarse clock")
        rows.add(f"variant_{fam}_siphash24", "ns/packet", med["siphash24"][fam], s, "sluice (SipHash-1-3)",
                 samples=d["siphash24"][fam], note="SipHash-2-4 instead of 1-3")
    return Cost(rows, out, vs_filter, floor)
