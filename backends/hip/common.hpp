// Shared plumbing of the HIP plugin: the host services the core gave us,
// logging and error reporting through them, and the exception firewall.
#pragma once

#include <cstdarg>
#include <exception>
#include <new>
#include <string>

#include "accel/accel_plugin.h"
#include "../common/format.hpp"

namespace accel_hip {

// Set once by the entry point; valid until process exit.
extern const accel_host_services_t* g_host;

bool log_enabled(accel_log_level_t level);
// Logs through the core's logger (no-op before the entry ran).
void log(accel_log_level_t level, const std::string& message);

// host->set_error(status, message); returns status.
accel_status_t fail(accel_status_t status, const std::string& message);
// host->set_error(ACCEL_SUCCESS, message): the reason for a count of 0, or
// a note the core shows for an available backend.
void explain(const std::string& message);

// secure_getenv through the host (NULL when unset or in setuid processes).
const char* config_env(const char* name);

// printf into a std::string (backends/common/format.hpp).
using accel_backend::format;

// Runs body() and turns any C++ exception into a status: nothing may be
// thrown across the plugin ABI.
template <class F>
accel_status_t guarded(const char* what, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(ACCEL_ERROR_OUT_OF_MEMORY, std::string(what) + ": out of host memory");
  } catch (const std::exception& e) {
    try {
      return fail(ACCEL_ERROR_INTERNAL, std::string(what) + ": internal error: " + e.what());
    } catch (...) {
      return ACCEL_ERROR_INTERNAL;
    }
  } catch (...) {
    return ACCEL_ERROR_INTERNAL;
  }
}

}  // namespace accel_hip
