#include "error.hpp"

#include "log.hpp"
#include "runtime.hpp"

namespace accel::core {

// The strings live in the thread's ThreadState (runtime.hpp), which outlives
// every thread_local destructor that might still call accel.

accel_status_t fail(accel_status_t status, std::string message) {
  log().debug("{}: {}", accel_status_name(status), message);
  thread_state().last_error = std::move(message);
  return status;
}

accel_status_t fail_not_ready(const std::string& backend, const char* op) {
  std::string& text = thread_state().last_error;
  text.assign(backend);
  text.append(": ");
  text.append(op);
  text.append(": work has not completed yet");
  if (log().should_log(spdlog::level::debug))
    log().debug("{}: {}", accel_status_name(ACCEL_ERROR_NOT_READY), text);
  return ACCEL_ERROR_NOT_READY;
}

const char* last_error() { return thread_state().last_error.c_str(); }

void clear_last_error() { thread_state().last_error.clear(); }

PluginError& plugin_error() { return thread_state().plugin_error; }

bool plugin_error_set() { return t_hot.plugin_error_set; }

LastErrorScope::LastErrorScope() : saved_(thread_state().last_error) {}
LastErrorScope::~LastErrorScope() { thread_state().last_error = std::move(saved_); }

}  // namespace accel::core
