// fork() handling (docs/architecture.md, "Fork"): the core's locks are
// taken around fork() so the child never inherits one held by a thread that
// no longer exists there, and backends that are not fork-safe and were
// initialised, or whose discovery may have started vendor threads, are
// marked so the child gets ACCEL_ERROR_FORKED instead of a hang or a crash.
#pragma once

#include <atomic>
#include <mutex>

namespace accel::core {

std::mutex& discovery_mutex();

// Set in a fork() child once any backend became unusable there: lets a
// lock-free fast path (accel_stream_native_handle) test one global instead of
// its backend's `forked` flag, and fall back to the full path when set.
extern std::atomic<bool> g_any_forked;

}  // namespace accel::core
