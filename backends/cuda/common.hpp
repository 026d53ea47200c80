// Shared plumbing of the CUDA plugin: the host services the core gave us,
// logging and error reporting through them.
#pragma once

#include <string>

#include "accel/accel_plugin.h"

namespace accel_cuda {

// Set once by the entry point; valid until process exit.
extern const accel_host_services_t* g_host;

// Logs through the core's logger (no-op before the entry ran).
void log(accel_log_level_t level, const std::string& message);
bool log_enabled(accel_log_level_t level);

// host->set_error(status, message) and returns status.
accel_status_t fail(accel_status_t status, const std::string& message);

// secure_getenv through the host (NULL when unset or in setuid processes).
const char* config_env(const char* name);

}  // namespace accel_cuda
