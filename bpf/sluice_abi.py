# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The outcome table of sluice_abi.h (SLUICE_OUTCOME_TABLE), for Python.

The header is the only list of the outcomes; this reads it, so that the
netns tests (tests/netns/sluice_netns.py) and scripts/demo.sh use the names
the program counts under without a list of their own. Standard library only.
"""
import os
import re

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sluice_abi.h")

_ROW = re.compile(r'^\s*X\((SLUICE_\w+),\s*(\d+),\s*"(\w+)",\s*(\w+)\)')


def outcomes(header=HEADER):
    """[(value, name, verdict)] in value order; verdict is "admitted",
    "dropped" or "none" (no source's verdict: non-IP, malformed, would-drop)."""
    rows, inside = [], False
    with open(header) as f:
        for line in f:
            if line.startswith("#define SLUICE_OUTCOME_TABLE("):
                inside = True
                continue
            if not inside:
                continue
            m = _ROW.match(line)
            if m:
                rows.append((int(m.group(2)), m.group(3), m.group(4)))
            if not line.rstrip().endswith("\\"):
                break
    rows.sort()
    if not rows or [v for v, _, _ in rows] != list(range(len(rows))):
        raise ValueError(f"{header}: SLUICE_OUTCOME_TABLE is not rows 0..N-1: {rows}")
    return rows


def outcome_names(header=HEADER):
    """The names, indexed by the outcome's value (the counters map's key)."""
    return [name for _, name, _ in outcomes(header)]


def outcome_names_by_verdict(verdict, header=HEADER):
    """The names of the outcomes with this verdict, in value order."""
    return tuple(name for _, name, v in outcomes(header) if v == verdict)


if __name__ == "__main__":
    for value, name, verdict in outcomes():
        print(value, name, verdict)
