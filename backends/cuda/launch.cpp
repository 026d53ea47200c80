// ABI 1.2 launches: cuLaunchKernel on the stream's CUstream, after the
// checks CUDA would only answer with CUDA_ERROR_INVALID_VALUE (which limit?)
// or not at all before queueing: grid and block extents against the
// device's CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_* / MAX_BLOCK_DIM_*, and shared
// memory against MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (raising the kernel's
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES when a launch needs more
// than the default 48 KiB: CUDA C++ Programming Guide, "Shared Memory",
// opt-in above 48 KB). Semantics of kernelParams from the Driver API
// reference (cuLaunchKernel: an array of pointers, one per parameter, each
// to the bytes the driver copies at the call).
//
// Arguments: VALUE passes a pointer to the caller's bytes; DEVICE_POINTER a
// pointer to a copy of the pointer value (the caller passed the pointer
// itself); LOCAL_MEMORY takes no parameter: its bytes join the block's
// dynamic shared memory, each at a 16-byte aligned offset in argument
// order, before config->shared_bytes (accel.h, accel_kernel_arg_t).
//
// Thread-safe: nothing shared is written but Kernel::dynamic_limit, which
// only grows, under its mutex; cuLaunchKernel is thread-safe.
#include <cstdint>
#include <memory>

#include "backend.hpp"

namespace accel::cuda {

namespace {

// Parameters packed on the stack; more than this go to the heap.
constexpr size_t kInlineParams = 32;

constexpr uint64_t align16(uint64_t v) { return (v + 15) & ~uint64_t{15}; }

const char* const kAxis[3] = {"x", "y", "z"};
const char* const kGridAttr[3] = {"CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X",
                                  "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y",
                                  "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z"};
const char* const kBlockAttr[3] = {"CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X",
                                   "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y",
                                   "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z"};

void query_limits(Device& d) {
  struct Query {
    CUdevice_attribute attr;
    const char* name;
    int* out;
  };
  DeviceLimits& l = d.limits;
  const Query queries[] = {
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, kGridAttr[0], &l.max_grid[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, kGridAttr[1], &l.max_grid[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, kGridAttr[2], &l.max_grid[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, kBlockAttr[0], &l.max_block[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, kBlockAttr[1], &l.max_block[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, kBlockAttr[2], &l.max_block[2]},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, "CU_DEVICE_ATTRIBUTE_WARP_SIZE", &l.warp_size},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
       "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK", &l.shared_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", &l.shared_optin},
  };
  for (const Query& q : queries) {
    CUresult rc = driver().cuDeviceGetAttribute(q.out, q.attr, d.dev);
    if (rc != CUDA_SUCCESS) {
      d.limits_rc = rc;
      d.limits_failed = q.name;
      return;
    }
  }
}

// Grid and block extents within the device's limits.
accel_status_t check_shape(const Kernel& k, const DeviceLimits& l, accel_dim3_t grid,
                           accel_dim3_t block) {
  const uint32_t g[3] = {grid.x, grid.y, grid.z};
  const uint32_t b[3] = {block.x, block.y, block.z};
  for (int i = 0; i < 3; ++i) {
    if (g[i] > static_cast<uint32_t>(l.max_grid[i]))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': grid (%u, %u, %u) has %u blocks along %s; cuda device %d allows "
                  "at most %d (%s)",
                  k.name.c_str(), g[0], g[1], g[2], g[i], kAxis[i], int(k.device), l.max_grid[i],
                  kGridAttr[i]);
    if (b[i] > static_cast<uint32_t>(l.max_block[i]))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': block (%u, %u, %u) has %u threads along %s; cuda device %d "
                  "allows at most %d (%s)",
                  k.name.c_str(), b[0], b[1], b[2], b[i], kAxis[i], int(k.device), l.max_block[i],
                  kBlockAttr[i]);
  }
  return ACCEL_SUCCESS;
}

// Raises the kernel's dynamic shared memory limit to `bytes` (the caller
// checked it against the opt-in maximum). Runs with the device's context
// current.
accel_status_t opt_in(Kernel& k, int bytes) {
  std::lock_guard lock(k.opt_in_mutex);
  if (k.dynamic_limit.load(std::memory_order_relaxed) >= bytes) return ACCEL_SUCCESS;
  CUresult rc =
      driver().cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (rc == CUDA_ERROR_INVALID_VALUE)
    return vendor_fail_as(ACCEL_ERROR_OUT_OF_MEMORY,
                          "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                          rc);
  if (rc != CUDA_SUCCESS)
    return vendor_fail("cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)", rc);
  k.dynamic_limit.store(bytes, std::memory_order_release);
  return ACCEL_SUCCESS;
}

accel_status_t launch_failure(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_INVALID_VALUE:
      return vendor_fail_as(ACCEL_ERROR_INVALID_ARGUMENT, "cuLaunchKernel", rc);
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:  // registers x threads, or shared memory
      return vendor_fail_as(ACCEL_ERROR_OUT_OF_MEMORY, "cuLaunchKernel", rc);
    case CUDA_ERROR_NOT_SUPPORTED:
      return vendor_fail_as(ACCEL_ERROR_NOT_SUPPORTED, "cuLaunchKernel", rc);
    default:
      return vendor_fail("cuLaunchKernel", rc);
  }
}

}  // namespace

accel_status_t device_limits(int32_t device, const DeviceLimits*& out) noexcept {
  Device* d = nullptr;
  if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
  std::call_once(d->limits_once, [d] { query_limits(*d); });
  if (d->limits_rc != CUDA_SUCCESS)
    return vendor_fail(d->limits_failed, d->limits_rc);  // the same answer every time
  out = &d->limits;
  return ACCEL_SUCCESS;
}

accel_status_t op_launch_kernel(accel_plugin_kernel_t kernel, accel_dim3_t grid, accel_dim3_t block,
                                size_t shared_bytes, const accel_kernel_arg_t* args,
                                size_t num_args, accel_plugin_stream_t stream) {
  return guarded("launch_kernel", [&] {
    Kernel* k = as_kernel(kernel);
    Stream* s = as_stream(stream);
    const DeviceLimits* limits = nullptr;
    if (accel_status_t st = device_limits(k->device, limits); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = check_shape(*k, *limits, grid, block); st != ACCEL_SUCCESS) return st;

    // Dynamic shared memory: the LOCAL_MEMORY arguments, then shared_bytes.
    // A term of 4 GiB or more is over any device's limit; below that the
    // sum cannot wrap.
    uint64_t dynamic = 0;
    size_t params = 0;
    bool any_local = false, huge = shared_bytes > UINT32_MAX;
    for (size_t i = 0; i < num_args; ++i) {
      if (args[i].kind != ACCEL_KERNEL_ARG_LOCAL_MEMORY) {
        ++params;
        continue;
      }
      huge = huge || args[i].size > UINT32_MAX;
      dynamic = align16(dynamic) + (args[i].size & UINT32_MAX);
      any_local = true;
    }
    if (any_local) dynamic = align16(dynamic);
    dynamic += shared_bytes & UINT32_MAX;
    const uint64_t total = dynamic + static_cast<uint64_t>(k->static_shared);
    if (huge || total > static_cast<uint64_t>(limits->shared_optin))
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "kernel '%s' needs %s%llu bytes of shared memory per block (%d static + the "
                  "dynamic: local memory arguments and shared_bytes %zu); cuda device %d allows "
                  "at most %d (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                  k->name.c_str(), huge ? "over " : "",
                  huge ? 0xffffffffull : static_cast<unsigned long long>(total), k->static_shared,
                  shared_bytes, int(k->device), limits->shared_optin);

    // kernelParams: a pointer to each parameter's bytes.
    void* inline_params[kInlineParams];
    void* inline_pointers[kInlineParams];
    std::unique_ptr<void*[]> heap;
    void** param_ptrs = inline_params;
    void** pointer_copies = inline_pointers;
    if (params > kInlineParams) {
      heap.reset(new void*[2 * params]);
      param_ptrs = heap.get();
      pointer_copies = heap.get() + params;
    }
    size_t j = 0;
    for (size_t i = 0; i < num_args; ++i) {
      const accel_kernel_arg_t& a = args[i];
      if (a.kind == ACCEL_KERNEL_ARG_LOCAL_MEMORY) continue;
      if (a.kind == ACCEL_KERNEL_ARG_DEVICE_POINTER) {
        pointer_copies[j] = const_cast<void*>(a.value);
        param_ptrs[j] = &pointer_copies[j];
      } else {
        param_ptrs[j] = const_cast<void*>(a.value);
      }
      ++j;
    }

    ACCEL_CUDA_CTX_SCOPE(s->device);
    const int dyn = static_cast<int>(dynamic);  // <= shared_optin, an int
    if (dyn > k->dynamic_limit.load(std::memory_order_acquire)) {
      if (accel_status_t st = opt_in(*k, dyn); st != ACCEL_SUCCESS) return st;
    }
    CUresult rc = driver().cuLaunchKernel(k->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                          static_cast<unsigned>(dyn), s->handle,
                                          params > 0 ? param_ptrs : nullptr, nullptr);
    if (rc != CUDA_SUCCESS) return launch_failure(rc);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda
