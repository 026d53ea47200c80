#!/usr/bin/env python3
"""Print the build outputs that the tests of a configured build tree need.

Usage: test-targets.py BUILD_DIR [SUITE ...]
       test-targets.py BUILD_DIR --tests NAME [NAME ...]

With suites, only the tests in one of them count (as `meson test --suite`);
with --tests, only the tests of those names (scripts/mutation-check.sh).
.ci/run hands the list to `ninja -j <cores>`, so a sanitizer build compiles
what its tests run and nothing else (no benchmarks, no valgrind workloads),
with no more compile jobs than the machine has cores; `meson test
--no-rebuild` then runs them. The same set `meson test` would rebuild on its
own, read from Meson's introspection data.
"""
import json
import os
import subprocess
import sys


def introspect(build_dir, what):
    out = subprocess.run(["meson", "introspect", build_dir, what],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build_dir = os.path.abspath(sys.argv[1])
    by_name = len(sys.argv) > 2 and sys.argv[2] == "--tests"
    suites = set(sys.argv[3:] if by_name else sys.argv[2:])
    outputs = {t["id"]: t["filename"] for t in introspect(build_dir, "--targets")}
    wanted = set()
    for test in introspect(build_dir, "--tests"):
        # Meson names a test's suites "<project>:<suite>".
        names = {s.split(":", 1)[-1] for s in test["suite"]}
        if by_name:
            names = {test["name"]}
        if suites and not names & suites:
            continue
        for dep in test["depends"]:
            wanted.update(os.path.relpath(f, build_dir) for f in outputs[dep])
    if not wanted:
        sys.exit(f"test-targets.py: no test of {sorted(suites) or 'any suite'} in {build_dir}")
    print("\n".join(sorted(wanted)))


if __name__ == "__main__":
    main()
