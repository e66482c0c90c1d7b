"""`sluicectl capture`: the frames sluice drops (or passes) on an interface,
copied by the data plane while a capture runs, streamed by sluiced to
sluicectl over a pipe passed on the control socket, filtered with libpcap and
written as pcapng (the outcome in each frame's comment) or pcap. Read back
with tcpdump and tshark: the frames are the floods' (addresses, ports,
lengths), the outcomes match the counters. One capture per interface; a
daemon stopped, killed or restarted during a capture ends it with a clear
error, and the data plane stops copying (the lease, the perf array's
entries); a full disk is an error with its exit code."""

import json
import os
import signal
import struct
import subprocess
import time
import unittest

from sluice_netns import (SLUICECTL, Daemon, Testbed, bpftool_json, counters, ctl, ctl_json, main, pinned_value, require_root, run,
                          send, wait_until)

import sluice_abi  # noqa: E402 (on the path sluice_netns sets: bpf/sluice_abi.py)

HEAVY = "198.18.3.7"     # the single-source flood
CLIENT = "198.18.5.5"    # a client under its limit
DROPPED = tuple(n for _, n, v in sluice_abi.outcomes() if v == "dropped") + ("malformed",)
ARGS = ("--rate", "100", "--burst", "100", "--period", "0.2", "--newcomer-pps", "0")


def capture(tb, *args, stdout=subprocess.PIPE):
    """sluicectl capture in the host namespace, in the background; returns
    once it says it is capturing (or has exited)."""
    cmd = ["ip", "netns", "exec", tb.ns_host, SLUICECTL, "--socket", tb.socket, "capture", tb.host_if] + list(args)
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    first = p.stderr.readline()
    return p, first


def finish(p, timeout=60):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def control_word(tb):
    """The pinned struct sluice_capture: (outcome_mask, sample_every, snaplen, lease_ns, generation)."""
    c = sluice_abi.unpack("sluice_capture", pinned_value(tb, "capture"))
    return c["outcome_mask"], c["sample_every"], c["snaplen"], c["lease_ns"], c["generation"]


def pinned_stats(tb):
    """The program's capture counts (struct sluice_capture_stats), all CPUs,
    for the generation in the control word."""
    generation = control_word(tb)[4]
    path = os.path.join(tb.pin_dir, tb.host_if, "capture_stats")
    v = bpftool_json("map", "lookup", "pinned", path, "key", "0", "0", "0", "0")
    total = {"matched": 0, "copied": 0, "lost": 0}
    for cpu in v["values"]:
        one = sluice_abi.unpack("sluice_capture_stats", bytes(int(b, 16) for b in cpu["value"]))
        if one["generation"] == generation:
            for k in total:
                total[k] += one[k]
    return total


def tshark_fields(path, *fields):
    p = run(["tshark", "-r", path, "-T", "fields", "-E", "separator=|"] + [a for f in fields for a in ("-e", f)],
            check=False)
    if p.returncode != 0:
        raise AssertionError(f"tshark -r {path} exited {p.returncode}: {p.stderr}")
    return [line.split("|") for line in p.stdout.splitlines() if line]


def tcpdump_lines(path):
    p = run(["tcpdump", "-nn", "-r", path], check=False)
    if p.returncode != 0:
        raise AssertionError(f"tcpdump -r {path} exited {p.returncode}: {p.stderr}")
    return p.stdout.splitlines()


class Capture(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_floods_captured_read_back_by_tcpdump_and_tshark_outcomes_match_counters(self):
        with Testbed("cap") as tb, Daemon(tb, *ARGS):
            path = os.path.join(tb.rundir, "drops.pcapng")
            before = counters(tb)
            p, first = capture(tb, "-w", path, "-j")
            self.assertIn("capturing", first)
            self.assertIn("drop_rate", first)
            try:
                # the single-source flood: 100 pass (its burst), the rest drop_rate
                sent = send(tb, 1500, HEAVY, size=100)
                self.assertEqual(sent["sent"], 1500)
                # the spoofed flood, shed: random sources, every one drop_shed
                ctl(tb, "breaker", "trip", tb.host_if, check=True)
                sent = send(tb, 1000, "random", size=80)
                self.assertEqual(sent["sent"], 1000)
                time.sleep(0.8)  # the last frames through the pipe, the counts sent
            finally:
                p.send_signal(signal.SIGINT)
                rc, out, err = finish(p)
            after = counters(tb)
            self.assertEqual(rc, 0, err)
            summary = json.loads(out)
            self.assertEqual(summary["ended"], "interrupted")
            self.assertEqual(summary["lost_ring"] + summary["lost_pipe"], 0, summary)
            self.assertEqual(summary["filtered"], 0)

            rate = after["drop_rate"] - before["drop_rate"]
            shed = after["drop_shed"] - before["drop_shed"]
            dropped = sum(after[o] - before[o] for o in DROPPED)
            self.assertGreater(rate, 1300)  # 1500 less the burst, and what refilled meanwhile
            self.assertGreaterEqual(shed, 1000)
            # tcpdump reads it: every frame; the heavy flood's UDP to the host
            lines = tcpdump_lines(path)
            self.assertEqual(len(lines), summary["written"])
            self.assertEqual(summary["written"], dropped)
            self.assertEqual(summary["matched"], dropped)
            # tshark reads it: the addresses, ports, lengths and each frame's outcome
            rows = tshark_fields(path, "ip.src", "ip.dst", "udp.srcport", "udp.dstport", "frame.len",
                                 "frame.cap_len", "frame.comment")
            self.assertEqual(len(rows), dropped)
            by_outcome, heavy, spoofed = {}, 0, 0
            for src, dst, sport, dport, flen, caplen, comment in rows:
                self.assertTrue(comment.startswith("sluice: "), comment)
                outcome = comment.split()[1]
                by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
                if (dst, sport, dport) != (tb.host_ip4, "40000", "9"):
                    continue  # the namespaces' own frames (IPv6 ND while shedding): counted alike
                if outcome == "drop_rate":
                    self.assertEqual((src, flen, caplen), (HEAVY, "100", "100"))
                    heavy += 1
                else:
                    self.assertEqual(outcome, "drop_shed", comment)
                    self.assertTrue(src.startswith(("198.18.", "198.19.")), src)
                    self.assertEqual((flen, caplen), ("80", "80"))
                    spoofed += 1
            self.assertEqual(heavy, rate)
            self.assertEqual(spoofed, 1000)
            self.assertEqual(sum(f"{HEAVY}.40000 > {tb.host_ip4}.9: UDP" in line for line in lines), rate)
            # the outcomes match the counters (sample rate 1, nothing lost)
            self.assertEqual(by_outcome, {o: after[o] - before[o] for o in DROPPED if after[o] - before[o]})
            # the file: one interface, Ethernet, the snaplen
            p = run(["tshark", "-r", path, "-T", "fields", "-e", "frame.interface_name", "-c", "1"], check=False)
            self.assertEqual(p.stdout.strip(), tb.host_if)
            # the capture is off again
            self.assertEqual(control_word(tb)[0], 0)

    def test_filter_count_duration_sampling_passed_pcap_and_stdout(self):
        with Testbed("capf") as tb, Daemon(tb, *ARGS):
            d = tb.rundir
            # the filter expression holds: only the heavy source's frames written
            path = os.path.join(d, "filtered.pcapng")
            p, first = capture(tb, "-w", path, "-j", "--duration", "3", "src", "host", HEAVY)
            self.assertIn(f"filter 'src host {HEAVY}'", first)
            send(tb, 600, HEAVY, size=90)
            send(tb, 600, "198.18.3.8", size=90)
            rc, out, err = finish(p)
            self.assertEqual(rc, 0, err)
            s = json.loads(out)
            self.assertEqual(s["ended"], "--duration 3 s reached")
            self.assertGreater(s["written"], 400)
            self.assertGreater(s["filtered"], 400)
            self.assertEqual(s["written"] + s["filtered"], s["received"])
            self.assertEqual(s["received"], s["matched"])
            rows = tshark_fields(path, "ip.src")
            self.assertEqual(len(rows), s["written"])
            self.assertEqual({r[0] for r in rows}, {HEAVY})

            # --count stops it after N frames written
            path = os.path.join(d, "count.pcapng")
            p, first = capture(tb, "-w", path, "-j", "--count", "25")
            send(tb, 300, HEAVY, size=90)
            rc, out, err = finish(p)
            self.assertEqual(rc, 0, err)
            s = json.loads(out)
            self.assertEqual((s["written"], s["ended"]), (25, "--count 25 reached"))
            self.assertEqual(len(tcpdump_lines(path)), 25)
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600, "a new file is the caller's alone")
            # an existing file: refused, then overwritten with --force
            p, first = capture(tb, "-w", path, "-j", "--count", "5")
            rc, out, err = finish(p)
            self.assertEqual(rc, 1, err)
            self.assertIn("give --force", first + err)
            self.assertEqual(len(tcpdump_lines(path)), 25, "the refused capture left the file as it was")
            p, first = capture(tb, "-w", path, "-j", "--count", "5", "--force")
            send(tb, 100, HEAVY, size=90)
            rc, out, err = finish(p)
            self.assertEqual(rc, 0, err)
            self.assertEqual(len(tcpdump_lines(path)), 5, "--force: the file holds the new capture alone")

            # --duration stops it with nothing to capture, on time
            t0 = time.monotonic()
            p, _ = capture(tb, "-w", os.path.join(d, "quiet.pcapng"), "-j", "--duration", "1", "--file-mode", "0640")
            rc, out, err = finish(p)
            self.assertEqual(os.stat(os.path.join(d, "quiet.pcapng")).st_mode & 0o777, 0o640, "--file-mode 0640")
            took = time.monotonic() - t0
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["written"], 0)
            self.assertGreater(took, 0.9)
            self.assertLess(took, 5)

            # --sample-every 10: one in ten per CPU, the data plane's own count
            path = os.path.join(d, "sampled.pcapng")
            before = counters(tb)
            p, _ = capture(tb, "-w", path, "-j", "--sample-every", "10", "--duration", "3")
            send(tb, 1000, HEAVY, size=90)
            rc, out, err = finish(p)
            after = counters(tb)
            self.assertEqual(rc, 0, err)
            s = json.loads(out)
            dropped = sum(after[o] - before[o] for o in DROPPED)
            self.assertEqual(s["matched"], dropped)
            self.assertGreaterEqual(s["written"], dropped // 10)
            self.assertLessEqual(s["written"], dropped // 10 + os.cpu_count())
            self.assertEqual(len(tcpdump_lines(path)), s["written"])

            # --passed: a client under its limit, its frames passed, outcome passed
            path = os.path.join(d, "passed.pcapng")
            p, _ = capture(tb, "-w", path, "-j", "--outcome", "passed", "--duration", "3")
            send(tb, 20, CLIENT, size=70)
            rc, out, err = finish(p)
            self.assertEqual(rc, 0, err)
            rows = tshark_fields(path, "ip.src", "frame.len", "frame.comment")
            self.assertEqual(len(rows), 20)
            self.assertTrue(all(r[0] == CLIENT and r[1] == "70" and r[2].startswith("sluice: passed ") for r in rows),
                            rows[:3])

            # classic pcap, and a snaplen shorter than the frames
            path = os.path.join(d, "classic.pcap")
            p, _ = capture(tb, "-w", path, "-j", "--pcap", "--snaplen", "40", "--count", "5")
            send(tb, 200, HEAVY, size=300)
            rc, out, err = finish(p)
            self.assertEqual(rc, 0, err)
            with open(path, "rb") as f:
                self.assertEqual(f.read(4), struct.pack("<I", 0xA1B23C4D))
            rows = tshark_fields(path, "frame.len", "frame.cap_len", "ip.src")
            self.assertEqual(rows, [["300", "40", HEAVY]] * 5)

            # -w - streams to a pipe: tcpdump -r - reads it as it comes
            cmd = (f"ip netns exec {tb.ns_host} {SLUICECTL} --socket {tb.socket} capture {tb.host_if} -w - "
                   f"--count 30 | tcpdump -nn -r -")
            pipe = subprocess.Popen(["bash", "-o", "pipefail", "-c", cmd], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            time.sleep(1)
            send(tb, 300, HEAVY, size=90)
            out, err = pipe.communicate(timeout=30)
            self.assertEqual(pipe.returncode, 0, err)
            self.assertEqual(sum(f"{HEAVY}.40000 >" in line for line in out.splitlines()), 30, out)
            self.assertIn("30 frames written to stdout", err)

    def test_one_capture_per_interface_and_the_daemon_going_away(self):
        with Testbed("capd") as tb:
            d = Daemon(tb, *ARGS).start()
            try:
                path = os.path.join(tb.rundir, "a.pcapng")
                a, first = capture(tb, "-w", path, "-j")
                self.assertIn("capturing", first)
                mask, every, snaplen, lease, gen = control_word(tb)
                self.assertNotEqual(mask, 0)
                self.assertEqual((every, snaplen), (1, 128))
                # a second sluicectl is refused with the reason, the first goes on
                b = ctl(tb, "capture", tb.host_if, "-w", os.path.join(tb.rundir, "b.pcapng"))
                self.assertEqual(b.returncode, 1, b.stderr)
                self.assertIn("a capture is running already, by uid 0 pid", b.stderr)
                self.assertIn("one capture per interface at a time", b.stderr)
                self.assertFalse(os.path.exists(os.path.join(tb.rundir, "b.pcapng")))
                self.assertIsNone(a.poll())
                send(tb, 300, HEAVY)
                time.sleep(0.5)
                # sluiced stopped (SIGTERM): the capture ends, saying why, exit 1
                d.kill(signal.SIGTERM)
                rc, out, err = finish(a)
                self.assertEqual(rc, 1, err)
                self.assertIn("sluiced ended the capture: sluiced is exiting", err)
                s = json.loads(out)
                self.assertGreater(s["written"], 150)
                self.assertEqual(len(tcpdump_lines(path)), s["written"])
                self.assertEqual(control_word(tb)[0], 0)

                # restarted: captures again (over the first file: --force);
                # then SIGKILLed during a capture
                d = Daemon(tb, *ARGS).start()
                a, first = capture(tb, "-w", path, "--force")
                self.assertIn("capturing", first)
                send(tb, 300, "198.18.3.9")
                time.sleep(0.5)
                d.kill(signal.SIGKILL)
                rc, _, err = finish(a)
                self.assertEqual(rc, 1, err)
                self.assertIn("sluiced went away without ending the capture", err)
                # left on by the killed daemon, but nothing is copied: the perf
                # array's entries went with its file; past the lease the first
                # frame turns it off
                mask, _, _, lease, gen = control_word(tb)
                self.assertNotEqual(mask, 0)
                stats = pinned_stats(tb)
                send(tb, 300, "198.18.3.9")  # over the burst refilled meanwhile: drops
                after = pinned_stats(tb)
                self.assertEqual(after["copied"], stats["copied"])
                self.assertGreater(after["lost"], stats["lost"])
                wait_until(lambda: time.monotonic_ns() > lease, 10, what="the lease to pass")
                send(tb, 300, "198.18.3.9")  # the first frame of an outcome asked for ends it
                self.assertEqual(control_word(tb)[0], 0)
                # a new daemon adopts the pins and captures again
                d = Daemon(tb, *ARGS).start()
                self.assertIn("adopted pins", d.output())
                a, first = capture(tb, "-w", path, "-j", "--count", "3", "--force", stdout=subprocess.PIPE)
                send(tb, 300, "198.18.3.10")
                rc, out, err = finish(a)
                self.assertEqual(rc, 0, err)
                self.assertEqual(json.loads(out)["written"], 3)
                self.assertGreater(control_word(tb)[4], gen)
            finally:
                d.kill(signal.SIGTERM)

    def test_full_disk_is_an_error_and_ends_the_capture(self):
        with Testbed("capfull") as tb, Daemon(tb, *ARGS):
            small = os.path.join(tb.rundir, "small")
            os.makedirs(small, exist_ok=True)
            # a 64 KiB tmpfs in the mount namespace `ip netns exec` makes: gone with it
            cmd = (f"mount -t tmpfs -o size=64k sluice-capture-test {small} && "
                   f"exec {SLUICECTL} --socket {tb.socket} capture {tb.host_if} -w {small}/full.pcapng "
                   f"--snaplen 2048")
            p = subprocess.Popen(["ip", "netns", "exec", tb.ns_host, "sh", "-c", cmd], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            self.assertIn("capturing", p.stderr.readline())
            send(tb, 400, HEAVY, size=1400)
            rc, _, err = finish(p)
            self.assertEqual(rc, 1, err)
            self.assertIn("No space left on device", err)
            self.assertIn("frames written", err)
            wait_until(lambda: control_word(tb)[0] == 0, 5, what="the capture to end")
            self.assertTrue(ctl_json(tb, "status")["interfaces"])


if __name__ == "__main__":
    main()
