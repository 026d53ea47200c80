// Reading a code object for the fake's hipModuleLoadData
// (fake_hip_code_object.hpp).
//
// Layouts from the System V gABI: Elf64_Ehdr (64 bytes), Elf64_Shdr (64),
// Elf64_Phdr (56), Elf64_Sym (24). AMDGPU specifics from LLVM's AMDGPUUsage:
// EM_AMDGPU 224, ELFOSABI_AMDGPU_HSA 64 with EI_ABIVERSION 1 (code object
// v3), 2 (v4), 3 (v5), 4 (v6); EF_AMDGPU_MACH in e_flags' low byte (gfx90a is
// 0x3f); the xnack and sramecc target features in e_flags (v3: one "on" bit
// each, 0x100 and 0x200; v4 and later: two-bit fields 0x300 and 0xc00 with
// unsupported 0, any 1, off 2, on 3); kernel descriptors are the STT_OBJECT
// symbols named `<kernel>.kd`, 64 bytes each.
#include "fake_hip_code_object.hpp"

#include <cstring>

namespace fake_hip {

namespace {

constexpr uint32_t kMachGfx90a = 0x3f;  // the fake device: gfx90a:sramecc+:xnack-

uint64_t le(const unsigned char* p, size_t width) {
  uint64_t v = 0;
  for (size_t k = width; k-- > 0;) v = (v << 8) | p[k];
  return v;
}

struct Section {
  uint32_t type;
  uint64_t addr, offset, size, entsize;
  uint32_t link;
};

// Whether the image's ISA and target features suit the fake device.
bool runs_on_device(uint8_t abi_version, uint32_t flags) {
  if ((flags & 0xff) != kMachGfx90a) return false;
  if (abi_version <= 1) {  // v3: xnack on / sramecc on bits
    return (flags & 0x100) == 0 && (flags & 0x200) != 0;
  }
  const uint32_t xnack = (flags >> 8) & 3, sramecc = (flags >> 10) & 3;
  const bool xnack_ok = xnack == 0 || xnack == 1 || xnack == 2;  // not "on": device is xnack-
  const bool sramecc_ok =
      sramecc == 0 || sramecc == 1 || sramecc == 3;  // not "off": device is sramecc+
  return xnack_ok && sramecc_ok;
}

}  // namespace

hipError_t read_code_object(const void* image, CodeObject& out) {
  const auto* p = static_cast<const unsigned char*>(image);
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return hipErrorInvalidImage;
  if (p[4] != 2 || p[5] != 1) return hipErrorInvalidImage;  // ELFCLASS64, little-endian
  if (le(p + 18, 2) != 224) return hipErrorInvalidImage;    // EM_AMDGPU
  if (p[7] != 64) return hipErrorInvalidImage;              // ELFOSABI_AMDGPU_HSA
  if (le(p + 16, 2) != 3) return hipErrorInvalidImage;      // ET_DYN: a linked code object
  const uint32_t flags = static_cast<uint32_t>(le(p + 48, 4));
  if (!runs_on_device(p[8], flags)) return hipErrorNoBinaryForGpu;
  const uint64_t phoff = le(p + 32, 8), shoff = le(p + 40, 8);
  const uint64_t phentsize = le(p + 54, 2), phnum = le(p + 56, 2);
  const uint64_t shentsize = le(p + 58, 2), shnum = le(p + 60, 2);
  if ((shnum != 0 && shentsize != 64) || (phnum != 0 && phentsize != 56))
    return hipErrorInvalidImage;

  // The image's extent: everything the headers point at.
  uint64_t extent = 64;
  auto cover = [&](uint64_t off, uint64_t len) {
    // Saturating: an offset near 2^64 must not wrap into a small extent.
    const uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
    if (end > extent) extent = end;
  };
  cover(shoff, shnum * 64);
  cover(phoff, phnum * 56);
  std::vector<Section> sections(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    const unsigned char* sh = p + shoff + i * 64;
    Section& s = sections[i];
    s.type = static_cast<uint32_t>(le(sh + 4, 4));
    s.addr = le(sh + 16, 8);
    s.offset = le(sh + 24, 8);
    s.size = le(sh + 32, 8);
    s.link = static_cast<uint32_t>(le(sh + 40, 4));
    s.entsize = le(sh + 56, 8);
    if (s.type != 8) cover(s.offset, s.size);  // SHT_NOBITS takes no bytes
  }
  for (uint64_t i = 0; i < phnum; ++i) {
    const unsigned char* ph = p + phoff + i * 56;
    cover(le(ph + 8, 8), le(ph + 32, 8));
  }
  if (extent > (uint64_t{1} << 30)) return hipErrorInvalidImage;  // not a code object's size

  // Kernel descriptors from .symtab and .dynsym.
  std::map<std::string, KernelDescriptor> kernels;
  for (const Section& s : sections) {
    if ((s.type != 2 && s.type != 11) || s.entsize != 24 || s.link >= shnum) continue;
    const Section& strtab = sections[s.link];
    for (uint64_t at = 0; at + 24 <= s.size; at += 24) {
      const unsigned char* sym = p + s.offset + at;
      const uint64_t name_at = le(sym, 4);
      const unsigned type = sym[4] & 0xf;
      const uint64_t shndx = le(sym + 6, 2), value = le(sym + 8, 8);
      if (type != 1 || name_at >= strtab.size) continue;  // STT_OBJECT
      const char* name = reinterpret_cast<const char*>(p + strtab.offset + name_at);
      const size_t len = strnlen(name, strtab.size - name_at);
      if (len <= 3 || std::strncmp(name + len - 3, ".kd", 3) != 0) continue;
      if (shndx == 0 || shndx >= shnum) return hipErrorInvalidImage;
      const Section& home = sections[shndx];
      if (value < home.addr || value - home.addr + 64 > home.size) return hipErrorInvalidImage;
      const unsigned char* kd = p + home.offset + (value - home.addr);
      KernelDescriptor d;
      d.group_segment_fixed_size = static_cast<uint32_t>(le(kd, 4));
      d.private_segment_fixed_size = static_cast<uint32_t>(le(kd + 4, 4));
      d.kernarg_size = static_cast<uint32_t>(le(kd + 8, 4));
      d.compute_pgm_rsrc1 = static_cast<uint32_t>(le(kd + 48, 4));
      kernels[std::string(name, len - 3)] = d;
    }
  }
  out.bytes.assign(p, p + extent);
  out.e_flags = flags;
  out.kernels = std::move(kernels);
  return hipSuccess;
}

}  // namespace fake_hip
