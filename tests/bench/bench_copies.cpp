// Copies at memory bandwidth (docs/performance.md, "Copies"): every
// accel_memcpy_async kind against memcpy of the same bytes, in the same run;
// tests/bench/run.py (--copies) holds the targets and makes the rows.
//
// On a CPU device (sim, PoCL) device memory is host memory, so the host's
// own memcpy bandwidth is the physical limit of any copy: what accel adds
// is its overhead, or its backend's.
//
// Bandwidth is measured as a copy benchmark measures it: an iteration is a
// batch of copies (enough for 16 MiB, 1 to 256 of them) and one
// synchronize, so that the stream's round trip is not counted once per
// small copy. Latency is one copy and its synchronize.
//
//  - BM_memcpy/N: the batch as std::memcpy of N bytes between two host
//    buffers, both touched before (no page faults in the loop). The ceiling.
//  - BM_copy/<kind>/N, kind one of h2d_pageable, h2d_pinned, d2h_pageable,
//    d2h_pinned, d2d: the batch as accel_memcpy_async on a stream made for
//    the benchmark, then accel_stream_synchronize; device memory from
//    accel_malloc, pinned memory from accel_host_malloc, pageable memory
//    from aligned_alloc. bytes_per_second is the bandwidth.
//  - BM_ocl_vendor_svm_memcpy/N (with ACCEL_BENCH_OPENCL, over accel's
//    opencl backend): the batch as clEnqueueSVMMemcpy (non-blocking) between
//    two clSVMAlloc buffers on the cl_command_queue behind such a stream,
//    then clFinish: the direct vendor copy.
//  - BM_copy_latency/h2d_pinned/4096 and BM_ocl_vendor_svm_memcpy_latency/4096:
//    one 4 KiB copy and its wait, through accel and directly.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "accel/accel.h"

#ifdef ACCEL_BENCH_OPENCL
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#endif

namespace {

constexpr size_t kAlign = 4096;

// Copies per timed batch: 16 MiB worth, at least 1, at most 256.
size_t batch_of(size_t bytes) {
  const size_t n = (size_t{16} << 20) / bytes;
  return n < 1 ? 1 : n > 256 ? 256 : n;
}

void set_bytes(benchmark::State& state, size_t bytes, size_t batch) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(bytes * batch));
  state.counters["batch"] = static_cast<double>(batch);
}

// A host buffer of `bytes`, page aligned and touched, freed at scope exit.
struct HostBuffer {
  explicit HostBuffer(size_t bytes, bool pinned) : pinned_(pinned) {
    if (pinned) {
      if (accel_host_malloc(bytes, 0, &p_) != ACCEL_SUCCESS) p_ = nullptr;
    } else {
      p_ = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    }
    if (p_ != nullptr) std::memset(p_, 0x5a, bytes);
  }
  ~HostBuffer() {
    if (p_ == nullptr) return;
    if (pinned_)
      accel_host_free(p_);
    else
      std::free(p_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
  bool pinned_;
};

// Device memory of `bytes` on the current device, written once.
struct DeviceBuffer {
  DeviceBuffer(size_t bytes, accel_stream_t s) {
    if (accel_malloc(-1, bytes, &p_) != ACCEL_SUCCESS) {
      p_ = nullptr;
      return;
    }
    if (accel_memset_async(p_, 0x3c, bytes, s) != ACCEL_SUCCESS ||
        accel_stream_synchronize(s) != ACCEL_SUCCESS) {
      accel_free(p_);
      p_ = nullptr;
    }
  }
  ~DeviceBuffer() {
    if (p_ != nullptr) accel_free(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

struct Stream {
  Stream() {
    if (accel_stream_create(-1, 0, &s) != ACCEL_SUCCESS) s = nullptr;
  }
  ~Stream() {
    if (s != nullptr) accel_stream_destroy(s);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  accel_stream_t s = nullptr;
};

void BM_memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  HostBuffer src(bytes, false), dst(bytes, false);
  if (src.get() == nullptr || dst.get() == nullptr) {
    state.SkipWithError("cannot allocate the host buffers");
    return;
  }
  const size_t batch = batch_of(bytes);
  for (auto _ : state) {
    for (size_t i = 0; i < batch; ++i) {
      std::memcpy(dst.get(), src.get(), bytes);
      benchmark::ClobberMemory();
    }
  }
  set_bytes(state, bytes, batch);
}

enum class Kind { kH2DPageable, kH2DPinned, kD2HPageable, kD2HPinned, kD2D };

void copy_loop(benchmark::State& state, Kind kind, size_t batch) {
  if (!accel_is_available() || accel_device_count() < 1) {
    state.SkipWithError("needs an accelerator");
    return;
  }
  const auto bytes = static_cast<size_t>(state.range(0));
  Stream stream;
  const bool pinned = kind == Kind::kH2DPinned || kind == Kind::kD2HPinned;
  HostBuffer host(bytes, pinned);
  DeviceBuffer dev(bytes, stream.s), dev2(kind == Kind::kD2D ? bytes : 1, stream.s);
  if (stream.s == nullptr || host.get() == nullptr || dev.get() == nullptr ||
      dev2.get() == nullptr) {
    state.SkipWithError(accel_last_error());
    return;
  }
  void* dst = nullptr;
  const void* src = nullptr;
  accel_memcpy_kind_t k = ACCEL_MEMCPY_DEVICE_TO_DEVICE;
  switch (kind) {
    case Kind::kH2DPageable:
    case Kind::kH2DPinned:
      dst = dev.get(), src = host.get(), k = ACCEL_MEMCPY_HOST_TO_DEVICE;
      break;
    case Kind::kD2HPageable:
    case Kind::kD2HPinned:
      dst = host.get(), src = dev.get(), k = ACCEL_MEMCPY_DEVICE_TO_HOST;
      break;
    case Kind::kD2D:
      dst = dev2.get(), src = dev.get();
      break;
  }
  for (auto _ : state) {
    accel_status_t st = ACCEL_SUCCESS;
    for (size_t i = 0; i < batch && st == ACCEL_SUCCESS; ++i)
      st = accel_memcpy_async(dst, src, bytes, k, stream.s);
    if (st != ACCEL_SUCCESS || accel_stream_synchronize(stream.s) != ACCEL_SUCCESS) {
      state.SkipWithError(accel_last_error());
      return;
    }
  }
  set_bytes(state, bytes, batch);
  state.SetLabel(accel_current_accelerator());
}

void BM_copy(benchmark::State& state, Kind kind) {
  copy_loop(state, kind, batch_of(static_cast<size_t>(state.range(0))));
}

void BM_copy_latency(benchmark::State& state, Kind kind) { copy_loop(state, kind, 1); }

#ifdef ACCEL_BENCH_OPENCL
void vendor_loop(benchmark::State& state, size_t batch) {
  const char* b = accel_current_accelerator();
  if (!accel_is_available() || b == nullptr || std::strcmp(b, "opencl") != 0) {
    state.SkipWithError("needs accel over opencl (ACCEL_BACKEND=opencl, PoCL)");
    return;
  }
  Stream stream;
  accel_native_handle_t dh, sh;
  std::memset(&dh, 0, sizeof dh);
  std::memset(&sh, 0, sizeof sh);
  dh.struct_size = sh.struct_size = sizeof dh;
  if (stream.s == nullptr || accel_device_native_handle(0, &dh) != ACCEL_SUCCESS ||
      accel_stream_native_handle(stream.s, &sh) != ACCEL_SUCCESS ||
      sh.type != ACCEL_NATIVE_OPENCL) {
    state.SkipWithError(accel_last_error());
    return;
  }
  auto ctx = static_cast<cl_context>(dh.context);
  auto queue = static_cast<cl_command_queue>(sh.handle);
  const auto bytes = static_cast<size_t>(state.range(0));
  void* src = clSVMAlloc(ctx, CL_MEM_READ_WRITE, bytes, 0);
  void* dst = clSVMAlloc(ctx, CL_MEM_READ_WRITE, bytes, 0);
  if (src == nullptr || dst == nullptr ||
      clEnqueueSVMMemcpy(queue, CL_TRUE, dst, src, bytes, 0, nullptr, nullptr) != CL_SUCCESS) {
    state.SkipWithError("clSVMAlloc or the first clEnqueueSVMMemcpy failed");
  } else {
    for (auto _ : state) {
      cl_int err = CL_SUCCESS;
      for (size_t i = 0; i < batch && err == CL_SUCCESS; ++i)
        err = clEnqueueSVMMemcpy(queue, CL_FALSE, dst, src, bytes, 0, nullptr, nullptr);
      if (err != CL_SUCCESS || clFinish(queue) != CL_SUCCESS) {
        state.SkipWithError("clEnqueueSVMMemcpy or clFinish failed");
        break;
      }
    }
    set_bytes(state, bytes, batch);
  }
  if (src != nullptr) clSVMFree(ctx, src);
  if (dst != nullptr) clSVMFree(ctx, dst);
}

void BM_ocl_vendor_svm_memcpy(benchmark::State& state) {
  vendor_loop(state, batch_of(static_cast<size_t>(state.range(0))));
}

void BM_ocl_vendor_svm_memcpy_latency(benchmark::State& state) { vendor_loop(state, 1); }
#endif

// 4 KiB to 256 MiB by 4x: in L1/L2, through the last-level cache (the
// 512 KiB to 16 MiB range), and from DRAM. Wall time: the copies wait.
void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = 4 << 10; n <= int64_t{256} << 20; n *= 4) b->Arg(n);
  b->UseRealTime();
}

}  // namespace

BENCHMARK(BM_memcpy)->Apply(sizes);
BENCHMARK_CAPTURE(BM_copy, h2d_pageable, Kind::kH2DPageable)->Apply(sizes);
BENCHMARK_CAPTURE(BM_copy, h2d_pinned, Kind::kH2DPinned)->Apply(sizes);
BENCHMARK_CAPTURE(BM_copy, d2h_pageable, Kind::kD2HPageable)->Apply(sizes);
BENCHMARK_CAPTURE(BM_copy, d2h_pinned, Kind::kD2HPinned)->Apply(sizes);
BENCHMARK_CAPTURE(BM_copy, d2d, Kind::kD2D)->Apply(sizes);
BENCHMARK_CAPTURE(BM_copy_latency, h2d_pinned, Kind::kH2DPinned)->Arg(4096)->UseRealTime();
#ifdef ACCEL_BENCH_OPENCL
BENCHMARK(BM_ocl_vendor_svm_memcpy)->Apply(sizes);
BENCHMARK(BM_ocl_vendor_svm_memcpy_latency)->Arg(4096)->UseRealTime();
#endif

BENCHMARK_MAIN();
