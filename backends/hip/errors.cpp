// hipError_t -> accel status, and the one shape of a HIP failure's detail.
#include "backend.hpp"

namespace accel::hip {

namespace {

// Names for a runtime whose hipGetErrorName is missing or answers nothing.
const char* builtin_name(hipError_t code) noexcept {
  switch (code) {
    case hipSuccess:
      return "hipSuccess";
    case hipErrorInvalidValue:
      return "hipErrorInvalidValue";
    case hipErrorOutOfMemory:
      return "hipErrorOutOfMemory";
    case hipErrorNotInitialized:
      return "hipErrorNotInitialized";
    case hipErrorInvalidDevicePointer:
      return "hipErrorInvalidDevicePointer";
    case hipErrorInvalidMemcpyDirection:
      return "hipErrorInvalidMemcpyDirection";
    case hipErrorInsufficientDriver:
      return "hipErrorInsufficientDriver";
    case hipErrorNoDevice:
      return "hipErrorNoDevice";
    case hipErrorInvalidDevice:
      return "hipErrorInvalidDevice";
    case hipErrorInvalidHandle:
      return "hipErrorInvalidHandle";
    case hipErrorNotReady:
      return "hipErrorNotReady";
    case hipErrorPeerAccessUnsupported:
      return "hipErrorPeerAccessUnsupported";
    case hipErrorPeerAccessAlreadyEnabled:
      return "hipErrorPeerAccessAlreadyEnabled";
    case hipErrorPeerAccessNotEnabled:
      return "hipErrorPeerAccessNotEnabled";
    case hipErrorContextIsDestroyed:
      return "hipErrorContextIsDestroyed";
    case hipErrorHostMemoryAlreadyRegistered:
      return "hipErrorHostMemoryAlreadyRegistered";
    case hipErrorHostMemoryNotRegistered:
      return "hipErrorHostMemoryNotRegistered";
    case hipErrorNotSupported:
      return "hipErrorNotSupported";
    case hipErrorInvalidConfiguration:
      return "hipErrorInvalidConfiguration";
    case hipErrorInvalidDeviceFunction:
      return "hipErrorInvalidDeviceFunction";
    case hipErrorInvalidImage:
      return "hipErrorInvalidImage";
    case hipErrorNoBinaryForGpu:
      return "hipErrorNoBinaryForGpu";
    case hipErrorInvalidKernelFile:
      return "hipErrorInvalidKernelFile";
    case hipErrorSharedObjectInitFailed:
      return "hipErrorSharedObjectInitFailed";
    case hipErrorNotFound:
      return "hipErrorNotFound";
    case hipErrorLaunchOutOfResources:
      return "hipErrorLaunchOutOfResources";
    default:
      return "hipErrorUnknown";
  }
}

const char* code_name(hipError_t code) noexcept {
  const Runtime& rt = runtime();
  const char* name = rt.hipGetErrorName != nullptr ? rt.hipGetErrorName(code) : nullptr;
  return name != nullptr && *name != '\0' ? name : builtin_name(code);
}

// hipGetErrorString's text, or NULL ("no description").
const char* code_text(hipError_t code) noexcept {
  const Runtime& rt = runtime();
  const char* text = rt.hipGetErrorString != nullptr ? rt.hipGetErrorString(code) : nullptr;
  return text != nullptr && *text != '\0' ? text : nullptr;
}

// Invalid values and handles are the runtime's findings on arguments the
// core already checked: reported as backend failures with HIP's text. What
// the runtime says it cannot do is ACCEL_ERROR_NOT_SUPPORTED.
accel_status_t status_of(hipError_t code) noexcept {
  switch (code) {
    case hipSuccess:
      return ACCEL_SUCCESS;
    case hipErrorOutOfMemory:
      return ACCEL_ERROR_OUT_OF_MEMORY;
    case hipErrorNotReady:
      return ACCEL_ERROR_NOT_READY;
    case hipErrorNotSupported:
    case hipErrorPeerAccessUnsupported:
      return ACCEL_ERROR_NOT_SUPPORTED;
    default:
      return ACCEL_ERROR_BACKEND_FAILURE;
  }
}

}  // namespace

accel_status_t vendor_fail(const char* call, hipError_t code) noexcept {
  return accel::plugin::vendor_fail(status_of(code), call, code_name(code), code, code_text(code));
}

accel_status_t vendor_fail(const char* call, hipError_t code, const std::string& context) noexcept {
  const accel_status_t st = status_of(code);
  try {
    return accel::plugin::set_error(st, vendor_failure_text(call, code) + " " + context);
  } catch (...) {
    return vendor_fail(call, code);
  }
}

std::string vendor_failure_text(const char* call, hipError_t code) {
  return accel::plugin::vendor_failure_message(call, code_name(code), code, code_text(code));
}

}  // namespace accel::hip
