// No C++ exception may cross the C API: every entry point runs its body
// through guarded(), which maps what escapes to a status and a message.
#pragma once

#include <exception>
#include <new>

#include "error.hpp"
#include "trace.hpp"

namespace accel::core {

template <typename Fn>
[[gnu::always_inline]] inline accel_status_t guarded_body(const char* fn, Fn& body) noexcept {
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

// With ACCEL_TRACE set, every call is also a slice on its thread's lane
// (trace.hpp). The body is inlined into both branches rather than handed to
// an out-of-line tracer: taking its address would make every call build the
// lambda in memory, which the untraced path must not pay for (it costs the
// one flag read).
template <typename Fn>
[[gnu::always_inline]] inline accel_status_t guarded(const char* fn, Fn&& body) noexcept {
  if (trace_on()) [[unlikely]] {
    TraceCall call;
    trace_call_begin(call, fn);
    const accel_status_t st = guarded_body(fn, body);
    trace_call_end(call, st);
    return st;
  }
  return guarded_body(fn, body);
}

}  // namespace accel::core
