// What the CUDA plugin's kernel suites over the fake driver share
// (modules_test.cpp, graphs_test.cpp): the fake's counters, nvcc's PTX of
// kernels/accel_kernels.cu, launch configurations and arguments, and device
// buffers. One executable holds both suites, so these are inline.
#pragma once

#include <catch2/catch.hpp>

#include <accel/accel.h>
#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "../common.hpp"
#include "accel_kernels.h"

namespace cuda_kernel_test {

using backend_test::env;

#define REQUIRE_OK(expr)                                                           \
  do {                                                                             \
    accel_status_t st_ = (expr);                                                   \
    INFO(#expr << " -> " << accel_status_name(st_) << ": " << accel_last_error()); \
    REQUIRE(st_ == ACCEL_SUCCESS);                                                 \
  } while (0)

// The fake's test hook (not CUDA): one of its counters.
inline long long fake_count(const char* what) {
  const std::string path = env("ACCEL_CUDA_DRIVER");
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  auto fn = reinterpret_cast<long long (*)(const char*)>(dlsym(h, "fake_cuda_count"));
  REQUIRE(fn != nullptr);
  long long v = fn(what);
  INFO(what);
  REQUIRE(v >= 0);
  return v;
}

// The PTX of kernels/accel_kernels.cu, or NULL (after accel_test::skip) when
// this build had no nvcc.
inline const accel_module_image_t* ptx_image() {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_PTX);
  if (im == nullptr) {
    accel_test::skipf("this build has no PTX kernels (nvcc was not found: -Dnvcc)");
  }
  return im;
}

inline accel_module_t load(const accel_module_image_t& im, int32_t device = -1) {
  accel_module_t m = nullptr;
  REQUIRE_OK(accel_module_load(device, &im, 1, nullptr, &m));
  REQUIRE(m != nullptr);
  return m;
}

inline accel_kernel_t kernel(accel_module_t m, const char* name) {
  accel_kernel_t k = nullptr;
  INFO(name);
  REQUIRE_OK(accel_module_get_kernel(m, name, &k));
  return k;
}

inline accel_launch_config_t config(accel_dim3_t grid, accel_dim3_t block, accel_stream_t stream,
                                    size_t shared = 0) {
  accel_launch_config_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid = grid;
  c.block = block;
  c.shared_bytes = shared;
  c.stream = stream;
  return c;
}

inline accel_kernel_arg_t ptr(const void* p) {
  return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p};
}
template <class T>
accel_kernel_arg_t val(const T& v) {
  return {ACCEL_KERNEL_ARG_VALUE, sizeof v, &v};
}
inline accel_kernel_arg_t local(size_t bytes) {
  return {ACCEL_KERNEL_ARG_LOCAL_MEMORY, bytes, nullptr};
}

// Device memory holding `v` (copied on `s`), freed by the destructor.
struct Buffer {
  void* p = nullptr;
  size_t bytes = 0;
  Buffer(int32_t device, size_t n) : bytes(n) { REQUIRE_OK(accel_malloc(device, n, &p)); }
  template <class T>
  Buffer(int32_t device, const std::vector<T>& v, accel_stream_t s)
      : Buffer(device, v.size() * sizeof(T)) {
    REQUIRE_OK(accel_memcpy_async(p, v.data(), bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  }
  ~Buffer() { accel_free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  template <class T>
  std::vector<T> read(accel_stream_t s) const {
    std::vector<T> out(bytes / sizeof(T));
    REQUIRE_OK(accel_memcpy_async(out.data(), p, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    REQUIRE_OK(accel_stream_synchronize(s));
    return out;
  }
};

inline std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale + offset;
  return v;
}

}  // namespace cuda_kernel_test
