// Kernels (ABI 1.2): a kernel of a module, its attributes and parameters,
// and the pool of cl_kernel objects launches take one from (backend.hpp says
// why a pool).
//
// Parameters come from clGetKernelArgInfo, which needs the program built
// with "-cl-kernel-arg-info" (modules.cpp adds it) or a binary that kept
// the information:
//  - CL_KERNEL_ARG_ADDRESS_GLOBAL / _CONSTANT with a pointer type ("float*"):
//    DEVICE_POINTER (accel's memory is SVM: clSetKernelArgSVMPointer);
//    without one (image2d_t, pipe): VALUE of sizeof(cl_mem), the handle
//    clSetKernelArg takes for them;
//  - CL_KERNEL_ARG_ADDRESS_LOCAL: LOCAL_MEMORY (clSetKernelArg(size, NULL));
//  - CL_KERNEL_ARG_ADDRESS_PRIVATE: VALUE with the size of the type when
//    CL_KERNEL_ARG_TYPE_NAME names a scalar or vector of OpenCL C
//    (uint 4, float4 16, int3 16 as OpenCL stores 3-vectors as 4, size_t the
//    device's address width, sampler_t sizeof(cl_sampler)), else 0 (a
//    struct or typedef: any size, clSetKernelArg checks it); its type
//    (accel_plugin_kernel_param_t.type) FLOAT for half/float/double, INT
//    for the integer scalars, STRUCT for vectors, else unknown; a pointer's
//    POINTER, READ_ONLY when CL_KERNEL_ARG_TYPE_QUALIFIER has
//    CL_KERNEL_ARG_TYPE_CONST or the address space is __constant.
// Without argument information (CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
// kernel_get_params answers ACCEL_ERROR_NOT_SUPPORTED, and launch_kernel
// checks the count (CL_KERNEL_NUM_ARGS) and lets clSetKernelArg refuse a
// wrong size or kind.
#include "backend.hpp"

#include <cstring>

namespace accel::opencl {
namespace {

// Bytes of a private parameter of OpenCL C type `type` ("uint", "float4",
// "unsigned int"), 0 when it is not a built-in scalar or vector type.
size_t type_size(std::string type, cl_uint address_bits) {
  // The type name has no qualifiers, but a driver may spell unsigned types out.
  static constexpr const char* kUnsigned = "unsigned ";
  if (type.rfind(kUnsigned, 0) == 0) type = "u" + type.substr(std::strlen(kUnsigned));
  if (type == "sampler_t") return sizeof(cl_sampler);
  if (type == "size_t" || type == "ptrdiff_t" || type == "intptr_t" || type == "uintptr_t")
    return address_bits / 8;
  size_t digits = type.size();
  while (digits > 0 && type[digits - 1] >= '0' && type[digits - 1] <= '9') --digits;
  const std::string base = type.substr(0, digits);
  size_t width = 1;
  if (digits < type.size()) {
    width = std::strtoul(type.c_str() + digits, nullptr, 10);
    if (width != 2 && width != 3 && width != 4 && width != 8 && width != 16) return 0;
    if (width == 3) width = 4;  // a 3-vector has the size of a 4-vector
  }
  struct Scalar {
    const char* name;
    size_t bytes;
  };
  static constexpr Scalar kScalars[] = {{"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2},
                                        {"int", 4},  {"uint", 4},  {"long", 8},  {"ulong", 8},
                                        {"half", 2}, {"float", 4}, {"double", 8}};
  for (const Scalar& s : kScalars)
    if (base == s.name) return s.bytes * width;
  return 0;
}

std::string arg_text(cl_kernel k, cl_uint i, cl_kernel_arg_info what, cl_int* err) {
  size_t n = 0;
  *err = clGetKernelArgInfo(k, i, what, 0, nullptr, &n);
  if (*err != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  *err = clGetKernelArgInfo(k, i, what, n, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}

// The accel_kernel_arg_type_t of a private parameter of OpenCL C type
// `type`: floating-point scalars FLOAT, integer scalars (and bool, size_t)
// INT, vectors STRUCT (their size is checked), anything else UNKNOWN (a
// typedef or struct the name does not tell).
uint32_t value_type(std::string type) {
  static constexpr const char* kUnsigned = "unsigned ";
  if (type.rfind(kUnsigned, 0) == 0) type = "u" + type.substr(std::strlen(kUnsigned));
  static constexpr const char* kFloats[] = {"half", "float", "double"};
  static constexpr const char* kInts[] = {"bool",      "char",     "uchar",    "short", "ushort",
                                          "int",       "uint",     "long",     "ulong", "size_t",
                                          "ptrdiff_t", "intptr_t", "uintptr_t"};
  for (const char* f : kFloats)
    if (type == f) return ACCEL_KERNEL_ARG_TYPE_FLOAT;
  for (const char* i : kInts)
    if (type == i) return ACCEL_KERNEL_ARG_TYPE_INT;
  size_t digits = type.size();
  while (digits > 0 && type[digits - 1] >= '0' && type[digits - 1] <= '9') --digits;
  if (digits < type.size() && digits > 0) {  // float4, uint2: a vector of a scalar above
    const std::string base = type.substr(0, digits);
    for (const char* f : kFloats)
      if (base == f) return ACCEL_KERNEL_ARG_TYPE_STRUCT;
    for (const char* i : kInts)
      if (base == i) return ACCEL_KERNEL_ARG_TYPE_STRUCT;
  }
  return ACCEL_KERNEL_ARG_TYPE_UNKNOWN;
}

// A global or constant pointer parameter's type: POINTER, READ_ONLY when
// the kernel cannot write through it (const, or __constant memory).
accel_status_t pointer_type(cl_kernel obj, cl_uint i, cl_kernel_arg_address_qualifier q,
                            uint32_t* type) {
  cl_kernel_arg_type_qualifier tq = 0;
  cl_int err = clGetKernelArgInfo(obj, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof tq, &tq, nullptr);
  if (err == CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    tq = 0;
  else if (err != CL_SUCCESS)
    return vendor_fail("clGetKernelArgInfo(CL_KERNEL_ARG_TYPE_QUALIFIER)", err);
  *type = ACCEL_KERNEL_ARG_TYPE_POINTER;
  if ((tq & CL_KERNEL_ARG_TYPE_CONST) != 0 || q == CL_KERNEL_ARG_ADDRESS_CONSTANT)
    *type |= ACCEL_PLUGIN_PARAM_READ_ONLY;
  return ACCEL_SUCCESS;
}

// Fills k->params from clGetKernelArgInfo, or says in k->params_missing why
// the driver cannot tell. Only a failure other than "no information" is an
// error.
accel_status_t read_params(Kernel* k, cl_kernel obj) {
  std::vector<accel_plugin_kernel_param_t> params(k->num_args);
  for (cl_uint i = 0; i < k->num_args; ++i) {
    cl_kernel_arg_address_qualifier q = 0;
    cl_int err = clGetKernelArgInfo(obj, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q, nullptr);
    if (err == CL_KERNEL_ARG_INFO_NOT_AVAILABLE) {
      k->params_missing = format(
          "OpenCL has no argument information for kernel '%s' on %s "
          "(clGetKernelArgInfo: CL_KERNEL_ARG_INFO_NOT_AVAILABLE; a binary built without "
          "-cl-kernel-arg-info?): launches are checked by clSetKernelArg only",
          k->name.c_str(), k->dev->label().c_str());
      return ACCEL_SUCCESS;
    }
    if (err != CL_SUCCESS)
      return vendor_fail("clGetKernelArgInfo(CL_KERNEL_ARG_ADDRESS_QUALIFIER)", err);
    const std::string type = arg_text(obj, i, CL_KERNEL_ARG_TYPE_NAME, &err);
    if (err == CL_KERNEL_ARG_INFO_NOT_AVAILABLE) err = CL_SUCCESS;  // sizes unknown: 0
    if (err != CL_SUCCESS) return vendor_fail("clGetKernelArgInfo(CL_KERNEL_ARG_TYPE_NAME)", err);
    accel_plugin_kernel_param_t& p = params[i];
    switch (q) {
      case CL_KERNEL_ARG_ADDRESS_GLOBAL:
      case CL_KERNEL_ARG_ADDRESS_CONSTANT:
        if (type.empty() || type.back() == '*') {
          p.kinds = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_DEVICE_POINTER);
          if (accel_status_t st = pointer_type(obj, i, q, &p.type); st != ACCEL_SUCCESS) return st;
        } else {  // an image or pipe: its cl_mem handle by value
          p.kinds = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE);
          p.size = sizeof(cl_mem);
        }
        break;
      case CL_KERNEL_ARG_ADDRESS_LOCAL:
        p.kinds = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_LOCAL_MEMORY);
        break;
      default:  // CL_KERNEL_ARG_ADDRESS_PRIVATE
        p.kinds = ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_VALUE);
        p.size = type_size(type, k->dev->address_bits);
        p.type = value_type(type);
        break;
    }
  }
  k->params = std::move(params);
  k->params_known = true;
  return ACCEL_SUCCESS;
}

template <class T>
cl_int group_info(cl_kernel obj, cl_device_id dev, cl_kernel_work_group_info what, T* out) {
  return clGetKernelWorkGroupInfo(obj, dev, what, sizeof *out, out, nullptr);
}

// What launches need to know of a new kernel, from its first object.
accel_status_t describe_kernel(Kernel* k, cl_kernel obj) {
  cl_int err = clGetKernelInfo(obj, CL_KERNEL_NUM_ARGS, sizeof k->num_args, &k->num_args, nullptr);
  if (err != CL_SUCCESS) return vendor_fail("clGetKernelInfo(CL_KERNEL_NUM_ARGS)", err);
  cl_device_id d = k->dev->id;
  if ((err = group_info(obj, d, CL_KERNEL_WORK_GROUP_SIZE, &k->work_group_size)) != CL_SUCCESS)
    return vendor_fail("clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)", err);
  if ((err = group_info(obj, d, CL_KERNEL_LOCAL_MEM_SIZE, &k->static_local)) != CL_SUCCESS)
    return vendor_fail("clGetKernelWorkGroupInfo(CL_KERNEL_LOCAL_MEM_SIZE)", err);
  if ((err = group_info(obj, d, CL_KERNEL_PRIVATE_MEM_SIZE, &k->private_mem)) != CL_SUCCESS)
    return vendor_fail("clGetKernelWorkGroupInfo(CL_KERNEL_PRIVATE_MEM_SIZE)", err);
  if ((err = group_info(obj, d, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                        &k->preferred_multiple)) != CL_SUCCESS)
    return vendor_fail("clGetKernelWorkGroupInfo(CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE)",
                       err);
  return read_params(k, obj);
}

// Frees the kernel once no handle and no held-back launch refers to it.
void destroy(Kernel* k) {
  if (cl_kernel obj = k->spare.exchange(nullptr)) k->idle.push_back(obj);
  for (cl_kernel obj : k->idle) {
    cl_int err = clReleaseKernel(obj);
    if (err != CL_SUCCESS)
      log_vendor_failure(ACCEL_LOG_WARN, "clReleaseKernel", err, "(destroying a kernel)");
  }
  if (k->program != nullptr) clReleaseProgram(k->program);
  delete k;
}

}  // namespace

void kernel_ref(Kernel* k) { k->refs.fetch_add(1, std::memory_order_relaxed); }

void kernel_unref(Kernel* k) {
  if (k->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(k);
}

accel_status_t kernel_acquire(Kernel* k, cl_kernel* out) {
  if (cl_kernel obj = k->spare.exchange(nullptr, std::memory_order_acquire)) {
    *out = obj;
    return ACCEL_SUCCESS;
  }
  {
    std::lock_guard<std::mutex> lock(k->mu);
    if (!k->idle.empty()) {
      *out = k->idle.back();
      k->idle.pop_back();
      return ACCEL_SUCCESS;
    }
  }
  // Every object is in use by another launch right now: one more.
  cl_int err = CL_SUCCESS;
  cl_kernel obj = clCreateKernel(k->program, k->name.c_str(), &err);
  if (obj == nullptr || err != CL_SUCCESS) return vendor_fail("clCreateKernel", err);
  *out = obj;
  return ACCEL_SUCCESS;
}

void kernel_release(Kernel* k, cl_kernel obj) {
  cl_kernel none = nullptr;
  if (k->spare.compare_exchange_strong(none, obj, std::memory_order_release)) return;
  try {
    std::lock_guard<std::mutex> lock(k->mu);
    k->idle.push_back(obj);
  } catch (...) {  // no memory to keep it: let it go
    clReleaseKernel(obj);
  }
}

// clCreateKernel, then what launches need of it (describe_kernel): the
// first object of the pool. Statuses: ACCEL_ERROR_INVALID_ARGUMENT for
// CL_INVALID_KERNEL_NAME ("no kernel 'x' in the module"), a vendor failure
// otherwise. Thread-safe (the core serialises creation per module anyway).
accel_status_t op_kernel_create(accel_plugin_module_t module, const char* name,
                                accel_plugin_kernel_t* kernel) {
  return guarded("kernel_create", [&]() -> accel_status_t {
    auto* m = static_cast<Module*>(module);
    cl_int err = CL_SUCCESS;
    cl_kernel obj = clCreateKernel(m->program, name, &err);
    if (err == CL_INVALID_KERNEL_NAME || (obj == nullptr && err == CL_SUCCESS))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "no kernel '%s' in the module (clCreateKernel: CL_INVALID_KERNEL_NAME)", name);
    if (obj == nullptr || err != CL_SUCCESS) return vendor_fail("clCreateKernel", err);
    auto* k = new (std::nothrow) Kernel();
    if (k == nullptr) {
      clReleaseKernel(obj);
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "kernel_create: no memory for the kernel's state");
    }
    k->dev = m->dev;
    k->program = m->program;
    clRetainProgram(k->program);
    accel_status_t st = ACCEL_SUCCESS;
    try {
      k->name = name;
      st = describe_kernel(k, obj);
      if (st == ACCEL_SUCCESS) k->spare.store(obj);
    } catch (...) {
      clReleaseKernel(obj);
      destroy(k);
      throw;
    }
    if (st != ACCEL_SUCCESS) {
      clReleaseKernel(obj);
      destroy(k);
      return st;
    }
    *kernel = k;
    return ACCEL_SUCCESS;
  });
}

// Launches still held back by a host gate keep their own reference; the
// core waited for the device before destroying, so normally none is left.
accel_status_t op_kernel_destroy(accel_plugin_kernel_t kernel) {
  return guarded("kernel_destroy", [&]() -> accel_status_t {
    kernel_unref(static_cast<Kernel*>(kernel));
    return ACCEL_SUCCESS;
  });
}

// From clGetKernelWorkGroupInfo at creation (bytes for the memory sizes,
// work-items for the others); OpenCL has no register count (-1). Never
// fails; thread-safe.
accel_status_t op_kernel_get_attributes(accel_plugin_kernel_t kernel,
                                        accel_kernel_attributes_t* attributes) {
  return guarded("kernel_get_attributes", [&]() -> accel_status_t {
    auto* k = static_cast<Kernel*>(kernel);
    attributes->max_threads_per_block = static_cast<int64_t>(k->work_group_size);
    attributes->static_shared_bytes = static_cast<int64_t>(k->static_local);
    attributes->private_bytes = static_cast<int64_t>(k->private_mem);
    attributes->num_registers = -1;
    attributes->preferred_block_multiple = static_cast<int64_t>(k->preferred_multiple);
    attributes->num_args = static_cast<int32_t>(k->num_args);
    return ACCEL_SUCCESS;
  });
}

// The parameters read at creation (see the top of this file), flags 0:
// LOCAL_MEMORY arguments fill __local parameters. ACCEL_ERROR_NOT_SUPPORTED
// with the reason when the driver had no argument information. Thread-safe
// (reads what creation wrote).
accel_status_t op_kernel_get_params(accel_plugin_kernel_t kernel,
                                    accel_plugin_kernel_param_t* params, size_t capacity,
                                    size_t* count, uint32_t* flags) {
  return guarded("kernel_get_params", [&]() -> accel_status_t {
    auto* k = static_cast<Kernel*>(kernel);
    if (!k->params_known) return fail(ACCEL_ERROR_NOT_SUPPORTED, k->params_missing);
    *count = k->params.size();
    *flags = 0;  // LOCAL_MEMORY arguments are parameters (__local pointers)
    for (size_t i = 0; i < k->params.size() && i < capacity && params != nullptr; ++i)
      params[i] = k->params[i];
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::opencl
