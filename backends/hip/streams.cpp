// Streams: default streams, created streams, priorities, query, sync, wait,
// native handles and streams wrapping the program's hipStream_t.
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
// by stream_from_native.
std::mutex g_default_streams_mu;

// HIP's special stream handles, which name a stream per thread or per
// current device rather than one queue: hipStreamPerThread (2) and, from
// HIP 6.1, hipStreamLegacy (1) (neither is spelled in HIP 5.2's header).
bool special_handle(hipStream_t h, const char*& name) noexcept {
  switch (reinterpret_cast<uintptr_t>(h)) {
    case 1:
      name = "hipStreamLegacy";
      return true;
    case 2:
      name = "hipStreamPerThread";
      return true;
    default:
      return false;
  }
}

// The device that owns `h`, or a refusal: hipStreamGetDevice where the
// runtime exports it; otherwise (HIP 5.2) the stream must be live
// (hipStreamQuery answers) and must take a record of an event made on
// `device` (hipEventRecord refuses a stream of another device with
// hipErrorInvalidHandle). The probe leaves one completed marker on the queue.
accel_status_t check_stream_device(hipStream_t h, int32_t device) {
  const Runtime& rt = runtime();
  if (rt.hipStreamGetDevice != nullptr) {
    hipDevice_t owner = -1;
    if (hipError_t rc = rt.hipStreamGetDevice(h, &owner); rc != hipSuccess) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "stream_from_native: %p is not a live HIP stream: %s", static_cast<void*>(h),
                  vendor_failure_text("hipStreamGetDevice", rc).c_str());
    }
    if (owner != device) {
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "stream_from_native: the HIP stream %p belongs to HIP device %d "
                  "(hipStreamGetDevice), not to device %d",
                  static_cast<void*>(h), static_cast<int>(owner), static_cast<int>(device));
    }
    return ACCEL_SUCCESS;
  }
  if (hipError_t rc = rt.hipStreamQuery(h); rc != hipSuccess && rc != hipErrorNotReady) {
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_from_native: %p is not a live HIP stream: %s",
                static_cast<void*>(h), vendor_failure_text("hipStreamQuery", rc).c_str());
  }
  hipEvent_t probe = nullptr;
  if (hipError_t rc = rt.hipEventCreateWithFlags(&probe, hipEventDisableTiming); rc != hipSuccess)
    return vendor_fail("hipEventCreateWithFlags", rc);
  const hipError_t rc = rt.hipEventRecord(probe, h);
  (void)rt.hipEventDestroy(probe);  // a recorded event may be destroyed at once
  if (rc == hipErrorInvalidHandle) {
    return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                "stream_from_native: the HIP stream %p is not a stream of device %d "
                "(hipEventRecord with an event of that device refused it: %s; the HIP runtime "
                "%s has no hipStreamGetDevice to name its device)",
                static_cast<void*>(h), static_cast<int>(device),
                vendor_failure_text("hipEventRecord", rc).c_str(), runtime_label().c_str());
  }
  if (rc != hipSuccess) {
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_from_native: %p: %s", static_cast<void*>(h),
                vendor_failure_text("hipEventRecord", rc).c_str());
  }
  return ACCEL_SUCCESS;
}

}  // namespace

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
    if (s->owns_native) {
      DeviceScope scope;
      if (accel_status_t st = scope.enter(s->device); st != ACCEL_SUCCESS) return st;
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
  return guarded("default_stream", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    std::lock_guard lock(g_default_streams_mu);
    if (d->default_stream.native == nullptr) {
      DeviceScope scope;
      if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
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

// --- native handles ----------------------------------------------------------

accel_status_t op_stream_native_handle(accel_plugin_stream_t stream, accel_native_handle_t* out) {
  return guarded("stream_native_handle", [&]() -> accel_status_t {
    const Stream* s = stream_of(stream);
    out->type = ACCEL_NATIVE_HIP;
    out->handle = s->native;   // the one queue all of the stream's work goes to
    out->context = nullptr;    // HIP has no context to give (accel.h's table)
    out->ordinal = s->device;  // hipDevice_t: HIP's ordinal is accel's device index
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_from_native(int32_t device, const accel_native_handle_t* native,
                                     uint32_t flags, accel_plugin_stream_t* stream) {
  return guarded("stream_from_native", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    auto h = static_cast<hipStream_t>(native->handle);
    if (const char* name = nullptr; special_handle(h, name)) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "stream_from_native: %p is HIP's special handle %s, which names a stream per "
                  "thread or per current device, not one queue; wrap a stream made with "
                  "hipStreamCreate*",
                  static_cast<void*>(h), name);
    }
    const bool take = (flags & ACCEL_NATIVE_TAKE_OWNERSHIP) != 0;
    if (take) {
      std::lock_guard lock(g_default_streams_mu);
      for (int32_t i = 0; i < device_count(); ++i) {
        Device* other;
        if (device_at(i, other) == ACCEL_SUCCESS && other->default_stream.native == h) {
          return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                      "stream_from_native: %p is the queue of the default stream of device %d, "
                      "which the hip backend keeps; it cannot be handed over with "
                      "ACCEL_NATIVE_TAKE_OWNERSHIP",
                      static_cast<void*>(h), static_cast<int>(i));
        }
      }
    }
    DeviceScope scope;
    if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = check_stream_device(h, d->index); st != ACCEL_SUCCESS) return st;
    auto s = std::make_unique<Stream>();
    s->device = d->index;
    s->native = h;
    s->owns_native = take;
    *stream = s.release();
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
