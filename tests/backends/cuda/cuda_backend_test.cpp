// End-to-end tests of the CUDA plugin through accel.h, against the fake
// driver (tests/fakes/cuda), the toolkit's stub library and a missing one.
// Discovery runs once per process, so each scenario is its own `meson test`
// with its own environment, selected by its Catch2 tag; see meson.build.
#include <catch2/catch.hpp>

#include "../common.hpp"
#include "../interop.hpp"
#include "fake_error_texts.hpp"

#include <accel/accel.h>
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using backend_test::device_native_of;
using backend_test::env;
using backend_test::Info;
using backend_test::native_of;

Info cuda_info() { return backend_test::backend_info("cuda"); }

// The fake driver, as loaded by the plugin: RTLD_NOLOAD proves it is the
// same instance (same model, same per-thread current context).
void* fake_driver() {
  std::string path = env("ACCEL_CUDA_DRIVER");
  REQUIRE(!path.empty());
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  INFO(path << ": " << (h == nullptr ? dlerror() : "loaded"));
  REQUIRE(h != nullptr);
  return h;
}

#define TEST_STR2(x) #x
#define TEST_STR(x) TEST_STR2(x)
// A fake driver function by the name cuda.h gives it (cuMemAlloc -> cuMemAlloc_v2).
#define FAKE_FN(h, f) sym<decltype(&::f)>(h, TEST_STR(f))

template <typename Fn>
Fn sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  INFO(name);
  REQUIRE(p != nullptr);
  return reinterpret_cast<Fn>(p);
}

using backend_test::in_child;

void peer_copy_in_order();  // below, with the [interop] tests

// A call that must succeed; on failure the report shows accel's detail.
#define REQUIRE_OK(expr)                                                           \
  do {                                                                             \
    accel_status_t st_ = (expr);                                                   \
    INFO(#expr << " -> " << accel_status_name(st_) << ": " << accel_last_error()); \
    REQUIRE(st_ == ACCEL_SUCCESS);                                                 \
  } while (0)

// A call that must fail with `status`; returns accel's detail.
std::string refused(accel_status_t got, accel_status_t status) {
  std::string msg = accel_last_error();
  INFO("got " << accel_status_name(got) << ": " << msg);
  CHECK(got == status);
  return msg;
}

// The fake's test hook (not CUDA): one of its counters.
long long fake_count(const char* what) {
  auto fn = sym<long long (*)(const char*)>(fake_driver(), "fake_cuda_count");
  long long v = fn(what);
  INFO(what);
  REQUIRE(v >= 0);
  return v;
}

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

accel_native_handle_t cuda_stream_handle(CUstream s) {
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  h.type = ACCEL_NATIVE_CUDA;
  h.handle = s;
  h.ordinal = -1;
  return h;
}

// Holds a stream's queue until opened: work queued behind it is still
// pending, so an order between two queues would show (10 s at most).
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool is_open = false;
  static void wait(void* p) {
    auto* g = static_cast<Gate*>(p);
    std::unique_lock lock(g->m);
    g->cv.wait_for(lock, std::chrono::seconds(10), [&] { return g->is_open; });
  }
  void open() {
    {
      std::lock_guard lock(m);
      is_open = true;
    }
    cv.notify_all();
  }
};

// Host functions that append their letter to a log, in the order they ran.
struct Log {
  std::mutex m;
  std::string text;
};
struct Mark {
  Log* log;
  char c;
  static void run(void* p) {
    auto* mk = static_cast<Mark*>(p);
    std::lock_guard lock(mk->log->m);
    mk->log->text += mk->c;
  }
};

// Makes `ctx` current for the scope, as a program using the Driver API
// does, and restores what was current.
class DriverCtx {
 public:
  explicit DriverCtx(CUcontext ctx) {
    void* h = fake_driver();
    REQUIRE(FAKE_FN(h, cuCtxGetCurrent)(&previous_) == CUDA_SUCCESS);
    REQUIRE(FAKE_FN(h, cuCtxSetCurrent)(ctx) == CUDA_SUCCESS);
  }
  ~DriverCtx() { FAKE_FN(fake_driver(), cuCtxSetCurrent)(previous_); }
  DriverCtx(const DriverCtx&) = delete;
  DriverCtx& operator=(const DriverCtx&) = delete;

 private:
  CUcontext previous_ = nullptr;
};

CUcontext primary_ctx_of(int32_t device) {
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  REQUIRE_OK(accel_device_native_handle(device, &h));
  REQUIRE(h.type == ACCEL_NATIVE_CUDA);
  REQUIRE(h.context != nullptr);
  return static_cast<CUcontext>(h.context);
}

std::vector<unsigned char> pattern(size_t n, unsigned char seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 7 + seed);
  return v;
}

// H2D then D2H of `data` through a fresh allocation of `device` on `s`.
std::vector<unsigned char> through_device(accel_stream_t s, int32_t device, const void* src,
                                          void* dst, size_t n) {
  void* d = nullptr;
  REQUIRE_OK(accel_malloc(device, n, &d));
  REQUIRE_OK(accel_memcpy_async(d, src, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  REQUIRE_OK(accel_memcpy_async(dst, d, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  REQUIRE_OK(accel_free(d));
  const auto* b = static_cast<const unsigned char*>(dst);
  return std::vector<unsigned char>(b, b + n);
}

// Child: real work on the fake (cuInit runs here, in the child), exit code
// says what failed. Memory in fork()ed children is covered by tests/fork.
std::atomic<int> g_host_calls{0};
int child_works_body();
int child_works() {
  int rc = child_works_body();
  if (rc != 0) std::fprintf(stderr, "child: step %d failed: %s\n", rc, accel_last_error());
  return rc;
}
int child_works_body() {
  if (accel_device_count() != 2) return 10;
  accel_device_properties_t p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  if (accel_get_device_properties(1, &p) != ACCEL_SUCCESS) return 11;
  if (std::string(p.name) != "Fake CUDA Device 1") return 12;
  size_t free_b = 0, total_b = 0;
  if (accel_mem_get_info(1, &free_b, &total_b) != ACCEL_SUCCESS || total_b == 0) return 13;
  accel_stream_t s = nullptr;
  if (accel_stream_create(1, 0, &s) != ACCEL_SUCCESS) return 14;
  accel_event_t e = nullptr;
  if (accel_event_create(1, ACCEL_EVENT_DEFAULT, &e) != ACCEL_SUCCESS) return 15;
  if (accel_launch_host_func(
          s, [](void*) { g_host_calls.fetch_add(1); }, nullptr) != ACCEL_SUCCESS)
    return 16;
  if (accel_event_record(e, s) != ACCEL_SUCCESS) return 17;
  if (accel_event_synchronize(e) != ACCEL_SUCCESS) return 18;
  if (g_host_calls.load() != 1) return 19;
  if (accel_stream_destroy(s) != ACCEL_SUCCESS || accel_event_destroy(e) != ACCEL_SUCCESS)
    return 20;
  return 0;
}

// Child: counting works, work is refused with FORKED and a useful message.
int child_refused() {
  if (accel_device_count() != 2) return 30;
  void* d = nullptr;
  accel_status_t st = accel_malloc(0, 64, &d);
  if (st != ACCEL_ERROR_FORKED) {
    std::fprintf(stderr, "child: accel_malloc gave %s: %s\n", accel_status_name(st),
                 accel_last_error());
    return 31;
  }
  std::string msg = accel_last_error();
  std::fprintf(stderr, "child: refused as expected: %s\n", msg.c_str());
  if (msg.find("exec") == std::string::npos && msg.find("spawn") == std::string::npos) return 32;
  return 0;
}

void roundtrip(int32_t device) {
  std::vector<unsigned char> in(1 << 16), out(1 << 16, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 13 + 1);
  void* a = nullptr;
  void* b = nullptr;
  REQUIRE(accel_malloc(device, in.size(), &a) == ACCEL_SUCCESS);
  REQUIRE(accel_malloc(device, in.size(), &b) == ACCEL_SUCCESS);
  accel_stream_t s = nullptr;
  REQUIRE(accel_current_stream(device, &s) == ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_async(a, in.data(), in.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, s) ==
          ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_async(b, a, in.size(), ACCEL_MEMCPY_DEVICE_TO_DEVICE, s) == ACCEL_SUCCESS);
  REQUIRE(accel_memset_async(b, 0x5a, 16, s) == ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_async(out.data(), b, out.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, s) ==
          ACCEL_SUCCESS);
  REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);
  for (size_t i = 0; i < 16; ++i) in[i] = 0x5a;
  CHECK(in == out);
  CHECK(accel_free(a) == ACCEL_SUCCESS);
  CHECK(accel_free(b) == ACCEL_SUCCESS);
}

}  // namespace

TEST_CASE("a missing driver library is unavailable and named", "[missing]") {
  Info i = cuda_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_UNAVAILABLE);
  CHECK_THAT(i.reason, Catch::Contains("libcuda.so.1"));
  CHECK_THAT(i.reason, Catch::Contains(env("ACCEL_CUDA_DRIVER")));
  CHECK_THAT(i.reason, Catch::Contains("No such file"));  // dlerror's text
  CHECK(accel_is_available() == 0);
  CHECK_THAT(std::string(accel_selection_reason()), Catch::Contains("unavailable"));
}

TEST_CASE("a relative ACCEL_CUDA_DRIVER is refused", "[relative]") {
  Info i = cuda_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_UNAVAILABLE);
  CHECK_THAT(i.reason, Catch::Contains("not an absolute path"));
}

TEST_CASE("the toolkit's stub library says no NVIDIA driver is installed", "[stub]") {
  std::string stub = env("ACCEL_CUDA_DRIVER");
  if (access(stub.c_str(), R_OK) != 0) {
    accel_test::skipf("the CUDA toolkit stub %s is not on this machine", stub.c_str());
    return;
  }
  Info i = cuda_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_UNAVAILABLE);
  CHECK_THAT(i.reason, Catch::Contains("no NVIDIA driver is installed"));
  CHECK_THAT(i.reason, Catch::Contains("CUDA_ERROR_STUB_LIBRARY"));
}

TEST_CASE("driver present but no device: no_devices with the reason", "[no-devices]") {
  Info i = cuda_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(i.devices == 0);
  // Set by meson.build per scenario: the driver's CUDA_ERROR_NO_DEVICE, NVML
  // reporting no GPU, or CUDA_VISIBLE_DEVICES hiding them all.
  REQUIRE(!env("EXPECT_REASON").empty());
  CHECK_THAT(i.reason, Catch::Contains(env("EXPECT_REASON")));
  CHECK(accel_is_available() == 0);
}

TEST_CASE("the driver version is cuDriverGetVersion's and known from discovery on", "[version]") {
  Info i = cuda_info();
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  // FAKE_CUDA_DRIVER_VERSION=12040; counted through NVML, nothing initialised.
  CHECK(i.runtime_version == "CUDA driver 12.4 (12040)");
  roundtrip(0);
  CHECK(cuda_info().runtime_version == "CUDA driver 12.4 (12040)");  // unchanged
}

TEST_CASE("a driver too old is unavailable with both versions", "[old-driver]") {
  Info i = cuda_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_UNAVAILABLE);
  CHECK_THAT(i.reason, Catch::Contains(env("FAKE_CUDA_DRIVER_VERSION")));
  CHECK_THAT(i.reason, Catch::Contains("11040"));
  CHECK_THAT(i.reason, Catch::Contains("11.4"));
}

TEST_CASE("CUDA_VISIBLE_DEVICES through NVML agrees with the driver", "[visible]") {
  // FAKE_CUDA_DEVICES=3, CUDA_VISIBLE_DEVICES="2,<UUID of 0>,7,1": devices
  // physical 2 then 0; '7' stops the list.
  Info i = cuda_info();
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  REQUIRE(accel_device_count() == 2);
  accel_device_properties_t p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  REQUIRE(accel_get_device_properties(0, &p) == ACCEL_SUCCESS);
  CHECK(std::string(p.pci_bus_id) == "0000:12:00.0");
  CHECK(std::string(p.name) == "Fake CUDA Device 2");
  CHECK(std::string(p.architecture) == "sm_90");
  CHECK(p.compute_units == 10);
  CHECK(std::string(p.vendor) == "NVIDIA");
  CHECK(p.has_uuid == 1);
  CHECK(p.uuid[0] == 0xfa);
  CHECK(p.uuid[15] == 2);
  REQUIRE(accel_get_device_properties(1, &p) == ACCEL_SUCCESS);
  CHECK(std::string(p.pci_bus_id) == "0000:10:00.0");
  CHECK(p.uuid[15] == 0);
}

// The plugin counts through NVML with its own CUDA_VISIBLE_DEVICES parser;
// the fake driver applies the variable in cuInit with its own, separate
// model of NVIDIA's rules. Each [agree] scenario (meson.build) sets the
// variable and EXPECT_PHYSICAL (the physical devices NVIDIA's rules leave,
// in order, or "none"); both sides must match it.
TEST_CASE("CUDA_VISIBLE_DEVICES: the count and the driver agree", "[agree]") {
  std::vector<int> expect;
  const std::string want = env("EXPECT_PHYSICAL");
  REQUIRE(!want.empty());
  if (want != "none") {
    for (size_t at = 0; at <= want.size();) {
      size_t comma = std::min(want.find(',', at), want.size());
      expect.push_back(std::stoi(want.substr(at, comma - at)));
      at = comma + 1;
    }
  }
  const auto n = static_cast<int32_t>(expect.size());
  INFO("CUDA_VISIBLE_DEVICES='" << env("CUDA_VISIBLE_DEVICES") << "'");

  // The count (NVML + the plugin's parser; no cuInit).
  CHECK(accel_device_count() == n);
  Info i = cuda_info();
  INFO("reason: " << i.reason);

  // The driver's own answer.
  void* h = fake_driver();
  CUresult rc = FAKE_FN(h, cuInit)(0);
  CHECK(rc == (n == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS));
  if (rc != CUDA_SUCCESS) return;
  int count = -1;
  REQUIRE(FAKE_FN(h, cuDeviceGetCount)(&count) == CUDA_SUCCESS);
  CHECK(count == n);
  for (int ordinal = 0; ordinal < std::min<int>(count, n); ++ordinal) {
    CUdevice dev = -1;
    REQUIRE(FAKE_FN(h, cuDeviceGet)(&dev, ordinal) == CUDA_SUCCESS);
    char name[64] = {};
    REQUIRE(FAKE_FN(h, cuDeviceGetName)(name, sizeof name, dev) == CUDA_SUCCESS);
    CHECK(std::string(name) ==
          "Fake CUDA Device " + std::to_string(expect[static_cast<size_t>(ordinal)]));
  }
}

// The real driver reads CUDA_VISIBLE_DEVICES in cuInit: a process may set it
// after loading libcuda and calling cuDriverGetVersion. The fake must too, or
// tests would depend on when it was first called.
TEST_CASE("the fake driver reads CUDA_VISIBLE_DEVICES at cuInit", "[fake-cuinit]") {
  void* h = dlopen(env("ACCEL_CUDA_DRIVER").c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  int version = 0;
  REQUIRE(FAKE_FN(h, cuDriverGetVersion)(&version) == CUDA_SUCCESS);  // before the change
  REQUIRE(setenv("CUDA_VISIBLE_DEVICES", "2", 1) == 0);
  REQUIRE(FAKE_FN(h, cuInit)(0) == CUDA_SUCCESS);
  int count = -1;
  REQUIRE(FAKE_FN(h, cuDeviceGetCount)(&count) == CUDA_SUCCESS);
  CHECK(count == 1);
  char name[64] = {};
  REQUIRE(FAKE_FN(h, cuDeviceGetName)(name, sizeof name, 0) == CUDA_SUCCESS);
  CHECK(std::string(name) == "Fake CUDA Device 2");
  // Read once: a later change and cuInit leave the devices as they are.
  REQUIRE(setenv("CUDA_VISIBLE_DEVICES", "0,1", 1) == 0);
  REQUIRE(FAKE_FN(h, cuInit)(0) == CUDA_SUCCESS);
  REQUIRE(FAKE_FN(h, cuDeviceGetCount)(&count) == CUDA_SUCCESS);
  CHECK(count == 1);
}

TEST_CASE("the vendor's current context is accel's current device both ways", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_driver();
  auto get_current = FAKE_FN(h, cuCtxGetCurrent);
  auto set_current = FAKE_FN(h, cuCtxSetCurrent);
  auto get_device = FAKE_FN(h, cuCtxGetDevice);
  auto retain = FAKE_FN(h, cuDevicePrimaryCtxRetain);

  CHECK(accel_current_device_index() == 0);  // initialises CUDA
  // accel -> CUDA
  REQUIRE(accel_set_device_index(1) == ACCEL_SUCCESS);
  CUdevice dev = -1;
  REQUIRE(get_device(&dev) == CUDA_SUCCESS);
  CHECK(dev == 1);
  // CUDA -> accel (what cudaSetDevice does)
  CUcontext c0 = nullptr;
  REQUIRE(retain(&c0, 0) == CUDA_SUCCESS);
  REQUIRE(set_current(c0) == CUDA_SUCCESS);
  CHECK(accel_current_device_index() == 0);
  CUcontext c1 = nullptr;
  REQUIRE(retain(&c1, 1) == CUDA_SUCCESS);
  REQUIRE(set_current(c1) == CUDA_SUCCESS);
  CHECK(accel_current_device_index() == 1);
  // An operation on another device leaves the caller's context alone.
  void* p = nullptr;
  REQUIRE(accel_malloc(0, 256, &p) == ACCEL_SUCCESS);
  CUcontext cur = nullptr;
  REQUIRE(get_current(&cur) == CUDA_SUCCESS);
  CHECK(cur == c1);
  CHECK(accel_current_device_index() == 1);
  REQUIRE(accel_free(p) == ACCEL_SUCCESS);
  // A new thread starts on device 0, whatever this one did.
  int32_t other = -1;
  std::thread([&] { other = accel_current_device_index(); }).join();
  CHECK(other == 0);
  REQUIRE(set_current(nullptr) == CUDA_SUCCESS);
}

TEST_CASE("maybe_exchange does not create a context; first use does", "[maybe]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_driver();
  auto get_state = FAKE_FN(h, cuDevicePrimaryCtxGetState);
  auto get_current = FAKE_FN(h, cuCtxGetCurrent);
  auto get_device = FAKE_FN(h, cuCtxGetDevice);

  CHECK(accel_current_device_index() == 0);
  int32_t prev = -1;
  REQUIRE(accel_maybe_exchange_device(1, &prev) == ACCEL_SUCCESS);
  CHECK(prev == 0);
  CHECK(accel_current_device_index() == 1);
  unsigned flags = 0;
  int active = -1;
  REQUIRE(get_state(1, &flags, &active) == CUDA_SUCCESS);
  CHECK(active == 0);
  CUcontext cur = reinterpret_cast<CUcontext>(1);
  REQUIRE(get_current(&cur) == CUDA_SUCCESS);
  CHECK(cur == nullptr);

  void* p = nullptr;
  REQUIRE(accel_malloc(-1, 64, &p) == ACCEL_SUCCESS);  // needs device 1's context
  REQUIRE(get_state(1, &flags, &active) == CUDA_SUCCESS);
  CHECK(active == 1);
  CUdevice dev = -1;
  REQUIRE(get_device(&dev) == CUDA_SUCCESS);  // bound lazily, stays bound
  CHECK(dev == 1);
  CHECK(accel_current_device_index() == 1);
  REQUIRE(accel_free(p) == ACCEL_SUCCESS);

  // Back to 0, which is not active either: the thread reports 0 again.
  REQUIRE(accel_maybe_exchange_device(0, &prev) == ACCEL_SUCCESS);
  CHECK(prev == 1);
  CHECK(accel_current_device_index() == 0);
}

TEST_CASE("fork: counting in the parent leaves CUDA usable in the child", "[fork-nvml]") {
  // ACCEL_CUDA_NVML names the fake NVML: counting needs no cuInit.
  REQUIRE(accel_device_count() == 2);
  CHECK(in_child(child_works) == 0);
  // Once the parent initialised CUDA, a child must spawn or exec.
  roundtrip(0);
  CHECK(in_child(child_refused) == 0);
}

TEST_CASE("fork: counting through the driver (no NVML and no /proc) poisons the child",
          "[fork-fallback]") {
  REQUIRE(accel_device_count() == 2);  // ran cuInit + cuDeviceGetCount
  CHECK(in_child(child_refused) == 0);
  roundtrip(1);  // the parent itself is fine
}

// What cuMemAlloc's failure reads: "cuMemAlloc failed: <name> (2): <text>".
std::string out_of_memory_message() {
  REQUIRE(accel_device_count() >= 1);
  void* p = nullptr;
  accel_status_t st = accel_malloc(0, size_t{64} << 30, &p);  // fake: 1 GiB per device
  CHECK(st == ACCEL_ERROR_OUT_OF_MEMORY);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("cuda"));
  CHECK_THAT(msg, Catch::Contains("cuMemAlloc"));
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_OUT_OF_MEMORY (2): "));
  return msg;
}

// The fake's text for `code` (its data header,
// tests/fakes/cuda/fake_error_texts.hpp): the Driver API reference's
// description, which the plugin's built-in table does not hold.
std::string driver_text(CUresult code) {
  const fake_cuda_errors::Text* t = fake_cuda_errors::find(code);
  REQUIRE(t != nullptr);
  return t->text;
}

TEST_CASE("driver errors carry the call and the driver's name and text", "[errors]") {
  const std::string msg = out_of_memory_message();
  INFO(msg);
  // The text is cuGetErrorString's answer, not the plugin's fallback.
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_OUT_OF_MEMORY (2): " +
                                  driver_text(CUDA_ERROR_OUT_OF_MEMORY)));
  roundtrip(0);
}

// FAKE_CUDA_NO_ERROR_STRINGS=1: cuGetErrorName/cuGetErrorString recognise
// no code (CUDA_ERROR_INVALID_VALUE, NULL), so the name and text are the
// plugin's own: cuda.h's name and the driver's usual short text.
TEST_CASE("a driver that cannot name a code: the plugin's own name and text", "[errors-fallback]") {
  const std::string msg = out_of_memory_message();
  INFO(msg);
  // The switch works: the driver the plugin loaded describes nothing.
  const char* text = "unset";
  CHECK(FAKE_FN(fake_driver(), cuGetErrorString)(CUDA_ERROR_OUT_OF_MEMORY, &text) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(text == nullptr);
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"));
  CHECK_THAT(msg, !Catch::Contains(driver_text(CUDA_ERROR_OUT_OF_MEMORY)));
  roundtrip(0);
}

TEST_CASE("entry points through dlsym when cuGetProcAddress finds nothing", "[dlsym]") {
  REQUIRE(accel_device_count() == 2);
  roundtrip(0);
  roundtrip(1);
  accel_event_t a = nullptr, b = nullptr;
  REQUIRE(accel_event_create(1, ACCEL_EVENT_ENABLE_TIMING, &a) == ACCEL_SUCCESS);
  REQUIRE(accel_event_create(1, ACCEL_EVENT_ENABLE_TIMING, &b) == ACCEL_SUCCESS);
  accel_stream_t s = nullptr;
  REQUIRE(accel_stream_create(1, -1, &s) == ACCEL_SUCCESS);
  REQUIRE(accel_event_record(a, s) == ACCEL_SUCCESS);
  REQUIRE(accel_launch_host_func(
              s, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); },
              nullptr) == ACCEL_SUCCESS);
  REQUIRE(accel_event_record(b, s) == ACCEL_SUCCESS);
  REQUIRE(accel_event_synchronize(b) == ACCEL_SUCCESS);
  float ms = 0;
  REQUIRE(accel_event_elapsed_time(a, b, &ms) == ACCEL_SUCCESS);
  CHECK(ms >= 15.0f);
  CHECK(accel_stream_destroy(s) == ACCEL_SUCCESS);
  CHECK(accel_event_destroy(a) == ACCEL_SUCCESS);
  CHECK(accel_event_destroy(b) == ACCEL_SUCCESS);
  // The ABI 1.1 entry points came from dlsym too (cuMemHostRegister_v2, ...).
  void* pinned = nullptr;
  REQUIRE_OK(accel_host_malloc(4096, 0, &pinned));
  std::vector<unsigned char> buf = pattern(4096, 5);
  REQUIRE_OK(accel_host_register(buf.data(), buf.size(), 0));
  accel_stream_t s0 = nullptr;
  REQUIRE_OK(accel_current_stream(0, &s0));
  CHECK(through_device(s0, 0, buf.data(), pinned, buf.size()) == buf);
  REQUIRE_OK(accel_host_unregister(buf.data()));
  REQUIRE_OK(accel_host_free(pinned));
  peer_copy_in_order();
}

// ---- ABI 1.1 over the fake driver: native handles, pinned memory, peers,
// attributes ([interop]; [interop-no-peer] with FAKE_CUDA_PEER=0) -----------

TEST_CASE("the ABI 1.1 and 1.2 groups with every entry point through cuGetProcAddress",
          "[interop]") {
  REQUIRE(accel_device_count() == 2);
  Info i = cuda_info();
  const uint32_t groups = ACCEL_CAP_NATIVE_HANDLES | ACCEL_CAP_HOST_MEMORY | ACCEL_CAP_PEER_COPY |
                          ACCEL_CAP_DEVICE_ATTRIBUTES | ACCEL_CAP_MODULES;
  CHECK((i.caps & groups) == groups);
  // Every name the plugin asked for is in the fake's cuGetProcAddress table.
  CHECK(fake_count("proc_address_misses") == 0);
}

// Work the program queues on the exported CUstream through the Driver API
// (the fake's own cuMemsetD8Async and cuLaunchHostFunc) runs between accel's
// work before and after it. The queue is held shut by a host function until
// all of it is queued, so work on any other queue would run first and show.
TEST_CASE("an exported CUstream runs driver work in accel's order", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_driver();
  auto memset8 = FAKE_FN(h, cuMemsetD8Async);
  auto host_func = FAKE_FN(h, cuLaunchHostFunc);
  const int32_t dev = 1;

  accel_stream_t created = nullptr;
  REQUIRE_OK(accel_stream_create(dev, 0, &created));
  accel_stream_t def = nullptr;
  REQUIRE_OK(accel_current_stream(dev, &def));

  for (accel_stream_t s : {created, def}) {
    const bool is_default = s == def;
    INFO((is_default ? "the default stream" : "a created stream"));
    const accel_native_handle_t n = native_of(s);
    CHECK(n.type == ACCEL_NATIVE_CUDA);
    CHECK(std::string(n.backend) == "cuda");
    CHECK(n.ordinal == dev);
    CHECK(n.context == primary_ctx_of(dev));
    if (is_default)
      CHECK(n.handle == static_cast<void*>(CU_STREAM_LEGACY));
    else
      CHECK(n.handle != static_cast<void*>(CU_STREAM_LEGACY));
    const auto cs = static_cast<CUstream>(n.handle);

    const size_t size = 1 << 16;
    const auto data = pattern(size, is_default ? 3 : 5);
    std::vector<unsigned char> back(size, 0);
    void* d = nullptr;
    REQUIRE_OK(accel_malloc(dev, size, &d));
    Gate gate;
    Log log;
    Mark accel_before{&log, 'a'}, cuda_mark{&log, 'c'}, accel_after{&log, 'b'};
    REQUIRE_OK(accel_launch_host_func(s, Gate::wait, &gate));
    REQUIRE_OK(accel_launch_host_func(s, Mark::run, &accel_before));
    REQUIRE_OK(accel_memcpy_async(d, data.data(), size, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    {
      // The program's own driver calls, with the stream's context current
      // (required for CU_STREAM_LEGACY, which names the current context's).
      DriverCtx ctx(static_cast<CUcontext>(n.context));
      REQUIRE(memset8(dptr(d) + 100, 0xEE, 300, cs) == CUDA_SUCCESS);
      REQUIRE(host_func(cs, Mark::run, &cuda_mark) == CUDA_SUCCESS);
    }
    REQUIRE_OK(accel_launch_host_func(s, Mark::run, &accel_after));
    REQUIRE_OK(accel_memcpy_async(back.data(), d, size, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);  // still held
    gate.open();
    REQUIRE_OK(accel_stream_synchronize(s));
    auto expect = data;
    std::fill(expect.begin() + 100, expect.begin() + 400, 0xEE);
    CHECK(back == expect);
    CHECK(log.text == "acb");
    REQUIRE_OK(accel_free(d));
  }
  // An event's handle is its CUevent, the same before and after records.
  accel_event_t e = nullptr;
  REQUIRE_OK(accel_event_create(dev, ACCEL_EVENT_DEFAULT, &e));
  accel_native_handle_t eh;
  std::memset(&eh, 0, sizeof eh);
  eh.struct_size = sizeof eh;
  REQUIRE_OK(accel_event_native_handle(e, &eh));
  CHECK(eh.type == ACCEL_NATIVE_CUDA);
  CHECK(eh.handle != nullptr);
  CHECK(eh.ordinal == dev);
  const void* before = eh.handle;
  REQUIRE_OK(accel_event_record(e, created));
  REQUIRE_OK(accel_event_synchronize(e));
  REQUIRE_OK(accel_event_native_handle(e, &eh));
  CHECK(eh.handle == before);
  {
    DriverCtx ctx(primary_ctx_of(dev));
    CHECK(FAKE_FN(h, cuEventQuery)(static_cast<CUevent>(eh.handle)) == CUDA_SUCCESS);
  }
  REQUIRE_OK(accel_event_destroy(e));
  REQUIRE_OK(accel_stream_destroy(created));
}

TEST_CASE("a wrapped CUstream: ownership decides who destroys it", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_driver();
  auto create = FAKE_FN(h, cuStreamCreateWithPriority);
  auto query = FAKE_FN(h, cuStreamQuery);
  auto synchronize = FAKE_FN(h, cuStreamSynchronize);
  auto memset8 = FAKE_FN(h, cuMemsetD8Async);
  const int32_t dev = 1;
  const CUcontext ctx = primary_ctx_of(dev);
  DriverCtx current(ctx);

  CUstream mine = nullptr;
  REQUIRE(create(&mine, CU_STREAM_NON_BLOCKING, 0) == CUDA_SUCCESS);
  const long long live = fake_count("streams");
  const accel_native_handle_t n = cuda_stream_handle(mine);

  SECTION("borrowed: the wrapper goes; the CUstream stays the program's") {
    accel_stream_t w = nullptr;
    REQUIRE_OK(accel_stream_from_native(dev, &n, 0, &w));
    CHECK(native_of(w).handle == static_cast<void*>(mine));
    CHECK(native_of(w).context == ctx);
    int32_t where = -1;
    REQUIRE_OK(accel_stream_device(w, &where));
    CHECK(where == dev);
    // Stream work on the wrapper: copies, a host function, an event.
    const auto data = pattern(4096, 9);
    std::vector<unsigned char> back(4096);
    CHECK(through_device(w, dev, data.data(), back.data(), data.size()) == data);
    std::atomic<int> ran{0};
    REQUIRE_OK(accel_launch_host_func(
        w, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &ran));
    accel_event_t e = nullptr;
    REQUIRE_OK(accel_event_create(dev, ACCEL_EVENT_DEFAULT, &e));
    REQUIRE_OK(accel_event_record(e, w));
    // The program's synchronize on its CUstream covers accel's work.
    REQUIRE(synchronize(mine) == CUDA_SUCCESS);
    CHECK(ran.load() == 1);
    CHECK(accel_event_query(e) == ACCEL_SUCCESS);
    // Driver work then accel work, the other way round.
    void* d = nullptr;
    REQUIRE_OK(accel_malloc(dev, 256, &d));
    REQUIRE(memset8(dptr(d), 0x42, 256, mine) == CUDA_SUCCESS);
    std::vector<unsigned char> got(256, 0);
    REQUIRE_OK(accel_memcpy_async(got.data(), d, 256, ACCEL_MEMCPY_DEVICE_TO_HOST, w));
    REQUIRE_OK(accel_stream_synchronize(w));
    CHECK(got == std::vector<unsigned char>(256, 0x42));
    REQUIRE_OK(accel_free(d));
    REQUIRE_OK(accel_event_destroy(e));
    REQUIRE_OK(accel_stream_destroy(w));
    CHECK(fake_count("streams") == live);
    CHECK(query(mine) == CUDA_SUCCESS);  // still the program's, still works
    REQUIRE(FAKE_FN(h, cuStreamDestroy)(mine) == CUDA_SUCCESS);
    CHECK(fake_count("streams") == live - 1);
  }
  SECTION("ACCEL_NATIVE_TAKE_OWNERSHIP: accel_stream_destroy destroys it") {
    accel_stream_t w = nullptr;
    REQUIRE_OK(accel_stream_from_native(dev, &n, ACCEL_NATIVE_TAKE_OWNERSHIP, &w));
    const auto data = pattern(4096, 11);
    std::vector<unsigned char> back(4096);
    CHECK(through_device(w, dev, data.data(), back.data(), data.size()) == data);
    CHECK(fake_count("streams") == live);
    REQUIRE_OK(accel_stream_destroy(w));
    CHECK(fake_count("streams") == live - 1);
    CHECK(query(mine) == CUDA_ERROR_INVALID_HANDLE);  // the fake's answer for a destroyed one
  }
  SECTION("one owner per CUstream: a second ACCEL_NATIVE_TAKE_OWNERSHIP is refused") {
    // A borrowed wrapper owns nothing: ownership may still be handed over
    // (the borrowed wrapper must go first, as the docs say).
    accel_stream_t borrowed = nullptr;
    REQUIRE_OK(accel_stream_from_native(dev, &n, 0, &borrowed));
    accel_stream_t w = nullptr;
    REQUIRE_OK(accel_stream_from_native(dev, &n, ACCEL_NATIVE_TAKE_OWNERSHIP, &w));
    accel_stream_t again = nullptr;
    const std::string msg =
        refused(accel_stream_from_native(dev, &n, ACCEL_NATIVE_TAKE_OWNERSHIP, &again),
                ACCEL_ERROR_INVALID_ARGUMENT);
    char owner[32];
    std::snprintf(owner, sizeof owner, "%p", static_cast<void*>(w));
    CHECK_THAT(msg, Catch::Contains(owner));  // names the accel stream that owns it
    CHECK_THAT(msg, Catch::Contains("ACCEL_NATIVE_TAKE_OWNERSHIP"));
    CHECK(again == nullptr);
    REQUIRE_OK(accel_stream_destroy(borrowed));
    REQUIRE_OK(accel_stream_destroy(w));
    CHECK(fake_count("streams") == live - 1);  // released once, by its one owner
  }
}

TEST_CASE("wrapping refuses what cannot be a stream of the device", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_driver();
  auto create = FAKE_FN(h, cuStreamCreateWithPriority);
  CUstream on1 = nullptr;
  {
    DriverCtx current(primary_ctx_of(1));
    REQUIRE(create(&on1, CU_STREAM_NON_BLOCKING, 0) == CUDA_SUCCESS);
  }
  const long long live = fake_count("streams");
  accel_stream_t out = nullptr;

  accel_native_handle_t n = cuda_stream_handle(on1);
  std::string msg = refused(accel_stream_from_native(0, &n, 0, &out), ACCEL_ERROR_DEVICE_MISMATCH);
  CHECK_THAT(msg, Catch::Contains("device 1"));
  CHECK_THAT(msg, Catch::Contains("not to device 0"));
  msg = refused(accel_stream_from_native(0, &n, ACCEL_NATIVE_TAKE_OWNERSHIP, &out),
                ACCEL_ERROR_DEVICE_MISMATCH);

  n = cuda_stream_handle(CU_STREAM_PER_THREAD);
  msg = refused(accel_stream_from_native(0, &n, 0, &out), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("CU_STREAM_PER_THREAD"));

  n = cuda_stream_handle(CU_STREAM_LEGACY);
  msg = refused(accel_stream_from_native(0, &n, ACCEL_NATIVE_TAKE_OWNERSHIP, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // The plugin's refusal, or the core's first once device 0's default
  // stream (whose queue CU_STREAM_LEGACY is) exists: accel owns it.
  CHECK_THAT(msg, Catch::Contains("CU_STREAM_LEGACY") ||
                      Catch::Contains("the default stream of device 0"));
  CHECK(out == nullptr);
  // Borrowed, the legacy stream is the device's default stream's queue.
  REQUIRE_OK(accel_stream_from_native(0, &n, 0, &out));
  accel_stream_t def = nullptr;
  REQUIRE_OK(accel_current_stream(0, &def));
  CHECK(native_of(out).handle == native_of(def).handle);
  const auto data = pattern(1024, 1);
  std::vector<unsigned char> back(1024);
  CHECK(through_device(out, 0, data.data(), back.data(), data.size()) == data);
  REQUIRE_OK(accel_stream_destroy(out));
  out = nullptr;

  // A destroyed CUstream: cuStreamGetCtx's error, as a bad argument.
  {
    DriverCtx current(primary_ctx_of(1));
    REQUIRE(FAKE_FN(h, cuStreamDestroy)(on1) == CUDA_SUCCESS);
  }
  n = cuda_stream_handle(on1);
  msg = refused(accel_stream_from_native(1, &n, 0, &out), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("cuStreamGetCtx"));
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_INVALID_HANDLE"));
  CHECK(out == nullptr);
  CHECK(fake_count("streams") == live - 1);  // only the program's destroy
}

TEST_CASE("pinned and registered host memory are the driver's", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_driver();
  auto get_flags = FAKE_FN(h, cuMemHostGetFlags);
  const size_t n = 1 << 16;
  const long long allocs = fake_count("host_allocations");

  void* pinned = nullptr;
  REQUIRE_OK(accel_host_malloc(n, 0, &pinned));
  CHECK(fake_count("host_allocations") == allocs + 1);
  {
    DriverCtx current(primary_ctx_of(1));  // any context: PORTABLE
    unsigned flags = 0;
    REQUIRE(get_flags(&flags, pinned) == CUDA_SUCCESS);
    CHECK(flags == CU_MEMHOSTALLOC_PORTABLE);
  }
  // Copies to and from it count as pinned on both devices.
  for (int32_t dev : {0, 1}) {
    INFO("device " << dev);
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(dev, 0, &s));
    const auto data = pattern(n, static_cast<unsigned char>(dev + 20));
    std::memcpy(pinned, data.data(), n);
    const long long pinned_before = fake_count("pinned_copies");
    const long long pageable_before = fake_count("pageable_copies");
    CHECK(through_device(s, dev, pinned, pinned, n) == data);
    CHECK(fake_count("pinned_copies") == pinned_before + 2);
    CHECK(fake_count("pageable_copies") == pageable_before);
    REQUIRE_OK(accel_stream_destroy(s));
  }

  // Registered: pinned while registered, pageable after.
  std::vector<unsigned char> buf = pattern(n, 77);
  const long long ranges = fake_count("registered_ranges");
  REQUIRE_OK(accel_host_register(buf.data(), buf.size(), 0));
  CHECK(fake_count("registered_ranges") == ranges + 1);
  accel_stream_t s1 = nullptr;
  REQUIRE_OK(accel_current_stream(1, &s1));
  std::vector<unsigned char> out(n);
  long long pinned_before = fake_count("pinned_copies");
  CHECK(through_device(s1, 1, buf.data(), out.data(), n) == buf);
  CHECK(fake_count("pinned_copies") == pinned_before + 1);  // the H2D from buf
  REQUIRE_OK(accel_host_unregister(buf.data()));
  CHECK(fake_count("registered_ranges") == ranges);
  const long long pageable_before = fake_count("pageable_copies");
  CHECK(through_device(s1, 1, buf.data(), out.data(), n) == buf);
  CHECK(fake_count("pageable_copies") == pageable_before + 2);

  // A range the program registered itself is the driver's refusal, and
  // accel records nothing.
  {
    DriverCtx current(primary_ctx_of(0));
    REQUIRE(FAKE_FN(h, cuMemHostRegister)(buf.data(), n, 0) == CUDA_SUCCESS);
  }
  std::string msg =
      refused(accel_host_register(buf.data() + 64, 128, 0), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("cuMemHostRegister"));
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"));
  accel_pointer_attributes_t a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  REQUIRE_OK(accel_pointer_get_attributes(buf.data() + 64, &a));
  CHECK(a.type == ACCEL_MEMORY_UNKNOWN);
  {
    DriverCtx current(primary_ctx_of(0));
    REQUIRE(FAKE_FN(h, cuMemHostUnregister)(buf.data()) == CUDA_SUCCESS);
    // The driver's own rules, as documented.
    CHECK(FAKE_FN(h, cuMemHostUnregister)(buf.data()) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK(FAKE_FN(h, cuMemFreeHost)(buf.data()) == CUDA_ERROR_INVALID_VALUE);
  }
  CHECK(fake_count("registered_ranges") == ranges);

  REQUIRE_OK(accel_host_free(pinned));
  REQUIRE_OK(accel_empty_host_cache());  // the pinned cache keeps freed blocks until now
  CHECK(fake_count("host_allocations") == allocs);
}

namespace {

// A peer copy from device a to device b on a's stream, held shut until all
// of it is queued (H2D, the peer copy, an event that b's stream waits for),
// then b's contents read back on b's stream.
void peer_copy_in_order() {
  const int32_t a = 0, b = 1;
  const size_t n = 1 << 18;
  const auto data = pattern(n, 31);
  void *ma = nullptr, *mb = nullptr;
  REQUIRE_OK(accel_malloc(a, n, &ma));
  REQUIRE_OK(accel_malloc(b, n, &mb));
  accel_stream_t sa = nullptr, sb = nullptr;
  REQUIRE_OK(accel_stream_create(a, 0, &sa));
  REQUIRE_OK(accel_stream_create(b, 0, &sb));
  accel_event_t copied = nullptr;
  REQUIRE_OK(accel_event_create(a, ACCEL_EVENT_DEFAULT, &copied));
  const long long peer_before = fake_count("peer_copies");

  Gate gate;
  REQUIRE_OK(accel_launch_host_func(sa, Gate::wait, &gate));
  REQUIRE_OK(accel_memcpy_async(ma, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, sa));
  REQUIRE_OK(accel_memcpy_peer_async(mb, b, ma, a, n, sa));
  REQUIRE_OK(accel_event_record(copied, sa));
  REQUIRE_OK(accel_stream_wait_event(sb, copied));
  std::vector<unsigned char> back(n, 0);
  REQUIRE_OK(accel_memcpy_async(back.data(), mb, n, ACCEL_MEMCPY_DEVICE_TO_HOST, sb));
  gate.open();
  REQUIRE_OK(accel_stream_synchronize(sb));
  CHECK(back == data);
  CHECK(fake_count("peer_copies") == peer_before + 1);

  // DEVICE_TO_DEVICE between the two devices, on the destination's stream,
  // is a peer copy too.
  REQUIRE_OK(accel_memset_async(ma, 0x33, n, sa));
  REQUIRE_OK(accel_event_record(copied, sa));
  REQUIRE_OK(accel_stream_wait_event(sb, copied));
  REQUIRE_OK(accel_memcpy_async(mb, ma, n, ACCEL_MEMCPY_DEVICE_TO_DEVICE, sb));
  REQUIRE_OK(accel_memcpy_async(back.data(), mb, n, ACCEL_MEMCPY_DEVICE_TO_HOST, sb));
  REQUIRE_OK(accel_stream_synchronize(sb));
  CHECK(back == std::vector<unsigned char>(n, 0x33));
  CHECK(fake_count("peer_copies") == peer_before + 2);

  REQUIRE_OK(accel_event_destroy(copied));
  REQUIRE_OK(accel_stream_destroy(sa));
  REQUIRE_OK(accel_stream_destroy(sb));
  REQUIRE_OK(accel_free(ma));
  REQUIRE_OK(accel_free(mb));
}

}  // namespace

TEST_CASE("peer access between the two devices and copies in stream order", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_driver();
  int32_t can = -1;
  REQUIRE_OK(accel_device_can_access_peer(0, 1, &can));
  CHECK(can == 1);
  REQUIRE_OK(accel_device_can_access_peer(1, 0, &can));
  CHECK(can == 1);
  const long long links = fake_count("peer_links");
  REQUIRE_OK(accel_device_enable_peer_access(0, 1));
  CHECK(fake_count("peer_links") == links + 1);
  REQUIRE_OK(accel_device_enable_peer_access(0, 1));  // ALREADY_ENABLED: success
  CHECK(fake_count("peer_links") == links + 1);
  {
    // What the driver itself answers to the repeat.
    DriverCtx current(primary_ctx_of(0));
    CHECK(FAKE_FN(h, cuCtxEnablePeerAccess)(primary_ctx_of(1), 0) ==
          CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    CHECK(FAKE_FN(h, cuCtxEnablePeerAccess)(primary_ctx_of(0), 0) == CUDA_ERROR_INVALID_CONTEXT);
  }
  REQUIRE_OK(accel_device_enable_peer_access(1, 0));  // one way at a time
  CHECK(fake_count("peer_links") == links + 2);
  peer_copy_in_order();
}

TEST_CASE("without a P2P path there is no peer access but copies still work", "[interop-no-peer]") {
  REQUIRE(accel_device_count() == 2);  // FAKE_CUDA_PEER=0
  void* h = fake_driver();
  int32_t can = -1;
  REQUIRE_OK(accel_device_can_access_peer(0, 1, &can));
  CHECK(can == 0);
  std::string msg = refused(accel_device_enable_peer_access(0, 1), ACCEL_ERROR_NOT_SUPPORTED);
  CHECK_THAT(msg, Catch::Contains("cuDeviceCanAccessPeer"));
  CHECK(fake_count("peer_links") == 0);
  {
    DriverCtx current(primary_ctx_of(0));
    CHECK(FAKE_FN(h, cuCtxEnablePeerAccess)(primary_ctx_of(1), 0) ==
          CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  }
  peer_copy_in_order();
}

TEST_CASE("device attributes are cuDeviceGetAttribute's", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  struct Want {
    accel_device_attr_t attr;
    int64_t value;
  };
  // The fake's H100-like device; the SM count is 8 + the physical index.
  const Want want[] = {
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR, 9},
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR, 0},
      {ACCEL_DEVICE_ATTR_WARP_SIZE, 32},
      {ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z, 64},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X, 2147483647},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y, 65535},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z, 65535},
      {ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK, 49152},
      {ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT, 9},
      {ACCEL_DEVICE_ATTR_CLOCK_RATE_KHZ, 1980000},
      {ACCEL_DEVICE_ATTR_MEMORY_BUS_WIDTH, 5120},
      {ACCEL_DEVICE_ATTR_L2_CACHE_SIZE, 50 * 1024 * 1024},
      {ACCEL_DEVICE_ATTR_INTEGRATED, 0},
      {ACCEL_DEVICE_ATTR_UNIFIED_ADDRESSING, 1},
      {ACCEL_DEVICE_ATTR_MANAGED_MEMORY, 1},
      {ACCEL_DEVICE_ATTR_CONCURRENT_KERNELS, 1},
      {ACCEL_DEVICE_ATTR_ASYNC_ENGINE_COUNT, 3},
      {ACCEL_DEVICE_ATTR_ECC_ENABLED, 1},
  };
  for (const Want& w : want) {
    INFO(accel_device_attr_name(w.attr));
    int64_t v = -1;
    REQUIRE_OK(accel_device_get_attribute(1, w.attr, &v));
    CHECK(v == w.value);
  }
  int64_t sms0 = -1;
  REQUIRE_OK(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT, &sms0));
  CHECK(sms0 == 8);
  // CUDA has no equivalent: not supported, with the reason, nothing written.
  for (auto attr :
       {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING, ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE}) {
    INFO(accel_device_attr_name(attr));
    int64_t v = -7;
    std::string msg = refused(accel_device_get_attribute(0, attr, &v), ACCEL_ERROR_NOT_SUPPORTED);
    CHECK_THAT(msg, Catch::Contains(accel_device_attr_name(attr)));
    CHECK(v == -7);
  }
  // Every dtype stays supported on a CUDA device.
  accel_device_capability_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  REQUIRE_OK(accel_get_device_capability(1, &c));
  for (auto dt : {ACCEL_DTYPE_FLOAT64, ACCEL_DTYPE_COMPLEX128, ACCEL_DTYPE_FLOAT16,
                  ACCEL_DTYPE_COMPLEX32, ACCEL_DTYPE_BFLOAT16, ACCEL_DTYPE_BOOL})
    CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(dt)) != 0);
}
