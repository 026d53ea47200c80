// Checks a launch's argument array against a kernel's parameters (what the
// plugin's kernel_get_params said), so a bad launch fails with a message
// naming the argument and nothing is queued.
#pragma once

#include "accel/accel.h"
#include "module.hpp"

namespace accel::core {

// ACCEL_SUCCESS, or ACCEL_ERROR_INVALID_ARGUMENT / DEVICE_MISMATCH (a device
// pointer of another device) naming `fn`, the kernel and the argument. A
// non-NULL device pointer in no accel allocation passes only when the
// plugin's pointer_get_device reports it as the kernel's device's memory.
// `arg_types` (NULL, or num_args accel_kernel_arg_type_t values) says what
// each argument is; an integer for a float parameter, or a float for an
// integer one, is refused where the plugin said the parameter's type.
accel_status_t check_kernel_args(const char* fn, const accel_kernel_s& k,
                                 const accel_kernel_arg_t* args, size_t num_args,
                                 const int32_t* arg_types);

}  // namespace accel::core
