"""SYN cookies from XDP, end to end: a real HTTP server on the protected host,
a random-source spoofed SYN flood that trips the breaker, and a visitor the
host has never seen (docs/architecture.md, "SYN cookies").

- With --newcomer-pps 0 only a cookie can let a visitor in: of 100 visitors,
  each from an address the host never saw, making one request on a new TCP
  connection, >= 99% are served and >= 95% complete on their first SYN; each
  earns standing with reason "cookie", so a visitor's later connections
  pass by its standing (no cookie again); the cookie sysctls are armed while
  shedding (shown in status, with what was there) and put back as they were
  when sluiced exits.
- SIGKILL while shedding: the program keeps answering (the visitor is still
  served), and a restarted daemon adopts the armed sysctls, with the values
  from before, and puts those back when it exits.
- --cookies off: the visitor meets the flood as before cookies (no SYN-ACK
  from the program; with no newcomer budget, no connection at all).
- A spoofed SYN flood naming one victim /24 (its sources all in it) gets at
  most --cookie-dest-pps x time + its burst SYN-ACKs sent toward it (counted
  at the router, the window bracketed by the clock around the whole flood),
  the rest drop_cookie_reflect, while never-seen visitors from another /24
  still get their cookies and are served.
- No XDP program on the veth's peer (the router's side): XDP_TX's SYN-ACKs
  could not leave, so sluiced keeps cookies off there (status says why and
  the fix, the sysctls stay as they were, cookie_sent stays 0 under the SYN
  flood) and the newcomer budget serves the visitors; an XDP program
  attached to the peer while it runs turns them on within a few periods.

The visitors connect from addresses of their own (a /24 of 198.19.64.0/18
made local in the client namespace and routed to it by the router), so that
no other test's client can have given them standing: the cgroup feeders see
every socket of the machine. Each test prints one line "COOKIES <name>: ..." with what it
measured.
"""

import json
import os
import signal
import socket
import sys
import time
import unittest

from sluice_netns import (Daemon, Testbed, Traffic, counters, ctl, ctl_json, dataplane_now_ns, main, pinned_config,
                          require_root, SOURCE_DIR, wait_until)

HTTP_PORT = 8080
HTTP_CLIENT = os.path.join(SOURCE_DIR, "tests", "tools", "http_client.py")
# The visitors are 100 addresses of one /24, each proved by its cookie while
# shedding: the prefix quota is raised over them (at the default of 64 a /24,
# counted as grants are made, the 65th would earn no standing, and with no
# newcomer budget its request after the handshake would be shed).
DAEMON_ARGS = ("--period", "0.2", "--trip-pps", "5000", "--trip-periods", "2", "--hold", "120",
               "--newcomer-pps", "0", "--standing-sets", "1024", "--standing-prefix-quota", "256")
FLOOD_PPS = 40000
SYSCTLS = ("net.ipv4.tcp_syncookies", "net.ipv4.tcp_timestamps")


def report(name, **kv):
    print(f"COOKIES {name}: " + ", ".join(f"{k}={v}" for k, v in kv.items()), file=sys.stderr, flush=True)


# The visitor /24s this process holds (see visitor_net).
_visitor_claims = []


def visitor_net():
    """A /24 of 198.19.64.0/18 no other running test uses; its first address.
    Each test claims its /24 by binding an abstract unix socket named for it
    in the root namespace, which the kernel releases when the test's process
    ends, however it ends. (Drawn by chance alone, two tests side by side
    drew the same /24 once: the feeders of every daemon sit at the cgroup
    root, so one test's visitors had standing in the other's table, and its
    visitors' ACKs proved no cookie.)"""
    first = int.from_bytes(os.urandom(1), "big") % 64
    for i in range(64):
        n = (first + i) % 64
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            claim.bind(f"\0sluice-test-visitor-net-{n}")
        except OSError:
            claim.close()
            continue
        _visitor_claims.append(claim)
        return f"198.19.{64 + n}.1"
    raise AssertionError("every visitor /24 of 198.19.64.0/18 is held by a running test")


def add_visitors(tb, first, peer=True):
    """The /24 of `first` local in the client namespace, its replies routed
    back to the client; and (peer) the router's veth ready for the SYN-ACKs
    the program sends (XDP_TX)."""
    if peer:
        tb.xdp_tx_peer()
    net = first.rsplit(".", 1)[0] + ".0/24"
    tb.exec("client", ["ip", "route", "add", "local", net, "dev", "lo"])
    tb.exec("router", ["ip", "route", "add", net, "via", tb.client_ip4])


def sysctls(tb):
    out = {}
    for name in SYSCTLS:
        out[name] = int(tb.exec("host", ["sysctl", "-n", name]).stdout.strip())
    return out


def start_http(tb):
    from test_standing import start_http as start
    return start(tb)


def visits(tb, visitor, n, timeout=3.0, each_new=False):
    """n requests from visitor, or with each_new from visitor + i (a new
    visitor each)."""
    p = tb.exec("client", ["python3", HTTP_CLIENT, tb.host_ip4, str(HTTP_PORT), "--count", str(n),
                           "--timeout", str(timeout), "--sources-from" if each_new else "--source", visitor],
                timeout=60 + n * timeout)
    return json.loads(p.stdout.strip().splitlines()[-1])


def syn_flood(tb, seconds=120):
    """Spoofed SYNs to the HTTP port from random sources, injected into veth-host."""
    return Traffic(tb.inject_ns, "flood", "--iface", tb.inject_if, "--dst-mac", tb.inject_dst_mac,
                   "--dst", tb.host_ip4, "--random-src", "--syn", "--port", HTTP_PORT, "--pps", FLOOD_PPS,
                   "--duration", seconds)


def iface_status(tb):
    return ctl_json(tb, "status")["interfaces"][0]


def standing_of(tb, addr):
    p = ctl(tb, "-j", "standing", tb.host_if, addr)
    if p.returncode not in (0, 1):
        raise AssertionError(f"sluicectl standing {addr} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def delta(c2, c1, *names):
    return {n: c2[n] - c1[n] for n in names}


OUTCOMES = ("cookie_sent", "cookie_proved", "drop_cookie", "drop_cookie_budget", "drop_cookie_unfit",
            "drop_cookie_reflect", "drop_shed", "newcomer")
# The victim of the reflection test: a /24 no other test uses (its SYN-ACKs
# go nowhere past the router).
VICTIM_NET = "198.19.140.0/24"


def count_synacks_toward(tb, net):
    """A counter in the router of the SYN-ACKs toward `net` that reach it
    (the program's XDP_TX: they come in on the router's veth to the host);
    returns a function that reads it."""
    nft = ["nft"]
    tb.exec("router", nft + ["add", "table", "ip", "reflect"])
    tb.exec("router", nft + ["add", "counter", "ip", "reflect", "synacks"])
    tb.exec("router", nft + ["add", "chain", "ip", "reflect", "pre",
                             "{ type filter hook prerouting priority -300; }"])
    tb.exec("router", nft + ["add", "rule", "ip", "reflect", "pre", "ip", "daddr", net, "tcp", "flags", "&",
                             "(syn|ack)", "==", "syn|ack", "counter", "name", "synacks"])

    def read():
        out = json.loads(tb.exec("router", nft + ["-j", "list", "counter", "ip", "reflect", "synacks"]).stdout)
        return next(o["counter"]["packets"] for o in out["nftables"] if "counter" in o)
    return read


class Cookies(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def shedding_under_flood(self, tb, d, flood):
        wait_until(lambda: iface_status(tb)["breaker"]["state"] == "shedding", 30,
                   what="the SYN flood to trip the breaker")

    def wait_for_the_syn_stamps(self, tb):
        """Wait out the grace after the cookie path came into force
        (config.cookie_acks_stamped_from, on the program's clock), so that
        what follows runs with every ACK's source asked for its SYN stamp.
        The seconds waited."""
        stamped_from = pinned_config(tb)["cookie_acks_stamped_from"]
        self.assertNotEqual(stamped_from, 0, "the SYN stamps are asked while the cookie path is in force")
        wait = (stamped_from - dataplane_now_ns(tb)) / 1e9
        self.assertLess(wait, 30, f"a grace of seconds: {wait}")
        # status says so, in JSON and in text, while the grace lasts and after it.
        acks = iface_status(tb)["cookies"]["acks"]
        self.assertFalse(acks["looked_up"], f"the feeders are attached: ACKs checked alone: {acks}")
        left = (stamped_from - dataplane_now_ns(tb)) / 1e9
        if left > 0.5:
            self.assertEqual(acks["syn_stamps"], "grace", acks)
            self.assertLessEqual(acks["syn_stamps_in_s"], wait + 0.1, acks)
            self.assertGreater(acks["syn_stamps_in_s"], 0, acks)
            self.assertIn("SYN stamps asked in", ctl(tb, "status", check=True).stdout)
        if wait > 0:
            time.sleep(wait + 0.1)
        acks = iface_status(tb)["cookies"]["acks"]
        self.assertEqual(acks["syn_stamps"], "asked", acks)
        self.assertIsNone(acks["syn_stamps_in_s"], acks)
        self.assertIn("refused unless their source sent a SYN the cookie path saw", ctl(tb, "status", check=True).stdout)
        return max(wait, 0)

    def test_a_never_seen_visitor_is_served_on_its_first_syn_during_a_syn_flood(self):
        with Testbed("cook1") as tb:
            visitor = visitor_net()
            add_visitors(tb, visitor)
            before = sysctls(tb)
            http = start_http(tb)
            try:
                with Daemon(tb, *DAEMON_ARGS) as d:
                    self.assertFalse(standing_of(tb, visitor)["has_standing"], "the visitor was never seen")
                    st = iface_status(tb)["cookies"]
                    self.assertEqual(st["mode"], "shedding")
                    self.assertTrue(st["xdp_tx"]["delivers"], f"the router's veth runs XDP_PASS: {st}")
                    self.assertFalse(st["sysctls_armed"], f"not armed while serving: {st}")
                    self.assertEqual(sysctls(tb), before, "nothing changed while serving")
                    with syn_flood(tb) as flood:
                        self.shedding_under_flood(tb, d, flood)
                        stamps_waited_s = self.wait_for_the_syn_stamps(tb)
                        armed = iface_status(tb)["cookies"]
                        during_sysctls = sysctls(tb)
                        before_visit = ctl_json(tb, "explain", tb.host_if, visitor, f"tcp-syn/{HTTP_PORT}")["cookie"]
                        c1 = counters(tb)
                        v = visits(tb, visitor, 100, each_new=True)
                        c2 = counters(tb)
                        again = visits(tb, visitor, 10)
                        c3 = counters(tb)
                        after_visit = ctl_json(tb, "explain", tb.host_if, visitor, f"tcp-syn/{HTTP_PORT}")["cookie"]
                        shedding = iface_status(tb)["breaker"]["state"] == "shedding"
                        flood_alive = flood.running()
                        flood.stop()
                        fr = flood.result()
                    got = standing_of(tb, visitor)
                d_out = d.output()
                after = sysctls(tb)
                seen = delta(c2, c1, *OUTCOMES)
                seen_again = delta(c3, c2, "cookie_sent", "cookie_proved", "standing")
                report("1 visitors during a SYN flood", visitors=v["attempted"], ok=v["ok"], first_syn=v["first_syn"],
                       connect_ms_median=v["connect_ms_median"], again_ok=again["ok"], flood_sent=fr["sent"],
                       flood_pps=fr["pps"], sysctls_before=before, sysctls_during=during_sysctls,
                       sysctls_after=after, again=seen_again, stamps_waited_s=stamps_waited_s, **seen)
                self.assertTrue(flood_alive and shedding, "the flood ran and the breaker shed throughout")
                self.assertGreaterEqual(v["ok"], 99, f">= 99% of the visitor's requests served: {v}")
                self.assertGreaterEqual(v["first_syn"], 95, f">= 95% on the first SYN: {v}")
                self.assertEqual(seen["newcomer"], 0, "no newcomer budget: only cookies let anyone in")
                self.assertGreater(seen["cookie_sent"], 1000, f"the flood's SYNs were answered with cookies: {seen}")
                self.assertGreaterEqual(seen["cookie_proved"], v["ok"], f"each served visitor proved a cookie: {seen}")
                self.assertLessEqual(seen["cookie_proved"], v["attempted"], "only the visitors' ACKs proved one")
                self.assertEqual(again["ok"], 10, f"the first visitor, again: {again}")
                self.assertEqual(seen_again["cookie_proved"], 0, f"with standing, no cookie again: {seen_again}")
                self.assertGreater(seen_again["standing"], 0, seen_again)
                self.assertTrue(before_visit["in_force"] and before_visit["applies"], before_visit)
                self.assertFalse(after_visit["applies"], after_visit)
                self.assertIn("standing", after_visit["why"])
                self.assertTrue(got["has_standing"], got)
                self.assertEqual(got["reason"], "cookie", got)
                self.assertTrue(armed["sysctls_armed"], armed)
                self.assertEqual(during_sysctls, {"net.ipv4.tcp_syncookies": 2, "net.ipv4.tcp_timestamps": 2})
                self.assertEqual(armed["sysctls"]["net.ipv4.tcp_syncookies"]["was"],
                                 before["net.ipv4.tcp_syncookies"], armed)
                self.assertEqual(armed["sysctls"]["net.ipv4.tcp_timestamps"]["was"],
                                 before["net.ipv4.tcp_timestamps"], armed)
                self.assertTrue(armed["offers"]["timestamps"] and armed["offers"]["window_scaling"], armed)
                self.assertEqual(after, before, "the sysctls are back as they were after sluiced exits")
                self.assertIn("SYN cookies armed", d_out)
                self.assertIn("SYN cookies disarmed", d_out)
            finally:
                http.stop()

    def test_sigkill_keeps_answering_and_a_restart_adopts_the_armed_sysctls(self):
        with Testbed("cook2") as tb:
            visitor = visitor_net()
            add_visitors(tb, visitor)
            before = sysctls(tb)
            http = start_http(tb)
            d = Daemon(tb, *DAEMON_ARGS)
            try:
                d.start()
                with syn_flood(tb) as flood:
                    self.shedding_under_flood(tb, d, flood)
                    self.assertEqual(d.kill(signal.SIGKILL), -signal.SIGKILL)
                    left = sysctls(tb)
                    c1 = counters(tb)
                    v = visits(tb, visitor, 20, each_new=True)
                    c2 = counters(tb)
                    d2 = Daemon(tb, *DAEMON_ARGS)
                    d2.start()
                    adopted = iface_status(tb)["cookies"]
                    flood.stop()
                d2.kill(signal.SIGTERM)
                after = sysctls(tb)
                seen = delta(c2, c1, *OUTCOMES)
                report("2 SIGKILL and restart", ok=v["ok"], first_syn=v["first_syn"], sysctls_left=left,
                       sysctls_after=after, **seen)
                self.assertEqual(left, {"net.ipv4.tcp_syncookies": 2, "net.ipv4.tcp_timestamps": 2},
                                 "SIGKILL leaves them armed: the program keeps answering")
                self.assertGreaterEqual(v["ok"], 19, f"served with the daemon dead: {v}")
                self.assertGreaterEqual(seen["cookie_proved"], v["ok"], seen)
                self.assertTrue(adopted["sysctls_armed"], adopted)
                self.assertEqual(adopted["sysctls"]["net.ipv4.tcp_syncookies"]["was"],
                                 before["net.ipv4.tcp_syncookies"], "the restart knows what was there before")
                self.assertIn("adopted", d2.output())
                self.assertEqual(after, before, "the restarted daemon put back the values from before")
            finally:
                d.kill(signal.SIGTERM)
                http.stop()

    def test_cookies_off_leaves_the_visitor_to_the_newcomer_budget(self):
        with Testbed("cook3") as tb:
            visitor = visitor_net()
            add_visitors(tb, visitor)
            before = sysctls(tb)
            http = start_http(tb)
            try:
                with Daemon(tb, *DAEMON_ARGS, "--cookies", "off"):
                    with syn_flood(tb) as flood:
                        self.shedding_under_flood(tb, None, flood)
                        c1 = counters(tb)
                        v = visits(tb, visitor, 4, timeout=2.0, each_new=True)
                        c2 = counters(tb)
                        st = iface_status(tb)["cookies"]
                        during = sysctls(tb)
                        flood.stop()
                seen = delta(c2, c1, *OUTCOMES)
                report("3 cookies off", ok=v["ok"], **seen)
                self.assertEqual(st["mode"], "off")
                self.assertFalse(st["sysctls_armed"])
                self.assertEqual(during, before, "off changes no sysctl")
                self.assertEqual(seen["cookie_sent"], 0, seen)
                self.assertEqual(v["ok"], 0, f"no newcomer budget, no cookies: no connection, as before: {v}")
                self.assertGreater(seen["drop_shed"], 1000, seen)
            finally:
                http.stop()

    def test_a_spoofed_syn_flood_naming_one_victim_gets_at_most_the_bound_toward_it(self):
        dest_pps, dest_burst = 200, 20  # its burst: 0.1 s of it, as the cookie budget's
        with Testbed("cook5") as tb:
            visitor = visitor_net()
            add_visitors(tb, visitor)
            synacks = count_synacks_toward(tb, VICTIM_NET)
            # The host's stack sends the victim nothing (its SYNs pass to the
            # listener while serving): every SYN-ACK the router counts is the
            # program's, which XDP_TX sends whatever the routes.
            tb.exec("host", ["ip", "route", "add", "blackhole", VICTIM_NET])
            http = start_http(tb)
            try:
                with Daemon(tb, *DAEMON_ARGS, "--cookie-dest-pps", str(dest_pps)):
                    st = iface_status(tb)["cookies"]
                    self.assertEqual((st["dest_pps"], st["dest_burst"]), (dest_pps, dest_burst), st)
                    before = synacks()
                    # The window: from before the generator starts to after
                    # the counter is read, once every frame it sent was seen.
                    t0 = time.monotonic()
                    flood = Traffic(tb.inject_ns, "flood", "--iface", tb.inject_if, "--dst-mac", tb.inject_dst_mac,
                                    "--dst", tb.host_ip4, "--sources", 254, "--src-base",
                                    VICTIM_NET.split("/")[0][:-1] + "1", "--syn", "--port", HTTP_PORT,
                                    "--pps", FLOOD_PPS, "--duration", 120)
                    with flood:
                        self.shedding_under_flood(tb, None, flood)
                        t_shed = time.monotonic()
                        c1 = counters(tb)
                        v = visits(tb, visitor, 20, each_new=True)
                        c2 = counters(tb)
                        time.sleep(max(0.0, 4.0 - (time.monotonic() - t_shed)))  # at least 4 s of shedding
                        flood_alive = flood.running()
                        t_stop = time.monotonic()
                        flood.stop()
                        fr = flood.result()
                    c_flood = counters(tb)
                    time.sleep(0.2)  # the last frames through the veth's NAPI poll
                    got = synacks() - before
                    t1 = time.monotonic()
                seen = delta(c2, c1, *OUTCOMES)
                most = dest_burst + dest_pps * (t1 - t0)
                least = dest_pps * (t_stop - t_shed) / 4
                report("5 a flood naming one victim /24", synacks_toward_victim=got, at_most=round(most),
                       at_least=round(least), window_s=round(t1 - t0, 3), shedding_s=round(t_stop - t_shed, 3),
                       flood_sent=fr["sent"], flood_pps=fr["pps"], visitors=v["attempted"], ok=v["ok"],
                       reflect_shedding=c_flood["drop_cookie_reflect"] - c1["drop_cookie_reflect"], **seen)
                self.assertTrue(flood_alive, "the flood ran throughout")
                self.assertLessEqual(got, most, "SYN-ACKs toward the victim within its bound x time + burst")
                self.assertGreaterEqual(got, least, "the victim's SYNs were answered up to the bound")
                # (over the shedding, not the visits alone: 20 visits can take
                # a few tens of milliseconds)
                self.assertGreater(c_flood["drop_cookie_reflect"] - c1["drop_cookie_reflect"], 1000,
                                   f"the rest of the flood refused: {c_flood}")
                self.assertGreaterEqual(v["ok"], 19, f"visitors from another /24 still served: {v}")
                self.assertGreaterEqual(seen["cookie_proved"], v["ok"], f"each by its cookie: {seen}")
                self.assertEqual(seen["newcomer"], 0, seen)
            finally:
                http.stop()

    def test_without_an_xdp_program_on_the_peer_cookies_stay_off_until_one_is_attached(self):
        with Testbed("cook4") as tb:
            visitor = visitor_net()
            add_visitors(tb, visitor, peer=False)
            before = sysctls(tb)
            http = start_http(tb)
            # A newcomer budget this time: with cookies off it is what serves
            # a visitor (generous here: the client's SYNs come from the local
            # machine's scheduler, not from a wire the flood fills).
            args = list(DAEMON_ARGS)
            args[args.index("--newcomer-pps") + 1] = "4000"
            try:
                with Daemon(tb, *args) as d:
                    st = iface_status(tb)["cookies"]
                    text = ctl(tb, "status").stdout
                    with syn_flood(tb) as flood:
                        self.shedding_under_flood(tb, d, flood)
                        during_sysctls = sysctls(tb)
                        explained = ctl_json(tb, "explain", tb.host_if, visitor, f"tcp-syn/{HTTP_PORT}")["cookie"]
                        c1 = counters(tb)
                        v = visits(tb, visitor, 20, timeout=2.0, each_new=True)
                        c2 = counters(tb)
                        # The peer gains a program while sluiced runs and the flood goes on.
                        tb.xdp_tx_peer()
                        t0 = time.monotonic()
                        wait_until(lambda: iface_status(tb)["cookies"]["mode"] == "shedding", 5,
                                   what="cookies to come on once the peer runs XDP")
                        came_on_s = time.monotonic() - t0
                        on = iface_status(tb)["cookies"]
                        c3 = counters(tb)
                        v2 = visits(tb, visitor.rsplit(".", 1)[0] + ".101", 20, each_new=True)
                        c4 = counters(tb)
                        flood.stop()
                d_out = d.output()
                off_seen = delta(c2, c1, *OUTCOMES)
                on_seen = delta(c4, c3, *OUTCOMES)
                report("4 no XDP on the peer, then XDP_PASS attached", ok_off=v["ok"], attempted_off=v["attempted"],
                       came_on_s=round(came_on_s, 2), ok_on=v2["ok"], first_syn_on=v2["first_syn"],
                       off=off_seen, on=on_seen)
                self.assertEqual(st["mode"], "off", st)
                self.assertEqual(st["asked"], "shedding", st)
                self.assertFalse(st["xdp_tx"]["delivers"], st)
                self.assertIn(tb.router_host_if, st["xdp_tx"]["why"], st)
                self.assertIn("no XDP program in native mode", st["xdp_tx"]["why"], st)
                self.assertIn("xdp-pass", st["xdp_tx"]["fix"], st)
                self.assertIn("run sluice on the peer", st["xdp_tx"]["fix"], st)
                self.assertFalse(st["sysctls_armed"], st)
                self.assertIn("off on this interface (--cookies shedding asked)", text)
                self.assertIn("cookie fix", text)
                self.assertEqual(during_sysctls, before, "cookies off: nothing armed while shedding")
                self.assertIn("off on this interface", explained["why"], explained)
                self.assertEqual(off_seen["cookie_sent"], 0, f"no XDP_TX SYN-ACK into the void: {off_seen}")
                self.assertGreater(off_seen["drop_shed"], 1000, off_seen)
                self.assertGreater(off_seen["newcomer"], 0, off_seen)
                self.assertGreaterEqual(v["ok"], 1, f"the newcomer budget serves a visitor: {v}")
                self.assertIn("SYN cookies off on this interface", d_out)
                self.assertIn("SYN cookies back on", d_out)
                self.assertLess(came_on_s, 2.0, "within a few periods (0.2 s each)")
                self.assertTrue(on["xdp_tx"]["delivers"], on)
                self.assertIsNone(on["xdp_tx"]["fix"], on)
                self.assertGreater(on_seen["cookie_sent"], 1000, on_seen)
                self.assertGreaterEqual(on_seen["cookie_proved"], 1, on_seen)
                self.assertGreaterEqual(v2["ok"], 19, f"cookies serve the visitors again: {v2}")
                self.assertEqual(sysctls(tb), before, "put back after exit")
            finally:
                http.stop()


if __name__ == "__main__":
    main()
