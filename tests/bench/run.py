#!/usr/bin/env python3
"""Runs accel's benchmarks and prints every ratio against its floor.

Usage: run.py BENCH_DISPATCH COLDSTART OUT_JSON [--quick]

1. bench_dispatch (Google Benchmark): per-thread queries against a
   thread_local read through a function pointer; operations against the same
   sim plugin operation called straight through its vtable; two-thread
   scaling. Ratios come from medians of repetitions of one run.
2. Cold start as whole processes: `coldstart` calling accel_device_count()
   once with every built plugin on ACCEL_PLUGIN_PATH, against the same program
   not calling accel, and against `clinfo -l`; medians of interleaved runs.
3. Peak RSS added by discovery (core + every plugin loaded).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def run_dispatch(exe, quick, tag="sim", bench_filter=None, env=None):
    out = os.path.join(os.path.dirname(OUT), "bench-dispatch-%s.json" % tag)
    reps = "3" if quick else "7"
    argv = [exe, "--benchmark_repetitions=" + reps,
            "--benchmark_report_aggregates_only=true",
            "--benchmark_min_time=0.05" if quick else "--benchmark_min_time=0.2",
            "--benchmark_out=" + out, "--benchmark_out_format=json"]
    if bench_filter:
        argv.append("--benchmark_filter=" + bench_filter)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    with open(out) as f:
        data = json.load(f)
    med = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            med[b["run_name"]] = b
    return med


def ns(med, name):
    b = med[name]
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    return b["real_time"] * scale


def time_process(argv, env):
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1e3


def main():
    global OUT
    dispatch, coldstart, OUT = sys.argv[1:4]
    quick = "--quick" in sys.argv
    rows = []
    over = []

    med = run_dispatch(dispatch, quick, "sim", "-BM_ocl_")

    def ratio(name, floor, target, what):
        r = ns(med, name) / ns(med, floor)
        ok = r <= target
        rows.append({"benchmark": name, "floor": floor, "ns": round(ns(med, name), 2),
                     "floor_ns": round(ns(med, floor), 2), "ratio": round(r, 3),
                     "target": "<= %.2f" % target, "ok": ok, "what": what})
        if not ok:
            over.append(name)

    ratio("BM_current_device_index", "BM_floor_tls_get", 2.0, "accel_current_device_index")
    ratio("BM_current_stream", "BM_floor_tls_get", 2.0, "accel_current_stream")
    ratio("BM_stream_native_handle", "BM_floor_tls_get", 2.0, "accel_stream_native_handle")
    ratio("BM_guard_no_switch", "BM_floor_tls_guard", 2.0, "guard, same device")
    ratio("BM_guard_switch", "BM_floor_tls_guard", 2.0, "guard, switching device (sim: no vendor call)")
    ratio("BM_stream_query", "BM_direct_stream_query", 1.10, "accel_stream_query vs sim vtable")
    ratio("BM_event_record", "BM_direct_event_record", 1.10, "accel_event_record vs sim vtable")
    ratio("BM_event_query", "BM_direct_event_query", 1.10, "accel_event_query vs sim vtable")

    # Second pass: accel over its opencl backend (PoCL, two CPU devices)
    # against the OpenCL calls made directly, in the same process.
    if os.environ.get("ACCEL_BENCH_OPENCL") == "1":
        ocl_env = dict(os.environ, ACCEL_BACKEND="opencl", ACCEL_OPENCL_DEVICE_TYPE="all",
                       POCL_DEVICES="pthread basic")
        ocl = run_dispatch(dispatch, quick, "opencl",
                           "BM_ocl_|BM_stream_query|BM_event_record|BM_event_query|"
                           "BM_guard_switch|BM_floor_tls_guard", ocl_env)
        def ocl_ratio(name, floor, target, what):
            r = ns(ocl, name) / ns(ocl, floor)
            rows.append({"benchmark": "[opencl] " + name, "floor": floor, "ns": round(ns(ocl, name), 2),
                         "floor_ns": round(ns(ocl, floor), 2), "ratio": round(r, 3),
                         "target": "<= %.2f" % target, "ok": r <= target, "what": what})
            if r > target:
                over.append("[opencl] " + name)
        ocl_ratio("BM_guard_switch", "BM_floor_tls_guard", 2.0, "guard, switching device (OpenCL has no current device)")
        ocl_ratio("BM_stream_query", "BM_ocl_direct_stream_query", 1.10, "accel_stream_query vs clGetEventInfo of the last marker")
        ocl_ratio("BM_event_record", "BM_ocl_direct_event_record", 1.10, "accel_event_record vs clEnqueueMarkerWithWaitList + clFlush")
        ocl_ratio("BM_event_query", "BM_ocl_direct_event_query", 1.10, "accel_event_query vs clGetEventInfo")
        # Copies, 4 MiB each, waited for: accel against OpenCL called on the
        # cl_command_queue behind the same accel stream, with the same memory.
        ocl_ratio("BM_ocl_pinned_h2d/real_time", "BM_ocl_direct_pinned_h2d/real_time", 1.10,
                  "4 MiB H2D from accel_host_malloc memory: accel_memcpy_async + synchronize vs clEnqueueSVMMemcpy + clFinish")
        # Staged through the host either way (each device has its own
        # context): reported, no target.
        r = ns(ocl, "BM_ocl_peer_copy/real_time") / ns(ocl, "BM_ocl_direct_peer_copy/real_time")
        rows.append({"benchmark": "[opencl] BM_ocl_peer_copy/real_time", "floor": "BM_ocl_direct_peer_copy/real_time",
                     "ns": round(ns(ocl, "BM_ocl_peer_copy/real_time"), 2),
                     "floor_ns": round(ns(ocl, "BM_ocl_direct_peer_copy/real_time"), 2), "ratio": round(r, 3),
                     "what": "4 MiB device 0 -> device 1: accel_memcpy_peer_async vs clEnqueueSVMMemcpy to host, then to the other device, by hand"})

    one = med["BM_get_set_device/real_time/threads:1"]["items_per_second"]
    two = med["BM_get_set_device/real_time/threads:2"]["items_per_second"]
    scaling = two / one
    rows.append({"benchmark": "BM_get_set_device threads:2 / threads:1", "ratio": round(scaling, 3),
                 "target": ">= 1.80", "ok": scaling >= 1.8,
                 "what": "aggregate get/set throughput, 2 threads vs 1"})
    if scaling < 1.8:
        over.append("scaling")

    # Cold start: interleave the programs so drift hits all of them alike.
    env = dict(os.environ)
    env.pop("ACCEL_SIM_DEVICES", None)
    env.pop("ACCEL_BACKEND", None)
    runs = 15 if quick else 41
    clinfo = shutil.which("clinfo")
    # The same process with every plugin but opencl: what accel itself and
    # the other backends cost, apart from the OpenCL ICDs (PoCL loads LLVM).
    env_no_ocl = dict(env)
    env_no_ocl["ACCEL_PLUGIN_PATH"] = ":".join(
        d for d in env.get("ACCEL_PLUGIN_PATH", "").split(":") if not d.rstrip("/").endswith("opencl"))
    samples = {"accel": [], "floor": [], "clinfo": [], "no_ocl": []}
    for _ in range(runs):
        samples["floor"].append(time_process([coldstart, "floor"], env))
        samples["accel"].append(time_process([coldstart], env))
        samples["no_ocl"].append(time_process([coldstart], env_no_ocl))
        if clinfo:
            samples["clinfo"].append(time_process([clinfo, "-l"], env))
    m = {k: statistics.median(v) for k, v in samples.items() if v}
    added = m["accel"] - m["floor"]
    rows.append({"benchmark": "cold start: accel_device_count() process", "ms": round(m["accel"], 2),
                 "floor_ms": round(m["floor"], 2), "added_ms": round(added, 2),
                 "ratio": round(m["accel"] / m["floor"], 3), "target": "added <= 20 ms",
                 "ok": added <= 20.0, "what": "median of %d runs, every built plugin on the path" % runs})
    if added > 20.0:
        over.append("cold start")
    rows.append({"benchmark": "cold start: same, every plugin but opencl", "ms": round(m["no_ocl"], 2),
                 "floor_ms": round(m["floor"], 2), "added_ms": round(m["no_ocl"] - m["floor"], 2),
                 "ratio": round(m["no_ocl"] / m["floor"], 3),
                 "what": "accel and the other backends without the OpenCL ICDs"})
    if "clinfo" in m:
        rows.append({"benchmark": "cold start: clinfo -l (peer)", "ms": round(m["clinfo"], 2),
                     "floor_ms": round(m["floor"], 2), "added_ms": round(m["clinfo"] - m["floor"], 2),
                     "ratio": round(m["accel"] / m["clinfo"], 3),
                     "what": "ratio: accel process / clinfo -l process"})

    for label, e in (("", env), (", every plugin but opencl", env_no_ocl)):
        rss = subprocess.run([coldstart, "rss"], env=e, capture_output=True, text=True).stdout.split()
        if len(rss) >= 2:
            rows.append({"benchmark": "peak RSS added by discovery" + label, "kB": int(rss[1]) - int(rss[0]),
                         "what": "VmHWM after accel_device_count() - VmRSS before"})

    print("%-48s %12s %12s %8s %10s  %s" % ("benchmark", "accel", "floor", "ratio", "added", "target"))
    for r in rows:
        a = r.get("ns", r.get("ms", r.get("kB", "")))
        unit = "ns" if "ns" in r else "ms" if "ms" in r else "kB" if "kB" in r else ""
        f = r.get("floor_ns", r.get("floor_ms", ""))
        print("%-48s %12s %12s %8s %10s  %s%s" % (r["benchmark"], "%s %s" % (a, unit) if a != "" else "",
                                            "%s %s" % (f, unit) if f != "" else "", r.get("ratio", ""),
                                            "%s ms" % r["added_ms"] if "added_ms" in r else "",
                                            r.get("target", ""),
                                            "" if r.get("ok", True) else "  OVER TARGET"))
    # The same rows as the table of docs/performance.md (paste it there after
    # a run).
    md = os.path.join(os.path.dirname(OUT), "bench-results.md")
    with open(md, "w") as f:
        f.write("| benchmark | accel | floor | ratio | added | target |\n|---|---|---|---|---|---|\n")
        for r in rows:
            unit = "ns" if "ns" in r else "ms" if "ms" in r else "kB" if "kB" in r else ""
            a = r.get("ns", r.get("ms", r.get("kB", "")))
            fl = r.get("floor_ns", r.get("floor_ms", ""))
            f.write("| %s | %s | %s | %s | %s | %s |\n" % (
                r.get("what", r["benchmark"]) if r["benchmark"].startswith("BM_") or
                r["benchmark"].startswith("[opencl]") else r["benchmark"],
                "%s %s" % (a, unit) if a != "" else "", "%s %s" % (fl, unit) if fl != "" else "",
                r.get("ratio", ""), "%s ms" % r["added_ms"] if "added_ms" in r else "",
                (r.get("target", "") + ("" if r.get("ok", True) else " (over)")).strip()))
    print("markdown (the table of docs/performance.md): %s" % md)
    with open(OUT, "w") as f:
        json.dump({"rows": rows, "over_target": over}, f, indent=2)
    print("results: %s" % OUT)
    print("over target: %s" % (", ".join(over) if over else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
