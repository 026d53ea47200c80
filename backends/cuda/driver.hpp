// Loading the CUDA driver library (libcuda.so.1, or ACCEL_CUDA_DRIVER) and
// the table of Driver API entry points the plugin uses. Nothing here links
// against CUDA: cuda.h only provides the prototypes.
#pragma once

#include <cuda.h>

#include <string>

#include "accel/accel.h"

namespace accel_cuda {

// The oldest driver the plugin accepts: 11.4 (cuDeviceGetUuid_v2,
// cuLaunchHostFunc, stream priorities, and the _v2 memory API).
constexpr int kMinDriverVersion = 11040;

// X(name, compat): `name` as cuda.h spells it (cuda.h may map it to a
// versioned symbol such as cuMemAlloc_v2; the member gets that type), and
// `compat`, an older exported symbol with the same signature to try with
// dlsym when the versioned one is absent (nullptr: none).
#define ACCEL_CUDA_DRIVER_FUNCTIONS(X)             \
  X(cuInit, nullptr)                               \
  X(cuDriverGetVersion, nullptr)                   \
  X(cuGetErrorName, nullptr)                       \
  X(cuGetErrorString, nullptr)                     \
  X(cuDeviceGetCount, nullptr)                     \
  X(cuDeviceGet, nullptr)                          \
  X(cuDeviceGetName, nullptr)                      \
  X(cuDeviceGetUuid, "cuDeviceGetUuid")            \
  X(cuDeviceTotalMem, nullptr)                     \
  X(cuDeviceGetAttribute, nullptr)                 \
  X(cuDevicePrimaryCtxRetain, nullptr)             \
  X(cuDevicePrimaryCtxGetState, nullptr)           \
  X(cuCtxGetCurrent, nullptr)                      \
  X(cuCtxSetCurrent, nullptr)                      \
  X(cuCtxGetDevice, nullptr)                       \
  X(cuCtxSynchronize, nullptr)                     \
  X(cuCtxGetStreamPriorityRange, nullptr)          \
  X(cuStreamCreateWithPriority, nullptr)           \
  X(cuStreamDestroy, nullptr)                      \
  X(cuStreamQuery, nullptr)                        \
  X(cuStreamSynchronize, nullptr)                  \
  X(cuStreamWaitEvent, nullptr)                    \
  X(cuLaunchHostFunc, nullptr)                     \
  X(cuEventCreate, nullptr)                        \
  X(cuEventDestroy, nullptr)                       \
  X(cuEventRecord, nullptr)                        \
  X(cuEventQuery, nullptr)                         \
  X(cuEventSynchronize, nullptr)                   \
  X(cuEventElapsedTime, "cuEventElapsedTime")      \
  X(cuMemAlloc, nullptr)                           \
  X(cuMemFree, nullptr)                            \
  X(cuMemcpyHtoDAsync, nullptr)                    \
  X(cuMemcpyDtoHAsync, nullptr)                    \
  X(cuMemcpyDtoDAsync, nullptr)                    \
  X(cuMemsetD8Async, nullptr)                      \
  X(cuMemGetInfo, nullptr)

struct Driver {
  void* handle = nullptr;
  std::string path;          // what was dlopen()ed
  bool explicit_path = false;  // from ACCEL_CUDA_DRIVER
  int version = 0;           // cuDriverGetVersion
  bool proc_address = false;  // entry points came from cuGetProcAddress
#define ACCEL_CUDA_MEMBER(name, compat) decltype(&::name) name = nullptr;
  ACCEL_CUDA_DRIVER_FUNCTIONS(ACCEL_CUDA_MEMBER)
#undef ACCEL_CUDA_MEMBER
};

// The loaded driver; valid after load_driver() succeeded.
Driver& driver();

// dlopen + version check + symbol resolution. ACCEL_ERROR_BACKEND_UNAVAILABLE
// (with set_error) when the library is absent, the toolkit stub, too old or
// incomplete. Called once, from init.
accel_status_t load_driver();

// "11.4 (11040)"
std::string version_text(int version);

}  // namespace accel_cuda
