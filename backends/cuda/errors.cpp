// CUresult -> accel status, the codes' names and texts, and vendor_fail.
#include "backend.hpp"

namespace accel::cuda {

namespace {

// Used when the driver cannot name its own codes (the stub, or a failed
// load): the codes this plugin can meet, with cuda.h's names.
constexpr plugin::VendorCode kKnown[] = {
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_TOO_MANY_PEERS, "CUDA_ERROR_TOO_MANY_PEERS", "peer mapping resources exhausted"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain"},
    {CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
     "PTX JIT compiler library not found"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const plugin::VendorCode* known(CUresult code) noexcept {
  return plugin::find_vendor_code(kKnown, code);
}

accel_status_t status_of(CUresult code) noexcept {
  switch (code) {
    case CUDA_SUCCESS:
      return ACCEL_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return ACCEL_ERROR_OUT_OF_MEMORY;
    case CUDA_ERROR_NOT_READY:
      return ACCEL_ERROR_NOT_READY;
    default:
      return ACCEL_ERROR_BACKEND_FAILURE;
  }
}

}  // namespace

const char* code_name(CUresult code) noexcept {
  const Driver& d = driver();
  const char* name = nullptr;
  if (d.cuGetErrorName != nullptr && d.cuGetErrorName(code, &name) == CUDA_SUCCESS &&
      name != nullptr)
    return name;
  const plugin::VendorCode* k = known(code);
  return k != nullptr ? k->name : nullptr;
}

const char* code_text(CUresult code) noexcept {
  const Driver& d = driver();
  const char* text = nullptr;
  if (d.cuGetErrorString != nullptr && d.cuGetErrorString(code, &text) == CUDA_SUCCESS &&
      text != nullptr)
    return text;
  const plugin::VendorCode* k = known(code);
  return k != nullptr ? k->text : nullptr;
}

accel_status_t vendor_fail(const char* call, CUresult code) noexcept {
  return plugin::vendor_fail(status_of(code), call, code_name(code), code, code_text(code));
}

accel_status_t vendor_fail_as(accel_status_t status, const char* call, CUresult code) noexcept {
  return plugin::vendor_fail(status, call, code_name(code), code, code_text(code));
}

accel_status_t query_status(const char* call, CUresult code) noexcept {
  if (code == CUDA_SUCCESS) return ACCEL_SUCCESS;
  if (code == CUDA_ERROR_NOT_READY) return ACCEL_ERROR_NOT_READY;
  return vendor_fail(call, code);
}

}  // namespace accel::cuda
