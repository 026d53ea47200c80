// The vendor driver/runtime version a plugin reports (the ABI 1.1 member
// runtime_version), asked once and kept for the life of the process.
#pragma once

#include "backend.hpp"

namespace accel::core {

// Backend::runtime_version_state.
enum RuntimeVersionState : int {
  kRuntimeVersionUnknown = 0,    // not asked, no member, or the plugin could not tell
  kRuntimeVersionKnown = 1,      // Backend::runtime_version holds the answer
  kRuntimeVersionAfterInit = 2,  // ACCEL_ERROR_NOT_READY: ask again after lazy_init
};

// Asks the plugin (when its vtable has the member) and records the answer.
// Called by discovery after device_count succeeded (initialised false), and
// by introspection for a backend in kRuntimeVersionAfterInit once lazy_init
// has succeeded (initialised true: a second ACCEL_ERROR_NOT_READY is taken
// as "cannot tell", so the plugin is not asked on every call). Leaves the
// calling thread's last error alone.
void query_runtime_version(Backend& b, bool initialised);

// The version for introspection: the recorded answer, or "" (static).
const char* runtime_version_of(const Backend& b);

}  // namespace accel::core
