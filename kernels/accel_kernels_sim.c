/* The kernels of accel_kernels.cl in the sim host format
 * (include/accel/accel_sim_kernel.h): work-group functions that loop over
 * their block's threads; a barrier ends one loop. Compiled by the build's C
 * compiler into a shared object that the tests hand to sim as bytes. */
#include <stdint.h>

#include "accel/accel_sim_kernel.h"

#define ARG(type, i) (*(type const*)args[i])
#define FOR_THREADS(ctx, t) for (uint32_t t = 0; t < (ctx)->block[0]; ++t)

static uint32_t global_x(const accel_sim_kernel_context_t* ctx, uint32_t t) {
  return ctx->group_id[0] * ctx->block[0] + t;
}

static void vector_add(const accel_sim_kernel_context_t* ctx, void* const* args) {
  const float* a = ARG(const float*, 0);
  const float* b = ARG(const float*, 1);
  float* c = ARG(float*, 2);
  uint32_t n = ARG(uint32_t, 3);
  FOR_THREADS(ctx, t) {
    uint32_t i = global_x(ctx, t);
    if (i < n) c[i] = a[i] + b[i];
  }
}

static void saxpy(const accel_sim_kernel_context_t* ctx, void* const* args) {
  float alpha = ARG(float, 0);
  const float* x = ARG(const float*, 1);
  float* y = ARG(float*, 2);
  uint32_t n = ARG(uint32_t, 3);
  FOR_THREADS(ctx, t) {
    uint32_t i = global_x(ctx, t);
    if (i < n) y[i] = alpha * x[i] + y[i];
  }
}

static void reduce_sum(const accel_sim_kernel_context_t* ctx, void* const* args) {
  const float* in = ARG(const float*, 0);
  float* partial = ARG(float*, 1);
  float* scratch = ARG(float*, 2);
  uint32_t n = ARG(uint32_t, 3);
  FOR_THREADS(ctx, t) {
    uint32_t i = global_x(ctx, t);
    scratch[t] = i < n ? in[i] : 0.0f;
  }
  /* barrier */
  for (uint32_t s = ctx->block[0] / 2; s > 0; s /= 2) {
    FOR_THREADS(ctx, t) {
      if (t < s) scratch[t] += scratch[t + s];
    }
    /* barrier */
  }
  partial[ctx->group_id[0]] = scratch[0];
}

static void index_3d(const accel_sim_kernel_context_t* ctx, void* const* args) {
  uint32_t* out = ARG(uint32_t*, 0);
  uint32_t width = ARG(uint32_t, 1);
  uint32_t height = ARG(uint32_t, 2);
  for (uint32_t tz = 0; tz < ctx->block[2]; ++tz) {
    for (uint32_t ty = 0; ty < ctx->block[1]; ++ty) {
      for (uint32_t tx = 0; tx < ctx->block[0]; ++tx) {
        uint32_t x = ctx->group_id[0] * ctx->block[0] + tx;
        uint32_t y = ctx->group_id[1] * ctx->block[1] + ty;
        uint32_t z = ctx->group_id[2] * ctx->block[2] + tz;
        out[(z * height + y) * width + x] = x | (y << 10) | (z << 20);
      }
    }
  }
}

static void empty(const accel_sim_kernel_context_t* ctx, void* const* args) {
  (void)ctx;
  (void)args;
}

/* {kind, size, type}: kinds are accel_kernel_arg_kind_t (0 value, 1 device
 * pointer, 2 local memory), types accel_kernel_arg_type_t (1 integer, 2
 * float, 3 pointer, OR'd with READ_ONLY for a const pointer). */
#define READ_ONLY 0x100u
static const accel_sim_kernel_param_t kVectorAdd[] = {
    {1, 0, 3 | READ_ONLY}, {1, 0, 3 | READ_ONLY}, {1, 0, 3}, {0, 4, 1}};
static const accel_sim_kernel_param_t kSaxpy[] = {
    {0, 4, 2}, {1, 0, 3 | READ_ONLY}, {1, 0, 3}, {0, 4, 1}};
static const accel_sim_kernel_param_t kReduceSum[] = {
    {1, 0, 3 | READ_ONLY}, {1, 0, 3}, {2, 0, 0}, {0, 4, 1}};
static const accel_sim_kernel_param_t kIndex3d[] = {{1, 0, 3}, {0, 4, 1}, {0, 4, 1}};

static const accel_sim_kernel_t kKernels[] = {
    {"vector_add", vector_add, 4, kVectorAdd, 0},
    {"saxpy", saxpy, 4, kSaxpy, 0},
    {"reduce_sum", reduce_sum, 4, kReduceSum, 0},
    {"index_3d", index_3d, 3, kIndex3d, 0},
    {"empty", empty, 0, 0, 0},
};

__attribute__((visibility("default"))) const accel_sim_kernel_table_t accel_sim_kernels = {
    ACCEL_SIM_KERNEL_ABI_VERSION, sizeof kKernels / sizeof kKernels[0], kKernels};
