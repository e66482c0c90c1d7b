"""sluiced --metrics-listen on a real veth in namespaces made by the test:
/metrics scraped with curl inside the host namespace and checked against the
pinned maps (bpftool) after real frames; the breaker's transition counters and
state after `sluicectl breaker`; /healthz; slow scrapers that do not stall the
control loop; off by default; a taken port refused before anything attaches."""

import os
import re
import subprocess
import time
import unittest

from sluice_netns import (OUTCOMES, Daemon, Testbed, bpftool_json, ctl, ctl_json, main, pinned_config, require_root,
                          run, send, sluice_abi, xdp_prog_id)

SRC = "198.18.7.7"
PORT = 9464
VERDICTS = OUTCOMES  # sluice_abi.h's table: the label values, in the counters map's key order
FAMILIES = {
    "sluice_packets_total": "counter",
    "sluice_bytes_total": "counter",
    "sluice_breaker_state": "gauge",
    "sluice_breaker_transitions_total": "counter",
    "sluice_admission_fraction": "gauge",
    "sluice_audit_violations_total": "counter",
    "sluice_table_slots": "gauge",
    "sluice_standing_entries": "gauge",
    "sluice_standing_capacity": "gauge",
    "sluice_standing_valve_closed": "gauge",
    "sluice_standing_valve_closes_total": "counter",
    # the policy file's (no samples without one: these daemons run without)
    "sluice_class_packets_total": "counter",
    "sluice_class_bytes_total": "counter",
    "sluice_policy_reloads_total": "counter",
    "sluice_policy_classes": "gauge",
    "sluice_policy_last_reload_success": "gauge",
}
EDGES = [("serving", "shedding"), ("shedding", "recovering"), ("recovering", "serving"), ("recovering", "shedding")]


def curl(tb, path, port=PORT, timeout=10):
    """(HTTP status, body) of GET path from inside the host namespace."""
    p = tb.exec("host", ["curl", "-s", "-S", "--max-time", str(timeout), "-o", "-", "-w", "\n%{http_code}",
                         f"http://127.0.0.1:{port}{path}"], check=False, timeout=timeout + 10)
    if p.returncode != 0:
        return None, p.stderr
    body, _, code = p.stdout.rpartition("\n")
    return int(code), body


def parse_labels(text):
    labels, i = {}, 0
    while i < len(text):
        m = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="').match(text, i)
        assert m, f"bad labels: {text!r}"
        key, i, val = m.group(1), m.end(), ""
        while text[i] != '"':
            if text[i] == "\\":
                val += {"\\": "\\", '"': '"', "n": "\n"}[text[i + 1]]
                i += 2
            else:
                val += text[i]
                i += 1
        labels[key] = val
        i += 1
        if i < len(text) and text[i] == ",":
            i += 1
    return labels


def parse_exposition(text):
    """{(name, frozenset(labels)): value}, checking HELP/TYPE once per family
    and before its samples."""
    samples, seen_type, seen_help, current = {}, {}, {}, None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            assert name not in seen_help, f"HELP twice for {name}"
            seen_help[name] = True
        elif line.startswith("# TYPE "):
            _, _, name, typ = line.split()
            assert name not in seen_type, f"TYPE twice for {name}"
            seen_type[name] = typ
            current = name
        elif line and not line.startswith("#"):
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
            assert m, f"bad sample line: {line!r}"
            name = m.group(1)
            assert name == current, f"{name} outside its family block"
            labels = parse_labels(m.group(2) or "")
            v = m.group(3)
            samples[(name, frozenset(labels.items()))] = float(v) if "." in v or "e" in v else int(v)
    return samples, seen_type


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def scrape(tb, port=PORT):
    code, body = curl(tb, "/metrics", port)
    assert code == 200, f"/metrics: {code} {body}"
    samples, types = parse_exposition(body)
    assert types == FAMILIES, types
    return samples


def counter_pairs(tb, iface=None):
    """{verdict: (packets, bytes)} summed over CPUs, from the pinned counters."""
    path = os.path.join(tb.pin_dir, iface or tb.host_if, "counters")
    out = {}
    for entry in bpftool_json("map", "dump", "pinned", path):
        key = entry["key"]
        k = int(key[0], 16) if isinstance(key, list) else int(key)
        pk = by = 0
        for v in entry["values"]:
            if isinstance(v["value"], list):
                c = sluice_abi.unpack("sluice_counter", bytes(int(x, 16) for x in v["value"]))
                p, b = c["packets"], c["bytes"]
            else:
                p, b = v["value"]["packets"], v["value"]["bytes"]
            pk += p
            by += b
        out[VERDICTS[k]] = (pk, by)
    return out


def scraped_pairs(samples, iface):
    return {v: (value(samples, "sluice_packets_total", iface=iface, verdict=v),
                value(samples, "sluice_bytes_total", iface=iface, verdict=v)) for v in VERDICTS}


def wait_for(pred, timeout=10, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


class Metrics(unittest.TestCase):
    def setUp(self):
        require_root(self)

    def test_counters_and_gauges_match_the_maps(self):
        with Testbed("metrics") as tb, Daemon(tb, "--rate", "1", "--burst", "50", "--period", "0.2",
                                               "--table-size", "4096", "--metrics-listen", f"127.0.0.1:{PORT}"):
            code, body = curl(tb, "/healthz")
            self.assertEqual(code, 200, body)
            self.assertTrue(body.startswith("ok"), body)
            s = scrape(tb)
            ifc = tb.host_if
            self.assertEqual(value(s, "sluice_table_slots", iface=ifc), 4096)
            self.assertEqual(value(s, "sluice_admission_fraction", iface=ifc), 1)
            self.assertEqual(value(s, "sluice_audit_violations_total", iface=ifc), 0)
            standing = ctl_json(tb, "status")["interfaces"][0]["standing"]
            self.assertEqual(value(s, "sluice_standing_capacity", iface=ifc), standing["capacity"])
            # (entries is a count the periods make, a sweep every 5 s, and the feeders see every socket of the machine)
            self.assertLessEqual(value(s, "sluice_standing_entries", iface=ifc), standing["capacity"])
            self.assertEqual(value(s, "sluice_standing_valve_closed", iface=ifc), 0)
            self.assertEqual(value(s, "sluice_standing_valve_closes_total", iface=ifc), 0)
            for st in ("serving", "shedding", "recovering"):
                self.assertEqual(value(s, "sluice_breaker_state", iface=ifc, state=st), int(st == "serving"))
            for a, b in EDGES:
                self.assertEqual(value(s, "sluice_breaker_transitions_total", iface=ifc, **{"from": a, "to": b}), 0)
            # no label but these: nothing per source
            names = {k for (_, labels) in s for k, _ in labels}
            self.assertEqual(names, {"iface", "verdict", "state", "from", "to"})
            self.assertEqual(len(s), 2 * len(VERDICTS) + 3 + 4 + 3 + 4)  # + the four of standing

            # frames: 5 admitted, 7 over the limit, 4 denied
            ctl(tb, "bucket", ifc, SRC, "--set", "5", check=True)
            send(tb, 12, SRC, size=100)
            ctl(tb, "deny", "add", ifc, "198.18.9.0/24", check=True)
            send(tb, 4, "198.18.9.9", size=200)

            # Counters as the maps hold them, once quiet: the scrape a couple
            # of periods later must show exactly those.
            for _ in range(20):
                before = counter_pairs(tb)
                time.sleep(0.5)
                s = scrape(tb)
                after = counter_pairs(tb)
                if before == after:
                    break
            else:
                self.fail("the counters never stayed still for half a second")
            self.assertEqual(scraped_pairs(s, ifc), after)
            self.assertEqual(after["drop_rate"][0], 7)
            self.assertEqual(after["drop_deny"][0], 4)
            self.assertGreaterEqual(after["passed"][0], 5)
            # bytes are the frames' lengths as sent (--size)
            self.assertEqual(after["drop_rate"][1], 7 * 100)
            self.assertEqual(after["drop_deny"][1], 4 * 200)

    def test_breaker_transitions_state_and_admission(self):
        with Testbed("metricsbrk") as tb, Daemon(tb, "--period", "0.2", "--recovery", "600",
                                                  "--metrics-listen", f"127.0.0.1:{PORT}"):
            ifc = tb.host_if

            def edges(s):
                return [value(s, "sluice_breaker_transitions_total", iface=ifc, **{"from": a, "to": b})
                        for a, b in EDGES]

            def state(s):
                return [st for st in ("serving", "shedding", "recovering")
                        if value(s, "sluice_breaker_state", iface=ifc, state=st) == 1]

            ctl(tb, "breaker", "trip", ifc, check=True)
            s = wait_for(lambda: (lambda s: s if edges(s)[0] == 1 else None)(scrape(tb)), what="serving->shedding")
            self.assertEqual(edges(s), [1, 0, 0, 0])
            self.assertEqual(state(s), ["shedding"])
            self.assertEqual(value(s, "sluice_admission_fraction", iface=ifc), 1)
            self.assertEqual(pinned_config(tb)["admission_ppm"], 1_000_000)

            # an invalid move is refused and counts nothing
            self.assertEqual(ctl(tb, "breaker", "close", ifc).returncode, 1)

            ctl(tb, "breaker", "recover", ifc, check=True)
            s = wait_for(lambda: (lambda s: s if edges(s)[1] == 1 else None)(scrape(tb)),
                         what="shedding->recovering")
            self.assertEqual(edges(s), [1, 1, 0, 0])
            self.assertEqual(state(s), ["recovering"])
            # The ramp moves the fraction every period: the scrape lies between
            # the map's value before it and after it.
            lo = pinned_config(tb)["admission_ppm"]
            time.sleep(0.5)
            frac = value(scrape(tb), "sluice_admission_fraction", iface=ifc)
            hi = pinned_config(tb)["admission_ppm"]
            self.assertLessEqual(lo, round(frac * 1e6))
            self.assertLessEqual(round(frac * 1e6), hi)
            self.assertGreaterEqual(frac, 0.1)
            self.assertLess(frac, 0.2)

            ctl(tb, "breaker", "close", ifc, check=True)
            s = wait_for(lambda: (lambda s: s if edges(s)[2] == 1 else None)(scrape(tb)),
                         what="recovering->serving")
            self.assertEqual(edges(s), [1, 1, 1, 0])
            self.assertEqual(state(s), ["serving"])
            self.assertEqual(value(s, "sluice_admission_fraction", iface=ifc), 1)

    def test_slow_scrapers_do_not_stall_the_control_loop(self):
        with Testbed("metricsslow") as tb, Daemon(tb, "--period", "0.2", "--audit-slots", "1024",
                                                   "--metrics-listen", f"127.0.0.1:{PORT}"):
            # 12 connections that never finish (or never start) a request,
            # held for 4 s: more than the server has workers.
            hold = ("import socket, sys, time\n"
                    "conns = []\n"
                    "for i in range(12):\n"
                    "    c = socket.create_connection(('127.0.0.1', %d))\n"
                    "    if i %% 2: c.send(b'GET /metrics HTTP/1.1\\r\\nHo')\n"
                    "    conns.append(c)\n"
                    "print('held', flush=True)\n"
                    "time.sleep(4)\n" % PORT)
            slow = subprocess.Popen(["ip", "netns", "exec", tb.ns_host, "python3", "-c", hold],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                self.assertEqual(slow.stdout.readline().strip(), "held", slow.stderr.read() if slow.poll() else "")
                # The loop keeps its period: the audit advances 1024 slots per
                # tick, and the control socket answers at once.
                t0 = time.monotonic()
                a = ctl_json(tb, "status")["interfaces"][0]["audit"]["swept"]
                self.assertLess(time.monotonic() - t0, 1.5)
                time.sleep(1.0)
                b = ctl_json(tb, "status")["interfaces"][0]["audit"]["swept"]
                self.assertGreaterEqual(b - a, 3 * 1024)
                # and a scraper still gets through (a worker frees up within
                # the server's read timeout)
                code, body = curl(tb, "/healthz", timeout=10)
                self.assertEqual(code, 200, body)
            finally:
                slow.kill()
                slow.communicate(timeout=10)
            self.assertEqual(curl(tb, "/metrics")[0], 200)

    def test_off_by_default_and_a_taken_port_is_refused(self):
        with Testbed("metricsoff") as tb:
            with Daemon(tb, "--period", "0.2"):
                code, err = curl(tb, "/metrics", timeout=3)
                self.assertIsNone(code)  # nothing listens
                ctl(tb, "detach", tb.host_if, check=True)
            self.assertIsNone(xdp_prog_id(tb))
            # A listener already on the port, with SO_REUSEPORT as another
            # sluiced would have had with httplib's defaults: sluiced stops
            # before attaching instead of sharing the port (and the scrapes).
            squat = subprocess.Popen(
                ["ip", "netns", "exec", tb.ns_host, "python3", "-c",
                 "import socket, time\ns = socket.socket()\n"
                 "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                 "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
                 "s.bind(('127.0.0.1', %d))\ns.listen()\n"
                 "print('bound', flush=True)\ntime.sleep(30)\n" % PORT],
                stdout=subprocess.PIPE, text=True)
            try:
                self.assertEqual(squat.stdout.readline().strip(), "bound")
                d = Daemon(tb, "--metrics-listen", f"127.0.0.1:{PORT}")
                d.start(wait=False)
                self.assertEqual(d.proc.wait(timeout=20), 1)
                self.assertIn(f"--metrics-listen 127.0.0.1:{PORT}", d.output())
                self.assertIsNone(xdp_prog_id(tb))
                self.assertFalse(os.path.exists(os.path.join(tb.pin_dir, tb.host_if, "link")))
            finally:
                squat.kill()
                squat.wait(timeout=10)
                squat.stdout.close()
            # a bad address is a usage error
            d = Daemon(tb, "--metrics-listen", "localhost:9464")
            d.start(wait=False)
            self.assertEqual(d.proc.wait(timeout=20), 2)
            self.assertIn("numeric", d.output())


if __name__ == "__main__":
    main()
