// The vtable and the plugin's one exported symbol. README.md says how the
// backend loads, counts and what each file does.
#include "backend.hpp"

namespace accel::opencl {

// Not const: device_count adds STREAM_PRIORITIES when a listed device has
// cl_khr_priority_hints; without it a priority is recorded as a hint only.
accel_plugin_api_t g_api =
    ACCEL_BACKEND_VTABLE("opencl", 100,
                         ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                             ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT);

// Runs during device_count, under the core's discovery lock, before the core
// reads the capabilities (plugin-abi rule 21).
void advertise_stream_priorities() noexcept {
  g_api.capabilities |= ACCEL_PLUGIN_CAP_STREAM_PRIORITIES;
}

}  // namespace accel::opencl

ACCEL_PLUGIN_DEFINE_ENTRY(accel::opencl::g_api);
