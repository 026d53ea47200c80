/* Sim modules the sim suite (sim_modules_test.cpp) needs besides the shared
 * kernels of kernels/accel_kernels_sim.c: one build of this file per
 * variant, each compiled by the build's C compiler into a shared object and
 * embedded as bytes (tests/backends/sim/meson.build), so every image the
 * suite hands to sim comes from a real compiler.
 *
 *   SIM_TEST_VALID        extra kernels: a per-kernel block limit, a struct
 *                         value, the local memory layout
 *   SIM_TEST_NO_TABLE     a shared object without accel_sim_kernels
 *   SIM_TEST_UNRESOLVED   references a function nobody defines: dlopen with
 *                         RTLD_NOW fails
 *   SIM_TEST_BAD_VERSION  a table of abi_version 99
 *   SIM_TEST_BAD_KIND     a parameter of kind 7
 *   SIM_TEST_BAD_TYPE     a device pointer parameter of type 1 (integer)
 *   SIM_TEST_VERSION_1    a table of format version 1: parameters without
 *                         a type */
#include <stdint.h>
#include <string.h>

#include "accel/accel_sim_kernel.h"

#define EXPORT __attribute__((visibility("default")))
#define ARG(type, i) (*(type const*)args[i])

#if defined(SIM_TEST_NO_TABLE)

/* Something exported, so the object is an ordinary library, just not a sim
 * module. */
EXPORT int accel_sim_test_not_a_table(void) { return 42; }

#elif defined(SIM_TEST_UNRESOLVED)

void accel_sim_test_missing_function(void); /* defined nowhere */

static void calls_missing(const accel_sim_kernel_context_t* ctx, void* const* args) {
  (void)ctx;
  (void)args;
  accel_sim_test_missing_function();
}

static const accel_sim_kernel_t kKernels[] = {{"calls_missing", calls_missing, 0, 0, 0}};
EXPORT const accel_sim_kernel_table_t accel_sim_kernels = {ACCEL_SIM_KERNEL_ABI_VERSION, 1,
                                                           kKernels};

#elif defined(SIM_TEST_VERSION_1)

/* out[0] = value: a float parameter the table cannot type. */
static void store_float(const accel_sim_kernel_context_t* ctx, void* const* args) {
  float* out = ARG(float*, 0);
  (void)ctx;
  out[0] = ARG(float, 1);
}

/* Version 1's parameter: kind and size only. */
typedef struct {
  uint32_t kind;
  uint32_t size;
} param_v1_t;

static const param_v1_t kParamsV1[] = {{1, 0}, {0, 4}};
static const accel_sim_kernel_t kKernels[] = {
    {"store_float", store_float, 2, (const accel_sim_kernel_param_t*)(const void*)kParamsV1, 0}};
EXPORT const accel_sim_kernel_table_t accel_sim_kernels = {1, 1, kKernels};

#elif defined(SIM_TEST_BAD_VERSION) || defined(SIM_TEST_BAD_KIND) || defined(SIM_TEST_BAD_TYPE)

static void nothing(const accel_sim_kernel_context_t* ctx, void* const* args) {
  (void)ctx;
  (void)args;
}

#if defined(SIM_TEST_BAD_TYPE)
static const accel_sim_kernel_param_t kParams[] = {{1, 0, 1}};
static const accel_sim_kernel_t kKernels[] = {{"bad_type", nothing, 1, kParams, 0}};
EXPORT const accel_sim_kernel_table_t accel_sim_kernels = {ACCEL_SIM_KERNEL_ABI_VERSION, 1,
                                                           kKernels};
#elif defined(SIM_TEST_BAD_KIND)
static const accel_sim_kernel_param_t kParams[] = {{1, 0, 0}, {7, 0, 0}};
static const accel_sim_kernel_t kKernels[] = {{"bad_kind", nothing, 2, kParams, 0}};
EXPORT const accel_sim_kernel_table_t accel_sim_kernels = {ACCEL_SIM_KERNEL_ABI_VERSION, 1,
                                                           kKernels};
#else
static const accel_sim_kernel_t kKernels[] = {{"nothing", nothing, 0, 0, 0}};
EXPORT const accel_sim_kernel_table_t accel_sim_kernels = {99, 1, kKernels};
#endif

#elif defined(SIM_TEST_VALID)

/* out[linear block index] = threads per block; at most 64 threads. */
static void limited(const accel_sim_kernel_context_t* ctx, void* const* args) {
  uint32_t* out = ARG(uint32_t*, 0);
  uint32_t g = (ctx->group_id[2] * ctx->grid[1] + ctx->group_id[1]) * ctx->grid[0] +
               ctx->group_id[0];
  out[g] = ctx->block[0] * ctx->block[1] * ctx->block[2];
}

/* A 12-byte struct passed by value: out[0..2] = its members. */
typedef struct {
  uint32_t a, b, c;
} triple_t;

static void struct_value(const accel_sim_kernel_context_t* ctx, void* const* args) {
  uint32_t* out = ARG(uint32_t*, 0);
  triple_t t;
  (void)ctx;
  memcpy(&t, args[1], sizeof t);
  out[0] = t.a;
  out[1] = t.b;
  out[2] = t.c;
}

/* Fills two local memory arguments (sizes passed as values) and the shared
 * memory with different bytes, then checks each still holds its own:
 * out[0..2] = 1 when local a, local b and shared are 16-byte aligned (shared:
 * 2 when NULL), out[3] = shared_bytes, out[4] = 1 when nothing overlapped.
 * Block 0 of the grid only. */
static void local_layout(const accel_sim_kernel_context_t* ctx, void* const* args) {
  uint32_t* out = ARG(uint32_t*, 0);
  unsigned char* a = ARG(unsigned char*, 1);
  uint32_t a_bytes = ARG(uint32_t, 2);
  unsigned char* b = ARG(unsigned char*, 3);
  uint32_t b_bytes = ARG(uint32_t, 4);
  unsigned char* shared = (unsigned char*)ctx->shared;
  uint32_t ok = 1;
  if (ctx->group_id[0] != 0) return;
  memset(a, 0xA1, a_bytes);
  memset(b, 0xB2, b_bytes);
  if (shared != NULL) memset(shared, 0xC3, ctx->shared_bytes);
  for (uint32_t i = 0; i < a_bytes; ++i) ok &= a[i] == 0xA1;
  for (uint32_t i = 0; i < b_bytes; ++i) ok &= b[i] == 0xB2;
  out[0] = ((uintptr_t)a % 16) == 0;
  out[1] = ((uintptr_t)b % 16) == 0;
  out[2] = shared == NULL ? 2u : ((uintptr_t)shared % 16) == 0;
  out[3] = (uint32_t)ctx->shared_bytes;
  out[4] = ok;
}

static const accel_sim_kernel_param_t kLimited[] = {{1, 0, 0}};
static const accel_sim_kernel_param_t kStructValue[] = {{1, 0, 0}, {0, sizeof(triple_t), 4}};
static const accel_sim_kernel_param_t kLocalLayout[] = {
    {1, 0, 0}, {2, 0, 0}, {0, 4, 1}, {2, 0, 0}, {0, 4, 1}};

static const accel_sim_kernel_t kKernels[] = {
    {"limited", limited, 1, kLimited, 64},
    {"struct_value", struct_value, 2, kStructValue, 0},
    {"local_layout", local_layout, 5, kLocalLayout, 0},
};
EXPORT const accel_sim_kernel_table_t accel_sim_kernels = {
    ACCEL_SIM_KERNEL_ABI_VERSION, sizeof kKernels / sizeof kKernels[0], kKernels};

#else
#error "define one SIM_TEST_* variant"
#endif
