#include "error.hpp"

#include "log.hpp"
#include "runtime.hpp"

namespace accel::core {

namespace {
thread_local std::string t_last_error;
thread_local PluginError t_plugin_error;
}  // namespace

accel_status_t fail(accel_status_t status, std::string message) {
  log().debug("{}: {}", accel_status_name(status), message);
  t_last_error = std::move(message);
  return status;
}

const char* last_error() { return t_last_error.c_str(); }

PluginError& plugin_error() { return t_plugin_error; }

bool plugin_error_set() { return t_hot.plugin_error_set; }

LastErrorScope::LastErrorScope() : saved_(t_last_error) {}
LastErrorScope::~LastErrorScope() { t_last_error = std::move(saved_); }

}  // namespace accel::core
