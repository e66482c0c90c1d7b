"""The README's demo transcript ("What the demo shows") against
scripts/demo.sh, without running the demo (it needs root and a minute): the
phase titles in the transcript are the ones demo.sh's phase_title calls print,
in the same order, and the transcript has no progress lines (the README says
they are removed). When demo.sh's titles change, the transcript is regenerated
from a real run.

Environment (set by tests/packaging/CMakeLists.txt): SLUICE_SOURCE_DIR."""

import os
import re
import unittest

SOURCE_DIR = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DEMO = os.path.join(SOURCE_DIR, "scripts", "demo.sh")
README = os.path.join(SOURCE_DIR, "README.md")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def demo_titles():
    """The lines demo.sh's phase titles print: phase_title's own format
    ("phase $1/5: $2") with each call's two arguments, in source order."""
    src = read(DEMO)
    body = re.search(r"^phase_title\(\) \{\n(.*?)^\}", src, re.S | re.M)
    if not body:
        raise AssertionError("demo.sh has no phase_title() function")
    fmt = re.findall(r'^\s*say "([^"]*\$1[^"]*\$2[^"]*)"\s*$', body.group(1), re.M)
    if len(fmt) != 1:
        raise AssertionError(f"phase_title() should print one line with $1 and $2: {body.group(1)!r}")
    calls = re.findall(r'^\s*phase_title (\S+) "([^"]*)"\s*$', src, re.M)
    if not calls:
        raise AssertionError("demo.sh calls phase_title nowhere")
    lines = []
    for n, title in calls:
        if "$" in n or "$" in title or "`" in title:
            raise AssertionError(f"a phase title is not a literal: phase_title {n} \"{title}\"")
        lines.append(fmt[0].replace("$1", n).replace("$2", title))
    return lines


def transcript():
    """The first fenced block of the README's "## What the demo shows"."""
    text = read(README)
    sec = re.search(r"^## What the demo shows\n(.*?)(?=^## )", text, re.S | re.M)
    if not sec:
        raise AssertionError('README.md has no "## What the demo shows" section')
    block = re.search(r"^```[^\n]*\n(.*?)^```", sec.group(1), re.S | re.M)
    if not block:
        raise AssertionError('"What the demo shows" has no transcript block')
    return block.group(1).splitlines()


class DemoReadme(unittest.TestCase):
    def test_transcript_phase_titles_are_the_ones_demo_sh_prints(self):
        want = demo_titles()
        got = [line for line in transcript() if re.match(r"phase \d+/\d+: ", line)]
        self.assertEqual(len(want), 5, f"demo.sh narrates five phases: {want}")
        self.assertEqual(got, want, "README.md's demo transcript is not one of this demo.sh's runs: run "
                         "scripts/demo.sh and put its output there (the progress lines removed)")

    def test_transcript_has_no_progress_lines(self):
        progress = [line for line in transcript() if line.startswith("  ... ")]
        self.assertEqual(progress, [], "the README says the progress lines are removed")


if __name__ == "__main__":
    unittest.main()
