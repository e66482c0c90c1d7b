"""What sluice is compared with, each a context manager on the host's
interface that removes itself on the way out: XDP_DROP, XDP_PASS and
xdp-filter's deny-ip object attached by iproute2, a sluice object (or a
cut-point build) attached without the daemon, the hand-written LRU-hash
limiter (tests/tools/bench/lru_limiter.bpf.c), an nftables netdev meter, an
ip6tables hashlimit rule; and the entries the last two hold."""

import contextlib
import json
import subprocess

from .procs import end_with_stdin, run, spawn


@contextlib.contextmanager
def xdp_attach(lab, obj):
    # Through `ip netns exec`, not `ip -n`: iproute2 pins the maps an
    # object asks to pin (xdp-filter's) under /sys/fs/bpf, and only
    # `ip netns exec`'s private /sys keeps them off the machine's bpffs.
    host_if = lab.tb.host_if
    run(lab.x("host", "ip", "link", "set", "dev", host_if, "xdpdrv", "obj", obj, "sec", "xdp"))
    try:
        yield
    finally:
        run(lab.x("host", "ip", "link", "set", "dev", host_if, "xdpdrv", "off"), check=False)


def xdp_drop(lab):
    return xdp_attach(lab, lab.obj("xdp_drop_bpf"))


def xdp_pass(lab):
    return xdp_attach(lab, lab.xdp_pass_obj)


def xdp_filter(lab):
    return xdp_attach(lab, lab.xdpfilt)


@contextlib.contextmanager
def bpf_attached(lab, obj, rate, burst):
    """A sluice object (or a cut-point build) attached to the host's
    interface by `sluice-bench attach`, configured as the daemon would
    (rate, burst, serving) but without the daemon."""
    p = spawn(lab.x("host", lab.bench_tool, "attach", "--iface", lab.tb.host_if, "--rate", rate,
                    "--burst", burst, obj), stdin=subprocess.PIPE, stderr=None)
    try:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"sluice-bench attach {obj} ended")
        yield
    finally:
        end_with_stdin(p, 30)


class LruLimiter:
    """The attached LRU baseline: its maps' memory, and its counters."""

    def __init__(self, proc, maps_memlock):
        self.proc = proc
        self.maps_memlock = maps_memlock

    def counters(self):
        """{"passed": [per CPU], "dropped": [per CPU]} since the attach."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("sluice-bench attach (LRU baseline) ended")
        return json.loads(line)


@contextlib.contextmanager
def lru(lab, rate, burst, entries, iface=None, v6_prefix=64):
    """The per-source LRU-hash limiter as it is commonly written, rate and
    burst per source, `entries` sources in its table, IPv6 keyed by the /64
    or the whole address, attached by `sluice-bench attach` to the host's
    interface (or `iface` there)."""
    p = spawn(lab.x("host", lab.bench_tool, "attach", "--iface", iface or lab.tb.host_if, "--rate", rate,
                    "--burst", burst, "--entries", entries, "--v6-prefix", v6_prefix,
                    lab.tool_obj("lru_limiter_bpf")),
              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
    try:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError("sluice-bench attach (LRU baseline) ended")
        yield LruLimiter(p, json.loads(line)["maps_memlock"])
    finally:
        end_with_stdin(p, 30)


@contextlib.contextmanager
def nft(lab, mask64, rate, burst, size):
    key = "ip6 saddr & ffff:ffff:ffff:ffff::" if mask64 else "ip6 saddr"
    rules = f"""table netdev sluicebench {{
  set src6 {{ type ipv6_addr; size {size}; flags dynamic,timeout; timeout 60s; }}
  chain ingress {{
    type filter hook ingress device "{lab.tb.host_if}" priority -500; policy accept;
    meta protocol ip6 add @src6 {{ {key} limit rate over {rate}/second burst {burst} packets }} counter drop
  }}
}}
"""
    run(lab.x("host", "nft", "-f", "-"), input=rules)
    try:
        yield
    finally:
        run(lab.x("host", "nft", "delete", "table", "netdev", "sluicebench"), check=False)


def nft_elements(lab):
    p = run(lab.x("host", "nft", "-j", "list", "set", "netdev", "sluicebench", "src6"), check=False, timeout=120)
    if p.returncode != 0:
        return None
    for o in json.loads(p.stdout).get("nftables", []):
        if "set" in o:
            return len(o["set"].get("elem", []))
    return None


@contextlib.contextmanager
def hashlimit(lab, mask, rate, burst, size):
    rule = ["PREROUTING", "-i", lab.tb.host_if, "-m", "hashlimit", "--hashlimit-mode", "srcip",
            "--hashlimit-srcmask", mask, "--hashlimit-above", f"{rate}/sec", "--hashlimit-burst", burst,
            "--hashlimit-name", "sluicebench", "--hashlimit-htable-max", size,
            "--hashlimit-htable-size", max(size // 8, 1024), "-j", "DROP"]
    run(lab.x("host", "ip6tables", "-t", "raw", "-A", *rule))
    try:
        yield
    finally:
        run(lab.x("host", "ip6tables", "-t", "raw", "-F", "PREROUTING"), check=False)


def hashlimit_entries(lab):
    p = run(lab.x("host", "cat", "/proc/net/ip6t_hashlimit/sluicebench"), check=False)
    return len(p.stdout.splitlines()) if p.returncode == 0 else None
