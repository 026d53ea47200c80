// device_count without a CUDA context (fork-safe): NVML, then
// /proc/driver/nvidia/gpus, each resolved through CUDA_VISIBLE_DEVICES; the
// driver (cuInit + cuDeviceGetCount) only when neither can answer.
//
// Sources, in order:
//  1. ACCEL_CUDA_NVML=/abs/path: that NVML library (tests use the fake one);
//  2. unless ACCEL_CUDA_DRIVER names another driver (the system's NVML and
//     /proc would then describe a different driver): libnvidia-ml.so.1, then
//     /proc/driver/nvidia/gpus;
//  3. the driver itself. cuInit has then run during discovery, so a fork()ed
//     child cannot use CUDA any more: lazy_init in such a child fails with
//     ACCEL_ERROR_FORKED (the core only knows about lazy_init).
#pragma once

#include <sys/types.h>

#include <string>

#include "accel/accel.h"

namespace accel_cuda {

accel_status_t count_devices(int32_t* count);

// Process in which counting ran cuInit; 0 when counting did not need it.
pid_t counted_with_cuinit_in();

// "NVML", "/proc/driver/nvidia/gpus" or "cuDeviceGetCount".
const std::string& count_source();

// Why NVML and /proc could not count (when count_source() is the driver).
const std::string& why_counted_with_driver();

}  // namespace accel_cuda
