/* accel_sim_kernel.h: the sim backend's kernel format
 * (ACCEL_MODULE_FORMAT_SIM_HOST).
 *
 * A sim module is a host shared object (ELF, the machine's own
 * architecture), built with any C or C++ compiler:
 *
 *     cc -shared -fPIC -O2 -o kernels.so kernels.c
 *
 * and handed to accel_module_load as bytes; sim loads it from memory
 * (memfd_create + dlopen), never from a path. It exports one symbol,
 * ACCEL_SIM_KERNEL_TABLE_NAME, an accel_sim_kernel_table_t that lists its
 * kernels with their parameters, so sim checks launches like a GPU
 * backend that knows its kernels' signatures.
 *
 * A sim kernel is a work-group function, the way PoCL and other CPU
 * OpenCL implementations compile kernels: sim's stream worker calls it once
 * per block of the grid, in no promised order, and it loops over the
 * block's threads itself. A barrier is the end of one such loop and the
 * start of the next. Local memory lives for the call.
 *
 * sim refuses (ACCEL_ERROR_BUILD_FAILED, the reason in the build log) a
 * table of another abi_version, kernels NULL with count > 0, a kernel
 * without a name, with a name of more than 4096 bytes or the name of an
 * earlier one, without fn, with more than 1024 parameters or params NULL
 * with num_params > 0, and a parameter of another kind, size or type than
 * below.
 *
 * C99-clean; nothing else from accel is needed to build a sim module. */
#ifndef ACCEL_ACCEL_SIM_KERNEL_H
#define ACCEL_ACCEL_SIM_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this format. Version 2 added accel_sim_kernel_param_t's
 * `type`; sim still reads version 1 tables (parameters of two members,
 * kind and size, types unknown) and refuses any other. */
#define ACCEL_SIM_KERNEL_ABI_VERSION 2u
/* The exported symbol's name. */
#define ACCEL_SIM_KERNEL_TABLE_NAME "accel_sim_kernels"

/* Where one call runs: the launch's shape and this block's place in it. */
typedef struct accel_sim_kernel_context {
  uint32_t grid[3];     /* blocks per dimension (accel_launch_config_t.grid) */
  uint32_t block[3];    /* threads per block (accel_launch_config_t.block) */
  uint32_t group_id[3]; /* this block's index, each < grid[d] */
  void* shared;         /* config.shared_bytes of dynamic shared memory, or NULL */
  size_t shared_bytes;
} accel_sim_kernel_context_t;

/* args[i] points at argument i: at the value's bytes (VALUE), at a void*
 * holding the device pointer (DEVICE_POINTER), at a void* holding this
 * block's local memory (LOCAL_MEMORY, 16-byte aligned). Valid for the call. */
typedef void (*accel_sim_kernel_fn)(const accel_sim_kernel_context_t* context,
                                    void* const* args);

/* One parameter: an accel_kernel_arg_kind_t and, for a VALUE, its size in
 * bytes, 1 to 32764 (CUDA's limit on a kernel's parameters); 0 for the
 * other kinds. `type` says what a VALUE is, as a GPU backend learns it from
 * the kernel's binary: an accel_kernel_arg_type_t (0 unknown, 1 integer, 2
 * floating-point of 2, 4 or 8 bytes, 4 struct), so sim refuses an
 * integer's bits for a float parameter as those backends do; 0 or 3
 * (pointer) for the other kinds, optionally OR'd with 0x100 (the kernel
 * only reads through the pointer: const, as ACCEL_PLUGIN_PARAM_READ_ONLY). */
typedef struct accel_sim_kernel_param {
  uint32_t kind;
  uint32_t size;
  uint32_t type;
} accel_sim_kernel_param_t;

typedef struct accel_sim_kernel {
  const char* name;                      /* what accel_module_get_kernel looks for */
  accel_sim_kernel_fn fn;
  uint32_t num_params;
  const accel_sim_kernel_param_t* params; /* num_params entries */
  uint32_t max_threads_per_block;        /* 0: the device's limit (1024 on sim, which also
                                            caps larger values) */
} accel_sim_kernel_t;

typedef struct accel_sim_kernel_table {
  uint32_t abi_version; /* ACCEL_SIM_KERNEL_ABI_VERSION */
  uint32_t count;
  const accel_sim_kernel_t* kernels;
} accel_sim_kernel_table_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ACCEL_ACCEL_SIM_KERNEL_H */
