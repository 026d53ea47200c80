// Kernel parameters from a SPIR-V module (spirv_kernel_params in
// backend.hpp): Level Zero reports only their count (numKernelArgs), but
// the image the backend loads declares each kernel's parameters. Read
// from the SPIR-V specification (Khronos, "SPIR-V Specification", sections
// 2.3 "Physical Layout" and 3 "Binary Form"): a 5-word header whose first
// word is the magic 0x07230203, then instructions whose first word holds
// the word count (high 16 bits) and the opcode (low 16 bits).
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backend.hpp"

namespace accel::level_zero {

namespace {

constexpr uint32_t kMagic = 0x07230203u;
// Opcodes (SPIR-V 3.52 "Instructions").
constexpr uint32_t kOpEntryPoint = 15, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23,
                   kOpTypePointer = 32, kOpFunction = 54, kOpFunctionParameter = 55,
                   kOpFunctionEnd = 56;
// Storage classes (SPIR-V 3.7).
constexpr uint32_t kUniformConstant = 0, kWorkgroup = 4, kCrossWorkgroup = 5, kFunction = 7,
                   kGeneric = 8;
constexpr uint32_t kExecutionModelKernel = 6;

struct TypeInfo {
  uint32_t op = 0;
  uint32_t a = 0;  // Int/Float: width; Vector: component type; Pointer: storage class
  uint32_t b = 0;  // Vector: component count
};

constexpr uint32_t kAllKinds = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE) |
                               ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER) |
                               ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_LOCAL_MEMORY);

accel_plugin_kernel_param_t value(uint32_t type, size_t size) {
  return {ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE), type, size};
}

// What a parameter of type `id` takes. OpenCL C's 3-component vectors take
// the space of 4 (OpenCL C 6.1.5); a struct passed by value is a pointer to
// Function storage (byval) whose layout is not computed here (size 0).
accel_plugin_kernel_param_t param_of(const std::map<uint32_t, TypeInfo>& types, uint32_t id) {
  auto it = types.find(id);
  if (it == types.end()) return {kAllKinds, ACCEL_KERNEL_ARG_TYPE_UNKNOWN, 0};
  const TypeInfo& t = it->second;
  switch (t.op) {
    case kOpTypeInt:
      return value(ACCEL_KERNEL_ARG_TYPE_INT, t.a / 8);
    case kOpTypeFloat:
      return value(ACCEL_KERNEL_ARG_TYPE_FLOAT, t.a / 8);
    case kOpTypeVector: {
      auto e = types.find(t.a);
      const size_t elem = e != types.end() ? e->second.a / 8 : 0;
      return value(ACCEL_KERNEL_ARG_TYPE_STRUCT, elem * (t.b == 3 ? 4 : t.b));
    }
    case kOpTypePointer:
      switch (t.a) {
        case kWorkgroup:
          return {ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_LOCAL_MEMORY),
                  ACCEL_KERNEL_ARG_TYPE_UNKNOWN, 0};
        case kUniformConstant:
          return {ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER),
                  ACCEL_KERNEL_ARG_TYPE_POINTER | ACCEL_PLUGIN_PARAM_READ_ONLY, 0};
        case kCrossWorkgroup:
        case kGeneric:
          return {ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER),
                  ACCEL_KERNEL_ARG_TYPE_POINTER, 0};
        case kFunction:
          return value(ACCEL_KERNEL_ARG_TYPE_STRUCT, 0);
        default:
          break;
      }
      break;
    default:
      break;
  }
  return {kAllKinds, ACCEL_KERNEL_ARG_TYPE_UNKNOWN, 0};
}

// The literal string starting at word `w` of an instruction of `count` words.
std::string literal(const uint32_t* words, size_t w, size_t count) {
  std::string s;
  for (; w < count; ++w) {
    char c[4];
    std::memcpy(c, &words[w], 4);
    for (char ch : c) {
      if (ch == '\0') return s;
      s += ch;
    }
  }
  return s;
}

}  // namespace

std::map<std::string, std::vector<accel_plugin_kernel_param_t>> spirv_kernel_params(
    const void* data, size_t size) {
  std::map<std::string, std::vector<accel_plugin_kernel_param_t>> out;
  if (data == nullptr || size < 20 || size % 4 != 0) return out;
  std::vector<uint32_t> w(size / 4);
  std::memcpy(w.data(), data, size);
  if (w[0] != kMagic) return out;           // not SPIR-V, or of the other byte order
  std::map<uint32_t, std::string> entries;  // function id -> kernel name
  std::map<uint32_t, TypeInfo> types;
  std::vector<accel_plugin_kernel_param_t>* current = nullptr;
  for (size_t i = 5; i < w.size();) {
    const size_t count = w[i] >> 16;
    const uint32_t op = w[i] & 0xffffu;
    if (count == 0 || count > w.size() - i) return {};  // damaged: trust none of it
    const uint32_t* ins = &w[i];
    if (op == kOpEntryPoint && count >= 4 && ins[1] == kExecutionModelKernel) {
      entries[ins[2]] = literal(ins, 3, count);
    } else if ((op == kOpTypeInt || op == kOpTypeFloat) && count >= 3) {
      types[ins[1]] = {op, ins[2], 0};
    } else if ((op == kOpTypeVector || op == kOpTypePointer) && count >= 4) {
      types[ins[1]] = op == kOpTypeVector ? TypeInfo{op, ins[2], ins[3]} : TypeInfo{op, ins[2], 0};
    } else if (op == kOpFunction && count >= 5) {
      auto e = entries.find(ins[2]);
      current = e != entries.end() ? &out[e->second] : nullptr;
      if (current != nullptr) current->clear();
    } else if (op == kOpFunctionParameter && count >= 3 && current != nullptr) {
      current->push_back(param_of(types, ins[1]));
    } else if (op == kOpFunctionEnd) {
      current = nullptr;
    }
    i += count;
  }
  return out;
}

}  // namespace accel::level_zero
