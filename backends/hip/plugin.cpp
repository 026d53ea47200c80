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

namespace accel_hip {
namespace {

const accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "hip",
    .priority = 300,
    .capabilities = ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE | ACCEL_PLUGIN_CAP_TIMING_EVENTS |
                    ACCEL_PLUGIN_CAP_HOST_FUNCTIONS | ACCEL_PLUGIN_CAP_STREAM_PRIORITIES,
    .init = op_init,
    .device_count = op_device_count,
    .lazy_init = op_lazy_init,
    .get_device_properties = op_get_device_properties,
    .get_current_device = op_get_current_device,
    .set_current_device = op_set_current_device,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
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
