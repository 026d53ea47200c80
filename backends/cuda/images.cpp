// Image checks before cuModuleLoadDataEx (images.hpp). ELF64 layout from
// the System V ABI (e_phoff at 32, e_shoff at 40, e_phentsize at 54,
// e_phnum at 56, e_shentsize at 58, e_shnum at 60; EM_CUDA is 190); the fat
// binary header as NVIDIA's fatbinary.h declares it (magic, version,
// headerSize, fatSize).
#include "images.hpp"

#include <cstdint>
#include <cstdio>
#include <cctype>
#include <cstring>

#include "accel/accel_plugin.h"

namespace accel::cuda {

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr unsigned kEmCuda = 190;

uint64_t le(const unsigned char* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i > 0; --i) v = v << 8 | p[i - 1];
  return v;
}

std::string printf_string(const char* fmt, unsigned long long a, unsigned long long b = 0,
                          unsigned long long c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

bool is_elf(const unsigned char* d, size_t size) {
  return size >= 4 && d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F';
}
bool is_fatbin(const unsigned char* d, size_t size) {
  return size >= 4 && le(d, 4) == kFatbinMagic;
}

bool contains(const unsigned char* d, size_t size, const char* needle) {
  const size_t n = std::strlen(needle);
  for (size_t i = 0; i + n <= size; ++i)
    if (std::memcmp(d + i, needle, n) == 0) return true;
  return false;
}

std::string ptx_problem(const unsigned char* d, size_t size) {
  if (is_elf(d, size)) return "this is an ELF file (a cubin?), not PTX text";
  if (is_fatbin(d, size)) return "this is a fat binary, not PTX text";
  const void* nul = std::memchr(d, 0, size);
  size_t text = size;
  if (nul != nullptr) {
    text = static_cast<size_t>(static_cast<const unsigned char*>(nul) - d);
    for (size_t i = text; i < size; ++i) {
      if (d[i] != 0)
        return printf_string(
            "the text has a NUL byte at offset %llu, before more text at offset %llu (the "
            "driver would stop reading at the NUL)",
            text, i);
    }
  }
  if (!contains(d, text, ".version"))
    return "not PTX text: no .version directive (a PTX module starts with .version and "
           ".target)";
  if (!contains(d, text, ".target")) return "not PTX text: no .target directive";
  return "";
}

std::string cubin_problem(const unsigned char* d, size_t size) {
  if (!is_elf(d, size)) return "not a cubin: it does not start with the ELF magic 7f 45 4c 46";
  if (size < 64)
    return printf_string("truncated: %llu bytes, shorter than an ELF64 header (64 bytes)", size);
  if (d[4] != 2) return "not a cubin: not a 64-bit ELF file (EI_CLASS is not ELFCLASS64)";
  if (d[5] != 1) return "not a cubin: not a little-endian ELF file (EI_DATA is not ELFDATA2LSB)";
  const unsigned machine = static_cast<unsigned>(le(d + 18, 2));
  if (machine != kEmCuda)
    return printf_string("not a cubin: an ELF file for machine %llu, not EM_CUDA (%llu)", machine,
                         kEmCuda);
  struct Table {
    const char* what;
    uint64_t offset, entry, count;
  };
  const Table tables[] = {{"program", le(d + 32, 8), le(d + 54, 2), le(d + 56, 2)},
                          {"section", le(d + 40, 8), le(d + 58, 2), le(d + 60, 2)}};
  for (const Table& t : tables) {
    if (t.count == 0) continue;
    const uint64_t bytes = t.entry * t.count;  // both 16-bit: no overflow
    if (t.offset > size || bytes > size - t.offset)
      return std::string("truncated: the ELF ") + t.what +
             printf_string(" header table ends at byte %llu, past the image's %llu bytes",
                           t.offset + bytes < t.offset ? ~0ull : t.offset + bytes, size);
  }
  return "";
}

std::string fatbin_problem(const unsigned char* d, size_t size) {
  if (size < 4 || !is_fatbin(d, size))
    return size < 4 ? "not a fat binary: shorter than its magic"
                    : printf_string("not a fat binary: magic 0x%08llx, expected 0x%08llx", le(d, 4),
                                    kFatbinMagic);
  if (size < 16)
    return printf_string("truncated: %llu bytes, shorter than a fat binary header (16 bytes)",
                         size);
  const uint64_t header = le(d + 6, 2);
  const uint64_t payload = le(d + 8, 8);
  if (header < 16)
    return printf_string("not a fat binary: header size %llu is smaller than the header (16)",
                         header);
  if (header > size || payload > size - header)
    return printf_string(
        "truncated: the fat binary header promises %llu + %llu bytes, the image has %llu", header,
        payload, size);
  return "";
}

}  // namespace

std::string image_problem(ImageKind kind, const unsigned char* data, size_t size) {
  switch (kind) {
    case ImageKind::ptx:
      return ptx_problem(data, size);
    case ImageKind::cubin:
      return cubin_problem(data, size);
    case ImageKind::fatbin:
      return fatbin_problem(data, size);
  }
  return "unknown image kind";
}

bool ptx_needs_terminator(const unsigned char* data, size_t size) noexcept {
  return size == 0 || data[size - 1] != 0;
}

namespace {

// PTX split into words (directives, names, numbers) and the punctuation
// that matters for parameter lists; // and /* */ comments dropped.
std::vector<std::string> ptx_tokens(const char* text, size_t size) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
  };
  for (size_t i = 0; i < size && text[i] != '\0'; ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < size && text[i + 1] == '/') {
      while (i < size && text[i] != '\n' && text[i] != '\0') ++i;
      flush();
    } else if (c == '/' && i + 1 < size && text[i + 1] == '*') {
      for (i += 2; i + 1 < size && !(text[i] == '*' && text[i + 1] == '/'); ++i) {
      }
      ++i;
      flush();
    } else if (std::strchr("(),;[]{}", c) != nullptr) {
      flush();
      out.emplace_back(1, c);
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

// One `.param ...` declaration's tokens (without the separating comma).
uint32_t ptx_param_type(const std::vector<std::string>& decl) {
  bool pointer = false, array = false;
  std::string type;
  for (const std::string& t : decl) {
    if (t == ".ptr") pointer = true;
    if (t == "[") array = true;
    if (t.size() >= 3 && t[0] == '.' && std::strchr("usbf", t[1]) != nullptr &&
        std::isdigit(static_cast<unsigned char>(t[2])) != 0)
      type = t;
    if (t == ".pred") type = t;
  }
  if (array) return ACCEL_KERNEL_ARG_TYPE_STRUCT;
  if (type.empty() || type[1] == 'b') return ACCEL_KERNEL_ARG_TYPE_UNKNOWN;
  if (type[1] == 'f') return ACCEL_KERNEL_ARG_TYPE_FLOAT;
  if (type == ".u64")
    return pointer ? ACCEL_KERNEL_ARG_TYPE_POINTER : ACCEL_KERNEL_ARG_TYPE_UNKNOWN;
  return ACCEL_KERNEL_ARG_TYPE_INT;
}

}  // namespace

std::map<std::string, std::vector<uint32_t>> ptx_param_types(const char* text, size_t size) {
  const std::vector<std::string> t = ptx_tokens(text, size);
  std::map<std::string, std::vector<uint32_t>> out;
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i] != ".entry" || t[i + 2] != "(") continue;
    const std::string& name = t[i + 1];
    std::vector<uint32_t> types;
    std::vector<std::string> decl;
    bool closed = false;
    for (size_t j = i + 3; j < t.size() && !closed; ++j) {
      if (t[j] == "," || t[j] == ")") {
        if (!decl.empty()) types.push_back(ptx_param_type(decl));
        decl.clear();
        closed = t[j] == ")";
        i = j;
      } else if (t[j] == "{" || t[j] == ";") {
        break;  // not a parameter list the scanner reads: leave the entry out
      } else {
        decl.push_back(t[j]);
      }
    }
    if (closed) out[name] = std::move(types);
  }
  return out;
}

}  // namespace accel::cuda
