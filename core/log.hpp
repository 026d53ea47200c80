// The one spdlog logger of accel, named "accel", never the default logger and
// never registered globally (the host program may use spdlog too).
#pragma once

#include <spdlog/spdlog.h>

#include "accel/accel_plugin.h"

namespace accel::core {

// Created on first use; level from ACCEL_LOG_LEVEL (trace, debug, info, warn,
// error, critical, off; default warn), read with secure_getenv.
spdlog::logger& log();

spdlog::level::level_enum to_spdlog(accel_log_level_t level);

}  // namespace accel::core
