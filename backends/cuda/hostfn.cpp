// Host functions: cuLaunchHostFunc queues fn on the stream and the driver
// runs it on its own thread once the work before it is done, so no
// machinery of the plugin's is needed. accel_host_fn and CUhostFn are both
// void (*)(void*), and fn is the core's trampoline (see accel_plugin.h).
#include "backend.hpp"

namespace accel::cuda {

accel_status_t op_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn,
                                   void* user_data) {
  return guarded("launch_host_func", [&] {
    Stream* s = as_stream(stream);
    ACCEL_CUDA_CTX_SCOPE(s->device);
    ACCEL_CU_TRY(cuLaunchHostFunc, (s->handle, fn, user_data));
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda
