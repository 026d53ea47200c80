// No C++ exception may cross the C API: every entry point runs its body
// through guarded(), which maps what escapes to a status and a message.
#pragma once

#include <exception>
#include <new>

#include "error.hpp"

namespace accel::core {

template <typename Fn>
accel_status_t guarded(const char* fn, Fn&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return failf(ACCEL_ERROR_OUT_OF_MEMORY, "{}: host memory exhausted", fn);
  } catch (const std::exception& e) {
    return failf(ACCEL_ERROR_INTERNAL, "{}: unexpected exception: {}", fn, e.what());
  } catch (...) {
    return failf(ACCEL_ERROR_INTERNAL, "{}: unexpected exception", fn);
  }
}

}  // namespace accel::core
