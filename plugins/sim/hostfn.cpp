// hostfn.cpp - host functions: a task on the stream's worker thread (see
// engine.cpp), so they run in stream order and may call back into accel,
// except to wait on their own stream, which the blocking calls refuse.
#include "backend.hpp"

namespace accel::sim {

accel_status_t op_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn,
                                   void* user_data) {
  return guarded("launch_host_func", [&] {
    if (stream == nullptr || fn == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_host_func: NULL %s",
                  stream == nullptr ? "stream" : "function");
    return submit(as_stream(stream), "launch_host_func", [fn, user_data] { fn(user_data); });
  });
}

}  // namespace accel::sim
