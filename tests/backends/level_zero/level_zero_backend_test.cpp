// End-to-end tests of the Level Zero plugin through accel.h and the real
// Level Zero loader: with no driver, with no loader, and with the project's
// fake driver (tests/fakes/level_zero) named in ZE_ENABLE_ALT_DRIVERS.
// Discovery runs once per process, so each scenario is its own `meson test`
// with its own environment, selected by its Catch2 tag; see meson.build.
#include <catch2/catch.hpp>

#include "../common.hpp"

#include <accel/accel.h>
#include <sys/wait.h>
#include <unistd.h>

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

Info ze_info() { return backend_test::backend_info("level_zero"); }

bool has(const std::string& hay, const char* needle) {
  return hay.find(needle) != std::string::npos;
}

#define REQUIRE_OK(expr)                                                           \
  do {                                                                             \
    accel_status_t st_ = (expr);                                                   \
    INFO(#expr << " -> " << accel_status_name(st_) << ": " << accel_last_error()); \
    REQUIRE(st_ == ACCEL_SUCCESS);                                                 \
  } while (0)

}  // namespace

TEST_CASE("no driver: no_devices with the loader's result name", "[no-driver]") {
  Info i = ze_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(i.devices == 0);
  CHECK(has(i.reason, "ZE_RESULT_ERROR_UNINITIALIZED"));
  CHECK(has(i.reason, "zeInit"));
  CHECK(accel_is_available() == 0);
  CHECK(has(accel_selection_reason(), "level_zero"));
}

TEST_CASE("no device node and no alternate driver: zeInit is not called", "[no-device-node]") {
  Info i = ze_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  if (access("/dev/dri", F_OK) == 0 || access("/dev/accel", F_OK) == 0) {
    // A render node may exist: discovery then runs zeInit, as it must.
    std::printf("SKIPPED: /dev/dri or /dev/accel exists on this machine\n");
    WARN("SKIPPED: /dev/dri or /dev/accel exists; zeInit ran: " << i.reason);
    return;
  }
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(i.devices == 0);
  CHECK(has(i.reason, "/dev/dri/renderD*"));
  CHECK(has(i.reason, "zeInit was not called"));
}

TEST_CASE("no loader: unavailable naming the library", "[no-loader]") {
  Info i = ze_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_UNAVAILABLE);
  CHECK(has(i.reason, "/nonexistent/libze_loader.so.1"));
  CHECK(accel_is_available() == 0);
}

// A bare name would be searched along LD_LIBRARY_PATH: the variable would
// not say which file is loaded, so the plugin refuses it.
TEST_CASE("a relative ACCEL_ZE_LOADER is refused", "[relative-loader]") {
  Info i = ze_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_UNAVAILABLE);
  CHECK(has(i.reason, "ACCEL_ZE_LOADER='libze_loader.so.1' is not an absolute path"));
  CHECK(accel_is_available() == 0);
}

TEST_CASE("a driver without devices: no_devices with a reason", "[zero-devices]") {
  Info i = ze_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(has(i.reason, "no GPU device"));
}

TEST_CASE("the fake driver through the real loader: devices and properties", "[available]") {
  Info i = ze_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  const int32_t n = std::atoi(std::getenv("FAKE_ZE_DEVICES"));
  CHECK(i.devices == n);
  REQUIRE(std::string(accel_current_accelerator()) == "level_zero");
  CHECK((i.caps & ACCEL_CAP_NATIVE_CURRENT_DEVICE) == 0);
  CHECK((i.caps & ACCEL_CAP_FORK_SAFE) == 0);
  CHECK((i.caps & ACCEL_CAP_TIMING_EVENTS) != 0);
  CHECK((i.caps & ACCEL_CAP_HOST_FUNCTIONS) != 0);
  CHECK((i.caps & ACCEL_CAP_STREAM_PRIORITIES) != 0);
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    accel_device_properties_t p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    REQUIRE_OK(accel_get_device_properties(d, &p));
    CHECK(std::string(p.name) == "Fake Level Zero GPU " + std::to_string(d));  // stable order
    CHECK(std::string(p.vendor) == "Intel");
    CHECK(p.total_memory == 256ull << 20);
    CHECK(p.has_uuid == 1);
    CHECK(p.uuid[15] == d + 1);
    char pci[32];
    std::snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x3a + d);
    CHECK(std::string(p.pci_bus_id) == pci);
    CHECK(std::string(p.architecture) == "12.60.7");
    CHECK(p.compute_units == 2 * 4 * 8);  // slices * subslices/slice * EUs/subslice
  }
  int32_t least = 0, greatest = 0;
  REQUIRE_OK(accel_stream_priority_range(0, &least, &greatest));
  CHECK(least == 1);
  CHECK(greatest == -1);
}

TEST_CASE("runtime version: the fake driver's version and API version", "[version]") {
  Info i = ze_info();
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  // zeDriverGetProperties' driverVersion and zeDriverGetApiVersion of the
  // fake (tests/fakes/level_zero), known from discovery (counting ran zeInit).
  CHECK(i.runtime_version == "Level Zero driver 16777216 (0x01000000), API 1.4");
}

TEST_CASE("vendor failures name the call and the ze_result_t", "[errors]") {
  void* p = nullptr;
  accel_status_t st = accel_malloc(0, size_t{1} << 40, &p);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK(st == ACCEL_ERROR_OUT_OF_MEMORY);
  CHECK(p == nullptr);
  CHECK(has(msg, "zeMemAllocDevice"));
  CHECK(has(msg, "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"));
  CHECK(has(msg, "level_zero"));
}

TEST_CASE("mem_get_info: total minus allocated without Sysman", "[estimate]") {
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(0, 4 << 20, &p));
  size_t free_b = 0, total_b = 0;
  REQUIRE_OK(accel_mem_get_info(0, &free_b, &total_b));
  CHECK(total_b == 256u << 20);
  CHECK(free_b == total_b - (4u << 20));
  REQUIRE_OK(accel_free(p));
}

TEST_CASE("mem_get_info: Sysman free memory with ZES_ENABLE_SYSMAN=1", "[sysman]") {
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(0, 4 << 20, &p));
  size_t free_b = 0, total_b = 0;
  REQUIRE_OK(accel_mem_get_info(0, &free_b, &total_b));
  // The fake's Sysman keeps 1 MiB back: its answer differs from the estimate.
  CHECK(free_b == total_b - (4u << 20) - (1u << 20));
  REQUIRE_OK(accel_free(p));
}

TEST_CASE("loader intercept (wrapped handles): copies / timing / host functions", "[intercept]") {
  REQUIRE(ze_info().status == ACCEL_BACKEND_AVAILABLE);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, -1, &s));
  std::vector<unsigned char> in(1 << 16), out(1 << 16, 0);
  for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<unsigned char>(k * 7);
  void* d = nullptr;
  REQUIRE_OK(accel_malloc(0, in.size(), &d));
  accel_event_t a = nullptr, b = nullptr;
  REQUIRE_OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &a));
  REQUIRE_OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &b));
  REQUIRE_OK(accel_event_record(a, s));
  REQUIRE_OK(accel_memcpy_async(d, in.data(), in.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  REQUIRE_OK(accel_launch_host_func(
      s, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr));
  REQUIRE_OK(accel_memcpy_async(out.data(), d, out.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_event_record(b, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(in == out);
  float ms = 0;
  REQUIRE_OK(accel_event_elapsed_time(a, b, &ms));
  CHECK(ms >= 18.0f);
  CHECK(ms < 10000.0f);
  REQUIRE_OK(accel_free(d));
  REQUIRE_OK(accel_event_destroy(a));
  REQUIRE_OK(accel_event_destroy(b));
  REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("a stream destroyed with queued work finishes it", "[destroy-busy]") {
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  static std::atomic<bool> open{false}, ran{false};
  REQUIRE_OK(accel_launch_host_func(
      s,
      [](void*) {
        while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      nullptr));
  REQUIRE_OK(accel_launch_host_func(
      s, [](void*) { ran.store(true); }, nullptr));
  REQUIRE_OK(accel_stream_destroy(s));  // returns at once: the fake refuses busy lists
  CHECK_FALSE(ran.load());
  open.store(true);
  REQUIRE_OK(accel_synchronize(0));
  for (int k = 0; k < 2000 && !ran.load(); ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(ran.load());
}

TEST_CASE("fork after discovery only: counting works but work is refused", "[fork-after-count]") {
  // zeInit ran while counting, lazy_init never did: the core does not know
  // the backend was touched, the plugin does.
  const int32_t n = accel_device_count();
  REQUIRE(n > 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (accel_device_count() != n) _exit(10);
    void* p = nullptr;
    if (accel_malloc(0, 64, &p) != ACCEL_ERROR_FORKED) _exit(11);
    if (std::string(accel_last_error()).find("fork") == std::string::npos) _exit(12);
    // Remembered: the next call gives the same answer.
    accel_stream_t s = nullptr;
    if (accel_stream_create(0, 0, &s) != ACCEL_ERROR_FORKED) _exit(13);
    if (accel_synchronize(0) != ACCEL_SUCCESS && accel_synchronize(0) != ACCEL_ERROR_FORKED)
      _exit(14);
    _exit(0);
  }
  int wstatus = 0;
  REQUIRE(waitpid(pid, &wstatus, 0) == pid);
  INFO("child exit status " << wstatus);
  REQUIRE(WIFEXITED(wstatus));
  CHECK(WEXITSTATUS(wstatus) == 0);
  // The parent is unaffected.
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(0, 64, &p));
  REQUIRE_OK(accel_free(p));
}
