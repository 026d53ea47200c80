// Launches, stream and event operations through accel's cuda backend against
// the same CUDA Driver API calls made directly, on the same CUstream, in the
// same run. tests/gpu/cuda.sh runs it (--benchmark_format=json) and checks
// each ratio against its target, 1.05x, on a real driver; `meson test
// --benchmark cuda-fake` runs it over the fake driver (tests/fakes/cuda),
// where the figures say nothing about a GPU but every benchmark must run.
//
// On device 0 (ACCEL_BACKEND=cuda, which main sets unless it is set). The
// direct side dlopens the driver the plugin opens (ACCEL_CUDA_DRIVER, else
// libcuda.so.1), so both sides talk to one driver instance, and works on
// accel's own objects through their native handles: the primary CUcontext of
// device 0, the CUstream behind accel's stream, the CUevent behind accel's
// event. The kernels are the build's PTX of kernels/accel_kernels.cu
// (embedded when nvcc made it): accel loads it with accel_module_load, the
// direct side with cuModuleLoadDataEx in the same context. Without that PTX
// the launch benchmarks fail with an error (cuda.sh counts that as a
// failure); the stream and event ones need none.
//
// Every benchmark is paired: each iteration times one batch of an operation
// through accel and one batch of the driver call (the side that goes first
// alternating), so both see the same load; the stream is drained between
// batches, untimed. Launch and record batches are short of the driver's
// launch queue, so no enqueue waits for the GPU. Counters, per operation:
// accel_ns and vendor_ns (wall time) and ratio = accel_ns / vendor_ns (the
// target), accel_cpu_ns, vendor_cpu_ns and cpu_ratio from the calling
// thread's CPU clock.
//   BM_cuda_launch_empty_paired        accel_launch_kernel vs cuLaunchKernel,
//                                      `empty` (no parameters), grid 1, block 32
//   BM_cuda_launch_saxpy_paired        the same, `saxpy` (four parameters)
//   BM_cuda_stream_query_paired        accel_stream_query vs cuStreamQuery, idle
//   BM_cuda_stream_synchronize_paired  accel_stream_synchronize vs
//                                      cuStreamSynchronize, idle
//   BM_cuda_event_record_paired        accel_event_record vs cuEventRecord
//   BM_cuda_event_query_paired         accel_event_query vs cuEventQuery, complete
//   BM_cuda_graph_replay_paired        accel_graph_replay of a graph of 64
//                                      `empty` launches vs cuGraphLaunch of
//                                      the same 64 launches captured by the
//                                      driver directly (target 1.05)
//   BM_cuda_graph_vs_launches_paired   accel_graph_replay of that graph vs
//                                      the 64 accel_launch_kernel calls it
//                                      replaces: the "accel" side is the
//                                      replay, the "driver" side the launches
//                                      (target 0.3, cuda.sh)
//   BM_cuda_copy_<kind>_paired/N       accel_memcpy_async of N bytes (1 MiB,
//                                      64 MiB; batches of 64 MiB) and a
//                                      synchronize, both in the timing, vs
//                                      cuMemcpyHtoDAsync / cuMemcpyDtoHAsync
//                                      on the same CUstream: kind h2d_pinned
//                                      and d2h_pinned (accel_host_malloc
//                                      memory, target 1.05 in time: >= 0.95x
//                                      the bandwidth), h2d_pageable and
//                                      d2h_pageable (new[] memory, which the
//                                      driver stages as cuMemcpyHtoD does;
//                                      target 1.11: >= 0.9x)
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "accel/accel.h"
#include "accel_kernels.h"

namespace {

// The driver entry points used here, typed by cuda.h's prototypes.
struct Driver {
  decltype(&cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&cuModuleLoadDataEx) module_load = nullptr;
  decltype(&cuModuleGetFunction) get_function = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
  decltype(&cuStreamQuery) stream_query = nullptr;
  decltype(&cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&cuEventRecord) event_record = nullptr;
  decltype(&cuEventQuery) event_query = nullptr;
  decltype(&cuStreamBeginCapture) begin_capture = nullptr;
  decltype(&cuStreamEndCapture) end_capture = nullptr;
  decltype(&cuGraphInstantiateWithFlags) instantiate = nullptr;
  decltype(&cuGraphLaunch) graph_launch = nullptr;
  decltype(&cuMemcpyHtoDAsync) htod_async = nullptr;
  decltype(&cuMemcpyDtoHAsync) dtoh_async = nullptr;
};

constexpr uint32_t kSaxpyN = 32;

struct Setup {
  bool ok = false;          // streams and events
  bool kernels_ok = false;  // and the kernels, from the build's PTX
  std::string why, why_kernels;
  Driver cu;
  accel_stream_t s = nullptr;
  accel_event_t e = nullptr;
  accel_module_t module = nullptr;
  accel_kernel_t empty = nullptr, saxpy = nullptr;
  void* x = nullptr;
  void* y = nullptr;
  CUstream cs = nullptr;
  CUevent ce = nullptr;
  CUmodule cm = nullptr;
  CUfunction f_empty = nullptr, f_saxpy = nullptr;

  bool fail(const std::string& what) {
    why = what;
    return false;
  }

  bool load_driver() {
    const char* env = std::getenv("ACCEL_CUDA_DRIVER");
    const char* path = env != nullptr && *env != '\0' ? env : "libcuda.so.1";
    void* h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) return fail(std::string("cannot load the CUDA driver: ") + dlerror());
    auto sym = [&](auto& fn, const char* name) {
      *reinterpret_cast<void**>(&fn) = dlsym(h, name);
      return fn != nullptr || fail(std::string("the driver lacks ") + name);
    };
    return sym(cu.ctx_set_current, "cuCtxSetCurrent") &&
           sym(cu.module_load, "cuModuleLoadDataEx") &&
           sym(cu.get_function, "cuModuleGetFunction") && sym(cu.launch, "cuLaunchKernel") &&
           sym(cu.stream_query, "cuStreamQuery") &&
           sym(cu.stream_synchronize, "cuStreamSynchronize") &&
           sym(cu.event_record, "cuEventRecord") && sym(cu.event_query, "cuEventQuery") &&
           sym(cu.begin_capture, "cuStreamBeginCapture_v2") &&
           sym(cu.end_capture, "cuStreamEndCapture") &&
           sym(cu.instantiate, "cuGraphInstantiateWithFlags") &&
           sym(cu.graph_launch, "cuGraphLaunch") &&
           sym(cu.htod_async, "cuMemcpyHtoDAsync_v2") &&
           sym(cu.dtoh_async, "cuMemcpyDtoHAsync_v2");
  }

  bool accel_side() {
    const char* b = accel_current_accelerator();
    if (!accel_is_available() || b == nullptr || std::strcmp(b, "cuda") != 0)
      return fail(std::string("needs accel over cuda (ACCEL_BACKEND=cuda): ") +
                  accel_selection_reason());
    if (accel_stream_create(0, 0, &s) != ACCEL_SUCCESS ||
        accel_event_create(0, 0, &e) != ACCEL_SUCCESS ||
        accel_malloc(0, kSaxpyN * sizeof(float), &x) != ACCEL_SUCCESS ||
        accel_malloc(0, kSaxpyN * sizeof(float), &y) != ACCEL_SUCCESS ||
        accel_memset_async(x, 0, kSaxpyN * sizeof(float), s) != ACCEL_SUCCESS ||
        accel_memset_async(y, 0, kSaxpyN * sizeof(float), s) != ACCEL_SUCCESS ||
        accel_stream_synchronize(s) != ACCEL_SUCCESS)
      return fail(std::string("accel: ") + accel_last_error());
    return true;
  }

  bool native_side() {
    accel_native_handle_t dh, sh, eh;
    for (accel_native_handle_t* h : {&dh, &sh, &eh}) {
      std::memset(h, 0, sizeof *h);
      h->struct_size = sizeof *h;
    }
    if (accel_device_native_handle(0, &dh) != ACCEL_SUCCESS ||
        accel_stream_native_handle(s, &sh) != ACCEL_SUCCESS ||
        accel_event_native_handle(e, &eh) != ACCEL_SUCCESS || dh.type != ACCEL_NATIVE_CUDA)
      return fail(std::string("native handles: ") + accel_last_error());
    cs = static_cast<CUstream>(sh.handle);
    ce = static_cast<CUevent>(eh.handle);
    // The benchmarks run on this thread: the context stays current for the
    // direct calls (accel makes it current itself where it must).
    if (cu.ctx_set_current(static_cast<CUcontext>(dh.context)) != CUDA_SUCCESS)
      return fail("cuCtxSetCurrent failed");
    return true;
  }

  // The same kernels on both sides.
  bool kernels() {
    const accel_module_image_t* ptx = accel_kernels_image(ACCEL_MODULE_FORMAT_PTX);
    if (ptx == nullptr) {
      why_kernels = "the build has no PTX (kernels/meson.build makes it with nvcc, -Dnvcc)";
      return false;
    }
    if (accel_module_load(0, ptx, 1, nullptr, &module) != ACCEL_SUCCESS ||
        accel_module_get_kernel(module, "empty", &empty) != ACCEL_SUCCESS ||
        accel_module_get_kernel(module, "saxpy", &saxpy) != ACCEL_SUCCESS) {
      why_kernels = std::string("accel_module_load of the build's PTX: ") + accel_last_error();
      return false;
    }
    // The driver wants NUL-terminated PTX text; the embedded image has no NUL.
    const std::string text(static_cast<const char*>(ptx->data), ptx->size);
    if (cu.module_load(&cm, text.c_str(), 0, nullptr, nullptr) != CUDA_SUCCESS ||
        cu.get_function(&f_empty, cm, "empty") != CUDA_SUCCESS ||
        cu.get_function(&f_saxpy, cm, "saxpy") != CUDA_SUCCESS) {
      why_kernels = "cuModuleLoadDataEx / cuModuleGetFunction of the build's PTX failed";
      return false;
    }
    return true;
  }

  Setup() {
    ok = load_driver() && accel_side() && native_side();
    if (!ok) why_kernels = why;
    kernels_ok = ok && kernels();
  }
};

Setup& setup() {
  static Setup* s = new Setup();  // kept to exit: the driver's threads may outlive main
  return *s;
}

struct Clock {
  double wall, cpu;
};

Clock now() {
  timespec w{}, c{};
  clock_gettime(CLOCK_MONOTONIC, &w);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
  return {static_cast<double>(w.tv_sec) * 1e9 + static_cast<double>(w.tv_nsec),
          static_cast<double>(c.tv_sec) * 1e9 + static_cast<double>(c.tv_nsec)};
}

// Times `batch` calls of each side per iteration (see the top of the file).
// Each op returns true on success.
// With `timed_sync` the stream synchronize after each batch is timed too
// (copies: their bandwidth is bytes over the time until they completed).
template <typename AccelOp, typename VendorOp>
void paired(benchmark::State& state, bool launches, int batch, AccelOp accel_op,
            VendorOp vendor_op, bool timed_sync = false) {
  Setup& su = setup();
  if (!(launches ? su.kernels_ok : su.ok)) {
    state.SkipWithError((launches ? su.why_kernels : su.why).c_str());
    return;
  }
  double wall[2] = {0, 0}, cpu[2] = {0, 0};
  bool good = true;
  int first = 0;
  auto run = [&](int side) {
    const Clock t0 = now();
    if (side == 0) {
      for (int i = 0; i < batch; ++i) good &= accel_op();
    } else {
      for (int i = 0; i < batch; ++i) good &= vendor_op();
    }
    if (timed_sync) good &= su.cu.stream_synchronize(su.cs) == CUDA_SUCCESS;
    const Clock t1 = now();
    wall[side] += t1.wall - t0.wall;
    cpu[side] += t1.cpu - t0.cpu;
    good &= su.cu.stream_synchronize(su.cs) == CUDA_SUCCESS;
  };
  for (auto _ : state) {
    run(first);
    run(first ^ 1);
    first ^= 1;
  }
  if (!good) {
    state.SkipWithError("a call failed (accel or the driver)");
    return;
  }
  const double n = static_cast<double>(state.iterations()) * batch;
  state.counters["accel_ns"] = wall[0] / n;
  state.counters["vendor_ns"] = wall[1] / n;
  state.counters["ratio"] = wall[0] / wall[1];
  state.counters["accel_cpu_ns"] = cpu[0] / n;
  state.counters["vendor_cpu_ns"] = cpu[1] / n;
  state.counters["cpu_ratio"] = cpu[0] / cpu[1];
  state.counters["batch"] = batch;
}

// Launches and records per batch: short of the driver's queue of pending
// launches, so none waits for the GPU (tests/gpu/cuda_kernels.c's batch too).
constexpr int kLaunchBatch = 256;
constexpr int kQueryBatch = 1024;

accel_launch_config_t config(accel_stream_t s) {
  accel_launch_config_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid = {1, 1, 1};
  c.block = {32, 1, 1};
  c.stream = s;
  return c;
}

void BM_cuda_launch_empty_paired(benchmark::State& state) {
  Setup& su = setup();
  const accel_launch_config_t c = config(su.s);
  paired(
      state, true, kLaunchBatch,
      [&] { return accel_launch_kernel(su.empty, &c, nullptr, 0) == ACCEL_SUCCESS; },
      [&] {
        return su.cu.launch(su.f_empty, 1, 1, 1, 32, 1, 1, 0, su.cs, nullptr, nullptr) ==
               CUDA_SUCCESS;
      });
}
BENCHMARK(BM_cuda_launch_empty_paired);

void BM_cuda_launch_saxpy_paired(benchmark::State& state) {
  Setup& su = setup();
  const accel_launch_config_t c = config(su.s);
  const float alpha = 0.5f;
  const uint32_t n = kSaxpyN;
  const accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_VALUE, sizeof alpha, &alpha},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), su.x},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), su.y},
                                     {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n}};
  CUdeviceptr cx = reinterpret_cast<CUdeviceptr>(su.x), cy = reinterpret_cast<CUdeviceptr>(su.y);
  void* params[] = {const_cast<float*>(&alpha), &cx, &cy, const_cast<uint32_t*>(&n)};
  paired(
      state, true, kLaunchBatch,
      [&] { return accel_launch_kernel(su.saxpy, &c, args, 4) == ACCEL_SUCCESS; },
      [&] {
        return su.cu.launch(su.f_saxpy, 1, 1, 1, 32, 1, 1, 0, su.cs, params, nullptr) ==
               CUDA_SUCCESS;
      });
}
BENCHMARK(BM_cuda_launch_saxpy_paired);

void BM_cuda_stream_query_paired(benchmark::State& state) {
  Setup& su = setup();
  paired(
      state, false, kQueryBatch, [&] { return accel_stream_query(su.s) == ACCEL_SUCCESS; },
      [&] { return su.cu.stream_query(su.cs) == CUDA_SUCCESS; });
}
BENCHMARK(BM_cuda_stream_query_paired);

void BM_cuda_stream_synchronize_paired(benchmark::State& state) {
  Setup& su = setup();
  paired(
      state, false, kQueryBatch, [&] { return accel_stream_synchronize(su.s) == ACCEL_SUCCESS; },
      [&] { return su.cu.stream_synchronize(su.cs) == CUDA_SUCCESS; });
}
BENCHMARK(BM_cuda_stream_synchronize_paired);

void BM_cuda_event_record_paired(benchmark::State& state) {
  Setup& su = setup();
  paired(
      state, false, kLaunchBatch, [&] { return accel_event_record(su.e, su.s) == ACCEL_SUCCESS; },
      [&] { return su.cu.event_record(su.ce, su.cs) == CUDA_SUCCESS; });
}
BENCHMARK(BM_cuda_event_record_paired);

void BM_cuda_event_query_paired(benchmark::State& state) {
  Setup& su = setup();
  if (su.ok && (accel_event_record(su.e, su.s) != ACCEL_SUCCESS ||
                accel_stream_synchronize(su.s) != ACCEL_SUCCESS)) {
    state.SkipWithError(accel_last_error());
    return;
  }
  paired(
      state, false, kQueryBatch, [&] { return accel_event_query(su.e) == ACCEL_SUCCESS; },
      [&] { return su.cu.event_query(su.ce) == CUDA_SUCCESS; });
}
BENCHMARK(BM_cuda_event_query_paired);

// ---- graphs: 64 `empty` launches, captured by accel and by the driver -------

constexpr int kGraphOps = 64;
constexpr int kGraphBatch = kLaunchBatch / kGraphOps;  // replays per batch

struct Graphs {
  accel_graph_t g = nullptr;   // captured through accel on su.s
  CUgraphExec exec = nullptr;  // captured by the driver on su.cs
  std::string why;
  Graphs() {
    Setup& su = setup();
    if (!su.kernels_ok) {
      why = su.why_kernels;
      return;
    }
    const accel_launch_config_t c = config(su.s);
    bool ok = accel_stream_begin_capture(su.s, ACCEL_CAPTURE_MODE_GLOBAL, 0) == ACCEL_SUCCESS;
    for (int i = 0; ok && i < kGraphOps; ++i)
      ok = accel_launch_kernel(su.empty, &c, nullptr, 0) == ACCEL_SUCCESS;
    if (accel_stream_end_capture(su.s, &g) != ACCEL_SUCCESS || !ok ||
        accel_graph_instantiate(g) != ACCEL_SUCCESS) {
      why = std::string("accel capture: ") + accel_last_error();
      return;
    }
    CUgraph graph = nullptr;
    bool cu_ok = su.cu.begin_capture(su.cs, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS;
    for (int i = 0; cu_ok && i < kGraphOps; ++i)
      cu_ok = su.cu.launch(su.f_empty, 1, 1, 1, 32, 1, 1, 0, su.cs, nullptr, nullptr) == CUDA_SUCCESS;
    if (su.cu.end_capture(su.cs, &graph) != CUDA_SUCCESS || !cu_ok ||
        su.cu.instantiate(&exec, graph, 0) != CUDA_SUCCESS)
      why = "driver capture (cuStreamBeginCapture .. cuGraphInstantiateWithFlags) failed";
  }
};

Graphs& graphs() {
  static Graphs* g = new Graphs();  // kept to exit, as setup()
  return *g;
}

void BM_cuda_graph_replay_paired(benchmark::State& state) {
  Setup& su = setup();
  Graphs& g = graphs();
  if (!g.why.empty()) {
    state.SkipWithError(g.why.c_str());
    return;
  }
  paired(
      state, true, kGraphBatch,
      [&] { return accel_graph_replay(g.g, su.s) == ACCEL_SUCCESS; },
      [&] { return su.cu.graph_launch(g.exec, su.cs) == CUDA_SUCCESS; });
}
BENCHMARK(BM_cuda_graph_replay_paired);

void BM_cuda_graph_vs_launches_paired(benchmark::State& state) {
  Setup& su = setup();
  Graphs& g = graphs();
  if (!g.why.empty()) {
    state.SkipWithError(g.why.c_str());
    return;
  }
  const accel_launch_config_t c = config(su.s);
  paired(
      state, true, kGraphBatch,
      [&] { return accel_graph_replay(g.g, su.s) == ACCEL_SUCCESS; },
      [&] {
        bool ok = true;
        for (int i = 0; i < kGraphOps; ++i)
          ok &= accel_launch_kernel(su.empty, &c, nullptr, 0) == ACCEL_SUCCESS;
        return ok;
      });
}
BENCHMARK(BM_cuda_graph_vs_launches_paired);

// Copies: one device buffer and pinned and pageable host buffers of the
// largest size, made once (the pageable one touched, so no page faults are
// timed). Each side copies the same bytes between the same buffers.
constexpr size_t kCopyMax = size_t{64} << 20;
struct CopyBuffers {
  void* dev = nullptr;
  void* pinned = nullptr;
  unsigned char* pageable = nullptr;
  std::string why;
  CopyBuffers() {
    Setup& su = setup();
    if (!su.ok) {
      why = su.why;
      return;
    }
    if (accel_malloc(0, kCopyMax, &dev) != ACCEL_SUCCESS ||
        accel_host_malloc(kCopyMax, 0, &pinned) != ACCEL_SUCCESS) {
      why = std::string("copy buffers: ") + accel_last_error();
      return;
    }
    pageable = new unsigned char[kCopyMax];
    std::memset(pageable, 1, kCopyMax);
    std::memset(pinned, 2, kCopyMax);
  }
};
CopyBuffers& copy_buffers() {
  static CopyBuffers* b = new CopyBuffers();  // kept to exit, as setup()
  return *b;
}

// One copy kind: H2D or D2H, from or into pinned or pageable memory.
void copy_paired(benchmark::State& state, bool h2d, bool pinned) {
  Setup& su = setup();
  CopyBuffers& cb = copy_buffers();
  if (!cb.why.empty()) {
    state.SkipWithError(cb.why.c_str());
    return;
  }
  const auto bytes = static_cast<size_t>(state.range(0));
  void* host = pinned ? cb.pinned : cb.pageable;
  const auto dptr = reinterpret_cast<CUdeviceptr>(cb.dev);
  const int batch = static_cast<int>(kCopyMax / bytes);
  paired(
      state, false, batch,
      [&] {
        return (h2d ? accel_memcpy_async(cb.dev, host, bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, su.s)
                    : accel_memcpy_async(host, cb.dev, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST,
                                         su.s)) == ACCEL_SUCCESS;
      },
      [&] {
        return (h2d ? su.cu.htod_async(dptr, host, bytes, su.cs)
                    : su.cu.dtoh_async(host, dptr, bytes, su.cs)) == CUDA_SUCCESS;
      },
      true);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * batch *
                          static_cast<int64_t>(bytes));
}
void BM_cuda_copy_h2d_pinned_paired(benchmark::State& state) { copy_paired(state, true, true); }
void BM_cuda_copy_d2h_pinned_paired(benchmark::State& state) { copy_paired(state, false, true); }
void BM_cuda_copy_h2d_pageable_paired(benchmark::State& state) { copy_paired(state, true, false); }
void BM_cuda_copy_d2h_pageable_paired(benchmark::State& state) {
  copy_paired(state, false, false);
}
BENCHMARK(BM_cuda_copy_h2d_pinned_paired)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_cuda_copy_d2h_pinned_paired)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_cuda_copy_h2d_pageable_paired)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_cuda_copy_d2h_pageable_paired)->Arg(1 << 20)->Arg(64 << 20);

}  // namespace

int main(int argc, char** argv) {
  setenv("ACCEL_BACKEND", "cuda", 0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
