"""What `cmake --install` and `cpack -G DEB` produce, with no root: the file
list of the install tree and of the .deb (dpkg-deb), the package's
dependencies and conffiles, the systemd unit (systemd-analyze verify), the man
pages (groff warnings), the bash completion (run in bash), and sluice.conf
against `sluiced --help` (every key an option, every stated default the real
one).

Environment (set by tests/packaging/CMakeLists.txt): SLUICE_BUILD_DIR,
SLUICE_SOURCE_DIR, SLUICED, CMAKE_COMMAND, CPACK_COMMAND. Outside CI a missing
tool skips; in CI it fails."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("SLUICE_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
SLUICED = os.environ.get("SLUICED", os.path.join(BUILD_DIR, "ctl", "sluiced", "sluiced"))
CMAKE = os.environ.get("CMAKE_COMMAND", "cmake")
CPACK = os.environ.get("CPACK_COMMAND", "cpack")

# Every file the install puts down, relative to DESTDIR, for prefix /usr.
EXPECTED_FILES = {
    "usr/bin/sluiced",
    "usr/bin/sluicectl",
    "etc/sluice/sluice.conf",
    "etc/sluice/policy.yaml",
    "usr/share/doc/sluice/examples/policy.yaml",
    "usr/share/doc/sluice/examples/policy.d/deny.netset",
    "usr/lib/systemd/system/sluiced.service",
    "usr/share/man/man8/sluiced.8",
    "usr/share/man/man8/sluicectl.8",
    "usr/share/bash-completion/completions/sluicectl",
    "usr/share/doc/sluice/README.md",
    "usr/share/doc/sluice/deploy.md",
    "usr/share/doc/sluice/upstream.md",
}
DEPENDS = ["libbpf1", "libboost-program-options1.74.0", "libsystemd0", "libcpp-httplib0.11"]


def in_ci():
    return os.environ.get("CI", "") in ("true", "1")


def need_tool(test, name):
    path = shutil.which(name)
    if not path:
        if in_ci():
            test.fail(f"{name} is not installed (scripts/setup.sh installs it)")
        raise unittest.SkipTest(f"{name} is not installed")
    return path


def run(cmd, check=True, timeout=300, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\nstdout: {p.stdout[-3000:]}\n"
                             f"stderr: {p.stderr[-3000:]}")
    return p


def files_under(root):
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def unit_value(text, key):
    """Every value of `key=` in a unit file, in order."""
    return [m.group(1).strip() for m in re.finditer(rf"^{key}=(.*)$", text, re.M)]


def help_defaults():
    """{option: default or None} from `sluiced --help`."""
    p = run([SLUICED, "--help"])
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"\s+(?:-\w \[ )?--([a-z0-9-]+)(?: \])?(?: arg)?(?: \(=([^)]*)\))?", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def conf_entries(text):
    """(key, value) of every `key = value` line, commented out or not."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^#?\s*([a-z][a-z0-9-]*)\s*=\s*(.*?)\s*$", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


class Install(unittest.TestCase):
    def test_install_tree_into_destdir(self):
        with tempfile.TemporaryDirectory(prefix="sluice-install-") as dest:
            run([CMAKE, "--install", BUILD_DIR, "--prefix", "/usr"], env=dict(os.environ, DESTDIR=dest))
            self.assertEqual(files_under(dest), EXPECTED_FILES)
            for b in ("sluiced", "sluicectl"):
                path = os.path.join(dest, "usr/bin", b)
                self.assertTrue(os.access(path, os.X_OK), path)
                self.assertEqual(run([path, "--help"]).returncode, 0)
            with open(os.path.join(dest, "usr/lib/systemd/system/sluiced.service")) as f:
                unit = f.read()
            self.assertEqual(unit_value(unit, "ExecStart"), ["/usr/bin/sluiced --config /etc/sluice/sluice.conf --rt-priority 1"])
            self.assertNotIn("@", unit)
            for installed, source in (("etc/sluice/sluice.conf", "packaging/sluice.conf"),
                                      ("etc/sluice/policy.yaml", "packaging/policy.default.yaml"),
                                      ("usr/share/doc/sluice/examples/policy.yaml", "packaging/policy.yaml"),
                                      ("usr/share/doc/sluice/examples/policy.d/deny.netset",
                                       "packaging/policy.d/deny.netset")):
                with open(os.path.join(dest, installed)) as f, open(os.path.join(SOURCE_DIR, source)) as g:
                    self.assertEqual(f.read(), g.read(), installed)

    def test_unit_names_the_prefix_installed_to(self):
        with tempfile.TemporaryDirectory(prefix="sluice-install-") as dest:
            run([CMAKE, "--install", BUILD_DIR, "--prefix", "/opt/sluice"], env=dict(os.environ, DESTDIR=dest))
            with open(os.path.join(dest, "opt/sluice/lib/systemd/system/sluiced.service")) as f:
                unit = f.read()
            self.assertEqual(unit_value(unit, "ExecStart"),
                             ["/opt/sluice/bin/sluiced --config /etc/sluice/sluice.conf --rt-priority 1"])
            self.assertTrue(os.path.exists(os.path.join(dest, "etc/sluice/sluice.conf")))
        # and back to /usr, so the build tree's generated unit is the usual one
        with tempfile.TemporaryDirectory(prefix="sluice-install-") as dest:
            run([CMAKE, "--install", BUILD_DIR, "--prefix", "/usr"], env=dict(os.environ, DESTDIR=dest))


class Deb(unittest.TestCase):
    def test_deb_files_depends_conffiles(self):
        need_tool(self, "dpkg-deb")
        need_tool(self, "dpkg-shlibdeps")
        with tempfile.TemporaryDirectory(prefix="sluice-deb-") as out:
            run([CPACK, "-G", "DEB", "-B", out, "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake")])
            debs = [f for f in os.listdir(out) if f.endswith(".deb")]
            self.assertEqual(len(debs), 1, os.listdir(out))
            deb = os.path.join(out, debs[0])
            self.assertRegex(debs[0], r"^sluice_\d+\.\d+\.\d+_[a-z0-9]+\.deb$")

            fields = {}
            for k in ("Package", "Version", "Architecture", "Depends", "Section", "Maintainer"):
                fields[k] = run(["dpkg-deb", "-f", deb, k]).stdout.strip()
            self.assertEqual(fields["Package"], "sluice")
            self.assertEqual(fields["Architecture"], run(["dpkg", "--print-architecture"]).stdout.strip())
            depends = [d.strip().split(" ")[0] for d in fields["Depends"].split(",")]
            for d in DEPENDS:
                self.assertIn(d, depends, fields["Depends"])
            self.assertIn("libc6", depends, "dpkg-shlibdeps adds the C runtime")

            listing = run(["dpkg-deb", "-c", deb]).stdout
            files = set()
            for line in listing.splitlines():
                if line.startswith("-"):  # regular files only; directories start with d
                    files.add(line.split()[-1].removeprefix("./"))
            self.assertEqual(files, EXPECTED_FILES)

            ctrl = os.path.join(out, "control")
            run(["dpkg-deb", "-e", deb, ctrl])
            with open(os.path.join(ctrl, "conffiles")) as f:
                self.assertEqual(f.read().split(), ["/etc/sluice/sluice.conf", "/etc/sluice/policy.yaml"])

            root = os.path.join(out, "root")
            run(["dpkg-deb", "-x", deb, root])
            with open(os.path.join(root, "usr/lib/systemd/system/sluiced.service")) as f:
                self.assertEqual(unit_value(f.read(), "ExecStart"),
                                 ["/usr/bin/sluiced --config /etc/sluice/sluice.conf --rt-priority 1"])
            p = run([os.path.join(root, "usr/bin/sluiced"), "--help"])
            self.assertIn("--metrics-listen", p.stdout)
            # stripped: no debug sections left in the packaged binaries
            sections = run(["readelf", "-S", os.path.join(root, "usr/bin/sluiced")], check=False).stdout
            if sections:
                self.assertNotIn(".debug_info", sections)


class UnitFile(unittest.TestCase):
    def unit(self):
        with open(os.path.join(SOURCE_DIR, "packaging/systemd/sluiced.service.in")) as f:
            return f.read()

    def test_notify_capabilities_and_verify(self):
        unit = self.unit()
        self.assertEqual(unit_value(unit, "Type"), ["notify"])
        self.assertEqual(unit_value(unit, "CapabilityBoundingSet"), ["CAP_BPF CAP_PERFMON CAP_SYS_ADMIN"])
        self.assertEqual(unit_value(unit, "AmbientCapabilities"), [""])
        self.assertEqual(unit_value(unit, "NoNewPrivileges"), ["yes"])
        self.assertEqual(len(unit_value(unit, "WatchdogSec")), 1)
        # every capability in the set has its reason in the comments
        comments = "\n".join(l for l in unit.splitlines() if l.startswith("#"))
        for cap in ("CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN", "CAP_NET_ADMIN"):
            self.assertIn(cap, comments)
        analyze = need_tool(self, "systemd-analyze")
        with tempfile.TemporaryDirectory(prefix="sluice-unit-") as d:
            path = os.path.join(d, "sluiced.service")
            with open(path, "w") as f:
                f.write(unit.replace("@SLUICE_BINDIR@", os.path.dirname(os.path.abspath(SLUICED)))
                        .replace("@SLUICE_CONFIG_DIR@", "/etc/sluice"))
            p = run([analyze, "verify", "--man=no", path], check=False)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual((p.stdout + p.stderr).strip(), "")


class ManPages(unittest.TestCase):
    def test_render_without_warnings(self):
        groff = need_tool(self, "groff")
        for page, name in (("sluiced.8", "sluiced"), ("sluicectl.8", "sluicectl")):
            path = os.path.join(SOURCE_DIR, "packaging/man", page)
            p = run([groff, "-man", "-ww", "-z", "-Tutf8", path], check=False,
                    env=dict(os.environ, LC_ALL="C.UTF-8"))
            self.assertEqual((p.returncode, p.stderr), (0, ""), page)
            text = run([groff, "-man", "-Tutf8", path], env=dict(os.environ, LC_ALL="C.UTF-8")).stdout
            text = re.sub(r".\x08", "", text)
            for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"):
                self.assertIn(section, text, page)
            self.assertRegex(text, rf"\b{name}\s+- ")

    def test_sluiced_page_names_every_option(self):
        with open(os.path.join(SOURCE_DIR, "packaging/man/sluiced.8")) as f:
            page = f.read().replace("\\-", "-")
        for opt in help_defaults():
            self.assertIn("--" + opt, page, f"sluiced.8 does not document --{opt}")

    def test_sluicectl_page_names_every_command(self):
        with open(os.path.join(SOURCE_DIR, "packaging/man/sluicectl.8")) as f:
            page = f.read()
        for cmd in sluicectl_commands():
            self.assertRegex(page, rf"\.BR? \"?{cmd}\b", cmd)


SLUICECTL = os.environ.get("SLUICECTL", os.path.join(BUILD_DIR, "ctl", "sluicectl", "sluicectl"))


def sluicectl_commands():
    """The commands `sluicectl --help` lists, in its order."""
    text = run([SLUICECTL, "--help"]).stdout
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines() if line.strip()]


class BashCompletion(unittest.TestCase):
    def complete(self, *words):
        script = os.path.join(SOURCE_DIR, "packaging/bash-completion/sluicectl")
        words = list(words)
        prog = ('source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); '
                '_sluicectl; printf "%s\\n" "${COMPREPLY[@]}"')
        p = run(["bash", "-c", prog, script] + words)
        return [w for w in p.stdout.splitlines() if w]

    def test_commands_actions_interfaces_options(self):
        need_tool(self, "bash")
        self.assertEqual(sorted(self.complete("sluicectl", "")), sorted(sluicectl_commands()))
        self.assertEqual(self.complete("sluicectl", "br"), ["breaker"])
        self.assertEqual(self.complete("sluicectl", "breaker", ""), ["trip", "recover", "close"])
        self.assertEqual(self.complete("sluicectl", "-j", "allow", ""), ["add", "del", "list", "save"])
        self.assertEqual(self.complete("sluicectl", "deny", "l"), ["list"])
        self.assertEqual(self.complete("sluicectl", "class", ""), ["list"])
        self.assertEqual(self.complete("sluicectl", "class", "list", "l"), ["lo"])
        self.assertEqual(self.complete("sluicectl", "reload", "l"), ["lo"])
        self.assertEqual(self.complete("sluicectl", "explain", "lo", "198.18.0.1", "tcp"), ["tcp", "tcp-syn"])
        self.assertEqual(self.complete("sluicectl", "explain", "lo", ""), [])  # an address: nothing offered
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "deny.netset"), "w").close()
            self.assertEqual(self.complete("sluicectl", "deny", "save", "lo", os.path.join(d, "de")),
                             [os.path.join(d, "deny.netset")])
        ifaces = sorted(os.listdir("/sys/class/net"))
        self.assertIn("lo", ifaces)
        self.assertEqual(self.complete("sluicectl", "breaker", "trip", ""), ifaces)
        self.assertEqual(self.complete("sluicectl", "--socket", "/x", "status", "l"), ["lo"])
        self.assertIn("lo", self.complete("sluicectl", "allow", "add", "l"))
        self.assertEqual(self.complete("sluicectl", "attach", "lo", "--mode", ""), ["native", "skb", "auto"])
        opts = self.complete("sluicectl", "stats", "--")
        for o in ("--watch", "--interval", "--json", "--socket", "--pin-dir"):
            self.assertIn(o, opts)
        self.assertEqual(self.complete("sluicectl", "--"), ["--json", "--socket", "--pin-dir", "--help"])
        self.assertIn("--rate", self.complete("sluicectl", "set", "lo", "--"))
        # nothing is offered where a free value goes (a count, an address)
        self.assertEqual(self.complete("sluicectl", "set", "lo", "--rate", ""), [])
        # the pin directory named on the line is where attached interfaces come from
        with tempfile.TemporaryDirectory() as pins:
            os.mkdir(os.path.join(pins, "zz-pinned0"))
            self.assertEqual(self.complete("sluicectl", "--pin-dir", pins, "detach", "zz"), ["zz-pinned0"])


class Config(unittest.TestCase):
    def conf(self):
        with open(os.path.join(SOURCE_DIR, "packaging/sluice.conf")) as f:
            return f.read()

    def test_every_key_an_option_with_its_real_default(self):
        defaults = help_defaults()
        entries = conf_entries(self.conf())
        keys = [k for k, _ in entries]
        self.assertEqual(len(keys), len(set(keys)), "a key appears twice")
        for key, value in entries:
            self.assertIn(key, defaults, f"sluice.conf: '{key}' is not a sluiced option")
            if defaults[key] is not None:
                self.assertEqual(value, defaults[key], f"sluice.conf states {key} = {value}, "
                                                        f"sluiced --help says {defaults[key]}")
        # every option an operator sets is there (the test-only key is not)
        for opt in defaults:
            if opt not in ("help", "config", "hash-key-file"):
                self.assertIn(opt, keys, f"sluice.conf does not mention {opt}")
        # everything is commented out: the package changes nothing by itself
        for line in self.conf().splitlines():
            self.assertTrue(line == "" or line.startswith("#"), line)

    def test_uncommented_file_parses(self):
        text = "\n".join(f"{k} = {v}" for k, v in conf_entries(self.conf()))
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write(text + "\n")
            f.flush()
            p = run([SLUICED, "--config", f.name, "--help"], check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            f.write("no-such-option = 1\n")
            f.flush()
            p = run([SLUICED, "--config", f.name, "--help"], check=False)
            self.assertEqual(p.returncode, 2)
            self.assertIn("no-such-option", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
