"""Hostile input, table-driven: bad values through every way into sluice --
sluicectl's command line, sluiced's command line, sluiced's config file and
the control socket itself -- each with the exit code (or reply kind) and the
words of the error it must get, and each followed by a check that nothing
changed: the config map's bytes and the raw words of two slots (read with
bpftool from the pins), the allow and deny lists, and the daemon still
answering with the same program attached.

Exit codes (README): 0 ok, 1 refused (an invariant, a breaker edge) or a
system error, 2 a usage or input error. A reply's "kind" is what sluicectl
turns into them: invalid -> 2, refused/system -> 1.

Every case runs under a timeout: a parser that hangs on its input fails the
case instead of the run. Each class prints one line "HOSTILE <surface>: N
cases" (stderr)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

from sluice_netns import (SLUICECTL, SLUICED, Daemon, Testbed, bpftool_json, ctl, ctl_json, main, require_root,
                          xdp_prog_id)

SRC = "198.18.7.7"           # the source whose two slots every case checks
COOKIE_SYSCTLS = ("net.ipv4.tcp_syncookies", "net.ipv4.tcp_timestamps")  # what sluiced arms for SYN cookies
RATE, BURST, TOKENS = 1, 10, 4  # at 1 token/s nothing refills between two checks that matters: raw words are compared
CASE_TIMEOUT = 20


def run_raw(cmd, timeout=CASE_TIMEOUT, stdin=None):
    """Run argv (str or bytes items); (rc, stdout, stderr) as text (bytes
    replaced). A hang is a failure of the case, with what it printed."""
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=stdin)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{cmd!r} did not finish in {timeout} s (hung on its input?); "
                             f"stderr so far: {(e.stderr or b'')[-500:]!r}")
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def pinned_raw(tb, name):
    path = os.path.join(tb.pin_dir, tb.host_if, name)
    return [(e.get("key"), e.get("value")) for e in bpftool_json("map", "dump", "pinned", path)]


def possible_cpus():
    """libbpf_num_possible_cpus(): the CPUs a per-CPU budget (--newcomer-pps,
    --cookie-pps) is divided over, so its bounds."""
    with open("/sys/devices/system/cpu/possible") as f:
        return sum(int(b) - int(a) + 1 for a, _, b in (r.partition("-") if "-" in r else (r, "", r)
                                                       for r in f.read().strip().split(",")))


def per_cpu_pps_bounds():
    """The least non-zero and the greatest pps of a per-CPU budget, as
    ctl/lib/base/limits.cpp bounds them: a cost of at most 1e12 ns a token on
    each CPU, and at most 10,000,000 pps a CPU (its 0.1 s burst at most
    SLUICE_BURST_MAX)."""
    cpus = possible_cpus()
    return max(1, (cpus + 999) // 1000), cpus * 10_000_000, cpus


def cookie_sysctls(tb):
    """The TCP sysctls SYN cookies arm, in the protected namespace."""
    rc, out, err = run_raw(["ip", "netns", "exec", tb.ns_host, "sysctl", "-n"] + list(COOKIE_SYSCTLS))
    if rc != 0:
        raise AssertionError(f"sysctl -n {' '.join(COOKIE_SYSCTLS)} in {tb.ns_host}: exit {rc}: {err}")
    return out.split()


def slot_words(tb, slots):
    path = os.path.join(tb.pin_dir, tb.host_if, "slots")
    out = []
    for i in slots:
        key = [str(b) for b in int(i).to_bytes(4, "little")]
        v = bpftool_json("map", "lookup", "pinned", path, "key", *key)
        out.append(bytes(int(b, 16) for b in v["value"]))
    return out


class Snapshot:
    """What no bad input may change: config, two slots, the lists, the program,
    and the TCP sysctls SYN cookies arm."""

    def __init__(self, tb, slots, lists=True):
        self.config = pinned_raw(tb, "config")
        self.sysctls = cookie_sysctls(tb)
        self.slots = slot_words(tb, slots)
        self.lists = {n: sorted(pinned_raw(tb, n), key=repr)
                      for n in ("allow_v4", "allow_v6", "deny_v4", "deny_v6", "deny_exact_v4", "deny_exact_v6",
                                "allow_exact_v4", "allow_exact_v6")
                      } if lists else None
        self.prog = xdp_prog_id(tb)

    def diff(self, other):
        out = []
        if self.config != other.config:
            out.append(f"config {self.config} -> {other.config}")
        if self.slots != other.slots:
            out.append(f"slots {[s.hex() for s in self.slots]} -> {[s.hex() for s in other.slots]}")
        if self.lists is not None and other.lists is not None and self.lists != other.lists:
            out.append(f"lists {self.lists} -> {other.lists}")
        if self.prog != other.prog:
            out.append(f"program {self.prog} -> {other.prog}")
        if self.sysctls != other.sysctls:
            out.append(f"{', '.join(COOKIE_SYSCTLS)} {self.sysctls} -> {other.sysctls}")
        return out


class Fixture:
    """A testbed and a daemon with a known state: rate 1, burst 10, the
    probe source's slots at 4 tokens, one prefix in each list."""

    def __init__(self, test, purpose):
        self.test = test
        self.tb = Testbed(purpose).__enter__()
        try:
            self.d = Daemon(self.tb, "--rate", str(RATE), "--burst", str(BURST), "--period", "0.2",
                            "--table-size", "1024").start()
            self.ctl("bucket", self.tb.host_if, SRC, "--set", str(TOKENS), expect=0)
            self.ctl("deny", "add", self.tb.host_if, "198.18.66.0/24", expect=0)
            self.ctl("allow", "add", self.tb.host_if, "198.18.77.0/24", expect=0)
            self.slots = ctl_json(self.tb, "bucket", self.tb.host_if, SRC)["slots"]
            self.base = Snapshot(self.tb, self.slots)
        except BaseException:
            self.close()
            raise
        self.count = 0

    def close(self):
        if getattr(self, "d", None):
            self.d.kill(signal.SIGTERM)
        self.tb.__exit__(None, None, None)

    def ctl_cmd(self, *args, socket_path=None):
        return ["ip", "netns", "exec", self.tb.ns_host, SLUICECTL, "--socket",
                self.tb.socket if socket_path is None else socket_path,
                "--pin-dir", self.tb.pin_dir] + list(args)

    def ctl(self, *args, expect=None):
        rc, out, err = run_raw(self.ctl_cmd(*args))
        if expect is not None and rc != expect:
            raise AssertionError(f"sluicectl {args!r} exited {rc}, want {expect}: {out}{err}")
        return rc, out, err

    def check_unchanged(self, what, lists=True):
        now = Snapshot(self.tb, self.slots, lists=lists)
        d = self.base.diff(now)
        self.test.assertEqual(d, [], f"{what}: the maps changed")
        self.test.assertIsNone(self.d.proc.poll(), f"{what}: sluiced exited: {self.d.output()[-2000:]}")
        self.count += 1

    def expect(self, what, rc, out, err, want_rc, *words):
        text = out + err
        self.test.assertEqual(rc, want_rc, f"{what}: exit {rc}, want {want_rc}; said: {text.strip()[:600]}")
        for w in words:
            self.test.assertIn(w, text, f"{what}: the error does not say {w!r}; said: {text.strip()[:600]}")


class HostileCli(unittest.TestCase):
    """sluicectl's and sluiced's command lines."""

    def setUp(self):
        require_root(self)

    def test_sluicectl_bad_arguments(self):
        f = Fixture(self, "hcli")
        try:
            IF = f.tb.host_if
            cases = [
                # (argv, exit code, words of the error)
                (["set", IF, "--rate", "-1"], 2, ["--rate wants a non-negative integer, got '-1'"]),
                (["set", IF, "--rate", "0"], 1, ["invariant 1 <= rate <= 100000000", "0"]),
                (["set", IF, "--rate", "100000001"], 1, ["invariant 1 <= rate <= 100000000", "100000001"]),
                (["set", IF, "--rate", "99999999999999999999"], 2, ["--rate 99999999999999999999 is out of range"]),
                (["set", IF, "--rate", "18446744073709551616"], 2, ["is out of range"]),
                (["set", IF, "--rate", "1e9"], 2, ["--rate wants a non-negative integer, got '1e9'"]),
                (["set", IF, "--rate", ""], 2, ["--rate wants a non-negative integer, got ''"]),
                (["set", IF, "--burst", "0"], 1, ["invariant 1 <= burst <= 1000000"]),
                (["set", IF, "--burst", "1000001"], 1, ["invariant 1 <= burst <= 1000000", "1000001"]),
                (["set", IF], 2, ["nothing to set: give --rate N, --burst N or both"]),
                (["bucket", IF, SRC, "--set", "-5"], 1, ["invariant 0 <= tokens <= burst violated: rejected write of -5"]),
                (["bucket", IF, SRC, "--set", "11"], 1, ["rejected write of 11"]),
                (["bucket", IF, SRC, "--set", "99999999999999999999"], 2, ["--set 99999999999999999999 is out of range"]),
                (["bucket", IF, "198.18.0.256"], 2, ["'198.18.0.256' is not an IPv4 or IPv6 address"]),
                (["bucket", IF, "198.18.0.0/24"], 2, ["is not an IPv4 or IPv6 address"]),
                (["bucket", IF, ""], 2, ["'' is not an IPv4 or IPv6 address"]),
                # (at 1 token/s the slots fill up to burst between cases: the words are what stay put)
                (["refill", IF, SRC, "11"], 1, ["invariant 0 <= tokens <= burst violated: rejected write of",
                                                "(refill, burst 10)", "the slots are unchanged"]),
                (["refill", IF, SRC, "-1000"], 1, ["rejected write of -99", "(refill, burst 10)"]),
                (["refill", IF, SRC, "1000001"], 1, ["rejected refill of 1000001"]),
                (["refill", IF, SRC, "x"], 2, ["wants an integer, got 'x'"]),
                (["deny", "add", IF, "198.18.7.1/24"], 2, ["CIDR 198.18.7.1/24 has host bits set; did you mean 198.18.7.0/24?"]),
                (["deny", "add", IF, "198.18.7.0/33"], 2, ["'198.18.7.0/33': prefix length must be 0..32"]),
                (["deny", "add", IF, "2001:2::/129"], 2, ["'2001:2::/129': prefix length must be 0..128"]),
                (["deny", "add", IF, "198.18.7.0/-1"], 2, ["prefix length must be 0..32"]),
                (["deny", "add", IF, "198.18.7.0/"], 2, ["prefix length must be 0..32"]),
                (["deny", "add", IF, "198.18.7.0/24", "10.1.1.1/8"], 2, ["did you mean 10.0.0.0/8?"]),
                (["allow", "add", IF, "\u00e4\u2603/8"], 2, ["is not an IPv4 or IPv6 address"]),
                (["deny", "del", IF, "198.18.99.0/24"], 2, ["198.18.99.0/24 is not in the deny list; nothing was removed"]),
                (["allow", "add", IF, "--from", "/nonexistent/list.txt"], 2, ["cannot read --from /nonexistent/list.txt"]),
                (["allow", "add", IF, "--from", "/dev/null"], 2, ["holds no CIDRs"]),
                (["breaker", "open", IF], 2, ["open"]),
                (["breaker", "recover", IF], 1, ["invalid transition: serving -> recovering"]),
                (["status", "nosuchif0"], 2, ["sluiced does not manage interface 'nosuchif0'"]),
                (["status", "abcdefghijklmnopq"], 2, ["'abcdefghijklmnopq' is not an interface name (1 to 15"]),
                (["set", "", "--rate", "5"], 2, ["is not an interface name"]),
                ([b"status", b"\xff\xfe\xc3\x28"], 2, ["sluiced does not manage interface"]),
                (["set", IF + "/../x", "--rate", "5"], 2, ["is not an interface name"]),
                (["reboot"], 2, ["unknown command 'reboot'"]),
                ([], 2, ["no command given"]),
                (["--x%original_token%"], 2, ["holds '%original_token%'"]),
                (["set", IF, "--rate", "%value%"], 2, ["holds '%value%'"]),
                (["status", "--watch"], 2, ["--watch"]),
                (["set", IF, "--rate", "5", "extra"], 2, ["extra"]),
                # standing: a bad address or interface is exit 2 before anything is sent; an
                # address without standing is the answer "no", exit 1
                (["standing", IF, "198.18.0.256"], 2, ["'198.18.0.256' is not an IPv4 or IPv6 address"]),
                (["standing", IF, "198.18.0.0/24"], 2, ["'198.18.0.0/24' is not an IPv4 or IPv6 address"]),
                (["standing", IF, ""], 2, ["'' is not an IPv4 or IPv6 address"]),
                (["standing", IF, "%value%"], 2, ["holds '%value%'"]),
                (["standing", IF, SRC, "extra"], 2, ["extra"]),
                (["standing"], 2, ["missing IFACE"]),
                (["standing", "nosuchif0"], 2, ["sluiced does not manage interface 'nosuchif0'"]),
                (["standing", "nosuchif0", SRC], 2, ["sluiced does not manage interface 'nosuchif0'"]),
                (["standing", "abcdefghijklmnopq", SRC], 2, ["'abcdefghijklmnopq' is not an interface name"]),
                (["standing", IF, SRC], 1, [f"{SRC} has no standing on {IF}"]),
                (["standing", IF, SRC, "--set", "5"], 2, ["--set"]),
                # explain: bad input is exit 2 (before anything is sent, or from the daemon);
                # an interface sluiced does not manage, 1
                (["explain", IF, "198.18.0.256"], 2, ["'198.18.0.256' is not an IPv4 or IPv6 address"]),
                (["explain", IF, "198.18.0.0/24"], 2, ["is not an IPv4 or IPv6 address"]),
                (["explain", IF], 2, ["missing SRC"]),
                (["explain", IF, SRC, "gre"], 2, ["protocol 'gre' is not one of any, tcp, tcp-syn, udp, icmp, icmpv6"]),
                (["explain", IF, SRC, "udp/65536"], 2, ["port 65536 is outside 0..65535"]),
                (["explain", IF, SRC, "udp/99999999999999999999"], 2, ["is not a number 0..65535"]),
                (["explain", IF, SRC, "udp/x"], 2, ["port 'x' in 'udp/x' is not a number"]),
                (["explain", IF, SRC, "udp/"], 2, ["port '' in 'udp/' is not a number"]),
                (["explain", IF, SRC, "udp/-1"], 2, ["is not a number"]),
                (["explain", IF, SRC, "icmp/5"], 2, ["protocol icmp has no ports"]),
                (["explain", IF, SRC, "%value%"], 2, ["holds '%value%'"]),
                (["explain", IF, SRC, "udp/53", "extra"], 2, ["extra"]),
                (["explain", "nosuchif0", SRC], 1, ["sluiced does not manage interface 'nosuchif0'"]),
                (["explain", "abcdefghijklmnopq", SRC], 2, ["is not an interface name"]),
                # reload: this daemon runs without a policy file
                (["reload"], 1, ["sluiced runs without a policy file"]),
                (["reload", "nosuchif0"], 2, ["sluiced does not manage interface 'nosuchif0'"]),
                (["reload", IF, "extra"], 2, ["extra"]),
            ]
            for argv, want_rc, words in cases:
                with self.subTest(argv=argv):
                    rc, out, err = f.ctl(*argv)
                    f.expect(f"sluicectl {argv!r}", rc, out, err, want_rc, *words)
                    f.check_unchanged(f"sluicectl {argv!r}")
            # the socket path itself
            for path, words in [("", ["--socket '' must be 1 to"]), ("/" + "x" * 200, ["must be 1 to"])]:
                with self.subTest(socket=path[:20]):
                    rc, out, err = run_raw(f.ctl_cmd("status", socket_path=path))
                    f.expect(f"sluicectl --socket {path[:20]!r}", rc, out, err, 2, *words)
                    f.check_unchanged("bad --socket")
            print(f"HOSTILE sluicectl command line: {f.count} cases", file=sys.stderr)
        finally:
            f.close()

    def test_sluiced_bad_options(self):
        """A second sluiced with bad options, on the managed interface: refused
        with exit 2 before it touches anything (no socket left behind), the
        first daemon and its maps untouched."""
        f = Fixture(self, "hsd")
        try:
            IF = f.tb.host_if
            n = [0]

            def sluiced(*args):
                n[0] += 1
                sock = os.path.join(f.tb.rundir, f"hostile-{n[0]}.sock")
                # its own socket and the testbed's pins, unless the case gives them
                extra = ([] if "--socket" in args else ["--socket", sock]) + \
                        ([] if "--pin-dir" in args else ["--pin-dir", f.tb.pin_dir])
                rc, out, err = run_raw(["ip", "netns", "exec", f.tb.ns_host, SLUICED] + list(args) + extra)
                self.assertFalse(os.path.exists(sock), f"sluiced {args!r} left its socket {sock}")
                return rc, out, err

            bad_policy = os.path.join(f.tb.rundir, "bad-policy.yaml")
            with open(bad_policy, "w") as p:
                p.write("version: 1\nclasses:\n  dns:\n    rte: 1\n")
            fifo = os.path.join(f.tb.rundir, "policy.fifo")
            os.mkfifo(fifo)

            pps_lo, pps_hi, cpus = per_cpu_pps_bounds()
            cases = [
                ([], 2, ["no interface given: use -i IFACE"]),
                (["-i", IF, "--rate", "-5"], 2, ["--rate -5 is outside 1..100000000"]),
                (["-i", IF, "--rate", "0"], 2, ["--rate 0 is outside 1..100000000"]),
                (["-i", IF, "--rate", "100000001"], 2, ["--rate 100000001 is outside 1..100000000"]),
                (["-i", IF, "--rate", "18446744073709551616"], 2, ["'18446744073709551616'", "--rate", "invalid"]),
                (["-i", IF, "--rate", "1e9"], 2, ["'1e9'", "--rate", "invalid"]),
                (["-i", IF, "--burst", "0"], 2, ["--burst 0 is outside 1..1000000"]),
                (["-i", IF, "--burst", "1000001"], 2, ["--burst 1000001 is outside 1..1000000"]),
                (["-i", IF, "--table-size", "1000"], 2, ["--table-size", "1000", "power of two"]),
                (["-i", IF, "--table-size", "0"], 2, ["--table-size", "power of two"]),
                (["-i", IF, "--table-size", "8"], 2, ["--table-size", "power of two"]),
                (["-i", IF, "--table-size", "134217728"], 2, ["--table-size 134217728 must be a power of two between 16 and 67108864"]),
                (["-i", IF, "--table-size", "-1024"], 2, ["--table-size -1024 must be a power of two"]),
                (["-i", IF, "--ipv4-prefix", "33"], 2, ["--ipv4-prefix 33 is outside 0..32"]),
                (["-i", IF, "--ipv4-prefix", "-1"], 2, ["--ipv4-prefix -1 is outside 0..32"]),
                (["-i", IF, "--ipv6-prefix", "129"], 2, ["--ipv6-prefix 129 is outside 0..128"]),
                (["-i", "nosuchif0"], 2, ["unknown interface 'nosuchif0'"]),
                (["-i", "abcdefghijklmnop"], 2, ["interface name 'abcdefghijklmnop' is longer than 15 characters"]),
                (["-i", "bad/name"], 2, ["has a character interface names cannot have"]),
                (["-i", ""], 2, ["--interface needs a name"]),
                ([b"-i", b"\xc3\x28\xff"], 2, ["has a character interface names cannot have"]),
                (["-i", IF, "--mode", "turbo"], 2, ["--mode"]),
                (["-i", IF, "--period", "0"], 2, ["--period must be between 0.01 and 60 seconds"]),
                (["-i", IF, "--period", "nan"], 2, ["--period must be between 0.01 and 60 seconds"]),
                (["-i", IF, "--hash-key-file", "/nonexistent/key"], 2, ["--hash-key-file /nonexistent/key"]),
                (["-i", IF, "--trip-pps", "1", "--clear-pps", "5"], 2, ["--clear-pps must be between 1 and --trip-pps (1)"]),
                (["-i", IF, "--recovery-start", "0"], 2, ["--recovery-start must be 0.1..100 percent"]),
                (["-i", IF, "--max-clients", "0"], 2, ["--max-clients must be 1..1024"]),
                (["-i", IF, "--log-level", "loud"], 2, ["--log-level 'loud' is not one of debug, info, warn, error"]),
                (["-i", IF, "--pin-dir", "relative/dir"], 2, ["--pin-dir must be an absolute path"]),
                (["-i", IF, "--socket", ""], 2, ["--socket path must be 1..107 characters"]),
                (["-i", IF, "--x%original_token%"], 2, ["holds '%original_token%'"]),
                (["-i", IF, "--rate", "%value%"], 2, ["holds '%value%'"]),
                (["-i", IF, "--no-such-option"], 2, ["no-such-option"]),
                # standing's options: the bounds named with the value
                (["-i", IF, "--standing-rate", "0"], 2, ["--standing-rate 0 is outside 1..100000000"]),
                (["-i", IF, "--standing-rate", "-1"], 2, ["--standing-rate -1 is outside 1..100000000"]),
                (["-i", IF, "--standing-rate", "100000001"], 2, ["--standing-rate 100000001 is outside 1..100000000"]),
                (["-i", IF, "--standing-rate", "18446744073709551616"], 2, ["'18446744073709551616'", "--standing-rate", "invalid"]),
                (["-i", IF, "--standing-burst", "0"], 2, ["--standing-burst 0 is outside 1..1000000"]),
                (["-i", IF, "--standing-burst", "1000001"], 2, ["--standing-burst 1000001 is outside 1..1000000"]),
                (["-i", IF, "--newcomer-pps", "-1"], 2, ["--newcomer-pps -1 is outside 0 (none) or 1..", "CPUs)"]),
                (["-i", IF, "--newcomer-pps", "1000000000000"], 2, ["--newcomer-pps 1000000000000 is outside 0 (none) or 1.."]),
                (["-i", IF, "--newcomer-pps", "1e5"], 2, ["'1e5'", "--newcomer-pps", "invalid"]),
                (["-i", IF, "--observe-periods", "256"], 2, ["--observe-periods 256 is outside 0 (off)..255"]),
                (["-i", IF, "--observe-periods", "-1"], 2, ["--observe-periods -1 is outside 0 (off)..255"]),
                (["-i", IF, "--no-standing=1"], 2, ["'--no-standing' does not take any arguments"]),
                # SYN cookies: the mode by name only, the budget within the per-CPU bounds
                (["-i", IF, "--cookies", "sometimes"], 2, ["--cookies", "'sometimes' is not one of off, shedding, always"]),
                (["-i", IF, "--cookies", "Shedding"], 2, ["--cookies", "'Shedding' is not one of"]),
                (["-i", IF, "--cookies", "1"], 2, ["--cookies", "'1' is not one of"]),
                (["-i", IF, "--cookies", ""], 2, ["--cookies", "'' is not one of"]),
                (["-i", IF, "--cookies"], 2, ["--cookies"]),
                (["-i", IF, "--cookie-pps", "-1"], 2, [f"--cookie-pps -1 is outside 0 (none) or {pps_lo}..{pps_hi} ({cpus} CPUs)"]),
                (["-i", IF, "--cookie-pps", str(pps_hi + 1)], 2, [f"--cookie-pps {pps_hi + 1} is outside 0 (none) or {pps_lo}..{pps_hi}"]),
                (["-i", IF, "--cookie-pps", "1000000000000"], 2, ["--cookie-pps 1000000000000 is outside 0 (none) or"]),
                (["-i", IF, "--cookie-pps", "18446744073709551616"], 2, ["'18446744073709551616'", "--cookie-pps", "invalid"]),
                (["-i", IF, "--cookie-pps", "1e6"], 2, ["'1e6'", "--cookie-pps", "invalid"]),
                (["-i", IF, "--cookie-pps", "lots"], 2, ["'lots'", "--cookie-pps", "invalid"]),
                (["-i", IF, "--cookie-pps", ""], 2, ["--cookie-pps"]),
                # the per-destination bound: 0 (none) or 1..1e7, whatever the CPUs
                (["-i", IF, "--cookie-dest-pps", "-1"], 2, ["--cookie-dest-pps -1 is outside 0 (none) or 1..10000000"]),
                (["-i", IF, "--cookie-dest-pps", "10000001"], 2, ["--cookie-dest-pps 10000001 is outside 0 (none) or 1..10000000"]),
                (["-i", IF, "--cookie-dest-pps", "18446744073709551616"], 2, ["'18446744073709551616'", "--cookie-dest-pps", "invalid"]),
                (["-i", IF, "--cookie-dest-pps", "1k"], 2, ["'1k'", "--cookie-dest-pps", "invalid"]),
                # the policy file: refused whole, with its file:line:col, before anything is touched
                (["-i", IF, "--policy", "/nonexistent/policy.yaml"], 2, ["/nonexistent/policy.yaml", "not_found"]),
                (["-i", IF, "--policy", "/dev/null"], 2, ["/dev/null", "not_regular"]),
                (["-i", IF, "--policy", f.tb.rundir], 2, ["is_directory"]),
                (["-i", IF, "--policy", bad_policy], 2, [f"{bad_policy}:4:5: unknown_key"]),
                (["-i", IF, "--policy", fifo], 2, ["is_fifo"]),
                (["-i", IF, "--policy", bad_policy, "--no-policy"], 2, ["--policy and --no-policy: give one"]),
                (["-i", IF, "--policy", ""], 2, ["--policy needs a path"]),
                (["-i", IF, "--no-policy", "--policy-watch"], 2, ["--policy-watch needs a policy file"]),
                (["-i", IF, "--policy-watch=1"], 2, ["'--policy-watch' does not take any arguments"]),
            ]
            for argv, want_rc, words in cases:
                with self.subTest(argv=argv):
                    rc, out, err = sluiced(*argv)
                    f.expect(f"sluiced {argv!r}", rc, out, err, want_rc, *words)
                    f.check_unchanged(f"sluiced {argv!r}")
            print(f"HOSTILE sluiced command line: {f.count} cases", file=sys.stderr)
        finally:
            f.close()


class HostileConfigFile(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_bad_config_files(self):
        f = Fixture(self, "hcfg")
        try:
            IF = f.tb.host_if
            n = [0]

            def with_file(content, *args):
                n[0] += 1
                path = os.path.join(f.tb.rundir, f"hostile-{n[0]}.conf")
                with open(path, "wb") as fh:
                    fh.write(content if isinstance(content, bytes) else content.encode())
                return path

            def sluiced_config(path, *args):
                sock = os.path.join(f.tb.rundir, f"hostile-cfg-{n[0]}.sock")
                return run_raw(["ip", "netns", "exec", f.tb.ns_host, SLUICED, "--config", path, "--socket", sock,
                                "--pin-dir", f.tb.pin_dir] + list(args))

            good = f"interface = {IF}\n"
            pps_lo, pps_hi, cpus = per_cpu_pps_bounds()
            cases = [
                (with_file(good + "rate = -5\n"), 2, ["--rate -5 is outside 1..100000000"]),
                (with_file(good + "rate = 0\n"), 2, ["--rate 0 is outside"]),
                (with_file(good + "rate = 18446744073709551616\n"), 2, ["'18446744073709551616'", "invalid"]),
                (with_file(good + "burst = 0\n"), 2, ["--burst 0 is outside 1..1000000"]),
                (with_file(good + "table-size = 1000\n"), 2, ["--table-size", "1000", "power of two"]),
                (with_file(good + "ipv4-prefix = 33\n"), 2, ["--ipv4-prefix 33 is outside 0..32"]),
                (with_file(good + "ipv6-prefix = 129\n"), 2, ["--ipv6-prefix 129 is outside 0..128"]),
                (with_file(good + "foo = 1\n"), 2, ["unrecognised option 'foo'"]),
                (with_file(good + "rate\n"), 2, ["invalid line 'rate'"]),
                (with_file(b"\xff\xfe\xfd\n\xc3\x28 = \xe2\x82\n"), 2, ["invalid line"]),
                (with_file(""), 2, ["no interface given"]),
                (with_file("interface = abcdefghijklmnopqrstu\n"), 2, ["interface name 'abcdefghijklmnopqrstu' is longer than 15 characters"]),
                (with_file("interface = nosuchif0\n"), 2, ["unknown interface 'nosuchif0'"]),
                (with_file(good + "period = -1\n"), 2, ["--period must be between 0.01 and 60 seconds"]),
                (with_file(good + "%original_token% = 1\n"), 2, ["holds '%original_token%'"]),
                (with_file(good + "rate = 100\nrate = 200\n"), 2, ["rate"]),
                (os.path.join(f.tb.rundir, "does-not-exist.conf"), 2, ["cannot read config file"]),
                (f.tb.rundir, 2, [f"config file {f.tb.rundir} is not a regular file"]),
                ("/dev/zero", 2, ["config file /dev/zero is not a regular file"]),
                (with_file(good + "# " + "x" * (2 << 20) + "\n"), 2, ["is over 1 MiB"]),
                (with_file(good + "standing-rate = 0\n"), 2, ["--standing-rate 0 is outside 1..100000000"]),
                (with_file(good + "standing-burst = 1000001\n"), 2, ["--standing-burst 1000001 is outside 1..1000000"]),
                (with_file(good + "newcomer-pps = -3\n"), 2, ["--newcomer-pps -3 is outside 0 (none) or"]),
                (with_file(good + "observe-periods = 300\n"), 2, ["--observe-periods 300 is outside 0 (off)..255"]),
                (with_file(good + "no-standing = maybe\n"), 2, ["'maybe'", "no-standing", "invalid"]),
                (with_file(good + "cookies = sometimes\n"), 2, ["--cookies", "'sometimes' is not one of off, shedding, always"]),
                (with_file(good + "cookies =\n"), 2, ["--cookies", "'' is not one of"]),
                (with_file(good + "cookies = off\ncookies = always\n"), 2, ["cookies"]),
                (with_file(good + "cookie-pps = -3\n"), 2, [f"--cookie-pps -3 is outside 0 (none) or {pps_lo}..{pps_hi} ({cpus} CPUs)"]),
                (with_file(good + f"cookie-pps = {pps_hi + 1}\n"), 2, [f"--cookie-pps {pps_hi + 1} is outside 0 (none) or"]),
                (with_file(good + "cookie-pps = 1e6\n"), 2, ["'1e6'", "cookie-pps", "invalid"]),
                (with_file(good + "cookie-pps = 18446744073709551616\n"), 2, ["'18446744073709551616'", "invalid"]),
                (with_file(good + "cookie-dest-pps = 20000000\n"), 2, ["--cookie-dest-pps 20000000 is outside 0 (none) or 1..10000000"]),
            ]
            for path, want_rc, words in cases:
                with self.subTest(config=path):
                    rc, out, err = sluiced_config(path)
                    f.expect(f"sluiced --config {path}", rc, out, err, want_rc, *words)
                    f.check_unchanged(f"sluiced --config {path}")
            print(f"HOSTILE config file: {f.count} cases", file=sys.stderr)
        finally:
            f.close()


class HostileSocket(unittest.TestCase):
    """Raw lines on the control socket, as root: each gets one error reply
    of the right kind, the connection carries on, the maps stay."""

    def setUp(self):
        require_root(self)

    def test_bad_requests(self):
        f = Fixture(self, "hsock")
        s = None
        try:
            IF = f.tb.host_if
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(CASE_TIMEOUT)
            s.connect(f.tb.socket)
            buf = [b""]

            def call(line):
                s.sendall(line + b"\n")
                while b"\n" not in buf[0]:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise AssertionError(f"sluiced closed the connection after {line[:100]!r}: "
                                             f"{f.d.output()[-2000:]}")
                    buf[0] += chunk
                reply, buf[0] = buf[0].split(b"\n", 1)
                return json.loads(reply)

            def req(**kw):
                return json.dumps(kw).encode()

            deep = b"[" * 30000 + b"]" * 30000
            cases = [
                # (line, kind, words of the error)
                (b"{", "invalid", ["request is not valid JSON"]),
                (b"[]", "invalid", ["request must be a JSON object"]),
                (b'"status"', "invalid", ["request must be a JSON object"]),
                (b"{}", "invalid", ['request needs "cmd" as a string']),
                (b'{"cmd": 5}', "invalid", ['request needs "cmd" as a string']),
                (req(cmd="reboot"), "invalid", ["unknown command 'reboot'"]),
                (req(cmd="set", iface=IF, rate=-1), "refused", ["invariant 1 <= rate <= 100000000"]),
                (req(cmd="set", iface=IF, rate=0), "refused", ["invariant 1 <= rate <= 100000000"]),
                (req(cmd="set", iface=IF, rate=2**64 - 1), "invalid", ['"rate" is too large']),
                (b'{"cmd": "set", "iface": "%s", "rate": 1e400}' % IF.encode(), "invalid", []),
                (req(cmd="set", iface=IF, rate=1.5), "invalid", ['"rate" must be an integer']),
                (req(cmd="set", iface=IF, rate="100"), "invalid", ['"rate" must be an integer']),
                (req(cmd="set", iface=IF, burst=0), "refused", ["invariant 1 <= burst <= 1000000"]),
                (req(cmd="set", iface=IF, burst=-(2**63)), "refused", ["invariant 1 <= burst <= 1000000"]),
                (req(cmd="set", iface=IF), "invalid", ["'set' needs \"rate\" or \"burst\""]),
                (req(cmd="set", rate=5), "invalid", ["'set' needs \"iface\""]),
                (req(cmd="bucket", iface=IF, addr=SRC, set=11), "refused", ["rejected write of 11"]),
                (req(cmd="bucket", iface=IF, addr=SRC, set=-1), "refused", ["rejected write of -1"]),
                (req(cmd="bucket", iface=IF, addr="10.0.0.0/8"), "invalid", ["is not an IPv4 or IPv6 address"]),
                (req(cmd="refill", iface=IF, addr=SRC, n=2**62), "refused", ["rejected refill"]),
                (req(cmd="refill", iface=IF, addr=SRC, n=-(2**63)), "refused", ["rejected refill of -9223372036854775808"]),
                (req(cmd="refill", iface=IF, addr=SRC, n=2**63), "invalid", ['"n" is too large']),
                (req(cmd="list_add", iface=IF, list="deny", cidrs=["10.0.0.1/8"]), "invalid", ["did you mean 10.0.0.0/8?"]),
                (req(cmd="list_add", iface=IF, list="deny", cidrs=["10.0.0.0/8", "bad"]), "invalid", ["'bad'"]),
                (req(cmd="list_add", iface=IF, list="deny", cidrs=["10.0.0.0/33"]), "invalid", ["prefix length must be 0..32"]),
                (req(cmd="list_add", iface=IF, list="grey", cidrs=[]), "invalid", ['"list" must be "allow" or "deny"']),
                (req(cmd="list_add", iface=IF, list="deny", cidrs="10.0.0.0/8"), "invalid", ['"cidrs" must be an array of strings']),
                (req(cmd="list_add", iface=IF, list="deny", cidrs=[7]), "invalid", ['"cidrs" must be an array of strings']),
                (req(cmd="list_add", iface=IF, list="deny", from_fd=True), "invalid", ['"from_fd" is set but no file descriptor came with the request']),
                (req(cmd="list_add", iface=IF, list="deny", from_fd=1), "invalid", ['"from_fd" must be true or false']),
                (req(cmd="status", from_fd="yes"), "invalid", ['"from_fd" must be true or false']),
                (req(cmd="breaker", iface=IF, to="open"), "invalid", ["breaker state 'open' is not one of serving, shedding, recovering"]),
                (req(cmd="breaker", iface=IF, to="recovering"), "refused", ["invalid transition: serving -> recovering"]),
                (req(cmd="status", iface="\u0000"), "invalid", ["sluiced does not manage interface"]),
                (req(cmd="stats", iface=7), "invalid", ['"iface" must be a string']),
                (b"\xff\xfe\x00", "invalid", ["request holds a NUL byte"]),
                (b'{"cmd": "status", "iface": "\xff\xfe"}', "invalid", ["request is not valid JSON"]),
                (req(cmd="attach", iface="abcdefghijklmnopq"), "invalid", ["interface name must be 1..15 characters"]),
                (req(cmd="attach", iface="nosuchif0"), "invalid", ["unknown interface 'nosuchif0'"]),
                (req(cmd="attach", iface=IF), "refused", [f"{IF} is already attached"]),
                (req(cmd="attach", iface="lo", mode="turbo"), "invalid", ["turbo"]),
                (req(cmd="detach", iface="nosuchif0"), "invalid", ["sluiced does not manage interface 'nosuchif0'"]),
                (deep, "invalid", ["request must be a JSON object"]),
                (b'{"cmd": "status", "x": ' + b"[" * 20000 + b"]" * 20000 + b"}", None, []),
                (b"x" * 70000, "invalid", ["request line over 65536 bytes"]),
                (req(cmd="standing"), "invalid", ["'standing' needs \"iface\""]),
                (req(cmd="standing", iface=IF, addr=7), "invalid", ['"addr" must be a string']),
                (req(cmd="standing", iface=IF, addr="10.0.0.0/8"), "invalid", ["'10.0.0.0/8' is not an IPv4 or IPv6 address"]),
                (req(cmd="standing", iface=IF, addr=""), "invalid", ["'' is not an IPv4 or IPv6 address"]),
                (req(cmd="standing", iface=IF, addr="\u0000"), "invalid", ["is not an IPv4 or IPv6 address"]),
                (req(cmd="standing", iface="nosuchif0", addr=SRC), "invalid", ["sluiced does not manage interface 'nosuchif0'"]),
                (req(cmd="standing", iface=7), "invalid", ['"iface" must be a string']),
                (req(cmd="standing", iface=IF, addr=SRC), None, []),  # answered: no standing, ok
                (req(cmd="reload"), "refused", ["sluiced runs without a policy file"]),
                (req(cmd="reload", iface=7), "invalid", ['"iface" must be a string']),
                (req(cmd="reload", iface="nosuchif0"), "invalid", ["sluiced does not manage interface 'nosuchif0'"]),
                (req(cmd="explain", iface=IF), "invalid", ["'explain' needs \"src\""]),
                (req(cmd="explain", src=SRC), "invalid", ["'explain' needs \"iface\""]),
                (req(cmd="explain", iface=IF, src="10.0.0.0/8"), "invalid", ["is not an IPv4 or IPv6 address"]),
                (req(cmd="explain", iface=IF, src=""), "invalid", ["'' is not an IPv4 or IPv6 address"]),
                (req(cmd="explain", iface=IF, src=7), "invalid", ['"src" must be a string']),
                (req(cmd="explain", iface=IF, src=SRC, proto=17), "invalid", ['"proto" must be a string']),
                (req(cmd="explain", iface=IF, src=SRC, proto="udp/65536"), "invalid", ["port 65536 is outside 0..65535"]),
                (req(cmd="explain", iface=IF, src=SRC, proto="tcp-syn/"), "invalid", ["is not a number"]),
                (req(cmd="explain", iface=IF, src=SRC, proto="udp/5/3"), "invalid", ["is not a number"]),
                (req(cmd="explain", iface=IF, src=SRC, proto="\u0000"), "invalid", ["is not one of"]),
                (req(cmd="explain", iface=IF, src=SRC, proto="icmpv6/1"), "invalid", ["protocol icmpv6 has no ports"]),
                (req(cmd="explain", iface="nosuchif0", src=SRC), "refused", ["sluiced does not manage interface 'nosuchif0'"]),
                (req(cmd="explain", iface=IF, src=SRC, proto="udp/53"), None, []),  # answered
            ]
            for line, kind, words in cases:
                what = f"socket line {line[:80]!r}{'...' if len(line) > 80 else ''}"
                with self.subTest(line=line[:80]):
                    r = call(line)
                    if kind is None:  # a good request with a deep argument: answered
                        self.assertTrue(r.get("ok"), f"{what}: {r}")
                    else:
                        self.assertIs(r.get("ok"), False, f"{what}: {r}")
                        self.assertEqual(r.get("kind"), kind, f"{what}: {r}")
                        for w in words:
                            self.assertIn(w, r.get("error", ""), f"{what}: {r}")
                    f.check_unchanged(what)
                    # the same connection still answers
                    self.assertTrue(call(req(cmd="status"))["ok"], f"{what}: the connection stopped answering")
            # blank lines get no reply: the next reply is the status's
            s.sendall(b"\n   \r\n\t\n")
            self.assertTrue(call(req(cmd="status"))["ok"])
            f.check_unchanged("blank lines")
            print(f"HOSTILE control socket: {f.count} cases", file=sys.stderr)
        finally:
            if s:
                s.close()
            f.close()


class HostileCapture(unittest.TestCase):
    """`sluicectl capture` and the capture request: a bad filter, a huge
    snaplen, a path it may not write, outcomes that do not exist or cannot be
    captured, a request without its pipe or with something else in its
    place. Each is refused with the reason; the maps stay, the data plane's
    capture stays off, and no file is left or changed."""

    def setUp(self):
        require_root(self)

    def capture_off(self, f, what):
        (_, value), = pinned_raw(f.tb, "capture")
        raw = bytes(int(b, 16) for b in value)
        self.assertEqual(int.from_bytes(raw[:4], "little"), 0, f"{what}: the capture was turned on")

    def test_bad_capture_requests(self):
        f = Fixture(self, "hcap")
        s = None
        try:
            IF = f.tb.host_if
            path = os.path.join(f.tb.rundir, "hostile.pcapng")
            kept = os.path.join(f.tb.rundir, "kept.pcapng")
            with open(kept, "w") as k:
                k.write("keep")
            link = os.path.join(f.tb.rundir, "link.pcapng")
            os.symlink(kept, link)
            cases = [
                (["capture", IF, "-w", path, "udp", "and", "port", "banana"], 2,
                 ["the filter 'udp and port banana' does not compile"]),
                (["capture", IF, "-w", path, "tcp["], 2, ["does not compile"]),
                (["capture", IF, "-w", path, "--snaplen", "99999"], 2, ["--snaplen 99999 is outside 14..2048"]),
                (["capture", IF, "-w", path, "--snaplen", "99999999999999999999"], 2, ["out of range"]),
                (["capture", IF, "-w", path, "--snaplen", "13"], 2, ["--snaplen 13 is outside 14..2048"]),
                (["capture", IF, "-w", path, "--sample-every", "0"], 2, ["--sample-every 0 is outside 1..16777216"]),
                (["capture", IF, "-w", path, "--count", "0"], 2, ["--count 0 is outside 1..4294967296"]),
                (["capture", IF, "-w", path, "--duration", "0"], 2, ["--duration"]),
                (["capture", IF, "-w", path, "--duration", "x"], 2, ["--duration"]),
                (["capture", IF, "-w", path, "--outcome", "drop_everything"], 2,
                 ["no outcome is named 'drop_everything'"]),
                (["capture", IF, "-w", path, "--outcome", ""], 2, ["no outcome is named ''"]),
                (["capture", IF, "-w", path, "--outcome", "non_ip"], 2,
                 ["non_ip and would_drop cannot be captured"]),
                (["capture", IF, "-w", path, "%value%"], 2, ["holds '%value%'"]),
                (["capture", IF], 2, ["missing -w FILE"]),
                (["capture", IF, "-w", "/proc/sluice-capture.pcapng"], 1, ["cannot write /proc/sluice-capture.pcapng"]),
                (["capture", IF, "-w", "/nonexistent/dir/x.pcapng"], 1,
                 ["cannot write /nonexistent/dir/x.pcapng: No such file or directory"]),
                (["capture", IF, "-w", f.tb.rundir], 1, [f"cannot write {f.tb.rundir}: a directory"]),
                # an existing file is never overwritten silently; a symbolic
                # link is never followed, --force or not; the mode is asked
                (["capture", IF, "-w", kept], 1, [f"cannot write {kept}: it exists; give --force"]),
                (["capture", IF, "-w", link], 1, [f"cannot write {link}: a symbolic link"]),
                (["capture", IF, "-w", link, "--force"], 1, [f"cannot write {link}: a symbolic link"]),
                (["capture", IF, "-w", path, "--file-mode", "0777"], 2, ["--file-mode 0777", "at most 0666"]),
                (["capture", IF, "-w", path, "--file-mode", "rw"], 2, ["--file-mode rw"]),
                (["capture", "nosuchif0", "-w", path], 2, ["sluiced does not manage interface 'nosuchif0'"]),
                (["capture", "nosuchif0", "-w", kept, "--force"], 2, ["sluiced does not manage interface 'nosuchif0'"]),
                (["capture", "abcdefghijklmnopq", "-w", path], 2, ["is not an interface name"]),
            ]
            for argv, want_rc, words in cases:
                with self.subTest(argv=argv):
                    rc, out, err = f.ctl(*argv)
                    f.expect(f"sluicectl {argv!r}", rc, out, err, want_rc, *words)
                    f.check_unchanged(f"sluicectl {argv!r}")
                    self.capture_off(f, f"sluicectl {argv!r}")
                    self.assertFalse(os.path.exists(path), f"sluicectl {argv!r} left {path}")
                    with open(kept) as k:
                        self.assertEqual(k.read(), "keep", f"sluicectl {argv!r} changed an existing file")

            # the request itself, raw on the socket, with and without its pipe
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(CASE_TIMEOUT)
            s.connect(f.tb.socket)
            buf = [b""]

            def call(line, fds=()):
                if fds:
                    socket.send_fds(s, [line + b"\n"], list(fds))
                else:
                    s.sendall(line + b"\n")
                while b"\n" not in buf[0]:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise AssertionError(f"sluiced closed the connection after {line[:100]!r}")
                    buf[0] += chunk
                reply, buf[0] = buf[0].split(b"\n", 1)
                return json.loads(reply)

            def req(**kw):
                return json.dumps(dict(cmd="capture", iface=IF, **kw)).encode()

            good = dict(outcomes=["drop_rate"], snaplen=128, sample_every=1)
            rd, wr = os.pipe()
            regular = os.open(os.path.join(f.tb.rundir, "regular.bin"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                socket_cases = [
                    (req(**good), (), ["needs the write end of a pipe"]),
                    (req(from_fd=True, **good), (), ['"from_fd" is set but no file descriptor came with the request']),
                    (req(from_fd=True, outcomes=["drop_rate"], snaplen=2**40, sample_every=1), (wr,),
                     ['"snaplen" 1099511627776 is outside 14..2048']),
                    (req(from_fd=True, outcomes=["drop_rate"], snaplen=128, sample_every=2**40), (wr,),
                     ['"sample_every" 1099511627776 is outside 1..16777216']),
                    (req(from_fd=True, outcomes=["nope"], snaplen=128, sample_every=1), (wr,),
                     ["no outcome is named 'nope'"]),
                    (req(from_fd=True, outcomes=[], snaplen=128, sample_every=1), (wr,), ["no outcome to capture"]),
                    (req(from_fd=True, outcomes=["would_drop"], snaplen=128, sample_every=1), (wr,),
                     ["cannot be captured"]),
                    (req(from_fd=True, outcomes="drop_rate", snaplen=128, sample_every=1), (wr,),
                     ['"outcomes" must be an array of strings']),
                    (req(from_fd=True, outcomes=["drop_rate"], snaplen="128", sample_every=1), (wr,),
                     ['"snaplen" must be an integer']),
                    (req(from_fd=True, **good), (regular,), ["is not the write end of a pipe"]),
                    (req(from_fd=True, **good), (rd,), ["is not the write end of a pipe"]),
                    (json.dumps(dict(cmd="capture", iface="nosuchif0", from_fd=True, **good)).encode(), (wr,),
                     ["sluiced does not manage interface 'nosuchif0'"]),
                    (req(from_fd=True, count=0, **good), (wr,), ['"count"']),
                    (req(from_fd=True, duration_ms=-5, **good), (wr,), ['"duration_ms"']),
                ]
                for line, fds, words in socket_cases:
                    what = f"socket line {line[:100]!r}"
                    with self.subTest(line=line[:100]):
                        r = call(line, fds)
                        self.assertIs(r.get("ok"), False, f"{what}: {r}")
                        self.assertEqual(r.get("kind"), "invalid", f"{what}: {r}")
                        for w in words:
                            self.assertIn(w, r.get("error", ""), f"{what}: {r}")
                        f.check_unchanged(what)
                        self.capture_off(f, what)
                        self.assertTrue(call(json.dumps(dict(cmd="status")).encode())["ok"])
                # A raw client that starts a capture and never renews it holds
                # the interface no longer than the lease: sluiced ends it,
                # says why on the pipe, and the interface is free again. A
                # renewal from another process is refused.
                prd, pwr = os.pipe()
                try:
                    r = call(req(from_fd=True, **good), (pwr,))
                    os.close(pwr)
                    pwr = -1
                    self.assertIs(r.get("ok"), True, r)
                    t0 = time.monotonic()
                    other = json.loads(subprocess.run(
                        [sys.executable, "-c",
                         "import socket, sys\n"
                         "c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])\n"
                         "c.sendall(sys.argv[2].encode() + b'\\n'); print(c.makefile().readline())\n",
                         f.tb.socket, json.dumps({"cmd": "capture_renew", "iface": IF})],
                        capture_output=True, text=True, timeout=CASE_TIMEOUT).stdout)
                    self.assertIs(other.get("ok"), False, other)
                    self.assertIn("only the process that holds it", other.get("error", ""), other)
                    got = b""
                    while True:  # until sluiced closes its end (EOF)
                        chunk = os.read(prd, 65536)
                        if not chunk:
                            break
                        got += chunk
                    held = time.monotonic() - t0
                    print(f"HOSTILE capture: a raw client that never renews held it {held:.1f} s", file=sys.stderr)
                    self.assertLess(held, 5 + 3, "ended within the lease and a period")
                    self.assertGreater(held, 4, "not before the lease ran out")
                    self.assertIn(b"stopped renewing", got)
                    self.capture_off(f, "the lease ran out")
                    self.assertIn("stopped renewing", f.d.output())
                finally:
                    os.close(prd)
                    if pwr >= 0:
                        os.close(pwr)
            finally:
                for fd in (rd, wr, regular):
                    os.close(fd)
            print(f"HOSTILE capture: {f.count} cases", file=sys.stderr)
        finally:
            if s:
                s.close()
            f.close()


class Targeting(unittest.TestCase):
    """What an attacker would need to aim at one source's buckets: the hash
    key. It is drawn anew at every load, and only root can read it."""

    def setUp(self):
        require_root(self)

    def test_hash_key_is_fresh_per_load_and_root_only(self):
        with Testbed("hkey") as tb:
            keys, slots = [], []
            for _ in range(2):
                with Daemon(tb, "--period", "0.2", "--table-size", "65536"):
                    raw = bytes(int(b, 16) for b in bpftool_json(
                        "map", "dump", "pinned", os.path.join(tb.pin_dir, tb.host_if, "settings"))[0]["value"])
                    keys.append(raw[:16])
                    slots.append(ctl_json(tb, "bucket", tb.host_if, SRC)["slots"])
                    settings = os.path.join(tb.pin_dir, tb.host_if, "settings")
                    mode = os.stat(settings).st_mode & 0o777
                    rc, out, err = run_raw(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                            "bpftool", "-j", "map", "dump", "pinned", settings])
                    ctl(tb, "detach", tb.host_if, check=True)
            print(f"HOSTILE hash key: two loads, keys differ: {keys[0] != keys[1]}, slots of {SRC}: {slots}, "
                  f"settings pin mode {oct(mode)}, read as nobody: exit {rc}", file=sys.stderr)
            self.assertNotEqual(keys[0], keys[1], "a fresh key at every load")
            self.assertNotIn(bytes(16), keys)
            self.assertNotEqual(slots[0], slots[1], "and so other slots for the same source")
            self.assertEqual(mode & 0o077, 0, "the pins are root's alone")
            self.assertNotEqual(rc, 0, "nobody cannot read the key")
            self.assertNotIn(keys[1].hex()[:8], out)


if __name__ == "__main__":
    main()
