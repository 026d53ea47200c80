// Streams: default streams, created streams, priorities, query, sync and
// waits on events. Native handles and streams wrapping the program's
// hipStream_t are in interop.cpp.
//
// Default stream of a device: a blocking stream (hipStreamDefault, priority
// 0) the plugin creates on first use and never destroys. HIP's null stream
// cannot be it: its handle is NULL, which no native handle may be (and HIP
// 5.2 has no non-NULL alias for it such as hipStreamLegacy). A blocking
// stream is ordered with the null stream both ways by HIP itself (null-stream
// work waits for the device's blocking streams and they wait for it), so
// HIP code that passes no stream still runs in order with accel's default
// stream. Created streams are hipStreamNonBlocking (not synchronised with the
// null stream), with the priority the core already clamped into
// hipDeviceGetStreamPriorityRange. Every operation makes the stream's device
// current first and restores the caller's device afterwards (DeviceScope).
#include <cstdint>
#include <memory>
#include <mutex>

#include "backend.hpp"

namespace accel::hip {

namespace {

// Serialises the creation of default streams, and reads of their handles
// by is_default_stream_queue.
std::mutex g_default_streams_mu;

}  // namespace

bool is_default_stream_queue(hipStream_t h, int32_t* device) {
  std::lock_guard lock(g_default_streams_mu);
  for (int32_t i = 0; i < device_count(); ++i) {
    Device* other;
    if (device_at(i, other) == ACCEL_SUCCESS && other->default_stream.native == h) {
      *device = i;
      return true;
    }
  }
  return false;
}

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return on_device("stream_priority_range", device, [&](Device* d) -> accel_status_t {
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    int lo = 0, hi = 0;
    if (hipError_t rc = runtime().hipDeviceGetStreamPriorityRange(&lo, &hi); rc != hipSuccess)
      return vendor_fail("hipDeviceGetStreamPriorityRange", rc);
    // The ABI promises least >= 0 >= greatest (0 is always the default).
    *least = lo < 0 ? 0 : lo;
    *greatest = hi > 0 ? 0 : hi;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* out) {
  return on_device("stream_create", device, [&](Device* d) -> accel_status_t {
    auto s = std::make_unique<Stream>();
    s->device = d->index;
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    if (hipError_t rc =
            runtime().hipStreamCreateWithPriority(&s->native, hipStreamNonBlocking, priority);
        rc != hipSuccess)
      return vendor_fail("hipStreamCreateWithPriority", rc);
    *out = s.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_destroy(accel_plugin_stream_t stream) {
  return guarded("stream_destroy", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    if (s->is_default)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "a default stream cannot be destroyed");
    if (s->owns_native) {
      ACCEL_HIP_DEVICE_SCOPE(s->device);
      // hipStreamDestroy lets queued work complete.
      if (hipError_t rc = runtime().hipStreamDestroy(s->native); rc != hipSuccess)
        return vendor_fail("hipStreamDestroy", rc);
    }
    // A borrowed queue stays the program's, its queued work running on.
    delete s;
    return ACCEL_SUCCESS;
  });
}

// Called by the core once per device (it keeps the answer), under its lock.
accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* out) {
  return on_device("default_stream", device, [&](Device* d) -> accel_status_t {
    std::lock_guard lock(g_default_streams_mu);
    if (d->default_stream.native == nullptr) {
      ACCEL_HIP_DEVICE_SCOPE(d->index);
      hipStream_t h = nullptr;
      if (hipError_t rc = runtime().hipStreamCreateWithPriority(&h, hipStreamDefault, 0);
          rc != hipSuccess)
        return vendor_fail("hipStreamCreateWithPriority", rc,
                           format("(the default stream of device %d)", static_cast<int>(d->index)));
      d->default_stream.native = h;
    }
    *out = &d->default_stream;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    hipError_t rc = runtime().hipStreamQuery(s->native);
    if (rc == hipSuccess) return ACCEL_SUCCESS;
    // An answer, not a failure: the core words it.
    if (rc == hipErrorNotReady) return ACCEL_ERROR_NOT_READY;
    return vendor_fail("hipStreamQuery", rc);
  });
}

accel_status_t op_stream_synchronize(accel_plugin_stream_t stream) {
  return guarded("stream_synchronize", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    if (hipError_t rc = runtime().hipStreamSynchronize(s->native); rc != hipSuccess)
      return vendor_fail("hipStreamSynchronize", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    if (hipError_t rc = runtime().hipStreamWaitEvent(s->native, event_of(event)->native, 0);
        rc != hipSuccess)
      return vendor_fail("hipStreamWaitEvent", rc);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
