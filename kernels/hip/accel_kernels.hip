// The kernels of accel_kernels.cl in HIP C++, compiled by hipcc into an AMD
// code object (kernels/hip/meson.build). The same code as accel_kernels.cu:
// extern "C" keeps the names unmangled, so hipModuleGetFunction finds them
// by their plain names; reduce_sum's scratch is dynamic shared memory (LDS),
// because on hip a local-memory argument takes no parameter (accel.h,
// accel_kernel_arg_t): the plugin passes its bytes as the launch's dynamic
// shared memory instead.
#include <hip/hip_runtime.h>
#include <stdint.h>

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(float alpha, const float* x, float* y, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}

extern "C" __global__ void reduce_sum(const float* in, float* partial, uint32_t n) {
  extern __shared__ float scratch[];
  uint32_t lid = threadIdx.x;
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  scratch[lid] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (uint32_t s = blockDim.x / 2; s > 0; s /= 2) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    __syncthreads();
  }
  if (lid == 0) partial[blockIdx.x] = scratch[0];
}

extern "C" __global__ void index_3d(uint32_t* out, uint32_t width, uint32_t height) {
  uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  uint32_t z = blockIdx.z * blockDim.z + threadIdx.z;
  out[(z * height + y) * width + x] = x | (y << 10) | (z << 20);
}

extern "C" __global__ void empty() {}
