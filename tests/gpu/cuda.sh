#!/usr/bin/env bash
# tests/gpu/cuda.sh - build accel and run it on a machine with a real NVIDIA
# GPU: the conformance suite, accelctl backends/devices/selftest/bench, the
# ACCEL_TRACE timeline of the saxpy example and of tests/trace/trace_api.c, the CUDA
# plugin's own tests (over the fake driver), the ABI 1.1 interop checks on
# the real driver (tests/gpu/cuda_interop.c: driver work on an exported
# CUstream between accel copies, a wrapped CUstream, pinned vs pageable H2D
# bandwidth, attributes, a peer copy with two GPUs), the caching allocator
# (tests/gpu/cuda_alloc.c: the cached accel_malloc + accel_free pair against
# cuMemAlloc + cuMemFree and cuMemAllocAsync + cuMemFreeAsync called
# directly, the allocator's statistics; again with
# ACCEL_ALLOC_CONF=backend:native), modules and kernels
# (tests/gpu/cuda_kernels.c: the PTX of kernels/accel_kernels.cu loaded
# through accel, vector_add, saxpy, reduce_sum and index_3d with results
# checked, and the launch overhead against cuLaunchKernel printed), native
# graphs (the conformance graphs group on its own; tests/gpu/cuda_graphs.c:
# what the device says of its graphs, "native (CUDA graphs)" checked, a
# 64-saxpy graph replayed with its result checked, and 64 empty kernels as
# 64 launches vs one accel_graph_replay vs one cuGraphLaunch of the same
# launches captured by the driver directly, printed) and the
# Google Benchmark programs: bench-cuda (tests/bench/bench_cuda.cpp:
# accel_launch_kernel against cuLaunchKernel, and stream query and
# synchronize, event record and query against the driver calls, paired on
# the same CUstream, and accel_graph_replay against cuGraphLaunch of the
# same captured launches and against the 64 launches it replaces;
# tests/gpu/check_ratios.py fails a ratio above 1.05x, 0.3x for the last),
# bench-dispatch's per-thread queries and bench-alloc's pair. Needs the
# NVIDIA driver, cuda.h (no toolkit libraries), Google Benchmark
# (libbenchmark-dev) and nvcc (/usr/local/cuda/bin/nvcc), which makes the
# PTX at build time: a build without PTX runs no kernel, and that is a
# failure (as is any check that could not run). Well under 10 minutes, no
# network. The last line counts the checks that ran and passed. Usage, from
# anywhere:
#
#   tests/gpu/cuda.sh            # build into <repo>/build-gpu, then run
#   BUILD_DIR=/tmp/b JOBS=1 tests/gpu/cuda.sh
#
# ACCEL_CUDA_DRIVER=/abs/libcuda.so.1 runs everything against that driver
# instead of the system's (e.g. the fake one, to try this script without a
# GPU). The ratio targets are then reported and not enforced, since a fake's
# timings say nothing about a GPU: RATIO_TARGETS=enforce (or report) decides
# it either way; by default they are enforced on the system's driver only.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$repo/build-gpu}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
step_timeout=${STEP_TIMEOUT:-300}

say() { printf '\n=== %s\n' "$*"; }
die() { printf 'cuda.sh: %s\n' "$*" >&2; exit 2; }

# --- what the build needs -------------------------------------------------------
missing=()
for tool in meson ninja c++ pkg-config timeout; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if command -v pkg-config >/dev/null 2>&1; then
  for pc in spdlog fmt; do
    pkg-config --exists "$pc" || missing+=("$pc (pkg-config)")
  done
  pkg-config --exists catch2 || [ -f /usr/include/catch2/catch.hpp ] ||
    missing+=("Catch2 v2 (catch2/catch.hpp)")
  pkg-config --exists nlohmann_json || [ -f /usr/include/nlohmann/json.hpp ] ||
    missing+=("nlohmann-json")
  [ -f /usr/include/CLI/CLI.hpp ] || pkg-config --exists CLI11 || missing+=("CLI11")
  pkg-config --exists benchmark || missing+=("Google Benchmark (libbenchmark-dev)")
fi
cuda_inc=
for d in "${CUDA_INCLUDE_DIR:-}" /usr/local/cuda/include /opt/cuda/include /usr/include; do
  if [ -n "$d" ] && [ -f "$d/cuda.h" ]; then cuda_inc=$d; break; fi
done
[ -n "$cuda_inc" ] || missing+=("cuda.h (CUDA toolkit headers in /usr/local/cuda/include)")
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || cc="c++ -x c"  # a C compiler for cuda_interop.c
if [ ${#missing[@]} -gt 0 ]; then
  printf 'cuda.sh: cannot build, missing: %s\n' "$(IFS=', '; echo "${missing[*]}")" >&2
  printf 'cuda.sh: on Debian/Ubuntu: apt-get install meson ninja-build g++ pkg-config libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libcli11-dev libbenchmark-dev (and the CUDA toolkit headers and nvcc)\n' >&2
  exit 2
fi

# --- the driver -------------------------------------------------------------------
# Ratio targets: enforced on the system's driver, reported over another one.
ratio_mode=${RATIO_TARGETS:-}
if [ -z "$ratio_mode" ]; then
  if [ -n "${ACCEL_CUDA_DRIVER:-}" ]; then ratio_mode=report; else ratio_mode=enforce; fi
fi
case "$ratio_mode" in
  enforce|report) ;;
  *) die "RATIO_TARGETS=$ratio_mode: say enforce or report" ;;
esac
say "NVIDIA driver"
if [ -n "${ACCEL_CUDA_DRIVER:-}" ]; then
  echo "using ACCEL_CUDA_DRIVER=$ACCEL_CUDA_DRIVER"
elif ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  ldconfig -p | grep 'libcuda\.so\.1 ' | head -2
elif ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 \
        /usr/local/nvidia/lib64/libcuda.so.1 2>/dev/null; then
  :
elif command -v nvidia-smi >/dev/null 2>&1; then
  echo "warning: libcuda.so.1 not in the ldconfig cache; going on (accelctl backends will say)"
else
  die "no libcuda.so.1 and no nvidia-smi on this machine (no NVIDIA driver): nothing to test here"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version --format=csv || true
fi
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"

# --- build ------------------------------------------------------------------------
say "build into $build"
start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$repo" -Dbuildtype=release -Dcuda=enabled -Dhip=disabled \
    -Dlevel_zero=disabled -Dopencl=disabled -Dtests=true -Dtools=true \
    -Dcuda-include-dir="$cuda_inc" || die "meson setup failed"
fi
timeout 420 ninja -C "$build" -j "$jobs" || die "build failed"
# The interop checks: plain C on accel.h and the Driver API (the driver is
# dlopen()ed at run time, the same file the plugin opens).
interop="$build/cuda-interop"
$cc -std=gnu11 -O2 -Wall -I"$repo/include" -I"$cuda_inc" "$repo/tests/gpu/cuda_interop.c" \
  -o "$interop" -L"$build/core" -laccelcore -Wl,-rpath,"$build/core" -ldl -lpthread ||
  die "cannot build tests/gpu/cuda_interop.c"
alloc="$build/cuda-alloc"
$cc -std=gnu11 -O2 -Wall -I"$repo/include" -I"$cuda_inc" "$repo/tests/gpu/cuda_alloc.c" \
  -o "$alloc" -L"$build/core" -laccelcore -Wl,-rpath,"$build/core" -ldl ||
  die "cannot build tests/gpu/cuda_alloc.c"
kernels="$build/cuda-kernels"
$cc -std=gnu11 -O2 -Wall -I"$repo/include" -I"$cuda_inc" "$repo/tests/gpu/cuda_kernels.c" \
  -o "$kernels" -L"$build/core" -laccelcore -Wl,-rpath,"$build/core" -ldl -lm ||
  die "cannot build tests/gpu/cuda_kernels.c"
graphs_exe="$build/cuda-graphs"
$cc -std=gnu11 -O2 -Wall -I"$repo/include" -I"$cuda_inc" "$repo/tests/gpu/cuda_graphs.c" \
  -o "$graphs_exe" -L"$build/core" -laccelcore -Wl,-rpath,"$build/core" -ldl ||
  die "cannot build tests/gpu/cuda_graphs.c"
# The PTX kernels/meson.build made with nvcc (absent without nvcc: the
# kernel checks fail).
ptx="$build/kernels/accel_kernels.ptx"
echo "build: $(( $(date +%s) - start )) s"

py=/usr/bin/python3
[ -x "$py" ] || py=python3
export ACCEL_PLUGIN_PATH="$build/backends/cuda"
[ -d "$build/plugins/sim" ] && ACCEL_PLUGIN_PATH="$ACCEL_PLUGIN_PATH:$build/plugins/sim"
export ACCEL_LOG_LEVEL=${ACCEL_LOG_LEVEL:-warn}
accelctl="$build/tools/accelctl/accelctl"
conformance="$build/tests/conformance/accel-conformance"

failed=()
checks=0
run() {  # run NAME CMD...: one check; time it, keep going on failure
  local name=$1; shift
  checks=$((checks + 1))
  say "$name: $*"
  local t0; t0=$(date +%s%N)
  timeout "$step_timeout" "$@"
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf -- '--- %s: exit %d in %d.%03d s\n' "$name" "$rc" $((ms / 1000)) $((ms % 1000))
  [ "$rc" -eq 0 ] || failed+=("$name (exit $rc)")
}

# A build without PTX runs no kernel: the kernel checks below then fail too,
# and this says why.
checks=$((checks + 1))
say "the build's PTX: $ptx"
if [ -s "$ptx" ]; then
  echo "$(wc -c < "$ptx") bytes"
else
  echo "FAIL: no PTX (the build had no nvcc: kernels/meson.build, -Dnvcc)"
  failed+=("no PTX at $ptx")
fi

run "accelctl backends" "$accelctl" backends
run "accelctl devices" env ACCEL_BACKEND=cuda "$accelctl" devices
run "accelctl selftest" "$accelctl" selftest --backend cuda
# Copy bandwidth (pageable, pinned, D2D, peer with two GPUs) and latencies:
# the quick table, then the full run as JSON (and its plot) for the note.
run "accelctl bench --quick" "$accelctl" bench --quick --backend cuda
run "accelctl bench --json (full)" "$accelctl" bench --json --backend cuda \
  --svg "$build/accelctl-bench-cuda.svg"
echo "(plot: $build/accelctl-bench-cuda.svg)"
run "conformance" "$conformance" --backend cuda --durations yes
run "interop on the driver API (exported and wrapped CUstreams, pinned memory, attributes, peers)" \
  env ACCEL_BACKEND=cuda "$interop"
run "allocator: cached pair vs cuMemAlloc/cuMemFree and cuMemAllocAsync/cuMemFreeAsync, statistics" \
  env ACCEL_BACKEND=cuda "$alloc"
run "allocator with ACCEL_ALLOC_CONF=backend:native" \
  env ACCEL_BACKEND=cuda ACCEL_ALLOC_CONF=backend:native "$alloc"
run "modules and kernels: results, launch overhead vs cuLaunchKernel" \
  env ACCEL_BACKEND=cuda "$kernels" "$ptx"
# Native graphs: the conformance graphs group on its own (its "each device
# says how it replays graphs" case prints nothing when it passes: the next
# check prints the device's words), then cuda_graphs.c.
run "conformance: graphs group" "$conformance" --backend cuda '[graphs]' --durations yes
graphs_out="$build/cuda-graphs.out"
rm -f "$graphs_out"
run "native graphs: device's words, 64-saxpy replays, 64 empty kernels launched vs replayed vs cuGraphLaunch" \
  env ACCEL_BACKEND=cuda bash -o pipefail -c '"$0" "$1" | tee "$2"' "$graphs_exe" "$ptx" "$graphs_out"
graphs_line=$(grep -m1 '^device 0 graphs:' "$graphs_out" 2>/dev/null)
# The timeline trace of the saxpy example on the GPU (device spans timed by
# CUDA events), checked as the tests check it on sim and PoCL, and kept for
# Perfetto.
run "traced saxpy (ACCEL_TRACE)" env ACCEL_BACKEND=cuda "$py" "$repo/tests/trace/trace_check.py" \
  saxpy-cxx -- "$build/examples/saxpy/accel-saxpy-cxx"
run "trace API on the GPU (ranges, threads, fork, flush)" env ACCEL_BACKEND=cuda \
  "$py" "$repo/tests/trace/trace_check.py" api -- "$build/tests/trace/accel-trace-api"
run "cuda plugin tests (fake driver)" meson test -C "$build" --no-rebuild --suite cuda --print-errorlogs
# The Python package on the GPU: the pytest suite over the real driver
# (kDLCUDA DLPack, __cuda_array_interface__, kernels from the build's PTX).
if [ -d "$build/python/accel" ]; then
  run "python package (pytest) on cuda" env ACCEL_BACKEND=cuda \
    "$py" "$repo/tests/python/run_pytest.py" --backend cuda \
    --build-python "$build/python" --devices 1 -- "$repo/tests/python"
else
  checks=$((checks + 1))
  failed+=("no Python package in $build/python (-Dpython: python3-dev, pybind11-dev)")
fi
# Google Benchmark programs (libbenchmark-dev is required above, so each
# must have been built: one that is missing is a failed check).
bench_dir="$build/tests/bench"
bench() {  # bench NAME PROGRAM ARGS...: the program must exist
  local name=$1 exe=$2; shift 2
  if [ -x "$exe" ]; then
    run "$name" env ACCEL_BACKEND=cuda "$exe" "$@"
  else
    checks=$((checks + 1))
    failed+=("$name ($exe was not built)")
  fi
}
# Launches, stream and event operations against the driver API on the same
# CUstream, paired batches (bench_cuda.cpp): the table here, the JSON
# (Google Benchmark's JSON reporter, the --benchmark_format=json one) into
# a file that check_ratios.py reads.
bench_json="$build/bench-cuda.json"
rm -f "$bench_json"
bench "benchmark bench-cuda (launch, stream and event ops vs the driver API)" \
  "$bench_dir/bench-cuda" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.1 --benchmark_out="$bench_json" --benchmark_out_format=json
ratio_summary="$build/bench-cuda.ratios"
rm -f "$ratio_summary" "$ratio_summary.graphs" "$ratio_summary.launches" \
  "$ratio_summary.pinned" "$ratio_summary.pageable"
run "ratio targets: accel <= 1.05x the driver on the same CUstream ($ratio_mode)" \
  "$py" "$repo/tests/gpu/check_ratios.py" "$bench_json" --target 1.05 --"$ratio_mode" \
  --summary "$ratio_summary" \
  BM_cuda_launch_empty_paired BM_cuda_launch_saxpy_paired BM_cuda_stream_query_paired \
  BM_cuda_stream_synchronize_paired BM_cuda_event_record_paired BM_cuda_event_query_paired
ratio_line=$(cat "$ratio_summary" 2>/dev/null)
# Graphs: accel_graph_replay against cuGraphLaunch of the same 64 launches
# captured by the driver (1.05x, above), and against the 64
# accel_launch_kernel calls it replaces (0.3x).
run "ratio targets: accel_graph_replay <= 1.05x cuGraphLaunch ($ratio_mode)" \
  "$py" "$repo/tests/gpu/check_ratios.py" "$bench_json" --target 1.05 --"$ratio_mode" \
  --summary "$ratio_summary.graphs" BM_cuda_graph_replay_paired
run "ratio targets: replay of 64 launches <= 0.3x the 64 launches ($ratio_mode)" \
  "$py" "$repo/tests/gpu/check_ratios.py" "$bench_json" --target 0.3 --"$ratio_mode" \
  --summary "$ratio_summary.launches" BM_cuda_graph_vs_launches_paired
# Copies against cuMemcpyHtoDAsync / cuMemcpyDtoHAsync on the same CUstream,
# each batch timed to its synchronize: pinned >= 0.95x the driver's bandwidth
# (time <= 1.05x), pageable >= 0.9x (time <= 1.11x; the driver stages
# pageable memory as cuMemcpyHtoD does).
run "ratio targets: pinned copies >= 0.95x the driver's bandwidth ($ratio_mode)" \
  "$py" "$repo/tests/gpu/check_ratios.py" "$bench_json" --target 1.05 --"$ratio_mode" \
  --summary "$ratio_summary.pinned" \
  BM_cuda_copy_h2d_pinned_paired/1048576 BM_cuda_copy_h2d_pinned_paired/67108864 \
  BM_cuda_copy_d2h_pinned_paired/1048576 BM_cuda_copy_d2h_pinned_paired/67108864
run "ratio targets: pageable copies >= 0.9x the driver's bandwidth ($ratio_mode)" \
  "$py" "$repo/tests/gpu/check_ratios.py" "$bench_json" --target 1.11 --"$ratio_mode" \
  --summary "$ratio_summary.pageable" \
  BM_cuda_copy_h2d_pageable_paired/1048576 BM_cuda_copy_h2d_pageable_paired/67108864 \
  BM_cuda_copy_d2h_pageable_paired/1048576 BM_cuda_copy_d2h_pageable_paired/67108864
ratio_line="$ratio_line; $(cat "$ratio_summary.graphs" 2>/dev/null); $(cat "$ratio_summary.launches" 2>/dev/null)"
ratio_line="$ratio_line; $(cat "$ratio_summary.pinned" 2>/dev/null); $(cat "$ratio_summary.pageable" 2>/dev/null)"
# The per-thread queries and guards against their thread_local floor (its
# operations rows compare with sim's vtable, which says nothing about cuda:
# bench-cuda measures those against the driver), and the allocator pair.
bench "benchmark bench-dispatch (per-thread queries, guards)" "$bench_dir/bench-dispatch" \
  --benchmark_filter='BM_floor_tls|BM_current|BM_stream_native_handle|BM_guard|BM_get_set_device'
# bench-alloc: the allocator pair and two threads (the fragmentation trace
# is run on sim by tests/bench/run.py; it needs 3 GiB of device memory).
bench "benchmark bench-alloc" "$bench_dir/bench-alloc" \
  --benchmark_filter='BM_alloc_pair' --benchmark_repetitions=5 \
  --benchmark_display_aggregates_only=true

say "summary"
if [ "$ratio_mode" = enforce ]; then
  ratios="ratios: ${ratio_line:-none checked}"
else
  why="RATIO_TARGETS=report"
  [ -z "${RATIO_TARGETS:-}" ] && why="ACCEL_CUDA_DRIVER is set, not the system driver"
  ratios="ratios: ${ratio_line:-none checked}; $why (RATIO_TARGETS=enforce enforces them)"
fi
echo "${graphs_line:-device 0 graphs: unknown (cuda-graphs did not say)}"
[ ${#failed[@]} -eq 0 ] || printf 'FAILED: %s\n' "${failed[@]}"
echo "cuda.sh: $checks checks run, $((checks - ${#failed[@]})) passed, ${#failed[@]} failed; $ratios"
[ ${#failed[@]} -eq 0 ]
