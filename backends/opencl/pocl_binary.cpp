// PoCL's binary container ("poclbin"), checked before PoCL reads it.
//
// What clGetProgramInfo(CL_PROGRAM_BINARIES) returns on PoCL is PoCL's own
// container: a header, the program's cache files, then one record per
// kernel with its metadata and its cache files. PoCL's
// clCreateProgramWithBinary reads the 77-byte header from any binary without
// looking at its length, and unpacks a container without bounds checks
// (PoCL 3.1: a binary cut in half crashes the process in memcpy; a
// zero-length kernel name or a kernel-less program trips its asserts), and
// it writes every file of the container to <cache dir>/<build hash><path>.
// So before a PoCL device is given a native binary, this walks the container
// with bounds checks and refuses, with what is wrong:
//  - an image shorter than the header, whatever it is (PoCL also accepts
//    LLVM bitcode as a binary, but reads the header first);
//  - a container (magic "poclbin\0") whose records run past its end, leave
//    bytes over, or that has no kernels or an unnamed kernel;
//  - a build hash or file path that could leave the cache directory (only
//    letters, digits, '_', '-', '.' and '/' are accepted, and no "." or ".."
//    path component), or a path longer than PoCL's 1024-byte path buffer.
// Anything else, e.g. a binary of another device or driver, is left to PoCL
// (it answers CL_INVALID_BINARY).
//
// The layout (little-endian), from PoCL's lib/CL/pocl_binary.c, format
// version 9 (PoCL 3.x; PoCL 4 and later write 10 to 12 and still read 9):
//   header: "poclbin\0", device hash u64, version u32, kernel count u32,
//           flags u64, root entry count u32, build hash char[41]
//   root entry (x count): byte count u64, then files filling exactly that
//   file: path length u32 (> 0), path, content length u32, content
//   kernel (x count): record size u64, files size u64, argument info size
//           u32, name length u32 (> 0), name, argument count u32, local
//           count u32, required work-group size u64[3]; then (version 9)
//           local sizes u64[locals], attributes length u32 + text, metadata
//           flags u64, per argument: access u32, address u32, type
//           qualifier u64, type u32, type size u32, name length u32 + name,
//           type name length u32 + type name; the record's last `files size`
//           bytes are files.
// Versions after 9 changed the metadata between the fixed part and the
// files, so for them only the envelope is checked (record sizes, fixed
// part, files); a version before 9 is refused by PoCL from the header.
#include "backend.hpp"

#include <cstring>

namespace accel::opencl {
namespace {

constexpr char kMagic[8] = {'p', 'o', 'c', 'l', 'b', 'i', 'n', '\0'};
constexpr size_t kHashBytes = 41;  // SHA1_digest_t: 40 characters and a NUL
constexpr size_t kHeaderBytes = 8 + 8 + 4 + 4 + 8 + 4 + kHashBytes;  // 77
constexpr size_t kPathMax = 1024;                                    // PoCL's POCL_FILENAME_LENGTH
constexpr uint32_t kLayoutVersion = 9;

// A bounds-checked little-endian reader over [pos, end).
struct Reader {
  const unsigned char* data;
  size_t pos;
  size_t end;

  size_t left() const { return end - pos; }
  bool take(size_t n) {
    if (n > left()) return false;
    pos += n;
    return true;
  }
  bool u32(uint32_t& v) {
    if (left() < 4) return false;
    v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | data[pos + static_cast<size_t>(i)];
    pos += 4;
    return true;
  }
  bool u64(uint64_t& v) {
    if (left() < 8) return false;
    v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | data[pos + static_cast<size_t>(i)];
    pos += 8;
    return true;
  }
  // A u32 length and that many bytes; *at is where the bytes start.
  bool str(uint32_t& len, size_t* at = nullptr) {
    if (!u32(len)) return false;
    if (at != nullptr) *at = pos;
    return take(len);
  }
};

bool path_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == '/';
}

// "" when `len` bytes at p are a relative path that stays below the folder
// it is appended to: only path characters, no "." or ".." component.
std::string path_problem(const unsigned char* p, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i <= len; ++i) {
    if (i < len && !path_char(p[i]))
      return format("has byte 0x%02x at offset %zu (only letters, digits, '_', '-', '.', '/')",
                    static_cast<unsigned>(p[i]), i);
    if (i == len || p[i] == '/') {
      size_t n = i - start;
      if ((n == 1 && p[start] == '.') || (n == 2 && p[start] == '.' && p[start + 1] == '.'))
        return "has a '.' or '..' component";
      start = i + 1;
    }
  }
  return {};
}

// The files of [r.pos, r.pos + bytes), which they must fill exactly.
std::string files_problem(Reader& r, uint64_t bytes, const std::string& where) {
  if (bytes > r.left())
    return format("%s: %llu bytes of files, but only %zu bytes are left", where.c_str(),
                  static_cast<unsigned long long>(bytes), r.left());
  Reader f{r.data, r.pos, r.pos + static_cast<size_t>(bytes)};
  for (size_t n = 0; f.left() > 0; ++n) {
    uint32_t len = 0;
    size_t at = 0;
    if (!f.str(len, &at))
      return format("%s: file %zu's path runs past the end of its files", where.c_str(), n);
    if (len == 0 || len >= kPathMax)
      return format("%s: file %zu's path has %u bytes (1 to %zu)", where.c_str(), n, len,
                    kPathMax - 1);
    if (std::string why = path_problem(f.data + at, len); !why.empty())
      return format("%s: file %zu's path %s", where.c_str(), n, why.c_str());
    if (!f.str(len))
      return format("%s: file %zu's content (%u bytes) runs past the end of its files",
                    where.c_str(), n, len);
  }
  r.pos = f.end;
  return {};
}

// Version 9's kernel metadata in [r.pos, r.end): local sizes, attributes,
// flags, argument descriptions.
std::string metadata_problem(Reader& r, uint32_t args, uint32_t locals, const std::string& where) {
  uint32_t len = 0;
  uint64_t v = 0;
  if (!r.take(static_cast<size_t>(locals) * 8))
    return format("%s: %u local sizes run past its metadata", where.c_str(), locals);
  if (!r.str(len) || !r.u64(v))
    return format("%s: attributes run past its metadata", where.c_str());
  for (uint32_t a = 0; a < args; ++a) {
    if (!r.take(4 + 4 + 8 + 4 + 4) || !r.str(len) || !r.str(len))
      return format("%s: argument %u runs past its metadata", where.c_str(), a);
  }
  if (r.left() != 0)
    return format("%s: %zu bytes between its metadata and its files", where.c_str(), r.left());
  return {};
}

std::string kernel_problem(Reader& r, uint32_t version, uint32_t index) {
  std::string where = format("kernel record %u", index);
  const size_t start = r.pos;
  uint64_t record = 0, files = 0;
  uint32_t arginfo = 0, name_len = 0, args = 0, locals = 0;
  size_t name_at = 0;
  if (!r.u64(record) || !r.u64(files) || !r.u32(arginfo))
    return format("%s: its sizes run past the end of the binary", where.c_str());
  if (record > r.end - start)
    return format("%s: %llu bytes, but only %zu bytes are left", where.c_str(),
                  static_cast<unsigned long long>(record), r.end - start);
  Reader k{r.data, r.pos, start + static_cast<size_t>(record)};
  if (!k.str(name_len, &name_at) || name_len == 0)
    return format("%s: its name is empty or runs past the record", where.c_str());
  where += " ('" + std::string(reinterpret_cast<const char*>(k.data + name_at), name_len) + "')";
  if (!k.u32(args) || !k.u32(locals) || !k.take(3 * 8))
    return format("%s: its fixed part runs past the record", where.c_str());
  // Every argument takes at least 28 bytes of metadata: a larger count is
  // forged (PoCL reserves stack space for each argument before reading).
  if (static_cast<uint64_t>(args) * 28 > record)
    return format("%s: %u arguments cannot fit in %llu bytes", where.c_str(), args,
                  static_cast<unsigned long long>(record));
  if (files > k.left())
    return format("%s: %llu bytes of files, but only %zu bytes are left in the record",
                  where.c_str(), static_cast<unsigned long long>(files), k.left());
  const size_t files_at = k.end - static_cast<size_t>(files);
  if (version == kLayoutVersion) {
    Reader meta{k.data, k.pos, files_at};
    if (std::string why = metadata_problem(meta, args, locals, where); !why.empty()) return why;
  }
  k.pos = files_at;
  if (std::string why = files_problem(k, files, where); !why.empty()) return why;
  r.pos = k.end;
  return {};
}

}  // namespace

std::string pocl_binary_problem(const unsigned char* data, size_t size, bool cpu_device) {
  if (size < kHeaderBytes)
    return format(
        "%zu bytes is too short for a native binary of PoCL, which reads a %zu-byte "
        "header from any binary",
        size, kHeaderBytes);
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0) return {};  // not a container: PoCL decides
  Reader r{data, sizeof kMagic, size};
  uint64_t device_hash = 0, flags = 0;
  uint32_t version = 0, kernels = 0, roots = 0;
  r.u64(device_hash);
  r.u32(version);
  r.u32(kernels);
  r.u64(flags);
  r.u32(roots);
  if (version < kLayoutVersion) return {};  // PoCL refuses it from the header
  const unsigned char* hash = data + r.pos;
  r.take(kHashBytes);
  const size_t hash_len = strnlen(reinterpret_cast<const char*>(hash), kHashBytes);
  if (hash_len == 0 || hash_len == kHashBytes)
    return "PoCL binary: the build hash is empty or not NUL-terminated";
  if (hash[0] == '/') return "PoCL binary: the build hash starts with '/'";
  if (std::string why = path_problem(hash, hash_len); !why.empty())
    return "PoCL binary: the build hash " + why;
  if (kernels == 0) return "PoCL binary: no kernels (PoCL asserts on a binary without kernels)";
  // PoCL's CPU drivers serialize one root entry (program.bc) and assert on
  // another count; other drivers have their own count.
  if (roots == 0 || (cpu_device && roots != 1) || roots > 64)
    return format("PoCL binary: %u root entries (%s)", roots,
                  cpu_device ? "PoCL's CPU drivers write 1" : "1 to 64");
  for (uint32_t i = 0; i < roots; ++i) {
    uint64_t bytes = 0;
    if (!r.u64(bytes) || bytes == 0)
      return format("PoCL binary: root entry %u is empty or runs past the end", i);
    if (std::string why = files_problem(r, bytes, format("PoCL binary: root entry %u", i));
        !why.empty())
      return why;
  }
  for (uint32_t i = 0; i < kernels; ++i) {
    if (r.left() == 0)
      return format("PoCL binary: truncated: it names %u kernels and ends after %u", kernels, i);
    if (std::string why = kernel_problem(r, version, i); !why.empty()) return "PoCL binary: " + why;
  }
  if (r.left() != 0) return format("PoCL binary: %zu bytes after the last kernel record", r.left());
  return {};
}

}  // namespace accel::opencl
