// End-to-end tests of the Level Zero plugin through accel.h and the real
// Level Zero loader: with no driver, with no loader, and with the project's
// fake driver (tests/fakes/level_zero) named in ZE_ENABLE_ALT_DRIVERS.
// Discovery runs once per process, so each scenario is its own `meson test`
// with its own environment, selected by its Catch2 tag; see meson.build.
#include <catch2/catch.hpp>

#include "../common.hpp"
#include "../interop.hpp"

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

using backend_test::device_native_of;
using backend_test::env;
using backend_test::Info;
using backend_test::native_of;

Info ze_info() { return backend_test::backend_info("level_zero"); }

bool has(const std::string& hay, const char* needle) {
  return hay.find(needle) != std::string::npos;
}

// Bytes accel holds from the vendor on `device` (reserved_bytes.all.current).
size_t reserved_bytes(int32_t device) {
  size_t count = 0;
  REQUIRE(accel_memory_stats_list(device, nullptr, 0, &count) == ACCEL_SUCCESS);
  std::vector<accel_memory_stat_t> stats(count);
  REQUIRE(accel_memory_stats_list(device, stats.data(), count, &count) == ACCEL_SUCCESS);
  for (const auto& s : stats)
    if (std::string(s.name) == "reserved_bytes.all.current") return static_cast<size_t>(s.value);
  FAIL("reserved_bytes.all.current missing");
  return 0;
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
    accel_test::skipf("/dev/dri or /dev/accel exists on this machine");
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
  // The vendor sees what accel reserved: the 4 MiB itself under
  // backend:native, the caching allocator's segment otherwise.
  CHECK(free_b == total_b - reserved_bytes(0));
  CHECK(reserved_bytes(0) >= (4u << 20));
  REQUIRE_OK(accel_free(p));
}

TEST_CASE("mem_get_info: Sysman free memory with ZES_ENABLE_SYSMAN=1", "[sysman]") {
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(0, 4 << 20, &p));
  size_t free_b = 0, total_b = 0;
  REQUIRE_OK(accel_mem_get_info(0, &free_b, &total_b));
  // The fake's Sysman keeps 1 MiB back: its answer differs from the estimate.
  CHECK(free_b == total_b - reserved_bytes(0) - (1u << 20));
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
        accel_test::wait_until([] { return open.load(); }, "the test to open the gate");
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

// ---- ABI 1.1 interop --------------------------------------------------------------
//
// These scenarios call Level Zero themselves, as a program using accel's
// native handles would: through the loader the plugin loaded
// (dlopen(RTLD_NOLOAD) finds that very instance), on the fake driver.

#include <dlfcn.h>
#include <level_zero/ze_api.h>

namespace {

// The loader's entry points the tests use.
struct Ze {
#define ZE_TEST_FN(fn) decltype(&::fn) fn = nullptr;
#define ZE_TEST_FNS(X)                                                                          \
  X(zeDriverGet)                                                                                \
  X(zeContextCreate)                                                                            \
  X(zeContextDestroy)                                                                           \
  X(zeDeviceGetCommandQueueGroupProperties)                                                     \
  X(zeCommandListCreateImmediate)                                                               \
  X(zeCommandListDestroy)                                                                       \
  X(zeCommandListAppendMemoryFill) X(zeCommandListAppendMemoryCopy)                             \
      X(zeCommandListAppendWaitOnEvents) X(zeCommandListAppendSignalEvent) X(zeEventPoolCreate) \
          X(zeEventPoolDestroy) X(zeEventCreate) X(zeEventDestroy) X(zeEventHostSignal)         \
              X(zeEventHostReset) X(zeEventHostSynchronize) X(zeEventQueryStatus)               \
                  X(zeMemGetAllocProperties)
  ZE_TEST_FNS(ZE_TEST_FN)
  int (*live_lists)() = nullptr;  // the fake's fake_ze_live_command_lists

  ze_context_handle_t ctx = nullptr;  // accel's context
  ze_device_handle_t dev[2] = {};     // accel's devices 0 and 1
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t gate = nullptr;  // opened by the test (zeEventHostSignal)
  ze_event_handle_t done = nullptr;  // signalled by the test's own commands

  Ze() {
    // The plugin initialised Level Zero; this also gives accel's context.
    accel_native_handle_t h;
    for (int32_t d = 0; d < 2; ++d) {
      std::memset(&h, 0, sizeof h);
      h.struct_size = sizeof h;
      REQUIRE(accel_device_native_handle(d, &h) == ACCEL_SUCCESS);
      dev[d] = static_cast<ze_device_handle_t>(h.handle);
      ctx = static_cast<ze_context_handle_t>(h.context);
    }
    void* lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib != nullptr);
#define ZE_TEST_SYM(fn)                                 \
  fn = reinterpret_cast<decltype(fn)>(dlsym(lib, #fn)); \
  INFO(#fn);                                            \
  REQUIRE(fn != nullptr);
    ZE_TEST_FNS(ZE_TEST_SYM)
#undef ZE_TEST_SYM
    void* fake = dlopen(env("ZE_ENABLE_ALT_DRIVERS").c_str(), RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(fake != nullptr);
    live_lists = reinterpret_cast<int (*)()>(dlsym(fake, "fake_ze_live_command_lists"));
    REQUIRE(live_lists != nullptr);
    ze_event_pool_desc_t pd{};
    pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
    pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pd.count = 2;
    REQUIRE(zeEventPoolCreate(ctx, &pd, 0, nullptr, &pool) == ZE_RESULT_SUCCESS);
    ze_event_desc_t ed{};
    ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
    ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
    ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    ed.index = 0;
    REQUIRE(zeEventCreate(pool, &ed, &gate) == ZE_RESULT_SUCCESS);
    ed.index = 1;
    REQUIRE(zeEventCreate(pool, &ed, &done) == ZE_RESULT_SUCCESS);
  }
  ~Ze() {
    zeEventDestroy(gate);
    zeEventDestroy(done);
    zeEventPoolDestroy(pool);
  }
  Ze(const Ze&) = delete;
  Ze& operator=(const Ze&) = delete;

  // An in-order immediate list of `device` on the compute group, as a
  // program would make one (context `c`, accel's by default).
  ze_command_list_handle_t make_list(int32_t device, ze_context_handle_t c = nullptr) {
    uint32_t n = 0;
    REQUIRE(zeDeviceGetCommandQueueGroupProperties(dev[device], &n, nullptr) == ZE_RESULT_SUCCESS);
    std::vector<ze_command_queue_group_properties_t> g(n);
    for (auto& x : g) x.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    REQUIRE(zeDeviceGetCommandQueueGroupProperties(dev[device], &n, g.data()) == ZE_RESULT_SUCCESS);
    uint32_t ordinal = n;
    for (uint32_t i = 0; i < n && ordinal == n; ++i)
      if ((g[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) != 0) ordinal = i;
    REQUIRE(ordinal < n);
    ze_command_queue_desc_t qd{};
    qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    qd.ordinal = ordinal;
    qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    ze_command_list_handle_t list = nullptr;
    REQUIRE(zeCommandListCreateImmediate(c != nullptr ? c : ctx, dev[device], &qd, &list) ==
            ZE_RESULT_SUCCESS);
    return list;
  }

  // The list waits for the test to open the gate (zeEventHostSignal).
  void close_gate_on(ze_command_list_handle_t list) {
    REQUIRE(zeEventHostReset(gate) == ZE_RESULT_SUCCESS);
    REQUIRE(zeCommandListAppendWaitOnEvents(list, 1, &gate) == ZE_RESULT_SUCCESS);
  }
  void open_gate() { REQUIRE(signal_gate() == ZE_RESULT_SUCCESS); }
  // For another thread: Catch2 v2's assertions are not thread-safe (an
  // assertion there raced the main thread's and corrupted its message list
  // under ASan), so the caller checks the result after joining.
  ze_result_t signal_gate() { return zeEventHostSignal(gate); }
};

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = static_cast<unsigned char>(k * 13 + seed);
  return v;
}

// Some later stream_query answers SUCCESS (an exported list answers through
// a marker, which an idle list passes at once).
bool becomes_idle(accel_stream_t s) {
  for (int k = 0; k < 1000; ++k) {
    accel_status_t st = accel_stream_query(s);
    if (st == ACCEL_SUCCESS) return true;
    if (st != ACCEL_ERROR_NOT_READY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Waits (up to 2 s) until no destroyed stream of an earlier run is still
// being freed: the fake's live command lists stay the same for 50 ms.
void settle(Ze& z) {
  int last = z.live_lists(), same = 0;
  for (int k = 0; k < 200 && same < 5; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    int now = z.live_lists();
    same = now == last ? same + 1 : 0;
    last = now;
  }
}

// The fake's live command lists reach `want` within 2 s (a stream destroyed
// with work queued is freed by a reaper thread).
bool live_lists_reach(Ze& z, int want) {
  for (int k = 0; k < 2000 && z.live_lists() != want; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return z.live_lists() == want;
}

const unsigned char kFill = 0x77;  // static: the fill pattern of the test's own commands

}  // namespace

TEST_CASE("native handles are the Level Zero device and context and list and event",
          "[interop][interop-intercept]") {
  Info i = ze_info();
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  for (uint32_t cap : {ACCEL_CAP_NATIVE_HANDLES, ACCEL_CAP_HOST_MEMORY, ACCEL_CAP_PEER_COPY,
                       ACCEL_CAP_DEVICE_ATTRIBUTES})
    CHECK((i.caps & cap) != 0);
  Ze z;
  accel_native_handle_t d0, d1;
  std::memset(&d0, 0, sizeof d0);
  std::memset(&d1, 0, sizeof d1);
  d0.struct_size = d1.struct_size = sizeof d0;
  REQUIRE_OK(accel_device_native_handle(0, &d0));
  REQUIRE_OK(accel_device_native_handle(1, &d1));
  CHECK(d0.type == ACCEL_NATIVE_LEVEL_ZERO);
  CHECK(std::string(d0.backend) == "level_zero");
  CHECK(d0.ordinal == -1);
  CHECK(d0.context != nullptr);
  CHECK(d1.context == d0.context);  // one context per driver
  CHECK(d1.handle != d0.handle);

  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  const accel_native_handle_t h = native_of(s);
  CHECK(h.type == ACCEL_NATIVE_LEVEL_ZERO);
  CHECK(h.handle != nullptr);
  CHECK(h.context == d0.context);
  CHECK(h.ordinal == -1);

  accel_event_t e = nullptr;
  REQUIRE_OK(accel_event_create(0, 0, &e));
  accel_native_handle_t eh;
  std::memset(&eh, 0, sizeof eh);
  eh.struct_size = sizeof eh;
  REQUIRE_OK(accel_event_native_handle(e, &eh));
  CHECK(eh.type == ACCEL_NATIVE_LEVEL_ZERO);
  CHECK(eh.handle == nullptr);  // never recorded
  CHECK(eh.context == d0.context);
  // A record the program's own list waits on: the list's fill runs only
  // after the record, which runs only after the gate.
  void* m = nullptr;
  REQUIRE_OK(accel_malloc(0, 256, &m));
  REQUIRE_OK(accel_memset_async(m, 0, 256, s));
  z.close_gate_on(static_cast<ze_command_list_handle_t>(h.handle));
  REQUIRE_OK(accel_event_record(e, s));
  REQUIRE_OK(accel_event_native_handle(e, &eh));
  REQUIRE(eh.handle != nullptr);
  auto ev = static_cast<ze_event_handle_t>(eh.handle);
  CHECK(z.zeEventQueryStatus(ev) == ZE_RESULT_NOT_READY);
  ze_command_list_handle_t mine = z.make_list(0);
  REQUIRE(z.zeEventHostReset(z.done) == ZE_RESULT_SUCCESS);
  REQUIRE(z.zeCommandListAppendMemoryFill(mine, m, &kFill, 1, 256, z.done, 1, &ev) ==
          ZE_RESULT_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(z.zeEventQueryStatus(z.done) == ZE_RESULT_NOT_READY);
  z.open_gate();
  REQUIRE(z.zeEventHostSynchronize(z.done, UINT64_MAX) == ZE_RESULT_SUCCESS);
  CHECK(z.zeEventQueryStatus(ev) == ZE_RESULT_SUCCESS);
  REQUIRE_OK(accel_event_synchronize(e));
  std::vector<unsigned char> back(256, 0);
  REQUIRE_OK(accel_memcpy_async(back.data(), m, 256, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(back == std::vector<unsigned char>(256, kFill));
  REQUIRE(z.zeCommandListDestroy(mine) == ZE_RESULT_SUCCESS);
  REQUIRE_OK(accel_event_destroy(e));
  REQUIRE_OK(accel_free(m));
  REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("an exported list orders the program's own commands with accel's both ways",
          "[interop][interop-intercept]") {
  Ze z;
  settle(z);  // streams of earlier sections are freed by reaper threads
  const int lists_before = z.live_lists();
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  auto list = static_cast<ze_command_list_handle_t>(native_of(s).handle);
  const size_t n = 1 << 14;
  const auto in = pattern(n, 3);
  void* d = nullptr;
  REQUIRE_OK(accel_malloc(0, n, &d));
  auto* dev = static_cast<unsigned char*>(d);

  SECTION("accel; then the program; then accel: one order") {
    std::vector<unsigned char> out(n, 0);
    // Registered: a copy into pageable memory would wait for the gate.
    REQUIRE_OK(accel_host_register(out.data(), n, 0));
    REQUIRE_OK(accel_memcpy_async(d, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    z.close_gate_on(list);
    REQUIRE(z.zeCommandListAppendMemoryFill(list, dev + 16, &kFill, 1, 64, nullptr, 0, nullptr) ==
            ZE_RESULT_SUCCESS);
    REQUIRE_OK(accel_memcpy_async(out.data(), d, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(out == std::vector<unsigned char>(n, 0));  // accel's copy waits behind the program's
    z.open_gate();
    REQUIRE_OK(accel_stream_synchronize(s));
    auto want = in;
    std::memset(want.data() + 16, kFill, 64);
    CHECK(out == want);
    CHECK(becomes_idle(s));
    REQUIRE_OK(accel_host_unregister(out.data()));
  }
  SECTION("the program's commands last: synchronize; device synchronize; query; events") {
    void* pinned = nullptr;
    REQUIRE_OK(accel_host_malloc(n, 0, &pinned));
    REQUIRE_OK(accel_memcpy_async(d, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    for (int how = 0; how < 3; ++how) {
      INFO((how == 0   ? "accel_stream_synchronize"
            : how == 1 ? "accel_synchronize(device)"
                       : "accel_event_synchronize"));
      std::memset(pinned, 0, n);
      // Gated, so accel's own latest command completes long before it.
      z.close_gate_on(list);
      REQUIRE(z.zeCommandListAppendMemoryCopy(list, pinned, d, n, nullptr, 0, nullptr) ==
              ZE_RESULT_SUCCESS);
      CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
      accel_event_t e = nullptr;
      REQUIRE_OK(accel_event_create(0, 0, &e));
      REQUIRE_OK(accel_event_record(e, s));  // after the program's copy
      CHECK(accel_event_query(e) == ACCEL_ERROR_NOT_READY);
      ze_result_t opened = ZE_RESULT_ERROR_UNKNOWN;
      std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        opened = z.signal_gate();
      });
      if (how == 0) REQUIRE_OK(accel_stream_synchronize(s));
      if (how == 1) REQUIRE_OK(accel_synchronize(0));
      if (how == 2) REQUIRE_OK(accel_event_synchronize(e));
      // Returned only once the program's copy, gated for 50 ms, was done.
      CHECK(std::memcmp(pinned, in.data(), n) == 0);
      opener.join();
      REQUIRE(opened == ZE_RESULT_SUCCESS);
      CHECK(accel_event_query(e) == ACCEL_SUCCESS);
      CHECK(becomes_idle(s));
      REQUIRE_OK(accel_event_destroy(e));
    }
    REQUIRE_OK(accel_host_free(pinned));
  }
  SECTION("a host function waits for the program's commands before it") {
    static std::atomic<int> ran{0};
    ran = 0;
    z.close_gate_on(list);
    REQUIRE_OK(accel_launch_host_func(
        s, [](void*) { ran.fetch_add(1); }, nullptr));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(ran.load() == 0);
    z.open_gate();
    REQUIRE_OK(accel_stream_synchronize(s));
    CHECK(ran.load() == 1);
  }
  SECTION("destroying the stream waits for the program's commands before freeing the list") {
    z.close_gate_on(list);
    REQUIRE_OK(accel_stream_destroy(s));  // returns at once
    s = nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(z.live_lists() == lists_before + 1);  // still there: the fake refuses busy lists
    z.open_gate();
    CHECK(live_lists_reach(z, lists_before));
  }
  REQUIRE_OK(accel_free(d));
  if (s != nullptr) REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("streams from the program's own immediate command lists",
          "[interop][interop-intercept]") {
  Ze z;
  settle(z);  // streams of earlier sections are freed by reaper threads
  const size_t n = 4096;
  const auto in = pattern(n, 5);
  void* d = nullptr;
  REQUIRE_OK(accel_malloc(0, n, &d));
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  h.type = ACCEL_NATIVE_LEVEL_ZERO;
  h.context = z.ctx;
  h.ordinal = -1;

  SECTION("borrowed: the wrapper works like any stream and leaves the list to the program") {
    ze_command_list_handle_t list = z.make_list(0);
    const int lists = z.live_lists();
    h.handle = list;
    accel_stream_t w = nullptr;
    REQUIRE_OK(accel_stream_from_native(0, &h, 0, &w));
    CHECK(native_of(w).handle == list);
    int32_t where = -1;
    REQUIRE_OK(accel_stream_device(w, &where));
    CHECK(where == 0);
    // accel, the program, accel on the wrapped list.
    std::vector<unsigned char> out(n, 0);
    // Registered: a copy into pageable memory would wait for the gate.
    REQUIRE_OK(accel_host_register(out.data(), n, 0));
    REQUIRE_OK(accel_memcpy_async(d, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, w));
    z.close_gate_on(list);
    REQUIRE(z.zeCommandListAppendMemoryFill(list, d, &kFill, 1, 8, nullptr, 0, nullptr) ==
            ZE_RESULT_SUCCESS);
    static std::atomic<int> ran{0};
    ran = 0;
    REQUIRE_OK(accel_launch_host_func(
        w, [](void*) { ran.fetch_add(1); }, nullptr));
    REQUIRE_OK(accel_memcpy_async(out.data(), d, n, ACCEL_MEMCPY_DEVICE_TO_HOST, w));
    accel_event_t e = nullptr;
    REQUIRE_OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &e));
    REQUIRE_OK(accel_event_record(e, w));
    CHECK(accel_event_query(e) == ACCEL_ERROR_NOT_READY);
    CHECK(ran.load() == 0);
    z.open_gate();
    REQUIRE_OK(accel_event_synchronize(e));
    CHECK(ran.load() == 1);
    auto want = in;
    std::memset(want.data(), kFill, 8);
    CHECK(out == want);
    REQUIRE_OK(accel_host_unregister(out.data()));
    CHECK(becomes_idle(w));
    REQUIRE_OK(accel_event_destroy(e));
    REQUIRE_OK(accel_stream_destroy(w));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(z.live_lists() == lists);  // not accel's to destroy
    // Still the program's, and working.
    REQUIRE(z.zeEventHostReset(z.done) == ZE_RESULT_SUCCESS);
    REQUIRE(z.zeCommandListAppendMemoryFill(list, d, &kFill, 1, n, z.done, 0, nullptr) ==
            ZE_RESULT_SUCCESS);
    REQUIRE(z.zeEventHostSynchronize(z.done, UINT64_MAX) == ZE_RESULT_SUCCESS);
    CHECK(z.zeCommandListDestroy(list) == ZE_RESULT_SUCCESS);
    CHECK(z.live_lists() == lists - 1);
  }
  SECTION("owned: destroying the wrapper destroys the list; after its work") {
    ze_command_list_handle_t list = z.make_list(0);
    const int lists = z.live_lists();
    h.handle = list;
    accel_stream_t w = nullptr;
    REQUIRE_OK(accel_stream_from_native(0, &h, ACCEL_NATIVE_TAKE_OWNERSHIP, &w));
    std::vector<unsigned char> out(n, 0);
    // Registered: a copy into pageable memory would wait for the gate.
    REQUIRE_OK(accel_host_register(out.data(), n, 0));
    REQUIRE_OK(accel_memcpy_async(d, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, w));
    z.close_gate_on(list);
    REQUIRE_OK(accel_memcpy_async(out.data(), d, n, ACCEL_MEMCPY_DEVICE_TO_HOST, w));
    REQUIRE_OK(accel_stream_destroy(w));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(z.live_lists() == lists);  // its work is still gated
    z.open_gate();
    CHECK(live_lists_reach(z, lists - 1));
    CHECK(out == in);  // queued work completed
    REQUIRE_OK(accel_host_unregister(out.data()));
  }
  SECTION("a context stated as NULL is the caller's promise") {
    ze_command_list_handle_t list = z.make_list(0);
    h.handle = list;
    h.context = nullptr;
    accel_stream_t w = nullptr;
    REQUIRE_OK(accel_stream_from_native(0, &h, ACCEL_NATIVE_TAKE_OWNERSHIP, &w));
    std::vector<unsigned char> out(n, 0);
    REQUIRE_OK(accel_memcpy_async(d, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, w));
    REQUIRE_OK(accel_memcpy_async(out.data(), d, n, ACCEL_MEMCPY_DEVICE_TO_HOST, w));
    REQUIRE_OK(accel_stream_synchronize(w));
    CHECK(out == in);
    REQUIRE_OK(accel_stream_destroy(w));
  }
  SECTION("refusals") {
    accel_stream_t w = nullptr;
    // A list of an accel stream of device 1, offered as device 0.
    accel_stream_t s1 = nullptr;
    REQUIRE_OK(accel_stream_create(1, 0, &s1));
    h = native_of(s1);
    CHECK(accel_stream_from_native(0, &h, 0, &w) == ACCEL_ERROR_DEVICE_MISMATCH);
    CHECK(has(accel_last_error(), "device 1"));
    // accel cannot own a list one of its streams owns.
    CHECK(accel_stream_from_native(1, &h, ACCEL_NATIVE_TAKE_OWNERSHIP, &w) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(accel_last_error(), "ACCEL_NATIVE_TAKE_OWNERSHIP"));
    CHECK(w == nullptr);
    // Without ownership it is a second stream on the same list.
    REQUIRE_OK(accel_stream_from_native(1, &h, 0, &w));
    CHECK(native_of(w).handle == h.handle);
    REQUIRE_OK(accel_stream_destroy(w));
    REQUIRE_OK(accel_stream_destroy(s1));
    // A list of another context.
    ze_driver_handle_t drv = nullptr;
    uint32_t one = 1;
    REQUIRE(z.zeDriverGet(&one, &drv) == ZE_RESULT_SUCCESS);
    ze_context_desc_t cd{};
    cd.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
    ze_context_handle_t other = nullptr;
    REQUIRE(z.zeContextCreate(drv, &cd, &other) == ZE_RESULT_SUCCESS);
    ze_command_list_handle_t foreign = z.make_list(0, other);
    h.type = ACCEL_NATIVE_LEVEL_ZERO;
    h.handle = foreign;
    h.context = other;
    w = nullptr;
    CHECK(accel_stream_from_native(0, &h, 0, &w) == ACCEL_ERROR_DEVICE_MISMATCH);
    CHECK(has(accel_last_error(), "context"));
    CHECK(w == nullptr);
    CHECK(z.zeCommandListDestroy(foreign) == ZE_RESULT_SUCCESS);
    CHECK(z.zeContextDestroy(other) == ZE_RESULT_SUCCESS);
  }
  REQUIRE_OK(accel_free(d));
}

TEST_CASE("pinned host memory is zeMemAllocHost memory; registered memory stays pageable",
          "[interop][interop-intercept]") {
  Ze z;
  const size_t n = 1 << 16;
  void* p = nullptr;
  REQUIRE_OK(accel_host_malloc(n, 0, &p));
  ze_memory_allocation_properties_t mp{};
  mp.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
  ze_device_handle_t owner = reinterpret_cast<ze_device_handle_t>(uintptr_t{1});
  REQUIRE(z.zeMemGetAllocProperties(z.ctx, static_cast<char*>(p) + 5, &mp, &owner) ==
          ZE_RESULT_SUCCESS);
  CHECK(mp.type == ZE_MEMORY_TYPE_HOST);
  CHECK(owner == nullptr);
  void* d1 = nullptr;
  REQUIRE_OK(accel_malloc(1, n, &d1));
  REQUIRE(z.zeMemGetAllocProperties(z.ctx, d1, &mp, &owner) == ZE_RESULT_SUCCESS);
  CHECK(mp.type == ZE_MEMORY_TYPE_DEVICE);
  CHECK(owner == z.dev[1]);
  // Round trips through the one pinned buffer on both devices.
  for (int32_t dev = 0; dev < 2; ++dev) {
    INFO("device " << dev);
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_current_stream(dev, &s));
    void* m = nullptr;
    REQUIRE_OK(accel_malloc(dev, n, &m));
    const auto in = pattern(n, static_cast<unsigned>(dev) + 1);
    std::memcpy(p, in.data(), n);
    REQUIRE_OK(accel_memcpy_async(m, p, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    REQUIRE_OK(accel_memset_async(m, 0, 32, s));
    REQUIRE_OK(accel_memcpy_async(p, m, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    REQUIRE_OK(accel_stream_synchronize(s));
    auto want = in;
    std::memset(want.data(), 0, 32);
    CHECK(std::memcmp(p, want.data(), n) == 0);
    REQUIRE_OK(accel_free(m));
  }
  // Registration records the range; Level Zero cannot pin it.
  std::vector<unsigned char> buf = pattern(n, 9), back(n, 0);
  REQUIRE_OK(accel_host_register(buf.data(), n, 0));
  REQUIRE(z.zeMemGetAllocProperties(z.ctx, buf.data(), &mp, nullptr) == ZE_RESULT_SUCCESS);
  CHECK(mp.type == ZE_MEMORY_TYPE_UNKNOWN);
  accel_stream_t s1 = nullptr;
  REQUIRE_OK(accel_current_stream(1, &s1));
  REQUIRE_OK(accel_memcpy_async(d1, buf.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s1));
  REQUIRE_OK(accel_memcpy_async(back.data(), d1, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s1));
  REQUIRE_OK(accel_stream_synchronize(s1));
  CHECK(back == buf);
  REQUIRE_OK(accel_host_unregister(buf.data()));
  REQUIRE_OK(accel_free(d1));
  REQUIRE_OK(accel_host_free(p));
  REQUIRE_OK(accel_empty_host_cache());  // the pinned cache keeps freed blocks until now
  REQUIRE(z.zeMemGetAllocProperties(z.ctx, p, &mp, nullptr) == ZE_RESULT_SUCCESS);
  CHECK(mp.type == ZE_MEMORY_TYPE_UNKNOWN);  // zeMemFree'd
}

namespace {

// Copies between devices 0 and 1 in both directions, on the source's and on
// the destination's stream, each between accel work that must see it in
// order: the source is overwritten right after the copy on the source's
// stream, and read back right after it on the destination's.
void peer_copies_in_stream_order() {
  const size_t n = 1 << 16;
  for (int32_t src = 0; src < 2; ++src) {
    const int32_t dst = 1 - src;
    for (int32_t on : {src, dst}) {
      INFO("device " << src << " -> device " << dst << " on the stream of device " << on);
      accel_stream_t s = nullptr;
      REQUIRE_OK(accel_stream_create(on, 0, &s));
      void *a = nullptr, *b = nullptr;
      REQUIRE_OK(accel_malloc(src, n, &a));
      REQUIRE_OK(accel_malloc(dst, n, &b));
      const auto in = pattern(n, static_cast<unsigned>(src * 2 + on));
      std::vector<unsigned char> out(n, 0);
      // Registered: a copy into it may wait behind the host function below
      // (into pageable memory it would not return until then).
      REQUIRE_OK(accel_host_register(out.data(), n, 0));
      accel_stream_t ss = nullptr, ds = nullptr;
      REQUIRE_OK(accel_current_stream(src, &ss));
      REQUIRE_OK(accel_current_stream(dst, &ds));
      REQUIRE_OK(accel_memcpy_async(a, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, ss));
      REQUIRE_OK(accel_memset_async(b, 0xEE, n, ds));
      REQUIRE_OK(accel_stream_synchronize(ss));
      REQUIRE_OK(accel_stream_synchronize(ds));
      // Held back by a host function, so nothing runs before the checks below.
      static std::atomic<bool> open{false};
      open = false;
      REQUIRE_OK(accel_launch_host_func(
          s,
          [](void*) {
            accel_test::wait_until([] { return open.load(); }, "the test to open the gate");
          },
          nullptr));
      REQUIRE_OK(accel_memcpy_peer_async(b, dst, a, src, n, s));
      if (on == src)
        REQUIRE_OK(accel_memset_async(a, 0, n, s));  // after the copy read it
      else
        REQUIRE_OK(accel_memcpy_async(out.data(), b, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
      CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
      open = true;
      REQUIRE_OK(accel_stream_synchronize(s));
      if (on == src)
        REQUIRE_OK(accel_memcpy_async(out.data(), b, n, ACCEL_MEMCPY_DEVICE_TO_HOST, ds));
      REQUIRE_OK(accel_stream_synchronize(ds));
      CHECK(out == in);
      REQUIRE_OK(accel_host_unregister(out.data()));
      // accel_memcpy_async DEVICE_TO_DEVICE between devices takes the same path.
      std::vector<unsigned char> again(n, 0);
      REQUIRE_OK(accel_memcpy_async(a, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, ss));
      REQUIRE_OK(accel_stream_synchronize(ss));
      REQUIRE_OK(accel_memset_async(b, 0, n, ds));
      REQUIRE_OK(accel_stream_synchronize(ds));
      REQUIRE_OK(accel_memcpy_async(b, a, n, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s));
      REQUIRE_OK(accel_stream_synchronize(s));
      REQUIRE_OK(accel_memcpy_async(again.data(), b, n, ACCEL_MEMCPY_DEVICE_TO_HOST, ds));
      REQUIRE_OK(accel_stream_synchronize(ds));
      CHECK(again == in);
      REQUIRE_OK(accel_free(a));
      REQUIRE_OK(accel_free(b));
      REQUIRE_OK(accel_stream_destroy(s));
    }
  }
}

}  // namespace

TEST_CASE("peer access between devices of one context: direct copies",
          "[interop][interop-intercept]") {
  int32_t can = -1;
  REQUIRE_OK(accel_device_can_access_peer(0, 1, &can));
  CHECK(can == 1);
  REQUIRE_OK(accel_device_can_access_peer(1, 0, &can));
  CHECK(can == 1);
  REQUIRE_OK(accel_device_enable_peer_access(0, 1));
  REQUIRE_OK(accel_device_enable_peer_access(0, 1));  // nothing to enable: again is fine
  peer_copies_in_stream_order();
}

// FAKE_ZE_PEER=0: the fake refuses a copy on one device's list that names
// the other's memory, so these copies pass only if they were staged.
TEST_CASE("without peer access copies between devices are staged through host memory",
          "[interop-no-peer]") {
  int32_t can = -1;
  REQUIRE_OK(accel_device_can_access_peer(0, 1, &can));
  CHECK(can == 0);
  CHECK(accel_device_enable_peer_access(0, 1) == ACCEL_ERROR_NOT_SUPPORTED);
  CHECK(has(accel_last_error(), "zeDeviceCanAccessPeer"));
  {
    // What a direct copy would meet: device 0's list cannot name device 1's memory.
    Ze z;
    void *a = nullptr, *b = nullptr;
    REQUIRE_OK(accel_malloc(0, 64, &a));
    REQUIRE_OK(accel_malloc(1, 64, &b));
    ze_command_list_handle_t list = z.make_list(0);
    CHECK(z.zeCommandListAppendMemoryCopy(list, b, a, 64, nullptr, 0, nullptr) ==
          ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK(z.zeCommandListDestroy(list) == ZE_RESULT_SUCCESS);
    REQUIRE_OK(accel_free(a));
    REQUIRE_OK(accel_free(b));
  }
  peer_copies_in_stream_order();
}

TEST_CASE("device attributes: the values the fake driver models", "[interop]") {
  struct Want {
    accel_device_attr_t attr;
    int64_t value;
  };
  // tests/fakes/level_zero/fake_ze.cpp: IP version 12.60.7, sub-groups
  // 8/16/32, 1024 work-items, 2^30 groups, 64 KiB SLM, 2x4x8 EUs, 1600 MHz,
  // 256-bit memory, 16 MiB cache, 256 MiB allocations, a discrete part with
  // shared allocations, one copy-only group of 2 engines.
  const Want wants[] = {
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR, 12},
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR, 60},
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING, 7},
      {ACCEL_DEVICE_ATTR_WARP_SIZE, 32},
      {ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z, 1024},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X, int64_t{1} << 30},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y, int64_t{1} << 30},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z, int64_t{1} << 30},
      {ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK, 64 << 10},
      {ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT, 2 * 4 * 8},
      {ACCEL_DEVICE_ATTR_CLOCK_RATE_KHZ, 1600000},
      {ACCEL_DEVICE_ATTR_MEMORY_BUS_WIDTH, 256},
      {ACCEL_DEVICE_ATTR_L2_CACHE_SIZE, 16 << 20},
      {ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE, 256 << 20},
      {ACCEL_DEVICE_ATTR_INTEGRATED, 0},
      {ACCEL_DEVICE_ATTR_UNIFIED_ADDRESSING, 1},
      {ACCEL_DEVICE_ATTR_MANAGED_MEMORY, 1},
      {ACCEL_DEVICE_ATTR_ASYNC_ENGINE_COUNT, 2},
  };
  for (int32_t d = 0; d < 2; ++d) {
    for (const Want& w : wants) {
      INFO("device " << d << ", " << accel_device_attr_name(w.attr));
      int64_t v = -1;
      REQUIRE_OK(accel_device_get_attribute(d, w.attr, &v));
      CHECK(v == w.value);
    }
    for (auto attr : {ACCEL_DEVICE_ATTR_CONCURRENT_KERNELS, ACCEL_DEVICE_ATTR_ECC_ENABLED}) {
      INFO(accel_device_attr_name(attr));
      int64_t v = -1;
      CHECK(accel_device_get_attribute(d, attr, &v) == ACCEL_ERROR_NOT_SUPPORTED);
      CHECK(has(accel_last_error(), accel_device_attr_name(attr)));
      CHECK(v == -1);
    }
    accel_device_capability_t c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    REQUIRE_OK(accel_get_device_capability(d, &c));
    for (auto t : {ACCEL_DTYPE_FLOAT16, ACCEL_DTYPE_FLOAT64, ACCEL_DTYPE_COMPLEX32,
                   ACCEL_DTYPE_COMPLEX128, ACCEL_DTYPE_FLOAT32, ACCEL_DTYPE_BFLOAT16})
      CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(t)) != 0);
  }
}

// FAKE_ZE_FP64=0 FAKE_ZE_FP16=0: zeDeviceGetModuleProperties without the
// FP64 and FP16 flags.
TEST_CASE("capability: no double or half precision clears those dtypes", "[interop-no-fp]") {
  for (int32_t d = 0; d < 2; ++d) {
    INFO("device " << d);
    accel_device_capability_t c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    REQUIRE_OK(accel_get_device_capability(d, &c));
    for (auto t :
         {ACCEL_DTYPE_FLOAT16, ACCEL_DTYPE_FLOAT64, ACCEL_DTYPE_COMPLEX32, ACCEL_DTYPE_COMPLEX128})
      CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(t)) == 0);
    for (auto t : {ACCEL_DTYPE_UINT8, ACCEL_DTYPE_INT64, ACCEL_DTYPE_FLOAT32, ACCEL_DTYPE_COMPLEX64,
                   ACCEL_DTYPE_BOOL, ACCEL_DTYPE_BFLOAT16})
      CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(t)) != 0);
  }
}
