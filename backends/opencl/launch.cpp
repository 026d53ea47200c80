// launch_kernel (ABI 1.2): grid and block checked against the device,
// arguments set on a kernel object of the pool, clEnqueueNDRangeKernel on
// the stream's in-order queue, ordered like every other operation of the
// stream (see streams.cpp): submitted at once and flushed, or, behind a host
// gate (PoCL's basic device), kept with a copy of its arguments in the
// stream's deferred list and submitted when the gate opens.
//
// Sizes: global = grid * block per dimension, local = block; work_dim is
// the highest dimension with an extent above 1 (get_global_id of a higher
// one is 0 either way). Arguments: VALUE is clSetKernelArg(size, value);
// DEVICE_POINTER is clSetKernelArgSVMPointer (accel's device memory is
// coarse-grained SVM, memory.cpp), a NULL pointer clSetKernelArg with a NULL
// cl_mem (OpenCL's NULL for a global pointer); LOCAL_MEMORY is
// clSetKernelArg(size, NULL). OpenCL has no dynamic local memory apart from
// __local pointer parameters, so shared_bytes > 0 is refused.
#include "backend.hpp"

#include <cstring>

namespace accel::opencl {

// A held-back launch: everything launch_kernel was given, copied.
struct Launch {
  Kernel* kernel = nullptr;  // one reference
  cl_uint dims = 1;
  size_t global[3] = {1, 1, 1};
  size_t local[3] = {1, 1, 1};
  std::vector<accel_kernel_arg_t> args;  // VALUE args point into `bytes`
  std::vector<unsigned char> bytes;

  Launch() = default;
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
  ~Launch() {
    if (kernel != nullptr) kernel_unref(kernel);
  }
};

namespace {

// A failed clSetKernelArg*: a wrong size or kind is the caller's (only
// possible when the driver had no argument information for the core to
// check against), anything else the driver's.
accel_status_t arg_failure(const Kernel* k, size_t i, const char* call, cl_int err) {
  if (err == CL_INVALID_ARG_SIZE || err == CL_INVALID_ARG_VALUE || err == CL_INVALID_ARG_INDEX ||
      err == CL_INVALID_SAMPLER || err == CL_INVALID_MEM_OBJECT)
    return fail(
        ACCEL_ERROR_INVALID_ARGUMENT, "kernel '%s' argument %zu: %s", k->name.c_str(), i,
        accel::plugin::vendor_failure_message(call, cl_error_name(err), err, cl_error_text(err))
            .c_str());
  return vendor_fail(call, err);
}

// Sets arguments [0, n) on `obj`.
accel_status_t set_args(const Kernel* k, cl_kernel obj, const accel_kernel_arg_t* args, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const accel_kernel_arg_t& a = args[i];
    const auto idx = static_cast<cl_uint>(i);
    cl_int err = CL_SUCCESS;
    switch (a.kind) {
      case ACCEL_KERNEL_ARG_VALUE:
        err = clSetKernelArg(obj, idx, a.size, a.value);
        if (err != CL_SUCCESS) return arg_failure(k, i, "clSetKernelArg", err);
        break;
      case ACCEL_KERNEL_ARG_DEVICE_POINTER:
        if (a.value == nullptr) {
          const cl_mem none = nullptr;
          err = clSetKernelArg(obj, idx, sizeof none, &none);
          if (err != CL_SUCCESS) return arg_failure(k, i, "clSetKernelArg (NULL pointer)", err);
        } else {
          err = clSetKernelArgSVMPointer(obj, idx, a.value);
          if (err != CL_SUCCESS) return arg_failure(k, i, "clSetKernelArgSVMPointer", err);
        }
        break;
      case ACCEL_KERNEL_ARG_LOCAL_MEMORY:
        err = clSetKernelArg(obj, idx, a.size, nullptr);
        if (err != CL_SUCCESS) return arg_failure(k, i, "clSetKernelArg (local memory)", err);
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel '%s' argument %zu: unknown kind %d",
                    k->name.c_str(), i, static_cast<int>(a.kind));
    }
  }
  return ACCEL_SUCCESS;
}

// A failed clEnqueueNDRangeKernel: sizes the driver refused are the
// caller's, running out of resources (local memory, mostly) OUT_OF_MEMORY.
accel_status_t enqueue_failure(const Kernel* k, cl_int err) {
  std::string what = accel::plugin::vendor_failure_message(
      "clEnqueueNDRangeKernel", cl_error_name(err), err, cl_error_text(err));
  switch (err) {
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE:
    case CL_INVALID_KERNEL_ARGS:
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel '%s': %s", k->name.c_str(), what.c_str());
    case CL_OUT_OF_RESOURCES:
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "kernel '%s': %s", k->name.c_str(), what.c_str());
    default:
      return fail(status_of(err), what);
  }
}

// Takes a kernel object, sets the arguments, enqueues it on the stream's
// queue and makes it the stream's latest command. Caller holds s->mu.
accel_status_t enqueue(Stream* s, Kernel* k, cl_uint dims, const size_t* global,
                       const size_t* local, const accel_kernel_arg_t* args, size_t n) {
  cl_kernel obj = nullptr;
  if (accel_status_t st = kernel_acquire(k, &obj); st != ACCEL_SUCCESS) return st;
  accel_status_t st = set_args(k, obj, args, n);
  cl_event ev = nullptr;
  cl_int err = CL_SUCCESS;
  if (st == ACCEL_SUCCESS)
    err = clEnqueueNDRangeKernel(s->queue, obj, dims, nullptr, global, local, 0, nullptr, &ev);
  // The enqueue captured the argument values: the object is free again.
  kernel_release(k, obj);
  if (st != ACCEL_SUCCESS) return st;
  if (err != CL_SUCCESS) return enqueue_failure(k, err);
  return stream_commit(s, ev);
}

// Sets the arguments on an idle object without enqueueing: for a launch
// that is held back, so that one the driver would refuse fails now.
accel_status_t try_args(Kernel* k, const accel_kernel_arg_t* args, size_t n) {
  cl_kernel obj = nullptr;
  if (accel_status_t st = kernel_acquire(k, &obj); st != ACCEL_SUCCESS) return st;
  accel_status_t st = set_args(k, obj, args, n);
  kernel_release(k, obj);
  return st;
}

// Checks grid and block against the device's work-item limits and address
// width; fills the NDRange sizes and *threads, the work-items of one block.
accel_status_t check_ndrange(const Kernel* k, accel_dim3_t grid, accel_dim3_t block, size_t* global,
                             size_t* local, uint64_t* threads) {
  const Device* dev = k->dev;
  const uint32_t g[3] = {grid.x, grid.y, grid.z};
  const uint32_t b[3] = {block.x, block.y, block.z};
  static constexpr char kAxis[3] = {'x', 'y', 'z'};
  const uint64_t addressable =
      dev->address_bits >= 64 ? UINT64_MAX : (uint64_t{1} << dev->address_bits) - 1;
  *threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (b[i] > dev->max_work_item[i])
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': block.%c %u exceeds CL_DEVICE_MAX_WORK_ITEM_SIZES[%d] = %zu of "
                  "OpenCL %s",
                  k->name.c_str(), kAxis[i], b[i], i, dev->max_work_item[i], dev->label().c_str());
    *threads *= b[i];
    // grid and block are 32-bit: the product fits in 64 bits; it must also
    // fit the host's size_t and the device's address width.
    const uint64_t total = uint64_t{g[i]} * b[i];
    if (total > addressable || total > SIZE_MAX)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': grid.%c %u x block.%c %u = %llu work-items exceed what OpenCL %s "
                  "addresses (CL_DEVICE_ADDRESS_BITS %u)",
                  k->name.c_str(), kAxis[i], g[i], kAxis[i], b[i],
                  static_cast<unsigned long long>(total), dev->label().c_str(), dev->address_bits);
    global[i] = static_cast<size_t>(total);
    local[i] = b[i];
  }
  // The whole NDRange too: get_global_linear_id() is a size_t of the device.
  uint64_t items = 0;
  if (__builtin_mul_overflow(uint64_t{global[0]}, uint64_t{global[1]}, &items) ||
      __builtin_mul_overflow(items, uint64_t{global[2]}, &items) || items > addressable ||
      items > SIZE_MAX)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "kernel '%s': grid (%u, %u, %u) x block (%u, %u, %u) has more work-items than "
                "OpenCL %s can number (CL_DEVICE_ADDRESS_BITS %u: a global linear id is a "
                "size_t)",
                k->name.c_str(), g[0], g[1], g[2], b[0], b[1], b[2], dev->label().c_str(),
                dev->address_bits);
  return ACCEL_SUCCESS;
}

// Checks the work-items of one block (`threads`) against the device's and
// the kernel's work-group size.
accel_status_t check_work_group(const Kernel* k, accel_dim3_t block, uint64_t threads) {
  const Device* dev = k->dev;
  struct Limit {
    size_t value;
    const char* name;      // the limit, as the refusal names it
    const char* relation;  // "of" or "on" the device
  };
  const Limit limits[] = {{dev->max_work_group, "CL_DEVICE_MAX_WORK_GROUP_SIZE", "of"},
                          {k->work_group_size, "this kernel's CL_KERNEL_WORK_GROUP_SIZE", "on"}};
  for (const Limit& l : limits)
    if (threads > l.value)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel '%s': block (%u, %u, %u) has %llu work-items, over %s %zu %s OpenCL %s",
                  k->name.c_str(), block.x, block.y, block.z,
                  static_cast<unsigned long long>(threads), l.name, l.value, l.relation,
                  dev->label().c_str());
  return ACCEL_SUCCESS;
}

// Checks the kernel's own local memory plus its LOCAL_MEMORY arguments
// against the device's.
accel_status_t check_local_memory(const Kernel* k, const accel_kernel_arg_t* args, size_t n) {
  const Device* dev = k->dev;
  uint64_t local_bytes = k->static_local;
  for (size_t i = 0; i < n; ++i)  // saturating: absurd sizes must not wrap around
    if (args[i].kind == ACCEL_KERNEL_ARG_LOCAL_MEMORY)
      local_bytes =
          args[i].size > UINT64_MAX - local_bytes ? UINT64_MAX : local_bytes + args[i].size;
  if (local_bytes > dev->local_mem)
    return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                "kernel '%s': %llu bytes of local memory (the kernel's own %llu plus its "
                "LOCAL_MEMORY arguments) exceed CL_DEVICE_LOCAL_MEM_SIZE %llu of OpenCL %s",
                k->name.c_str(), static_cast<unsigned long long>(local_bytes),
                static_cast<unsigned long long>(k->static_local),
                static_cast<unsigned long long>(dev->local_mem), dev->label().c_str());
  return ACCEL_SUCCESS;
}

// Checks the launch against the device and the kernel before anything is
// queued; fills the sizes.
accel_status_t check_launch(const Kernel* k, accel_dim3_t grid, accel_dim3_t block,
                            size_t shared_bytes, const accel_kernel_arg_t* args, size_t n,
                            cl_uint* dims, size_t* global, size_t* local) {
  if (shared_bytes > 0)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "kernel '%s': shared_bytes %zu: OpenCL has no dynamic local memory besides "
                "__local pointer parameters; pass it as a LOCAL_MEMORY argument of the kernel's "
                "__local parameter",
                k->name.c_str(), shared_bytes);
  if (n != k->num_args)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "kernel '%s' takes %u arguments; the launch passes %zu", k->name.c_str(),
                k->num_args, n);
  uint64_t threads = 1;
  if (accel_status_t st = check_ndrange(k, grid, block, global, local, &threads);
      st != ACCEL_SUCCESS)
    return st;
  if (accel_status_t st = check_work_group(k, block, threads); st != ACCEL_SUCCESS) return st;
  if (accel_status_t st = check_local_memory(k, args, n); st != ACCEL_SUCCESS) return st;
  *dims = global[2] > 1 ? 3 : (global[1] > 1 ? 2 : 1);
  return ACCEL_SUCCESS;
}

// Records the launch into a native graph (ABI-47): a clone of a pool object
// with the arguments set carries their values as they are now.
accel_status_t record(Stream* s, Kernel* k, cl_uint dims, const size_t* global,
                      const size_t* local, const accel_kernel_arg_t* args, size_t n) {
  cl_kernel obj = nullptr;
  if (accel_status_t st = kernel_acquire(k, &obj); st != ACCEL_SUCCESS) return st;
  accel_status_t st = set_args(k, obj, args, n);
  cl_kernel clone = nullptr;
  cl_int err = CL_SUCCESS;
  if (st == ACCEL_SUCCESS) clone = clCloneKernel(obj, &err);
  kernel_release(k, obj);
  if (st != ACCEL_SUCCESS) return st;
  if (!clone || err != CL_SUCCESS) return vendor_fail("clCloneKernel", err);
  return graph_record_kernel(s->recording, clone, dims, global, local);
}

// A copy of the launch for the deferred list.
std::shared_ptr<Launch> copy_launch(Kernel* k, cl_uint dims, const size_t* global,
                                    const size_t* local, const accel_kernel_arg_t* args, size_t n) {
  auto l = std::make_shared<Launch>();
  l->dims = dims;
  std::memcpy(l->global, global, sizeof l->global);
  std::memcpy(l->local, local, sizeof l->local);
  size_t value_bytes = 0;
  for (size_t i = 0; i < n; ++i)
    if (args[i].kind == ACCEL_KERNEL_ARG_VALUE) value_bytes += args[i].size;
  l->bytes.resize(value_bytes);
  l->args.assign(args, args + n);
  size_t at = 0;
  for (accel_kernel_arg_t& a : l->args) {
    if (a.kind != ACCEL_KERNEL_ARG_VALUE) continue;
    std::memcpy(l->bytes.data() + at, a.value, a.size);
    a.value = l->bytes.data() + at;
    at += a.size;
  }
  kernel_ref(k);
  l->kernel = k;
  return l;
}

}  // namespace

accel_status_t launch_submit(Stream* s, const Launch& l) {
  return enqueue(s, l.kernel, l.dims, l.global, l.local, l.args.data(), l.args.size());
}

// Thread-safe on one kernel (each launch sets its arguments on a kernel
// object of its own from the pool). Nothing is queued on failure; a held-
// back launch whose arguments the driver accepts now can fail only as the
// enqueue itself, reported by the stream's next query or synchronize.
accel_status_t op_launch_kernel(accel_plugin_kernel_t kernel, accel_dim3_t grid, accel_dim3_t block,
                                size_t shared_bytes, const accel_kernel_arg_t* args,
                                size_t num_args, accel_plugin_stream_t stream) {
  return guarded("launch_kernel", [&]() -> accel_status_t {
    auto* k = static_cast<Kernel*>(kernel);
    Stream* s = stream_of(stream);
    if (s->dev != k->dev)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH, "kernel '%s' is of OpenCL %s, the stream of %s",
                  k->name.c_str(), k->dev->label().c_str(), s->dev->label().c_str());
    cl_uint dims = 1;
    size_t global[3], local[3];
    if (accel_status_t st =
            check_launch(k, grid, block, shared_bytes, args, num_args, &dims, global, local);
        st != ACCEL_SUCCESS)
      return st;
    if (s->recording) return record(s, k, dims, global, local, args, num_args);
    std::unique_lock<std::mutex> lock(s->mu);
    if (!s->blocked) return enqueue(s, k, dims, global, local, args, num_args);
    lock.unlock();
    // Behind a host gate: check what the driver would say now, then keep a
    // copy (the gate may have opened meanwhile: stream_enqueue decides).
    if (accel_status_t st = try_args(k, args, num_args); st != ACCEL_SUCCESS) return st;
    Op op;
    op.kind = Op::KernelLaunch;
    op.launch = copy_launch(k, dims, global, local, args, num_args);
    return stream_enqueue(s, std::move(op));
  });
}

}  // namespace accel::opencl
