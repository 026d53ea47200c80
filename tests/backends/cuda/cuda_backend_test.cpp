// End-to-end tests of the CUDA plugin through accel.h, against the fake
// driver (tests/fakes/cuda), the toolkit's stub library and a missing one.
// Discovery runs once per process, so each scenario is its own `meson test`
// with its own environment, selected by its Catch2 tag; see meson.build.
#include <catch2/catch.hpp>

#include "../common.hpp"

#include <accel/accel.h>
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using backend_test::env;
using backend_test::Info;

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
    std::printf("SKIPPED: the CUDA toolkit stub %s is not on this machine\n", stub.c_str());
    WARN("SKIPPED: the CUDA toolkit stub " << stub << " is not on this machine");
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

TEST_CASE("driver errors carry the call and the driver's name and text", "[errors]") {
  REQUIRE(accel_device_count() >= 1);
  void* p = nullptr;
  accel_status_t st = accel_malloc(0, size_t{64} << 30, &p);  // fake: 1 GiB per device
  CHECK(st == ACCEL_ERROR_OUT_OF_MEMORY);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("cuda"));
  CHECK_THAT(msg, Catch::Contains("cuMemAlloc"));
  CHECK_THAT(msg, Catch::Contains("CUDA_ERROR_OUT_OF_MEMORY"));
  CHECK_THAT(msg, Catch::Contains("out of memory"));
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
}
