// Device memory (hipMalloc/hipFree), async copies and fills, memory info.
// Pointer checks are the core's (its allocation table) and the runtime's
// (hipErrorInvalidValue / hipErrorInvalidDevicePointer are reported as
// ACCEL_ERROR_BACKEND_FAILURE with the runtime's text).
#include "backend.hpp"

namespace accel::hip {

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return guarded("mem_alloc", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    DeviceScope scope;
    if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
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
  return guarded("mem_free", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    DeviceScope scope;
    if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
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
    DeviceScope scope;
    if (accel_status_t st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    if (hipError_t rc = runtime().hipMemcpyAsync(dst, src, bytes, hk, s->native); rc != hipSuccess)
      return vendor_fail("hipMemcpyAsync", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (accel_status_t st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    if (hipError_t rc = runtime().hipMemsetAsync(dst, value, bytes, s->native); rc != hipSuccess)
      return vendor_fail("hipMemsetAsync", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return guarded("mem_get_info", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    DeviceScope scope;
    if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
    size_t f = 0, t = 0;
    if (hipError_t rc = runtime().hipMemGetInfo(&f, &t); rc != hipSuccess)
      return vendor_fail("hipMemGetInfo", rc);
    *free_bytes = f;
    *total_bytes = t;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
