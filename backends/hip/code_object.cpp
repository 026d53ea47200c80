// AMDGPU code object checks and kernel metadata (code_object.hpp). The ELF
// layout is the System V gABI's (Elf64_Ehdr, Elf64_Shdr, Elf64_Phdr, notes);
// the AMDGPU specifics (EM_AMDGPU, EF_AMDGPU_MACH, the metadata note and its
// keys) are LLVM's AMDGPUUsage. Fields are read byte by byte, little-endian,
// at offsets checked against the image size first.
#include "code_object.hpp"

#include <cstdio>
#include <cstring>
#include <string_view>

#include "accel/accel_plugin.h"
#include "msgpack.hpp"

namespace accel::hip {

namespace {

constexpr size_t kEhdrSize = 64;
constexpr size_t kShdrSize = 64;
constexpr size_t kPhdrSize = 56;
constexpr uint32_t kShtNote = 7;
constexpr uint32_t kShtNobits = 8;
constexpr uint32_t kPtNote = 4;
constexpr char kBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";

uint64_t le(const unsigned char* p, size_t width) {
  uint64_t v = 0;
  for (size_t k = width; k-- > 0;) v = (v << 8) | p[k];
  return v;
}

// [offset, offset + length) lies inside [0, size).
bool inside(uint64_t offset, uint64_t length, size_t size) {
  return offset <= size && length <= size - offset;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The header and table positions, read from an image of at least kEhdrSize.
struct Layout {
  uint64_t phoff, shoff;
  uint16_t phentsize, phnum, shentsize, shnum;
  explicit Layout(const unsigned char* p)
      : phoff(le(p + 32, 8)),
        shoff(le(p + 40, 8)),
        phentsize(static_cast<uint16_t>(le(p + 54, 2))),
        phnum(static_cast<uint16_t>(le(p + 56, 2))),
        shentsize(static_cast<uint16_t>(le(p + 58, 2))),
        shnum(static_cast<uint16_t>(le(p + 60, 2))) {}
};

// Walks the notes in [desc, desc + size) and returns the first
// NT_AMDGPU_METADATA descriptor of owner "AMDGPU"; `seen_v2` when a code
// object v2 note (owner "AMD") was there instead.
bool find_metadata_note(const unsigned char* p, size_t size, std::string_view& out, bool& seen_v2) {
  size_t at = 0;
  while (size - at >= 12) {
    const uint64_t namesz = le(p + at, 4), descsz = le(p + at + 4, 4), type = le(p + at + 8, 4);
    const uint64_t name_at = at + 12;
    const uint64_t desc_at = name_at + ((namesz + 3) & ~uint64_t{3});
    if (!inside(name_at, namesz, size) || !inside(desc_at, descsz, size)) return false;
    const std::string_view name(reinterpret_cast<const char*>(p + name_at),
                                static_cast<size_t>(namesz));
    if (type == kNtAmdgpuMetadata && name == std::string_view("AMDGPU\0", 7)) {
      out =
          std::string_view(reinterpret_cast<const char*>(p + desc_at), static_cast<size_t>(descsz));
      return true;
    }
    if (name == std::string_view("AMD\0", 4)) seen_v2 = true;
    const uint64_t next = desc_at + ((descsz + 3) & ~uint64_t{3});
    if (next > size) return false;
    at = static_cast<size_t>(next);
  }
  return false;
}

// Every note container of the image: SHT_NOTE sections, else PT_NOTE
// segments (a stripped object may have no section table).
bool metadata_note(const unsigned char* p, size_t size, std::string_view& out, bool& seen_v2) {
  const Layout l(p);
  for (uint16_t i = 0; i < l.shnum; ++i) {
    const unsigned char* sh = p + l.shoff + uint64_t{i} * kShdrSize;
    if (le(sh + 4, 4) != kShtNote) continue;
    const uint64_t off = le(sh + 24, 8), len = le(sh + 32, 8);
    if (!inside(off, len, size)) continue;  // check_code_object refused such images already
    if (find_metadata_note(p + off, static_cast<size_t>(len), out, seen_v2)) return true;
  }
  for (uint16_t i = 0; i < l.phnum; ++i) {
    const unsigned char* ph = p + l.phoff + uint64_t{i} * kPhdrSize;
    if (le(ph, 4) != kPtNote) continue;
    const uint64_t off = le(ph + 8, 8), len = le(ph + 32, 8);
    if (!inside(off, len, size)) continue;
    if (find_metadata_note(p + off, static_cast<size_t>(len), out, seen_v2)) return true;
  }
  return false;
}

// A by_value parameter's type from its C spelling (.type_name).
uint32_t value_type(const std::string& name) {
  static const char* const kFloats[] = {"float", "double", "half", "_Float16", "__half"};
  static const char* const kInts[] = {
      "bool",           "char",     "signed char", "unsigned char",      "uchar",    "short",
      "unsigned short", "ushort",   "int",         "unsigned int",       "uint",     "long",
      "unsigned long",  "ulong",    "long long",   "unsigned long long", "int8_t",   "int16_t",
      "int32_t",        "int64_t",  "uint8_t",     "uint16_t",           "uint32_t", "uint64_t",
      "size_t",         "ptrdiff_t"};
  for (const char* f : kFloats)
    if (name == f) return ACCEL_KERNEL_ARG_TYPE_FLOAT;
  for (const char* i : kInts)
    if (name == i) return ACCEL_KERNEL_ARG_TYPE_INT;
  if (name.empty() || name.back() == '*') return ACCEL_KERNEL_ARG_TYPE_UNKNOWN;
  return ACCEL_KERNEL_ARG_TYPE_STRUCT;
}

// The type of a parameter whose .value_kind is `value_kind` (KernelParam).
uint32_t param_type(const msgpack::Value& arg, const std::string& value_kind) {
  auto text = [&arg](const char* key) {
    const msgpack::Value* v = arg.find(key);
    return v != nullptr && v->is_string() ? std::string(v->s) : std::string();
  };
  if (value_kind == "global_buffer") {
    const msgpack::Value* is_const = arg.find(".is_const");
    const bool read_only =
        (is_const != nullptr && is_const->type == msgpack::Value::Type::boolean && is_const->b) ||
        text(".address_space") == "constant" || text(".actual_access") == "read_only";
    return ACCEL_KERNEL_ARG_TYPE_POINTER | (read_only ? ACCEL_PLUGIN_PARAM_READ_ONLY : 0u);
  }
  if (value_kind == "by_value") return value_type(text(".type_name"));
  return ACCEL_KERNEL_ARG_TYPE_UNKNOWN;
}

// One ".args" entry; false with `why` for a malformed one.
bool read_param(const msgpack::Value& arg, size_t index, KernelMetadata& k, std::string& why) {
  const msgpack::Value* offset = arg.find(".offset");
  const msgpack::Value* size = arg.find(".size");
  const msgpack::Value* kind = arg.find(".value_kind");
  uint64_t off = 0, len = 0;
  if (offset == nullptr || size == nullptr || kind == nullptr || !offset->as_size(off) ||
      !size->as_size(len) || !kind->is_string()) {
    why = "kernel '" + k.name + "' argument " + std::to_string(index) +
          " lacks an integer .offset and .size or a string .value_kind";
    return false;
  }
  const std::string value_kind(kind->s);
  if (value_kind.rfind("hidden_", 0) == 0) return true;  // the runtime's to fill
  if (len == 0 || off > kMaxKernargBytes || len > kMaxKernargBytes - off) {
    why = "kernel '" + k.name + "' argument " + std::to_string(index) + " at offset " +
          std::to_string(off) + " with size " + std::to_string(len) +
          " lies outside HIP's 4096-byte argument segment";
    return false;
  }
  KernelParam param;
  param.kind =
      value_kind == "global_buffer" ? KernelParam::Kind::pointer : KernelParam::Kind::value;
  param.offset = static_cast<size_t>(off);
  param.size = static_cast<size_t>(len);
  param.value_kind = value_kind;
  param.type = param_type(arg, value_kind);
  if (param.offset + param.size > k.explicit_bytes) k.explicit_bytes = param.offset + param.size;
  k.params.push_back(std::move(param));
  return true;
}

bool read_kernel(const msgpack::Value& entry, KernelMetadata& k, std::string& why) {
  const msgpack::Value* name = entry.find(".name");
  if (name == nullptr || !name->is_string() || name->s.empty()) {
    why = "a kernel entry has no .name";
    return false;
  }
  k.name = std::string(name->s);
  uint64_t v = 0;
  if (const auto* s = entry.find(".kernarg_segment_size"); s != nullptr && s->as_size(v))
    k.kernarg_segment_size = static_cast<size_t>(v);
  if (const auto* s = entry.find(".max_flat_workgroup_size"); s != nullptr && s->as_size(v))
    k.max_flat_workgroup_size = static_cast<int64_t>(v);
  if (const auto* s = entry.find(".wavefront_size"); s != nullptr && s->as_size(v))
    k.wavefront_size = static_cast<int64_t>(v);
  const msgpack::Value* args = entry.find(".args");
  if (args == nullptr) return true;  // no .args: no parameters
  if (args->type != msgpack::Value::Type::array) {
    why = "kernel '" + k.name + "' has .args that is no list";
    return false;
  }
  for (size_t i = 0; i < args->items.size(); ++i)
    if (!read_param(args->items[i], i, k, why)) return false;
  for (size_t i = 1; i < k.params.size(); ++i) {
    if (k.params[i].offset < k.params[i - 1].offset + k.params[i - 1].size) {
      why = "kernel '" + k.name + "' has overlapping or unordered arguments";
      return false;
    }
  }
  return true;
}

}  // namespace

bool check_code_object(const void* data, size_t size, CodeObjectHeader& header,
                       std::string& error) {
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t bundle_len = sizeof kBundleMagic - 1;
  if (size >= bundle_len && std::memcmp(p, kBundleMagic, bundle_len) == 0) {
    error =
        "the image is a clang offload bundle (__CLANG_OFFLOAD_BUNDLE__), not an AMDGPU code "
        "object: compile with hipcc --genco --no-gpu-bundle-output, or extract the gfx "
        "code object with clang-offload-bundler --unbundle";
    return false;
  }
  if (size < 4 || std::memcmp(p,
                              "\x7f"
                              "ELF",
                              4) != 0) {
    error = "not an ELF file (no \\x7fELF magic): an AMD code object is an AMDGPU ELF";
    return false;
  }
  if (size < kEhdrSize) {
    error = "truncated ELF: " + std::to_string(size) + " bytes, the ELF header alone has 64";
    return false;
  }
  if (p[4] != 2 || p[5] != 1) {
    error = "not a 64-bit little-endian ELF (EI_CLASS " + std::to_string(p[4]) + ", EI_DATA " +
            std::to_string(p[5]) + "): AMDGPU code objects are ELFCLASS64, ELFDATA2LSB";
    return false;
  }
  const auto machine = static_cast<uint16_t>(le(p + 18, 2));
  if (machine != kEmAmdgpu) {
    error = "ELF e_machine " + std::to_string(machine) +
            " is not EM_AMDGPU (224): a code object for another processor" +
            (machine == 62 ? " (x86-64: a host object?)" : "");
    return false;
  }
  const Layout l(p);
  if (l.shnum == 0 && l.shoff != 0) {
    error = "ELF uses extended section numbering (e_shnum 0), which no code object needs";
    return false;
  }
  if (l.shnum > 0 &&
      (l.shentsize != kShdrSize || !inside(l.shoff, uint64_t{l.shnum} * kShdrSize, size))) {
    error = "truncated or malformed ELF: " + std::to_string(l.shnum) + " section headers of " +
            std::to_string(l.shentsize) + " bytes at offset " + hex(l.shoff) + " in " +
            std::to_string(size) + " bytes";
    return false;
  }
  if (l.phnum > 0 &&
      (l.phentsize != kPhdrSize || !inside(l.phoff, uint64_t{l.phnum} * kPhdrSize, size))) {
    error = "truncated or malformed ELF: " + std::to_string(l.phnum) + " program headers of " +
            std::to_string(l.phentsize) + " bytes at offset " + hex(l.phoff) + " in " +
            std::to_string(size) + " bytes";
    return false;
  }
  for (uint16_t i = 0; i < l.shnum; ++i) {
    const unsigned char* sh = p + l.shoff + uint64_t{i} * kShdrSize;
    if (le(sh + 4, 4) == kShtNobits) continue;  // takes no file bytes
    const uint64_t off = le(sh + 24, 8), len = le(sh + 32, 8);
    if (!inside(off, len, size)) {
      error = "truncated ELF: section " + std::to_string(i) + " spans bytes [" + hex(off) + ", +" +
              hex(len) + ") of a " + std::to_string(size) + "-byte image";
      return false;
    }
  }
  for (uint16_t i = 0; i < l.phnum; ++i) {
    const unsigned char* ph = p + l.phoff + uint64_t{i} * kPhdrSize;
    const uint64_t off = le(ph + 8, 8), len = le(ph + 32, 8);
    if (!inside(off, len, size)) {
      error = "truncated ELF: segment " + std::to_string(i) + " spans bytes [" + hex(off) + ", +" +
              hex(len) + ") of a " + std::to_string(size) + "-byte image";
      return false;
    }
  }
  header.os_abi = p[7];
  header.abi_version = p[8];
  header.type = static_cast<uint16_t>(le(p + 16, 2));
  header.flags = static_cast<uint32_t>(le(p + 48, 4));
  return true;
}

std::string amdgpu_mach_name(uint32_t e_flags) {
  // EF_AMDGPU_MACH_AMDGCN_* values of LLVM's ELF.h / AMDGPUUsage (those up to
  // 0x042 as LLVM 14 lists them; gfx940, gfx1100 and gfx942 from later
  // releases). Anything else is shown in hex.
  static const struct {
    uint32_t mach;
    const char* name;
  } kMachs[] = {
      {0x020, "gfx600"},  {0x021, "gfx601"},  {0x022, "gfx700"},  {0x023, "gfx701"},
      {0x024, "gfx702"},  {0x025, "gfx703"},  {0x026, "gfx704"},  {0x028, "gfx801"},
      {0x029, "gfx802"},  {0x02a, "gfx803"},  {0x02b, "gfx810"},  {0x02c, "gfx900"},
      {0x02d, "gfx902"},  {0x02e, "gfx904"},  {0x02f, "gfx906"},  {0x030, "gfx908"},
      {0x031, "gfx909"},  {0x032, "gfx90c"},  {0x033, "gfx1010"}, {0x034, "gfx1011"},
      {0x035, "gfx1012"}, {0x036, "gfx1030"}, {0x037, "gfx1031"}, {0x038, "gfx1032"},
      {0x039, "gfx1033"}, {0x03a, "gfx602"},  {0x03b, "gfx705"},  {0x03c, "gfx805"},
      {0x03d, "gfx1035"}, {0x03e, "gfx1034"}, {0x03f, "gfx90a"},  {0x040, "gfx940"},
      {0x041, "gfx1100"}, {0x042, "gfx1013"}, {0x04c, "gfx942"},
  };
  const uint32_t mach = e_flags & kEfAmdgpuMachMask;
  for (const auto& m : kMachs)
    if (m.mach == mach) return m.name;
  return "EF_AMDGPU_MACH " + hex(mach);
}

const KernelMetadata* KernelMetadataSet::find(const std::string& name) const noexcept {
  for (const auto& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

KernelMetadataSet read_kernel_metadata(const void* data, size_t size) {
  KernelMetadataSet set;
  CodeObjectHeader header;
  if (!check_code_object(data, size, header, set.why_not)) return set;  // never read outside
  const auto* p = static_cast<const unsigned char*>(data);
  std::string_view note;
  bool seen_v2 = false;
  if (!metadata_note(p, size, note, seen_v2)) {
    set.why_not = seen_v2 ? "code object v2 (YAML metadata note): parameters are read from v3 "
                            "and later only"
                          : "the code object has no NT_AMDGPU_METADATA note";
    return set;
  }
  msgpack::Value root;
  std::string error;
  if (!msgpack::parse(reinterpret_cast<const unsigned char*>(note.data()), note.size(), root,
                      nullptr, error)) {
    set.why_not = "the AMDGPU metadata note is not readable msgpack: " + error;
    return set;
  }
  const msgpack::Value* kernels = root.find("amdhsa.kernels");
  if (kernels == nullptr || kernels->type != msgpack::Value::Type::array) {
    set.why_not = "the AMDGPU metadata has no amdhsa.kernels list";
    return set;
  }
  for (const msgpack::Value& entry : kernels->items) {
    KernelMetadata k;
    if (!read_kernel(entry, k, error)) {
      set.kernels.clear();
      set.why_not = "malformed AMDGPU metadata: " + error;
      return set;
    }
    set.kernels.push_back(std::move(k));
  }
  set.present = true;
  return set;
}

}  // namespace accel::hip
