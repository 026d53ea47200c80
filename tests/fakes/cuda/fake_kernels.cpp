// Host implementations of kernels/accel_kernels.cu's kernels for the fake
// driver (fake_kernels.hpp). Index arithmetic is 32-bit unsigned as in the
// CUDA source (it wraps the same way); saxpy is one fused multiply-add, as
// nvcc emits it (fma.rn.f32), so results match a GPU's bit for bit.
#include "fake_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fake_cuda {

namespace {

template <typename T>
T param(const KernelLaunch& l, size_t k) {
  T v{};
  std::memcpy(&v, l.params.data() + l.offsets[k], sizeof v);
  return v;
}

template <typename T>
T* pointer(const KernelLaunch& l, size_t k) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(param<uint64_t>(l, k)));
}

// Threads along x over the whole grid (at most 2^32: the kernels' index is
// a uint32_t).
uint64_t threads_x(const KernelLaunch& l) {
  return std::min<uint64_t>(uint64_t{l.grid[0]} * l.block[0], uint64_t{1} << 32);
}

// Calls fn(blockIdx, threadIdx) for every thread of every block, blocks in
// order, a block's threads x fastest.
template <typename Fn>
void each_thread(const KernelLaunch& l, Fn fn) {
  for (uint32_t bz = 0; bz < l.grid[2]; ++bz)
    for (uint32_t by = 0; by < l.grid[1]; ++by)
      for (uint32_t bx = 0; bx < l.grid[0]; ++bx)
        for (uint32_t tz = 0; tz < l.block[2]; ++tz)
          for (uint32_t ty = 0; ty < l.block[1]; ++ty)
            for (uint32_t tx = 0; tx < l.block[0]; ++tx) {
              const uint32_t b[3] = {bx, by, bz};
              const uint32_t t[3] = {tx, ty, tz};
              fn(b, t);
            }
}

// Calls fn(threadIdx) for every thread of one block: one phase between two
// barriers.
template <typename Fn>
void block_phase(const KernelLaunch& l, Fn fn) {
  for (uint32_t tz = 0; tz < l.block[2]; ++tz)
    for (uint32_t ty = 0; ty < l.block[1]; ++ty)
      for (uint32_t tx = 0; tx < l.block[0]; ++tx) {
        const uint32_t t[3] = {tx, ty, tz};
        fn(t);
      }
}

// --- vector_add(const float* a, const float* b, float* c, uint32_t n) ----------

bool vector_add_footprint(const KernelLaunch& l, std::vector<Touched>& out) {
  const uint64_t m = std::min<uint64_t>(param<uint32_t>(l, 3), threads_x(l)) * sizeof(float);
  out.push_back({param<uint64_t>(l, 0), m, "a"});
  out.push_back({param<uint64_t>(l, 1), m, "b"});
  out.push_back({param<uint64_t>(l, 2), m, "c"});
  return true;
}

void vector_add_run(const KernelLaunch& l) {
  const float* a = pointer<const float>(l, 0);
  const float* b = pointer<const float>(l, 1);
  float* c = pointer<float>(l, 2);
  const uint32_t n = param<uint32_t>(l, 3);
  each_thread(l, [&](const uint32_t* bi, const uint32_t* ti) {
    const uint32_t i = bi[0] * l.block[0] + ti[0];
    if (i < n) c[i] = a[i] + b[i];
  });
}

// --- saxpy(float alpha, const float* x, float* y, uint32_t n) -----------------

bool saxpy_footprint(const KernelLaunch& l, std::vector<Touched>& out) {
  const uint64_t m = std::min<uint64_t>(param<uint32_t>(l, 3), threads_x(l)) * sizeof(float);
  out.push_back({param<uint64_t>(l, 1), m, "x"});
  out.push_back({param<uint64_t>(l, 2), m, "y"});
  return true;
}

void saxpy_run(const KernelLaunch& l) {
  const float alpha = param<float>(l, 0);
  const float* x = pointer<const float>(l, 1);
  float* y = pointer<float>(l, 2);
  const uint32_t n = param<uint32_t>(l, 3);
  each_thread(l, [&](const uint32_t* bi, const uint32_t* ti) {
    const uint32_t i = bi[0] * l.block[0] + ti[0];
    if (i < n) y[i] = std::fmaf(x[i], alpha, y[i]);
  });
}

// --- reduce_sum(const float* in, float* partial, uint32_t n), extern
//     __shared__ float scratch[] (one float per thread along x) ------------------

bool reduce_sum_footprint(const KernelLaunch& l, std::vector<Touched>& out) {
  const uint64_t m = std::min<uint64_t>(param<uint32_t>(l, 2), threads_x(l)) * sizeof(float);
  out.push_back({param<uint64_t>(l, 0), m, "in"});
  out.push_back({param<uint64_t>(l, 1), uint64_t{l.grid[0]} * sizeof(float), "partial"});
  return l.dynamic_shared >= uint64_t{l.block[0]} * sizeof(float);
}

void reduce_sum_run(const KernelLaunch& l) {
  const float* in = pointer<const float>(l, 0);
  float* partial = pointer<float>(l, 1);
  const uint32_t n = param<uint32_t>(l, 2);
  std::vector<float> scratch(l.block[0]);  // this block's dynamic shared memory
  for (uint32_t bz = 0; bz < l.grid[2]; ++bz)
    for (uint32_t by = 0; by < l.grid[1]; ++by)
      for (uint32_t bx = 0; bx < l.grid[0]; ++bx) {
        block_phase(l, [&](const uint32_t* t) {
          const uint32_t i = bx * l.block[0] + t[0];
          scratch[t[0]] = i < n ? in[i] : 0.0f;
        });  // __syncthreads()
        for (uint32_t s = l.block[0] / 2; s > 0; s /= 2) {
          block_phase(l, [&](const uint32_t* t) {
            if (t[0] < s) scratch[t[0]] += scratch[t[0] + s];
          });  // __syncthreads()
        }
        block_phase(l, [&](const uint32_t* t) {
          if (t[0] == 0) partial[bx] = scratch[0];
        });
      }
}

// --- index_3d(uint32_t* out, uint32_t width, uint32_t height) -----------------

bool index_3d_footprint(const KernelLaunch& l, std::vector<Touched>& out) {
  const uint64_t w = param<uint32_t>(l, 1), h = param<uint32_t>(l, 2);
  const uint64_t x = uint64_t{l.grid[0]} * l.block[0] - 1;
  const uint64_t y = uint64_t{l.grid[1]} * l.block[1] - 1;
  const uint64_t z = uint64_t{l.grid[2]} * l.block[2] - 1;
  // The largest index any thread writes (x, y and z are each at their
  // largest together), as a 64-bit count: past 2^32 the kernel's own index
  // would wrap, which no buffer can hold.
  const unsigned __int128 last = (static_cast<unsigned __int128>(z) * h + y) * w + x;
  const unsigned __int128 limit = UINT64_MAX / sizeof(uint32_t);
  const uint64_t count = last >= limit ? static_cast<uint64_t>(limit) : uint64_t(last) + 1;
  out.push_back({param<uint64_t>(l, 0), count * sizeof(uint32_t), "out"});
  return true;
}

void index_3d_run(const KernelLaunch& l) {
  uint32_t* out = pointer<uint32_t>(l, 0);
  const uint32_t width = param<uint32_t>(l, 1), height = param<uint32_t>(l, 2);
  each_thread(l, [&](const uint32_t* b, const uint32_t* t) {
    const uint32_t x = b[0] * l.block[0] + t[0];
    const uint32_t y = b[1] * l.block[1] + t[1];
    const uint32_t z = b[2] * l.block[2] + t[2];
    out[(z * height + y) * width + x] = x | (y << 10) | (z << 20);
  });
}

// --- empty() ----------------------------------------------------------------

bool empty_footprint(const KernelLaunch&, std::vector<Touched>&) { return true; }
void empty_run(const KernelLaunch&) {}

const HostKernel kKernels[] = {
    {"vector_add", {8, 8, 8, 4}, vector_add_footprint, vector_add_run},
    {"saxpy", {4, 8, 8, 4}, saxpy_footprint, saxpy_run},
    {"reduce_sum", {8, 8, 4}, reduce_sum_footprint, reduce_sum_run},
    {"index_3d", {8, 4, 4}, index_3d_footprint, index_3d_run},
    {"empty", {}, empty_footprint, empty_run},
};

}  // namespace

const HostKernel* find_host_kernel(const std::string& name, const std::vector<size_t>& sizes) {
  for (const HostKernel& k : kKernels)
    if (name == k.name && sizes == k.param_sizes) return &k;
  return nullptr;
}

}  // namespace fake_cuda
