// Conformance: modules and kernels (ABI 1.2). Loads the kernels of kernels/
// (every image this build made; the backend takes the first it runs) and
// checks what accel.h promises: image choice and its errors, kernel lookup,
// launch argument checks that queue nothing, grid limits, a zero grid, the
// kernels' results, ordering with copies, host functions and events, and
// two threads launching one kernel. A backend without the group must answer
// ACCEL_ERROR_NOT_SUPPORTED with a reason, which is checked instead.
#include "accel_kernels.h"
#include "conformance.hpp"

#include <cmath>
#include <limits>
#include <thread>

using namespace conf;

namespace {

bool has_modules(const char* test) {
  if (has_cap(ACCEL_CAP_MODULES)) return true;
  accel_module_image_t im[8];
  size_t n = accel_kernels_images(im, 8);
  FreshResult r = run_in_fresh_thread([&] {
    accel_module_t m = nullptr;
    return accel_module_load(-1, im, n, nullptr, &m);
  });
  CHECK(r.status == ACCEL_ERROR_NOT_SUPPORTED);
  CHECK(contains_ci(r.after, globals().backend));
  WARN(test << ": the backend has no modules; accel_module_load answered: " << r.after);
  note_not_run("no modules and kernels (" + r.after + ")");
  return false;
}

// The formats of this build's images (kernels/) that `device` takes.
uint64_t loadable_formats(int32_t device) {
  accel_module_image_t im[8];
  const size_t n = accel_kernels_images(im, 8);
  uint64_t takes = 0, built = 0;
  ACCEL_REQUIRE_OK(accel_device_module_formats(device, &takes));
  for (size_t i = 0; i < n; ++i) built |= ACCEL_MODULE_FORMAT_BIT(im[i].format);
  return takes & built;
}

// The kernels of kernels/ on `device`. nullptr (with a WARN) only when this
// build made no image in a format the device takes and the run does not
// expect modules: a backend that declares ACCEL_CAP_MODULES and refuses an
// image of a format it reports fails here, as does a run that expects
// modules (ACCEL_EXPECT_GROUPS) in a build without an image for it.
accel_module_t load_kernels(int32_t device = -1) {
  accel_module_image_t im[8];
  size_t n = accel_kernels_images(im, 8);
  accel_module_t m = nullptr;
  accel_status_t st = accel_module_load(device, im, n, nullptr, &m);
  if (st == ACCEL_ERROR_NOT_SUPPORTED) {
    std::string why = accel_last_error();
    const uint64_t loadable = loadable_formats(device);
    INFO("accel_module_load answered NOT_SUPPORTED: " << why);
    INFO("formats of this build's images the device reports: 0x" << std::hex << loadable);
    REQUIRE(loadable == 0);  // it reports a format of an image it was given
    INFO("ACCEL_EXPECT_GROUPS names modules, but this build made no image the device takes");
    REQUIRE_FALSE(expected("modules"));
    WARN("this build made no kernel image the device takes: " << why);
    note_not_run("kernel launches (no image for this device in this build)");
    return nullptr;
  }
  INFO("accel_module_load -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  return m;
}

struct Module {
  accel_module_t m = nullptr;
  explicit Module(int32_t device = -1) : m(load_kernels(device)) {}
  ~Module() {
    if (m != nullptr) {
      release_gates();
      Deadline d("accel_module_unload", kWaitLimit, "unloading waits for the device only");
      accel_module_unload(m);
    }
  }
  accel_kernel_t kernel(const char* name) const {
    accel_kernel_t k = nullptr;
    ACCEL_REQUIRE_OK(accel_module_get_kernel(m, name, &k));
    return k;
  }
};

accel_launch_config_t config_of(accel_dim3_t grid, accel_dim3_t block, accel_stream_t stream) {
  accel_launch_config_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid = grid;
  c.block = block;
  c.stream = stream;
  return c;
}

accel_kernel_arg_t ptr_arg(const void* p) {
  return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p};
}
template <class T>
accel_kernel_arg_t value_arg(const T& v) {
  return {ACCEL_KERNEL_ARG_VALUE, sizeof v, &v};
}

int64_t max_threads(accel_kernel_t k) {
  accel_kernel_attributes_t a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  ACCEL_REQUIRE_OK(accel_kernel_get_attributes(k, &a));
  REQUIRE(a.max_threads_per_block >= 1);
  return a.max_threads_per_block;
}

// A block size for a 1-D launch: a power of two <= 64 and the kernel's limit.
uint32_t block_for(accel_kernel_t k) {
  uint32_t b = 64;
  while (b > static_cast<uint64_t>(max_threads(k))) b /= 2;
  return b;
}

template <class T>
void upload(void* dst, const std::vector<T>& src, accel_stream_t s) {
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(dst, src.data(), src.size() * sizeof(T), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
}
template <class T>
std::vector<T> download(const void* src, size_t n, accel_stream_t s) {
  std::vector<T> out(n);
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(out.data(), src, n * sizeof(T), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  ACCEL_REQUIRE_OK(stream_synchronize(s));
  return out;
}

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale + offset;
  return v;
}

}  // namespace

TEST_CASE("modules: formats and the choice of image", "[modules]") {
  ThreadStateGuard guard;
  uint64_t formats = ~uint64_t{0};
  ACCEL_REQUIRE_OK(accel_device_module_formats(-1, &formats));
  if (!has_modules("formats")) {
    CHECK(formats == 0);
    return;
  }
  CHECK(formats != 0);
  CHECK((formats >> ACCEL_MODULE_FORMAT_COUNT) == 0);
  for (int32_t d = 0; d < device_count(); ++d) {
    uint64_t f = 0;
    ACCEL_CHECK_OK(accel_device_module_formats(d, &f));
    CHECK(f != 0);
  }
  ACCEL_CHECK_ERROR(accel_device_module_formats(-1, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_device_module_formats(device_count(), &formats),
                    ACCEL_ERROR_INVALID_DEVICE);

  // Only formats the device does not take: NOT_SUPPORTED naming both lists.
  std::vector<accel_module_image_t> foreign;
  static const char kBytes[] = "not an image of any format";
  for (unsigned f = 0; f < ACCEL_MODULE_FORMAT_COUNT; ++f) {
    if ((formats & ACCEL_MODULE_FORMAT_BIT(f)) == 0)
      foreign.push_back({static_cast<accel_module_format_t>(f), kBytes, sizeof kBytes});
  }
  if (foreign.empty()) {
    WARN("the device takes every format: no image it refuses by format");
  } else {
    accel_module_t m = reinterpret_cast<accel_module_t>(&formats);  // must stay untouched
    FreshResult r = run_in_fresh_thread(
        [&] { return accel_module_load(-1, foreign.data(), foreign.size(), nullptr, &m); });
    CHECK(r.status == ACCEL_ERROR_NOT_SUPPORTED);
    CHECK(contains_ci(r.after, accel_module_format_name(foreign[0].format)));
    for (unsigned f = 0; f < ACCEL_MODULE_FORMAT_COUNT; ++f) {
      if ((formats & ACCEL_MODULE_FORMAT_BIT(f)) != 0)
        CHECK(
            contains_ci(r.after, accel_module_format_name(static_cast<accel_module_format_t>(f))));
    }
    CHECK(m == reinterpret_cast<accel_module_t>(&formats));
  }
}

TEST_CASE("modules: malformed images and bad arguments are refused", "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("malformed")) return;
  uint64_t formats = 0;
  ACCEL_REQUIRE_OK(accel_device_module_formats(-1, &formats));
  accel_module_t m = nullptr;
  static const unsigned char kGarbage[64] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3};
  for (unsigned f = 0; f < ACCEL_MODULE_FORMAT_COUNT; ++f) {
    if ((formats & ACCEL_MODULE_FORMAT_BIT(f)) == 0) continue;
    const auto fmt = static_cast<accel_module_format_t>(f);
    INFO("format " << accel_module_format_name(fmt));
    accel_module_image_t im{fmt, kGarbage, sizeof kGarbage};
    FreshResult r = run_in_fresh_thread([&] { return accel_module_load(-1, &im, 1, nullptr, &m); });
    CHECK((r.status == ACCEL_ERROR_INVALID_ARGUMENT || r.status == ACCEL_ERROR_BUILD_FAILED));
    CHECK_FALSE(r.after.empty());
    CHECK(m == nullptr);
  }
  accel_module_image_t empty{ACCEL_MODULE_FORMAT_OPENCL_C, nullptr, 0};
  ACCEL_CHECK_ERROR(accel_module_load(-1, &empty, 1, nullptr, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_module_load(-1, nullptr, 1, nullptr, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  accel_module_image_t bad_format{static_cast<accel_module_format_t>(ACCEL_MODULE_FORMAT_COUNT),
                                  kGarbage, sizeof kGarbage};
  ACCEL_CHECK_ERROR(accel_module_load(-1, &bad_format, 1, nullptr, &m),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  accel_module_image_t im[8];
  size_t n = accel_kernels_images(im, 8);
  ACCEL_CHECK_ERROR(accel_module_load(-1, im, n, nullptr, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_module_load(-1, im, 0, nullptr, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(m == nullptr);
  ACCEL_CHECK_ERROR(accel_module_unload(nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  size_t len = 0;
  ACCEL_CHECK_ERROR(accel_module_build_log(nullptr, 8, &len), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_OK(accel_module_build_log(nullptr, 0, &len));
}

TEST_CASE("modules: kernels by name and attributes and unload", "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("kernels")) return;
  accel_module_t m = load_kernels();
  if (m == nullptr) return;
  accel_kernel_t a = nullptr, b = nullptr;
  ACCEL_CHECK_OK(accel_module_get_kernel(m, "saxpy", &a));
  ACCEL_CHECK_OK(accel_module_get_kernel(m, "saxpy", &b));
  CHECK(a == b);
  accel_kernel_t unknown = nullptr;
  FreshResult r = run_in_fresh_thread(
      [&] { return accel_module_get_kernel(m, "no_such_kernel_anywhere", &unknown); });
  CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(contains_ci(r.after, "no_such_kernel_anywhere"));
  CHECK(unknown == nullptr);
  ACCEL_CHECK_ERROR(accel_module_get_kernel(m, "", &unknown), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_module_get_kernel(m, nullptr, &unknown), ACCEL_ERROR_INVALID_ARGUMENT);

  accel_kernel_attributes_t attrs;
  std::memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs;
  ACCEL_CHECK_OK(accel_kernel_get_attributes(a, &attrs));
  CHECK(attrs.max_threads_per_block >= 1);
  // -1 (the backend cannot tell) or exactly saxpy's parameters, counted in
  // its OpenCL C declaration (kernels/accel_kernels.cl), which every other
  // language's saxpy has too.
  const accel_module_image_t* cl = accel_kernels_image(ACCEL_MODULE_FORMAT_OPENCL_C);
  REQUIRE(cl != nullptr);
  const std::string src(static_cast<const char*>(cl->data), cl->size);
  const size_t from = src.find('(', src.find("void saxpy"));
  const size_t to = src.find(')', from);
  REQUIRE(to != std::string::npos);
  int32_t saxpy_params = 1;
  for (size_t i = from; i < to; ++i) saxpy_params += src[i] == ',' ? 1 : 0;
  CHECK(saxpy_params == 4);  // alpha, x, y, n: the launches below pass 4
  CHECK((attrs.num_args == -1 || attrs.num_args == saxpy_params));
  attrs.struct_size = sizeof(size_t);
  ACCEL_CHECK_ERROR(accel_kernel_get_attributes(a, &attrs), ACCEL_ERROR_INVALID_ARGUMENT);

  ACCEL_CHECK_OK(accel_module_unload(m));
  ACCEL_CHECK_ERROR(accel_module_unload(m), ACCEL_ERROR_INVALID_ARGUMENT);
  attrs.struct_size = sizeof attrs;
  ACCEL_CHECK_ERROR(accel_kernel_get_attributes(a, &attrs), ACCEL_ERROR_INVALID_ARGUMENT);
  accel_launch_config_t c = config_of({1, 1, 1}, {1, 1, 1}, nullptr);
  ACCEL_CHECK_ERROR(accel_launch_kernel(a, &c, nullptr, 0), ACCEL_ERROR_INVALID_ARGUMENT);
}

// A stale handle must never reach a newer module or kernel, even one that
// took its slot: each round unloads, then loads again (a pool that reuses
// slots hands the same memory back), and every handle of every earlier
// round must still be refused, with a message that says it is gone.
TEST_CASE("modules: stale module and kernel handles stay refused after new loads", "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("stale handles")) return;
  std::vector<accel_module_t> old_modules;
  std::vector<accel_kernel_t> old_kernels;
  accel_kernel_attributes_t attrs;
  std::memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs;
  const accel_launch_config_t c = config_of({1, 1, 1}, {1, 1, 1}, nullptr);
  for (int round = 0; round < 4; ++round) {
    accel_module_t m = load_kernels();
    if (m == nullptr) return;
    accel_kernel_t k = nullptr;
    ACCEL_REQUIRE_OK(accel_module_get_kernel(m, "empty", &k));
    INFO("round " << round);
    for (accel_module_t old : old_modules) CHECK(old != m);
    for (accel_kernel_t old : old_kernels) CHECK(old != k);
    for (accel_module_t old : old_modules) {
      accel_kernel_t out = nullptr;
      FreshResult r =
          run_in_fresh_thread([&] { return accel_module_get_kernel(old, "empty", &out); });
      CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
      CHECK(contains_ci(r.after, "unloaded"));
      CHECK(out == nullptr);
      r = run_in_fresh_thread([&] { return accel_module_unload(old); });
      CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
      CHECK(contains_ci(r.after, "unloaded"));
    }
    for (accel_kernel_t old : old_kernels) {
      FreshResult r = run_in_fresh_thread([&] { return accel_kernel_get_attributes(old, &attrs); });
      CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
      CHECK(contains_ci(r.after, "destroyed"));
      r = run_in_fresh_thread([&] { return accel_launch_kernel(old, &c, nullptr, 0); });
      CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
      CHECK(contains_ci(r.after, "destroyed"));
    }
    // The live ones work all the same.
    ACCEL_CHECK_OK(accel_kernel_get_attributes(k, &attrs));
    ACCEL_CHECK_OK(accel_launch_kernel(k, &c, nullptr, 0));
    ACCEL_REQUIRE_OK(synchronize(-1));
    ACCEL_REQUIRE_OK(accel_module_unload(m));
    old_modules.push_back(m);
    old_kernels.push_back(k);
  }
}

TEST_CASE("modules: the reference kernels compute", "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("compute")) return;
  Module mod;
  if (mod.m == nullptr) return;
  Stream s;
  const uint32_t n = 1000;  // not a multiple of the block: the bound check matters
  auto x = ramp(n, 1.0f, 0.5f), y = ramp(n, -2.0f, 7.0f);
  DeviceMem dx(-1, n * 4), dy(-1, n * 4), dz(-1, n * 4);
  upload(dx.get(), x, s);
  upload(dy.get(), y, s);

  accel_kernel_t add = mod.kernel("vector_add");
  uint32_t block = block_for(add);
  auto c = config_of({(n + block - 1) / block, 1, 1}, {block, 1, 1}, s);
  accel_kernel_arg_t add_args[] = {ptr_arg(dx.get()), ptr_arg(dy.get()), ptr_arg(dz.get()),
                                   value_arg(n)};
  ACCEL_REQUIRE_OK(accel_launch_kernel(add, &c, add_args, 4));
  auto z = download<float>(dz.get(), n, s);
  for (uint32_t i = 0; i < n; ++i) {
    INFO("vector_add element " << i);
    REQUIRE(z[i] == x[i] + y[i]);
  }

  accel_kernel_t saxpy = mod.kernel("saxpy");
  const float alpha = 0.75f;
  accel_kernel_arg_t saxpy_args[] = {value_arg(alpha), ptr_arg(dx.get()), ptr_arg(dy.get()),
                                     value_arg(n)};
  ACCEL_REQUIRE_OK(accel_launch_kernel(saxpy, &c, saxpy_args, 4));
  auto y2 = download<float>(dy.get(), n, s);
  for (uint32_t i = 0; i < n; ++i) {
    INFO("saxpy element " << i);
    REQUIRE(std::fabs(y2[i] - (alpha * x[i] + y[i])) <= 1e-4f * (1 + std::fabs(y2[i])));
  }

  accel_kernel_t reduce = mod.kernel("reduce_sum");
  uint32_t rb = block_for(reduce);
  uint32_t groups = (n + rb - 1) / rb;
  DeviceMem dp(-1, groups * 4);
  auto rc = config_of({groups, 1, 1}, {rb, 1, 1}, s);
  accel_kernel_arg_t reduce_args[] = {ptr_arg(dx.get()),
                                      ptr_arg(dp.get()),
                                      {ACCEL_KERNEL_ARG_LOCAL_MEMORY, rb * 4u, nullptr},
                                      value_arg(n)};
  ACCEL_REQUIRE_OK(accel_launch_kernel(reduce, &rc, reduce_args, 4));
  auto partial = download<float>(dp.get(), groups, s);
  for (uint32_t g = 0; g < groups; ++g) {
    double want = 0;
    for (uint32_t i = g * rb; i < std::min(n, (g + 1) * rb); ++i) want += x[i];
    INFO("reduce_sum block " << g);
    REQUIRE(std::fabs(partial[g] - want) <= 1e-3 * (1 + std::fabs(want)));
  }

  accel_kernel_t index = mod.kernel("index_3d");
  const accel_dim3_t shapes[][2] = {
      {{40, 1, 1}, {2, 1, 1}}, {{3, 5, 1}, {4, 2, 1}}, {{2, 3, 4}, {2, 2, 2}}};
  for (const auto& shape : shapes) {
    const accel_dim3_t g = shape[0], b = shape[1];
    const uint32_t w = g.x * b.x, h = g.y * b.y, d = g.z * b.z;
    DeviceMem out(-1, size_t{w} * h * d * 4);
    auto ic = config_of(g, b, s);
    accel_kernel_arg_t args[] = {ptr_arg(out.get()), value_arg(w), value_arg(h)};
    ACCEL_REQUIRE_OK(accel_launch_kernel(index, &ic, args, 3));
    auto got = download<uint32_t>(out.get(), size_t{w} * h * d, s);
    for (uint32_t zz = 0; zz < d; ++zz)
      for (uint32_t yy = 0; yy < h; ++yy)
        for (uint32_t xx = 0; xx < w; ++xx) {
          INFO("index_3d grid " << g.x << "x" << g.y << "x" << g.z << " at " << xx << "," << yy
                                << "," << zz);
          REQUIRE(got[(size_t{zz} * h + yy) * w + xx] == (xx | (yy << 10) | (zz << 20)));
        }
  }
}

TEST_CASE("modules: a bad launch is refused and queues nothing", "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("bad launch")) return;
  Module mod;
  if (mod.m == nullptr) return;
  Stream s;
  const uint32_t n = 64;
  std::vector<float> zeros(n, 0.0f), ones(n, 1.0f);
  DeviceMem dx(-1, n * 4), dy(-1, n * 4);
  upload(dx.get(), ones, s);
  upload(dy.get(), zeros, s);
  accel_kernel_t saxpy = mod.kernel("saxpy");
  accel_kernel_attributes_t attrs;
  std::memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs;
  ACCEL_REQUIRE_OK(accel_kernel_get_attributes(saxpy, &attrs));
  const float alpha = 3.0f;
  auto c = config_of({1, 1, 1}, {1, 1, 1}, s);
  accel_kernel_arg_t good[] = {value_arg(alpha), ptr_arg(dx.get()), ptr_arg(dy.get()),
                               value_arg(n)};

  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, nullptr, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_launch_kernel(nullptr, &c, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &c, nullptr, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  auto small = c;
  small.struct_size = sizeof(size_t);
  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &small, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  auto zero_block = config_of({1, 1, 1}, {0, 1, 1}, s);
  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &zero_block, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  auto too_wide =
      config_of({1, 1, 1}, {static_cast<uint32_t>(attrs.max_threads_per_block), 2, 1}, s);
  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &too_wide, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  // No device runs 2^96 blocks: every backend has a grid limit below that.
  const uint32_t big = std::numeric_limits<uint32_t>::max();
  auto huge = config_of({big, big, big}, {1, 1, 1}, s);
  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &huge, good, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  accel_kernel_arg_t bad_kind[] = {value_arg(alpha),
                                   ptr_arg(dx.get()),
                                   ptr_arg(dy.get()),
                                   {static_cast<accel_kernel_arg_kind_t>(7), 4, &n}};
  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &c, bad_kind, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  accel_kernel_arg_t local_zero[] = {value_arg(alpha),
                                     ptr_arg(dx.get()),
                                     ptr_arg(dy.get()),
                                     {ACCEL_KERNEL_ARG_LOCAL_MEMORY, 0, nullptr}};
  ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &c, local_zero, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  if (attrs.num_args >= 0) {
    ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &c, good, 3), ACCEL_ERROR_INVALID_ARGUMENT);
    accel_kernel_arg_t five[] = {good[0], good[1], good[2], good[3], good[3]};
    ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &c, five, 5), ACCEL_ERROR_INVALID_ARGUMENT);
  } else {
    WARN("the backend cannot tell kernel parameters (num_args -1): argument counts unchecked");
    note_not_run("launch argument count checks (backend cannot tell parameters)");
  }
  if (device_count() >= 2) {
    // A pointer of another device: refused, asked twice (the second answer
    // comes from the core's per-thread segment cache).
    DeviceMem other(1, n * 4);
    accel_kernel_arg_t foreign[] = {value_arg(alpha), ptr_arg(other.get()), ptr_arg(dy.get()),
                                    value_arg(n)};
    for (int round = 0; round < 2; ++round) {
      ACCEL_CHECK_ERROR(accel_launch_kernel(saxpy, &c, foreign, 4), ACCEL_ERROR_DEVICE_MISMATCH);
    }
  } else {
    need_devices(2);
  }
  // Zero grid: success, nothing runs.
  auto zero_grid = config_of({0, 1, 1}, {1, 1, 1}, s);
  ACCEL_CHECK_OK(accel_launch_kernel(saxpy, &zero_grid, good, 4));
  auto y = download<float>(dy.get(), n, s);
  for (uint32_t i = 0; i < n; ++i) {
    INFO("element " << i << " changed although no launch was queued");
    REQUIRE(y[i] == 0.0f);
  }
}

// A host array's data() passed as a device pointer (finding: it "works"
// where device memory is host memory and faults on a discrete GPU): refused
// on every backend, with the message a copy gets for the same pointer, and
// nothing is queued.
TEST_CASE("modules: a host pointer as a device pointer argument is refused", "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("host pointer argument")) return;
  Module mod;
  if (mod.m == nullptr) return;
  Stream s;
  const uint32_t n = 64;
  std::vector<float> host(n, 1.0f), zeros(n, 0.0f);
  DeviceMem dy(-1, n * 4);
  upload(dy.get(), zeros, s);
  accel_kernel_t saxpy = mod.kernel("saxpy");
  const float alpha = 3.0f;
  auto c = config_of({1, 1, 1}, {n, 1, 1}, s);
  accel_kernel_arg_t args[] = {value_arg(alpha), ptr_arg(host.data()), ptr_arg(dy.get()),
                               value_arg(n)};
  const std::string phrase = "is not inside a live allocation made by accel_malloc";
  conf::FreshResult copy = conf::run_in_fresh_thread([&]() -> accel_status_t {
    return accel_memcpy_async(host.data(), zeros.data(), 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s);
  });
  CHECK(copy.status == ACCEL_ERROR_INVALID_ARGUMENT);
  INFO("copy: " << copy.after);
  CHECK(copy.after.find(phrase) != std::string::npos);
  // Twice: the second answer must not come from a cache of the first.
  for (int round = 0; round < 2; ++round) {
    conf::FreshResult launch = conf::run_in_fresh_thread(
        [&]() -> accel_status_t { return accel_launch_kernel(saxpy, &c, args, 4); });
    INFO("launch: " << launch.after);
    CHECK(launch.status == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(launch.after.find(phrase) != std::string::npos);
    CHECK(launch.after.find("argument 1") != std::string::npos);
  }
  auto y = download<float>(dy.get(), n, s);
  for (uint32_t i = 0; i < n; ++i) {
    INFO("element " << i << " changed although the launch was refused");
    REQUIRE(y[i] == 0.0f);
  }
}

TEST_CASE("modules: launches are ordered with copies and host functions and events", "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("ordering")) return;
  Module mod;
  if (mod.m == nullptr) return;
  Stream s;
  const uint32_t n = 4096;
  auto x = ramp(n, 0.25f, 1.0f), y = ramp(n, 1.0f, 0.0f);
  DeviceMem dx(-1, n * 4), dy(-1, n * 4);
  accel_kernel_t saxpy = mod.kernel("saxpy");
  uint32_t block = block_for(saxpy);
  auto c = config_of({n / block, 1, 1}, {block, 1, 1}, s);
  const float alpha = 2.0f;
  accel_kernel_arg_t args[] = {value_arg(alpha), ptr_arg(dx.get()), ptr_arg(dy.get()),
                               value_arg(n)};
  const bool gates = has_cap(ACCEL_CAP_HOST_FUNCTIONS);
  Gate gate;
  if (gates) ACCEL_REQUIRE_OK(gate.launch(s));
  // Queued behind the gate: the copies must land before the kernel reads.
  upload(dx.get(), x, s);
  upload(dy.get(), y, s);
  Event before(-1), after(-1);
  if (globals().events.present) ACCEL_REQUIRE_OK(accel_event_record(before, s));
  ACCEL_REQUIRE_OK(accel_launch_kernel(saxpy, &c, args, 4));
  ACCEL_REQUIRE_OK(accel_launch_kernel(saxpy, &c, args, 4));  // twice: y = 2 * alpha * x + y
  if (globals().events.present) {
    ACCEL_REQUIRE_OK(accel_event_record(after, s));
    if (gates) CHECK(accel_event_query(after) == ACCEL_ERROR_NOT_READY);
  }
  gate.release();
  if (globals().events.present) ACCEL_REQUIRE_OK(event_synchronize(after));
  auto got = download<float>(dy.get(), n, s);
  for (uint32_t i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(std::fabs(got[i] - (2 * alpha * x[i] + y[i])) <= 1e-4f * (1 + std::fabs(got[i])));
  }
  if (!gates) note_not_run("kernel behind a gate (no host functions)");
}

TEST_CASE("modules: two threads launch one kernel at once", "[modules][threads]") {
  ThreadStateGuard guard;
  if (!has_modules("threads")) return;
  Module mod;
  if (mod.m == nullptr) return;
  accel_kernel_t saxpy = mod.kernel("saxpy");
  uint32_t block = block_for(saxpy);
  const uint32_t n = 2048;
  constexpr int kThreads = 2, kLaunches = 50;
  std::vector<std::string> failures(kThreads);
  std::vector<std::vector<float>> results(kThreads);
  auto worker = [&](int t) {
    accel_stream_t s = nullptr;
    void *dx = nullptr, *dy = nullptr;
    auto fail = [&](const char* what, accel_status_t st) {
      failures[t] = std::string(what) + ": " + accel_status_name(st) + ": " + accel_last_error();
    };
    if (auto st = accel_stream_create(-1, 0, &s); st != ACCEL_SUCCESS) return fail("stream", st);
    std::vector<float> x(n, static_cast<float>(t + 1)), y(n, 0.0f);
    accel_malloc(-1, n * 4, &dx);
    accel_malloc(-1, n * 4, &dy);
    accel_memcpy_async(dx, x.data(), n * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s);
    accel_memcpy_async(dy, y.data(), n * 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s);
    const float alpha = static_cast<float>(t + 2);
    accel_kernel_arg_t args[] = {value_arg(alpha), ptr_arg(dx), ptr_arg(dy), value_arg(n)};
    auto c = config_of({n / block, 1, 1}, {block, 1, 1}, s);
    for (int i = 0; i < kLaunches; ++i) {
      if (auto st = accel_launch_kernel(saxpy, &c, args, 4); st != ACCEL_SUCCESS)
        return fail("launch", st);
    }
    results[t].resize(n);
    accel_memcpy_async(results[t].data(), dy, n * 4, ACCEL_MEMCPY_DEVICE_TO_HOST, s);
    if (auto st = accel_stream_synchronize(s); st != ACCEL_SUCCESS) return fail("sync", st);
    accel_free(dx);
    accel_free(dy);
    accel_stream_destroy(s);
  };
  {
    Deadline d("two threads launching one kernel", kWaitLimit,
               "launches must not block each other");
    std::thread a(worker, 0), b(worker, 1);
    a.join();
    b.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << ": " << failures[t]);
    REQUIRE(failures[t].empty());
    const float want = kLaunches * static_cast<float>(t + 2) * static_cast<float>(t + 1);
    for (uint32_t i = 0; i < n; ++i) {
      INFO("thread " << t << " element " << i);
      REQUIRE(results[t][i] == want);
    }
  }
}

TEST_CASE("modules: unloading while another thread launches", "[modules][threads]") {
  ThreadStateGuard guard;
  if (!has_modules("unload race")) return;
  const uint32_t n = 256;
  DeviceMem dx(-1, n * 4), dy(-1, n * 4);
  std::vector<float> zeros(n, 0.0f);
  Stream s;
  upload(dx.get(), zeros, s);
  upload(dy.get(), zeros, s);
  ACCEL_REQUIRE_OK(stream_synchronize(s));
  for (int round = 0; round < 10; ++round) {
    accel_module_t m = load_kernels();
    if (m == nullptr) return;
    accel_kernel_t saxpy = nullptr;
    ACCEL_REQUIRE_OK(accel_module_get_kernel(m, "saxpy", &saxpy));
    std::atomic<bool> stop{false}, unloaded{false};
    // Launches that began after accel_module_unload had returned: the
    // claim is that every one of them is refused (INVALID_ARGUMENT).
    std::atomic<int> ok_before{0}, ok_after{0}, refused_after{0}, other{0};
    std::thread launcher([&] {
      const float alpha = 1.0f;
      accel_kernel_arg_t args[] = {value_arg(alpha), ptr_arg(dx.get()), ptr_arg(dy.get()),
                                   value_arg(n)};
      auto c = config_of({4, 1, 1}, {64, 1, 1}, nullptr);
      while (!stop.load()) {
        // Read before the call: a launch counted "after" started once the
        // unload had returned, whatever the scheduler does meanwhile.
        const bool after = unloaded.load();
        accel_status_t st = accel_launch_kernel(saxpy, &c, args, 4);
        if (st == ACCEL_SUCCESS)
          (after ? ok_after : ok_before)++;
        else if (st == ACCEL_ERROR_INVALID_ARGUMENT)
          refused_after += after ? 1 : 0;
        else
          other++;
      }
    });
    accel_test::wait_until([&] { return ok_before.load() > 0 || other.load() > 0; },
                           "the launcher thread's first launch");
    {
      Deadline d("accel_module_unload", kWaitLimit, "an unload drains launches, then waits");
      ACCEL_CHECK_OK(accel_module_unload(m));
    }
    unloaded.store(true);
    accel_test::wait_until([&] { return refused_after.load() + ok_after.load() >= 3; },
                           "three launches after accel_module_unload returned");
    stop.store(true);
    launcher.join();
    INFO("round " << round << ": " << ok_before.load() << " launched before the unload returned, "
                  << ok_after.load() << " launched after it, " << refused_after.load()
                  << " refused after it, " << other.load() << " other statuses");
    CHECK(ok_before.load() > 0);
    CHECK(ok_after.load() == 0);
    CHECK(refused_after.load() >= 3);
    CHECK(other.load() == 0);
    ACCEL_REQUIRE_OK(synchronize(-1));
  }
}

// The launches some in-tree backend refuses for a reason that holds on every
// device, each with the backends that must refuse it. sim must refuse every
// one (sim is as strict as the strictest backend, so code that passes on sim
// passes everywhere); any other backend either refuses it, with the message
// the core or the backend gives, or runs it correctly. Each refused launch
// queues nothing.
TEST_CASE("modules: portable refusals (argument types and local memory with shared bytes)",
          "[modules]") {
  ThreadStateGuard guard;
  if (!has_modules("portable refusals")) return;
  auto has = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };
  Module mod;
  if (mod.m == nullptr) return;
  Stream s;
  const std::string backend = globals().backend;
  const bool strict = backend == "sim" || backend == "opencl";  // refuse the local-memory cases
  const bool typed = expected("param_types");                   // refuse the type cases
  const uint32_t n = 64;
  const std::vector<float> x = ramp(n, 1.0f, 0.5f), y = ramp(n, -2.0f, 7.0f);
  DeviceMem dx(-1, n * 4), dy(-1, n * 4);
  upload(dx.get(), x, s);
  upload(dy.get(), y, s);
  accel_kernel_t saxpy = mod.kernel("saxpy");
  const uint32_t block = block_for(saxpy);
  auto c = config_of({(n + block - 1) / block, 1, 1}, {block, 1, 1}, s);
  const int32_t two_int = 2;
  const float two = 2.0f, n_float = static_cast<float>(n);
  const int32_t int_first[] = {ACCEL_KERNEL_ARG_TYPE_INT, ACCEL_KERNEL_ARG_TYPE_POINTER,
                               ACCEL_KERNEL_ARG_TYPE_POINTER, ACCEL_KERNEL_ARG_TYPE_INT};
  const int32_t float_last[] = {ACCEL_KERNEL_ARG_TYPE_FLOAT, ACCEL_KERNEL_ARG_TYPE_POINTER,
                                ACCEL_KERNEL_ARG_TYPE_POINTER, ACCEL_KERNEL_ARG_TYPE_FLOAT};
  const int32_t right[] = {ACCEL_KERNEL_ARG_TYPE_FLOAT, ACCEL_KERNEL_ARG_TYPE_POINTER,
                           ACCEL_KERNEL_ARG_TYPE_POINTER, ACCEL_KERNEL_ARG_TYPE_INT};
  const int32_t bad_type[] = {9, 0, 0, 0};
  struct Case {
    const char* what;
    accel_kernel_arg_t args[4];
    const int32_t* types;
    bool must_refuse;
    std::vector<const char*> says;  // in the message, when refused
  };
  const Case cases[] = {
      {"an int's bits for float alpha",
       {value_arg(two_int), ptr_arg(dx.get()), ptr_arg(dy.get()), value_arg(n)},
       int_first,
       typed,
       {"argument 0 is an integer of 4 bytes", "parameter 0 is float (4 bytes)"}},
      {"a float's bits for uint n",
       {value_arg(two), ptr_arg(dx.get()), ptr_arg(dy.get()), value_arg(n_float)},
       float_last,
       typed,
       {"argument 3 is a floating-point value of 4 bytes", "parameter 3 is an integer"}},
      {"an arg_types entry that is no accel_kernel_arg_type_t",
       {value_arg(two), ptr_arg(dx.get()), ptr_arg(dy.get()), value_arg(n)},
       bad_type,
       true,
       {"arg_types[0] is 9"}},
  };
  for (const Case& k : cases) {
    INFO(k.what << " on " << backend);
    c.arg_types = k.types;
    const accel_status_t st = accel_launch_kernel(saxpy, &c, k.args, 4);
    const std::string why = st == ACCEL_SUCCESS ? "" : accel_last_error();
    INFO("accel_launch_kernel -> " << describe(st));
    if (k.must_refuse) REQUIRE(st == ACCEL_ERROR_INVALID_ARGUMENT);
    if (st == ACCEL_SUCCESS) {
      note_not_run(std::string("refusing ") + k.what + " (the backend does not tell types)");
      ACCEL_REQUIRE_OK(stream_synchronize(s));
      upload(dy.get(), y, s);  // what it ran is not this test's subject
      continue;
    }
    REQUIRE(st == ACCEL_ERROR_INVALID_ARGUMENT);
    for (const char* text : k.says) CHECK(has(why, text));
  }
  // Nothing refused ran; the right types run and compute.
  c.arg_types = right;
  const accel_kernel_arg_t good[] = {value_arg(two), ptr_arg(dx.get()), ptr_arg(dy.get()),
                                     value_arg(n)};
  ACCEL_REQUIRE_OK(accel_launch_kernel(saxpy, &c, good, 4));
  const std::vector<float> got = download<float>(dy.get(), n, s);
  for (uint32_t i = 0; i < n; ++i) {
    INFO("saxpy element " << i);
    REQUIRE(got[i] == two * x[i] + y[i]);
  }

  // reduce_sum's scratch is an OpenCL-style local memory parameter: OpenCL
  // has no dynamic shared memory beside it, so shared_bytes is refused
  // with the LOCAL_MEMORY argument, and a CUDA-style launch (no LOCAL_MEMORY
  // argument, shared_bytes instead) is refused naming what to pass where the
  // kernel's parameters include the local one (on cuda and hip a
  // LOCAL_MEMORY argument takes no parameter: there it is CUDA's launch).
  accel_kernel_t reduce = mod.kernel("reduce_sum");
  const uint32_t rb = block_for(reduce);
  DeviceMem dp(-1, 4);
  auto rc = config_of({1, 1, 1}, {rb, 1, 1}, s);
  rc.shared_bytes = rb * 4u;
  const accel_kernel_arg_t with_local[] = {ptr_arg(dx.get()),
                                           ptr_arg(dp.get()),
                                           {ACCEL_KERNEL_ARG_LOCAL_MEMORY, rb * 4u, nullptr},
                                           value_arg(n)};
  accel_status_t st = accel_launch_kernel(reduce, &rc, with_local, 4);
  INFO("reduce_sum with a LOCAL_MEMORY argument and shared_bytes -> " << describe(st));
  if (strict) REQUIRE(st == ACCEL_ERROR_INVALID_ARGUMENT);
  if (st == ACCEL_SUCCESS) ACCEL_REQUIRE_OK(stream_synchronize(s));
  const accel_kernel_arg_t cuda_style[] = {ptr_arg(dx.get()), ptr_arg(dp.get()), value_arg(n)};
  st = accel_launch_kernel(reduce, &rc, cuda_style, 3);
  const std::string why = st == ACCEL_SUCCESS ? "" : accel_last_error();
  INFO("reduce_sum CUDA-style -> " << describe(st));
  if (strict) REQUIRE(st == ACCEL_ERROR_INVALID_ARGUMENT);
  if (st == ACCEL_SUCCESS) {
    ACCEL_REQUIRE_OK(stream_synchronize(s));
  } else if (has(why, "takes local memory")) {
    CHECK(has(why, "accel::LocalMemory"));
    CHECK(has(why, "ACCEL_KERNEL_ARG_LOCAL_MEMORY"));
    CHECK(has(why, "argument 2"));
  }
}
