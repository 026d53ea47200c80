// Copies between two devices of one backend, shared by
// accel_memcpy_peer_async and accel_memcpy_async (DEVICE_TO_DEVICE across
// devices).
#pragma once

#include "accel/accel.h"

namespace accel::core {

// `stream` is live and ready. Checks that dst and src lie, with all their
// bytes, in device allocations of dst_device and src_device of the stream's
// backend, that the devices differ and the stream is of one of them, then
// queues the plugin's memcpy_peer_async. `fn` names the public function.
accel_status_t peer_copy(const char* fn, void* dst, int32_t dst_device, const void* src,
                         int32_t src_device, size_t bytes, accel_stream_t stream);

}  // namespace accel::core
