// Device memory: cuMemAlloc/cuMemFree, async copies in the three directions,
// memset, free/total, each in the device's context. Device pointers cross the
// ABI as void* holding the CUdeviceptr value. ABI 1.1: page-locked host
// memory (cuMemHostAlloc / cuMemHostRegister, both PORTABLE) and copies
// between devices (cuMemcpyPeerAsync).
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

// ---- ABI 1.1: page-locked host memory ---------------------------------------

// The driver needs a current context for these calls; the memory belongs to
// no device: PORTABLE makes every context treat it as pinned, so copies
// between it and any device are truly asynchronous. The context used is the
// calling thread's (calling_thread_device), so no other device's context is
// created for it.

accel_status_t op_host_alloc(size_t bytes, uint32_t flags, void** ptr) {
  return guarded("host_alloc", [&] {
    (void)flags;  // 0: checked by the core
    ACCEL_CUDA_CTX_SCOPE(calling_thread_device());
    void* p = nullptr;
    ACCEL_CU_TRY(cuMemHostAlloc, (&p, bytes, CU_MEMHOSTALLOC_PORTABLE));
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_free(void* ptr) {
  return guarded("host_free", [&] {
    ACCEL_CUDA_CTX_SCOPE(calling_thread_device());
    ACCEL_CU_TRY(cuMemFreeHost, (ptr));
    return ACCEL_SUCCESS;
  });
}

// A range the program page-locked itself (cuMemHostRegister, cudaHostRegister)
// is refused with the driver's CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED as
// ACCEL_ERROR_INVALID_ARGUMENT; memory the driver cannot lock (e.g. some
// device or file mappings: CUDA_ERROR_NOT_SUPPORTED / NOT_PERMITTED) is
// ACCEL_ERROR_NOT_SUPPORTED.
accel_status_t op_host_register(void* ptr, size_t bytes, uint32_t flags) {
  return guarded("host_register", [&] {
    (void)flags;  // 0: checked by the core
    ACCEL_CUDA_CTX_SCOPE(calling_thread_device());
    CUresult rc = driver().cuMemHostRegister(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE);
    switch (rc) {
      case CUDA_SUCCESS:
        return ACCEL_SUCCESS;
      case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      case CUDA_ERROR_INVALID_VALUE:
        return vendor_fail_as(ACCEL_ERROR_INVALID_ARGUMENT, "cuMemHostRegister", rc);
      case CUDA_ERROR_NOT_SUPPORTED:
      case CUDA_ERROR_NOT_PERMITTED:
        return vendor_fail_as(ACCEL_ERROR_NOT_SUPPORTED, "cuMemHostRegister", rc);
      default:
        return vendor_fail("cuMemHostRegister", rc);
    }
  });
}

accel_status_t op_host_unregister(void* ptr) {
  return guarded("host_unregister", [&] {
    ACCEL_CUDA_CTX_SCOPE(calling_thread_device());
    CUresult rc = driver().cuMemHostUnregister(ptr);
    if (rc == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
      return vendor_fail_as(ACCEL_ERROR_INVALID_ARGUMENT, "cuMemHostUnregister", rc);
    if (rc != CUDA_SUCCESS) return vendor_fail("cuMemHostUnregister", rc);
    return ACCEL_SUCCESS;
  });
}

// ---- ABI 1.1: copies between devices ------------------------------------------

// cuMemcpyPeerAsync between the two primary contexts, queued on the stream
// (of either device) with its context current: ordered with the stream's
// other work. Direct over NVLink/PCIe P2P where the driver can, staged by
// the driver otherwise; peer access need not be enabled.
accel_status_t op_memcpy_peer_async(void* dst, int32_t dst_device, const void* src,
                                    int32_t src_device, size_t bytes,
                                    accel_plugin_stream_t stream) {
  return guarded("memcpy_peer_async", [&] {
    Stream* s = as_stream(stream);
    CUcontext dst_ctx = nullptr, src_ctx = nullptr;
    if (accel_status_t st = primary_context(dst_device, &dst_ctx); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = primary_context(src_device, &src_ctx); st != ACCEL_SUCCESS) return st;
    ACCEL_CUDA_CTX_SCOPE(s->device);
    ACCEL_CU_TRY(cuMemcpyPeerAsync, (dptr(dst), dst_ctx, dptr(src), src_ctx, bytes, s->handle));
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda

namespace accel::cuda {

// ---- ABI 1.3: pointers accel did not allocate ---------------------------------

// cuPointerGetAttribute (CUDA Driver API, "Unified Addressing"):
// CU_POINTER_ATTRIBUTE_MEMORY_TYPE is CU_MEMORYTYPE_DEVICE for device memory
// (cuMemAlloc, cudaMalloc) and CU_MEMORYTYPE_HOST for page-locked host
// memory, which every device may read under unified addressing (-1);
// managed memory (CU_POINTER_ATTRIBUTE_IS_MANAGED) is usable everywhere too
// (-1). Device memory's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL is mapped to
// the plugin's index. A pointer the driver does not know (pageable host
// memory) is CUDA_ERROR_INVALID_VALUE: ACCEL_ERROR_INVALID_ARGUMENT.
accel_status_t op_pointer_get_device(const void* ptr, int32_t* device_index) {
  return guarded("pointer_get_device", [&] {
    Driver& drv = driver();
    unsigned int type = 0;
    CUresult rc = drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(ptr));
    if (rc == CUDA_ERROR_INVALID_VALUE)
      return vendor_fail_as(ACCEL_ERROR_INVALID_ARGUMENT, "cuPointerGetAttribute", rc);
    if (rc != CUDA_SUCCESS) return vendor_fail("cuPointerGetAttribute", rc);
    int managed = 0;
    ACCEL_CU_TRY(cuPointerGetAttribute, (&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dptr(ptr)));
    if (type == CU_MEMORYTYPE_HOST || managed != 0) {
      *device_index = -1;
      return ACCEL_SUCCESS;
    }
    if (type != CU_MEMORYTYPE_DEVICE)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "cuPointerGetAttribute: pointer %p has memory type %u, not device memory", ptr,
                  type);
    int ordinal = -1;
    ACCEL_CU_TRY(cuPointerGetAttribute, (&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr(ptr)));
    return device_of_ordinal(ordinal, device_index);
  });
}

}  // namespace accel::cuda
