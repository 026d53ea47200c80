// Events: hipEventCreateWithFlags (timing only when asked for), record,
// query, synchronize, elapsed time, native handle.
#include <memory>

#include "backend.hpp"

namespace accel::hip {

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* out) {
  return on_device("event_create", device, [&](Device* d) -> accel_status_t {
    auto e = std::make_unique<Event>();
    e->device = d->index;
    e->flags = flags;
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    // Timing costs on every record: only events that ask for it get it.
    const unsigned hip_flags =
        (flags & ACCEL_EVENT_ENABLE_TIMING) ? hipEventDefault : hipEventDisableTiming;
    if (hipError_t rc = runtime().hipEventCreateWithFlags(&e->native, hip_flags); rc != hipSuccess)
      return vendor_fail("hipEventCreateWithFlags", rc);
    *out = e.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_destroy(accel_plugin_event_t event) {
  return guarded("event_destroy", [&]() -> accel_status_t {
    Event* e = event_of(event);
    ACCEL_HIP_DEVICE_SCOPE(e->device);
    if (hipError_t rc = runtime().hipEventDestroy(e->native); rc != hipSuccess)
      return vendor_fail("hipEventDestroy", rc);
    delete e;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  return guarded("event_record", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    // The null stream is the current device's.
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    if (hipError_t rc = runtime().hipEventRecord(event_of(event)->native, s->native);
        rc != hipSuccess)
      return vendor_fail("hipEventRecord", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_query(accel_plugin_event_t event) {
  return guarded("event_query", [&]() -> accel_status_t {
    hipError_t rc = runtime().hipEventQuery(event_of(event)->native);
    if (rc == hipSuccess) return ACCEL_SUCCESS;
    // An answer, not a failure: the core words it.
    if (rc == hipErrorNotReady) return ACCEL_ERROR_NOT_READY;
    return vendor_fail("hipEventQuery", rc);
  });
}

accel_status_t op_event_synchronize(accel_plugin_event_t event) {
  return guarded("event_synchronize", [&]() -> accel_status_t {
    if (hipError_t rc = runtime().hipEventSynchronize(event_of(event)->native); rc != hipSuccess)
      return vendor_fail("hipEventSynchronize", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                     float* ms) {
  return guarded("event_elapsed_time", [&]() -> accel_status_t {
    float t = 0.0f;
    if (hipError_t rc =
            runtime().hipEventElapsedTime(&t, event_of(start)->native, event_of(end)->native);
        rc != hipSuccess)
      return vendor_fail("hipEventElapsedTime", rc);
    *ms = t;
    return ACCEL_SUCCESS;
  });
}

// A HIP event is one object for all its records (hipEventRecord reuses it):
// its handle is valid from creation until event_destroy.
accel_status_t op_event_native_handle(accel_plugin_event_t event, accel_native_handle_t* out) {
  return guarded("event_native_handle", [&]() -> accel_status_t {
    const Event* e = event_of(event);
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_HIP, e->native, nullptr, e->device);
  });
}

}  // namespace accel::hip
