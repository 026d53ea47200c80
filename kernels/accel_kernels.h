/* The kernel images this build made from the sources in kernels/ (in the
 * order accel_module_load should try them: a device's own formats first,
 * portable ones last), for accelctl selftest, the tests and the examples.
 * Internal to the build: not installed. */
#ifndef ACCEL_KERNELS_H
#define ACCEL_KERNELS_H

#include <stddef.h>

#include "accel/accel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes up to `capacity` images into `out` and returns how many the build
 * has (PTX with nvcc, an AMD code object with hipcc, SPIR-V with clang-15
 * and llvm-spirv-15, then OpenCL C and sim's host format, always). */
size_t accel_kernels_images(accel_module_image_t* out, size_t capacity);

/* The image of one format, or NULL when the build has none. */
const accel_module_image_t* accel_kernels_image(accel_module_format_t format);

#ifdef __cplusplus
}
#endif

#endif
