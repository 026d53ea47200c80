#!/usr/bin/env python3
"""Runs a program with ACCEL_TRACE set and checks the trace it leaves.

trace_check.py MODE -- PROGRAM ARGS...
  saxpy    examples/saxpy traced: lanes, a saxpy kernel span with grid and
           block, copies with GB/s, stream order, no overlap, flows.
  saxpy-cxx  the same for the C++ example, plus its accel::ScopedRange.
  api      tests/trace/trace_api.c: the same checks, plus ranges (B/E
           balanced per thread), 8+ host threads, memory events and
           counters, and nothing from the fork child.
  dropped  trace_api.c with ACCEL_TRACE_BUFFER=64: the file is still valid
           and says how many records were dropped.
  refused  ACCEL_TRACE relative, then in a missing folder: a warning, no
           file, tracing off, the program still runs.

The schema checks are the fields Perfetto's JSON importer needs: a
traceEvents array, every event with ph, pid, tid; X with name, ts, dur;
metadata with args.name; flows with id.
"""
import json
import os
import subprocess
import sys
import tempfile

fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(argv, env):
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=180)
    print(p.stdout, end="")
    print(p.stderr, end="", file=sys.stderr)
    return p


def check_schema(d):
    if not isinstance(d.get("traceEvents"), list):
        fail("no traceEvents array")
        return []
    ev = d["traceEvents"]
    for e in ev:
        for k in ("ph", "pid", "tid"):
            if k not in e:
                fail("event without %s: %r" % (k, e))
        ph = e.get("ph")
        if ph == "X" and not all(k in e for k in ("name", "ts", "dur")):
            fail("X event without name/ts/dur: %r" % e)
        if ph in ("X", "B", "E", "i", "C", "s", "f") and not isinstance(e.get("ts"), (int, float)):
            fail("event without a numeric ts: %r" % e)
        if ph == "M" and e.get("name") in ("process_name", "thread_name") and \
                "name" not in e.get("args", {}):
            fail("metadata without args.name: %r" % e)
        if ph in ("s", "f") and "id" not in e:
            fail("flow without id: %r" % e)
    if "otherData" not in d or "events_dropped" not in d["otherData"]:
        fail("otherData.events_dropped missing")
    return ev


def check_lanes(ev, other, kernel=None):
    host_pid = os.getpid()  # placeholder; the program's pid is found below
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "process_name"}
    api = [e for e in ev if e["ph"] == "X" and e.get("cat") == "api"]
    spans = [e for e in ev if e["ph"] == "X" and e.get("cat") != "api"]
    if not api:
        fail("no API call slices")
        return None, api, spans
    host_pid = api[0]["pid"]
    if host_pid not in procs:
        fail("the host process has no name")
    for e in api:
        if (e["pid"], e["tid"]) not in names:
            fail("host lane %r has no thread_name" % ((e["pid"], e["tid"]),))
            break
        if "status" not in e.get("args", {}):
            fail("API slice without a status: %r" % e)
            break
    if not spans:
        fail("no device spans")
    for e in spans:
        if e["pid"] == host_pid:
            fail("a device span on the host process: %r" % e)
        if (e["pid"], e["tid"]) not in names or e["pid"] not in procs:
            fail("stream lane %r is not named" % ((e["pid"], e["tid"]),))
            break
        a = e.get("args", {})
        if a.get("clock") not in ("device timing events", "host timestamps"):
            fail("span without its clock: %r" % e)
        # A copy has its bytes, and a rate unless the clock measured it as
        # taking no time at all (PoCL's timing events can: no rate then).
        if e.get("cat") == "copy" and (a.get("bytes", 0) <= 0 or
                                       ("GB/s" not in a and e.get("dur", 0) > 0) or
                                       ("GB/s" in a and e.get("dur", 0) <= 0)):
            fail("copy span without bytes, or with a duration and no GB/s: %r" % e)
    copies = [e for e in spans if e.get("cat") == "copy"]
    if not copies:
        fail("no copy spans")
    if kernel is not None:
        ks = [e for e in spans if e.get("cat") == "kernel" and e["name"] == kernel]
        if not ks:
            fail("no %s kernel span" % kernel)
        for k in ks:
            a = k["args"]
            if len(a.get("grid", [])) != 3 or len(a.get("block", [])) != 3 or min(a["grid"]) < 1:
                fail("kernel span without grid/block: %r" % k)
        calls = [e for e in api if e["name"] == "accel_launch_kernel"]
        if not calls or calls[0]["args"].get("kernel") != kernel:
            fail("accel_launch_kernel slice without the kernel's name")
    # Stream order and no overlap on each in-order stream lane.
    by_lane = {}
    for e in spans:
        by_lane.setdefault((e["pid"], e["tid"]), []).append(e)
    for lane, es in by_lane.items():
        es.sort(key=lambda e: e["args"]["seq"])
        seqs = [e["args"]["seq"] for e in es]
        if len(set(seqs)) != len(seqs):
            fail("lane %r repeats a sequence number" % (lane,))
        for a, b in zip(es, es[1:]):
            if b["ts"] + 1e-3 < a["ts"] + a["dur"]:
                fail("lane %r: %s (seq %d) starts at %.3f before %s (seq %d) ends at %.3f"
                     % (lane, b["name"], b["args"]["seq"], b["ts"], a["name"], a["args"]["seq"],
                        a["ts"] + a["dur"]))
                break
    # Flows: every arrow's end is the start of a span on its lane, every
    # start lies inside an API slice of its thread, and they pair up.
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    span_at = {(e["pid"], e["tid"], e["ts"]) for e in spans}
    for i, f in ends.items():
        if f.get("bp") != "e":
            fail("flow end without bp=e: %r" % f)
        if (f["pid"], f["tid"], f["ts"]) not in span_at:
            fail("flow %d ends where no span starts" % i)
            break
    for i, s in starts.items():
        inside = any(a["pid"] == s["pid"] and a["tid"] == s["tid"] and
                     a["ts"] <= s["ts"] <= a["ts"] + a["dur"] for a in api)
        if not inside:
            fail("flow %d starts outside any API slice" % i)
            break
    if other.get("events_dropped", 0) == 0:
        if set(starts) != set(ends):
            fail("unpaired flows: %d starts, %d ends" % (len(starts), len(ends)))
        if len(ends) != len(spans):
            fail("%d spans but %d flow ends" % (len(spans), len(ends)))
    print("trace_check: %d events, %d API slices, %d spans on %d stream lanes, %d flows"
          % (len(ev), len(api), len(spans), len(by_lane), len(ends)))
    return host_pid, api, spans


def traced(argv, extra_env=None):
    tmp = tempfile.mkdtemp(prefix="accel-trace-")
    path = os.path.join(tmp, "trace.json")
    env = dict(os.environ, ACCEL_TRACE=path)
    env.update(extra_env or {})
    p = run(argv, env)
    if p.returncode != 0:
        fail("the program exited with %d" % p.returncode)
    try:
        with open(path) as f:
            return json.load(f), p
    except (OSError, ValueError) as e:
        fail("the trace is not valid JSON: %s" % e)
        return None, p


def main():
    sep = sys.argv.index("--")
    mode = sys.argv[1]
    argv = sys.argv[sep + 1:]
    if mode == "refused":
        tmp = tempfile.mkdtemp(prefix="accel-trace-")
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)  # no reader: opening it must not block the start
        for bad, why in (("relative-trace.json", "not an absolute path"),
                         (os.path.join(tmp, "missing", "t.json"), "cannot be written"),
                         (fifo, "cannot be written")):
            env = dict(os.environ, ACCEL_TRACE=bad)
            p = run(argv, env)
            if "trace enabled: 0" not in p.stdout:
                fail("ACCEL_TRACE=%s: tracing is on" % bad)
            if why not in p.stderr:
                fail("ACCEL_TRACE=%s: no warning saying %r" % (bad, why))
            if os.path.isfile(bad):
                fail("ACCEL_TRACE=%s: a file was written" % bad)
    else:
        d, p = traced(argv, {"ACCEL_TRACE_BUFFER": "64"} if mode == "dropped" else None)
        if d is not None:
            ev = check_schema(d)
            other = d.get("otherData", {})
            if mode == "dropped":
                if other.get("events_dropped", 0) <= 0 or other.get("ring_capacity") != 64:
                    fail("a 64-record ring over this run should drop records: %r" % other)
            else:
                if other.get("events_dropped") != 0:
                    fail("records were dropped: %r" % other)
                host_pid, api, spans = check_lanes(
                    ev, other, kernel="saxpy" if mode.startswith("saxpy") else None)
                if mode == "saxpy-cxx":
                    b = [e for e in ev if e["ph"] == "B" and e["name"] == "saxpy"]
                    e_ = [e for e in ev if e["ph"] == "E"]
                    if len(b) != 1 or len(e_) != 1 or e_[0]["tid"] != b[0]["tid"]:
                        fail("the ScopedRange 'saxpy' is not one balanced B/E pair")
                if mode == "api" and host_pid is not None:
                    check_api(ev, p, host_pid, api, spans, other)
    print("trace_check: " + ("PASS" if not fails else "FAIL (%d)" % len(fails)))
    return 0 if not fails else 1


def check_api(ev, p, host_pid, api, spans, other):
    if other.get("spans_unresolved") != 0:
        fail("spans were left untimed (a destroyed stream's?): %r" % other)
    child = [l.split(":")[1].strip() for l in p.stdout.splitlines() if l.startswith("fork child:")]
    pids = {e["pid"] for e in ev if e["ph"] != "M"}
    if child and int(child[0]) in pids:
        fail("the fork child wrote records into the parent's trace")
    threads = {e["tid"] for e in api}
    if len(threads) < 9:
        fail("expected API slices from 9 host threads, got %d" % len(threads))
    depth = {}
    names = []
    for e in sorted((e for e in ev if e["ph"] in ("B", "E")), key=lambda e: e["ts"]):
        d = depth.get(e["tid"], 0) + (1 if e["ph"] == "B" else -1)
        if d < 0:
            fail("range end without a begin on thread %d" % e["tid"])
        depth[e["tid"]] = d
        if e["ph"] == "B":
            names.append(e["name"])
    if any(depth.values()):
        fail("unbalanced ranges: %r" % depth)
    if not any(n.startswith("not utf-8 ") and n.endswith("\ufffd\ufffd") for n in names):
        fail("the non-UTF-8 range name is not there with U+FFFD for its bad bytes")
    cut = [n for n in names if n.startswith("\u00e9")]
    if not cut or len(cut[0].encode()) > 63 or set(cut[0]) != {"\u00e9"}:
        fail("the long UTF-8 range name is not cut at a character boundary: %r" % cut)
    for n in ("outer", "inner", "worker", "in a host function"):
        if n not in names:
            fail("range %r is missing" % n)
    if "child" in names:
        fail("the fork child's range reached the parent's trace")
    # The stream the 8 threads shared held only their 2 ms host functions.
    lanes = {}
    for e in spans:
        lanes.setdefault((e["pid"], e["tid"]), []).append(e)
    shared = [es for es in lanes.values()
              if len(es) == 32 and all(e["name"] == "host function" for e in es)]
    if len(shared) != 1:
        fail("no lane with the 32 host functions of the shared stream")
    elif min(e["dur"] for e in shared[0]) < 1900:
        fail("a 2 ms host function on the shared stream lasted %.1f us (another thread's "
             "operation inside its timing)" % min(e["dur"] for e in shared[0]))
    cats = {e.get("cat") for e in spans}
    for c in ("copy", "memset", "host_function", "event"):
        if c not in cats:
            fail("no %s span" % c)
    mem = [e["name"] for e in ev if e["ph"] == "i"]
    for n in ("alloc", "free", "empty_cache"):
        if n not in mem:
            fail("no %s memory event" % n)
    counters = [e for e in ev if e["ph"] == "C"]
    if not counters or not all("allocated_bytes" in c["args"] and "reserved_bytes" in c["args"]
                               for c in counters):
        fail("no memory counter track with allocated_bytes and reserved_bytes")


if __name__ == "__main__":
    sys.exit(main())
