// The NVIDIA kernel driver's GPU list under /proc/driver/nvidia/gpus: one
// directory per GPU (named by PCI bus id), each with an `information` file
// holding a "GPU UUID:" line. Reading it creates no CUDA context. Pure code,
// unit-tested against a directory tree made by the test.
#pragma once

#include <string>
#include <vector>

namespace accel::cuda {

struct ProcGpus {
  int count = 0;
  std::vector<std::string> uuids;  // in directory (PCI) order; empty if any is unknown
};

// false when `root` does not exist or cannot be read (no NVIDIA kernel driver).
bool read_proc_gpus(const std::string& root, ProcGpus& out);

}  // namespace accel::cuda
