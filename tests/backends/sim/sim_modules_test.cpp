// Modules and kernels (ABI 1.2) on the sim backend, end to end through
// accel.h: the shared kernels of kernels/ (accel_kernels_sim.c, embedded by
// the build) checked against the same computation on the host, ordering
// with copies, host functions and events, the sim_host format's checks
// (not ELF, truncated, no table, dlopen failure, bad tables), argument
// checks, the device's grid, block and local memory limits, and unload.
// Every image is built by the build's C compiler (sim_test_modules.c for
// the malformed-table variants). One process, ACCEL_SIM_DEVICES=2
// (meson.build).
#include <catch2/catch.hpp>

#include <accel/accel.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "accel/accel_plugin.h"
#include "watched_calls.hpp"
#include "direct_plugin.hpp"
#include "accel_kernels.h"

extern "C" {
#define SIM_TEST_IMAGE(v)                           \
  extern const unsigned char sim_test_module_##v[]; \
  extern const size_t sim_test_module_##v##_size;
SIM_TEST_IMAGE(valid)
SIM_TEST_IMAGE(no_table)
SIM_TEST_IMAGE(unresolved)
SIM_TEST_IMAGE(bad_version)
SIM_TEST_IMAGE(bad_kind)
SIM_TEST_IMAGE(bad_type)
SIM_TEST_IMAGE(version_1)
#undef SIM_TEST_IMAGE
}

namespace {

#define CHECK_OK(call) REQUIRE((call) == ACCEL_SUCCESS)

bool has(const std::string& hay, const char* needle) {
  return hay.find(needle) != std::string::npos;
}

std::string last_error() { return accel_last_error(); }

std::string build_log() {
  size_t length = 0;
  REQUIRE(accel_module_build_log(nullptr, 0, &length) == ACCEL_SUCCESS);
  std::string text(length + 1, '\0');
  REQUIRE(accel_module_build_log(text.data(), text.size(), &length) == ACCEL_SUCCESS);
  text.resize(length);
  return text;
}

void require_sim() {
  INFO("selection: " << accel_selection_reason());
  REQUIRE(accel_is_available());
  REQUIRE(std::string(accel_current_accelerator()) == "sim");
  REQUIRE(accel_device_count() >= 2);
}

accel_module_image_t sim_image() {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_SIM_HOST);
  REQUIRE(im != nullptr);  // the build always makes it
  return *im;
}

accel_module_image_t image_of(const unsigned char* data, size_t size) {
  return accel_module_image_t{ACCEL_MODULE_FORMAT_SIM_HOST, data, size};
}

// A loaded module, unloaded at scope exit.
struct Module {
  accel_module_t m = nullptr;
  explicit Module(int32_t device = 0, accel_module_image_t image = sim_image()) {
    accel_status_t st = accel_module_load(device, &image, 1, nullptr, &m);
    INFO(last_error());
    REQUIRE(st == ACCEL_SUCCESS);
  }
  ~Module() {
    if (m != nullptr) accel_module_unload(m);
  }
  accel_kernel_t kernel(const char* name) const {
    accel_kernel_t k = nullptr;
    accel_status_t st = accel_module_get_kernel(m, name, &k);
    INFO(name << ": " << last_error());
    REQUIRE(st == ACCEL_SUCCESS);
    return k;
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
};

// Device memory of `count` T, freed once its device is idle.
template <typename T>
struct Buffer {
  T* p = nullptr;
  size_t count;
  int32_t device;
  Buffer(int32_t dev, size_t n) : count(n), device(dev) {
    void* raw = nullptr;
    CHECK_OK(accel_malloc(dev, n * sizeof(T), &raw));
    p = static_cast<T*>(raw);
  }
  ~Buffer() {
    accel_synchronize(device);
    accel_free(p);
  }
  size_t bytes() const { return count * sizeof(T); }
  void upload(const std::vector<T>& host, accel_stream_t s) {
    REQUIRE(host.size() == count);
    CHECK_OK(accel_memcpy_async(p, host.data(), bytes(), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  }
  std::vector<T> download(accel_stream_t s) {
    std::vector<T> host(count);
    CHECK_OK(accel_memcpy_async(host.data(), p, bytes(), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    CHECK_OK(accel_stream_synchronize(s));
    return host;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// A stream of its own, destroyed at scope exit (after its work ran).
struct Stream {
  accel_stream_t s = nullptr;
  explicit Stream(int32_t device = 0) { CHECK_OK(accel_stream_create(device, 0, &s)); }
  ~Stream() { accel_stream_destroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

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

accel_kernel_arg_t ptr_arg(const void* p) {
  return accel_kernel_arg_t{ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p};
}
template <typename T>
accel_kernel_arg_t value_arg(const T& v) {
  return accel_kernel_arg_t{ACCEL_KERNEL_ARG_VALUE, sizeof v, &v};
}
accel_kernel_arg_t local_arg(size_t bytes) {
  return accel_kernel_arg_t{ACCEL_KERNEL_ARG_LOCAL_MEMORY, bytes, nullptr};
}

accel_status_t launch(accel_kernel_t k, accel_dim3_t grid, accel_dim3_t block, accel_stream_t s,
                      const std::vector<accel_kernel_arg_t>& args, size_t shared = 0) {
  const accel_launch_config_t c = config(grid, block, s, shared);
  return accel_launch_kernel(k, &c, args.data(), args.size());
}

uint32_t blocks_for(uint32_t n, uint32_t block) { return (n + block - 1) / block; }

// A host function that holds its stream until release() (or 20 s, so a
// failing test cannot hang): whatever is queued after it provably waits.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  static void wait(void* self) {
    auto* g = static_cast<Gate*>(self);
    std::unique_lock<std::mutex> lock(g->mu);
    g->cv.wait_for(lock, std::chrono::seconds(20), [&] { return g->open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};

// What vector_add computes, on the host.
std::vector<float> host_vector_add(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> c(a.size());
  for (size_t i = 0; i < a.size(); ++i) c[i] = a[i] + b[i];
  return c;
}

}  // namespace

TEST_CASE("sim modules: formats and kernel attributes", "[sim-modules]") {
  require_sim();
  for (int32_t d = 0; d < accel_device_count(); ++d) {
    uint64_t formats = 0;
    CHECK_OK(accel_device_module_formats(d, &formats));
    CHECK(formats == ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_SIM_HOST));
  }
  // Every image the build made: sim takes its own and skips the others.
  accel_module_image_t images[8];
  const size_t n = accel_kernels_images(images, 8);
  REQUIRE(n >= 2);
  accel_module_t m = nullptr;
  CHECK_OK(accel_module_load(-1, images, n, "", &m));

  struct Expect {
    const char* name;
    int32_t args;
  };
  for (const Expect& e : {Expect{"vector_add", 4}, Expect{"saxpy", 4}, Expect{"reduce_sum", 4},
                          Expect{"index_3d", 3}, Expect{"empty", 0}}) {
    INFO(e.name);
    accel_kernel_t k = nullptr, again = nullptr;
    CHECK_OK(accel_module_get_kernel(m, e.name, &k));
    CHECK_OK(accel_module_get_kernel(m, e.name, &again));
    CHECK(k == again);
    accel_kernel_attributes_t a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    CHECK_OK(accel_kernel_get_attributes(k, &a));
    int64_t device_limit = 0;
    CHECK_OK(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK, &device_limit));
    CHECK(a.max_threads_per_block == device_limit);
    CHECK(a.static_shared_bytes == 0);
    CHECK(a.private_bytes == -1);
    CHECK(a.num_registers == -1);
    CHECK(a.preferred_block_multiple == 1);
    CHECK(a.num_args == e.args);
  }
  CHECK_OK(accel_module_unload(m));
}

TEST_CASE("sim modules: vector_add and saxpy against the host", "[sim-modules]") {
  require_sim();
  Module mod;
  Stream s;
  const uint32_t n = 1000;  // not a multiple of the block: the bound check runs
  const uint32_t block = 128;
  std::vector<float> a(n), b(n), y(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = 0.5f * static_cast<float>(i);
    b[i] = 3.0f - static_cast<float>(i % 17);
    y[i] = static_cast<float>(i % 5);
  }
  Buffer<float> da(0, n), db(0, n), dc(0, n);
  da.upload(a, s.s);
  db.upload(b, s.s);
  CHECK_OK(launch(mod.kernel("vector_add"), {blocks_for(n, block), 1, 1}, {block, 1, 1}, s.s,
                  {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p), value_arg(n)}));
  CHECK(dc.download(s.s) == host_vector_add(a, b));

  // Integers and a power-of-two fraction: exact whether or not the compiler
  // fused the multiply-add.
  const float alpha = 2.5f;
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 11) - 5.0f;
  Buffer<float> dx(0, n), dy(0, n);
  dx.upload(x, s.s);
  dy.upload(y, s.s);
  CHECK_OK(launch(mod.kernel("saxpy"), {blocks_for(n, block), 1, 1}, {block, 1, 1}, s.s,
                  {value_arg(alpha), ptr_arg(dx.p), ptr_arg(dy.p), value_arg(n)}));
  std::vector<float> expect(n);
  for (uint32_t i = 0; i < n; ++i) expect[i] = alpha * x[i] + y[i];
  CHECK(dy.download(s.s) == expect);
}

TEST_CASE("sim modules: reduce_sum with local memory", "[sim-modules]") {
  require_sim();
  Module mod;
  Stream s;
  for (uint32_t block : {1u, 64u, 256u}) {
    INFO("block " << block);
    const uint32_t n = 1000;
    const uint32_t grid = blocks_for(n, block);
    std::vector<float> in(n);
    for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 13);  // exact sums
    Buffer<float> din(0, n), dpartial(0, grid);
    din.upload(in, s.s);
    CHECK_OK(launch(
        mod.kernel("reduce_sum"), {grid, 1, 1}, {block, 1, 1}, s.s,
        {ptr_arg(din.p), ptr_arg(dpartial.p), local_arg(block * sizeof(float)), value_arg(n)}));
    std::vector<float> expect(grid, 0.0f);
    for (uint32_t i = 0; i < n; ++i) expect[i / block] += in[i];
    CHECK(dpartial.download(s.s) == expect);
  }
}

TEST_CASE("sim modules: index_3d over 1-D 2-D and 3-D grids", "[sim-modules]") {
  require_sim();
  Module mod;
  Stream s;
  struct Shape {
    accel_dim3_t grid, block;
  };
  for (const Shape& sh :
       {Shape{{4, 1, 1}, {8, 1, 1}}, Shape{{3, 2, 1}, {4, 5, 1}}, Shape{{2, 3, 2}, {4, 2, 3}}}) {
    const uint32_t w = sh.grid.x * sh.block.x, h = sh.grid.y * sh.block.y,
                   d = sh.grid.z * sh.block.z;
    INFO("global size " << w << " x " << h << " x " << d);
    Buffer<uint32_t> out(0, size_t{w} * h * d);
    CHECK_OK(accel_memset_async(out.p, 0xFF, out.bytes(), s.s));
    CHECK_OK(launch(mod.kernel("index_3d"), sh.grid, sh.block, s.s,
                    {ptr_arg(out.p), value_arg(w), value_arg(h)}));
    std::vector<uint32_t> expect(out.count);
    for (uint32_t z = 0; z < d; ++z)
      for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) expect[(z * h + y) * w + x] = x | (y << 10) | (z << 20);
    CHECK(out.download(s.s) == expect);
  }
}

namespace {

// Host functions queued around a kernel: what each saw of the host buffer
// that the copy after the kernel fills.
struct Probe {
  const std::vector<float>* host = nullptr;
  const std::vector<float>* expect = nullptr;
  std::atomic<int> before_copy{-1};  // 1: the host buffer was still untouched
  std::atomic<int> after_copy{-1};   // 1: it held the kernel's result
  static void before(void* self) {
    auto* p = static_cast<Probe*>(self);
    bool untouched = true;
    for (float v : *p->host) untouched &= v == -1.0f;
    p->before_copy = untouched ? 1 : 0;
  }
  static void after(void* self) {
    auto* p = static_cast<Probe*>(self);
    p->after_copy = *p->host == *p->expect ? 1 : 0;
  }
};

}  // namespace

TEST_CASE("sim modules: kernels are ordered with copies and host functions", "[sim-modules]") {
  require_sim();
  Module mod;
  Stream s;
  const uint32_t n = 512;
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 100.0f;
  }
  const std::vector<float> expect = host_vector_add(a, b);
  Buffer<float> da(0, n), db(0, n), dc(0, n);
  CHECK_OK(accel_memset_async(da.p, 0, da.bytes(), s.s));
  CHECK_OK(accel_memset_async(db.p, 0, db.bytes(), s.s));
  CHECK_OK(accel_stream_synchronize(s.s));

  // Registered: the copy into `c` is queued behind the gate, and a copy into
  // pageable memory would wait for it.
  CHECK_OK(accel_host_register(c.data(), c.size() * sizeof(float), 0));
  Gate gate;
  Probe probe;
  probe.host = &c;
  probe.expect = &expect;
  CHECK_OK(accel_launch_host_func(s.s, &Gate::wait, &gate));
  da.upload(a, s.s);
  db.upload(b, s.s);
  CHECK_OK(launch(mod.kernel("vector_add"), {blocks_for(n, 64), 1, 1}, {64, 1, 1}, s.s,
                  {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p), value_arg(n)}));
  CHECK_OK(accel_launch_host_func(s.s, &Probe::before, &probe));
  CHECK_OK(accel_memcpy_async(c.data(), dc.p, dc.bytes(), ACCEL_MEMCPY_DEVICE_TO_HOST, s.s));
  CHECK_OK(accel_launch_host_func(s.s, &Probe::after, &probe));
  // Everything waits behind the gate.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(accel_stream_query(s.s) == ACCEL_ERROR_NOT_READY);
  CHECK(probe.before_copy == -1);
  gate.release();
  CHECK_OK(accel_stream_synchronize(s.s));
  CHECK(probe.before_copy == 1);
  CHECK(probe.after_copy == 1);
  CHECK(c == expect);
  CHECK_OK(accel_host_unregister(c.data()));
}

TEST_CASE("sim modules: kernels are ordered with events across streams", "[sim-modules]") {
  require_sim();
  Module mod;
  Stream producer, consumer;
  const uint32_t n = 300;
  std::vector<float> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i) * 0.25f;
    b[i] = -static_cast<float>(i);
  }
  Buffer<float> da(0, n), db(0, n), dc(0, n);
  accel_event_t start = nullptr, done = nullptr;
  CHECK_OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &start));
  CHECK_OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &done));

  Gate gate;
  CHECK_OK(accel_launch_host_func(producer.s, &Gate::wait, &gate));
  da.upload(a, producer.s);
  db.upload(b, producer.s);
  CHECK_OK(accel_event_record(start, producer.s));
  CHECK_OK(launch(mod.kernel("vector_add"), {blocks_for(n, 32), 1, 1}, {32, 1, 1}, producer.s,
                  {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p), value_arg(n)}));
  CHECK_OK(accel_event_record(done, producer.s));
  CHECK_OK(accel_stream_wait_event(consumer.s, done));
  std::vector<float> c(n, 0.0f);
  // Registered: the copy waits behind the gate (into pageable memory it
  // would not return until then).
  CHECK_OK(accel_host_register(c.data(), c.size() * sizeof(float), 0));
  CHECK_OK(accel_memcpy_async(c.data(), dc.p, dc.bytes(), ACCEL_MEMCPY_DEVICE_TO_HOST, consumer.s));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(accel_event_query(done) == ACCEL_ERROR_NOT_READY);
  CHECK(accel_stream_query(consumer.s) == ACCEL_ERROR_NOT_READY);
  gate.release();
  CHECK_OK(accel_stream_synchronize(consumer.s));
  CHECK(c == host_vector_add(a, b));
  CHECK_OK(accel_host_unregister(c.data()));
  CHECK(accel_event_query(done) == ACCEL_SUCCESS);
  float ms = -1.0f;
  CHECK_OK(accel_event_elapsed_time(start, done, &ms));
  CHECK(ms >= 0.0f);
  CHECK_OK(accel_event_destroy(start));
  CHECK_OK(accel_event_destroy(done));
}

TEST_CASE("sim modules: arguments are copied at launch", "[sim-modules]") {
  require_sim();
  Module mod(0, image_of(sim_test_module_valid, sim_test_module_valid_size));
  Stream s;
  Buffer<uint32_t> out(0, 3);
  CHECK_OK(accel_memset_async(out.p, 0, out.bytes(), s.s));
  Gate gate;
  CHECK_OK(accel_launch_host_func(s.s, &Gate::wait, &gate));
  struct Triple {
    uint32_t a, b, c;
  } t{11, 22, 33};
  std::vector<accel_kernel_arg_t> args = {ptr_arg(out.p), value_arg(t)};
  CHECK_OK(launch(mod.kernel("struct_value"), {1, 1, 1}, {1, 1, 1}, s.s, args));
  // The kernel has not run yet; what it reads must be the launch's copy.
  t = Triple{0, 0, 0};
  args[0] = ptr_arg(nullptr);
  args[1].value = nullptr;
  gate.release();
  CHECK(out.download(s.s) == std::vector<uint32_t>{11, 22, 33});
}

TEST_CASE("sim modules: local memory layout and no shared bytes beside local parameters",
          "[sim-modules]") {
  require_sim();
  Module mod(0, image_of(sim_test_module_valid, sim_test_module_valid_size));
  Stream s;
  accel_kernel_t k = mod.kernel("local_layout");
  Buffer<uint32_t> out(0, 5);
  const uint32_t a_bytes = 100, b_bytes = 36;
  const std::vector<accel_kernel_arg_t> args = {ptr_arg(out.p), local_arg(a_bytes),
                                                value_arg(a_bytes), local_arg(b_bytes),
                                                value_arg(b_bytes)};
  CHECK_OK(accel_memset_async(out.p, 0, out.bytes(), s.s));
  CHECK_OK(launch(k, {3, 1, 1}, {2, 1, 1}, s.s, args, 0));
  const std::vector<uint32_t> got = out.download(s.s);
  CHECK(got[0] == 1);
  CHECK(got[1] == 1);
  CHECK(got[2] == 2u);  // no shared memory: NULL
  CHECK(got[3] == 0);
  CHECK(got[4] == 1);
  // A kernel with __local-style parameters takes no dynamic shared memory
  // besides them: OpenCL backends refuse it, so sim does.
  for (size_t shared : {size_t{64}, size_t{1000}}) {
    INFO("shared_bytes " << shared);
    CHECK(launch(k, {3, 1, 1}, {2, 1, 1}, s.s, args, shared) == ACCEL_ERROR_INVALID_ARGUMENT);
    const std::string why = accel_last_error();
    CHECK_THAT(why, Catch::Contains("local memory parameters") &&
                        Catch::Contains("shared_bytes " + std::to_string(shared)));
  }
}

TEST_CASE("sim modules: parameter types from the table and version 1 tables without them",
          "[sim-modules]") {
  require_sim();
  Stream s;
  Buffer<float> out(0, 1);
  const float value = 2.0f;
  const int32_t as_int = 2;
  const int32_t float_types[] = {ACCEL_KERNEL_ARG_TYPE_POINTER, ACCEL_KERNEL_ARG_TYPE_FLOAT};
  const int32_t int_types[] = {ACCEL_KERNEL_ARG_TYPE_POINTER, ACCEL_KERNEL_ARG_TYPE_INT};
  // A version 1 table loads; its parameters' types are unknown, so only
  // kinds and sizes are checked.
  Module v1(0, image_of(sim_test_module_version_1, sim_test_module_version_1_size));
  accel_kernel_t store = v1.kernel("store_float");
  accel_launch_config_t c = config({1, 1, 1}, {1, 1, 1}, s.s);
  const accel_kernel_arg_t int_args[] = {ptr_arg(out.p), value_arg(as_int)};
  c.arg_types = int_types;
  CHECK_OK(accel_launch_kernel(store, &c, int_args, 2));
  const accel_kernel_arg_t float_args[] = {ptr_arg(out.p), value_arg(value)};
  c.arg_types = float_types;
  CHECK_OK(accel_launch_kernel(store, &c, float_args, 2));
  CHECK(out.download(s.s) == std::vector<float>{value});
  // The shared kernels' table (version 2) types saxpy's alpha as a float.
  Module shared;
  accel_kernel_t saxpy = shared.kernel("saxpy");
  const uint32_t n = 1;
  const accel_kernel_arg_t saxpy_args[] = {value_arg(as_int), ptr_arg(out.p), ptr_arg(out.p),
                                           value_arg(n)};
  const int32_t saxpy_types[] = {ACCEL_KERNEL_ARG_TYPE_INT, ACCEL_KERNEL_ARG_TYPE_POINTER,
                                 ACCEL_KERNEL_ARG_TYPE_POINTER, ACCEL_KERNEL_ARG_TYPE_INT};
  c.arg_types = saxpy_types;
  CHECK(accel_launch_kernel(saxpy, &c, saxpy_args, 4) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(last_error(), "parameter 0 is float (4 bytes)"));
  // A config that ends before arg_types says no types: accepted as before.
  c.struct_size = offsetof(accel_launch_config_t, arg_types);
  CHECK_OK(accel_launch_kernel(saxpy, &c, saxpy_args, 4));
  CHECK_OK(accel_stream_synchronize(s.s));
}

TEST_CASE("sim modules: modules loaded at once stay distinct", "[sim-modules]") {
  // Each load is its own shared object, whatever descriptor number its
  // memory file had (glibc finds loaded objects by the name they were opened
  // under, "/proc/self/fd/N").
  require_sim();
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    Module shared1, extra(0, image_of(sim_test_module_valid, sim_test_module_valid_size)), shared2;
    accel_kernel_t k = nullptr;
    CHECK(accel_module_get_kernel(shared1.m, "limited", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(accel_module_get_kernel(extra.m, "vector_add", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(accel_module_get_kernel(shared2.m, "limited", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
    extra.kernel("limited");
    shared1.kernel("vector_add");
    shared2.kernel("vector_add");
  }
}

TEST_CASE("sim modules: malformed images are INVALID_ARGUMENT", "[sim-modules]") {
  require_sim();
  const accel_module_image_t good = sim_image();
  const auto* bytes = static_cast<const unsigned char*>(good.data);
  accel_module_t m = nullptr;

  const char text[] = "this is not a shared object";
  accel_module_image_t im = image_of(reinterpret_cast<const unsigned char*>(text), sizeof text);
  CHECK(accel_module_load(0, &im, 1, nullptr, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(last_error(), "not an ELF file"));
  CHECK(m == nullptr);

  for (size_t cut : {size_t{20}, good.size / 2, good.size - 1}) {
    INFO("first " << cut << " of " << good.size << " bytes");
    im = image_of(bytes, cut);
    CHECK(accel_module_load(0, &im, 1, nullptr, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
    INFO(last_error());
    CHECK(has(last_error(), "truncated"));
    CHECK(m == nullptr);
  }

  // The real image with its class byte flipped to the other word size.
  std::vector<unsigned char> other(bytes, bytes + good.size);
  other[4] = other[4] == 2 ? 1 : 2;  // EI_CLASS: ELFCLASS32 <-> ELFCLASS64
  im = image_of(other.data(), other.size());
  CHECK(accel_module_load(0, &im, 1, nullptr, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(last_error(), "-bit"));
  CHECK(m == nullptr);
}

TEST_CASE("sim modules: bad shared objects are BUILD_FAILED with a log", "[sim-modules]") {
  require_sim();
  struct Case {
    const unsigned char* data;
    size_t size;
    const char* says;
  };
  for (const Case& c :
       {Case{sim_test_module_no_table, sim_test_module_no_table_size, "accel_sim_kernels"},
        Case{sim_test_module_unresolved, sim_test_module_unresolved_size,
             "accel_sim_test_missing_function"},
        Case{sim_test_module_bad_version, sim_test_module_bad_version_size, "abi_version 99"},
        Case{sim_test_module_bad_kind, sim_test_module_bad_kind_size, "kind 7"},
        Case{sim_test_module_bad_type, sim_test_module_bad_type_size,
             "parameter 0 of kernel 'bad_type' has type 0x1"}}) {
    INFO("expecting: " << c.says);
    accel_module_t m = nullptr;
    const accel_module_image_t im = image_of(c.data, c.size);
    CHECK(accel_module_load(0, &im, 1, nullptr, &m) == ACCEL_ERROR_BUILD_FAILED);
    CHECK(m == nullptr);
    INFO("error: " << last_error());
    CHECK(has(last_error(), c.says));
    const std::string log = build_log();
    INFO("log: " << log);
    CHECK(has(log, "== image 0 (sim_host) =="));
    CHECK(has(log, c.says));
  }
}

TEST_CASE("sim modules: a failed image falls back to the next one", "[sim-modules]") {
  require_sim();
  const accel_module_image_t images[] = {
      image_of(sim_test_module_no_table, sim_test_module_no_table_size), sim_image()};
  accel_module_t m = nullptr;
  CHECK_OK(accel_module_load(0, images, 2, nullptr, &m));
  const std::string log = build_log();
  INFO(log);
  CHECK(has(log, "accel_sim_kernels"));
  accel_kernel_t k = nullptr;
  CHECK_OK(accel_module_get_kernel(m, "empty", &k));
  CHECK_OK(accel_module_unload(m));
}

TEST_CASE("sim modules: build options and unknown kernels are refused", "[sim-modules]") {
  require_sim();
  accel_module_image_t im = sim_image();
  accel_module_t m = nullptr;
  CHECK(accel_module_load(0, &im, 1, "-O3", &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(last_error(), "no build options"));
  CHECK(m == nullptr);

  Module mod;
  accel_kernel_t k = nullptr;
  CHECK(accel_module_get_kernel(mod.m, "no_such_kernel", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(last_error(), "no kernel 'no_such_kernel' in the module"));
  CHECK(k == nullptr);
}

TEST_CASE("sim modules: wrong arguments are refused and nothing runs", "[sim-modules]") {
  require_sim();
  Module mod;
  Stream s;
  const uint32_t n = 64;
  Buffer<float> da(0, n), db(0, n), dc(0, n);
  CHECK_OK(accel_memset_async(dc.p, 0x7F, dc.bytes(), s.s));
  const std::vector<float> sentinel = dc.download(s.s);
  accel_kernel_t add = mod.kernel("vector_add");
  accel_kernel_t reduce = mod.kernel("reduce_sum");
  const uint64_t wide = n;
  const float f = 1.0f;
  struct Bad {
    const char* what;
    accel_kernel_t k;
    std::vector<accel_kernel_arg_t> args;
  };
  const std::vector<Bad> bad = {
      {"too few", add, {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p)}},
      {"too many", add, {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p), value_arg(n), value_arg(n)}},
      {"value for a pointer", add, {value_arg(f), ptr_arg(db.p), ptr_arg(dc.p), value_arg(n)}},
      {"pointer for a value", add, {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p), ptr_arg(da.p)}},
      {"8-byte n", add, {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p), value_arg(wide)}},
      {"local memory of 0 bytes",
       reduce,
       {ptr_arg(da.p), ptr_arg(dc.p), local_arg(0), value_arg(n)}},
      {"pointer for local memory",
       reduce,
       {ptr_arg(da.p), ptr_arg(dc.p), ptr_arg(db.p), value_arg(n)}},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    CHECK(launch(b.k, {1, 1, 1}, {n, 1, 1}, s.s, b.args) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(accel_stream_query(s.s) == ACCEL_SUCCESS);
  }
  CHECK(dc.download(s.s) == sentinel);
}

TEST_CASE("sim modules: a grid with a 0 extent runs nothing", "[sim-modules]") {
  require_sim();
  Module mod;
  Stream s;
  const uint32_t n = 32;
  Buffer<uint32_t> out(0, n);
  CHECK_OK(accel_memset_async(out.p, 0x5A, out.bytes(), s.s));
  const std::vector<uint32_t> sentinel = out.download(s.s);
  for (accel_dim3_t grid : {accel_dim3_t{0, 1, 1}, accel_dim3_t{4, 0, 1}, accel_dim3_t{4, 1, 0}}) {
    CHECK_OK(launch(mod.kernel("index_3d"), grid, {8, 1, 1}, s.s,
                    {ptr_arg(out.p), value_arg(n), value_arg(uint32_t{1})}));
    CHECK(accel_stream_query(s.s) == ACCEL_SUCCESS);
  }
  CHECK(out.download(s.s) == sentinel);
}

TEST_CASE("sim modules: grid block and local memory limits", "[sim-modules]") {
  require_sim();
  Module mod;
  Module extra(0, image_of(sim_test_module_valid, sim_test_module_valid_size));
  Stream s;
  Buffer<float> in(0, 4096), partial(0, 64);
  CHECK_OK(accel_memset_async(partial.p, 0x3C, partial.bytes(), s.s));
  const std::vector<float> sentinel = partial.download(s.s);
  accel_kernel_t reduce = mod.kernel("reduce_sum");
  const uint32_t n = 64;
  auto reduce_args = [&](size_t local) {
    return std::vector<accel_kernel_arg_t>{ptr_arg(in.p), ptr_arg(partial.p), local_arg(local),
                                           value_arg(n)};
  };
  int64_t limit = 0, shared_limit = 0;
  CHECK_OK(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK, &limit));
  CHECK_OK(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK, &shared_limit));
  const auto over = static_cast<uint32_t>(limit + 1);

  SECTION("block over the device's threads per block") {
    CHECK(launch(reduce, {1, 1, 1}, {over, 1, 1}, s.s, reduce_args(4 * over)) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(last_error(), std::to_string(limit).c_str()));
  }
  SECTION("block z over 64") {
    CHECK(launch(reduce, {1, 1, 1}, {1, 1, 65}, s.s, reduce_args(256)) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(last_error(), "block z is 65"));
  }
  SECTION("grid over the device's limits") {
    CHECK(launch(reduce, {1, 65536, 1}, {1, 1, 1}, s.s, reduce_args(4)) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(last_error(), "grid y is 65536"));
    CHECK(launch(reduce, {1, 1, 65536}, {1, 1, 1}, s.s, reduce_args(4)) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(last_error(), "grid z is 65536"));
    CHECK(launch(reduce, {2147483648u, 1, 1}, {1, 1, 1}, s.s, reduce_args(4)) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(last_error(), "grid x is 2147483648"));
  }
  SECTION("local memory over the device's shared memory per block") {
    CHECK(launch(reduce, {1, 1, 1}, {64, 1, 1}, s.s,
                 reduce_args(static_cast<size_t>(shared_limit) + 1)) == ACCEL_ERROR_OUT_OF_MEMORY);
    CHECK(has(last_error(), "local memory"));
    // shared_bytes beside a local memory parameter is refused first.
    CHECK(launch(reduce, {1, 1, 1}, {64, 1, 1}, s.s, reduce_args(256),
                 static_cast<size_t>(shared_limit)) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(launch(reduce, {1, 1, 1}, {64, 1, 1}, s.s, reduce_args(SIZE_MAX)) ==
          ACCEL_ERROR_OUT_OF_MEMORY);
    // All of it is fine.
    CHECK_OK(
        launch(reduce, {1, 1, 1}, {64, 1, 1}, s.s, reduce_args(static_cast<size_t>(shared_limit))));
    CHECK_OK(accel_stream_synchronize(s.s));
    return;  // that one ran
  }
  SECTION("a kernel's own limit") {
    accel_kernel_t limited = extra.kernel("limited");
    accel_kernel_attributes_t a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    CHECK_OK(accel_kernel_get_attributes(limited, &a));
    CHECK(a.max_threads_per_block == 64);
    Buffer<uint32_t> out(0, 6);
    CHECK(launch(limited, {1, 1, 1}, {65, 1, 1}, s.s, {ptr_arg(out.p)}) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK_OK(launch(limited, {3, 2, 1}, {4, 4, 4}, s.s, {ptr_arg(out.p)}));
    CHECK(out.download(s.s) == std::vector<uint32_t>(6, 64));
  }
  CHECK(accel_stream_query(s.s) == ACCEL_SUCCESS);
  CHECK(partial.download(s.s) == sentinel);
}

TEST_CASE("sim modules: modules are per device", "[sim-modules]") {
  require_sim();
  Module mod(1);
  Stream s0(0), s1(1);
  const uint32_t n = 100;
  std::vector<float> a(n, 1.5f), b(n, 2.0f);
  Buffer<float> da(1, n), db(1, n), dc(1, n);
  da.upload(a, s1.s);
  db.upload(b, s1.s);
  const std::vector<accel_kernel_arg_t> args = {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p),
                                                value_arg(n)};
  accel_kernel_t k = mod.kernel("vector_add");
  CHECK(launch(k, {1, 1, 1}, {128, 1, 1}, s0.s, args) == ACCEL_ERROR_DEVICE_MISMATCH);
  CHECK_OK(launch(k, {1, 1, 1}, {128, 1, 1}, s1.s, args));
  CHECK(dc.download(s1.s) == host_vector_add(a, b));
}

TEST_CASE("sim modules: unload waits for queued launches", "[sim-modules]") {
  require_sim();
  Stream s;
  const uint32_t n = 1u << 16;
  std::vector<float> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1000);
    b[i] = 1.0f;
  }
  Buffer<float> da(0, n), db(0, n), dc(0, n);
  da.upload(a, s.s);
  db.upload(b, s.s);
  accel_module_image_t im = sim_image();
  accel_module_t m = nullptr;
  CHECK_OK(accel_module_load(0, &im, 1, nullptr, &m));
  accel_kernel_t k = nullptr;
  CHECK_OK(accel_module_get_kernel(m, "vector_add", &k));
  Gate gate;
  CHECK_OK(accel_launch_host_func(s.s, &Gate::wait, &gate));
  for (int i = 0; i < 8; ++i)
    CHECK_OK(launch(k, {n / 256, 1, 1}, {256, 1, 1}, s.s,
                    {ptr_arg(da.p), ptr_arg(db.p), ptr_arg(dc.p), value_arg(n)}));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.release();
  });
  CHECK_OK(accel_module_unload(m));  // blocks until the gate opens and the launches ran
  CHECK(accel_stream_query(s.s) == ACCEL_SUCCESS);
  opener.join();
  accel_kernel_attributes_t attrs;
  std::memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs;
  CHECK(accel_kernel_get_attributes(k, &attrs) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(dc.download(s.s) == host_vector_add(a, b));
}

// ---- the plugin's own checks, on a private copy of it ------------------------
// The core checks arguments before the plugin sees them, so the plugin's own
// refusals (what protects it from a core that could not check) are reached
// only through its vtable.

namespace {

thread_local std::string t_plugin_error;
void keep_error(const accel_host_services_t*, accel_status_t, const char* detail) {
  t_plugin_error = detail != nullptr ? detail : "";
}

accel_host_services_t g_host = accel_test::quiet_host(keep_error);

// The sim plugin's vtable from a copy of its file (two devices, initialised).
const accel_plugin_api_t* private_sim() {
  int32_t count = 0;
  const accel_plugin_api_t* a =
      accel_test::open_private_copy(std::getenv("ACCEL_TEST_SIM_PLUGIN"), &g_host, &count);
  if (a == nullptr || count < 2 || (a->lazy_init && a->lazy_init() != ACCEL_SUCCESS))
    return nullptr;
  return a;
}

void append_log(void* ctx, const char* text, size_t length) {
  static_cast<std::string*>(ctx)->append(text, length);
}

}  // namespace

// direct_plugin.hpp names every copy apart: dlopen of a name it loaded
// before, even from a file since removed, returns that object again.
TEST_CASE("sim modules: two private copies in one process are two instances", "[sim-modules]") {
  const accel_plugin_api_t* first = private_sim();
  const accel_plugin_api_t* second = private_sim();
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  // Each vtable lies in its own loaded object.
  CHECK(first != second);
  Dl_info a{}, b{};
  REQUIRE(dladdr(first, &a) != 0);
  REQUIRE(dladdr(second, &b) != 0);
  CHECK(a.dli_fbase != b.dli_fbase);
  CHECK(std::string(a.dli_fname) != b.dli_fname);
}

TEST_CASE("sim modules: the plugin checks launches by itself", "[sim-modules]") {
  const accel_plugin_api_t* a = private_sim();
  INFO("ACCEL_TEST_SIM_PLUGIN=" << (std::getenv("ACCEL_TEST_SIM_PLUGIN")
                                        ? std::getenv("ACCEL_TEST_SIM_PLUGIN")
                                        : "(unset)"));
  REQUIRE(a != nullptr);
  REQUIRE(a->module_load != nullptr);

  std::string log;
  accel_plugin_module_t m = nullptr;
  const accel_module_image_t bad =
      image_of(sim_test_module_unresolved, sim_test_module_unresolved_size);
  CHECK(a->module_load(0, &bad, "", append_log, &log, &m) == ACCEL_ERROR_BUILD_FAILED);
  CHECK(has(log, "undefined symbol"));
  CHECK(has(log, "accel_sim_test_missing_function"));
  CHECK(m == nullptr);

  const accel_module_image_t good = sim_image();
  CHECK(a->module_load(0, &good, "-g", append_log, &log, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  log.clear();
  REQUIRE(a->module_load(0, &good, "", append_log, &log, &m) == ACCEL_SUCCESS);
  CHECK(log.empty());
  accel_plugin_kernel_t k = nullptr;
  CHECK(a->kernel_create(m, "nope", &k) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(has(t_plugin_error, "no kernel 'nope' in the module"));
  REQUIRE(a->kernel_create(m, "vector_add", &k) == ACCEL_SUCCESS);

  accel_plugin_kernel_param_t params[4];
  size_t count = 0;
  uint32_t flags = 99;
  CHECK(a->kernel_get_params(k, params, 4, &count, &flags) == ACCEL_SUCCESS);
  CHECK(count == 4);
  CHECK(flags == 0);
  CHECK(params[0].kinds == ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER));
  CHECK(params[3].kinds == ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE));
  CHECK(params[3].size == sizeof(uint32_t));

  accel_plugin_stream_t s0 = nullptr, s1 = nullptr;
  REQUIRE(a->stream_create(0, 0, &s0) == ACCEL_SUCCESS);
  REQUIRE(a->stream_create(1, 0, &s1) == ACCEL_SUCCESS);
  std::vector<float> host(8, 0.0f);
  const uint32_t n = 8;
  const accel_kernel_arg_t args[] = {ptr_arg(host.data()), ptr_arg(host.data()),
                                     ptr_arg(host.data()), value_arg(n)};
  const uint64_t wide = 8;
  const accel_kernel_arg_t wrong_size[] = {ptr_arg(host.data()), ptr_arg(host.data()),
                                           ptr_arg(host.data()), value_arg(wide)};
  CHECK(a->launch_kernel(k, {1, 1, 1}, {8, 1, 1}, 0, args, 3, s0) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(a->launch_kernel(k, {1, 1, 1}, {8, 1, 1}, 0, wrong_size, 4, s0) ==
        ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(a->launch_kernel(k, {1, 1, 1}, {8, 1, 1}, 0, nullptr, 4, s0) ==
        ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(a->launch_kernel(k, {1, 1, 1}, {0, 1, 1}, 0, args, 4, s0) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(a->launch_kernel(k, {1, 1, 1}, {1025, 1, 1}, 0, args, 4, s0) ==
        ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(a->launch_kernel(k, {1, 1, 1}, {8, 1, 1}, 0, args, 4, s1) == ACCEL_ERROR_DEVICE_MISMATCH);
  CHECK(a->stream_synchronize(s0) == ACCEL_SUCCESS);
  CHECK(host == std::vector<float>(8, 0.0f));  // nothing ran

  // A good launch: host memory stands in for device memory on sim.
  std::vector<float> x(8, 2.0f), y(8, 3.0f), z(8, 0.0f);
  const accel_kernel_arg_t ok[] = {ptr_arg(x.data()), ptr_arg(y.data()), ptr_arg(z.data()),
                                   value_arg(n)};
  CHECK(a->launch_kernel(k, {1, 1, 1}, {8, 1, 1}, 0, ok, 4, s0) == ACCEL_SUCCESS);
  CHECK(a->stream_synchronize(s0) == ACCEL_SUCCESS);
  CHECK(z == std::vector<float>(8, 5.0f));

  CHECK(a->stream_destroy(s0) == ACCEL_SUCCESS);
  CHECK(a->stream_destroy(s1) == ACCEL_SUCCESS);
  CHECK(a->kernel_destroy(k) == ACCEL_SUCCESS);
  CHECK(a->module_unload(m) == ACCEL_SUCCESS);
}
