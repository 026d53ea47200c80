// The SPIR-V walk (fake_ze_spirv.hpp). Opcodes, operands and enumerants are
// those of the SPIR-V specification, section 3 ("Binary Form"):
//   OpMemoryModel 14 (addressing model, memory model)
//   OpEntryPoint 15 (execution model, function id, name, interface ids...)
//   OpCapability 17, OpTypeInt 21 (id, width, signedness),
//   OpTypeFloat 22 (id, width), OpTypeVector 23 (id, component type, count),
//   OpTypePointer 32 (id, storage class, pointee), OpFunction 54 (result
//   type, id, control, function type), OpFunctionParameter 55 (type, id),
//   OpFunctionEnd 56; execution model Kernel 6; capability Kernel 6;
//   addressing model Physical64 2; storage classes UniformConstant 0,
//   Workgroup 4, CrossWorkgroup 5, Generic 8.
#include "fake_ze_spirv.hpp"

#include <cstdio>
#include <cstring>
#include <map>

namespace fake_ze {

namespace {

constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kHeaderWords = 5;

enum Op : uint32_t {
  kOpMemoryModel = 14,
  kOpEntryPoint = 15,
  kOpCapability = 17,
  kOpTypeInt = 21,
  kOpTypeFloat = 22,
  kOpTypeVector = 23,
  kOpTypePointer = 32,
  kOpFunction = 54,
  kOpFunctionParameter = 55,
  kOpFunctionEnd = 56,
};
constexpr uint32_t kExecutionModelKernel = 6;
constexpr uint32_t kCapabilityKernel = 6;
constexpr uint32_t kAddressingPhysical64 = 2;
constexpr uint32_t kStorageUniformConstant = 0, kStorageWorkgroup = 4, kStorageCrossWorkgroup = 5,
                   kStorageGeneric = 8;

uint32_t swap32(uint32_t w) {
  return (w >> 24) | ((w >> 8) & 0xff00u) | ((w << 8) & 0xff0000u) | (w << 24);
}

struct Type {
  bool pointer = false;
  uint32_t storage = 0;
  uint32_t size = 0;  // scalars and vectors; 0 unknown
};

struct Entry {
  std::string name;
  uint32_t function = 0;
};

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// A literal string: UTF-8 octets packed 4 to a word, lowest byte first,
// NUL-terminated within the instruction (section 2.2.1).
bool literal_string(const std::vector<uint32_t>& w, size_t from, size_t end, std::string* out) {
  out->clear();
  for (size_t i = from; i < end; ++i) {
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((w[i] >> (8 * b)) & 0xffu);
      if (c == '\0') return true;
      out->push_back(c);
    }
  }
  return false;
}

}  // namespace

std::string read_spirv(const uint8_t* data, size_t size, SpirvModule* out) {
  *out = {};
  if (size % 4 != 0)
    return "error: the module is " + std::to_string(size) + " bytes, not a whole number of words";
  if (size < kHeaderWords * 4)
    return "error: the module is " + std::to_string(size) +
           " bytes, shorter than the 5-word SPIR-V header";
  std::vector<uint32_t> w(size / 4);
  std::memcpy(w.data(), data, size);
  if (w[0] == swap32(kMagic)) {
    for (uint32_t& x : w) x = swap32(x);
  } else if (w[0] != kMagic) {
    return "error: bad SPIR-V magic number " + hex(w[0]) + " (expected 0x07230203)";
  }
  out->major = (w[1] >> 16) & 0xffu;
  out->minor = (w[1] >> 8) & 0xffu;
  out->words = w.size();

  bool kernel_capability = false;
  uint32_t addressing = kAddressingPhysical64;
  std::vector<Entry> entries;
  std::map<uint32_t, Type> types;
  std::map<uint32_t, std::vector<uint32_t>> functions;  // id -> parameter type ids
  uint32_t current = 0;                                 // the function being read, 0 outside
  for (size_t i = kHeaderWords; i < w.size();) {
    const uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
    if (count == 0)
      return "error: instruction at word " + std::to_string(i) + " has a word count of 0";
    if (i + count > w.size())
      return "error: instruction at word " + std::to_string(i) + " (opcode " + std::to_string(op) +
             ", " + std::to_string(count) + " words) runs past the end of the module";
    const size_t end = i + count;
    auto operand = [&](size_t k) -> uint32_t { return i + k < end ? w[i + k] : 0; };
    switch (op) {
      case kOpCapability:
        if (operand(1) == kCapabilityKernel) kernel_capability = true;
        break;
      case kOpMemoryModel:
        addressing = operand(1);
        break;
      case kOpEntryPoint:
        if (operand(1) == kExecutionModelKernel) {
          Entry e;
          e.function = operand(2);
          if (!literal_string(w, i + 3, end, &e.name))
            return "error: OpEntryPoint at word " + std::to_string(i) +
                   " has a name without its terminating NUL";
          entries.push_back(std::move(e));
        }
        break;
      case kOpTypeInt:
      case kOpTypeFloat:
        types[operand(1)] = Type{false, 0, operand(2) / 8};
        break;
      case kOpTypeVector: {
        // OpenCL C: a 3-component vector takes the size of a 4-component one.
        uint32_t n = operand(3) == 3 ? 4 : operand(3);
        auto it = types.find(operand(2));
        types[operand(1)] = Type{false, 0, it != types.end() ? it->second.size * n : 0};
        break;
      }
      case kOpTypePointer:
        types[operand(1)] = Type{true, operand(2), 8};
        break;
      case kOpFunction:
        current = operand(2);
        functions[current];
        break;
      case kOpFunctionParameter:
        if (current == 0)
          return "error: OpFunctionParameter at word " + std::to_string(i) + " outside a function";
        functions[current].push_back(operand(1));
        break;
      case kOpFunctionEnd:
        current = 0;
        break;
      default:
        break;
    }
    i = end;
  }
  // The SPIR-V spec's layout rule: every function ends with OpFunctionEnd.
  // A module cut between two instructions inside a function breaks it.
  if (current != 0)
    return "error: function %" + std::to_string(current) +
           " has no OpFunctionEnd (the module is cut short)";
  if (!kernel_capability)
    return "error: the module does not declare the Kernel capability (not an OpenCL kernel "
           "module)";
  if (addressing != kAddressingPhysical64)
    return "error: addressing model " + std::to_string(addressing) +
           "; this device runs 64-bit kernels (Physical64)";
  for (const Entry& e : entries) {
    auto f = functions.find(e.function);
    if (f == functions.end())
      return "error: entry point '" + e.name + "' names function %" + std::to_string(e.function) +
             ", which the module does not define";
    SpirvKernel k;
    k.name = e.name;
    for (uint32_t type_id : f->second) {
      SpirvParam p;
      auto t = types.find(type_id);
      if (t != types.end() && t->second.pointer) {
        const uint32_t sc = t->second.storage;
        if (sc == kStorageWorkgroup) {
          p.kind = ParamKind::Local;
        } else if (sc == kStorageCrossWorkgroup || sc == kStorageUniformConstant ||
                   sc == kStorageGeneric) {
          p.kind = ParamKind::Global;
          p.size = 8;
        } else {
          return "error: kernel '" + e.name + "' has a parameter pointing to storage class " +
                 std::to_string(sc) + ", which a kernel cannot take";
        }
      } else {
        p.kind = ParamKind::Value;
        p.size = t != types.end() ? t->second.size : 0;  // structs: unknown
      }
      k.params.push_back(p);
    }
    out->kernels.push_back(std::move(k));
  }
  return {};
}

}  // namespace fake_ze
