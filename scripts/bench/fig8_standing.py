"""Figure 8: standing. (a) A regular HTTP client's served share while a
random-source spoofed flood has sluiced's breaker shedding, against sluice
with standing off, nftables, hashlimit and no filter; (b) bulk TCP of one
legitimate peer through sluice at its shipped defaults against XDP_PASS and no
filter, the client uploading to the host and the host downloading from a peer;
(c) the false-match rate of random sources against the standing table, 10^3 to
10^6 entries."""

import contextlib
import dataclasses
import json
import math
import os
import signal
import time

import sluice_netns

from . import baselines
from .procs import finish, last_json, log, run, spawn, stop
from .rows import Rows, median
from .system import NCPU, OTHER_CPU

HTTP_PORT = 8080
IPERF_PORT = 5201

# (a): (key, what it is), in the order they are reported; the baseline of
# every row is the last, no filter.
SERVED = (("c_sluice_standing", "sluice, standing on (its defaults)"),
          ("c2_sluice_no_standing", "sluice, standing off (newcomer budget at its default)"),
          ("c3_sluice_before_standing", "sluice, standing off and no newcomer budget (sluice before standing)"),
          ("d_nft", "nftables meter per source (/64)"),
          ("e_hashlimit", "iptables hashlimit per source (/64)"),
          ("a_none", "no filter"))
# (b): the filters, each at its defaults, and the two directions.
BULK = (("a_none", "no filter"), ("b_xdp_pass", "XDP_PASS only"), ("c_sluice", "sluice at its shipped defaults"))
DIRECTIONS = (("upload", "the client uploading to the host"), ("download", "the host downloading from a peer"))
# (c): sources with standing.
FILLS = (1000, 10000, 100000, 1000000)

# The breaker is set to trip on the flood (figure 7's --trip-pps: a rate a
# veth flood reaches on two shared CPUs; the default is 1,000,000), with a
# short period so that it trips within a second; everything else, standing
# and the newcomer budget (a tenth of --trip-pps) included, is sluiced's
# defaults.
TRIP = ("--trip-pps", 50000, "--trip-periods", 2, "--period", 0.2)
FLOOD_PPS = 200000
# The flood from every CPU, a sending thread on each: on veth a frame's XDP
# runs on the CPU that sent it, and a NIC spreads a random-source flood over
# every queue the same way. (From one CPU it would leave the other CPU's
# share of the per-CPU newcomer budget to the client alone.)
FLOOD_CPUS = ",".join(str(c) for c in range(NCPU))
# Each of the per-source limiters keys a source as sluice does by default
# (an IPv6 host owns a /64) and allows what sluice allows a source by default.
LIMIT_RATE, LIMIT_BURST, LIMIT_TABLE = 10000, 20000, 262144

# The regular client (tests/tools/http_client.py, the one copy): a new TCP
# connection per request, started at a steady rate (--rate) whether or not the
# ones before were answered (each in a thread of its own, given `timeout`
# seconds: one SYN retransmission), so every filter is offered the same
# requests. Before the flood: `count` requests; during it, requests for
# `seconds`. Prints one JSON line.
HTTP_CLIENT = os.path.join(sluice_netns.SOURCE_DIR, "tests", "tools", "http_client.py")

NGINX_CONF = """worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  server {{
    listen [{ip6}]:{port};
    listen {ip4}:{port};
    location / {{ return 200 "ok\\n"; }}
  }}
}}
"""


@dataclasses.dataclass
class Served:
    """(a) One filter: the regular client's requests during the flood."""
    key: str
    label: str
    served: int
    attempted: int
    share: object          # the row: % served, against no filter
    flood_pps: float


@dataclasses.dataclass
class Bulk:
    """(b) One filter, one direction: bulk TCP throughput."""
    key: str
    direction: str
    gbit_s: object         # the row: Gbit/s, against XDP_PASS


@dataclasses.dataclass
class FalseMatches:
    """(c) One fill of the standing table."""
    entries: int
    matches: int
    probes: int
    held: int
    rate: object           # the row: matches per random source, against 8 x 2^-32


@dataclasses.dataclass
class Standing:
    rows: list
    detail: dict | None
    served: list
    bulk: list
    false_matches: list


# ---------------------------------------------------------------- the servers

@contextlib.contextmanager
def nginx(lab):
    """nginx on the host (one worker, on the legitimate side's CPU), answering
    every request with a 200 of three bytes, on both addresses."""
    d = os.path.join(lab.tb.rundir, "nginx-bench")
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(dir=d, ip4=lab.tb.host_ip4, ip6=lab.tb.host_ip6, port=HTTP_PORT))
    pid = os.path.join(d, "nginx.pid")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pid)
    p = spawn(lab.x("host", "taskset", "-c", OTHER_CPU, "nginx", "-e", os.path.join(d, "error.log"), "-p", d + "/",
                    "-c", conf))
    try:
        wait_listening(lab, "host", HTTP_PORT, p, "nginx")
        yield p
    finally:
        stop(p, signal.SIGQUIT, 10)


def wait_listening(lab, role, port, p, what, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        out = run(lab.x(role, "ss", "-Hltn", f"sport = :{port}"), check=False).stdout
        if out.strip():
            return
        if p.poll() is not None or time.monotonic() > deadline:
            rc, o, e = finish(p, 5)
            raise RuntimeError(f"{what} did not listen on port {port}: {(e or o).strip()}")
        time.sleep(0.02)


def http_client(lab, rate, seconds=0, count=0, timeout=2.0):
    how_many = ["--count", count] if count else ["--seconds", seconds]
    return spawn(lab.x("client", "taskset", "-c", OTHER_CPU, "python3", HTTP_CLIENT, lab.tb.host_ip6,
                       HTTP_PORT, "--rate", rate, *how_many, "--timeout", timeout))


# ---------------------------------------------------------------- sluiced's standing switch

@contextlib.contextmanager
def sluice_standing_off(lab, *extra):
    """sluiced with standing off (--no-standing: no feeders, no sock_diag
    grants, so the table stays empty)."""
    with lab.daemon(*TRIP, "--no-standing", *extra) as d:
        d.standing_off = " ".join(["--no-standing", *[str(e) for e in extra]])
        yield d


# ---------------------------------------------------------------- (a) served share

def served_run(lab, filt, client_rate, seconds):
    tb = lab.tb
    with filt() as d:
        time.sleep(0.3)
        # The client uses the host before the flood: standing, where there is.
        warm = last_json(finish(http_client(lab, client_rate, count=5), 60)[1])
        c0 = lab.counters(d) if d else None
        fl = lab.flood("--dst", tb.host_ip6, "--random-src", "--v6", "--pps", FLOOD_PPS, "--threads", NCPU,
                       "--duration", seconds + 30, cpus=FLOOD_CPUS, background=True)
        try:
            states = []
            if d:
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    states.append(lab.breaker_state(d))
                    if states[-1] == "shedding":
                        break
                    time.sleep(0.05)
            else:
                time.sleep(1.0)
            c1 = lab.counters(d) if d else None
            t1 = time.monotonic()
            cl = last_json(finish(http_client(lab, client_rate, seconds=seconds), seconds + 60)[1])
            t2 = time.monotonic()
            c2 = lab.counters(d) if d else None
            after = lab.breaker_state(d) if d else None
        finally:
            rc, fout, _ = stop(fl, signal.SIGINT, 30)
    fj = last_json(fout)
    delta = {k: sum(c2[k]) - sum(c1[k]) for k in c2} if d else None
    # Where the program ran the frames of the client's window, CPU by CPU.
    per_cpu = [sum(c2[k][i] - c1[k][i] for k in c2) for i in range(len(c2["passed"]))] if d else None
    r = {"warm_ok": warm["ok"], "warm_attempted": warm["attempted"],
         "breaker_before": states[-1] if states else None, "breaker_after": after,
         "ok": cl["ok"], "attempted": cl["attempted"], "seconds": cl["seconds"],
         "latency_ms_median": cl["latency_ms_median"], "flood_sent": fj["sent"], "flood_pps": fj["pps"],
         "client_window_s": t2 - t1, "outcomes_during": delta, "frames_per_cpu_during": per_cpu,
         "outcomes_before_flood": {k: sum(c0[k]) for k in c0} if d else None,
         "standing_off": getattr(d, "standing_off", None) if d else None}
    return r


def measure_served(lab, rows, detail):
    seconds = 3 if lab.quick else 10
    repeats = 1 if lab.quick else 3
    client_rate = 20
    filters = {
        "c_sluice_standing": lambda: lab.daemon(*TRIP),
        "c2_sluice_no_standing": lambda: sluice_standing_off(lab),
        "c3_sluice_before_standing": lambda: sluice_standing_off(lab, "--newcomer-pps", 0),
        "d_nft": lambda: none_on_exit(baselines.nft(lab, True, LIMIT_RATE, LIMIT_BURST, LIMIT_TABLE)),
        "e_hashlimit": lambda: none_on_exit(baselines.hashlimit(lab, 64, LIMIT_RATE, LIMIT_BURST, LIMIT_TABLE)),
        "a_none": lambda: none_on_exit(contextlib.nullcontext()),
    }
    res = {k: [] for k, _ in SERVED}
    with nginx(lab):
        for rep in range(repeats):
            # (Each daemon starts with a standing table of its own: the one
            # before removed its pins on the way out.)
            for key, _ in SERVED:
                r = served_run(lab, filters[key], client_rate, seconds)
                res[key].append(r)
                log(f"  {key} rep {rep}: served {r['ok']}/{r['attempted']} during the flood "
                    f"({r['flood_pps']:.0f} pps offered), breaker {r['breaker_before']} -> {r['breaker_after']}, "
                    f"outcomes {r['outcomes_during']}")
    detail["served"] = {"flood_pps_asked": FLOOD_PPS, "trip": list(TRIP), "client_rate": client_rate,
                        "seconds": seconds, "limit": [LIMIT_RATE, LIMIT_BURST, LIMIT_TABLE], "runs": res}
    share = {k: median([100.0 * r["ok"] / r["attempted"] for r in rs if r["attempted"]]) for k, rs in res.items()}
    out = []
    for key, label in SERVED:
        rs = res[key]
        served, attempted = sum(r["ok"] for r in rs), sum(r["attempted"] for r in rs)
        pps = median([r["flood_pps"] for r in rs])
        note = (f"{label}: {served} of {attempted} requests served during the flood "
                f"({FLOOD_PPS:,} pps asked, {pps:,.0f} offered), a new TCP connection each, {client_rate}/s")
        if key.startswith("c"):
            states = sorted({f"{r['breaker_before']} -> {r['breaker_after']}" for r in rs})
            outs = lambda name: median([(r["outcomes_during"] or {}).get(name, 0) for r in rs])
            spread = median([100.0 * min(r["frames_per_cpu_during"]) / sum(r["frames_per_cpu_during"])
                             for r in rs if sum(r["frames_per_cpu_during"])])
            budget = median([100.0 * r["outcomes_during"].get("newcomer", 0) /
                             (r["outcomes_during"].get("newcomer", 0) + r["outcomes_during"]["drop_shed"])
                             for r in rs if r["outcomes_during"] and r["outcomes_during"]["drop_shed"]])
            note += (f"; breaker {' / '.join(states)} around the client; frames meanwhile: standing "
                     f"{outs('standing'):.0f}, newcomer {outs('newcomer'):.0f}, shed {outs('drop_shed'):.0f} "
                     f"(the newcomer budget admitted {budget or 0:.2g}% of the frames without standing), "
                     f"{spread:.0f}% of them on the less busy CPU")
            if key in ("c2_sluice_no_standing", "c3_sluice_before_standing"):
                note += f"; standing off by {rs[0]['standing_off']}"
        row = rows.add(f"standing_served_share_{key}", "% of requests", share[key], share["a_none"], "no filter",
                       note=note, samples=[round(100.0 * r["ok"] / r["attempted"], 2) if r["attempted"] else None
                                           for r in rs])
        out.append(Served(key, label, served, attempted, row, pps))
    return out


@contextlib.contextmanager
def none_on_exit(cm):
    """A baseline's context manager, yielding None (no daemon to read)."""
    with cm:
        yield None


# ---------------------------------------------------------------- (b) bulk TCP

def iperf(lab, direction, seconds):
    """One bulk TCP transfer through the router: upload, the client sends to
    an iperf3 server on the host; download, the host (the TCP client, as for
    a package update) receives from a server on the client's namespace (-R).
    Gbit/s received."""
    tb = lab.tb
    server_role, server_ip, client_role = (("host", tb.host_ip4, "client") if direction == "upload"
                                           else ("client", tb.client_ip4, "host"))
    srv = spawn(lab.x(server_role, "iperf3", "-s", "-1", "-B", server_ip, "-p", IPERF_PORT))
    try:
        wait_listening(lab, server_role, IPERF_PORT, srv, "iperf3 -s")
        cmd = lab.x(client_role, "iperf3", "-c", server_ip, "-p", IPERF_PORT, "-t", seconds, "-J")
        if direction == "download":
            cmd.append("-R")
        p = run(cmd, check=False, timeout=seconds + 60)
        j = json.loads(p.stdout)
        if "error" in j:
            raise RuntimeError(f"iperf3 {direction}: {j['error']}")
        end = j["end"]
        return {"gbit_s": end["sum_received"]["bits_per_second"] / 1e9,
                "retransmits": end.get("sum_sent", {}).get("retransmits"),
                "bytes": end["sum_received"]["bytes"], "seconds": end["sum_received"]["seconds"]}
    finally:
        stop(srv, signal.SIGTERM, 10)


def measure_bulk(lab, rows, detail):
    seconds = 2 if lab.quick else 5
    repeats = 1 if lab.quick else 3
    filters = {"a_none": lambda: none_on_exit(contextlib.nullcontext()),
               "b_xdp_pass": lambda: none_on_exit(baselines.xdp_pass(lab)),
               "c_sluice": lambda: lab.daemon()}
    res = {(k, dr): [] for k, _ in BULK for dr, _ in DIRECTIONS}
    outcomes = {}
    for rep in range(repeats):
        # Each repeat in another order: a change of load moves no one
        # filter's figure alone.
        for key, _ in BULK[rep % len(BULK):] + BULK[:rep % len(BULK)]:
            with filters[key]() as d:
                time.sleep(0.3)
                for dr, _ in DIRECTIONS:
                    c0 = lab.counters(d) if d else None
                    r = iperf(lab, dr, seconds)
                    if d:
                        c1 = lab.counters(d)
                        r["outcomes"] = {k: sum(c1[k]) - sum(c0[k]) for k in c1 if sum(c1[k]) != sum(c0[k])}
                    res[(key, dr)].append(r)
                    log(f"  bulk {key} {dr} rep {rep}: {r['gbit_s']:.3f} Gbit/s, retransmits {r['retransmits']}"
                        + (f", outcomes {r['outcomes']}" if d else ""))
    detail["bulk"] = {"seconds": seconds, "runs": {f"{k}_{dr}": v for (k, dr), v in res.items()}}
    out = []
    for dr, what in DIRECTIONS:
        g = {k: median([r["gbit_s"] for r in res[(k, dr)]]) for k, _ in BULK}
        for key, label in BULK:
            samples = [round(r["gbit_s"], 3) for r in res[(key, dr)]]
            if key == "b_xdp_pass":
                row = rows.add(f"standing_bulk_tcp_{dr}_{key}", "Gbit/s", g[key], g["a_none"], "no filter",
                               samples=samples, note=f"{label}: {what}, one TCP flow (iperf3) through the router "
                                                     f"(on veth any XDP program costs the GSO path)")
            else:
                sluice = key == "c_sluice"
                outs = (median([sum(v for k, v in r["outcomes"].items() if k.startswith("drop")) for r in
                                res[(key, dr)]]) if sluice else None)
                row = rows.add(f"standing_bulk_tcp_{dr}_{key}", "Gbit/s", g[key], g["b_xdp_pass"], "XDP_PASS only",
                               floor=(">=", 0.9) if sluice else None, samples=samples,
                               note=f"{label}: {what}, one TCP flow (iperf3) through the router"
                                    + (f"; sluice dropped {outs:.0f} of its frames (median of runs; outcomes in "
                                       f"the detail)" if sluice else ""))
            out.append(Bulk(key, dr, row))
    return out


# ---------------------------------------------------------------- (c) false matches

def poisson_upper(k, n, confidence=0.95):
    """The upper bound of a rate from k events in n trials at `confidence`
    (exact Poisson: the lambda with P(X <= k) = 1 - confidence), per trial."""
    def cdf(lam):
        term = total = math.exp(-lam)
        for i in range(1, k + 1):
            term *= lam / i
            total += term
        return total
    lo, hi = 0.0, 10.0 + 10 * k
    for _ in range(100):
        mid = (lo + hi) / 2
        if cdf(mid) > 1 - confidence:
            lo = mid
        else:
            hi = mid
    return hi / n


def measure_false_matches(lab, rows, detail):
    probes = 2000000 if lab.quick else 50000000
    p = run([lab.standing_matches, "--entries", ",".join(str(n) for n in FILLS), "--probes", probes],
            timeout=1200)
    fills = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    detail["false_matches"] = fills
    out = []
    for f in fills:
        upper = poisson_upper(f["matches"], f["probes"])
        row = rows.add(f"standing_false_match_{f['entries']}", "matches per random source", f["rate"], f["bound"],
                       "8 x 2^-32 (a full set)",
                       note=f"{f['matches']} of {f['probes']:,} random sources matched, {f['entries']:,} sources "
                            f"with standing in the default table ({f['sets']:,} sets of {f['ways']}; "
                            f"{f['held']:,} live entries held); expected held / (sets x 2^32) = "
                            f"{f['expected']:.2g}; 95% upper bound {upper:.2g}")
        out.append(FalseMatches(f["entries"], f["matches"], f["probes"], f["held"], row))
        if f["entries"] == 100000:
            rows.add("standing_false_match_100000_upper_bound", "matches per random source", upper, 1e-4,
                     "issue 11: at most 0.01%", floor=("<=", 1.0),
                     note=f"95% upper bound of the rate at 10^5 sources with standing, from {f['matches']} of "
                          f"{f['probes']:,}")
    return out


def measure(lab):
    log("figure 8: standing (a regular client while shedding, bulk TCP at the defaults, false matches)")
    rows = Rows(8)
    detail = {}
    served = measure_served(lab, rows, detail)
    bulk = measure_bulk(lab, rows, detail)
    fm = measure_false_matches(lab, rows, detail)
    return Standing(rows, detail, served, bulk, fm)
