// The kernels the fake runtime can run: host implementations of
// kernels/hip/accel_kernels.hip (the semantics of kernels/accel_kernels.cu),
// looked up by the name a code object's kernel descriptor gives. The fake
// cannot execute GPU code, so a kernel it does not know loads and is found,
// but its launch is refused (hipErrorNotSupported, the fake's limitation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fake_hip {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// One launch as the kernel sees it.
struct Launch {
  Dim3 grid, block;            // blocks, threads per block
  size_t shared_bytes = 0;     // dynamic shared memory (LDS) per block
  std::vector<uint64_t> args;  // one slot per parameter: its bytes, zero-extended
};

struct KnownKernel {
  const char* name;
  std::vector<uint32_t> params;  // each parameter's size in bytes, in order
  // The global memory the launch reads or writes, as ranges that must lie
  // in memory a kernel can reach. False when the kernel's 32-bit index
  // arithmetic would wrap for this launch.
  bool (*reach)(const Launch& l, std::vector<std::pair<const void*, size_t>>& ranges);
  // Runs every thread of every block, block by block; threads of a block
  // run phase by phase between its barriers (__syncthreads), so shared
  // memory sees what the GPU guarantees. Shared memory accesses past
  // shared_bytes read 0 and write nothing, as the LDS's bounds check does.
  void (*run)(const Launch& l);
};

// The kernel named `name`, or nullptr.
const KnownKernel* find_known_kernel(const std::string& name);

}  // namespace fake_hip
