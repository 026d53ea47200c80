/* The kernels accelctl selftest, the tests and examples/saxpy run, in
 * OpenCL C. Every other language in this folder has the same kernels with
 * the same parameters (kernels/README.md), so one launch works on every
 * backend. Built from source by the opencl backend and, with clang-15 and
 * llvm-spirv-15, turned into SPIR-V for Level Zero. */

/* c[i] = a[i] + b[i] for i < n. */
__kernel void vector_add(__global const float* a, __global const float* b, __global float* c,
                         uint n) {
  size_t i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}

/* y[i] = alpha * x[i] + y[i] for i < n. */
__kernel void saxpy(float alpha, __global const float* x, __global float* y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = alpha * x[i] + y[i];
}

/* partial[g] = the sum of in[i] over block g's threads (i < n), through
 * local memory of one float per thread. The block size must be a power of
 * two. */
__kernel void reduce_sum(__global const float* in, __global float* partial,
                         __local float* scratch, uint n) {
  size_t lid = get_local_id(0);
  size_t i = get_global_id(0);
  scratch[lid] = i < n ? in[i] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}

/* out[(z * height + y) * width + x] = x | y << 10 | z << 20 for the global
 * index (x, y, z) of every thread: checks 1-D, 2-D and 3-D grids. */
__kernel void index_3d(__global uint* out, uint width, uint height) {
  uint x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  out[(z * height + y) * width + x] = x | (y << 10) | (z << 20);
}

/* Does nothing: launch overhead. */
__kernel void empty(void) {}
