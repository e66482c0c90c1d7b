"""`sluicectl top`: the data plane samples 1 in N dropped frames into a ring
buffer, sluiced keeps a bounded Space-Saving summary of their sources, and top
names the heaviest with their estimated dropped pps and their bucket's tokens.
Its memory is fixed by --top-capacity, not by the traffic: a flood from a
million spoofed sources leaves the daemon's RSS where it was."""

import json
import os
import signal
import subprocess
import time
import unittest

from sluice_netns import (TRAFFIC, Daemon, Testbed, assert_rss_flat, counters, counters_after, ctl, ctl_json, main,
                          require_root, send)

HEAVY = "198.18.3.7"
MEDIUM = "198.18.3.8"


def flood(tb, *args):
    """sluice-traffic flood into the host interface, in the background."""
    cmd = ["ip", "netns", "exec", tb.inject_ns, TRAFFIC, "flood", "--iface", tb.inject_if,
           "--dst-mac", tb.inject_dst_mac] + [str(a) for a in args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p, timeout=300):
    out, err = p.communicate(timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"flood exited {p.returncode}: {err}")
    return json.loads(out.strip().splitlines()[-1])


def daemon_pid(d):
    """sluiced's own pid (`ip netns exec` execs it, so normally the Popen's)."""
    pid = d.proc.pid
    for _ in range(3):
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() == "sluiced":
                return pid
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pid = int(f.read().split()[0])
    raise AssertionError("no sluiced process under the daemon's pid")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def wait_for_window(tb, pred, timeout=30, n=10):
    """top -j until a complete window satisfies pred; that reply."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = ctl_json(tb, "top", tb.host_if, "-n", str(n))
        if last["window_complete"] and pred(last):
            return last
        time.sleep(0.1)
    raise AssertionError(f"no complete top window as wanted in {timeout} s; last: {last}")


class Top(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_top_names_the_flooders_with_their_rates_and_tokens(self):
        with Testbed("top") as tb:
            args = ("--rate", "100", "--burst", "100", "--period", "0.2", "--sample-every", "16",
                    "--top-window", "1", "--top-capacity", "64")
            d = Daemon(tb, *args).start()
            try:
                self.assertEqual(ctl_json(tb, "status")["interfaces"][0]["sample_every"], 16)
                # nothing dropped yet: an empty summary
                t = ctl_json(tb, "top", tb.host_if)
                self.assertEqual((t["sample_every"], t["capacity"], t["sources"]), (16, 64, []))

                # two flooders at 4:1, over their 100 pps limit; a crowd of
                # sources under theirs (passed, so never sampled)
                heavy = flood(tb, "--dst", tb.host_ip4, "--src", HEAVY, "--pps", 8000, "--duration", 4)
                medium = flood(tb, "--dst", tb.host_ip4, "--src", MEDIUM, "--pps", 2000, "--duration", 4)
                crowd = flood(tb, "--dst", tb.host_ip4, "--sources", 200, "--src-base", "198.18.4.1",
                              "--pps", 1000, "--duration", 4)
                try:
                    before = counters(tb)
                    t = wait_for_window(tb, lambda t: len(t["sources"]) >= 2 and t["samples"] > 400)
                    text = ctl(tb, "top", tb.host_if, "-n", "3", check=True).stdout
                finally:
                    sent = {name: finish(p) for name, p in (("heavy", heavy), ("medium", medium), ("crowd", crowd))}
                after = counters(tb)

                first, second = t["sources"][0], t["sources"][1]
                self.assertEqual(first["source"], HEAVY + "/32", t)
                self.assertEqual(second["source"], MEDIUM + "/32", t)
                self.assertFalse(any(s["source"].startswith("198.18.4.") for s in t["sources"]), t)
                # est = samples x 16 / window: near what each sent above its limit,
                # as far as the tool's pacing on a loaded machine allows
                heavy_pps = sent["heavy"]["pps"] - 100
                medium_pps = sent["medium"]["pps"] - 100
                self.assertGreater(first["est_dropped_pps"], 0.5 * heavy_pps, t)
                self.assertLess(first["est_dropped_pps"], 1.5 * heavy_pps, t)
                self.assertGreater(second["est_dropped_pps"], 0.4 * medium_pps, t)
                self.assertLess(second["est_dropped_pps"], 1.6 * medium_pps, t)
                self.assertAlmostEqual(first["est_dropped_pps"], first["samples"] * 16 / t["window_s"],
                                       delta=0.005 * first["est_dropped_pps"])  # window_s is rounded to ms
                self.assertLessEqual(first["error"], first["samples"])
                # their buckets are drained: tokens as `bucket` reports them
                for s in (first, second):
                    self.assertLessEqual(s["tokens"], 100)
                    self.assertLess(s["tokens"], 50, t)
                self.assertLessEqual(t["summary_size"], t["capacity"])
                self.assertGreater(after["drop_rate"] - before["drop_rate"], 0)
                for word in (HEAVY + "/32", MEDIUM + "/32", "EST DROP PPS", "TOKENS", "1 in 16 drops sampled"):
                    self.assertIn(word, text)

                # -n bounds the list
                self.assertEqual(len(ctl_json(tb, "top", tb.host_if, "-n", "1")["sources"]), 1)
                # --watch -j: one JSON line per refresh
                w = subprocess.Popen(["ip", "netns", "exec", tb.ns_host, os.environ.get("SLUICECTL", "sluicectl"),
                                      "--socket", tb.socket, "-j", "top", tb.host_if, "--watch", "--interval",
                                      "0.2"], stdout=subprocess.PIPE, text=True)
                try:
                    lines = [w.stdout.readline() for _ in range(3)]
                finally:
                    w.send_signal(signal.SIGINT)
                    w.wait(timeout=10)
                    w.stdout.close()
                self.assertTrue(all(json.loads(line)["iface"] == tb.host_if for line in lines))

                # fail-static and adoption: the ring is pinned with the rest, a
                # restarted daemon samples from it again
                d.kill(signal.SIGKILL)
                self.assertTrue(os.path.exists(os.path.join(tb.pin_dir, tb.host_if, "drop_samples")))
                d = Daemon(tb, *args).start()
                self.assertIn("adopted pins", d.output())
                heavy = flood(tb, "--dst", tb.host_ip4, "--src", HEAVY, "--pps", 4000, "--duration", 3)
                try:
                    t = wait_for_window(tb, lambda t: t["sources"] and t["samples"] > 100)
                finally:
                    finish(heavy)
                self.assertEqual(t["sources"][0]["source"], HEAVY + "/32")
            finally:
                d.kill(signal.SIGTERM)

    def test_memory_stays_flat_under_a_million_spoofed_sources(self):
        # Every IPv6 address its own source (/128), the breaker shedding so
        # every frame drops and 1 in 4 is sampled: the summary churns at its
        # capacity. Its size is capacity, the daemon's RSS does not move.
        capacity = 512
        with Testbed("topmem") as tb, Daemon(tb, "--ipv6-prefix", "128", "--period", "0.2", "--sample-every", "4",
                                              "--top-window", "1", "--top-capacity", str(capacity),
                                              "--newcomer-pps", "0") as d:
            pid = daemon_pid(d)
            ctl(tb, "breaker", "trip", tb.host_if, check=True)

            def spoof(count, base):
                return finish(flood(tb, "--dst", tb.host_ip6, "--sources", count, "--src-base", base, "--v6-same64",
                                    "--count", count))

            # warm up: the ring's pages, the summaries, the reply buffers
            spoof(100_000, "2001:2:0:ff::1")
            t = wait_for_window(tb, lambda t: t["summary_size"] == capacity, n=capacity)
            time.sleep(0.5)
            rss_before = rss_kib(pid)
            before = counters(tb)
            sent = spoof(1_000_000, "2001:2:0:fe::1")
            after = counters_after(tb, before, 990_000)
            self.assertEqual(sent["sent"], 1_000_000)
            self.assertGreaterEqual(after["drop_shed"] - before["drop_shed"], 990_000)
            t = wait_for_window(tb, lambda t: t["summary_size"] == capacity and t["samples"] > capacity, n=capacity)
            rss_after = rss_kib(pid)
            self.assertEqual(t["summary_size"], capacity)
            self.assertEqual(len(t["sources"]), capacity)
            self.assertTrue(all(s["source"].endswith("/128") for s in t["sources"]))
            # one sample each, or the minimum's inheritance: never a real heavy hitter
            self.assertLessEqual(t["sources"][0]["samples"] - t["sources"][0]["error"], 2, t["sources"][0])
            # a per-source map would be tens of MB here; the summary is fixed
            print(f"RSS before {rss_before} KiB, after {rss_after} KiB", flush=True)
            assert_rss_flat(self, rss_before, rss_after, 512, "top under a million spoofed sources")

    def test_sampling_off_refuses_top(self):
        with Testbed("topoff") as tb, Daemon(tb, "--sample-every", "0", "--rate", "10", "--burst", "10"):
            self.assertEqual(ctl_json(tb, "status")["interfaces"][0]["sample_every"], 0)
            send(tb, 50, HEAVY)  # drops, not sampled
            p = ctl(tb, "top", tb.host_if)
            self.assertEqual(p.returncode, 1)
            self.assertIn("drop sampling is off", p.stderr)
            p = ctl(tb, "top", tb.host_if, "-n", "0")
            self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    main()
