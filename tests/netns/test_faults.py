"""Faults: what sluice does when its daemon is killed or stopped, when the
pin directory is not on a BPF filesystem, when its control socket is
stormed, when someone who may not use the socket tries.

Beyond test_control_plane (one SIGKILL and a restart, nothing flowing) and
test_e2e (one SIGKILL mid-flood, the enforcement gap): here the daemon is
SIGKILLed three times in a row under a flood of random sources while the
breaker is half-way up its recovery ramp, and every restart must adopt the
ramp where it was (not restart it, not skip it), the buckets word for word,
the counters (never reset), the hash key and the program -- which is on the
interface in every sample (~every 10 ms) from the first kill to the last
restart; a SIGKILL between a list update and its flag in the config map
(the crash window of `deny add`) is repaired by the next daemon; SIGTERM under
load exits 0 promptly, frees the socket and the lock, leaves enforcement on.

Each test prints one line "FAULTS <name>: ..." with what it measured (stderr)."""

import json
import multiprocessing
import os
import queue
import random
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import unittest

from sluice_netns import (SLUICECTL, SLUICED, Daemon, Testbed, Traffic, XdpSampler, bpftool_json, counters, ctl,
                          counters_after, ctl_json, main, pinned_config, pinned_settings, real_pid, require_root,
                          run, send, settle, vm_rss_kib, wait_until, xdp_prog_id)


def report(name, **kv):
    print(f"FAULTS {name}: " + ", ".join(f"{k}={v}" for k, v in kv.items()), file=sys.stderr, flush=True)


# The four kinds of client in the control socket storm. Each runs as
# `count` threads in a process of its own (storm_clients) until `stop`, then
# puts what it counted on `results`.
def _storm_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(path)
    return s


_rng = random.Random(7)
STORM_JUNK = [bytes(_rng.getrandbits(8) for _ in range(_rng.randint(1, 3000))) for _ in range(64)]
STORM_JUNK += [b"{" * 5000 + b"\n", b"\x00\xff\n", b'{"cmd": "status", "from_fd": 1}\n', b"[]\n" * 100,
               b'{"cmd": "set", "iface": "x", "rate": -1}\n', "\u2603\n".encode() * 50]


def _storm_garbage(i, path, stop, bump):
    """Connects, sends junk (reading what comes back), leaves, comes back."""
    r = random.Random(i)
    while not stop.is_set():
        try:
            s = _storm_connect(path)
            s.setblocking(False)
            for _ in range(r.randint(1, 50)):
                if stop.is_set():
                    break
                try:
                    s.send(r.choice(STORM_JUNK))
                    bump("garbage_sent")
                    s.recv(1 << 16)
                except (BlockingIOError, InterruptedError):
                    time.sleep(0.005)
            s.close()
        except OSError:
            bump("connect_errors")
            time.sleep(0.05)


def _storm_endless(i, path, stop, bump):
    """Streams one line that never ends."""
    while not stop.is_set():
        try:
            s = _storm_connect(path)
            s.settimeout(0.2)
            chunk = b"x" * 8192
            while not stop.is_set():
                try:
                    s.send(chunk)
                    bump("endless_sent")
                except socket.timeout:
                    pass
            s.close()
        except OSError:
            bump("disconnects")
            time.sleep(0.05)


def _storm_pipeline(i, path, stop, bump):
    """Pipelines requests and never reads a reply."""
    req = b'{"cmd": "status"}\n' * 256
    while not stop.is_set():
        try:
            s = _storm_connect(path)
            s.settimeout(0.2)
            while not stop.is_set():
                try:
                    s.send(req)
                    bump("pipelined_sent", 256)
                except socket.timeout:
                    pass
            s.close()
        except OSError:  # disconnected for owing too much: come back
            bump("disconnects")
            time.sleep(0.05)


def _storm_silent(i, path, stop, bump):
    """Connects and says nothing."""
    try:
        s = _storm_connect(path)
        stop.wait()
        s.close()
    except OSError:
        bump("connect_errors")


STORM_CLIENTS = {"garbage": _storm_garbage, "endless": _storm_endless, "pipeline": _storm_pipeline,
                 "silent": _storm_silent}


def storm_clients(kind, count, path, stop, results):
    stats = {"garbage_sent": 0, "endless_sent": 0, "pipelined_sent": 0, "disconnects": 0, "connect_errors": 0}
    lock = threading.Lock()

    def bump(k, n=1):
        with lock:
            stats[k] += n

    threads = [threading.Thread(target=STORM_CLIENTS[kind], args=(i, path, stop, bump), daemon=True)
               for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=15)
    results.put(stats)


def flood_bg(tb, pps, duration, src=None):
    """A flood injected straight into veth-host's program: from random IPv4
    sources, or from `src`."""
    source = ["--src", src] if src else ["--random-src"]
    return Traffic(tb.inject_ns, "flood", "--iface", tb.inject_if, "--dst-mac", tb.inject_dst_mac,
                   "--dst", tb.host_ip4, *source, "--pps", pps, "--duration", duration)


def all_slots(tb):
    """Every slot's raw word, from the pinned table (one bpftool call)."""
    out = {}
    for e in bpftool_json("map", "dump", "pinned", os.path.join(tb.pin_dir, tb.host_if, "slots")):
        k = e["key"]
        idx = int.from_bytes(bytes(int(b, 16) for b in k), "little") if isinstance(k, list) else int(k)
        v = e["value"]
        out[idx] = bytes(int(b, 16) for b in v).hex() if isinstance(v, list) else json.dumps(v)
    return out


def max_gap(samples, prog):
    """The longest stretch (s) over which the samples did not show `prog`,
    and how many samples did not."""
    gap, start, bad = 0.0, None, 0
    for t, p in samples:
        if p != prog:
            bad += 1
            start = t if start is None else start
            gap = max(gap, t - start)
        else:
            start = None
    return gap, bad


def daemon_pid(d):
    return real_pid(d.proc.pid, "sluiced")


def is_sanitized(path):
    """Is this sluiced built with AddressSanitizer (scripts/test.sh's build-fuzz)?"""
    try:
        with open(path, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


class Faults(unittest.TestCase):
    def setUp(self):
        require_root(self)

    # ------------------------------------------------------------------ SIGKILL

    def test_sigkill_three_times_mid_ramp_under_flood(self):
        RAMP_S, PERIOD = 30, 0.1
        with Testbed("fkill") as tb:
            # the daemon's own options (not pinned): given again at every restart
            policy = ("--period", str(PERIOD), "--table-size", "1024", "--recovery", str(RAMP_S),
                      "--recovery-start", "10", "--trip-pps", "100000000")
            d = Daemon(tb, "--rate", "50", "--burst", "100", *policy).start()
            try:
                prog = xdp_prog_id(tb)
                key = pinned_settings(tb)[:16]
                # The breaker half-way up a ramp: tripped and recovering by hand,
                # the ramp then run by the policy, one step a period.
                ctl(tb, "breaker", "trip", tb.host_if, check=True)
                ctl(tb, "breaker", "recover", tb.host_if, check=True)
                t_ramp0 = time.monotonic()
                wait_until(lambda: pinned_config(tb)["admission_ppm"] > 150000, 10, what="the ramp to rise")
                cycles = []
                with XdpSampler(tb, interval=0.01) as sampler, flood_bg(tb, 20000, 60) as flood:
                    wait_until(lambda: counters(tb)["drop_rate"] > 2000, 20, what="the flood to be rate-dropped")
                    t_first_kill = time.monotonic()
                    for cycle in range(3):
                        time.sleep(random.uniform(0.3, 0.8))
                        before = counters(tb)
                        os.kill(daemon_pid(d), signal.SIGKILL)
                        d.proc.wait(timeout=20)
                        t_kill = time.monotonic()
                        cfg_before = pinned_config(tb)  # as the dead daemon left it
                        # down: the program still counts (and drops) every frame
                        time.sleep(random.uniform(0.2, 0.5))
                        down = counters(tb)
                        cfg_down = pinned_config(tb)
                        slots_down = None
                        if cycle == 2:
                            # the buckets, read with nothing flowing, must come back word for word
                            flood.stop()
                            flood.result()
                            time.sleep(0.1)
                            slots_down = all_slots(tb)
                        d = Daemon(tb, *policy).start()  # no --rate/--burst: the pinned ones stay
                        t_up = time.monotonic()
                        after = counters(tb)
                        st = ctl_json(tb, "status")["interfaces"][0]
                        cfg_after = pinned_config(tb)
                        self.assertIn("adopted pins", d.output())
                        self.assertEqual(st["prog_id"], prog)
                        self.assertEqual(pinned_settings(tb)[:16], key, "the hash key survives")
                        self.assertEqual((st["rate_pps"], st["burst"]), (50, 100))
                        self.assertEqual(st["breaker"]["state"], "recovering")
                        # counters never go back; frames kept being counted while no daemon ran
                        for k in before:
                            self.assertLessEqual(before[k], down[k], k)
                            self.assertLessEqual(down[k], after[k], k)
                        if cycle < 2:
                            self.assertGreater(down["drop_rate"] + down["passed"],
                                               before["drop_rate"] + before["passed"],
                                               "the program kept judging frames while the daemon was dead")
                        # the ramp: frozen while no daemon ran, then resumed where the clock says
                        self.assertEqual(cfg_down["admission_ppm"], cfg_before["admission_ppm"])
                        elapsed = time.monotonic() - t_ramp0
                        want = 100000 + 900000 * elapsed / RAMP_S
                        wait_until(lambda: pinned_config(tb)["admission_ppm"] > cfg_down["admission_ppm"], 5,
                                   what="the adopted ramp to go on rising")
                        ppm = pinned_config(tb)["admission_ppm"]
                        self.assertGreaterEqual(ppm, cfg_down["admission_ppm"], "the ramp did not restart")
                        self.assertLess(abs(ppm - want), 900000 * 2.0 / RAMP_S,
                                        f"admission {ppm} ppm {elapsed:.1f} s into a {RAMP_S} s ramp, want ~{want:.0f}")
                        if slots_down is not None:
                            self.assertEqual(all_slots(tb), slots_down, "every bucket adopted word for word")
                        cycles.append({"down_s": round(t_up - t_kill, 3), "ppm_before": cfg_before["admission_ppm"],
                                       "ppm_after": ppm, "judged_while_down": down["drop_rate"] + down["passed"] -
                                       before["drop_rate"] - before["passed"]})
                    t_last_up = t_up
                    time.sleep(0.1)
                    samples = sampler.stop()
                gap, bad = max_gap(samples, prog)
                ts = [t for t, _ in samples]
                steps = sorted(b - a for a, b in zip(ts, ts[1:]))
                report("sigkill x3 mid-ramp", prog=prog, samples=len(samples), absent_or_other=bad, max_gap_s=gap,
                       sample_step_median_ms=round(1000 * steps[len(steps) // 2], 1),
                       sample_step_max_ms=round(1000 * steps[-1], 1), cycles=cycles)
                self.assertLess(ts[0], t_first_kill)
                self.assertGreater(ts[-1], t_last_up)
                self.assertEqual(bad, 0, f"samples without program {prog}: {sorted(set(p for _, p in samples), key=str)}")
                self.assertEqual(gap, 0.0)
                self.assertLess(steps[len(steps) // 2], 0.05, "sampled about every 10 ms (median)")
            finally:
                d.kill(signal.SIGTERM)

    def test_sigkill_between_list_update_and_its_flag_is_repaired(self):
        """`deny add` writes the list, then the flag in the config map that
        tells the program to look it up. A SIGKILL between the two leaves a
        list that is not enforced; the next daemon must see the list and set
        the flag (sync on adoption). The state is made by hand: the entry
        written straight into the pinned trie with bpftool, no flag."""
        with Testbed("fflag") as tb:
            d = Daemon(tb, "--rate", "1000", "--burst", "1000", "--period", "0.2").start()
            try:
                d.kill(signal.SIGKILL)
                self.assertEqual(pinned_config(tb)["policy_flags"], 0)
                deny_v4 = os.path.join(tb.pin_dir, tb.host_if, "deny_v4")
                # sluice_lpm_v4: prefixlen 8 + 24, set 0, the address, padding.
                run(["bpftool", "map", "update", "pinned", deny_v4, "key", "32", "0", "0", "0", "0", "198", "18", "44",
                     "0", "0", "0", "0", "value", "1"])
                settle(tb)
                before = counters(tb)
                send(tb, 5, "198.18.44.9")
                self.assertEqual(counters_after(tb, before, 5)["passed"] - before["passed"], 5,
                                 "the crash window: listed, not enforced")
                d = Daemon(tb, "--period", "0.2").start()
                self.assertEqual(ctl_json(tb, "deny", "list", tb.host_if)["cidrs"], ["198.18.44.0/24"])
                flags = pinned_config(tb)["policy_flags"]
                before = counters(tb)
                send(tb, 5, "198.18.44.9")
                after = counters_after(tb, before, 5)
                report("list flag repaired on adoption", policy_flags=flags,
                       dropped_deny=after["drop_deny"] - before["drop_deny"])
                self.assertEqual(flags & 4, 4, "the adopting daemon set the deny-v4 flag")
                self.assertEqual(after["drop_deny"] - before["drop_deny"], 5)
            finally:
                d.kill(signal.SIGTERM)

    # ------------------------------------------------------------------ SIGTERM

    def test_sigterm_under_load_exits_clean_and_enforcement_stays(self):
        with Testbed("fterm") as tb:
            d = Daemon(tb, "--rate", "100", "--burst", "100", "--period", "0.1").start()
            idle = []
            try:
                prog = xdp_prog_id(tb)
                with XdpSampler(tb, interval=0.01) as sampler, flood_bg(tb, 20000, 30, src="198.18.5.5") as flood:
                    wait_until(lambda: counters(tb)["drop_rate"] > 2000, 20, what="the flood to be rate-dropped")
                    # clients connected: idle ones, one in the middle of a line
                    for i in range(20):
                        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                        s.connect(tb.socket)
                        idle.append(s)
                    idle[0].sendall(b'{"cmd": "sta')
                    time.sleep(0.3)
                    t0 = time.monotonic()
                    d.proc.send_signal(signal.SIGTERM)
                    rc = d.proc.wait(timeout=20)
                    t_exit = time.monotonic() - t0
                    c0 = counters(tb)
                    time.sleep(0.5)
                    c1 = counters(tb)
                    samples = sampler.stop()
                    flood.stop()
                    flood.result()
                gap, bad = max_gap(samples, prog)
                out = d.output()
                report("sigterm under load", exit_code=rc, exit_s=round(t_exit, 3), samples=len(samples),
                       absent_or_other=bad, judged_after_exit=c1["drop_rate"] + c1["passed"] - c0["drop_rate"] - c0["passed"])
                self.assertEqual(rc, 0, out[-2000:])  # also: no leak report from a sanitized build
                self.assertLess(t_exit, 3.0)
                self.assertIn(f"{tb.host_if}: sluiced exiting; enforcement stays attached", out)
                self.assertFalse(os.path.exists(tb.socket), "the socket file is removed on a clean exit")
                self.assertEqual(bad, 0)
                self.assertEqual(xdp_prog_id(tb), prog)
                self.assertGreater(c1["drop_rate"] + c1["passed"], c0["drop_rate"] + c0["passed"],
                                   "the program kept judging after the daemon exited")
                st = json.loads(ctl(tb, "-j", "status", check=True).stdout)
                self.assertFalse(st["daemon"]["running"])
                # the lock went with the process: a new daemon starts at once and adopts
                d = Daemon(tb, "--period", "0.1").start()
                self.assertIn("adopted pins", d.output())
                self.assertEqual(ctl_json(tb, "status")["interfaces"][0]["prog_id"], prog)
            finally:
                for s in idle:
                    s.close()
                d.kill(signal.SIGTERM)

    # ------------------------------------------------------------------ bpffs

    def test_pin_dir_not_on_bpffs_says_exactly_what_to_do(self):
        with Testbed("fbpffs") as tb:
            pins = os.path.join(tb.rundir, "tmpfs-pins")  # /run is a tmpfs
            os.makedirs(pins)
            d = Daemon(tb, pin_dir=pins)
            d.start(wait=False)
            rc = d.proc.wait(timeout=20)
            out = d.output()
            want = (f"pin directory {pins} is not on a BPF filesystem; run `mkdir -p {pins} && mount -t bpf bpf {pins}` "
                    f"or use a directory under /sys/fs/bpf")
            report("pin dir on tmpfs", exit_code=rc, said=out.strip().splitlines()[-1] if out.strip() else "")
            self.assertEqual(rc, 1, out)
            self.assertIn(want, out)
            self.assertIsNone(xdp_prog_id(tb), "nothing attached")
            self.assertFalse(os.path.exists(tb.socket), "no socket left behind")
            # doing what it says works
            cmd = want.split("run `", 1)[1].split("`", 1)[0]
            run(["sh", "-c", cmd])
            try:
                with Daemon(tb, "--period", "0.2", pin_dir=pins):
                    st = ctl_json(tb, "status")["interfaces"][0]
                    self.assertTrue(st["attached"])
                    self.assertTrue(os.path.exists(os.path.join(pins, tb.host_if, "link")))
                    ctl(tb, "detach", tb.host_if, check=True)
            finally:
                run(["umount", pins], check=False)

    def test_daemon_mounts_bpffs_at_sys_fs_bpf_itself(self):
        """`ip netns exec` gives the daemon a fresh /sys with nothing at
        /sys/fs/bpf: with a pin dir under it, the daemon mounts the BPF
        filesystem there itself and starts."""
        with Testbed("fmount") as tb:
            pins = f"/sys/fs/bpf/sluice-test-{os.getpid()}"
            d = Daemon(tb, "--period", "0.2", pin_dir=pins).start()
            try:
                pid = daemon_pid(d)
                with open(f"/proc/{pid}/mountinfo") as f:
                    mounts = [l.split() for l in f]
                bpf = [m for m in mounts if m[4] == "/sys/fs/bpf" and "bpf" in m[m.index("-") + 1]]
                report("bpffs mounted by the daemon", mounts=[" ".join(m[4:]) for m in bpf])
                self.assertTrue(bpf, "a BPF filesystem at /sys/fs/bpf in the daemon's mount namespace")
                self.assertTrue(ctl_json(tb, "status")["interfaces"][0]["attached"])
                # detach through the daemon: its pins live in its own mount namespace
                p = run(["ip", "netns", "exec", tb.ns_host, SLUICECTL, "--socket", tb.socket, "detach", tb.host_if])
                self.assertIsNone(xdp_prog_id(tb))
            finally:
                d.kill(signal.SIGTERM)

    # ------------------------------------------------------------------ socket storm

    def test_control_socket_storm_of_200_clients(self):
        """200 clients at once: 50 send garbage (and read), 50 stream lines
        that never end, 50 pipeline requests and never read a reply, 50
        connect and say nothing. Meanwhile: the control loop keeps its
        period (the audit, one step a period, advances on time), a
        legitimate `sluicectl status` answers within a bound every time, the
        daemon's memory stays bounded and does not grow with time."""
        PERIOD, AUDIT, STORM_S = 0.1, 16, 8.0
        sanitized = is_sanitized(SLUICED)
        with Testbed("fstorm") as tb:
            # Under AddressSanitizer freed memory sits in a quarantine (256 MiB
            # by default) before it is reused, so the daemon's memory would
            # grow for that long whatever it does: a small quarantine here
            # lets "does not grow" mean the same in both builds.
            asan = os.environ.get("ASAN_OPTIONS")
            os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "quarantine_size_mb=4"
            try:
                d = Daemon(tb, "--period", str(PERIOD), "--audit-slots", str(AUDIT), "--table-size", "65536",
                           "--max-clients", "1024").start()
            finally:
                if asan is None:
                    del os.environ["ASAN_OPTIONS"]
                else:
                    os.environ["ASAN_OPTIONS"] = asan
            stop = multiprocessing.get_context("fork").Event()
            results = multiprocessing.get_context("fork").Queue()
            pid = daemon_pid(d)
            rss0 = vm_rss_kib(pid)
            swept0 = ctl_json(tb, "status")["interfaces"][0]["audit"]["swept"]
            # Each kind of client in a process of its own: 150 busy threads
            # in this one would hold the interpreter's lock for seconds, and
            # the latencies measured below would be this process's, not the
            # daemon's.
            workers = [multiprocessing.get_context("fork").Process(target=storm_clients, args=(kind, 50, tb.socket, stop, results))
                       for kind in STORM_CLIENTS]
            t0 = time.monotonic()
            for w in workers:
                w.start()
            lat, raw_lat, rss, failures, busy_replies, rss_mid = [], [], [], [], [], None

            def raw_status():
                # a fresh connection, one request, its reply: the daemon's own
                # latency, without a process start (sluicectl's is below). A
                # busy reply (all client places taken) is asked again, as
                # the protocol allows and sluicectl does.
                a = time.monotonic()
                while True:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        s.connect(tb.socket)  # blocking: waits while the listen backlog is full, as sluicectl does
                        s.settimeout(10)
                        s.sendall(b'{"cmd": "status"}\n')
                        buf = b""
                        while not buf.endswith(b"\n"):
                            chunk = s.recv(65536)
                            if not chunk:
                                break
                            buf += chunk
                    finally:
                        s.close()
                    reply = json.loads(buf or b"{}")
                    if not reply.get("busy") or time.monotonic() - a > 5:
                        break
                    busy_replies.append(1)
                    time.sleep(0.01)
                raw_lat.append(time.monotonic() - a)
                if not reply.get("ok"):
                    failures.append(f"raw status: {buf[:300]!r}")

            try:
                while time.monotonic() - t0 < STORM_S:
                    raw_status()
                    a = time.monotonic()
                    p = ctl(tb, "-j", "status")
                    lat.append(time.monotonic() - a)
                    if p.returncode != 0:
                        failures.append(p.stdout + p.stderr + " | sluiced: " + d.output()[-1500:])
                    rss.append(vm_rss_kib(pid))
                    if rss_mid is None and time.monotonic() - t0 > STORM_S / 2:
                        rss_mid = max(rss)
                    time.sleep(0.2)
                p = ctl(tb, "-j", "status")
                t1 = time.monotonic()
                self.assertEqual(p.returncode, 0, f"{p.stderr}; sluiced said: {d.output()[-3000:]}")
                st = json.loads(p.stdout)
            finally:
                stop.set()
                stats, reported = {}, 0
                for _ in workers:
                    try:
                        for k, v in results.get(timeout=20).items():
                            stats[k] = stats.get(k, 0) + v
                        reported += 1
                    except queue.Empty:
                        pass
                for w in workers:
                    w.join(timeout=10)
                    if w.is_alive():
                        w.kill()
                        w.join()
            self.assertEqual(reported, len(workers), "every storm process reported")
            swept1 = st["interfaces"][0]["audit"]["swept"]
            alive = d.proc.poll() is None
            ticks = (swept1 - swept0) / AUDIT
            want_ticks = (t1 - t0) / PERIOD
            # Memory: at most what the bounds allow every client -- a request
            # line (64 KiB), the replies owed (1 MiB) and what one read of
            # 16 KiB of requests can add to them before the check -- plus the
            # sanitizer's quarantine of freed memory when it is built in.
            per_client_kib = 64 + 1024 + 1024
            bound_kib = 200 * per_client_kib + (64 * 1024 if sanitized else 0)
            report("socket storm", clients=200, seconds=round(t1 - t0, 1), ticks=round(ticks), ticks_expected=round(want_ticks),
                   status_calls=len(lat), status_failures=len(failures), status_latency_max_s=round(max(lat), 3),
                   status_latency_median_s=round(sorted(lat)[len(lat) // 2], 3),
                   socket_latency_max_s=round(max(raw_lat), 3),
                   socket_latency_median_s=round(sorted(raw_lat)[len(raw_lat) // 2], 3),
                   socket_busy_replies=len(busy_replies), rss_before_kib=rss0,
                   rss_peak_kib=max(rss), rss_mid_kib=rss_mid, rss_bound_kib=rss0 + bound_kib, sanitized=sanitized, **stats)
            d.kill(signal.SIGTERM)
            self.assertTrue(alive, d.output()[-2000:])
            self.assertEqual(failures, [], "every legitimate status call was answered")
            # sluicectl's time includes starting a process (and, sanitized, ASan's start-up)
            self.assertLess(max(lat), 3.0, "`sluicectl status` answered within 3 s, every time")
            self.assertLess(sorted(raw_lat)[len(raw_lat) // 2], 0.5, "a request on a fresh connection: median < 0.5 s")
            self.assertGreaterEqual(ticks, 0.8 * want_ticks,
                                    f"the control loop kept its period: {ticks:.0f} ticks in {t1 - t0:.1f} s "
                                    f"at {PERIOD} s")
            self.assertLessEqual(max(rss), rss0 + bound_kib)
            self.assertLessEqual(max(rss) - rss_mid, 32 * 1024, "memory does not grow with the storm's length")
            self.assertGreater(stats["pipelined_sent"], 0)
            self.assertGreater(stats["garbage_sent"], 0)
            self.assertGreater(stats["endless_sent"], 0)

    def test_sluicectl_waits_out_a_full_client_table(self):
        """With every client place taken, a connection gets a busy reply
        before anything of it is read. sluicectl asks again for up to 5 s:
        it succeeds once a place frees, and gives up after 5 s saying so,
        with nothing done."""
        with Testbed("fbusy") as tb, Daemon(tb, "--period", "0.2", "--max-clients", "2", "--rate", "100") as d:
            def holder():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)
                s.connect(tb.socket)
                s.sendall(b'{"cmd": "status"}\n')
                self.assertIn(b'"ok":true', s.recv(1 << 20).replace(b" ", b""))  # accepted and served: it holds a place
                return s

            holders = [holder(), holder()]
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)
                s.connect(tb.socket)
                raw = json.loads(s.recv(4096))
                s.close()
                report("busy reply", reply=raw)
                self.assertEqual((raw["ok"], raw.get("busy"), raw["kind"]), (False, True, "system"))
                self.assertIn("too many control clients (2 connected)", raw["error"])

                # a place frees after 0.6 s: sluicectl's status succeeds then
                threading.Timer(0.6, holders[0].close).start()
                t0 = time.monotonic()
                p = ctl(tb, "-j", "status")
                waited = time.monotonic() - t0
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertGreaterEqual(waited, 0.5, "it waited for the place")
                self.assertEqual(json.loads(p.stdout)["interfaces"][0]["iface"], tb.host_if)
                holders[0] = holder()

                # no place frees: a write gives up after 5 s, refused, nothing done
                t0 = time.monotonic()
                p = ctl(tb, "set", tb.host_if, "--rate", "7")
                waited = time.monotonic() - t0
                report("sluicectl against a full table", rc=p.returncode, waited_s=round(waited, 2), stderr=p.stderr.strip())
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("too many control clients", p.stderr)
                self.assertIn("still busy after", p.stderr)
                self.assertGreaterEqual(waited, 4.5)
                self.assertLess(waited, 10)
            finally:
                for h in holders:
                    h.close()
            self.assertEqual(ctl_json(tb, "status")["interfaces"][0]["rate_pps"], 100, "the refused set did nothing")

    # ------------------------------------------------------------------ who may connect

    def test_peer_outside_root_and_group_is_refused_and_logged(self):
        """Two layers. The socket is 0600 (or 0660 with --socket-group): the
        kernel refuses anyone else at connect(). Behind that, sluiced checks
        SO_PEERCRED on every connection, so a socket made world-writable by
        mistake still lets no one else in: the peer gets a refusal line and
        the attempt is logged with its uid, gid and pid."""
        with Testbed("fpeer") as tb:
            sockdir = os.path.join(tb.rundir, "ctl")
            os.makedirs(sockdir)
            os.chmod(sockdir, 0o755)
            sock = os.path.join(sockdir, "sluiced.sock")
            # every directory on the way is traversable by anyone: a refusal
            # below is the socket's or the daemon's, not a directory's
            p = sockdir
            while p != "/":
                if not os.stat(p).st_mode & stat.S_IXOTH:
                    os.chmod(p, os.stat(p).st_mode | stat.S_IXOTH)
                self.assertTrue(os.stat(p).st_mode & stat.S_IXOTH, p)
                p = os.path.dirname(p)
            nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
            staff = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=staff"]
            # the build directory may be where nobody cannot reach: a copy of sluicectl beside the socket
            cli = os.path.join(sockdir, "sluicectl")
            run(["cp", SLUICECTL, cli])
            os.chmod(cli, 0o755)

            def as_user(prefix, *args):
                return run(["ip", "netns", "exec", tb.ns_host] + prefix + [cli, "--socket", sock] + list(args),
                           check=False)

            # connect as someone else, say who we are, read what comes back (the
            # refusal comes at once: a request may meet a closed socket)
            probe = ("import socket,sys,os; s=socket.socket(socket.AF_UNIX); s.settimeout(5)\n"
                     "try:\n s.connect(sys.argv[1])\nexcept OSError as e:\n print('connect', e.errno); sys.exit(0)\n"
                     "print('pid', os.getpid(), flush=True)\n"
                     "try:\n s.sendall(b'{\"cmd\": \"status\"}\\n')\nexcept OSError:\n pass\n"
                     "print(s.recv(4096).decode().strip())")

            def raw_as(prefix):
                return run(["ip", "netns", "exec", tb.ns_host] + prefix + ["/usr/bin/python3", "-c", probe, sock],
                           check=False)

            with Daemon(tb, "--period", "0.2", socket=sock) as d:
                cfg0 = pinned_config(tb)
                mode = stat.S_IMODE(os.stat(sock).st_mode)
                self.assertEqual(mode, 0o600)
                # layer 1: the socket's mode; the kernel says no
                p = as_user(nobody, "status")
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn(f"cannot reach sluiced at {sock}: Permission denied; run as root", p.stderr)
                r = raw_as(nobody)
                self.assertIn("connect 13", r.stdout)
                # layer 2: the socket made world-writable by mistake; sluiced says no, and logs it
                os.chmod(sock, 0o666)
                r = raw_as(nobody)
                lines = r.stdout.strip().splitlines()
                client_pid = int(lines[0].split()[1])
                reply = json.loads(lines[1])
                self.assertEqual(reply, {"ok": False, "kind": "refused", "error":
                                         "permission denied: sluiced accepts root or its --socket-group only: "
                                         "Permission denied (errno 13)"})
                p = as_user(nobody, "breaker", "trip", tb.host_if)
                self.assertEqual(p.returncode, 1)
                self.assertIn("permission denied: sluiced accepts root or its --socket-group only", p.stderr)
                time.sleep(0.3)
                log = d.output()
                self.assertIn(f"control: refused connection from uid 65534 gid 65534 pid {client_pid} "
                              f"(root or the --socket-group only)", log)
                self.assertEqual(pinned_config(tb), cfg0, "nothing changed")
                self.assertEqual(ctl_json(tb, "status", socket=sock)["interfaces"][0]["breaker"]["state"], "serving")
                report("peer refused", socket_mode=oct(mode), client_pid=client_pid, reply=reply["error"])

            # with --socket-group: members in (a supplementary group is enough), others out
            with Daemon(tb, "--period", "0.2", "--socket-group", "staff", socket=sock) as d:
                st = os.stat(sock)
                self.assertEqual((stat.S_IMODE(st.st_mode), st.st_gid), (0o660, 50))
                p = as_user(staff, "-j", "status")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(json.loads(p.stdout)["daemon"]["running"])
                # the group reads; changing what sluiced does, or asking for
                # slot indices (a collision oracle for the hash key), is root's
                cfg0 = pinned_config(tb)
                p = as_user(staff, "standing", tb.host_if)
                self.assertEqual(p.returncode, 0, p.stderr)
                for args, why in ((("breaker", "trip", tb.host_if), "changes what sluiced does"),
                                  (("set", tb.host_if, "--rate", "7"), "changes what sluiced does"),
                                  (("explain", tb.host_if, "198.18.0.9"), "names bucket slot indices"),
                                  (("bucket", tb.host_if, "198.18.0.9"), "names bucket slot indices")):
                    p = as_user(staff, *args)
                    self.assertEqual(p.returncode, 1, f"{args}: {p.stdout}{p.stderr}")
                    self.assertIn(why + ": root only", p.stderr, args)
                self.assertEqual(pinned_config(tb), cfg0, "the group's refused requests changed nothing")
                self.assertEqual(ctl_json(tb, "status", socket=sock)["interfaces"][0]["breaker"]["state"], "serving")
                time.sleep(0.3)
                self.assertIn('control: refused "breaker" from uid 65534', d.output())
                p = as_user(nobody, "status")
                self.assertEqual(p.returncode, 1)
                self.assertIn("run as root or as a member of group 'staff'", p.stderr)
                os.chmod(sock, 0o666)
                r = raw_as(nobody)
                self.assertIn("permission denied: sluiced accepts root or its --socket-group only", r.stdout)
                time.sleep(0.3)
                self.assertIn("control: refused connection from uid 65534 gid 65534", d.output())
                self.assertNotIn("refused connection from uid 65534 gid 65534 pid 0", d.output())


if __name__ == "__main__":
    main()
