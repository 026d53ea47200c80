// The fake driver's answers to cuGetErrorName and cuGetErrorString: the
// CUresult codes it can return, each with its cuda.h name and, as its text,
// the description the CUDA Driver API reference ("Data types used by CUDA
// driver", enum CUresult) gives the code. A real driver answers shorter
// texts; these are worded apart from any built-in table a plugin keeps for a
// driver that cannot answer, so a test can tell which of the two a message
// came from. A data header of the fake (nothing of backends/ is included):
// fake_cuda.cpp answers from it, and the plugin's tests name what the driver
// said from it.
#pragma once

#include <cuda.h>

// X(code, text): the name is the enumerator's own spelling (#code).
#define FAKE_CUDA_ERROR_TEXTS(X)                                                                  \
  X(CUDA_SUCCESS,                                                                                 \
    "The API call returned with no errors. In the case of query calls, this also means that the " \
    "operation being queried is complete (see cuEventQuery() and cuStreamQuery()).")              \
  X(CUDA_ERROR_INVALID_VALUE,                                                                     \
    "This indicates that one or more of the parameters passed to the API call is not within an "  \
    "acceptable range of values.")                                                                \
  X(CUDA_ERROR_OUT_OF_MEMORY,                                                                     \
    "The API call failed because it was unable to allocate enough memory or other resources to "  \
    "perform the requested operation.")                                                           \
  X(CUDA_ERROR_NOT_INITIALIZED,                                                                   \
    "This indicates that the CUDA driver has not been initialized with cuInit() or that "         \
    "initialization has failed.")                                                                 \
  X(CUDA_ERROR_NO_DEVICE,                                                                         \
    "This indicates that no CUDA-capable devices were detected by the installed CUDA driver.")    \
  X(CUDA_ERROR_INVALID_DEVICE,                                                                    \
    "This indicates that the device ordinal supplied by the user does not correspond to a valid " \
    "CUDA device or that the action requested is invalid for the specified device.")              \
  X(CUDA_ERROR_INVALID_CONTEXT,                                                                   \
    "This most frequently indicates that there is no context bound to the current thread. This "  \
    "can also be returned if the context passed to an API call is not a valid handle (such as a " \
    "context that has had cuCtxDestroy() invoked on it).")                                        \
  X(CUDA_ERROR_INVALID_HANDLE,                                                                    \
    "This indicates that a resource handle passed to the API call was not valid. Resource "       \
    "handles are opaque types like CUstream and CUevent.")                                        \
  X(CUDA_ERROR_NOT_FOUND,                                                                         \
    "This indicates that a named symbol was not found. Examples of symbols are global/constant "  \
    "variable names, driver function names, texture names, and surface names.")                   \
  X(CUDA_ERROR_NOT_READY,                                                                         \
    "This indicates that asynchronous operations issued previously have not completed yet. This " \
    "result is not actually an error, but must be indicated differently than CUDA_SUCCESS "       \
    "(which indicates completion).")                                                              \
  X(CUDA_ERROR_NOT_SUPPORTED,                                                                     \
    "This error indicates that the attempted operation is not supported on the current system "   \
    "or device.")                                                                                 \
  X(CUDA_ERROR_NOT_PERMITTED,                                                                     \
    "This error indicates that the attempted operation is not permitted.")                        \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,                                                           \
    "This indicates that peer access is not supported across the given devices.")                 \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,                                                       \
    "This error indicates that a call to cuCtxEnablePeerAccess() is trying to re-enable peer "    \
    "access to a context which has already had peer access to it enabled.")                       \
  X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,                                                           \
    "This error indicates that cuCtxDisablePeerAccess() is trying to disable peer access which "  \
    "has not been enabled yet via cuCtxEnablePeerAccess().")                                      \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,                                                    \
    "This error indicates that the memory range passed to cuMemHostRegister() has already been "  \
    "registered.")                                                                                \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,                                                        \
    "This error indicates that the pointer passed to cuMemHostUnregister() does not correspond "  \
    "to any currently registered memory region.")                                                 \
  X(CUDA_ERROR_INVALID_IMAGE,                                                                     \
    "This indicates that the device kernel image is invalid. This can also indicate an invalid "  \
    "CUDA module.")                                                                               \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU,                                                                 \
    "This indicates that there is no kernel image available that is suitable for the device. "    \
    "This can occur when a user specifies code generation options for a particular CUDA source "  \
    "file that do not include the corresponding device configuration.")                           \
  X(CUDA_ERROR_INVALID_PTX, "This indicates that a PTX JIT compilation failed.")                  \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,                                                           \
    "This indicates that the provided PTX was compiled with an unsupported toolchain.")           \
  X(CUDA_ERROR_ILLEGAL_ADDRESS,                                                                   \
    "While executing a kernel, the device encountered a load or store instruction on an invalid " \
    "memory address. This leaves the process in an inconsistent state and any further CUDA work " \
    "will return the same error. To continue using CUDA, the process must be terminated and "     \
    "relaunched.")                                                                                \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,                                                           \
    "This indicates that a launch did not occur because it did not have appropriate resources.")  \
  X(CUDA_ERROR_UNKNOWN, "This indicates that an unknown internal error has occurred.")

namespace fake_cuda_errors {

struct Text {
  CUresult code;
  const char* name;
  const char* text;
};

#define FAKE_CUDA_ERROR_ROW(code, text) Text{code, #code, text},
inline constexpr Text kTexts[] = {FAKE_CUDA_ERROR_TEXTS(FAKE_CUDA_ERROR_ROW)};
#undef FAKE_CUDA_ERROR_ROW

// The row of `code`, or nullptr for a code the fake does not know.
inline const Text* find(CUresult code) {
  for (const Text& t : kTexts)
    if (t.code == code) return &t;
  return nullptr;
}

}  // namespace fake_cuda_errors
