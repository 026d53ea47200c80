// Driver API error text and the mapping of CUresult onto accel statuses.
#pragma once

#include <cuda.h>

#include <string>

#include "accel/accel.h"

namespace accel_cuda {

// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", using cuGetErrorName /
// cuGetErrorString when the driver answers them, else a built-in table (the
// toolkit stub answers nothing).
std::string error_text(CUresult code);

// OUT_OF_MEMORY, NOT_READY, else BACKEND_FAILURE.
accel_status_t to_status(CUresult code);

// Reports a failed driver call: set_error("<call> failed: <error_text>")
// and returns to_status(code).
accel_status_t cuda_fail(const char* call, CUresult code);

// Same, with extra context appended ("on device 1").
accel_status_t cuda_fail(const char* call, CUresult code, const std::string& context);

}  // namespace accel_cuda

// Calls driver().name args; on failure reports "name failed: ..." and
// returns the accel status from the enclosing function.
#define ACCEL_CU_TRY(name, args)                                                   \
  do {                                                                             \
    CUresult accel_cu_rc_ = ::accel_cuda::driver().name args;                      \
    if (accel_cu_rc_ != CUDA_SUCCESS) return ::accel_cuda::cuda_fail(#name, accel_cu_rc_); \
  } while (0)
