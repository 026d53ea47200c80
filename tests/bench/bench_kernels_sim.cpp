// What accel_launch_kernel adds to a kernel launch on sim, measured in one
// run against the floor: the same launch through the sim plugin's vtable
// (launch_kernel), on a private copy of the plugin (so the core's instance
// is untouched), exactly as bench_dispatch.cpp compares its operations.
// Target: accel / plugin_vtable <= 1.10 (docs/performance.md), for `empty` (no
// arguments: the pure dispatch) and for `vector_add` (four arguments the
// core checks against the kernel's parameters, device pointers against its
// allocation table).
//
// A launch only queues: the stream's worker runs the kernel meanwhile. Every
// kLaunchesPerSync launches the benchmark waits for the stream with the
// timer paused, so the queue never fills (a full queue would make every
// launch wait for the worker and measure the worker instead). Both sides do
// exactly the same; the ratio at the end compares CPU time of the launching
// thread (the worker runs on another thread and is not counted), and real
// time too.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "accel/accel.h"
#include "accel/accel_plugin.h"
#include "direct_plugin.hpp"
#include "accel_kernels.h"

namespace {

constexpr int kLaunchesPerSync = 1024;
constexpr uint32_t kElements = 256;  // vector_add: one block of 256 threads

// ---- a private sim instance for direct vtable calls ------------------------

accel_host_services_t g_host = accel_test::quiet_host();

const accel_plugin_api_t* direct_sim() {
  static const accel_plugin_api_t* api = []() -> const accel_plugin_api_t* {
    int32_t n = 0;
    const accel_plugin_api_t* a =
        accel_test::open_private_copy(std::getenv("ACCEL_BENCH_SIM_PLUGIN"), &g_host, &n);
    if (a == nullptr || n < 1 || (a->lazy_init && a->lazy_init() != ACCEL_SUCCESS) ||
        a->struct_size < offsetof(accel_plugin_api_t, launch_kernel) + sizeof(void*) ||
        a->launch_kernel == nullptr)
      return nullptr;
    return a;
  }();
  return api;
}

// The sim plugin's kernel `name` on device 0, a stream, and vector_add's
// buffers (host memory stands in for device memory on sim).
struct Direct {
  const accel_plugin_api_t* a = direct_sim();
  accel_plugin_module_t module = nullptr;
  accel_plugin_kernel_t kernel = nullptr;
  accel_plugin_stream_t stream = nullptr;
  std::vector<float> x = std::vector<float>(kElements, 1.0f);
  std::vector<float> y = std::vector<float>(kElements, 2.0f);
  std::vector<float> z = std::vector<float>(kElements, 0.0f);
  bool ok = false;
  explicit Direct(const char* name) {
    const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_SIM_HOST);
    ok = a != nullptr && im != nullptr &&
         a->module_load(0, im, "", nullptr, nullptr, &module) == ACCEL_SUCCESS &&
         a->kernel_create(module, name, &kernel) == ACCEL_SUCCESS &&
         a->stream_create(0, 0, &stream) == ACCEL_SUCCESS;
  }
  ~Direct() {
    if (stream != nullptr) a->stream_destroy(stream);
    if (kernel != nullptr) a->kernel_destroy(kernel);
    if (module != nullptr) a->module_unload(module);
  }
};

// The same through accel.h: a module on device 0, its kernel and a stream.
struct ViaAccel {
  accel_module_t module = nullptr;
  accel_kernel_t kernel = nullptr;
  accel_stream_t stream = nullptr;
  void* x = nullptr;
  void* y = nullptr;
  void* z = nullptr;
  bool ok = false;
  explicit ViaAccel(const char* name) {
    const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_SIM_HOST);
    ok = accel_is_available() && im != nullptr &&
         accel_module_load(0, im, 1, nullptr, &module) == ACCEL_SUCCESS &&
         accel_module_get_kernel(module, name, &kernel) == ACCEL_SUCCESS &&
         accel_stream_create(0, 0, &stream) == ACCEL_SUCCESS &&
         accel_malloc(0, kElements * sizeof(float), &x) == ACCEL_SUCCESS &&
         accel_malloc(0, kElements * sizeof(float), &y) == ACCEL_SUCCESS &&
         accel_malloc(0, kElements * sizeof(float), &z) == ACCEL_SUCCESS;
  }
  ~ViaAccel() {
    if (stream != nullptr) accel_stream_synchronize(stream);
    accel_free(x);
    accel_free(y);
    accel_free(z);
    if (stream != nullptr) accel_stream_destroy(stream);
    if (module != nullptr) accel_module_unload(module);
  }
};

// Runs `launch` once per iteration, waiting for the stream with the timer
// paused every kLaunchesPerSync launches; a failed launch skips the
// benchmark with an error.
template <typename Launch, typename Sync>
void launch_loop(benchmark::State& state, Launch launch, Sync sync) {
  int since_sync = 0;
  for (auto _ : state) {
    if (launch() != ACCEL_SUCCESS) {
      state.SkipWithError("launch failed");
      break;
    }
    if (++since_sync == kLaunchesPerSync) {
      state.PauseTiming();
      sync();
      since_sync = 0;
      state.ResumeTiming();
    }
  }
  sync();
}

// ---- empty: no arguments ------------------------------------------------------

void BM_plugin_vtable_launch_empty(benchmark::State& state) {
  Direct d("empty");
  if (!d.ok) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  const accel_dim3_t one{1, 1, 1};
  launch_loop(
      state, [&] { return d.a->launch_kernel(d.kernel, one, one, 0, nullptr, 0, d.stream); },
      [&] { d.a->stream_synchronize(d.stream); });
}
BENCHMARK(BM_plugin_vtable_launch_empty);

// `empty` through accel.h on a stream (and module) of the calling thread's own.
void launch_empty_via_accel(benchmark::State& state) {
  ViaAccel v("empty");
  if (!v.ok) {
    state.SkipWithError(accel_last_error());
    return;
  }
  accel_launch_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.grid = accel_dim3_t{1, 1, 1};
  cfg.block = accel_dim3_t{1, 1, 1};
  cfg.stream = v.stream;
  launch_loop(
      state, [&] { return accel_launch_kernel(v.kernel, &cfg, nullptr, 0); },
      [&] { accel_stream_synchronize(v.stream); });
  state.SetItemsProcessed(state.iterations());
}

void BM_launch_empty(benchmark::State& state) { launch_empty_via_accel(state); }
BENCHMARK(BM_launch_empty);

// The same two launches with a grid of range(0) blocks of one thread (1, 64,
// 4096): how the launching thread's cost grows with the grid. The blocks
// run on sim's worker, outside the CPU time of the launching thread that
// run.py reads, so both sides should stay flat.
void BM_plugin_vtable_launch_empty_grid(benchmark::State& state) {
  Direct d("empty");
  if (!d.ok) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  const accel_dim3_t grid{static_cast<uint32_t>(state.range(0)), 1, 1}, one{1, 1, 1};
  launch_loop(
      state, [&] { return d.a->launch_kernel(d.kernel, grid, one, 0, nullptr, 0, d.stream); },
      [&] { d.a->stream_synchronize(d.stream); });
}
BENCHMARK(BM_plugin_vtable_launch_empty_grid)->Arg(1)->Arg(64)->Arg(4096);

void BM_launch_empty_grid(benchmark::State& state) {
  ViaAccel v("empty");
  if (!v.ok) {
    state.SkipWithError(accel_last_error());
    return;
  }
  accel_launch_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.grid = accel_dim3_t{static_cast<uint32_t>(state.range(0)), 1, 1};
  cfg.block = accel_dim3_t{1, 1, 1};
  cfg.stream = v.stream;
  launch_loop(
      state, [&] { return accel_launch_kernel(v.kernel, &cfg, nullptr, 0); },
      [&] { accel_stream_synchronize(v.stream); });
}
BENCHMARK(BM_launch_empty_grid)->Arg(1)->Arg(64)->Arg(4096);

// 1, 2 and 4 threads launching `empty`, each on its own stream of device 0
// (its own module too): aggregate launches per second against one thread's,
// target >= 1.0 (nothing in the launch path shared between two streams may
// serialize them); the machine has 2 cores.
void BM_launch_empty_threads(benchmark::State& state) { launch_empty_via_accel(state); }
BENCHMARK(BM_launch_empty_threads)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// ---- vector_add: four arguments -----------------------------------------------

void BM_plugin_vtable_launch_vector_add(benchmark::State& state) {
  Direct d("vector_add");
  if (!d.ok) {
    state.SkipWithError("direct sim instance unavailable (ACCEL_BENCH_SIM_PLUGIN)");
    return;
  }
  const uint32_t n = kElements;
  const accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), d.x.data()},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), d.y.data()},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), d.z.data()},
                                     {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n}};
  const accel_dim3_t grid{1, 1, 1}, block{kElements, 1, 1};
  launch_loop(
      state, [&] { return d.a->launch_kernel(d.kernel, grid, block, 0, args, 4, d.stream); },
      [&] { d.a->stream_synchronize(d.stream); });
}
BENCHMARK(BM_plugin_vtable_launch_vector_add);

void BM_launch_vector_add(benchmark::State& state) {
  ViaAccel v("vector_add");
  if (!v.ok) {
    state.SkipWithError(accel_last_error());
    return;
  }
  const uint32_t n = kElements;
  const accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), v.x},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), v.y},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), v.z},
                                     {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n}};
  accel_launch_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.grid = accel_dim3_t{1, 1, 1};
  cfg.block = accel_dim3_t{kElements, 1, 1};
  cfg.stream = v.stream;
  launch_loop(
      state, [&] { return accel_launch_kernel(v.kernel, &cfg, args, 4); },
      [&] { accel_stream_synchronize(v.stream); });
}
BENCHMARK(BM_launch_vector_add);

// ---- the ratios ---------------------------------------------------------------

// The console output, plus each run's time per iteration kept for the
// ratios printed at the end (the median when repetitions were asked).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.iterations == 0) continue;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type == Run::RT_Aggregate && !median) continue;
      auto& t = times_[r.run_name.str()];
      if (t.from_median && !median) continue;
      t = Times{r.GetAdjustedCPUTime(), r.GetAdjustedRealTime(), median};
    }
  }
  // Prints accel / plugin_vtable for each pair; the exit status stays 0 (a shared
  // machine is noisy: run.py and docs/performance.md judge the figures).
  void print_ratios() const {
    for (const char* k : {"empty", "vector_add"}) {
      auto a = times_.find(std::string("BM_launch_") + k);
      auto d = times_.find(std::string("BM_plugin_vtable_launch_") + k);
      if (a == times_.end() || d == times_.end() || d->second.cpu <= 0 || d->second.real <= 0)
        continue;
      std::printf(
          "launch %-10s accel/plugin_vtable: cpu %.3f (%.1f / %.1f ns), real %.3f (%.1f / %.1f "
          "ns); target <= 1.10\n",
          k, a->second.cpu / d->second.cpu, a->second.cpu, d->second.cpu,
          a->second.real / d->second.real, a->second.real, d->second.real);
    }
  }

 private:
  struct Times {
    double cpu = 0, real = 0;
    bool from_median = false;
  };
  std::map<std::string, Times> times_;
};

}  // namespace

int main(int argc, char** argv) {
  setenv("ACCEL_SIM_DEVICES", "1", 0);
  setenv("ACCEL_BACKEND", "sim", 0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios();
  benchmark::Shutdown();
  return 0;
}
