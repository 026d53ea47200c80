#!/usr/bin/env python3
"""Runs one program and checks how it ended: its exit status, how long it
took and what it printed (stdout and stderr together). The program's output
is printed first, so the test log shows what every check was made against.

usage: run_check.py [--exit N|nonzero] [--max-seconds S] [--contains TEXT]...
                    [--lacks TEXT]... -- PROGRAM [ARG...]

  --exit N          the program must exit with status N (default 0)
  --exit nonzero    it must exit normally with a status other than 0; a
                    death by signal does not count (a crash is no verdict)
  --max-seconds S   it must end within S seconds; it is killed at S + 5
  --contains TEXT   the output must contain TEXT (case-sensitive)
  --lacks TEXT      the output must not contain TEXT
"""
import subprocess
import sys
import time


def parse(argv):
    opts = {"exit": "0", "max": None, "contains": [], "lacks": []}
    if "--" not in argv:
        sys.exit(__doc__)
    split = argv.index("--")
    own, command = argv[:split], argv[split + 1:]
    if not command or len(own) % 2 != 0:
        sys.exit(__doc__)
    for flag, value in zip(own[0::2], own[1::2]):
        if flag == "--exit":
            opts["exit"] = value
        elif flag == "--max-seconds":
            opts["max"] = float(value)
        elif flag == "--contains":
            opts["contains"].append(value)
        elif flag == "--lacks":
            opts["lacks"].append(value)
        else:
            sys.exit(f"run_check.py: unknown option {flag}\n{__doc__}")
    return opts, command


def main():
    opts, command = parse(sys.argv[1:])
    print("run_check: " + " ".join(command), flush=True)
    start = time.monotonic()
    killed = False
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=None if opts["max"] is None else opts["max"] + 5)
        output, status = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        output, status, killed = e.output or b"", None, True
    seconds = time.monotonic() - start
    text = output.decode("utf-8", errors="replace")
    print(text, end="" if text.endswith("\n") else "\n")
    print(f"run_check: exit status {status}, {seconds:.1f} s", flush=True)

    problems = []
    if killed:
        problems.append(f"still running after {opts['max'] + 5:.0f} s: killed")
    elif opts["exit"] == "nonzero":
        if status == 0:
            problems.append("exited 0, expected a failure")
        elif status < 0:
            problems.append(f"killed by signal {-status}, expected a clean failing exit")
    elif status != int(opts["exit"]):
        problems.append(f"exit status {status}, expected {opts['exit']}")
    if opts["max"] is not None and not killed and seconds > opts["max"]:
        problems.append(f"took {seconds:.1f} s, expected at most {opts['max']:.0f} s")
    for needle in opts["contains"]:
        if needle not in text:
            problems.append(f"output lacks \"{needle}\"")
    for needle in opts["lacks"]:
        if needle in text:
            problems.append(f"output contains \"{needle}\"")
    for p in problems:
        print(f"run_check: FAILED: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
