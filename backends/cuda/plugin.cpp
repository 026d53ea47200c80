// The vtable of the CUDA backend and its entry point; the operations live in
// count.cpp, library.cpp, devices.cpp, streams.cpp, interop.cpp, events.cpp,
// hostfn.cpp, memory.cpp, modules.cpp and launch.cpp.
//
// Capabilities: NATIVE_CURRENT_DEVICE, TIMING_EVENTS, HOST_FUNCTIONS,
// STREAM_PRIORITIES, CROSS_DEVICE_WAIT; DISCOVERY_FORK_SAFE added by
// op_device_count when counting ran no cuInit. Not FORK_SAFE: once cuInit ran
// in a process (lazy_init, or counting without NVML and /proc), a fork()ed
// child cannot use CUDA. The group bits (NATIVE_HANDLES, HOST_MEMORY,
// PEER_COPY, DEVICE_ATTRIBUTES, MODULES) are set by the core from the
// filled groups (plugin-abi rule 19).
#include "backend.hpp"

namespace accel::cuda {

namespace {

// Not const: op_device_count may add ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE.
accel_plugin_api_t g_api =
    ACCEL_BACKEND_VTABLE("cuda", 400,
                         ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE | ACCEL_PLUGIN_CAP_TIMING_EVENTS |
                             ACCEL_PLUGIN_CAP_HOST_FUNCTIONS | ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
                             ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT);

}  // namespace

// Called under the core's discovery lock, before the core reads the
// capabilities again.
void declare_discovery_fork_safe() noexcept {
  g_api.capabilities |= ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE;
}

}  // namespace accel::cuda

ACCEL_PLUGIN_DEFINE_ENTRY(accel::cuda::g_api);
