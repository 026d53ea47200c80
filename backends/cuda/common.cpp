#include "common.hpp"

namespace accel_cuda {

const accel_host_services_t* g_host = nullptr;

void log(accel_log_level_t level, const std::string& message) {
  if (g_host != nullptr && g_host->log != nullptr) g_host->log(g_host, level, message.c_str());
}

bool log_enabled(accel_log_level_t level) {
  return g_host != nullptr && g_host->log_enabled != nullptr && g_host->log_enabled(g_host, level);
}

accel_status_t fail(accel_status_t status, const std::string& message) {
  if (g_host != nullptr && g_host->set_error != nullptr)
    g_host->set_error(g_host, status, message.c_str());
  return status;
}

const char* config_env(const char* name) {
  if (g_host == nullptr || g_host->get_env == nullptr) return nullptr;
  return g_host->get_env(g_host, name);
}

}  // namespace accel_cuda
