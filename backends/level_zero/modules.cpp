// Modules and kernels (ABI 1.2), from the Level Zero specification's
// "Modules" and "Kernels" chapters: module_formats (zeDeviceGetModuleProperties),
// module_load (zeModuleCreate from SPIR-V or the device's native binary, its
// build log), kernels (zeKernelCreate, zeKernelGetProperties) and what they
// tell the core. Launches are in launch.cpp.
#include "backend.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

namespace accel::level_zero {

namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr size_t kSpirvHeaderBytes = 20;  // magic, version, generator, bound, schema

Module* as_module(accel_plugin_module_t m) { return static_cast<Module*>(m); }
Kernel* as_kernel(accel_plugin_kernel_t k) { return static_cast<Kernel*>(k); }

// The SPIR-V specification (2.3, "Physical Layout"): a module is a stream
// of 32-bit words starting with a 5-word header whose first word is the
// magic number, in either byte order (it tells the module's endianness).
accel_status_t check_spirv(const accel_module_image_t* image) {
  if (image->size % 4 != 0)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: SPIR-V image of %zu bytes: not a whole number of 32-bit words",
                image->size);
  if (image->size < kSpirvHeaderBytes)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: SPIR-V image of %zu bytes is truncated: its header alone is %zu",
                image->size, kSpirvHeaderBytes);
  uint32_t magic = 0;
  std::memcpy(&magic, image->data, sizeof magic);
  const uint32_t swapped = __builtin_bswap32(magic);
  if (magic != kSpirvMagic && swapped != kSpirvMagic)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: not SPIR-V: the image starts with 0x%08x, not the SPIR-V magic "
                "number 0x%08x",
                magic, kSpirvMagic);
  return ACCEL_SUCCESS;
}

// Hands the build log's text to the core, then destroys the log. A failure
// to read it is logged, never the load's result.
void pass_build_log(Device* d, ze_module_build_log_handle_t log, accel_plugin_build_log_fn sink,
                    void* context) {
  size_t size = 0;
  ze_result_t r = ze.zeModuleBuildLogGetString(log, &size, nullptr);
  if (r == ZE_RESULT_SUCCESS && size > 1) {
    std::string text(size, '\0');
    r = ze.zeModuleBuildLogGetString(log, &size, text.data());
    if (r == ZE_RESULT_SUCCESS) {
      const size_t length = strnlen(text.data(), std::min(size, text.size()));
      if (length > 0 && sink != nullptr) sink(context, text.data(), length);
    }
  }
  if (r != ZE_RESULT_SUCCESS)
    accel::plugin::log(ACCEL_LOG_DEBUG, "%s: build log unreadable: %s", d->label(),
                       vendor_failure("zeModuleBuildLogGetString", r, d->driver->handle).c_str());
  if (ze_result_t rd = ze.zeModuleBuildLogDestroy(log); rd != ZE_RESULT_SUCCESS)
    accel::plugin::log(ACCEL_LOG_DEBUG, "%s: %s", d->label(),
                       vendor_failure("zeModuleBuildLogDestroy", rd, d->driver->handle).c_str());
}

}  // namespace

// SPIR-V when zeDeviceGetModuleProperties reports a SPIR-V version (the
// driver's IL compiler), and the device's native binary always (what
// zeModuleGetNativeBinary gives, loadable on the same kind of device).
accel_status_t op_module_formats(int32_t device, uint64_t* formats) {
  return on_device("module_formats", device, [&](Device* d) -> accel_status_t {
    if (formats == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_formats: formats is NULL");
    ze_device_module_properties_t mp{};
    if (accel_status_t st = module_properties(d, &mp); st != ACCEL_SUCCESS) return st;
    uint64_t mask = ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_NATIVE_BINARY);
    if (mp.spirvVersionSupported != 0) mask |= ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_SPIRV);
    *formats = mask;
    return ACCEL_SUCCESS;
  });
}

// zeModuleCreate on the driver's context: ZE_MODULE_FORMAT_IL_SPIRV (the
// header checked first) or ZE_MODULE_FORMAT_NATIVE, `options` as
// pBuildFlags. The driver compiles before returning. Its build log goes to
// `log` on success and on failure, except a failed build's log while the
// loader may intercept (loader_may_intercept: that log handle is not safe
// to use), which the detail then mentions.
accel_status_t op_module_load(int32_t device, const accel_module_image_t* image,
                              const char* options, accel_plugin_build_log_fn log, void* log_context,
                              accel_plugin_module_t* module) {
  return on_device("module_load", device, [&](Device* d) -> accel_status_t {
    if (image == nullptr || image->data == nullptr || image->size == 0 || module == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_load: NULL or empty image, or NULL module");
    ze_module_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
    if (image->format == ACCEL_MODULE_FORMAT_SPIRV) {
      if (accel_status_t st = check_spirv(image); st != ACCEL_SUCCESS) return st;
      desc.format = ZE_MODULE_FORMAT_IL_SPIRV;
    } else if (image->format == ACCEL_MODULE_FORMAT_NATIVE_BINARY) {
      desc.format = ZE_MODULE_FORMAT_NATIVE;
    } else {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "module_load: format %d is neither SPIR-V nor a native binary",
                  static_cast<int>(image->format));
    }
    desc.inputSize = image->size;
    desc.pInputModule = static_cast<const uint8_t*>(image->data);
    desc.pBuildFlags = options != nullptr && *options != '\0' ? options : nullptr;
    desc.pConstants = nullptr;
    ze_module_handle_t handle = nullptr;
    ze_module_build_log_handle_t build_log = nullptr;
    ze_result_t r = ze.zeModuleCreate(d->driver->context, d->handle, &desc, &handle, &build_log);
    const bool log_unsafe = r != ZE_RESULT_SUCCESS && loader_may_intercept();
    if (build_log != nullptr && !log_unsafe) pass_build_log(d, build_log, log, log_context);
    if (r == ZE_RESULT_ERROR_MODULE_BUILD_FAILURE || r == ZE_RESULT_ERROR_INVALID_NATIVE_BINARY) {
      std::string detail = vendor_failure("zeModuleCreate", r, d->driver->handle);
      if (log_unsafe && build_log != nullptr)
        detail +=
            " (the build log is not read: the Level Zero loader intercepts calls, with several "
            "drivers or ZE_ENABLE_LOADER_INTERCEPT=1, and returns a failed build's log "
            "unconverted)";
      return fail(ACCEL_ERROR_BUILD_FAILED, detail);
    }
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeModuleCreate", r, d->driver->handle);
    auto* m = new (std::nothrow) Module();
    if (m == nullptr) {
      ze.zeModuleDestroy(handle);
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "module_load: out of host memory");
    }
    m->dev = d;
    m->handle = handle;
    if (image->format == ACCEL_MODULE_FORMAT_SPIRV)
      m->params = spirv_kernel_params(image->data, image->size);
    *module = m;
    return ACCEL_SUCCESS;
  });
}

// The core destroyed the module's kernels and waited for the device first,
// as zeModuleDestroy requires.
accel_status_t op_module_unload(accel_plugin_module_t module) {
  return guarded("module_unload", [&]() -> accel_status_t {
    Module* m = as_module(module);
    if (m == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_unload: module is NULL");
    ze_result_t r = ze.zeModuleDestroy(m->handle);
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeModuleDestroy", r, m->dev->driver->handle);
    delete m;
    return ACCEL_SUCCESS;
  });
}

// zeKernelCreate, then the kernel's properties and the device's limits,
// which every launch checks.
accel_status_t op_kernel_create(accel_plugin_module_t module, const char* name,
                                accel_plugin_kernel_t* kernel) {
  return guarded("kernel_create", [&]() -> accel_status_t {
    Module* m = as_module(module);
    if (m == nullptr || name == nullptr || kernel == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_create: NULL argument");
    Device* d = m->dev;
    ze_kernel_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
    desc.flags = 0;
    desc.pKernelName = name;
    ze_kernel_handle_t handle = nullptr;
    ze_result_t r = ze.zeKernelCreate(m->handle, &desc, &handle);
    if (r == ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_create: the module has no kernel '%s' (%s)",
                  name, vendor_failure("zeKernelCreate", r, d->driver->handle).c_str());
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeKernelCreate", r, d->driver->handle);
    auto k = std::make_unique<Kernel>();
    k->module = m;
    k->dev = d;
    k->handle = handle;
    k->name = name;
    if (auto it = m->params.find(name); it != m->params.end()) k->params = it->second;
    k->props.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
    r = ze.zeKernelGetProperties(handle, &k->props);
    const char* call = "zeKernelGetProperties";
    if (r == ZE_RESULT_SUCCESS) {
      k->limits.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
      r = ze.zeDeviceGetComputeProperties(d->handle, &k->limits);
      call = "zeDeviceGetComputeProperties";
    }
    if (r != ZE_RESULT_SUCCESS) {
      accel_status_t st = vendor_fail(call, r, d->driver->handle);
      ze.zeKernelDestroy(handle);
      return st;
    }
    k->props.pNext = nullptr;
    k->limits.pNext = nullptr;
    *kernel = k.release();
    return ACCEL_SUCCESS;
  });
}

// zeKernelDestroy. The core calls it only while unloading the module, after
// waiting for the device (the kernel must no longer be in use).
accel_status_t op_kernel_destroy(accel_plugin_kernel_t kernel) {
  return guarded("kernel_destroy", [&]() -> accel_status_t {
    Kernel* k = as_kernel(kernel);
    if (k == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_destroy: kernel is NULL");
    ze_result_t r = ze.zeKernelDestroy(k->handle);
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeKernelDestroy", r, k->dev->driver->handle);
    delete k;
    return ACCEL_SUCCESS;
  });
}

// From zeKernelGetProperties and the device (README.md, "Modules and
// kernels"): Level Zero reports no register count.
accel_status_t op_kernel_get_attributes(accel_plugin_kernel_t kernel,
                                        accel_kernel_attributes_t* attributes) {
  return guarded("kernel_get_attributes", [&]() -> accel_status_t {
    Kernel* k = as_kernel(kernel);
    if (k == nullptr || attributes == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_get_attributes: NULL argument");
    const ze_kernel_properties_t& p = k->props;
    int64_t max_threads = k->limits.maxTotalGroupSize;
    // A kernel with a required group size (reqd_work_group_size) runs with
    // that size only.
    if (p.requiredGroupSizeX != 0 && p.requiredGroupSizeY != 0 && p.requiredGroupSizeZ != 0)
      max_threads = int64_t{p.requiredGroupSizeX} * p.requiredGroupSizeY * p.requiredGroupSizeZ;
    attributes->max_threads_per_block = max_threads;
    attributes->static_shared_bytes = p.localMemSize;
    attributes->private_bytes = int64_t{p.privateMemSize} + p.spillMemSize;
    attributes->num_registers = -1;
    const uint32_t multiple =
        p.requiredSubgroupSize != 0 ? p.requiredSubgroupSize : p.maxSubgroupSize;
    attributes->preferred_block_multiple = multiple != 0 ? multiple : -1;
    attributes->num_args = static_cast<int32_t>(p.numKernelArgs);
    return ACCEL_SUCCESS;
  });
}

// numKernelArgs parameters. Level Zero's core API tells neither a
// parameter's kind nor its size (zeKernelGetSourceAttributes gives
// attributes, not types), so each takes any kind and any size: the core
// checks the count, the driver the rest when the arguments are set
// (ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, which launch_kernel reports
// as ACCEL_ERROR_INVALID_ARGUMENT). A local memory argument is a parameter
// (flags 0).
accel_status_t op_kernel_get_params(accel_plugin_kernel_t kernel,
                                    accel_plugin_kernel_param_t* params, size_t capacity,
                                    size_t* count, uint32_t* flags) {
  return guarded("kernel_get_params", [&]() -> accel_status_t {
    Kernel* k = as_kernel(kernel);
    if (k == nullptr || count == nullptr || flags == nullptr || (params == nullptr && capacity > 0))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_get_params: NULL argument");
    const size_t n = k->props.numKernelArgs;
    // The SPIR-V's declarations when they agree with the driver's count;
    // otherwise (a native binary) any kind and size.
    const bool known = k->params.size() == n;
    for (size_t i = 0; i < n && i < capacity; ++i) {
      if (known) {
        params[i] = k->params[i];
        continue;
      }
      params[i].kinds = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE) |
                        ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER) |
                        ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_LOCAL_MEMORY);
      params[i].type = 0;
      params[i].size = 0;
    }
    *count = n;
    *flags = 0;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::level_zero
