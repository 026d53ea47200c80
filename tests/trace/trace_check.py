#!/usr/bin/env python3
"""Runs a program with ACCEL_TRACE set and checks the trace it leaves.

trace_check.py MODE -- PROGRAM ARGS...
  saxpy    examples/saxpy traced: lanes, one saxpy kernel span with the grid
           and block the program says it launched ("N elements in G blocks
           of B"), copies and memsets whose GB/s is their bytes / duration,
           stream order, no overlap, flows.
  saxpy-cxx  the same for the C++ example, plus its accel::ScopedRange.
  api      tests/trace/trace_api.c: the same checks, plus ranges (B/E
           balanced per thread), 8+ host threads, memory events and
           counters, and the fork child: tracing off there, its flush a
           no-op, and the parent's file unchanged by it (byte for byte
           between the copies the program makes before the fork and after
           the child, neither of them nor the final file holding the
           child's range or its accel_is_available call).
  dropped  trace_api.c with ACCEL_TRACE_BUFFER=64: the file is still valid
           and says how many records were dropped.
  names    tests/trace/stream_names.c: a lane per named stream titled
           "NAME (stream N, ...)" with the stream's spans from before its
           rename too, no lane left with an old name, unnamed lanes as
           before; and the memory snapshot it writes gives "stream_name"
           to the named streams' segments and history events only.
  refused  ACCEL_TRACE relative, in a missing folder, a FIFO without a
           reader and one with a reader: a warning, tracing off, the program
           still runs; no file made (nor the folder), the FIFO left a FIFO
           and nothing written into it, and no blocking on the FIFO (a
           deadline, DEADLINE_S, names it if the program hangs there).

The schema checks are the fields Perfetto's JSON importer needs: a
traceEvents array, every event with ph, pid, tid; X with name, ts, dur;
metadata with args.name; flows with id.
"""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile

fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


# A watchdog, not a timing check: the untraced program takes well under a
# second; one blocked opening ACCEL_TRACE never returns.
DEADLINE_S = 60


def run(argv, env, timeout=180, cwd=None):
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, cwd=cwd)
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


def check_rate(e):
    """The rate of a copy or memset span: the writer (core/trace.cpp) puts
    GB/s = bytes / duration in ns, and writes dur in us as ns / 1000, both as
    doubles printed to round-trip (nlohmann::json), so recomputing it from
    the file differs from the writer's by a few units in the last place: a
    relative tolerance of 1e-9 is far above that rounding and far below any
    wrong rate. A span the clock measured as taking 0 us has no rate."""
    a = e.get("args", {})
    dur = e.get("dur", 0)
    if a.get("bytes", 0) <= 0:
        fail("%s span without bytes: %r" % (e.get("cat"), e))
    elif dur <= 0:
        if "GB/s" in a:
            fail("%s span of 0 us with a GB/s: %r" % (e.get("cat"), e))
    elif "GB/s" not in a:
        fail("%s span with a duration and no GB/s: %r" % (e.get("cat"), e))
    else:
        want = a["bytes"] / (dur * 1000.0)
        if abs(a["GB/s"] - want) > 1e-9 * want:
            fail("%s span: GB/s %r, but %d bytes in %r us is %r GB/s: %r"
                 % (e.get("cat"), a["GB/s"], a["bytes"], dur, want, e))


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
        # A copy or memset has its bytes, and a rate unless the clock
        # measured it as taking no time at all (PoCL's timing events can).
        if e.get("cat") in ("copy", "memset"):
            check_rate(e)
    copies = [e for e in spans if e.get("cat") == "copy"]
    if not copies:
        fail("no copy spans")
    if kernel is not None:
        name, grid, block = kernel
        ks = [e for e in spans if e.get("cat") == "kernel" and e["name"] == name]
        # The example launches its kernel once.
        if len(ks) != 1:
            fail("%d %s kernel spans, expected the one launch" % (len(ks), name))
        for k in ks:
            a = k["args"]
            if grid is not None and (a.get("grid") != grid or a.get("block") != block):
                fail("kernel span with grid %r block %r, but the program launched grid %r "
                     "block %r: %r" % (a.get("grid"), a.get("block"), grid, block, k))
        calls = [e for e in api if e["name"] == "accel_launch_kernel"]
        if not calls or calls[0]["args"].get("kernel") != name:
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


def traced(argv, tmp, extra_env=None):
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


def launched(stdout):
    """The grid and block the example says it launched: "N elements in G
    blocks of B" (1-D: y and z are 1, as the examples set them)."""
    m = re.search(r"\d+ elements in (\d+) blocks of (\d+)", stdout)
    if m is None:
        fail("the program does not say what it launched ('N elements in G blocks of B')")
        return None
    return [int(m.group(1)), 1, 1], [int(m.group(2)), 1, 1]


def check_refused(argv):
    """ACCEL_TRACE that must be refused, each with a check that fails if it
    is not (docs/tracing.md): tracing off, the warning, and nothing made."""
    tmp = tempfile.mkdtemp(prefix="accel-trace-")
    # Run in tmp (below), so the program's path must not be relative.
    if os.sep in argv[0]:
        argv = [os.path.abspath(argv[0])] + argv[1:]

    def refused(bad, why, timeout=180):
        env = dict(os.environ, ACCEL_TRACE=bad)
        try:
            # In tmp: a relative path would be made there.
            p = run(argv, env, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            fail("ACCEL_TRACE=%s: the program did not finish within %d s (blocked opening it?)"
                 % (bad, timeout))
            return
        if p.returncode != 0:
            fail("ACCEL_TRACE=%s: the program exited with %d" % (bad, p.returncode))
        if "trace enabled: 0" not in p.stdout:
            fail("ACCEL_TRACE=%s: tracing is on" % bad)
        if why not in p.stderr:
            fail("ACCEL_TRACE=%s: no warning saying %r" % (bad, why))

    refused("relative-trace.json", "not an absolute path")
    if os.path.lexists(os.path.join(tmp, "relative-trace.json")):
        fail("ACCEL_TRACE=relative-trace.json: the file was made in the working directory")
    missing = os.path.join(tmp, "missing")
    refused(os.path.join(missing, "t.json"), "cannot be written")
    if os.path.lexists(missing):
        fail("ACCEL_TRACE=%s: the missing folder was made" % os.path.join(missing, "t.json"))
    # A FIFO without a reader: a plain open for writing would block until
    # one comes, and none ever does.
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    refused(fifo, "cannot be written", timeout=DEADLINE_S)
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        fail("ACCEL_TRACE=%s: the FIFO was replaced" % fifo)
    # A FIFO with a reader: the open succeeds, the tracer must still refuse
    # it (not a regular file) and write nothing into it.
    read_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        refused(fifo, "cannot be written", timeout=DEADLINE_S)
        try:
            got = os.read(read_end, 1 << 16)
        except BlockingIOError:  # no writer left, nothing written
            got = b""
        if got:
            fail("ACCEL_TRACE=%s (with a reader): %d bytes were written into the FIFO: %r"
                 % (fifo, len(got), got[:80]))
    finally:
        os.close(read_end)
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        fail("ACCEL_TRACE=%s: the FIFO was replaced" % fifo)


def main():
    sep = sys.argv.index("--")
    mode = sys.argv[1]
    argv = sys.argv[sep + 1:]
    if mode == "refused":
        check_refused(argv)
    elif mode == "names":
        check_names(argv)
    else:
        tmp = tempfile.mkdtemp(prefix="accel-trace-")
        snap = os.path.join(tmp, "snapshot")
        extra = {"ACCEL_TRACE_BUFFER": "64"} if mode == "dropped" else {}
        if mode == "api":
            extra["ACCEL_TRACE_API_SNAPSHOT"] = snap
        d, p = traced(argv, tmp, extra)
        if d is not None:
            ev = check_schema(d)
            other = d.get("otherData", {})
            if mode == "dropped":
                if other.get("events_dropped", 0) <= 0 or other.get("ring_capacity") != 64:
                    fail("a 64-record ring over this run should drop records: %r" % other)
            else:
                if other.get("events_dropped") != 0:
                    fail("records were dropped: %r" % other)
                kernel = None
                if mode.startswith("saxpy"):
                    shape = launched(p.stdout)
                    kernel = ("saxpy",) + shape if shape else ("saxpy", None, None)
                host_pid, api, spans = check_lanes(ev, other, kernel=kernel)
                if mode == "saxpy-cxx":
                    b = [e for e in ev if e["ph"] == "B" and e["name"] == "saxpy"]
                    e_ = [e for e in ev if e["ph"] == "E"]
                    if len(b) != 1 or len(e_) != 1 or e_[0]["tid"] != b[0]["tid"]:
                        fail("the ScopedRange 'saxpy' is not one balanced B/E pair")
                if mode == "api" and host_pid is not None:
                    check_api(ev, p, host_pid, api, spans, other)
                    check_fork_child(ev, p, snap)
    print("trace_check: " + ("PASS" if not fails else "FAIL (%d)" % len(fails)))
    return 0 if not fails else 1


def check_names(argv):
    tmp = tempfile.mkdtemp(prefix="accel-trace-")
    snap_path = os.path.join(tmp, "snapshot.json")
    d, p = traced(argv, tmp, {"STREAM_NAMES_SNAPSHOT": snap_path})
    if d is None or p.returncode != 0:
        return
    ev = check_schema(d)
    titles = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
              if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = [e for e in ev if e["ph"] == "X" and e.get("cat") not in (None, "api")]

    def lanes(pattern):
        return [k for k, t in titles.items() if re.fullmatch(pattern, t)]

    named = lanes(r"pipeline A \(stream \d+, priority 0\)")
    if len(named) != 1:
        fail("expected one lane titled 'pipeline A (stream N, priority 0)': %r" % titles)
    else:
        memsets = [e for e in spans if (e["pid"], e["tid"]) == named[0] and e["cat"] == "memset"]
        if len(memsets) != 2:
            fail("the renamed stream's lane holds %d memsets, expected the one from before the "
                 "rename and the one after" % len(memsets))
    if len(lanes(r"main \(stream \d+, default\)")) != 1:
        fail("expected one lane titled 'main (stream N, default)': %r" % titles)
    if len(lanes(r"stream \d+ \(priority 0\)")) != 1:
        fail("expected the unnamed stream's lane titled 'stream N (priority 0)': %r" % titles)
    stale = [t for t in titles.values() if "first name" in t or "y" * 63 in t]
    if stale:
        fail("lanes keep a name their stream no longer has: %r" % stale)
    try:
        with open(snap_path) as f:
            snap = json.load(f)
    except (OSError, ValueError) as e:
        fail("the snapshot is missing or not JSON: %s" % e)
        return
    segs = snap.get("segments", [])
    got = sorted(s.get("stream_name", "") for s in segs)
    if "pipeline A" not in got or "main" not in got or "" not in got:
        fail("segments' stream_name values %r: expected 'pipeline A', 'main' and one without" % got)
    if any(n not in ("pipeline A", "main", "") for n in got):
        fail("a segment has a name no stream has: %r" % got)
    by_stream = {}
    for s in segs:
        by_stream.setdefault(s["stream"], set()).add(s.get("stream_name"))
    if any(len(v) != 1 for v in by_stream.values()):
        fail("segments of one stream disagree on its name: %r" % by_stream)
    events = snap.get("history", {}).get("events", [])
    allocs = [e for e in events if e.get("action") == "alloc"]
    names = sorted(e.get("stream_name", "") for e in allocs)
    if names != ["", "main", "pipeline A"]:
        fail("history allocs have stream_name %r, expected '', 'main' and 'pipeline A'" % names)
    print("trace_check: %d lanes titled, %d segments, %d history events"
          % (len(titles), len(segs), len(events)))


def check_api(ev, p, host_pid, api, spans, other):
    if other.get("spans_unresolved") != 0:
        fail("spans were left untimed (a destroyed stream's?): %r" % other)
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
    captures = [e for e in api if e.get("name") == "stream capture"]
    if len(captures) != 1 or captures[0].get("cat") != "api" or \
            captures[0]["args"].get("operations") != 2:
        fail("no 'stream capture' slice of 2 operations: %r" % captures)
    # Recorded by accel, each replay re-issues the memset (a span of its
    # own); replayed natively, it is one "graph launch" span per replay.
    how = re.search(r"^graphs: (.*)$", p.stdout, re.M)
    native = how is not None and how.group(1).startswith("native")
    memsets = [e for e in spans if e.get("cat") == "memset" and
               e.get("args", {}).get("bytes") == 12345]
    launches = [e for e in spans if e.get("cat") == "graph" and
                e.get("name") == "graph launch" and e.get("args", {}).get("operations", 0) >= 1]
    if how is None:
        fail("the program did not say how the device replays graphs ('graphs: ...')")
    elif not native and os.environ.get("ACCEL_OPENCL_COMMAND_BUFFERS") == "1":
        fail("ACCEL_OPENCL_COMMAND_BUFFERS=1 but the device does not replay natively: %r"
             % how.group(1))
    elif native and (len(launches) != 2 or memsets):
        fail("native graphs: expected 2 'graph launch' spans and no memset span, got %d and %d"
             % (len(launches), len(memsets)))
    elif not native and (len(memsets) != 2 or launches):
        fail("recorded graphs: expected the memset of each of 2 replays as a span and no "
             "'graph launch' span, got %d and %d" % (len(memsets), len(launches)))
    mem = [e["name"] for e in ev if e["ph"] == "i"]
    for n in ("alloc", "free", "empty_cache"):
        if n not in mem:
            fail("no %s memory event" % n)
    counters = [e for e in ev if e["ph"] == "C"]
    if not counters or not all("allocated_bytes" in c["args"] and "reserved_bytes" in c["args"]
                               for c in counters):
        fail("no memory counter track with allocated_bytes and reserved_bytes")


def check_fork_child(ev, p, snap):
    """docs/tracing.md: a fork child stops tracing and never writes the
    parent's file. Its records would carry the parent's pid and thread id
    (the tracer's, which it inherits), so what is looked for is its work:
    the range it names after its own pid and accel_is_available(), a call
    only the child makes (trace_api.c)."""
    parent = re.search(r"^fork child: pid (\d+), exit status (\d+)$", p.stdout, re.M)
    if parent is None:
        fail("the program did not report its fork child ('fork child: pid N, exit status S')")
        return
    pid = int(parent.group(1))
    if int(parent.group(2)) != 0:
        fail("the fork child exited with %s" % parent.group(2))
    said = re.search(r"^fork child %d: trace enabled: (\d+), available: \d+, range: (\S+) (\S+), "
                     r"flush: (\S+)$" % pid, p.stdout, re.M)
    if said is None:
        fail("the fork child %d did not report what it saw" % pid)
    else:
        if said.group(1) != "0":
            fail("the fork child: accel_trace_enabled() returned %s" % said.group(1))
        for what, st in (("range push", said.group(2)), ("range pop", said.group(3)),
                         ("flush", said.group(4))):
            if st != "ACCEL_SUCCESS":
                fail("the fork child's %s returned %s" % (what, st))
    range_name = "fork child %d" % pid
    marks = ('"%s"' % range_name, '"accel_is_available"')

    def childs_work(where, text):
        for m in marks:
            if m in text:
                fail("%s holds the fork child's work (%s)" % (where, m))

    copies = {}
    for which in ("before-fork", "after-fork"):
        try:
            with open(snap + "." + which, "rb") as f:
                copies[which] = f.read()
        except OSError as e:
            fail("no copy of the trace from %s: %s" % (which.replace("-", " "), e))
    if len(copies) == 2:
        try:
            json.loads(copies["before-fork"])
        except ValueError as e:
            fail("the trace is not valid JSON after the flush before the fork: %s" % e)
        if copies["after-fork"] != copies["before-fork"]:
            fail("the fork child changed the parent's trace file (%d bytes before the fork, %d "
                 "after the child)" % (len(copies["before-fork"]), len(copies["after-fork"])))
        childs_work("the trace file after the child exited",
                    copies["after-fork"].decode("utf-8", "replace"))
    names = {e.get("name") for e in ev if e.get("ph") in ("B", "X")}
    for n in (range_name, "accel_is_available"):
        if n in names:
            fail("the final trace holds the fork child's work (%r)" % n)


if __name__ == "__main__":
    sys.exit(main())
