// Modules and kernels of the hip plugin end to end through accel.h, over the
// fake HIP runtime (tests/fakes/hip: it reads the code object's ELF and runs
// the shared kernels on the host, in stream order). Scenario [modules] of
// accel-hip-test (meson.build: hip-modules, hip-modules-52). Results are
// checked against values computed here; argument layouts against structs
// with the kernels' signatures (the AMDGPU ABI's layout of explicit
// arguments).
#include <catch2/catch.hpp>

#include <accel/accel.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../common.hpp"
#include "accel_kernels.h"

extern "C" {
// tests/backends/hip/meson.build: the same source for another ISA, and as a
// clang offload bundle (size 0 when hipcc is missing).
extern const unsigned char hip_test_gfx1030[];
extern const size_t hip_test_gfx1030_size;
extern const unsigned char hip_test_bundle[];
extern const size_t hip_test_bundle_size;
}

namespace {

using backend_test::env;

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

#define OK(call)                                                                   \
  do {                                                                             \
    accel_status_t st_ = (call);                                                   \
    INFO(#call << " -> " << accel_status_name(st_) << ": " << accel_last_error()); \
    REQUIRE(st_ == ACCEL_SUCCESS);                                                 \
  } while (0)

// The fake runtime the plugin loaded, for its test hooks.
template <typename Fn>
Fn hook(const char* name) {
  const std::string path = env("ACCEL_HIP_RUNTIME");
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  INFO(path << ": " << (h == nullptr ? dlerror() : "loaded"));
  REQUIRE(h != nullptr);
  void* p = dlsym(h, name);
  INFO(name);
  REQUIRE(p != nullptr);
  return reinterpret_cast<Fn>(p);
}
int live_modules() { return hook<int (*)()>("fake_hip_live_modules")(); }
int kernels_run() { return hook<int (*)()>("fake_hip_kernels_run")(); }
int kernel_faults() { return hook<int (*)()>("fake_hip_kernel_faults")(); }
long long last_arg_bytes() { return hook<long long (*)()>("fake_hip_last_arg_bytes")(); }

// The build's AMD image, or nullptr after saying why the test is skipped.
const accel_module_image_t* amd_image(const char* test) {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT);
  if (im == nullptr) {
    accel_test::skipf("(%s): this build made no AMD code object (hipcc not found: "
        "apt-get install hipcc)",
        test);
  }
  return im;
}

// accel_module_load's status, error and the module (nullptr on failure).
struct Load {
  accel_status_t status;
  std::string error;
  accel_module_t module = nullptr;
};
Load load(const std::vector<accel_module_image_t>& images, const char* options = nullptr,
          int32_t device = -1) {
  Load r;
  r.status = accel_module_load(device, images.data(), images.size(), options, &r.module);
  r.error = accel_last_error();
  return r;
}

accel_kernel_t kernel(accel_module_t m, const char* name) {
  accel_kernel_t k = nullptr;
  OK(accel_module_get_kernel(m, name, &k));
  return k;
}

accel_launch_config_t config(accel_dim3_t grid, accel_dim3_t block, accel_stream_t s,
                             size_t shared = 0) {
  accel_launch_config_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid = grid;
  c.block = block;
  c.shared_bytes = shared;
  c.stream = s;
  return c;
}

accel_kernel_arg_t ptr(const void* p) {
  return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p};
}
template <typename T>
accel_kernel_arg_t val(const T& v) {
  return {ACCEL_KERNEL_ARG_VALUE, sizeof(T), &v};
}
accel_kernel_arg_t local(size_t bytes) { return {ACCEL_KERNEL_ARG_LOCAL_MEMORY, bytes, nullptr}; }

// Device memory of `device` freed at scope exit.
struct Mem {
  void* p = nullptr;
  Mem(int32_t device, size_t bytes) { OK(accel_malloc(device, bytes, &p)); }
  ~Mem() { accel_free(p); }
};

struct Stream {
  accel_stream_t s = nullptr;
  explicit Stream(int32_t device = 0) { OK(accel_stream_create(device, 0, &s)); }
  ~Stream() { accel_stream_destroy(s); }
};

template <typename T>
void put(void* dst, const std::vector<T>& src, accel_stream_t s) {
  OK(accel_memcpy_async(dst, src.data(), src.size() * sizeof(T), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
}
template <typename T>
std::vector<T> get(const void* src, size_t n, accel_stream_t s) {
  std::vector<T> out(n);
  OK(accel_memcpy_async(out.data(), src, n * sizeof(T), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  OK(accel_stream_synchronize(s));
  return out;
}

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale + offset;
  return v;
}

// The kernels' signatures (kernels/accel_kernels.cu) as structs.
struct VectorAddArgs {
  const float* a;
  const float* b;
  float* c;
  uint32_t n;
};
struct Index3dArgs {
  uint32_t* out;
  uint32_t width, height;
};

// A copy of the image whose NT_AMDGPU_METADATA note ("AMDGPU" owner, type
// 32) has another type, so the plugin finds no parameters: the note is
// located here by its header (namesz 7, type 32, "AMDGPU\0").
std::vector<unsigned char> without_metadata(const accel_module_image_t& im) {
  std::vector<unsigned char> b(static_cast<const unsigned char*>(im.data),
                               static_cast<const unsigned char*>(im.data) + im.size);
  static const unsigned char kName[] = {'A', 'M', 'D', 'G', 'P', 'U', 0};
  for (size_t at = 12; at + sizeof kName <= b.size(); ++at) {
    if (std::memcmp(&b[at], kName, sizeof kName) != 0) continue;
    uint32_t namesz, type;
    std::memcpy(&namesz, &b[at - 12], 4);
    std::memcpy(&type, &b[at - 4], 4);
    if (namesz != 7 || type != 32) continue;
    const uint32_t other = 33;
    std::memcpy(&b[at - 4], &other, 4);
    return b;
  }
  FAIL("no NT_AMDGPU_METADATA note in the build's code object");
  return b;
}

}  // namespace

TEST_CASE("modules: the AMD code object loads and its kernels compute", "[modules]") {
  const accel_module_image_t* im = amd_image("compute");
  if (im == nullptr) return;
  uint64_t formats = 0;
  OK(accel_device_module_formats(0, &formats));
  CHECK(formats == ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT));
  CHECK((backend_test::backend_info("hip").caps & ACCEL_CAP_MODULES) != 0);

  // Every image the build has: hip takes only the code object.
  std::vector<accel_module_image_t> all(8);
  all.resize(accel_kernels_images(all.data(), all.size()));
  const int modules_before = live_modules();
  Load l = load(all);
  INFO(l.error);
  REQUIRE(l.status == ACCEL_SUCCESS);
  CHECK(live_modules() == modules_before + 1);
  const int runs_before = kernels_run();
  Stream s;

  const uint32_t n = 1000;  // not a multiple of the block: the bound check matters
  const auto x = ramp(n, 1.0f, 0.5f), y = ramp(n, -2.0f, 7.0f);
  Mem dx(0, n * 4), dy(0, n * 4), dz(0, n * 4);
  put(dx.p, x, s.s);
  put(dy.p, y, s.s);

  SECTION("vector_add (1-D); its attributes and its argument buffer") {
    accel_kernel_t add = kernel(l.module, "vector_add");
    accel_kernel_attributes_t a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    OK(accel_kernel_get_attributes(add, &a));
    int64_t device_max = 0, warp = 0;
    OK(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK, &device_max));
    OK(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_WARP_SIZE, &warp));
    CHECK(a.max_threads_per_block == device_max);
    CHECK(a.preferred_block_multiple == warp);
    CHECK(a.num_args == 4);
    CHECK(a.static_shared_bytes == 0);  // vector_add declares no shared memory
    CHECK(a.num_registers > 0);
    CHECK(a.private_bytes >= 0);

    auto c = config({(n + 63) / 64, 1, 1}, {64, 1, 1}, s.s);
    accel_kernel_arg_t args[] = {ptr(dx.p), ptr(dy.p), ptr(dz.p), val(n)};
    OK(accel_launch_kernel(add, &c, args, 4));
    // The buffer ends at the last parameter, as the metadata lays it out.
    CHECK(last_arg_bytes() ==
          static_cast<long long>(offsetof(VectorAddArgs, n) + sizeof(uint32_t)));
    auto z = get<float>(dz.p, n, s.s);
    for (uint32_t i = 0; i < n; ++i) {
      INFO("element " << i);
      REQUIRE(z[i] == x[i] + y[i]);
    }
  }

  SECTION("saxpy with a float value first") {
    accel_kernel_t saxpy = kernel(l.module, "saxpy");
    const float alpha = 0.75f;
    auto c = config({(n + 127) / 128, 1, 1}, {128, 1, 1}, s.s);
    accel_kernel_arg_t args[] = {val(alpha), ptr(dx.p), ptr(dy.p), val(n)};
    OK(accel_launch_kernel(saxpy, &c, args, 4));
    auto got = get<float>(dy.p, n, s.s);
    for (uint32_t i = 0; i < n; ++i) {
      INFO("element " << i);
      REQUIRE(std::fabs(got[i] - (alpha * x[i] + y[i])) <= 1e-5f * (1 + std::fabs(got[i])));
    }
  }

  SECTION("reduce_sum: a local memory argument and plain shared_bytes") {
    accel_kernel_t reduce = kernel(l.module, "reduce_sum");
    const uint32_t block = 128, groups = (n + block - 1) / block;
    Mem dp(0, groups * 4);
    auto check = [&](const char* how) {
      auto partial = get<float>(dp.p, groups, s.s);
      for (uint32_t g = 0; g < groups; ++g) {
        double want = 0;
        for (uint32_t i = g * block; i < std::min(n, (g + 1) * block); ++i) want += x[i];
        INFO(how << ": block " << g);
        REQUIRE(std::fabs(partial[g] - want) <= 1e-3 * (1 + std::fabs(want)));
      }
    };
    auto c = config({groups, 1, 1}, {block, 1, 1}, s.s);
    accel_kernel_arg_t args[] = {ptr(dx.p), ptr(dp.p), local(block * 4), val(n)};
    OK(accel_launch_kernel(reduce, &c, args, 4));
    check("local memory argument");
    // Named: the copy is asynchronous, so its source must outlive it.
    const std::vector<float> minus_ones(groups, -1.0f);
    OK(accel_memcpy_async(dp.p, minus_ones.data(), groups * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s.s));
    auto c2 = config({groups, 1, 1}, {block, 1, 1}, s.s, block * 4);
    accel_kernel_arg_t plain[] = {ptr(dx.p), ptr(dp.p), val(n)};
    OK(accel_launch_kernel(reduce, &c2, plain, 3));
    check("shared_bytes");
  }

  SECTION("index_3d over 1-D; 2-D and 3-D grids") {
    accel_kernel_t index = kernel(l.module, "index_3d");
    const accel_dim3_t shapes[][2] = {{{40, 1, 1}, {2, 1, 1}},
                                      {{3, 5, 1}, {4, 2, 1}},
                                      {{2, 3, 4}, {2, 2, 2}},
                                      {{1, 1, 3}, {8, 4, 2}}};
    for (const auto& shape : shapes) {
      const accel_dim3_t g = shape[0], b = shape[1];
      const uint32_t w = g.x * b.x, h = g.y * b.y, d = g.z * b.z;
      Mem out(0, size_t{w} * h * d * 4);
      auto c = config(g, b, s.s);
      accel_kernel_arg_t args[] = {ptr(out.p), val(w), val(h)};
      OK(accel_launch_kernel(index, &c, args, 3));
      CHECK(last_arg_bytes() ==
            static_cast<long long>(offsetof(Index3dArgs, height) + sizeof(uint32_t)));
      auto got = get<uint32_t>(out.p, size_t{w} * h * d, s.s);
      for (uint32_t zz = 0; zz < d; ++zz)
        for (uint32_t yy = 0; yy < h; ++yy)
          for (uint32_t xx = 0; xx < w; ++xx) {
            INFO("grid " << g.x << "x" << g.y << "x" << g.z << " block " << b.x << "x" << b.y << "x"
                         << b.z << " at " << xx << "," << yy << "," << zz);
            REQUIRE(got[(size_t{zz} * h + yy) * w + xx] == (xx | (yy << 10) | (zz << 20)));
          }
    }
  }

  SECTION("empty takes no arguments") {
    accel_kernel_t empty = kernel(l.module, "empty");
    auto c = config({3, 2, 1}, {32, 1, 1}, s.s);
    OK(accel_launch_kernel(empty, &c, nullptr, 0));
    OK(accel_stream_synchronize(s.s));
    CHECK(last_arg_bytes() == 0);  // an empty argument buffer
    CHECK(kernels_run() == runs_before + 1);
  }

  OK(accel_stream_synchronize(s.s));
  CHECK(kernel_faults() == 0);
  OK(accel_module_unload(l.module));
  CHECK(live_modules() == modules_before);
}

TEST_CASE("modules: images hip cannot load are refused with the reason", "[modules]") {
  const accel_module_image_t* im = amd_image("refusals");
  if (im == nullptr) return;
  const int modules_before = live_modules();
  std::vector<unsigned char> bytes(static_cast<const unsigned char*>(im->data),
                                   static_cast<const unsigned char*>(im->data) + im->size);
  auto one = [](const std::vector<unsigned char>& b) {
    return std::vector<accel_module_image_t>{
        {ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT, b.data(), b.size()}};
  };

  SECTION("not an ELF") {
    auto bad = bytes;
    bad[0] = 0;
    Load l = load(one(bad));
    INFO(l.error);
    CHECK(l.status == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(l.error, "magic"));
    CHECK(l.module == nullptr);
  }
  SECTION("an ELF for another processor") {
    auto bad = bytes;
    bad[18] = 62;  // EM_X86_64
    bad[19] = 0;
    Load l = load(one(bad));
    INFO(l.error);
    CHECK(l.status == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(l.error, "EM_AMDGPU"));
  }
  SECTION("truncated") {
    auto cut = bytes;
    cut.resize(bytes.size() / 2);
    Load l = load(one(cut));
    INFO(l.error);
    CHECK(l.status == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(l.error, "truncated"));
  }
  SECTION("compiler options") {
    Load l = load(one(bytes), "-O3");
    INFO(l.error);
    CHECK(l.status == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(l.error, "options"));
    CHECK(has(l.error, "-O3"));
    Load empty_options = load(one(bytes), "");  // "" is no option
    INFO(empty_options.error);
    REQUIRE(empty_options.status == ACCEL_SUCCESS);
    OK(accel_module_unload(empty_options.module));
  }
  SECTION("a clang offload bundle") {
    if (hip_test_bundle_size == 0) {
      accel_test::skipf("no offload bundle in this build (hipcc not found)");
      return;
    }
    std::vector<unsigned char> bundle(hip_test_bundle, hip_test_bundle + hip_test_bundle_size);
    Load l = load(one(bundle));
    INFO(l.error);
    CHECK(l.status == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(l.error, "offload bundle"));
  }
  SECTION("code for another GPU: BUILD_FAILED; and the next image is tried") {
    if (hip_test_gfx1030_size == 0) {
      accel_test::skipf("no gfx1030 code object in this build (hipcc not found)");
      return;
    }
    std::vector<unsigned char> other(hip_test_gfx1030, hip_test_gfx1030 + hip_test_gfx1030_size);
    Load l = load(one(other));
    INFO(l.error);
    CHECK(l.status == ACCEL_ERROR_BUILD_FAILED);
    CHECK(has(l.error, "hipErrorNoBinaryForGpu"));
    CHECK(has(l.error, "gfx1030"));  // the image's ISA
    CHECK(has(l.error, "gfx90a"));   // the device's
    std::vector<accel_module_image_t> both = one(other);
    both.push_back({ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT, bytes.data(), bytes.size()});
    Load next = load(both);
    INFO(next.error);
    REQUIRE(next.status == ACCEL_SUCCESS);
    OK(accel_module_unload(next.module));
  }
  CHECK(live_modules() == modules_before);
}

TEST_CASE("modules: unknown kernels and bad launches are refused with nothing queued",
          "[modules]") {
  const accel_module_image_t* im = amd_image("bad launches");
  if (im == nullptr) return;
  Load l = load({*im});
  INFO(l.error);
  REQUIRE(l.status == ACCEL_SUCCESS);
  Stream s;

  accel_kernel_t k = nullptr;
  CHECK(accel_module_get_kernel(l.module, "vector_ad", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
  const std::string why = accel_last_error();
  INFO(why);
  CHECK(has(why, "vector_ad"));
  CHECK(has(why, "hipErrorNotFound"));
  CHECK(has(why, "vector_add"));  // the module's kernels are listed
  CHECK(k == nullptr);

  const uint32_t n = 256;
  Mem dx(0, n * 4), dy(0, n * 4), dz(0, n * 4);
  const std::vector<float> zeros(n, 0.0f);
  put(dz.p, zeros, s.s);
  OK(accel_stream_synchronize(s.s));
  const int runs_before = kernels_run();
  accel_kernel_t add = kernel(l.module, "vector_add");
  auto c = config({n / 64, 1, 1}, {64, 1, 1}, s.s);
  auto refused = [&](const accel_launch_config_t& cfg, const accel_kernel_arg_t* args, size_t count,
                     accel_status_t want, const char* text) {
    const accel_status_t st = accel_launch_kernel(add, &cfg, args, count);
    const std::string error = accel_last_error();
    INFO("expected " << accel_status_name(want) << " with '" << text << "': got "
                     << accel_status_name(st) << ": " << error);
    CHECK(st == want);
    CHECK(has(error, text));
  };
  const accel_kernel_arg_t good[] = {ptr(dx.p), ptr(dy.p), ptr(dz.p), val(n)};
  const uint64_t wide = n;
  const accel_kernel_arg_t three[] = {ptr(dx.p), ptr(dy.p), ptr(dz.p)};
  const accel_kernel_arg_t wrong_size[] = {ptr(dx.p), ptr(dy.p), ptr(dz.p), val(wide)};
  const accel_kernel_arg_t wrong_kind[] = {ptr(dx.p), val(n), ptr(dz.p), val(n)};
  refused(c, three, 3, ACCEL_ERROR_INVALID_ARGUMENT, "takes 4 parameters");
  refused(c, wrong_size, 4, ACCEL_ERROR_INVALID_ARGUMENT, "4 bytes");
  refused(c, wrong_kind, 4, ACCEL_ERROR_INVALID_ARGUMENT, "device pointer");
  // The device's limits (the fake's MI250 GCD: grid y and z up to 65536).
  refused(config({1, 65537, 1}, {1, 1, 1}, s.s), good, 4, ACCEL_ERROR_INVALID_ARGUMENT,
          "hipDeviceAttributeMaxGridDimY");
  refused(config({1u << 22, 1, 1}, {1024, 1, 1}, s.s), good, 4, ACCEL_ERROR_INVALID_ARGUMENT,
          "2^32");
  int64_t lds = 0;
  OK(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK, &lds));
  refused(config({1, 1, 1}, {64, 1, 1}, s.s, static_cast<size_t>(lds) + 1), good, 4,
          ACCEL_ERROR_OUT_OF_MEMORY, "shared memory");
  accel_kernel_t reduce = kernel(l.module, "reduce_sum");
  const accel_kernel_arg_t too_local[] = {ptr(dx.p), ptr(dz.p), local(static_cast<size_t>(lds)),
                                          val(n)};
  auto one_block = config({1, 1, 1}, {64, 1, 1}, s.s, 16);
  CHECK(accel_launch_kernel(reduce, &one_block, too_local, 4) == ACCEL_ERROR_OUT_OF_MEMORY);

  OK(accel_stream_synchronize(s.s));
  CHECK(kernels_run() == runs_before);  // nothing ran
  auto z = get<float>(dz.p, n, s.s);
  CHECK(z == zeros);
  OK(accel_module_unload(l.module));
}

// Issue #31: the local memory arguments plus shared_bytes near SIZE_MAX
// wrapped to a small total; the message showed that total.
TEST_CASE("modules: local memory plus shared_bytes that would wrap is refused with the operands",
          "[modules]") {
  const accel_module_image_t* im = amd_image("wrapping shared memory");
  if (im == nullptr) return;
  Load l = load({*im});
  INFO(l.error);
  REQUIRE(l.status == ACCEL_SUCCESS);
  Stream s;
  const uint32_t n = 64;
  Mem dx(0, n * 4), dz(0, n * 4);
  const int runs_before = kernels_run();
  accel_kernel_t reduce = kernel(l.module, "reduce_sum");
  const accel_kernel_arg_t args[] = {ptr(dx.p), ptr(dz.p), local(1024), val(n)};
  for (size_t shared : {SIZE_MAX - 8, SIZE_MAX, SIZE_MAX - 1023}) {
    INFO("shared_bytes " << shared);
    auto cfg = config({1, 1, 1}, {64, 1, 1}, s.s, shared);
    CHECK(accel_launch_kernel(reduce, &cfg, args, 4) == ACCEL_ERROR_OUT_OF_MEMORY);
    const std::string error = accel_last_error();
    INFO(error);
    CHECK(has(error, "more than SIZE_MAX"));
    CHECK(has(error, "1024 for local memory arguments"));
    CHECK(has(error, std::to_string(shared) + " requested"));
  }
  OK(accel_stream_synchronize(s.s));
  CHECK(kernels_run() == runs_before);  // nothing ran
  OK(accel_module_unload(l.module));
}

TEST_CASE("modules: a code object without metadata still launches and the runtime checks it",
          "[modules]") {
  const accel_module_image_t* im = amd_image("no metadata");
  if (im == nullptr) return;
  const std::vector<unsigned char> bare = without_metadata(*im);
  Load l = load({{ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT, bare.data(), bare.size()}});
  INFO(l.error);
  REQUIRE(l.status == ACCEL_SUCCESS);
  Stream s;
  accel_kernel_t index = kernel(l.module, "index_3d");
  accel_kernel_attributes_t a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  OK(accel_kernel_get_attributes(index, &a));
  CHECK(a.num_args == -1);  // parameters unknown

  const uint32_t w = 8, h = 4, d = 2;
  Mem out(0, w * h * d * 4);
  auto c = config({2, 2, 2}, {4, 2, 1}, s.s);
  accel_kernel_arg_t args[] = {ptr(out.p), val(w), val(h)};
  OK(accel_launch_kernel(index, &c, args, 3));
  // Natural alignment gives the struct's layout.
  CHECK(last_arg_bytes() ==
        static_cast<long long>(offsetof(Index3dArgs, height) + sizeof(uint32_t)));
  auto got = get<uint32_t>(out.p, w * h * d, s.s);
  for (uint32_t zz = 0; zz < d; ++zz)
    for (uint32_t yy = 0; yy < h; ++yy)
      for (uint32_t xx = 0; xx < w; ++xx) {
        INFO(xx << "," << yy << "," << zz);
        REQUIRE(got[(size_t{zz} * h + yy) * w + xx] == (xx | (yy << 10) | (zz << 20)));
      }

  // One argument short: the core cannot tell, the runtime refuses the buffer.
  accel_kernel_arg_t short_args[] = {ptr(out.p), val(w)};
  CHECK(accel_launch_kernel(index, &c, short_args, 2) == ACCEL_ERROR_INVALID_ARGUMENT);
  const std::string why = accel_last_error();
  INFO(why);
  CHECK(has(why, "hipModuleLaunchKernel"));
  CHECK(has(why, "hipErrorInvalidValue"));
  OK(accel_stream_synchronize(s.s));
  OK(accel_module_unload(l.module));
}

TEST_CASE("modules: a module of device 1 runs there and only there", "[modules]") {
  const accel_module_image_t* im = amd_image("device 1");
  if (im == nullptr) return;
  if (accel_device_count() < 2) {
    accel_test::skipf("needs 2 devices (FAKE_HIP_DEVICES=2)");
    return;
  }
  OK(accel_set_device_index(0));
  Load l = load({*im}, nullptr, 1);
  INFO(l.error);
  REQUIRE(l.status == ACCEL_SUCCESS);
  CHECK(accel_current_device_index() == 0);  // the plugin restored the caller's device
  accel_kernel_t add = kernel(l.module, "vector_add");
  const uint32_t n = 300;
  const auto x = ramp(n, 3.0f, 1.0f), y = ramp(n, 0.5f, -4.0f);
  Stream s1(1), s0(0);
  Mem dx(1, n * 4), dy(1, n * 4), dz(1, n * 4);
  put(dx.p, x, s1.s);
  put(dy.p, y, s1.s);
  auto c = config({(n + 31) / 32, 1, 1}, {32, 1, 1}, s1.s);
  accel_kernel_arg_t args[] = {ptr(dx.p), ptr(dy.p), ptr(dz.p), val(n)};
  OK(accel_launch_kernel(add, &c, args, 4));
  CHECK(accel_current_device_index() == 0);
  auto z = get<float>(dz.p, n, s1.s);
  for (uint32_t i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(z[i] == x[i] + y[i]);
  }
  auto on0 = config({1, 1, 1}, {32, 1, 1}, s0.s);
  CHECK(accel_launch_kernel(add, &on0, args, 4) == ACCEL_ERROR_DEVICE_MISMATCH);
  OK(accel_module_unload(l.module));
  CHECK(kernel_faults() == 0);
}
