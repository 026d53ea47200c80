// plugin.cpp - the sim backend's vtable and its one exported symbol.
#include "backend.hpp"

namespace accel::sim {
namespace {

constexpr accel_plugin_api_t g_api = ACCEL_BACKEND_VTABLE(
    "sim", 10,
    ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
        ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
        // Counting reads a variable; no thread starts
        // before lazy_init. Not FORK_SAFE: worker
        // threads do not survive fork().
        ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE | ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT);

}  // namespace
}  // namespace accel::sim

ACCEL_PLUGIN_DEFINE_ENTRY(accel::sim::g_api);
