"""Harness for sluice's netns tests: a testbed of namespaces (scripts/testbed.sh),
sluiced started and stopped by pid, sluicectl, frames from sluice-traffic, and
the pinned maps read with bpftool.

Every test runs inside namespaces it creates (unique names) and removes them on
every exit path. Outside CI a test that cannot run (not root) skips with one
line; in CI (CI=true) it fails instead.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import unittest

SOURCE_DIR = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SLUICED = os.environ.get("SLUICED", "sluiced")
SLUICECTL = os.environ.get("SLUICECTL", "sluicectl")
TRAFFIC = os.environ.get("SLUICE_TRAFFIC", "sluice-traffic")
# sluiced built with AddressSanitizer (scripts/test.sh's build-fuzz)
SANITIZED = os.environ.get("SLUICE_SANITIZED") == "1"
TESTBED = os.path.join(SOURCE_DIR, "scripts", "testbed.sh")

sys.path.insert(0, os.path.join(SOURCE_DIR, "bpf"))
import sluice_abi  # noqa: E402 (bpf/sluice_abi.h's outcome table and struct layouts)
from sluice_abi import outcome_names  # noqa: E402


def use_tools(sluiced=None, sluicectl=None, traffic=None):
    """Run these binaries instead of the ones the environment names (CTest
    passes them as SLUICED, SLUICECTL and SLUICE_TRAFFIC; scripts/bench finds
    them in the build directory it is given)."""
    global SLUICED, SLUICECTL, TRAFFIC
    SLUICED = sluiced or SLUICED
    SLUICECTL = sluicectl or SLUICECTL
    TRAFFIC = traffic or TRAFFIC


def in_ci():
    return os.environ.get("CI", "") in ("true", "1")


def require_root(test):
    if os.geteuid() != 0:
        if in_ci():
            test.fail("cannot run in CI: needs root (network namespaces, BPF)")
        raise unittest.SkipTest("needs root (network namespaces, BPF)")


def run(cmd, check=True, timeout=60, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


class Testbed:
    """scripts/testbed.sh up/down around a test. Attributes: the TB_* values,
    lower-cased without the prefix (tb.host_if, tb.bpffs, ...)."""

    def __init__(self, purpose):
        self.purpose = purpose
        self.name = None

    def __enter__(self):
        self.name = f"sluice-{self.purpose}-{os.getpid()}-{os.urandom(3).hex()}"
        p = run(["bash", TESTBED, "up", self.name], check=False, timeout=120)
        if p.returncode != 0:
            run(["bash", TESTBED, "down", self.name], check=False)
            raise AssertionError(f"testbed up failed: {p.stderr}")
        pairs = []
        for line in p.stdout.splitlines():
            if "=" in line and line.startswith("TB_"):
                k, v = line.split("=", 1)
                pairs.append((k, v.strip("'\"")))
        self._adopt(pairs)
        return self

    @classmethod
    def from_env(cls, environ=None):
        """The testbed a caller brought up and exported (scripts/testbed.sh's
        tb_up sets TB_*), as a Testbed; whoever brought it up takes it down,
        so this one is not used with `with`."""
        tb = cls("adopted")
        environ = os.environ if environ is None else environ
        tb._adopt((k, v) for k, v in environ.items() if k.startswith("TB_"))
        return tb

    def _adopt(self, pairs):
        for k, v in pairs:
            setattr(self, k[3:].lower(), v)
        self.pin_dir = os.path.join(self.bpffs, "sluice")
        self.socket = os.path.join(self.rundir, "sluiced.sock")

    def __exit__(self, *exc):
        run(["bash", TESTBED, "down", self.name], check=False, timeout=120)
        return False

    def ns(self, role):
        return getattr(self, "ns_" + role)

    def xdp_tx_peer(self, obj=None):
        """XDP_PASS on the router's veth to the host, so that frames the
        host's program sends back with XDP_TX (SYN cookies' SYN-ACKs) reach
        the router (scripts/testbed.sh, tb_xdp_tx_peer)."""
        obj = obj or os.environ.get("SLUICE_XDP_PASS_OBJ", "")
        if not os.path.exists(obj):
            raise AssertionError(f"no XDP_PASS object for the router's veth: SLUICE_XDP_PASS_OBJ={obj!r}")
        run(["bash", TESTBED, "xdp-tx-peer", self.name, obj], timeout=30)

    def exec(self, role, cmd, **kw):
        return run(["ip", "netns", "exec", self.ns(role)] + cmd, **kw)


class Daemon:
    """sluiced in the host namespace, stopped by pid on exit."""

    def __init__(self, tb, *extra, iface=None, socket=None, pin_dir=None):
        self.tb = tb
        self.iface = iface or tb.host_if
        self.socket = socket or tb.socket
        self.pin_dir = pin_dir or tb.pin_dir
        self.args = ["ip", "netns", "exec", tb.ns_host, SLUICED, "-i", self.iface,
                     "--pin-dir", self.pin_dir, "--socket", self.socket] + list(extra)
        self.proc = None
        self.log_path = os.path.join(tb.rundir, f"sluiced-{os.urandom(3).hex()}.log")

    @property
    def pins(self):
        """The directory of the interface's pinned maps and link."""
        return os.path.join(self.pin_dir, self.iface)

    def start(self, wait=True, timeout=20):
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        if wait:
            deadline = time.time() + timeout
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise AssertionError(f"sluiced exited {self.proc.returncode}: {self.output()}")
                if os.path.exists(self.socket):
                    p = ctl(self.tb, "-j", "status", socket=self.socket, check=False)
                    if p.returncode == 0 and '"running":true' in p.stdout.replace(" ", ""):
                        return self
                time.sleep(0.05)
            raise AssertionError(f"sluiced did not answer in {timeout} s: {self.output()}")
        return self

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=20)
        return self.proc.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill(signal.SIGTERM)
        return False


def ctl(tb, *args, socket=None, check=False, role="host"):
    """sluicectl in the host namespace (ifindexes are per namespace)."""
    cmd = ["ip", "netns", "exec", tb.ns(role), SLUICECTL, "--socket", socket or tb.socket,
           "--pin-dir", tb.pin_dir] + list(args)
    return run(cmd, check=check)


def ctl_json(tb, *args, **kw):
    p = ctl(tb, "-j", *args, **kw)
    if p.returncode != 0:
        raise AssertionError(f"sluicectl -j {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def send(tb, count, src, dst=None, pps=0, size=64, extra=()):
    """`count` UDP frames from `src`, injected on the router's host-facing veth
    (straight into the host interface's XDP program)."""
    dst = dst or (tb.host_ip6 if ":" in src else tb.host_ip4)
    cmd = [TRAFFIC, "flood", "--iface", tb.inject_if, "--dst-mac", tb.inject_dst_mac, "--dst", dst,
           "--count", str(count), "--size", str(max(size, 62 if ":" in dst else 42))]
    if src == "random":
        cmd += ["--random-src"] + (["--v6"] if ":" in dst else [])
    else:
        cmd += ["--src", src]
    if pps:
        cmd += ["--pps", str(pps)]
    cmd += list(extra)
    p = run(["ip", "netns", "exec", tb.inject_ns] + cmd, timeout=300)
    return json.loads(p.stdout.strip().splitlines()[-1])


def bpftool_json(*args):
    return json.loads(run(["bpftool", "-j"] + list(args)).stdout)


def pinned_config(tb, iface=None):
    """The config map's value as the kernel holds it: {field: value} by the
    declaration of struct sluice_config in sluice_abi.h (bpf/sluice_abi.py)."""
    return sluice_abi.unpack("sluice_config", pinned_value(tb, "config", iface))


def pinned_settings(tb, iface=None):
    """The settings map's value, raw (tests compare the hash key's bytes)."""
    return pinned_value(tb, "settings", iface)


def pinned_settings_fields(tb, iface=None):
    """The settings, {field: value} by struct sluice_settings."""
    return sluice_abi.unpack("sluice_settings", pinned_settings(tb, iface))


def dataplane_now_ns(tb, iface=None, tick_ns=None):
    """The data plane's clock now, bias included (bpf/jiffies_clock.h:
    jiffies x settings.clock_tick_ns + 2^62), read on the harness's own: the
    kernel's jiffies from /proc/timer_list (root only), the tick from the
    pinned settings the program was loaded with (tick_ns: a caller that
    read them already)."""
    if tick_ns is None:
        tick_ns = pinned_settings_fields(tb, iface)["clock_tick_ns"]
    with open("/proc/timer_list") as f:
        jiffies = next(int(line.split()[1]) for line in f if line.startswith("jiffies:"))
    return jiffies * tick_ns + (1 << 62)


def pinned_value(tb, pin, iface=None, key=0):
    """The bytes of one element of a pinned array map (key: its index)."""
    path = os.path.join(tb.pin_dir, iface or tb.host_if, pin)
    v = bpftool_json("map", "lookup", "pinned", path, "key", *[str(b) for b in int(key).to_bytes(4, "little")])
    return bytes(int(b, 16) for b in v["value"])


# The outcomes, in the order of the counters map's keys: sluice_abi.h's table.
OUTCOMES = outcome_names()


def counters(tb, iface=None):
    """Outcome counters summed over CPUs, from the pinned map."""
    return {name: sum(per_cpu) for name, per_cpu in counters_per_cpu(tb, iface).items()}


def counters_per_cpu(tb, iface=None):
    """{outcome: [packets on each CPU]}, from the pinned per-CPU map."""
    path = os.path.join(tb.pin_dir, iface or tb.host_if, "counters")
    out = {}
    for entry in bpftool_json("map", "dump", "pinned", path):
        key = entry["key"]
        k = int(key[0], 16) if isinstance(key, list) else int(key)
        per_cpu = []
        for v in entry["values"]:
            raw = bytes(int(b, 16) for b in v["value"]) if isinstance(v["value"], list) else None
            per_cpu.append(sluice_abi.unpack("sluice_counter", raw)["packets"] if raw else v["value"]["packets"])
        out[OUTCOMES[k]] = per_cpu
    return out


def pinned_maps_memlock(tb, iface=None):
    """{map name: bytes_memlock} of every map pinned for an interface (its
    pin directory less the link), as `bpftool -j map show` reports them."""
    pins = os.path.join(tb.pin_dir, iface or tb.host_if)
    out = {}
    for name in sorted(os.listdir(pins)):
        if name == "link":
            continue
        p = run(["bpftool", "-j", "map", "show", "pinned", os.path.join(pins, name)], check=False)
        if p.returncode == 0:
            out[name] = int(json.loads(p.stdout).get("bytes_memlock", 0))
    return out


def settle(tb, age=2.0):
    """Wait until the testbed's links are `age` seconds old: a veth that just
    came up sends MLDv2 reports for about a second (4 frames of 150 bytes from
    r-host, seen here), and they would count in veth-host's outcomes. Tests
    that count frames exactly start after that; a loaded machine runs
    the report timers late, hence the margin. (testbed.env is the last thing
    scripts/testbed.sh writes.)"""
    made = os.path.getmtime(os.path.join(tb.rundir, "testbed.env"))
    rest = age - (time.time() - made)
    if rest > 0:
        time.sleep(rest)


def assert_rss_flat(test, before_kib, after_kib, limit_kib, what):
    """The daemon's resident memory grew by at most `limit_kib`. Not under
    AddressSanitizer: its allocator holds freed memory in quarantine and maps
    shadow and metadata as it goes, so RSS grows by design there (measured:
    +1.3 to +2.9 MiB over a million-source flood, with quarantine off too).
    The same test in the g++ build asserts the bound."""
    if SANITIZED:
        print(f"{what}: {before_kib} -> {after_kib} KiB; not asserted under AddressSanitizer", flush=True)
        return
    test.assertLessEqual(after_kib - before_kib, limit_kib,
                         f"{what}: daemon VmRSS {before_kib} -> {after_kib} KiB: within +{limit_kib} KiB")


def counters_after(tb, before, frames, iface=None, timeout=10):
    """The counters once `frames` more frames than in `before` have been
    counted. A frame injected into a veth is processed in the receiver's
    NAPI poll, which a loaded machine defers to ksoftirqd: the sender can
    return before the XDP program has seen its frame, so reading the
    counters right after sending races with the data plane."""
    def settled():
        now = counters(tb, iface)
        return now if sum(now.values()) - sum(before.values()) >= frames else None
    return wait_until(settled, timeout, interval=0.01, what=f"{frames} frames to be counted")


def slot_values(tb, indices, iface=None):
    """The raw empty_at of slots, from the pinned table."""
    path = os.path.join(tb.pin_dir, iface or tb.host_if, "slots")
    out = []
    for i in indices:
        key = [str(b) for b in int(i).to_bytes(4, "little")]
        v = bpftool_json("map", "lookup", "pinned", path, "key", *key)
        raw = bytes(int(b, 16) for b in v["value"])
        out.append(int.from_bytes(raw, "little"))
    return out


def xdp_prog_id(tb, role="host", iface=None):
    """The id of the XDP program on an interface, or None."""
    p = tb.exec(role, ["ip", "-j", "link", "show", "dev", iface or tb.host_if])
    link = json.loads(p.stdout)[0]
    xdp = link.get("xdp")
    if not xdp:
        return None
    return xdp.get("prog", {}).get("id") or next((p["id"] for p in xdp.get("attached", []) if "id" in p), None)



# ---------------------------------------------------------------- end-to-end helpers
# (used by test_e2e.py; nothing above depends on them)

@contextlib.contextmanager
def environ(**values):
    """os.environ with `values` set for the block (a daemon started in it
    inherits them), then put back as it was."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def wait_until(pred, timeout, interval=0.05, what="condition"):
    """Call pred() until it returns something truthy; return that, or fail
    after `timeout` seconds naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


class Traffic:
    """`sluice-traffic MODE ARGS...` in a namespace, in the background, by pid.
    `ip netns exec` execs the tool, so the pid is the tool's own (checked by
    its name). result() waits for it and returns its JSON line; stop() ends
    it early with SIGTERM (the tool still prints its result).

    realtime=True runs it under SCHED_FIFO (chrt -f 10; chrt execs the tool,
    so the pid stays the tool's): a paced generator whose own start/end times
    a test uses must not sit in a run queue behind other work on a loaded
    machine, or its "seconds" overstate the time it actually sent. Only for
    paced floods (--pps): an unpaced one would hold a CPU."""

    def __init__(self, ns, mode, *args, realtime=False):
        prio = ["chrt", "-f", "10"] if realtime else []
        self.cmd = ["ip", "netns", "exec", ns] + prio + [TRAFFIC, mode] + [str(a) for a in args]
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.started = time.monotonic()
        self.ended = None
        self._result = None

    def running(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def result(self, timeout=120):
        if self._result is None:
            out, err = self.proc.communicate(timeout=timeout)
            self.ended = time.monotonic()
            lines = out.strip().splitlines()
            if self.proc.returncode != 0 or not lines:
                raise AssertionError(f"{' '.join(self.cmd)} exited {self.proc.returncode}\n"
                                     f"stdout: {out[-2000:]}\nstderr: {err[-2000:]}")
            self._result = json.loads(lines[-1])
        return self._result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)
        return False


def start_sink(tb, port, duration=120, extra=()):
    """A sink on the host (every address), counting per source; returns once
    its socket is bound. End it with .stop() and read .result()."""
    ready = os.path.join(tb.rundir, f"sink-{port}-{os.urandom(3).hex()}.ready")
    s = Traffic(tb.ns_host, "sink", "--port", port, "--duration", duration, "--ready-file", ready, *extra)
    wait_until(lambda: os.path.exists(ready) or not s.running(), 20, what="the sink's ready file")
    if not s.running():
        s.result()  # raises with its output
    return s


def stop_sink(sink, settle=0.3):
    """Let what is in flight reach the socket, then end the sink; its result."""
    time.sleep(settle)
    sink.stop()
    return sink.result()


def real_pid(pid, comm):
    """The pid of the process named `comm`: `pid` itself when `ip netns exec`
    exec'ed it, else its descendant of that name."""
    def name(p):
        try:
            with open(f"/proc/{p}/comm") as f:
                return f.read().strip()
        except OSError:
            return None

    todo = [pid]
    while todo:
        p = todo.pop(0)
        if name(p) == comm:
            return p
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    raise AssertionError(f"no process named {comm} at or below pid {pid}")


def vm_rss_kib(pid):
    """VmRSS of a process, in KiB (/proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


def prog_maps_memlock(prog_id):
    """{map id: (name, bytes_memlock)} for every map the program uses, as
    `bpftool -j map show` reports them."""
    prog = bpftool_json("prog", "show", "id", str(prog_id))
    out = {}
    for mid in prog["map_ids"]:
        m = bpftool_json("map", "show", "id", str(mid))
        out[mid] = (m["name"], int(m["bytes_memlock"]))
    return out


class XdpSampler:
    """Samples the XDP program id on an interface every `interval` seconds in
    a thread, with one long-lived `ip -j -batch -` (line-buffered) in the
    namespace: a fresh `ip` per sample costs ~30 ms on a loaded machine, a
    batch command ~3 ms. samples: [(monotonic time, prog id or None)]."""

    def __init__(self, tb, role="host", iface=None, interval=0.01):
        import threading
        self.iface = iface or tb.host_if
        self.interval = interval
        self.samples = []
        self._stop = threading.Event()
        self._ip = subprocess.Popen(["stdbuf", "-oL", "ip", "-n", tb.ns(role), "-j", "-force", "-batch", "-"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True, bufsize=1)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error = None

    def _one(self):
        self._ip.stdin.write(f"link show dev {self.iface}\n")
        self._ip.stdin.flush()
        line = self._ip.stdout.readline()
        if not line:
            raise AssertionError("ip -batch ended")
        links = json.loads(line)
        xdp = links[0].get("xdp") if links else None
        if not xdp:
            return None
        return xdp.get("prog", {}).get("id") or next((a["prog"]["id"] for a in xdp.get("attached", [])
                                                     if "prog" in a), None)

    def _run(self):
        try:
            while not self._stop.is_set():
                t = time.monotonic()
                self.samples.append((t, self._one()))
                rest = self.interval - (time.monotonic() - t)
                if rest > 0:
                    time.sleep(rest)
        except Exception as e:  # reported by stop()
            self.error = e

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=20)
        try:
            self._ip.stdin.close()
        except OSError:
            pass
        try:
            self._ip.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._ip.kill()
            self._ip.wait(timeout=5)
        self._ip.stdout.close()
        if self.error:
            raise AssertionError(f"XDP sampler failed: {self.error!r}")
        return self.samples

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self._thread.is_alive() or self._ip.poll() is None:
            self._stop.set()
            self._thread.join(timeout=20)
            if self._ip.poll() is None:
                self._ip.kill()
                self._ip.wait(timeout=5)
        for f in (self._ip.stdin, self._ip.stdout):
            try:
                f.close()
            except OSError:
                pass
        return False


def rebuild_host_link(tb):
    """Create the host's veth pair (veth-host in the host namespace, r-host in
    the router's) again after it was deleted: the same names, MACs,
    addresses, neighbours and routes, by scripts/testbed.sh's own tb__link."""
    run(["bash", "-c", '. "$1" && tb__set_vars "$2" && tb__link "$2" host "$3" "$4" "$5" "$6" 1',
         "rebuild_host_link", TESTBED, tb.name, tb.host_if, tb.host_mac, tb.router_host_if, tb.router_host_mac])


def main():
    unittest.main(verbosity=2)
