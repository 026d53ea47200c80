// Modules and kernels (ABI 1.2) over accel's opencl backend against the
// same OpenCL calls made directly, in the same run, on PoCL.
//
// Run with ACCEL_BACKEND=opencl ACCEL_OPENCL_DEVICE_TYPE=all
// POCL_DEVICES=pthread (meson.build sets them). Pairs (target ratio <= 1.10):
//  - BM_ocl_launch_empty vs BM_ocl_vendor_launch_empty: the kernel `empty`
//    of kernels/accel_kernels.cl, one work-item, through accel_launch_kernel
//    against clEnqueueNDRangeKernel + clFlush on the very cl_command_queue
//    behind accel's stream (accel_stream_native_handle), with a kernel of a
//    program the benchmark builds itself from the same source in accel's
//    context. Every 256 launches both wait for the queue, outside the
//    timing, so the queue never grows without bound.
//  - BM_ocl_launch_saxpy vs BM_ocl_vendor_launch_saxpy: the same with four
//    arguments (a value, two SVM pointers, a value), set with clSetKernelArg
//    / clSetKernelArgSVMPointer on the direct side.
//  - BM_ocl_module_load vs BM_ocl_vendor_module_load: accel_module_load +
//    accel_module_unload of the OpenCL C image against
//    clCreateProgramWithSource + clBuildProgram + clReleaseProgram with the
//    options the backend passes ("-cl-kernel-arg-info"); PoCL serves both
//    from its kernel cache after the first build.
// How the backend makes one kernel safe for two threads, measured on OpenCL
// alone (reported, not a target): BM_ocl_args_lock/threads:N holds one
// mutex over clSetKernelArg* + clEnqueueNDRangeKernel on one shared
// cl_kernel; BM_ocl_args_pool/threads:N takes a cl_kernel from a pool under
// the mutex, sets the arguments and enqueues outside it, and puts it back
// (what backends/opencl does). Each thread has its own queue.
#include <benchmark/benchmark.h>

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "accel/accel.h"
#include "accel/accel_plugin.h"
#include "accel_kernels.h"
#include "direct_plugin.hpp"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

namespace {

constexpr int kSyncEvery = 256;
constexpr const char* kOptions = "-cl-kernel-arg-info";  // what the backend adds
constexpr uint32_t kSaxpyN = 256;

cl_program build_direct(cl_context ctx, cl_device_id dev, const char* options) {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
  if (im == nullptr) return nullptr;
  const char* text = static_cast<const char*>(im->data);
  size_t size = im->size;
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(ctx, 1, &text, &size, &err);
  if (p == nullptr || err != CL_SUCCESS) return nullptr;
  if (clBuildProgram(p, 1, &dev, options, nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(p);
    return nullptr;
  }
  return p;
}

// accel's stream, module and kernels on device 0, the queue behind the
// stream, and the same kernels built directly in accel's context.
struct Setup {
  bool ok = false;
  std::string why;
  accel_stream_t stream = nullptr;
  accel_module_t module = nullptr;
  accel_kernel_t empty = nullptr, saxpy = nullptr;
  cl_command_queue q = nullptr;
  cl_context ctx = nullptr;
  cl_device_id dev = nullptr;
  cl_program program = nullptr;
  cl_kernel direct_empty = nullptr, direct_saxpy = nullptr;
  void* x = nullptr;
  void* y = nullptr;

  Setup() {
    const char* b = accel_current_accelerator();
    if (!accel_is_available() || b == nullptr || std::strcmp(b, "opencl") != 0) {
      why = "needs accel over opencl (ACCEL_BACKEND=opencl ACCEL_OPENCL_DEVICE_TYPE=all, PoCL)";
      return;
    }
    accel_native_handle_t h;
    std::memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    if (accel_stream_create(0, 0, &stream) != ACCEL_SUCCESS ||
        accel_stream_native_handle(stream, &h) != ACCEL_SUCCESS) {
      why = std::string("stream: ") + accel_last_error();
      return;
    }
    q = static_cast<cl_command_queue>(h.handle);
    std::memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    if (accel_device_native_handle(0, &h) != ACCEL_SUCCESS) {
      why = std::string("device handle: ") + accel_last_error();
      return;
    }
    dev = static_cast<cl_device_id>(h.handle);
    ctx = static_cast<cl_context>(h.context);
    const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
    if (im == nullptr || accel_module_load(0, im, 1, nullptr, &module) != ACCEL_SUCCESS ||
        accel_module_get_kernel(module, "empty", &empty) != ACCEL_SUCCESS ||
        accel_module_get_kernel(module, "saxpy", &saxpy) != ACCEL_SUCCESS) {
      why = std::string("module: ") + accel_last_error();
      return;
    }
    program = build_direct(ctx, dev, kOptions);
    cl_int err = CL_SUCCESS;
    if (program != nullptr) direct_empty = clCreateKernel(program, "empty", &err);
    if (program != nullptr) direct_saxpy = clCreateKernel(program, "saxpy", &err);
    if (direct_empty == nullptr || direct_saxpy == nullptr) {
      why = "building the kernels directly failed";
      return;
    }
    if (accel_malloc(0, kSaxpyN * sizeof(float), &x) != ACCEL_SUCCESS ||
        accel_malloc(0, kSaxpyN * sizeof(float), &y) != ACCEL_SUCCESS ||
        accel_memset_async(x, 0, kSaxpyN * sizeof(float), stream) != ACCEL_SUCCESS ||
        accel_memset_async(y, 0, kSaxpyN * sizeof(float), stream) != ACCEL_SUCCESS ||
        accel_stream_synchronize(stream) != ACCEL_SUCCESS) {
      why = std::string("memory: ") + accel_last_error();
      return;
    }
    // PoCL compiles a kernel for its work-group size at its first launch:
    // keep that out of every timing.
    const float alpha = 0.5f;
    const cl_uint n_items = kSaxpyN;
    const size_t one = 1, global = kSaxpyN, local = 64;
    accel_launch_config_t c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.stream = stream;
    c.grid = {1, 1, 1};
    c.block = {1, 1, 1};
    const accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_VALUE, sizeof alpha, &alpha},
                                       {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), x},
                                       {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), y},
                                       {ACCEL_KERNEL_ARG_VALUE, sizeof n_items, &n_items}};
    bool warm = accel_launch_kernel(empty, &c, nullptr, 0) == ACCEL_SUCCESS;
    c.grid = {kSaxpyN / 64, 1, 1};
    c.block = {64, 1, 1};
    warm = warm && accel_launch_kernel(saxpy, &c, args, 4) == ACCEL_SUCCESS &&
           accel_stream_synchronize(stream) == ACCEL_SUCCESS;
    warm = warm &&
           clEnqueueNDRangeKernel(q, direct_empty, 1, nullptr, &one, &one, 0, nullptr, nullptr) ==
               CL_SUCCESS &&
           clSetKernelArg(direct_saxpy, 0, sizeof alpha, &alpha) == CL_SUCCESS &&
           clSetKernelArgSVMPointer(direct_saxpy, 1, x) == CL_SUCCESS &&
           clSetKernelArgSVMPointer(direct_saxpy, 2, y) == CL_SUCCESS &&
           clSetKernelArg(direct_saxpy, 3, sizeof n_items, &n_items) == CL_SUCCESS &&
           clEnqueueNDRangeKernel(q, direct_saxpy, 1, nullptr, &global, &local, 0, nullptr,
                                  nullptr) == CL_SUCCESS &&
           clFinish(q) == CL_SUCCESS;
    if (!warm) {
      why = std::string("warm-up launches failed: ") + accel_last_error();
      return;
    }
    ok = true;
  }
};

Setup& setup() {
  static Setup* s = new Setup();  // kept to exit: PoCL's threads may outlive main
  return *s;
}

bool need(benchmark::State& state) {
  if (setup().ok) return true;
  state.SkipWithError(setup().why.c_str());
  return false;
}

// ---- a private instance of the opencl plugin, for its own share -------------
// The plugin's launch_kernel called straight through its vtable, on a
// private copy of accel-opencl.so (ACCEL_BENCH_OPENCL_PLUGIN; dlopen of the
// same path would return the core's instance): accel_launch_kernel minus
// this is what the core adds, this minus the direct enqueue what the
// backend adds.
accel_host_services_t g_host = accel_test::quiet_host();

struct Private {
  const accel_plugin_api_t* api = nullptr;
  accel_plugin_stream_t stream = nullptr;
  accel_plugin_kernel_t empty = nullptr;
};

const Private& private_plugin() {
  static const Private p = [] {
    Private r;
    const char* src = std::getenv("ACCEL_BENCH_OPENCL_PLUGIN");
    const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
    if (src == nullptr || im == nullptr) return r;
    int32_t n = 0;
    const accel_plugin_api_t* a = accel_test::open_private_copy(src, &g_host, &n);
    accel_plugin_module_t m = nullptr;
    if (a == nullptr || a->module_load == nullptr || n < 1 || a->lazy_init() != ACCEL_SUCCESS ||
        a->stream_create(0, 0, &r.stream) != ACCEL_SUCCESS ||
        a->module_load(0, im, "", nullptr, nullptr, &m) != ACCEL_SUCCESS ||
        a->kernel_create(m, "empty", &r.empty) != ACCEL_SUCCESS)
      return r;
    // Warm: PoCL compiles the kernel at its first launch.
    if (a->launch_kernel(r.empty, {1, 1, 1}, {1, 1, 1}, 0, nullptr, 0, r.stream) != ACCEL_SUCCESS ||
        a->stream_synchronize(r.stream) != ACCEL_SUCCESS)
      return r;
    r.api = a;
    return r;
  }();
  return p;
}

accel_launch_config_t one_item(accel_stream_t s) {
  accel_launch_config_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid = {1, 1, 1};
  c.block = {1, 1, 1};
  c.stream = s;
  return c;
}

// ---- launch overhead: target <= 1.10 against the direct enqueue --------------

void BM_ocl_launch_empty(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  const accel_launch_config_t c = one_item(s.stream);
  int n = 0, failed = 0;
  for (auto _ : state) {
    failed |= accel_launch_kernel(s.empty, &c, nullptr, 0) != ACCEL_SUCCESS;
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      accel_stream_synchronize(s.stream);
      state.ResumeTiming();
    }
  }
  accel_stream_synchronize(s.stream);
  if (failed != 0) state.SkipWithError(accel_last_error());
}
BENCHMARK(BM_ocl_launch_empty)->UseRealTime();

// 1, 2 and 4 threads launching `empty` through accel, each on its own
// stream of device 0, the kernel shared: aggregate launches per second
// against one thread's (run.py: target >= 1.3 at 2 threads on PoCL).
void BM_ocl_launch_empty_threads(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  accel_stream_t mine = nullptr;
  if (accel_stream_create(0, 0, &mine) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  const accel_launch_config_t c = one_item(mine);
  int n = 0, failed = 0;
  for (auto _ : state) {
    failed |= accel_launch_kernel(s.empty, &c, nullptr, 0) != ACCEL_SUCCESS;
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      accel_stream_synchronize(mine);
      state.ResumeTiming();
    }
  }
  accel_stream_synchronize(mine);
  accel_stream_destroy(mine);
  if (failed != 0) state.SkipWithError(accel_last_error());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ocl_launch_empty_threads)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

void BM_ocl_vendor_launch_empty(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  const size_t one = 1;
  int n = 0, failed = 0;
  for (auto _ : state) {
    failed |= clEnqueueNDRangeKernel(s.q, s.direct_empty, 1, nullptr, &one, &one, 0, nullptr,
                                     nullptr) != CL_SUCCESS;
    clFlush(s.q);
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      clFinish(s.q);
      state.ResumeTiming();
    }
  }
  clFinish(s.q);
  if (failed != 0) state.SkipWithError("clEnqueueNDRangeKernel failed");
}
BENCHMARK(BM_ocl_vendor_launch_empty)->UseRealTime();

// The same from 1, 2 and 4 threads on PoCL directly, each with its own
// cl_command_queue and cl_kernel: how far PoCL itself scales, to tell
// accel's share of the threaded rows from the driver's.
void BM_ocl_vendor_launch_empty_threads(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueueWithProperties(s.ctx, s.dev, nullptr, &err);
  cl_kernel k = q != nullptr ? clCreateKernel(s.program, "empty", &err) : nullptr;
  if (q == nullptr || k == nullptr) {
    if (q != nullptr) clReleaseCommandQueue(q);
    state.SkipWithError("clCreateCommandQueueWithProperties / clCreateKernel failed");
    return;
  }
  const size_t one = 1;
  int n = 0, failed = 0;
  for (auto _ : state) {
    failed |= clEnqueueNDRangeKernel(q, k, 1, nullptr, &one, &one, 0, nullptr, nullptr) !=
              CL_SUCCESS;
    clFlush(q);
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      clFinish(q);
      state.ResumeTiming();
    }
  }
  clFinish(q);
  clReleaseKernel(k);
  clReleaseCommandQueue(q);
  if (failed != 0) state.SkipWithError("clEnqueueNDRangeKernel failed");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ocl_vendor_launch_empty_threads)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// The direct enqueue with the bookkeeping every operation of the backend
// does (streams.cpp): ask for the command's event and release the previous
// one. Reported, to tell the backend's own cost from the event's.
void BM_ocl_vendor_launch_empty_event(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  const size_t one = 1;
  int n = 0, failed = 0;
  cl_event last = nullptr;
  for (auto _ : state) {
    cl_event ev = nullptr;
    failed |= clEnqueueNDRangeKernel(s.q, s.direct_empty, 1, nullptr, &one, &one, 0, nullptr,
                                     &ev) != CL_SUCCESS;
    if (last != nullptr) clReleaseEvent(last);
    last = ev;
    clFlush(s.q);
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      clFinish(s.q);
      state.ResumeTiming();
    }
  }
  clFinish(s.q);
  if (last != nullptr) clReleaseEvent(last);
  if (failed != 0) state.SkipWithError("clEnqueueNDRangeKernel failed");
}
BENCHMARK(BM_ocl_vendor_launch_empty_event)->UseRealTime();

void BM_ocl_launch_saxpy(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  accel_launch_config_t c = one_item(s.stream);
  c.grid = {kSaxpyN / 64, 1, 1};
  c.block = {64, 1, 1};
  const float alpha = 0.5f;
  const uint32_t n_items = kSaxpyN;
  const accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_VALUE, sizeof alpha, &alpha},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), s.x},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), s.y},
                                     {ACCEL_KERNEL_ARG_VALUE, sizeof n_items, &n_items}};
  int n = 0, failed = 0;
  for (auto _ : state) {
    failed |= accel_launch_kernel(s.saxpy, &c, args, 4) != ACCEL_SUCCESS;
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      accel_stream_synchronize(s.stream);
      state.ResumeTiming();
    }
  }
  accel_stream_synchronize(s.stream);
  if (failed != 0) state.SkipWithError(accel_last_error());
}
BENCHMARK(BM_ocl_launch_saxpy)->UseRealTime();

void BM_ocl_vendor_launch_saxpy(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  const size_t global = kSaxpyN, local = 64;
  const float alpha = 0.5f;
  const cl_uint n_items = kSaxpyN;
  int n = 0, failed = 0;
  for (auto _ : state) {
    failed |= clSetKernelArg(s.direct_saxpy, 0, sizeof alpha, &alpha);
    failed |= clSetKernelArgSVMPointer(s.direct_saxpy, 1, s.x);
    failed |= clSetKernelArgSVMPointer(s.direct_saxpy, 2, s.y);
    failed |= clSetKernelArg(s.direct_saxpy, 3, sizeof n_items, &n_items);
    failed |= clEnqueueNDRangeKernel(s.q, s.direct_saxpy, 1, nullptr, &global, &local, 0, nullptr,
                                     nullptr);
    clFlush(s.q);
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      clFinish(s.q);
      state.ResumeTiming();
    }
  }
  clFinish(s.q);
  if (failed != 0) state.SkipWithError("clSetKernelArg / clEnqueueNDRangeKernel failed");
}
BENCHMARK(BM_ocl_vendor_launch_saxpy)->UseRealTime();

// The `empty` pair interleaved in one benchmark, for a machine too busy for
// two separate runs to see the same load: each iteration runs kBatch
// launches through accel, kBatch directly and kBatch directly with the
// event bookkeeping (as BM_ocl_vendor_launch_empty_event), in rotating
// order, each batch timed by the wall clock and by the calling thread's CPU
// clock, the queue drained between batches outside the timing. Counters:
// nanoseconds per launch of each side; ratio and cpu_ratio are accel
// against the plain direct enqueue (the target), event_ratio accel against
// the direct enqueue with the event; with ACCEL_BENCH_OPENCL_PLUGIN, a fourth
// side calls the plugin's launch_kernel directly (private_plugin, its own
// stream on the same device): plugin_cpu_ratio is the backend's share.
double now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void BM_ocl_launch_empty_paired(benchmark::State& state) {
  if (!need(state)) return;
  constexpr int kBatch = 128;
  Setup& s = setup();
  const accel_launch_config_t c = one_item(s.stream);
  const size_t one = 1;
  const Private& plug = private_plugin();
  const int sides = plug.api != nullptr ? 4 : 3;
  // accel, direct, direct with event, the plugin's launch_kernel directly
  double wall[4] = {0, 0, 0, 0}, cpu[4] = {0, 0, 0, 0};
  int failed = 0;
  cl_event last = nullptr;
  auto batch = [&](int side) {
    const double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    if (side == 0) {
      for (int i = 0; i < kBatch; ++i)
        failed |= accel_launch_kernel(s.empty, &c, nullptr, 0) != ACCEL_SUCCESS;
    } else if (side == 1) {
      for (int i = 0; i < kBatch; ++i) {
        failed |= clEnqueueNDRangeKernel(s.q, s.direct_empty, 1, nullptr, &one, &one, 0, nullptr,
                                         nullptr) != CL_SUCCESS;
        clFlush(s.q);
      }
    } else if (side == 3) {
      for (int i = 0; i < kBatch; ++i)
        failed |= plug.api->launch_kernel(plug.empty, {1, 1, 1}, {1, 1, 1}, 0, nullptr, 0,
                                          plug.stream) != ACCEL_SUCCESS;
    } else {
      for (int i = 0; i < kBatch; ++i) {
        cl_event ev = nullptr;
        failed |= clEnqueueNDRangeKernel(s.q, s.direct_empty, 1, nullptr, &one, &one, 0, nullptr,
                                         &ev) != CL_SUCCESS;
        if (last != nullptr) clReleaseEvent(last);
        last = ev;
        clFlush(s.q);
      }
    }
    cpu[side] += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    wall[side] += now_ns(CLOCK_MONOTONIC) - w0;
    if (side == 3)
      plug.api->stream_synchronize(plug.stream);
    else
      clFinish(s.q);  // accel's queue: drains the other sides' launches
  };
  int first = 0;
  for (auto _ : state) {
    for (int k = 0; k < sides; ++k) batch((first + k) % sides);
    first = (first + 1) % sides;
  }
  accel_stream_synchronize(s.stream);
  if (last != nullptr) clReleaseEvent(last);
  if (failed != 0) state.SkipWithError("a launch failed");
  const double n = static_cast<double>(state.iterations()) * kBatch;
  state.counters["accel_ns"] = wall[0] / n;
  state.counters["vendor_ns"] = wall[1] / n;
  state.counters["vendor_event_ns"] = wall[2] / n;
  state.counters["ratio"] = wall[0] / wall[1];
  state.counters["event_ratio"] = wall[0] / wall[2];
  state.counters["accel_cpu_ns"] = cpu[0] / n;
  state.counters["vendor_cpu_ns"] = cpu[1] / n;
  state.counters["vendor_event_cpu_ns"] = cpu[2] / n;
  state.counters["cpu_ratio"] = cpu[0] / cpu[1];
  if (sides == 4) {
    state.counters["plugin_ns"] = wall[3] / n;
    state.counters["plugin_cpu_ns"] = cpu[3] / n;
    state.counters["plugin_cpu_ratio"] = cpu[3] / cpu[1];
  }
}
BENCHMARK(BM_ocl_launch_empty_paired);

// ---- module load: target <= 1.10 against the direct build ---------------------

void BM_ocl_module_load(benchmark::State& state) {
  if (!need(state)) return;
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
  int failed = 0;
  for (auto _ : state) {
    accel_module_t m = nullptr;
    failed |= accel_module_load(0, im, 1, nullptr, &m) != ACCEL_SUCCESS;
    if (m != nullptr) accel_module_unload(m);
  }
  if (failed != 0) state.SkipWithError(accel_last_error());
}
BENCHMARK(BM_ocl_module_load)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ocl_vendor_module_load(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  int failed = 0;
  for (auto _ : state) {
    cl_program p = build_direct(s.ctx, s.dev, kOptions);
    failed |= p == nullptr;
    if (p != nullptr) clReleaseProgram(p);
  }
  if (failed != 0) state.SkipWithError("clCreateProgramWithSource / clBuildProgram failed");
}
BENCHMARK(BM_ocl_vendor_module_load)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- one kernel, several threads: a lock over set-args + enqueue vs a pool ---

struct Shared {
  std::mutex mu;
  cl_kernel kernel = nullptr;   // the lock's one shared object
  std::vector<cl_kernel> pool;  // idle objects of the pool
};

Shared& shared() {
  static Shared* sh = [] {
    auto* r = new Shared();
    if (setup().ok) r->kernel = clCreateKernel(setup().program, "saxpy", nullptr);
    return r;
  }();
  return *sh;
}

cl_int set_saxpy(cl_kernel k, const float& alpha, const cl_uint& n) {
  cl_int e = clSetKernelArg(k, 0, sizeof alpha, &alpha);
  e |= clSetKernelArgSVMPointer(k, 1, setup().x);
  e |= clSetKernelArgSVMPointer(k, 2, setup().y);
  e |= clSetKernelArg(k, 3, sizeof n, &n);
  return e;
}

// One launch of saxpy on queue q, the arguments set on a kernel object
// either behind the one lock (kPool false) or taken from the pool.
template <bool kPool>
int launch_shared(Shared& sh, cl_command_queue q) {
  const size_t global = kSaxpyN, local = 64;
  const float alpha = 0.5f;
  const cl_uint n_items = kSaxpyN;
  int failed = 0;
  if (kPool) {
    cl_kernel k = nullptr;
    {
      std::lock_guard<std::mutex> lock(sh.mu);
      if (!sh.pool.empty()) {
        k = sh.pool.back();
        sh.pool.pop_back();
      }
    }
    if (k == nullptr) k = clCreateKernel(setup().program, "saxpy", nullptr);
    failed |= set_saxpy(k, alpha, n_items);
    failed |= clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.pool.push_back(k);
  } else {
    std::lock_guard<std::mutex> lock(sh.mu);
    failed |= set_saxpy(sh.kernel, alpha, n_items);
    failed |=
        clEnqueueNDRangeKernel(q, sh.kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr);
  }
  clFlush(q);
  return failed;
}

template <bool kPool>
void args_loop(benchmark::State& state) {
  if (!need(state)) return;
  Setup& s = setup();
  Shared& sh = shared();
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueueWithProperties(s.ctx, s.dev, nullptr, &err);
  if (q == nullptr || sh.kernel == nullptr) {
    state.SkipWithError("clCreateCommandQueueWithProperties / clCreateKernel failed");
    return;
  }
  int n = 0, failed = 0;
  for (auto _ : state) {
    failed |= launch_shared<kPool>(sh, q);
    if (++n % kSyncEvery == 0) {
      state.PauseTiming();
      clFinish(q);
      state.ResumeTiming();
    }
  }
  clFinish(q);
  clReleaseCommandQueue(q);
  if (failed != 0) state.SkipWithError("clSetKernelArg / clEnqueueNDRangeKernel failed");
  state.SetItemsProcessed(state.iterations());
}

void BM_ocl_args_lock(benchmark::State& state) { args_loop<false>(state); }
BENCHMARK(BM_ocl_args_lock)->Threads(1)->Threads(2)->UseRealTime();

void BM_ocl_args_pool(benchmark::State& state) { args_loop<true>(state); }
BENCHMARK(BM_ocl_args_pool)->Threads(1)->Threads(2)->UseRealTime();

// The two options interleaved, for a busy machine: each iteration runs two
// threads (each with its own queue) doing kBatch launches with the lock,
// then with the pool (order alternating), each phase timed from the
// threads' common start to the last one's end; the queues are drained
// between phases outside the timing. Counters: wall nanoseconds per launch
// of each option over both threads, and pool / lock.
void BM_ocl_args_paired(benchmark::State& state) {
  if (!need(state)) return;
  constexpr int kBatch = 256;
  Setup& s = setup();
  Shared& sh = shared();
  cl_command_queue qs[2] = {};
  for (auto& q : qs) q = clCreateCommandQueueWithProperties(s.ctx, s.dev, nullptr, nullptr);
  if (qs[0] == nullptr || qs[1] == nullptr || sh.kernel == nullptr) {
    state.SkipWithError("clCreateCommandQueueWithProperties / clCreateKernel failed");
    return;
  }
  double wall[2] = {0, 0};  // lock, pool
  std::atomic<int> failed{0};
  auto phase = [&](bool pool) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    auto body = [&](int t) {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      int f = 0;
      for (int i = 0; i < kBatch; ++i)
        f |= pool ? launch_shared<true>(sh, qs[t]) : launch_shared<false>(sh, qs[t]);
      failed.fetch_or(f);
    };
    std::thread a(body, 0), b(body, 1);
    while (ready.load() < 2) {
    }
    const double w0 = now_ns(CLOCK_MONOTONIC);
    go.store(true);
    a.join();
    b.join();
    wall[pool ? 1 : 0] += now_ns(CLOCK_MONOTONIC) - w0;
    clFinish(qs[0]);
    clFinish(qs[1]);
  };
  bool pool_first = false;
  for (auto _ : state) {
    phase(pool_first);
    phase(!pool_first);
    pool_first = !pool_first;
  }
  for (auto& q : qs) clReleaseCommandQueue(q);
  if (failed.load() != 0) state.SkipWithError("clSetKernelArg / clEnqueueNDRangeKernel failed");
  const double n = static_cast<double>(state.iterations()) * 2 * kBatch;
  state.counters["lock_ns"] = wall[0] / n;
  state.counters["pool_ns"] = wall[1] / n;
  state.counters["pool_over_lock"] = wall[1] / wall[0];
}
BENCHMARK(BM_ocl_args_paired)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setenv("ACCEL_BACKEND", "opencl", 0);
  setenv("ACCEL_OPENCL_DEVICE_TYPE", "all", 0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
