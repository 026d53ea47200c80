// What the calling thread is doing on a plugin's behalf, so that calls that
// would wait for themselves fail with a status instead of hanging:
//
//  - a plugin callback the core runs while holding one of its locks (entry,
//    init and device_count under the discovery lock, lazy_init under the
//    backend's init lock, default_stream under its default-stream lock). A
//    public call from inside it would take that lock again: it fails with
//    ACCEL_ERROR_REENTRANT naming the plugin and the callback.
//  - a host function (accel_launch_host_func) running on a plugin thread.
//    The core hands plugins a trampoline, so it knows which stream the
//    function runs on, and a synchronize that would wait for the function's
//    own completion fails with ACCEL_ERROR_INVALID_ARGUMENT, on every backend.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "accel/accel.h"
#include "backend.hpp"
#include "runtime.hpp"

struct accel_stream_s;
struct accel_event_s;

namespace accel::core {

// --- plugin callbacks under a core lock ------------------------------------

struct LockedCallback {
  const Backend* backend = nullptr;  // nullptr: none running on this thread
  const char* op = nullptr;          // "init", "lazy_init", ...
  const char* lock = nullptr;        // "discovery", ...
  std::mutex* held = nullptr;        // that lock (fork.cpp's prepare skips it)
};

LockedCallback& locked_callback();

// Marks the calling thread as running `b`'s callback `op` under `lock` for
// the scope's lifetime (nests: the previous mark comes back).
class LockedCallbackScope {
 public:
  LockedCallbackScope(const Backend& b, const char* op, const char* lock, std::mutex& held);
  ~LockedCallbackScope();
  LockedCallbackScope(const LockedCallbackScope&) = delete;
  LockedCallbackScope& operator=(const LockedCallbackScope&) = delete;

 private:
  LockedCallback saved_;
};

// ACCEL_SUCCESS when no such callback runs on this thread; otherwise
// ACCEL_ERROR_REENTRANT with a message naming `fn`, the plugin and its
// callback. Called before the core takes a lock a callback may hold.
accel_status_t reentry_failure(const char* fn);
inline accel_status_t check_reentry(const char* fn) {
  if (!t_hot.in_locked_callback) [[likely]]
    return ACCEL_SUCCESS;
  return reentry_failure(fn);
}

// The message check_reentry() would set (empty when not re-entered).
std::string reentry_message(const char* fn);

// --- host functions ---------------------------------------------------------

// One queued host function; the plugin runs host_call_trampoline(call).
struct HostCall {
  accel_host_fn fn = nullptr;
  void* user_data = nullptr;
  const accel_stream_s* stream = nullptr;
  uint32_t stream_generation = 0;
  const Backend* backend = nullptr;
  int32_t device = 0;
  uint64_t sequence = 0;  // the stream's enqueue counter at launch
};

void host_call_trampoline(void* call);

// The host function running on this thread, or nullptr.
const HostCall* running_host_call();

// True when a host function runs on this thread on `s` (the same stream, not
// a later one in the same handle slot).
bool running_on_stream(const accel_stream_s* s);

}  // namespace accel::core
