// ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES,
// resolved the way the ROCm stack applies them, without the runtime: which
// physical GPUs (KFD topology order) stay visible, and in which order. Pure
// code (no HIP, no host services), shared with the fake runtime and
// unit-tested.
//
// Two layers, as in ROCm:
//  1. ROCR_VISIBLE_DEVICES (the ROCr/HSA runtime) filters the physical GPUs.
//     Unset: all of them, in order. Set: a comma-separated list; each entry,
//     blanks around it trimmed, is a decimal index (< number of GPUs) or a
//     UUID "GPU-<hex>" (compared case-insensitively with the GPU's whole UUID
//     string). Set but empty (or blank): no GPU.
//  2. HIP_VISIBLE_DEVICES (the HIP runtime) then picks from what ROCr left,
//     by index. HIP reads CUDA_VISIBLE_DEVICES instead when
//     HIP_VISIBLE_DEVICES is unset or empty (HIP treats an empty value as
//     unset); an empty CUDA_VISIBLE_DEVICES is unset too. Entries are
//     decimal indices only (no UUIDs).
// In both lists parsing stops at the first invalid entry (empty, not a
// number, negative, out of range, unknown UUID): the entries before it are
// the visible devices ("0,7,1" with 2 GPUs shows device 0 only). An entry
// naming a device already listed is skipped.
#pragma once

#include <string>
#include <vector>

namespace accel_hip {

struct VisibleDevices {
  std::vector<int> physical;  // visible ordinal i -> physical GPU physical[i]
  std::string note;           // which variables applied and where a list stopped; "" when
                              // no variable is set
};

// `rocr`, `hip`, `cuda`: the variables' values, NULL when unset.
// `uuids`: one entry per physical GPU, "GPU-..." or "" when unknown; its size
// is the number of physical GPUs.
VisibleDevices resolve_visible_devices(const char* rocr, const char* hip, const char* cuda,
                                       const std::vector<std::string>& uuids);

}  // namespace accel_hip
