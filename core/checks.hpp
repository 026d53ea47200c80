// The checks every entry point taking a stream or an event starts with:
// not re-entered from a plugin callback, a live handle, its backend usable
// in this process and initialised. Inline: they sit on the dispatch path.
#pragma once

#include <cstddef>
#include <cstdint>

#include "accel/accel.h"
#include "callbacks.hpp"
#include "error.hpp"
#include "handles.hpp"
#include "runtime.hpp"

namespace accel::core {

// The largest size an allocation may ask for: no C or C++ object exceeds
// PTRDIFF_MAX bytes, and a size above it is where vendor rounding to pages
// or alignment starts to wrap (docs/security.md, "Sizes").
inline constexpr size_t kMaxObjectBytes = static_cast<size_t>(PTRDIFF_MAX);

// `s` is a live stream; ACCEL_ERROR_INVALID_ARGUMENT naming `fn` otherwise.
inline accel_status_t check_stream(const char* fn, accel_stream_t s) {
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) [[unlikely]]
    return st;
  if (!live(s)) [[unlikely]] {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is {}", fn,
                 s == nullptr ? "NULL" : "not a live stream (destroyed?)");
  }
  return ensure_ready(*s->backend);
}

// `e` is a live event; `what` names it in the message ("event", "start").
inline accel_status_t check_event(const char* fn, accel_event_t e, const char* what = "event") {
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) [[unlikely]]
    return st;
  if (!live(e)) [[unlikely]] {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is {}", fn, what,
                 e == nullptr ? "NULL" : "not a live event (destroyed?)");
  }
  return ensure_ready(*e->backend);
}

// Like check_stream, with NULL meaning the calling thread's current stream
// of the current device (which `stream` is then set to).
inline accel_status_t pick_stream(const char* fn, accel_stream_t& stream) {
  if (stream == nullptr) {
    Backend* b = nullptr;
    if (auto st = require_current(fn, b); st != ACCEL_SUCCESS) return st;
    if (auto st = ensure_ready(*b); st != ACCEL_SUCCESS) return st;
    return current_stream(*b, current_device(*b), stream);
  }
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
  if (!live(stream)) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is not a live stream (destroyed?)", fn);
  }
  return ensure_ready(*stream->backend);
}

}  // namespace accel::core
