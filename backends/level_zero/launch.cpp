// launch_kernel: the group size and arguments set on the kernel object
// (zeKernelSetGroupSize, zeKernelSetArgumentValue), then
// zeCommandListAppendLaunchKernel with group count = grid on the stream's
// immediate list, signalling the list's next `last` event like every other
// command (streams.cpp), so a launch is ordered with the stream's copies,
// fills, host functions, event records and waits. Level Zero keeps the
// arguments in the kernel object and captures them at the append; a launch
// holds the kernel's launch_mu from the first set to the append (README.md,
// "Modules and kernels").
#include "backend.hpp"

#include <algorithm>

namespace accel::level_zero {

namespace {

const char* const kAxis[3] = {"x", "y", "z"};

// The device's grid and group limits (zeDeviceGetComputeProperties), the
// kernel's required group size, and local memory, before anything is set.
accel_status_t check_limits(const Kernel* k, accel_dim3_t grid, accel_dim3_t block,
                            uint64_t local_bytes) {
  const ze_device_compute_properties_t& c = k->limits;
  const uint32_t g[3] = {grid.x, grid.y, grid.z};
  const uint32_t b[3] = {block.x, block.y, block.z};
  const uint32_t max_count[3] = {c.maxGroupCountX, c.maxGroupCountY, c.maxGroupCountZ};
  const uint32_t max_size[3] = {c.maxGroupSizeX, c.maxGroupSizeY, c.maxGroupSizeZ};
  for (int i = 0; i < 3; ++i) {
    if (g[i] > max_count[i])
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s': grid.%s = %u is over %s's maxGroupCount%c (%u)",
                  k->name.c_str(), kAxis[i], g[i], k->dev->label(), 'X' + i, max_count[i]);
    if (b[i] > max_size[i])
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s': block.%s = %u is over %s's maxGroupSize%c (%u)",
                  k->name.c_str(), kAxis[i], b[i], k->dev->label(), 'X' + i, max_size[i]);
  }
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads > c.maxTotalGroupSize)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "launch_kernel: kernel '%s': block (%u, %u, %u) has %llu threads, over %s's "
                "maxTotalGroupSize (%u)",
                k->name.c_str(), block.x, block.y, block.z,
                static_cast<unsigned long long>(threads), k->dev->label(), c.maxTotalGroupSize);
  const ze_kernel_properties_t& p = k->props;
  if (p.requiredGroupSizeX != 0 &&
      (block.x != p.requiredGroupSizeX || block.y != p.requiredGroupSizeY ||
       block.z != p.requiredGroupSizeZ))
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "launch_kernel: kernel '%s' requires blocks of (%u, %u, %u) "
                "(reqd_work_group_size); block is (%u, %u, %u)",
                k->name.c_str(), p.requiredGroupSizeX, p.requiredGroupSizeY, p.requiredGroupSizeZ,
                block.x, block.y, block.z);
  uint64_t total = 0;
  if (!accel::plugin::checked_add<uint64_t>(local_bytes, p.localMemSize, &total) ||
      total > c.maxSharedLocalMemory)
    return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                "launch_kernel: kernel '%s' needs %llu bytes of local memory per block (%llu "
                "from its arguments and shared_bytes, %u declared by the kernel), over %s's "
                "maxSharedLocalMemory (%u)",
                k->name.c_str(), static_cast<unsigned long long>(std::max(total, local_bytes)),
                static_cast<unsigned long long>(local_bytes), p.localMemSize, k->dev->label(),
                c.maxSharedLocalMemory);
  return ACCEL_SUCCESS;
}

// A failed zeKernelSetArgumentValue or zeKernelSetGroupSize: the driver
// refusing what the caller gave is the caller's error.
accel_status_t set_failed(const Kernel* k, const char* call, ze_result_t r,
                          const std::string& what) {
  const std::string detail = vendor_failure(call, r, k->dev->driver->handle);
  switch (r) {
    case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE:
    case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX:
    case ZE_RESULT_ERROR_INVALID_ARGUMENT:
    case ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION:
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_kernel: kernel '%s': %s: %s",
                  k->name.c_str(), what.c_str(), detail.c_str());
    default:
      return vendor_fail(call, r, k->dev->driver->handle);
  }
}

// The local memory of the launch: the LOCAL_MEMORY arguments plus
// shared_bytes, which goes to the last of them (*last_local, num_args when
// there is none; refused then unless shared_bytes is 0).
accel_status_t sum_local_memory(const Kernel* k, const accel_kernel_arg_t* args, size_t num_args,
                                size_t shared_bytes, size_t* last_local, uint64_t* local_bytes) {
  *last_local = num_args;
  uint64_t arg_bytes = 0;  // of the LOCAL_MEMORY arguments
  for (size_t i = 0; i < num_args; ++i) {
    if (args[i].kind != ACCEL_KERNEL_ARG_LOCAL_MEMORY) continue;
    *last_local = i;
    if (!accel::plugin::checked_add<uint64_t>(arg_bytes, args[i].size, &arg_bytes))
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "launch_kernel: kernel '%s': local memory argument %zu (%zu bytes) on top of "
                  "%llu bytes of earlier ones is more than a size can hold",
                  k->name.c_str(), i, args[i].size, static_cast<unsigned long long>(arg_bytes));
  }
  // The last LOCAL_MEMORY argument is set to its size plus shared_bytes:
  // a sum that wrapped would hand the driver a small buffer.
  if (!accel::plugin::checked_add<uint64_t>(arg_bytes, shared_bytes, local_bytes))
    return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                "launch_kernel: kernel '%s': %llu bytes of local memory arguments plus "
                "shared_bytes %zu is more than a size can hold; %s has %u bytes of local "
                "memory per group (maxSharedLocalMemory)",
                k->name.c_str(), static_cast<unsigned long long>(arg_bytes), shared_bytes,
                k->dev->label(), k->limits.maxSharedLocalMemory);
  if (shared_bytes > 0 && *last_local == num_args)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "launch_kernel: kernel '%s': shared_bytes is %zu, but Level Zero has no dynamic "
                "local memory apart from __local kernel parameters and the launch passes no "
                "ACCEL_KERNEL_ARG_LOCAL_MEMORY argument: pass the memory as one",
                k->name.c_str(), shared_bytes);
  return ACCEL_SUCCESS;
}

// Sets the group size and every argument on the kernel's handle, the last
// LOCAL_MEMORY argument with shared_bytes added. Caller holds k->launch_mu.
accel_status_t set_launch_args(Kernel* k, accel_dim3_t block, const accel_kernel_arg_t* args,
                               size_t num_args, size_t last_local, size_t shared_bytes) {
  ze_result_t r = ze.zeKernelSetGroupSize(k->handle, block.x, block.y, block.z);
  if (r != ZE_RESULT_SUCCESS)
    return set_failed(k, "zeKernelSetGroupSize", r,
                      format("block (%u, %u, %u)", block.x, block.y, block.z));
  for (size_t i = 0; i < num_args; ++i) {
    const accel_kernel_arg_t& a = args[i];
    const auto index = static_cast<uint32_t>(i);
    switch (a.kind) {
      case ACCEL_KERNEL_ARG_VALUE:
        r = ze.zeKernelSetArgumentValue(k->handle, index, a.size, a.value);
        break;
      case ACCEL_KERNEL_ARG_DEVICE_POINTER: {
        const void* ptr = a.value;
        r = ze.zeKernelSetArgumentValue(k->handle, index, sizeof ptr, &ptr);
        break;
      }
      case ACCEL_KERNEL_ARG_LOCAL_MEMORY:
        r = ze.zeKernelSetArgumentValue(k->handle, index,
                                        a.size + (i == last_local ? shared_bytes : 0), nullptr);
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_kernel: argument %zu has kind %d", i,
                    static_cast<int>(a.kind));
    }
    if (r != ZE_RESULT_SUCCESS)
      return set_failed(k, "zeKernelSetArgumentValue", r,
                        format("argument %zu (%zu bytes)", i, a.size));
  }
  return ACCEL_SUCCESS;
}

}  // namespace

// Arguments, in the kernel's parameter order: VALUE (size, value),
// DEVICE_POINTER (sizeof(void*), &pointer), LOCAL_MEMORY (size, NULL: local
// memory of that many bytes per group). Level Zero has no dynamic local
// memory besides local-memory parameters: shared_bytes is added to the last
// LOCAL_MEMORY argument, and is refused for a launch without one.
accel_status_t op_launch_kernel(accel_plugin_kernel_t kernel, accel_dim3_t grid, accel_dim3_t block,
                                size_t shared_bytes, const accel_kernel_arg_t* args,
                                size_t num_args, accel_plugin_stream_t stream) {
  return guarded("launch_kernel", [&]() -> accel_status_t {
    auto* k = static_cast<Kernel*>(kernel);
    auto* s = static_cast<Stream*>(stream);
    if (k == nullptr || s == nullptr || (args == nullptr && num_args > 0))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_kernel: NULL argument");
    if (s->dev != k->dev)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "launch_kernel: kernel '%s' is of %s, the stream of %s", k->name.c_str(),
                  k->dev->label(), s->dev->label());
    if (num_args != k->props.numKernelArgs)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s' takes %u arguments; the launch passes %zu",
                  k->name.c_str(), k->props.numKernelArgs, num_args);
    size_t last_local = num_args;
    uint64_t local_bytes = 0;
    if (accel_status_t st =
            sum_local_memory(k, args, num_args, shared_bytes, &last_local, &local_bytes);
        st != ACCEL_SUCCESS)
      return st;
    if (accel_status_t st = check_limits(k, grid, block, local_bytes); st != ACCEL_SUCCESS)
      return st;

    std::lock_guard launch_lock(k->launch_mu);
    if (accel_status_t st = set_launch_args(k, block, args, num_args, last_local, shared_bytes);
        st != ACCEL_SUCCESS)
      return st;
    const ze_group_count_t groups{grid.x, grid.y, grid.z};
    Queue* q = s->q.get();
    std::lock_guard lock(q->mu);
    prune_held(q);
    return queue_append(q, "zeCommandListAppendLaunchKernel", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendLaunchKernel(q->list, k->handle, &groups, sig, 0, nullptr);
    });
  });
}

}  // namespace accel::level_zero
