// Host implementations of the kernels the fake driver can run, by entry
// name: those of kernels/accel_kernels.cu (vector_add, saxpy, reduce_sum,
// index_3d, empty), with the semantics written there. A launch runs every
// thread of every block in turn, a block's threads phase by phase between
// barriers (__syncthreads), so grid shapes, argument passing and dynamic
// shared memory are all checked by the results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fake_cuda {

// One launch as the kernel sees it: the shape, the parameter buffer laid
// out as the PTX declares it (`offsets`), the dynamic shared memory size.
struct KernelLaunch {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  std::vector<unsigned char> params;
  std::vector<size_t> offsets;
  size_t dynamic_shared = 0;
};

// A memory range a launch will touch: what the driver must let the kernel
// reach (fake_cuda::kernel_can_access) before it runs.
struct Touched {
  uintptr_t address;
  size_t bytes;
  const char* what;  // the parameter's name in accel_kernels.cu
};

struct HostKernel {
  const char* name;
  std::vector<size_t> param_sizes;  // the signature the implementation reads
  // The global ranges the launch reads or writes, and whether the dynamic
  // shared memory suffices (false: the kernel would index past it).
  bool (*footprint)(const KernelLaunch&, std::vector<Touched>&);
  void (*run)(const KernelLaunch&);
};

// The implementation of `name` for a PTX entry whose parameter sizes are
// `sizes`, or NULL: a kernel the fake cannot run.
const HostKernel* find_host_kernel(const std::string& name, const std::vector<size_t>& sizes);

}  // namespace fake_cuda
