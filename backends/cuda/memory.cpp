#include "memory.hpp"

#include <fmt/format.h>

#include "common.hpp"
#include "context.hpp"
#include "driver.hpp"
#include "errors.hpp"
#include "streams.hpp"

namespace accel_cuda {

namespace {

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

}  // namespace

accel_status_t mem_alloc(int32_t device, size_t bytes, void** ptr) {
  CtxScope scope(device);
  if (scope.status() != ACCEL_SUCCESS) return scope.status();
  CUdeviceptr p = 0;
  CUresult rc = driver().cuMemAlloc(&p, bytes);
  if (rc != CUDA_SUCCESS) {
    return cuda_fail("cuMemAlloc", rc, fmt::format("for {} bytes on device {}", bytes, device));
  }
  *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  return ACCEL_SUCCESS;
}

accel_status_t mem_free(int32_t device, void* ptr) {
  CtxScope scope(device);
  if (scope.status() != ACCEL_SUCCESS) return scope.status();
  ACCEL_CU_TRY(cuMemFree, (dptr(ptr)));
  return ACCEL_SUCCESS;
}

accel_status_t memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                            accel_plugin_stream_t stream) {
  auto* s = static_cast<Stream*>(stream);
  CtxScope scope(s->device);
  if (scope.status() != ACCEL_SUCCESS) return scope.status();
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
  return fail(ACCEL_ERROR_INVALID_ARGUMENT, fmt::format("unknown copy kind {}", static_cast<int>(kind)));
}

accel_status_t memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  auto* s = static_cast<Stream*>(stream);
  CtxScope scope(s->device);
  if (scope.status() != ACCEL_SUCCESS) return scope.status();
  ACCEL_CU_TRY(cuMemsetD8Async, (dptr(dst), static_cast<unsigned char>(value), bytes, s->handle));
  return ACCEL_SUCCESS;
}

accel_status_t mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  CtxScope scope(device);
  if (scope.status() != ACCEL_SUCCESS) return scope.status();
  size_t f = 0, t = 0;
  ACCEL_CU_TRY(cuMemGetInfo, (&f, &t));
  *free_bytes = f;
  *total_bytes = t;
  return ACCEL_SUCCESS;
}

}  // namespace accel_cuda
