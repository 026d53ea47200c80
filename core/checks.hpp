// The checks every entry point taking a device, a stream or an event starts
// with: not re-entered from a plugin callback, a live handle or a device
// index in range, its backend usable in this process and initialised.
// Inline: they sit on the dispatch path.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

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

// The out-structs of accel.h that start with struct_size (the caller sets
// it to the size it was built with): `p` is not NULL and has struct_size
// set; ACCEL_ERROR_INVALID_ARGUMENT naming the argument `what` and the
// struct `type` otherwise.
template <typename T>
accel_status_t check_sized_struct(const char* fn, const T* p, const char* what, const char* type) {
  if (p == nullptr || p->struct_size < sizeof(size_t)) [[unlikely]] {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: {} is NULL or its struct_size is not set (set it to sizeof({}))", fn, what,
                 type);
  }
  return ACCEL_SUCCESS;
}

// Copies `full`, filled at this build's size, into the caller's struct: as
// many bytes as its struct_size says, and its struct_size kept. A caller
// built against an older accel.h never gets bytes past its struct.
template <typename T>
void copy_sized_struct(T* out, const T& full) {
  const size_t caller_size = out->struct_size;
  std::memcpy(out, &full, std::min(caller_size, sizeof full));
  out->struct_size = caller_size;
}

// The arguments of a call that fills the caller's array `data` of
// `capacity` elements and reports the full count in `*total`: `total` is
// not NULL, and `data` is NULL only with capacity 0 (a call that asks for
// the count alone). The messages name both arguments; `joint` is the words
// between "<data> is NULL" and the capacity ("but capacity is").
inline accel_status_t check_out_array(const char* fn, const size_t* total, const char* total_name,
                                      const void* data, const char* data_name, size_t capacity,
                                      const char* joint) {
  if (total == nullptr) [[unlikely]]
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is NULL", fn, total_name);
  if (data == nullptr && capacity > 0) [[unlikely]] {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is NULL {} {}", fn, data_name, joint,
                 capacity);
  }
  return ACCEL_SUCCESS;
}

// Hands `text` out through a check_out_array-checked buffer: its full
// length in *length, and as much as fits, NUL-terminated, in buffer.
inline accel_status_t copy_out_text(std::string_view text, char* buffer, size_t capacity,
                                    size_t* length) {
  *length = text.size();
  if (capacity > 0) {
    const size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  return ACCEL_SUCCESS;
}

// Whether check_device also runs ensure_ready. Queries answered from the
// core's own state (memory statistics, an empty cache) leave a backend that
// was never initialised uninitialised.
enum class InitBackend : bool { no, yes };

// The current accelerator in `b`, and `device` (negative: the calling
// thread's current device) resolved to an index of it in `target`; then,
// with InitBackend::yes, the backend usable and initialised. The statuses
// and messages are require_current's, resolve_device's and ensure_ready's.
inline accel_status_t check_device(const char* fn, int32_t device, Backend*& b, int32_t& target,
                                   InitBackend init = InitBackend::yes) {
  if (auto st = require_current(fn, b); st != ACCEL_SUCCESS) [[unlikely]]
    return st;
  if (auto st = resolve_device(fn, *b, device, target); st != ACCEL_SUCCESS) [[unlikely]]
    return st;
  return init == InitBackend::yes ? ensure_ready(*b) : ACCEL_SUCCESS;
}

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
