#!/usr/bin/env python3
"""Would counting backends concurrently make discovery faster?

Runs count-concurrent (count_concurrent.cpp) in fresh processes, serial and
concurrent alternately in random order, ROUNDS times each, with every plugin
given and the environment meson gives it (the fake CUDA, HIP and Level Zero
libraries named, PoCL's pthread device), and prints per mode the median and
spread of the counting phase and of the whole process, each plugin's steps in
the serial runs, and the concurrent / serial ratio of paired rounds. It
fails when a plugin errs or the two modes count differently (concurrency
must not change the answer).

With --also-real-hip it measures again with the HIP runtime Debian
installs (libamdhip64.so.5) named in ACCEL_HIP_RUNTIME, so two real vendor
runtimes load: the hip plugin loads the runtime and counts no GPU here.

  count_concurrent.py COUNT_CONCURRENT_EXE PLUGIN.so... [--rounds N]
                      [--also-real-hip] [--json FILE]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time


def run(exe, mode, plugins, env):
    t = time.perf_counter()
    out = subprocess.run([exe, mode] + plugins, check=True, capture_output=True, text=True,
                         env=env).stdout
    wall = (time.perf_counter() - t) * 1e3
    doc = json.loads(out)
    doc["wall_ms"] = wall
    return doc


def spread(xs):
    return f"{statistics.median(xs):.2f} ms ({min(xs):.2f}-{max(xs):.2f})"


def measure(label, exe, plugins, rounds, env):
    """Both modes in interleaved fresh processes; False when a plugin erred or
    the modes counted differently."""
    runs = {"serial": [], "concurrent": []}
    run(exe, "serial", plugins, env)  # warm the page cache and PoCL's kernel cache
    for _ in range(rounds):
        modes = ["serial", "concurrent"]
        random.shuffle(modes)
        for m in modes:
            runs[m].append(run(exe, m, plugins, env))

    ok = True
    errors = sorted({(m, p["path"], p["error"]) for m, docs in runs.items() for d in docs
                     for p in d["plugins"] if p["error"]})
    for m, path, error in errors:
        print(f"FAIL: {label}: {m}: {path}: {error}")
        ok = False
    counts = {m: {tuple(p["count"] for p in d["plugins"]) for d in docs} for m, docs in runs.items()}
    if counts["serial"] != counts["concurrent"] or len(counts["serial"]) != 1:
        print(f"FAIL: {label}: the device counts differ between runs or modes: {counts}")
        ok = False

    print(f"{label}: {rounds} interleaved rounds, {len(plugins)} plugins; "
          "medians (fastest-slowest)")
    for m, docs in runs.items():
        print(f"  {m:10s} counting phase {spread([d['total_ms'] for d in docs])}, "
              f"whole process {spread([d['wall_ms'] for d in docs])}")
    ratios = [c["total_ms"] / s["total_ms"] for s, c in zip(runs["serial"], runs["concurrent"])]
    saved = [s["total_ms"] - c["total_ms"] for s, c in zip(runs["serial"], runs["concurrent"])]
    print(f"  concurrent / serial, counting phase, paired rounds: {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f}); saved {statistics.median(saved):.2f} ms "
          f"({min(saved):.2f}-{max(saved):.2f})")
    print("  serial runs, per plugin (median ms): dlopen / entry+init / device_count -> count")
    for i, path in enumerate(plugins):
        step = lambda k: statistics.median(d["plugins"][i][k] for d in runs["serial"])
        print(f"    {os.path.basename(path):24s} {step('dlopen_ms'):7.2f} / {step('init_ms'):7.2f} / "
              f"{step('count_ms'):7.2f} -> {runs['serial'][0]['plugins'][i]['count']}")
    return ok, runs


def installed_library(soname):
    """The path ldconfig knows for soname, or None."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.strip().split(" => ")
        if len(parts) == 2 and parts[0].split(" ")[0] == soname and "x86-64" in parts[0]:
            return parts[1]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("plugins", nargs="+")
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--also-real-hip", action="store_true",
                    help="measure again with the installed HIP runtime (libamdhip64.so.5) "
                         "named in ACCEL_HIP_RUNTIME: a second real vendor runtime beside PoCL")
    ap.add_argument("--json")
    a = ap.parse_args()

    env = dict(os.environ)
    ok, runs = measure("fakes + PoCL", a.exe, a.plugins, a.rounds, env)
    results = {"fakes + PoCL": runs}
    if a.also_real_hip:
        hip = installed_library("libamdhip64.so.5")
        if hip is None:
            print("real HIP runtime: libamdhip64.so.5 is not installed; that measurement is "
                  "skipped")
        else:
            env["ACCEL_HIP_RUNTIME"] = hip
            label = f"fakes + PoCL + the real HIP runtime ({hip})"
            ok2, results[label] = measure(label, a.exe, a.plugins, a.rounds, env)
            ok = ok and ok2
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if not ok:
        return 1
    print("count-concurrent: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
