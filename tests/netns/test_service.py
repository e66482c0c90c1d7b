"""sluiced as a systemd service would run it, without systemd: the sd_notify
protocol on a socket of the test's own (READY=1 only once the program is
attached and pinned, WATCHDOG=1 from the loop, STOPPING=1), and the
capability set of packaging/systemd/sluiced.service.in, read from the unit and
enforced with setpriv: everything sluiced does works under it (load, maps,
pins, attach, frames, breaker, adoption after SIGKILL, re-attach after the
interface is recreated, detach), and each capability the unit's comments say
the kernel asks for is shown to be asked for, by a set without it."""

import os
import re
import signal
import socket
import time
import unittest

from sluice_netns import (SOURCE_DIR, Daemon, Testbed, counters, counters_after, ctl, ctl_json, environ, main,
                          rebuild_host_link, require_root, run, send, settle, xdp_prog_id, wait_until)

UNIT = os.path.join(SOURCE_DIR, "packaging", "systemd", "sluiced.service.in")


def unit_caps():
    with open(UNIT) as f:
        (line,) = [l for l in f.read().splitlines() if l.startswith("CapabilityBoundingSet=")]
    return line.split("=", 1)[1].split()


def setpriv_caps(caps):
    return ",".join("+" + c.removeprefix("CAP_").lower() for c in caps)


class CappedDaemon(Daemon):
    """sluiced with only `caps` (uid 0, bounding set cut, nothing inheritable
    or ambient: what systemd does with CapabilityBoundingSet= for root)."""

    def __init__(self, tb, caps, *extra, **kw):
        super().__init__(tb, *extra, **kw)
        i = self.args.index(tb.ns_host) + 1
        self.args[i:i] = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all",
                          "--bounding-set=-all," + setpriv_caps(caps), "--"]

    def effective_caps(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"^CapEff:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)


CAP_BITS = {"CAP_NET_ADMIN": 12, "CAP_SYS_ADMIN": 21, "CAP_PERFMON": 38, "CAP_BPF": 39}


class Service(unittest.TestCase):
    def setUp(self):
        require_root(self)
        run(["setpriv", "--version"])

    def test_sd_notify_ready_after_attach_watchdog_stopping(self):
        with Testbed("notify") as tb:
            path = os.path.join(tb.rundir, "notify.sock")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(path)
            sock.settimeout(20)
            with environ(NOTIFY_SOCKET=path, WATCHDOG_USEC="400000"):
                d = Daemon(tb, "--period", "1").start(wait=False)
            try:
                msg = sock.recv(4096).decode()
                # READY is the first word sluiced says, and by then the
                # program is attached and pinned.
                self.assertIn("READY=1", msg.split("\n"))
                self.assertIn("STATUS=protecting 1 interface(s)", msg.split("\n"))
                self.assertIsNotNone(xdp_prog_id(tb))
                self.assertTrue(os.path.exists(os.path.join(tb.pin_dir, tb.host_if, "link")))
                self.assertTrue(ctl_json(tb, "status")["daemon"]["running"])
                # WATCHDOG=1 every half interval (0.2 s), though the period is 1 s
                t0, pings = time.monotonic(), 0
                while time.monotonic() - t0 < 1.0:
                    if sock.recv(4096).decode() == "WATCHDOG=1":
                        pings += 1
                self.assertGreaterEqual(pings, 3)
                d.kill(signal.SIGTERM)
                rest = []
                sock.settimeout(2)
                try:
                    while True:
                        rest.append(sock.recv(4096).decode())
                except socket.timeout:
                    pass
                self.assertIn("STOPPING=1", rest)
                self.assertEqual(d.proc.returncode, 0)
            finally:
                d.kill(signal.SIGTERM)
                sock.close()

    def test_unit_capabilities_suffice_for_everything(self):
        caps = unit_caps()
        self.assertEqual(sorted(caps), ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN"])
        with Testbed("caps") as tb:
            src = "198.18.7.7"
            d = CappedDaemon(tb, caps, "--rate", "1", "--burst", "5", "--period", "0.2").start()
            try:
                self.assertEqual(d.effective_caps(), sum(1 << CAP_BITS[c] for c in caps))
                prog = xdp_prog_id(tb)
                self.assertIsNotNone(prog)  # loaded, maps made, attached, pinned
                settle(tb)
                before = counters(tb)
                send(tb, 8, src)
                after = counters_after(tb, before, 8)
                self.assertEqual(after["passed"] - before["passed"], 5)
                self.assertEqual(after["drop_rate"] - before["drop_rate"], 3)
                ctl(tb, "breaker", "trip", tb.host_if, check=True)
                ctl(tb, "deny", "add", tb.host_if, "198.18.20.0/24", check=True)
                d.kill(signal.SIGKILL)
                # a restart under the same set adopts the pins (reading them,
                # and opening the program behind the link)
                d = CappedDaemon(tb, caps, "--period", "0.2").start()
                self.assertIn("adopted pins", d.output())
                self.assertEqual(xdp_prog_id(tb), prog)
                self.assertEqual(ctl_json(tb, "status")["interfaces"][0]["breaker"]["state"], "shedding")
                # the interface deleted and created again: re-attached
                run(["ip", "-n", tb.ns_host, "link", "del", tb.host_if])
                rebuild_host_link(tb)
                wait_until(lambda: "re-attached" in d.output(), 20, what="the re-attach")
                self.assertEqual(xdp_prog_id(tb), prog)
                # detach through the daemon: pins and program gone
                ctl(tb, "detach", tb.host_if, check=True)
                self.assertIsNone(xdp_prog_id(tb))
                self.assertFalse(os.path.exists(os.path.join(tb.pin_dir, tb.host_if)))
            finally:
                d.kill(signal.SIGTERM)

    def start_fails(self, tb, caps, **kw):
        d = CappedDaemon(tb, caps, "--period", "0.2", **kw)
        d.start(wait=False)
        rc = d.proc.wait(timeout=30)
        return rc, d.output()

    def test_each_capability_is_asked_for(self):
        with Testbed("capsneed") as tb:
            # CAP_PERFMON (or CAP_SYS_ADMIN): the verifier's pointer arithmetic
            rc, out = self.start_fails(tb, ["CAP_BPF", "CAP_NET_ADMIN"])
            self.assertEqual(rc, 1)
            # (where the verifier first refuses moves with the program: a
            # packet offset added to a pointer, or one pointer taken from another)
            self.assertRegex(out, r"pointer (-= pointer|arithmetic with it) prohibited")
            # CAP_NET_ADMIN (or CAP_SYS_ADMIN): XDP is a net-admin program type
            rc, out = self.start_fails(tb, ["CAP_BPF", "CAP_PERFMON"])
            self.assertEqual(rc, 1)
            self.assertIn("loading the XDP program", out)
            self.assertIn("Operation not permitted", out)
            # CAP_BPF (or CAP_SYS_ADMIN): no BPF at all
            rc, out = self.start_fails(tb, ["CAP_NET_ADMIN", "CAP_PERFMON"])
            self.assertEqual(rc, 1)
            self.assertIn("Operation not permitted", out)
            self.assertIsNone(xdp_prog_id(tb))
            # mounting a bpffs: CAP_SYS_ADMIN (`ip netns exec` gives the
            # command a /sys with nothing mounted at /sys/fs/bpf)
            rc, out = self.start_fails(tb, ["CAP_BPF", "CAP_NET_ADMIN", "CAP_PERFMON"],
                                       pin_dir="/sys/fs/bpf/sluice")
            self.assertEqual(rc, 1)
            self.assertIn("mounting one failed", out)

            # Without CAP_SYS_ADMIN a fresh start works: load, maps, pins
            # (file permissions only), bpf_link attach ...
            no_admin = ["CAP_BPF", "CAP_NET_ADMIN", "CAP_PERFMON"]
            d = CappedDaemon(tb, no_admin, "--period", "0.2").start()
            prog = xdp_prog_id(tb)
            self.assertIsNotNone(prog)
            d.kill(signal.SIGKILL)
            # ... but adopting the pins after a restart does not: the program
            # behind the link pin is opened by id.
            rc, out = self.start_fails(tb, no_admin)
            self.assertEqual(rc, 1)
            self.assertIn("opening the program of", out)
            self.assertIn("Operation not permitted", out)
            self.assertEqual(xdp_prog_id(tb), prog)  # still enforcing (fail-static)
            # CAP_SYS_ADMIN alone stands in for the other three in the bpf()
            # checks: it adopts, where the three without it could not.
            d = CappedDaemon(tb, ["CAP_SYS_ADMIN"], "--period", "0.2").start()
            try:
                self.assertIn("adopted pins", d.output())
                ctl(tb, "detach", tb.host_if, check=True)
            finally:
                d.kill(signal.SIGTERM)


if __name__ == "__main__":
    main()
