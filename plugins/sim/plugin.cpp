// plugin.cpp - the sim backend's vtable and its one exported symbol.
#include "backend.hpp"

namespace accel::sim {
namespace {

// Designated initialisers in declaration order; a member left out is NULL,
// which the core reads as "not supported".
constexpr accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "sim",
    .priority = 10,  // third parties stay below 100
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                    ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
                    // Counting reads an environment variable; no thread starts
                    // before lazy_init. Not ACCEL_PLUGIN_CAP_FORK_SAFE: worker
                    // threads do not survive fork().
                    ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE | ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = op_init,
    .device_count = op_device_count,
    .lazy_init = op_lazy_init,
    .get_device_properties = op_get_device_properties,
    .get_current_device = nullptr,  // no native current device
    .set_current_device = nullptr,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
    .runtime_version = op_runtime_version,
};

}  // namespace
}  // namespace accel::sim

ACCEL_PLUGIN_DEFINE_ENTRY(accel::sim::g_api);
