// Streams: default streams, created streams, priorities, query, sync, wait.
//
// Default stream of a device: a plugin-owned handle for HIP's null stream of
// that device (what HIP code uses when it passes no stream). HIP resolves the
// null stream through the calling thread's current device, so every
// operation makes the stream's device current first and restores the
// caller's device afterwards (DeviceScope). Created streams are
// hipStreamNonBlocking (they do not synchronise with the null stream), with
// the priority the core already clamped into hipDeviceGetStreamPriorityRange.
#include <memory>

#include "backend.hpp"

namespace accel::hip {

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return guarded("stream_priority_range", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    DeviceScope scope;
    if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
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
  return guarded("stream_create", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    auto s = std::make_unique<Stream>();
    s->device = d->index;
    DeviceScope scope;
    if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
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
    DeviceScope scope;
    if (accel_status_t st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    // hipStreamDestroy lets queued work complete.
    if (hipError_t rc = runtime().hipStreamDestroy(s->native); rc != hipSuccess)
      return vendor_fail("hipStreamDestroy", rc);
    delete s;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* out) {
  return guarded("default_stream", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    *out = &d->default_stream;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (accel_status_t st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
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
    DeviceScope scope;
    if (accel_status_t st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    if (hipError_t rc = runtime().hipStreamSynchronize(s->native); rc != hipSuccess)
      return vendor_fail("hipStreamSynchronize", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (accel_status_t st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    if (hipError_t rc = runtime().hipStreamWaitEvent(s->native, event_of(event)->native, 0);
        rc != hipSuccess)
      return vendor_fail("hipStreamWaitEvent", rc);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
