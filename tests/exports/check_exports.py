#!/usr/bin/env python3
"""Fails unless every dynamic symbol libaccelcore defines starts with accel_.

Usage: check_exports.py LIBRARY [NM]

Runs `nm -D --defined-only` on LIBRARY. Version-node symbols (type A, no
'@', e.g. ACCEL_0.1) are not exports and are ignored. A leaked C++ symbol
(spdlog, fmt, std templates: W/V/u/T...) or any helper without the prefix
fails the test and is listed.
"""
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    lib = sys.argv[1]
    nm = sys.argv[2] if len(sys.argv) > 2 else "nm"
    try:
        proc = subprocess.run([nm, "-D", "--defined-only", lib],
                              capture_output=True, text=True, check=False)
    except OSError as exc:
        print(f"cannot run {nm}: {exc}", file=sys.stderr)
        return 2
    if proc.returncode != 0:
        print(f"{nm} failed on {lib}:\n{proc.stderr}", file=sys.stderr)
        return 2

    exported, bad = [], []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        if kind == "A" and "@" not in name:
            continue  # version node (ACCEL_0.1 ...)
        base = name.split("@", 1)[0]
        exported.append(base)
        if not base.startswith("accel_"):
            bad.append(f"{kind} {name}")

    print(f"{lib}: {len(exported)} exported symbol(s)")
    if not exported:
        print("no exported symbols at all: is this the right library?", file=sys.stderr)
        return 1
    if bad:
        print(f"{len(bad)} exported symbol(s) without the accel_ prefix:", file=sys.stderr)
        for b in bad:
            print(f"  {b}", file=sys.stderr)
        return 1
    print("all exported symbols start with accel_")
    return 0


if __name__ == "__main__":
    sys.exit(main())
