// The fake runtime's answers to hipGetErrorName and hipGetErrorString: the
// hipError_t codes it can return, each with its enumerator's name and, as
// its text, the description AMD's HIP documentation gives the code ("HIP
// error codes" reference; hipErrorInvalidValue: the hipError_t enumerator's
// description in the HIP runtime API reference). A real runtime answers
// shorter texts; these are worded apart from any built-in table a plugin
// keeps, so a test can tell which of the two a message came from. A data
// header of the fake (nothing of backends/ is included): fake_hip.cpp
// answers from it, and the plugin's tests name what the runtime said from it.
#pragma once

#include <hip/hip_runtime_api.h>

// X(code, text): the name is the enumerator's own spelling (#code).
#define FAKE_HIP_ERROR_TEXTS(X)                                                                   \
  X(hipSuccess, "No error. Operation completed successfully.")                                    \
  X(hipErrorInvalidValue,                                                                         \
    "One or more of the parameters passed to the API call is NULL or not in an acceptable "       \
    "range.")                                                                                     \
  X(hipErrorOutOfMemory,                                                                          \
    "Out of memory. This error occurs when the HIP runtime cannot allocate enough memory to "     \
    "perform the requested operation.")                                                           \
  X(hipErrorInvalidDevicePointer,                                                                 \
    "Invalid device pointer. This error occurs when using a host pointer where a device pointer " \
    "is expected, or a device pointer that is unallocated, freed or of a different context.")     \
  X(hipErrorInvalidMemcpyDirection,                                                               \
    "Invalid copy direction for memcpy. This error occurs when an invalid direction parameter "   \
    "is specified for memory copy operations.")                                                   \
  X(hipErrorNoDevice,                                                                             \
    "No ROCm-capable device is detected. This error occurs when the system does not have any "    \
    "compatible GPU devices that support the HIP runtime.")                                       \
  X(hipErrorInvalidDevice,                                                                        \
    "Invalid device ordinal. This error occurs when a function is called with a device index "    \
    "that doesn't correspond to a valid device.")                                                 \
  X(hipErrorInvalidHandle,                                                                        \
    "Invalid resource handle. This error occurs when an invalid handle is provided to a HIP API " \
    "function.")                                                                                  \
  X(hipErrorNotReady,                                                                             \
    "Device not ready. This error occurs when asynchronous operations have not completed.")       \
  X(hipErrorPeerAccessAlreadyEnabled,                                                             \
    "Peer access is already enabled. This error occurs when attempting to enable peer access "    \
    "between two devices when that access has already been enabled.")                             \
  X(hipErrorPeerAccessNotEnabled,                                                                 \
    "Peer access has not been enabled. This error occurs when operations requiring peer access "  \
    "between devices are attempted without first enabling that access.")                          \
  X(hipErrorContextIsDestroyed,                                                                   \
    "Context is destroyed. This error occurs when attempting to use a context that has been "     \
    "previously destroyed.")                                                                      \
  X(hipErrorHostMemoryAlreadyRegistered,                                                          \
    "Part or all of the requested memory range is already mapped. This error occurs when "        \
    "attempting to register host memory that has already been registered.")                       \
  X(hipErrorHostMemoryNotRegistered,                                                              \
    "Pointer does not correspond to a registered memory region. This error occurs when "          \
    "operations that require registered host memory are performed on unregistered memory.")       \
  X(hipErrorInvalidConfiguration,                                                                 \
    "Invalid configuration argument. This error occurs when the configuration specified for a "   \
    "kernel launch or other configurable operation contains invalid parameters.")                 \
  X(hipErrorInvalidImage,                                                                         \
    "Device kernel image is invalid. This error occurs when the device code image is corrupted "  \
    "or in an unsupported format.")                                                               \
  X(hipErrorNoBinaryForGpu,                                                                       \
    "No kernel image is available for execution on the device. This error occurs when "           \
    "attempting to run a kernel on a device for which no compatible compiled binary exists.")     \
  X(hipErrorNotFound,                                                                             \
    "Named symbol not found. This error is returned when a requested named entity (such as a "    \
    "symbol, texture, surface, etc.) cannot be found.")                                           \
  X(hipErrorNotSupported,                                                                         \
    "Operation not supported. This error indicates that the requested operation is not "          \
    "supported by the current hardware, driver, or HIP implementation.")                          \
  X(hipErrorUnknown,                                                                              \
    "Unknown error. This is a general error code returned when no other error code is "           \
    "applicable or when the specific error condition cannot be determined.")

namespace fake_hip_errors {

struct Text {
  hipError_t code;
  const char* name;
  const char* text;
};

#define FAKE_HIP_ERROR_ROW(code, text) Text{code, #code, text},
inline constexpr Text kTexts[] = {FAKE_HIP_ERROR_TEXTS(FAKE_HIP_ERROR_ROW)};
#undef FAKE_HIP_ERROR_ROW

// The row of `code`; a code the fake does not know reads as hipErrorUnknown.
inline const Text& find(hipError_t code) {
  for (const Text& t : kTexts)
    if (t.code == code) return t;
  for (const Text& t : kTexts)
    if (t.code == hipErrorUnknown) return t;
  return kTexts[0];
}

}  // namespace fake_hip_errors
