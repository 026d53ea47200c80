// kernel_check.cpp - selftest's "kernels" check: loads the kernels accelctl
// carries (kernels/: OpenCL C and sim's host format always, PTX, AMD code
// objects and SPIR-V when the build could make them), lets the device pick
// its image, and runs vector add, saxpy with a scalar and a local-memory
// reduction, checking every result on the host.
#include <accel/accel.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "accel_kernels.h"
#include "checks.hpp"
#include "info.hpp"

namespace accelctl {
namespace {

// What check_kernels made, released on every return.
struct Cleanup {
  explicit Cleanup(int32_t d) : device(d) {}
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;
  int32_t device;
  accel_module_t module = nullptr;
  accel_stream_t stream = nullptr;
  std::vector<void*> buffers;
  ~Cleanup() {
    if (stream != nullptr) accel_stream_synchronize(stream);
    for (void* p : buffers) accel_free(p);
    if (stream != nullptr) accel_stream_destroy(stream);
    if (module != nullptr) accel_module_unload(module);
  }
};

#define KC_TRY(expr)                                                                   \
  do {                                                                                 \
    const accel_status_t kc_st_ = (expr);                                              \
    if (kc_st_ != ACCEL_SUCCESS) return {false, false, failure_detail(#expr, kc_st_)}; \
  } while (0)

accel_kernel_arg_t ptr(const void* p) {
  return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p};
}
template <class T>
accel_kernel_arg_t val(const T& v) {
  return {ACCEL_KERNEL_ARG_VALUE, sizeof v, &v};
}

}  // namespace

CheckResult check_kernels(const Context& ctx) {
  accel_module_image_t images[8];
  const size_t count = accel_kernels_images(images, 8);
  Cleanup c{ctx.device};
  const accel_status_t st = accel_module_load(ctx.device, images, count, nullptr, &c.module);
  if (st == ACCEL_ERROR_NOT_SUPPORTED) {
    // No modules, or no image accelctl carries runs here: not a failure.
    return {true, true, fmt::format("not run: {}", accel_last_error())};
  }
  if (st != ACCEL_SUCCESS) return {false, false, failure_detail("accel_module_load", st)};

  accel_kernel_t add = nullptr, saxpy = nullptr, reduce = nullptr;
  KC_TRY(accel_module_get_kernel(c.module, "vector_add", &add));
  KC_TRY(accel_module_get_kernel(c.module, "saxpy", &saxpy));
  KC_TRY(accel_module_get_kernel(c.module, "reduce_sum", &reduce));
  accel_kernel_attributes_t attrs;
  std::memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs;
  KC_TRY(accel_kernel_get_attributes(reduce, &attrs));
  uint32_t block = 64;
  while (block > 1 && block > attrs.max_threads_per_block) block /= 2;

  const uint32_t n = 3000;  // not a multiple of the block: bounds are checked too
  const uint32_t groups = (n + block - 1) / block;
  std::vector<float> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97) * 0.5f;
    b[i] = static_cast<float>(i % 13) - 6.0f;
  }
  KC_TRY(accel_stream_create(ctx.device, 0, &c.stream));
  void *da = nullptr, *db = nullptr, *dc = nullptr, *dp = nullptr;
  KC_TRY(accel_malloc(ctx.device, n * 4, &da));
  c.buffers.push_back(da);
  KC_TRY(accel_malloc(ctx.device, n * 4, &db));
  c.buffers.push_back(db);
  KC_TRY(accel_malloc(ctx.device, n * 4, &dc));
  c.buffers.push_back(dc);
  KC_TRY(accel_malloc(ctx.device, groups * 4, &dp));
  c.buffers.push_back(dp);
  KC_TRY(accel_memcpy_async(da, a.data(), n * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, c.stream));
  KC_TRY(accel_memcpy_async(db, b.data(), n * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, c.stream));

  accel_launch_config_t cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  cfg.grid = {groups, 1, 1};
  cfg.block = {block, 1, 1};
  cfg.stream = c.stream;
  const float alpha = 3.0f;
  const accel_kernel_arg_t add_args[] = {ptr(da), ptr(db), ptr(dc), val(n)};
  const accel_kernel_arg_t saxpy_args[] = {val(alpha), ptr(da), ptr(db), val(n)};
  const accel_kernel_arg_t reduce_args[] = {
      ptr(dc), ptr(dp), {ACCEL_KERNEL_ARG_LOCAL_MEMORY, block * 4u, nullptr}, val(n)};
  KC_TRY(accel_launch_kernel(add, &cfg, add_args, 4));        // c = a + b
  KC_TRY(accel_launch_kernel(reduce, &cfg, reduce_args, 4));  // partial sums of c
  KC_TRY(accel_launch_kernel(saxpy, &cfg, saxpy_args, 4));    // b = 3a + b
  std::vector<float> got_c(n), got_b(n), got_p(groups);
  KC_TRY(accel_memcpy_async(got_c.data(), dc, n * 4, ACCEL_MEMCPY_DEVICE_TO_HOST, c.stream));
  KC_TRY(accel_memcpy_async(got_b.data(), db, n * 4, ACCEL_MEMCPY_DEVICE_TO_HOST, c.stream));
  KC_TRY(accel_memcpy_async(got_p.data(), dp, groups * 4, ACCEL_MEMCPY_DEVICE_TO_HOST, c.stream));
  KC_TRY(accel_stream_synchronize(c.stream));

  for (uint32_t i = 0; i < n; ++i) {
    if (got_c[i] != a[i] + b[i])
      return {false, false,
              fmt::format("vector_add: element {} is {}, not {}", i, got_c[i], a[i] + b[i])};
    const float want = alpha * a[i] + b[i];
    if (std::fabs(got_b[i] - want) > 1e-4f * (1 + std::fabs(want)))
      return {false, false, fmt::format("saxpy: element {} is {}, not {}", i, got_b[i], want)};
  }
  for (uint32_t g = 0; g < groups; ++g) {
    double want = 0;
    for (uint32_t i = g * block; i < n && i < (g + 1) * block; ++i) want += a[i] + b[i];
    if (std::fabs(got_p[g] - want) > 1e-3 * (1 + std::fabs(want)))
      return {false, false, fmt::format("reduce_sum: block {} is {}, not {}", g, got_p[g], want)};
  }
  return {true, false,
          fmt::format("vector_add, saxpy and reduce_sum over {} elements in blocks of {}: correct",
                      n, block)};
}

}  // namespace accelctl
