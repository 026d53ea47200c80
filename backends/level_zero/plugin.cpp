// The vtable and the plugin's one exported symbol.
//
// Lifecycle of the level_zero backend (README.md has the details):
//  - entry: stores the host services; touches no Level Zero.
//  - init: dlopen()s libze_loader.so.1; missing → ACCEL_ERROR_BACKEND_UNAVAILABLE.
//  - device_count: zeInit(ZE_INIT_FLAG_GPU_ONLY) (zeInitDrivers where the
//    loader has it) and enumeration: Level Zero cannot count otherwise. No
//    context is created. A failing zeInit is 0 devices with the loader's
//    result name as the reason.
//  - lazy_init: one context per driver. In a fork() child of a process that
//    had already run zeInit the core refuses the backend before it.
// Not fork-safe; no native current device (Level Zero has none).
#include "l0.hpp"

#include <algorithm>
#include <cstdio>

namespace accel_ze {
namespace {

extern accel_plugin_api_t g_api;

// Without zeInit (no device node here) discovery left nothing behind: a
// fork() child may still use the backend. After zeInit it may not (the core
// refuses the backend in such a child).
accel_status_t device_count_entry(int32_t* count) {
  accel_status_t st = op_device_count(count);
  if (!discovery_ran_zeinit()) g_api.capabilities |= ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE;
  return st;
}

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
      ze_result_t r = ze.zeDriverGetProperties(h, &p);
      if (r != ZE_RESULT_SUCCESS) return ze_fail("zeDriverGetProperties", r, h);
      std::string one = format("Level Zero driver %u (0x%08x)", p.driverVersion, p.driverVersion);
      ze_api_version_t api{};
      if (ze.zeDriverGetApiVersion != nullptr && ze.zeDriverGetApiVersion(h, &api) == ZE_RESULT_SUCCESS)
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

// Not const: device_count_entry adds ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE.
accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "level_zero",
    .priority = 200,
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                    ACCEL_PLUGIN_CAP_STREAM_PRIORITIES | ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = op_init,
    .device_count = device_count_entry,
    .lazy_init = op_lazy_init,
    .get_device_properties = op_get_device_properties,
    .get_current_device = nullptr,
    .set_current_device = nullptr,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
    .runtime_version = op_runtime_version,
};

}  // namespace
}  // namespace accel_ze

extern "C" ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(
    uint32_t abi_major, uint32_t abi_minor, const accel_host_services_t* host) {
  using namespace accel_ze;
  if (host == nullptr) return nullptr;
  g_host = host;  // the core's table stays valid until exit
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    log_msg(ACCEL_LOG_WARN, "level_zero plugin: core ABI %u.%u is not supported (plugin ABI %u.%u)",
            abi_major, abi_minor, ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR);
    return nullptr;
  }
  return &g_api;
}
