"""bpf/sluice_abi.py reads struct layouts from sluice_abi.h's declarations;
this checks what it derives against the C compiler's sizeof and offsetof for
every struct a Python reader decodes (a unit test: no kernel, no root)."""

import os
import struct
import subprocess
import sys
import tempfile

SOURCE_DIR = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "bpf"))
import sluice_abi  # noqa: E402

STRUCTS = ("sluice_config", "sluice_settings", "sluice_standing_set", "sluice_observed_set", "sluice_counter",
           "sluice_slot", "sluice_drop_sample", "sluice_class", "sluice_class_match", "sluice_lpm_v4", "sluice_lpm_v6", "sluice_capture", "sluice_capture_stats",
           "sluice_capture_record")


def offsets(fmt, fields):
    """The offset of each field under a struct format, walking it."""
    out, off, codes = [], 0, fmt[1:]
    i = 0
    for _ in fields:
        while codes[i] == "x":
            off += 1
            i += 1
        n = ""
        while codes[i].isdigit():
            n += codes[i]
            i += 1
        out.append(off)
        off += struct.calcsize("<" + n + codes[i])
        i += 1
    return out


def main():
    cc = os.environ.get("CC", "cc")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "sluice_abi.h"', "int main(void) {"]
    for s in STRUCTS:
        lines.append(f'printf("{s} size %zu\\n", sizeof(struct {s}));')
        for field, _, _ in sluice_abi.struct_fields(s):
            lines.append(f'printf("{s} {field} %zu\\n", offsetof(struct {s}, {field}));')
    lines.append("return 0; }")
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run([cc, "-I", os.path.join(SOURCE_DIR, "bpf"), "-o", exe, src], check=True)
        c = {}
        for line in subprocess.run([exe], check=True, capture_output=True, text=True).stdout.splitlines():
            s, field, v = line.split()
            c[(s, field)] = int(v)
    bad = []
    for s in STRUCTS:
        fields = sluice_abi.struct_fields(s)
        fmt = sluice_abi.struct_format(s)
        py = {("size"): struct.calcsize(fmt)}
        py.update({f: o for (f, _, _), o in zip(fields, offsets(fmt, fields))})
        for k, v in py.items():
            if c[(s, k)] != v:
                bad.append(f"struct {s}: {k} is {c[(s, k)]} in C, {v} by sluice_abi.py ({fmt})")
    for b in bad:
        print(b)
    print(f"{len(STRUCTS) - len({b.split(':')[0] for b in bad})} passed, {len({b.split(':')[0] for b in bad})} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
