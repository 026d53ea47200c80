#!/usr/bin/env python3
"""Writes the hand-made seed inputs of accel-fuzz into corpus/.

Each seed is a small program in the harness's byte language (fuzz_api.cpp):
one opcode byte per operation, then the argument bytes it reads. The seeds
only give the fuzzer a head start on meaningful sequences (allocate, fill,
copy, verify; streams with events and host functions; device juggling;
invalid arguments; struct sizes); libFuzzer mutates from there.

    python3 tests/fuzz/make_seeds.py      # rewrites tests/fuzz/corpus/seed-*
"""
import os
import struct

# Opcodes, in the order of enum Op in fuzz_api.cpp.
OPS = """set_device exchange maybe_exchange current_stream set_stream synchronize
priority_range stream_create stream_destroy stream_query stream_sync stream_wait_event
stream_device stream_priority host_func event_create event_destroy event_record
event_query event_sync event_elapsed event_device malloc free memcpy memset mem_info
memory_stats reset_peak properties backend_info names verify thread
malloc_async free_async free_ordered record_stream empty_cache stats_list snapshot history
gate release_gates module_load module_unload launch capture graph_replay graph_destroy""".split()
OP = {name: i for i, name in enumerate(OPS)}


def op(name, *args):
    out = bytes([OP[name]])
    for a in args:
        out += a if isinstance(a, bytes) else bytes([a])
    return out


def dev(k):          # a valid device index k (mod the device count)
    return bytes([0, k])


DEV_CURRENT = bytes([4])   # -1
DEV_N = bytes([7])         # == device count: invalid
DEV_MAX = bytes([9])       # INT32_MAX


def size16(n):       # a size of n bytes (1..65536)
    return bytes([6]) + struct.pack("<H", n - 1)


def u32(v):
    return struct.pack("<I", v)


def alloc(i):        # device pointer: base of live allocation i
    return bytes([i, 0])


STREAM_NULL = bytes([7])


def size32(n):       # a size of n bytes (1..12 MiB)
    return bytes([9]) + u32(n - 1)


SIZE_DEVICE = bytes([10])  # the whole device


def stream_created(i):
    return bytes([0, i])


def stream_default(d):
    return bytes([3, d])


def stream_dead(i):
    return bytes([5, i])


def event(i):
    return bytes([0, i])


def event_dead(i):
    return bytes([5, i])


def size64(n):       # any size: pick_size's default branch reads 8 bytes
    return bytes([15]) + struct.pack("<Q", n)


SIZE_MAX = (1 << 64) - 1

SEEDS = {
    # Sizes near SIZE_MAX, where rounding and sums wrap (sizes.dict has
    # more): every allocation must fail and change nothing.
    "seed-sizes": b"".join([
        op("malloc", dev(0), size64(SIZE_MAX), 1),
        op("malloc", dev(0), size64(SIZE_MAX - 1), 1),
        op("malloc", dev(1), size64(SIZE_MAX - 255), 1),
        op("malloc", dev(0), size64(1 << 63), 1),
        op("stream_create", dev(0), 0, 1),
        op("malloc_async", stream_created(0), size64(SIZE_MAX - 4095), 1),
        op("malloc", dev(0), size16(4096), 1),
        op("memset", STREAM_NULL, alloc(0), 1, 0x5A, 0),
        op("verify", 0),
        op("memory_stats", dev(0), 1, 11),
    ]),
    # Allocate on two devices, fill, copy host->device->device->host, verify.
    "seed-memory": b"".join([
        op("malloc", dev(0), size16(4096), 1),
        op("malloc", dev(1), size16(4096), 1),
        op("memset", STREAM_NULL, alloc(0), 1, 0x3C, 0),
        op("memcpy", 0, STREAM_NULL, alloc(0), alloc(0), u32(123), 3, 0),
        op("verify", 0),
        op("set_device", dev(1)),
        op("memset", STREAM_NULL, alloc(1), 1, 0x11, 0),
        op("malloc", DEV_CURRENT, size16(512), 1),
        op("memcpy", 6, stream_default(1), alloc(1), alloc(2), u32(0), 0),
        op("memcpy", 3, STREAM_NULL, alloc(1), alloc(1), u32(77), 3, 0),
        op("verify", 1),
        op("free", alloc(0)),
        op("free", bytes([0, 7])),  # freed pointer again
        op("mem_info", DEV_CURRENT, 0),
        op("memory_stats", dev(1), 1, 11),
        op("reset_peak", DEV_CURRENT),
    ]),
    # Streams, events, host functions, destroyed handles.
    "seed-streams": b"".join([
        op("stream_create", dev(0), 0, 1),
        op("stream_create", dev(1), 2, 1),
        op("event_create", dev(0), 1, 1),
        op("event_create", dev(0), 1, 1),
        op("event_record", event(0), stream_created(0)),
        op("host_func", stream_created(0), 1),
        op("host_func", stream_created(0), 6),
        op("event_record", event(1), stream_created(0)),
        op("event_elapsed", event(0), 1, event(1), 1, 1),
        op("stream_wait_event", stream_created(1), event(0)),
        op("stream_wait_event", stream_created(0), event(0)),
        op("stream_query", stream_created(0)),
        op("stream_sync", stream_created(0)),
        op("stream_destroy", stream_created(0)),
        op("stream_query", stream_dead(0)),
        op("stream_destroy", stream_dead(0)),
        op("event_destroy", event(0)),
        op("event_sync", event_dead(0)),
        op("event_record", event_dead(0), STREAM_NULL),
        op("stream_priority", stream_created(0), 1),
        op("stream_device", stream_default(1), 1),
        op("verify", 0),
    ]),
    # Current device and stream juggling, per-thread state.
    "seed-devices": b"".join([
        op("set_device", dev(1)),
        op("exchange", dev(0), 1),
        op("maybe_exchange", DEV_CURRENT, 1),
        op("exchange", DEV_N, 1),
        op("stream_create", dev(1), 3, 1),
        op("set_stream", stream_created(0)),
        op("current_stream", DEV_CURRENT, 1),
        op("current_stream", dev(0), 1),
        op("set_stream", stream_default(0)),
        op("synchronize", DEV_CURRENT),
        op("synchronize", DEV_MAX),
        op("priority_range", dev(1), 0),
        op("thread", 5),
        op("set_device", bytes([6])),
    ]),
    # Invalid arguments everywhere.
    "seed-invalid": b"".join([
        op("malloc", DEV_N, size16(16), 1),
        op("malloc", dev(0), bytes([0]), 1),
        op("malloc", dev(0), bytes([12]), 1),
        op("malloc", dev(0), size16(16), 0),
        op("free", bytes([9])),
        op("free", bytes([13])),
        op("memcpy", 9, STREAM_NULL, bytes([12]), bytes([13]), u32(0), 0),
        op("memset", bytes([5]), bytes([14]) + bytes(8), 1, 0, 0),
        op("event_create", dev(0), 6, 1),
        op("event_create", DEV_N, 0, 0),
        op("stream_create", bytes([11]) + u32(0x80000000), 5, 1),
        op("stream_destroy", stream_default(0)),
        op("host_func", STREAM_NULL, 0),
        op("event_elapsed", bytes([7]), 0, bytes([7]), 0, 0),
        op("names", 5),
        op("names", 1, 14),
    ]),
    # The caching allocator: a block used by another stream (blocked by a
    # gate) is named with record_stream and freed; the next allocation of
    # its stream must not get it before the gate opens (verify).
    "seed-alloc-ordered": b"".join([
        op("stream_create", dev(0), 0, 1),
        op("stream_create", dev(0), 0, 1),
        op("malloc_async", stream_created(0), size16(8192), 1),
        op("memset", stream_created(0), alloc(0), 1, 0x3C, 0),
        op("gate", stream_created(1)),
        op("memcpy", 0, stream_created(1), alloc(0), alloc(0), u32(0), 3, 0),
        op("free_ordered", alloc(0), 0),
        op("malloc_async", stream_created(0), size16(8192), 1),
        op("memset", stream_created(0), alloc(0), 1, 0x5A, 0),
        op("release_gates"),
        op("verify", 0),
        op("snapshot", dev(0), 3),
        op("stats_list", dev(0), 5),
        op("free_async", alloc(0), stream_created(1), 0),
        op("empty_cache", dev(0)),
    ]),
    # Destroying a stream that owns a live and a cached block: both move to
    # the default stream; the live one stays usable, the cached one is reused.
    "seed-alloc-destroy": b"".join([
        op("stream_create", dev(1), 0, 1),
        op("malloc_async", stream_created(0), size16(4096), 1),
        op("malloc_async", stream_created(0), size16(2048), 1),
        op("memset", stream_created(0), alloc(0), 1, 0x11, 0),
        op("memset", stream_created(0), alloc(1), 1, 0x12, 0),
        op("free_ordered", alloc(1), 0),
        op("stream_destroy", stream_created(0)),
        op("memset", stream_default(1), alloc(0), 1, 0x22, 0),
        op("verify", 0),
        op("malloc", dev(1), size16(2048), 1),
        op("snapshot", dev(1), 4),
        op("record_stream", alloc(0), stream_default(1)),
        op("empty_cache", dev(1)),
        op("free", alloc(0)),
    ]),
    # Statistics, snapshots and history: every argument check, the large
    # pool, the out-of-memory retry, peaks.
    "seed-alloc-stats": b"".join([
        op("history", 2, 50),
        op("malloc", dev(0), size16(100), 1),
        op("malloc", dev(0), size32(3 << 20), 1),
        op("stream_create", dev(0), 0, 1),
        op("malloc_async", stream_created(0), size32(5 << 20), 1),
        op("stats_list", dev(0), 0),
        op("stats_list", dev(0), 1, 5),
        op("stats_list", dev(0), 2),
        op("stats_list", dev(0), 3, 10),
        op("stats_list", dev(0), 4, 3),
        op("stats_list", DEV_N, 5),
        op("snapshot", dev(0), 0),
        op("snapshot", dev(0), 1, 5),
        op("snapshot", dev(0), 2, 7),
        op("snapshot", dev(0), 3),
        op("history", 4),
        op("history", 5),
        op("free_async", alloc(0), STREAM_NULL, 0),
        op("malloc", dev(0), SIZE_DEVICE, 1),
        op("reset_peak", dev(0)),
        op("stats_list", dev(0), 7),
        op("snapshot", DEV_N, 3),
        op("empty_cache", DEV_N),
        op("empty_cache", dev(0)),
        op("history", 0),
    ]),
    # Modules: the real sim image, one cut short, garbage, options sim
    # refuses; launches of `empty` (right and wrong argument counts, a bad
    # config, the 2^96-block grid) and of vector_add with too few arguments;
    # unloads, then a dead module and a dead kernel.
    "seed-modules": b"".join([
        op("module_load", 1, 0, 1, 1, 1),                 # the real image
        op("module_load", 1, 2, u32(5000), 1, 1, 1),      # cut at 5000 bytes
        op("module_load", 2, 4, 9, 0, 1, 1, 1),           # garbage, then real
        op("module_load", 1, 0, 0, 1, 1),                 # options "-O2"
        op("module_load", 1, 5, 1, 1, 1),                 # OpenCL C on sim
        op("launch", 0, 0, 5, 2, 1, 0, 0, 2, 3, 0, 0, 3, 0, 0),   # empty, ok
        op("launch", 0, 0, 5, 0, 1, 2, 3, 0, 0, 3, 0, 0),        # grid 0
        op("launch", 0, 0, 5, 1, 2, 0, 0, 0, 3, 0, 0),           # 2^96 blocks
        op("launch", 0, 0, 0, 3, 2, 1, 0, 0, 2, 0, 0, 0, 3, 0, 0),  # struct_size
        op("launch", 0, 0, 5, 2, 0, 0, 0, 0, 2, 3, 0, 0, 3, 0, 1, 0, 0, 1, 2),  # 1 arg
        op("launch", 4, 0, 5, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 2, 0, 1, 1, 3, 0, 0, 0),
        op("module_unload", 1, 0),
        op("module_unload", 0, 1, 0),
        op("launch", 6, 0, 5, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0),  # dead kernel
    ]),
    # Graphs: captures on a created stream (GLOBAL with two memsets, a launch
    # of `empty` and a host function; RELAXED, instantiated), one the capture
    # refuses (a stream query: invalidated), on a default stream, with an
    # unknown mode, on NULL; replays on the capture stream, a default
    # stream of the same and of another device, NULL; the module unloaded
    # under a graph and a replay after it; destroys, then a dead graph.
    "seed-graphs": b"".join([
        op("stream_create", dev(0), 0, 1),
        op("stream_create", dev(1), 0, 1),
        op("module_load", 1, 0, 1, 1, 1),
        op("capture", stream_created(0), 0, 1, 1, 0x11, struct.pack("<HH", 100, 200), 0x22, 3, 0),
        op("capture", stream_created(0), 2, 1, 0, 0x33, 0, 1),
        op("capture", stream_created(1), 1, 0, 0, 0x44, 0),
        op("capture", stream_default(0), 0, 1),
        op("capture", stream_created(0), 7, 1),
        op("capture", STREAM_NULL, 0, 1),
        op("graph_replay", 0, 0, stream_created(0)),
        op("graph_replay", 0, 1, stream_default(0)),
        op("graph_replay", 0, 0, stream_default(1)),
        op("graph_replay", 0, 1, STREAM_NULL),
        op("module_unload", 1, 0),
        op("graph_replay", 0, 0, stream_created(0)),
        op("graph_destroy", 0, 0),
        op("graph_replay", 6, 0, stream_created(0)),
        op("graph_destroy", 6, 0),
        op("graph_destroy", 7),
        op("verify", 0),
    ]),
    # struct_size around every boundary.
    "seed-structs": b"".join([
        op("properties", dev(0), 1, 0),
        op("properties", dev(0), 1, 3),
        op("properties", dev(0), 1, 5),
        op("properties", dev(1), 1, 9),
        op("properties", DEV_N, 1, 9),
        op("memory_stats", dev(0), 1, 2),
        op("memory_stats", dev(0), 1, 7),
        op("backend_info", 3, 1, 9),
        op("backend_info", 0, 1, 9),
        op("backend_info", 1, 1, 6),
        op("backend_info", 3, 0, 9),
    ]),
}


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
