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
# checked, and the launch overhead of accel_launch_kernel against
# cuLaunchKernel on the same CUstream, target <= 1.05x) and the benchmarks,
# where Google Benchmark is installed. Needs the NVIDIA driver and cuda.h
# (no toolkit libraries); nvcc, where installed (/usr/local/cuda/bin/nvcc),
# makes the PTX at build time: without it the kernel checks say SKIPPED.
# Well under 10 minutes, no network. Usage, from anywhere:
#
#   tests/gpu/cuda.sh            # build into <repo>/build-gpu, then run
#   BUILD_DIR=/tmp/b JOBS=1 tests/gpu/cuda.sh
#
# ACCEL_CUDA_DRIVER=/abs/libcuda.so.1 runs everything against that driver
# instead of the system's (e.g. the fake one, to try this script without a GPU).
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
  printf 'cuda.sh: on Debian/Ubuntu: apt-get install meson ninja-build g++ pkg-config libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libcli11-dev (and the CUDA toolkit headers)\n' >&2
  exit 2
fi

# --- the driver -------------------------------------------------------------------
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
# The PTX kernels/meson.build made with nvcc (absent without nvcc: the
# program then says SKIPPED).
ptx="$build/kernels/accel_kernels.ptx"
echo "build: $(( $(date +%s) - start )) s"

export ACCEL_PLUGIN_PATH="$build/backends/cuda"
[ -d "$build/plugins/sim" ] && ACCEL_PLUGIN_PATH="$ACCEL_PLUGIN_PATH:$build/plugins/sim"
export ACCEL_LOG_LEVEL=${ACCEL_LOG_LEVEL:-warn}
accelctl="$build/tools/accelctl/accelctl"
conformance="$build/tests/conformance/accel-conformance"

failed=()
run() {  # run NAME CMD...: time it, keep going on failure
  local name=$1; shift
  say "$name: $*"
  local t0; t0=$(date +%s%N)
  timeout "$step_timeout" "$@"
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf -- '--- %s: exit %d in %d.%03d s\n' "$name" "$rc" $((ms / 1000)) $((ms % 1000))
  [ "$rc" -eq 0 ] || failed+=("$name (exit $rc)")
}

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
# The timeline trace of the saxpy example on the GPU (device spans timed by
# CUDA events), checked as the tests check it on sim and PoCL, and kept for
# Perfetto.
run "traced saxpy (ACCEL_TRACE)" env ACCEL_BACKEND=cuda python3 "$repo/tests/trace/trace_check.py" \
  saxpy-cxx -- "$build/examples/saxpy/accel-saxpy-cxx"
run "trace API on the GPU (ranges, threads, fork, flush)" env ACCEL_BACKEND=cuda \
  python3 "$repo/tests/trace/trace_check.py" api -- "$build/tests/trace/accel-trace-api"
run "cuda plugin tests (fake driver)" meson test -C "$build" --no-rebuild --suite cuda --print-errorlogs
# Google Benchmark programs (built when libbenchmark-dev is installed).
# bench-alloc: the allocator pair and two threads (the fragmentation trace
# is run on sim by tests/bench/run.py; it needs 3 GiB of device memory).
bench_dir="$build/tests/bench"
if [ -x "$bench_dir/bench-dispatch" ]; then
  run "benchmark bench-dispatch" env ACCEL_BACKEND=cuda "$bench_dir/bench-dispatch"
fi
if [ -x "$bench_dir/bench-alloc" ]; then
  run "benchmark bench-alloc" env ACCEL_BACKEND=cuda "$bench_dir/bench-alloc" \
    --benchmark_filter='BM_alloc_pair' --benchmark_repetitions=5 \
    --benchmark_display_aggregates_only=true
fi
if [ ! -x "$bench_dir/bench-dispatch" ] && [ ! -x "$bench_dir/bench-alloc" ]; then
  echo "(no benchmarks built: Google Benchmark, libbenchmark-dev, is not installed)"
fi

say "summary"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all CUDA checks passed"
