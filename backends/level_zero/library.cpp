// The Level Zero loader (libze_loader.so.1), reached through dlopen so that a
// machine without it lists the backend as `unavailable` instead of failing to
// load the plugin; its entry points; and runtime_version.
#include "backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace accel::level_zero {

Loader ze;

namespace {

// Names another loader file, for tests and side-by-side loader installs. It
// must be an absolute path (VendorLibrary refuses anything else), so that the
// variable alone says which file is loaded.
constexpr const char* kLoaderVar = "ACCEL_ZE_LOADER";

accel::plugin::VendorLibrary g_library;

#define ACCEL_ZE_SYMBOL(fn) accel::plugin::symbol(#fn, &ze.fn),
#define ACCEL_ZE_OPTIONAL_SYMBOL(fn) accel::plugin::symbol(#fn, &ze.fn, false),
const accel::plugin::Symbol kSymbols[] = {
    // clang-format off
    ACCEL_ZE_REQUIRED(ACCEL_ZE_SYMBOL)
    ACCEL_ZE_MODULE_CALLS(ACCEL_ZE_SYMBOL)
    ACCEL_ZE_OPTIONAL(ACCEL_ZE_OPTIONAL_SYMBOL)
    // clang-format on
    // Newer than the 1.8 headers: declared in backend.hpp, used when present.
    accel::plugin::symbol("zeInitDrivers", &ze.zeInitDrivers, false),
    accel::plugin::symbol("zeDriverGetLastErrorDescription", &ze.zeDriverGetLastErrorDescription,
                          false),
    accel::plugin::symbol("zeCommandListHostSynchronize", &ze.zeCommandListHostSynchronize, false),
};
#undef ACCEL_ZE_SYMBOL
#undef ACCEL_ZE_OPTIONAL_SYMBOL

// The exit gate (backend.hpp). Never destroyed: parked threads and late
// callers still read it.
struct ExitGate {
  std::atomic<int> inside{0};
  std::atomic<bool> closed{false};
  std::mutex mu;
  std::condition_variable cv;
};
ExitGate& gate() {
  static ExitGate* g = new ExitGate();
  return *g;
}

void close_gate_at_exit() {
  ExitGate& g = gate();
  g.closed.store(true, std::memory_order_seq_cst);
  std::unique_lock lock(g.mu);
  g.cv.wait_for(lock, std::chrono::milliseconds(kExitWaitMs),
                [&] { return g.inside.load(std::memory_order_seq_cst) == 0; });
}

}  // namespace

accel_status_t load_library() noexcept {
  // RTLD_LOCAL (VendorLibrary): the loader's symbols stay private to this
  // plugin. The handle is kept even when a symbol is missing: plugins never
  // unload what they loaded.
  if (accel_status_t st =
          g_library.open("the Level Zero loader", {"libze_loader.so.1"}, kLoaderVar);
      st != ACCEL_SUCCESS)
    return st;
  if (accel_status_t st = g_library.resolve(kSymbols); st != ACCEL_SUCCESS) return st;
  accel::plugin::log(ACCEL_LOG_DEBUG,
                     "loaded %s (zeInitDrivers %s, zeDriverGetLastErrorDescription %s, "
                     "zeCommandListHostSynchronize %s)",
                     g_library.path(), ze.zeInitDrivers ? "present" : "absent",
                     ze.zeDriverGetLastErrorDescription ? "present" : "absent",
                     ze.zeCommandListHostSynchronize ? "present" : "absent");
  return ACCEL_SUCCESS;
}

const char* loader_path() noexcept { return g_library.path(); }

// Every driver that gave a device: its driverVersion (zeDriverGetProperties;
// the specification leaves the encoding to the vendor, so it is shown as a
// number) and the API version it supports (zeDriverGetApiVersion). Both need
// the zeInit that counting ran, and no context.
accel_status_t op_runtime_version(char* buf, size_t size) {
  return guarded("runtime_version", [&]() -> accel_status_t {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    std::vector<ze_driver_handle_t> seen;
    std::string text;
    for (const Device* d : g_devices) {
      ze_driver_handle_t h = d->driver->handle;
      if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
      seen.push_back(h);
      ze_driver_properties_t p{};
      p.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
      if (ze_result_t r = ze.zeDriverGetProperties(h, &p); r != ZE_RESULT_SUCCESS)
        return vendor_fail("zeDriverGetProperties", r, h);
      std::string one = format("Level Zero driver %u (0x%08x)", p.driverVersion, p.driverVersion);
      ze_api_version_t api{};
      if (ze.zeDriverGetApiVersion != nullptr &&
          ze.zeDriverGetApiVersion(h, &api) == ZE_RESULT_SUCCESS)
        one += format(", API %u.%u", static_cast<unsigned>(ZE_MAJOR_VERSION(api)),
                      static_cast<unsigned>(ZE_MINOR_VERSION(api)));
      text += (text.empty() ? "" : "; ") + one;
    }
    if (text.empty())
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "no Level Zero driver with a device was found");
    std::snprintf(buf, size, "%s", text.c_str());
    return ACCEL_SUCCESS;
  });
}

void arm_exit_gate() noexcept {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(close_gate_at_exit); });
}

bool vendor_enter() noexcept {
  ExitGate& g = gate();
  g.inside.fetch_add(1, std::memory_order_seq_cst);
  if (!g.closed.load(std::memory_order_seq_cst)) return true;
  vendor_leave();
  return false;
}

void vendor_leave() noexcept {
  ExitGate& g = gate();
  if (g.inside.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      g.closed.load(std::memory_order_seq_cst)) {
    std::lock_guard lock(g.mu);
    g.cv.notify_all();
  }
}

void park_forever() noexcept {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace accel::level_zero
