// The vtable of the CUDA backend and its entry point; the operations live in
// count.cpp, library.cpp, devices.cpp, streams.cpp, interop.cpp, events.cpp,
// hostfn.cpp, memory.cpp, modules.cpp, launch.cpp and graphs.cpp.
//
// Capabilities: NATIVE_CURRENT_DEVICE, TIMING_EVENTS, HOST_FUNCTIONS,
// STREAM_PRIORITIES, CROSS_DEVICE_WAIT; DISCOVERY_FORK_SAFE added by
// op_device_count when counting ran no cuInit. Not FORK_SAFE: once cuInit ran
// in a process (lazy_init, or counting without NVML and /proc), a fork()ed
// child cannot use CUDA. The group bits (NATIVE_HANDLES, HOST_MEMORY,
// PEER_COPY, DEVICE_ATTRIBUTES, MODULES) are set by the core from the
// filled groups (plugin-abi rule 19).
// ABI 1.3's stream_set_name: NVTX's name for the CUstream (streams.cpp).
#define ACCEL_BACKEND_STREAM_SET_NAME op_stream_set_name
// ABI 1.3: pointer_get_device (memory.cpp).
#define ACCEL_BACKEND_POINTER_GET_DEVICE accel::cuda::op_pointer_get_device
// ABI 1.4: the native graph group, CUDA graphs (graphs.cpp); the core sets
// ACCEL_PLUGIN_CAP_GRAPHS from the filled group.
#define ACCEL_BACKEND_NATIVE_GRAPHS 1
#include "backend.hpp"

ACCEL_BACKEND_PLUGIN(accel::cuda, "cuda", 400,
                     ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE | ACCEL_PLUGIN_CAP_TIMING_EVENTS |
                         ACCEL_PLUGIN_CAP_HOST_FUNCTIONS | ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
                         ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT);
