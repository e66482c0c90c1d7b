"""sluiced and sluicectl on a real veth in namespaces made by the test: every
subcommand, checked in its output and in the pinned maps; fail-static under
SIGKILL; adoption after a restart; one daemon per interface; the seed's
LimiterTests line for line through sluicectl with real frames."""

import json
import os
import signal
import struct
import subprocess
import time
import unittest

from sluice_netns import (Daemon, Testbed, counters, counters_after, ctl, ctl_json, main, pinned_config,
                          pinned_settings, require_root, run, send, settle, slot_values, wait_until, xdp_prog_id)

SRC = "198.18.7.7"


class ControlPlane(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_every_subcommand(self):
        # --newcomer-pps 0: while shedding, a source without standing or an allowlist entry is dropped
        with Testbed("cp") as tb, Daemon(tb, "--rate", "100", "--burst", "50", "--period", "0.2",
                                          "--table-size", "4096", "--newcomer-pps", "0") as d:
            # status: human and JSON, and what the kernel says
            st = ctl_json(tb, "status")
            (i,) = st["interfaces"]
            self.assertEqual(i["iface"], tb.host_if)
            self.assertEqual(i["attach_mode"], "native")
            self.assertEqual(i["prog_id"], xdp_prog_id(tb))
            self.assertEqual(i["breaker"]["state"], "serving")
            self.assertEqual((i["rate_pps"], i["burst"], i["table_slots"]), (100, 50, 4096))
            self.assertEqual((i["v4_prefix"], i["v6_prefix"], i["dry_run"]), (32, 64, False))
            text = ctl(tb, "status", check=True).stdout
            for word in ("native", "serving", "4096", str(i["prog_id"])):
                self.assertIn(word, text)

            # set: validated, applied to the config map without a reload
            p = ctl(tb, "set", tb.host_if, "--rate", "200", "--burst", "20", check=True)
            self.assertIn("200", p.stdout)
            cfg = pinned_config(tb)
            self.assertEqual((cfg["cost_ns"], cfg["burst"], cfg["rate_pps"]), (5_000_000, 20, 200))
            self.assertEqual(xdp_prog_id(tb), i["prog_id"])  # not reloaded
            p = ctl(tb, "set", tb.host_if, "--burst", "0")
            self.assertEqual(p.returncode, 1)
            self.assertIn("invariant", p.stderr)
            self.assertEqual(pinned_config(tb)["burst"], 20)  # unchanged

            # bucket / --set / refill: the two slots, in the output and the map
            # (at 1 token/s, so nothing refills between two commands)
            ctl(tb, "set", tb.host_if, "--rate", "1", check=True)
            b = ctl_json(tb, "bucket", tb.host_if, SRC)
            self.assertEqual(b["tokens"], [20, 20])
            self.assertEqual(len(set(b["slots"])), 2)
            ctl(tb, "bucket", tb.host_if, SRC, "--set", "3", check=True)
            self.assertEqual(ctl_json(tb, "bucket", tb.host_if, SRC)["tokens_left"], 3)
            p = ctl(tb, "refill", tb.host_if, SRC, "30")
            self.assertEqual(p.returncode, 1)
            self.assertIn("rejected write of 33", p.stderr)
            ctl(tb, "refill", tb.host_if, SRC, "2", check=True)
            self.assertEqual(ctl_json(tb, "bucket", tb.host_if, SRC)["tokens"], [5, 5])

            # real frames spend those tokens: 5 pass, the rest drop
            settle(tb)
            ctl(tb, "bucket", tb.host_if, SRC, "--set", "5", check=True)
            before = counters(tb)
            send(tb, 12, SRC)
            after = counters_after(tb, before, 12)
            self.assertEqual(after["passed"] - before["passed"], 5)
            self.assertEqual(after["drop_rate"] - before["drop_rate"], 7)

            # stats: the same counters
            s = ctl_json(tb, "stats", tb.host_if)
            time.sleep(0.5)
            s = ctl_json(tb, "stats", tb.host_if)
            self.assertEqual(s["interfaces"][0]["counters"]["passed"]["packets"], after["passed"])

            # deny list: add, list, frames from it drop in serving, del
            ctl(tb, "deny", "add", tb.host_if, "198.18.7.0/24", check=True)
            self.assertEqual(ctl_json(tb, "deny", "list", tb.host_if)["cidrs"], ["198.18.7.0/24"])
            self.assertTrue(pinned_config(tb)["policy_flags"] & 4)
            before = counters(tb)
            send(tb, 4, "198.18.7.9")
            self.assertEqual(counters_after(tb, before, 4)["drop_deny"] - before["drop_deny"], 4)
            p = ctl(tb, "deny", "add", tb.host_if, "198.18.7.1/24")
            self.assertEqual(p.returncode, 2)
            self.assertIn("did you mean 198.18.7.0/24", p.stderr)
            ctl(tb, "deny", "del", tb.host_if, "198.18.7.0/24", check=True)
            self.assertEqual(pinned_config(tb)["policy_flags"], 0)

            # allow list from a file, all or nothing
            good = os.path.join(tb.rundir, "allow.txt")
            with open(good, "w") as f:
                f.write("# office\n198.18.9.0/24\n\n2001:2:0:9::/64\n")
            ctl(tb, "allow", "add", tb.host_if, "--from", good, check=True)
            self.assertEqual(sorted(ctl_json(tb, "allow", "list", tb.host_if)["cidrs"]),
                             ["198.18.9.0/24", "2001:2:0:9::/64"])
            # thousands of prefixes in one request, all or nothing
            big = os.path.join(tb.rundir, "big.txt")
            with open(big, "w") as f:
                for i in range(6000):
                    f.write(f"10.{i // 256}.{i % 256}.0/24\n")
            ctl(tb, "deny", "add", tb.host_if, "--from", big, check=True)
            self.assertEqual(len(ctl_json(tb, "deny", "list", tb.host_if)["cidrs"]), 6000)
            ctl(tb, "deny", "del", tb.host_if, "--from", big, check=True)
            self.assertEqual(ctl_json(tb, "deny", "list", tb.host_if)["cidrs"], [])
            bad = os.path.join(tb.rundir, "bad.txt")
            with open(bad, "w") as f:
                f.write("198.18.10.0/24\n198.18.11.1/24\n")
            p = ctl(tb, "allow", "add", tb.host_if, "--from", bad)
            self.assertEqual(p.returncode, 2)
            self.assertIn("bad.txt:2:", p.stderr)
            self.assertEqual(len(ctl_json(tb, "allow", "list", tb.host_if)["cidrs"]), 2)

            # breaker: the edges, the refusal, the state in the config map
            p = ctl(tb, "breaker", "close", tb.host_if)
            self.assertEqual(p.returncode, 1)
            self.assertIn("invalid transition: serving -> serving", p.stderr)
            ctl(tb, "breaker", "trip", tb.host_if, check=True)
            cfg = pinned_config(tb)
            self.assertEqual((cfg["breaker_state"], cfg["breaker_manual"]), (1, 1))
            before = counters(tb)
            send(tb, 3, "198.18.9.5")   # allowlisted
            send(tb, 3, "198.18.12.5")  # not
            after = counters_after(tb, before, 6)
            self.assertEqual(after["allowlisted"] - before["allowlisted"], 3)
            self.assertEqual(after["drop_shed"] - before["drop_shed"], 3)
            p = ctl(tb, "breaker", "close", tb.host_if)
            self.assertEqual(p.returncode, 1)
            self.assertIn("invalid transition: shedding -> serving; current state 'shedding'; "
                          "valid targets: [recovering]", p.stderr)
            time.sleep(0.6)  # a manual trip holds: no automatic recovery
            self.assertEqual(pinned_config(tb)["breaker_state"], 1)
            ctl(tb, "breaker", "recover", tb.host_if, check=True)
            self.assertEqual(pinned_config(tb)["breaker_state"], 2)
            ctl(tb, "breaker", "close", tb.host_if, check=True)
            self.assertEqual(pinned_config(tb)["breaker_state"], 0)

            # audit: a full sweep, clean
            a = ctl_json(tb, "audit", tb.host_if)
            self.assertEqual(a["audit"]["slots"], 4096)
            self.assertEqual(a["audit"]["last_sweep_violations"], 0)

            # errors name the problem
            p = ctl(tb, "bucket", tb.host_if, "not-an-address")
            self.assertEqual(p.returncode, 2)
            p = ctl(tb, "status", "nosuchif0")
            self.assertNotEqual(p.returncode, 0)
            p = ctl(tb, "status", socket=os.path.join(tb.rundir, "nothing.sock"))
            self.assertIn("not running", p.stdout + p.stderr)

            # detach: the only way to remove the program
            ctl(tb, "detach", tb.host_if, check=True)
            self.assertIsNone(xdp_prog_id(tb))
            self.assertFalse(os.path.exists(os.path.join(tb.pin_dir, tb.host_if)))

    def test_sigkill_is_fail_static_and_restart_adopts(self):
        with Testbed("adopt") as tb:
            # --newcomer-pps 0: shedding drops every source without standing or an allowlist entry
            d = Daemon(tb, "--rate", "1", "--burst", "10", "--period", "0.2", "--newcomer-pps", "0").start()
            try:
                ctl(tb, "bucket", tb.host_if, SRC, "--set", "4", check=True)
                slots = ctl_json(tb, "bucket", tb.host_if, SRC)["slots"]
                raw = slot_values(tb, slots)
                ctl(tb, "breaker", "trip", tb.host_if, check=True)
                prog = xdp_prog_id(tb)
                key = pinned_settings(tb)[:16]
                d.kill(signal.SIGKILL)
                # still attached, still enforcing (shedding), status from the pins
                self.assertEqual(xdp_prog_id(tb), prog)
                settle(tb)
                before = counters(tb)
                send(tb, 20, "198.18.8.8")
                self.assertEqual(counters_after(tb, before, 20)["drop_shed"] - before["drop_shed"], 20)
                p = ctl(tb, "status", check=True)
                self.assertIn("not running", p.stdout)
                st = json.loads(ctl(tb, "-j", "status", check=True).stdout)
                self.assertFalse(st["daemon"]["running"])
                self.assertEqual(st["interfaces"][0]["prog_id"], prog)
                self.assertEqual(st["interfaces"][0]["breaker"]["state"], "shedding")
                # restart: the same program, key, bucket contents and breaker
                d = Daemon(tb, "--period", "0.2").start()
                self.assertIn("adopted pins", d.output())
                self.assertEqual(xdp_prog_id(tb), prog)
                self.assertEqual(pinned_settings(tb)[:16], key)
                i = ctl_json(tb, "status")["interfaces"][0]
                self.assertEqual(i["breaker"]["state"], "shedding")
                self.assertTrue(i["breaker"]["manual"])  # still held for the operator
                self.assertEqual((i["rate_pps"], i["burst"]), (1, 10))
                self.assertEqual(slot_values(tb, slots), raw)
                self.assertGreaterEqual(ctl_json(tb, "bucket", tb.host_if, SRC)["tokens_left"], 4)
                # SIGTERM: a clean exit that leaves enforcement attached
                self.assertEqual(d.kill(signal.SIGTERM), 0)
                self.assertIn("enforcement stays attached", d.output())
                self.assertEqual(xdp_prog_id(tb), prog)
            finally:
                d.kill(signal.SIGTERM)

    def test_status_gives_the_standing_count_the_periods_made_and_its_age(self):
        """Counting the standing table reads every set, so no request counts
        it: sluiced counts it at start, then a part each period, a sweep
        every 5 s, and status gives the last whole count with the age of its
        oldest part (at most two sweeps and a period or two). A grant made
        after start shows in status's count without any request counting;
        `standing` gives the same count, never counting the table itself."""
        sweep_s, period_s = 5.0, 0.2
        with Testbed("count") as tb, Daemon(tb, "--period", str(period_s)):
            first = ctl_json(tb, "status")["interfaces"][0]["standing"]
            # The count made at start is replaced by the first sweep's (its
            # age drops a period's worth) and that by the second's (its age
            # drops about a sweep's worth, from about 2 sweeps to 1).
            ages, t0 = [first["counted_s_ago"]], time.monotonic()
            while time.monotonic() - t0 < 2 * sweep_s + 1.5:
                ages.append(ctl_json(tb, "status")["interfaces"][0]["standing"]["counted_s_ago"])
                time.sleep(0.2)
            self.assertLessEqual(max(ages), 2 * sweep_s + 1.0, ages)  # + a period or two late on a busy machine
            self.assertTrue(any(a - b >= sweep_s / 2 for a, b in zip(ages, ages[1:])),
                            f"a sweep's count replaced the one before: {ages}")

            # A client's completed handshake grants it standing: the periods'
            # count shows it within two sweeps.
            port = 8471
            ready = os.path.join(tb.rundir, "count-listen.ready")
            listener = subprocess.Popen(
                ["ip", "netns", "exec", tb.ns_host, "python3", "-c",
                 "import socket, sys\n"
                 "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                 "s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(); open(sys.argv[3], 'w').close()\n"
                 "c, _ = s.accept(); c.recv(1); c.close()\n", tb.host_ip4, str(port), ready])
            try:
                wait_until(lambda: os.path.exists(ready) or listener.poll() is not None, 20, what="the listener")
                tb.exec("client", ["python3", "-c", "import socket, sys\n"
                                   "socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()",
                                   tb.host_ip4, str(port)], timeout=20)
                listener.wait(timeout=20)
            finally:
                if listener.poll() is None:
                    listener.kill()
                    listener.wait(timeout=20)
            self.assertEqual(ctl(tb, "standing", tb.host_if, tb.client_ip4).returncode, 0, "the client has standing")
            # `standing` reads the periods' count too (a request never counts
            # the table: one costs 7-26 ms of the loop): the grant shows
            # within two sweeps, as in status
            wait_until(lambda: ctl_json(tb, "standing", tb.host_if)["standing"]["entries"] >= 1,
                       2 * sweep_s + 2, interval=0.2, what="standing's count to show the grant")
            fresh = ctl_json(tb, "standing", tb.host_if)["standing"]
            self.assertLessEqual(fresh["counted_s_ago"], 2 * sweep_s + 1.0, fresh)
            # (>=: the feeders see every TCP socket of the machine, so other
            # grants may come meanwhile; none lapses within the default hour)
            wait_until(lambda: ctl_json(tb, "status")["interfaces"][0]["standing"]["entries"] >= fresh["entries"],
                       2 * sweep_s + 2, interval=0.2, what="status's standing count to show the grant")
            second = ctl_json(tb, "status")["interfaces"][0]["standing"]
            self.assertEqual(second["capacity"], first["capacity"])
            self.assertEqual(fresh["capacity"], first["capacity"])
            human = ctl(tb, "status", check=True).stdout
            self.assertRegex(human, r"(?m)full sets, lapse \d+ s( \(counted \d+ s ago\))?$")

    def test_second_daemon_on_the_interface_is_refused(self):
        with Testbed("two") as tb, Daemon(tb, "--period", "0.2"):
            second = Daemon(tb, socket=os.path.join(tb.rundir, "second.sock"))
            second.start(wait=False)
            rc = second.proc.wait(timeout=20)
            self.assertNotEqual(rc, 0)
            self.assertIn("another sluiced already manages " + tb.host_if, second.output())
            # and the first one is untouched
            self.assertEqual(ctl_json(tb, "status")["interfaces"][0]["breaker"]["state"], "serving")

    def test_foreign_pins_are_refused(self):
        with Testbed("foreign") as tb:
            # pins made under another table size: refused with the path and the fix
            with Daemon(tb, "--table-size", "1024", "--period", "0.2"):
                pass
            d = Daemon(tb, "--table-size", "2048")
            d.start(wait=False)
            self.assertEqual(d.proc.wait(timeout=20), 1)
            out = d.output()
            self.assertIn(os.path.join(tb.pin_dir, tb.host_if), out)
            self.assertIn("table size 1024", out)
            self.assertIn("sluicectl detach", out)
            # a stale directory with pins but no link: refused, nothing loaded
            ctl(tb, "detach", tb.host_if, check=False)
            with Daemon(tb, "--table-size", "1024", "--period", "0.2"):
                ctl(tb, "detach", tb.host_if, check=True)
            stale = os.path.join(tb.pin_dir, tb.host_if)
            os.makedirs(stale, exist_ok=True)
            run(["bpftool", "map", "create", os.path.join(stale, "slots"), "type", "array", "key", "4",
                 "value", "16", "entries", "16", "name", "stale"])
            d = Daemon(tb)
            d.start(wait=False)
            self.assertEqual(d.proc.wait(timeout=20), 1)
            self.assertIn("stale or foreign", d.output())
            self.assertIsNone(xdp_prog_id(tb))

    def test_seed_limiter_tests_through_sluicectl(self):
        """The seed's LimiterTests, line for line, against a live daemon: the
        writes through sluicectl, admit() as one real frame from the source."""
        with Testbed("seed") as tb, Daemon(tb, "--rate", "1", "--burst", "10", "--period", "0.2"):
            ifc = tb.host_if
            settle(tb)
            state = {"counters": counters(tb)}

            def admit():
                send(tb, 1, SRC)
                now = counters_after(tb, state["counters"], 1)
                ok = now["passed"] - state["counters"]["passed"] == 1
                state["counters"] = now
                return ok

            def tokens_left():
                return ctl_json(tb, "bucket", ifc, SRC)["tokens_left"]

            # The lowest rate is 1 token/s: on a loaded machine a second can
            # pass between the refill and the checks, and refill one token.
            # The checks are exact when it did not, and account for it when it did.
            ctl(tb, "bucket", ifc, SRC, "--set", "0", check=True)  # the seed starts empty
            t0 = time.monotonic()
            self.assertEqual(ctl(tb, "refill", ifc, SRC, "3").returncode, 0)   # refill("meta", 3).ok
            admits = [admit() for _ in range(4)]                                # admit x3 ok, 4th refused
            left = tokens_left()                                                # tokens_left == 0
            refilled = int(time.monotonic() - t0)
            if refilled == 0:
                self.assertEqual(admits, [True, True, True, False])
                self.assertEqual(left, 0)
            else:
                self.assertEqual(admits[:3], [True, True, True])
                self.assertLessEqual(sum(admits) + left, 3 + refilled)
            ctl(tb, "bucket", ifc, SRC, "--set", "0", check=True)
            p = ctl(tb, "bucket", ifc, SRC, "--set", "-1")                      # tokens.set(-1) fails
            self.assertEqual(p.returncode, 1)
            self.assertIn("rejected write of -1", p.stderr)
            self.assertEqual(tokens_left(), 0)  # right after a set: no second has passed
            self.assertEqual(ctl(tb, "refill", ifc, SRC, "10").returncode, 0)  # refill 10 ok
            p = ctl(tb, "refill", ifc, SRC, "5")                                # refill 5 refused
            self.assertEqual(p.returncode, 1)
            p = ctl(tb, "bucket", ifc, SRC, "--set", "999")                     # tokens.set(999) fails
            self.assertEqual(p.returncode, 1)
            self.assertIn("rejected write of 999", p.stderr)
            self.assertEqual(tokens_left(), 10)
            self.assertEqual(ctl(tb, "breaker", "trip", ifc).returncode, 0)    # trip_breaker ok
            self.assertFalse(admit())                                           # admit refused
            p = ctl(tb, "breaker", "close", ifc)                                # transition(serving) fails
            self.assertEqual(p.returncode, 1)
            self.assertIn("current state 'shedding'; valid targets: [recovering]", p.stderr)
            self.assertEqual(ctl(tb, "breaker", "recover", ifc).returncode, 0) # start_recovery ok
            self.assertEqual(ctl(tb, "breaker", "close", ifc).returncode, 0)   # breaker_close ok
            self.assertTrue(admit())                                            # admit ok


if __name__ == "__main__":
    main()
