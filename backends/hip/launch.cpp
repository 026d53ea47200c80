// Kernel launches (ABI 1.2 launch_kernel) with hipModuleLaunchKernel on the
// stream's hipStream_t, so they are ordered with everything else queued
// there.
//
// Arguments go through hipModuleLaunchKernel's `extra` (one buffer laid out
// as the kernel's argument segment: HIP_LAUNCH_PARAM_BUFFER_POINTER,
// HIP_LAUNCH_PARAM_BUFFER_SIZE, HIP_LAUNCH_PARAM_END), which every HIP
// release takes; HIP 5.2's header says kernelParams "is not yet implemented"
// there. `extra` is passed for kernels without parameters too (size 0):
// HIP releases that read extra[0] unconditionally then find a valid list,
// and current ones accept a size of 0 for a kernel that takes nothing.
// Each explicit parameter sits at the offset the code object's
// metadata gives; without metadata, at its natural alignment (the size's
// largest power-of-two divisor, at most 16), which is where clang puts
// scalars, pointers and vectors. HIP copies the buffer at launch, so it lives
// on this function's stack.
//
// LOCAL_MEMORY arguments take no parameter: their bytes become dynamic
// shared memory (LDS), in argument order, each at a 16-byte aligned offset,
// then the launch's own shared_bytes (accel.h, accel_kernel_arg_t).
//
// Before anything is queued the device's limits are checked
// (hipDeviceAttributeMaxBlockDim*/MaxGridDim*/MaxSharedMemoryPerBlock, read
// once per device) and HIP's rule that gridDim * blockDim stays below 2^32
// in each dimension (hip_runtime_api.h, hipModuleLaunchKernel).
#include <array>
#include <cstring>
#include <map>
#include <mutex>

#include "backend.hpp"

namespace accel::hip {

namespace {

struct Limits {
  int block[3] = {0, 0, 0};
  int grid[3] = {0, 0, 0};
  int shared = 0;  // bytes of shared memory (LDS) one block may have
};

// Read once per device; a failed read is retried on the next launch.
accel_status_t device_limits(int32_t device, Limits& out) {
  static std::mutex mu;
  static std::map<int32_t, Limits> known;
  {
    std::lock_guard lock(mu);
    if (auto it = known.find(device); it != known.end()) {
      out = it->second;
      return ACCEL_SUCCESS;
    }
  }
  struct Query {
    hipDeviceAttribute_t attr;
    const char* name;
    int* value;
  };
  Limits l;
  const Query queries[] = {
      {hipDeviceAttributeMaxBlockDimX, "hipDeviceAttributeMaxBlockDimX", &l.block[0]},
      {hipDeviceAttributeMaxBlockDimY, "hipDeviceAttributeMaxBlockDimY", &l.block[1]},
      {hipDeviceAttributeMaxBlockDimZ, "hipDeviceAttributeMaxBlockDimZ", &l.block[2]},
      {hipDeviceAttributeMaxGridDimX, "hipDeviceAttributeMaxGridDimX", &l.grid[0]},
      {hipDeviceAttributeMaxGridDimY, "hipDeviceAttributeMaxGridDimY", &l.grid[1]},
      {hipDeviceAttributeMaxGridDimZ, "hipDeviceAttributeMaxGridDimZ", &l.grid[2]},
      {hipDeviceAttributeMaxSharedMemoryPerBlock, "hipDeviceAttributeMaxSharedMemoryPerBlock",
       &l.shared},
  };
  for (const Query& q : queries) {
    if (hipError_t rc = runtime().hipDeviceGetAttribute(q.value, q.attr, device); rc != hipSuccess)
      return vendor_fail("hipDeviceGetAttribute", rc, format("(%s, device %d)", q.name, device));
  }
  std::lock_guard lock(mu);
  known.emplace(device, l);
  out = l;
  return ACCEL_SUCCESS;
}

constexpr const char* kAxis[] = {"x", "y", "z"};

accel_status_t check_shape(int32_t device, const Kernel& k, accel_dim3_t grid, accel_dim3_t block,
                           const Limits& l) {
  const uint32_t g[] = {grid.x, grid.y, grid.z};
  const uint32_t b[] = {block.x, block.y, block.z};
  for (int i = 0; i < 3; ++i) {
    if (static_cast<int64_t>(b[i]) > l.block[i]) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': block.%s %u exceeds device %d's limit %d "
                  "(hipDeviceAttributeMaxBlockDim%c)",
                  k.name.c_str(), kAxis[i], b[i], static_cast<int>(device), l.block[i], 'X' + i);
    }
    if (static_cast<int64_t>(g[i]) > l.grid[i]) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': grid.%s %u exceeds device %d's limit %d "
                  "(hipDeviceAttributeMaxGridDim%c)",
                  k.name.c_str(), kAxis[i], g[i], static_cast<int>(device), l.grid[i], 'X' + i);
    }
    if (uint64_t{g[i]} * b[i] >= (uint64_t{1} << 32)) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': grid.%s %u * block.%s %u is %llu threads; HIP launches fewer "
                  "than 2^32 per dimension",
                  k.name.c_str(), kAxis[i], g[i], kAxis[i], b[i],
                  static_cast<unsigned long long>(uint64_t{g[i]} * b[i]));
    }
  }
  return ACCEL_SUCCESS;
}

constexpr size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The largest power of two dividing `size`, at most 16.
size_t natural_alignment(size_t size) {
  size_t a = 1;
  while (a < 16 && size % (a * 2) == 0) a *= 2;
  return a;
}

// The argument buffer and the LDS the LOCAL_MEMORY arguments need.
struct Packed {
  std::array<unsigned char, kMaxKernargBytes> bytes{};
  size_t size = 0;   // bytes of `bytes` the kernel takes
  size_t local = 0;  // dynamic shared memory of the LOCAL_MEMORY arguments
};

accel_status_t add_local(const Kernel& k, size_t i, const accel_kernel_arg_t& a, Packed& out) {
  const size_t at = align_up(out.local, 16);
  if (a.size > (size_t{1} << 31) - at) {
    return fail(ACCEL_ERROR_OUT_OF_MEMORY, "kernel '%s' argument %zu: %zu bytes of local memory",
                k.name.c_str(), i, a.size);
  }
  out.local = at + a.size;
  return ACCEL_SUCCESS;
}

// One explicit argument's bytes: the pointer value itself, or `size` bytes.
const void* arg_bytes(const accel_kernel_arg_t& a, size_t& size) {
  if (a.kind == ACCEL_KERNEL_ARG_DEVICE_POINTER) {
    size = sizeof(void*);
    return &a.value;
  }
  size = a.size;
  return a.value;
}

// With metadata: each argument at its parameter's offset, checked against
// its kind and size (the core checked too; this keeps the buffer right
// whatever the caller is).
accel_status_t pack_known(const Kernel& k, const accel_kernel_arg_t* args, size_t num_args,
                          Packed& out) {
  const auto& params = k.params->params;
  size_t p = 0;
  for (size_t i = 0; i < num_args; ++i) {
    const accel_kernel_arg_t& a = args[i];
    if (a.kind == ACCEL_KERNEL_ARG_LOCAL_MEMORY) {
      if (accel_status_t st = add_local(k, i, a, out); st != ACCEL_SUCCESS) return st;
      continue;
    }
    if (p >= params.size()) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s' takes %zu parameters; argument %zu is one more", k.name.c_str(),
                  params.size(), i);
    }
    const KernelParam& param = params[p++];
    const bool pointer = a.kind == ACCEL_KERNEL_ARG_DEVICE_POINTER;
    if (pointer != (param.kind == KernelParam::Kind::pointer)) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s' argument %zu is a %s; its parameter is %s (%s)", k.name.c_str(), i,
                  pointer ? "device pointer" : "value", pointer ? "a value" : "a device pointer",
                  param.value_kind.c_str());
    }
    size_t size = 0;
    const void* bytes = arg_bytes(a, size);
    if (size != param.size || bytes == nullptr) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s' argument %zu has %zu bytes; its parameter takes %zu", k.name.c_str(),
                  i, size, param.size);
    }
    std::memcpy(out.bytes.data() + param.offset, bytes, size);
  }
  if (p != params.size()) {
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "kernel '%s' takes %zu parameters; the launch passes %zu", k.name.c_str(),
                params.size(), p);
  }
  out.size = k.params->explicit_bytes;
  return ACCEL_SUCCESS;
}

// Without metadata: natural alignment, in order; the runtime checks the
// buffer against the kernel.
accel_status_t pack_natural(const Kernel& k, const accel_kernel_arg_t* args, size_t num_args,
                            Packed& out) {
  size_t end = 0;
  for (size_t i = 0; i < num_args; ++i) {
    const accel_kernel_arg_t& a = args[i];
    if (a.kind == ACCEL_KERNEL_ARG_LOCAL_MEMORY) {
      if (accel_status_t st = add_local(k, i, a, out); st != ACCEL_SUCCESS) return st;
      continue;
    }
    size_t size = 0;
    const void* bytes = arg_bytes(a, size);
    if (bytes == nullptr || size == 0) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel '%s' argument %zu: a value needs its bytes",
                  k.name.c_str(), i);
    }
    const size_t at = align_up(end, natural_alignment(size));
    if (size > kMaxKernargBytes || at > kMaxKernargBytes - size) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': the arguments take more than HIP's %zu bytes (argument %zu)",
                  k.name.c_str(), kMaxKernargBytes, i);
    }
    std::memcpy(out.bytes.data() + at, bytes, size);
    end = at + size;
  }
  out.size = end;
  return ACCEL_SUCCESS;
}

// hipModuleLaunchKernel's refusals: a launch the runtime finds wrong is the
// caller's (INVALID_ARGUMENT), one it has no room for OUT_OF_MEMORY.
accel_status_t launch_failure(const Kernel& k, hipError_t rc, accel_dim3_t grid, accel_dim3_t block,
                              size_t shared, size_t arg_bytes) {
  const std::string what = format(
      "(kernel '%s', grid %ux%ux%u, block %ux%ux%u, %zu bytes of dynamic shared memory, "
      "%zu argument bytes)",
      k.name.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, arg_bytes);
  switch (rc) {
    case hipErrorInvalidValue:
    case hipErrorInvalidConfiguration:
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s %s",
                  vendor_failure_text("hipModuleLaunchKernel", rc).c_str(), what.c_str());
    case hipErrorLaunchOutOfResources:
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s %s",
                  vendor_failure_text("hipModuleLaunchKernel", rc).c_str(), what.c_str());
    default:
      return vendor_fail("hipModuleLaunchKernel", rc, what);
  }
}

}  // namespace

accel_status_t op_launch_kernel(accel_plugin_kernel_t kernel, accel_dim3_t grid, accel_dim3_t block,
                                size_t shared_bytes, const accel_kernel_arg_t* args,
                                size_t num_args, accel_plugin_stream_t stream) {
  return guarded("launch_kernel", [&]() -> accel_status_t {
    const Kernel* k = kernel_of(kernel);
    const Stream* s = stream_of(stream);
    const int32_t device = k->module->device;
    if (s->device != device) {
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "kernel '%s' is of device %d, the stream of device %d", k->name.c_str(),
                  static_cast<int>(device), static_cast<int>(s->device));
    }
    if (num_args > 0 && args == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "args is NULL with num_args %zu", num_args);
    Limits limits;
    if (accel_status_t st = device_limits(device, limits); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = check_shape(device, *k, grid, block, limits); st != ACCEL_SUCCESS)
      return st;

    Packed packed;
    accel_status_t st = k->params != nullptr ? pack_known(*k, args, num_args, packed)
                                             : pack_natural(*k, args, num_args, packed);
    if (st != ACCEL_SUCCESS) return st;
    // packed.local is below 2^31 (add_local), so its rounding cannot wrap;
    // the sums with the caller's shared_bytes are checked.
    const size_t local_end = packed.local == 0 ? 0 : align_up(packed.local, 16);
    const size_t limit = static_cast<size_t>(limits.shared);
    const size_t fixed = static_cast<size_t>(k->static_shared_bytes);
    size_t shared = 0, total = 0;
    const bool fits = accel::plugin::checked_add(local_end, shared_bytes, &shared) &&
                      accel::plugin::checked_add(fixed, shared, &total);
    if (!fits || total > limit) {
      // The operands, never a sum that wrapped.
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "kernel '%s' needs %s bytes of shared memory (LDS) per block (%zu static, %zu "
                  "for local memory arguments, %zu requested); device %d has %zu "
                  "(hipDeviceAttributeMaxSharedMemoryPerBlock)",
                  k->name.c_str(), fits ? format("%zu", total).c_str() : "more than SIZE_MAX",
                  fixed, local_end, shared_bytes, static_cast<int>(device), limit);
    }

    size_t arg_size = packed.size;
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, packed.bytes.data(),
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &arg_size, HIP_LAUNCH_PARAM_END};
    ACCEL_HIP_DEVICE_SCOPE(device);
    const hipError_t rc = runtime().hipModuleLaunchKernel(
        k->native, grid.x, grid.y, grid.z, block.x, block.y, block.z,
        static_cast<unsigned int>(shared), s->native, nullptr, extra);
    if (rc != hipSuccess) return launch_failure(*k, rc, grid, block, shared, arg_size);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
