// Device memory: coarse-grained shared virtual memory (clSVMAlloc).
//
// An SVM allocation is a plain pointer valid in the device's context, which
// is what accel's API hands out. Devices without SVM (CL_DEVICE_SVM_CAPABILITIES
// lacks CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, e.g. OpenCL 1.x or a 3.0 device
// that opted out) report ACCEL_ERROR_NOT_SUPPORTED for allocation; streams
// and events still work on them.
//
// Every allocation is recorded (base, size, device) so copies and fills can
// check that device pointers lie inside a live allocation of the stream's
// device. Host memory given to the async copies must stay valid and unchanged
// until the copy completes (the caller's obligation, as in accel.h).
//
// mem_get_info: total is CL_DEVICE_GLOBAL_MEM_SIZE; free comes from
// CL_DEVICE_GLOBAL_FREE_MEMORY_AMD where the device has
// cl_amd_device_attribute_query, else it is an estimate: total minus the
// bytes allocated through this plugin (other processes are not seen).
#include "backend.hpp"

#include <map>

namespace accel::opencl {
namespace {

struct Alloc {
  size_t size;
  Device* dev;
};

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Alloc> allocs;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// Checks that [p, p+bytes) is inside a live allocation of the stream's device.
accel_status_t check_range(const Stream* s, const void* p, size_t bytes, const char* role) {
  if (!p) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s is NULL", role);
  auto addr = reinterpret_cast<uintptr_t>(p);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.allocs.upper_bound(addr);
  if (it == r.allocs.begin())
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s %p is not inside a live allocation of OpenCL %s",
                role, p, s->dev->label().c_str());
  --it;
  uintptr_t base = it->first;
  const Alloc& a = it->second;
  size_t offset = addr - base;
  if (offset >= a.size)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s %p is not inside a live allocation of OpenCL %s",
                role, p, s->dev->label().c_str());
  if (a.dev != s->dev)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                "%s %p belongs to OpenCL %s but the stream is on OpenCL %s", role, p,
                a.dev->label().c_str(), s->dev->label().c_str());
  if (bytes > a.size - offset)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s range [%p, +%zu) runs past the end of its allocation [%p, +%zu) on %s", role, p,
                bytes, reinterpret_cast<void*>(base), a.size, s->dev->label().c_str());
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return guarded("mem_alloc", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    if (!(dev->svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "mem_alloc: OpenCL %s has no shared virtual memory (CL_DEVICE_SVM_CAPABILITIES "
                  "0x%llx, %s); the opencl backend allocates device memory with clSVMAlloc only",
                  dev->label().c_str(), static_cast<unsigned long long>(dev->svm),
                  dev->version.c_str());
    if (dev->max_alloc && bytes > dev->max_alloc)
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "mem_alloc: %zu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of %s", bytes,
                  static_cast<unsigned long long>(dev->max_alloc), dev->label().c_str());
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
    void* p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, bytes, 0);
    if (!p)
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "clSVMAlloc(CL_MEM_READ_WRITE, %zu bytes) returned NULL on %s (clSVMAlloc "
                  "reports no error code; the device is most likely out of memory)",
                  bytes, dev->label().c_str());
    try {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      r.allocs.emplace(reinterpret_cast<uintptr_t>(p), Alloc{bytes, dev});
      dev->bytes_allocated += bytes;
    } catch (...) {
      clSVMFree(ctx, p);
      throw;
    }
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_free(int32_t device, void* ptr) {
  return guarded("mem_free", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    Registry& r = registry();
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.allocs.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == r.allocs.end())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "mem_free: %p is not a live allocation of the opencl backend", ptr);
      if (it->second.dev != dev)
        return fail(ACCEL_ERROR_DEVICE_MISMATCH, "mem_free: %p belongs to OpenCL %s, not %s", ptr,
                    it->second.dev->label().c_str(), dev->label().c_str());
      dev->bytes_allocated -= it->second.size;
      r.allocs.erase(it);
    }
    // The context exists: the allocation was made in it.
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
    clSVMFree(ctx, ptr);  // returns nothing; the caller has synchronised
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream) {
  return guarded("memcpy_async", [&]() -> accel_status_t {
    auto* s = static_cast<Stream*>(stream);
    if (!dst || !src)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: %s is NULL", !dst ? "dst" : "src");
    accel_status_t st = ACCEL_SUCCESS;
    switch (kind) {
      case ACCEL_MEMCPY_HOST_TO_DEVICE:
        st = check_range(s, dst, bytes, "destination");
        break;
      case ACCEL_MEMCPY_DEVICE_TO_HOST:
        st = check_range(s, src, bytes, "source");
        break;
      case ACCEL_MEMCPY_DEVICE_TO_DEVICE:
        st = check_range(s, dst, bytes, "destination");
        if (st == ACCEL_SUCCESS) st = check_range(s, src, bytes, "source");
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: unknown copy kind %d",
                    static_cast<int>(kind));
    }
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    Op op;
    op.kind = Op::Copy;
    op.dst = dst;
    op.src = src;
    op.bytes = bytes;
    return stream_enqueue(s, std::move(op));
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&]() -> accel_status_t {
    auto* s = static_cast<Stream*>(stream);
    accel_status_t st = check_range(s, dst, bytes, "destination");
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    Op op;
    op.kind = Op::Fill;
    op.dst = dst;
    op.pattern = static_cast<cl_uchar>(value);  // the enqueue copies the pattern
    op.bytes = bytes;
    return stream_enqueue(s, std::move(op));
  });
}

accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return guarded("mem_get_info", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    size_t total = static_cast<size_t>(dev->global_mem);
    size_t free = 0;
    bool from_vendor = false;
    if (dev->amd_free_memory) {
      size_t kb[2] = {0, 0};  // total free, largest free block; in KiB
      cl_int err =
          clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof kb, kb, nullptr);
      if (err == CL_SUCCESS) {
        free = kb[0] * 1024;
        from_vendor = true;
      } else {
        log_vendor_failure(ACCEL_LOG_DEBUG, "clGetDeviceInfo(CL_DEVICE_GLOBAL_FREE_MEMORY_AMD)",
                           err, "(estimating instead)");
      }
    }
    if (!from_vendor) {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      free = dev->bytes_allocated < total ? total - dev->bytes_allocated : 0;
    }
    if (free_bytes) *free_bytes = free;
    if (total_bytes) *total_bytes = total;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::opencl
