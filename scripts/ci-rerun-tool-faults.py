#!/usr/bin/env python3
"""Rerun, once, the tests of a sanitizer run that failed only because the
sanitizer itself broke down; fail on anything else.

Usage: ci-rerun-tool-faults.py BUILD_DIR

Reads BUILD_DIR/meson-logs/testlog.json (the `meson test` run just made).
LeakSanitizer's exit-time check stops every thread with ptrace; a thread
that ends while it does so makes LSan's tracer fault, and the process
aborts with "LeakSanitizer has encountered a fatal error" after a run that
may have been correct (google/sanitizers issue 1353: an open, intermittent
fault of the tool). That message is LSan reporting on itself, not a leak or
an error found: a failed test whose output has it, and no sanitizer report
of a finding, is run once more, alone. Any other failure, or a second fault,
fails the script, with the test's output printed by `meson test`.
"""
import json
import os
import subprocess
import sys

TOOL_FAULT = "LeakSanitizer has encountered a fatal error"
# What a finding looks like: with one of these the failure is real.
FINDINGS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
            "WARNING: ThreadSanitizer", "SUMMARY: ")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build_dir = sys.argv[1]
    log = os.path.join(build_dir, "meson-logs", "testlog.json")
    failed, real = [], []
    with open(log) as f:
        for line in f:
            t = json.loads(line)
            if t["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
                continue
            out = (t.get("stdout") or "") + (t.get("stderr") or "")
            if TOOL_FAULT in out and not any(m in out for m in FINDINGS):
                # testlog.json names a test "project:suite / name" when it
                # has suites; `meson test` takes the bare name.
                failed.append(t["name"].rsplit(" / ", 1)[-1])
            else:
                real.append(t["name"])
    if real:
        print("ci: failed (not a sanitizer tool fault):", " ".join(real))
        return 1
    if not failed:
        print("ci: the test run failed, yet testlog.json has no failed test")
        return 1
    print("ci: LeakSanitizer's own fatal error (a tool fault, not a finding) in:",
          " ".join(failed), "- running them once more")
    rc = subprocess.run(["meson", "test", "-C", build_dir, "--no-rebuild",
                         "--print-errorlogs", "--num-processes", "1"] + failed).returncode
    # The rerun must have run each of them, and each must have passed
    # (`meson test` answers 0 when a name matches no test).
    with open(log) as f:
        rerun = {json.loads(line)["name"].rsplit(" / ", 1)[-1]: json.loads(line)["result"]
                 for line in f}
    missing = [n for n in failed if rerun.get(n) != "OK"]
    if rc != 0 or missing:
        print("ci: the rerun did not pass:", " ".join(missing) or f"meson test exit {rc}")
        return 1
    print("ci: the rerun passed:", " ".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
