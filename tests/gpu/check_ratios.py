#!/usr/bin/env python3
"""Checks the ratios of a paired Google Benchmark run (tests/bench/bench_cuda.cpp).

check_ratios.py JSON --target R (--enforce | --report) [--summary FILE] NAME...

JSON is what the benchmark wrote with --benchmark_format=json. Each NAME must
have run without an error: its median over the repetitions (or its one run)
carries the counters ratio (wall time, accel / driver), cpu_ratio, accel_ns
and vendor_ns. Every ratio is printed with the target. --enforce: a ratio
above R fails; --report: it is printed as over, and does not fail (tests/gpu/
cuda.sh reports over a driver that is not the system's, such as the fake,
whose timings say nothing about a GPU). A NAME that is missing, or that
stopped with an error (no PTX, no cuda backend...), fails either way.
The last line counts the ratios and how many met the target (--summary FILE
writes it there too, without the "check_ratios: " prefix).
Exit status: 0 pass, 1 fail.
"""
import json
import sys


def main(argv):
    path, rest = argv[0], argv[1:]
    target = float(rest[rest.index("--target") + 1])
    enforce = "--enforce" in rest
    if enforce == ("--report" in rest):
        raise SystemExit("check_ratios.py: say --enforce or --report")
    summary = rest[rest.index("--summary") + 1] if "--summary" in rest else None
    names = [a for i, a in enumerate(rest)
             if not a.startswith("--") and (i == 0 or rest[i - 1] not in ("--target", "--summary"))]
    with open(path) as f:
        data = json.load(f)
    entries = {}
    for b in data.get("benchmarks", []):
        entries.setdefault(b.get("run_name", b["name"]), []).append(b)
    failures = []
    met = 0
    for name in names:
        runs = entries.get(name, [])
        errors = [b.get("error_message", "?") for b in runs if b.get("error_occurred")]
        if not runs:
            failures.append("%s did not run" % name)
            print("FAIL %s: did not run" % name)
            continue
        if errors:
            failures.append("%s: %s" % (name, errors[0]))
            print("FAIL %s: %s" % (name, errors[0]))
            continue
        med = [b for b in runs if b.get("aggregate_name") == "median"]
        b = med[0] if med else runs[0]
        if "ratio" not in b:
            failures.append("%s has no ratio counter" % name)
            print("FAIL %s: no ratio counter" % name)
            continue
        ok = b["ratio"] <= target
        met += ok
        print("%-36s accel %9.1f ns, driver %9.1f ns (wall): ratio %.3f (CPU time %.3f), "
              "target <= %.2f %s" % (name, b["accel_ns"], b["vendor_ns"], b["ratio"],
                                     b.get("cpu_ratio", float("nan")), target,
                                     "met" if ok else "OVER" + ("" if enforce else
                                                                " (reported, not enforced)")))
        if enforce and not ok:
            failures.append("%s: ratio %.3f over %.2f" % (name, b["ratio"], target))
    line = "%d ratios, %d within %.2fx (%s)" % (
        len(names), met, target, "enforced" if enforce else "reported, not enforced")
    print("check_ratios: " + line)
    if summary:
        with open(summary, "w") as f:
            f.write(line + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
