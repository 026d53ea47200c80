// Dispatch cost of accel against its floors, measured in the same run.
//
// Floors, named after what they are:
//  - BM_floor_tls_*: a call through a function pointer to a function
//    returning a thread_local, the physical minimum of a per-thread dispatch;
//  - BM_plugin_vtable_*: the same plugin operation called straight through
//    the sim plugin's vtable, on a private copy of the plugin (so the core's
//    instance is untouched);
//  - BM_ocl_vendor_*: the OpenCL calls a program would make itself for the
//    same answer (with ACCEL_BENCH_OPENCL, run with ACCEL_BACKEND=opencl).
// tests/bench/run.py turns the JSON into ratios against the targets it
// holds (docs/performance.md shows the last table).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <cstring>

#include "accel/accel.h"
#include "accel/accel_plugin.h"
#include "direct_plugin.hpp"

#ifdef ACCEL_BENCH_OPENCL
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#endif

namespace {

// ---- floors ----------------------------------------------------------------

thread_local int32_t t_device = 0;

__attribute__((noinline)) int32_t floor_get() { return t_device; }
__attribute__((noinline)) int32_t floor_exchange(int32_t d) {
  int32_t old = t_device;
  t_device = d;
  return old;
}
int32_t (*volatile g_floor_get)() = floor_get;
int32_t (*volatile g_floor_exchange)(int32_t) = floor_exchange;

// ---- a private sim instance for direct vtable calls ------------------------

accel_host_services_t g_host = accel_test::quiet_host();

const accel_plugin_api_t* direct_sim() {
  static const accel_plugin_api_t* api = []() -> const accel_plugin_api_t* {
    int32_t n = 0;
    const accel_plugin_api_t* a =
        accel_test::open_private_copy(std::getenv("ACCEL_BENCH_SIM_PLUGIN"), &g_host, &n);
    if (a == nullptr || n < 1 || (a->lazy_init && a->lazy_init() != ACCEL_SUCCESS))
      return nullptr;
    return a;
  }();
  return api;
}

bool need_accel(benchmark::State& state) {
  if (accel_is_available() && accel_device_count() >= 2) return true;
  state.SkipWithError("needs an accelerator with 2 devices (ACCEL_SIM_DEVICES=2)");
  return false;
}

// ---- per-thread queries: target ratio <= 2.0 against the tls floor -----------

void BM_floor_tls_get(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(g_floor_get());
}
BENCHMARK(BM_floor_tls_get);

void BM_current_device_index(benchmark::State& state) {
  if (!need_accel(state)) return;
  for (auto _ : state) benchmark::DoNotOptimize(accel_current_device_index());
}
BENCHMARK(BM_current_device_index);

void BM_current_stream(benchmark::State& state) {
  if (!need_accel(state)) return;
  accel_stream_t s = nullptr;
  for (auto _ : state) {
    accel_current_stream(-1, &s);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_current_stream);

// The vendor queue of the current stream (ABI 1.1): a handle lookup and one
// plugin call that copies three words; target <= 2x the tls floor.
void BM_stream_native_handle(benchmark::State& state) {
  if (!need_accel(state)) return;
  accel_stream_t s = nullptr;
  accel_current_stream(-1, &s);
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  if (accel_stream_native_handle(s, &h) != ACCEL_SUCCESS) {
    state.SkipWithError("the backend has no native handles");
    return;
  }
  for (auto _ : state) {
    accel_stream_native_handle(s, &h);
    benchmark::DoNotOptimize(h.handle);
  }
}
BENCHMARK(BM_stream_native_handle);

// A guard is an exchange on entry and one on exit.
void BM_floor_tls_guard(benchmark::State& state) {
  for (auto _ : state) {
    int32_t prev = g_floor_exchange(t_device);
    benchmark::DoNotOptimize(g_floor_exchange(prev));
  }
}
BENCHMARK(BM_floor_tls_guard);

void BM_guard_no_switch(benchmark::State& state) {
  if (!need_accel(state)) return;
  int32_t prev = 0, ignored = 0;
  // A guard constructed for the device the code already runs on (torch's
  // DeviceGuard(tensor.device) in the common case): entry and exit only.
  const int32_t here = accel_current_device_index();
  for (auto _ : state) {
    accel_exchange_device(here, &prev);
    accel_exchange_device(prev, &ignored);
    benchmark::DoNotOptimize(ignored);
  }
}
BENCHMARK(BM_guard_no_switch);

void BM_guard_switch(benchmark::State& state) {
  if (!need_accel(state)) return;
  int32_t prev = 0, ignored = 0;
  for (auto _ : state) {
    accel_exchange_device(1, &prev);
    accel_exchange_device(prev, &ignored);
    benchmark::DoNotOptimize(ignored);
  }
}
BENCHMARK(BM_guard_switch);

// ---- operations: target ratio <= 1.10 against the plugin's vtable call -------

void BM_plugin_vtable_stream_query(benchmark::State& state) {
  const accel_plugin_api_t* a = direct_sim();
  accel_plugin_stream_t s = nullptr;
  if (a == nullptr || a->stream_create(0, 0, &s) != ACCEL_SUCCESS) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(a->stream_query(s));
  a->stream_destroy(s);
}
BENCHMARK(BM_plugin_vtable_stream_query);

void BM_stream_query(benchmark::State& state) {
  if (!need_accel(state)) return;
  accel_stream_t s = nullptr;
  accel_stream_create(0, 0, &s);
  for (auto _ : state) benchmark::DoNotOptimize(accel_stream_query(s));
  accel_stream_destroy(s);
}
BENCHMARK(BM_stream_query);

void BM_plugin_vtable_event_record(benchmark::State& state) {
  const accel_plugin_api_t* a = direct_sim();
  accel_plugin_stream_t s = nullptr;
  accel_plugin_event_t e = nullptr;
  if (a == nullptr || a->stream_create(0, 0, &s) != ACCEL_SUCCESS ||
      a->event_create(0, 0, &e) != ACCEL_SUCCESS) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(a->event_record(e, s));
  a->stream_synchronize(s);
  a->event_destroy(e);
  a->stream_destroy(s);
}
BENCHMARK(BM_plugin_vtable_event_record);

void BM_event_record(benchmark::State& state) {
  if (!need_accel(state)) return;
  accel_stream_t s = nullptr;
  accel_event_t e = nullptr;
  accel_stream_create(0, 0, &s);
  accel_event_create(0, 0, &e);
  for (auto _ : state) benchmark::DoNotOptimize(accel_event_record(e, s));
  accel_stream_synchronize(s);
  accel_event_destroy(e);
  accel_stream_destroy(s);
}
BENCHMARK(BM_event_record);

// ---- event_record with the stream's worker parked -------------------------
// A sim stream is a task queue with its own worker thread. Recorded in a
// plain loop, every record wakes the worker, which then competes with the
// benchmark thread for the cores: on a 2-core machine the ratio of two such
// loops measured the scheduler (1.04x to 4.6x between runs of one build).
// Here each iteration is a batch of kRecordBatch records on a stream whose
// worker is blocked inside a host function (a gate) the whole time: the
// records only queue up, nothing runs beside the benchmark thread, and only
// the batch is timed (manual time). Opening the gate and draining the stream
// happen between batches, untimed. Both sides do exactly the same, so the
// ratio is what accel adds to a record. kRecordBatch stays well under sim's
// bound on queued tasks (4096), where enqueue would block.
constexpr int kRecordBatch = 512;

// A host function that tells the benchmark thread it is running, then waits
// until the gate is opened.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool open = false;
  static void hold(void* p) {
    auto* g = static_cast<Gate*>(p);
    std::unique_lock<std::mutex> lock(g->mu);
    g->entered = true;
    g->cv.notify_all();
    g->cv.wait(lock, [&] { return g->open; });
  }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

// Each iteration parks both workers (the private sim instance's stream and
// accel's), then times one batch of kRecordBatch records through each, the
// side that goes first alternating between iterations, so both batches see
// the same load (runs of the two as separate benchmarks still moved by
// 0.1-0.2 in their ratio on a shared machine). Then both gates open and both
// streams drain, untimed. Counters: accel_ns and plugin_vtable_ns per
// record, and their ratio.
void BM_event_record_gated_paired(benchmark::State& state) {
  if (!need_accel(state)) return;
  const accel_plugin_api_t* a = direct_sim();
  accel_plugin_stream_t ds = nullptr;
  accel_plugin_event_t de = nullptr;
  if (a == nullptr || a->launch_host_func == nullptr || a->stream_create(0, 0, &ds) != ACCEL_SUCCESS ||
      a->event_create(0, 0, &de) != ACCEL_SUCCESS) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  accel_stream_t s = nullptr;
  accel_event_t e = nullptr;
  accel_stream_create(0, 0, &s);
  accel_event_create(0, 0, &e);
  double wall[2] = {0, 0};
  int failed = 0, first = 0;
  auto batch = [&](int side) {
    const auto t0 = std::chrono::steady_clock::now();
    if (side == 0) {
      for (int i = 0; i < kRecordBatch; ++i) failed |= accel_event_record(e, s) != ACCEL_SUCCESS;
    } else {
      for (int i = 0; i < kRecordBatch; ++i) failed |= a->event_record(de, ds) != ACCEL_SUCCESS;
    }
    wall[side] += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto _ : state) {
    Gate ga, gd;
    if (accel_launch_host_func(s, Gate::hold, &ga) != ACCEL_SUCCESS ||
        a->launch_host_func(ds, Gate::hold, &gd) != ACCEL_SUCCESS) {
      state.SkipWithError("launch_host_func failed");
      break;
    }
    ga.wait_entered();
    gd.wait_entered();
    batch(first);
    batch(first ^ 1);
    first ^= 1;
    ga.release();
    gd.release();
    accel_stream_synchronize(s);
    a->stream_synchronize(ds);
  }
  if (failed != 0) state.SkipWithError("a record failed");
  const double n = static_cast<double>(state.iterations()) * kRecordBatch;
  state.counters["accel_ns"] = wall[0] / n;
  state.counters["plugin_vtable_ns"] = wall[1] / n;
  state.counters["ratio"] = wall[0] / wall[1];
  state.counters["batch"] = kRecordBatch;
  accel_event_destroy(e);
  accel_stream_destroy(s);
  a->event_destroy(de);
  a->stream_destroy(ds);
}
BENCHMARK(BM_event_record_gated_paired);

void BM_plugin_vtable_event_query(benchmark::State& state) {
  const accel_plugin_api_t* a = direct_sim();
  accel_plugin_stream_t s = nullptr;
  accel_plugin_event_t e = nullptr;
  if (a == nullptr || a->stream_create(0, 0, &s) != ACCEL_SUCCESS ||
      a->event_create(0, 0, &e) != ACCEL_SUCCESS) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  a->event_record(e, s);
  a->stream_synchronize(s);
  for (auto _ : state) benchmark::DoNotOptimize(a->event_query(e));
  a->event_destroy(e);
  a->stream_destroy(s);
}
BENCHMARK(BM_plugin_vtable_event_query);

// accel_memset_async with the stream sanitizer off (its hook is one relaxed
// load) against sim's memset_async through the vtable. 4 bytes, so the
// enqueue dominates; the stream is drained every kMemsetBatch calls, outside
// the timing, so the queue stays short on both sides.
constexpr int kMemsetBatch = 256;

void BM_plugin_vtable_memset_async(benchmark::State& state) {
  const accel_plugin_api_t* a = direct_sim();
  accel_plugin_stream_t s = nullptr;
  void* p = nullptr;
  if (a == nullptr || a->stream_create(0, 0, &s) != ACCEL_SUCCESS ||
      a->mem_alloc(0, 4, &p) != ACCEL_SUCCESS) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  int n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(a->memset_async(p, 0, 4, s));
    if (++n % kMemsetBatch == 0) {
      state.PauseTiming();
      a->stream_synchronize(s);
      state.ResumeTiming();
    }
  }
  a->stream_synchronize(s);
  a->mem_free(0, p);
  a->stream_destroy(s);
}
BENCHMARK(BM_plugin_vtable_memset_async);

void BM_memset_async(benchmark::State& state) {
  if (!need_accel(state)) return;
  accel_stream_t s = nullptr;
  void* p = nullptr;
  accel_stream_create(0, 0, &s);
  accel_malloc_async(4, s, &p);
  int n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(accel_memset_async(p, 0, 4, s));
    if (++n % kMemsetBatch == 0) {
      state.PauseTiming();
      accel_stream_synchronize(s);
      state.ResumeTiming();
    }
  }
  accel_stream_synchronize(s);
  accel_free_async(p, s);
  accel_stream_destroy(s);
}
BENCHMARK(BM_memset_async);

void BM_event_query(benchmark::State& state) {
  if (!need_accel(state)) return;
  accel_stream_t s = nullptr;
  accel_event_t e = nullptr;
  accel_stream_create(0, 0, &s);
  accel_event_create(0, 0, &e);
  accel_event_record(e, s);
  accel_stream_synchronize(s);
  for (auto _ : state) benchmark::DoNotOptimize(accel_event_query(e));
  accel_event_destroy(e);
  accel_stream_destroy(s);
}
BENCHMARK(BM_event_query);

// ---- the vendor call directly: PoCL ------------------------------------------
// Run with ACCEL_BACKEND=opencl (run.py's second pass): BM_event_record then
// goes through accel's opencl backend, and BM_ocl_vendor_* are what a
// program calling OpenCL itself would do for the same answer, on its own
// context and queue on the same device (platform 0, device 0 of any type, as
// the backend enumerates them with ACCEL_OPENCL_DEVICE_TYPE=all). OpenCL has
// no "is the queue idle" call: the status of the last enqueued command is
// how one asks.
//
// The queries come in two cases, because the backend answers them two ways
// (backends/opencl/streams.cpp, events.cpp):
//  - idle stream / completed record: once a query has seen the latest
//    command complete, the backend answers from that cached flag and calls
//    no OpenCL; a program calling OpenCL still asks clGetEventInfo each time
//    (BM_ocl_stream_query_idle, BM_ocl_event_query_complete against
//    BM_ocl_vendor_*_idle / _complete);
//  - queued work that has not run: the backend must ask OpenCL for the
//    latest command's status every time, as the program does for its own
//    pending command (BM_ocl_*_pending against BM_ocl_vendor_*_pending).
#ifdef ACCEL_BENCH_OPENCL
struct Ocl {
  cl_context ctx = nullptr;
  cl_command_queue q = nullptr;
  bool ok = false;
};

const Ocl& ocl() {
  static const Ocl o = [] {
    Ocl r;
    cl_platform_id p = nullptr;
    cl_device_id d = nullptr;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &p, &n) != CL_SUCCESS || n == 0) return r;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, &n) != CL_SUCCESS || n == 0) return r;
    cl_int err = CL_SUCCESS;
    r.ctx = clCreateContext(nullptr, 1, &d, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) return r;
    // Profiling on, as on every queue of accel's backend (timing events).
    const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    r.q = clCreateCommandQueueWithProperties(r.ctx, d, props, &err);
    r.ok = err == CL_SUCCESS;
    return r;
  }();
  return o;
}

bool need_ocl(benchmark::State& state) {
  if (ocl().ok) return true;
  state.SkipWithError("no OpenCL device (PoCL with POCL_DEVICES=pthread)");
  return false;
}

cl_int marker_status(cl_event e) {
  cl_int status = CL_QUEUED;
  clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  return status;
}

// accel over its opencl backend with at least `devices` devices (run.py's
// second pass); skips otherwise.
bool need_accel_opencl(benchmark::State& state, int32_t devices) {
  if (accel_is_available() && std::strcmp(accel_current_accelerator(), "opencl") == 0 &&
      accel_device_count() >= devices)
    return true;
  state.SkipWithError("needs accel over opencl (ACCEL_BACKEND=opencl, PoCL's two CPU devices)");
  return false;
}

cl_command_queue native_queue(accel_stream_t s) {
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  if (accel_stream_native_handle(s, &h) != ACCEL_SUCCESS || h.type != ACCEL_NATIVE_OPENCL)
    return nullptr;
  return static_cast<cl_command_queue>(h.handle);
}

// The pending cases hold work back with a user event, so they run on the
// first of accel's devices where a command may wait on one: PoCL's `basic`
// CPU driver (`cpu-minimal` from PoCL 5), device 0 with POCL_DEVICES="pthread
// basic", hangs in clSetUserEventStatus then (backends/opencl/devices.cpp
// passes it over for the same reason). The program's side gets its own
// context and profiling queue on that device, as ocl() on device 0.
struct GateDevice {
  int32_t index = -1;  // accel's device index
  cl_context ctx = nullptr;
  cl_command_queue q = nullptr;
};

const GateDevice& gate_device() {
  static const GateDevice g = [] {
    GateDevice r;
    for (int32_t i = 0; i < accel_device_count(); ++i) {
      accel_native_handle_t h;
      std::memset(&h, 0, sizeof h);
      h.struct_size = sizeof h;
      char name[256] = {};
      if (accel_device_native_handle(i, &h) != ACCEL_SUCCESS || h.type != ACCEL_NATIVE_OPENCL ||
          clGetDeviceInfo(static_cast<cl_device_id>(h.handle), CL_DEVICE_NAME, sizeof name - 1,
                          name, nullptr) != CL_SUCCESS)
        continue;
      if (std::strncmp(name, "basic", 5) == 0 || std::strncmp(name, "cpu-minimal", 11) == 0)
        continue;
      cl_device_id d = static_cast<cl_device_id>(h.handle);
      cl_int err = CL_SUCCESS;
      r.ctx = clCreateContext(nullptr, 1, &d, nullptr, nullptr, &err);
      if (err != CL_SUCCESS) return r;
      const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
      r.q = clCreateCommandQueueWithProperties(r.ctx, d, props, &err);
      if (err == CL_SUCCESS) r.index = i;
      return r;
    }
    return r;
  }();
  return g;
}

bool need_gate_device(benchmark::State& state) {
  if (!need_accel_opencl(state, 1)) return false;
  if (gate_device().index >= 0) return true;
  state.SkipWithError("no device where a command may wait on a user event (not PoCL's basic)");
  return false;
}

// The program's own pending command: a marker on its queue waiting on a user
// event that is completed only afterwards.
struct VendorPending {
  cl_event user = nullptr;
  cl_event marker = nullptr;
  bool ok = false;
  VendorPending() {
    const GateDevice& g = gate_device();
    cl_int err = CL_SUCCESS;
    user = clCreateUserEvent(g.ctx, &err);
    ok = user != nullptr && err == CL_SUCCESS &&
         clEnqueueMarkerWithWaitList(g.q, 1, &user, &marker) == CL_SUCCESS &&
         clFlush(g.q) == CL_SUCCESS;
  }
  ~VendorPending() {
    if (user != nullptr) {
      clSetUserEventStatus(user, CL_COMPLETE);
      clReleaseEvent(user);
    }
    clFinish(gate_device().q);
    if (marker != nullptr) clReleaseEvent(marker);
  }
};

// accel's stream `s` on the gate device with queued work OpenCL holds back: `s`
// waits (accel_stream_wait_event) on an event recorded on a second stream
// behind a marker this program enqueued on that stream's queue
// (accel_stream_native_handle) waiting on a user event, and `e` is recorded
// on `s` after the wait. Nothing on `s` runs until the user event is
// completed (in the destructor), so every query of `s` or `e` has to ask
// OpenCL for the status of its latest command. `s`'s own queue is never
// handed out (a query of an exported queue probes with a marker instead).
struct AccelPending {
  accel_stream_t s = nullptr, other = nullptr;
  accel_event_t held = nullptr, e = nullptr;
  cl_event user = nullptr;
  bool ok = false;
  AccelPending() {
    cl_command_queue q = nullptr;
    cl_context ctx = nullptr;
    const int32_t d = gate_device().index;
    ok = accel_stream_create(d, 0, &s) == ACCEL_SUCCESS &&
         accel_stream_create(d, 0, &other) == ACCEL_SUCCESS &&
         accel_event_create(d, 0, &held) == ACCEL_SUCCESS &&
         accel_event_create(d, 0, &e) == ACCEL_SUCCESS && (q = native_queue(other)) != nullptr &&
         clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr) == CL_SUCCESS;
    if (!ok) return;
    cl_int err = CL_SUCCESS;
    user = clCreateUserEvent(ctx, &err);
    cl_event gate = nullptr;
    ok = user != nullptr && err == CL_SUCCESS &&
         clEnqueueMarkerWithWaitList(q, 1, &user, &gate) == CL_SUCCESS && clFlush(q) == CL_SUCCESS;
    if (gate != nullptr) clReleaseEvent(gate);
    ok = ok && accel_event_record(held, other) == ACCEL_SUCCESS &&
         accel_stream_wait_event(s, held) == ACCEL_SUCCESS &&
         accel_event_record(e, s) == ACCEL_SUCCESS;
  }
  ~AccelPending() {
    if (user != nullptr) {
      clSetUserEventStatus(user, CL_COMPLETE);
      clReleaseEvent(user);
    }
    for (accel_stream_t x : {s, other})
      if (x != nullptr) accel_stream_synchronize(x);
    for (accel_event_t x : {held, e})
      if (x != nullptr) accel_event_destroy(x);
    for (accel_stream_t x : {s, other})
      if (x != nullptr) accel_stream_destroy(x);
  }
};

// Idle: accel's stream has run a record and a query has seen it complete.
void BM_ocl_stream_query_idle(benchmark::State& state) {
  if (!need_accel_opencl(state, 1)) return;
  accel_stream_t s = nullptr;
  accel_event_t e = nullptr;
  if (accel_stream_create(0, 0, &s) != ACCEL_SUCCESS ||
      accel_event_create(0, 0, &e) != ACCEL_SUCCESS || accel_event_record(e, s) != ACCEL_SUCCESS ||
      accel_stream_synchronize(s) != ACCEL_SUCCESS || accel_stream_query(s) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(accel_stream_query(s));
  accel_event_destroy(e);
  accel_stream_destroy(s);
}
BENCHMARK(BM_ocl_stream_query_idle);

void BM_ocl_vendor_stream_query_idle(benchmark::State& state) {
  if (!need_ocl(state)) return;
  cl_event last = nullptr;
  clEnqueueMarkerWithWaitList(ocl().q, 0, nullptr, &last);
  clFinish(ocl().q);
  for (auto _ : state) benchmark::DoNotOptimize(marker_status(last));
  clReleaseEvent(last);
}
BENCHMARK(BM_ocl_vendor_stream_query_idle);

void BM_ocl_stream_query_pending(benchmark::State& state) {
  if (!need_gate_device(state)) return;
  AccelPending p;
  if (!p.ok || accel_stream_query(p.s) != ACCEL_ERROR_NOT_READY) {
    state.SkipWithError("no stream with pending work (accel_stream_query is not NOT_READY)");
    return;
  }
  int wrong = 0;
  for (auto _ : state) wrong |= accel_stream_query(p.s) != ACCEL_ERROR_NOT_READY;
  if (wrong != 0) state.SkipWithError("the pending stream's query answered other than NOT_READY");
}
BENCHMARK(BM_ocl_stream_query_pending);

void BM_ocl_vendor_stream_query_pending(benchmark::State& state) {
  if (!need_gate_device(state)) return;
  VendorPending p;
  if (!p.ok || marker_status(p.marker) == CL_COMPLETE) {
    state.SkipWithError("no pending marker (clCreateUserEvent / clEnqueueMarkerWithWaitList)");
    return;
  }
  int wrong = 0;
  for (auto _ : state) wrong |= marker_status(p.marker) == CL_COMPLETE;
  if (wrong != 0) state.SkipWithError("the pending marker completed");
}
BENCHMARK(BM_ocl_vendor_stream_query_pending);

void BM_ocl_vendor_event_record(benchmark::State& state) {
  if (!need_ocl(state)) return;
  cl_event ev = nullptr;
  for (auto _ : state) {
    cl_event next = nullptr;
    clEnqueueMarkerWithWaitList(ocl().q, 0, nullptr, &next);
    // Only clFlush (or a blocking call) guarantees the marker is ever issued
    // to the device; a record that completes on its own, as CUDA's does,
    // needs it, and accel's backend flushes after every enqueue for that.
    clFlush(ocl().q);
    if (ev != nullptr) clReleaseEvent(ev);  // re-recording replaces the previous record
    ev = next;
  }
  clFinish(ocl().q);
  if (ev != nullptr) clReleaseEvent(ev);
}
BENCHMARK(BM_ocl_vendor_event_record);

// Complete: recorded, waited for, and queried once (the backend caches it).
void BM_ocl_event_query_complete(benchmark::State& state) {
  if (!need_accel_opencl(state, 1)) return;
  accel_stream_t s = nullptr;
  accel_event_t e = nullptr;
  if (accel_stream_create(0, 0, &s) != ACCEL_SUCCESS ||
      accel_event_create(0, 0, &e) != ACCEL_SUCCESS || accel_event_record(e, s) != ACCEL_SUCCESS ||
      accel_stream_synchronize(s) != ACCEL_SUCCESS || accel_event_query(e) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(accel_event_query(e));
  accel_event_destroy(e);
  accel_stream_destroy(s);
}
BENCHMARK(BM_ocl_event_query_complete);

void BM_ocl_vendor_event_query_complete(benchmark::State& state) {
  if (!need_ocl(state)) return;
  cl_event ev = nullptr;
  clEnqueueMarkerWithWaitList(ocl().q, 0, nullptr, &ev);
  clFinish(ocl().q);
  for (auto _ : state) benchmark::DoNotOptimize(marker_status(ev));
  clReleaseEvent(ev);
}
BENCHMARK(BM_ocl_vendor_event_query_complete);

void BM_ocl_event_query_pending(benchmark::State& state) {
  if (!need_gate_device(state)) return;
  AccelPending p;
  if (!p.ok || accel_event_query(p.e) != ACCEL_ERROR_NOT_READY) {
    state.SkipWithError("no pending record (accel_event_query is not NOT_READY)");
    return;
  }
  int wrong = 0;
  for (auto _ : state) wrong |= accel_event_query(p.e) != ACCEL_ERROR_NOT_READY;
  if (wrong != 0) state.SkipWithError("the pending record's query answered other than NOT_READY");
}
BENCHMARK(BM_ocl_event_query_pending);

void BM_ocl_vendor_event_query_pending(benchmark::State& state) {
  if (!need_gate_device(state)) return;
  VendorPending p;
  if (!p.ok || marker_status(p.marker) == CL_COMPLETE) {
    state.SkipWithError("no pending marker (clCreateUserEvent / clEnqueueMarkerWithWaitList)");
    return;
  }
  int wrong = 0;
  for (auto _ : state) wrong |= marker_status(p.marker) == CL_COMPLETE;
  if (wrong != 0) state.SkipWithError("the pending marker completed");
}
BENCHMARK(BM_ocl_vendor_event_query_pending);

// ---- copies over accel's opencl backend against OpenCL on the same queues ----
// Bandwidth-bound: 4 MiB per iteration, waited for each time (synchronize /
// clFinish), real time (PoCL's threads do the work). The floors enqueue
// (BM_ocl_vendor_*) straight on the cl_command_queue behind accel's stream
// (accel_stream_native_handle), with the same memory, so the ratio is what
// accel adds to a copy.
constexpr size_t kCopyBytes = size_t{4} << 20;

// A stream and device buffer on device 0 and pinned host memory
// (accel_host_malloc), for both sides of the pinned H2D pair.
struct PinnedCopy {
  accel_stream_t s = nullptr;
  void* host = nullptr;
  void* dev = nullptr;
  cl_command_queue q = nullptr;
  bool ok = false;
  PinnedCopy() {
    ok = accel_stream_create(0, 0, &s) == ACCEL_SUCCESS &&
         accel_host_malloc(kCopyBytes, 0, &host) == ACCEL_SUCCESS &&
         accel_malloc(0, kCopyBytes, &dev) == ACCEL_SUCCESS && (q = native_queue(s)) != nullptr;
    if (host != nullptr) std::memset(host, 0x5A, kCopyBytes);
  }
  ~PinnedCopy() {
    if (s != nullptr) accel_stream_synchronize(s);
    if (dev != nullptr) accel_free(dev);
    if (host != nullptr) accel_host_free(host);
    if (s != nullptr) accel_stream_destroy(s);
  }
};

void BM_ocl_pinned_h2d(benchmark::State& state) {
  if (!need_accel_opencl(state, 1)) return;
  PinnedCopy c;
  if (!c.ok) {
    state.SkipWithError("accel_host_malloc / accel_malloc / native handle failed");
    return;
  }
  for (auto _ : state) {
    accel_memcpy_async(c.dev, c.host, kCopyBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, c.s);
    accel_stream_synchronize(c.s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kCopyBytes));
}
BENCHMARK(BM_ocl_pinned_h2d)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ocl_vendor_pinned_h2d(benchmark::State& state) {
  if (!need_accel_opencl(state, 1)) return;
  PinnedCopy c;
  if (!c.ok) {
    state.SkipWithError("accel_host_malloc / accel_malloc / native handle failed");
    return;
  }
  for (auto _ : state) {
    clEnqueueSVMMemcpy(c.q, CL_FALSE, c.dev, c.host, kCopyBytes, 0, nullptr, nullptr);
    clFinish(c.q);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kCopyBytes));
}
BENCHMARK(BM_ocl_vendor_pinned_h2d)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Device 0 -> device 1: accel_memcpy_peer_async (staged by the backend: each
// device has its own context) against the same staging done by hand with a
// host buffer, on the queues of accel's streams of the two devices.
struct PeerCopy {
  accel_stream_t s0 = nullptr, s1 = nullptr;
  void* src = nullptr;
  void* dst = nullptr;
  cl_command_queue q0 = nullptr, q1 = nullptr;
  std::vector<unsigned char> bounce = std::vector<unsigned char>(kCopyBytes);
  bool ok = false;
  PeerCopy() {
    ok = accel_stream_create(0, 0, &s0) == ACCEL_SUCCESS &&
         accel_stream_create(1, 0, &s1) == ACCEL_SUCCESS &&
         accel_malloc(0, kCopyBytes, &src) == ACCEL_SUCCESS &&
         accel_malloc(1, kCopyBytes, &dst) == ACCEL_SUCCESS &&
         accel_memset_async(src, 0x33, kCopyBytes, s0) == ACCEL_SUCCESS &&
         accel_stream_synchronize(s0) == ACCEL_SUCCESS && (q0 = native_queue(s0)) != nullptr &&
         (q1 = native_queue(s1)) != nullptr;
  }
  ~PeerCopy() {
    if (s0 != nullptr) accel_stream_synchronize(s0);
    if (s1 != nullptr) accel_stream_synchronize(s1);
    if (src != nullptr) accel_free(src);
    if (dst != nullptr) accel_free(dst);
    if (s0 != nullptr) accel_stream_destroy(s0);
    if (s1 != nullptr) accel_stream_destroy(s1);
  }
};

void BM_ocl_peer_copy(benchmark::State& state) {
  if (!need_accel_opencl(state, 2)) return;
  PeerCopy c;
  if (!c.ok) {
    state.SkipWithError("accel streams / accel_malloc on two devices failed");
    return;
  }
  for (auto _ : state) {
    accel_memcpy_peer_async(c.dst, 1, c.src, 0, kCopyBytes, c.s0);
    accel_stream_synchronize(c.s0);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kCopyBytes));
}
BENCHMARK(BM_ocl_peer_copy)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ocl_vendor_peer_copy(benchmark::State& state) {
  if (!need_accel_opencl(state, 2)) return;
  PeerCopy c;
  if (!c.ok) {
    state.SkipWithError("accel streams / accel_malloc on two devices failed");
    return;
  }
  for (auto _ : state) {
    clEnqueueSVMMemcpy(c.q0, CL_TRUE, c.bounce.data(), c.src, kCopyBytes, 0, nullptr, nullptr);
    clEnqueueSVMMemcpy(c.q1, CL_TRUE, c.dst, c.bounce.data(), kCopyBytes, 0, nullptr, nullptr);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kCopyBytes));
}
BENCHMARK(BM_ocl_vendor_peer_copy)->UseRealTime()->Unit(benchmark::kMicrosecond);

// accel_event_record against clEnqueueMarkerWithWaitList + clFlush (+ the
// release of the previous marker, as re-recording does) on the very
// cl_command_queue behind accel's stream, in alternating batches within one
// iteration, so both sides see the same load (BM_event_record and
// BM_ocl_vendor_event_record run seconds apart, and on a shared machine
// their ratio moved by 0.3 between runs). The side that goes first
// alternates; the queue is drained after each batch, untimed. Counters:
// accel_ns and vendor_ns per record (wall time) and their ratio.
void BM_ocl_event_record_paired(benchmark::State& state) {
  if (!need_accel_opencl(state, 1)) return;
  constexpr int kBatch = 64;
  accel_stream_t s = nullptr;
  accel_event_t e = nullptr;
  cl_command_queue q = nullptr;
  if (accel_stream_create(0, 0, &s) != ACCEL_SUCCESS || accel_event_create(0, 0, &e) != ACCEL_SUCCESS ||
      (q = native_queue(s)) == nullptr) {
    state.SkipWithError("accel stream / event on device 0 failed");
    return;
  }
  double wall[2] = {0, 0};
  int failed = 0;
  cl_event last = nullptr;
  auto batch = [&](int side) {
    const auto t0 = std::chrono::steady_clock::now();
    if (side == 0) {
      for (int i = 0; i < kBatch; ++i) failed |= accel_event_record(e, s) != ACCEL_SUCCESS;
    } else {
      for (int i = 0; i < kBatch; ++i) {
        cl_event next = nullptr;
        failed |= clEnqueueMarkerWithWaitList(q, 0, nullptr, &next) != CL_SUCCESS;
        clFlush(q);
        if (last != nullptr) clReleaseEvent(last);
        last = next;
      }
    }
    wall[side] += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    clFinish(q);
  };
  int first = 0;
  for (auto _ : state) {
    batch(first);
    batch(first ^ 1);
    first ^= 1;
  }
  if (last != nullptr) clReleaseEvent(last);
  accel_stream_synchronize(s);
  accel_event_destroy(e);
  accel_stream_destroy(s);
  if (failed != 0) state.SkipWithError("a record failed");
  const double n = static_cast<double>(state.iterations()) * kBatch;
  state.counters["accel_ns"] = wall[0] / n;
  state.counters["vendor_ns"] = wall[1] / n;
  state.counters["ratio"] = wall[0] / wall[1];
}
BENCHMARK(BM_ocl_event_record_paired);
#endif

// ---- scaling: two threads must get >= 1.8x one thread's throughput ---------

void BM_get_set_device(benchmark::State& state) {
  if (!need_accel(state)) return;
  int32_t i = 0;
  for (auto _ : state) {
    accel_set_device_index(i);
    benchmark::DoNotOptimize(accel_current_device_index());
    i ^= 1;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_get_set_device)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setenv("ACCEL_SIM_DEVICES", "2", 0);
  setenv("ACCEL_BACKEND", "sim", 0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
