#!/usr/bin/env python3
"""Runs accel's benchmarks and prints every ratio against its floor.

Usage: run.py BENCH_DISPATCH COLDSTART OUT_JSON [--quick] [--alloc BENCH_ALLOC]
              [--only-alloc]

1. bench_dispatch (Google Benchmark): per-thread queries against a
   thread_local read through a function pointer; operations against the same
   sim plugin operation called straight through its vtable; two-thread
   scaling. Ratios come from medians of repetitions of one run.
2. Cold start as whole processes: `coldstart` calling accel_device_count()
   once with every built plugin on ACCEL_PLUGIN_PATH, against the same program
   not calling accel, and against `clinfo -l`; medians of interleaved runs.
3. Peak RSS added by discovery (core + every plugin loaded).
4. With --alloc, bench_alloc (Google Benchmark): the caching allocator's
   accel_malloc + accel_free pair on sim and on PoCL against the same pair
   with ACCEL_ALLOC_CONF=backend:native (another process: the setting is
   read once) and against clSVMAlloc + clSVMFree called directly; two
   threads on two devices against one; reserved / allocated bytes at the
   peak of a replayed training trace, with the default configuration and
   with roundup_power2_divisions:4. --only-alloc runs this part alone.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def run_dispatch(exe, quick, tag="sim", bench_filter=None, env=None, prefix="bench-dispatch",
                 reps_out=None, strict=False):
    """Medians by run name. With reps_out (a dict), every repetition is kept
    too: reps_out[run name] = the list of its repetitions' entries. strict:
    a benchmark that skipped with an error stops the run, saying why."""
    out = os.path.join(os.path.dirname(OUT), "%s-%s.json" % (prefix, tag))
    reps = "3" if quick else "7"
    argv = [exe, "--benchmark_repetitions=" + reps,
            "--benchmark_display_aggregates_only=true" if reps_out is not None
            else "--benchmark_report_aggregates_only=true",
            "--benchmark_min_time=0.05" if quick else "--benchmark_min_time=0.2",
            "--benchmark_out=" + out, "--benchmark_out_format=json"]
    if bench_filter:
        argv.append("--benchmark_filter=" + bench_filter)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    with open(out) as f:
        data = json.load(f)
    med = {}
    for b in data["benchmarks"]:
        if strict and "error_message" in b:
            raise SystemExit("%s: %s: %s" % (os.path.basename(exe), b["name"], b["error_message"]))
        if b.get("aggregate_name") == "median":
            med[b["run_name"]] = b
        elif reps_out is not None and b.get("run_type") == "iteration":
            reps_out.setdefault(b["run_name"], []).append(b)
    return med


def spread(reps, name, key="real_time"):
    """(min, max) in ns over the repetitions of `name`, or None."""
    values = [ns({name: r}, name, key) for r in reps.get(name, [])]
    return (min(values), max(values)) if values else None


def ns(med, name, key="real_time"):
    b = med[name]
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    return b[key] * scale


def run_alloc(exe, quick, rows, over):
    """The caching allocator's rows (see bench_alloc.cpp)."""
    base = dict(os.environ)
    base.pop("ACCEL_ALLOC_CONF", None)
    base.pop("ACCEL_BACKEND", None)
    native = dict(base, ACCEL_ALLOC_CONF="backend:native")
    round4 = dict(base, ACCEL_ALLOC_CONF="roundup_power2_divisions:4")
    passes = {}  # tag -> (medians, repetitions)

    def bench(tag, bench_filter, env):
        reps = {}
        passes[tag] = (run_dispatch(exe, quick, tag, bench_filter, env, "bench-alloc", reps, True),
                       reps)

    bench("sim", "BM_alloc_", base)
    bench("sim-native", "BM_alloc_pair/", native)
    bench("sim-round4", "BM_alloc_fragmentation", round4)
    ocl = os.environ.get("ACCEL_BENCH_OPENCL") == "1"
    if ocl:
        ocl_env = dict(base, ACCEL_BACKEND="opencl", ACCEL_OPENCL_DEVICE_TYPE="all",
                       POCL_DEVICES="pthread basic")
        bench("opencl", "BM_alloc_pair/|BM_ocl_direct_svm_pair", ocl_env)
        bench("opencl-native", "BM_alloc_pair/", dict(ocl_env, ACCEL_ALLOC_CONF="backend:native"))

    # The pairs never wait for another thread, so their cost is CPU time:
    # on a shared machine real time also counts the time the benchmark was
    # descheduled (the JSON keeps both).
    def cpu(tag, name):
        med, reps = passes[tag]
        return ns(med, name, "cpu_time"), spread(reps, name, "cpu_time")

    def real(tag, name):
        return ns(passes[tag][0], name)

    def check(row, ok):
        row["ok"] = ok
        if not ok:
            over.append(row["benchmark"])
        rows.append(row)

    sizes = ((1 << 20, "1 MiB"), (64 << 20, "64 MiB"))
    for tag, backend in (("sim", "sim"), ("opencl", "PoCL")) if ocl else (("sim", "sim"),):
        for size, label in sizes:
            name = "BM_alloc_pair/%d" % size
            t, sp = cpu(tag, name)
            f, fsp = cpu(tag + "-native", name)
            check({"benchmark": "[alloc] %s %s" % (tag, name), "floor": "backend:native",
                   "ns": round(t, 1), "spread": sp, "floor_ns": round(f, 1),
                   "floor_spread": fsp, "ratio": round(t / f, 4),
                   "real_ns": round(real(tag, name), 1),
                   "floor_real_ns": round(real(tag + "-native", name), 1),
                   "target": "pair <= 100 ns",
                   "what": "%s: accel_malloc + accel_free, %s, cached, CPU time (floor: the same "
                           "pair with backend:native)" % (backend, label)}, t <= 100.0)
    if ocl:
        for size, label in sizes:
            name = "BM_alloc_pair/%d" % size
            direct = "BM_ocl_direct_svm_pair/%d" % size
            t, sp = cpu("opencl", name)
            f, fsp = cpu("opencl", direct)
            target = 0.125 if size == 1 << 20 else 0.01
            check({"benchmark": "[alloc] opencl %s vs clSVMAlloc" % name, "floor": direct,
                   "ns": round(t, 1), "spread": sp, "floor_ns": round(f, 1),
                   "floor_spread": fsp, "ratio": round(t / f, 4),
                   "real_ns": round(real("opencl", name), 1),
                   "floor_real_ns": round(real("opencl", direct), 1),
                   "target": "<= %g (%dx faster)" % (target, round(1 / target)),
                   "what": "PoCL: cached pair, %s, vs clSVMAlloc + clSVMFree in the same "
                           "cl_context, CPU time" % label}, t / f <= target)

    # Two threads, each on its own device, against one: aggregate pairs per
    # second of real time (what the target is about), and the same from CPU
    # time per pair, which the other users of a shared machine do not skew.
    med, reps = passes["sim"]
    one = med["BM_alloc_pair_threads/1048576/real_time/threads:1"]
    two = med["BM_alloc_pair_threads/1048576/real_time/threads:2"]
    scaling = two["items_per_second"] / one["items_per_second"]
    each = [r["items_per_second"] for r in reps.get("BM_alloc_pair_threads/1048576/real_time/threads:2", [])]
    ones = [r["items_per_second"] for r in reps.get("BM_alloc_pair_threads/1048576/real_time/threads:1", [])]
    cpu_scaling = 2.0 * ns(med, "BM_alloc_pair_threads/1048576/real_time/threads:1", "cpu_time") / \
        ns(med, "BM_alloc_pair_threads/1048576/real_time/threads:2", "cpu_time")
    check({"benchmark": "[alloc] pair threads:2 / threads:1", "ratio": round(scaling, 3),
           "scaling_spread": (round(min(each) / max(ones), 3), round(max(each) / min(ones), 3))
           if each and ones else None,
           "cpu_scaling": round(cpu_scaling, 3), "target": ">= 1.60",
           "what": "sim: 1 MiB pairs per second, 2 threads on 2 devices vs 1 thread "
                   "(from CPU time per pair: %.2f)" % cpu_scaling}, scaling >= 1.6)

    for tag, conf in (("sim", "default"), ("sim-round4", "roundup_power2_divisions:4")):
        med, reps = passes[tag]
        for arg, trace in ((0, "fixed 512-token batches"), (1, "batch lengths 512..256")):
            b = med["BM_alloc_fragmentation/varlen:%d/iterations:1/real_time" % arg]
            r = b["reserved_over_allocated"]
            check({"benchmark": "[alloc] fragmentation varlen:%d %s" % (arg, conf),
                   "MiB": round(b["reserved_peak_MiB"], 1), "floor_MiB": round(b["allocated_peak_MiB"], 1),
                   "requested_MiB": round(b["requested_peak_MiB"], 1), "ratio": round(r, 3),
                   "segments": int(b["segments_peak"]), "target": "<= 1.30",
                   "what": "sim: GPT-2 training trace, %s, %s: reserved / allocated at peak "
                           "(reserved / requested %.3f)" % (trace, conf,
                                                            b["reserved_peak_MiB"] / b["requested_peak_MiB"])},
                  r <= 1.3)


def time_process(argv, env):
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1e3


def main():
    global OUT
    dispatch, coldstart, OUT = sys.argv[1:4]
    quick = "--quick" in sys.argv
    alloc = sys.argv[sys.argv.index("--alloc") + 1] if "--alloc" in sys.argv else None
    rows = []
    over = []
    if "--only-alloc" in sys.argv:
        if alloc is None:
            raise SystemExit("--only-alloc needs --alloc BENCH_ALLOC")
        run_alloc(alloc, quick, rows, over)
        return report(rows, over)

    reps = {}
    med = run_dispatch(dispatch, quick, "sim", "-BM_ocl_", reps_out=reps)

    def ratio(name, floor, target, what):
        r = ns(med, name) / ns(med, floor)
        ok = r <= target
        rows.append({"benchmark": name, "floor": floor, "ns": round(ns(med, name), 2),
                     "floor_ns": round(ns(med, floor), 2), "ratio": round(r, 3),
                     "spread": spread(reps, name), "floor_spread": spread(reps, floor),
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
        ocl_reps = {}
        ocl = run_dispatch(dispatch, quick, "opencl",
                           "BM_ocl_|BM_stream_query|BM_event_record|BM_event_query|"
                           "BM_guard_switch|BM_floor_tls_guard", ocl_env, reps_out=ocl_reps)
        def ocl_ratio(name, floor, target, what):
            r = ns(ocl, name) / ns(ocl, floor)
            rows.append({"benchmark": "[opencl] " + name, "floor": floor, "ns": round(ns(ocl, name), 2),
                         "floor_ns": round(ns(ocl, floor), 2), "ratio": round(r, 3),
                         "spread": spread(ocl_reps, name), "floor_spread": spread(ocl_reps, floor),
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
                     "spread": spread(ocl_reps, "BM_ocl_peer_copy/real_time"),
                     "floor_spread": spread(ocl_reps, "BM_ocl_direct_peer_copy/real_time"),
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

    if alloc is not None:
        run_alloc(alloc, quick, rows, over)
    return report(rows, over)


def cell(r, prefix=""):
    """'153.2 ns (148.0-160.1)': the value, its unit and the spread (min-max
    of the repetitions) where there is one."""
    for unit in ("ns", "ms", "kB", "MiB"):
        if prefix + unit in r:
            text = "%s %s" % (r[prefix + unit], unit)
            sp = r.get(prefix + "spread")
            if sp:
                text += " (%.1f-%.1f)" % tuple(sp)
            return text
    return ""


def report(rows, over):
    print("%-48s %24s %24s %8s %10s  %s" % ("benchmark", "accel", "floor", "ratio", "added", "target"))
    for r in rows:
        print("%-48s %24s %24s %8s %10s  %s%s" % (r["benchmark"], cell(r), cell(r, "floor_"),
                                            r.get("ratio", ""),
                                            "%s ms" % r["added_ms"] if "added_ms" in r else "",
                                            r.get("target", ""),
                                            "" if r.get("ok", True) else "  OVER TARGET"))
    # The same rows as the table of docs/performance.md (paste it there after
    # a run).
    md = os.path.join(os.path.dirname(OUT), "bench-results.md")
    with open(md, "w") as f:
        f.write("| benchmark | accel | floor | ratio | added | target |\n|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s | %s | %s | %s | %s | %s |\n" % (
                r.get("what", r["benchmark"]) if r["benchmark"].startswith(("BM_", "[opencl]", "[alloc]"))
                else r["benchmark"],
                cell(r), cell(r, "floor_"),
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
