#!/usr/bin/env python3
"""`accelctl bench --quick --json --svg FILE` on one backend, checked as a user
would read it: the JSON parses and has, for every device, every bandwidth
series (H2D/D2H pageable and pinned, D2D, and peer with two devices or the
"peer: n/a: one device" note with one) with positive finite GB/s over sizes
that start at 4096 and double, and every latency as a positive finite number
of microseconds; the SVG is well-formed XML with exactly one polyline per
series of the JSON in each device's chart, plus the host memcpy ceiling:
the JSON's "host_memcpy" points over the same sizes, drawn dashed in every
chart and printed as the last column of every device's table. The run's time is printed as a
figure (the target is under 10 s idle), never checked: it depends on what
else the machine runs.

Usage: accelctl_bench_test.py --accelctl PATH --backend NAME --workdir DIR
       [--sanitize b_sanitize-value] [--devices N]
Exits 77 (skipped) when the backend is not the current accelerator here
(e.g. no PoCL installed for opencl)."""
import argparse
import json
import math
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"
SERIES = ["h2d_pageable", "d2h_pageable", "h2d_pinned", "d2h_pinned", "d2d"]
LATENCIES = ["event_round_trip", "host_func_start", "host_func", "kernel_launch",
             "kernel_enqueue", "alloc_cached", "alloc_native"]
TIME_LIMIT_S = 10.0

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def positive_finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accelctl", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sanitize", default="none")
    ap.add_argument("--devices", type=int, default=0, help="expected device count (0: any)")
    args = ap.parse_args()

    probe = subprocess.run([args.accelctl, "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    try:
        summary = json.loads(probe.stdout)
    except ValueError:
        summary = {}
    current = summary.get("current_accelerator")
    if current != args.backend:
        why = [f"{b.get('status')}: {b.get('reason')}" for b in summary.get("backends", [])
               if b.get("name") == args.backend] or [summary.get("selection_reason")]
        print(f"SKIP: backend {args.backend} is not available here (current accelerator "
              f"{current!r}): {'; '.join(map(str, why))}")
        return 77

    os.makedirs(args.workdir, exist_ok=True)
    svg_path = os.path.join(args.workdir, f"accelctl-bench-{args.backend}.svg")
    if os.path.exists(svg_path):
        os.remove(svg_path)
    cmd = [args.accelctl, "bench", "--quick", "--json", "--svg", svg_path]
    print("running:", " ".join(cmd))
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=300)
    elapsed = time.monotonic() - t0
    print(f"accelctl bench --quick took {elapsed:.2f} s (exit {proc.returncode})")
    if proc.stderr:
        print("stderr:", proc.stderr)
    check(proc.returncode == 0, f"exit status {proc.returncode}, expected 0")
    # The time is a figure, not a verdict: on this 2-core machine it ranged
    # 6-22 s with other work running, so a bound here failed builds that were
    # right. That --quick took effect is checked from the document below
    # ("quick": true and its smaller batches); the target is said here.
    print(f"accelctl bench --quick: {elapsed:.2f} s (target: under {TIME_LIMIT_S} s on an idle "
          f"machine; not checked)")

    try:
        doc = json.loads(proc.stdout)
    except ValueError as e:
        check(False, f"the output is not JSON: {e}: {proc.stdout[:500]!r}")
        return 1
    check(doc.get("schema_version") == 1, "schema_version is 1")
    check(doc.get("backend") == args.backend, f"backend is {args.backend}")
    check(doc.get("timer") in ("events", "host"), f"timer is events or host: {doc.get('timer')!r}")
    check(doc.get("quick") is True, "quick is true")
    check(doc.get("passed") is True, f"passed is true (errors: "
          f"{[d.get('errors') for d in doc.get('devices', [])]})")
    sizes = doc.get("sizes", [])
    check(sizes[:1] == [4096], f"sizes start at 4096: {sizes[:3]}")
    check(all(b == 2 * a for a, b in zip(sizes, sizes[1:])), f"sizes double: {sizes}")
    check(sizes and sizes[-1] >= 256 << 20, f"sizes reach 256 MiB: {sizes[-1:]}")
    ceiling = doc.get("host_memcpy", [])
    check([p.get("bytes") for p in ceiling] == sizes,
          f"host_memcpy covers every size: {[p.get('bytes') for p in ceiling]}")
    for p in ceiling:
        check(positive_finite(p.get("gbps")), f"host_memcpy {p.get('bytes')}: gbps {p.get('gbps')!r}")
    check("host_memcpy_error" not in doc, f"host memcpy error: {doc.get('host_memcpy_error')}")
    devices = doc.get("devices", [])
    check(len(devices) > 0, "at least one device")
    if args.devices:
        check(len(devices) == args.devices, f"{args.devices} devices, got {len(devices)}")

    expected_series = {}
    for d in devices:
        idx = d.get("index")
        keys = list(SERIES)
        if len(devices) > 1:
            keys.append("peer")
            peer = d.get("peer") or {}
            check(peer.get("to") in [x["index"] for x in devices if x["index"] != idx],
                  f"device {idx}: peer names another device: {peer}")
            check(peer.get("access") in ("direct", "staged"), f"device {idx}: peer access")
        else:
            check(d.get("peer") is None, f"device {idx}: peer is null with one device")
            check("peer: n/a: one device" in d.get("notes", []),
                  f"device {idx}: the note 'peer: n/a: one device': {d.get('notes')}")
        series = d.get("series", {})
        check(sorted(series) == sorted(keys), f"device {idx}: series {sorted(series)}, "
              f"expected {sorted(keys)}")
        for k in keys:
            pts = series.get(k, [])
            check(len(pts) > 0, f"device {idx}: series {k} has points")
            got = [p.get("bytes") for p in pts]
            check(got == sizes[:len(got)], f"device {idx} {k}: sizes {got} are the first "
                  f"of {sizes}")
            # Below 256 MiB only where memory is short, which a note says.
            if got and got[-1] < sizes[-1]:
                check(any("skipped" in n for n in d.get("notes", [])),
                      f"device {idx} {k}: stops at {got[-1]} without a 'skipped' note")
            for p in pts:
                check(positive_finite(p.get("gbps")),
                      f"device {idx} {k} {p.get('bytes')}: gbps {p.get('gbps')!r}")
        expected_series[idx] = keys
        lat = d.get("latency_us", {})
        for k in LATENCIES:
            check(positive_finite(lat.get(k)), f"device {idx}: latency {k} = {lat.get(k)!r} "
                  f"({d.get('latency_notes', {}).get(k, '')})")
        check(d.get("errors") == {}, f"device {idx}: no errors: {d.get('errors')}")

    # The text table, small and on device 0 only: host memcpy is its last column.
    text = subprocess.run([args.accelctl, "bench", "--quick", "--device", "0", "--max-bytes",
                           "65536"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    heads = [ln for ln in text.stdout.splitlines() if ln.strip().startswith("size")]
    check(text.returncode == 0 and len(heads) == 1 and
          heads[0].split("(GB/s)")[0].rstrip().endswith("  host memcpy"),
          f"the text table's last column is host memcpy: {heads} (exit {text.returncode})")
    rows = [ln for ln in text.stdout.splitlines() if ln.strip().startswith("64 KiB")]
    check(len(rows) == 1 and positive_finite(float(rows[0].split()[-1])),
          f"the 64 KiB row ends with the host memcpy figure: {rows}")

    # The SVG: well-formed, one chart per device, one polyline per series.
    try:
        root = ET.parse(svg_path).getroot()
    except (ET.ParseError, OSError) as e:
        check(False, f"the SVG does not parse as XML: {e}")
        root = None
    if root is not None:
        check(root.tag == SVG_NS + "svg", f"root element is svg: {root.tag}")
        charts = [g for g in root.iter(SVG_NS + "g") if g.get("class") == "chart"]
        check(len(charts) == len(devices), f"{len(devices)} charts, got {len(charts)}")
        for g in charts:
            idx = int(g.get("data-device", "-1"))
            lines = g.findall(SVG_NS + "polyline")
            ids = [pl.get("data-series") for pl in lines]
            want = expected_series.get(idx, []) + ["host_memcpy"]
            check(sorted(ids) == sorted(want), f"chart of device {idx}: series {ids}, "
                  f"expected one each of {want}")
            dashed = [pl.get("data-series") for pl in lines if pl.get("stroke-dasharray")]
            check(dashed == ["host_memcpy"], f"chart of device {idx}: only the host memcpy "
                  f"ceiling is dashed: {dashed}")
            for pl in lines:
                check(pl.get("class") == "series " + pl.get("data-series", ""),
                      f"polyline class {pl.get('class')!r}")
                pts = pl.get("points", "").split()
                check(len(pts) >= 1, f"chart of device {idx}: {pl.get('data-series')} has points")
            texts = "".join(t.text or "" for t in g.iter(SVG_NS + "text"))
            check("bandwidth (GB/s)" in texts and "4 KiB" in texts,
                  f"chart of device {idx}: axis label and size ticks")

    print(f"accelctl bench on {args.backend}: " + ("PASS" if not failures else
                                                  f"FAIL ({len(failures)} checks)"))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
