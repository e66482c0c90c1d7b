"""Why sluice makes the listener's own SYN cookies and not raw ones
(docs/architecture.md, "SYN cookies", "Which cookies, and why these"),
measured against the host's own TCP stack.

The raw helpers (bpf_tcp_raw_gen_syncookie_ipv4 / _check_) make the same
cookie from the same secret as the listener's, but do not mark the
listener's SYN queue overflow stamp, and the stack checks a cookie ACK only
for a listener marked within the last 2 minutes (cookie_tcp_check:
tcp_synq_no_recent_overflow). So, with tests/tools/bench/cookie_alt.bpf.c on
the host's veth answering every SYN from XDP (the SYN-ACK of bpf/cookie.h,
XDP_TX) and passing up every ACK the raw check finds valid, a client that
opens N fresh connections to a new listener:

- raw cookies, tcp_syncookies 2, the listener never marked: none is served;
  the client got the SYN-ACK and sent its ACK, which the raw check passed
  up, and the stack answered that ACK with a reset: the client's connect()
  fails with ECONNRESET (the reset arrives before connect() returns; later,
  its first read would);
- raw cookies, tcp_syncookies 1: the same;
- raw cookies, tcp_syncookies 2, the listener marked just before by one
  connection the stack answered itself (its own cookie, sent at 2 for every
  SYN): every one is served, for as long as the mark is recent;
- the listener's own cookies (cookie_alt.bpf.c -DCOOKIE_LISTENER, what sluice
  does), tcp_syncookies 2, never marked before: every one is served (the
  generator marks it).

The first and the last case run over IPv6 too (cookie_v6_check has the same
overflow test).

tcp_timestamps is 2 throughout (as sluiced arms it), so the cookie's
timestamp carries window scale and SACK alike in every case. The test prints
one line "COOKIE-ALT <case>: ..." per case with what it measured.
"""

import json
import os
import subprocess
import sys
import time
import unittest

from sluice_netns import Testbed, main, require_root, in_ci, wait_until
from test_standing import start_http, start_server, HTTP_PORT

BENCH = os.environ.get("SLUICE_BENCH", "sluice-bench")
ALT_DIR = os.environ.get("SLUICE_COOKIE_ALT_DIR", "")
CONNECTIONS = 30

# One fresh connection after another from the client: connect (3 s, so a
# lost SYN-ACK shows as a timeout), a request, the reply; each classified by
# what the client saw.
CLIENT = r"""
import json, socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = {"served": 0, "connect_reset": 0, "reset": 0, "timeout": 0, "refused": 0, "other": 0, "connected": 0,
     "first_syn": 0}
for i in range(n):
    t = time.monotonic()
    try:
        c = socket.create_connection((host, port), timeout=3)
    except socket.timeout:
        r["timeout"] += 1
        continue
    except ConnectionRefusedError:
        r["refused"] += 1
        continue
    except ConnectionResetError:
        r["connect_reset"] += 1
        continue
    except OSError as e:
        r["other"] += 1
        r.setdefault("other_errors", []).append(str(e))
        continue
    r["connected"] += 1
    r["first_syn"] += time.monotonic() - t < 0.9
    try:
        c.settimeout(3)
        c.sendall(b"GET / HTTP/1.0\r\nHost: t\r\n\r\n")
        data = b""
        while True:
            b = c.recv(4096)
            if not b:
                break
            data += b
        r["served" if data.startswith(b"HTTP/1.0 200") else "other"] += 1
    except (ConnectionResetError, BrokenPipeError):
        r["reset"] += 1
    except socket.timeout:
        r["timeout"] += 1
    except OSError as e:
        r["other"] += 1
        r.setdefault("other_errors", []).append(str(e))
    finally:
        c.close()
print(json.dumps(r))
"""


# The HTTP server of test_standing.start_http, on the host's IPv6 address.
HTTP6 = """import http.server, socket, sys, functools
class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory='/tmp')
http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
srv = Server((sys.argv[1], int(sys.argv[2])), h)
open(sys.argv[3], 'w').close()
srv.serve_forever()
"""


def report(name, **kv):
    print(f"COOKIE-ALT {name}: " + ", ".join(f"{k}={v}" for k, v in kv.items()), file=sys.stderr, flush=True)


def alt_obj(which):
    path = os.path.join(ALT_DIR, f"cookie_alt_{which}_bpf.bpf.o")
    if not os.path.exists(path):
        raise AssertionError(f"no {path}: SLUICE_COOKIE_ALT_DIR={ALT_DIR!r} (build sluice-bench)")
    return path


def tcp_counters(tb):
    """The host namespace's TcpExt and Tcp counters, by name."""
    out = {}
    for f in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = tb.exec("host", ["cat", f]).stdout.splitlines()
        for names, values in zip(lines[0::2], lines[1::2]):
            prefix, names = names.split(":", 1)
            _, values = values.split(":", 1)
            for k, v in zip(names.split(), values.split()):
                out[prefix + k] = int(v)
    return out


class Attached:
    """cookie_alt.bpf.o on the host's veth (sluice-bench cookie-attach), by pid."""

    def __init__(self, tb, which):
        self.proc = subprocess.Popen(["ip", "netns", "exec", tb.ns("host"), BENCH, "cookie-attach", "--obj",
                                      alt_obj(which), "--iface", tb.host_if], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith('{"attached"'):
            self.close()
            raise AssertionError(f"cookie-attach: {line!r} {self.proc.stderr.read()}")

    def outcomes(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


class CookieAlternatives(unittest.TestCase):
    def setUp(self):
        require_root(self)
        if not ALT_DIR and in_ci():
            self.fail("SLUICE_COOKIE_ALT_DIR is not set")

    def one_case(self, tb, which, syncookies, mark_first, v6=False):
        """N fresh connections to a new listener with `which` cookies from
        XDP; what the client and the host's stack saw. (net.ipv4's
        tcp_syncookies and tcp_timestamps serve IPv6 too.)"""
        tb.exec("host", ["sysctl", "-qw", f"net.ipv4.tcp_syncookies={syncookies}"])
        host = tb.host_ip6 if v6 else tb.host_ip4
        http = start_server(tb, "host", HTTP6, host, HTTP_PORT, "http6") if v6 else start_http(tb)
        try:
            marked = None
            if mark_first:
                # One connection the stack answers itself: at 2 with its own
                # cookie, which marks the listener.
                c0 = tcp_counters(tb)
                tb.exec("client", ["python3", "-c", CLIENT, host, str(HTTP_PORT), "1"], timeout=30)
                marked = tcp_counters(tb)["TcpExtSyncookiesSent"] - c0["TcpExtSyncookiesSent"]
            att = Attached(tb, which)
            try:
                o1 = att.outcomes()
                c1 = tcp_counters(tb)
                t = time.monotonic()
                p = tb.exec("client", ["python3", "-c", CLIENT, host, str(HTTP_PORT), str(CONNECTIONS)],
                            timeout=30 + CONNECTIONS * 6)
                seconds = time.monotonic() - t
                c2 = tcp_counters(tb)
                o2 = att.outcomes()
            finally:
                att.close()
        finally:
            http.stop()
        seen = json.loads(p.stdout.strip().splitlines()[-1])
        xdp = {k: o2[k] - o1.get(k, 0) for k in o2}
        stack = {k: c2[k] - c1[k] for k in ("TcpExtSyncookiesRecv", "TcpExtSyncookiesFailed",
                                             "TcpExtSyncookiesSent", "TcpOutRsts", "TcpPassiveOpens")}
        return seen, xdp, stack, marked, seconds

    def test_the_stack_refuses_raw_cookies_unless_the_listener_was_marked(self):
        with Testbed("calt") as tb:
            tb.xdp_tx_peer()
            tb.exec("host", ["sysctl", "-qw", "net.ipv4.tcp_timestamps=2"])
            cases = {}
            for name, which, sc, mark, v6 in (("raw_syncookies2_unmarked", "raw", 2, False, False),
                                              ("raw_syncookies1_unmarked", "raw", 1, False, False),
                                              ("raw_syncookies2_marked", "raw", 2, True, False),
                                              ("listener_syncookies2_unmarked", "listener", 2, False, False),
                                              ("v6_raw_syncookies2_unmarked", "raw", 2, False, True),
                                              ("v6_listener_syncookies2_unmarked", "listener", 2, False, True)):
                seen, xdp, stack, marked, seconds = self.one_case(tb, which, sc, mark, v6)
                cases[name] = (seen, xdp, stack, marked)
                report(name, connections=CONNECTIONS, seconds=round(seconds, 2), marked_by=marked, **seen,
                       xdp=xdp, stack=stack)

            for name in ("raw_syncookies2_unmarked", "raw_syncookies1_unmarked", "v6_raw_syncookies2_unmarked"):
                seen, xdp, stack, _ = cases[name]
                # Every SYN was answered from XDP and every ACK's raw check passed ...
                self.assertEqual(xdp.get("sent"), CONNECTIONS, f"{name}: {xdp}")
                self.assertGreaterEqual(xdp.get("proved", 0), CONNECTIONS, f"{name}: {xdp}")
                # ... and the stack reset every one: it never checked the cookie.
                self.assertEqual(seen["served"], 0, f"{name}: {seen}")
                self.assertEqual(seen["connect_reset"] + seen["reset"], CONNECTIONS, f"{name}: {seen}")
                self.assertGreaterEqual(stack["TcpOutRsts"], CONNECTIONS, f"{name}: {stack}")
                self.assertEqual(stack["TcpExtSyncookiesRecv"], 0, f"{name}: {stack}")
                self.assertEqual(stack["TcpExtSyncookiesFailed"], 0, f"{name}: {stack}")

            seen, xdp, stack, marked = cases["raw_syncookies2_marked"]
            self.assertGreaterEqual(marked, 1, "the priming connection got the stack's own cookie")
            self.assertEqual(xdp.get("sent"), CONNECTIONS, xdp)
            self.assertEqual(seen["served"], CONNECTIONS, f"marked: the same raw cookies are accepted: {seen}")
            self.assertEqual(stack["TcpExtSyncookiesRecv"], CONNECTIONS, stack)

            for name in ("listener_syncookies2_unmarked", "v6_listener_syncookies2_unmarked"):
                seen, xdp, stack, _ = cases[name]
                self.assertEqual(xdp.get("sent"), CONNECTIONS, f"{name}: {xdp}")
                self.assertEqual(seen["served"], CONNECTIONS, f"{name}, the listener's own cookies: {seen}")
                self.assertEqual(seen["first_syn"], CONNECTIONS, f"{name}: {seen}")
                self.assertEqual(stack["TcpExtSyncookiesRecv"], CONNECTIONS, f"{name}: {stack}")
                self.assertEqual(stack["TcpExtSyncookiesSent"], 0, f"{name}: every SYN was answered from XDP: {stack}")


if __name__ == "__main__":
    main()
