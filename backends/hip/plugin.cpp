// The vtable and the plugin's one exported symbol.
//
// Lifecycle of the hip backend:
//  - entry: stores the host services; touches no HIP.
//  - init: dlopens the HIP runtime (ACCEL_HIP_RUNTIME, else libamdhip64.so.6,
//    .so.5, .so) and resolves its entry points; runs no HIP code.
//  - device_count: the KFD topology in sysfs (no HIP code, fork-safe), else
//    hipGetDeviceCount (count.hpp).
//  - lazy_init: hipInit.
// Not fork-safe once the runtime is initialised (ROCr owns threads, queues
// and KFD state that a child does not inherit usably). The current device is
// HIP's own (hipSetDevice/hipGetDevice), so code mixing HIP and accel agrees.
#include "common.hpp"
#include "ops.hpp"
#include "runtime.hpp"

#include <unistd.h>

#include <cstdio>

namespace accel_hip {
namespace {

extern accel_plugin_api_t g_api;

// Counting through the KFD topology ran no HIP code: a fork() child may
// still initialise HIP itself. After hipGetDeviceCount it may not (the core
// refuses the backend in such a child).
accel_status_t device_count_entry(int32_t* count) {
  accel_status_t st = op_device_count(count);
  if (runtime_initialised_in() == 0) g_api.capabilities |= ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE;
  return st;
}

// Only an initialised runtime answers hipRuntimeGetVersion (the call would
// initialise it, and HIP is not fork-safe once initialised), so the version
// is read once this process has initialised the runtime: hipGetDeviceCount
// at discovery, or hipInit in lazy_init, after which the core asks again.
accel_status_t op_runtime_version(char* buf, size_t size) {
  return guarded("runtime_version", [&]() -> accel_status_t {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    Runtime& rt = runtime();
    if (rt.handle == nullptr)
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "the HIP runtime was not loaded");
    if (runtime_initialised_in() != getpid()) return ACCEL_ERROR_NOT_READY;
    if (rt.hipRuntimeGetVersion == nullptr) {
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "the HIP runtime " + runtime_label() + " does not export hipRuntimeGetVersion");
    }
    int v = 0;
    ACCEL_HIP_TRY(hipRuntimeGetVersion, (&v), "[HIP runtime " + runtime_label() + "]");
    // HIP_VERSION's encoding (hip_version.h): major * 10^7 + minor * 10^5 + patch.
    std::snprintf(buf, size, "HIP runtime %d.%d.%d (%d)", v / 10000000, (v / 100000) % 100,
                  v % 100000, v);
    return ACCEL_SUCCESS;
  });
}

// Not const: device_count_entry adds ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE.
accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "hip",
    .priority = 300,
    .capabilities = ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE | ACCEL_PLUGIN_CAP_TIMING_EVENTS |
                    ACCEL_PLUGIN_CAP_HOST_FUNCTIONS | ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
                    ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = op_init,
    .device_count = device_count_entry,
    .lazy_init = op_lazy_init,
    .get_device_properties = op_get_device_properties,
    .get_current_device = op_get_current_device,
    .set_current_device = op_set_current_device,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
    .runtime_version = op_runtime_version,
};

}  // namespace
}  // namespace accel_hip

extern "C" ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(
    uint32_t abi_major, uint32_t abi_minor, const accel_host_services_t* host) {
  using namespace accel_hip;
  if (host == nullptr) return nullptr;
  g_host = host;
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    log(ACCEL_LOG_WARN, format("hip plugin: core ABI %u.%u is not supported (plugin ABI %u.%u)",
                               abi_major, abi_minor, ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR));
    return nullptr;
  }
  return &g_api;
}
