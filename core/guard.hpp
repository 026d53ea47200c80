// No C++ exception may cross the C API: every entry point runs its body
// through guarded(), which maps what escapes to a status and a message.
#pragma once

#include <exception>
#include <new>

#include "error.hpp"
#include "trace.hpp"

namespace accel::core {

template <typename Fn>
accel_status_t guarded_body(const char* fn, Fn& body) noexcept {
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

// With ACCEL_TRACE set, every call is also a slice on its thread's lane
// (trace.hpp); off, the cost is the one flag read.
template <typename Fn>
[[gnu::noinline]] accel_status_t traced(const char* fn, Fn& body) noexcept {
  TraceCall call;
  trace_call_begin(call, fn);
  accel_status_t st = guarded_body(fn, body);
  trace_call_end(call, st);
  return st;
}

// The same slice for an entry point with its own fast path (not guarded()):
// status_of maps its result to the status shown.
template <typename Fn, typename StatusOf>
[[gnu::noinline]] auto traced_plain(const char* fn, Fn&& body, StatusOf&& status_of) noexcept {
  TraceCall call;
  trace_call_begin(call, fn);
  auto r = body();
  trace_call_end(call, status_of(r));
  return r;
}

template <typename Fn>
accel_status_t guarded(const char* fn, Fn&& body) noexcept {
  if (trace_on()) [[unlikely]]
    return traced(fn, body);
  return guarded_body(fn, body);
}

}  // namespace accel::core
