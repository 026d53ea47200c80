// ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES,
// resolved the way the ROCm stack applies them, without the runtime: which
// physical GPUs (KFD topology order) stay visible, and in which order. Pure
// code (no HIP, no host services), unit-tested against the vendor's rules.
// The count the plugin reports must equal what hipGetDeviceCount will say,
// so every rule below is the runtime's, odd ones included.
//
// Layer 1, ROCr (ROCR-Runtime, core/runtime/amd_filter_device.cpp, RvdFilter,
// applied by amd_topology.cpp BuildTopology):
//  - unset: every GPU (a KFD node with simd_count != 0), in node order;
//  - set but empty: no GPU;
//  - otherwise the value is cut at commas like getline() does (a trailing
//    comma adds no entry); each entry is upper-cased and trimmed of
//    classic-locale white space;
//  - only the first N entries are read (N = number of GPUs);
//  - an empty entry among those makes ROCr's initialisation throw, so
//    hsa_init fails and HIP sees no GPU at all;
//  - an entry starting with 'G' is a UUID: 5 to 20 characters that must be
//    the prefix of exactly one GPU's "GPU-<unique_id as 16 hex digits>"
//    (case-insensitive; a GPU without unique_id matches nothing);
//  - any other entry is read by strtol(base 0): "0x10" is 16, "010" is 8,
//    "+1" is 1, "-0" is 0; the whole entry must be consumed ("1a", "08",
//    "1 2" are invalid); the long is then stored in an int32_t, so it wraps
//    ("4294967297" is 1, "-1" stays negative);
//  - the list stops at the first entry that is invalid, negative, >= N, or
//    names a GPU already listed ("0,0,1" shows GPU 0 only).
//
// Layer 2, HIP (ROCclr, device/rocm/rocdevice.cpp Device::init; values read
// by utils/flags.cpp Flag::init), over the GPUs ROCr left, in ROCr's order:
//  - HIP reads HIP_VISIBLE_DEVICES when its value is non-empty, else
//    CUDA_VISIBLE_DEVICES; both pass through removeQuotes (a value wholly
//    inside double quotes, blanks around allowed, loses them);
//  - HIP >= 5.5 turns a set-but-empty variable into " " (so
//    HIP_VISIBLE_DEVICES= hides every GPU and wins over
//    CUDA_VISIBLE_DEVICES); older HIP skipped empty variables (unset);
//  - the value is cut at commas; a trailing comma adds no entry; nothing is
//    trimmed;
//  - an entry is valid when it is exactly the decimal form of an index below
//    the number of GPUs ("1", not " 1", "01", "+1" or "1a");
//  - HIP >= 6.2: an entry containing "GPU-" names the first GPU whose ROCr
//    UUID ("GPU-" + 16 lower-case hex digits, "GPU-XX" when unknown)
//    contains it, case-sensitively (so "GPU-" alone is the first GPU and an
//    ambiguous prefix is the first match); no match is invalid. Older HIP:
//    such an entry is invalid;
//  - the list stops at the first invalid entry; an entry naming a GPU
//    already listed is skipped and the list goes on ("0,0,1" shows 0 and 1).
#pragma once

#include <string>
#include <vector>

namespace accel::hip {

// Which HIP release's behaviour applies (the ROCr rules have not changed
// since ROCm 3.x).
struct HipRules {
  bool empty_hides = true;  // HIP >= 5.5: a set-but-empty variable hides every GPU
  bool uuid_tokens = true;  // HIP >= 6.2: "GPU-..." entries in HIP_VISIBLE_DEVICES
};

// major/minor < 0: unknown. Unknown minor: the newest release of that major
// (5 -> 5.7); unknown major: the newest rules.
HipRules hip_rules_for_version(int major, int minor);

// The rules of the HIP runtime whose library file is `path` (symlinks
// already resolved): the version comes from the file name,
// "libamdhip64.so.6.2.41134" -> 6.2, "libamdhip64.so.5" -> 5.x; a name
// without one ("libamdhip64.so") gets the newest rules. Only the file name
// can be asked: hipRuntimeGetVersion initialises the runtime.
HipRules hip_rules_for_library(const std::string& path);

struct VisibleDevices {
  std::vector<int> physical;  // visible ordinal i -> physical GPU physical[i]
  std::string note;           // which variables applied and where a list stopped; "" when
                              // no variable is set
};

// `rocr`, `hip`, `cuda`: the variables' values as getenv() gives them, NULL
// when unset. `uuids`: one entry per physical GPU, "GPU-<16 hex digits>" or
// "" when unknown; its size is the number of physical GPUs.
VisibleDevices resolve_visible_devices(const char* rocr, const char* hip, const char* cuda,
                                       const std::vector<std::string>& uuids,
                                       const HipRules& rules = {});

}  // namespace accel::hip
