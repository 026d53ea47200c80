#include "common.hpp"

#include <cstddef>
#include <cstdio>

namespace accel_hip {

const accel_host_services_t* g_host = nullptr;

namespace {

// True if the core's host table is long enough to hold `offset` + a pointer
// (a 1.0 core has every member; this guards against a shorter future table).
bool host_has(size_t offset, const void* member) {
  return g_host != nullptr && g_host->struct_size >= offset + sizeof(void*) && member != nullptr;
}

#define ACCEL_HIP_HOST_HAS(m) \
  host_has(offsetof(accel_host_services_t, m), g_host ? reinterpret_cast<const void*>(g_host->m) : nullptr)

void report(accel_status_t status, const char* message) {
  if (ACCEL_HIP_HOST_HAS(set_error)) g_host->set_error(g_host, status, message);
}

}  // namespace

bool log_enabled(accel_log_level_t level) {
  if (!ACCEL_HIP_HOST_HAS(log)) return false;
  return !ACCEL_HIP_HOST_HAS(log_enabled) || g_host->log_enabled(g_host, level) != 0;
}

void log(accel_log_level_t level, const std::string& message) {
  if (log_enabled(level)) g_host->log(g_host, level, message.c_str());
}

accel_status_t fail(accel_status_t status, const std::string& message) {
  report(status, message.c_str());
  return status;
}

void explain(const std::string& message) { report(ACCEL_SUCCESS, message.c_str()); }

const char* config_env(const char* name) {
  return ACCEL_HIP_HOST_HAS(get_env) ? g_host->get_env(g_host, name) : nullptr;
}


}  // namespace accel_hip
