// The vtable and the plugin's one exported symbol. README.md says how the
// backend loads, counts and what each file does.
#include "backend.hpp"

namespace accel::opencl {

// Not const: device_count adds STREAM_PRIORITIES when a listed device has
// cl_khr_priority_hints; without it a priority is recorded as a hint only.
accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "opencl",
    .priority = 100,
    // Neither FORK_SAFE nor DISCOVERY_FORK_SAFE: see count.cpp.
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                    ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = nullptr,  // the ICD loader is linked: nothing to open (library.cpp)
    .device_count = op_device_count,
    .lazy_init = op_lazy_init,
    .get_device_properties = op_get_device_properties,
    .get_current_device = nullptr,  // OpenCL has no current device: the core keeps it
    .set_current_device = nullptr,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
    .runtime_version = op_runtime_version,
};

// Runs during device_count, under the core's discovery lock, before the core
// reads the capabilities (plugin-abi rule 21).
void advertise_stream_priorities() noexcept {
  g_api.capabilities |= ACCEL_PLUGIN_CAP_STREAM_PRIORITIES;
}

}  // namespace accel::opencl

ACCEL_PLUGIN_DEFINE_ENTRY(accel::opencl::g_api);
