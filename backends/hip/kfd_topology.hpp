// The KFD topology in sysfs (/sys/class/kfd/kfd/topology/nodes/<n>/properties):
// which nodes are GPUs, read without the HIP runtime (fork-safe). Pure code
// (no HIP, no host services), unit-tested over fabricated trees.
//
// A node is a GPU when its properties say simd_count > 0: ROCr's test
// (NumFComputeCores != 0, amd_topology.cpp BuildTopology and
// amd_filter_device.cpp BuildDeviceUuidList), whatever gfx_target_version
// says; an APU node has both CPU cores and SIMDs and counts as a GPU, as
// ROCr does. GPUs are listed in node number order, the order ROCr
// enumerates its GPU agents and numbers ROCR_VISIBLE_DEVICES indices. A GPU's UUID is
// ROCr's: "GPU-" and unique_id as 16 hex digits ("" when the kernel gives no
// unique_id).
#pragma once

#include <string>
#include <vector>

namespace accel::hip {

struct KfdGpu {
  int node = 0;
  std::string uuid;                           // "GPU-0123456789abcdef" or ""
  unsigned long long gfx_target_version = 0;  // e.g. 90010 for gfx90a
};

struct KfdTopology {
  bool readable = false;  // the nodes directory could be listed
  std::string error;      // why not (strerror text), when !readable
  int nodes = 0;          // nodes with a readable properties file
  std::vector<KfdGpu> gpus;
};

KfdTopology read_kfd_topology(const std::string& nodes_dir);

}  // namespace accel::hip
