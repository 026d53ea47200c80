// End-to-end tests of the OpenCL backend's modules and kernels (ABI 1.2)
// through accel.h, the real ocl-icd loader and PoCL's CPU devices: the
// shared kernels (kernels/accel_kernels.cl, embedded by accel_kernels_dep)
// built from OpenCL C and from PoCL's own binary, launched over 1-, 2- and
// 3-D grids with values, device pointers and local memory, results checked
// against the same computation on the host; build failures and their log;
// malformed, foreign and forged binaries; two threads launching one kernel;
// launches behind a host function (PoCL's basic device holds them on the
// host); launches refused before anything is queued. Tag [modules]; see
// meson.build for the scenarios (two devices, "pthread basic", and one).
#include <catch2/catch.hpp>

#include "../common.hpp"
#include "../interop.hpp"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <accel/accel.h>

#include <accel_kernels.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using backend_test::device_native_of;
using backend_test::env;

#define REQUIRE_OK(expr)                                                           \
  do {                                                                             \
    accel_status_t st_ = (expr);                                                   \
    INFO(#expr << " -> " << accel_status_name(st_) << ": " << accel_last_error()); \
    REQUIRE(st_ == ACCEL_SUCCESS);                                                 \
  } while (0)

#define REQUIRE_CL(expr)         \
  do {                           \
    cl_int e_ = (expr);          \
    INFO(#expr << " -> " << e_); \
    REQUIRE(e_ == CL_SUCCESS);   \
  } while (0)

bool has(const std::string& hay, const char* needle) {
  return hay.find(needle) != std::string::npos;
}

int32_t devices() { return accel_device_count(); }

std::string build_log() {
  size_t n = 0;
  REQUIRE_OK(accel_module_build_log(nullptr, 0, &n));
  std::string s(n + 1, '\0');
  REQUIRE_OK(accel_module_build_log(s.data(), s.size(), &n));
  s.resize(n);
  return s;
}

accel_module_image_t image_of(accel_module_format_t f, const void* data, size_t size) {
  accel_module_image_t im;
  im.format = f;
  im.data = data;
  im.size = size;
  return im;
}

// The shared kernels as OpenCL C, loaded on device d.
accel_module_t load_source(int32_t d) {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
  REQUIRE(im != nullptr);
  accel_module_t m = nullptr;
  REQUIRE_OK(accel_module_load(d, im, 1, nullptr, &m));
  return m;
}

accel_kernel_t kernel_of(accel_module_t m, const char* name) {
  accel_kernel_t k = nullptr;
  REQUIRE_OK(accel_module_get_kernel(m, name, &k));
  return k;
}

accel_launch_config_t config(accel_dim3_t grid, accel_dim3_t block, accel_stream_t s) {
  accel_launch_config_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid = grid;
  c.block = block;
  c.stream = s;
  return c;
}

accel_kernel_arg_t ptr_arg(void* p) { return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p}; }
template <class T>
accel_kernel_arg_t value_arg(const T& v) {
  return {ACCEL_KERNEL_ARG_VALUE, sizeof(T), &v};
}
accel_kernel_arg_t local_arg(size_t bytes) {
  return {ACCEL_KERNEL_ARG_LOCAL_MEMORY, bytes, nullptr};
}

// Device memory holding `v` (copied before returning: v may be a temporary).
template <class T>
void* upload(int32_t d, const std::vector<T>& v, accel_stream_t s) {
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(d, v.size() * sizeof(T), &p));
  REQUIRE_OK(accel_memcpy_async(p, v.data(), v.size() * sizeof(T), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  return p;
}

template <class T>
std::vector<T> download(const void* p, size_t n, accel_stream_t s) {
  std::vector<T> v(n);
  REQUIRE_OK(accel_memcpy_async(v.data(), p, n * sizeof(T), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  return v;
}

std::vector<float> floats(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 97) * scale + offset;
  return v;
}

// The device's own OpenCL handles (accel_device_native_handle).
struct Native {
  cl_device_id dev;
  cl_context ctx;
};
Native native(int32_t d) {
  const accel_native_handle_t h = device_native_of(d);
  return {static_cast<cl_device_id>(h.handle), static_cast<cl_context>(h.context)};
}

std::string device_info_text(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}

// PoCL's binary of the shared kernels for device d, made by OpenCL directly
// in accel's context (clGetProgramInfo(CL_PROGRAM_BINARIES)).
std::vector<unsigned char> pocl_binary(int32_t d) {
  const Native n = native(d);
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
  REQUIRE(im != nullptr);
  const char* text = static_cast<const char*>(im->data);
  size_t size = im->size;
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(n.ctx, 1, &text, &size, &err);
  REQUIRE(err == CL_SUCCESS);
  REQUIRE_CL(clBuildProgram(p, 1, &n.dev, "", nullptr, nullptr));
  size_t bytes = 0;
  REQUIRE_CL(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bytes, &bytes, nullptr));
  std::vector<unsigned char> bin(bytes);
  unsigned char* out[1] = {bin.data()};
  REQUIRE_CL(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof out, out, nullptr));
  clReleaseProgram(p);
  return bin;
}

// vector_add over n elements in blocks of `block` on stream s; checks c.
void check_vector_add(accel_module_t m, int32_t d, accel_stream_t s, uint32_t n, uint32_t block) {
  INFO("vector_add, device " << d << ", n " << n << ", block " << block);
  const auto a = floats(n, 0.5f, 1.0f), b = floats(n, -0.25f, 3.0f);
  void* da = upload(d, a, s);
  void* db = upload(d, b, s);
  void* dc = upload(d, std::vector<float>(n, -1.0f), s);
  accel_kernel_t k = kernel_of(m, "vector_add");
  const accel_kernel_arg_t args[] = {ptr_arg(da), ptr_arg(db), ptr_arg(dc), value_arg(n)};
  const accel_launch_config_t c = config({(n + block - 1) / block, 1, 1}, {block, 1, 1}, s);
  REQUIRE_OK(accel_launch_kernel(k, &c, args, 4));
  const auto out = download<float>(dc, n, s);
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (out[i] != a[i] + b[i]) ++bad;
  CHECK(bad == 0);
  REQUIRE_OK(accel_free(da));
  REQUIRE_OK(accel_free(db));
  REQUIRE_OK(accel_free(dc));
}

// A host function that waits until the test opens it.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  static void wait(void* p) {
    auto* l = static_cast<Latch*>(p);
    std::unique_lock<std::mutex> lock(l->mu);
    l->cv.wait(lock, [&] { return l->open; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("modules: the backend declares modules; formats are what the device reads", "[modules]") {
  REQUIRE(std::string(accel_current_accelerator()) == "opencl");
  REQUIRE(devices() == std::atoi(env("ACCEL_EXPECT_DEVICES").c_str()));
  accel_backend_info_t info;
  bool found = false;
  for (size_t i = 0; i < accel_backend_count(); ++i) {
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (accel_get_backend_info(i, &info) == ACCEL_SUCCESS && std::string(info.name) == "opencl") {
      found = true;
      CHECK((info.capabilities & ACCEL_CAP_MODULES) != 0);
    }
  }
  CHECK(found);
  for (int32_t d = 0; d < devices(); ++d) {
    INFO("device " << d);
    uint64_t f = 0;
    REQUIRE_OK(accel_device_module_formats(d, &f));
    CHECK((f & ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_OPENCL_C)) != 0);
    CHECK((f & ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_NATIVE_BINARY)) != 0);
    // SPIR-V exactly where the device names it in CL_DEVICE_IL_VERSION
    // (PoCL 3.1's CPU devices answer "").
    const std::string il = device_info_text(native(d).dev, CL_DEVICE_IL_VERSION);
    CHECK(((f & ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_SPIRV)) != 0) == has(il, "SPIR-V"));
    for (auto other :
         {ACCEL_MODULE_FORMAT_PTX, ACCEL_MODULE_FORMAT_CUBIN, ACCEL_MODULE_FORMAT_FATBIN,
          ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT, ACCEL_MODULE_FORMAT_SIM_HOST})
      CHECK((f & ACCEL_MODULE_FORMAT_BIT(other)) == 0);
  }
}

TEST_CASE("modules: vector_add and saxpy from OpenCL C on every device", "[modules]") {
  for (int32_t d = 0; d < devices(); ++d) {
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    accel_module_t m = load_source(d);
    check_vector_add(m, d, s, 1000, 64);  // a partial last block
    check_vector_add(m, d, s, 4096, 256);

    INFO("saxpy, device " << d);
    const uint32_t n = 3000;
    const float alpha = 2.5f;
    const auto x = floats(n, 0.125f, -2.0f), y = floats(n, 1.5f, 0.5f);
    void* dx = upload(d, x, s);
    void* dy = upload(d, y, s);
    accel_kernel_t k = kernel_of(m, "saxpy");
    const accel_kernel_arg_t args[] = {value_arg(alpha), ptr_arg(dx), ptr_arg(dy), value_arg(n)};
    const accel_launch_config_t c = config({(n + 127) / 128, 1, 1}, {128, 1, 1}, s);
    REQUIRE_OK(accel_launch_kernel(k, &c, args, 4));
    const auto out = download<float>(dy, n, s);
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (std::fabs(out[i] - (alpha * x[i] + y[i])) > 1e-5f * (1.0f + std::fabs(y[i]))) ++bad;
    CHECK(bad == 0);
    // The same handle for the same name.
    CHECK(kernel_of(m, "saxpy") == k);
    REQUIRE_OK(accel_free(dx));
    REQUIRE_OK(accel_free(dy));
    REQUIRE_OK(accel_module_unload(m));
    REQUIRE_OK(accel_stream_destroy(s));
  }
}

TEST_CASE("modules: reduce_sum through local memory", "[modules]") {
  for (int32_t d = 0; d < devices(); ++d) {
    INFO("device " << d);
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    accel_module_t m = load_source(d);
    accel_kernel_t k = kernel_of(m, "reduce_sum");
    accel_kernel_attributes_t attrs;
    std::memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    REQUIRE_OK(accel_kernel_get_attributes(k, &attrs));
    CHECK(attrs.num_args == 4);
    CHECK(attrs.max_threads_per_block >= 128);
    CHECK(attrs.num_registers == -1);
    CHECK(attrs.preferred_block_multiple >= 1);
    CHECK(attrs.static_shared_bytes >= 0);
    CHECK(attrs.private_bytes >= 0);
    const uint32_t n = 10000, block = 128, groups = (n + block - 1) / block;
    const auto in = floats(n, 0.25f, 1.0f);
    void* din = upload(d, in, s);
    void* dpart = upload(d, std::vector<float>(groups, -7.0f), s);
    const accel_kernel_arg_t args[] = {ptr_arg(din), ptr_arg(dpart),
                                       local_arg(block * sizeof(float)), value_arg(n)};
    const accel_launch_config_t c = config({groups, 1, 1}, {block, 1, 1}, s);
    REQUIRE_OK(accel_launch_kernel(k, &c, args, 4));
    const auto part = download<float>(dpart, groups, s);
    size_t bad = 0;
    for (uint32_t g = 0; g < groups; ++g) {
      double want = 0;
      for (uint32_t i = g * block; i < n && i < (g + 1) * block; ++i) want += in[i];
      if (std::fabs(part[g] - want) > 1e-3 * (1.0 + std::fabs(want))) ++bad;
    }
    CHECK(bad == 0);
    REQUIRE_OK(accel_free(din));
    REQUIRE_OK(accel_free(dpart));
    REQUIRE_OK(accel_module_unload(m));
    REQUIRE_OK(accel_stream_destroy(s));
  }
}

TEST_CASE("modules: index_3d over 1-D; 2-D and 3-D grids", "[modules]") {
  struct Shape {
    accel_dim3_t grid, block;
  };
  const Shape shapes[] = {{{8, 1, 1}, {16, 1, 1}},  // 1-D
                          {{4, 3, 1}, {8, 4, 1}},   // 2-D
                          {{2, 3, 4}, {4, 2, 2}},   // 3-D
                          {{3, 1, 5}, {2, 1, 3}}};  // x and z only
  for (int32_t d = 0; d < devices(); ++d) {
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    accel_module_t m = load_source(d);
    accel_kernel_t k = kernel_of(m, "index_3d");
    for (const Shape& sh : shapes) {
      const uint32_t w = sh.grid.x * sh.block.x, h = sh.grid.y * sh.block.y,
                     depth = sh.grid.z * sh.block.z;
      INFO("device " << d << ": " << w << " x " << h << " x " << depth);
      const size_t n = size_t{w} * h * depth;
      void* out = upload(d, std::vector<uint32_t>(n, 0xFFFFFFFFu), s);
      const accel_kernel_arg_t args[] = {ptr_arg(out), value_arg(w), value_arg(h)};
      const accel_launch_config_t c = config(sh.grid, sh.block, s);
      REQUIRE_OK(accel_launch_kernel(k, &c, args, 3));
      const auto got = download<uint32_t>(out, n, s);
      size_t bad = 0;
      for (uint32_t z = 0; z < depth; ++z)
        for (uint32_t y = 0; y < h; ++y)
          for (uint32_t x = 0; x < w; ++x)
            if (got[(size_t{z} * h + y) * w + x] != (x | (y << 10) | (z << 20))) ++bad;
      CHECK(bad == 0);
      REQUIRE_OK(accel_free(out));
    }
    // A grid with a 0 extent queues nothing.
    const accel_kernel_arg_t args[] = {ptr_arg(nullptr), value_arg(1u), value_arg(1u)};
    const accel_launch_config_t c = config({0, 1, 1}, {1, 1, 1}, s);
    CHECK(accel_launch_kernel(k, &c, args, 3) == ACCEL_SUCCESS);
    REQUIRE_OK(accel_stream_synchronize(s));
    REQUIRE_OK(accel_module_unload(m));
    REQUIRE_OK(accel_stream_destroy(s));
  }
}

TEST_CASE("modules: a source that does not compile is BUILD_FAILED with PoCL's log", "[modules]") {
  const std::string bad =
      "__kernel void broken(__global float* x) { x[0] = accel_undeclared_name; }\n";
  for (int32_t d = 0; d < devices(); ++d) {
    INFO("device " << d);
    const accel_module_image_t im = image_of(ACCEL_MODULE_FORMAT_OPENCL_C, bad.data(), bad.size());
    accel_module_t m = nullptr;
    CHECK(accel_module_load(d, &im, 1, nullptr, &m) == ACCEL_ERROR_BUILD_FAILED);
    CHECK(m == nullptr);
    const std::string err = accel_last_error();
    INFO(err);
    CHECK(has(err, "CL_BUILD_PROGRAM_FAILURE"));
    CHECK(has(err, "accel_undeclared_name"));  // the start of the log is in the detail
    const std::string log = build_log();
    INFO(log);
    CHECK(has(log, "opencl_c"));  // the image's header
    CHECK(has(log, "accel_undeclared_name"));
    CHECK(has(log, "error"));
  }
  // A warning: the load succeeds and the log still has it.
  const std::string warns = "#warning accel_test_warning_text\n__kernel void fine(void) {}\n";
  const accel_module_image_t im =
      image_of(ACCEL_MODULE_FORMAT_OPENCL_C, warns.data(), warns.size());
  accel_module_t m = nullptr;
  REQUIRE_OK(accel_module_load(0, &im, 1, nullptr, &m));
  CHECK(has(build_log(), "accel_test_warning_text"));
  REQUIRE_OK(accel_module_unload(m));
  // A clean build leaves no log.
  accel_module_t clean = load_source(0);
  CHECK(build_log().empty());
  REQUIRE_OK(accel_module_unload(clean));
}

TEST_CASE("modules: malformed sources and refused options are INVALID_ARGUMENT", "[modules]") {
  accel_module_t m = nullptr;
  const std::string nul("__kernel void a(void) {}\0__kernel void b(void) {}\n", 50);
  accel_module_image_t im = image_of(ACCEL_MODULE_FORMAT_OPENCL_C, nul.data(), nul.size());
  CHECK(accel_module_load(0, &im, 1, nullptr, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(accel_last_error(), "NUL byte at offset 24"));
  // A terminating NUL counted in the size is the C string's, and fine.
  const char with_nul[] = "__kernel void z(void) {}";
  im = image_of(ACCEL_MODULE_FORMAT_OPENCL_C, with_nul, sizeof with_nul);
  REQUIRE_OK(accel_module_load(0, &im, 1, nullptr, &m));
  REQUIRE_OK(accel_module_unload(m));
  // Options clBuildProgram refuses.
  const accel_module_image_t* src = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
  m = nullptr;
  CHECK(accel_module_load(0, src, 1, "-accel-no-such-option", &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(accel_last_error(), "CL_INVALID_BUILD_OPTIONS"));
  CHECK(has(accel_last_error(), "-accel-no-such-option"));
  CHECK(m == nullptr);
  // Options it takes: a define the source uses.
  const std::string uses = "__kernel void k(__global int* o) { o[0] = ACCEL_TEST_VALUE; }";
  im = image_of(ACCEL_MODULE_FORMAT_OPENCL_C, uses.data(), uses.size());
  REQUIRE_OK(accel_module_load(0, &im, 1, "-DACCEL_TEST_VALUE=1234", &m));
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  void* out = upload(0, std::vector<int32_t>(1, 0), s);
  const accel_kernel_arg_t args[] = {ptr_arg(out)};
  const accel_launch_config_t c = config({1, 1, 1}, {1, 1, 1}, s);
  REQUIRE_OK(accel_launch_kernel(kernel_of(m, "k"), &c, args, 1));
  CHECK(download<int32_t>(out, 1, s)[0] == 1234);
  REQUIRE_OK(accel_free(out));
  REQUIRE_OK(accel_module_unload(m));
  REQUIRE_OK(accel_stream_destroy(s));
  // No kernel of that name.
  m = load_source(0);
  accel_kernel_t k = nullptr;
  CHECK(accel_module_get_kernel(m, "no_such_kernel", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(accel_last_error(), "no kernel 'no_such_kernel' in the module"));
  REQUIRE_OK(accel_module_unload(m));
}

TEST_CASE("modules: PoCL's native binary round trip; and binaries PoCL must not read",
          "[modules]") {
  for (int32_t d = 0; d < devices(); ++d) {
    INFO("device " << d);
    const std::vector<unsigned char> bin = pocl_binary(d);
    REQUIRE(bin.size() > 77);
    REQUIRE(std::memcmp(bin.data(), "poclbin", 8) == 0);
    const accel_module_image_t im =
        image_of(ACCEL_MODULE_FORMAT_NATIVE_BINARY, bin.data(), bin.size());
    accel_module_t m = nullptr;
    REQUIRE_OK(accel_module_load(d, &im, 1, nullptr, &m));
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    check_vector_add(m, d, s, 777, 32);
    // Argument information came through the binary: the core checks counts.
    accel_kernel_t k = kernel_of(m, "vector_add");
    accel_kernel_attributes_t attrs;
    std::memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    REQUIRE_OK(accel_kernel_get_attributes(k, &attrs));
    CHECK(attrs.num_args == 4);
    REQUIRE_OK(accel_module_unload(m));
    REQUIRE_OK(accel_stream_destroy(s));

    // Cut short: refused before PoCL reads it (PoCL 3.1 crashes on it).
    for (size_t cut :
         {size_t{10}, size_t{76}, size_t{77}, size_t{200}, bin.size() / 2, bin.size() - 1}) {
      INFO("cut to " << cut << " bytes");
      const accel_module_image_t part =
          image_of(ACCEL_MODULE_FORMAT_NATIVE_BINARY, bin.data(), cut);
      m = nullptr;
      CHECK(accel_module_load(d, &part, 1, nullptr, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
      CHECK(has(accel_last_error(), cut < 77 ? "too short" : "PoCL binary"));
      CHECK(m == nullptr);
    }
    // Bytes after the last kernel.
    std::vector<unsigned char> longer = bin;
    longer.push_back(0);
    accel_module_image_t bad =
        image_of(ACCEL_MODULE_FORMAT_NATIVE_BINARY, longer.data(), longer.size());
    CHECK(accel_module_load(d, &bad, 1, nullptr, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(accel_last_error(), "after the last kernel record"));
    // A file path that climbs out of PoCL's cache directory.
    std::vector<unsigned char> forged = bin;
    const std::string path = "/program.bc", evil = "/../evil.bc";
    auto at = std::search(forged.begin(), forged.end(), path.begin(), path.end());
    REQUIRE(at != forged.end());
    std::copy(evil.begin(), evil.end(), at);
    bad = image_of(ACCEL_MODULE_FORMAT_NATIVE_BINARY, forged.data(), forged.size());
    CHECK(accel_module_load(d, &bad, 1, nullptr, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(accel_last_error(), "'..'"));
    // Not a PoCL binary at all: PoCL says CL_INVALID_BINARY.
    std::vector<unsigned char> junk(256, 0x5A);
    bad = image_of(ACCEL_MODULE_FORMAT_NATIVE_BINARY, junk.data(), junk.size());
    CHECK(accel_module_load(d, &bad, 1, nullptr, &m) == ACCEL_ERROR_BUILD_FAILED);
    CHECK(has(accel_last_error(), "CL_INVALID_BINARY"));
    // With a source after it, the core falls back to the source.
    const accel_module_image_t two[] = {bad, *accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C)};
    REQUIRE_OK(accel_module_load(d, two, 2, nullptr, &m));
    REQUIRE_OK(accel_module_unload(m));
  }
  if (devices() >= 2) {
    // PoCL's binaries carry their device's hash: pthread's is not basic's.
    const std::vector<unsigned char> bin0 = pocl_binary(0);
    const accel_module_image_t im =
        image_of(ACCEL_MODULE_FORMAT_NATIVE_BINARY, bin0.data(), bin0.size());
    accel_module_t m = nullptr;
    CHECK(accel_module_load(1, &im, 1, nullptr, &m) == ACCEL_ERROR_BUILD_FAILED);
    CHECK(has(accel_last_error(), "another device or driver"));
    CHECK(m == nullptr);
  }
}

TEST_CASE("modules: two threads launch one kernel at once", "[modules]") {
  for (int32_t d = 0; d < devices(); ++d) {
    INFO("device " << d);
    accel_module_t m = load_source(d);
    accel_kernel_t k = kernel_of(m, "saxpy");
    constexpr uint32_t n = 512;
    constexpr int kLaunches = 150;
    struct Side {
      accel_stream_t s = nullptr;
      float alpha = 0;
      std::vector<float> x, y;
      void* dx = nullptr;
      void* dy = nullptr;
      accel_status_t first_failure = ACCEL_SUCCESS;
    } sides[2];
    for (int t = 0; t < 2; ++t) {
      Side& sd = sides[t];
      REQUIRE_OK(accel_stream_create(d, 0, &sd.s));
      sd.alpha = t == 0 ? 1.0f : -2.0f;
      sd.x = floats(n, t == 0 ? 0.5f : 0.25f, static_cast<float>(t));
      sd.y = floats(n, 0.0f, t == 0 ? 10.0f : -10.0f);
      sd.dx = upload(d, sd.x, sd.s);
      sd.dy = upload(d, sd.y, sd.s);
      REQUIRE_OK(accel_stream_synchronize(sd.s));
    }
    std::atomic<int> ready{0};
    auto run = [&](Side& sd) {
      ready.fetch_add(1);
      accel_test::wait_until([&] { return ready.load() >= 2; }, "both launcher threads to start");
      const accel_kernel_arg_t args[] = {value_arg(sd.alpha), ptr_arg(sd.dx), ptr_arg(sd.dy),
                                         value_arg(n)};
      const accel_launch_config_t c = config({n / 64, 1, 1}, {64, 1, 1}, sd.s);
      for (int i = 0; i < kLaunches; ++i) {
        accel_status_t st = accel_launch_kernel(k, &c, args, 4);
        if (st != ACCEL_SUCCESS && sd.first_failure == ACCEL_SUCCESS) sd.first_failure = st;
      }
    };
    std::thread a(run, std::ref(sides[0])), b(run, std::ref(sides[1]));
    a.join();
    b.join();
    for (Side& sd : sides) {
      CHECK(sd.first_failure == ACCEL_SUCCESS);
      const auto out = download<float>(sd.dy, n, sd.s);
      size_t bad = 0;
      for (uint32_t i = 0; i < n; ++i) {
        float want = sd.y[i];
        for (int l = 0; l < kLaunches; ++l) want = sd.alpha * sd.x[i] + want;
        if (std::fabs(out[i] - want) > 1e-3f * (1.0f + std::fabs(want))) ++bad;
      }
      CHECK(bad == 0);
      REQUIRE_OK(accel_free(sd.dx));
      REQUIRE_OK(accel_free(sd.dy));
      REQUIRE_OK(accel_stream_destroy(sd.s));
    }
    REQUIRE_OK(accel_module_unload(m));
  }
}

TEST_CASE("modules: a launch waits for a host function before it in the stream", "[modules]") {
  // pthread holds later work on the device, basic on the host (the launch is
  // kept with a copy of its arguments and submitted when the function ran).
  for (int32_t d = 0; d < devices(); ++d) {
    INFO("device " << d);
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    accel_module_t m = load_source(d);
    accel_kernel_t k = kernel_of(m, "saxpy");
    const uint32_t n = 256;
    float alpha = 3.0f;
    // Filled by the host function, so registered: a copy from pageable
    // memory reads its source before accel_memcpy_async returns.
    std::vector<float> x(n, 0.0f);
    REQUIRE_OK(accel_host_register(x.data(), n * sizeof(float), 0));
    const auto y = floats(n, 1.0f, 0.0f);
    void* dx = nullptr;
    REQUIRE_OK(accel_malloc(d, n * sizeof(float), &dx));
    void* dy = upload(d, y, s);
    Latch latch;
    struct Fill {
      Latch* latch;
      std::vector<float>* x;
    } fill{&latch, &x};
    REQUIRE_OK(accel_launch_host_func(
        s,
        [](void* p) {
          auto* f = static_cast<Fill*>(p);
          Latch::wait(f->latch);
          for (size_t i = 0; i < f->x->size(); ++i) (*f->x)[i] = static_cast<float>(i) + 0.5f;
        },
        &fill));
    REQUIRE_OK(accel_memcpy_async(dx, x.data(), n * sizeof(float), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    {
      // The arguments are copied at launch: change them right after.
      uint32_t count = n;
      const accel_kernel_arg_t args[] = {value_arg(alpha), ptr_arg(dx), ptr_arg(dy),
                                         value_arg(count)};
      const accel_launch_config_t c = config({n / 32, 1, 1}, {32, 1, 1}, s);
      REQUIRE_OK(accel_launch_kernel(k, &c, args, 4));
      alpha = -100.0f;
      count = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
    latch.release();
    const auto out = download<float>(dy, n, s);
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (std::fabs(out[i] - (3.0f * (static_cast<float>(i) + 0.5f) + y[i])) > 1e-4f * (1 + y[i]))
        ++bad;
    CHECK(bad == 0);
    REQUIRE_OK(accel_host_unregister(x.data()));
    REQUIRE_OK(accel_free(dx));
    REQUIRE_OK(accel_free(dy));
    REQUIRE_OK(accel_module_unload(m));
    REQUIRE_OK(accel_stream_destroy(s));
  }
}

TEST_CASE("modules: launches refused before anything is queued", "[modules]") {
  for (int32_t d = 0; d < devices(); ++d) {
    INFO("device " << d);
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    accel_module_t m = load_source(d);
    accel_kernel_t add = kernel_of(m, "vector_add");
    accel_kernel_t reduce = kernel_of(m, "reduce_sum");
    const uint32_t n = 64;
    const std::vector<float> sentinel(n, 42.0f);
    void* a = upload(d, sentinel, s);
    void* c = upload(d, sentinel, s);
    const accel_launch_config_t cfg = config({1, 1, 1}, {n, 1, 1}, s);
    auto refused = [&](accel_kernel_t k, const accel_launch_config_t& conf,
                       std::vector<accel_kernel_arg_t> args, accel_status_t want,
                       const char* says) {
      INFO("expecting " << accel_status_name(want) << " saying '" << says << "'");
      CHECK(accel_launch_kernel(k, &conf, args.data(), args.size()) == want);
      INFO(accel_last_error());
      CHECK(has(accel_last_error(), says));
    };
    // Count, kind, size.
    refused(add, cfg, {ptr_arg(a), ptr_arg(a), ptr_arg(c)}, ACCEL_ERROR_INVALID_ARGUMENT,
            "takes 4 parameters");
    refused(add, cfg, {ptr_arg(a), ptr_arg(a), ptr_arg(c), value_arg(n), value_arg(n)},
            ACCEL_ERROR_INVALID_ARGUMENT, "passes more");
    refused(add, cfg, {ptr_arg(a), value_arg(1.0f), ptr_arg(c), value_arg(n)},
            ACCEL_ERROR_INVALID_ARGUMENT, "takes device pointer");
    refused(add, cfg, {ptr_arg(a), ptr_arg(a), ptr_arg(c), value_arg(uint64_t{n})},
            ACCEL_ERROR_INVALID_ARGUMENT, "is 4 bytes");
    refused(add, cfg, {ptr_arg(a), ptr_arg(a), ptr_arg(c), local_arg(4)},
            ACCEL_ERROR_INVALID_ARGUMENT, "takes value");
    refused(reduce, cfg, {ptr_arg(a), ptr_arg(c), value_arg(1.0f), value_arg(n)},
            ACCEL_ERROR_INVALID_ARGUMENT, "takes local memory");
    // Dynamic shared memory has no OpenCL counterpart.
    accel_launch_config_t shared = cfg;
    shared.shared_bytes = 256;
    refused(add, shared, {ptr_arg(a), ptr_arg(a), ptr_arg(c), value_arg(n)},
            ACCEL_ERROR_INVALID_ARGUMENT, "LOCAL_MEMORY argument");
    // Local memory over the device's.
    const Native nat = native(d);
    cl_ulong local_mem = 0;
    REQUIRE_CL(
        clGetDeviceInfo(nat.dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, nullptr));
    refused(reduce, cfg,
            {ptr_arg(a), ptr_arg(c), local_arg(static_cast<size_t>(local_mem) + 4), value_arg(n)},
            ACCEL_ERROR_OUT_OF_MEMORY, "CL_DEVICE_LOCAL_MEM_SIZE");
    // A block over the kernel's limit (the core's check) and over a
    // dimension's (the backend's).
    accel_kernel_attributes_t attrs;
    std::memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    REQUIRE_OK(accel_kernel_get_attributes(add, &attrs));
    const auto limit = static_cast<uint32_t>(attrs.max_threads_per_block);
    refused(add, config({1, 1, 1}, {limit + 1, 1, 1}, s),
            {ptr_arg(a), ptr_arg(a), ptr_arg(c), value_arg(n)}, ACCEL_ERROR_INVALID_ARGUMENT,
            "at most");
    size_t items[3] = {};
    REQUIRE_CL(
        clGetDeviceInfo(nat.dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, nullptr));
    if (items[2] < limit) {
      refused(add, config({1, 1, 1}, {1, 1, static_cast<uint32_t>(items[2]) + 1}, s),
              {ptr_arg(a), ptr_arg(a), ptr_arg(c), value_arg(n)}, ACCEL_ERROR_INVALID_ARGUMENT,
              "CL_DEVICE_MAX_WORK_ITEM_SIZES[2]");
    }
    // More work-items than a size_t of the device numbers (2^96).
    const uint32_t big = 0xFFFFFFFFu;
    refused(add, config({big, big, big}, {1, 1, 1}, s),
            {ptr_arg(a), ptr_arg(a), ptr_arg(c), value_arg(n)}, ACCEL_ERROR_INVALID_ARGUMENT,
            "CL_DEVICE_ADDRESS_BITS");
    // Nothing ran: the output still holds the sentinel, the stream is idle.
    REQUIRE_OK(accel_stream_synchronize(s));
    CHECK(accel_stream_query(s) == ACCEL_SUCCESS);
    CHECK(download<float>(c, n, s) == sentinel);
    // Unloading ends the kernel handles.
    REQUIRE_OK(accel_module_unload(m));
    const accel_kernel_arg_t args[] = {ptr_arg(a), ptr_arg(a), ptr_arg(c), value_arg(n)};
    CHECK(accel_launch_kernel(add, &cfg, args, 4) == ACCEL_ERROR_INVALID_ARGUMENT);
    REQUIRE_OK(accel_free(a));
    REQUIRE_OK(accel_free(c));
    REQUIRE_OK(accel_stream_destroy(s));
  }
}
