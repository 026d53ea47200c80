// The host-services table handed to every plugin (log, set_error, get_env).
#pragma once

#include "backend.hpp"
#include "runtime.hpp"

namespace accel::core {

// Fills b.host so that calls through it are attributed to `b`.
void init_host_services(Backend& b);

// Calls a plugin operation with the plugin-error channel reset first, and
// turns every status but success (ACCEL_ERROR_NOT_READY included) into the
// thread's last error: the plugin's own message when it set one, else a
// generic one naming the backend and operation.
template <typename Fn>
accel_status_t call_plugin(const Backend& b, const char* op, Fn&& fn);

accel_status_t finish_plugin_call(const Backend& b, const char* op, accel_status_t status);

// Resets the plugin-error channel (one store to initial-exec TLS).
inline void begin_plugin_call() { t_hot.plugin_error_set = false; }

template <typename Fn>
accel_status_t call_plugin(const Backend& b, const char* op, Fn&& fn) {
  begin_plugin_call();
  accel_status_t status = fn();
  if (status == ACCEL_SUCCESS) [[likely]]
    return status;
  return finish_plugin_call(b, op, status);
}

}  // namespace accel::core
