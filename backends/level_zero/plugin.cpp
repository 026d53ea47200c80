// The vtable and the plugin's one exported symbol.
//
// Lifecycle of the level_zero backend (README.md has the details):
//  - entry: stores the host services; touches no Level Zero.
//  - init: dlopen()s libze_loader.so.1; missing → ACCEL_ERROR_BACKEND_UNAVAILABLE.
//  - device_count: zeInit(ZE_INIT_FLAG_GPU_ONLY) (zeInitDrivers where the
//    loader has it) and enumeration: Level Zero cannot count otherwise. No
//    context is created. A failing zeInit is 0 devices with the loader's
//    result name as the reason.
//  - lazy_init: one context per driver. Refuses with ACCEL_ERROR_FORKED in a
//    fork() child of a process that had already run zeInit.
// Not fork-safe; no native current device (Level Zero has none).
#include "l0.hpp"

namespace accel_ze {
namespace {

const accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "level_zero",
    .priority = 200,
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                    ACCEL_PLUGIN_CAP_STREAM_PRIORITIES,
    .init = op_init,
    .device_count = op_device_count,
    .lazy_init = op_lazy_init,
    .get_device_properties = op_get_device_properties,
    .get_current_device = nullptr,
    .set_current_device = nullptr,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
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
