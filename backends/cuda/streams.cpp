// Streams: created streams, the default stream, priorities, query,
// synchronize and waits on events. Native handles of streams and streams
// that wrap the program's CUstream are in interop.cpp.
//
// A device's default stream is CU_STREAM_LEGACY of its primary context (made
// by op_lazy_init, devices.cpp). Streams made by op_stream_create are
// CU_STREAM_NON_BLOCKING (as torch's stream pool makes them), so they do not
// synchronise implicitly with the legacy stream. Every operation makes the
// stream's device context current for its duration (CtxScope).
//
// The plugin keeps no per-stream state that orders work: every operation
// goes straight to the CUstream (interop.cpp says what that means for the
// native handle).
#include <memory>

#include "backend.hpp"

#if ACCEL_HAVE_NVTX
// NVTX v3 is header-only: nvtxNameCuStreamA does nothing until a tool
// (Nsight Systems) injects itself through NVTX_INJECTION64_PATH, so the
// backend links nothing for it.
#include <nvtx3/nvToolsExtCuda.h>
#endif

namespace accel::cuda {

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return guarded("stream_priority_range", [&] {
    ACCEL_CUDA_CTX_SCOPE(device);
    int lo = 0, hi = 0;
    ACCEL_CU_TRY(cuCtxGetStreamPriorityRange, (&lo, &hi));
    *least = lo;
    *greatest = hi;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* stream) {
  return guarded("stream_create", [&] {
    ACCEL_CUDA_CTX_SCOPE(device);
    auto s = std::make_unique<Stream>();
    ACCEL_CU_TRY(cuStreamCreateWithPriority, (&s->handle, CU_STREAM_NON_BLOCKING, priority));
    s->device = device;
    *stream = s.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_destroy(accel_plugin_stream_t stream) {
  return guarded("stream_destroy", [&] {
    Stream* s = as_stream(stream);
    if (s->is_default)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "a default stream cannot be destroyed");
    if (s->owns_handle) {
      ACCEL_CUDA_CTX_SCOPE(s->device);
      ACCEL_CU_TRY(cuStreamDestroy, (s->handle));  // queued work still completes
    }
    delete s;  // a borrowed CUstream stays the program's, untouched
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* stream) {
  return on_device("default_stream", device, [&](Device* d) -> accel_status_t {
    *stream = &d->default_stream;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&] {
    Stream* s = as_stream(stream);
    ACCEL_CUDA_CTX_SCOPE(s->device);
    return query_status("cuStreamQuery", driver().cuStreamQuery(s->handle));
  });
}

accel_status_t op_stream_synchronize(accel_plugin_stream_t stream) {
  return guarded("stream_synchronize", [&] {
    Stream* s = as_stream(stream);
    ACCEL_CUDA_CTX_SCOPE(s->device);
    ACCEL_CU_TRY(cuStreamSynchronize, (s->handle));
    return ACCEL_SUCCESS;
  });
}

// The event may be of another device (ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT):
// CUDA waits on any context's event.
accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&] {
    Stream* s = as_stream(stream);
    ACCEL_CUDA_CTX_SCOPE(s->device);
    ACCEL_CU_TRY(cuStreamWaitEvent, (s->handle, as_event(event)->handle, 0));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_set_name(accel_plugin_stream_t stream, const char* name) {
  return guarded("stream_set_name", [&] {
#if ACCEL_HAVE_NVTX
    // The CUstream all of the stream's work goes to (a default stream's is
    // CU_STREAM_LEGACY). NVTX returns nothing: a tool's failure is its own.
    nvtxNameCuStreamA(as_stream(stream)->handle, name);
    return ACCEL_SUCCESS;
#else
    (void)stream;
    (void)name;
    return fail(ACCEL_ERROR_NOT_SUPPORTED, "built without the NVTX v3 headers");
#endif
  });
}

}  // namespace accel::cuda
