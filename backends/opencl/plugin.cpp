// The vtable and the plugin's one exported symbol.
//
// Lifecycle of the opencl backend:
//  - entry: stores the host services; touches no OpenCL.
//  - init: none (libOpenCL.so.1, the ICD loader, is linked directly: if it
//    is missing the plugin fails to load and the loader reports dlopen's
//    error).
//  - device_count: enumerates platforms and devices through the ICD loader,
//    which loads the vendor drivers (OpenCL has no cheaper way to count).
//    Cached; no context is created.
//  - lazy_init: makes sure the enumeration exists; contexts are created per
//    device on its first operation.
// Not fork-safe once initialised (vendor drivers own threads and state).
// No native current device: OpenCL has none.
#include "ocl.hpp"

namespace accel_ocl {
namespace {

accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "opencl",
    .priority = 100,
    // STREAM_PRIORITIES is added by device_count when a listed device has
    // cl_khr_priority_hints; without it a priority is recorded as a hint only.
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS,
    .init = nullptr,
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

void advertise_stream_priorities() { g_api.capabilities |= ACCEL_PLUGIN_CAP_STREAM_PRIORITIES; }

}  // namespace accel_ocl

extern "C" ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(
    uint32_t abi_major, uint32_t abi_minor, const accel_host_services_t* host) {
  using namespace accel_ocl;
  (void)abi_minor;  // members are only appended: any 1.x core reads what it knows
  if (!host) return nullptr;
  // The core's table stays valid until exit; members past its struct_size
  // are never read (see host_has in errors.cpp).
  g_host = host;
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    log_msg(ACCEL_LOG_WARN, "opencl plugin: core ABI %u.%u is not supported (plugin ABI %u.%u)",
            abi_major, abi_minor, ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR);
    return nullptr;
  }
  return &g_api;
}
