// Backend introspection: every discovery entry, for accelctl and users who
// need to say why a backend is missing.
#include <algorithm>
#include <cstring>

#include "error.hpp"
#include "guard.hpp"
#include "runtime.hpp"

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
    if (info == nullptr || info->struct_size < sizeof(size_t)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: info is NULL or its struct_size is not set (set it to "
                   "sizeof(accel_backend_info_t))",
                   fn);
    }
    Runtime& rt = runtime();
    if (index >= rt.entries.size()) {
      return failf(ACCEL_ERROR_OUT_OF_RANGE, "{}: index {} is past the {} entries", fn,
                   index, rt.entries.size());
    }
    const Backend& b = *rt.entries[index];
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
    size_t caller_size = info->struct_size;
    std::memcpy(info, &full, std::min(caller_size, sizeof full));
    info->struct_size = caller_size;
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
