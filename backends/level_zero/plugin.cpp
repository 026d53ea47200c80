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
    .device_synchronize = op_device_synchronize,
    .stream_priority_range = op_stream_priority_range,
    .stream_create = op_stream_create,
    .stream_destroy = op_stream_destroy,
    .default_stream = op_default_stream,
    .stream_query = op_stream_query,
    .stream_synchronize = op_stream_synchronize,
    .stream_wait_event = op_stream_wait_event,
    .launch_host_func = op_launch_host_func,
    .event_create = op_event_create,
    .event_destroy = op_event_destroy,
    .event_record = op_event_record,
    .event_query = op_event_query,
    .event_synchronize = op_event_synchronize,
    .event_elapsed_time = op_event_elapsed_time,
    .mem_alloc = op_mem_alloc,
    .mem_free = op_mem_free,
    .memcpy_async = op_memcpy_async,
    .memset_async = op_memset_async,
    .mem_get_info = op_mem_get_info,
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
