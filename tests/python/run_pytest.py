#!/usr/bin/env python3
"""Runs the Python package's pytest suite on one backend, as a Meson test.

usage: run_pytest.py --backend NAME --build-python DIR [--devices N]
                     [--preload 'LIB ...'] -- PYTEST_ARGS

--preload (a sanitizer build) names the sanitizer runtimes to preload.

Exits 77, saying why, when the suite cannot run its subject: pytest or
numpy missing for this interpreter, or the backend is not the current
accelerator (its runtime found no device). A plugin on the path that the
loader rejects fails the test. Otherwise runs
`sys.executable -m pytest` with DIR (the package's build folder) first on
PYTHONPATH and returns its status; a run that collects no test fails.
"""
import argparse
import importlib.util
import os
import subprocess
import sys

SKIP = 77
PROBE = """
import accel
print(accel.current_accelerator())
print(accel.selection_reason())
print("; ".join(b["path"] + ": " + b["reason"] for b in accel._accel.backends()
                if b["status"] == "rejected"))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", required=True)
    ap.add_argument("--build-python", required=True)
    ap.add_argument("--devices", type=int, default=0)
    ap.add_argument("--preload", default="")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    for module in ("pytest", "numpy"):
        if importlib.util.find_spec(module) is None:
            print(f"SKIP: {sys.executable} has no {module} (Debian: python3-{module})")
            return SKIP
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([args.build_python] + [p for p in [env.get("PYTHONPATH")] if p])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["ACCEL_TEST_BACKEND"] = args.backend
    env["ACCEL_TEST_DEVICES"] = str(args.devices)
    # The build's kernel images (kernels/ of the build tree) for the kernel tests.
    env["ACCEL_TEST_KERNELS"] = os.path.join(os.path.dirname(os.path.abspath(args.build_python)), "kernels")
    if args.preload:
        # A sanitizer build: its runtimes first, the interpreter's memory
        # through malloc. CPython's own allocations at exit are not freed
        # by design, so leak detection is off for these runs.
        env["LD_PRELOAD"] = " ".join([args.preload] + [p for p in [env.get("LD_PRELOAD")] if p])
        env["PYTHONMALLOC"] = "malloc"
        env["ASAN_OPTIONS"] = ":".join([o for o in [env.get("ASAN_OPTIONS")] if o] + ["detect_leaks=0"])
    probe = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                           text=True, timeout=120)
    if probe.returncode != 0:
        print(probe.stdout + probe.stderr)
        print("import accel failed")
        return 1
    current, reason, rejected = (probe.stdout.splitlines() + ["", "", ""])[:3]
    if rejected:
        # A plugin of this build that the loader refused in this process
        # (an unresolved symbol, say) is a failure, not a missing device.
        print(f"plugins rejected under {sys.executable}: {rejected}")
        return 1
    if current != args.backend:
        print(f"SKIP: the current accelerator is {current}, not {args.backend}: {reason}")
        return SKIP
    rest = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs"] + rest
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
