// Host functions: hipLaunchHostFunc where the runtime exports it, else
// hipStreamAddCallback (Debian's HIP 5.2).
#include <memory>

#include "backend.hpp"

namespace accel::hip {

namespace {

// hipStreamAddCallback's form of a host function. Like hipLaunchHostFunc it
// holds back later work of the stream until it returns. The stream's status
// is not passed on: a failed stream reports its error to the next
// synchronisation anyway.
struct HostCall {
  accel_host_fn fn;
  void* user_data;
};

void host_call_trampoline(hipStream_t, hipError_t, void* data) {
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(data));
  call->fn(call->user_data);
}

}  // namespace

accel_status_t op_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn,
                                   void* user_data) {
  return guarded("launch_host_func", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    const Runtime& rt = runtime();
    if (rt.hipLaunchHostFunc != nullptr) {
      // accel_host_fn and hipHostFn_t are both void (*)(void*).
      if (hipError_t rc = rt.hipLaunchHostFunc(s->native, fn, user_data); rc != hipSuccess)
        return vendor_fail("hipLaunchHostFunc", rc);
      return ACCEL_SUCCESS;
    }
    auto call = std::make_unique<HostCall>(HostCall{fn, user_data});
    if (hipError_t rc = rt.hipStreamAddCallback(s->native, host_call_trampoline, call.get(), 0);
        rc != hipSuccess)
      return vendor_fail("hipStreamAddCallback", rc);
    call.release();  // the trampoline owns it now
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
