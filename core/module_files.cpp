// Kernel image files: read whole with POSIX calls, format from the bytes.
#include "module_files.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <system_error>

namespace accel::core {
namespace {

// The ELF machine of the shared objects this process can dlopen (sim's
// images); 0 where the build does not know its own machine, and then any
// host-looking shared object counts.
constexpr unsigned kHostMachine =
#if defined(__x86_64__)
    EM_X86_64;
#elif defined(__aarch64__)
    EM_AARCH64;
#elif defined(__i386__)
    EM_386;
#elif defined(__arm__)
    EM_ARM;
#elif defined(__powerpc64__)
    EM_PPC64;
#elif defined(__riscv)
    EM_RISCV;
#elif defined(__s390x__)
    EM_S390;
#else
    0;
#endif

constexpr unsigned kMachineAmdgpu = 224;  // EM_AMDGPU
constexpr unsigned kMachineCuda = 190;    // EM_CUDA

uint32_t read_u32_le(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// A 16-bit ELF header field at `offset`, in the file's own byte order.
unsigned elf_half(const unsigned char* p, size_t offset) {
  const bool big = p[EI_DATA] == ELFDATA2MSB;
  return big ? (unsigned{p[offset]} << 8 | p[offset + 1])
             : (unsigned{p[offset + 1]} << 8 | p[offset]);
}

accel_module_format_t elf_format(const unsigned char* p) {
  const unsigned machine = elf_half(p, 18);  // e_machine
  const unsigned type = elf_half(p, 16);     // e_type
  if (machine == kMachineAmdgpu) return ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT;
  if (machine == kMachineCuda) return ACCEL_MODULE_FORMAT_CUBIN;
  const bool host = kHostMachine == 0 || machine == kHostMachine;
  return host && type == ET_DYN ? ACCEL_MODULE_FORMAT_SIM_HOST : ACCEL_MODULE_FORMAT_NATIVE_BINARY;
}

// Whether PTX text: after white space and C/C++ comments, ".version" (every
// PTX module starts with its ISA version directive).
bool is_ptx(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (std::strchr(" \t\r\n\f\v", text[i]) != nullptr) {
      ++i;
    } else if (text.substr(i, 2) == "//") {
      const size_t end = text.find('\n', i);
      i = end == std::string_view::npos ? text.size() : end + 1;
    } else if (text.substr(i, 2) == "/*") {
      const size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) return false;
      i = end + 2;
    } else {
      break;
    }
  }
  return text.substr(i, 8) == ".version";
}

std::string errno_text(int error) {
  return std::error_code(error, std::generic_category()).message();
}

}  // namespace

bool detect_module_format(const unsigned char* data, size_t size, accel_module_format_t& format) {
  if (size >= EI_NIDENT + 4 && std::memcmp(data, ELFMAG, SELFMAG) == 0) {
    format = elf_format(data);
    return true;
  }
  if (size >= 4) {
    const uint32_t magic = read_u32_le(data);
    if (magic == 0xBA55ED50u) {
      format = ACCEL_MODULE_FORMAT_FATBIN;
      return true;
    }
    if (magic == 0x07230203u || magic == 0x03022307u) {
      format = ACCEL_MODULE_FORMAT_SPIRV;
      return true;
    }
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string_view::npos) return false;
  format = is_ptx(text) ? ACCEL_MODULE_FORMAT_PTX : ACCEL_MODULE_FORMAT_OPENCL_C;
  return true;
}

ModuleFile read_module_file(const char* path) {
  ModuleFile f;
  f.path = path;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    f.skipped = errno_text(errno);
    return f;
  }
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    f.skipped = !stated               ? errno_text(errno)
                : S_ISDIR(st.st_mode) ? errno_text(EISDIR)
                                      : "not a regular file";
    ::close(fd);
    return f;
  }
  f.bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < f.bytes.size()) {
    const ssize_t n = ::read(fd, f.bytes.data() + done, f.bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      f.skipped = errno_text(errno);
      break;
    }
    if (n == 0) break;  // shrank while read: use what is there
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  f.bytes.resize(done);
  if (f.skipped.empty() && f.bytes.empty()) f.skipped = "the file is empty";
  if (f.skipped.empty() && !detect_module_format(f.bytes.data(), f.bytes.size(), f.format))
    f.skipped = "not a kernel image (a binary file of no format accel knows)";
  return f;
}

}  // namespace accel::core
