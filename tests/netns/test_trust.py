"""Earned, bounded trust (docs/security.md, "The trust model"): standing buys a
fair share, not a blank check, and no one grants it at will.

- 50 real addresses on the attacker's side (each its own address, routed, not
  spoofed) each complete an HTTP request, so each earns standing; then they
  flood together at several times trip-pps. The regular client keeps >= 99%
  of its requests; the daemon holds the standing sources to a share and
  revokes the floods' standing within seconds, naming them in its log and in
  `sluicectl standing`.
- One real address floods under trip-pps but over --rate: it is held to its
  bound (--rate + its standing share), the breaker keeps serving, the
  regular client is untouched.
- An unprivileged user's 100,000 UDP connect()s grant at most its quota
  (--grant-burst + --grant-rate x seconds) and evict no source with a
  handshake behind it; a refused TCP connect() grants nothing; the host's
  connection to one of its own addresses grants nothing.
- `sluicectl standing revoke`: the address loses its standing and cannot
  earn it again during its penalty, even with a completed handshake.
- A TCP connection older than the lapse keeps its peer's standing.
- Tenure: 50 bots within their share and a regular client whose standing
  predates the flood. With one level for all the regular is held to the
  bots' level (or revoked as over 4x it); with --standing-tenure it keeps
  >= 99% of its requests.

Each test prints one line "TRUST <name>: ..." with what it measured.
"""

import json
import os
import re
import subprocess
import sys
import time
import unittest

from sluice_netns import (Daemon, Testbed, Traffic, counters, counters_after, ctl, ctl_json, main, require_root,
                          settle, wait_until)
from test_standing import (HTTP_CLIENT, HTTP_PORT, StandingView, breaker_state, http_requests, iface_status,
                           inject_bg, start_http, standing_of)

SETS = 1024
ARGS = ("--period", "0.5", "--rate", "5000", "--burst", "10000", "--trip-pps", "10000", "--trip-periods", "2",
        "--hold", "120", "--standing-sets", str(SETS))
BOTS = 50
TENURE_S = 8  # test_tenure_puts_standing_from_before_the_flood_first
# 198.18.3.160 .. 209: on the attacker's link, beside its own .2, and used by
# no other test: the feeders of every daemon on the machine sit at the cgroup
# root, so these bots' handshakes grant them standing in the tables of other
# tests' daemons too (test_upstream's flooders are 198.18.3.10-12). The two
# tests here that run bots run one at a time (RESOURCE_LOCK attacker_bots,
# tests/netns/CMakeLists.txt): side by side, one's bots were tenured in the
# other's table, or filled its /24's prefix quota.
BOT_BASE = 160
# addresses of the attacker's no other test (nor the other here) uses: a
# connection that closes, a refused connect()
CLOSES = "198.18.3.240"
REFUSED = "198.18.3.241"
# The grants test's 100,000 UDP connect()s go round the 512 addresses of this
# /23, which the testbed routes and no other test uses. (They went round the
# attacker's and the client's /24s once: a grant of that sweep gave REFUSED
# standing in CI, and the other tests' daemons granted their addresses.)
SWEEP_NET = "198.19.160.0/23"
# the UDP peer a local client asks (no other test names it), and one a
# connected UDP socket holds open
UDP_PEER = "198.18.3.242"
UDP_HELD = "198.18.3.245"
# the prefix quota's test: UDP peers 198.18.2.100-199 (in the regular
# client's /24), a second real client of that /24, a late UDP peer
QUOTA_BASE = 100
QUOTA_CLIENT = "198.18.2.60"
QUOTA_LATE = "198.18.2.222"
# nobody's UDP connect()s, as test 3's: an unprivileged user's grants
NOBODY_CONNECTS = (
    "import socket, sys\n"
    "for a in sys.argv[1:]:\n"
    "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "    s.connect((a, 53))\n"
    "    s.close()\n")


def report(name, **kv):
    print(f"TRUST {name}: " + ", ".join(f"{k}={v}" for k, v in kv.items()), file=sys.stderr, flush=True)


def bot_addrs(n=BOTS):
    return [f"198.18.3.{BOT_BASE + i}" for i in range(n)]


# One HTTP request from each address given (bound to it): a real handshake each.
VISIT = r"""
import json, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
ok = 0
for a in sys.argv[3:]:
    try:
        c = socket.create_connection((host, port), timeout=3, source_address=(a, 0))
        c.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        ok += c.recv(12).startswith(b"HTTP/1.")
        c.close()
    except OSError:
        pass
print(json.dumps({"ok": ok}))
"""


def add_addresses(tb, addrs, role="attacker"):
    for a in addrs:
        tb.exec(role, ["ip", "addr", "add", f"{a}/24", "dev", getattr(tb, role + "_if")], check=True)


def visit(tb, addrs, role="attacker"):
    p = tb.exec(role, ["python3", "-c", VISIT, tb.host_ip4, str(HTTP_PORT)] + addrs, timeout=120)
    return json.loads(p.stdout.strip().splitlines()[-1])["ok"]


# The unprivileged local users of the tests that make UDP grants, a uid each.
# The feeders sit at the cgroup root, so every daemon running beside a test
# sees its sockets too and charges them to the uid's grant buckets in its own
# maps: under one shared uid (nobody), one test's 100,000 connect()s emptied
# the buckets another test's daemon kept for it, and that test's 100
# connect()s granted nothing. (No passwd entry is needed for a uid. The two
# tests also share a /24's quota that way: tests/netns/CMakeLists.txt runs
# them one at a time.)
UID_GRANTS = 40001
UID_QUOTA = 40002


def as_user(uid):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


def nobody_connects(tb, addrs, uid=UID_QUOTA):
    tb.exec("host", as_user(uid) + ["/usr/bin/python3", "-c", NOBODY_CONNECTS] + addrs, check=True, timeout=120)


def routed_flood(tb, *args):
    """UDP from the attacker, routed by the router to the host (as a real
    attack arrives), paced, in a process of its own."""
    return Traffic(tb.ns_attacker, "flood", "--iface", tb.attacker_if, "--dst-mac", tb.attacker_gw_mac,
                   "--dst", tb.host_ip4, *args, realtime=True)


class Trust(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_real_sources_with_standing_flood_together(self):
        with Testbed("trust1") as tb, Daemon(tb, *ARGS) as d:
            settle(tb)
            tb.xdp_tx_peer()  # the SYN cookies' SYN-ACKs leave through the router's veth
            view = StandingView(tb)
            http = start_http(tb)
            try:
                warm = http_requests(tb, 3)
                self.assertEqual(warm["ok"], 3, warm)
                bots = bot_addrs()
                add_addresses(tb, bots)
                self.assertEqual(visit(tb, bots), BOTS, "every bot completed its request")
                wait_until(lambda: all(view.has_standing(a) for a in bots[:5] + bots[-5:]), 5,
                           what="the bots' handshakes to grant them standing")
                wait_until(lambda: view.has_standing(tb.client_ip4), 5, what="the regular client's standing")
                c0 = counters(tb)
                # 50 x 1,200 pps: each under --rate, together 6x trip-pps
                with routed_flood(tb, "--sources", BOTS, "--src-base", bots[0], "--pps", 60000,
                                  "--duration", 25) as flood:
                    t0 = time.monotonic()
                    wait_until(lambda: breaker_state(tb) == "shedding", 10, interval=0.1,
                               what="the breaker to shed")
                    t_shed = time.monotonic() - t0
                    try:
                        wait_until(lambda: not any(view.has_standing(a) for a in bots), 15, interval=0.25,
                                   what="every bot to lose its standing")
                    except AssertionError:
                        print(d.output()[-6000:], file=sys.stderr)
                        print(ctl(tb, "standing", tb.host_if).stdout, ctl(tb, "stats", tb.host_if).stdout,
                              file=sys.stderr)
                        raise
                    t_revoked = time.monotonic() - t0
                    reg = http_requests(tb, 100, timeout=2.0)
                    state = breaker_state(tb)
                    c1 = counters(tb)
                    view_reply = ctl_json(tb, "standing", tb.host_if)
                    fr = flood.result(timeout=60)
                log = d.output()
                revoked_lines = [l for l in log.splitlines() if "revoked" in l]
                named = {m.group(1) for m in (re.search(r"standing of (\S+) ", l) for l in revoked_lines) if m}
                share = view_reply["standing"]["share"]
                report("1 real sources", flood_pps=fr["pps"], shed_after_s=round(t_shed, 2),
                       all_revoked_after_s=round(t_revoked, 2), regular_ok=reg["ok"], regular_fail=reg["fail"],
                       state=state, revocations=share["revocations"], named=len(named & set(bots)),
                       standing=c1["standing"] - c0["standing"], drop_valve=c1["drop_valve"] - c0["drop_valve"],
                       first=revoked_lines[:1])
                self.assertGreaterEqual(reg["ok"], 99, f"the regular client keeps >= 99% of its requests: {reg}")
                self.assertEqual(state, "shedding", "the flood is still shed")
                self.assertLess(t_revoked, 12, "the flooding addresses lose standing within seconds")
                self.assertEqual(named & set(bots), set(bots), f"the log names every bot: {revoked_lines[:3]}")
                self.assertGreaterEqual(share["revocations"], BOTS, share)
                listed = {e["source"] for e in share["recent"]}
                self.assertTrue(listed and listed <= set(bots), f"`sluicectl standing` lists them: {listed}")
                self.assertTrue(all("share" in e["why"] for e in share["recent"]), share["recent"][:2])
                self.assertTrue(view.has_standing(tb.client_ip4), "the regular client keeps its standing")
                self.assertEqual(c1["drop_valve"] - c0["drop_valve"], 0, "the valve never closed")
                # a revoked bot's new handshake (a SYN cookie's, while shedding)
                # does not buy it back during its penalty
                c2 = counters(tb)
                visit(tb, bots[:1])
                time.sleep(0.5)
                c3 = counters(tb)
                report("1 after", cookie_proved=c3["cookie_proved"] - c2["cookie_proved"],
                       has_standing=view.has_standing(bots[0]))
                self.assertFalse(view.has_standing(bots[0]), "no standing during the penalty")
            finally:
                http.stop()

    def test_one_real_source_over_rate_under_trip(self):
        with Testbed("trust2") as tb, Daemon(tb, *ARGS, "--standing-rate", "1000", "--standing-burst", "1000") as d:
            settle(tb)
            view = StandingView(tb)
            http = start_http(tb)
            try:
                self.assertEqual(http_requests(tb, 2)["ok"], 2)
                p = tb.exec("attacker", ["python3", HTTP_CLIENT, tb.host_ip4, str(HTTP_PORT), "--count", "1"])
                self.assertEqual(json.loads(p.stdout)["ok"], 1, p.stdout)
                wait_until(lambda: view.has_standing(tb.attacker_ip4), 5, what="the attacker's standing")
                c0 = counters(tb)
                with routed_flood(tb, "--src", tb.attacker_ip4, "--pps", 8000, "--duration", 10) as flood:
                    reg = http_requests(tb, 50, timeout=2.0)
                    fr = flood.result(timeout=60)
                c1 = counters(tb)
                secs = flood.ended - flood.started
                admitted = (c1["passed"] - c0["passed"]) + (c1["standing"] - c0["standing"])
                # its bound: --rate + --standing-rate, plus both bursts once
                bound = (5000 + 1000) * secs + 10000 + 1000 + 2000
                report("2 one source", flood_pps=fr["pps"], seconds=round(secs, 2), admitted=admitted,
                       bound=int(bound), drop_rate=c1["drop_rate"] - c0["drop_rate"], regular_ok=reg["ok"],
                       state=breaker_state(tb))
                self.assertLess(admitted, bound, "held to --rate + its standing share")
                self.assertGreaterEqual(c1["drop_rate"] - c0["drop_rate"], fr["sent"] - bound, "the rest was dropped")
                self.assertEqual(reg["ok"], 50, f"the host's other clients are untouched: {reg}")
                self.assertEqual(breaker_state(tb), "serving")
            finally:
                http.stop()

    def test_grants_are_proved_and_bounded(self):
        with Testbed("trust3") as tb, Daemon(tb, *ARGS, "--grant-rate", "10", "--grant-burst", "100") as d:
            settle(tb)
            view = StandingView(tb)
            http = start_http(tb)
            try:
                self.assertEqual(http_requests(tb, 1)["ok"], 1)
                wait_until(lambda: view.has_standing(tb.client_ip4), 5, what="the regular client's standing")
                before = view.live_entries()
                # 100,000 UDP connect()s as a local user, to addresses of its
                # choosing: the 512 of SWEEP_NET, round and round
                script = ("import socket, ipaddress, time\n"
                          "t = time.monotonic()\n"
                          f"base = int(ipaddress.ip_address('{SWEEP_NET.split('/')[0]}'))\n"
                          "for i in range(100000):\n"
                          "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                          "    s.connect((str(ipaddress.ip_address(base + i % 512)), 53))\n"
                          "    s.close()\n"
                          "print(time.monotonic() - t)\n")
                p = tb.exec("host", as_user(UID_GRANTS) + ["/usr/bin/python3", "-c", script], timeout=300)
                secs = float(p.stdout.strip())
                after = view.live_entries()
                quota = 100 + 10 * secs
                # a refused TCP connect() grants nothing
                self.assertFalse(view.has_standing(REFUSED), f"before its connect(): {view.entry(REFUSED)}")
                add_addresses(tb, [REFUSED])
                refused = tb.exec("host", ["python3", "-c",
                                           "import socket,sys\ntry:\n socket.create_connection((sys.argv[1], 8799), timeout=2)\n"
                                           "except OSError as e:\n print(type(e).__name__)\n", REFUSED])
                # the host's own address: a connection to itself
                own = tb.exec("host", ["python3", "-c",
                                       "import socket,sys\nc = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)\n"
                                       "c.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); print(c.recv(12))\n",
                                       tb.host_ip4, str(HTTP_PORT)])
                time.sleep(0.3)
                report("3 grants", udp_connects=100000, seconds=round(secs, 2), entries_before=before,
                       entries_after=after, quota=int(quota), refused=refused.stdout.strip(),
                       own=own.stdout.strip(), client=view.entry(tb.client_ip4))
                # (+ 25: the feeders sit at the cgroup root, so other testbeds
                # running beside this one add their own peers to this table)
                self.assertLessEqual(after - before, quota + 25, "at most the user's quota of grants")
                self.assertGreater(after - before, 50, "its quota was granted (the feeders work)")
                self.assertTrue(view.has_standing(tb.client_ip4), "no handshake's source was evicted")
                self.assertIn("ConnectionRefused", refused.stdout)
                self.assertFalse(view.has_standing(REFUSED),
                                 f"the refused connect() granted nothing: {view.entry(REFUSED)}")
                self.assertIsNone(view.entry(tb.host_ip4), "the host's own address has no standing")
                self.assertIn("HTTP", own.stdout)
            finally:
                http.stop()

    def test_operator_revokes(self):
        with Testbed("trust4") as tb, Daemon(tb, *ARGS, "--revoke-penalty", "30") as d:
            settle(tb)
            view = StandingView(tb)
            http = start_http(tb)
            try:
                self.assertEqual(http_requests(tb, 1)["ok"], 1)
                wait_until(lambda: view.has_standing(tb.client_ip4), 5, what="the client's standing")
                p = ctl(tb, "standing", "revoke", tb.host_if, tb.client_ip4)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("lost its standing", p.stdout)
                self.assertFalse(view.has_standing(tb.client_ip4))
                self.assertEqual(http_requests(tb, 2)["ok"], 2, "serving: it is a newcomer, not shut out")
                time.sleep(0.3)
                entry = standing_of(tb, tb.client_ip4)
                report("4 revoke", out=p.stdout.strip(), entry=entry)
                self.assertFalse(entry["has_standing"], "a handshake during the penalty grants nothing")
                self.assertEqual(entry["penalty"]["revocations"], 1, entry)
                self.assertIn("by the operator", d.output())
                bad = ctl(tb, "standing", "revoke", tb.host_if, "not-an-address")
                self.assertEqual(bad.returncode, 2, bad.stderr)
            finally:
                http.stop()


    def test_a_connection_older_than_the_lapse_keeps_its_peers_standing(self):
        """--standing-lapse 2: the peer of a TCP connection that stays open
        (idle) for 8 s still has standing (sluiced refreshes the peers of
        established connections every quarter of the lapse); the peer of a
        connection that closed lapses. The peer of a connected UDP socket
        held open is refreshed as what its connect() granted: UDP from that
        port alone, never widened to every frame."""
        with Testbed("trust5") as tb, Daemon(tb, *ARGS, "--standing-lapse", "2") as d:
            settle(tb)
            view = StandingView(tb)
            http = start_http(tb)
            try:
                proc = subprocess.Popen(["ip", "netns", "exec", tb.ns_client, "python3", "-c",
                                         "import socket, sys, time\n"
                                         "c = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n"
                                         "print('open', flush=True); time.sleep(8)\n",
                                         tb.host_ip4, str(HTTP_PORT)], stdout=subprocess.PIPE, text=True)
                # the host's own UDP client socket, connected and held open
                udp = subprocess.Popen(["ip", "netns", "exec", tb.ns_host, "python3", "-c",
                                        "import socket, sys, time\n"
                                        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                                        "s.connect((sys.argv[1], 5300)); print('open', flush=True); time.sleep(8)\n",
                                        UDP_HELD], stdout=subprocess.PIPE, text=True)
                try:
                    self.assertEqual(proc.stdout.readline().strip(), "open")
                    add_addresses(tb, [CLOSES])
                    self.assertEqual(visit(tb, [CLOSES]), 1, "a connection that closes")
                    wait_until(lambda: view.has_standing(tb.client_ip4) and view.has_standing(CLOSES), 5,
                               what="both peers' standing")
                    self.assertEqual(udp.stdout.readline().strip(), "open")
                    time.sleep(6)
                    kept, lapsed = view.has_standing(tb.client_ip4), not view.has_standing(CLOSES)
                    held = standing_of(tb, UDP_HELD)
                finally:
                    for p in (proc, udp):
                        p.kill()
                        p.wait(timeout=10)
                        p.stdout.close()
                report("5 long-lived", kept=kept, closed_lapsed=lapsed, udp_held=json.dumps(held))
                self.assertTrue(kept, "the open connection's peer keeps its standing past the lapse")
                self.assertTrue(lapsed, "the closed connection's peer lapses")
                self.assertTrue(held["has_standing"], f"the held UDP socket's peer is refreshed: {held}")
                self.assertEqual((held["reason"], held["udp_port"]), ("udp", 5300), held)
            finally:
                http.stop()

    def test_a_udp_grant_holds_for_its_peers_port_alone(self):
        """A local client's connect() to UDP_PEER:5353 grants the peer
        standing for UDP from port 5353 alone: while shedding (newcomer
        budget 0) its answers from 5353 pass as standing; the same address
        from another port, or TCP, is shed."""
        with Testbed("trust6") as tb, Daemon(tb, *ARGS, "--newcomer-pps", "0") as d:
            settle(tb)
            view = StandingView(tb)
            tb.exec("host", ["python3", "-c", "import socket, sys\n"
                             "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                             "s.connect((sys.argv[1], 5353)); s.send(b'q')\n", UDP_PEER], check=True)
            wait_until(lambda: view.has_standing(UDP_PEER), 5, what="the UDP peer's standing")
            said = standing_of(tb, UDP_PEER)
            ctl(tb, "breaker", "trip", tb.host_if, check=True)
            c0 = counters(tb)
            inject_bg(tb, "--src", UDP_PEER, "--src-port", 5353, "--pps", 1000, "--count", 100).result()
            c1 = counters_after(tb, c0, 100)
            inject_bg(tb, "--src", UDP_PEER, "--src-port", 5354, "--pps", 1000, "--count", 100).result()
            c2 = counters_after(tb, c1, 100)
            report("6 udp port", lookup=json.dumps(said), from_5353_standing=c1["standing"] - c0["standing"],
                   from_5354_standing=c2["standing"] - c1["standing"], from_5354_shed=c2["drop_shed"] - c1["drop_shed"])
            self.assertEqual(said["reason"], "udp", said)
            self.assertEqual(said["udp_port"], 5353, said)
            self.assertEqual(c1["standing"] - c0["standing"], 100, "its answers from the port asked pass")
            self.assertEqual(c2["standing"] - c1["standing"], 0, "another port of the address has no standing")
            self.assertEqual(c2["drop_shed"] - c1["drop_shed"], 100, "... and is shed (newcomer budget 0)")
            out = ctl(tb, "standing", tb.host_if, UDP_PEER).stdout
            self.assertIn("5353", out, out)

    def test_tenure_puts_standing_from_before_the_flood_first(self):
        """--standing-tenure: 50 bots (real addresses) each complete a
        request just before they flood within their share (60 pps each, 3x
        the level, so none is revoked), over a standing capacity of 1,000 pps
        while shedding. The regular client, whose standing is 12 s older,
        makes 10 requests a second (about 60 frames a second). With one level
        for all (--standing-tenure 0) that level is about 20 pps and the
        regular loses most of its requests; with --standing-tenure 8 the
        regular is tenured, keeps its own rate and >= 99% of its requests,
        and the bots share what it leaves (shown by `sluicectl standing` and
        the JSON)."""
        for tenure in (TENURE_S, 0):
            with Testbed(f"tenure{tenure}") as tb, Daemon(tb, *ARGS, "--standing-pps", "1000",
                                                         "--standing-tenure", str(tenure)) as d:
                settle(tb)
                view = StandingView(tb)
                http = start_http(tb)
                try:
                    self.assertEqual(http_requests(tb, 3)["ok"], 3)
                    wait_until(lambda: view.has_standing(tb.client_ip4), 5, what="the regular client's standing")
                    # The line is drawn TENURE_S (in ticks of 2^30 ns, so
                    # 8.6 s) before the contention begins. The regular's grant
                    # must be before it and the bots' after it: 12 s between
                    # them leaves the bots 8 s from their grants to the first
                    # contended period. With a tenure of 3 that gap was 2 s,
                    # and the sanitized build overran it twice in CI (the bots
                    # were tenured too: level 19-20 pps, newer 1).
                    time.sleep(tenure + 4)
                    bots = bot_addrs()
                    add_addresses(tb, bots)
                    self.assertEqual(visit(tb, bots), BOTS, "every bot completed its request")
                    wait_until(lambda: all(view.has_standing(a) for a in bots[:5] + bots[-5:]), 5,
                               what="the bots' standing")
                    ctl(tb, "breaker", "trip", tb.host_if, check=True)
                    with routed_flood(tb, "--sources", BOTS, "--src-base", bots[0], "--pps", BOTS * 60,
                                      "--duration", 14) as flood:
                        wait_until(lambda: ctl_json(tb, "standing", tb.host_if)["standing"]["share"]["level_pps"]
                                   is not None or ctl_json(tb, "standing", tb.host_if)["standing"]["share"]
                                   ["newer_level_pps"] is not None, 5, interval=0.1,
                                   what="the standing sources to contend")
                        time.sleep(1.0)
                        p = tb.exec("client", ["python3", HTTP_CLIENT, tb.host_ip4, str(HTTP_PORT), "--rate", "10",
                                               "--seconds", "6", "--timeout", "1.0"], timeout=60)
                        reg = json.loads(p.stdout.strip().splitlines()[-1])
                        share = ctl_json(tb, "standing", tb.host_if)["standing"]["share"]
                        revoked = {e["source"] for e in share["recent"]}
                        text = ctl(tb, "standing", tb.host_if).stdout
                        state = breaker_state(tb)
                        kept = sum(view.has_standing(a) for a in bots)
                        flood.result(timeout=60)
                    contention = [l for l in d.output().splitlines() if "pps they may take" in l]
                    report(f"8 tenure {tenure}", regular_ok=reg["ok"], regular_attempted=reg["attempted"],
                           share=json.dumps({k: share[k] for k in ("level_pps", "newer_level_pps", "tenure_s")}),
                           bots_with_standing=kept, state=state, contention=contention[:1])
                    self.assertEqual(state, "shedding")
                    self.assertEqual(kept, BOTS, "the bots stay within their share: none revoked")
                    if tenure:
                        self.assertGreaterEqual(reg["ok"], 0.99 * reg["attempted"],
                                                f"the tenured regular keeps >= 99% of its requests: {reg}")
                        self.assertIsNotNone(share["newer_level_pps"], share)
                        self.assertLess(share["newer_level_pps"], 1000 / BOTS, share)
                        self.assertEqual(share["tenure_s"], TENURE_S, share)
                        self.assertIn("pps each granted since", text, text)
                        self.assertNotIn(tb.client_ip4, revoked, "the tenured regular keeps its standing")
                    else:
                        # one level for all, about 20 pps: the regular (about
                        # 60-80 frames a second) is held to the bots' share and
                        # loses requests, or is itself revoked as over 4x it
                        # (seen: "offered 78 pps > 4 x share 19 pps"), and is
                        # then a newcomer
                        self.assertIsNone(share["newer_level_pps"], share)
                        self.assertLessEqual(share["level_pps"], 1000 / BOTS, share)
                        self.assertTrue(reg["ok"] < 0.9 * reg["attempted"] or tb.client_ip4 in revoked,
                                        f"one level for all: the regular is held to the bots' share: {reg} {share}")
                finally:
                    http.stop()

    def test_one_prefix_holds_only_its_quota(self):
        """--standing-prefix-quota 8: an unprivileged user's UDP connect()s to
        100 addresses of the regular client's /24 (each within its grant
        budget) get standing for 7 of them at once (8 with the regular: the
        data plane counts each new source as it grants it), and a late one
        gets nothing; a new real client of the full prefix (a handshake)
        still earns standing, and the sweep then evicts a UDP entry for it,
        never the regular client's handshake."""
        quota = 8
        with Testbed("trust7") as tb, Daemon(tb, *ARGS, "--standing-prefix-quota", str(quota), "--grant-burst",
                                             "200") as d:
            settle(tb)
            view = StandingView(tb)
            http = start_http(tb)
            try:
                self.assertEqual(http_requests(tb, 1)["ok"], 1)
                wait_until(lambda: view.has_standing(tb.client_ip4), 5, what="the regular client's standing")
                peers = [f"198.18.2.{QUOTA_BASE + i}" for i in range(100)]
                nobody_connects(tb, peers)
                granted = sum(view.has_standing(a) for a in peers)
                nobody_connects(tb, [QUOTA_LATE])
                late = view.has_standing(QUOTA_LATE)
                add_addresses(tb, [QUOTA_CLIENT], role="client")
                new_client = visit(tb, [QUOTA_CLIENT], role="client")
                wait_until(lambda: view.has_standing(QUOTA_CLIENT), 5, what="the new real client's standing")
                # the handshake took the prefix to 9: a whole sweep is 5 s,
                # two and a margin for the one that sees it
                try:
                    wait_until(lambda: sum(view.has_standing(a) for a in peers) <= quota - 2, 14, interval=0.5,
                               what="a UDP entry to be evicted for the handshake")
                except AssertionError:
                    print(d.output()[-3000:], file=sys.stderr)
                    raise
                kept = sum(view.has_standing(a) for a in peers)
                summary = ctl_json(tb, "standing", tb.host_if)["standing"]["prefix_quota"]
                report("7 prefix quota", udp_granted=granted, kept_after_sweep=kept, summary=json.dumps(summary),
                       late_udp=late, new_client=new_client, regular=view.entry(tb.client_ip4))
                self.assertEqual(granted, quota - 1, "the UDP grants stop at the quota at once")
                self.assertFalse(late, "a new UDP peer of a full prefix earns nothing")
                self.assertEqual(new_client, 1)
                self.assertTrue(view.has_standing(QUOTA_CLIENT), "the new client's handshake was not evicted")
                self.assertTrue(view.has_standing(tb.client_ip4), "the regular's handshake was not evicted")
                self.assertEqual(kept, quota - 2, "one UDP entry went for the handshake")
                self.assertEqual(summary["quota"], quota, summary)
                self.assertGreaterEqual(summary["prefixes_full"], 1, summary)
                self.assertGreaterEqual(summary["evictions"], 1, summary)
                self.assertIn("more than their quota", d.output())
            finally:
                http.stop()

    def test_feeder_cgroup_limits_who_grants(self):
        """--feeder-cgroup DIR: a UDP client socket of a process in DIR grants
        its peer standing; the same call from outside it (the root cgroup)
        grants nothing. The cgroup v2 hierarchy is mounted under /run for the
        test (`ip netns exec` remounts /sys, and the cgroup mounts under it
        go), a child made there and removed on every exit path."""
        mnt = f"/run/sluice-cg-{os.getpid()}-{os.urandom(3).hex()}"
        os.makedirs(mnt)
        subprocess.run(["mount", "-t", "cgroup2", "none", mnt], check=True)
        child = os.path.join(mnt, "sluice-test-feeders")
        try:
            os.mkdir(child)
            with Testbed("trust8") as tb, Daemon(tb, *ARGS, "--feeder-cgroup", child) as d:
                settle(tb)
                view = StandingView(tb)
                ask = ("import socket, sys\n"
                       "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                       "s.connect((sys.argv[1], 53))\n")
                inside, outside = "198.18.3.243", "198.18.3.244"
                subprocess.run(["sh", "-c", f'echo $$ > {child}/cgroup.procs && exec ip netns exec {tb.ns_host} '
                                f'python3 -c "$0" "$1"', ask, inside], check=True, timeout=30)
                tb.exec("host", ["python3", "-c", ask, outside], check=True)
                wait_until(lambda: view.has_standing(inside), 5, what="the cgroup's grant")
                time.sleep(0.3)
                report("8 feeder cgroup", inside=view.entry(inside), outside=view.entry(outside))
                self.assertTrue(view.has_standing(inside), "a socket of the cgroup grants")
                self.assertFalse(view.has_standing(outside), "a socket outside it grants nothing")
        finally:
            if os.path.isdir(child):
                os.rmdir(child)
            subprocess.run(["umount", mnt], check=False)
            os.rmdir(mnt)


if __name__ == "__main__":
    main()
