// Device memory (hipMalloc/hipFree), async copies and fills, memory info.
// Pointer checks are the core's (its allocation table) and the runtime's
// (hipErrorInvalidValue / hipErrorInvalidDevicePointer are reported as
// ACCEL_ERROR_BACKEND_FAILURE with the runtime's text).
#include "common.hpp"
#include "ops.hpp"
#include "runtime.hpp"

namespace accel_hip {

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return guarded("mem_alloc", [&]() -> accel_status_t {
    DeviceScope scope;
    if (auto st = scope.enter(device); st != ACCEL_SUCCESS) return st;
    void* p = nullptr;
    ACCEL_HIP_TRY(hipMalloc, (&p, bytes),
                  format("(%zu bytes) %s", bytes, on_device(device).c_str()));
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_free(int32_t device, void* ptr) {
  return guarded("mem_free", [&]() -> accel_status_t {
    DeviceScope scope;
    if (auto st = scope.enter(device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipFree, (ptr), format("(%p) %s", ptr, on_device(device).c_str()));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream) {
  return guarded("memcpy_async", [&]() -> accel_status_t {
    hipMemcpyKind hk;
    const char* what;
    switch (kind) {
      case ACCEL_MEMCPY_HOST_TO_DEVICE: hk = hipMemcpyHostToDevice; what = "host to device"; break;
      case ACCEL_MEMCPY_DEVICE_TO_HOST: hk = hipMemcpyDeviceToHost; what = "device to host"; break;
      case ACCEL_MEMCPY_DEVICE_TO_DEVICE: hk = hipMemcpyDeviceToDevice; what = "device to device"; break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    format("memcpy_async: unknown copy kind %d", static_cast<int>(kind)));
    }
    auto* s = static_cast<Stream*>(stream);
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipMemcpyAsync, (dst, src, bytes, hk, s->native),
                  format("(%zu bytes %s, dst %p, src %p) %s", bytes, what, dst, src,
                         on_device(s->device).c_str()));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&]() -> accel_status_t {
    auto* s = static_cast<Stream*>(stream);
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipMemsetAsync, (dst, value, bytes, s->native),
                  format("(%zu bytes at %p) %s", bytes, dst, on_device(s->device).c_str()));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return guarded("mem_get_info", [&]() -> accel_status_t {
    DeviceScope scope;
    if (auto st = scope.enter(device); st != ACCEL_SUCCESS) return st;
    size_t f = 0, t = 0;
    ACCEL_HIP_TRY(hipMemGetInfo, (&f, &t), on_device(device));
    *free_bytes = f;
    *total_bytes = t;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel_hip
