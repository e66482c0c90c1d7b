"""deploy/grafana/sluice.json and deploy/prometheus/sluice-alerts.yaml, parsed
(Python's json, python3-yaml) and checked against what sluiced exports: every
metric name either names is a family of ctl/sluiced/metrics.cpp's one table
(listed by the sluice-metric-families tool, built from it), every label they
select on is one that family carries, the dashboard's panels and variables
are well formed, and the alerts the issue asks for are there. Then
Prometheus's own promtool (scripts/setup.sh takes it from Debian's package)
checks the rules' PromQL and runs sluice-alerts.test.yaml: when each alert
fires and when it must not, with its labels and rendered annotations.

Environment (tests/packaging/CMakeLists.txt): SLUICE_SOURCE_DIR,
SLUICE_METRIC_FAMILIES."""

import json
import os
import re
import shutil
import subprocess
import unittest

SOURCE_DIR = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("SLUICE_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
FAMILIES_TOOL = os.environ.get("SLUICE_METRIC_FAMILIES",
                               os.path.join(BUILD_DIR, "tests", "packaging", "sluice-metric-families"))
DASHBOARD = os.path.join(SOURCE_DIR, "deploy", "grafana", "sluice.json")
ALERTS = os.path.join(SOURCE_DIR, "deploy", "prometheus", "sluice-alerts.yaml")
ALERT_TESTS = os.path.join(SOURCE_DIR, "tests", "packaging", "sluice-alerts.test.yaml")

try:
    import yaml
except ImportError:  # python3-yaml (scripts/setup.sh)
    yaml = None

# A metric name in PromQL; "sluice_" is the prefix of every family sluiced has.
METRIC = re.compile(r"\b(sluice_[a-z0-9_]+)\b")
# label="value", label=~"regex", label!="...": the labels a selector names.
SELECTOR = re.compile(r"\b(sluice_[a-z0-9_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*\"")
# Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"instance", "job"}


def exported_families():
    """{name: (type, {label names} or None when the snapshot had no sample)}."""
    p = subprocess.run([FAMILIES_TOOL], capture_output=True, text=True, timeout=30, check=True)
    out = {}
    for line in p.stdout.splitlines():
        name, kind, labels = line.split(" ")
        out[name] = (kind, None if labels == "-" else set(labels.split(",")))
    return out


def dashboard_exprs(dash):
    exprs = []
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            exprs.append((panel["title"], t["expr"]))
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            exprs.append((f"variable {v['name']}", v["definition"]))
    return exprs


def alert_rules(rules_doc):
    return [r for g in rules_doc["groups"] for r in g["rules"]]


class Dashboards(unittest.TestCase):
    def setUp(self):
        if yaml is None:
            if os.environ.get("CI", "") in ("true", "1"):
                self.fail("python3-yaml is not installed (scripts/setup.sh installs it)")
            raise unittest.SkipTest("python3-yaml is not installed")
        self.families = exported_families()
        with open(DASHBOARD) as f:
            self.dash = json.load(f)
        with open(ALERTS) as f:
            self.alerts = yaml.safe_load(f)

    def check_names(self, where, expr):
        names = METRIC.findall(expr)
        self.assertTrue(names, f"{where}: names no sluice metric: {expr}")
        for name in names:
            self.assertIn(name, self.families, f"{where}: {name} is not a metric sluiced exports "
                                               f"(it exports {sorted(self.families)})")
        for name, matchers in SELECTOR.findall(expr):
            _, labels = self.families[name]
            if labels is None:  # no sample in the lister's snapshot: the name is all we know
                continue
            for label in MATCHER.findall(matchers):
                if label not in TARGET_LABELS:
                    self.assertIn(label, labels, f"{where}: {name} has no label {label} ({sorted(labels)})")

    def test_the_families_come_from_sluiced(self):
        # The lister runs the real table: the families every deployment has.
        for name in ("sluice_packets_total", "sluice_breaker_state", "sluice_standing_valve_closed",
                     "sluice_audit_violations_total"):
            self.assertIn(name, self.families)
        self.assertEqual(self.families["sluice_packets_total"][0], "counter")

    def test_every_metric_the_dashboard_names_is_exported(self):
        exprs = dashboard_exprs(self.dash)
        self.assertGreater(len(exprs), 10)
        for where, expr in exprs:
            self.check_names(where, expr)

    def test_every_metric_the_alerts_name_is_exported(self):
        for rule in alert_rules(self.alerts):
            self.check_names(rule["alert"], rule["expr"])

    def test_the_dashboard_shows_what_the_issue_asks(self):
        exprs = " ".join(e for _, e in dashboard_exprs(self.dash))
        for name in ("sluice_packets_total", "sluice_class_packets_total", "sluice_class_bytes_total",
                     "sluice_breaker_state", "sluice_standing_entries", "sluice_standing_valve_closed",
                     "sluice_audit_violations_total", "sluice_policy_reloads_total",
                     "sluice_policy_last_reload_success", "sluice_policy_classes"):
            self.assertIn(name, exprs)

    def test_dashboard_panels_and_variables_are_well_formed(self):
        self.assertEqual(self.dash["uid"], "sluice")
        ids = [p["id"] for p in self.dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        variables = {v["name"]: v for v in self.dash["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        for p in self.dash["panels"]:
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            if p["type"] == "row":
                continue
            self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
            self.assertTrue(p["targets"], p["title"])
            refs = [t["refId"] for t in p["targets"]]
            self.assertEqual(len(refs), len(set(refs)), p["title"])
            for t in p["targets"]:
                # every panel follows the node and interface the viewer picked
                for v in ("$instance", "$iface"):
                    self.assertIn(v, t["expr"], f"{p['title']}: {t['expr']}")
                # rate() and increase() only over counters
                for fn, name in re.findall(r"\b(rate|increase)\(\s*(sluice_[a-z0-9_]+)", t["expr"]):
                    self.assertEqual(self.families[name][0], "counter", f"{p['title']}: {fn}({name})")

    def test_alerts_the_issue_asks_for_well_formed(self):
        rules = alert_rules(self.alerts)
        names = [r["alert"] for r in rules]
        self.assertEqual(len(names), len(set(names)))
        # breaker shedding, standing valve, audit violations, reload refused
        wanted = {"SluiceBreakerShedding": "sluice_breaker_state",
                  "SluiceStandingValveClosed": "sluice_standing_valve_closed",
                  "SluiceAuditViolations": "sluice_audit_violations_total",
                  "SluicePolicyReloadRefused": "sluice_policy_"}
        for alert, metric in wanted.items():
            self.assertIn(alert, names)
            (rule,) = [r for r in rules if r["alert"] == alert]
            self.assertIn(metric, rule["expr"], alert)
        for rule in rules:
            self.assertIn(rule["labels"]["severity"], ("warning", "critical"), rule["alert"])
            self.assertTrue(rule["annotations"]["summary"], rule["alert"])
            self.assertRegex(rule["for"], r"^\d+[smh]$", rule["alert"])
            for fn, name in re.findall(r"\b(rate|increase)\(\s*(sluice_[a-z0-9_]+)", rule["expr"]):
                self.assertEqual(self.families[name][0], "counter", f"{rule['alert']}: {fn}({name})")


class Promtool(unittest.TestCase):
    def setUp(self):
        self.promtool = shutil.which("promtool")
        if self.promtool is None:
            if os.environ.get("CI", "") in ("true", "1"):
                self.fail("promtool is not installed (scripts/setup.sh takes it from Debian's prometheus package)")
            raise unittest.SkipTest("promtool is not installed")

    def promtool_run(self, *args):
        p = subprocess.run([self.promtool, *args], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, f"promtool {' '.join(args)}:\n{p.stdout}{p.stderr}")
        return p.stdout + p.stderr

    def test_promtool_checks_the_rules(self):
        out = self.promtool_run("check", "rules", ALERTS)
        self.assertIn("SUCCESS", out)

    def test_each_alert_fires_when_it_should_and_only_then(self):
        if yaml is None:
            self.skipTest("python3-yaml is not installed")
        with open(ALERTS) as f:
            alerts = {r["alert"] for r in alert_rules(yaml.safe_load(f))}
        with open(ALERT_TESTS) as f:
            cases = yaml.safe_load(f)["tests"]
        tested = {t["alertname"] for c in cases for t in c["alert_rule_test"]}
        self.assertEqual(tested, alerts, "every alert has a test in sluice-alerts.test.yaml, and only those")
        for c in cases:  # each alert is seen firing and seen quiet
            by_alert = {}
            for t in c["alert_rule_test"]:
                by_alert.setdefault(t["alertname"], set()).add(bool(t["exp_alerts"]))
            for alert, seen in by_alert.items():
                self.assertEqual(seen, {True, False}, f"{alert}: tested firing and not firing")
        # promtool resolves rule_files from the test file's directory
        out = self.promtool_run("test", "rules", ALERT_TESTS)
        self.assertIn("SUCCESS", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
