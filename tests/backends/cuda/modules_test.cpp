// The CUDA plugin's modules and kernels (ABI 1.2) end to end through
// accel.h, over the fake driver (tests/fakes/cuda), which reads the PTX
// nvcc made at build time (kernels/accel_kernels.cu) and runs host
// implementations of its kernels on the stream: so every result below is
// what the kernels compute, checked against the same arithmetic done here.
// Scenarios (meson.build): [modules] (2 devices, a current driver),
// [modules-no-param-info] (a driver without cuFuncGetParamInfo) and
// [modules-old-driver] (CUDA 12.4: older than the PTX). Without nvcc the
// build has no PTX and the tests exit 77 (SKIP), saying why.
#include <catch2/catch.hpp>

#include "../common.hpp"
#include "accel_kernels.h"
#include "kernel_helpers.hpp"

#include <accel/accel.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef CUDA_TEST_HAVE_BINARIES
extern "C" {
extern const unsigned char cuda_test_cubin[];
extern const size_t cuda_test_cubin_size;
extern const unsigned char cuda_test_fatbin[];
extern const size_t cuda_test_fatbin_size;
}
#endif

namespace {

using namespace cuda_kernel_test;

// A call that must fail with `status`; returns accel's detail.
std::string refused(accel_status_t got, accel_status_t status) {
  std::string msg = accel_last_error();
  INFO("got " << accel_status_name(got) << ": " << msg);
  CHECK(got == status);
  return msg;
}

std::string build_log() {
  size_t n = 0;
  REQUIRE(accel_module_build_log(nullptr, 0, &n) == ACCEL_SUCCESS);
  std::string s(n + 1, '\0');
  REQUIRE(accel_module_build_log(s.data(), s.size(), &n) == ACCEL_SUCCESS);
  s.resize(n);
  return s;
}

// vector_add over n elements in blocks of 128 on `s` (NULL: the launch
// goes to the current stream); checks c == a + b.
void vector_add_checked(accel_kernel_t k, int32_t device, accel_stream_t s, uint32_t n) {
  accel_stream_t q = s;
  if (q == nullptr) REQUIRE_OK(accel_current_stream(device, &q));
  const std::vector<float> a = ramp(n, 0.5f, 1.0f), b = ramp(n, 2.0f, -3.0f);
  Buffer da(device, a, q), db(device, b, q), dc(device, n * sizeof(float));
  accel_launch_config_t c = config({(n + 127) / 128, 1, 1}, {128, 1, 1}, s);
  const accel_kernel_arg_t args[] = {ptr(da.p), ptr(db.p), ptr(dc.p), val(n)};
  REQUIRE_OK(accel_launch_kernel(k, &c, args, 4));
  const std::vector<float> got = dc.read<float>(q);
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != a[i] + b[i];
  CHECK(wrong == 0);
}

// index_3d over grid x block; every element of the width x height x depth
// output is x | y << 10 | z << 20 of its own global index.
void index_3d_checked(accel_kernel_t k, accel_stream_t s, accel_dim3_t grid, accel_dim3_t block) {
  const uint32_t w = grid.x * block.x, h = grid.y * block.y, d = grid.z * block.z;
  INFO("grid (" << grid.x << ", " << grid.y << ", " << grid.z << "), block (" << block.x << ", "
                << block.y << ", " << block.z << ")");
  Buffer out(0, size_t{w} * h * d * sizeof(uint32_t));
  REQUIRE_OK(accel_memset_async(out.p, 0xff, out.bytes, s));
  accel_launch_config_t c = config(grid, block, s);
  const accel_kernel_arg_t args[] = {ptr(out.p), val(w), val(h)};
  REQUIRE_OK(accel_launch_kernel(k, &c, args, 3));
  const std::vector<uint32_t> got = out.read<uint32_t>(s);
  size_t wrong = 0;
  for (uint32_t z = 0; z < d; ++z)
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w; ++x)
        wrong += got[(size_t{z} * h + y) * w + x] != (x | y << 10 | z << 20);
  CHECK(wrong == 0);
}

// The sums reduce_sum must give for `in` in blocks of `block`: small
// integers, so every order of addition gives the same float.
std::vector<float> block_sums(const std::vector<float>& in, uint32_t block, uint32_t blocks) {
  std::vector<float> out(blocks, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) out[i / block] += in[i];
  return out;
}

}  // namespace

TEST_CASE("the cuda backend loads PTX; cubins and fat binaries", "[modules]") {
  REQUIRE(accel_device_count() == 2);
  CHECK((backend_test::backend_info("cuda").caps & ACCEL_CAP_MODULES) != 0);
  const uint64_t want = ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_PTX) |
                        ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_CUBIN) |
                        ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_FATBIN);
  for (int32_t d = 0; d < 2; ++d) {
    uint64_t formats = 0;
    REQUIRE_OK(accel_device_module_formats(d, &formats));
    CHECK(formats == want);
  }
}

TEST_CASE("the five kernels run from nvcc's PTX; results checked", "[modules]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  // The embedded PTX has no NUL (accel.h lets text go without one): the
  // plugin must hand the driver a terminated copy.
  CHECK(static_cast<const unsigned char*>(im->data)[im->size - 1] != 0);
  const long long modules_before = fake_count("modules");
  accel_module_t m = load(*im);
  CHECK(fake_count("modules") == modules_before + 1);
  // The JIT's info log (CU_JIT_LOG_VERBOSE) reached the build log.
  const std::string log = build_log();
  INFO(log);
  CHECK_THAT(log, Catch::Contains("== image 0 (ptx) =="));
  for (const char* name : {"vector_add", "saxpy", "reduce_sum", "index_3d", "empty"})
    CHECK_THAT(log, Catch::Contains(std::string("Compiling entry function '") + name + "'"));

  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));

  SECTION("attributes: the driver's limits; the warp; the parameters") {
    const std::pair<const char*, int32_t> kernels[] = {
        {"vector_add", 4}, {"saxpy", 4}, {"reduce_sum", 3}, {"index_3d", 3}, {"empty", 0}};
    for (const auto& [name, params] : kernels) {
      INFO(name);
      accel_kernel_attributes_t a;
      std::memset(&a, 0, sizeof a);
      a.struct_size = sizeof a;
      REQUIRE_OK(accel_kernel_get_attributes(kernel(m, name), &a));
      CHECK(a.max_threads_per_block == 1024);
      CHECK(a.static_shared_bytes == 0);  // reduce_sum's scratch is dynamic
      CHECK(a.private_bytes == 0);
      CHECK(a.num_registers >= 0);
      CHECK(a.preferred_block_multiple == 32);
      CHECK(a.num_args == params);  // local memory takes no parameter on cuda
    }
    // The same handle for the same name.
    CHECK(kernel(m, "saxpy") == kernel(m, "saxpy"));
  }

  SECTION("vector_add; with a partial last block") {
    vector_add_checked(kernel(m, "vector_add"), 0, s, 1000);
  }

  SECTION("saxpy: one fused multiply-add per element; as nvcc emits it") {
    const uint32_t n = 777;
    const float alpha = 2.5f;
    const std::vector<float> x = ramp(n, 0.25f, -7.0f), y = ramp(n, -1.5f, 3.0f);
    Buffer dx(0, x, s), dy(0, y, s);
    accel_launch_config_t c = config({(n + 63) / 64, 1, 1}, {64, 1, 1}, s);
    const accel_kernel_arg_t args[] = {val(alpha), ptr(dx.p), ptr(dy.p), val(n)};
    REQUIRE_OK(accel_launch_kernel(kernel(m, "saxpy"), &c, args, 4));
    const std::vector<float> got = dy.read<float>(s);
    size_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) wrong += got[i] != std::fmaf(x[i], alpha, y[i]);
    CHECK(wrong == 0);
  }

  SECTION("reduce_sum: the local memory argument is the dynamic shared scratch") {
    const uint32_t n = 1000, block = 256, blocks = (n + block - 1) / block;
    std::vector<float> in(n);
    for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 17);
    Buffer din(0, in, s), dpartial(0, blocks * sizeof(float));
    accel_launch_config_t c = config({blocks, 1, 1}, {block, 1, 1}, s);
    // In the order of accel_kernels.cl: in, partial, scratch, n.
    const accel_kernel_arg_t args[] = {ptr(din.p), ptr(dpartial.p), local(block * sizeof(float)),
                                       val(n)};
    REQUIRE_OK(accel_launch_kernel(kernel(m, "reduce_sum"), &c, args, 4));
    CHECK(dpartial.read<float>(s) == block_sums(in, block, blocks));
  }

  SECTION("index_3d in one; two and three dimensions") {
    accel_kernel_t k = kernel(m, "index_3d");
    index_3d_checked(k, s, {5, 1, 1}, {32, 1, 1});
    index_3d_checked(k, s, {3, 2, 1}, {4, 5, 1});
    index_3d_checked(k, s, {2, 3, 2}, {4, 2, 3});
  }

  SECTION("empty: queued in order with a host function; a 0 grid queues nothing") {
    accel_kernel_t k = kernel(m, "empty");
    const long long before = fake_count("kernel_launches");
    accel_launch_config_t c = config({4, 2, 1}, {32, 1, 1}, s);
    REQUIRE_OK(accel_launch_kernel(k, &c, nullptr, 0));
    accel_launch_config_t none = config({0, 1, 1}, {32, 1, 1}, s);
    REQUIRE_OK(accel_launch_kernel(k, &none, nullptr, 0));
    REQUIRE_OK(accel_stream_synchronize(s));
    CHECK(fake_count("kernel_launches") == before + 1);
  }

  SECTION("the current stream: config.stream NULL") {
    accel_stream_t current = nullptr;
    REQUIRE_OK(accel_current_stream(0, &current));
    const uint32_t n = 300;
    std::vector<float> a = ramp(n, 1.0f, 0.0f), b = ramp(n, 1.0f, 1.0f);
    Buffer da(0, a, current), db(0, b, current), dc(0, n * sizeof(float));
    accel_launch_config_t c = config({3, 1, 1}, {128, 1, 1}, nullptr);
    const accel_kernel_arg_t args[] = {ptr(da.p), ptr(db.p), ptr(dc.p), val(n)};
    REQUIRE_OK(accel_launch_kernel(kernel(m, "vector_add"), &c, args, 4));
    const std::vector<float> got = dc.read<float>(current);
    for (uint32_t i = 0; i < n; ++i) CHECK(got[i] == a[i] + b[i]);
  }

  REQUIRE_OK(accel_stream_destroy(s));
  REQUIRE_OK(accel_module_unload(m));
  CHECK(fake_count("modules") == modules_before);
}

TEST_CASE("PTX without a terminating NUL is copied before the driver reads it", "[modules]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  // The bytes after the image are text the driver would parse (and refuse)
  // if it were given the caller's buffer.
  std::string buffer(static_cast<const char*>(im->data), im->size);
  buffer += "\nthis is not PTX and must not reach the driver\n";
  accel_module_image_t cut{ACCEL_MODULE_FORMAT_PTX, buffer.data(), im->size};
  accel_module_t m = load(cut);
  vector_add_checked(kernel(m, "vector_add"), 0, nullptr, 64);
  REQUIRE_OK(accel_module_unload(m));
  // With a NUL at the end (size counting it) no copy is needed; it loads too.
  std::string terminated(static_cast<const char*>(im->data), im->size);
  accel_module_image_t with_nul{ACCEL_MODULE_FORMAT_PTX, terminated.c_str(), im->size + 1};
  REQUIRE_OK(accel_module_unload(load(with_nul)));
}

TEST_CASE("bad PTX is BUILD_FAILED with the driver's log", "[modules]") {
  static const char kBad[] =
      ".version 8.0\n.target sm_75\n.address_size 64\n\nthis is not a directive\n";
  accel_module_image_t im{ACCEL_MODULE_FORMAT_PTX, kBad, sizeof kBad - 1};
  accel_module_t m = nullptr;
  std::string msg = refused(accel_module_load(0, &im, 1, nullptr, &m), ACCEL_ERROR_BUILD_FAILED);
  CHECK(m == nullptr);
  CHECK_THAT(msg, Catch::Contains("cuModuleLoadDataEx"));
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_INVALID_PTX"));
  const std::string log = build_log();
  INFO(log);
  CHECK_THAT(log, Catch::Contains("line 5"));  // the driver's error log, where it stopped
  CHECK_THAT(msg, Catch::Contains("line 5"));  // the detail carries its start

  // A target the device (sm_90) cannot run.
  static const char kNewer[] = ".version 8.0\n.target sm_120\n.address_size 64\n";
  accel_module_image_t newer{ACCEL_MODULE_FORMAT_PTX, kNewer, sizeof kNewer - 1};
  msg = refused(accel_module_load(0, &newer, 1, nullptr, &m), ACCEL_ERROR_BUILD_FAILED);
  CHECK_THAT(build_log(), Catch::Contains("sm_120"));
}

TEST_CASE("PTX with an instruction the ISA lacks is BUILD_FAILED with the JIT's log", "[modules]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  // nvcc's PTX with the opcode of its first parameter load renamed to one no
  // PTX ISA defines: the module is otherwise what nvcc wrote.
  std::string text(static_cast<const char*>(im->data), im->size);
  const size_t at = text.find("ld.param.");
  REQUIRE(at != std::string::npos);
  text.replace(at, 2, "bogus_ld");
  const std::string line =
      "line " + std::to_string(1 + std::count(text.begin(), text.begin() + at, '\n')) + ";";
  accel_module_image_t bad{ACCEL_MODULE_FORMAT_PTX, text.c_str(), text.size() + 1};
  accel_module_t m = nullptr;
  const std::string msg =
      refused(accel_module_load(0, &bad, 1, nullptr, &m), ACCEL_ERROR_BUILD_FAILED);
  CHECK(m == nullptr);
  CHECK_THAT(msg, Catch::Contains("cuModuleLoadDataEx"));
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_INVALID_PTX"));
  // The JIT's error log (CU_JIT_ERROR_LOG_BUFFER) names the line and the
  // opcode, in the build log and in the detail.
  const std::string log = build_log();
  INFO(log);
  CHECK_THAT(log, Catch::Contains("ptx input, " + line));
  CHECK_THAT(log, Catch::Contains("'bogus_ld'"));
  CHECK_THAT(msg, Catch::Contains("ptx input, " + line));
  CHECK_THAT(msg, Catch::Contains("'bogus_ld'"));
  // The same PTX unedited loads: the instruction was what the JIT refused.
  REQUIRE_OK(accel_module_unload(load(*im)));
}

TEST_CASE("an image that is not of its format is INVALID_ARGUMENT before the driver", "[modules]") {
  accel_module_t m = nullptr;
  static const char kText[] = "hello, this is plain text and no kernel image at all";
  static const char kPtxish[] = ".version 8.0\n.target sm_75\n";
  struct Case {
    accel_module_format_t format;
    const void* data;
    size_t size;
    const char* says;
  };
  static const char kNulInside[] = ".version 8.0\0.target sm_75\n";
  const Case cases[] = {
      {ACCEL_MODULE_FORMAT_PTX, kText, sizeof kText - 1, ".version"},
      {ACCEL_MODULE_FORMAT_PTX, kNulInside, sizeof kNulInside - 1, "NUL byte"},
      {ACCEL_MODULE_FORMAT_CUBIN, kPtxish, sizeof kPtxish - 1, "ELF magic"},
      {ACCEL_MODULE_FORMAT_FATBIN, kPtxish, sizeof kPtxish - 1, "0xba55ed50"},
  };
  for (const Case& c : cases) {
    INFO(accel_module_format_name(c.format) << ": expecting '" << c.says << "'");
    accel_module_image_t im{c.format, c.data, c.size};
    const std::string msg =
        refused(accel_module_load(0, &im, 1, nullptr, &m), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(msg, Catch::Contains(c.says, Catch::CaseSensitive::No));
    CHECK(m == nullptr);
  }
#ifdef CUDA_TEST_HAVE_BINARIES
  // nvcc's own cubin and fat binary, cut short: their headers promise more.
  for (const auto& [format, data, size] :
       {std::make_tuple(ACCEL_MODULE_FORMAT_CUBIN, cuda_test_cubin, cuda_test_cubin_size),
        std::make_tuple(ACCEL_MODULE_FORMAT_FATBIN, cuda_test_fatbin, cuda_test_fatbin_size)}) {
    INFO(accel_module_format_name(format));
    accel_module_image_t im{format, data, size / 2};
    const std::string msg =
        refused(accel_module_load(0, &im, 1, nullptr, &m), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(msg, Catch::Contains("truncated"));
  }
#endif
}

TEST_CASE("a cubin or fat binary the device cannot run falls through to the PTX", "[modules]") {
#ifndef CUDA_TEST_HAVE_BINARIES
  accel_test::skipf("this build has no nvcc-made cubin and fat binary (no nvcc)");
#else
  const accel_module_image_t* ptx = ptx_image();
  if (ptx == nullptr) return;
  // The fake driver runs no machine code: both are CUDA_ERROR_NO_BINARY_FOR_GPU,
  // as a real driver answers a cubin for another architecture.
  const accel_module_image_t images[] = {
      {ACCEL_MODULE_FORMAT_CUBIN, cuda_test_cubin, cuda_test_cubin_size},
      {ACCEL_MODULE_FORMAT_FATBIN, cuda_test_fatbin, cuda_test_fatbin_size},
      *ptx,
  };
  accel_module_t m = nullptr;
  std::string msg = refused(accel_module_load(0, images, 2, nullptr, &m), ACCEL_ERROR_BUILD_FAILED);
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_NO_BINARY_FOR_GPU"));
  REQUIRE_OK(accel_module_load(0, images, 3, nullptr, &m));
  const std::string log = build_log();
  INFO(log);
  CHECK_THAT(log, Catch::Contains("== image 0 (cubin) =="));
  CHECK_THAT(log, Catch::Contains("== image 1 (fatbin) =="));
  CHECK_THAT(log, Catch::Contains("== image 2 (ptx) =="));
  vector_add_checked(kernel(m, "vector_add"), 0, nullptr, 200);
  REQUIRE_OK(accel_module_unload(m));
#endif
}

TEST_CASE("options; unknown kernels and wrong arguments are refused; nothing queued", "[modules]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  accel_module_t m = nullptr;
  std::string msg = refused(accel_module_load(0, im, 1, "-O3", &m), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("no compiler options"));
  CHECK(m == nullptr);
  m = load(*im);  // "" is no options
  accel_kernel_t k = nullptr;
  msg = refused(accel_module_get_kernel(m, "vector_sub", &k), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("no kernel 'vector_sub'"));
  CHECK(k == nullptr);

  accel_kernel_t add = kernel(m, "vector_add");
  accel_kernel_t saxpy = kernel(m, "saxpy");
  accel_kernel_t reduce = kernel(m, "reduce_sum");
  Buffer a(0, 1024), b(0, 1024), c(0, 1024);
  const uint32_t n = 256;
  const uint64_t n64 = 256;
  const double alpha_double = 2.0;
  accel_launch_config_t cfg = config({2, 1, 1}, {128, 1, 1}, nullptr);
  const long long before = fake_count("kernel_launches");
  struct Case {
    accel_kernel_t k;
    std::vector<accel_kernel_arg_t> args;
    const char* says;
  };
  const Case cases[] = {
      {add, {ptr(a.p), ptr(b.p), ptr(c.p)}, "takes 4 parameters"},
      {add, {ptr(a.p), ptr(b.p), ptr(c.p), val(n), val(n)}, "passes more"},
      {add, {ptr(a.p), ptr(b.p), ptr(c.p), val(n64)}, "parameter 3 is 4 bytes"},
      {add, {ptr(a.p), ptr(b.p), ptr(c.p), ptr(a.p)}, "takes value"},
      {saxpy, {val(alpha_double), ptr(a.p), ptr(b.p), val(n)}, "parameter 0 is 4 bytes"},
      // reduce_sum without its local memory argument is well-formed for
      // CUDA (3 parameters); with the local memory in the place of n it is not.
      {reduce, {ptr(a.p), ptr(b.p), local(512)}, "takes 3 parameters"},
  };
  for (const Case& cs : cases) {
    INFO("expecting '" << cs.says << "'");
    msg = refused(accel_launch_kernel(cs.k, &cfg, cs.args.data(), cs.args.size()),
                  ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(msg, Catch::Contains(cs.says));
  }
  // The device's limits, named: grid y 65536 > 65535, block z 128 > 64.
  const accel_kernel_arg_t good[] = {ptr(a.p), ptr(b.p), ptr(c.p), val(n)};
  accel_launch_config_t tall = config({1, 65536, 1}, {1, 1, 1}, nullptr);
  msg = refused(accel_launch_kernel(add, &tall, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y"));
  accel_launch_config_t deep = config({1, 1, 1}, {1, 1, 128}, nullptr);
  msg = refused(accel_launch_kernel(add, &deep, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z"));
  // Another device's memory: the core knows it is device 1's.
  Buffer other(1, 1024);
  const accel_kernel_arg_t foreign[] = {ptr(a.p), ptr(other.p), ptr(c.p), val(n)};
  refused(accel_launch_kernel(add, &cfg, foreign, 4), ACCEL_ERROR_DEVICE_MISMATCH);
  CHECK(fake_count("kernel_launches") == before);

  REQUIRE_OK(accel_module_unload(m));
  // The module's kernels went with it.
  msg = refused(accel_launch_kernel(add, &cfg, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("not a live kernel"));
}

// A pointer accel did not allocate: memory the program took from the
// driver itself (cuMemAlloc, as cudaMalloc does) is what
// cuPointerGetAttribute reports as the device's and runs; pageable host
// memory (a std::vector) is refused with the copy's message, and so is the
// driver's memory of the other device.
TEST_CASE("kernel pointers: the driver's own memory runs; pageable memory is refused",
          "[modules]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  accel_module_t m = load(*im, 0);
  accel_kernel_t add = kernel(m, "vector_add");
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  const std::string path = env("ACCEL_CUDA_DRIVER");
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  // The Driver API's types as cuda.h spells them (this test does not
  // include cuda.h): CUresult is an enum with CUDA_SUCCESS 0, CUcontext and
  // CUstream are pointers, CUdeviceptr an unsigned 64-bit integer.
  using CUresult = int;
  using CUcontext = void*;
  using CUdevice = int;
  using CUdeviceptr = unsigned long long;
  using CUstream = void*;
  constexpr CUresult CUDA_SUCCESS = 0;
  using Retain = CUresult (*)(CUcontext*, CUdevice);
  using SetCurrent = CUresult (*)(CUcontext);
  using Alloc = CUresult (*)(CUdeviceptr*, size_t);
  using Free = CUresult (*)(CUdeviceptr);
  using DtoH = CUresult (*)(void*, CUdeviceptr, size_t, CUstream);
  using Sync = CUresult (*)();
  auto sym = [h](const char* name) {
    void* f = dlsym(h, name);
    INFO(name);
    REQUIRE(f != nullptr);
    return f;
  };
  auto retain = reinterpret_cast<Retain>(sym("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<SetCurrent>(sym("cuCtxSetCurrent"));
  auto mem_alloc = reinterpret_cast<Alloc>(sym("cuMemAlloc_v2"));
  auto mem_free = reinterpret_cast<Free>(sym("cuMemFree_v2"));
  auto dtoh = reinterpret_cast<DtoH>(sym("cuMemcpyDtoHAsync_v2"));
  auto ctx_sync = reinterpret_cast<Sync>(sym("cuCtxSynchronize"));
  const uint32_t n = 100;
  CUcontext ctx0 = nullptr, ctx1 = nullptr;
  REQUIRE(retain(&ctx0, 0) == CUDA_SUCCESS);
  REQUIRE(retain(&ctx1, 1) == CUDA_SUCCESS);
  CUdeviceptr theirs = 0, other = 0;
  REQUIRE(set_current(ctx1) == CUDA_SUCCESS);
  REQUIRE(mem_alloc(&other, n * sizeof(float)) == CUDA_SUCCESS);
  REQUIRE(set_current(ctx0) == CUDA_SUCCESS);
  REQUIRE(mem_alloc(&theirs, n * sizeof(float)) == CUDA_SUCCESS);
  const std::vector<float> a = ramp(n, 0.5f, 1.0f), b = ramp(n, 2.0f, -3.0f);
  Buffer da(0, a, s), db(0, b, s);
  accel_launch_config_t c = config({1, 1, 1}, {128, 1, 1}, s);
  auto* out = reinterpret_cast<void*>(static_cast<uintptr_t>(theirs));
  const accel_kernel_arg_t good[] = {ptr(da.p), ptr(db.p), ptr(out), val(n)};
  REQUIRE_OK(accel_launch_kernel(add, &c, good, 4));
  REQUIRE_OK(accel_stream_synchronize(s));
  std::vector<float> got(n);
  REQUIRE(dtoh(got.data(), theirs, n * sizeof(float), nullptr) == CUDA_SUCCESS);
  REQUIRE(ctx_sync() == CUDA_SUCCESS);
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != a[i] + b[i];
  CHECK(wrong == 0);
  std::vector<float> host(n, 0.0f);
  const accel_kernel_arg_t pageable[] = {ptr(da.p), ptr(db.p), ptr(host.data()), val(n)};
  std::string msg =
      refused(accel_launch_kernel(add, &c, pageable, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("is not inside a live allocation made by accel_malloc"));
  CHECK_THAT(msg, Catch::Contains("argument 2"));
  auto* elsewhere = reinterpret_cast<void*>(static_cast<uintptr_t>(other));
  const accel_kernel_arg_t wrong_device[] = {ptr(da.p), ptr(db.p), ptr(elsewhere), val(n)};
  msg = refused(accel_launch_kernel(add, &c, wrong_device, 4), ACCEL_ERROR_DEVICE_MISMATCH);
  CHECK_THAT(msg, Catch::Contains("device 1"));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(std::all_of(host.begin(), host.end(), [](float v) { return v == 0.0f; }));
  CHECK(mem_free(theirs) == CUDA_SUCCESS);
  CHECK(mem_free(other) == CUDA_SUCCESS);
  REQUIRE_OK(accel_stream_destroy(s));
  REQUIRE_OK(accel_module_unload(m));
}

TEST_CASE("dynamic shared memory: opt-in above 48 KiB; refused above the device", "[modules]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  accel_module_t m = load(*im);
  accel_kernel_t reduce = kernel(m, "reduce_sum");
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  const uint32_t n = 512, block = 128, blocks = n / block;
  std::vector<float> in(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<float>((i * 5) % 11);
  Buffer din(0, in, s), dpartial(0, blocks * sizeof(float));
  accel_launch_config_t c = config({blocks, 1, 1}, {block, 1, 1}, s);

  // 100 KiB of scratch (the kernel uses the first 512 bytes) and 4 KiB more
  // through shared_bytes: over the 48 KiB default, under H100's 227 KiB.
  const long long opt_ins = fake_count("dynamic_shared_opt_ins");
  const accel_kernel_arg_t big[] = {ptr(din.p), ptr(dpartial.p), local(100 * 1024), val(n)};
  accel_launch_config_t more = config({blocks, 1, 1}, {block, 1, 1}, s, 4096);
  REQUIRE_OK(accel_launch_kernel(reduce, &more, big, 4));
  CHECK(dpartial.read<float>(s) == block_sums(in, block, blocks));
  CHECK(fake_count("dynamic_shared_opt_ins") == opt_ins + 1);
  // Again: the limit is already raised.
  REQUIRE_OK(accel_launch_kernel(reduce, &more, big, 4));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(fake_count("dynamic_shared_opt_ins") == opt_ins + 1);

  // Two local arguments, each at a 16-byte aligned offset: 512 bytes at 0,
  // 13 at 512, so shared_bytes starts at 528; with 227 KiB - 528 of it the
  // block has exactly the device's limit...
  const accel_kernel_arg_t two_locals_ok[] = {ptr(din.p), ptr(dpartial.p), local(block * 4),
                                              local(13), val(n)};
  accel_launch_config_t edge =
      config({blocks, 1, 1}, {block, 1, 1}, s, 227 * 1024 - (block * 4 + 16));
  REQUIRE_OK(accel_launch_kernel(reduce, &edge, two_locals_ok, 5));
  CHECK(dpartial.read<float>(s) == block_sums(in, block, blocks));
  // ...and one byte more is over it.
  const long long launches = fake_count("kernel_launches");
  accel_launch_config_t over =
      config({blocks, 1, 1}, {block, 1, 1}, s, 227 * 1024 - (block * 4 + 16) + 1);
  std::string msg =
      refused(accel_launch_kernel(reduce, &over, two_locals_ok, 5), ACCEL_ERROR_OUT_OF_MEMORY);
  CHECK_THAT(msg, Catch::Contains("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"));
  const accel_kernel_arg_t huge[] = {ptr(din.p), ptr(dpartial.p), local(size_t{1} << 33), val(n)};
  refused(accel_launch_kernel(reduce, &c, huge, 4), ACCEL_ERROR_OUT_OF_MEMORY);
  CHECK(fake_count("kernel_launches") == launches);

  REQUIRE_OK(accel_stream_destroy(s));
  REQUIRE_OK(accel_module_unload(m));
}

TEST_CASE("modules on the second device; and threads launching one kernel", "[modules]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  accel_module_t m1 = load(*im, 1);
  accel_kernel_t add1 = kernel(m1, "vector_add");
  accel_stream_t s1 = nullptr;
  REQUIRE_OK(accel_stream_create(1, 0, &s1));
  vector_add_checked(add1, 1, s1, 513);
  // A device-0 stream for a device-1 kernel.
  accel_stream_t s0 = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s0));
  accel_launch_config_t c = config({1, 1, 1}, {32, 1, 1}, s0);
  Buffer a(1, 128);
  const uint32_t n = 32;
  const accel_kernel_arg_t args[] = {ptr(a.p), ptr(a.p), ptr(a.p), val(n)};
  refused(accel_launch_kernel(add1, &c, args, 4), ACCEL_ERROR_DEVICE_MISMATCH);

  // Eight threads, each its own stream and buffers, one shared kernel, each
  // launch with its own alpha: arguments are passed by value at launch.
  accel_module_t m0 = load(*im, 0);
  accel_kernel_t saxpy = kernel(m0, "saxpy");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      accel_stream_t s = nullptr;
      if (accel_stream_create(0, 0, &s) != ACCEL_SUCCESS) return (void)++failures;
      const uint32_t len = 256;
      std::vector<float> x(len), y(len, 0.0f);
      for (uint32_t i = 0; i < len; ++i) x[i] = static_cast<float>(i);
      void *dx = nullptr, *dy = nullptr;
      if (accel_malloc(0, len * 4, &dx) != ACCEL_SUCCESS ||
          accel_malloc(0, len * 4, &dy) != ACCEL_SUCCESS)
        return (void)++failures;
      accel_memcpy_async(dx, x.data(), len * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s);
      accel_memcpy_async(dy, y.data(), len * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s);
      accel_launch_config_t cfg = config({2, 1, 1}, {128, 1, 1}, s);
      for (int r = 0; r < 20; ++r) {
        const float alpha = static_cast<float>(t + 1);
        const accel_kernel_arg_t a[] = {val(alpha), ptr(dx), ptr(dy), val(len)};
        if (accel_launch_kernel(saxpy, &cfg, a, 4) != ACCEL_SUCCESS) ++failures;
      }
      accel_memcpy_async(y.data(), dy, len * 4, ACCEL_MEMCPY_DEVICE_TO_HOST, s);
      accel_stream_synchronize(s);
      for (uint32_t i = 0; i < len; ++i)
        if (y[i] != 20.0f * static_cast<float>(t + 1) * x[i]) ++failures;
      accel_free(dx);
      accel_free(dy);
      accel_stream_destroy(s);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);

  REQUIRE_OK(accel_stream_destroy(s0));
  REQUIRE_OK(accel_stream_destroy(s1));
  REQUIRE_OK(accel_module_unload(m1));
  REQUIRE_OK(accel_module_unload(m0));
}

TEST_CASE("without cuFuncGetParamInfo arguments go unchecked and launches still run",
          "[modules-no-param-info]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  accel_module_t m = load(*im);
  accel_kernel_t add = kernel(m, "vector_add");
  accel_kernel_attributes_t a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  REQUIRE_OK(accel_kernel_get_attributes(add, &a));
  CHECK(a.num_args == -1);  // unknown
  CHECK(a.max_threads_per_block == 1024);
  vector_add_checked(add, 0, nullptr, 129);
  // reduce_sum's local memory still becomes dynamic shared memory.
  accel_kernel_t reduce = kernel(m, "reduce_sum");
  const uint32_t n = 64, block = 64;
  std::vector<float> in(n, 3.0f);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_current_stream(0, &s));
  Buffer din(0, in, s), dp(0, sizeof(float));
  accel_launch_config_t c = config({1, 1, 1}, {block, 1, 1}, s);
  const accel_kernel_arg_t args[] = {ptr(din.p), ptr(dp.p), local(block * 4), val(n)};
  REQUIRE_OK(accel_launch_kernel(reduce, &c, args, 4));
  CHECK(dp.read<float>(s) == std::vector<float>{3.0f * n});
  REQUIRE_OK(accel_module_unload(m));
}

TEST_CASE("PTX newer than the driver is BUILD_FAILED; naming the version", "[modules-old-driver]") {
  const accel_module_image_t* im = ptx_image();
  if (im == nullptr) return;
  // The scenario's driver is CUDA 12.4 (PTX ISA 8.4): the PTX must be newer.
  const std::string text(static_cast<const char*>(im->data), im->size);
  int major = 0, minor = 0;
  const size_t at = text.find(".version");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(text.c_str() + at, ".version %d.%d", &major, &minor) == 2);
  if (major * 10 + minor <= 84) {
    accel_test::skipf("this nvcc writes PTX ISA %d.%d, which a CUDA 12.4 driver loads", major,
                      minor);
    return;
  }
  accel_module_t m = nullptr;
  const std::string msg =
      refused(accel_module_load(0, im, 1, nullptr, &m), ACCEL_ERROR_BUILD_FAILED);
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"));
  CHECK_THAT(build_log(), Catch::Contains("Unsupported .version"));
  CHECK(m == nullptr);
}
