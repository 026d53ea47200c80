// CUDA_VISIBLE_DEVICES, resolved the way the CUDA runtime does, without the
// driver: which physical GPUs (in enumeration order) stay visible. Pure code
// (no CUDA, no host services), shared with the fake driver and unit-tested.
//
// Rules:
//  - unset (NULL): every physical device, in order;
//  - otherwise a comma-separated list; each entry, with surrounding blanks
//    trimmed, is
//      * a decimal index ("1", or "1gpu": the leading digits count, as with
//        strtoul), valid when < the number of physical devices,
//      * "GPU-<prefix>": the one device whose UUID string starts with it
//        (case-insensitive); no match or an ambiguous prefix is invalid,
//      * "MIG-...": needs the driver (resolved = false);
//      * anything else (empty, negative, text) is invalid;
//  - parsing stops at the first invalid entry: the entries before it are the
//    visible devices ("0,7,1" with 2 GPUs shows only device 0);
//  - a device listed twice makes the whole list empty (no devices), as the
//    CUDA runtime does;
//  - the empty string shows no device.
#pragma once

#include <string>
#include <vector>

namespace accel_cuda {

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

}  // namespace accel_cuda
