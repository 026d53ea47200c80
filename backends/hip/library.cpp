// Loading the HIP runtime (libamdhip64) and its entry points, and the
// runtime version.
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>

#include "backend.hpp"

namespace accel::hip {

namespace {

constexpr const char* kRuntimeVar = "ACCEL_HIP_RUNTIME";

accel::plugin::VendorLibrary g_library;
Runtime g_runtime;
std::atomic<bool> g_initialised{false};

// The file a soname resolved to, for reasons and for the HIP release that
// decides how HIP_VISIBLE_DEVICES is read (count.cpp).
std::string link_map_file(void* handle) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr)
    return {};
  return map->l_name;
}

}  // namespace

Runtime& runtime() noexcept { return g_runtime; }

bool module_api_present(const char*& missing) noexcept {
  const Runtime& rt = g_runtime;
#define ACCEL_HIP_MODULE_PRESENT(fn) \
  if (rt.fn == nullptr) {            \
    missing = #fn;                   \
    return false;                    \
  }
  ACCEL_HIP_MODULE_FUNCTIONS(ACCEL_HIP_MODULE_PRESENT)
#undef ACCEL_HIP_MODULE_PRESENT
  return true;
}

accel_status_t load_runtime() {
  Runtime& rt = g_runtime;
  if (rt.loaded) return ACCEL_SUCCESS;
  // Current ROCm major first, then older ones, then the development link.
  accel_status_t st = g_library.open(
      "the HIP runtime", {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}, kRuntimeVar);
  if (st != ACCEL_SUCCESS) return st;
  const char* forced = accel::plugin::env(kRuntimeVar);
  rt.explicit_path = forced != nullptr && *forced != '\0';
  rt.name = g_library.path();
  rt.file = link_map_file(g_library.handle());
  using accel::plugin::symbol;
  const accel::plugin::Symbol symbols[] = {
#define ACCEL_HIP_REQUIRED(fn) symbol(#fn, &rt.fn),
      ACCEL_HIP_REQUIRED_FUNCTIONS(ACCEL_HIP_REQUIRED)
#undef ACCEL_HIP_REQUIRED
          symbol("hipMalloc", &rt.hipMalloc),
      symbol("hipHostMalloc", &rt.hipHostMalloc),
#define ACCEL_HIP_OPTIONAL(fn) symbol(#fn, &rt.fn, /*required=*/false),
      ACCEL_HIP_OPTIONAL_FUNCTIONS(ACCEL_HIP_OPTIONAL)
#undef ACCEL_HIP_OPTIONAL
          symbol("hipStreamGetDevice", &rt.hipStreamGetDevice, /*required=*/false),
  };
  // A runtime lacking an entry point stays loaded but unused: unloading HIP
  // is not supported by ROCm (it may have run constructors).
  if (st = g_library.resolve(symbols); st != ACCEL_SUCCESS) return st;
  rt.loaded = true;
  if (accel::plugin::log_enabled(ACCEL_LOG_DEBUG))
    accel::plugin::log(ACCEL_LOG_DEBUG, "loaded HIP runtime %s", runtime_label().c_str());
  return ACCEL_SUCCESS;
}

std::string runtime_label() {
  const Runtime& rt = g_runtime;
  if (rt.file.empty() || rt.file == rt.name) return rt.name;
  return rt.name + " (" + rt.file + ")";
}

void note_runtime_initialised() noexcept { g_initialised.store(true); }

bool runtime_initialised() noexcept { return g_initialised.load(); }

// Only an initialised runtime answers hipRuntimeGetVersion (the call would
// initialise it, and HIP is not fork-safe once initialised), so the version
// is read once the runtime has been initialised: hipGetDeviceCount at
// discovery, or hipInit in lazy_init, after which the core asks again. The
// core never asks in a fork() child that may not use the backend, so a flag
// suffices (a child can only have initialised the runtime itself).
accel_status_t op_runtime_version(char* buf, size_t size) {
  return guarded("runtime_version", [&]() -> accel_status_t {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    const Runtime& rt = g_runtime;
    if (!rt.loaded) return fail(ACCEL_ERROR_NOT_SUPPORTED, "the HIP runtime was not loaded");
    if (!runtime_initialised()) return ACCEL_ERROR_NOT_READY;
    if (rt.hipRuntimeGetVersion == nullptr)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "the HIP runtime %s does not export hipRuntimeGetVersion",
                  runtime_label().c_str());
    int v = 0;
    if (hipError_t rc = rt.hipRuntimeGetVersion(&v); rc != hipSuccess)
      return vendor_fail("hipRuntimeGetVersion", rc);
    // HIP_VERSION's encoding (hip_version.h): major * 10^7 + minor * 10^5 + patch.
    std::snprintf(buf, size, "HIP runtime %d.%d.%d (%d)", v / 10000000, (v / 100000) % 100,
                  v % 100000, v);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
