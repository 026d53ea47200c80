// graph_check.cpp - selftest's "graphs" check: on a created stream it
// captures a copy in, saxpy and a copy out (docs/graphs.md), checks that
// nothing ran at capture, then replays the graph three times with new
// input in the pinned buffer each time (a replay reads the host bytes when
// it runs) and checks every element after each replay.
#include <accel/accel.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>

#include "accel_kernels.h"
#include "checks.hpp"
#include "info.hpp"

namespace accelctl {
namespace {

constexpr uint32_t kElements = 2000;
constexpr int kReplays = 3;
constexpr float kSentinel = -12345.0f;

// What check_graphs made, released on every return.
struct Held {
  Held() = default;
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  accel_module_t module = nullptr;
  accel_stream_t stream = nullptr;
  accel_graph_t graph = nullptr;
  void* dx = nullptr;
  void* dy = nullptr;
  float* hx = nullptr;  // pinned: a capture copies only pinned memory
  float* hy = nullptr;
  float* out = nullptr;
  ~Held() {
    if (stream != nullptr) accel_stream_synchronize(stream);
    if (graph != nullptr) accel_graph_destroy(graph);
    accel_free(dx);
    accel_free(dy);
    accel_host_free(hx);
    accel_host_free(hy);
    accel_host_free(out);
    if (stream != nullptr) accel_stream_destroy(stream);
    if (module != nullptr) accel_module_unload(module);
  }
};

#define GC_TRY(expr)                                                                   \
  do {                                                                                 \
    const accel_status_t gc_st_ = (expr);                                              \
    if (gc_st_ != ACCEL_SUCCESS) return {false, false, failure_detail(#expr, gc_st_)}; \
  } while (0)

// A SKIP when the backend lacks what the check needs, else nothing.
bool lacks(accel_status_t st, CheckResult& result, const char* what) {
  if (st != ACCEL_ERROR_NOT_SUPPORTED) return false;
  result = {true, true, fmt::format("not run: no {}: {}", what, accel_last_error())};
  return true;
}

// Captures hx -> dx, hy -> dy, dy = alpha * dx + dy, dy -> out on h.stream.
CheckResult capture(Held& h, accel_kernel_t saxpy, const float& alpha, const uint32_t& n) {
  accel_launch_config_t cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  cfg.block = {64, 1, 1};
  cfg.grid = {(n + 63) / 64, 1, 1};
  cfg.stream = h.stream;
  const accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_VALUE, sizeof alpha, &alpha},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), h.dx},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), h.dy},
                                     {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n}};
  const size_t bytes = size_t{n} * sizeof(float);
  GC_TRY(accel_stream_begin_capture(h.stream, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  GC_TRY(accel_memcpy_async(h.dx, h.hx, bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, h.stream));
  GC_TRY(accel_memcpy_async(h.dy, h.hy, bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, h.stream));
  GC_TRY(accel_launch_kernel(saxpy, &cfg, args, 4));
  GC_TRY(accel_memcpy_async(h.out, h.dy, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, h.stream));
  GC_TRY(accel_stream_end_capture(h.stream, &h.graph));
  return {true, false, ""};
}

// One replay with input set `r`, every element checked.
CheckResult replay_and_check(Held& h, int r, float alpha) {
  for (uint32_t i = 0; i < kElements; ++i) {
    h.hx[i] = static_cast<float>((i + r) % 91) * 0.25f;
    h.hy[i] = static_cast<float>(i % 17) - static_cast<float>(r);
    h.out[i] = kSentinel;
  }
  GC_TRY(accel_graph_replay(h.graph, h.stream));
  GC_TRY(accel_stream_synchronize(h.stream));
  for (uint32_t i = 0; i < kElements; ++i) {
    const float want = alpha * h.hx[i] + h.hy[i];
    if (std::fabs(h.out[i] - want) > 1e-4f * (1 + std::fabs(want)))
      return {false, false,
              fmt::format("replay {}: element {} is {}, not {}", r, i, h.out[i], want)};
  }
  return {true, false, ""};
}

}  // namespace

CheckResult check_graphs(const Context& ctx) {
  CheckResult skip;
  accel_module_image_t images[8];
  const size_t count = accel_kernels_images(images, 8);
  Held h;
  accel_status_t st = accel_module_load(ctx.device, images, count, nullptr, &h.module);
  if (lacks(st, skip, "module accelctl carries runs here")) return skip;
  if (st != ACCEL_SUCCESS) return {false, false, failure_detail("accel_module_load", st)};
  accel_kernel_t saxpy = nullptr;
  GC_TRY(accel_module_get_kernel(h.module, "saxpy", &saxpy));
  const size_t bytes = kElements * sizeof(float);
  st = accel_host_malloc(bytes, 0, reinterpret_cast<void**>(&h.hx));
  if (lacks(st, skip, "pinned host memory (a capture copies only pinned memory)")) return skip;
  GC_TRY(st);
  GC_TRY(accel_host_malloc(bytes, 0, reinterpret_cast<void**>(&h.hy)));
  GC_TRY(accel_host_malloc(bytes, 0, reinterpret_cast<void**>(&h.out)));
  for (uint32_t i = 0; i < kElements; ++i) h.out[i] = kSentinel;
  GC_TRY(accel_malloc(ctx.device, bytes, &h.dx));
  GC_TRY(accel_malloc(ctx.device, bytes, &h.dy));
  GC_TRY(accel_stream_create(ctx.device, 0, &h.stream));

  const float alpha = 2.5f;
  const uint32_t n = kElements;
  if (auto r = capture(h, saxpy, alpha, n); !r.passed) return r;
  GC_TRY(accel_stream_synchronize(h.stream));
  for (uint32_t i = 0; i < kElements; ++i) {
    if (h.out[i] != kSentinel)
      return {false, false, fmt::format("element {} changed at capture: captured work ran", i)};
  }
  for (int r = 1; r <= kReplays; ++r) {
    if (auto res = replay_and_check(h, r, alpha); !res.passed) return res;
  }
  accel_device_properties_t props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  const std::string how = accel_get_device_properties(ctx.device, &props) == ACCEL_SUCCESS
                              ? std::string(props.graphs)
                              : std::string("unknown");
  return {true, false,
          fmt::format("captured 2 copies in, saxpy and a copy out; {} replays over {} elements "
                      "correct ({})",
                      kReplays, kElements, how)};
}

}  // namespace accelctl
