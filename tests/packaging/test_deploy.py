"""deploy/kubernetes/ parsed with python3-yaml and checked field by field, no
cluster needed: the kinds and their references, the DaemonSet's host
network, bpffs mount and propagation, capabilities (the unit's set), probes
and Prometheus annotations on the metrics port, and the ConfigMap's
sluice.conf against `sluiced --help` (and parsed by sluiced itself)."""

import os
import re
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("SLUICE_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
SLUICED = os.environ.get("SLUICED", os.path.join(BUILD_DIR, "ctl", "sluiced", "sluiced"))
DEPLOY = os.path.join(SOURCE_DIR, "deploy", "kubernetes")
UNIT = os.path.join(SOURCE_DIR, "packaging", "systemd", "sluiced.service.in")

try:
    import yaml
except ImportError:  # python3-yaml (scripts/setup.sh)
    yaml = None


def load_all():
    """{kind: [doc, ...]} over every *.yaml in deploy/kubernetes."""
    docs = {}
    for name in sorted(os.listdir(DEPLOY)):
        if name.endswith(".yaml"):
            with open(os.path.join(DEPLOY, name)) as f:
                for doc in yaml.safe_load_all(f):
                    if doc is not None:
                        docs.setdefault(doc["kind"], []).append(doc)
    return docs


def sluiced_options():
    p = subprocess.run([SLUICED, "--help"], capture_output=True, text=True, timeout=30, check=True)
    return set(re.findall(r"^\s+(?:-\w \[ )?--([a-z0-9-]+)", p.stdout, re.M))


def unit_caps():
    with open(UNIT) as f:
        (line,) = [l for l in f.read().splitlines() if l.startswith("CapabilityBoundingSet=")]
    return sorted(c.removeprefix("CAP_") for c in line.split("=", 1)[1].split())


class Kubernetes(unittest.TestCase):
    def setUp(self):
        if yaml is None:
            if os.environ.get("CI", "") in ("true", "1"):
                self.fail("python3-yaml is not installed (scripts/setup.sh installs it)")
            raise unittest.SkipTest("python3-yaml is not installed")
        self.docs = load_all()
        (self.ds,) = self.docs["DaemonSet"]
        (self.cm,) = self.docs["ConfigMap"]
        self.pod = self.ds["spec"]["template"]["spec"]
        (self.main,) = [c for c in self.pod["containers"] if c["name"] == "sluiced"]

    def test_kinds_namespace_and_kustomization(self):
        self.assertEqual(sorted(self.docs), ["ConfigMap", "DaemonSet", "Kustomization", "Namespace"])
        (ns,) = self.docs["Namespace"]
        for doc in (self.ds, self.cm):
            self.assertEqual(doc["metadata"]["namespace"], ns["metadata"]["name"])
        self.assertEqual(self.ds["apiVersion"], "apps/v1")
        self.assertEqual(self.cm["apiVersion"], "v1")
        (k,) = self.docs["Kustomization"]
        yamls = sorted(n for n in os.listdir(DEPLOY) if n.endswith(".yaml") and n != "kustomization.yaml")
        self.assertEqual(sorted(k["resources"]), yamls)
        self.assertEqual(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "privileged")

    def test_daemonset_runs_on_every_node_in_the_host_network(self):
        spec = self.ds["spec"]
        labels = spec["template"]["metadata"]["labels"]
        for k, v in spec["selector"]["matchLabels"].items():
            self.assertEqual(labels[k], v)
        self.assertIs(self.pod["hostNetwork"], True)
        self.assertEqual(self.pod["dnsPolicy"], "ClusterFirstWithHostNet")
        self.assertIn({"operator": "Exists"}, self.pod["tolerations"])
        self.assertEqual(spec["updateStrategy"]["type"], "RollingUpdate")
        self.assertEqual(self.pod["priorityClassName"], "system-node-critical")

    def test_bpffs_from_the_node_with_propagation(self):
        vols = {v["name"]: v for v in self.pod["volumes"]}
        bpffs = [n for n, v in vols.items() if v.get("hostPath", {}).get("path") == "/sys/fs/bpf"]
        self.assertEqual(len(bpffs), 1)
        self.assertEqual(vols[bpffs[0]]["hostPath"]["type"], "Directory")
        (m,) = [m for m in self.main["volumeMounts"] if m["name"] == bpffs[0]]
        self.assertEqual(m["mountPath"], "/sys/fs/bpf")
        self.assertEqual(m["mountPropagation"], "HostToContainer")
        self.assertFalse(m.get("readOnly", False))
        # The mount on the node, where needed: privileged + Bidirectional
        # (Kubernetes refuses Bidirectional in an unprivileged container).
        (init,) = self.pod["initContainers"]
        (im,) = [m for m in init["volumeMounts"] if m["name"] == bpffs[0]]
        self.assertEqual(im["mountPropagation"], "Bidirectional")
        self.assertIs(init["securityContext"]["privileged"], True)
        self.assertIn("mount -t bpf", " ".join(init["command"]))
        self.assertIn("mountpoint -q /sys/fs/bpf ||", " ".join(init["command"]))
        # the pin directory sluiced is told to use lies in that mount
        self.assertTrue(self.conf()["pin-dir"].startswith("/sys/fs/bpf/"))
        # the control socket's directory is the node's
        (run,) = [v for v in vols.values() if v.get("hostPath", {}).get("path") == "/run/sluice"]
        self.assertTrue(self.conf()["socket"].startswith("/run/sluice/"))

    def test_capabilities_are_the_units(self):
        sc = self.main["securityContext"]
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertEqual(sorted(sc["capabilities"]["add"]), unit_caps())
        self.assertIs(sc["privileged"], False)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertEqual(sc["runAsUser"], 0)
        self.assertEqual(sc["seccompProfile"]["type"], "RuntimeDefault")
        self.assertIs(self.pod["automountServiceAccountToken"], False)

    def test_metrics_probes_and_scrape_annotations_agree(self):
        args = self.main["args"]
        i = args.index("--metrics-listen")
        host, port = args[i + 1].rsplit(":", 1)
        self.assertEqual(host, "$(NODE_IP)")
        (env,) = [e for e in self.main["env"] if e["name"] == "NODE_IP"]
        self.assertEqual(env["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIP")
        port = int(port)
        self.assertEqual(port, 9464)
        for probe in ("livenessProbe", "readinessProbe"):
            get = self.main[probe]["httpGet"]
            self.assertEqual((get["path"], get["port"]), ("/healthz", port), probe)
        ann = self.ds["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(ann["prometheus.io/scrape"], "true")  # strings, as annotations must be
        self.assertEqual(ann["prometheus.io/port"], str(port))
        self.assertEqual(ann["prometheus.io/path"], "/metrics")
        self.assertEqual([p["containerPort"] for p in self.main["ports"]], [port])
        # sluiced reads the ConfigMap through --config, from its mount
        i = args.index("--config")
        conf_path = args[i + 1]
        (m,) = [m for m in self.main["volumeMounts"] if m["mountPath"] == os.path.dirname(conf_path)]
        (v,) = [v for v in self.pod["volumes"] if v["name"] == m["name"]]
        self.assertEqual(v["configMap"]["name"], self.cm["metadata"]["name"])
        self.assertIn(os.path.basename(conf_path), self.cm["data"])
        self.assertTrue(m.get("readOnly"))

    def conf(self):
        out = {}
        for line in self.cm["data"]["sluice.conf"].splitlines():
            m = re.match(r"^\s*([a-z][a-z0-9-]*)\s*=\s*(.*?)\s*$", line)
            if m:
                out[m.group(1)] = m.group(2)
        return out

    def test_configmap_conf_is_valid_for_sluiced(self):
        conf = self.conf()
        self.assertIn("interface", conf)
        options = sluiced_options()
        for key in conf:
            self.assertIn(key, options, f"ConfigMap sluice.conf: '{key}' is not a sluiced option")
        self.assertNotIn("metrics-listen", conf)  # the DaemonSet gives it with the node's address
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write(self.cm["data"]["sluice.conf"])
            f.flush()
            p = subprocess.run([SLUICED, "--config", f.name, "--help"], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_configmap_ships_the_packaged_policy_and_sluiced_watches_it(self):
        # The ConfigMap's policy is the one the package installs, as it is
        # (one text, checked here, rather than two that drift): a policy
        # that enforces nothing of its own until the cluster's operator
        # edits it.
        with open(os.path.join(SOURCE_DIR, "packaging/policy.default.yaml")) as f:
            self.assertEqual(self.cm["data"]["policy.yaml"], f.read(),
                             "ConfigMap policy.yaml is not packaging/policy.default.yaml")
        policy_doc = yaml.safe_load(self.cm["data"]["policy.yaml"])
        self.assertEqual(policy_doc, {"version": 1})
        args = self.main["args"]
        policy = args[args.index("--policy") + 1]
        self.assertIn("--policy-watch", args)
        # mounted as a directory (a subPath mount never sees the kubelet's
        # updates), every key where sluiced and the policy look for it
        (m,) = [m for m in self.main["volumeMounts"] if m["mountPath"] == os.path.dirname(policy)]
        self.assertNotIn("subPath", m)
        (v,) = [v for v in self.pod["volumes"] if v["name"] == m["name"]]
        paths = {i["key"]: i["path"] for i in v["configMap"]["items"]}
        self.assertEqual(set(paths), set(self.cm["data"]))
        self.assertEqual(paths["policy.yaml"], os.path.basename(policy))
        # every netset file the policy names, relative to its directory, is mounted
        named = [e["file"] for lst in ("allow", "deny") for e in policy_doc.get(lst) or [] if isinstance(e, dict)]
        self.assertTrue(set(named) <= set(paths.values()), named)

    def test_images_and_command(self):
        images = {c["image"] for c in self.pod["containers"] + self.pod["initContainers"]}
        self.assertEqual(len(images), 1, images)
        self.assertEqual(self.main["command"], ["/usr/bin/sluiced"])
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            self.assertIn("sluice_*.deb", f.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
