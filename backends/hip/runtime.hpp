// Loading the HIP runtime (libamdhip64) with dlopen and the table of entry
// points the plugin uses. Nothing here links against HIP: the HIP headers
// (compiled as host code, __HIP_PLATFORM_AMD__) only provide the prototypes,
// so every member has the header's exact type.
#pragma once

#include <hip/hip_runtime_api.h>

#include <sys/types.h>

#include <string>

#include "accel/accel.h"

namespace accel_hip {

// Sonames tried in order when ACCEL_HIP_RUNTIME is not set: the current ROCm
// major first, then older ones, then the unversioned development link.
extern const char* const kRuntimeSonames[3];

// X(name): an entry point every supported runtime exports (5.x and 6.x).
// hipMalloc is listed apart: the header overloads it with a C++ template.
#define ACCEL_HIP_REQUIRED_FUNCTIONS(X) \
  X(hipInit)                            \
  X(hipGetErrorName)                    \
  X(hipGetErrorString)                  \
  X(hipGetDeviceCount)                  \
  X(hipGetDevice)                       \
  X(hipSetDevice)                       \
  X(hipDeviceGet)                       \
  X(hipGetDeviceProperties)             \
  X(hipDeviceSynchronize)               \
  X(hipDeviceGetStreamPriorityRange)    \
  X(hipStreamCreateWithPriority)        \
  X(hipStreamDestroy)                   \
  X(hipStreamQuery)                     \
  X(hipStreamSynchronize)               \
  X(hipStreamWaitEvent)                 \
  X(hipStreamAddCallback)               \
  X(hipEventCreateWithFlags)            \
  X(hipEventDestroy)                    \
  X(hipEventRecord)                     \
  X(hipEventQuery)                      \
  X(hipEventSynchronize)                \
  X(hipEventElapsedTime)                \
  X(hipFree)                            \
  X(hipMemcpyAsync)                     \
  X(hipMemsetAsync)                     \
  X(hipMemGetInfo)

// Entry points used when present (NULL otherwise). hipLaunchHostFunc is
// declared by the HIP 5.2 headers but not exported by Debian's 5.2 runtime:
// host functions then go through hipStreamAddCallback.
#define ACCEL_HIP_OPTIONAL_FUNCTIONS(X) \
  X(hipLaunchHostFunc)                  \
  X(hipDeviceGetUuid)                   \
  X(hipRuntimeGetVersion)

struct Runtime {
  void* handle = nullptr;
  std::string name;          // the soname or ACCEL_HIP_RUNTIME path that was dlopen()ed
  std::string file;          // the file it resolved to (from the link map), or ""
  bool explicit_path = false;  // from ACCEL_HIP_RUNTIME
#define ACCEL_HIP_MEMBER(fn) decltype(&::fn) fn = nullptr;
  ACCEL_HIP_REQUIRED_FUNCTIONS(ACCEL_HIP_MEMBER)
  ACCEL_HIP_OPTIONAL_FUNCTIONS(ACCEL_HIP_MEMBER)
#undef ACCEL_HIP_MEMBER
  hipError_t (*hipMalloc)(void** ptr, size_t size) = nullptr;
};

// The loaded runtime; valid after load_runtime() succeeded.
Runtime& runtime();

// dlopen + symbol resolution, once (from init). ACCEL_ERROR_BACKEND_UNAVAILABLE
// with set_error naming every soname tried (or the ACCEL_HIP_RUNTIME path)
// and dlerror's text when no runtime loads or one lacks an entry point.
// Runs no HIP code: the runtime is not initialised.
accel_status_t load_runtime();

// "libamdhip64.so.5 (/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153)"
std::string runtime_label();

// Fork bookkeeping: the process in which this plugin first called into the
// runtime (hipGetDeviceCount at discovery or hipInit at lazy_init); 0 never.
// HIP is not fork-safe once initialised.
void note_runtime_initialised();
pid_t runtime_initialised_in();
// Why the runtime was initialised first ("hipGetDeviceCount at discovery ...").
void set_init_reason(const std::string& why);
const std::string& init_reason();

// "hipErrorOutOfMemory (2): out of memory", with the runtime's
// hipGetErrorName / hipGetErrorString (a built-in name when unavailable).
std::string error_text(hipError_t code);

// OUT_OF_MEMORY, NOT_READY, else BACKEND_FAILURE.
accel_status_t to_status(hipError_t code);

// Reports "<call> failed: <error_text>[ <context>]" and returns to_status(code).
accel_status_t hip_fail(const char* call, hipError_t code, const std::string& context = {});

}  // namespace accel_hip

// Calls runtime().name args; on failure reports "name failed: ..." (plus
// `ctx`, a std::string expression) and returns the status from the
// enclosing function.
#define ACCEL_HIP_TRY(name, args, ctx)                                              \
  do {                                                                              \
    hipError_t accel_hip_rc_ = ::accel_hip::runtime().name args;                    \
    if (accel_hip_rc_ != hipSuccess) return ::accel_hip::hip_fail(#name, accel_hip_rc_, ctx); \
  } while (0)
