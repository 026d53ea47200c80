// Device memory: cuMemAlloc/cuMemFree, async copies in the three
// directions, memset, free/total. Device pointers cross the ABI as void*
// holding the CUdeviceptr value.
#pragma once

#include "accel/accel_plugin.h"

namespace accel_cuda {

accel_status_t mem_alloc(int32_t device, size_t bytes, void** ptr);
accel_status_t mem_free(int32_t device, void* ptr);
accel_status_t memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                            accel_plugin_stream_t stream);
accel_status_t memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream);
accel_status_t mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes);

}  // namespace accel_cuda
