// Modules and kernels (ABI 1.2) over HIP's module API: AMD code objects
// loaded with hipModuleLoadData, kernels found with hipModuleGetFunction,
// their attributes from hipFuncGetAttribute, and their parameters from the
// code object's own AMDGPU metadata (code_object.hpp), since HIP has no call
// that tells them. Launches are in launch.cpp.
//
// Every call runs with the module's device current (DeviceScope): HIP loads
// a module for the current device, and hipFuncGetAttribute answers for the
// current device's code of the function.
#include <memory>

#include "backend.hpp"

namespace accel::hip {

namespace {

// What a load failure says about the image and the device, so "no code for
// this GPU" names both ISAs.
std::string image_and_device(const CodeObjectHeader& h, int32_t device) {
  std::string device_arch = gcn_arch_name(device);
  return format(" (the code object is for %s, e_flags 0x%x; device %d is %s)",
                amdgpu_mach_name(h.flags).c_str(), static_cast<unsigned>(h.flags),
                static_cast<int>(device),
                device_arch.empty() ? "of unknown ISA" : device_arch.c_str());
}

// hipModuleLoadData's answers that mean "this image does not build or load
// here" (not a fault of the runtime): the core then tries the caller's next
// image. HIP documents hipErrorSharedObjectInitFailed for hipModuleLoad;
// ROCclr answers hipErrorNoBinaryForGpu for an ISA the device cannot run and
// hipErrorInvalidImage / hipErrorInvalidKernelFile for a code object it
// cannot read.
bool is_build_failure(hipError_t rc) noexcept {
  switch (rc) {
    case hipErrorInvalidImage:
    case hipErrorNoBinaryForGpu:
    case hipErrorSharedObjectInitFailed:
    case hipErrorInvalidKernelFile:
      return true;
    default:
      return false;
  }
}

// Up to `limit` kernel names of the module's metadata, for "no kernel named".
std::string kernel_names(const Module& m, size_t limit = 12) {
  if (!m.metadata.present || m.metadata.kernels.empty()) return {};
  std::string out = "; the module's kernels: ";
  for (size_t i = 0; i < m.metadata.kernels.size() && i < limit; ++i) {
    if (i > 0) out += ", ";
    out += m.metadata.kernels[i].name;
  }
  if (m.metadata.kernels.size() > limit) out += ", ...";
  return out;
}

}  // namespace

accel_status_t kernel_attribute(const Kernel& k, hipFunction_attribute attrib, const char* what,
                                int& value) {
  if (hipError_t rc = runtime().hipFuncGetAttribute(&value, attrib, k.native); rc != hipSuccess)
    return vendor_fail("hipFuncGetAttribute", rc,
                       format("(%s of kernel '%s')", what, k.name.c_str()));
  return ACCEL_SUCCESS;
}

// Cheap and compiler-free: the mask depends only on the runtime's exports.
accel_status_t op_module_formats(int32_t device, uint64_t* formats) {
  return on_device("module_formats", device, [&](Device*) -> accel_status_t {
    const char* missing = nullptr;
    *formats = module_api_present(missing)
                   ? ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT)
                   : 0;
    return ACCEL_SUCCESS;
  });
}

// hipModuleLoadData after check_code_object: HIP has no build log for code
// objects (nothing is compiled), so `log` is not called. The image is copied
// by the runtime; the caller may free it once this returns.
accel_status_t op_module_load(int32_t device, const accel_module_image_t* image,
                              const char* options, accel_plugin_build_log_fn /*log*/,
                              void* /*log_context*/, accel_plugin_module_t* module) {
  return on_device("module_load", device, [&](Device* d) -> accel_status_t {
    if (options != nullptr && options[0] != '\0') {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "hipModuleLoadData takes no compiler options (an AMD code object is already "
                  "compiled); got \"%s\": pass NULL or \"\"",
                  options);
    }
    const char* missing = nullptr;
    if (!module_api_present(missing)) {
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "the HIP runtime %s does not export %s: no modules",
                  runtime_label().c_str(), missing);
    }
    if (image->format != ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT) {
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "module_load: format %d is not an AMD code object",
                  static_cast<int>(image->format));
    }
    CodeObjectHeader header;
    std::string why;
    if (!check_code_object(image->data, image->size, header, why)) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "malformed AMD code object (%zu bytes): %s",
                  image->size, why.c_str());
    }
    auto m = std::make_unique<Module>();
    m->device = d->index;
    m->metadata = read_kernel_metadata(image->data, image->size);
    if (!m->metadata.present && accel::plugin::log_enabled(ACCEL_LOG_DEBUG)) {
      accel::plugin::log(ACCEL_LOG_DEBUG,
                         "kernel parameters unknown for this code object (%s): launches are "
                         "checked by the HIP runtime only",
                         m->metadata.why_not.c_str());
    }
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    const hipError_t rc = runtime().hipModuleLoadData(&m->native, image->data);
    if (rc == hipSuccess) {
      *module = m.release();
      return ACCEL_SUCCESS;
    }
    if (is_build_failure(rc)) {
      return fail(ACCEL_ERROR_BUILD_FAILED, "%s%s",
                  vendor_failure_text("hipModuleLoadData", rc).c_str(),
                  image_and_device(header, d->index).c_str());
    }
    return vendor_fail("hipModuleLoadData", rc, format("(device %d)", static_cast<int>(d->index)));
  });
}

// The core destroyed the module's kernels and synchronized the device first.
// The Module is freed whatever HIP answers: the core drops the handle anyway.
accel_status_t op_module_unload(accel_plugin_module_t module) {
  return guarded("module_unload", [&]() -> accel_status_t {
    std::unique_ptr<Module> m(module_of(module));
    ACCEL_HIP_DEVICE_SCOPE(m->device);
    if (hipError_t rc = runtime().hipModuleUnload(m->native); rc != hipSuccess)
      return vendor_fail("hipModuleUnload", rc);
    return ACCEL_SUCCESS;
  });
}

// hipModuleGetFunction; the kernel's static shared memory is read now, once,
// for the launch-time shared memory check.
accel_status_t op_kernel_create(accel_plugin_module_t module, const char* name,
                                accel_plugin_kernel_t* kernel) {
  return guarded("kernel_create", [&]() -> accel_status_t {
    Module* m = module_of(module);
    ACCEL_HIP_DEVICE_SCOPE(m->device);
    auto k = std::make_unique<Kernel>();
    k->module = m;
    k->name = name;
    const hipError_t rc = runtime().hipModuleGetFunction(&k->native, m->native, name);
    if (rc == hipErrorNotFound) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "the module has no kernel named '%s' (%s)%s (a C++ kernel has its mangled "
                  "name unless declared extern \"C\")",
                  name, vendor_failure_text("hipModuleGetFunction", rc).c_str(),
                  kernel_names(*m).c_str());
    }
    if (rc != hipSuccess) return vendor_fail("hipModuleGetFunction", rc, format("('%s')", name));
    k->params = m->metadata.find(k->name);
    int shared = 0;
    if (accel_status_t st = kernel_attribute(*k, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                             "static shared memory", shared);
        st != ACCEL_SUCCESS)
      return st;
    k->static_shared_bytes = shared;
    *kernel = k.release();
    return ACCEL_SUCCESS;
  });
}

// HIP's functions belong to their module: only the plugin's record goes.
accel_status_t op_kernel_destroy(accel_plugin_kernel_t kernel) {
  return guarded("kernel_destroy", [&]() -> accel_status_t {
    delete kernel_of(kernel);
    return ACCEL_SUCCESS;
  });
}

// hipFuncGetAttribute: max threads per block (HIP's answer is the kernel's
// flat work-group limit, its launch bounds: never too small), static shared
// memory, private ("local") memory per thread and registers (VGPRs); the
// block multiple is the device's wavefront size (hipDeviceAttributeWarpSize).
accel_status_t op_kernel_get_attributes(accel_plugin_kernel_t kernel,
                                        accel_kernel_attributes_t* attributes) {
  return guarded("kernel_get_attributes", [&]() -> accel_status_t {
    const Kernel* k = kernel_of(kernel);
    ACCEL_HIP_DEVICE_SCOPE(k->module->device);
    struct Query {
      hipFunction_attribute attrib;
      const char* what;
      int64_t* out;
    };
    int64_t scratch = 0;
    const Query queries[] = {
        {HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block",
         ACCEL_PLUGIN_HOLDS(attributes, max_threads_per_block) ? &attributes->max_threads_per_block
                                                               : &scratch},
        {HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static shared memory",
         ACCEL_PLUGIN_HOLDS(attributes, static_shared_bytes) ? &attributes->static_shared_bytes
                                                             : &scratch},
        {HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "private memory per thread",
         ACCEL_PLUGIN_HOLDS(attributes, private_bytes) ? &attributes->private_bytes : &scratch},
        {HIP_FUNC_ATTRIBUTE_NUM_REGS, "registers",
         ACCEL_PLUGIN_HOLDS(attributes, num_registers) ? &attributes->num_registers : &scratch},
    };
    for (const Query& q : queries) {
      int v = 0;
      if (accel_status_t st = kernel_attribute(*k, q.attrib, q.what, v); st != ACCEL_SUCCESS)
        return st;
      *q.out = v;
    }
    if (ACCEL_PLUGIN_HOLDS(attributes, preferred_block_multiple)) {
      int warp = 0;
      if (hipError_t rc =
              runtime().hipDeviceGetAttribute(&warp, hipDeviceAttributeWarpSize, k->module->device);
          rc != hipSuccess)
        return vendor_fail("hipDeviceGetAttribute", rc, "(hipDeviceAttributeWarpSize)");
      attributes->preferred_block_multiple = warp;
    }
    return ACCEL_SUCCESS;
  });
}

// From the code object's metadata: a global_buffer parameter takes a device
// pointer, every other explicit one a value of its exact size (by_value;
// images, samplers and the like are passed as the bytes given). LOCAL_MEMORY
// arguments take no parameter: launch_kernel makes them dynamic shared
// memory. NOT_SUPPORTED when the image has no readable metadata for the
// kernel: the runtime then checks the argument buffer's size itself.
accel_status_t op_kernel_get_params(accel_plugin_kernel_t kernel,
                                    accel_plugin_kernel_param_t* params, size_t capacity,
                                    size_t* count, uint32_t* flags) {
  return guarded("kernel_get_params", [&]() -> accel_status_t {
    const Kernel* k = kernel_of(kernel);
    if (k->params == nullptr) {
      if (accel::plugin::log_enabled(ACCEL_LOG_DEBUG)) {
        const auto& md = k->module->metadata;
        accel::plugin::log(ACCEL_LOG_DEBUG, "kernel '%s': parameters unknown (%s)", k->name.c_str(),
                           md.present ? "the metadata does not list it" : md.why_not.c_str());
      }
      return ACCEL_ERROR_NOT_SUPPORTED;
    }
    const auto& list = k->params->params;
    *count = list.size();
    *flags = ACCEL_PLUGIN_KERNEL_LOCAL_ARGS_IN_SHARED;
    for (size_t i = 0; i < list.size() && i < capacity; ++i) {
      const bool pointer = list[i].kind == KernelParam::Kind::pointer;
      params[i].kinds = ACCEL_PLUGIN_ARG_KIND_BIT(pointer ? ACCEL_KERNEL_ARG_DEVICE_POINTER
                                                          : ACCEL_KERNEL_ARG_VALUE);
      params[i].type = list[i].type;
      params[i].size = list[i].size;
    }
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
