// The one spdlog logger of accel, named "accel", never the default logger and
// never registered globally (the host program may use spdlog too).
#pragma once

#include <mutex>

#include <spdlog/spdlog.h>

#include "accel/accel_plugin.h"

namespace accel::core {

// Created on first use; level from ACCEL_LOG_LEVEL (trace, debug, info, warn,
// error, critical, off, in any case; default warn, also after an unknown
// value, which is warned about once), read with secure_getenv. Lines carry a
// timestamp and the thread id when the level is debug or trace.
spdlog::logger& log();

// The lock every log line is written under, or nullptr before the logger
// exists; the fork handlers take it (fork.cpp) so a child never inherits it
// held by another thread.
std::mutex* log_mutex();

spdlog::level::level_enum to_spdlog(accel_log_level_t level);

}  // namespace accel::core
