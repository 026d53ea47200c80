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
//  2. No readable topology and no usable KFD node: 0, without loading the
//     runtime (visibly_no_gpu).
//  3. hipGetDeviceCount. The runtime is then initialised during discovery,
//     so a fork()ed child cannot use HIP: lazy_init in such a child fails
//     with ACCEL_ERROR_FORKED (the core only knows about lazy_init).
#pragma once

#include <string>

#include "accel/accel.h"

namespace accel_hip {

accel_status_t count_devices(int32_t* count);

// Non-empty (the reason) when the system's KFD topology cannot be read and
// its KFD device node is absent or unusable, with no ACCEL_HIP_RUNTIME or
// ACCEL_HIP_KFD_TOPOLOGY override: no HIP runtime could find a GPU, so init
// does not even load it and device_count reports 0 with this reason.
const std::string& visibly_no_gpu();

// The count device_count returned (0 before it ran).
int32_t counted_devices();

// "KFD topology" or "hipGetDeviceCount".
const std::string& count_source();

}  // namespace accel_hip
