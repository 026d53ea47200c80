// device_count without initialising the HIP runtime (fork-safe) where the
// system allows: the KFD topology in sysfs, resolved through
// ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES
// (visible_devices.hpp); the runtime's hipGetDeviceCount only when the
// topology cannot be read.
//
// Sources, in order:
//  1. ACCEL_HIP_KFD_TOPOLOGY=/abs/dir (tests: a fabricated tree) or, unless
//     ACCEL_HIP_RUNTIME names another runtime (the system's sysfs would then
//     describe hardware that runtime does not drive), the system's
//     /sys/class/kfd/kfd/topology/nodes. GPUs found there also need the KFD
//     device node (/dev/kfd, or ACCEL_HIP_KFD_DEVICE for tests) to be usable.
//  2. hipGetDeviceCount. The runtime is then initialised during discovery,
//     so a fork()ed child cannot use HIP: lazy_init in such a child fails
//     with ACCEL_ERROR_FORKED (the core only knows about lazy_init).
#pragma once

#include <string>

#include "accel/accel.h"

namespace accel_hip {

accel_status_t count_devices(int32_t* count);

// The count device_count returned (0 before it ran).
int32_t counted_devices();

// "KFD topology" or "hipGetDeviceCount".
const std::string& count_source();

}  // namespace accel_hip
