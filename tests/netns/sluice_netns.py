"""Harness for sluice's netns tests: a testbed of namespaces (scripts/testbed.sh),
sluiced started and stopped by pid, sluicectl, frames from sluice-traffic, and
the pinned maps read with bpftool.

Every test runs inside namespaces it creates (unique names) and removes them on
every exit path. Outside CI a test that cannot run (not root) skips with one
line; in CI (CI=true) it fails instead.
"""

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
TESTBED = os.path.join(SOURCE_DIR, "scripts", "testbed.sh")


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
        for line in p.stdout.splitlines():
            if "=" in line and line.startswith("TB_"):
                k, v = line.split("=", 1)
                setattr(self, k[3:].lower(), v.strip("'\""))
        self.pin_dir = os.path.join(self.bpffs, "sluice")
        self.socket = os.path.join(self.rundir, "sluiced.sock")
        return self

    def __exit__(self, *exc):
        run(["bash", TESTBED, "down", self.name], check=False, timeout=120)
        return False

    def ns(self, role):
        return getattr(self, "ns_" + role)

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

    def start(self, wait=True):
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        if wait:
            deadline = time.time() + 20
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise AssertionError(f"sluiced exited {self.proc.returncode}: {self.output()}")
                if os.path.exists(self.socket):
                    p = ctl(self.tb, "-j", "status", socket=self.socket, check=False)
                    if p.returncode == 0 and '"running":true' in p.stdout.replace(" ", ""):
                        return self
                time.sleep(0.05)
            raise AssertionError(f"sluiced did not answer in 20 s: {self.output()}")
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
    """The config map's value as the kernel holds it, decoded (sluice_abi.h)."""
    path = os.path.join(tb.pin_dir, iface or tb.host_if, "config")
    dump = bpftool_json("map", "dump", "pinned", path)
    raw = bytes(int(b, 16) for b in dump[0]["value"])
    import struct
    (cost_ns, burst, state, ppm, flags, _pad, rate, since, manual, _pad1, gen) = struct.unpack("<QQIIIIQQIIQ", raw)
    return {"cost_ns": cost_ns, "burst": burst, "breaker_state": state, "admission_ppm": ppm,
            "list_flags": flags, "rate_pps": rate, "manual": manual, "generation": gen}


def pinned_settings(tb, iface=None):
    path = os.path.join(tb.pin_dir, iface or tb.host_if, "settings")
    dump = bpftool_json("map", "dump", "pinned", path)
    return bytes(int(b, 16) for b in dump[0]["value"])


def counters(tb, iface=None):
    """Outcome counters summed over CPUs, from the pinned map."""
    path = os.path.join(tb.pin_dir, iface or tb.host_if, "counters")
    names = ["passed", "drop_rate", "drop_shed", "drop_deny", "allowlisted", "non_ip", "malformed", "would_drop"]
    out = {}
    import struct
    for entry in bpftool_json("map", "dump", "pinned", path):
        key = entry["key"]
        k = int(key[0], 16) if isinstance(key, list) else int(key)
        pk = 0
        for v in entry["values"]:
            raw = bytes(int(b, 16) for b in v["value"]) if isinstance(v["value"], list) else None
            pk += struct.unpack("<QQ", raw)[0] if raw else v["value"]["packets"]
        out[names[k]] = pk
    return out


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


def main():
    unittest.main(verbosity=2)
