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

#include <cstdio>
#include <cstring>

namespace accel_ocl {
namespace {

// Every platform the ICD loader found, listed devices or not: its name and
// CL_PLATFORM_VERSION ("OpenCL 3.0 <vendor's version text>"). Info queries
// only, no context.
accel_status_t op_runtime_version(char* buf, size_t size) {
  return guarded("runtime_version", [&]() -> accel_status_t {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    cl_uint n = 0;
    cl_int err = clGetPlatformIDs(0, nullptr, &n);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && n == 0))
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "no OpenCL platform");
    if (err != CL_SUCCESS) return cl_fail("clGetPlatformIDs", err);
    std::vector<cl_platform_id> plats(n);
    err = clGetPlatformIDs(n, plats.data(), nullptr);
    if (err != CL_SUCCESS) return cl_fail("clGetPlatformIDs", err);
    std::string text;
    for (cl_platform_id p : plats) {
      if (!text.empty()) text += "; ";
      text += platform_string(p, CL_PLATFORM_NAME) + ": " + platform_string(p, CL_PLATFORM_VERSION);
    }
    std::snprintf(buf, size, "%s", text.c_str());
    return ACCEL_SUCCESS;
  });
}

accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "opencl",
    .priority = 100,
    // STREAM_PRIORITIES is added by device_count when a listed device has
    // cl_khr_priority_hints; without it a priority is recorded as a hint only.
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                    ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = nullptr,
    .device_count = op_device_count,
    .lazy_init = op_lazy_init,
    .get_device_properties = op_get_device_properties,
    .get_current_device = nullptr,
    .set_current_device = nullptr,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
    .runtime_version = op_runtime_version,
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
