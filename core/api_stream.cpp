// Streams: current stream per thread and device, creation with priority,
// query, synchronize, cross-stream waits and host functions.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "callbacks.hpp"
#include "checks.hpp"
#include "device_memory.hpp"
#include "host_cache_hook.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "log.hpp"
#include "runtime.hpp"
#include "staging.hpp"
#include "stream_sanitizer.hpp"

using namespace accel::core;

namespace accel::core {

HandlePool<accel_stream_s>& stream_pool() {
  static auto* pool = new HandlePool<accel_stream_s>();
  return *pool;
}

std::mutex& stream_name_mutex() {
  static auto* m = new std::mutex();  // never destroyed: exit may still read names
  return *m;
}

std::string stream_name_of(accel_stream_s* s) {
  std::lock_guard lock(stream_name_mutex());
  return s->name;
}

}  // namespace accel::core

namespace {

// A host function waiting for its own stream would wait for itself.
accel_status_t check_not_own_stream(const char* fn, const accel_stream_s* s, const char* what) {
  if (!running_on_stream(s)) [[likely]]
    return ACCEL_SUCCESS;
  return failf(ACCEL_ERROR_INVALID_ARGUMENT,
               "{}: called from a host function running on that stream ({} device {}); {} would "
               "wait for the host function itself to finish and never return",
               fn, s->backend->name, s->device, what);
}

// accel_stream_device and accel_stream_priority: copies `field` of a live
// stream to `out`, which the message calls `what` when it is NULL. Reads no
// backend, so it needs no current accelerator and initialises nothing.
accel_status_t read_stream_field(const char* fn, accel_stream_t stream,
                                 int32_t accel_stream_s::*field, const char* what, int32_t* out) {
  return guarded(fn, [&] {
    if (out == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is NULL", fn, what);
    if (!live(stream)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is NULL or destroyed", fn);
    }
    *out = stream->*field;
    return ACCEL_SUCCESS;
  });
}

// accel_stream_set_name's rules for a name: NULL, empty, too long or a
// byte outside printable ASCII is refused with the reason. ASCII keeps
// every consumer (the trace's and the snapshot's JSON, NVTX's "A" entry
// points) able to take the bytes as they are.
accel_status_t check_stream_name(const char* fn, const char* name, size_t& length) {
  if (name == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: name is NULL", fn);
  length = strnlen(name, ACCEL_STREAM_NAME_MAX + 1);
  if (length == 0) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: name is empty", fn);
  if (length > ACCEL_STREAM_NAME_MAX) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: name is longer than ACCEL_STREAM_NAME_MAX ({} bytes)", fn,
                 ACCEL_STREAM_NAME_MAX);
  }
  for (size_t i = 0; i < length; ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c > 0x7e) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: name byte {} is {:#04x}; a stream name is printable ASCII (0x20 to 0x7e)",
                   fn, i, static_cast<unsigned>(c));
    }
  }
  return ACCEL_SUCCESS;
}

// Hands the name to the plugin for the vendor's tools. Its failure changes
// nothing the caller sees (the core's name is set): logged, and the
// caller's last error left as it was.
void name_for_vendor(accel_stream_s* s, const char* name) {
  Backend& b = *s->backend;
  if (b.api.stream_set_name == nullptr) return;
  LastErrorScope keep;
  auto st =
      call_plugin(b, "stream_set_name", [&] { return b.api.stream_set_name(s->native, name); });
  if (st != ACCEL_SUCCESS) {
    log().debug("accel_stream_set_name: {} did not name its queue '{}' for the vendor's tools: {}",
                b.name, name, last_error());
  }
}

accel_status_t priority_range(Backend& b, int32_t device, int32_t& least, int32_t& greatest) {
  least = 0;
  greatest = 0;
  if (b.api.stream_priority_range == nullptr) return ACCEL_SUCCESS;
  return call_plugin(b, "stream_priority_range",
                     [&] { return b.api.stream_priority_range(device, &least, &greatest); });
}

// accel_current_stream's full path, out of line (see api_device.cpp).
[[gnu::noinline]] accel_status_t current_stream_full(int32_t device, accel_stream_t* stream) {
  const char* const fn = "accel_current_stream";
  return guarded(fn, [&] {
    if (stream == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is NULL", fn);
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    return current_stream(*b, target, *stream);
  });
}

}  // namespace

extern "C" {

accel_status_t accel_current_stream(int32_t device, accel_stream_t* stream) {
  // Fast path: the thread's cached current stream of its current device,
  // when no stream was destroyed and set_stream not called since (HotThread).
  // The cache is only ever filled after discovery, for a backend without
  // native device state, and emptied in a fork child: no other check needed.
  HotThread& h = t_hot;
  if (stream != nullptr && (device < 0 || device == h.device) && h.stream_device == h.device &&
      h.stream_epoch == g_stream_epoch.load(std::memory_order_acquire)) [[likely]] {
    *stream = h.stream;
    return ACCEL_SUCCESS;
  }
  return current_stream_full(device, stream);
}

accel_status_t accel_set_stream(accel_stream_t stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    // Read before the liveness check: a destroy racing this call then shows
    // as a generation that a later stream in the same slot does not match.
    const uint32_t generation =
        stream != nullptr ? stream->generation.load(std::memory_order_acquire) : 0;
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    Backend* b = nullptr;
    if (auto st = require_current(fn, b); st != ACCEL_SUCCESS) return st;
    if (stream->backend != b) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: the stream belongs to backend '{}' but the current accelerator is '{}'", fn,
                   stream->backend->name, b->name);
    }
    // torch.accelerator.set_stream: the stream's device becomes current too.
    if (current_device(*b) != stream->device) {
      if (auto st = set_current_device(*b, stream->device, 0); st != ACCEL_SUCCESS) return st;
    }
    auto& streams = thread_state().streams;
    if (streams.size() < static_cast<size_t>(b->device_count))
      streams.resize(static_cast<size_t>(b->device_count));
    CurrentStream& cur = streams[static_cast<size_t>(stream->device)];
    cur.stream = stream->is_default ? nullptr : stream;
    cur.generation = generation;
    forget_stream_cache();
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    int32_t lo = 0, hi = 0;
    if (auto st = priority_range(*b, target, lo, hi); st != ACCEL_SUCCESS) return st;
    if (least != nullptr) *least = lo;
    if (greatest != nullptr) *greatest = hi;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_stream_create(int32_t device, int32_t priority, accel_stream_t* stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (stream == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is NULL", fn);
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    int32_t least = 0, greatest = 0;
    if (auto st = priority_range(*b, target, least, greatest); st != ACCEL_SUCCESS) return st;
    // CUDA clamps an out-of-range priority rather than failing; so do we.
    int32_t clamped = std::clamp(priority, greatest, least);
    if (clamped != priority) {
      log().debug("{}: priority {} clamped to {} (range [{}, {}] on {} device {})", fn, priority,
                  clamped, greatest, least, b->name, target);
    }
    accel_plugin_stream_t native = nullptr;
    auto st = call_plugin(*b, "stream_create",
                          [&] { return b->api.stream_create(target, clamped, &native); });
    if (st != ACCEL_SUCCESS) return st;
    accel_stream_s* s = stream_pool().acquire();
    s->backend = b;
    s->device = target;
    s->priority = clamped;
    s->is_default = false;
    s->borrowed = false;
    s->from_native = false;
    s->native = native;
    s->magic.store(kStreamMagic, std::memory_order_release);
    *stream = s;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_stream_destroy(accel_stream_t stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    if (stream->is_default) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: the default stream of {} device {} is owned by accel and cannot be "
                   "destroyed",
                   fn, stream->backend->name, stream->device);
    }
    if (auto st = check_not_own_stream(fn, stream, "destroying it"); st != ACCEL_SUCCESS) return st;
    // Exactly one of two racing destroys wins the handle.
    uint32_t expected = kStreamMagic;
    if (!stream->magic.compare_exchange_strong(expected, kDeadMagic, std::memory_order_acq_rel)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream was already destroyed", fn);
    }
    stream->generation.fetch_add(1, std::memory_order_release);
    g_stream_epoch.fetch_add(1, std::memory_order_acq_rel);
    {
      // Under the lock accel_stream_native_handle fills the cache with.
      std::lock_guard lock(stream_pool().mutex());
      stream->native_cached.store(false, std::memory_order_relaxed);
    }
    {
      std::lock_guard lock(stream_name_mutex());
      stream->name[0] = '\0';
    }
    Backend& b = *stream->backend;
    if (capturing_anywhere()) [[unlikely]]
      on_stream_destroy(stream);
    // Cached memory of the stream moves to the default stream once the
    // stream's queued work is done (a marker recorded now, before it goes).
    retire_stream_memory(stream);
    retire_stream_staging(stream);
    retire_stream_host_memory(stream);
    release_stream_staging(stream);
    trace_stream_destroying(stream);
    auto st =
        call_plugin(b, "stream_destroy", [&] { return b.api.stream_destroy(stream->native); });
    stream_pool().release(stream);
    return st;
  });
}

accel_status_t accel_stream_query(accel_stream_t stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_captured_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    }
    Backend& b = *stream->backend;
    return call_plugin(b, "stream_query", [&] { return b.api.stream_query(stream->native); });
  });
}

accel_status_t accel_stream_synchronize(accel_stream_t stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    if (auto st = check_not_own_stream(fn, stream, "synchronizing it"); st != ACCEL_SUCCESS)
      return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_captured_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    }
    Backend& b = *stream->backend;
    auto st = call_plugin(b, "stream_synchronize",
                          [&] { return b.api.stream_synchronize(stream->native); });
    if (sanitizer::on() && st == ACCEL_SUCCESS) [[unlikely]]
      sanitizer::on_stream_synchronize(stream);
    return st;
  });
}

accel_status_t accel_stream_wait_event(accel_stream_t stream, accel_event_t event) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    if (!live(event)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: event is {}", fn,
                   event == nullptr ? "NULL" : "not a live event (destroyed?)");
    }
    if (event->backend != stream->backend) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: the event belongs to {} device {} but the stream to {} device {}", fn,
                   event->backend->name, event->device, stream->backend->name, stream->device);
    }
    Backend& b = *stream->backend;
    if (event->device != stream->device &&
        (b.capabilities & ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT) == 0) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: the event belongs to {} device {} but the stream to {} device {}, and "
                   "backend '{}' cannot order work across its devices (it does not declare "
                   "ACCEL_CAP_CROSS_DEVICE_WAIT): synchronize the event on the host first",
                   fn, b.name, event->device, b.name, stream->device, b.name);
    }
    if (b.api.stream_wait_event == nullptr) {
      return failf(ACCEL_ERROR_NOT_SUPPORTED, "{}: backend '{}' does not support stream_wait_event",
                   fn, b.name);
    }
    if (capturing_anywhere()) [[unlikely]] {
      if (auto r = record_wait(fn, stream, event); r.recorded) return r.status;
    }
    // A never-recorded event is complete: nothing to wait for.
    if (!event->recorded.load(std::memory_order_acquire)) return ACCEL_SUCCESS;
    TraceSpan span(stream);
    auto st = call_plugin(b, "stream_wait_event",
                          [&] { return b.api.stream_wait_event(stream->native, event->native); });
    if (span) span.end(st, {.kind = SpanKind::event_wait});
    if (sanitizer::on() && st == ACCEL_SUCCESS) [[unlikely]]
      sanitizer::on_stream_wait(stream, event);
    return st;
  });
}

accel_status_t accel_stream_device(accel_stream_t stream, int32_t* device) {
  return read_stream_field(__func__, stream, &accel_stream_s::device, "device", device);
}

accel_status_t accel_stream_priority(accel_stream_t stream, int32_t* priority) {
  return read_stream_field(__func__, stream, &accel_stream_s::priority, "priority", priority);
}

accel_status_t accel_stream_set_name(accel_stream_t stream, const char* name) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    size_t length = 0;
    if (auto st = check_stream_name(fn, name, length); st != ACCEL_SUCCESS) return st;
    char copy[ACCEL_STREAM_NAME_MAX + 1];
    std::memcpy(copy, name, length);
    copy[length] = '\0';
    {
      std::lock_guard lock(stream_name_mutex());
      std::memcpy(stream->name, copy, length + 1);
    }
    trace_stream_renamed(stream);
    name_for_vendor(stream, copy);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_stream_get_name(accel_stream_t stream, char* buffer, size_t capacity,
                                     size_t* length) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st =
            check_out_array(fn, length, "length", buffer, "buffer", capacity, "with capacity");
        st != ACCEL_SUCCESS)
      return st;
    if (!live(stream)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is {}", fn,
                   stream == nullptr ? "NULL" : "not a live stream (destroyed?)");
    }
    return copy_out_text(stream_name_of(stream), buffer, capacity, length);
  });
}

accel_status_t accel_launch_host_func(accel_stream_t stream, accel_host_fn host_fn,
                                      void* user_data) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (host_fn == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: fn is NULL", fn);
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    Backend& b = *stream->backend;
    if (b.api.launch_host_func == nullptr) {
      return failf(ACCEL_ERROR_NOT_SUPPORTED, "{}: backend '{}' does not support host functions",
                   fn, b.name);
    }
    if (capturing_anywhere()) [[unlikely]] {
      GraphOp op{.kind = OpKind::host_func, .fn = host_fn, .user_data = user_data};
      if (auto r = record_op(fn, stream, std::move(op)); r.recorded) return r.status;
    }
    // The plugin runs the core's trampoline, which marks the thread as
    // running a host function of this stream while user code runs.
    auto call = std::make_unique<HostCall>();
    call->fn = host_fn;
    call->user_data = user_data;
    call->stream = stream;
    call->stream_generation = stream->generation.load(std::memory_order_acquire);
    call->backend = &b;
    call->device = stream->device;
    call->sequence = stream->sequence.fetch_add(1, std::memory_order_acq_rel) + 1;
    TraceSpan span(stream);
    auto st = call_plugin(b, "launch_host_func", [&] {
      return b.api.launch_host_func(stream->native, host_call_trampoline, call.get());
    });
    if (span) span.end(st, {.kind = SpanKind::host_func});
    if (st == ACCEL_SUCCESS) call.release();  // the trampoline owns it now
    return st;
  });
}

}  // extern "C"
