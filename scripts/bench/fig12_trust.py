"""Figure 12: real sources that earned standing, then flood (issue 27),
before and after earned, bounded trust. N bots (1, 10, 100, 1,000; 1, 10,
100 with --quick), each its own address of 198.19.132.0/22 (local to the
attacker's namespace through `ip route add local`, routed to it by the
router: real, answering addresses, not spoofed), each completes one HTTP
request to the host (a handshake: standing), then all flood the host
together with UDP at 150,000 frames a second for 8 s (6 s with --quick),
routed through the router, while a regular client that used the host before
makes 10 requests a second. sluiced runs with --rate 5000 --burst 10000
--trip-pps 10000 --trip-periods 2 --period 0.5 (the issue's own setting);
a build that knows --standing-tenure runs with --standing-tenure 30 (the
default, 300 s, would make each round wait five minutes), and the regular
client's first requests come 32 s before the bots' (its standing predates
the flood by more than the tenure; the bots' does not, as long as their
requests take under 28 s, which the detail's visit_s shows).
Rows: the regular client's requests answered (%), and what the host admitted
a second over the flood (passed, standing, newcomer: nearly all of it the
bots'). After: this tree's sluiced; before: the sluiced of the build in
$SLUICE_BEFORE_BUILD (default /work/before/build, commit 30d29e0, before
issue 27), as figure 11."""

import dataclasses
import json
import time

import sluice_netns
from test_standing import HTTP_CLIENT, HTTP_PORT, start_http

from . import fig11_shapes
from .procs import finish, last_json, log, run, spawn
from .rows import Rows

ARGS = ("--rate", 5000, "--burst", 10000, "--trip-pps", 10000, "--trip-periods", 2, "--period", 0.5)
TENURE_S = 30
TENURE_ARGS = ("--standing-tenure", TENURE_S)
BOTS_NET, BOTS_BASE = "198.19.132.0/22", "198.19.132.1"
FLOOD_PPS = 150000


def regular_name(which, n):
    return f"trust_{n}_bots_{which}_regular_pct"


def admitted_name(which, n):
    return f"trust_{n}_bots_{which}_admitted_pps"


@dataclasses.dataclass
class Trust:
    rows: list
    detail: list | None

    @classmethod
    def from_rows(cls, rows):
        return cls(rows, None)


def http_client(lab, *args, role="client", timeout=120):
    p = run(lab.x(role, "python3", HTTP_CLIENT, lab.tb.host_ip4, HTTP_PORT, *args), check=False, timeout=timeout)
    return json.loads(p.stdout.strip().splitlines()[-1])


def knows_tenure(sluiced):
    p = run([sluiced, "--help"], check=False)
    return "--standing-tenure" in p.stdout


def one_round(lab, sluiced, sluicectl, n, seconds):
    sluice_netns.use_tools(sluiced, sluicectl, lab.traffic)
    tenure = knows_tenure(sluiced)
    try:
        with lab.daemon(*ARGS, *(TENURE_ARGS if tenure else ())) as d:
            warm = http_client(lab, "--count", 3)
            if tenure:
                time.sleep(TENURE_S + 2)
            # each bot: one request from an address of its own
            tv = time.monotonic()
            visits = http_client(lab, "--count", n, "--sources-from", BOTS_BASE, "--timeout", 3, role="attacker",
                                 timeout=60 + 3 * n)
            visit_s = time.monotonic() - tv
            time.sleep(0.5)
            a0, t0 = fig11_shapes.admitted(lab, d), time.monotonic()
            flood = spawn(lab.x("attacker", lab.traffic, "flood", "--iface", lab.tb.attacker_if, "--dst-mac",
                                lab.tb.attacker_gw_mac, "--dst", lab.tb.host_ip4, "--sources", n, "--src-base",
                                BOTS_BASE, "--pps", FLOOD_PPS, "--duration", seconds))
            time.sleep(0.5)
            reg = http_client(lab, "--rate", 10, "--seconds", seconds - 1.0, "--timeout", 1.0)
            rc, out, err = finish(flood, 60)
            sent = last_json(out)["sent"]
            elapsed = time.monotonic() - t0
            a1 = fig11_shapes.admitted(lab, d)
            state = lab.breaker_state(d)
            summary = lab.ctl_request(d.socket, {"cmd": "standing", "iface": d.iface})
            revocations = ((summary.get("standing") or {}).get("share") or {}).get("revocations")
            return {"n": n, "warm_ok": warm["ok"], "visits_ok": visits["ok"], "regular_ok": reg["ok"],
                    "regular_attempted": reg["attempted"], "admitted": a1 - a0, "seconds": elapsed, "sent": sent,
                    "state": state, "revocations": revocations, "tenure_s": TENURE_S if tenure else None,
                    "visit_s": round(visit_s, 1)}
    finally:
        sluice_netns.use_tools(lab.sluiced, lab.sluicectl, lab.traffic)


def measure(lab):
    log("figure 12: real sources with standing flood together, before and after earned, bounded trust")
    seconds = 6 if lab.quick else 8
    counts = (1, 10, 100) if lab.quick else (1, 10, 100, 1000)
    builds = fig11_shapes.builds(lab, 12)
    # the bots' addresses: local to the attacker's namespace, routed to it
    run(lab.x("attacker", "ip", "route", "add", "local", BOTS_NET, "dev", "lo"))
    run(lab.x("router", "ip", "route", "add", BOTS_NET, "via", lab.tb.attacker_ip4))
    http = start_http(lab.tb)
    rows = Rows(12)
    detail = []
    try:
        for n in counts:
            for which, sluiced, sluicectl in builds:
                r = one_round(lab, sluiced, sluicectl, n, seconds)
                r["build"] = which
                detail.append(r)
                pct = 100.0 * r["regular_ok"] / max(r["regular_attempted"], 1)
                note = (f"{n} bots ({r['visits_ok']} completed their request), {FLOOD_PPS} pps together for "
                        f"{seconds} s ({r['sent']} sent); breaker {r['state']} at the end"
                        + ("" if r["revocations"] is None else f", {r['revocations']} revocations")
                        + ("" if r["tenure_s"] is None else
                           f"; --standing-tenure {r['tenure_s']}, the bots' requests took {r['visit_s']} s"))
                rows.add(regular_name(which, n), "% answered", round(pct, 1), 100.0,
                         "every request of the regular client", note=note)
                rows.add(admitted_name(which, n), "pps", round(r["admitted"] / r["seconds"]), FLOOD_PPS,
                         "the flood's rate", note="passed, standing and newcomer over the flood")
    finally:
        http.stop()
        run(lab.x("router", "ip", "route", "del", BOTS_NET, "via", lab.tb.attacker_ip4), check=False)
        run(lab.x("attacker", "ip", "route", "del", "local", BOTS_NET, "dev", "lo"), check=False)
    return Trust(rows, detail)
