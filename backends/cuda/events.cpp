// Events: cuEvent* in the event's device context. Timing is on only when
// asked for (ACCEL_EVENT_ENABLE_TIMING): CUDA documents events made with
// CU_EVENT_DISABLE_TIMING as the fastest to query and wait on. ABI 1.1: the
// event's native handle.
#include <memory>

#include "backend.hpp"

namespace accel::cuda {

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* event) {
  return guarded("event_create", [&] {
    ACCEL_CUDA_CTX_SCOPE(device);
    auto e = std::make_unique<Event>();
    const unsigned cu_flags =
        (flags & ACCEL_EVENT_ENABLE_TIMING) != 0 ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
    ACCEL_CU_TRY(cuEventCreate, (&e->handle, cu_flags));
    e->device = device;
    *event = e.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_destroy(accel_plugin_event_t event) {
  return guarded("event_destroy", [&] {
    Event* e = as_event(event);
    ACCEL_CUDA_CTX_SCOPE(e->device);
    ACCEL_CU_TRY(cuEventDestroy, (e->handle));
    delete e;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  return guarded("event_record", [&] {
    Event* e = as_event(event);
    ACCEL_CUDA_CTX_SCOPE(e->device);
    ACCEL_CU_TRY(cuEventRecord, (e->handle, as_stream(stream)->handle));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_query(accel_plugin_event_t event) {
  return guarded("event_query", [&] {
    Event* e = as_event(event);
    ACCEL_CUDA_CTX_SCOPE(e->device);
    return query_status("cuEventQuery", driver().cuEventQuery(e->handle));
  });
}

accel_status_t op_event_synchronize(accel_plugin_event_t event) {
  return guarded("event_synchronize", [&] {
    Event* e = as_event(event);
    ACCEL_CUDA_CTX_SCOPE(e->device);
    ACCEL_CU_TRY(cuEventSynchronize, (e->handle));
    return ACCEL_SUCCESS;
  });
}

// CUDA_ERROR_NOT_READY (an event not yet complete) maps to
// ACCEL_ERROR_NOT_READY through vendor_fail, with the detail recorded.
accel_status_t op_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                     float* ms) {
  return guarded("event_elapsed_time", [&] {
    Event* a = as_event(start);
    ACCEL_CUDA_CTX_SCOPE(a->device);
    float out = 0.0f;
    ACCEL_CU_TRY(cuEventElapsedTime, (&out, a->handle, as_event(end)->handle));
    *ms = out;
    return ACCEL_SUCCESS;
  });
}

// One CUevent for the event's whole life (cuEventRecord re-records it), so
// the handle is the same before and after every record, never NULL.
accel_status_t op_event_native_handle(accel_plugin_event_t event, accel_native_handle_t* out) {
  return guarded("event_native_handle", [&] {
    Event* e = as_event(event);
    return native_handle_of(e->device, e->handle, out);
  });
}

}  // namespace accel::cuda
