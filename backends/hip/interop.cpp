// Native handles (ABI 1.1): a stream's hipStream_t, and streams wrapping the
// program's hipStream_t. A stream's work all goes to its one hipStream_t, so
// the handle exported is the whole queue.
#include <cstdint>
#include <memory>

#include "backend.hpp"

namespace accel::hip {

namespace {

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

accel_status_t op_stream_from_native(int32_t device, const accel_native_handle_t* native,
                                     uint32_t flags, accel_plugin_stream_t* stream) {
  return on_device("stream_from_native", device, [&](Device* d) -> accel_status_t {
    auto h = static_cast<hipStream_t>(native->handle);
    if (const char* name = nullptr; special_handle(h, name)) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "stream_from_native: %p is HIP's special handle %s, which names a stream per "
                  "thread or per current device, not one queue; wrap a stream made with "
                  "hipStreamCreate*",
                  static_cast<void*>(h), name);
    }
    const bool take = (flags & ACCEL_NATIVE_TAKE_OWNERSHIP) != 0;
    if (int32_t owner = -1; take && is_default_stream_queue(h, &owner)) {
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "stream_from_native: %p is the queue of the default stream of device %d, "
                  "which the hip backend keeps; it cannot be handed over with "
                  "ACCEL_NATIVE_TAKE_OWNERSHIP",
                  static_cast<void*>(h), static_cast<int>(owner));
    }
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    if (accel_status_t st = check_stream_device(h, d->index); st != ACCEL_SUCCESS) return st;
    auto s = std::make_unique<Stream>();
    s->device = d->index;
    s->native = h;
    s->owns_native = take;
    *stream = s.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_native_handle(accel_plugin_stream_t stream, accel_native_handle_t* out) {
  return guarded("stream_native_handle", [&]() -> accel_status_t {
    const Stream* s = stream_of(stream);
    // The one queue all of the stream's work goes to; HIP has no context
    // to give (accel.h's table); the ordinal is a hipDevice_t, HIP's ordinal
    // being accel's device index.
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_HIP, s->native, nullptr, s->device);
  });
}

}  // namespace accel::hip
