// CUDA_VISIBLE_DEVICES, resolved the way the CUDA driver does, without the
// driver: which physical GPUs (in enumeration order) stay visible. Pure code
// (no CUDA, no host services), unit-tested. The fake driver in tests/fakes
// has its own implementation, so the two are checked against each other.
//
// Rules (CUDA C++ Programming Guide, "CUDA Environment Variables", unless
// marked: the driver's undocumented behaviour, as PyTorch's
// torch/cuda/__init__.py _parse_visible_devices records it):
//  - unset (NULL): every physical device, in order;
//  - otherwise a comma-separated sequence of identifiers, enumerated in the
//    sequence's order; each entry, with surrounding blanks trimmed (driver),
//    is
//      * a decimal index ("1", or "1gpu": the leading digits count, as with
//        strtoul (driver)), valid when < the number of physical devices,
//      * "GPU-<prefix>": the one device whose UUID string starts with it;
//        no match or a prefix several UUIDs share is invalid (compared
//        case-insensitively: not documented, NVML prints lower case),
//      * "MIG-...": a MIG instance, which only the driver can resolve
//        (resolved = false);
//      * anything else (empty, negative, signed, text) is invalid;
//  - parsing stops at the first invalid entry: the entries before it are the
//    visible devices ("0,2,-1,1" shows devices 0 and 2);
//  - a device listed twice, by index or UUID, makes the whole list empty (no
//    devices) (driver);
//  - the empty string shows no device (driver).
#pragma once

#include <string>
#include <vector>

namespace accel::cuda {

struct VisibleDevices {
  bool resolved = true;       // false: only the driver can tell (MIG entries,
                              // or GPU- entries when `uuids` is empty)
  std::vector<int> physical;  // visible ordinal i -> physical index physical[i]
  std::string note;           // why the list stopped early, "" when it did not
};

// `value`: the variable's value or NULL when unset. `physical_count`: GPUs
// the system has. `uuids`: their "GPU-xxxxxxxx-..." strings in the same
// order, or empty when unknown.
VisibleDevices resolve_visible_devices(const char* value, int physical_count,
                                       const std::vector<std::string>& uuids);

}  // namespace accel::cuda
