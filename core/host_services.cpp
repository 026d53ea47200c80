#include "host_services.hpp"

#include <cstdlib>

#include "error.hpp"
#include "log.hpp"

namespace accel::core {

namespace {

const Backend& owner(const accel_host_services_t* host) {
  return *static_cast<const Backend*>(host->host_data);
}

const char* display_name(const Backend& b) {
  return b.name.empty() ? b.path.c_str() : b.name.c_str();
}

void host_log(const accel_host_services_t* host, accel_log_level_t level, const char* message) {
  if (host == nullptr || message == nullptr) return;
  log().log(to_spdlog(level), "{}: {}", display_name(owner(host)), message);
}

int host_log_enabled(const accel_host_services_t*, accel_log_level_t level) {
  return log().should_log(to_spdlog(level)) ? 1 : 0;
}

void host_set_error(const accel_host_services_t* host, accel_status_t status, const char* message) {
  if (host == nullptr) return;
  auto& pe = plugin_error();
  t_hot.plugin_error_set = true;
  pe.status = status;
  pe.message = message != nullptr ? message : "";
}

const char* host_get_env(const accel_host_services_t*, const char* name) {
  return name != nullptr ? secure_getenv(name) : nullptr;
}

}  // namespace

void init_host_services(Backend& b) {
  b.host.struct_size = sizeof(accel_host_services_t);
  b.host.abi_major = ACCEL_PLUGIN_ABI_MAJOR;
  b.host.abi_minor = ACCEL_PLUGIN_ABI_MINOR;
  b.host.host_data = &b;
  b.host.log = host_log;
  b.host.log_enabled = host_log_enabled;
  b.host.set_error = host_set_error;
  b.host.get_env = host_get_env;
}

accel_status_t finish_plugin_call(const Backend& b, const char* op, accel_status_t status) {
  auto& pe = plugin_error();
  if (t_hot.plugin_error_set && !pe.message.empty())
    return failf(status, "{}: {}", b.name, pe.message);
  if (status == ACCEL_ERROR_NOT_READY) {
    // An answer, not a failure; still the detail of the latest status. A
    // program polls with it, so the text is built in place, in the thread's
    // string, with no format call and no allocation once it has the room:
    // fmt::format and its temporary string were a quarter of a pending
    // stream query's time on PoCL (perf).
    return fail_not_ready(b.name, op);
  }
  return failf(status, "{}: {} failed: {} ({})", b.name, op, accel_status_name(status),
               accel_status_message(status));
}

}  // namespace accel::core
