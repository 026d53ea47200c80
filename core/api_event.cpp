// Events: creation with a timing flag, record, query, synchronize, elapsed
// time. The core tracks "never recorded" itself so every backend answers the
// same way (query complete, synchronize returns at once).
#include "callbacks.hpp"
#include "checks.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "runtime.hpp"
#include "stream_sanitizer.hpp"

using namespace accel::core;

namespace accel::core {

HandlePool<accel_event_s>& event_pool() {
  static auto* pool = new HandlePool<accel_event_s>();
  return *pool;
}

}  // namespace accel::core

namespace {}  // namespace

extern "C" {

accel_status_t accel_event_create(int32_t device, uint32_t flags, accel_event_t* event) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (event == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: event is NULL", fn);
    if ((flags & ~ACCEL_EVENT_ENABLE_TIMING) != 0) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: unknown flag bits 0x{:x}", fn,
                   flags & ~ACCEL_EVENT_ENABLE_TIMING);
    }
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    if (b->api.event_create == nullptr) {
      return failf(ACCEL_ERROR_NOT_SUPPORTED, "{}: backend '{}' does not support events", fn,
                   b->name);
    }
    if ((flags & ACCEL_EVENT_ENABLE_TIMING) != 0 &&
        (b->capabilities & ACCEL_PLUGIN_CAP_TIMING_EVENTS) == 0) {
      return failf(ACCEL_ERROR_NOT_SUPPORTED, "{}: backend '{}' does not support timing events", fn,
                   b->name);
    }
    accel_plugin_event_t native = nullptr;
    auto st = call_plugin(*b, "event_create",
                          [&] { return b->api.event_create(target, flags, &native); });
    if (st != ACCEL_SUCCESS) return st;
    accel_event_s* e = event_pool().acquire();
    e->backend = b;
    e->device = target;
    e->flags = flags;
    e->recorded.store(false, std::memory_order_relaxed);
    e->native = native;
    e->magic.store(kEventMagic, std::memory_order_release);
    *event = e;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_event_destroy(accel_event_t event) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_event(fn, event); st != ACCEL_SUCCESS) return st;
    uint32_t expected = kEventMagic;
    if (!event->magic.compare_exchange_strong(expected, kDeadMagic, std::memory_order_acq_rel)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: event was already destroyed", fn);
    }
    if (capturing_anywhere()) [[unlikely]]
      on_event_destroy(event);
    Backend& b = *event->backend;
    auto st = call_plugin(b, "event_destroy", [&] { return b.api.event_destroy(event->native); });
    event_pool().release(event);
    return st;
  });
}

accel_status_t accel_event_record(accel_event_t event, accel_stream_t stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_event(fn, event); st != ACCEL_SUCCESS) return st;
    Backend& b = *event->backend;
    if (stream == nullptr) {
      if (auto st = current_stream(b, event->device, stream); st != ACCEL_SUCCESS) return st;
    } else if (!live(stream)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is not a live stream (destroyed?)",
                   fn);
    }
    if (stream->backend != &b || stream->device != event->device) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: the event belongs to {} device {} but the stream to {} device {}", fn,
                   b.name, event->device, stream->backend->name, stream->device);
    }
    if (capturing_anywhere()) [[unlikely]] {
      if (auto r = record_event(fn, event, stream); r.recorded) return r.status;
    }
    // Host-function launches number themselves (fetch_add); a record only
    // reads the count, so it compares >= the launches before it: no locked
    // read-modify-write on the record path.
    const uint64_t sequence = stream->sequence.load(std::memory_order_acquire);
    TraceSpan span(stream);
    auto st = call_plugin(b, "event_record",
                          [&] { return b.api.event_record(event->native, stream->native); });
    if (span) span.end(st, {.kind = SpanKind::event_record});
    if (st == ACCEL_SUCCESS) {
      event->record_stream.store(stream, std::memory_order_relaxed);
      event->record_sequence.store(sequence, std::memory_order_relaxed);
      event->recorded.store(true, std::memory_order_release);
      if (sanitizer::on()) [[unlikely]]
        sanitizer::on_event_record(event, stream);
    }
    return st;
  });
}

accel_status_t accel_event_query(accel_event_t event) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_event(fn, event); st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_captured_event(fn, event); st != ACCEL_SUCCESS) return st;
    }
    if (!event->recorded.load(std::memory_order_acquire)) return ACCEL_SUCCESS;
    Backend& b = *event->backend;
    return call_plugin(b, "event_query", [&] { return b.api.event_query(event->native); });
  });
}

accel_status_t accel_event_synchronize(accel_event_t event) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_event(fn, event); st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_captured_event(fn, event); st != ACCEL_SUCCESS) return st;
    }
    if (!event->recorded.load(std::memory_order_acquire)) return ACCEL_SUCCESS;
    // From a host function: an event recorded on its own stream after it
    // completes only after the host function returns.
    if (const HostCall* call = running_host_call(); call != nullptr) [[unlikely]] {
      const accel_stream_s* s = event->record_stream.load(std::memory_order_relaxed);
      if (s != nullptr && running_on_stream(s) &&
          event->record_sequence.load(std::memory_order_relaxed) >= call->sequence) {
        return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                     "{}: called from a host function running on the stream the event was "
                     "recorded on after it ({} device {}); the event completes only after the "
                     "host function returns, so waiting for it would never return",
                     fn, s->backend->name, s->device);
      }
    }
    Backend& b = *event->backend;
    auto st =
        call_plugin(b, "event_synchronize", [&] { return b.api.event_synchronize(event->native); });
    if (sanitizer::on() && st == ACCEL_SUCCESS) [[unlikely]]
      sanitizer::on_event_synchronize(event);
    return st;
  });
}

accel_status_t accel_event_elapsed_time(accel_event_t start, accel_event_t end, float* ms) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (ms == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: ms is NULL", fn);
    if (auto st = check_event(fn, start, "start event"); st != ACCEL_SUCCESS) return st;
    if (auto st = check_event(fn, end, "end event"); st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_captured_event(fn, start); st != ACCEL_SUCCESS) return st;
      if (auto st = refuse_captured_event(fn, end); st != ACCEL_SUCCESS) return st;
    }
    if (start->backend != end->backend || start->device != end->device) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: the start event belongs to {} device {} but the end event to {} device {}",
                   fn, start->backend->name, start->device, end->backend->name, end->device);
    }
    for (auto [e, which] : {std::pair{start, "start"}, std::pair{end, "end"}}) {
      if ((e->flags & ACCEL_EVENT_ENABLE_TIMING) == 0) {
        return failf(ACCEL_ERROR_EVENT_NO_TIMING,
                     "{}: the {} event was created without ACCEL_EVENT_ENABLE_TIMING", fn, which);
      }
    }
    for (auto [e, which] : {std::pair{start, "start"}, std::pair{end, "end"}}) {
      if (!e->recorded.load(std::memory_order_acquire)) {
        return failf(ACCEL_ERROR_EVENT_NOT_RECORDED, "{}: the {} event has never been recorded", fn,
                     which);
      }
    }
    Backend& b = *start->backend;
    for (auto [e, which] : {std::pair{start, "start"}, std::pair{end, "end"}}) {
      // A plain copy: clang 14 cannot capture a structured binding.
      accel_plugin_event_t native = e->native;
      auto st = call_plugin(b, "event_query", [&] { return b.api.event_query(native); });
      if (st == ACCEL_ERROR_NOT_READY) {
        return failf(ACCEL_ERROR_NOT_READY,
                     "{}: the {} event's record has not completed yet (synchronize it first)", fn,
                     which);
      }
      if (st != ACCEL_SUCCESS) return st;
    }
    float result = 0.0f;
    auto st = call_plugin(b, "event_elapsed_time", [&] {
      return b.api.event_elapsed_time(start->native, end->native, &result);
    });
    if (st == ACCEL_SUCCESS) *ms = result;
    return st;
  });
}

accel_status_t accel_event_device(accel_event_t event, int32_t* device) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (!live(event) || device == nullptr) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {}", fn,
                   device == nullptr ? "device is NULL" : "event is NULL or destroyed");
    }
    *device = event->device;
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
