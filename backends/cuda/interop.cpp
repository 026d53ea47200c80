// Native handles (ABI 1.1): a stream's CUstream, and streams that wrap the
// program's CUstream.
//
// The plugin keeps no per-stream state that orders work: copies, memsets,
// host functions (cuLaunchHostFunc), event records and waits all go straight
// to the CUstream. So the handle stream_native_handle exports is the whole
// queue, and work the program enqueues on it with the Driver or runtime API
// is ordered with accel's work both ways.
#include <memory>

#include "backend.hpp"

namespace accel::cuda {

accel_status_t native_handle_of(int32_t device, void* handle, accel_native_handle_t* out) {
  Device* d = nullptr;
  if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
  CUcontext ctx = nullptr;
  if (accel_status_t st = primary_context(device, &ctx); st != ACCEL_SUCCESS) return st;
  return accel::backend::set_native_handle(out, ACCEL_NATIVE_CUDA, handle, ctx, d->dev);
}

// handle: the CUstream itself (CU_STREAM_LEGACY for a default stream: the
// legacy stream of whichever context is current when the program uses it,
// so the program makes `context` current first); context: the device's
// primary context, which every stream of the plugin belongs to; ordinal:
// the CUdevice.
accel_status_t op_stream_native_handle(accel_plugin_stream_t stream, accel_native_handle_t* out) {
  return guarded("stream_native_handle", [&] {
    Stream* s = as_stream(stream);
    return native_handle_of(s->device, s->handle, out);
  });
}

namespace {

// The refusal of a stream whose context is not `device`'s primary context,
// naming the device the context is of (cuCtxGetDevice with it current for a
// moment: it works for any context, primary or not).
accel_status_t foreign_context(int32_t device, void* handle, CUcontext theirs, CUcontext mine) {
  Driver& drv = driver();
  CUdevice their_dev = -1;
  CUcontext previous = nullptr;
  if (drv.cuCtxGetCurrent(&previous) == CUDA_SUCCESS &&
      drv.cuCtxSetCurrent(theirs) == CUDA_SUCCESS) {
    if (drv.cuCtxGetDevice(&their_dev) != CUDA_SUCCESS) their_dev = -1;
    drv.cuCtxSetCurrent(previous);
  }
  int32_t their_index = -1;
  for (int32_t i = 0; i < counted_devices() && their_dev >= 0; ++i) {
    Device* od = nullptr;
    if (device_at(i, od) == ACCEL_SUCCESS && od->dev == their_dev) their_index = i;
  }
  if (their_index >= 0 && their_index != device)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                "the CUstream %p belongs to cuda device %d (context %p), not to device %d", handle,
                int(their_index), static_cast<void*>(theirs), int(device));
  return fail(ACCEL_ERROR_DEVICE_MISMATCH,
              "the CUstream %p belongs to context %p%s, not to the primary context %p of cuda "
              "device %d: accel works in primary contexts, so a stream of a context made with "
              "cuCtxCreate (or of a green context) cannot be wrapped",
              handle, static_cast<void*>(theirs),
              their_index == device ? " (of the same device)" : "", static_cast<void*>(mine),
              int(device));
}

}  // namespace

// Wraps the program's CUstream. cuStreamGetCtx (with the device's primary
// context current, which is what it answers for CU_STREAM_LEGACY) must name
// the device's primary context: a stream of another device, of a context
// made with cuCtxCreate or of a green context is refused with
// ACCEL_ERROR_DEVICE_MISMATCH, since accel runs each operation in the
// device's primary context and CUDA requires the stream's context current.
// CU_STREAM_PER_THREAD is refused (a different queue on every thread, so
// no single order); CU_STREAM_LEGACY is accepted without
// ACCEL_NATIVE_TAKE_OWNERSHIP (it cannot be destroyed). native->context and
// native->ordinal are not read: the driver's answer decides. What CUDA
// cannot check is the caller's promise: cuStreamGetCtx on a destroyed or
// made-up handle is undefined behaviour.
accel_status_t op_stream_from_native(int32_t device, const accel_native_handle_t* native,
                                     uint32_t flags, accel_plugin_stream_t* stream) {
  return on_device("stream_from_native", device, [&](Device*) -> accel_status_t {
    const auto h = static_cast<CUstream>(native->handle);
    const bool take = (flags & ACCEL_NATIVE_TAKE_OWNERSHIP) != 0;
    if (h == CU_STREAM_PER_THREAD)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "CU_STREAM_PER_THREAD names a different stream on every thread, so accel "
                  "could not keep one order on it; wrap a stream made with cuStreamCreate, or "
                  "CU_STREAM_LEGACY");
    if (h == CU_STREAM_LEGACY && take)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "CU_STREAM_LEGACY cannot be destroyed, so it cannot be wrapped with "
                  "ACCEL_NATIVE_TAKE_OWNERSHIP");
    CUcontext mine = nullptr;
    if (accel_status_t st = primary_context(device, &mine); st != ACCEL_SUCCESS) return st;
    CUcontext theirs = nullptr;
    {
      ACCEL_CUDA_CTX_SCOPE(device);
      CUresult rc = driver().cuStreamGetCtx(h, &theirs);
      if (rc == CUDA_ERROR_INVALID_HANDLE || rc == CUDA_ERROR_INVALID_VALUE ||
          rc == CUDA_ERROR_CONTEXT_IS_DESTROYED || rc == CUDA_ERROR_INVALID_CONTEXT)
        return vendor_fail_as(ACCEL_ERROR_INVALID_ARGUMENT, "cuStreamGetCtx", rc);
      if (rc != CUDA_SUCCESS) return vendor_fail("cuStreamGetCtx", rc);
    }
    if (theirs != mine) return foreign_context(device, native->handle, theirs, mine);
    *stream = new Stream{.device = device, .handle = h, .is_default = false, .owns_handle = take};
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda
