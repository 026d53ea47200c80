// The fake driver's SPIR-V reader: enough of a module to know its kernels
// and their parameters, read the way the SPIR-V specification (unified,
// section 2.3 "Physical Layout of a SPIR-V Module and Instruction") lays a
// module out: a 5-word header (magic 0x07230203, version, generator, bound,
// schema) and then instructions, each starting with a word holding its word
// count (high 16 bits) and opcode (low 16 bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fake_ze {

// What a kernel parameter is, from its OpTypePointer storage class or its
// scalar/vector type.
enum class ParamKind {
  Value,   // a scalar or vector (size known), or any other type (size 0:
           // unknown; zeKernelSetArgumentValue refuses every size for it)
  Global,  // pointer to CrossWorkgroup / UniformConstant / Generic memory: sizeof(void*)
  Local,   // pointer to Workgroup memory: set with a size and no value
};

struct SpirvParam {
  ParamKind kind = ParamKind::Value;
  uint32_t size = 0;  // bytes of a Value; 8 for Global; 0 for Local or an unknown size
};

struct SpirvKernel {
  std::string name;                // OpEntryPoint's name
  std::vector<SpirvParam> params;  // the entry's OpFunction's OpFunctionParameters
};

struct SpirvModule {
  uint32_t major = 0, minor = 0;  // the header's version
  size_t words = 0;
  std::vector<SpirvKernel> kernels;  // every OpEntryPoint with execution model Kernel
};

// Reads `size` bytes at `data` (either byte order, as the magic number
// tells). "" on success; otherwise what is wrong, for the build log.
std::string read_spirv(const uint8_t* data, size_t size, SpirvModule* out);

}  // namespace fake_ze
