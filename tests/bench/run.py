#!/usr/bin/env python3
"""Runs accel's benchmarks and prints every ratio against its floor.

Usage: run.py BENCH_DISPATCH COLDSTART OUT_JSON [--quick] [--alloc BENCH_ALLOC]
              [--only-alloc] [--kernels-sim BENCH_KERNELS_SIM]
              [--kernels-opencl BENCH_KERNELS] [--graphs BENCH_GRAPHS]
              [--copies BENCH_COPIES] [--clpeak ACCELCTL CLPEAK] [--markdown FILE]

Every ratio is printed as the ratio of the medians with its spread: the
smallest and largest ratio of one repetition of the benchmark to the same
repetition of its floor (repetitions run interleaved in random order,
--benchmark_enable_random_interleaving, so a repetition and its floor's see
the same load). --markdown FILE writes the table (the README's and
docs/performance.md's Performance table) to FILE; without it the table goes
to bench-results.md next to OUT_JSON.

1. bench_dispatch (Google Benchmark): per-thread queries against a
   thread_local read through a function pointer (BM_floor_tls_*); operations
   against the same sim plugin operation called straight through its vtable
   (BM_plugin_vtable_*); with ACCEL_BENCH_OPENCL=1, a second pass over accel's
   opencl backend against the OpenCL calls a program would make for the same
   answer (BM_ocl_vendor_*), the queries both where the backend answers from
   its cached flag and where it must ask OpenCL (queued work held back by a
   user event); two-thread scaling. Ratios come from medians of repetitions
   of one run.
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
5. With --kernels-sim, bench_kernels_sim (accel_launch_kernel against the
   sim plugin's launch_kernel, CPU time of the launching thread); with
   --kernels-opencl, bench_kernels (PoCL: accel_launch_kernel against
   clEnqueueNDRangeKernel + clFlush on the same queue, paired batches;
   module load against clBuildProgram). Needs ACCEL_BENCH_OPENCL_PLUGIN
   (and POCL_CACHE_DIR) in the environment, as meson sets them.
6. With --graphs, bench_graphs: replay of a graph of 64 `empty` launches
   against the 64 accel_launch_kernel calls, and capture's cost per
   operation, on sim (the core's recorder) and, with ACCEL_BENCH_OPENCL=1, on
   PoCL twice: its command buffers (the native path) and
   ACCEL_GRAPHS=recorder.
7. With --copies, bench_copies: accel_memcpy_async H2D, D2H (pageable and
   pinned) and D2D from 4 KiB to 256 MiB against memcpy of the same bytes
   in the same process, on sim and, with ACCEL_BENCH_OPENCL=1, on PoCL (plus
   a 4 KiB copy against clEnqueueSVMMemcpy + clFinish there).
8. With --clpeak ACCELCTL CLPEAK (and ACCEL_BENCH_OPENCL=1): `accelctl bench
   --json` against `clpeak --transfer-bandwidth` on the same PoCL device,
   alternating, several rounds: H2D and D2H of pageable memory at 256 MiB
   (the size clpeak copies on a CPU device) against clpeak's
   enqueueWriteBuffer and enqueueReadBuffer.
"""
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET


def run_dispatch(exe, quick, tag="sim", bench_filter=None, env=None, prefix="bench-dispatch",
                 reps_out=None, strict=False, min_time=None):
    """Medians by run name. With reps_out (a dict), every repetition is kept
    too: reps_out[run name] = the list of its repetitions' entries, in
    repetition order. strict: a benchmark that skipped with an error stops
    the run, saying why. Repetitions of all the benchmarks run interleaved
    in random order, so drift in the machine's load hits a benchmark and its
    floor alike and repetition i of each can be paired."""
    out = os.path.join(os.path.dirname(OUT), "%s-%s.json" % (prefix, tag))
    reps = "3" if quick else "9"
    if min_time is None:
        min_time = 0.05 if quick else 0.2
    argv = [exe, "--benchmark_repetitions=" + reps,
            "--benchmark_enable_random_interleaving=true",
            "--benchmark_display_aggregates_only=true" if reps_out is not None
            else "--benchmark_report_aggregates_only=true",
            "--benchmark_min_time=%g" % min_time,
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
    if reps_out is not None:
        for v in reps_out.values():
            v.sort(key=lambda r: r.get("repetition_index", 0))
    return med


def ratio_spread(reps, name, floor, key="real_time", scale=1.0):
    """(min, max) of the per-repetition ratios name[i] / floor[i] (times
    scale), or None without repetitions."""
    a = [ns({name: r}, name, key) for r in reps.get(name, [])]
    f = [ns({floor: r}, floor, key) for r in reps.get(floor, [])]
    rs = [scale * x / y for x, y in zip(a, f) if y > 0]
    return (round(min(rs), 3), round(max(rs), 3)) if rs else None


def counter_spread(reps, name, counter):
    """(min, max) of a counter over the repetitions of `name`, or None."""
    v = [r[counter] for r in reps.get(name, []) if counter in r]
    return (round(min(v), 3), round(max(v), 3)) if v else None


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
        bench("opencl", "BM_alloc_pair/|BM_ocl_vendor_svm_pair", ocl_env)
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
    # 4 KiB (the small pool) shows how the pair grows with size; the target
    # is the issue's, at 1 and 64 MiB.
    for tag, backend in (("sim", "sim"), ("opencl", "PoCL")) if ocl else (("sim", "sim"),):
        for size, label in ((4 << 10, "4 KiB"),) + sizes:
            name = "BM_alloc_pair/%d" % size
            t, sp = cpu(tag, name)
            f, fsp = cpu(tag + "-native", name)
            targeted = size >= 1 << 20
            check({"benchmark": "[alloc] %s %s" % (tag, name), "floor": "backend:native",
                   "ns": round(t, 1), "spread": sp, "floor_ns": round(f, 1),
                   "floor_spread": fsp, "ratio": round(t / f, 4),
                   "real_ns": round(real(tag, name), 1),
                   "floor_real_ns": round(real(tag + "-native", name), 1),
                   "target": "pair <= 100 ns" if targeted else "",
                   "what": "%s: accel_malloc + accel_free, %s, cached, CPU time (floor: the same "
                           "pair with backend:native)" % (backend, label)},
                  t <= 100.0 or not targeted)
    # The 1 MiB pair with 10, 10k and 1M other blocks live: logarithmic
    # lookups grow by at most log2(live) / log2(10) over the 10-block cost.
    live10, live10_sp = cpu("sim", "BM_alloc_pair_live/10")
    for live, label in ((10000, "10k"), (1000000, "1M")):
        name = "BM_alloc_pair_live/%d" % live
        t, sp = cpu("sim", name)
        bound = math.log2(live) / math.log2(10)
        check({"benchmark": "[alloc] sim %s / 10 live" % name, "floor": "BM_alloc_pair_live/10",
               "ns": round(t, 1), "spread": sp, "floor_ns": round(live10, 1),
               "floor_spread": live10_sp, "ratio": round(t / live10, 3),
               "ratio_spread": ratio_spread(passes["sim"][1], name, "BM_alloc_pair_live/10",
                                            "cpu_time"),
               "target": "<= %.2f (log2 %s / log2 10)" % (bound, label),
               "what": "sim: the 1 MiB cached pair with %s other blocks live vs with 10, CPU time "
                       "(lookup growth)" % label}, t / live10 <= bound)
    if ocl:
        for size, label in sizes:
            name = "BM_alloc_pair/%d" % size
            vendor = "BM_ocl_vendor_svm_pair/%d" % size
            t, sp = cpu("opencl", name)
            f, fsp = cpu("opencl", vendor)
            target = 0.125 if size == 1 << 20 else 0.01
            check({"benchmark": "[alloc] opencl %s vs clSVMAlloc" % name, "floor": vendor,
                   "ns": round(t, 1), "spread": sp, "floor_ns": round(f, 1),
                   "floor_spread": fsp, "ratio": round(t / f, 4),
                   "real_ns": round(real("opencl", name), 1),
                   "floor_real_ns": round(real("opencl", vendor), 1),
                   "target": "<= %g (%dx faster)" % (target, round(1 / target)),
                   "what": "PoCL: cached pair, %s, vs clSVMAlloc + clSVMFree in the same "
                           "cl_context, CPU time" % label}, t / f <= target)

    # 1, 2 and 4 threads against one: aggregate pairs per second of real
    # time (what the targets are about), and the same from CPU time per
    # pair, which the other users of a shared machine do not skew.
    med, reps = passes["sim"]
    def threads_row(bench, n, target, what):
        base = "%s/1048576/real_time/threads:" % bench
        one, many = med[base + "1"], med[base + str(n)]
        scaling = many["items_per_second"] / one["items_per_second"]
        each = [r["items_per_second"] for r in reps.get(base + str(n), [])]
        ones = [r["items_per_second"] for r in reps.get(base + "1", [])]
        cpu_scaling = n * ns(med, base + "1", "cpu_time") / ns(med, base + str(n), "cpu_time")
        check({"benchmark": "[alloc] %s threads:%d / threads:1" % (bench, n),
               "ratio": round(scaling, 3),
               "ratio_spread": (round(min(each) / max(ones), 3), round(max(each) / min(ones), 3))
               if each and ones else None,
               "cpu_scaling": round(cpu_scaling, 3), "target": ">= %.2f" % target,
               "what": "sim: 1 MiB pairs per second, %s, vs 1 thread (from CPU time per pair: "
                       "%.2f)" % (what, cpu_scaling)}, scaling >= target)
    threads_row("BM_alloc_pair_threads", 2, 1.8, "2 threads on 2 devices")
    threads_row("BM_alloc_pair_threads", 4, 1.8, "4 threads on 2 devices (2 cores)")
    threads_row("BM_alloc_pair_one_device", 2, 1.0, "2 threads on 1 device (one lock)")
    threads_row("BM_alloc_pair_one_device", 4, 1.0, "4 threads on 1 device (one lock, 2 cores)")
    threads_row("BM_alloc_pair_one_device_own_stream", 2, 1.0,
                "2 threads on 1 device, each on a stream of its own")

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


def ratio_row(rows, over, med, reps, label, name, floor, key, what, target=None):
    """Appends the row of name / floor on `key` (cpu_time or real_time),
    with its spreads and, given a target, whether it is met."""
    t, f = ns(med, name, key), ns(med, floor, key)
    row = {"benchmark": label, "floor": floor, "ns": round(t, 1), "floor_ns": round(f, 1),
           "ratio": round(t / f, 3), "ratio_spread": ratio_spread(reps, name, floor, key),
           "spread": spread(reps, name, key), "floor_spread": spread(reps, floor, key), "what": what}
    if target is not None:
        row["target"] = "<= %.2f" % target
        row["ok"] = t / f <= target
        if not row["ok"]:
            over.append(row["benchmark"])
    rows.append(row)


def graph_row(rows, over, med, reps, tag, name, floor, key, what, target=None):
    ratio_row(rows, over, med, reps, "[graphs-%s] %s / %s %s" % (tag, name, floor, key), name,
              floor, key, what, target)


def run_kernels_sim(exe, quick, rows, over):
    """accel_launch_kernel against the sim plugin's launch_kernel called on a
    private copy of its vtable (bench_kernels_sim.cpp): CPU time of the
    launching thread (sim's worker runs the kernels on another thread)."""
    env = dict(os.environ, ACCEL_BACKEND="sim", ACCEL_SIM_DEVICES="1")
    reps = {}
    med = run_dispatch(exe, quick, "sim", None, env, "bench-kernels", reps, True,
                       min_time=0.02 if quick else 0.1)
    for kernel, target in (("empty", 1.10), ("vector_add", 1.15)):
        name, floor = "BM_launch_" + kernel, "BM_plugin_vtable_launch_" + kernel
        ratio_row(rows, over, med, reps, "[kernels-sim] " + name, name, floor, "cpu_time",
                  "sim: accel_launch_kernel `%s` vs the plugin's launch_kernel, CPU time" % kernel,
                  target)
    # Growth with the grid (blocks run on sim's worker): no target, the
    # table shows whether the launching thread's cost grows.
    for grid in (1, 64, 4096):
        name, floor = "BM_launch_empty_grid/%d" % grid, "BM_plugin_vtable_launch_empty_grid/%d" % grid
        ratio_row(rows, over, med, reps, "[kernels-sim] " + name, name, floor, "cpu_time",
                  "sim: accel_launch_kernel `empty`, grid of %d blocks, vs the plugin's "
                  "launch_kernel with the same grid, CPU time" % grid, None)
    threads_scaling_row(rows, over, med, reps, "[kernels-sim]", "BM_launch_empty_threads/real_time",
                        "sim: `empty` launches per second, %d threads each on its own stream of one "
                        "device, vs 1 thread", 1.0)


def threads_scaling_row(rows, over, med, reps, prefix, base, what, target):
    """Rows of aggregate items per second at 2 and 4 threads over 1 thread
    (Google Benchmark's /threads:N runs of `base`)."""
    one = med.get(base + "/threads:1")
    for n in (2, 4):
        many = med.get(base + "/threads:%d" % n)
        if one is None or many is None:
            continue
        scaling = many["items_per_second"] / one["items_per_second"]
        each = [r["items_per_second"] for r in reps.get(base + "/threads:%d" % n, [])]
        ones = [r["items_per_second"] for r in reps.get(base + "/threads:1", [])]
        row = {"benchmark": "%s %s threads:%d / threads:1" % (prefix, base.split("/")[0], n),
               "ratio": round(scaling, 3),
               "ratio_spread": (round(min(each) / max(ones), 3), round(max(each) / min(ones), 3))
               if each and ones else None, "what": what % n}
        if target is not None:
            row["target"] = ">= %.2f" % target
            row["ok"] = scaling >= target
            if not row["ok"]:
                over.append(row["benchmark"])
        rows.append(row)


def run_kernels_opencl(exe, quick, rows, over):
    """Launches and module loads over accel's opencl backend against the same
    OpenCL calls on PoCL (bench_kernels.cpp). The launch target row is the
    paired benchmark: batches of accel and vendor launches alternate inside
    each iteration, so both see the same load."""
    env = dict(os.environ, ACCEL_BACKEND="opencl", ACCEL_OPENCL_DEVICE_TYPE="all",
               POCL_DEVICES="pthread")
    reps = {}
    med = run_dispatch(exe, quick, "opencl",
                       "BM_ocl_launch_empty_paired|BM_ocl_launch_saxpy|BM_ocl_vendor_launch_saxpy|"
                       "BM_ocl_module_load|BM_ocl_vendor_module_load|BM_ocl_launch_empty_threads|"
                       "BM_ocl_vendor_launch_empty_threads",
                       env, "bench-kernels", reps, True, min_time=0.02 if quick else 0.1)
    paired = "BM_ocl_launch_empty_paired"
    b = med[paired]
    for what, a_key, f_key, r_key, target in (
            ("wall time", "accel_ns", "vendor_ns", "ratio", 1.10),
            ("CPU time of the launching thread", "accel_cpu_ns", "vendor_cpu_ns", "cpu_ratio", None)):
        row = {"benchmark": "[kernels-opencl] %s %s" % (paired, r_key), "floor": "vendor",
               "ns": round(b[a_key], 1), "floor_ns": round(b[f_key], 1),
               "spread": counter_spread(reps, paired, a_key),
               "floor_spread": counter_spread(reps, paired, f_key),
               "ratio": round(b[r_key], 3), "ratio_spread": counter_spread(reps, paired, r_key),
               "what": "PoCL: accel_launch_kernel `empty` vs clEnqueueNDRangeKernel + clFlush on the "
                       "same queue, paired batches, %s" % what}
        if target is not None:
            row["target"] = "<= %.2f" % target
            row["ok"] = b[r_key] <= target
            if not row["ok"]:
                over.append(row["benchmark"])
        rows.append(row)
    for name, floor, what in (
            ("BM_ocl_launch_saxpy/real_time", "BM_ocl_vendor_launch_saxpy/real_time",
             "PoCL: accel_launch_kernel `saxpy` vs clSetKernelArg* + clEnqueueNDRangeKernel + clFlush"),
            ("BM_ocl_module_load/real_time", "BM_ocl_vendor_module_load/real_time",
             "PoCL: accel_module_load + unload of OpenCL C vs clCreateProgramWithSource + "
             "clBuildProgram (kernel cache warm)")):
        t, f = ns(med, name), ns(med, floor)
        rows.append({"benchmark": "[kernels-opencl] " + name, "floor": floor, "ns": round(t, 1),
                     "floor_ns": round(f, 1), "ratio": round(t / f, 3),
                     "ratio_spread": ratio_spread(reps, name, floor),
                     "spread": spread(reps, name), "floor_spread": spread(reps, floor), "what": what})
    threads_scaling_row(rows, over, med, reps, "[kernels-opencl]",
                        "BM_ocl_launch_empty_threads/real_time",
                        "PoCL: `empty` launches per second, %d threads each on its own stream of one "
                        "device, vs 1 thread", 1.3)
    threads_scaling_row(rows, over, med, reps, "[kernels-opencl]",
                        "BM_ocl_vendor_launch_empty_threads/real_time",
                        "PoCL directly (reference): clEnqueueNDRangeKernel + clFlush from %d threads, "
                        "each with its own queue and kernel, vs 1 thread", None)


GRAPH_PATHS = (
    # tag, environment, what, target of replay / launches (CPU time)
    ("sim", {"ACCEL_BACKEND": "sim", "ACCEL_SIM_DEVICES": "1"}, "sim, the core's recorder", 0.9),
    # PoCL's graphs go to the recorder unless ACCEL_OPENCL_COMMAND_BUFFERS=1
    # (backends/opencl/README.md): the native path must ask for it.
    ("opencl", {"ACCEL_BACKEND": "opencl", "ACCEL_OPENCL_DEVICE_TYPE": "all",
                "POCL_DEVICES": "pthread", "ACCEL_OPENCL_COMMAND_BUFFERS": "1"},
     "PoCL, cl_khr_command_buffer (ACCEL_OPENCL_COMMAND_BUFFERS=1)", 0.7),
    ("opencl-recorder", {"ACCEL_BACKEND": "opencl", "ACCEL_OPENCL_DEVICE_TYPE": "all",
                         "POCL_DEVICES": "pthread", "ACCEL_OPENCL_COMMAND_BUFFERS": "0"},
     "PoCL, the core's recorder (the default)", None),
)


def run_graphs(exe, quick, rows, over):
    """Replay against re-issuing, and capture's cost, per replay path
    (bench_graphs.cpp). Targets are on the CPU time of the issuing thread;
    the synchronized wall times are reported."""
    paths = GRAPH_PATHS if os.environ.get("ACCEL_BENCH_OPENCL") == "1" else GRAPH_PATHS[:1]
    for tag, extra, where, target in paths:
        env = dict(os.environ, **extra)
        if "ACCEL_GRAPHS" not in extra:
            env.pop("ACCEL_GRAPHS", None)
        reps = {}
        only_accel = None if tag.startswith("opencl") else "BM_(launch|replay|capture)_"
        med = run_dispatch(exe, quick, tag, only_accel, env, "bench-graphs", reps, True,
                           min_time=0.02 if quick else 0.1)
        graph_row(rows, over, med, reps, tag, "BM_replay_64", "BM_launch_64", "cpu_time",
                  "%s: replay of 64 captured `empty` launches vs the 64 launches, CPU time" % where,
                  target)
        graph_row(rows, over, med, reps, tag, "BM_replay_64_sync", "BM_launch_64_sync", "real_time",
                  "%s: the same, each followed by a stream synchronize, wall time" % where)
        graph_row(rows, over, med, reps, tag, "BM_capture_64", "BM_launch_64", "cpu_time",
                  "%s: capture (begin + 64 launches + end + destroy) vs the 64 launches, CPU time "
                  "(cost per recorded launch: the ratio)" % where)


COPY_KINDS = ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned", "d2d")
COPY_PATHS = (
    ("sim", {"ACCEL_BACKEND": "sim", "ACCEL_SIM_DEVICES": "1"}, "sim"),
    ("opencl", {"ACCEL_BACKEND": "opencl", "ACCEL_OPENCL_DEVICE_TYPE": "all",
                "POCL_DEVICES": "pthread"}, "PoCL"),
)


def run_copies(exe, quick, rows, over):
    """accel_memcpy_async of every kind against memcpy of the same bytes, in
    the same process (bench_copies.cpp), on sim and, with
    ACCEL_BENCH_OPENCL=1, on PoCL. Per kind one row: the lowest bandwidth
    ratio (accel / memcpy) from 1 MiB up, target >= 0.90; on PoCL, a 4 KiB
    copy's latency against clEnqueueSVMMemcpy + clFinish on the same queue,
    target <= 1.20. Every size is printed (GB/s)."""
    paths = COPY_PATHS if os.environ.get("ACCEL_BENCH_OPENCL") == "1" else COPY_PATHS[:1]
    for tag, extra, where in paths:
        env = dict(os.environ, **extra)
        reps = {}
        med = run_dispatch(exe, quick, tag, None if tag == "opencl" else "-BM_ocl_", env,
                           "bench-copies", reps, True, min_time=0.02 if quick else 0.1)
        def gbs(name):
            return med[name + "/real_time"]["bytes_per_second"] / 1e9
        def rep_gbs(name):
            return [r["bytes_per_second"] / 1e9 for r in reps.get(name + "/real_time", [])]
        sizes = sorted(int(n.split("/")[1]) for n in med if n.startswith("BM_memcpy/"))
        print("[copies-%s] GB/s by size: memcpy, then accel's %s%s" % (
            tag, ", ".join(COPY_KINDS), ", then clEnqueueSVMMemcpy" if tag == "opencl" else ""))
        for size in sizes:
            cells = ["%6.1f" % gbs("BM_memcpy/%d" % size)]
            cells += ["%6.1f" % gbs("BM_copy/%s/%d" % (k, size)) for k in COPY_KINDS]
            if tag == "opencl":
                cells.append("%6.1f" % gbs("BM_ocl_vendor_svm_memcpy/%d" % size))
            print("  %10d B  " % size + " ".join(cells))
        for kind in COPY_KINDS:
            worst = None
            for size in (n for n in sizes if n >= 1 << 20):
                name, floor = "BM_copy/%s/%d" % (kind, size), "BM_memcpy/%d" % size
                r = gbs(name) / gbs(floor)
                if worst is None or r < worst[0]:
                    worst = (r, size, name, floor)
            if worst is None:
                continue
            r, size, name, floor = worst
            per_rep = [a / b for a, b in zip(rep_gbs(name), rep_gbs(floor)) if b > 0]
            a, b = rep_gbs(name), rep_gbs(floor)
            row = {"benchmark": "[copies-%s] %s vs memcpy, 1-256 MiB, lowest at %d MiB" % (
                       tag, kind, size >> 20),
                   "floor": floor, "GB/s": round(gbs(name), 1), "floor_GB/s": round(gbs(floor), 1),
                   "spread": (min(a), max(a)) if a else None,
                   "floor_spread": (min(b), max(b)) if b else None, "ratio": round(r, 3),
                   "ratio_spread": (round(min(per_rep), 3), round(max(per_rep), 3)) if per_rep else None,
                   "target": ">= 0.90", "ok": r >= 0.90,
                   "what": "%s: accel_memcpy_async %s bandwidth / memcpy's, lowest of 1-256 MiB "
                           "(at %d MiB)" % (where, kind.replace("_", " "), size >> 20)}
            if not row["ok"]:
                over.append(row["benchmark"])
            rows.append(row)
        if tag == "opencl":
            ratio_row(rows, over, med, reps, "[copies-opencl] 4 KiB h2d_pinned / clEnqueueSVMMemcpy",
                      "BM_copy_latency/h2d_pinned/4096/real_time",
                      "BM_ocl_vendor_svm_memcpy_latency/4096/real_time",
                      "real_time", "PoCL: a 4 KiB pinned H2D copy + synchronize vs "
                      "clEnqueueSVMMemcpy + clFinish on the same queue, latency", 1.20)


# The PoCL device both programs measure: PoCL's pthread driver alone, so it
# is device 0 of the only OpenCL platform for clpeak and for accel.
CLPEAK_ENV = {"ACCEL_BACKEND": "opencl", "ACCEL_OPENCL_DEVICE_TYPE": "all",
              "POCL_DEVICES": "pthread"}
CLPEAK_PAIRS = (("h2d_pageable", "enqueuewritebuffer", "H2D pageable", "enqueueWriteBuffer"),
                ("d2h_pageable", "enqueuereadbuffer", "D2H pageable", "enqueueReadBuffer"))


def clpeak_round(clpeak, env, workdir):
    """One `clpeak --transfer-bandwidth` run: {xml tag: GB/s} of the PoCL
    platform's first device (its XML dump; clpeak prints GB/s = 1e9 B/s)."""
    xml = os.path.join(workdir, "clpeak.xml")
    subprocess.run([clpeak, "--transfer-bandwidth", "--enable-xml-dump", "-f", xml], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=600)
    for plat in ET.parse(xml).getroot().iter("platform"):
        if "Portable Computing Language" not in plat.get("name", ""):
            continue
        tb = plat.find("device/transfer_bandwidth")
        if tb is not None:
            return {c.tag: float(c.text) for c in tb}, plat.find("device").get("name")
    raise RuntimeError("clpeak measured no PoCL device (%s)" % xml)


def accelctl_round(accelctl, env):
    """One `accelctl bench --json --device 0`: {series: {bytes: GB/s}} and
    the device's name."""
    out = subprocess.run([accelctl, "bench", "--json", "--device", "0"], env=env,
                         capture_output=True, text=True, timeout=600)
    doc = json.loads(out.stdout)
    if not doc.get("passed"):
        raise RuntimeError("accelctl bench failed: %s" % out.stdout[-2000:])
    d = doc["devices"][0]
    return {k: {p["bytes"]: p["gbps"] for p in pts} for k, pts in d["series"].items()}, d["name"]


def run_clpeak(accelctl, clpeak, quick, rows, over):
    """accelctl bench's pageable H2D/D2H at 256 MiB against clpeak's
    enqueueWriteBuffer/enqueueReadBuffer (pageable host memory to and from a
    256 MiB buffer on a CPU device), the two programs alternating (which
    goes first alternates too), so both see the same load. The row's
    ratio is that of the medians over the rounds, its spread the per-round
    ratios; target >= 0.95."""
    env = dict(os.environ, **CLPEAK_ENV)
    size = 256 << 20
    rounds = 1 if quick else 3
    accel = {k: [] for k, _, _, _ in CLPEAK_PAIRS}
    peer = {t: [] for _, t, _, _ in CLPEAK_PAIRS}
    names = set()
    with tempfile.TemporaryDirectory() as work:
        for i in range(rounds):
            order = ("accel", "clpeak") if i % 2 == 0 else ("clpeak", "accel")
            for which in order:
                if which == "clpeak":
                    got, name = clpeak_round(clpeak, env, work)
                    for t in peer:
                        peer[t].append(got[t])
                else:
                    got, name = accelctl_round(accelctl, env)
                    for k in accel:
                        accel[k].append(got[k][size])
                names.add(name)
    print("[clpeak] device %s; GB/s per round at 256 MiB: accel %s, clpeak %s" % (
        " / ".join(sorted(names)), accel, peer))
    for key, tag, label, call in CLPEAK_PAIRS:
        a, b = statistics.median(accel[key]), statistics.median(peer[tag])
        per_round = [x / y for x, y in zip(accel[key], peer[tag]) if y > 0]
        r = a / b
        row = {"benchmark": "[clpeak] %s 256 MiB / clpeak %s" % (key, call),
               "GB/s": round(a, 2), "floor_GB/s": round(b, 2),
               "spread": (min(accel[key]), max(accel[key])),
               "floor_spread": (min(peer[tag]), max(peer[tag])), "ratio": round(r, 3),
               "ratio_spread": (round(min(per_round), 3), round(max(per_round), 3)),
               "target": ">= 0.95", "ok": r >= 0.95,
               "what": "PoCL: accel vs clpeak transfer bandwidth: accelctl bench %s at 256 MiB vs "
                       "clpeak --transfer-bandwidth %s (256 MiB), %d alternating rounds" % (
                           label, call, rounds)}
        if not row["ok"]:
            over.append(row["benchmark"])
        rows.append(row)


def time_process(argv, env):
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1e3


def main():
    global OUT, MARKDOWN
    dispatch, coldstart, OUT = sys.argv[1:4]
    quick = "--quick" in sys.argv
    def option(flag):
        return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else None
    alloc = option("--alloc")
    kernels_sim = option("--kernels-sim")
    kernels_ocl = option("--kernels-opencl")
    graphs = option("--graphs")
    copies = option("--copies")
    clpeak = (sys.argv[sys.argv.index("--clpeak") + 1:sys.argv.index("--clpeak") + 3]
              if "--clpeak" in sys.argv else None)
    MARKDOWN = option("--markdown")
    rows = []
    over = []
    if "--only-alloc" in sys.argv:
        if alloc is None:
            raise SystemExit("--only-alloc needs --alloc BENCH_ALLOC")
        run_alloc(alloc, quick, rows, over)
        return report(rows, over)

    reps = {}
    med = run_dispatch(dispatch, quick, "sim",
                       "-BM_ocl_|^BM_event_record$|^BM_plugin_vtable_event_record$",
                       reps_out=reps)

    def ratio(name, floor, target, what, per=1):
        # per: operations per iteration (a batch), to show ns per operation.
        r = ns(med, name) / ns(med, floor)
        ok = r <= target
        sp, fsp = spread(reps, name), spread(reps, floor)
        rows.append({"benchmark": name, "floor": floor, "ns": round(ns(med, name) / per, 2),
                     "floor_ns": round(ns(med, floor) / per, 2), "ratio": round(r, 3),
                     "ratio_spread": ratio_spread(reps, name, floor),
                     "spread": tuple(x / per for x in sp) if sp else None,
                     "floor_spread": tuple(x / per for x in fsp) if fsp else None,
                     "target": "<= %.2f" % target, "ok": ok, "what": what})
        if not ok:
            over.append(name)

    ratio("BM_current_device_index", "BM_floor_tls_get", 2.0, "accel_current_device_index")
    ratio("BM_current_stream", "BM_floor_tls_get", 2.0, "accel_current_stream")
    ratio("BM_stream_native_handle", "BM_floor_tls_get", 2.0, "accel_stream_native_handle")
    ratio("BM_guard_no_switch", "BM_floor_tls_guard", 2.0, "guard, same device")
    ratio("BM_guard_switch", "BM_floor_tls_guard", 2.0, "guard, switching device (sim: no vendor call)")
    ratio("BM_stream_query", "BM_plugin_vtable_stream_query", 1.10, "accel_stream_query vs sim vtable")
    # Batches of records on streams whose workers are parked behind a host
    # function, accel's and the plugin vtable side's batches alternating within
    # each iteration (bench_dispatch.cpp says why): the plain loop of
    # records measured the scheduler, not accel.
    paired = "BM_event_record_gated_paired"
    b = med[paired]
    ok = b["ratio"] <= 1.10
    rows.append({"benchmark": paired, "floor": "plugin_vtable", "ns": round(b["accel_ns"], 2),
                 "floor_ns": round(b["plugin_vtable_ns"], 2),
                 "spread": counter_spread(reps, paired, "accel_ns"),
                 "floor_spread": counter_spread(reps, paired, "plugin_vtable_ns"),
                 "ratio": round(b["ratio"], 3), "ratio_spread": counter_spread(reps, paired, "ratio"),
                 "target": "<= 1.10", "ok": ok,
                 "what": "accel_event_record vs sim vtable (batches of %d, the streams' workers parked, "
                         "paired)" % int(b.get("batch", 512))})
    if not ok:
        over.append(paired)
    ratio("BM_event_query", "BM_plugin_vtable_event_query", 1.10, "accel_event_query vs sim vtable")
    ratio("BM_memset_async", "BM_plugin_vtable_memset_async", 1.10,
          "accel_memset_async (stream sanitizer off) vs sim vtable")

    # Second pass: accel over its opencl backend (PoCL, two CPU devices)
    # against the OpenCL calls made directly, in the same process.
    if os.environ.get("ACCEL_BENCH_OPENCL") == "1":
        ocl_env = dict(os.environ, ACCEL_BACKEND="opencl", ACCEL_OPENCL_DEVICE_TYPE="all",
                       POCL_DEVICES="pthread basic")
        ocl_reps = {}
        ocl = run_dispatch(dispatch, quick, "opencl",
                           "BM_ocl_|BM_event_record$|BM_guard_switch|BM_floor_tls_guard", ocl_env,
                           reps_out=ocl_reps)
        def ocl_ratio(name, floor, target, what):
            r = ns(ocl, name) / ns(ocl, floor)
            rows.append({"benchmark": "[opencl] " + name, "floor": floor, "ns": round(ns(ocl, name), 2),
                         "floor_ns": round(ns(ocl, floor), 2), "ratio": round(r, 3),
                         "ratio_spread": ratio_spread(ocl_reps, name, floor),
                         "spread": spread(ocl_reps, name), "floor_spread": spread(ocl_reps, floor),
                         "target": "<= %.2f" % target, "ok": r <= target, "what": what})
            if r > target:
                over.append("[opencl] " + name)
        ocl_ratio("BM_guard_switch", "BM_floor_tls_guard", 2.0, "guard, switching device (OpenCL has no current device)")
        # The queries two ways (bench_dispatch.cpp): where the backend
        # answers from its cached flag (no OpenCL call) and where queued
        # work makes it ask OpenCL, each against the clGetEventInfo a
        # program calling OpenCL makes for the same answer.
        ocl_ratio("BM_ocl_stream_query_idle", "BM_ocl_vendor_stream_query_idle", 1.10,
                  "accel_stream_query, idle stream (the backend's cached flag, no OpenCL call) vs "
                  "clGetEventInfo of the last marker")
        ocl_ratio("BM_ocl_stream_query_pending", "BM_ocl_vendor_stream_query_pending", 1.10,
                  "accel_stream_query, queued work held back (the backend asks OpenCL) vs "
                  "clGetEventInfo of a pending marker")
        # The target row: both sides in alternating batches of one
        # iteration on the same queue (bench_dispatch.cpp); the unpaired
        # pair below it is kept for comparison with earlier tables.
        paired = "BM_ocl_event_record_paired"
        b = ocl[paired]
        rows.append({"benchmark": "[opencl] " + paired, "floor": "vendor",
                     "ns": round(b["accel_ns"], 2), "floor_ns": round(b["vendor_ns"], 2),
                     "spread": counter_spread(ocl_reps, paired, "accel_ns"),
                     "floor_spread": counter_spread(ocl_reps, paired, "vendor_ns"),
                     "ratio": round(b["ratio"], 3), "ratio_spread": counter_spread(ocl_reps, paired, "ratio"),
                     "target": "<= 1.10", "ok": b["ratio"] <= 1.10,
                     "what": "accel_event_record vs clEnqueueMarkerWithWaitList + clFlush on the same "
                             "queue, paired batches"})
        if b["ratio"] > 1.10:
            over.append("[opencl] " + paired)
        r = ns(ocl, "BM_event_record") / ns(ocl, "BM_ocl_vendor_event_record")
        rows.append({"benchmark": "[opencl] BM_event_record", "floor": "BM_ocl_vendor_event_record",
                     "ns": round(ns(ocl, "BM_event_record"), 2),
                     "floor_ns": round(ns(ocl, "BM_ocl_vendor_event_record"), 2), "ratio": round(r, 3),
                     "ratio_spread": ratio_spread(ocl_reps, "BM_event_record", "BM_ocl_vendor_event_record"),
                     "spread": spread(ocl_reps, "BM_event_record"),
                     "floor_spread": spread(ocl_reps, "BM_ocl_vendor_event_record"),
                     "what": "accel_event_record vs clEnqueueMarkerWithWaitList + clFlush, separate "
                             "benchmarks (own queue)"})
        ocl_ratio("BM_ocl_event_query_complete", "BM_ocl_vendor_event_query_complete", 1.10,
                  "accel_event_query, record complete and seen so (the backend's cached flag, no "
                  "OpenCL call) vs clGetEventInfo of a completed marker")
        ocl_ratio("BM_ocl_event_query_pending", "BM_ocl_vendor_event_query_pending", 1.10,
                  "accel_event_query, record held back (the backend asks OpenCL) vs "
                  "clGetEventInfo of a pending marker")
        # Copies, 4 MiB each, waited for: accel against OpenCL called on the
        # cl_command_queue behind the same accel stream, with the same memory.
        ocl_ratio("BM_ocl_pinned_h2d/real_time", "BM_ocl_vendor_pinned_h2d/real_time", 1.10,
                  "4 MiB H2D from accel_host_malloc memory: accel_memcpy_async + synchronize vs clEnqueueSVMMemcpy + clFinish")
        # Staged through the host either way (each device has its own
        # context): reported, no target.
        r = ns(ocl, "BM_ocl_peer_copy/real_time") / ns(ocl, "BM_ocl_vendor_peer_copy/real_time")
        rows.append({"benchmark": "[opencl] BM_ocl_peer_copy/real_time", "floor": "BM_ocl_vendor_peer_copy/real_time",
                     "ns": round(ns(ocl, "BM_ocl_peer_copy/real_time"), 2),
                     "floor_ns": round(ns(ocl, "BM_ocl_vendor_peer_copy/real_time"), 2), "ratio": round(r, 3),
                     "ratio_spread": ratio_spread(ocl_reps, "BM_ocl_peer_copy/real_time",
                                                  "BM_ocl_vendor_peer_copy/real_time"),
                     "spread": spread(ocl_reps, "BM_ocl_peer_copy/real_time"),
                     "floor_spread": spread(ocl_reps, "BM_ocl_vendor_peer_copy/real_time"),
                     "what": "4 MiB device 0 -> device 1: accel_memcpy_peer_async vs clEnqueueSVMMemcpy to host, then to the other device, by hand"})

    one = med["BM_get_set_device/real_time/threads:1"]["items_per_second"]
    two = med["BM_get_set_device/real_time/threads:2"]["items_per_second"]
    scaling = two / one
    per_rep = [b["items_per_second"] / a["items_per_second"] for a, b in zip(
        reps.get("BM_get_set_device/real_time/threads:1", []),
        reps.get("BM_get_set_device/real_time/threads:2", []))]
    rows.append({"benchmark": "BM_get_set_device threads:2 / threads:1", "ratio": round(scaling, 3),
                 "ratio_spread": (round(min(per_rep), 3), round(max(per_rep), 3)) if per_rep else None,
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
    # Every plugin, but no OpenCL ICD installed: the ICD loader reads an
    # empty vendors folder (a machine without PoCL or a GPU's ICD).
    no_icd_dir = os.path.join(os.path.dirname(OUT), "empty-icd-vendors")
    os.makedirs(no_icd_dir, exist_ok=True)
    env_no_icd = dict(env, OCL_ICD_VENDORS=no_icd_dir)
    # ACCEL_BACKEND=sim with every plugin on the path: only sim's is opened.
    env_sim = dict(env, ACCEL_BACKEND="sim")
    programs = {"floor": ([coldstart, "floor"], env), "accel": ([coldstart], env),
                "no_ocl": ([coldstart], env_no_ocl), "no_icd": ([coldstart], env_no_icd),
                "named_sim": ([coldstart], env_sim),
                # The program asked for opencl: the other backends' plugins
                # stay closed, as clinfo has none.
                "named_ocl": ([coldstart], dict(env, ACCEL_BACKEND="opencl"))}
    if clinfo:
        programs["clinfo"] = ([clinfo, "-l"], env)
        # clinfo's own floor: the same binary with its libraries loaded
        # (the ICD loader among them) that lists nothing. What clinfo -l adds
        # is measured over it, as what accel adds is measured over accel's
        # floor; subtracting accel's floor instead would charge clinfo with
        # loading libaccelcore, libstdc++, spdlog and fmt, which it never does.
        programs["clinfo_floor"] = ([clinfo, "--version"], env)
    samples = {k: [] for k in programs}
    for _ in range(runs):
        for k, (argv, e) in programs.items():
            samples[k].append(time_process(argv, e))
    m = {k: statistics.median(v) for k, v in samples.items() if v}

    def added_spread(k):
        """(min, max) over the rounds of the time added to the floor of the
        same round (interleaved, so both saw the same load)."""
        d = [x - f for x, f in zip(samples[k], samples["floor"])]
        return (round(min(d), 2), round(max(d), 2))

    def cold_row(k, label, what, target=None, ok=None):
        row = {"benchmark": label, "ms": round(m[k], 2), "floor_ms": round(m["floor"], 2),
               "added_ms": round(m[k] - m["floor"], 2), "added_spread": added_spread(k),
               "spread": (round(min(samples[k]), 2), round(max(samples[k]), 2)),
               "floor_spread": (round(min(samples["floor"]), 2), round(max(samples["floor"]), 2)),
               "ratio": round(m[k] / m["floor"], 3), "what": what}
        if target is not None:
            row["target"] = target
            row["ok"] = ok
            if not ok:
                over.append(label)
        rows.append(row)

    cold_row("accel", "cold start: accel_device_count() process",
             "median of %d runs, every built plugin on the path" % runs)
    cold_row("no_ocl", "cold start: same, every plugin but opencl",
             "accel and the other backends without the OpenCL ICDs")
    added_no_icd = m["no_icd"] - m["floor"]
    cold_row("no_icd", "cold start: every plugin, no OpenCL ICD installed (OCL_ICD_VENDORS empty)",
             "the ICD loader finds no ICD", "added <= 2 ms", added_no_icd <= 2.0)
    cold_row("named_sim", "cold start: ACCEL_BACKEND=sim, every plugin on the path",
             "only sim's plugin is opened")
    if "clinfo" in m:
        added = m["accel"] - m["floor"]
        added_clinfo = m["clinfo"] - m["clinfo_floor"]
        r = added / added_clinfo if added_clinfo > 0 else float("inf")

        def per_round_ratios(k):
            """Per round: what accel's process k added over accel's floor /
            what clinfo -l added over clinfo's floor."""
            return [(a - f) / (c - cf) for a, f, c, cf in
                    zip(samples[k], samples["floor"], samples["clinfo"], samples["clinfo_floor"])
                    if c - cf > 0]

        per_round = per_round_ratios("accel")
        clinfo_added = [c - cf for c, cf in zip(samples["clinfo"], samples["clinfo_floor"])]
        ok = r <= 1.05
        rows.append({"benchmark": "cold start: clinfo -l (peer; its floor: clinfo --version)",
                     "ms": round(m["clinfo"], 2),
                     "floor_ms": round(m["clinfo_floor"], 2), "added_ms": round(added_clinfo, 2),
                     "added_spread": (round(min(clinfo_added), 2), round(max(clinfo_added), 2)),
                     "spread": (round(min(samples["clinfo"]), 2), round(max(samples["clinfo"]), 2)),
                     "ratio": round(r, 3),
                     "ratio_spread": (round(min(per_round), 3), round(max(per_round), 3)) if per_round else None,
                     "target": "accel added / clinfo added <= 1.05", "ok": ok,
                     "what": "clinfo -l over clinfo --version; ratio: what accel's process adds over "
                             "its floor / what clinfo -l adds over its own. Against accel's floor "
                             "clinfo would add %.2f ms (ratio %.3f): accel's floor also loads the "
                             "core and its C++ libraries" % (
                                 m["clinfo"] - m["floor"],
                                 added / (m["clinfo"] - m["floor"]) if m["clinfo"] > m["floor"] else 0)})
        if not ok:
            over.append("cold start vs clinfo -l")
        print("cold start: clinfo -l adds %.2f ms over clinfo --version (%.2f ms), %.2f ms over "
              "accel's floor (%.2f ms); accel adds %.2f ms: ratio %.3f, or %.3f against accel's "
              "floor" % (added_clinfo, m["clinfo_floor"], m["clinfo"] - m["floor"], m["floor"],
                         added, r, added / (m["clinfo"] - m["floor"])
                         if m["clinfo"] > m["floor"] else 0))
        added_named = m["named_ocl"] - m["floor"]
        per_round = per_round_ratios("named_ocl")
        rows.append({"benchmark": "cold start: ACCEL_BACKEND=opencl, every plugin on the path, vs clinfo -l",
                     "ms": round(m["named_ocl"], 2), "floor_ms": round(m["floor"], 2),
                     "added_ms": round(added_named, 2), "added_spread": added_spread("named_ocl"),
                     "spread": (round(min(samples["named_ocl"]), 2), round(max(samples["named_ocl"]), 2)),
                     "ratio": round(added_named / added_clinfo, 3) if added_clinfo > 0 else None,
                     "ratio_spread": (round(min(per_round), 3), round(max(per_round), 3)) if per_round else None,
                     "what": "ratio: what accel's process adds / what clinfo -l adds"})

    for label, e in (("", env), (", every plugin but opencl", env_no_ocl)):
        rss = subprocess.run([coldstart, "rss"], env=e, capture_output=True, text=True).stdout.split()
        if len(rss) >= 2:
            rows.append({"benchmark": "peak RSS added by discovery" + label, "kB": int(rss[1]) - int(rss[0]),
                         "what": "VmHWM after accel_device_count() - VmRSS before"})

    if kernels_sim is not None:
        run_kernels_sim(kernels_sim, quick, rows, over)
    if kernels_ocl is not None and os.environ.get("ACCEL_BENCH_OPENCL") == "1":
        run_kernels_opencl(kernels_ocl, quick, rows, over)
    if graphs is not None:
        run_graphs(graphs, quick, rows, over)
    if copies is not None:
        run_copies(copies, quick, rows, over)
    if clpeak is not None and os.environ.get("ACCEL_BENCH_OPENCL") == "1":
        run_clpeak(clpeak[0], clpeak[1], quick, rows, over)
    if alloc is not None:
        run_alloc(alloc, quick, rows, over)
    return report(rows, over)


def cell(r, prefix=""):
    """'153.2 ns (148.0-160.1)': the value, its unit and the spread (min-max
    of the repetitions) where there is one."""
    for unit in ("ns", "ms", "kB", "MiB", "GB/s"):
        if prefix + unit in r:
            text = "%s %s" % (r[prefix + unit], unit)
            sp = r.get(prefix + "spread")
            if sp:
                text += " (%.1f-%.1f)" % tuple(sp)
            return text
    return ""


def ratio_cell(r):
    """'1.043 (1.01-1.09)': the ratio of the medians and the smallest and
    largest ratio of paired repetitions (cold start: of interleaved rounds)."""
    if "ratio" not in r:
        return ""
    sp = r.get("ratio_spread")
    return "%s (%.3g-%.3g)" % (r["ratio"], sp[0], sp[1]) if sp else str(r["ratio"])


def added_cell(r):
    if "added_ms" not in r:
        return ""
    sp = r.get("added_spread")
    return "%s ms (%.1f-%.1f)" % (r["added_ms"], sp[0], sp[1]) if sp else "%s ms" % r["added_ms"]


# Why a row can be over its target on this machine, with the measurement
# that shows it (docs/performance.md has the profiles): the table's last
# column for a row over target. Keyed by the start of the row's benchmark
# name; a row over target with no entry says so.
WHY_OVER = {
    "BM_stream_query": "perf: sim's stream mutex (lock + unlock) is 80% of the samples, "
        "accel_stream_query's own code 5% (a flag, a handle check, a TLS re-entry check, the call): "
        "1-2 ns, within this machine's repetition spread",
    "BM_event_query": "the same path as the stream query (handle check, recorded flag, the call): "
        "1-2 ns over sim's mutex-bound query, within the repetition spread",
    "BM_event_record_gated_paired": "about 10 ns of handle checks, the stream's sequence and trace "
        "flags over sim's 75 ns record; no single hot spot in a profile (docs/performance.md)",
    "[opencl] BM_ocl_stream_query_pending": "perf: the backend retains and releases the marker "
        "around clGetEventInfo so it never calls OpenCL under its stream lock (PoCL takes its own "
        "lock in each: 39% of samples in pthread_mutex); the core's NOT_READY text was another 25% "
        "until it stopped formatting it",
    "[opencl] BM_ocl_event_query_pending": "as the pending stream query: retain/release around "
        "clGetEventInfo and the event's and record's locks, each a PoCL or libc mutex",
    "cold start: every plugin, no OpenCL ICD": "one run's outliers (spread of the rounds in the "
        "row); 1.29 ms in the last quiet idle run",
    "[graphs-sim]": "the floor is sim's own enqueue, 0.87 of a launch: the launching thread "
        "contends with sim's worker for the stream mutex (futex calls, ~1 us each here)",
    "[graphs-opencl]": "PoCL 3.1's CPU drivers have no run_command_buffer: a replay re-submits "
        "every command; clEnqueueCommandBufferKHR of 64 kernels is 1.36x slower than 64 "
        "clEnqueueNDRangeKernel measured directly, so the recorder is PoCL's default",
    "[copies-sim] h2d_pageable": "CUDA's rule: a staged copy is two copies per byte (the caller's "
        "memcpy into the pinned ring, then the device's), and above 1 MiB the call waits for "
        "the copy",
    "[copies-opencl] h2d_pageable": "CUDA's rule: a staged copy is two copies per byte (the "
        "caller's memcpy into the pinned ring, then PoCL's), and above 1 MiB the call waits",
    "[copies-sim] d2h_pageable": "CUDA's rule: a copy into pageable memory returns once done, so "
        "each copy pays a round trip to sim's worker (two wake-ups, ~25 us per MiB here)",
    "[copies-opencl] d2h_pageable": "CUDA's rule: a copy into pageable memory returns once done, "
        "so each copy pays a round trip to PoCL's worker",
    "[copies-sim]": "the copy runs on sim's worker thread, away from the caller's caches, where "
        "the memcpy floor runs on the caller's warm cache; equal to memcpy from 64 MiB up",
    "[copies-opencl]": "PoCL's own clEnqueueSVMMemcpy is no faster (run.py prints it by size: "
        "31.0 GB/s at 1 MiB against accel's 29.1-30.0, 33.1 at 4 MiB against 32.7-35.0): PoCL "
        "copies on its worker thread, away from the caller's warm cache",
    "[clpeak] d2h_pageable": "within 6%: accel's D2H into pageable memory is queued and waited "
        "for (two wake-ups) where clpeak's blocking clEnqueueReadBuffer returns from PoCL's own "
        "wait; the rounds' spread reaches 0.99",
    "[alloc] sim BM_alloc_pair/67108864": "76-90 ns alone; in the interleaved run the repetitions "
        "after BM_alloc_pair_one_device_own_stream (its destroyed streams' blocks move to the "
        "default stream's pool) run 100-128 ns: the row's spread",
    "[alloc] sim BM_alloc_pair/1048576": "88-92 ns alone; in the interleaved run the repetitions "
        "after BM_alloc_pair_one_device_own_stream (its destroyed streams' blocks move to the "
        "default stream's pool) run 100-128 ns: the row's spread",
    "[alloc] opencl BM_alloc_pair/1048576 vs clSVMAlloc": "PoCL's clSVMAlloc + clSVMFree of 1 MiB "
        "is itself a 234 ns host malloc/free: 8x faster would be a 29 ns pair; the cached pair "
        "meets its own 100 ns target",
    "[alloc] BM_alloc_pair_one_device": "one lock per device and the whole pair is under it: perf "
        "of 2 threads: ~60% of CPU samples in the lock (27% glibc mutex code, ~33% the kernel's "
        "futex path, ~1 us a call in this guest); per-thread caches would change reuse order",
    "BM_memset_async": "each call wakes sim's worker on both sides (futex, ~1 us in this guest): "
        "the repetitions swing 0.51-3.69 around the target; the core's own part is the stream "
        "pick and the range lookup in the allocation table",
    "[kernels-sim] BM_launch_empty": "each launch wakes sim's worker on both sides (futex, ~1 us "
        "in this guest), 1.2-1.4 us a launch: the repetitions' spread (0.88-1.5) spans the target",
    "[alloc] opencl BM_alloc_pair/": "bimodal between processes: back-to-back runs of the same "
        "binary give 90.9 or 157 ns at 1 MiB (77 ns at 64 MiB); this run drew the slow layout",
    "[kernels-sim] BM_launch_vector_add": "three pointer arguments checked against the memory "
        "table (cached per kernel) and copied; sim's own launch is 0.9-1.4 us here, most of it "
        "a futex wake of its worker",
}


def why_over(name):
    for key, text in WHY_OVER.items():
        if name.startswith(key):
            return text
    return "not explained yet"


def report(rows, over):
    print("%-52s %26s %26s %22s %20s  %s" % ("benchmark", "accel", "floor", "ratio (spread)",
                                              "added", "target"))
    for r in rows:
        print("%-52s %26s %26s %22s %20s  %s%s" % (r["benchmark"], cell(r), cell(r, "floor_"),
                                                  ratio_cell(r), added_cell(r), r.get("target", ""),
                                                  "" if r.get("ok", True) else "  OVER TARGET"))
    # The same rows as the Performance table of README.md and
    # docs/performance.md (replace it with this file after a run on an idle
    # machine).
    md = MARKDOWN or os.path.join(os.path.dirname(OUT), "bench-results.md")
    with open(md, "w") as f:
        f.write("| benchmark | accel | floor | ratio (spread) | added | target | why over |\n"
                "|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s | %s | %s | %s | %s | %s | %s |\n" % (
                r.get("what", r["benchmark"]) if r["benchmark"].startswith(
                    ("BM_", "[opencl]", "[alloc]", "[kernels-sim]", "[kernels-opencl]", "[graphs-",
                     "[copies-", "[clpeak]"))
                else r["benchmark"],
                cell(r), cell(r, "floor_"), ratio_cell(r), added_cell(r),
                (r.get("target", "") + ("" if r.get("ok", True) else " (over)")).strip(),
                "" if r.get("ok", True) else why_over(r["benchmark"])))
    print("markdown table: %s" % md)
    with open(OUT, "w") as f:
        json.dump({"rows": rows, "over_target": over}, f, indent=2)
    print("results: %s" % OUT)
    print("over target: %s" % (", ".join(over) if over else "none"))
    return 0


MARKDOWN = None


if __name__ == "__main__":
    sys.exit(main())
