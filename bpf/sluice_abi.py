# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""sluice_abi.h for Python: its tables, the outcomes (SLUICE_OUTCOME_TABLE)
and the reasons for standing (SLUICE_STANDING_REASON_TABLE), and the layouts
of its structs.

The header is the only list of them and the only declaration of the map
values; this reads it, so that the netns tests (tests/netns/sluice_netns.py)
and scripts/demo.sh use the names the program counts and records under, and
decode the pinned maps, without a copy of their own. Standard library only.
"""
import os
import re
import struct

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
    "dropped", "answered" (sent back with a SYN cookie) or "none" (no source's
    verdict: non-IP, malformed, would-drop)."""
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


def cookie_modes(header=HEADER):
    """[(value, name)]: sluiced's --cookies values, as config.cookie_mode holds them."""
    rows = _table("SLUICE_COOKIE_MODE_TABLE", header)
    if [r[0] for r in rows] != list(range(len(rows))) or any(len(r) != 2 for r in rows):
        raise ValueError(f"{header}: SLUICE_COOKIE_MODE_TABLE is not rows 0..N-1 of 2 columns: {rows}")
    return rows


def outcome_names(header=HEADER):
    """The names, indexed by the outcome's value (the counters map's key)."""
    return [name for _, name, _ in outcomes(header)]


def outcome_names_by_verdict(verdict, header=HEADER):
    """The names of the outcomes with this verdict, in value order."""
    return tuple(name for _, name, v in outcomes(header) if v == verdict)


# ---------------------------------------------------------------- struct layouts

_DEFINE = re.compile(r"^#define\s+(\w+)\s+\(?(\d+)u?(?:ll|ull|u)?\)?\s*(?:/\*.*)?$")
_FIELD = re.compile(r"^(__u8|__u16|__u32|__u64|char)\s+(\w+)(?:\[(\w+)\])?$")
_CODE = {"__u8": "B", "__u16": "H", "__u32": "I", "__u64": "Q", "char": "s"}


def _header_text(header):
    with open(header) as f:
        return f.read()


def defines(header=HEADER):
    """{name: value} of the header's integer #defines (a plain literal,
    maybe parenthesised, with a u/ull suffix)."""
    out = {}
    for line in _header_text(header).splitlines():
        m = _DEFINE.match(line.strip())
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def struct_fields(name, header=HEADER):
    """[(field, C type, count)] of `struct NAME` as declared in the header;
    count is None for a scalar, else the array length (a literal or one of
    the header's #defines). Only the fixed-width types the ABI uses."""
    text = re.sub(r"/\*.*?\*/", "", _header_text(header), flags=re.S)
    m = re.search(r"\bstruct\s+" + re.escape(name) + r"\s*\{(.*?)\};", text, flags=re.S)
    if not m:
        raise ValueError(f"{header}: no declaration of struct {name}")
    consts = defines(header)
    fields = []
    for decl in m.group(1).split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        # "__u16 lo, hi": one type, several declarators.
        ctype, _, names = decl.partition(" ")
        for one in names.split(","):
            f = _FIELD.match(f"{ctype} {one.strip()}")
            if not f:
                raise ValueError(f"{header}: struct {name}: cannot read the field {decl!r}")
            count = f.group(3)
            if count is not None:
                count = int(count) if count.isdigit() else consts[count]
            fields.append((f.group(2), f.group(1), count))
    return fields


def struct_format(name, header=HEADER):
    """The struct module's format of `struct NAME` (little-endian, C's
    natural alignment: a field starts at a multiple of its size, the whole
    at a multiple of its largest field's)."""
    fmt, offset, align = "<", 0, 1
    for _, ctype, count in struct_fields(name, header):
        size = struct.calcsize(_CODE[ctype])  # a char array: one "Ns" of N bytes, aligned as a byte
        align = max(align, size)
        if offset % size:
            fmt += "x" * (size - offset % size)
            offset += size - offset % size
        n = count or 1
        fmt += f"{n}{_CODE[ctype]}" if count else _CODE[ctype]
        offset += size * n
    if offset % align:
        fmt += "x" * (align - offset % align)
    return fmt


def struct_size(name, header=HEADER):
    return struct.calcsize(struct_format(name, header))


def unpack(name, raw, header=HEADER):
    """A map value's bytes as {field: int, or [int] for an array, or str
    for a char array (NUL-padded, as the class names)}, by the header's
    declaration of `struct NAME`; raw must be exactly its size."""
    values = list(struct.unpack(struct_format(name, header), bytes(raw)))
    out = {}
    for field, ctype, count in struct_fields(name, header):
        if ctype == "char":
            out[field] = values.pop(0).split(b"\0", 1)[0].decode("utf-8", "replace")
        elif count:
            out[field], values = values[:count], values[count:]
        else:
            out[field] = values.pop(0)
    return out


if __name__ == "__main__":
    for value, name, verdict in outcomes():
        print(value, name, verdict)
    for value, name in standing_reasons():
        print("reason", value, name)
    for name in ("sluice_config", "sluice_settings", "sluice_standing_set", "sluice_observed_set", "sluice_class",
                 "sluice_class_match", "sluice_lpm_v4", "sluice_lpm_v6"):
        print(f"struct {name}: {struct_size(name)} bytes, {struct_format(name)}")
