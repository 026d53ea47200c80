// plugin.cpp - the sim backend's vtable and its one exported symbol.
#include "backend.hpp"

namespace accel::sim {
namespace {

constexpr accel_plugin_api_t kTable = ACCEL_BACKEND_VTABLE(
    "sim", 10,
    ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
        ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
        // Counting reads a variable; no thread starts
        // before lazy_init. Not FORK_SAFE: worker
        // threads do not survive fork().
        ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE | ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT);

#ifdef ACCEL_SIM_ABI_1_2
// Backend "sim12" (tests/backends/sim/meson.build, never installed): the
// same plugin as one built against the ABI 1.2 header, its table ending
// before ABI 1.3's members and saying minor 2. The conformance suite runs
// on it as on a third-party plugin that predates kernel parameter types
// and the native graph group: its graphs must all come from the core's
// recorder.
constexpr accel_plugin_api_t as_abi_1_2(accel_plugin_api_t t) {
  t.struct_size = offsetof(accel_plugin_api_t, pointer_get_device);
  t.abi_minor = 2;
  t.name = "sim12";
  return t;
}
constexpr accel_plugin_api_t g_api = as_abi_1_2(kTable);
#else
constexpr accel_plugin_api_t g_api = kTable;
#endif

}  // namespace
}  // namespace accel::sim

ACCEL_PLUGIN_DEFINE_ENTRY(accel::sim::g_api);
