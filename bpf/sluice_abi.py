# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The tables of sluice_abi.h, for Python: the outcomes
(SLUICE_OUTCOME_TABLE) and the reasons for standing
(SLUICE_STANDING_REASON_TABLE).

The header is the only list of them; this reads it, so that the netns tests
(tests/netns/sluice_netns.py) and scripts/demo.sh use the names the program
counts and records under without a list of their own. Standard library only.
"""
import os
import re

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sluice_abi.h")

_ROW = re.compile(r'^\s*X\((SLUICE_\w+),\s*(\d+),\s*"(\w+)"((?:,\s*\w+)*)\)')


def _table(name, header):
    """The rows of the X-macro table `name`: [(value, name, *more columns)],
    in value order."""
    rows, inside = [], False
    with open(header) as f:
        for line in f:
            if line.startswith(f"#define {name}("):
                inside = True
                continue
            if not inside:
                continue
            m = _ROW.match(line)
            if m:
                more = tuple(c.strip() for c in m.group(4).split(",") if c.strip())
                rows.append((int(m.group(2)), m.group(3)) + more)
            if not line.rstrip().endswith("\\"):
                break
    rows.sort()
    if not rows:
        raise ValueError(f"{header}: no rows in {name}")
    return rows


def outcomes(header=HEADER):
    """[(value, name, verdict)] in value order; verdict is "admitted",
    "dropped" or "none" (no source's verdict: non-IP, malformed, would-drop)."""
    rows = _table("SLUICE_OUTCOME_TABLE", header)
    if [r[0] for r in rows] != list(range(len(rows))) or any(len(r) != 3 for r in rows):
        raise ValueError(f"{header}: SLUICE_OUTCOME_TABLE is not rows 0..N-1 of 3 columns: {rows}")
    return rows


def standing_reasons(header=HEADER):
    """[(value, name)] in value order: why a source has standing, as
    record[w] keeps it (values 1..N; 0 is unknown)."""
    rows = _table("SLUICE_STANDING_REASON_TABLE", header)
    if [r[0] for r in rows] != list(range(1, len(rows) + 1)) or any(len(r) != 2 for r in rows):
        raise ValueError(f"{header}: SLUICE_STANDING_REASON_TABLE is not rows 1..N of 2 columns: {rows}")
    return rows


def standing_reason_names(header=HEADER):
    """The names, indexed by the reason's value; index 0 is "unknown"."""
    return ["unknown"] + [name for _, name in standing_reasons(header)]


def outcome_names(header=HEADER):
    """The names, indexed by the outcome's value (the counters map's key)."""
    return [name for _, name, _ in outcomes(header)]


def outcome_names_by_verdict(verdict, header=HEADER):
    """The names of the outcomes with this verdict, in value order."""
    return tuple(name for _, name, v in outcomes(header) if v == verdict)


if __name__ == "__main__":
    for value, name, verdict in outcomes():
        print(value, name, verdict)
    for value, name in standing_reasons():
        print("reason", value, name)
