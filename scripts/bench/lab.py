"""The lab the figures run in: the testbed bench.sh brought up (adopted
through the netns tests' harness), the built tools, traffic from
sluice-traffic, sluiced, and a second, two-queue veth pair."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import sluice_netns

from . import ROOT
from .procs import finish, last_json, run, spawn, stop
from .system import FLOOD_CPU, OTHER_CPU


class Lab:
    def __init__(self, build, quick):
        self.quick = quick
        env = os.environ.get
        self.sluiced = env("SLUICED") or os.path.join(build, "ctl", "sluiced", "sluiced")
        self.sluicectl = env("SLUICECTL") or os.path.join(build, "ctl", "sluicectl", "sluicectl")
        self.traffic = env("SLUICE_TRAFFIC") or os.path.join(build, "tests", "tools", "sluice-traffic")
        self.bench_tool = env("SLUICE_BENCH") or os.path.join(build, "tests", "tools", "sluice-bench")
        self.netrx_obj = os.path.join(build, "tests", "tools", "netrx_clock_bpf.bpf.o")
        self.xdp_pass_obj = os.path.join(build, "tests", "tools", "xdp_pass_bpf.bpf.o")
        self.standing_matches = os.path.join(build, "tests", "tools", "sluice-standing-matches")
        self._build = build
        sluice_netns.use_tools(self.sluiced, self.sluicectl, self.traffic)
        self.xdpfilt = "/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_dny_ip.o"
        if not os.path.exists(self.xdpfilt):
            found = run(["sh", "-c", "ls /usr/lib/*/bpf/xdpfilt_dny_ip.o 2>/dev/null | head -1"], check=False)
            self.xdpfilt = found.stdout.strip()
        # None when only rendering a results.json.
        self.tb = sluice_netns.Testbed.from_env() if "TB_NAME" in os.environ else None
        # The two-queue pair for the two-CPU figures (made by setup_acc()).
        self.acc_if = "veth-acc"
        self.acc_peer = "r-acc"
        self.acc_mac = "02:5c:00:04:00:02"
        self.acc_ip4 = "198.18.4.2"
        self.acc_up = False

    def obj(self, name):
        """A BPF object of the build (sluice_bpf, xdp_drop_bpf, the cuts...)."""
        return os.path.join(self._build, name + ".bpf.o")

    def tool_obj(self, name):
        """A benchmark-only BPF object of tests/tools (the LRU baseline, the wrapper)."""
        return os.path.join(self._build, "tests", "tools", name + ".bpf.o")

    def tool_src(self, rel):
        """A benchmark input kept in the source tree under tests/tools (figure 9's policies)."""
        return os.path.join(ROOT, "tests", "tools", rel)

    def x(self, role, *cmd):
        """A command line run in one of the testbed's namespaces."""
        return ["ip", "netns", "exec", self.tb.ns(role)] + [str(c) for c in cmd]

    # --------------------------------------------------------------- traffic

    def flood(self, *args, iface=None, mac=None, cpus=FLOOD_CPU, background=False):
        cmd = self.x("router", "taskset", "-c", cpus, self.traffic, "flood",
                     "--iface", iface or self.tb.inject_if, "--dst-mac", mac or self.tb.inject_dst_mac, *args)
        if background:
            return spawn(cmd)
        return last_json(run(cmd, timeout=600).stdout)

    def start_sink(self, port, seconds=600):
        ready = os.path.join(self.tb.rundir, f"sink-{port}.ready")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(ready)
        p = spawn(self.x("host", "taskset", "-c", OTHER_CPU, self.traffic, "sink", "--port", port,
                         "--bind", self.tb.host_ip6, "--duration", seconds, "--ready-file", ready))
        deadline = time.monotonic() + 10
        while not os.path.exists(ready):
            if p.poll() is not None or time.monotonic() > deadline:
                rc, out, err = finish(p, 5)
                raise RuntimeError(f"sink did not start: {err.strip()}")
            time.sleep(0.02)
        return p

    def end_sink(self, p):
        rc, out, err = stop(p, signal.SIGINT, 15)
        return last_json(out)

    def probe(self, port, pps, seconds):
        return spawn(self.x("client", "taskset", "-c", OTHER_CPU, self.traffic, "probe", "--dst",
                            self.tb.host_ip6, "--port", port, "--pps", pps, "--duration", seconds))

    # --------------------------------------------------------------- the host's counts

    def noports(self):
        """Udp6NoPorts of the host: flood frames that reached its UDP layer."""
        out = run(self.x("host", "cat", "/proc/net/snmp6")).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "Udp6NoPorts" and parts[1].isdigit():
                return int(parts[1])
        return 0

    def link_tx_dropped(self):
        """Frames the router's veth toward the host dropped on transmit (its
        peer's receive ring full: the peer has XDP, and veth has no qdisc)."""
        p = run(["ip", "-n", self.tb.ns("router"), "-j", "-s", "link", "show", self.tb.inject_if], check=False)
        try:
            return int(json.loads(p.stdout)[0]["stats64"]["tx"]["dropped"])
        except (ValueError, KeyError, IndexError):
            return 0

    # --------------------------------------------------------------- sluiced

    def ctl_request(self, sock, req, timeout=5):
        """One request on the control socket, from this process (no sluicectl)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(sock)
            s.sendall((json.dumps(req) + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
        finally:
            s.close()
        return json.loads(buf)

    def breaker_state(self, d):
        return self.ctl_request(d.socket, {"cmd": "status"})["interfaces"][0].get("breaker", {}).get("state")

    @contextlib.contextmanager
    def daemon(self, *extra, iface=None, sock_name="sluiced.sock"):
        """sluiced on an interface of the host (the harness's Daemon), its
        program detached again on the way out."""
        d = sluice_netns.Daemon(self.tb, "--detach-on-exit", *[str(e) for e in extra], iface=iface,
                                socket=os.path.join(self.tb.rundir, sock_name))
        try:
            d.start(timeout=30)
            yield d
        finally:
            try:
                d.kill(signal.SIGTERM)
            except subprocess.TimeoutExpired:
                d.kill(signal.SIGKILL)
            if os.path.isdir(d.pins):
                # --detach-on-exit removes them; should it not have run,
                # unpinning the link is what detaches the program.
                shutil.rmtree(d.pins, ignore_errors=True)

    def counters(self, d):
        """{outcome: [packets on each CPU]} of a daemon's interface."""
        return sluice_netns.counters_per_cpu(self.tb, d.iface)

    def maps_memlock(self, d):
        """bytes_memlock of every map sluice pinned for a daemon's interface."""
        return sum(sluice_netns.pinned_maps_memlock(self.tb, d.iface).values())

    # --------------------------------------------------------------- the two-queue pair

    def setup_acc(self):
        """A second veth pair, router <-> host, with two queues each way: a
        sender on CPU n lands in receive queue n (AF_PACKET records the
        sending CPU as the queue), so XDP runs on both CPUs at once."""
        r, h = self.tb.ns("router"), self.tb.ns("host")
        run(["ip", "-n", r, "link", "add", self.acc_peer, "address", "02:5c:00:04:00:01", "numtxqueues", "2",
             "numrxqueues", "2", "type", "veth", "peer", "name", self.acc_if, "address", self.acc_mac,
             "netns", h, "numtxqueues", "2", "numrxqueues", "2"])
        self.acc_up = True
        run(["ip", "-n", r, "link", "set", self.acc_peer, "up"])
        run(["ip", "-n", h, "link", "set", self.acc_if, "up"])
        run(["ip", "-n", h, "addr", "add", self.acc_ip4 + "/24", "dev", self.acc_if])

    def teardown_acc(self):
        if self.acc_up:
            run(["ip", "-n", self.tb.ns("router"), "link", "del", self.acc_peer], check=False)
            self.acc_up = False
