#include "streams.hpp"

#include <memory>
#include <new>

#include <fmt/format.h>

#include "common.hpp"
#include "context.hpp"
#include "driver.hpp"
#include "errors.hpp"

namespace accel_cuda {

namespace {

Stream* g_defaults = nullptr;  // never freed: handed to the core until exit

Stream* as_stream(accel_plugin_stream_t s) { return static_cast<Stream*>(s); }
Event* as_event(accel_plugin_event_t e) { return static_cast<Event*>(e); }

// Query answers: NOT_READY is not a failure, so it sets no error.
accel_status_t query_result(const char* call, CUresult rc) {
  if (rc == CUDA_SUCCESS) return ACCEL_SUCCESS;
  if (rc == CUDA_ERROR_NOT_READY) return ACCEL_ERROR_NOT_READY;
  return cuda_fail(call, rc);
}

#define ACCEL_CTX_SCOPE(device)                             \
  CtxScope scope_(device);                                  \
  if (scope_.status() != ACCEL_SUCCESS) return scope_.status()

}  // namespace

accel_status_t init_default_streams(int32_t count) {
  g_defaults = new (std::nothrow) Stream[static_cast<size_t>(count)];
  if (g_defaults == nullptr) return fail(ACCEL_ERROR_OUT_OF_MEMORY, "host memory exhausted");
  for (int32_t i = 0; i < count; ++i) {
    g_defaults[i].device = i;
    g_defaults[i].handle = CU_STREAM_LEGACY;
    g_defaults[i].is_default = true;
  }
  return ACCEL_SUCCESS;
}

accel_status_t device_synchronize(int32_t device) {
  ACCEL_CTX_SCOPE(device);
  ACCEL_CU_TRY(cuCtxSynchronize, ());
  return ACCEL_SUCCESS;
}

accel_status_t stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  ACCEL_CTX_SCOPE(device);
  int lo = 0, hi = 0;
  ACCEL_CU_TRY(cuCtxGetStreamPriorityRange, (&lo, &hi));
  *least = lo;
  *greatest = hi;
  return ACCEL_SUCCESS;
}

accel_status_t stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* stream) {
  ACCEL_CTX_SCOPE(device);
  auto s = std::unique_ptr<Stream>(new (std::nothrow) Stream());
  if (s == nullptr) return fail(ACCEL_ERROR_OUT_OF_MEMORY, "host memory exhausted");
  ACCEL_CU_TRY(cuStreamCreateWithPriority, (&s->handle, CU_STREAM_NON_BLOCKING, priority));
  s->device = device;
  *stream = s.release();
  return ACCEL_SUCCESS;
}

accel_status_t stream_destroy(accel_plugin_stream_t stream) {
  Stream* s = as_stream(stream);
  if (s->is_default) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "a default stream cannot be destroyed");
  ACCEL_CTX_SCOPE(s->device);
  ACCEL_CU_TRY(cuStreamDestroy, (s->handle));  // queued work still completes
  delete s;
  return ACCEL_SUCCESS;
}

accel_status_t default_stream(int32_t device, accel_plugin_stream_t* stream) {
  *stream = &g_defaults[device];
  return ACCEL_SUCCESS;
}

accel_status_t stream_query(accel_plugin_stream_t stream) {
  Stream* s = as_stream(stream);
  ACCEL_CTX_SCOPE(s->device);
  return query_result("cuStreamQuery", driver().cuStreamQuery(s->handle));
}

accel_status_t stream_synchronize(accel_plugin_stream_t stream) {
  Stream* s = as_stream(stream);
  ACCEL_CTX_SCOPE(s->device);
  ACCEL_CU_TRY(cuStreamSynchronize, (s->handle));
  return ACCEL_SUCCESS;
}

accel_status_t stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  Stream* s = as_stream(stream);
  ACCEL_CTX_SCOPE(s->device);
  ACCEL_CU_TRY(cuStreamWaitEvent, (s->handle, as_event(event)->handle, 0));
  return ACCEL_SUCCESS;
}

accel_status_t launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn, void* user_data) {
  Stream* s = as_stream(stream);
  ACCEL_CTX_SCOPE(s->device);
  // accel_host_fn and CUhostFn are both void (*)(void*).
  ACCEL_CU_TRY(cuLaunchHostFunc, (s->handle, fn, user_data));
  return ACCEL_SUCCESS;
}

accel_status_t event_create(int32_t device, uint32_t flags, accel_plugin_event_t* event) {
  ACCEL_CTX_SCOPE(device);
  auto e = std::unique_ptr<Event>(new (std::nothrow) Event());
  if (e == nullptr) return fail(ACCEL_ERROR_OUT_OF_MEMORY, "host memory exhausted");
  unsigned cu_flags =
      (flags & ACCEL_EVENT_ENABLE_TIMING) != 0 ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
  ACCEL_CU_TRY(cuEventCreate, (&e->handle, cu_flags));
  e->device = device;
  *event = e.release();
  return ACCEL_SUCCESS;
}

accel_status_t event_destroy(accel_plugin_event_t event) {
  Event* e = as_event(event);
  ACCEL_CTX_SCOPE(e->device);
  ACCEL_CU_TRY(cuEventDestroy, (e->handle));
  delete e;
  return ACCEL_SUCCESS;
}

accel_status_t event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  Event* e = as_event(event);
  ACCEL_CTX_SCOPE(e->device);
  ACCEL_CU_TRY(cuEventRecord, (e->handle, as_stream(stream)->handle));
  return ACCEL_SUCCESS;
}

accel_status_t event_query(accel_plugin_event_t event) {
  Event* e = as_event(event);
  ACCEL_CTX_SCOPE(e->device);
  return query_result("cuEventQuery", driver().cuEventQuery(e->handle));
}

accel_status_t event_synchronize(accel_plugin_event_t event) {
  Event* e = as_event(event);
  ACCEL_CTX_SCOPE(e->device);
  ACCEL_CU_TRY(cuEventSynchronize, (e->handle));
  return ACCEL_SUCCESS;
}

accel_status_t event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end, float* ms) {
  Event* a = as_event(start);
  ACCEL_CTX_SCOPE(a->device);
  float out = 0.0f;
  CUresult rc = driver().cuEventElapsedTime(&out, a->handle, as_event(end)->handle);
  if (rc == CUDA_ERROR_NOT_READY) {
    return fail(ACCEL_ERROR_NOT_READY, fmt::format("cuEventElapsedTime: {}", error_text(rc)));
  }
  if (rc != CUDA_SUCCESS) return cuda_fail("cuEventElapsedTime", rc);
  *ms = out;
  return ACCEL_SUCCESS;
}

}  // namespace accel_cuda
