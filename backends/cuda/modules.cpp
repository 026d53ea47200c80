// ABI 1.2 modules and kernels, but the launch (launch.cpp): the formats the
// driver loads, cuModuleLoadDataEx with the JIT's logs, cuModuleUnload,
// kernels by name (cuModuleGetFunction), their attributes
// (cuFuncGetAttribute) and parameters (cuFuncGetParamInfo, CUDA 12.4+).
// Semantics from the CUDA Driver API reference, "Module Management" and
// "Execution Control". Every call runs in the device's primary context
// (CtxScope), where the plugin's streams live.
#include <cstdint>
#include <cstring>
#include <memory>

#include "backend.hpp"
#include "images.hpp"

namespace accel::cuda {

namespace {

// Bytes of each JIT log buffer. A log longer than this is cut (the driver
// writes at most this much, NUL included).
constexpr unsigned kLogBytes = 64 * 1024;

// The most parameters kernel_get_params walks through: CUDA limits a
// kernel's parameters to 32764 bytes (CUDA 12.1+), so at most that many.
constexpr size_t kMaxParams = 32764;

constexpr uint64_t kFormats = ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_PTX) |
                              ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_CUBIN) |
                              ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_FATBIN);

// The status of a failed cuModuleLoadDataEx: the driver refused to build
// or load the image (the core then tries the caller's next one), ran out of
// memory, or failed otherwise.
accel_status_t load_failure(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
      return vendor_fail_as(ACCEL_ERROR_BUILD_FAILED, "cuModuleLoadDataEx", rc);
    default:
      return vendor_fail("cuModuleLoadDataEx", rc);
  }
}

// Hands one JIT log (NUL-terminated by the driver, at most kLogBytes) to
// the core.
void pass_log(accel_plugin_build_log_fn log, void* context, const std::string& buffer) {
  const size_t n = strnlen(buffer.data(), buffer.size());
  if (log != nullptr && n > 0) log(context, buffer.data(), n);
}

const char* format_name(accel_module_format_t f) {
  switch (f) {
    case ACCEL_MODULE_FORMAT_PTX:
      return "PTX";
    case ACCEL_MODULE_FORMAT_CUBIN:
      return "cubin";
    case ACCEL_MODULE_FORMAT_FATBIN:
      return "fat binary";
    default:
      return "unknown";
  }
}

}  // namespace

// PTX (JIT-compiled by the driver for the device), cubins and fat binaries:
// what cuModuleLoadDataEx takes. Which cubin runs on which device is the
// driver's to say at load time (CUDA_ERROR_NO_BINARY_FOR_GPU); no
// compiler is started here.
accel_status_t op_module_formats(int32_t device, uint64_t* formats) {
  return on_device("module_formats", device, [&](Device*) -> accel_status_t {
    *formats = kFormats;
    return ACCEL_SUCCESS;
  });
}

// cuModuleLoadDataEx in the device's primary context, with the JIT's
// error and info logs (CU_JIT_ERROR_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER,
// CU_JIT_LOG_VERBOSE: ptxas's per-kernel resource lines) handed to `log`,
// the error log first. The image is checked first (images.hpp): the driver
// takes no size, so a cut or foreign image must not reach it. PTX without
// a terminating NUL is copied into a buffer with one.
accel_status_t op_module_load(int32_t device, const accel_module_image_t* image,
                              const char* options, accel_plugin_build_log_fn log, void* log_context,
                              accel_plugin_module_t* module) {
  return on_device("module_load", device, [&](Device*) -> accel_status_t {
    if (options != nullptr && options[0] != '\0')
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "the CUDA driver takes no compiler options (cuModuleLoadDataEx has JIT "
                  "settings, not an option string); got \"%s\": pass NULL or \"\"",
                  options);
    ImageKind kind = ImageKind::ptx;
    switch (image->format) {
      case ACCEL_MODULE_FORMAT_PTX:
        kind = ImageKind::ptx;
        break;
      case ACCEL_MODULE_FORMAT_CUBIN:
        kind = ImageKind::cubin;
        break;
      case ACCEL_MODULE_FORMAT_FATBIN:
        kind = ImageKind::fatbin;
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "format %d is not one the CUDA driver loads (PTX, cubin, fat binary)",
                    static_cast<int>(image->format));
    }
    const auto* bytes = static_cast<const unsigned char*>(image->data);
    if (const std::string problem = image_problem(kind, bytes, image->size); !problem.empty())
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "malformed %s image (%zu bytes): %s",
                  format_name(image->format), image->size, problem.c_str());
    std::string terminated;
    const void* data = image->data;
    if (kind == ImageKind::ptx && ptx_needs_terminator(bytes, image->size)) {
      terminated.assign(static_cast<const char*>(image->data), image->size);
      data = terminated.c_str();
    }
    std::string info(kLogBytes, '\0');
    std::string error(kLogBytes, '\0');
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_LOG_VERBOSE};
    // Option values are the values themselves cast to void* (cuda.h, CUjit_option).
    void* values[] = {error.data(), reinterpret_cast<void*>(uintptr_t{kLogBytes}), info.data(),
                      reinterpret_cast<void*>(uintptr_t{kLogBytes}),
                      reinterpret_cast<void*>(uintptr_t{1})};
    static_assert(sizeof opts / sizeof opts[0] == sizeof values / sizeof values[0]);
    CUmodule handle = nullptr;
    CUresult rc = CUDA_SUCCESS;
    {
      ACCEL_CUDA_CTX_SCOPE(device);
      rc = driver().cuModuleLoadDataEx(&handle, data, sizeof opts / sizeof opts[0], opts, values);
    }
    pass_log(log, log_context, error);
    pass_log(log, log_context, info);
    if (rc != CUDA_SUCCESS) return load_failure(rc);
    auto m = std::make_unique<Module>();
    m->device = device;
    m->handle = handle;
    if (kind == ImageKind::ptx)
      m->param_types = ptx_param_types(static_cast<const char*>(data), image->size);
    *module = m.release();
    return ACCEL_SUCCESS;
  });
}

// cuModuleUnload; the core has waited for the device, so no launch of the
// module still runs (CUDA requires that). The plugin's record goes either
// way: the core forgets the module whatever this returns.
accel_status_t op_module_unload(accel_plugin_module_t module) {
  return guarded("module_unload", [&] {
    std::unique_ptr<Module> m(as_module(module));
    ACCEL_CUDA_CTX_SCOPE(m->device);
    ACCEL_CU_TRY(cuModuleUnload, (m->handle));
    return ACCEL_SUCCESS;
  });
}

// cuModuleGetFunction (CUDA_ERROR_NOT_FOUND: ACCEL_ERROR_INVALID_ARGUMENT),
// with the static shared memory and the dynamic shared memory limit every
// launch checks against.
accel_status_t op_kernel_create(accel_plugin_module_t module, const char* name,
                                accel_plugin_kernel_t* kernel) {
  return guarded("kernel_create", [&] {
    Module* m = as_module(module);
    ACCEL_CUDA_CTX_SCOPE(m->device);
    Driver& drv = driver();
    CUfunction fn = nullptr;
    CUresult rc = drv.cuModuleGetFunction(&fn, m->handle, name);
    if (rc == CUDA_ERROR_NOT_FOUND)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "no kernel '%s' in the module (cuModuleGetFunction: CUDA_ERROR_NOT_FOUND); "
                  "a CUDA C++ kernel keeps its plain name only when declared extern \"C\"",
                  name);
    if (rc != CUDA_SUCCESS) return vendor_fail("cuModuleGetFunction", rc);
    auto k = std::make_unique<Kernel>();
    k->device = m->device;
    k->fn = fn;
    k->name = name;
    if (auto it = m->param_types.find(name); it != m->param_types.end())
      k->param_types = it->second;
    int dynamic = 0;
    ACCEL_CU_TRY(cuFuncGetAttribute, (&k->static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn));
    ACCEL_CU_TRY(cuFuncGetAttribute,
                 (&dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn));
    k->dynamic_limit.store(dynamic, std::memory_order_relaxed);
    *kernel = k.release();
    return ACCEL_SUCCESS;
  });
}

// The CUfunction belongs to its module: only the plugin's record goes.
accel_status_t op_kernel_destroy(accel_plugin_kernel_t kernel) {
  return guarded("kernel_destroy", [&] {
    delete as_kernel(kernel);
    return ACCEL_SUCCESS;
  });
}

// cuFuncGetAttribute: MAX_THREADS_PER_BLOCK (what the kernel's registers
// and the device allow), SHARED_SIZE_BYTES (static shared memory),
// LOCAL_SIZE_BYTES (per thread), NUM_REGS; the preferred block multiple is
// the device's warp size.
accel_status_t op_kernel_get_attributes(accel_plugin_kernel_t kernel,
                                        accel_kernel_attributes_t* attributes) {
  return guarded("kernel_get_attributes", [&] {
    Kernel* k = as_kernel(kernel);
    const DeviceLimits* limits = nullptr;
    if (accel_status_t st = device_limits(k->device, limits); st != ACCEL_SUCCESS) return st;
    ACCEL_CUDA_CTX_SCOPE(k->device);
    int threads = 0, shared = 0, local = 0, regs = 0;
    ACCEL_CU_TRY(cuFuncGetAttribute, (&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn));
    ACCEL_CU_TRY(cuFuncGetAttribute, (&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn));
    ACCEL_CU_TRY(cuFuncGetAttribute, (&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->fn));
    ACCEL_CU_TRY(cuFuncGetAttribute, (&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn));
    attributes->max_threads_per_block = threads;
    attributes->static_shared_bytes = shared;
    attributes->private_bytes = local;
    attributes->num_registers = regs;
    attributes->preferred_block_multiple = limits->warp_size;
    return ACCEL_SUCCESS;
  });
}

// cuFuncGetParamInfo for index 0, 1, ... until CUDA_ERROR_INVALID_VALUE
// ("paramIndex must be less than the number of parameters"). The driver
// knows sizes, not types: an 8-byte parameter takes a device pointer or an
// 8-byte value, any other size a value of exactly that size. Types come
// from the module's PTX `.param` declarations (ptx_param_types) where it
// was loaded from PTX; cubins and fat binaries leave them 0 (unknown). LOCAL_MEMORY
// arguments take no parameter: they become dynamic shared memory
// (launch.cpp). Without cuFuncGetParamInfo (a driver older than 12.4):
// ACCEL_ERROR_NOT_SUPPORTED, and the core checks no argument.
accel_status_t op_kernel_get_params(accel_plugin_kernel_t kernel,
                                    accel_plugin_kernel_param_t* params, size_t capacity,
                                    size_t* count, uint32_t* flags) {
  return guarded("kernel_get_params", [&] {
    Kernel* k = as_kernel(kernel);
    const Driver& drv = driver();
    if (drv.cuFuncGetParamInfo == nullptr)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "the CUDA driver (CUDA %s) has no cuFuncGetParamInfo (CUDA 12.4+): kernel "
                  "arguments cannot be checked before launch",
                  version_text(drv.version).c_str());
    ACCEL_CUDA_CTX_SCOPE(k->device);
    size_t n = 0;
    for (;; ++n) {
      if (n > kMaxParams)
        return fail(ACCEL_ERROR_BACKEND_FAILURE,
                    "cuFuncGetParamInfo described more than %zu parameters of kernel '%s'",
                    kMaxParams, k->name.c_str());
      size_t offset = 0, size = 0;
      CUresult rc = drv.cuFuncGetParamInfo(k->fn, n, &offset, &size);
      if (rc == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      if (rc == CUDA_ERROR_NOT_SUPPORTED)
        return vendor_fail_as(ACCEL_ERROR_NOT_SUPPORTED, "cuFuncGetParamInfo", rc);
      if (rc != CUDA_SUCCESS) return vendor_fail("cuFuncGetParamInfo", rc);
      if (n < capacity && params != nullptr) {
        accel_plugin_kernel_param_t& p = params[n];
        p.kinds = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE);
        if (size == sizeof(CUdeviceptr))
          p.kinds |= ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER);
        p.type = 0;
        p.size = size;
      }
    }
    // The PTX's types only when its list agrees with the driver's.
    if (params != nullptr && k->param_types.size() == n) {
      for (size_t i = 0; i < n && i < capacity; ++i) params[i].type = k->param_types[i];
    }
    *count = n;
    *flags = ACCEL_PLUGIN_KERNEL_LOCAL_ARGS_IN_SHARED;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda
