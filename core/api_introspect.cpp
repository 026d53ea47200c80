// Backend introspection: every discovery entry, for accelctl and users who
// need to say why a backend is missing.
#include <algorithm>
#include <cstring>

#include "callbacks.hpp"
#include "checks.hpp"
#include "error.hpp"
#include "guard.hpp"
#include "runtime.hpp"
#include "runtime_version.hpp"

using namespace accel::core;

extern "C" {

size_t accel_backend_count(void) {
  try {
    return runtime().entries.size();
  } catch (...) {
    return 0;
  }
}

accel_status_t accel_get_backend_info(size_t index, accel_backend_info_t* info) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_sized_struct(fn, info, "info", "accel_backend_info_t"); st != ACCEL_SUCCESS)
      return st;
    if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
    Runtime& rt = runtime();
    if (index >= rt.entries.size()) {
      return failf(ACCEL_ERROR_OUT_OF_RANGE, "{}: index {} is past the {} entries", fn, index,
                   rt.entries.size());
    }
    Backend& b = *rt.entries[index];
    // A plugin that can tell its version only from an initialised runtime
    // (hip) is asked again once an operation has initialised it; never in a
    // fork() child that may not use the backend.
    if (b.runtime_version_state.load(std::memory_order_acquire) == kRuntimeVersionAfterInit &&
        initialised(b) && !b.forked.load(std::memory_order_relaxed)) {
      query_runtime_version(b, /*initialised=*/true);
    }
    accel_backend_info_t full{};
    full.name = b.name.c_str();
    full.path = b.path.c_str();
    full.status = b.status;
    full.reason = b.reason.c_str();
    full.abi_major = b.abi_major;
    full.abi_minor = b.abi_minor;
    full.priority = b.priority;
    full.device_count = b.device_count;
    full.capabilities = b.capabilities;
    full.is_current = rt.current == &b ? 1 : 0;
    full.runtime_version = runtime_version_of(b);
    size_t caller_size = info->struct_size;
    // Whole members only: a struct_size ending inside runtime_version (the
    // first member appended after 0.1) gets none of its bytes.
    size_t copy = std::min(caller_size, sizeof full);
    if (copy < offsetof(accel_backend_info_t, runtime_version) + sizeof full.runtime_version)
      copy = std::min(copy, offsetof(accel_backend_info_t, runtime_version));
    std::memcpy(info, &full, copy);
    info->struct_size = caller_size;
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
