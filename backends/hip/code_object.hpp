// Reading an AMDGPU code object (ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT) before
// the HIP runtime sees it. Pure: no HIP, no accel state; unit-tested
// (tests/backends/hip/code_object_test.cpp).
//
// Two jobs:
//  - check_code_object: hipModuleLoadData takes no size, so the runtime
//    finds the image's extent from its ELF headers. The image must be a
//    whole 64-bit little-endian ELF for EM_AMDGPU (224) whose header tables,
//    sections and segments all lie inside the `size` bytes the caller gave,
//    so the runtime never reads past them. A clang offload bundle (what
//    `hipcc --genco` writes unless given --no-gpu-bundle-output) is named as
//    such.
//  - read_kernel_metadata: HIP has no API for a kernel's parameters, but
//    the code object says them: its NT_AMDGPU_METADATA note ("AMDGPU" owner,
//    type 32; code object v3 and later) is a msgpack map whose
//    "amdhsa.kernels" list gives each kernel's ".args" with ".offset",
//    ".size" and ".value_kind" (LLVM's AMDGPUUsage, "Code Object V3
//    Metadata" and later). The runtime reads the same note to place the
//    arguments. Hidden arguments (".value_kind" "hidden_*": grid sizes,
//    offsets, printf buffers...) are the runtime's to fill and are left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace accel::hip {

// ELF facts the loader and its error messages use.
inline constexpr uint16_t kEmAmdgpu = 224;           // e_machine EM_AMDGPU
inline constexpr uint32_t kNtAmdgpuMetadata = 32;    // note type, owner "AMDGPU"
inline constexpr uint32_t kEfAmdgpuMachMask = 0xff;  // e_flags: EF_AMDGPU_MACH
inline constexpr size_t kMaxKernargBytes = 4096;     // HIP's kernel argument limit

// What the ELF header says, once check_code_object accepted the image.
struct CodeObjectHeader {
  uint8_t os_abi = 0;       // 64: ELFOSABI_AMDGPU_HSA
  uint8_t abi_version = 0;  // 1: code object v3, 2: v4, 3: v5 ...
  uint16_t type = 0;        // ET_DYN for a loadable code object
  uint32_t flags = 0;       // EF_AMDGPU_MACH (low byte), xnack/sramecc bits
};

// True when `data[0, size)` is a whole AMDGPU ELF (see above). Otherwise
// false with `error` saying what is wrong (magic, class, machine,
// truncation, with offsets). Never reads outside [data, data + size).
bool check_code_object(const void* data, size_t size, CodeObjectHeader& header, std::string& error);

// The name of EF_AMDGPU_MACH (e_flags & 0xff), e.g. 0x3f -> "gfx90a"; the
// hex value for one this table does not know.
std::string amdgpu_mach_name(uint32_t e_flags);

// One explicit parameter of a kernel.
struct KernelParam {
  enum class Kind { pointer, value };
  Kind kind = Kind::value;  // global_buffer: pointer; by_value and anything else: value
  size_t offset = 0;        // in the kernel argument segment
  size_t size = 0;          // bytes
  std::string value_kind;   // the metadata's word, for messages
  // accel_plugin_kernel_param_t.type: POINTER for global_buffer (with
  // ACCEL_PLUGIN_PARAM_READ_ONLY when .is_const is true, .address_space is
  // "constant" or .actual_access is "read_only"); for by_value, FLOAT or INT
  // from .type_name ("float", "int", "unsigned int", ...), STRUCT for
  // another named type, UNKNOWN without .type_name. LLVM writes .type_name
  // and .is_const only for OpenCL sources: a hipcc code object's values are
  // UNKNOWN, so an int passed for a float is not refused on hip.
  uint32_t type = 0;
};

struct KernelMetadata {
  std::string name;                 // ".name" (the symbol without ".kd")
  std::vector<KernelParam> params;  // explicit parameters, in order
  size_t explicit_bytes = 0;        // end of the last explicit parameter
  size_t kernarg_segment_size = 0;  // ".kernarg_segment_size" (hidden ones included)
  int64_t max_flat_workgroup_size = -1;
  int64_t wavefront_size = -1;
};

struct KernelMetadataSet {
  bool present = false;  // the note was found and read
  std::string why_not;   // when not present: what was missing or malformed
  std::vector<KernelMetadata> kernels;
  const KernelMetadata* find(const std::string& name) const noexcept;
};

// Reads the note of an image (checked with check_code_object first, so any
// bytes are safe). Never fails the load: a missing or unreadable note, or an
// image check_code_object refuses, leaves `present` false and says why
// (then parameters are unknown and only the runtime checks launches).
// Throws only std::bad_alloc.
KernelMetadataSet read_kernel_metadata(const void* data, size_t size);

}  // namespace accel::hip
