#!/usr/bin/env python3
"""The Python package's hot calls against the floor of a pybind11 binding
(docs/performance.md, "Python"), measured in one run.

Usage: bench_python.py [--rounds N] [--number N] [--json FILE]
(PYTHONPATH: the build's python/ folder and the folder of the
_accel_bench_floor module, tests/bench/py_floor.cpp; sim current, with two
devices.)

Each pair is an accel operation and the same shape of call doing nothing,
built with the same compiler and pybind11 (the binding's physical floor): a
pybind11 call returning an int (current_device_index), one with an optional
argument returning an object it already has (current_stream). A with block
cannot be as cheap as one call: Python's with statement constructs an object
and calls two methods. Entering and leaving device_index is therefore shown
against the empty pybind11 call (the issue's target, for the record), and
against the same shape doing nothing: a with block over the cheapest context
manager, a Python class with __slots__, whose __enter__ and __exit__ each
make one empty pybind11 call. A reference row shows the with statement's
own cost (an empty context manager) against the empty call.

Rounds alternate the two statements of a pair, timed with the standard
library's timeit; each round gives a ratio, and the table shows the median
ratio with the smallest and largest. The DeviceBuffer line is absolute:
allocating 256 bytes on a warm cache and collecting the buffer at once
(stream-ordered free), in ns per pair.
"""
import argparse
import json
import statistics
import sys
import timeit

import accel
import _accel_bench_floor as floor



class EmptyContext:
    """The cheapest context manager Python has; no call into C."""
    __slots__ = ("idx",)

    def __init__(self, idx, /):
        self.idx = idx

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


class EnterLeaveFloor(EmptyContext):
    """device_index's shape: one empty pybind11 call entering, one leaving."""
    __slots__ = ()

    def __enter__(self, _call=floor.int_of_nothing):
        _call()
        return self

    def __exit__(self, *exc_info, _call=floor.int_of_nothing):
        _call()
        return False


# (label, accel statement, floor statement, target ratio or None: reference)
PAIRS = [
    ("current_device_index()", "current_device_index()", "floor.int_of_nothing()", 1.5),
    ("current_stream()", "current_stream()", "floor.object_of()", 1.5),
    ("with device_index(1): pass", "with device_index(1): pass", "floor.int_of_nothing()", 1.5),
    ("with device_index(1): pass", "with device_index(1): pass",
     "with EnterLeaveFloor(1): pass", 1.5),
    ("with EmptyContext(1): pass (reference)", "with EmptyContext(1): pass",
     "floor.int_of_nothing()", None),
]
ABSOLUTE = [("DeviceBuffer(256) alloc + collect", "DeviceBuffer(256)", 2000.0)]


def per_call_ns(stmt, number, env):
    return timeit.timeit(stmt, number=number, globals=env) / number * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--number", type=int, default=20000, help="calls per timing")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    if accel.current_accelerator() is None or accel.device_count() < 2:
        print(f"SKIP: needs an accelerator with two devices: {accel.selection_reason()}")
        return 77
    env = {"floor": floor, "EmptyContext": EmptyContext, "EnterLeaveFloor": EnterLeaveFloor,
           "current_device_index": accel.current_device_index,
           "current_stream": accel.current_stream, "device_index": accel.device_index,
           "DeviceBuffer": accel.DeviceBuffer}
    accel.set_device_index(0)
    for _, stmt, floor_stmt, _ in PAIRS:  # warm up: first calls, caches
        per_call_ns(stmt, 1000, env)
        per_call_ns(floor_stmt, 1000, env)
    for _, stmt, _ in ABSOLUTE:
        per_call_ns(stmt, 1000, env)
    accel.synchronize()

    rows, over = [], []
    for label, stmt, floor_stmt, target in PAIRS:
        ratios, ns, floor_ns = [], [], []
        for r in range(args.rounds):
            # Alternate which goes first, so that neither always sees the
            # other's after-effects.
            if r % 2:
                f = per_call_ns(floor_stmt, args.number, env)
                t = per_call_ns(stmt, args.number, env)
            else:
                t = per_call_ns(stmt, args.number, env)
                f = per_call_ns(floor_stmt, args.number, env)
            ratios.append(t / f)
            ns.append(t)
            floor_ns.append(f)
        ratio = statistics.median(ratios)
        row = {"benchmark": "[python] %s / %s" % (label, floor_stmt), "floor": floor_stmt,
               "ns": round(statistics.median(ns), 1),
               "floor_ns": round(statistics.median(floor_ns), 1), "ratio": round(ratio, 3),
               "ratio_spread": [round(min(ratios), 3), round(max(ratios), 3)],
               "target": "reference" if target is None else f"<= {target}x",
               "ok": target is None or ratio <= target}
        rows.append(row)
    for label, stmt, target_ns in ABSOLUTE:
        ns = [per_call_ns(stmt, args.number, env) for _ in range(args.rounds)]
        accel.synchronize()
        t = statistics.median(ns)
        rows.append({"benchmark": "[python] " + label, "ns": round(t, 1),
                     "spread": [round(min(ns), 1), round(max(ns), 1)],
                     "target": f"< {target_ns / 1000:g} us", "ok": t < target_ns})
    for row in rows:
        if not row["ok"]:
            over.append(row["benchmark"])
        if "ratio" in row:
            print("%-78s %7.1f ns  floor %6.1f ns  ratio %.3f [%.3f, %.3f]  target %s%s" % (
                row["benchmark"], row["ns"], row["floor_ns"], row["ratio"],
                row["ratio_spread"][0], row["ratio_spread"][1], row["target"],
                "" if row["ok"] else " (over)"))
        else:
            print("%-78s %7.1f ns  [%.1f, %.1f]  target %s%s" % (
                row["benchmark"], row["ns"], row["spread"][0], row["spread"][1], row["target"],
                "" if row["ok"] else " (over)"))
    print("over target: %s" % (", ".join(over) if over else "none"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "over_target": over}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
