/* saxpy.c - run your own kernel on whatever accelerator is current.
 *
 * The kernel (y = alpha * x + y) ships in every format this build could
 * make from kernels/: OpenCL C source always, sim's host format always,
 * PTX when nvcc was found, an AMD code object with hipcc, SPIR-V with
 * clang-15 + llvm-spirv-15. accel_module_load takes the first image the
 * device runs; one accel_launch_kernel call works on every backend. */
#include <accel/accel.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_kernels.h" /* accel_kernels_images(): the build's images */

#define CHECK(call)                                                  \
  do {                                                               \
    accel_status_t st_ = (call);                                     \
    if (st_ != ACCEL_SUCCESS) {                                      \
      fprintf(stderr, "%s: %s: %s\n", #call, accel_status_name(st_), \
              accel_last_error());                                   \
      return 1;                                                      \
    }                                                                \
  } while (0)

int main(void) {
  enum { N = 1 << 20 };
  const float alpha = 2.5f;
  accel_module_image_t images[8];
  size_t count = accel_kernels_images(images, 8);
  accel_module_t module = NULL;
  accel_kernel_t saxpy = NULL;
  accel_kernel_attributes_t attrs;
  accel_launch_config_t config;
  accel_stream_t stream = NULL;
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  void *dx = NULL, *dy = NULL;
  uint32_t n = N, block;
  double max_error = 0;
  size_t i;

  if (!accel_is_available()) { /* a normal state, not an error */
    printf("no accelerator: %s\n", accel_selection_reason());
    return 0;
  }
  if (x == NULL || y == NULL) return 1;
  memset(&attrs, 0, sizeof attrs);
  attrs.struct_size = sizeof attrs; /* always set struct_size first */
  memset(&config, 0, sizeof config);
  config.struct_size = sizeof config;
  for (i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = (float)(N - i);
  }

  /* The first image the current device takes; -1: the current device. */
  CHECK(accel_module_load(-1, images, count, NULL, &module));
  CHECK(accel_module_get_kernel(module, "saxpy", &saxpy));
  CHECK(accel_kernel_get_attributes(saxpy, &attrs));
  block = attrs.max_threads_per_block < 256
              ? (uint32_t)attrs.max_threads_per_block
              : 256;

  CHECK(accel_stream_create(-1, 0, &stream));
  CHECK(accel_malloc_async(sizeof(float) * N, stream, &dx));
  CHECK(accel_malloc_async(sizeof(float) * N, stream, &dy));
  CHECK(accel_memcpy_async(dx, x, sizeof(float) * N,
                           ACCEL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK(accel_memcpy_async(dy, y, sizeof(float) * N,
                           ACCEL_MEMCPY_HOST_TO_DEVICE, stream));
  {
    /* Arguments are passed at launch, in the kernel's parameter order. */
    accel_kernel_arg_t args[] = {
        {ACCEL_KERNEL_ARG_VALUE, sizeof alpha, &alpha},
        {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), dx},
        {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), dy},
        {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n},
    };
    config.grid.x = (n + block - 1) / block; /* blocks, as in CUDA */
    config.grid.y = config.grid.z = 1;
    config.block.x = block;
    config.block.y = config.block.z = 1;
    config.stream = stream;
    CHECK(accel_launch_kernel(saxpy, &config, args,
                              sizeof args / sizeof args[0]));
  }
  CHECK(accel_memcpy_async(y, dy, sizeof(float) * N,
                           ACCEL_MEMCPY_DEVICE_TO_HOST, stream));
  CHECK(accel_stream_synchronize(stream));

  for (i = 0; i < N; ++i) {
    double want = (double)alpha * (float)i + (float)(N - i);
    double err = fabs(y[i] - want) / (fabs(want) + 1);
    if (err > max_error) max_error = err;
  }
  printf(
      "saxpy on %s device %d: %d elements in %u blocks of %u, max relative "
      "error %.2g\n",
      accel_current_accelerator(), (int)accel_current_device_index(), N,
      (unsigned)config.grid.x, (unsigned)block, max_error);

  CHECK(accel_free_async(dx, stream));
  CHECK(accel_free_async(dy, stream));
  CHECK(accel_stream_destroy(stream));
  CHECK(accel_module_unload(module));
  free(x);
  free(y);
  return max_error < 1e-6 ? 0 : 1;
}
