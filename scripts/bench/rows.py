"""One result row, as the table, the JSON and the docs show it, and how it is
judged: its ratio to the baseline measured in the same run, and the floor
that ratio must meet, where the figure sets one."""

import dataclasses
import statistics

from .procs import log


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


@dataclasses.dataclass(frozen=True)
class Floor:
    op: str        # "<=", "<", ">=", or "within" (|ratio - 1| <= limit)
    limit: float

    def met(self, ratio):
        if self.op == "within":
            return abs(ratio - 1) <= self.limit
        if self.op == ">=":
            return ratio >= self.limit
        return ratio <= self.limit if self.op == "<=" else ratio < self.limit

    def __str__(self):
        return f"ratio {self.op} {self.limit}"

    @classmethod
    def parse(cls, text):
        _, op, limit = text.split()
        return cls(op, float(limit))


@dataclasses.dataclass
class Row:
    figure: int
    name: str
    unit: str
    value: float | None
    baseline: float | None
    baseline_name: str
    floor: Floor | None = None
    note: str = ""
    samples: list | None = None

    @property
    def ratio(self):
        if self.value is not None and self.baseline not in (None, 0):
            return self.value / self.baseline
        return None

    @property
    def floor_met(self):
        """True or False where there is a floor and a ratio, else None."""
        if self.floor is None or self.ratio is None:
            return None
        return self.floor.met(self.ratio)

    def to_json(self):
        r = {"figure": self.figure, "name": self.name, "unit": self.unit, "value": self.value,
             "baseline": self.baseline, "baseline_name": self.baseline_name, "ratio": self.ratio}
        if self.floor is not None:
            r["floor"] = str(self.floor)
            r["floor_met"] = self.floor_met
        if self.note:
            r["note"] = self.note
        if self.samples is not None:
            r["samples"] = self.samples
        return r

    @classmethod
    def from_json(cls, r):
        return cls(r["figure"], r["name"], r["unit"], r["value"], r["baseline"], r["baseline_name"],
                   Floor.parse(r["floor"]) if "floor" in r else None, r.get("note", ""), r.get("samples"))


class Rows(list):
    """A figure's rows in the order they are reported; add() logs each."""

    def __init__(self, figure):
        super().__init__()
        self.figure = figure

    def add(self, name, unit, value, baseline, baseline_name, floor=None, note="", samples=None):
        r = Row(self.figure, name, unit, value, baseline, baseline_name,
                Floor(*floor) if floor is not None else None, note, samples)
        self.append(r)
        fmt = lambda v: "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
        ok = r.floor_met
        log(f"  [{r.figure}] {name}: {fmt(value)} {unit} vs {fmt(baseline)} ({baseline_name})"
            f" ratio {fmt(r.ratio)}" + ("" if ok is None else (" floor met" if ok else " FLOOR MISSED")))
        return r


def by_name(rows):
    """A figure's rows from a results.json, by name (for from_rows())."""
    return {r.name: r for r in rows}
