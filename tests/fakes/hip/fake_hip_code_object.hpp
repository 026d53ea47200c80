// The fake runtime's reading of an AMDGPU code object, as hipModuleLoadData
// needs it: written for the fake from the System V ELF gABI and LLVM's
// AMDGPUUsage (kernel descriptors, e_flags), sharing no code with the plugin.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fake_hip {

// The fields of a kernel descriptor (the 64-byte `<name>.kd` object;
// AMDGPUUsage, "Kernel Descriptor") the fake uses.
struct KernelDescriptor {
  uint32_t group_segment_fixed_size = 0;    // static LDS bytes
  uint32_t private_segment_fixed_size = 0;  // scratch bytes per work-item
  uint32_t kernarg_size = 0;                // kernel argument segment bytes
  uint32_t compute_pgm_rsrc1 = 0;           // register granules
};

struct CodeObject {
  std::vector<unsigned char> bytes;  // the image, copied (HIP copies it too)
  uint32_t e_flags = 0;
  std::map<std::string, KernelDescriptor> kernels;  // by name, without ".kd"
};

// hipModuleLoadData's view of `image` (which has no size: the extent comes
// from the ELF headers, as the runtime finds it): hipErrorInvalidImage for
// no AMDGPU HSA shared object (magic, class, EM_AMDGPU, ELFOSABI_AMDGPU_HSA,
// ET_DYN, unreadable tables), hipErrorNoBinaryForGpu for code of another
// ISA than the fake's gfx90a:sramecc+:xnack-.
hipError_t read_code_object(const void* image, CodeObject& out);

}  // namespace fake_hip
