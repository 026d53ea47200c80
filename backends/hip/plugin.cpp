// The vtable and the plugin's one exported symbol.
//
// Lifecycle of the hip backend:
//  - entry: stores the host services; touches no HIP.
//  - init: dlopens the HIP runtime (ACCEL_HIP_RUNTIME, else libamdhip64.so.6,
//    .so.5, .so) and resolves its entry points; runs no HIP code.
//  - device_count: the KFD topology in sysfs (no HIP code, fork-safe), else
//    hipGetDeviceCount (count.cpp).
//  - lazy_init: hipInit.
// Not fork-safe once the runtime is initialised (ROCr owns threads, queues
// and KFD state that a child does not inherit usably). The current device is
// HIP's own (hipSetDevice/hipGetDevice), so code mixing HIP and accel agrees.
// ABI 1.3: pointer_get_device (memory.cpp).
#define ACCEL_BACKEND_POINTER_GET_DEVICE accel::hip::op_pointer_get_device
#include "backend.hpp"

ACCEL_BACKEND_PLUGIN(accel::hip, "hip", 300,
                     ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE | ACCEL_PLUGIN_CAP_TIMING_EVENTS |
                         ACCEL_PLUGIN_CAP_HOST_FUNCTIONS | ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
                         ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT);
