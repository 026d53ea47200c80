#!/usr/bin/env python3
"""Runs an example program and checks that it computed: exit status 0 and
every --expect string in its output. An example that finds no accelerator
exits 0 too ("no accelerator: ..."), which must not pass for a test that set
one up, hence the strings: run_example.py --expect TEXT... -- PROGRAM ARGS..."""
import subprocess
import sys

args = sys.argv[1:]
sep = args.index("--")
expects = [args[i + 1] for i in range(0, sep, 2) if args[i] == "--expect"]
proc = subprocess.run(args[sep + 1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                      text=True, timeout=120)
print(proc.stdout, end="")
ok = proc.returncode == 0
if not ok:
    print(f"run_example: exit status {proc.returncode}, expected 0")
for e in expects:
    if e not in proc.stdout:
        print(f"run_example: the output lacks {e!r}")
        ok = False
print("run_example: " + ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
