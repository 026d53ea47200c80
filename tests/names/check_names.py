#!/usr/bin/env python3
"""Test names that a Catch2 filter can select.

Catch2 v2 reads a comma in a test-name filter as a separator, so running a
test by its exact name, when that name holds a comma, runs nothing (and the
shared runner then fails with "no test cases matched"). Hence no test name
may contain one.

usage:
  check_names.py list PROGRAM [ARG...] [--program PROGRAM [ARG...]]...
      Lists each program's test cases (--list-test-names-only) and fails if
      any name contains a comma.
  check_names.py sources TESTS_DIR
      Reads every TEST_CASE and SECTION name in TESTS_DIR's C++ sources
      (adjacent string literals joined), so programs no list names and
      sections (a -c filter splits on commas too) are covered; fails on a
      comma in any of them.
  check_names.py run-one NAME PROGRAM [ARG...]
      Runs PROGRAM ARG... NAME and checks that exactly one test case ran,
      the one called NAME, and passed.
"""
import html
import re
import subprocess
import sys


def split_programs(argv):
    programs, current = [], []
    for a in argv:
        if a == "--program":
            if current:
                programs.append(current)
            current = []
        else:
            current.append(a)
    if current:
        programs.append(current)
    return programs


def list_names(command):
    proc = subprocess.run(command + ["--list-test-names-only"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode < 0:
        sys.exit(f"check_names: {command[0]} died of signal {-proc.returncode}\n{proc.stderr}")
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    # Catch2 v2 exits with the number of names it listed (at most 255);
    # anything a program prints before (its own setup) comes first.
    count = proc.returncode
    if count == 0:
        sys.exit(f"check_names: {' '.join(command)} listed no test case\n{proc.stdout}{proc.stderr}")
    return lines if count >= 255 else lines[-count:]


def check_list(argv):
    bad, total = [], 0
    for command in split_programs(argv):
        names = list_names(command)
        total += len(names)
        print(f"{command[0]}: {len(names)} test cases")
        bad += [f"{command[0]}: \"{n}\"" for n in names if "," in n]
    for b in bad:
        print(f"check_names: FAILED: a comma in a test name (Catch2 reads it as a filter "
              f"separator, so the exact name selects nothing): {b}")
    if not bad:
        print(f"check_names: {total} test names, none with a comma")
    return 1 if bad else 0


def run_one(name, command):
    # The XML reporter names every test case that ran.
    full = command + [name, "--reporter", "xml"]
    print("check_names: " + " ".join(repr(a) if " " in a else a for a in full), flush=True)
    proc = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout)
    ran = [html.unescape(n) for n in re.findall(r'<TestCase name="([^"]*)"', proc.stdout)]
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}, expected 0")
    if ran != [name]:
        problems.append(f"ran {len(ran)} test case(s) {ran}, expected exactly [\"{name}\"]")
    for p in problems:
        print(f"check_names: FAILED: {p}")
    return 1 if problems else 0


NAMED = re.compile(r'\b(TEST_CASE|SECTION)\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def check_sources(root):
    from pathlib import Path
    bad, count = [], 0
    for path in sorted(Path(root).rglob("*.cpp")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in NAMED.finditer(text):
            count += 1
            name = "".join(LITERAL.findall(m.group(2)))
            if "," in name:
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{path}:{line}: {m.group(1)} \"{name}\"")
    print(f"check_names: {count} TEST_CASE and SECTION names read")
    for b in bad:
        print(f"check_names: FAILED: a comma in a test name: {b}")
    return 1 if bad or count == 0 else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "sources":
        return check_sources(sys.argv[2])
    if len(sys.argv) >= 3 and sys.argv[1] == "list":
        return check_list(sys.argv[2:])
    if len(sys.argv) >= 4 and sys.argv[1] == "run-one":
        return run_one(sys.argv[2], sys.argv[3:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
