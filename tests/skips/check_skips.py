#!/usr/bin/env python3
"""test-skips-honest: no test program says it skipped and then passes.

Meson counts exit status 77 as SKIP and 0 as OK. A test that prints
"SKIPPED" and exits 0 is counted as a pass although its subject never ran,
so every place in tests/ that says a test is skipped must end the program
with 77:

  - C++ (Catch2) programs call accel_test::skip or accel_test::skipf
    (tests/catch2/support.hpp): the program then exits 77 unless a check
    failed;
  - C programs, Python and shell scripts return or exit 77 (or a constant
    named SKIP) within the few lines after the message.

A string literal "says a test is skipped" when it starts with "SKIP:" or
"skipped:" (any case, or with a parenthesis for the colon), or contains the
word SKIPPED. tests/gpu is left out: those programs are not Meson tests, and
tests/gpu/cuda.sh counts what they ran. Prints each offending line as
path:line and exits 1; exits 0 when there is none.

usage: check_skips.py TESTS_DIR
"""
import os
import re
import sys

SOURCE = {".c", ".cpp", ".hpp", ".h", ".py", ".sh"}
# The helper itself, and data that is not a program.
EXEMPT_DIRS = {os.path.join("fuzz", "corpus"), os.path.join("fuzz", "regressions"), "gpu"}
EXEMPT_FILES = {os.path.join("catch2", "support.cpp"), os.path.join("catch2", "support.hpp"),
                os.path.join("skips", "check_skips.py")}
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')
SAYS_SKIP = re.compile(r"^\s*(?:SKIP|skip|Skip|SKIPPED|skipped|Skipped)\b\s*[:(]|\bSKIPPED\b")
SKIP_CALL = re.compile(r"accel_test::skipf?\s*\(")
EXITS_77 = re.compile(r"\b(?:return|exit|_exit|sys\.exit)\b\s*\(?\s*(?:77|SKIP)\b")
WINDOW = 6  # lines after the message in which the exit must stand


def says_skip(line):
    for m in LITERAL.finditer(line):
        text = m.group(1) if m.group(1) is not None else m.group(2)
        if SAYS_SKIP.search(text):
            return True
    return False


def comment_only(line, ext):
    stripped = line.strip()
    if ext in (".py", ".sh"):
        return stripped.startswith("#")
    return stripped.startswith("//") or stripped.startswith("*") or stripped.startswith("/*")


def check_file(path, rel, problems):
    ext = os.path.splitext(path)[1]
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if comment_only(line, ext) or not says_skip(line):
            continue
        # The statement may start a line or two above the literal.
        context = "\n".join(lines[max(0, i - 2):i + 1])
        if ext in (".cpp", ".hpp") and SKIP_CALL.search(context):
            continue
        after = "\n".join(lines[i:i + WINDOW])
        if EXITS_77.search(after):
            continue
        problems.append(f"{rel}:{i + 1}: says it skipped without exiting 77: {line.strip()}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    problems = []
    checked = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames if os.path.join(rel_dir, d).lstrip("./")
                             not in EXEMPT_DIRS)
        for name in sorted(filenames):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.splitext(name)[1] not in SOURCE or rel in EXEMPT_FILES:
                continue
            checked += 1
            check_file(os.path.join(dirpath, name), rel, problems)
    for p in problems:
        print(p)
    print(f"check_skips: {checked} test sources read, {len(problems)} dishonest skip(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
