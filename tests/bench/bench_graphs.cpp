// Graphs on whatever backend is current (ACCEL_BACKEND; run.py runs it on
// sim, on opencl over PoCL's command buffers and on opencl with
// ACCEL_GRAPHS=recorder): what a replay saves against issuing the same work.
//  - BM_launch_64: 64 accel_launch_kernel calls of the kernel `empty` on one
//    stream, against BM_replay_64: one accel_graph_replay of a graph that
//    captured those 64 launches on the same stream. Both wait for the stream
//    every kSyncEvery iterations with the timer paused, so neither measures
//    the queue filling up; the targets (docs/performance.md) are on the CPU
//    time of the issuing thread (the device, or sim's worker, runs the
//    kernels on other threads): <= 0.9 on the core's recorder, <= 0.7 on
//    PoCL's command buffers.
//  - BM_launch_64_sync / BM_replay_64_sync: the same with a stream
//    synchronize in every iteration, timed: what a program that waits for
//    each step sees (wall time), reported.
//  - BM_capture_64: accel_stream_begin_capture + the 64 launches +
//    accel_stream_end_capture + accel_graph_destroy, against BM_launch_64:
//    what capturing costs per recorded operation (reported; the begin, end
//    and destroy are spread over the 64).
// With ACCEL_BENCH_OPENCL, on accel's opencl backend: the same comparison
// made on PoCL directly, without accel, on the queue behind accel's stream
// (BM_ocl_vendor_enqueue_64: 64 clEnqueueNDRangeKernel + clFlush;
// BM_ocl_vendor_command_buffer_64: one clEnqueueCommandBufferKHR of a
// command buffer of those 64 kernels + clFlush), so that whether command
// buffers beat re-issuing is a property of the OpenCL implementation
// measured apart from accel (docs/performance.md, "Graphs").
#include <cstdio>
#include <cstdlib>
#include <string>

#include <benchmark/benchmark.h>

#include "accel/accel.h"
#include "accel_kernels.h"

#ifdef ACCEL_BENCH_OPENCL
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#endif

namespace {

constexpr int kOps = 64;       // launches per graph
constexpr int kSyncEvery = 4;  // iterations between untimed waits (256 launches)

// The kernel `empty` (from whichever image the device takes), a stream of
// device 0 and, after capture(), a graph of kOps launches of it.
struct Setup {
  accel_module_t module = nullptr;
  accel_kernel_t kernel = nullptr;
  accel_stream_t stream = nullptr;
  accel_graph_t graph = nullptr;
  accel_launch_config_t cfg{};
  std::string why;

  Setup() {
    accel_module_image_t images[16];
    const size_t n = accel_kernels_images(images, 16);
    if (!accel_is_available() || accel_stream_create(0, 0, &stream) != ACCEL_SUCCESS ||
        accel_module_load(0, images, n, nullptr, &module) != ACCEL_SUCCESS ||
        accel_module_get_kernel(module, "empty", &kernel) != ACCEL_SUCCESS) {
      why = std::string("setup: ") + accel_last_error();
      return;
    }
    cfg.struct_size = sizeof cfg;
    cfg.grid = accel_dim3_t{1, 1, 1};
    cfg.block = accel_dim3_t{1, 1, 1};
    cfg.stream = stream;
    // The first launch compiles the kernel for its work-group size on PoCL:
    // keep that out of every timing.
    if (launches() != ACCEL_SUCCESS || accel_stream_synchronize(stream) != ACCEL_SUCCESS)
      why = std::string("warm-up: ") + accel_last_error();
  }
  ~Setup() {
    if (stream != nullptr) accel_stream_synchronize(stream);
    if (graph != nullptr) accel_graph_destroy(graph);
    if (stream != nullptr) accel_stream_destroy(stream);
    if (module != nullptr) accel_module_unload(module);
  }
  accel_status_t launches() {
    for (int i = 0; i < kOps; ++i) {
      const accel_status_t s = accel_launch_kernel(kernel, &cfg, nullptr, 0);
      if (s != ACCEL_SUCCESS) return s;
    }
    return ACCEL_SUCCESS;
  }
  // Captures kOps launches into *g (instantiated, so the first replay does
  // no more than the others).
  accel_status_t capture(accel_graph_t* g) {
    accel_status_t s = accel_stream_begin_capture(stream, ACCEL_CAPTURE_MODE_GLOBAL, 0);
    if (s != ACCEL_SUCCESS) return s;
    const accel_status_t launched = launches();
    s = accel_stream_end_capture(stream, g);
    return launched != ACCEL_SUCCESS ? launched : s;
  }
  bool ready(benchmark::State& state) {
    if (why.empty()) return true;
    state.SkipWithError(why.c_str());
    return false;
  }
};

// Runs `step` (true on success) once per iteration and `wait` untimed
// every kSyncEvery steps and at the end; a failed step skips the benchmark
// with the text `why()` gives.
template <typename Step, typename Wait, typename Why>
void timed_loop(benchmark::State& state, Step step, Wait wait, Why why) {
  int since = 0;
  for (auto _ : state) {
    if (!step()) {
      state.SkipWithError(why());
      break;
    }
    if (++since == kSyncEvery) {
      state.PauseTiming();
      wait();
      since = 0;
      state.ResumeTiming();
    }
  }
  wait();
  state.counters["ops"] = kOps;
}

// Through accel: with `sync_each`, a timed stream synchronize follows
// every step.
template <typename Step>
void loop(benchmark::State& state, Setup& s, bool sync_each, Step step) {
  timed_loop(
      state,
      [&] {
        return step() == ACCEL_SUCCESS &&
               (!sync_each || accel_stream_synchronize(s.stream) == ACCEL_SUCCESS);
      },
      [&] { accel_stream_synchronize(s.stream); }, [] { return accel_last_error(); });
}

void launch_64(benchmark::State& state, bool sync_each) {
  Setup s;
  if (!s.ready(state)) return;
  loop(state, s, sync_each, [&] { return s.launches(); });
}

void replay_64(benchmark::State& state, bool sync_each) {
  Setup s;
  if (!s.ready(state)) return;
  if (s.capture(&s.graph) != ACCEL_SUCCESS || accel_graph_instantiate(s.graph) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  loop(state, s, sync_each, [&] { return accel_graph_replay(s.graph, s.stream); });
}

void BM_launch_64(benchmark::State& state) { launch_64(state, false); }
void BM_replay_64(benchmark::State& state) { replay_64(state, false); }
void BM_launch_64_sync(benchmark::State& state) { launch_64(state, true); }
void BM_replay_64_sync(benchmark::State& state) { replay_64(state, true); }
BENCHMARK(BM_launch_64);
BENCHMARK(BM_replay_64);
BENCHMARK(BM_launch_64_sync);
BENCHMARK(BM_replay_64_sync);

void BM_capture_64(benchmark::State& state) {
  Setup s;
  if (!s.ready(state)) return;
  for (auto _ : state) {
    accel_graph_t g = nullptr;
    if (s.capture(&g) != ACCEL_SUCCESS || accel_graph_destroy(g) != ACCEL_SUCCESS) {
      state.SkipWithError(accel_last_error());
      break;
    }
  }
  state.counters["ops"] = kOps;
}
BENCHMARK(BM_capture_64);

#ifdef ACCEL_BENCH_OPENCL
// ---- the same on PoCL directly ------------------------------------------------

// The queue behind accel's stream, the kernel `empty` built from the same
// OpenCL C in accel's context, and cl_khr_command_buffer's entry points.
struct Vendor {
  Setup s;
  cl_command_queue q = nullptr;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  clCreateCommandBufferKHR_fn create = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clCommandNDRangeKernelKHR_fn ndrange = nullptr;
  std::string why;

  Vendor() {
    const char* b = accel_current_accelerator();
    if (!s.why.empty() || b == nullptr || std::string(b) != "opencl") {
      why = s.why.empty() ? "needs accel over opencl (ACCEL_BACKEND=opencl)" : s.why;
      return;
    }
    accel_native_handle_t h{};
    h.struct_size = sizeof h;
    accel_native_handle_t d{};
    d.struct_size = sizeof d;
    if (accel_stream_native_handle(s.stream, &h) != ACCEL_SUCCESS ||
        accel_device_native_handle(0, &d) != ACCEL_SUCCESS) {
      why = accel_last_error();
      return;
    }
    q = static_cast<cl_command_queue>(h.handle);
    auto dev = static_cast<cl_device_id>(d.handle);
    const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
    const char* text = im ? static_cast<const char*>(im->data) : nullptr;
    size_t size = im ? im->size : 0;
    cl_int err = CL_SUCCESS;
    program = text ? clCreateProgramWithSource(static_cast<cl_context>(d.context), 1, &text, &size,
                                               &err)
                   : nullptr;
    if (program == nullptr || clBuildProgram(program, 1, &dev, nullptr, nullptr, nullptr) != CL_SUCCESS ||
        (kernel = clCreateKernel(program, "empty", &err)) == nullptr) {
      why = "building `empty` directly failed";
      return;
    }
    cl_platform_id platform = nullptr;
    clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
    auto get = [&](const char* name) { return clGetExtensionFunctionAddressForPlatform(platform, name); };
    create = reinterpret_cast<clCreateCommandBufferKHR_fn>(get("clCreateCommandBufferKHR"));
    finalize = reinterpret_cast<clFinalizeCommandBufferKHR_fn>(get("clFinalizeCommandBufferKHR"));
    release = reinterpret_cast<clReleaseCommandBufferKHR_fn>(get("clReleaseCommandBufferKHR"));
    enqueue = reinterpret_cast<clEnqueueCommandBufferKHR_fn>(get("clEnqueueCommandBufferKHR"));
    ndrange = reinterpret_cast<clCommandNDRangeKernelKHR_fn>(get("clCommandNDRangeKernelKHR"));
  }
  ~Vendor() {
    if (q != nullptr) clFinish(q);
    if (kernel != nullptr) clReleaseKernel(kernel);
    if (program != nullptr) clReleaseProgram(program);
  }
  bool ready(benchmark::State& state) {
    if (why.empty()) return true;
    state.SkipWithError(why.c_str());
    return false;
  }
};

// Runs `step` (true on success) on v's queue, as loop() does through accel.
template <typename Step>
void vendor_loop(benchmark::State& state, Vendor& v, const char* what, Step step) {
  timed_loop(state, step, [&] { clFinish(v.q); }, [&] { return what; });
}

// 64 clEnqueueNDRangeKernel, each followed by clFlush (as a launch through
// accel does) or, with `flush_each` false, one clFlush after the 64.
void vendor_enqueue_64(benchmark::State& state, bool flush_each) {
  Vendor v;
  if (!v.ready(state)) return;
  const size_t one = 1;
  vendor_loop(state, v, "clEnqueueNDRangeKernel failed", [&] {
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < kOps && err == CL_SUCCESS; ++i) {
      err = clEnqueueNDRangeKernel(v.q, v.kernel, 1, nullptr, &one, &one, 0, nullptr, nullptr);
      if (err == CL_SUCCESS && flush_each) err = clFlush(v.q);
    }
    return err == CL_SUCCESS && (flush_each || clFlush(v.q) == CL_SUCCESS);
  });
}
void BM_ocl_vendor_enqueue_64(benchmark::State& state) { vendor_enqueue_64(state, true); }
void BM_ocl_vendor_enqueue_64_one_flush(benchmark::State& state) { vendor_enqueue_64(state, false); }
BENCHMARK(BM_ocl_vendor_enqueue_64);
BENCHMARK(BM_ocl_vendor_enqueue_64_one_flush);

void BM_ocl_vendor_command_buffer_64(benchmark::State& state) {
  Vendor v;
  if (!v.ready(state)) return;
  if (!v.create || !v.finalize || !v.release || !v.enqueue || !v.ndrange) {
    state.SkipWithError("the platform has no cl_khr_command_buffer");
    return;
  }
  const cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                                    CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
  cl_int err = CL_SUCCESS;
  cl_command_buffer_khr cb = v.create(1, &v.q, props, &err);
  const size_t one = 1;
  cl_sync_point_khr last = 0;
  for (int i = 0; i < kOps && err == CL_SUCCESS; ++i) {
    cl_sync_point_khr point = 0;  // each after the previous, as accel records them
    err = v.ndrange(cb, nullptr, nullptr, v.kernel, 1, nullptr, &one, &one, i ? 1 : 0,
                    i ? &last : nullptr, &point, nullptr);
    last = point;
  }
  if (err == CL_SUCCESS) err = v.finalize(cb);
  if (cb == nullptr || err != CL_SUCCESS) {
    state.SkipWithError("recording the command buffer failed");
    if (cb != nullptr) v.release(cb);
    return;
  }
  vendor_loop(state, v, "clEnqueueCommandBufferKHR failed", [&] {
    return v.enqueue(1, &v.q, cb, 0, nullptr, nullptr) == CL_SUCCESS && clFlush(v.q) == CL_SUCCESS;
  });
  v.release(cb);
}
BENCHMARK(BM_ocl_vendor_command_buffer_64);
#endif

}  // namespace

int main(int argc, char** argv) {
  setenv("ACCEL_SIM_DEVICES", "1", 0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  // Which replay path this run measures, for the reader of the output.
  std::printf("backend %s, ACCEL_GRAPHS=%s\n", accel_current_accelerator() ? accel_current_accelerator() : "none",
              std::getenv("ACCEL_GRAPHS") ? std::getenv("ACCEL_GRAPHS") : "(unset)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
