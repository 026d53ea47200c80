// Streams, events and host functions.
//
// Default stream of a device: a plugin-owned handle for HIP's null stream of
// that device (what HIP code uses when it passes no stream). HIP resolves the
// null stream through the calling thread's current device, so every
// operation makes the stream's device current first and restores the
// caller's device afterwards (DeviceScope). Created streams are
// hipStreamNonBlocking (they do not synchronise with the null stream), with
// the priority the core already clamped into hipDeviceGetStreamPriorityRange.
#include <memory>
#include <mutex>
#include <vector>

#include "common.hpp"
#include "count.hpp"
#include "ops.hpp"
#include "runtime.hpp"

namespace accel_hip {

namespace {

std::mutex g_default_mutex;
std::vector<std::unique_ptr<Stream>> g_default_streams;  // one per device, lives until exit

Stream* stream_of(accel_plugin_stream_t s) { return static_cast<Stream*>(s); }
Event* event_of(accel_plugin_event_t e) { return static_cast<Event*>(e); }

std::string stream_label(const Stream* s) {
  return std::string(s->is_default ? "on the default stream " : "on a stream ") + on_device(s->device);
}

}  // namespace

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return guarded("stream_priority_range", [&]() -> accel_status_t {
    DeviceScope scope;
    if (auto st = scope.enter(device); st != ACCEL_SUCCESS) return st;
    int lo = 0, hi = 0;
    ACCEL_HIP_TRY(hipDeviceGetStreamPriorityRange, (&lo, &hi), on_device(device));
    // The ABI promises least >= 0 >= greatest (0 is always the default).
    *least = lo < 0 ? 0 : lo;
    *greatest = hi > 0 ? 0 : hi;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* out) {
  return guarded("stream_create", [&]() -> accel_status_t {
    auto s = std::make_unique<Stream>();
    s->device = device;
    DeviceScope scope;
    if (auto st = scope.enter(device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipStreamCreateWithPriority, (&s->native, hipStreamNonBlocking, priority),
                  on_device(device) + " with priority " + std::to_string(priority));
    *out = s.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_destroy(accel_plugin_stream_t stream) {
  return guarded("stream_destroy", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    if (s->is_default) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "a default stream cannot be destroyed");
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    // hipStreamDestroy lets queued work complete.
    ACCEL_HIP_TRY(hipStreamDestroy, (s->native), stream_label(s));
    delete s;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* out) {
  return guarded("default_stream", [&]() -> accel_status_t {
    std::lock_guard lock(g_default_mutex);
    if (g_default_streams.size() < static_cast<size_t>(counted_devices()))
      g_default_streams.resize(static_cast<size_t>(counted_devices()));
    if (device < 0 || static_cast<size_t>(device) >= g_default_streams.size())
      return fail(ACCEL_ERROR_INVALID_DEVICE, "default_stream: no device " + std::to_string(device));
    auto& slot = g_default_streams[static_cast<size_t>(device)];
    if (!slot) {
      slot = std::make_unique<Stream>();
      slot->device = device;
      slot->native = nullptr;  // HIP's null stream
      slot->is_default = true;
    }
    *out = slot.get();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    hipError_t rc = runtime().hipStreamQuery(s->native);
    if (rc == hipSuccess) return ACCEL_SUCCESS;
    if (rc == hipErrorNotReady) return ACCEL_ERROR_NOT_READY;
    return hip_fail("hipStreamQuery", rc, stream_label(s));
  });
}

accel_status_t op_stream_synchronize(accel_plugin_stream_t stream) {
  return guarded("stream_synchronize", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipStreamSynchronize, (s->native), stream_label(s));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipStreamWaitEvent, (s->native, event_of(event)->native, 0), stream_label(s));
    return ACCEL_SUCCESS;
  });
}

namespace {

// hipStreamAddCallback's form of a host function (runtimes without
// hipLaunchHostFunc). Like hipLaunchHostFunc it holds back later work of the
// stream until it returns. The stream's status is not passed on: a failed
// stream reports its error to the next synchronisation anyway.
struct HostCall {
  accel_host_fn fn;
  void* user_data;
};

void host_call_trampoline(hipStream_t, hipError_t, void* data) {
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(data));
  call->fn(call->user_data);
}

}  // namespace

accel_status_t op_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn, void* user_data) {
  return guarded("launch_host_func", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    if (runtime().hipLaunchHostFunc != nullptr) {
      // accel_host_fn and hipHostFn_t are both void (*)(void*).
      ACCEL_HIP_TRY(hipLaunchHostFunc, (s->native, fn, user_data), stream_label(s));
      return ACCEL_SUCCESS;
    }
    auto call = std::make_unique<HostCall>(HostCall{fn, user_data});
    ACCEL_HIP_TRY(hipStreamAddCallback, (s->native, host_call_trampoline, call.get(), 0),
                  stream_label(s));
    call.release();  // the trampoline owns it now
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* out) {
  return guarded("event_create", [&]() -> accel_status_t {
    auto e = std::make_unique<Event>();
    e->device = device;
    e->flags = flags;
    DeviceScope scope;
    if (auto st = scope.enter(device); st != ACCEL_SUCCESS) return st;
    unsigned hip_flags = (flags & ACCEL_EVENT_ENABLE_TIMING) ? hipEventDefault : hipEventDisableTiming;
    ACCEL_HIP_TRY(hipEventCreateWithFlags, (&e->native, hip_flags), on_device(device));
    *out = e.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_destroy(accel_plugin_event_t event) {
  return guarded("event_destroy", [&]() -> accel_status_t {
    Event* e = event_of(event);
    DeviceScope scope;
    if (auto st = scope.enter(e->device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipEventDestroy, (e->native), "of an event " + on_device(e->device));
    delete e;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  return guarded("event_record", [&]() -> accel_status_t {
    Event* e = event_of(event);
    Stream* s = stream_of(stream);
    DeviceScope scope;
    if (auto st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipEventRecord, (e->native, s->native), stream_label(s));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_query(accel_plugin_event_t event) {
  return guarded("event_query", [&]() -> accel_status_t {
    Event* e = event_of(event);
    hipError_t rc = runtime().hipEventQuery(e->native);
    if (rc == hipSuccess) return ACCEL_SUCCESS;
    if (rc == hipErrorNotReady) return ACCEL_ERROR_NOT_READY;
    return hip_fail("hipEventQuery", rc, "of an event " + on_device(e->device));
  });
}

accel_status_t op_event_synchronize(accel_plugin_event_t event) {
  return guarded("event_synchronize", [&]() -> accel_status_t {
    Event* e = event_of(event);
    ACCEL_HIP_TRY(hipEventSynchronize, (e->native), "of an event " + on_device(e->device));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                     float* ms) {
  return guarded("event_elapsed_time", [&]() -> accel_status_t {
    Event* a = event_of(start);
    Event* b = event_of(end);
    float t = 0.0f;
    ACCEL_HIP_TRY(hipEventElapsedTime, (&t, a->native, b->native),
                  "between events " + on_device(a->device));
    *ms = t;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel_hip
