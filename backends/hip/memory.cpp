// Device memory (hipMalloc/hipFree), async copies and fills, memory info,
// page-locked host memory (hipHostMalloc / hipHostRegister) and copies
// between devices (hipMemcpyPeerAsync). Pointer checks are the core's (its
// allocation table) and the runtime's (hipErrorInvalidValue /
// hipErrorInvalidDevicePointer are reported as ACCEL_ERROR_BACKEND_FAILURE
// with the runtime's text).
#include "backend.hpp"

namespace accel::hip {

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return on_device("mem_alloc", device, [&](Device* d) -> accel_status_t {
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    void* p = nullptr;
    // Out of memory is the failure people act on: say how much, and where.
    if (hipError_t rc = runtime().hipMalloc(&p, bytes); rc != hipSuccess)
      return vendor_fail("hipMalloc", rc,
                         format("(%zu bytes) on device %d", bytes, static_cast<int>(d->index)));
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_free(int32_t device, void* ptr) {
  return on_device("mem_free", device, [&](Device* d) -> accel_status_t {
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    if (hipError_t rc = runtime().hipFree(ptr); rc != hipSuccess) return vendor_fail("hipFree", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream) {
  return guarded("memcpy_async", [&]() -> accel_status_t {
    hipMemcpyKind hk;
    switch (kind) {
      case ACCEL_MEMCPY_HOST_TO_DEVICE:
        hk = hipMemcpyHostToDevice;
        break;
      case ACCEL_MEMCPY_DEVICE_TO_HOST:
        hk = hipMemcpyDeviceToHost;
        break;
      case ACCEL_MEMCPY_DEVICE_TO_DEVICE:
        hk = hipMemcpyDeviceToDevice;
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: unknown copy kind %d",
                    static_cast<int>(kind));
    }
    Stream* s = stream_of(stream);
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    if (hipError_t rc = runtime().hipMemcpyAsync(dst, src, bytes, hk, s->native); rc != hipSuccess)
      return vendor_fail("hipMemcpyAsync", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    if (hipError_t rc = runtime().hipMemsetAsync(dst, value, bytes, s->native); rc != hipSuccess)
      return vendor_fail("hipMemsetAsync", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return on_device("mem_get_info", device, [&](Device* d) -> accel_status_t {
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    size_t f = 0, t = 0;
    if (hipError_t rc = runtime().hipMemGetInfo(&f, &t); rc != hipSuccess)
      return vendor_fail("hipMemGetInfo", rc);
    *free_bytes = f;
    *total_bytes = t;
    return ACCEL_SUCCESS;
  });
}

// --- page-locked host memory ------------------------------------------------

// hipHostMalloc with hipHostMallocPortable: pinned system memory that every
// device of the process may copy from and to asynchronously (ROCm makes it
// accessible to all GPU agents; Portable says so as CUDA's flag does).
// Coherence follows HIP's default (HIP_HOST_COHERENT).
accel_status_t op_host_alloc(size_t bytes, uint32_t /*flags*/, void** ptr) {
  return guarded("host_alloc", [&]() -> accel_status_t {
    void* p = nullptr;
    if (hipError_t rc = runtime().hipHostMalloc(&p, bytes, hipHostMallocPortable); rc != hipSuccess)
      return vendor_fail("hipHostMalloc", rc, format("(%zu bytes)", bytes));
    if (p == nullptr)
      return fail(ACCEL_ERROR_BACKEND_FAILURE, "hipHostMalloc (%zu bytes) succeeded with NULL",
                  bytes);
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_free(void* ptr) {
  return guarded("host_free", [&]() -> accel_status_t {
    if (hipError_t rc = runtime().hipHostFree(ptr); rc != hipSuccess)
      return vendor_fail("hipHostFree", rc);
    return ACCEL_SUCCESS;
  });
}

// hipHostRegister with hipHostRegisterPortable: the range is page-locked
// for every device. Copies use the host address (HIP's unified addressing);
// kernels would need hipHostGetDevicePointer, which accel does not offer.
accel_status_t op_host_register(void* ptr, size_t bytes, uint32_t /*flags*/) {
  return guarded("host_register", [&]() -> accel_status_t {
    if (hipError_t rc = runtime().hipHostRegister(ptr, bytes, hipHostRegisterPortable);
        rc != hipSuccess)
      return vendor_fail("hipHostRegister", rc, format("(%zu bytes at %p)", bytes, ptr));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_unregister(void* ptr) {
  return guarded("host_unregister", [&]() -> accel_status_t {
    if (hipError_t rc = runtime().hipHostUnregister(ptr); rc != hipSuccess)
      return vendor_fail("hipHostUnregister", rc);
    return ACCEL_SUCCESS;
  });
}

// --- copies between devices --------------------------------------------------

// hipMemcpyPeerAsync on the stream's queue (of either device): ordered with
// the stream's other work. HIP copies directly over the link when peer
// access is enabled and stages through host memory itself when it is not,
// so the copy works either way.
accel_status_t op_memcpy_peer_async(void* dst, int32_t dst_device, const void* src,
                                    int32_t src_device, size_t bytes,
                                    accel_plugin_stream_t stream) {
  return guarded("memcpy_peer_async", [&]() -> accel_status_t {
    Device* dd;
    Device* sd;
    if (accel_status_t st = device_at(dst_device, dd); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = device_at(src_device, sd); st != ACCEL_SUCCESS) return st;
    Stream* s = stream_of(stream);
    // A graph recording (graphs.cpp): a copy HIP may stage through host
    // memory is not one a captured graph can replay; the core re-issues it.
    if (s->recording)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "memcpy_peer_async is not recorded into HIP graphs (re-issued by accel)");
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    if (hipError_t rc =
            runtime().hipMemcpyPeerAsync(dst, dd->index, src, sd->index, bytes, s->native);
        rc != hipSuccess)
      return vendor_fail("hipMemcpyPeerAsync", rc,
                         format("(%zu bytes from device %d to device %d)", bytes,
                                static_cast<int>(sd->index), static_cast<int>(dd->index)));
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip

namespace accel::hip {

// hipPointerGetAttributes (HIP Runtime API, "Memory Management"). Its
// memory-type enum changed values in HIP 6 (hipMemoryTypeUnregistered
// added), so the answer is read from what both releases fill alike: a
// pointer the runtime does not know is hipErrorInvalidValue (HIP 5) or has
// no devicePointer (HIP 6: unregistered); page-locked host memory
// (hostPointer set) and managed memory are usable on every device (-1);
// device memory belongs to `device`, HIP's ordinal, which is the plugin's
// index.
accel_status_t op_pointer_get_device(const void* ptr, int32_t* device_index) {
  return guarded("pointer_get_device", [&]() -> accel_status_t {
    const Runtime& rt = runtime();
    if (rt.hipPointerGetAttributes == nullptr)
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "the HIP runtime has no hipPointerGetAttributes");
    hipPointerAttribute_t attr{};
    hipError_t rc = rt.hipPointerGetAttributes(&attr, ptr);
    if (rc == hipErrorInvalidValue || (rc == hipSuccess && attr.devicePointer == nullptr))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "hipPointerGetAttributes: %p is not memory the HIP runtime allocated or "
                  "registered",
                  ptr);
    if (rc != hipSuccess) return vendor_fail("hipPointerGetAttributes", rc);
    if (attr.isManaged != 0 || attr.hostPointer != nullptr) {
      *device_index = -1;
      return ACCEL_SUCCESS;
    }
    if (attr.device < 0 || attr.device >= device_count())
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "hipPointerGetAttributes: %p is memory of HIP device %d, none of the plugin's %d",
                  ptr, attr.device, static_cast<int>(device_count()));
    *device_index = attr.device;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
