"""Standing, end to end: real sockets on the testbed, the breaker shedding a
random-source spoofed flood.

- A real TCP server on the protected host (python3 http.server) and a client
  that used it before the flood keeps >= 99% of its requests, a new TCP
  connection each, with no allowlist entry; a connection the host opened to a
  peer keeps working while shedding, and so does a new one it opens then.
- Spoofed SYNs to a listener (the host answers SYN-ACKs) and to a closed port
  (RSTs) grant standing to none of their sources, nor does a UDP server's
  reply to spoofed queries; a UDP client's sendto does.
- A connection older than the daemon is found by sock_diag at start; a
  restart (SIGKILL + a new sluiced) adopts the standing table.

Whether an address has standing is read from the pinned standing map with
the hash key from the pinned settings, by the same math as bpf/standing.h
(SipHash-1-3 of the masked source, its set and fingerprint, the entry's
age). The cgroup feeders see every socket of the machine, so other tests'
testbeds running at the same time can add entries of their own addresses:
the assertions name the addresses they are about, and the entry counts
around the spoofed SYNs are reported beside them.

Each test prints one line "STANDING <name>: ..." with what it measured.
"""

import ipaddress
import json
import os
import struct
import subprocess
import sys
import time
import unittest

from sluice_netns import (Daemon, Testbed, Traffic, bpftool_json, counters, ctl, ctl_json, main, pinned_settings,
                          require_root, run, settle, wait_until)

HTTP_PORT = 8080
ECHO_PORT = 9090
CLOSED_PORT = 8081
UDP_SERVER_PORT = 5353
SETS = 1024
FEEDER_PINS = ("sockops_link", "connect4_link", "connect6_link", "sendmsg4_link", "sendmsg6_link")


def report(name, **kv):
    print(f"STANDING {name}: " + ", ".join(f"{k}={v}" for k, v in kv.items()), file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the table's math, in Python

M64 = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash13(key, msg):
    """SipHash-1-3 of bytes msg under key (k0, k1): bpf/siphash.h."""
    k0, k1 = key
    v0, v1, v2, v3 = 0x736f6d6570736575 ^ k0, 0x646f72616e646f6d ^ k1, 0x6c7967656e657261 ^ k0, 0x7465646279746573 ^ k1

    def rnd():
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & M64; v3 = _rotl(v3, 16); v3 ^= v2
        v0 = (v0 + v3) & M64; v3 = _rotl(v3, 21); v3 ^= v0
        v2 = (v2 + v1) & M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)

    full = len(msg) & ~7
    words = [int.from_bytes(msg[i:i + 8], "little") for i in range(0, full, 8)]
    words.append(int.from_bytes(msg[full:], "little") | ((len(msg) & 0xff) << 56))
    for m in words:
        v3 ^= m
        rnd()
        v0 ^= m
    v2 ^= 0xff
    for _ in range(3):
        rnd()
    return v0 ^ v1 ^ v2 ^ v3


class StandingView:
    """The pinned standing map and the settings it was made under."""

    def __init__(self, tb, iface=None):
        raw = pinned_settings(tb, iface)
        (k0, k1, self.layout, _slot_mask, self.v4_prefix, self.v6_prefix, _dry, _one, _sample, self.set_mask,
         self.lapse_ticks, self.eph_lo, self.eph_hi) = struct.unpack_from("<QQ11I", raw)
        self.key = (k0, k1)
        self.path = os.path.join(tb.pin_dir, iface or tb.host_if, "standing")

    def hash_of(self, addr):
        a = ipaddress.ip_address(addr)
        if a.version == 4:
            net = ipaddress.ip_network(f"{a}/{self.v4_prefix}", strict=False)
        else:
            net = ipaddress.ip_network(f"{a}/{self.v6_prefix}", strict=False)
        return siphash13(self.key, net.network_address.packed)

    @staticmethod
    def stamp_now():
        return ((time.clock_gettime_ns(time.CLOCK_MONOTONIC) + (1 << 62)) >> 30) & 0xffffffff

    def live(self, entry, stamp):
        return (entry >> 32) != 0 and ((stamp - entry) & 0xffffffff) <= self.lapse_ticks

    def read_set(self, idx):
        key = [str(b) for b in int(idx).to_bytes(4, "little")]
        v = bpftool_json("map", "lookup", "pinned", self.path, "key", *key)
        raw = bytes(int(b, 16) for b in v["value"])
        return list(struct.unpack("<8Q", raw))

    def has_standing(self, addr):
        h = self.hash_of(addr)
        fp = (h >> 32) or 1
        stamp = self.stamp_now()
        return any((e >> 32) == fp and self.live(e, stamp) for e in self.read_set(h & self.set_mask))

    def live_entries(self):
        stamp = self.stamp_now()
        n = 0
        for entry in bpftool_json("map", "dump", "pinned", self.path):
            raw = bytes(int(b, 16) for b in entry["value"])
            n += sum(1 for e in struct.unpack("<8Q", raw) if self.live(e, stamp))
        return n


# ---------------------------------------------------------------- real sockets in the namespaces

HTTP_CLIENT = r"""
import http.client, json, sys, time
host, port, n, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ok = fail = 0
t0 = time.monotonic()
for i in range(n):
    try:
        c = http.client.HTTPConnection(host, port, timeout=timeout)   # a new TCP connection per request
        c.request("GET", "/")
        r = c.getresponse()
        r.read()
        c.close()
        ok += r.status == 200
        fail += r.status != 200
    except OSError:
        fail += 1
print(json.dumps({"ok": ok, "fail": fail, "seconds": time.monotonic() - t0}))
"""

ECHO_SERVER = r"""
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(16)
open(sys.argv[3], "w").close()
def serve(c):
    with c:
        while True:
            d = c.recv(4096)
            if not d:
                return
            c.sendall(d)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# The host's own connection to a peer: opened at once, then one echo every
# 0.1 s until it reads "stop" on stdin; then one new connection, one echo.
HOST_CONN = r"""
import json, select, socket, sys, time
peer, port = sys.argv[1], int(sys.argv[2])
c = socket.create_connection((peer, port), timeout=2)
print("connected", flush=True)
ok = fail = 0
while True:
    r, _, _ = select.select([sys.stdin], [], [], 0.1)
    if r and sys.stdin.readline().strip() == "stop":
        break
    try:
        c.sendall(b"ping\n")
        ok += c.recv(16) == b"ping\n"
    except OSError:
        fail += 1
try:
    n = socket.create_connection((peer, port), timeout=2)
    n.sendall(b"new\n")
    fresh = n.recv(16) == b"new\n"
except OSError:
    fresh = False
print(json.dumps({"ok": ok, "fail": fail, "fresh": fresh}), flush=True)
"""

# Spoofed TCP SYNs through a raw socket (the router forwards any source of
# the testbed's prefixes: rp_filter is off; the answers die in its blackhole).
SYN_SENDER = r"""
import ipaddress, socket, struct, sys
dst = sys.argv[1]; base = int(ipaddress.ip_address(sys.argv[2])); n = int(sys.argv[3])
ports = [int(p) for p in sys.argv[4].split(",")]
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
d = socket.inet_aton(dst)
sent = 0
for i in range(n):
    src = socket.inet_aton(str(ipaddress.ip_address(base + i)))
    for port in ports:
        tcp = struct.pack("!HHIIBBHHH", 20000 + i % 40000, port, 1000 + i, 0, 5 << 4, 0x02, 64240, 0, 0)
        pseudo = src + d + struct.pack("!BBH", 0, 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", csum(pseudo + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), i & 0xffff, 0, 64, 6, 0, src, d)
        s.sendto(ip + tcp, (dst, 0))
        sent += 1
print(sent)
"""

# A UDP server on a fixed port answering every query, and a UDP client
# socket sending to a peer with sendto (unconnected).
UDP_SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
open(sys.argv[3], "w").close()
while True:
    d, a = s.recvfrom(2048)
    s.sendto(b"answer", a)
"""

UDP_CLIENT = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"query", (sys.argv[1], int(sys.argv[2])))
print(s.getsockname()[1])
"""


def tcp_snmp(tb, role="host"):
    """Tcp: OutSegs and OutRsts of a namespace (/proc/net/snmp)."""
    lines = [l.split() for l in tb.exec(role, ["cat", "/proc/net/snmp"]).stdout.splitlines() if l.startswith("Tcp:")]
    row = dict(zip(lines[0][1:], (int(v) for v in lines[1][1:])))
    return row["OutSegs"], row["OutRsts"]


class Background:
    """A python3 script in a namespace, in the background, by pid."""

    def __init__(self, tb, role, script, *args, stdin=False):
        self.proc = subprocess.Popen(["ip", "netns", "exec", tb.ns(role), "python3", "-c", script] +
                                     [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, text=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f:
                f.close()


def ready_file(tb, what):
    return os.path.join(tb.rundir, f"{what}-{os.urandom(3).hex()}.ready")


def start_server(tb, role, script, addr, port, what):
    ready = ready_file(tb, what)
    s = Background(tb, role, script, addr, port, ready)
    wait_until(lambda: os.path.exists(ready) or s.proc.poll() is not None, 20, what=f"the {what} to listen")
    if s.proc.poll() is not None:
        raise AssertionError(f"{what} exited: {s.proc.stderr.read()}")
    return s


def start_http(tb):
    ready = ready_file(tb, "http")
    # http.server prints nothing before it serves; poll the port from the host itself.
    s = Background(tb, "host", "import http.server, sys, functools\n"
                   "h = functools.partial(http.server.SimpleHTTPRequestHandler, directory='/tmp')\n"
                   "http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None\n"
                   "srv = http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), h)\n"
                   "open(sys.argv[3], 'w').close()\nsrv.serve_forever()\n", tb.host_ip4, HTTP_PORT, ready)
    wait_until(lambda: os.path.exists(ready) or s.proc.poll() is not None, 20, what="the HTTP server to listen")
    if s.proc.poll() is not None:
        raise AssertionError(f"http server exited: {s.proc.stderr.read()}")
    return s


def http_requests(tb, n, timeout=2.0):
    p = tb.exec("client", ["python3", "-c", HTTP_CLIENT, tb.host_ip4, str(HTTP_PORT), str(n), str(timeout)],
                timeout=60 + n * timeout)
    return json.loads(p.stdout.strip().splitlines()[-1])


def flood_bg(tb, *args):
    """A random-source spoofed UDP flood injected into veth-host."""
    return Traffic(tb.inject_ns, "flood", "--iface", tb.inject_if, "--dst-mac", tb.inject_dst_mac,
                   "--dst", tb.host_ip4, *args)


def breaker_state(tb):
    return ctl_json(tb, "status")["interfaces"][0]["breaker"]["state"]


DAEMON_ARGS = ("--period", "0.2", "--trip-pps", "5000", "--trip-periods", "2", "--hold", "120",
               "--standing-sets", str(SETS))


class Standing(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_regular_client_and_host_connections_survive_shedding(self):
        """A client that used the host's HTTP server before a random-source
        flood trips the breaker keeps >= 99% of its requests (a new TCP
        connection each, no allowlist entry); the host's own connection to a
        peer keeps echoing, and a new one it opens while shedding works."""
        with Testbed("stand1") as tb, Daemon(tb, *DAEMON_ARGS) as d:
            settle(tb)
            view = StandingView(tb)
            http = start_http(tb)
            echo = start_server(tb, "attacker", ECHO_SERVER, tb.attacker_ip4, ECHO_PORT, "echo server")
            host_conn = None
            try:
                self.assertFalse(view.has_standing(tb.client_ip4), "no standing before the client's first visit")
                warm = http_requests(tb, 3)
                self.assertEqual(warm["ok"], 3, warm)
                wait_until(lambda: view.has_standing(tb.client_ip4), 5,
                           what="the client's completed handshakes to grant it standing")
                host_conn = Background(tb, "host", HOST_CONN, tb.attacker_ip4, ECHO_PORT, stdin=True)
                self.assertEqual(host_conn.proc.stdout.readline().strip(), "connected")
                self.assertTrue(view.has_standing(tb.attacker_ip4), "the peer the host connected to has standing")
                self.assertEqual(ctl_json(tb, "allow", "list", tb.host_if)["cidrs"], [], "no allowlist entry")

                with flood_bg(tb, "--random-src", "--pps", 40000, "--duration", 120) as flood:
                    wait_until(lambda: breaker_state(tb) == "shedding", 20, what="the flood to trip the breaker")
                    c1 = counters(tb)
                    during = http_requests(tb, 200)
                    time.sleep(0.5)
                    c2 = counters(tb)
                    still_shedding = breaker_state(tb) == "shedding"
                    flood_alive = flood.running()
                    host_conn.proc.stdin.write("stop\n")
                    host_conn.proc.stdin.flush()
                    hc = json.loads(host_conn.proc.stdout.readline())
                    flood.stop()
                    fr = flood.result()
                report("1 regular client", requests=200, ok=during["ok"], fail=during["fail"],
                       seconds=round(during["seconds"], 2), flood_sent=fr["sent"], flood_pps=fr["pps"],
                       shed_during=c2["drop_shed"] - c1["drop_shed"], standing_during=c2["standing"] - c1["standing"],
                       host_conn_ok=hc["ok"], host_conn_fail=hc["fail"], host_new_conn=hc["fresh"])
                self.assertTrue(flood_alive and still_shedding, "the flood ran and the breaker shed throughout")
                self.assertGreaterEqual(during["ok"], 198, f"the regular client kept >= 99% of 200 requests: {during}")
                self.assertGreater(c2["standing"] - c1["standing"], 0, "its frames were counted as standing")
                self.assertGreater(c2["drop_shed"] - c1["drop_shed"], 1000, "the flood was being shed")
                self.assertGreater(hc["ok"], 0, hc)
                self.assertEqual(hc["fail"], 0, f"the host's own connection kept working: {hc}")
                self.assertTrue(hc["fresh"], "a connection the host opened while shedding worked")
                self.assertIn("serving -> shedding", d.output())
            finally:
                if host_conn:
                    host_conn.stop()
                echo.stop()
                http.stop()

    def test_spoofed_handshakes_and_udp_replies_grant_no_standing(self):
        """Spoofed SYNs to a listener (answered with SYN-ACKs) and to a
        closed port (RSTs), and spoofed UDP queries a server on a fixed port
        answers: none of their sources gets standing. A UDP client's sendto
        from an ephemeral port grants its peer."""
        N = 300
        with Testbed("stand2") as tb, Daemon(tb, *DAEMON_ARGS):
            settle(tb)
            view = StandingView(tb)
            http = start_http(tb)
            udp = start_server(tb, "host", UDP_SERVER, tb.host_ip4, UDP_SERVER_PORT, "UDP server")
            try:
                before = view.live_entries()
                out0, rst0 = tcp_snmp(tb)
                p = tb.exec("attacker", ["python3", "-c", SYN_SENDER, tb.host_ip4, "198.19.10.0", str(N),
                                         f"{HTTP_PORT},{CLOSED_PORT}"], timeout=120)
                self.assertEqual(int(p.stdout.strip()), 2 * N)
                # spoofed UDP queries from sources of their own, answered by the server
                from_udp = Traffic(tb.inject_ns, "flood", "--iface", tb.inject_if, "--dst-mac", tb.inject_dst_mac,
                                   "--dst", tb.host_ip4, "--sources", N, "--src-base", "198.19.20.0", "--port",
                                   UDP_SERVER_PORT, "--count", N).result()
                self.assertEqual(from_udp["sent"], N)
                wait_until(lambda: tcp_snmp(tb)[0] - out0 >= 2 * N, 10, what="the host to answer every SYN")
                out1, rst1 = tcp_snmp(tb)
                time.sleep(0.5)
                after = view.live_entries()
                spoofed = [str(ipaddress.ip_address(int(ipaddress.ip_address(b)) + i))
                           for b in ("198.19.10.0", "198.19.20.0") for i in range(N)]
                granted = [a for a in spoofed if view.has_standing(a)]

                # a UDP client: sendto from an ephemeral port grants its peer
                self.assertFalse(view.has_standing(tb.attacker_ip4))
                port = int(tb.exec("host", ["python3", "-c", UDP_CLIENT, tb.attacker_ip4, "7"]).stdout)
                udp_client_granted = view.has_standing(tb.attacker_ip4)
                c = counters(tb)
                report("2 spoofed", syns=2 * N, udp_queries=N, tcp_out_segs=out1 - out0, tcp_out_rsts=rst1 - rst0,
                       live_entries_before=before, live_entries_after=after, spoofed_with_standing=len(granted),
                       udp_client_port=port, udp_client_peer_granted=udp_client_granted, passed=c["passed"])
                self.assertGreaterEqual(out1 - out0, 2 * N, "the host answered every spoofed SYN")
                self.assertGreaterEqual(rst1 - rst0, N, "... the ones to the closed port with a RST")
                self.assertEqual(granted, [], "no spoofed source has standing")
                self.assertLess(after - before, 10,
                                "the spoofed sources added no entries (a few may be other testbeds' real peers)")
                self.assertTrue(view.eph_lo <= port <= view.eph_hi)
                self.assertTrue(udp_client_granted, "a UDP client's peer has standing")
            finally:
                udp.stop()
                http.stop()

    def test_restart_adopts_standing_and_finds_older_connections(self):
        """A connection the host had before sluiced started is found with
        sock_diag; SIGKILL and a new sluiced adopt the standing table, and the
        regular client is served while shedding (tripped by the operator)."""
        with Testbed("stand3") as tb:
            settle(tb)
            http = start_http(tb)
            echo = start_server(tb, "attacker", ECHO_SERVER, tb.attacker_ip4, ECHO_PORT, "echo server")
            host_conn = Background(tb, "host", HOST_CONN, tb.attacker_ip4, ECHO_PORT, stdin=True)
            d = d2 = None
            try:
                self.assertEqual(host_conn.proc.stdout.readline().strip(), "connected")
                d = Daemon(tb, *DAEMON_ARGS).start()
                view = StandingView(tb)
                self.assertTrue(view.has_standing(tb.attacker_ip4),
                                "the peer of a connection older than the daemon has standing (sock_diag)")
                self.assertIn("standing granted to the 1 peers of established connections", d.output())
                warm = http_requests(tb, 3)
                self.assertEqual(warm["ok"], 3, warm)
                wait_until(lambda: view.has_standing(tb.client_ip4), 5, what="the client's standing")
                entries = view.live_entries()

                d.kill()
                d2 = Daemon(tb, *DAEMON_ARGS).start()
                self.assertIn("adopted pins", d2.output())
                view = StandingView(tb)
                self.assertTrue(view.has_standing(tb.client_ip4), "the restart kept the client's standing")
                self.assertGreaterEqual(view.live_entries(), entries)
                ctl(tb, "breaker", "trip", tb.host_if, check=True)
                self.assertEqual(breaker_state(tb), "shedding")
                c1 = counters(tb)
                during = http_requests(tb, 50)
                c2 = counters(tb)
                report("3 restart", entries_before_kill=entries, ok=during["ok"], fail=during["fail"],
                       standing=c2["standing"] - c1["standing"])
                self.assertGreaterEqual(during["ok"], 50 * 0.99, during)
                self.assertGreater(c2["standing"] - c1["standing"], 0)

                # the feeders' cgroup links are pinned beside the XDP link, and detach removes them
                pins = os.listdir(d2.pins)
                links = {}
                for name in FEEDER_PINS:
                    self.assertIn(name, pins)
                    info = bpftool_json("link", "show", "pinned", os.path.join(d2.pins, name))
                    self.assertEqual(info["type"], "cgroup")
                    links[name] = info["id"]
                ctl(tb, "detach", tb.host_if, check=True)
                self.assertFalse(os.path.exists(d2.pins))
                left = [n for n, i in links.items()
                        if run(["bpftool", "link", "show", "id", str(i)], check=False).returncode == 0]
                self.assertEqual(left, [], "detach took every feeder off the cgroup")
            finally:
                for x in (d2, d):
                    if x:
                        x.kill()
                host_conn.stop()
                echo.stop()
                http.stop()


if __name__ == "__main__":
    main()
