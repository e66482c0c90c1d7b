"""The operator's view of a policy, end to end: sluiced --policy on the
testbed, real frames into the XDP program, and what sluicectl reads back from
the pins (sluicectl(8)): `class list` (the classes of the policy set in force,
their budgets and prefixes), `stats` (per-class counters per outcome), and
`allow|deny save` (the running lists, file and runtime entries, written as a
netset). With the daemon killed, class list and save still answer from the
pins (fail-static).
"""

import json
import os
import signal
import unittest

from sluice_netns import Daemon, Testbed, ctl, ctl_json, main, require_root, send, settle, wait_until

DNS_SRC = "198.18.60.1"
HEALTH_SRC = "198.18.61.9"
FILE_DENY = "198.18.70.0/24"
FILE_DENY6 = "2001:2:70::/48"
RUNTIME_DENY = "198.18.80.0/24"

POLICY = f"""version: 1
classes:
  default:
    rate: 1000
    burst: 1000
  dns:
    rate: 10
    burst: 10
    ipv4-prefix: 24
    byte-rate: 100000
    byte-burst: 15000
  health:
    action: exempt
rules:
  - protocol: udp
    ports: 53
    class: dns
  - sources: [{HEALTH_SRC}]
    class: health
deny:
  - {FILE_DENY}
  - {FILE_DENY6}
"""


def netset_entries(path):
    """The prefixes of a netset file, and its comment lines."""
    with open(path) as f:
        lines = f.read().splitlines()
    return [l for l in lines if l and not l.startswith("#")], [l for l in lines if l.startswith("#")]


class PolicyCliTest(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_class_list_stats_and_save_read_the_pins(self):
        with Testbed("pol-cli") as tb:
            policy = os.path.join(tb.rundir, "policy.yaml")
            with open(policy, "w") as f:
                f.write(POLICY)
            with Daemon(tb, "--policy", policy, "--no-standing") as d:
                settle(tb)
                # class list: the set in force, by id, as the program reads it
                listed = ctl_json(tb, "class", "list", tb.host_if)
                by_name = {c["name"]: c for c in listed["classes"]}
                self.assertEqual(set(by_name), {"default", "dns", "health"}, listed)
                self.assertEqual(by_name["default"]["id"], 0)
                self.assertEqual((by_name["default"]["rate_pps"], by_name["default"]["burst"]), (1000, 1000))
                dns = by_name["dns"]
                self.assertEqual((dns["action"], dns["rate_pps"], dns["burst"]), ("limit", 10, 10))
                self.assertEqual((dns["byte_rate"], dns["byte_burst"]), (100000, 15000))
                self.assertEqual((dns["v4_prefix"], dns["v6_prefix"]), (24, 64))
                self.assertEqual(dns["standing"]["from"], "config")
                health = by_name["health"]
                self.assertEqual(health["action"], "exempt")
                self.assertIsNone(health["rate_pps"])
                text = ctl(tb, "class", "list", tb.host_if, check=True).stdout
                self.assertIn(f"{tb.host_if}: policy set {listed['set']}, 3 classes", text)
                self.assertRegex(text, r"\n\s+\d+\s+dns\s+limit\s+10 / 10\s+100000 / 15000\s+/24 /64\s")

                # stats: the frames of each class, per outcome, from class_counters
                send(tb, 100, DNS_SRC, pps=20000, extra=["--port", "53"])
                send(tb, 50, HEALTH_SRC, pps=20000)

                def classes():
                    (entry,) = ctl_json(tb, "stats", tb.host_if)["interfaces"]
                    self.assertNotIn("classes_error", entry)
                    return {c["name"]: {k: v["packets"] for k, v in c["counters"].items() if v["packets"]}
                            for c in entry["classes"]}

                def counted():
                    c = classes()
                    return c if sum(c.get("dns", {}).values()) >= 100 and sum(c.get("health", {}).values()) >= 50 \
                        else None
                try:
                    got = wait_until(counted, 10, interval=0.1, what="150 frames in the class counters")
                except AssertionError as e:
                    raise AssertionError(f"{e}; the classes counted {classes()}") from None
                self.assertEqual(got["health"], {"exempt": 50}, got)
                self.assertEqual(sum(got["dns"].values()), 100, got)
                self.assertGreaterEqual(got["dns"].get("passed", 0), 10, got)
                self.assertLessEqual(got["dns"].get("passed", 0), 12, got)
                text = ctl(tb, "stats", tb.host_if, check=True).stdout
                self.assertRegex(text, r"\n\s+health\s+exempt\s+50\s+\d+\n")

                # save: the running deny list, the file's and the runtime's, both families
                ctl(tb, "deny", "add", tb.host_if, RUNTIME_DENY, check=True)
                saved = os.path.join(tb.rundir, "deny.netset")
                p = ctl(tb, "deny", "save", tb.host_if, saved, check=True)
                self.assertIn("saved 3 prefixes of the deny list to " + saved, p.stdout)
                entries, comments = netset_entries(saved)
                self.assertEqual(sorted(entries), sorted([FILE_DENY, FILE_DENY6, RUNTIME_DENY]))
                self.assertTrue(comments and comments[0].startswith(f"# the deny list of {tb.host_if} (policy set "),
                                comments)
                self.assertEqual(ctl(tb, "-j", "deny", "save", tb.host_if, saved).returncode, 2)

                # fail-static: the daemon gone, the pins still answer
                d.kill(signal.SIGKILL)
                again = ctl_json(tb, "class", "list", tb.host_if)
                self.assertEqual(again, listed)
                allow = os.path.join(tb.rundir, "allow.netset")
                ctl(tb, "allow", "save", tb.host_if, allow, check=True)
                self.assertEqual(netset_entries(allow)[0], [])


if __name__ == "__main__":
    main()
