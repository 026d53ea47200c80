#include "errors.hpp"

#include <fmt/format.h>

#include "common.hpp"
#include "driver.hpp"

namespace accel_cuda {

namespace {

// Used when the driver cannot name its own codes (the stub, or a failed
// load): the codes this plugin can meet, with cuda.h's names.
struct Known {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr Known kKnown[] = {
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
     "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

}  // namespace

std::string error_text(CUresult code) {
  const Driver& d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName != nullptr && d.cuGetErrorName(code, &name) != CUDA_SUCCESS) name = nullptr;
  if (d.cuGetErrorString != nullptr && d.cuGetErrorString(code, &text) != CUDA_SUCCESS)
    text = nullptr;
  if (name == nullptr || text == nullptr) {
    for (const auto& k : kKnown) {
      if (k.code == code) {
        if (name == nullptr) name = k.name;
        if (text == nullptr) text = k.text;
      }
    }
  }
  return fmt::format("{} ({}): {}", name != nullptr ? name : "CUDA_ERROR_?", static_cast<int>(code),
                     text != nullptr ? text : "no description from the driver");
}

accel_status_t to_status(CUresult code) {
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

accel_status_t cuda_fail(const char* call, CUresult code) {
  return fail(to_status(code), fmt::format("{} failed: {}", call, error_text(code)));
}

accel_status_t cuda_fail(const char* call, CUresult code, const std::string& context) {
  return fail(to_status(code), fmt::format("{} failed {}: {}", call, context, error_text(code)));
}

}  // namespace accel_cuda
