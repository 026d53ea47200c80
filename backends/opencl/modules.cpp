// Modules (ABI 1.2): which image formats a device takes, building a
// cl_program from one, its build log, unloading.
//
// Formats (module_formats):
//  - OPENCL_C: clCreateProgramWithSource + clBuildProgram, on every device
//    with a compiler (CL_DEVICE_COMPILER_AVAILABLE; only an embedded-profile
//    device may lack one);
//  - NATIVE_BINARY: clCreateProgramWithBinary + clBuildProgram, on every
//    device: the bytes clGetProgramInfo(CL_PROGRAM_BINARIES) gave for a
//    program of the same device and driver;
//  - SPIRV: clCreateProgramWithIL (OpenCL 2.1 and later) or cl_khr_il_program's
//    clCreateProgramWithILKHR, where CL_DEVICE_IL_VERSION names "SPIR-V".
//    PoCL 3.1's CPU devices answer an empty IL version: no SPIR-V there.
//
// Every build adds "-cl-kernel-arg-info" to the caller's options, so that
// clGetKernelArgInfo can tell kernel_get_params what each parameter takes
// (for a binary PoCL reports it when the build options ask for it; a
// driver that refuses the option for a binary or IL gets the caller's
// options alone).
//
// Statuses: a malformed image (source with a NUL inside, SPIR-V without its
// magic or cut mid-word, a PoCL binary that fails pocl_binary_problem) is
// ACCEL_ERROR_INVALID_ARGUMENT saying what is wrong, before OpenCL sees it;
// CL_BUILD_PROGRAM_FAILURE, CL_INVALID_BINARY (another device's or driver's
// binary), a refused IL, CL_COMPILER_NOT_AVAILABLE and
// CL_LINKER_NOT_AVAILABLE are ACCEL_ERROR_BUILD_FAILED (the core then tries
// the caller's next image); CL_INVALID_BUILD_OPTIONS is
// ACCEL_ERROR_INVALID_ARGUMENT naming the options. The build log
// (CL_PROGRAM_BUILD_LOG) goes to the core whenever it has more than
// whitespace, after a success too.
#include "backend.hpp"
#include "device_info.hpp"

#include <cctype>
#include <cstring>

namespace accel::opencl {
namespace {

constexpr const char* kArgInfo = "-cl-kernel-arg-info";
constexpr uint32_t kSpirvMagic = 0x07230203;

bool blank(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isspace(c)) return false;
  return true;
}

// The caller's options with "-cl-kernel-arg-info" added (once).
std::string with_arg_info(const char* options) {
  std::string opts = options;
  if (opts.find(kArgInfo) != std::string::npos) return opts;
  if (!opts.empty()) opts += ' ';
  return opts + kArgInfo;
}

// Hands the device's build log of `prog` to the core, when it has more
// than whitespace; a failed query is logged, never an error of the load.
void pass_build_log(cl_program prog, cl_device_id dev, accel_plugin_build_log_fn log,
                    void* log_context) {
  size_t n = 0;
  cl_int err = clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  if (err != CL_SUCCESS) {
    log_vendor_failure(ACCEL_LOG_DEBUG, "clGetProgramBuildInfo(CL_PROGRAM_BUILD_LOG)", err,
                       "(no build log)");
    return;
  }
  if (n <= 1) return;
  std::string text(n, '\0');
  err = clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, text.data(), nullptr);
  if (err != CL_SUCCESS) {
    log_vendor_failure(ACCEL_LOG_DEBUG, "clGetProgramBuildInfo(CL_PROGRAM_BUILD_LOG)", err,
                       "(no build log)");
    return;
  }
  text.resize(std::strlen(text.c_str()));
  if (!blank(text) && log != nullptr) log(log_context, text.data(), text.size());
}

// What is wrong with an OpenCL C image: a NUL before its end (trailing NULs
// are the C string's terminator and are dropped from *size).
std::string source_problem(const char* text, size_t* size) {
  size_t n = *size;
  while (n > 0 && text[n - 1] == '\0') --n;
  if (n == 0) return "the OpenCL C source is empty (only NUL bytes)";
  if (const void* nul = std::memchr(text, '\0', n))
    return format(
        "the OpenCL C source has a NUL byte at offset %zu of %zu (text ends at its "
        "first NUL for OpenCL)",
        static_cast<size_t>(static_cast<const char*>(nul) - text), *size);
  *size = n;
  return {};
}

// What is wrong with a SPIR-V image: size and magic (either byte order).
std::string spirv_problem(const unsigned char* data, size_t size) {
  if (size < 20 || size % 4 != 0)
    return format(
        "a SPIR-V module is a whole number of 4-byte words, at least the 5 of its "
        "header; this one has %zu bytes",
        size);
  uint32_t word = 0;
  std::memcpy(&word, data, 4);
  const uint32_t swapped = __builtin_bswap32(word);
  if (word != kSpirvMagic && swapped != kSpirvMagic)
    return format("not SPIR-V: the first word is 0x%08x, not the magic 0x%08x", word, kSpirvMagic);
  return {};
}

// The status of a failed clBuildProgram, with what OpenCL said.
accel_status_t build_failure(cl_int err, const Device* dev, const char* options) {
  std::string call =
      format("clBuildProgram on OpenCL %s with options \"%s\"", dev->label().c_str(), options);
  std::string what = accel::plugin::vendor_failure_message(call.c_str(), cl_error_name(err), err,
                                                           cl_error_text(err));
  switch (err) {
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_INVALID_BINARY:
    case CL_COMPILER_NOT_AVAILABLE:
    case CL_LINKER_NOT_AVAILABLE:
      return fail(ACCEL_ERROR_BUILD_FAILED, what + " (the build log says why)");
    case CL_INVALID_BUILD_OPTIONS:
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, what);
    default:
      return fail(status_of(err), what);
  }
}

// Creates the program of `image` (not built). Malformed images are refused
// here, before OpenCL reads them.
accel_status_t create_program(Device* dev, cl_context ctx, const accel_module_image_t* image,
                              cl_program* out) {
  const auto* bytes = static_cast<const unsigned char*>(image->data);
  size_t size = image->size;
  cl_int err = CL_SUCCESS;
  cl_program prog = nullptr;
  switch (image->format) {
    case ACCEL_MODULE_FORMAT_OPENCL_C: {
      const char* text = static_cast<const char*>(image->data);
      if (std::string why = source_problem(text, &size); !why.empty())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_load: %s", why.c_str());
      prog = clCreateProgramWithSource(ctx, 1, &text, &size, &err);
      if (prog == nullptr || err != CL_SUCCESS)
        return vendor_fail("clCreateProgramWithSource", err);
      break;
    }
    case ACCEL_MODULE_FORMAT_NATIVE_BINARY: {
      if (dev->pocl) {
        if (std::string why =
                pocl_binary_problem(bytes, size, (dev->type & CL_DEVICE_TYPE_CPU) != 0);
            !why.empty())
          return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_load: native binary for OpenCL %s: %s",
                      dev->label().c_str(), why.c_str());
      }
      cl_int status = CL_SUCCESS;
      prog = clCreateProgramWithBinary(ctx, 1, &dev->id, &size, &bytes, &status, &err);
      if (err == CL_INVALID_BINARY || status == CL_INVALID_BINARY) {
        if (prog != nullptr) clReleaseProgram(prog);
        return fail(ACCEL_ERROR_BUILD_FAILED,
                    "module_load: clCreateProgramWithBinary: OpenCL %s does not take this binary "
                    "(CL_INVALID_BINARY): it was made for another device or driver, or is not a "
                    "program binary",
                    dev->label().c_str());
      }
      if (prog == nullptr || err != CL_SUCCESS) {
        if (prog != nullptr) clReleaseProgram(prog);
        return vendor_fail("clCreateProgramWithBinary", err);
      }
      break;
    }
    case ACCEL_MODULE_FORMAT_SPIRV: {
      if (std::string why = spirv_problem(bytes, size); !why.empty())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_load: %s", why.c_str());
      const char* call = "clCreateProgramWithIL";
      if (dev->create_il_khr != nullptr) {
        call = "clCreateProgramWithILKHR";
        prog = dev->create_il_khr(ctx, bytes, size, &err);
      } else {
        prog = clCreateProgramWithIL(ctx, bytes, size, &err);
      }
      if (err == CL_INVALID_VALUE) {  // "il is not a well-formed intermediate language"
        if (prog != nullptr) clReleaseProgram(prog);
        return fail(ACCEL_ERROR_BUILD_FAILED,
                    "module_load: %s refused the SPIR-V module on OpenCL %s (CL_INVALID_VALUE: not "
                    "IL this driver reads)",
                    call, dev->label().c_str());
      }
      if (prog == nullptr || err != CL_SUCCESS) {
        if (prog != nullptr) clReleaseProgram(prog);
        return vendor_fail(call, err);
      }
      break;
    }
    default:
      // The core passes only formats module_formats listed.
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "module_load: OpenCL %s does not load format %d",
                  dev->label().c_str(), static_cast<int>(image->format));
  }
  *out = prog;
  return ACCEL_SUCCESS;
}

}  // namespace

void describe_modules(Device* dev, const std::string& platform_name) {
  cl_device_id d = dev->id;
  dev->pocl = platform_name == "Portable Computing Language";
  dev->compiler = device_value<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE, CL_TRUE) != CL_FALSE;
  size_t sizes[3] = {1, 1, 1};
  cl_uint dims = device_value<cl_uint>(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, 3);
  if (dims >= 3 && clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes,
                                   nullptr) == CL_SUCCESS) {
    std::memcpy(dev->max_work_item, sizes, sizeof sizes);
  } else if (dims < 3) {
    // A custom device with fewer dimensions: the missing ones hold 1.
    std::vector<size_t> v(dims);
    if (dims > 0 && clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t),
                                    v.data(), nullptr) == CL_SUCCESS)
      for (cl_uint i = 0; i < dims; ++i) dev->max_work_item[i] = v[i];
  }
  dev->max_work_group = device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, 1);
  dev->local_mem = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE, 0);
  dev->address_bits = device_value<cl_uint>(d, CL_DEVICE_ADDRESS_BITS, 64);
  // SPIR-V: named by CL_DEVICE_IL_VERSION (core in 2.1, CL_DEVICE_IL_VERSION_KHR
  // with cl_khr_il_program: the same value), with a way to create from it.
  const bool core_il =
      dev->version_major > 2 || (dev->version_major == 2 && dev->version_minor >= 1);
  const bool khr_il = dev->has_extension("cl_khr_il_program");
  if (core_il || khr_il) {
    const std::string il = device_string(d, CL_DEVICE_IL_VERSION);
    if (il.find("SPIR-V") != std::string::npos) {
      if (core_il) {
        dev->spirv = true;
      } else {
        dev->create_il_khr = reinterpret_cast<clCreateProgramWithILKHR_fn>(
            clGetExtensionFunctionAddressForPlatform(dev->platform, "clCreateProgramWithILKHR"));
        dev->spirv = dev->create_il_khr != nullptr;
      }
    }
  }
}

// OPENCL_C where the device has a compiler, NATIVE_BINARY always, SPIRV
// where it names SPIR-V (see the top). Cheap and starts no compiler: the
// answer was read at count time. Thread-safe.
accel_status_t op_module_formats(int32_t device, uint64_t* formats) {
  return on_device("module_formats", device, [&](Device* dev) -> accel_status_t {
    uint64_t mask = ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_NATIVE_BINARY);
    if (dev->compiler) mask |= ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_OPENCL_C);
    if (dev->spirv) mask |= ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_SPIRV);
    *formats = mask;
    return ACCEL_SUCCESS;
  });
}

// Creates and builds the program of `image` for the device (statuses at
// the top of this file), passing the build log on. Blocks while the driver
// compiles. Thread-safe: every load makes its own program; the device's
// context is shared (OpenCL contexts are thread-safe).
accel_status_t op_module_load(int32_t device, const accel_module_image_t* image,
                              const char* options, accel_plugin_build_log_fn log, void* log_context,
                              accel_plugin_module_t* module) {
  return on_device("module_load", device, [&](Device* dev) -> accel_status_t {
    if (options == nullptr) options = "";
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
    cl_program prog = nullptr;
    if (accel_status_t st = create_program(dev, ctx, image, &prog); st != ACCEL_SUCCESS) return st;
    const std::string opts = with_arg_info(options);
    cl_int err = clBuildProgram(prog, 1, &dev->id, opts.c_str(), nullptr, nullptr);
    const char* used = opts.c_str();
    if (err == CL_INVALID_BUILD_OPTIONS && image->format != ACCEL_MODULE_FORMAT_OPENCL_C &&
        opts != options) {
      // A driver may take no compiler options for a binary or IL: the
      // caller's alone (argument information then depends on the driver).
      err = clBuildProgram(prog, 1, &dev->id, options, nullptr, nullptr);
      used = options;
    }
    pass_build_log(prog, dev->id, log, log_context);
    if (err != CL_SUCCESS) {
      accel_status_t st = build_failure(err, dev, used);
      clReleaseProgram(prog);
      return st;
    }
    Module* m = nullptr;
    try {
      m = new Module();
    } catch (...) {
      clReleaseProgram(prog);
      throw;
    }
    m->dev = dev;
    m->program = prog;
    m->format = image->format;
    *module = m;
    return ACCEL_SUCCESS;
  });
}

// The core destroyed the module's kernels and waited for the device first.
// A kernel object still held elsewhere keeps the program alive (OpenCL
// reference counting), so this only drops the module's reference.
accel_status_t op_module_unload(accel_plugin_module_t module) {
  return guarded("module_unload", [&]() -> accel_status_t {
    auto* m = static_cast<Module*>(module);
    cl_int err = clReleaseProgram(m->program);
    delete m;
    if (err != CL_SUCCESS) return vendor_fail("clReleaseProgram", err);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::opencl
