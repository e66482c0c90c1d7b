"""Figure 7: the control plane. A status round trip (sluicectl, and the bare
socket), the time from a flood's onset to shedding, and the daemon's CPU
share at 2^20 slots against the default."""

import dataclasses
import signal
import time

from .procs import log, run, stop
from .rows import Rows, median
from .system import proc_cpu_s, rss_bytes


@dataclasses.dataclass
class ControlPlane:
    rows: list
    detail: dict | None


def time_cmd(cmd, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        run(cmd, check=False)
        ts.append(time.perf_counter() - t0)
    return ts


def time_req(lab, sock, req, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        lab.ctl_request(sock, req)
        ts.append(time.perf_counter() - t0)
    return ts


def time_interleaved(lab, sock, reqs, seconds, every):
    """Each request in turn every `every` s for `seconds`: {cmd: [round trips]},
    so a cost that comes once in a while (the standing table's count, once
    every 10 s in a status request before it moved to the period) lands in
    the samples, beside the same window's transport alone."""
    ts = {r["cmd"]: [] for r in reqs}
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        for r in reqs:
            t0 = time.perf_counter()
            lab.ctl_request(sock, r)
            ts[r["cmd"]].append(time.perf_counter() - t0)
        time.sleep(every)
    return ts


def measure(lab):
    log("figure 7: control plane")
    n = 10 if lab.quick else 30
    window = 5 if lab.quick else 60
    repeats = 1 if lab.quick else 3
    # From this namespace: the control socket is a path, and `ip netns
    # exec` would add its own setup to every run.
    ctl = lambda sock, *a: [lab.sluicectl, "--socket", sock, "--pin-dir", lab.tb.pin_dir, *a]
    rows = Rows(7)
    with lab.daemon() as d:
        st = time_cmd(ctl(d.socket, "-j", "status"), n)
        hp = time_cmd(ctl(d.socket, "--help"), n)
        rq = time_req(lab, d.socket, {"cmd": "status"}, n)
        bad = time_req(lab, d.socket, {"cmd": "no-such-command"}, n)
        # `standing IFACE` counts the whole standing table afresh: what a
        # status request paid when it counted (every request before
        # 2026-12-01 20:43, one every 10 s after, none now).
        cnt = time_req(lab, d.socket, {"cmd": "standing", "iface": d.iface}, n)
        # Longer than the 10 s the daemon once kept a standing count for.
        mix = time_interleaved(lab, d.socket, [{"cmd": "status"}, {"cmd": "no-such-command"}], 11, 0.05)
    rows.add("status_round_trip_sluicectl", "ms", 1000 * median(st), 1000 * median(hp),
             "sluicectl --help (process start)", samples=[round(1000 * x, 3) for x in st],
             note="`sluicectl -j status`, the whole command (process start, connect, request, reply, print)")
    rows.add("status_round_trip_socket", "ms", 1000 * median(rq), 1000 * median(bad),
             "an unknown command's round trip", samples=[round(1000 * x, 3) for x in rq],
             note="connect, status request, reply, from this process; default sizes (2^18 slots, "
                  "65,536 standing sets)")
    rows.add("standing_count_round_trip_socket", "ms", 1000 * median(cnt), 1000 * median(bad),
             "an unknown command's round trip", samples=[round(1000 * x, 3) for x in cnt],
             note="`standing IFACE`: counts the 65,536 standing sets afresh (batched reads), what status "
                  "no longer does on a request")
    rows.add("status_round_trip_socket_worst", "ms", 1000 * max(mix["status"]),
             1000 * max(mix["no-such-command"]), "the unknown command's worst in the same window",
             samples=[round(1000 * x, 3) for x in sorted(mix["status"])[-5:]],
             note=f"the slowest of {len(mix['status'])} status round trips over 11 s (one every 50 ms, "
                  f"each beside an unknown command's); samples: the 5 slowest")

    trip = 50000
    shed = []
    for rep in range(repeats):
        with lab.daemon("--trip-pps", trip) as d:
            time.sleep(1.1)
            t0 = time.monotonic()
            fl = lab.flood("--dst", lab.tb.host_ip4, "--random-src", "--pps", 200000, "--duration", 15,
                           background=True)
            t_shed = None
            while time.monotonic() - t0 < 15:
                if lab.breaker_state(d) == "shedding":
                    t_shed = time.monotonic() - t0
                    break
                time.sleep(0.02)
            stop(fl, signal.SIGINT, 20)
            shed.append(t_shed)
            log(f"  onset to shedding rep {rep}: {t_shed}")
    # The window rule (docs/architecture.md, "The breaker's rule"): the first
    # tick whose 3 s window averages over --trip-pps, 0.75 s of a flood at 4x
    # it, plus up to a period: 1.75 s at most (trip-periods x period + one
    # period, 4 s, is the bound for a flood only just over it).
    rows.add("flood_onset_to_shedding", "s", median(shed), 1.75, "0.75 s of the flood in the 3 s window, + one 1 s period",
             samples=shed, note=f"random IPv4 sources at 200,000 pps, each under its limit; --trip-pps {trip}")

    with lab.daemon() as a, lab.daemon("--table-size", 1 << 20, iface=lab.acc_if, sock_name="acc.sock") as b:
        time.sleep(1)
        c0 = (proc_cpu_s(a.proc.pid), proc_cpu_s(b.proc.pid))
        t0 = time.monotonic()
        time.sleep(window)
        c1 = (proc_cpu_s(a.proc.pid), proc_cpu_s(b.proc.pid))
        t1 = time.monotonic()
        ra, rb = rss_bytes(a.proc.pid), rss_bytes(b.proc.pid)
    share_a = 100 * (c1[0] - c0[0]) / (t1 - t0)
    share_b = 100 * (c1[1] - c0[1]) / (t1 - t0)
    detail = {"status_s": st, "help_s": hp, "socket_status_s": rq, "socket_unknown_s": bad,
              "socket_standing_s": cnt, "socket_status_11s_s": mix["status"], "socket_unknown_11s_s": mix["no-such-command"],
              "shed_s": shed, "cpu_window_s": t1 - t0, "cpu_share_default_pct": share_a,
              "cpu_share_2e20_pct": share_b, "rss_default": ra, "rss_2e20": rb}
    rows.add("daemon_cpu_share_2e20_slots", "% of one CPU", share_b, share_a, "at the default 2^18 slots",
             note=f"user + system runtime (schedstat) over {window} s, idle network: {share_a:.3f}% at 2^18, "
                  f"{share_b:.3f}% at 2^20")
    return ControlPlane(rows, detail)
