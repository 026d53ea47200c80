// Host implementations of the shared kernels (fake_hip_kernels.hpp), each
// the CUDA/HIP source of kernels/accel_kernels.cu run thread by thread:
//
//   vector_add(const float* a, const float* b, float* c, uint32_t n)
//   saxpy(float alpha, const float* x, float* y, uint32_t n)
//   reduce_sum(const float* in, float* partial, uint32_t n)   extern __shared__ float[]
//   index_3d(uint32_t* out, uint32_t width, uint32_t height)
//   empty()
#include "fake_hip_kernels.hpp"

#include <algorithm>
#include <cstring>

namespace fake_hip {

namespace {

template <typename T>
T arg(const Launch& l, size_t i) {
  T v;
  std::memcpy(&v, &l.args[i], sizeof v);
  return v;
}

// f(block index, thread index) for every thread, block by block.
template <typename F>
void each_thread(const Launch& l, F f) {
  for (uint32_t bz = 0; bz < l.grid.z; ++bz)
    for (uint32_t by = 0; by < l.grid.y; ++by)
      for (uint32_t bx = 0; bx < l.grid.x; ++bx)
        for (uint32_t tz = 0; tz < l.block.z; ++tz)
          for (uint32_t ty = 0; ty < l.block.y; ++ty)
            for (uint32_t tx = 0; tx < l.block.x; ++tx) f(Dim3{bx, by, bz}, Dim3{tx, ty, tz});
}

// Threads of one block, for the phases between barriers.
template <typename F>
void block_threads(const Launch& l, F f) {
  for (uint32_t tz = 0; tz < l.block.z; ++tz)
    for (uint32_t ty = 0; ty < l.block.y; ++ty)
      for (uint32_t tx = 0; tx < l.block.x; ++tx) f(Dim3{tx, ty, tz});
}

// Elements touched by i = blockIdx.x * blockDim.x + threadIdx.x, i < n.
uint64_t linear_count(const Launch& l, uint32_t n) {
  const uint64_t threads = uint64_t{l.grid.x} * l.block.x;
  return threads < n ? threads : n;
}

// --- vector_add ---------------------------------------------------------------

bool vector_add_reach(const Launch& l, std::vector<std::pair<const void*, size_t>>& r) {
  const uint64_t count = linear_count(l, arg<uint32_t>(l, 3));
  if (count == 0) return true;
  for (size_t i = 0; i < 3; ++i) r.emplace_back(arg<const void*>(l, i), count * 4);
  return true;
}

void vector_add_run(const Launch& l) {
  const auto* a = arg<const float*>(l, 0);
  const auto* b = arg<const float*>(l, 1);
  auto* c = arg<float*>(l, 2);
  const auto n = arg<uint32_t>(l, 3);
  each_thread(l, [&](Dim3 bid, Dim3 tid) {
    const uint32_t i = bid.x * l.block.x + tid.x;
    if (i < n) c[i] = a[i] + b[i];
  });
}

// --- saxpy --------------------------------------------------------------------

bool saxpy_reach(const Launch& l, std::vector<std::pair<const void*, size_t>>& r) {
  const uint64_t count = linear_count(l, arg<uint32_t>(l, 3));
  if (count == 0) return true;
  r.emplace_back(arg<const void*>(l, 1), count * 4);
  r.emplace_back(arg<const void*>(l, 2), count * 4);
  return true;
}

void saxpy_run(const Launch& l) {
  const auto alpha = arg<float>(l, 0);
  const auto* x = arg<const float*>(l, 1);
  auto* y = arg<float*>(l, 2);
  const auto n = arg<uint32_t>(l, 3);
  each_thread(l, [&](Dim3 bid, Dim3 tid) {
    const uint32_t i = bid.x * l.block.x + tid.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
  });
}

// --- reduce_sum ---------------------------------------------------------------

bool reduce_sum_reach(const Launch& l, std::vector<std::pair<const void*, size_t>>& r) {
  const uint64_t count = linear_count(l, arg<uint32_t>(l, 2));
  if (count > 0) r.emplace_back(arg<const void*>(l, 0), count * 4);
  r.emplace_back(arg<const void*>(l, 1), uint64_t{l.grid.x} * 4);  // partial[blockIdx.x]
  return true;
}

void reduce_sum_run(const Launch& l) {
  const auto* in = arg<const float*>(l, 0);
  auto* partial = arg<float*>(l, 1);
  const auto n = arg<uint32_t>(l, 2);
  std::vector<unsigned char> lds(l.shared_bytes);
  auto load = [&](uint32_t idx) -> float {
    float v = 0.0f;
    if (uint64_t{idx} * 4 + 4 <= lds.size()) std::memcpy(&v, lds.data() + size_t{idx} * 4, 4);
    return v;
  };
  auto store = [&](uint32_t idx, float v) {
    if (uint64_t{idx} * 4 + 4 <= lds.size()) std::memcpy(lds.data() + size_t{idx} * 4, &v, 4);
  };
  for (uint32_t bz = 0; bz < l.grid.z; ++bz) {
    for (uint32_t by = 0; by < l.grid.y; ++by) {
      for (uint32_t bx = 0; bx < l.grid.x; ++bx) {
        std::fill(lds.begin(), lds.end(), 0);
        block_threads(l, [&](Dim3 tid) {
          const uint32_t i = bx * l.block.x + tid.x;
          store(tid.x, i < n ? in[i] : 0.0f);
        });
        // __syncthreads() between the phases.
        for (uint32_t s = l.block.x / 2; s > 0; s /= 2) {
          block_threads(l, [&](Dim3 tid) {
            if (tid.x < s) store(tid.x, load(tid.x) + load(tid.x + s));
          });
        }
        block_threads(l, [&](Dim3 tid) {
          if (tid.x == 0) partial[bx] = load(0);
        });
      }
    }
  }
}

// --- index_3d -----------------------------------------------------------------

// out[(z * height + y) * width + x] for every thread: the largest index is
// the last thread's (the terms only grow); it must not wrap in 32 bits.
bool index_3d_reach(const Launch& l, std::vector<std::pair<const void*, size_t>>& r) {
  const uint64_t w = arg<uint32_t>(l, 1), h = arg<uint32_t>(l, 2);
  const uint64_t x = uint64_t{l.grid.x} * l.block.x - 1;
  const uint64_t y = uint64_t{l.grid.y} * l.block.y - 1;
  const uint64_t z = uint64_t{l.grid.z} * l.block.z - 1;
  const unsigned __int128 last = (static_cast<unsigned __int128>(z) * h + y) * w + x;
  if (last > UINT32_MAX) return false;
  r.emplace_back(arg<const void*>(l, 0), (static_cast<size_t>(last) + 1) * 4);
  return true;
}

void index_3d_run(const Launch& l) {
  auto* out = arg<uint32_t*>(l, 0);
  const auto width = arg<uint32_t>(l, 1), height = arg<uint32_t>(l, 2);
  each_thread(l, [&](Dim3 bid, Dim3 tid) {
    const uint32_t x = bid.x * l.block.x + tid.x;
    const uint32_t y = bid.y * l.block.y + tid.y;
    const uint32_t z = bid.z * l.block.z + tid.z;
    out[(z * height + y) * width + x] = x | (y << 10) | (z << 20);
  });
}

// --- empty --------------------------------------------------------------------

bool empty_reach(const Launch&, std::vector<std::pair<const void*, size_t>>&) { return true; }
void empty_run(const Launch&) {}

const KnownKernel kKernels[] = {
    {"vector_add", {8, 8, 8, 4}, vector_add_reach, vector_add_run},
    {"saxpy", {4, 8, 8, 4}, saxpy_reach, saxpy_run},
    {"reduce_sum", {8, 8, 4}, reduce_sum_reach, reduce_sum_run},
    {"index_3d", {8, 4, 4}, index_3d_reach, index_3d_run},
    {"empty", {}, empty_reach, empty_run},
};

}  // namespace

const KnownKernel* find_known_kernel(const std::string& name) {
  for (const auto& k : kKernels)
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace fake_hip
