// ABI 1.2 on the Level Zero plugin: modules from the build's SPIR-V image
// (kernels/accel_kernels.cl through clang-15 and llvm-spirv-15), run by the
// fake driver's host implementations of those kernels, through accel.h and
// the real Level Zero loader. Scenarios (meson.build): [modules] (also with
// FAKE_ZE_MAX_GROUP_SIZE_Z=64, for a per-dimension group limit),
// [modules-intercept] (the loader's intercept layer: wrapped handles), and
// [modules-no-spirv] (a device without SPIR-V). Every expected result is
// computed here from the kernels' definitions in kernels/accel_kernels.cl.
#include <catch2/catch.hpp>

#include "backend.hpp"

#include "../common.hpp"
#include "accel_kernels.h"

#include <accel/accel.h>
#include <dlfcn.h>
#include <level_zero/ze_api.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef ZE_TEST_HAVE_UNSIZED_SPIRV
extern "C" {
extern const unsigned char ze_test_unsized_spirv[];  // unsized_arg.cl's SPIR-V
extern const size_t ze_test_unsized_spirv_size;
}
#endif

namespace {

#define MOD_REQUIRE_OK(expr)                                                       \
  do {                                                                             \
    accel_status_t st_ = (expr);                                                   \
    INFO(#expr << " -> " << accel_status_name(st_) << ": " << accel_last_error()); \
    REQUIRE(st_ == ACCEL_SUCCESS);                                                 \
  } while (0)

bool has(const std::string& hay, const char* needle) {
  return hay.find(needle) != std::string::npos;
}

// The build's SPIR-V image, or null after saying the test is skipped.
const accel_module_image_t* spirv_image() {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_SPIRV);
  if (im == nullptr) {
    accel_test::skipf(
        "this build has no SPIR-V kernel image (clang-15 or llvm-spirv-15 missing, or "
        "-Dspirv=disabled)");
  }
  return im;
}

std::string build_log() {
  size_t n = 0;
  REQUIRE(accel_module_build_log(nullptr, 0, &n) == ACCEL_SUCCESS);
  std::string s(n + 1, '\0');
  REQUIRE(accel_module_build_log(s.data(), s.size(), &n) == ACCEL_SUCCESS);
  s.resize(n);
  return s;
}

// A module loaded from the SPIR-V image on `device`, unloaded at scope end.
struct Module {
  accel_module_t m = nullptr;
  explicit Module(const accel_module_image_t* im, int32_t device = 0, const char* options = "") {
    MOD_REQUIRE_OK(accel_module_load(device, im, 1, options, &m));
  }
  ~Module() {
    if (m != nullptr) CHECK(accel_module_unload(m) == ACCEL_SUCCESS);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  accel_kernel_t kernel(const char* name) const {
    accel_kernel_t k = nullptr;
    MOD_REQUIRE_OK(accel_module_get_kernel(m, name, &k));
    return k;
  }
};

// Device memory of `count` T, freed at scope end.
template <class T>
struct Buffer {
  void* p = nullptr;
  size_t count;
  Buffer(size_t n, int32_t device = 0) : count(n) {
    MOD_REQUIRE_OK(accel_malloc(device, n * sizeof(T), &p));
  }
  ~Buffer() { CHECK(accel_free(p) == ACCEL_SUCCESS); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  size_t bytes() const { return count * sizeof(T); }
  void upload(const std::vector<T>& v, accel_stream_t s) {
    MOD_REQUIRE_OK(accel_memcpy_async(p, v.data(), bytes(), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  }
  void download(std::vector<T>& v, accel_stream_t s) {
    v.resize(count);
    MOD_REQUIRE_OK(accel_memcpy_async(v.data(), p, bytes(), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  }
};

accel_kernel_arg_t pointer(const void* p) {
  return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p};
}
template <class T>
accel_kernel_arg_t value(const T& v) {
  return {ACCEL_KERNEL_ARG_VALUE, sizeof(T), &v};
}
accel_kernel_arg_t local(size_t bytes) { return {ACCEL_KERNEL_ARG_LOCAL_MEMORY, bytes, nullptr}; }

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

uint32_t blocks_for(size_t n, uint32_t block) {
  return static_cast<uint32_t>((n + block - 1) / block);
}

int64_t attribute(accel_device_attr_t attr, int32_t device = 0) {
  int64_t v = -1;
  MOD_REQUIRE_OK(accel_device_get_attribute(device, attr, &v));
  return v;
}

// A counter the fake driver exports (the instance the loader loaded).
int fake_counter(const char* name) {
  void* fake = dlopen(backend_test::env("ZE_ENABLE_ALT_DRIVERS").c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(fake != nullptr);
  auto fn = reinterpret_cast<int (*)()>(dlsym(fake, name));
  REQUIRE(fn != nullptr);
  return fn();
}

struct Stream {
  accel_stream_t s = nullptr;
  explicit Stream(int32_t device = 0) { MOD_REQUIRE_OK(accel_stream_create(device, 0, &s)); }
  ~Stream() { CHECK(accel_stream_destroy(s) == ACCEL_SUCCESS); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator accel_stream_t() const { return s; }
};

// c = a + b on device memory, the whole check of vector_add at one size.
void check_vector_add(accel_kernel_t k, accel_stream_t s, uint32_t n, uint32_t block,
                      int32_t device = 0, unsigned seed = 0) {
  std::vector<float> a(n), b(n), c;
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>((i + seed) % 97);
    b[i] = static_cast<float>(2 * ((i * 7 + seed) % 89));
  }
  Buffer<float> da(n, device), db(n, device), dc(n, device);
  da.upload(a, s);
  db.upload(b, s);
  MOD_REQUIRE_OK(accel_memset_async(dc.p, 0, dc.bytes(), s));
  const accel_kernel_arg_t args[] = {pointer(da.p), pointer(db.p), pointer(dc.p), value(n)};
  const accel_launch_config_t cfg = config({blocks_for(n, block), 1, 1}, {block, 1, 1}, s);
  MOD_REQUIRE_OK(accel_launch_kernel(k, &cfg, args, 4));
  dc.download(c, s);
  MOD_REQUIRE_OK(accel_stream_synchronize(s));
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += c[i] != a[i] + b[i];
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("modules: formats; the SPIR-V image loads; build log and kernel attributes",
          "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  REQUIRE((backend_test::backend_info("level_zero").caps & ACCEL_CAP_MODULES) != 0);
  uint64_t formats = 0;
  MOD_REQUIRE_OK(accel_device_module_formats(0, &formats));
  CHECK(formats == (ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_SPIRV) |
                    ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_NATIVE_BINARY)));

  Module mod(im);
  // The fake's build log (on success too), headed by the core with the image.
  const std::string log = build_log();
  INFO("build log:\n" << log);
  CHECK(has(log, "== image 0 (spirv) =="));
  CHECK(has(log, "fake_ze: building for Fake Level Zero GPU 0"));
  for (const char* k : {"vector_add(4)", "saxpy(4)", "reduce_sum(4)", "index_3d(3)", "empty(0)"})
    CHECK(has(log, k));

  const int64_t max_threads = attribute(ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK);
  struct Want {
    const char* name;
    int32_t args;  // the parameters kernels/accel_kernels.cl declares
  };
  for (const Want w : {Want{"vector_add", 4}, Want{"saxpy", 4}, Want{"reduce_sum", 4},
                       Want{"index_3d", 3}, Want{"empty", 0}}) {
    INFO(w.name);
    accel_kernel_t k = mod.kernel(w.name);
    CHECK(mod.kernel(w.name) == k);  // one handle per name
    accel_kernel_attributes_t a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    MOD_REQUIRE_OK(accel_kernel_get_attributes(k, &a));
    CHECK(a.num_args == w.args);
    CHECK(a.max_threads_per_block == max_threads);  // the device's maxTotalGroupSize
    CHECK(a.preferred_block_multiple == 16);        // the fake's maxSubgroupSize
    CHECK(a.static_shared_bytes == 0);              // no __local variables in the sources
    CHECK(a.private_bytes == 0);
    CHECK(a.num_registers == -1);  // Level Zero does not report registers
  }

  accel_kernel_t k = nullptr;
  CHECK(accel_module_get_kernel(mod.m, "no_such_kernel", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
  const std::string err = accel_last_error();
  INFO(err);
  CHECK(has(err, "no kernel 'no_such_kernel'"));
  CHECK(has(err, "ZE_RESULT_ERROR_INVALID_KERNEL_NAME"));
  CHECK(k == nullptr);
}

TEST_CASE("vector_add and saxpy: results; in order with the stream's copies",
          "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  const int faults = fake_counter("fake_ze_kernel_faults");
  Module mod(im);
  Stream s;
  // No synchronisation between the uploads, the launch and the download:
  // the stream orders them. Sizes not a multiple of the block check `i < n`.
  for (uint32_t n : {1u, 255u, 256u, 10007u})
    for (uint32_t block : {1u, 64u, 256u}) {
      INFO("n " << n << ", block " << block);
      check_vector_add(mod.kernel("vector_add"), s, n, block);
    }

  const uint32_t n = 5000;
  const float alpha = 3.0f;
  std::vector<float> x(n), y(n), out;
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 31);
    y[i] = static_cast<float>(i % 17) - 8.0f;
  }
  Buffer<float> dx(n), dy(n);
  dx.upload(x, s);
  dy.upload(y, s);
  const accel_kernel_arg_t args[] = {value(alpha), pointer(dx.p), pointer(dy.p), value(n)};
  const accel_launch_config_t cfg = config({blocks_for(n, 128), 1, 1}, {128, 1, 1}, s);
  MOD_REQUIRE_OK(accel_launch_kernel(mod.kernel("saxpy"), &cfg, args, 4));
  // Twice: the second launch sees the first one's y.
  MOD_REQUIRE_OK(accel_launch_kernel(mod.kernel("saxpy"), &cfg, args, 4));
  dy.download(out, s);
  MOD_REQUIRE_OK(accel_stream_synchronize(s));
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float once = alpha * x[i] + y[i];
    wrong += out[i] != alpha * x[i] + once;
  }
  CHECK(wrong == 0);

  // The empty kernel, and a grid with a 0 extent (nothing queued).
  accel_launch_config_t e = config({4, 1, 1}, {32, 1, 1}, s);
  MOD_REQUIRE_OK(accel_launch_kernel(mod.kernel("empty"), &e, nullptr, 0));
  e.grid = {0, 1, 1};
  MOD_REQUIRE_OK(accel_launch_kernel(mod.kernel("empty"), &e, nullptr, 0));
  MOD_REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(fake_counter("fake_ze_kernel_faults") == faults);
}

TEST_CASE("reduce_sum: a local memory argument; with and without shared_bytes",
          "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  Module mod(im);
  accel_kernel_t k = mod.kernel("reduce_sum");
  Stream s;
  const uint32_t n = 5000;
  std::vector<float> in(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 13);  // exact sums in float
  Buffer<float> din(n);
  din.upload(in, s);
  for (uint32_t block : {32u, 128u, 256u}) {
    // shared_bytes goes after the local argument: half from each must do.
    for (bool split : {false, true}) {
      INFO("block " << block << (split ? ", half of the local memory as shared_bytes" : ""));
      const uint32_t groups = blocks_for(n, block);
      Buffer<float> dpart(groups);
      const size_t scratch = block * sizeof(float);
      const accel_kernel_arg_t args[] = {pointer(din.p), pointer(dpart.p),
                                         local(split ? scratch / 2 : scratch), value(n)};
      const accel_launch_config_t cfg =
          config({groups, 1, 1}, {block, 1, 1}, s, split ? scratch / 2 : 0);
      MOD_REQUIRE_OK(accel_launch_kernel(k, &cfg, args, 4));
      std::vector<float> part;
      dpart.download(part, s);
      MOD_REQUIRE_OK(accel_stream_synchronize(s));
      size_t wrong = 0;
      for (uint32_t g = 0; g < groups; ++g) {
        float want = 0;
        for (uint32_t i = g * block; i < (g + 1) * block && i < n; ++i) want += in[i];
        wrong += part[g] != want;
      }
      CHECK(wrong == 0);
    }
  }

  // Level Zero has no dynamic local memory but __local parameters.
  Buffer<float> a(64), b(64), c(64);
  const uint32_t m = 64;
  const accel_kernel_arg_t add[] = {pointer(a.p), pointer(b.p), pointer(c.p), value(m)};
  accel_launch_config_t cfg = config({1, 1, 1}, {64, 1, 1}, s, 256);
  CHECK(accel_launch_kernel(mod.kernel("vector_add"), &cfg, add, 4) ==
        ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(accel_last_error(), "no ACCEL_KERNEL_ARG_LOCAL_MEMORY argument"));

  // More local memory than the device has.
  const int64_t slm = attribute(ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK);
  Buffer<float> part(1);
  const accel_kernel_arg_t big[] = {pointer(din.p), pointer(part.p),
                                    local(static_cast<size_t>(slm) + 4), value(n)};
  cfg = config({1, 1, 1}, {64, 1, 1}, s);
  CHECK(accel_launch_kernel(k, &cfg, big, 4) == ACCEL_ERROR_OUT_OF_MEMORY);
  CHECK(has(accel_last_error(), "maxSharedLocalMemory"));
  const accel_kernel_arg_t over[] = {pointer(din.p), pointer(part.p), local(256), value(n)};
  cfg.shared_bytes = static_cast<size_t>(slm);  // 256 + slm: over by the local argument
  CHECK(accel_launch_kernel(k, &cfg, over, 4) == ACCEL_ERROR_OUT_OF_MEMORY);
  CHECK(accel_stream_query(s) == ACCEL_SUCCESS);  // nothing was queued
}

// Issue #31: the local memory argument plus shared_bytes near SIZE_MAX
// wrapped (1024 + SIZE_MAX - 8 = 1015 bytes) and the launch was queued.
TEST_CASE("reduce_sum: local memory plus shared_bytes that would wrap is refused",
          "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  Module mod(im);
  accel_kernel_t k = mod.kernel("reduce_sum");
  Stream s;
  const uint32_t n = 64;
  Buffer<float> din(n), part(1);
  const accel_kernel_arg_t args[] = {pointer(din.p), pointer(part.p), local(1024), value(n)};
  for (size_t shared : {SIZE_MAX - 8, SIZE_MAX, SIZE_MAX - 1023}) {
    INFO("shared_bytes " << shared);
    const accel_launch_config_t cfg = config({1, 1, 1}, {64, 1, 1}, s, shared);
    CHECK(accel_launch_kernel(k, &cfg, args, 4) == ACCEL_ERROR_OUT_OF_MEMORY);
    const std::string error = accel_last_error();
    INFO(error);
    CHECK(has(error, "1024 bytes of local memory arguments"));
    CHECK(has(error, ("shared_bytes " + std::to_string(shared)).c_str()));
  }
  CHECK(accel_stream_query(s) == ACCEL_SUCCESS);  // nothing was queued
}

TEST_CASE("index_3d: 1-D; 2-D and 3-D grids", "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  Module mod(im);
  accel_kernel_t k = mod.kernel("index_3d");
  Stream s;
  struct Shape {
    accel_dim3_t grid, block;
  };
  for (const Shape& sh :
       {Shape{{5, 1, 1}, {7, 1, 1}}, Shape{{300, 1, 1}, {1, 1, 1}}, Shape{{3, 4, 1}, {4, 2, 1}},
        Shape{{1, 9, 1}, {16, 1, 1}}, Shape{{2, 3, 2}, {4, 2, 3}}, Shape{{1, 1, 5}, {2, 2, 2}},
        Shape{{3, 2, 4}, {1, 1, 1}}}) {
    const uint32_t w = sh.grid.x * sh.block.x, h = sh.grid.y * sh.block.y,
                   d = sh.grid.z * sh.block.z;
    INFO("grid (" << sh.grid.x << ", " << sh.grid.y << ", " << sh.grid.z << "), block ("
                  << sh.block.x << ", " << sh.block.y << ", " << sh.block.z << ")");
    Buffer<uint32_t> out(size_t{w} * h * d);
    MOD_REQUIRE_OK(accel_memset_async(out.p, 0xff, out.bytes(), s));
    const accel_kernel_arg_t args[] = {pointer(out.p), value(w), value(h)};
    const accel_launch_config_t cfg = config(sh.grid, sh.block, s);
    MOD_REQUIRE_OK(accel_launch_kernel(k, &cfg, args, 3));
    std::vector<uint32_t> got;
    out.download(got, s);
    MOD_REQUIRE_OK(accel_stream_synchronize(s));
    size_t wrong = 0;
    for (uint32_t z = 0; z < d; ++z)
      for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x)
          wrong += got[(size_t{z} * h + y) * w + x] != (x | (y << 10) | (z << 20));
    CHECK(wrong == 0);
  }
}

TEST_CASE("malformed images; wrong arguments and limits are refused; nothing queued",
          "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  std::vector<unsigned char> bytes(static_cast<const unsigned char*>(im->data),
                                   static_cast<const unsigned char*>(im->data) + im->size);
  accel_module_t m = nullptr;
  {
    auto bad = bytes;
    bad[0] ^= 0x5a;  // the magic number's first byte
    const accel_module_image_t img{ACCEL_MODULE_FORMAT_SPIRV, bad.data(), bad.size()};
    CHECK(accel_module_load(0, &img, 1, "", &m) == ACCEL_ERROR_INVALID_ARGUMENT);
    INFO(accel_last_error());
    CHECK(has(accel_last_error(), "not the SPIR-V magic number 0x07230203"));
  }
  {
    const accel_module_image_t img{ACCEL_MODULE_FORMAT_SPIRV, bytes.data(), 12};
    CHECK(accel_module_load(0, &img, 1, "", &m) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(accel_last_error(), "truncated"));
  }
  {
    const accel_module_image_t img{ACCEL_MODULE_FORMAT_SPIRV, bytes.data(), bytes.size() - 1};
    CHECK(accel_module_load(0, &img, 1, "", &m) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(accel_last_error(), "not a whole number of 32-bit words"));
  }
  CHECK(m == nullptr);

  Module mod(im);
  accel_kernel_t add = mod.kernel("vector_add");
  Stream s;
  const uint32_t n = 256;
  Buffer<float> a(n), b(n), c(n);
  auto refused = [&](const accel_launch_config_t& cfg, const accel_kernel_arg_t* args, size_t count,
                     const char* why, accel_status_t want) {
    INFO(why);
    CHECK(accel_launch_kernel(add, &cfg, args, count) == want);
    const std::string err = accel_last_error();
    INFO(err);
    CHECK(has(err, why));
  };
  const accel_launch_config_t ok = config({1, 1, 1}, {256, 1, 1}, s);
  const uint64_t n64 = n;
  const accel_kernel_arg_t three[] = {pointer(a.p), pointer(b.p), pointer(c.p)};
  refused(ok, three, 3, "takes 4 parameters", ACCEL_ERROR_INVALID_ARGUMENT);
  // Sizes the SPIR-V declares (OpTypeInt 32), checked by the core before
  // the driver sees them.
  const accel_kernel_arg_t wide_n[] = {pointer(a.p), pointer(b.p), pointer(c.p), value(n64)};
  refused(ok, wide_n, 4, "argument 3 has 8 bytes; parameter 3 is 4 bytes",
          ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(accel_last_error(), "argument 3"));
  // Kinds too: a value where the SPIR-V declares a CrossWorkgroup pointer.
  const accel_kernel_arg_t value_for_pointer[] = {value(n64), pointer(b.p), pointer(c.p), value(n)};
  refused(ok, value_for_pointer, 4,
          "argument 0 is a value argument; parameter 0 takes device pointer",
          ACCEL_ERROR_INVALID_ARGUMENT);
  const accel_kernel_arg_t local_ptr[] = {pointer(a.p), local(64), pointer(c.p), value(n)};
  refused(ok, local_ptr, 4, "argument 1", ACCEL_ERROR_INVALID_ARGUMENT);
  // The device's limits.
  const accel_kernel_arg_t args[] = {pointer(a.p), pointer(b.p), pointer(c.p), value(n)};
  const auto max_grid_x = static_cast<uint32_t>(attribute(ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X));
  refused(config({max_grid_x + 1, 1, 1}, {1, 1, 1}, s), args, 4, "maxGroupCountX",
          ACCEL_ERROR_INVALID_ARGUMENT);
  const int64_t max_z = attribute(ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z);
  if (max_z * 2 <= attribute(ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK)) {
    refused(config({1, 1, 1}, {1, 1, static_cast<uint32_t>(max_z * 2)}, s), args, 4,
            "maxGroupSizeZ", ACCEL_ERROR_INVALID_ARGUMENT);
  } else {
    WARN(
        "the per-dimension block limit is not checked: maxGroupSizeZ is maxTotalGroupSize "
        "(run with FAKE_ZE_MAX_GROUP_SIZE_Z=64, as the level-zero-modules test does)");
  }
  refused(config({1, 1, 1}, {2048, 1, 1}, s), args, 4, "allows at most",
          ACCEL_ERROR_INVALID_ARGUMENT);
  // Nothing of the refused launches was queued; the kernel still works.
  CHECK(accel_stream_query(s) == ACCEL_SUCCESS);
  check_vector_add(add, s, 1000, 128);
}

// Not under the intercept layer: there the log of a failed build is not
// read (the next test case).
TEST_CASE("a failed build is BUILD_FAILED with the driver's log; the next image is tried",
          "[modules]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  accel_module_t m = nullptr;
  CHECK(accel_module_load(0, im, 1, "-no-such-option", &m) == ACCEL_ERROR_BUILD_FAILED);
  std::string err = accel_last_error();
  INFO(err);
  CHECK(has(err, "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"));
  CHECK(has(err, "unknown build option '-no-such-option'"));  // the log's start
  CHECK(has(build_log(), "unknown build option '-no-such-option'"));
  CHECK(m == nullptr);

  // A native binary the device refuses, then the SPIR-V: the module is the
  // SPIR-V one, and the log has both.
  const char junk[] = "not a native binary of any device";
  const accel_module_image_t images[] = {{ACCEL_MODULE_FORMAT_NATIVE_BINARY, junk, sizeof junk},
                                         *im};
  MOD_REQUIRE_OK(accel_module_load(0, images, 2, "", &m));
  const std::string log = build_log();
  INFO(log);
  CHECK(has(log, "== image 0 (native_binary) =="));
  CHECK(has(log, "no native binary format"));
  CHECK(has(log, "== image 1 (spirv) =="));
  accel_kernel_t k = nullptr;
  MOD_REQUIRE_OK(accel_module_get_kernel(m, "vector_add", &k));
  Stream s;
  check_vector_add(k, s, 300, 64);
  MOD_REQUIRE_OK(accel_module_unload(m));

  // Alone, the native binary is BUILD_FAILED (ZE_RESULT_ERROR_INVALID_NATIVE_BINARY).
  CHECK(accel_module_load(0, images, 1, "", &m) == ACCEL_ERROR_BUILD_FAILED);
  CHECK(has(accel_last_error(), "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY"));

  // Options reach the driver as pBuildFlags.
  Module opt(im, 0, "-ze-opt-level=1 -g");
  CHECK(has(build_log(), "build flags: -ze-opt-level=1 -g"));
}

TEST_CASE("intercept layer: a failed build's log is not read; the failure is reported",
          "[modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  accel_module_t m = nullptr;
  CHECK(accel_module_load(0, im, 1, "-no-such-option", &m) == ACCEL_ERROR_BUILD_FAILED);
  const std::string err = accel_last_error();
  INFO(err);
  CHECK(has(err, "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"));
  CHECK(has(err, "the build log is not read"));
  CHECK(build_log().empty());
  // A build that succeeds still has its log.
  Module ok(im);
  CHECK(has(build_log(), "fake_ze: building"));
}

TEST_CASE("one kernel launched from several threads at once keeps each launch's arguments",
          "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  Module mod(im);
  accel_kernel_t k = mod.kernel("vector_add");
  const int races = fake_counter("fake_ze_kernel_races");
  constexpr int kThreads = 4, kRounds = 40;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      accel_stream_t s = nullptr;
      if (accel_stream_create(0, 0, &s) != ACCEL_SUCCESS) {
        bad.fetch_add(1);
        return;
      }
      const uint32_t n = 1000 + 97 * t;  // each thread its own size and values
      std::vector<float> a(n), b(n), c(n);
      for (uint32_t i = 0; i < n; ++i) {
        a[i] = static_cast<float>(t * 1000 + i % 101);
        b[i] = static_cast<float>(i % 53);
      }
      void *da = nullptr, *db = nullptr, *dc = nullptr;
      bool ok =
          accel_malloc(0, n * 4, &da) == ACCEL_SUCCESS &&
          accel_malloc(0, n * 4, &db) == ACCEL_SUCCESS &&
          accel_malloc(0, n * 4, &dc) == ACCEL_SUCCESS &&
          accel_memcpy_async(da, a.data(), n * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s) ==
              ACCEL_SUCCESS &&
          accel_memcpy_async(db, b.data(), n * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s) == ACCEL_SUCCESS;
      for (int r = 0; ok && r < kRounds; ++r) {
        const accel_kernel_arg_t args[] = {pointer(da), pointer(db), pointer(dc), value(n)};
        const accel_launch_config_t cfg = config({blocks_for(n, 64), 1, 1}, {64, 1, 1}, s);
        ok = accel_memset_async(dc, 0, n * 4, s) == ACCEL_SUCCESS &&
             accel_launch_kernel(k, &cfg, args, 4) == ACCEL_SUCCESS &&
             accel_memcpy_async(c.data(), dc, n * 4, ACCEL_MEMCPY_DEVICE_TO_HOST, s) ==
                 ACCEL_SUCCESS &&
             accel_stream_synchronize(s) == ACCEL_SUCCESS;
        for (uint32_t i = 0; ok && i < n; ++i) ok = c[i] == a[i] + b[i];
      }
      if (!ok) bad.fetch_add(1);
      for (void* p : {da, db, dc})
        if (p != nullptr) accel_free(p);
      accel_stream_destroy(s);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  CHECK(fake_counter("fake_ze_kernel_races") == races);  // the setters never overlapped
}

TEST_CASE("launches wait for host functions and events like the stream's other work",
          "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  Module mod(im);
  accel_kernel_t k = mod.kernel("vector_add");
  Stream s, t;
  const uint32_t n = 512;
  std::vector<float> a(n), b(n), c1, c2;
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 1.0f;
  }
  Buffer<float> da(n), db(n), dc(n);
  da.upload(a, s);
  db.upload(b, s);
  MOD_REQUIRE_OK(accel_memset_async(dc.p, 0, dc.bytes(), s));
  MOD_REQUIRE_OK(accel_stream_synchronize(s));
  static std::atomic<bool> open{false};
  open.store(false);
  MOD_REQUIRE_OK(accel_launch_host_func(
      s,
      [](void*) {
        accel_test::wait_until([] { return open.load(); }, "the test to open the gate");
      },
      nullptr));
  const accel_kernel_arg_t args[] = {pointer(da.p), pointer(db.p), pointer(dc.p), value(n)};
  const accel_launch_config_t cfg = config({n / 64, 1, 1}, {64, 1, 1}, s);
  MOD_REQUIRE_OK(accel_launch_kernel(k, &cfg, args, 4));
  accel_event_t e = nullptr;
  MOD_REQUIRE_OK(accel_event_create(0, 0, &e));
  MOD_REQUIRE_OK(accel_event_record(e, s));
  // Another stream waits for the event, then reads the kernel's output.
  MOD_REQUIRE_OK(accel_stream_wait_event(t, e));
  c2.assign(n, -1.0f);
  // Registered: the copy waits behind the host function (into pageable
  // memory it would not return until then).
  MOD_REQUIRE_OK(accel_host_register(c2.data(), c2.size() * sizeof(float), 0));
  MOD_REQUIRE_OK(accel_memcpy_async(c2.data(), dc.p, dc.bytes(), ACCEL_MEMCPY_DEVICE_TO_HOST, t));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(accel_event_query(e) == ACCEL_ERROR_NOT_READY);
  CHECK(accel_stream_query(t) == ACCEL_ERROR_NOT_READY);
  open.store(true);
  MOD_REQUIRE_OK(accel_stream_synchronize(t));
  MOD_REQUIRE_OK(accel_event_synchronize(e));
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += c2[i] != a[i] + b[i];
  CHECK(wrong == 0);
  MOD_REQUIRE_OK(accel_host_unregister(c2.data()));
  MOD_REQUIRE_OK(accel_event_destroy(e));
}

TEST_CASE("modules of the second device; and device mismatches", "[modules][modules-intercept]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  REQUIRE(accel_device_count() >= 2);
  Module mod1(im, 1);
  CHECK(has(build_log(), "Fake Level Zero GPU 1"));
  Stream s1(1);
  check_vector_add(mod1.kernel("vector_add"), s1, 777, 32, 1, 5);
  // A stream of device 0 for a kernel of device 1.
  Stream s0(0);
  Buffer<float> a(16, 1);
  const uint32_t n = 16;
  const accel_kernel_arg_t args[] = {pointer(a.p), pointer(a.p), pointer(a.p), value(n)};
  const accel_launch_config_t cfg = config({1, 1, 1}, {16, 1, 1}, s0);
  CHECK(accel_launch_kernel(mod1.kernel("vector_add"), &cfg, args, 4) ==
        ACCEL_ERROR_DEVICE_MISMATCH);
}

// FAKE_ZE_SPIRV=0: zeDeviceGetModuleProperties reports no SPIR-V version.
TEST_CASE("a device without SPIR-V takes native binaries only", "[modules-no-spirv]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  uint64_t formats = 0;
  MOD_REQUIRE_OK(accel_device_module_formats(0, &formats));
  CHECK(formats == ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_NATIVE_BINARY));
  accel_module_t m = nullptr;
  CHECK(accel_module_load(0, im, 1, "", &m) == ACCEL_ERROR_NOT_SUPPORTED);
  const std::string err = accel_last_error();
  INFO(err);
  CHECK(has(err, "native_binary"));
  CHECK(m == nullptr);
}

// The fake itself, through the loader the plugin loaded, as a program using
// accel's context would call it: what the plugin's tests rely on it to
// refuse (argument index and size, destroying a module with live kernels, a
// malformed module) is refused with the results the specification lists.
TEST_CASE("the fake driver's modules through the loader: the checks the tests rely on",
          "[modules]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  void* lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(lib != nullptr);
#define MOD_ZE_FN(fn)                                           \
  auto fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, #fn)); \
  REQUIRE(fn != nullptr);
  MOD_ZE_FN(zeModuleCreate)
  MOD_ZE_FN(zeModuleDestroy)
  MOD_ZE_FN(zeModuleBuildLogGetString)
  MOD_ZE_FN(zeModuleBuildLogDestroy)
  MOD_ZE_FN(zeKernelCreate)
  MOD_ZE_FN(zeKernelDestroy)
  MOD_ZE_FN(zeKernelGetProperties)
  MOD_ZE_FN(zeKernelSetArgumentValue)
  MOD_ZE_FN(zeKernelSetGroupSize)
#undef MOD_ZE_FN
  accel_native_handle_t dev;
  std::memset(&dev, 0, sizeof dev);
  dev.struct_size = sizeof dev;
  MOD_REQUIRE_OK(accel_device_native_handle(0, &dev));
  auto ctx = static_cast<ze_context_handle_t>(dev.context);
  auto device = static_cast<ze_device_handle_t>(dev.handle);
  auto log_text = [&](ze_module_build_log_handle_t log) {
    size_t n = 0;
    REQUIRE(zeModuleBuildLogGetString(log, &n, nullptr) == ZE_RESULT_SUCCESS);
    std::string s(n, '\0');
    REQUIRE(zeModuleBuildLogGetString(log, &n, s.data()) == ZE_RESULT_SUCCESS);
    REQUIRE(zeModuleBuildLogDestroy(log) == ZE_RESULT_SUCCESS);
    return std::string(s.c_str());
  };

  ze_module_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
  desc.format = ZE_MODULE_FORMAT_IL_SPIRV;
  desc.inputSize = im->size;
  desc.pInputModule = static_cast<const uint8_t*>(im->data);
  ze_module_handle_t mod = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  REQUIRE(zeModuleCreate(ctx, device, &desc, &mod, &log) == ZE_RESULT_SUCCESS);
  CHECK(has(log_text(log), "saxpy(4)"));

  ze_kernel_desc_t kd{};
  kd.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
  kd.pKernelName = "no_such_kernel";
  ze_kernel_handle_t k = nullptr;
  CHECK(zeKernelCreate(mod, &kd, &k) == ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
  kd.pKernelName = "saxpy";  // (float alpha, global float* x, global float* y, uint n)
  REQUIRE(zeKernelCreate(mod, &kd, &k) == ZE_RESULT_SUCCESS);
  ze_kernel_properties_t kp{};
  kp.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
  REQUIRE(zeKernelGetProperties(k, &kp) == ZE_RESULT_SUCCESS);
  CHECK(kp.numKernelArgs == 4);
  const float alpha = 1.0f;
  const void* ptr = nullptr;
  CHECK(zeKernelSetArgumentValue(k, 4, sizeof alpha, &alpha) ==
        ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
  CHECK(zeKernelSetArgumentValue(k, 0, sizeof alpha, &alpha) == ZE_RESULT_SUCCESS);
  CHECK(zeKernelSetArgumentValue(k, 0, sizeof(double), &alpha) ==
        ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
  CHECK(zeKernelSetArgumentValue(k, 1, 4, &ptr) == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
  CHECK(zeKernelSetArgumentValue(k, 1, sizeof ptr, &ptr) == ZE_RESULT_SUCCESS);
  CHECK(zeKernelSetGroupSize(k, 0, 1, 1) == ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
  CHECK(zeKernelSetGroupSize(k, 2048, 1, 1) == ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
  CHECK(zeKernelSetGroupSize(k, 64, 2, 1) == ZE_RESULT_SUCCESS);
#ifdef ZE_TEST_HAVE_UNSIZED_SPIRV
  {
    // A parameter of a type the fake cannot size (unsized_arg.cl's sampler):
    // refused at every size, never taken at whatever size it is given.
    ze_module_desc_t udesc = desc;
    udesc.inputSize = ze_test_unsized_spirv_size;
    udesc.pInputModule = ze_test_unsized_spirv;
    ze_module_handle_t umod = nullptr;
    REQUIRE(zeModuleCreate(ctx, device, &udesc, &umod, nullptr) == ZE_RESULT_SUCCESS);
    kd.pKernelName = "takes_sampler";  // (sampler_t s, global int* out)
    ze_kernel_handle_t uk = nullptr;
    REQUIRE(zeKernelCreate(umod, &kd, &uk) == ZE_RESULT_SUCCESS);
    const unsigned char value[16] = {};
    for (size_t size : {size_t{1}, size_t{4}, sizeof(void*), sizeof value}) {
      INFO("sampler argument of " << size << " bytes");
      CHECK(zeKernelSetArgumentValue(uk, 0, size, value) ==
            ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    }
    CHECK(zeKernelSetArgumentValue(uk, 1, sizeof ptr, &ptr) == ZE_RESULT_SUCCESS);
    REQUIRE(zeKernelDestroy(uk) == ZE_RESULT_SUCCESS);
    REQUIRE(zeModuleDestroy(umod) == ZE_RESULT_SUCCESS);
  }
#endif
  // The specification: kernels before their module.
  CHECK(zeModuleDestroy(mod) == ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
  REQUIRE(zeKernelDestroy(k) == ZE_RESULT_SUCCESS);
  REQUIRE(zeModuleDestroy(mod) == ZE_RESULT_SUCCESS);

  // Malformed SPIR-V is a build failure with the reason in the log (the
  // plugin catches a bad magic number before the driver sees it).
  std::vector<unsigned char> bytes(static_cast<const unsigned char*>(im->data),
                                   static_cast<const unsigned char*>(im->data) + im->size);
  bytes[0] ^= 0x5a;
  desc.pInputModule = bytes.data();
  mod = nullptr;
  CHECK(zeModuleCreate(ctx, device, &desc, &mod, &log) == ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
  CHECK(has(log_text(log), "bad SPIR-V magic number"));
  bytes[0] ^= 0x5a;
  // The header and the first word of the first instruction (OpCapability,
  // two words): it runs past the end.
  desc.inputSize = 24;
  CHECK(zeModuleCreate(ctx, device, &desc, &mod, &log) == ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
  CHECK(has(log_text(log), "runs past the end of the module"));
  CHECK(mod == nullptr);
}

// The backend's SPIR-V reader on the build's image (clang-15 and
// llvm-spirv-15 from kernels/accel_kernels.cl) and on unsized_arg.cl's: what
// kernel_get_params reports for each kernel.
TEST_CASE("SPIR-V parameter kinds and sizes and types", "[modules]") {
  const accel_module_image_t* im = spirv_image();
  if (im == nullptr) return;
  const auto all = accel::level_zero::spirv_kernel_params(im->data, im->size);
  constexpr uint32_t V = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE),
                     P = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER),
                     L = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_LOCAL_MEMORY);
  constexpr uint32_t F = ACCEL_KERNEL_ARG_TYPE_FLOAT, I = ACCEL_KERNEL_ARG_TYPE_INT,
                     PT = ACCEL_KERNEL_ARG_TYPE_POINTER, U = ACCEL_KERNEL_ARG_TYPE_UNKNOWN;
  struct Want {
    uint32_t kinds, type;
    size_t size;
  };
  const std::vector<std::pair<const char*, std::vector<Want>>> expected = {
      {"vector_add", {{P, PT, 0}, {P, PT, 0}, {P, PT, 0}, {V, I, 4}}},
      {"saxpy", {{V, F, 4}, {P, PT, 0}, {P, PT, 0}, {V, I, 4}}},
      {"reduce_sum", {{P, PT, 0}, {P, PT, 0}, {L, U, 0}, {V, I, 4}}},
      {"index_3d", {{P, PT, 0}, {V, I, 4}, {V, I, 4}}},
      {"empty", {}},
  };
  for (const auto& [name, want] : expected) {
    INFO(name);
    auto it = all.find(name);
    REQUIRE(it != all.end());
    REQUIRE(it->second.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("parameter " << i);
      CHECK(it->second[i].kinds == want[i].kinds);
      CHECK(it->second[i].type == want[i].type);
      CHECK(it->second[i].size == want[i].size);
    }
  }
#ifdef ZE_TEST_HAVE_UNSIZED_SPIRV
  const auto sampler =
      accel::level_zero::spirv_kernel_params(ze_test_unsized_spirv, ze_test_unsized_spirv_size);
  auto it = sampler.find("takes_sampler");
  REQUIRE(it != sampler.end());
  REQUIRE(it->second.size() == 2);
  CHECK(it->second[0].kinds == (V | P | L));  // a sampler: not a type the reader sizes
  CHECK(it->second[0].type == U);
  CHECK(it->second[1].type == PT);
#endif
  // Not SPIR-V: nothing.
  const unsigned char junk[20] = {1, 2, 3};
  CHECK(accel::level_zero::spirv_kernel_params(junk, sizeof junk).empty());
}
