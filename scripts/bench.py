#!/usr/bin/env python3
"""bench.py - the driver behind scripts/bench.sh (run that, not this).

scripts/bench.sh installs, builds, brings up a testbed of namespaces
(scripts/testbed.sh) and exports its TB_* variables; this script runs the seven
figures of docs/benchmarks.md in it, prints a table, writes the JSON, renders
the chart and, with --update-docs, rewrites the generated part of
docs/benchmarks.md and docs/benchmarks.png. Every flood runs inside the
testbed's namespaces; every daemon, program, ruleset and veth this script
makes is removed on the way out (bench.sh's trap removes the testbed itself).

Python 3 standard library only. Every figure is a ratio to a baseline measured
in the same run; repeated measurements are reported as their median.
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
FLOOD_CPU = str(NCPU - 1)          # the generator and, on veth, the receive path
OTHER_CPU = "0"                    # probe and sink (the legitimate side)

PROBE_PORT = 7001
LEGIT_PORT = 7002
FLOODER_PORT = 7003

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(*a):
    print("bench:", *a, file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ------------------------------------------------------------------ processes

PROCS = []


def spawn(cmd, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    p = subprocess.Popen([str(c) for c in cmd], text=True, **kw)
    PROCS.append(p)
    return p


def finish(p, timeout):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    if p in PROCS:
        PROCS.remove(p)
    return p.returncode, out or "", err or ""


def stop(p, sig=signal.SIGINT, timeout=10):
    if p.poll() is None:
        try:
            p.send_signal(sig)
        except ProcessLookupError:
            pass
    return finish(p, timeout)


def wait_rusage(p, timeout):
    """Wait for a child and return (stdout, its user + system CPU seconds).
    The kernel's total for a task is its exact runtime (sum_exec_runtime),
    including the softirq work that ran in its context."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.01)
    p.returncode = os.waitstatus_to_exitcode(status)
    out = p.stdout.read() if p.stdout else ""
    if p.stderr:
        p.stderr.read()
    if p in PROCS:
        PROCS.remove(p)
    return out, ru.ru_utime + ru.ru_stime


def task_runtime_s(pid):
    """Exact runtime of a task (schedstat), in seconds."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat" if os.path.exists(f"/proc/{pid}/task/{pid}") else
                  f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except OSError:
        return 0.0


def ksoftirqd_pid(cpu):
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() == f"ksoftirqd/{cpu}":
                        return int(d)
            except OSError:
                pass
    return None


def kill_all():
    for p in list(PROCS):
        if p.poll() is None:
            try:
                p.terminate()
                p.wait(timeout=5)
            except Exception:
                p.kill()
        if p in PROCS:
            PROCS.remove(p)


def run(cmd, check=True, timeout=300, **kw):
    cmd = [str(c) for c in cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def end_with_stdin(p, timeout):
    """End a helper that runs until end of input (sluice-bench netrx, attach)."""
    p.stdin.close()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    if p in PROCS:
        PROCS.remove(p)


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON line in: {text!r}")


# ------------------------------------------------------------------ testbed

class TB:
    """The TB_* variables bench.sh exported (scripts/testbed.sh)."""

    def __init__(self):
        e = os.environ
        self.name = e["TB_NAME"]
        self.rundir = e["TB_RUNDIR"]
        self.bpffs = e["TB_BPFFS"]
        self.ns = {"host": e["TB_NS_HOST"], "client": e["TB_NS_CLIENT"],
                   "attacker": e["TB_NS_ATTACKER"], "router": e["TB_NS_ROUTER"]}
        self.host_if = e["TB_HOST_IF"]
        self.host_ip4 = e["TB_HOST_IP4"]
        self.host_ip6 = e["TB_HOST_IP6"]
        self.client_ip6 = e["TB_CLIENT_IP6"]
        self.inject_if = e["TB_INJECT_IF"]
        self.inject_mac = e["TB_INJECT_DST_MAC"]
        self.pin_dir = os.path.join(self.bpffs, "sluice")
        # The two-queue pair for the two-CPU figures (made by setup_acc()).
        self.acc_if = "veth-acc"
        self.acc_peer = "r-acc"
        self.acc_mac = "02:5c:00:04:00:02"
        self.acc_ip4 = "198.18.4.2"

    def x(self, role, *cmd):
        return ["ip", "netns", "exec", self.ns[role]] + [str(c) for c in cmd]


class Bench:
    def __init__(self, args):
        self.a = args
        self.quick = args.quick
        self.tb = TB() if "TB_NAME" in os.environ else None  # none when only rendering
        b = args.build
        env = os.environ.get
        self.sluiced = env("SLUICED") or os.path.join(b, "ctl", "sluiced", "sluiced")
        self.sluicectl = env("SLUICECTL") or os.path.join(b, "ctl", "sluicectl", "sluicectl")
        self.traffic = env("SLUICE_TRAFFIC") or os.path.join(b, "tests", "tools", "sluice-traffic")
        self.bench_tool = env("SLUICE_BENCH") or os.path.join(b, "tests", "tools", "sluice-bench")
        self.obj = lambda n: os.path.join(b, n + ".bpf.o")
        self.xdpfilt = "/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_dny_ip.o"
        if not os.path.exists(self.xdpfilt):
            found = run(["sh", "-c", "ls /usr/lib/*/bpf/xdpfilt_dny_ip.o 2>/dev/null | head -1"], check=False)
            self.xdpfilt = found.stdout.strip()
        self.rows = []
        self.detail = {}
        self.idle_softirq_rate = 0.0
        self.daemons = []
        self.acc_up = False
        self.ksoftirqd = None
        self.timing = {}
        self.netrx = None
        self.idle_netrx_rate = 0.0
        self.netrx_obj = os.path.join(b, "tests", "tools", "netrx_clock_bpf.bpf.o")

    # --------------------------------------------------------------- results

    def row(self, fig, name, unit, value, baseline, baseline_name, floor=None, note="", samples=None,
            lower_is_better=True):
        ratio = None
        if value is not None and baseline not in (None, 0):
            ratio = value / baseline
        ok = None
        if floor is not None and ratio is not None:
            op, lim = floor
            ok = ratio <= lim if op == "<=" else ratio < lim
        r = {"figure": fig, "name": name, "unit": unit, "value": value, "baseline": baseline,
             "baseline_name": baseline_name, "ratio": ratio}
        if floor is not None:
            r["floor"] = f"ratio {floor[0]} {floor[1]}"
            r["floor_met"] = ok
        if note:
            r["note"] = note
        if samples is not None:
            r["samples"] = samples
        self.rows.append(r)
        fmt = lambda v: "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
        log(f"  [{fig}] {name}: {fmt(value)} {unit} vs {fmt(baseline)} ({baseline_name})"
            f" ratio {fmt(ratio)}" + ("" if ok is None else (" floor met" if ok else " FLOOR MISSED")))
        return r

    # --------------------------------------------------------------- system reads

    @staticmethod
    def softirq_ticks():
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("cpu "):
                    return int(line.split()[7])
        return 0

    def snmp6(self):
        out = run(self.tb.x("host", "cat", "/proc/net/snmp6")).stdout
        d = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                d[parts[0]] = int(parts[1])
        return d

    def noports(self):
        return self.snmp6().get("Udp6NoPorts", 0)

    @staticmethod
    def meminfo(key):
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    @staticmethod
    def proc_rss(pid):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    @staticmethod
    def proc_cpu_s(pid):
        """Exact runtime of every thread of a process (schedstat), in seconds."""
        total = 0.0
        for t in os.listdir(f"/proc/{pid}/task"):
            total += task_runtime_s(t)
        return total

    def measure_idle_softirq(self, seconds):
        s0, n0, t0 = self.softirq_ticks(), self.netrx_ns(), time.monotonic()
        time.sleep(seconds)
        s1, n1, t1 = self.softirq_ticks(), self.netrx_ns(), time.monotonic()
        self.idle_softirq_rate = (s1 - s0) / (t1 - t0)
        self.idle_netrx_rate = (n1 - n0) / (t1 - t0)
        log(f"without the flood: softirq {self.idle_softirq_rate / CLK_TCK * 1000:.1f} ms/s (sampled), "
            f"NET_RX {self.idle_netrx_rate / 1e6:.2f} ms/s (exact), every CPU")

    def start_netrx(self):
        self.netrx = spawn([self.bench_tool, "netrx", "--obj", self.netrx_obj], stdin=subprocess.PIPE,
                           stderr=None)
        self.netrx_ns()

    def netrx_ns(self):
        self.netrx.stdin.write("\n")
        self.netrx.stdin.flush()
        line = self.netrx.stdout.readline()
        if not line:
            raise RuntimeError("sluice-bench netrx ended")
        return json.loads(line)["ns"]

    def stop_netrx(self):
        if self.netrx:
            p, self.netrx = self.netrx, None
            end_with_stdin(p, 10)

    # --------------------------------------------------------------- traffic

    def flood(self, *args, iface=None, mac=None, cpus=FLOOD_CPU, background=False):
        cmd = self.tb.x("router", "taskset", "-c", cpus, self.traffic, "flood",
                        "--iface", iface or self.tb.inject_if, "--dst-mac", mac or self.tb.inject_mac, *args)
        if background:
            return spawn(cmd)
        return last_json(run(cmd, timeout=600).stdout)

    def start_sink(self, port, seconds=600):
        ready = os.path.join(self.tb.rundir, f"sink-{port}.ready")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(ready)
        p = spawn(self.tb.x("host", "taskset", "-c", OTHER_CPU, self.traffic, "sink", "--port", port,
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
        return spawn(self.tb.x("client", "taskset", "-c", OTHER_CPU, self.traffic, "probe", "--dst",
                               self.tb.host_ip6, "--port", port, "--pps", pps, "--duration", seconds))

    # --------------------------------------------------------------- sluiced

    def ctl_request(self, sock, req, timeout=5):
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

    @contextlib.contextmanager
    def daemon(self, *extra, iface=None, sock_name="sluiced.sock"):
        iface = iface or self.tb.host_if
        sock = os.path.join(self.tb.rundir, sock_name)
        logpath = os.path.join(self.tb.rundir, f"sluiced-{iface}.log")
        logf = open(logpath, "w")
        p = spawn(self.tb.x("host", self.sluiced, "-i", iface, "--pin-dir", self.tb.pin_dir, "--socket", sock,
                            "--detach-on-exit", *extra), stdout=logf, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                if p.poll() is not None:
                    logf.flush()
                    raise RuntimeError(f"sluiced exited {p.returncode}: {open(logpath).read().strip()}")
                if os.path.exists(sock):
                    try:
                        st = self.ctl_request(sock, {"cmd": "status"})
                        if st.get("ok") and st["daemon"].get("running"):
                            break
                    except (OSError, ValueError):
                        pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"sluiced did not answer in 30 s: {open(logpath).read().strip()}")
                time.sleep(0.05)
            yield {"proc": p, "pid": p.pid, "sock": sock, "iface": iface,
                   "pins": os.path.join(self.tb.pin_dir, iface)}
        finally:
            stop(p, signal.SIGTERM, 20)
            logf.close()
            pins = os.path.join(self.tb.pin_dir, iface)
            if os.path.isdir(pins):
                # --detach-on-exit removes them; should it not have run,
                # unpinning the link is what detaches the program.
                shutil.rmtree(pins, ignore_errors=True)

    def link_tx_dropped(self):
        """Frames the router's veth toward the host dropped on transmit (its
        peer's receive ring full: the peer has XDP, and veth has no qdisc)."""
        p = run(["ip", "-n", self.tb.ns["router"], "-j", "-s", "link", "show", self.tb.inject_if], check=False)
        try:
            return int(json.loads(p.stdout)[0]["stats64"]["tx"]["dropped"])
        except (ValueError, KeyError, IndexError):
            return 0

    def maps_memlock(self, pins):
        total = 0
        for name in sorted(os.listdir(pins)):
            if name == "link":
                continue
            p = run(["bpftool", "-j", "map", "show", "pinned", os.path.join(pins, name)], check=False)
            if p.returncode == 0:
                total += int(json.loads(p.stdout).get("bytes_memlock", 0))
        return total

    def counters(self, pins):
        """{outcome index: [packets per CPU]} from the pinned per-CPU counters."""
        out = {}
        for e in json.loads(run(["bpftool", "-j", "map", "dump", "pinned", os.path.join(pins, "counters")]).stdout):
            key = e["key"]
            k = int(key[0], 16) if isinstance(key, list) else int(key)
            per = []
            for v in e["values"]:
                val = v["value"]
                if isinstance(val, list):
                    per.append(int.from_bytes(bytes(int(b, 16) for b in val[:8]), "little"))
                else:
                    per.append(int(val["packets"]))
            out[k] = per
        return out

    # --------------------------------------------------------------- filters

    def xdp_drop(self):
        return self.xdp_attach(self.obj("xdp_drop_bpf"))

    @contextlib.contextmanager
    def xdp_attach(self, obj):
        # Through `ip netns exec`, not `ip -n`: iproute2 pins the maps an
        # object asks to pin (xdp-filter's) under /sys/fs/bpf, and only
        # `ip netns exec`'s private /sys keeps them off the machine's bpffs.
        run(self.tb.x("host", "ip", "link", "set", "dev", self.tb.host_if, "xdpdrv", "obj", obj, "sec", "xdp"))
        try:
            yield
        finally:
            run(self.tb.x("host", "ip", "link", "set", "dev", self.tb.host_if, "xdpdrv", "off"), check=False)

    @contextlib.contextmanager
    def bpf_attached(self, obj, rate, burst):
        """A sluice object (or a cut-point build) attached to the host's
        interface by `sluice-bench attach`, configured as the daemon would
        (rate, burst, serving) but without the daemon."""
        p = spawn(self.tb.x("host", self.bench_tool, "attach", "--iface", self.tb.host_if, "--rate", rate,
                            "--burst", burst, obj), stdin=subprocess.PIPE, stderr=None)
        try:
            line = p.stdout.readline()
            if not line:
                raise RuntimeError(f"sluice-bench attach {obj} ended")
            yield
        finally:
            end_with_stdin(p, 30)

    @contextlib.contextmanager
    def nft(self, mask64, rate, burst, size):
        key = "ip6 saddr & ffff:ffff:ffff:ffff::" if mask64 else "ip6 saddr"
        rules = f"""table netdev sluicebench {{
  set src6 {{ type ipv6_addr; size {size}; flags dynamic,timeout; timeout 60s; }}
  chain ingress {{
    type filter hook ingress device "{self.tb.host_if}" priority -500; policy accept;
    meta protocol ip6 add @src6 {{ {key} limit rate over {rate}/second burst {burst} packets }} counter drop
  }}
}}
"""
        run(self.tb.x("host", "nft", "-f", "-"), input=rules)
        try:
            yield
        finally:
            run(self.tb.x("host", "nft", "delete", "table", "netdev", "sluicebench"), check=False)

    def nft_elements(self):
        p = run(self.tb.x("host", "nft", "-j", "list", "set", "netdev", "sluicebench", "src6"), check=False,
                timeout=120)
        if p.returncode != 0:
            return None
        for o in json.loads(p.stdout).get("nftables", []):
            if "set" in o:
                return len(o["set"].get("elem", []))
        return None

    @contextlib.contextmanager
    def hashlimit(self, mask, rate, burst, size):
        rule = ["PREROUTING", "-i", self.tb.host_if, "-m", "hashlimit", "--hashlimit-mode", "srcip",
                "--hashlimit-srcmask", mask, "--hashlimit-above", f"{rate}/sec", "--hashlimit-burst", burst,
                "--hashlimit-name", "sluicebench", "--hashlimit-htable-max", size,
                "--hashlimit-htable-size", max(size // 8, 1024), "-j", "DROP"]
        run(self.tb.x("host", "ip6tables", "-t", "raw", "-A", *rule))
        try:
            yield
        finally:
            run(self.tb.x("host", "ip6tables", "-t", "raw", "-F", "PREROUTING"), check=False)

    def hashlimit_entries(self):
        p = run(self.tb.x("host", "cat", "/proc/net/ip6t_hashlimit/sluicebench"), check=False)
        return len(p.stdout.splitlines()) if p.returncode == 0 else None

    # --------------------------------------------------------------- the two-queue pair

    def setup_acc(self):
        """A second veth pair, router <-> host, with two queues each way: a
        sender on CPU n lands in receive queue n (AF_PACKET records the
        sending CPU as the queue), so XDP runs on both CPUs at once."""
        r, h = self.tb.ns["router"], self.tb.ns["host"]
        run(["ip", "-n", r, "link", "add", self.tb.acc_peer, "address", "02:5c:00:04:00:01", "numtxqueues", "2",
             "numrxqueues", "2", "type", "veth", "peer", "name", self.tb.acc_if, "address", self.tb.acc_mac,
             "netns", h, "numtxqueues", "2", "numrxqueues", "2"])
        self.acc_up = True
        run(["ip", "-n", r, "link", "set", self.tb.acc_peer, "up"])
        run(["ip", "-n", h, "link", "set", self.tb.acc_if, "up"])
        run(["ip", "-n", h, "addr", "add", self.tb.acc_ip4 + "/24", "dev", self.tb.acc_if])

    def teardown_acc(self):
        if self.acc_up:
            run(["ip", "-n", self.tb.ns["router"], "link", "del", self.tb.acc_peer], check=False)
            self.acc_up = False

    # =============================================================== figure 1

    def fig1(self):
        log("figure 1: per-packet program cost (BPF_PROG_TEST_RUN)")
        rounds = 3 if self.quick else 11
        repeat = 1000000
        progs = [("xdp_drop", self.obj("xdp_drop_bpf")), ("xdp_filter", self.xdpfilt),
                 ("sluice", self.obj("sluice_bpf")), ("sluice_drop_path", self.obj("sluice_bpf") + ",drop"),
                 ("fine_clock", self.obj("sluice_fineclock_bpf")), ("siphash24", self.obj("sluice_sip24_bpf"))]
        stages = ["parse", "hash", "lookup", "clock", "bucket"]
        progs += [(f"cut_{s}", self.obj(f"sluice_cut_{s}_bpf")) for s in stages]
        out = last_json(run([self.bench_tool, "cost", "--repeat", repeat, "--rounds", rounds] +
                            [f"{n}={p}" for n, p in progs], timeout=900).stdout)
        d = out["progs"]
        self.detail["fig1"] = out
        med = {n: {f: median(d[n][f]) for f in ("v4", "v6")} for n in d}
        for fam, label in (("v4", "IPv4"), ("v6", "IPv6")):
            s, drop, xf = med["sluice"][fam], med["xdp_drop"][fam], med["xdp_filter"][fam]
            self.row(1, f"cost_{fam}_sluice_vs_xdp_filter", "ns/packet", s, xf, "xdp-filter deny-ip",
                     floor=("<=", 2.5), samples=d["sluice"][fam],
                     note=f"64-byte {label} UDP, pass path (both slots paid)")
            self.row(1, f"cost_{fam}_sluice_vs_xdp_drop", "ns/packet", s, drop, "XDP_DROP only",
                     samples=d["sluice"][fam])
            self.row(1, f"cost_{fam}_xdp_filter_vs_xdp_drop", "ns/packet", xf, drop, "XDP_DROP only",
                     samples=d["xdp_filter"][fam],
                     note="xdpfilt_dny_ip.o, maps empty: looks the addresses up, then drops (default deny)")
            self.row(1, f"cost_{fam}_sluice_drop_path_vs_xdp_filter", "ns/packet", med["sluice_drop_path"][fam],
                     xf, "xdp-filter deny-ip", samples=d["sluice_drop_path"][fam],
                     note="over its limit: dropped (no bucket write)")
            # The breakdown: stage k = cut_k - cut_(k-1); the floor is xdp_drop.
            prev, prev_name = drop, "xdp_drop"
            names = {"parse": "parse", "hash": "hash (config lookup, mask, SipHash-1-3, indices)",
                     "lookup": "slot lookups", "clock": "time read (coarse clock)",
                     "bucket": "bucket update (two-choice CAS)"}
            for st in stages:
                v = med[f"cut_{st}"][fam]
                self.row(1, f"breakdown_{fam}_{st}", "ns/packet", v - prev, s, "sluice total",
                         note=names[st])
                prev = v
            self.row(1, f"breakdown_{fam}_counters", "ns/packet", s - prev, s, "sluice total",
                     note="per-CPU outcome counter")
            self.row(1, f"breakdown_{fam}_test_run_floor", "ns/packet", drop, s, "sluice total",
                     note="BPF_PROG_TEST_RUN loop + XDP_DROP program")
            self.row(1, f"variant_{fam}_fine_clock", "ns/packet", med["fine_clock"][fam], s, "sluice (coarse clock)",
                     samples=d["fine_clock"][fam], note="bpf_ktime_get_ns instead of the coarse clock")
            self.row(1, f"variant_{fam}_siphash24", "ns/packet", med["siphash24"][fam], s, "sluice (SipHash-1-3)",
                     samples=d["siphash24"][fam], note="SipHash-2-4 instead of 1-3")

    # =============================================================== figure 2

    def fig2_run(self, pps, seconds, client_pps):
        tb = self.tb
        ksd = self.ksoftirqd
        sink = self.start_sink(PROBE_PORT)
        try:
            time.sleep(0.1)
            n0 = self.noports()
            tx0 = self.link_tx_dropped()
            k0 = task_runtime_s(ksd) if ksd else 0.0
            s0, x0, t0 = self.softirq_ticks(), self.netrx_ns(), time.monotonic()
            pr = self.probe(PROBE_PORT, client_pps, seconds)
            args = ["--dst", tb.host_ip6, "--random-src", "--v6", "--v6-same64", "--duration", seconds]
            if pps:
                args += ["--pps", pps]
            fl = self.flood(*args, background=True)
            fout, flood_cpu = wait_rusage(fl, seconds + 60)
            s1, x1, t1 = self.softirq_ticks(), self.netrx_ns(), time.monotonic()
            k1 = task_runtime_s(ksd) if ksd else 0.0
            rc2, pout, perr = finish(pr, seconds + 60)
            time.sleep(0.3)
        finally:
            sj = self.end_sink(sink)
        n1 = self.noports()
        tx1 = self.link_tx_dropped()
        fj, pj = last_json(fout), last_json(pout)
        sent = fj["sent"]
        ticks = (s1 - s0) - self.idle_softirq_rate * (t1 - t0)
        delivered = sj["by_source"].get(tb.client_ip6, 0)
        netrx = (x1 - x0) - self.idle_netrx_rate * (t1 - t0)
        # With an XDP program on veth-host, frames the generator sent while
        # veth-host's receive ring was full are dropped by the router's veth
        # on transmit and never reach the host: costs are per frame received.
        got = sent - (tx1 - tx0)
        return {"offered_pps": fj["pps"], "sent": sent, "received": got, "seconds": fj["seconds"],
                "netrx_ns_per_packet": netrx / got if got > 0 else None, "netrx_s": (x1 - x0) / 1e9,
                "cpu_ns_per_packet": ticks / CLK_TCK * 1e9 / got if got > 0 else None,
                "softirq_s": (s1 - s0) / CLK_TCK,
                "sender_cpu_s": flood_cpu, "ksoftirqd_s": k1 - k0,
                "sender_ns_per_packet": (flood_cpu + k1 - k0) * 1e9 / got if got > 0 else None,
                "client_sent": pj["sent"], "client_delivered": delivered,
                "client_loss": 1 - delivered / pj["sent"] if pj["sent"] else None,
                "link_tx_dropped": tx1 - tx0,
                "flood_through": n1 - n0,
                "flood_through_pps": (n1 - n0) / fj["seconds"] if fj["seconds"] else None}

    def fig2(self):
        log("figure 2: flood absorption on veth (IPv6 source rotating through one /64)")
        seconds = 1.5 if self.quick else 4
        repeats = 1 if self.quick else 3
        rates = [0, 100000] if self.quick else [0, 50000, 100000, 200000]
        rate, burst = 1000, 1000
        client_pps = rate // 2
        self.ksoftirqd = ksoftirqd_pid(FLOOD_CPU)
        configs = [
            ("a_none", "no filter", contextlib.nullcontext),
            ("b_xdp_drop", "XDP_DROP only", self.xdp_drop),
            ("b2_xdp_filter", "xdp-filter deny-ip (reference)", lambda: self.xdp_attach(self.xdpfilt)),
            ("c_sluice", "sluice", lambda: self.daemon("--rate", rate, "--burst", burst)),
            ("d_nft", "nftables netdev dynamic set", lambda: self.nft(True, rate, burst, 262144)),
            ("e_hashlimit", "iptables hashlimit (raw)", lambda: self.hashlimit(64, rate, burst, 262144)),
        ]
        # Where sluice's time goes on this path: the cut-point builds of
        # figure 1, attached without the daemon, each dropping every frame
        # after one more stage; "full" is the default object the same way.
        stages = ["parse", "hash", "lookup", "clock", "bucket"]
        cuts = [(f"s_cut_{st}", f"sluice cut after {st}",
                 (lambda o: (lambda: self.bpf_attached(o, rate, burst)))(self.obj(f"sluice_cut_{st}_bpf")))
                for st in stages]
        cuts.append(("s_full", "sluice without the daemon",
                     lambda: self.bpf_attached(self.obj("sluice_bpf"), rate, burst)))
        configs += cuts
        cost_only = {"b2_xdp_filter"} | {c[0] for c in cuts}
        labels = dict((c[0], c[1]) for c in configs)
        self.start_netrx()
        self.measure_idle_softirq(1 if self.quick else 2)
        res = {c[0]: [] for c in configs}
        for rep in range(repeats):
            for key, label, ctx in configs:
                with ctx():
                    time.sleep(0.3)
                    runs = []
                    # The reference program and the cuts are there for their cost only.
                    for pps in (rates[:1] if key in cost_only else rates):
                        r = self.fig2_run(pps, seconds, client_pps)
                        r["paced_pps"] = pps
                        runs.append(r)
                        log(f"  {key} rep {rep} pace {pps or 'max'}: offered {r['offered_pps']} pps, NET_RX "
                            f"{r['netrx_ns_per_packet'] or 0:.0f} ns/pkt, softirq (sampled) "
                            f"{r['cpu_ns_per_packet'] or 0:.0f} ns/pkt, sender+ksoftirqd "
                            f"{r['sender_ns_per_packet'] or 0:.0f} ns/pkt, client loss "
                            f"{100 * (r['client_loss'] or 0):.2f}%, through {r['flood_through']}")
                    res[key].append(runs)
        self.stop_netrx()
        self.detail["fig2"] = {"seconds": seconds, "rates": rates, "limit": [rate, burst],
                               "client_pps": client_pps, "runs": res}

        def per_rep(key, f):
            return [f(runs) for runs in res[key]]

        unpaced = lambda field: (lambda runs: runs[0][field])
        cost = {k: median(per_rep(k, unpaced("netrx_ns_per_packet"))) for k in res}
        sampled = {k: median(per_rep(k, unpaced("cpu_ns_per_packet"))) for k in res}
        exact = {k: median(per_rep(k, unpaced("sender_ns_per_packet"))) for k in res}
        offered = {k: median(per_rep(k, unpaced("offered_pps"))) for k in res}
        maxok = {k: median(per_rep(k, lambda runs: max([r["offered_pps"] for r in runs
                                                         if r["client_loss"] is not None and r["client_loss"] < 0.01],
                                                        default=0))) for k in res}
        through = {k: median(per_rep(k, unpaced("flood_through_pps"))) for k in res}
        loss = {k: median(per_rep(k, unpaced("client_loss"))) for k in res}
        linkdrop = {k: median(per_rep(k, lambda runs: max(r["link_tx_dropped"] for r in runs))) for k in res}
        ideal = median([(burst + rate * runs[0]["seconds"]) / runs[0]["seconds"] for runs in res["c_sluice"]])
        cut_keys = {c[0] for c in cuts}
        main_configs = [c for c in configs if c[0] not in cut_keys]
        for key, label, _ in main_configs:
            self.row(2, f"flood_cpu_per_packet_{key}", "ns/packet", cost[key], cost["b_xdp_drop"], "XDP_DROP only",
                     floor=("<=", 1.2) if key == "c_sluice" else None,
                     samples=per_rep(key, unpaced("netrx_ns_per_packet")),
                     note=f"{label}: receive-side CPU, NET_RX softirq time per frame received, unpaced "
                          f"({offered[key]:.0f} pps offered; /proc/stat's sampled softirq gives "
                          f"{sampled[key] or 0:.0f} ns)")
        for other in ("d_nft", "e_hashlimit"):
            self.row(2, f"flood_cpu_per_packet_sluice_vs_{other}", "ns/packet", cost["c_sluice"], cost[other],
                     labels[other], floor=("<", 1.0))
        # The breakdown on this path, as figure 1's: stage k = cut_k - cut_(k-1)
        # from XDP_DROP up; then the counters (the whole object less the last
        # cut) and what the daemon adds (sluiced's program less the same object
        # attached without it: the drop sampling, the daemon's own work).
        prev = cost["b_xdp_drop"]
        for st in stages:
            v = cost[f"s_cut_{st}"]
            self.row(2, f"flood_breakdown_{st}", "ns/packet", v - prev, cost["c_sluice"], "sluice total",
                     samples=per_rep(f"s_cut_{st}", unpaced("netrx_ns_per_packet")),
                     note=f"NET_RX time per frame of the build cut after {st}, less the one before it")
            prev = v
        self.row(2, "flood_breakdown_counters", "ns/packet", cost["s_full"] - prev, cost["c_sluice"], "sluice total",
                 samples=per_rep("s_full", unpaced("netrx_ns_per_packet")),
                 note="the whole object without the daemon, less the bucket cut")
        self.row(2, "flood_breakdown_daemon", "ns/packet", cost["c_sluice"] - cost["s_full"], cost["c_sluice"],
                 "sluice total", note="sluiced's program (drop sampling on) less the same object without the daemon")
        for key, label, _ in main_configs:
            self.row(2, f"flood_sender_cpu_per_packet_{key}", "ns/packet", exact[key], exact["b_xdp_drop"],
                     "XDP_DROP only", samples=per_rep(key, unpaced("sender_ns_per_packet")),
                     note=f"{label}: exact runtime of the generator (its sends and the receive work that ran in "
                          f"its softirq) + ksoftirqd on its CPU, per frame received")
        for key, label, _ in main_configs:
            if key in ("b_xdp_drop", "b2_xdp_filter"):
                continue  # they drop the client too
            self.row(2, f"flood_max_rate_client_ok_{key}", "pps", maxok[key], maxok["a_none"], "no filter",
                     note=f"{label}: highest offered flood rate with the client ({client_pps}/s) losing < 1%; "
                          f"client loss at the unpaced rate {100 * (loss[key] or 0):.2f}%; the router's veth "
                          f"dropped up to {linkdrop[key]:.0f} frames on transmit in a run")
        for key, label, _ in main_configs:
            if key == "b2_xdp_filter":
                continue
            self.row(2, f"flood_let_through_{key}", "pps", through[key], ideal,
                     "exact per-source limit, (burst + rate x t) / t",
                     note=f"{label}: flood frames that reached the host's UDP layer, unpaced run")

    # =============================================================== figure 3

    def fig3(self):
        log("figure 3: a full table (1,000,000 spoofed sources), then a new flooder, then a new client")
        repeats = 1 if self.quick else 2
        rate, burst = 1000, 1000
        size = 65536      # nftables' meter default (65535) and hashlimit's htable-max on this machine
        n_sources = 1000000
        flood_s = 1 if self.quick else 3
        legit_s = 1 if self.quick else 3
        # sluice twice: as shipped, where a spoofed flood whose admitted rate
        # stays over --trip-pps (1,000,000/s) trips the breaker, which then
        # sheds every source not allowlisted, the new client too; and with the
        # automatic breaker out of reach, for what the table alone does.
        configs = [
            ("c_sluice", "sluice", lambda: self.daemon("--rate", rate, "--burst", burst, "--ipv6-prefix", 128)),
            ("c2_sluice_no_breaker", "sluice, automatic breaker out of reach",
             lambda: self.daemon("--rate", rate, "--burst", burst, "--ipv6-prefix", 128,
                                 "--trip-pps", 1_000_000_000_000)),
            ("d_nft", "nftables dynamic set", lambda: self.nft(False, rate, burst, size)),
            ("e_hashlimit", "iptables hashlimit", lambda: self.hashlimit(128, rate, burst, size)),
        ]
        res = {c[0]: [] for c in configs}
        for rep in range(repeats):
            for key, label, ctx in configs:
                slab0 = self.meminfo("SUnreclaim")
                with ctx() as d:
                    time.sleep(0.3)
                    mem0 = self.maps_memlock(d["pins"]) if d else 0
                    rss0 = self.proc_rss(d["pid"]) if d else None
                    n0 = self.noports()
                    spoof = ["--dst", self.tb.host_ip6, "--sources", n_sources, "--src-base", "2001:2:0:ff::1",
                             "--v6-same64"]
                    # Phase 1: one frame from each of the 1,000,000 sources.
                    f1 = self.flood(*spoof, "--count", n_sources)
                    time.sleep(0.3)
                    n1 = self.noports()
                    entries = (self.nft_elements() if key == "d_nft" else
                               self.hashlimit_entries() if key == "e_hashlimit" else None)
                    # The spoofed flood goes on (from the same sources) while
                    # the new flooder and then the new client arrive: a table
                    # whose entries expire stays full only while it does.
                    sinks = {port: self.start_sink(port) for port in (FLOODER_PORT, LEGIT_PORT)}
                    bg = self.flood(*spoof, "--duration", flood_s + legit_s + 5, background=True)
                    try:
                        time.sleep(1.0)
                        f2 = self.flood("--dst", self.tb.host_ip6, "--src", f"2001:2:0:fe::{rep + 1:x}",
                                        "--pps", 100 * rate, "--duration", flood_s, "--port", FLOODER_PORT,
                                        cpus=OTHER_CPU)
                        cc0 = self.counters(d["pins"]) if d else None
                        tx0 = self.link_tx_dropped()
                        pr = self.probe(LEGIT_PORT, rate // 2, legit_s)
                        rc, pout, _ = finish(pr, legit_s + 30)
                        time.sleep(0.3)
                        cc1 = self.counters(d["pins"]) if d else None
                        breaker = (self.ctl_request(d["sock"], {"cmd": "status"})["interfaces"][0]["breaker"]["state"]
                                   if d else None)
                        tx1 = self.link_tx_dropped()
                        slab1 = self.meminfo("SUnreclaim")
                        mem1 = self.maps_memlock(d["pins"]) if d else 0
                        rss1 = self.proc_rss(d["pid"]) if d else None
                    finally:
                        stop(bg, signal.SIGINT, 30)
                        sj = {port: self.end_sink(p) for port, p in sinks.items()}
                    pj = last_json(pout)
                    delivered = sj[LEGIT_PORT]["by_source"].get(self.tb.client_ip6, 0)
                    # What reached the host: counted, or dropped by a full socket buffer.
                    flooder_through = (sum(v for k, v in sj[FLOODER_PORT]["by_source"].items() if k != "other")
                                       + sj[FLOODER_PORT].get("socket_drops", 0))
                ideal2 = burst + rate * f2["seconds"]
                r = {"phase1_sent": f1["sent"], "phase1_through": n1 - n0, "entries_after_phase1": entries,
                     "flooder_sent": f2["sent"], "flooder_through": flooder_through, "flooder_ideal": ideal2,
                     "legit_sent": pj["sent"], "legit_delivered": delivered,
                     # While the client sent: frames sluice dropped by rate (the
                     # spoofed sources are under their limit, the flooder had
                     # stopped) and frames the router's veth dropped on transmit.
                     "client_phase_rate_drops": sum(cc1[1]) - sum(cc0[1]) if cc0 else None,
                     # ... and frames it shed, had the breaker tripped (its
                     # state as the client finished)
                     "client_phase_shed_drops": sum(cc1[2]) - sum(cc0[2]) if cc0 else None,
                     "breaker_after": breaker,
                     "client_phase_link_drops": tx1 - tx0,
                     "kernel_slab_delta": slab1 - slab0, "maps_memlock_before": mem0, "maps_memlock_after": mem1,
                     "daemon_rss_before": rss0, "daemon_rss_after": rss1}
                res[key].append(r)
                log(f"  {key} rep {rep}: {r}")
        self.detail["fig3"] = {"limit": [rate, burst], "table": size, "sources": n_sources, "runs": res}
        sl = res["c_sluice"]
        sluice_mem = median([r["maps_memlock_after"] for r in sl])
        for key, label, _ in configs:
            rs = res[key]
            fl = median([100.0 * r["flooder_through"] / r["flooder_sent"] for r in rs if r["flooder_sent"]])
            ideal = median([100.0 * r["flooder_ideal"] / r["flooder_sent"] for r in rs if r["flooder_sent"]])
            lg = median([100.0 * r["legit_delivered"] / r["legit_sent"] for r in rs if r["legit_sent"]])
            ent = median([r["entries_after_phase1"] for r in rs])
            p1 = median([100.0 * r["phase1_through"] / r["phase1_sent"] for r in rs if r["phase1_sent"]])
            self.row(3, f"full_table_new_flooder_let_through_{key}", "% of its frames", fl, ideal,
                     "ideal: burst + rate x t",
                     note=f"{label}: new source at 100x its limit, the spoofed flood going on")
            self.row(3, f"full_table_spoofed_let_through_{key}", "% of their frames", p1, 100.0,
                     "everything (each source is under its limit)",
                     note=f"{label}: the {n_sources:,} spoofed sources, one frame each, while the table filled"
                          + (f"; {ent} entries held after" if ent is not None else ""))
            rd = median([r["client_phase_rate_drops"] for r in rs])
            sd = median([r["client_phase_shed_drops"] for r in rs])
            ld = median([r["client_phase_link_drops"] for r in rs])
            states = sorted({r["breaker_after"] for r in rs if r["breaker_after"]})
            self.row(3, f"full_table_new_client_delivered_{key}", "% of its frames", lg, 100.0,
                     "everything (it is under its limit)",
                     note=f"{label}: new legitimate source at half its limit; while it sent, "
                          + (f"sluice dropped {rd:.0f} frames by rate and shed {sd:.0f} (breaker "
                             f"{' / '.join(states)} at the end), and " if rd is not None else "")
                          + f"the router's veth dropped {ld:.0f} frames on transmit")
            if key.startswith("c"):
                grow = median([r["maps_memlock_after"] - r["maps_memlock_before"] for r in rs])
                self.row(3, f"full_table_memory_growth_{key}", "bytes", grow, sluice_mem,
                         "sluice's maps (bytes_memlock)",
                         note="change in bytes_memlock of every sluice map during the three phases")
            else:
                grow = median([r["kernel_slab_delta"] for r in rs])
                self.row(3, f"full_table_memory_growth_{key}", "bytes", grow, sluice_mem,
                         "sluice's maps (bytes_memlock)",
                         note=f"{label}: growth of the kernel's unreclaimable slab (SUnreclaim) over the three"
                              f" phases, whole machine")

    # =============================================================== figure 4

    def fig4(self):
        log("figure 4: accuracy, one source at 10x its limit")
        seconds = 3 if self.quick else 10
        repeats = 1 if self.quick else 3
        rate, burst = 10000, 20000
        res = {"one_cpu": [], "two_cpus": []}
        with self.daemon(iface=self.tb.acc_if, sock_name="acc.sock") as d:
            n = 0
            for rep in range(repeats):
                for mode, cpus, threads in (("one_cpu", FLOOD_CPU, 1), ("two_cpus", f"0-{NCPU - 1}", 2)):
                    n += 1
                    src = f"198.18.250.{n}"
                    c0 = self.counters(d["pins"])
                    f = self.flood("--dst", self.tb.acc_ip4, "--src", src, "--pps", 10 * rate, "--duration", seconds,
                                   "--threads", threads, iface=self.tb.acc_peer, mac=self.tb.acc_mac, cpus=cpus)
                    time.sleep(0.3)
                    c1 = self.counters(d["pins"])
                    passed_cpu = [b - a for a, b in zip(c0[0], c1[0])]
                    seen_cpu = [sum(c1[k][i] - c0[k][i] for k in (0, 1)) for i in range(len(c1[0]))]
                    passed = sum(passed_cpu)
                    # The paced schedule: frame i leaves at t0 + i / R (each
                    # thread at R / threads), so the frames span sent / R.
                    span = f["sent"] / (10 * rate)
                    ideal = burst + rate * span
                    share = min(seen_cpu) / max(1, sum(seen_cpu)) if len(seen_cpu) > 1 else 0
                    r = {"sent": f["sent"], "seconds": f["seconds"], "span": span, "passed": passed, "ideal": ideal,
                         "error_pct": 100.0 * (passed - ideal) / ideal, "frames_per_cpu": seen_cpu,
                         "smaller_cpu_share": share}
                    res[mode].append(r)
                    log(f"  {mode} rep {rep}: {r}")
        self.detail["fig4"] = {"seconds": seconds, "limit": [rate, burst], "runs": res}
        for mode, label in (("one_cpu", "flood on one CPU"), ("two_cpus", "flood spread over both CPUs")):
            rs = res[mode]
            err = median([r["error_pct"] for r in rs])
            share = median([r["smaller_cpu_share"] for r in rs])
            self.row(4, f"accuracy_{mode}", "frames admitted", median([r["passed"] for r in rs]),
                     median([r["ideal"] for r in rs]), "ideal burst + rate x t",
                     samples=[r["passed"] for r in rs],
                     note=f"{label}, {seconds} s at 10x: error {err:+.3f}%"
                          + (f"; the less busy CPU ran {100 * share:.0f}% of the frames" if mode == "two_cpus" else ""))

    # =============================================================== figure 5

    def fig5(self):
        log("figure 5: memory at 1, 10^3, 10^6 distinct sources")
        res = {}
        with self.daemon("--ipv6-prefix", 128) as d:
            for n, count in ((1, 1000), (1000, 3000), (1000000, 1000000)):
                if n == 1:
                    self.flood("--dst", self.tb.host_ip6, "--src", "2001:2:0:fd::1", "--count", count)
                else:
                    self.flood("--dst", self.tb.host_ip6, "--sources", n, "--src-base", "2001:2:0:fd::1",
                               "--v6-same64", "--count", count)
                time.sleep(1.2)  # a control period: the daemon has seen the traffic
                res[n] = {"maps_memlock": self.maps_memlock(d["pins"]), "daemon_rss": self.proc_rss(d["pid"])}
                log(f"  {n} sources: {res[n]}")
        self.detail["fig5"] = res
        for n in (1000, 1000000):
            self.row(5, f"memory_maps_{n}_sources", "bytes", res[n]["maps_memlock"], res[1]["maps_memlock"],
                     "at 1 source", note="bytes_memlock of every sluice map (bpftool map show)")
            self.row(5, f"memory_daemon_rss_{n}_sources", "bytes", res[n]["daemon_rss"], res[1]["daemon_rss"],
                     "at 1 source", note="sluiced VmRSS")

    # =============================================================== figure 6

    def fig6(self):
        log("figure 6: collateral damage, two choices vs one (BPF_PROG_TEST_RUN, clock taken out)")
        repeats = 1 if self.quick else 3
        slots, legit = 262144, 10000
        fracs = [0.01, 0.1, 0.5]
        outs = []
        for rep in range(repeats):
            outs.append(last_json(run([self.bench_tool, "collateral", "--obj", self.obj("sluice_bpf"), "--slots",
                                       slots, "--legit", legit, "--heavy-frac", ",".join(map(str, fracs)),
                                       "--seed", 1000 + rep], timeout=900).stdout))
        self.detail["fig6"] = outs
        import math
        for f in fracs:
            one = median([r["share"] for o in outs for r in o["runs"] if r["heavy_frac"] == f and r["one_choice"]])
            two = median([r["share"] for o in outs for r in o["runs"] if r["heavy_frac"] == f and not r["one_choice"]])
            pct = f"{f * 100:g}"
            exact1 = 1 - math.exp(-f)
            exact2 = (1 - math.exp(-2 * f)) ** 2
            self.row(6, f"collateral_h{pct}pct_one_choice", "% of legit sources", 100 * one, 100 * f, "h/N",
                     note=f"h = {f * slots:.0f} heavy in N = {slots} slots, {legit} legitimate at half their limit;"
                          f" occupancy prediction 1-e^(-h/N) = {100 * exact1:.3g}%")
            self.row(6, f"collateral_h{pct}pct_two_choices", "% of legit sources", 100 * two, 100 * (2 * f) ** 2,
                     "(2h/N)^2", note=f"occupancy prediction (1-e^(-2h/N))^2 = {100 * exact2:.3g}%; h/N = {pct}%")
            self.row(6, f"collateral_h{pct}pct_two_vs_one", "% of legit sources", 100 * two, 100 * one,
                     "one choice, measured")

    # =============================================================== figure 7

    def time_cmd(self, cmd, n):
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            run(cmd, check=False)
            ts.append(time.perf_counter() - t0)
        return ts

    def time_req(self, sock, req, n):
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.ctl_request(sock, req)
            ts.append(time.perf_counter() - t0)
        return ts

    def fig7(self):
        log("figure 7: control plane")
        n = 10 if self.quick else 30
        window = 5 if self.quick else 60
        repeats = 1 if self.quick else 3
        # From this namespace: the control socket is a path, and `ip netns
        # exec` would add its own setup to every run.
        ctl = lambda sock, *a: [self.sluicectl, "--socket", sock, "--pin-dir", self.tb.pin_dir, *a]
        with self.daemon() as d:
            st = self.time_cmd(ctl(d["sock"], "-j", "status"), n)
            hp = self.time_cmd(ctl(d["sock"], "--help"), n)
            rq = self.time_req(d["sock"], {"cmd": "status"}, n)
            bad = self.time_req(d["sock"], {"cmd": "no-such-command"}, n)
        self.row(7, "status_round_trip_sluicectl", "ms", 1000 * median(st), 1000 * median(hp),
                 "sluicectl --help (process start)", samples=[round(1000 * x, 3) for x in st],
                 note="`sluicectl -j status`, the whole command (process start, connect, request, reply, print)")
        self.row(7, "status_round_trip_socket", "ms", 1000 * median(rq), 1000 * median(bad),
                 "an unknown command's round trip", samples=[round(1000 * x, 3) for x in rq],
                 note="connect, status request, reply, from this process")

        trip = 50000
        shed = []
        for rep in range(repeats):
            with self.daemon("--trip-pps", trip) as d:
                time.sleep(1.1)
                t0 = time.monotonic()
                fl = self.flood("--dst", self.tb.host_ip4, "--random-src", "--pps", 200000, "--duration", 15,
                                background=True)
                t_shed = None
                while time.monotonic() - t0 < 15:
                    s = self.ctl_request(d["sock"], {"cmd": "status"})
                    state = s["interfaces"][0].get("breaker", {}).get("state")
                    if state == "shedding":
                        t_shed = time.monotonic() - t0
                        break
                    time.sleep(0.02)
                stop(fl, signal.SIGINT, 20)
                shed.append(t_shed)
                log(f"  onset to shedding rep {rep}: {t_shed}")
        self.row(7, "flood_onset_to_shedding", "s", median(shed), 3.0,
                 "--trip-periods x --period (3 x 1 s)", samples=shed,
                 note=f"random IPv4 sources at 200,000 pps, each under its limit; --trip-pps {trip}")

        with self.daemon() as a, self.daemon("--table-size", 1 << 20, iface=self.tb.acc_if, sock_name="acc.sock") as b:
            time.sleep(1)
            c0 = (self.proc_cpu_s(a["pid"]), self.proc_cpu_s(b["pid"]))
            t0 = time.monotonic()
            time.sleep(window)
            c1 = (self.proc_cpu_s(a["pid"]), self.proc_cpu_s(b["pid"]))
            t1 = time.monotonic()
            ra, rb = self.proc_rss(a["pid"]), self.proc_rss(b["pid"])
        share_a = 100 * (c1[0] - c0[0]) / (t1 - t0)
        share_b = 100 * (c1[1] - c0[1]) / (t1 - t0)
        self.detail["fig7"] = {"status_s": st, "help_s": hp, "socket_status_s": rq, "socket_unknown_s": bad,
                               "shed_s": shed, "cpu_window_s": t1 - t0, "cpu_share_default_pct": share_a,
                               "cpu_share_2e20_pct": share_b, "rss_default": ra, "rss_2e20": rb}
        self.row(7, "daemon_cpu_share_2e20_slots", "% of one CPU", share_b, share_a, "at the default 2^18 slots",
                 note=f"user + system runtime (schedstat) over {window} s, idle network: {share_a:.3f}% at 2^18, "
                      f"{share_b:.3f}% at 2^20")

    # =============================================================== output

    def machine(self):
        cpu = ""
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        ver = lambda *c: (run(list(c), check=False).stdout.strip().splitlines() or [""])[0]
        debian = ""
        with contextlib.suppress(OSError):
            debian = open("/etc/debian_version").read().strip()
        return {
            "kernel": platform.release(), "cpu": cpu, "cpus": NCPU,
            "memory_gib": round(self.meminfo("MemTotal") / 2**30, 1), "debian": debian,
            "loadavg": open("/proc/loadavg").read().split()[:3],
            "nft": ver("nft", "--version"), "iptables": ver("iptables", "--version"),
            "xdp_tools": ver("dpkg-query", "-W", "-f=${Version}", "xdp-tools"),
            "xdp_filter_object": self.xdpfilt,
        }

    def table(self):
        lines = [f"{'fig':>3}  {'name':<52} {'value':>14} {'baseline':>14} {'ratio':>8}  floor"]
        fmt = lambda v: "-" if v is None else (f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}")
        for r in self.rows:
            fl = "" if "floor" not in r else (r["floor"] + (" ok" if r["floor_met"] else " MISSED"))
            lines.append(f"{r['figure']:>3}  {r['name']:<52} {fmt(r['value']):>14} {fmt(r['baseline']):>14} "
                         f"{fmt(r['ratio']):>8}  {fl}")
        return "\n".join(lines)

    def chart(self, outdir):
        gp = shutil.which("gnuplot")
        if not gp:
            log("gnuplot missing: no chart")
            return None
        get = {r["name"]: r for r in self.rows}
        dat = os.path.join(outdir, "chart")
        os.makedirs(dat, exist_ok=True)
        v = lambda n: (get.get(n) or {}).get("value") or 0
        with open(os.path.join(dat, "cost.dat"), "w") as f:
            f.write(f'"XDP_DROP" {v("breakdown_v4_test_run_floor")} {v("breakdown_v6_test_run_floor")}\n')
            f.write(f'"xdp-filter" {get["cost_v4_sluice_vs_xdp_filter"]["baseline"] if "cost_v4_sluice_vs_xdp_filter" in get else 0} '
                    f'{get["cost_v6_sluice_vs_xdp_filter"]["baseline"] if "cost_v6_sluice_vs_xdp_filter" in get else 0}\n')
            f.write(f'"sluice" {v("cost_v4_sluice_vs_xdp_filter")} {v("cost_v6_sluice_vs_xdp_filter")}\n')
        with open(os.path.join(dat, "flood.dat"), "w") as f:
            for k, lab in (("a_none", "none"), ("b_xdp_drop", "XDP_DROP"), ("b2_xdp_filter", "xdp-filter"),
                           ("c_sluice", "sluice"), ("d_nft", "nftables"), ("e_hashlimit", "hashlimit")):
                f.write(f'"{lab}" {v("flood_cpu_per_packet_" + k)}\n')
        with open(os.path.join(dat, "collateral.dat"), "w") as f:
            for pct in ("1", "10", "50"):
                f.write(f"{pct} {v(f'collateral_h{pct}pct_one_choice')} {v(f'collateral_h{pct}pct_two_choices')} "
                        f"{get.get(f'collateral_h{pct}pct_one_choice', {}).get('baseline') or 0} "
                        f"{get.get(f'collateral_h{pct}pct_two_choices', {}).get('baseline') or 0}\n")
        with open(os.path.join(dat, "full.dat"), "w") as f:
            for k, lab in (("c_sluice", "sluice"), ("c2_sluice_no_breaker", "sluice, no breaker"),
                           ("d_nft", "nftables"), ("e_hashlimit", "hashlimit")):
                f.write(f'"{lab}" {v("full_table_spoofed_let_through_" + k)} '
                        f'{v("full_table_new_flooder_let_through_" + k)} '
                        f'{v("full_table_new_client_delivered_" + k)}\n')
        png = os.path.join(outdir, "benchmarks.png")
        script = f"""
set terminal pngcairo size 1400,1000 font "DejaVu Sans,11" noenhanced
set output "{png}"
set multiplot layout 2,2 title "sluice benchmarks ({'quick' if self.quick else 'full'} run, {datetime.date.today()})"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
set title "1. Per-packet program cost, 64-byte UDP (BPF_PROG_TEST_RUN)"
set ylabel "ns per packet"
plot "{dat}/cost.dat" using 2:xtic(1) title "IPv4", "" using 3 title "IPv6"
set title "2. Receive-side CPU per flood frame received (veth, NET_RX softirq)"
set ylabel "ns per packet"
plot "{dat}/flood.dat" using 2:xtic(1) notitle lc rgb "#4477aa"
set title "3. After 1,000,000 spoofed sources: a new flooder and a new client"
set ylabel "% of its frames let through"
set yrange [0:135]
set offsets 0, 0, 0, 0
set key top right
plot "{dat}/full.dat" using 2:xtic(1) title "1M spoofed sources (each under its limit)", \
     "" using 3 title "new flooder (100x its limit)", "" using 4 title "new client (under its limit)"
set title "6. Legitimate sources blocked by h heavy sources (N = 2^18 slots)"
set style data linespoints
set logscale xy
set xrange [0.8:70]
set yrange [0.01:150]
set xlabel "heavy sources h, % of N"
set ylabel "% of legitimate sources losing frames"
set key top left
plot "{dat}/collateral.dat" using 1:2 title "one choice, measured" pt 7 ps 1.5, \\
     "" using 1:3 title "two choices, measured" pt 5 ps 1.5, \\
     "" using 1:4 title "h/N" dt 2 lw 2, \\
     "" using 1:5 title "(2h/N)^2" dt 3 lw 2
unset multiplot
"""
        with open(os.path.join(dat, "chart.gp"), "w") as f:
            f.write(script)
        p = run([gp, os.path.join(dat, "chart.gp")], check=False)
        if p.returncode != 0:
            log(f"gnuplot failed: {p.stderr.strip()}")
            return None
        return png

    def markdown(self, meta):
        m = meta["machine"]
        out = []
        out.append(f"Measured {meta['finished']} by `{meta['command']}` ({meta['mode']} run, "
                   f"{meta['wall_seconds']:.0f} s wall).\n")
        out.append(f"Machine: {m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, Linux {m['kernel']}, "
                   f"Debian {m['debian']}; {m['nft']}; {m['iptables']}; xdp-tools {m['xdp_tools']}. "
                   f"Load average at the start {' '.join(meta['loadavg_start'])}, at the end "
                   f"{' '.join(m['loadavg'])} (other work shared the machine: absolute numbers are noisy, the "
                   f"ratios are side by side).\n")
        floors = [r for r in self.rows if "floor" in r]
        out.append("### Floors\n")
        out.append("| figure | measured | ratio | floor | met |")
        out.append("|---|---|---|---|---|")
        for r in floors:
            out.append(f"| {r['figure']} | `{r['name']}` | {r['ratio']:.3g} | {r['floor']} | "
                       f"{'yes' if r['floor_met'] else '**no**'} |")
        out.append("")
        out.append("### Results\n")
        out.append("| fig | name | value | unit | baseline | ratio | what |")
        out.append("|---|---|---|---|---|---|---|")

        def fmt(v):
            if v is None:
                return "-"
            if isinstance(v, float):
                if v != 0 and abs(v) < 0.01:
                    return f"{v:.2g}"
                return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
            return f"{v:,}"
        for r in self.rows:
            what = r.get("note", "")
            out.append(f"| {r['figure']} | `{r['name']}` | {fmt(r['value'])} | {r['unit']} | "
                       f"{fmt(r['baseline'])} ({r['baseline_name']}) | {fmt(r['ratio'])} | {what} |")
        out.append("")
        out.append("![benchmarks](benchmarks.png)\n")
        return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--from-json", help="measure nothing: render the table, chart and docs from a results.json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--out", required=True, help="results directory (bench/results/<stamp>)")
    ap.add_argument("--update-docs", action="store_true")
    ap.add_argument("--command", default="scripts/bench.sh")
    ap.add_argument("--only", default="1,2,3,4,5,6,7", help="figures to run (debugging)")
    a = ap.parse_args()

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    os.makedirs(a.out, exist_ok=True)
    if a.from_json:
        return render_only(a)
    b = Bench(a)
    t0 = time.monotonic()
    load0 = open("/proc/loadavg").read().split()[:3]
    only = {int(x) for x in a.only.split(",") if x}
    rc = 0
    try:
        b.setup_acc()
        for n in range(1, 8):
            if n in only:
                tf = time.monotonic()
                getattr(b, f"fig{n}")()
                b.timing[f"fig{n}"] = round(time.monotonic() - tf, 1)
                log(f"figure {n} took {b.timing[f'fig{n}']:.0f} s")
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Exception as e:  # report what was measured so far, then fail
        import traceback
        traceback.print_exc()
        log(f"failed: {e}")
        rc = 1
    finally:
        kill_all()
        b.netrx = None
        b.teardown_acc()
    wall = time.monotonic() - t0
    meta = {"mode": "quick" if a.quick else "full", "command": a.command, "wall_seconds": wall,
            "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "loadavg_start": load0, "machine": b.machine(), "complete": rc == 0, "seconds_per_figure": b.timing}
    doc = {"meta": meta, "results": b.rows, "detail": b.detail}
    path = os.path.join(a.out, "results.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    publish(a, b, meta, rc)
    return rc


def publish(a, b, meta, rc):
    """Table on stdout; results.md and the chart in the results directory;
    with --update-docs, the generated section of docs/benchmarks.md and
    docs/benchmarks.png (only from a complete run)."""
    print(b.table())
    png = b.chart(a.out) if b.rows else None
    md = b.markdown(meta)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    log(f"results in {a.out}" + (f", chart {png}" if png else ""))
    if a.update_docs:
        if rc != 0 or not meta.get("complete", False):
            log("not updating docs/benchmarks.md: the run did not complete")
        else:
            docp = os.path.join(ROOT, "docs", "benchmarks.md")
            text = open(docp).read()
            begin, end = "<!-- bench.sh results: begin -->", "<!-- bench.sh results: end -->"
            i, j = text.index(begin), text.index(end)
            text = text[:i + len(begin)] + "\n" + md + "\n" + text[j:]
            with open(docp, "w") as f:
                f.write(text)
            if png:
                shutil.copyfile(png, os.path.join(ROOT, "docs", "benchmarks.png"))
            log("updated docs/benchmarks.md and docs/benchmarks.png")
    failed = [r["name"] for r in b.rows if r.get("floor_met") is False]
    if failed:
        log("floors missed: " + ", ".join(failed))


def render_only(a):
    with open(a.from_json) as f:
        doc = json.load(f)
    a.quick = doc["meta"]["mode"] == "quick"
    b = Bench(a)
    b.rows = doc["results"]
    publish(a, b, doc["meta"], 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
