// Device memory: cuMemAlloc/cuMemFree, async copies in the three directions,
// memset, free/total, each in the device's context. Device pointers cross the
// ABI as void* holding the CUdeviceptr value.
#include <cstdint>

#include "backend.hpp"

namespace accel::cuda {

namespace {

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

}  // namespace

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return guarded("mem_alloc", [&] {
    ACCEL_CUDA_CTX_SCOPE(device);
    CUdeviceptr p = 0;
    ACCEL_CU_TRY(cuMemAlloc, (&p, bytes));
    *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_free(int32_t device, void* ptr) {
  return guarded("mem_free", [&] {
    ACCEL_CUDA_CTX_SCOPE(device);
    ACCEL_CU_TRY(cuMemFree, (dptr(ptr)));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream) {
  return guarded("memcpy_async", [&] {
    Stream* s = as_stream(stream);
    ACCEL_CUDA_CTX_SCOPE(s->device);
    switch (kind) {
      case ACCEL_MEMCPY_HOST_TO_DEVICE:
        ACCEL_CU_TRY(cuMemcpyHtoDAsync, (dptr(dst), src, bytes, s->handle));
        return ACCEL_SUCCESS;
      case ACCEL_MEMCPY_DEVICE_TO_HOST:
        ACCEL_CU_TRY(cuMemcpyDtoHAsync, (dst, dptr(src), bytes, s->handle));
        return ACCEL_SUCCESS;
      case ACCEL_MEMCPY_DEVICE_TO_DEVICE:
        ACCEL_CU_TRY(cuMemcpyDtoDAsync, (dptr(dst), dptr(src), bytes, s->handle));
        return ACCEL_SUCCESS;
      default:
        break;
    }
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "unknown copy kind %d", static_cast<int>(kind));
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&] {
    Stream* s = as_stream(stream);
    ACCEL_CUDA_CTX_SCOPE(s->device);
    ACCEL_CU_TRY(cuMemsetD8Async, (dptr(dst), static_cast<unsigned char>(value), bytes, s->handle));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return guarded("mem_get_info", [&] {
    ACCEL_CUDA_CTX_SCOPE(device);
    size_t f = 0, t = 0;
    ACCEL_CU_TRY(cuMemGetInfo, (&f, &t));
    *free_bytes = f;
    *total_bytes = t;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda
