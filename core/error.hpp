// Thread-local last-error detail (UR's urAdapterGetLastError model) and the
// channel through which a plugin's set_error reaches it.
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>

#include "accel/accel.h"

namespace accel::core {

// Stores `message` as the calling thread's last error and returns `status`,
// so validation code reads `return fail(ACCEL_ERROR_..., "...")`.
accel_status_t fail(accel_status_t status, std::string message);

template <typename... Args>
accel_status_t failf(accel_status_t status, fmt::format_string<Args...> format, Args&&... args) {
  return fail(status, fmt::format(format, std::forward<Args>(args)...));
}

// fail(ACCEL_ERROR_NOT_READY, "<backend>: <op>: work has not completed
// yet"), written into the thread's last-error string in place (the query
// paths poll with it).
accel_status_t fail_not_ready(const std::string& backend, const char* op);

const char* last_error();
void clear_last_error();

// What a plugin said through host->set_error during the current call. Whether
// it said anything is HotThread::plugin_error_set (runtime.hpp), reset before
// every plugin call without touching this colder thread_local.
struct PluginError {
  accel_status_t status = ACCEL_SUCCESS;
  std::string message;
};
PluginError& plugin_error();
bool plugin_error_set();

// Saves and restores the caller's last error around discovery, whose plugin
// chatter must not leak into what the user's first call reports.
class LastErrorScope {
 public:
  LastErrorScope();
  ~LastErrorScope();
  LastErrorScope(const LastErrorScope&) = delete;
  LastErrorScope& operator=(const LastErrorScope&) = delete;

 private:
  std::string saved_;
};

}  // namespace accel::core
