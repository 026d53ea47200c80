#!/usr/bin/env python3
"""The "## Errors" table (docs/errors.md) must list exactly the accel_status_t values
of include/accel/accel.h, in the header's order, each with a cause and a
description of accel_last_error().

    check_readme.py include/accel/accel.h README.md
"""
import re
import sys


def header_statuses(path):
    """The statuses of ACCEL_STATUS_MAP, the one list the enum is made from."""
    text = open(path, encoding="utf-8").read()
    m = re.search(r"#define ACCEL_STATUS_MAP\(XX\)(.*?)\n\n", text, re.S)
    if not m:
        sys.exit(f"FAILED: no '#define ACCEL_STATUS_MAP(XX)' in {path}")
    items = re.findall(r"\bXX\(([A-Z0-9_]+),\s*(\d+),", m.group(1))
    return ["ACCEL_" + name for name, value in sorted(items, key=lambda nv: int(nv[1]))]


def readme_rows(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    try:
        start = lines.index("## Errors")
    except ValueError:
        sys.exit(f"FAILED: {path} has no '## Errors' section")
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`(ACCEL_[A-Z0-9_]+)`", cells[0])
        if m:
            rows.append((m.group(1), cells))
    return rows


def main():
    header, readme = sys.argv[1], sys.argv[2]
    want = header_statuses(header)
    rows = readme_rows(readme)
    got = [name for name, _ in rows]
    failures = 0
    if not want:
        print(f"FAILED: no status parsed from {header}")
        failures += 1
    if got != want:
        failures += 1
        print("FAILED: the Errors table of README.md does not list the statuses of accel.h")
        missing = [n for n in want if n not in got]
        extra = [n for n in got if n not in want]
        if missing:
            print("  missing from README.md:", ", ".join(missing))
        if extra:
            print("  not in accel.h:", ", ".join(extra))
        if not missing and not extra:
            print("  order differs: README", got, "header", want)
    for name, cells in rows:
        if len(cells) != 3 or not all(cells):
            failures += 1
            print(f"FAILED: README row of {name} needs 3 non-empty cells, has {cells}")
    print(f"errors table: {len(want)} statuses in accel.h, {len(got)} rows in README.md; "
          f"{'all match' if failures == 0 else str(failures) + ' failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
