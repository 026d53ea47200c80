// Events: each record takes a fresh event from the device's pools, so a
// re-record never disturbs waits already appended on the earlier one.
// Timing events come from a ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP pool and are
// recorded with a barrier: the spec leaves the timestamps of
// zeCommandListAppendSignalEvent on such an event undefined.
#include "l0.hpp"

namespace accel_ze {

namespace {

Event* as_event(accel_plugin_event_t e) { return static_cast<Event*>(e); }

SlotRef current_record(Event* e) {
  std::lock_guard lock(e->mu);
  return e->rec;
}

}  // namespace

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* out) {
  return guarded("event_create", [&]() -> accel_status_t {
    Device* d = device_at(device);
    if (d == nullptr || out == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_create: bad device or NULL output");
    if ((flags & ~ACCEL_EVENT_ENABLE_TIMING) != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_create: unknown flags 0x%x", flags);
    auto* e = new Event();
    e->dev = d;
    e->flags = flags;
    *out = e;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_destroy(accel_plugin_event_t event) {
  return guarded("event_destroy", [&]() -> accel_status_t {
    delete as_event(event);  // its record (if any) goes back to the pool when unused
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  return guarded("event_record", [&]() -> accel_status_t {
    Event* e = as_event(event);
    auto* s = static_cast<Stream*>(stream);
    if (e->dev != s->dev)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH, "event_record: event of %s, stream of %s",
                  e->dev->label(), s->dev->label());
    const bool timing = (e->flags & ACCEL_EVENT_ENABLE_TIMING) != 0;
    std::lock_guard elock(e->mu);  // order: event, then stream
    std::lock_guard slock(s->mu);
    SlotRef slot;
    SlotPool* pool = timing ? s->dev->timing_slots.get() : s->dev->plain_slots.get();
    if (accel_status_t st = pool->acquire(&slot); st != ACCEL_SUCCESS) return st;
    ze_result_t r = timing ? ze.zeCommandListAppendBarrier(s->list, slot->ev, 0, nullptr)
                           : ze.zeCommandListAppendSignalEvent(s->list, slot->ev);
    if (r != ZE_RESULT_SUCCESS)
      return ze_fail(timing ? "zeCommandListAppendBarrier" : "zeCommandListAppendSignalEvent", r,
                     s->dev->driver->handle, "event_record on %s", s->dev->label());
    slot->armed = true;
    prune_held(s);
    s->last = slot;
    e->rec = std::move(slot);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_query(accel_plugin_event_t event) {
  return guarded("event_query", [&]() -> accel_status_t {
    SlotRef rec = current_record(as_event(event));
    return rec ? query_slot(rec, "event_query") : ACCEL_SUCCESS;
  });
}

accel_status_t op_event_synchronize(accel_plugin_event_t event) {
  return guarded("event_synchronize", [&]() -> accel_status_t {
    SlotRef rec = current_record(as_event(event));
    return rec ? wait_slot(rec, "event_synchronize") : ACCEL_SUCCESS;
  });
}

accel_status_t op_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                     float* ms) {
  return guarded("event_elapsed_time", [&]() -> accel_status_t {
    Event* a = as_event(start);
    Event* b = as_event(end);
    if (ms == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_elapsed_time: ms is NULL");
    if (((a->flags & b->flags) & ACCEL_EVENT_ENABLE_TIMING) == 0)
      return fail(ACCEL_ERROR_EVENT_NO_TIMING,
                  "event_elapsed_time: both events need ACCEL_EVENT_ENABLE_TIMING");
    if (a->dev != b->dev)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH, "event_elapsed_time: events of %s and %s",
                  a->dev->label(), b->dev->label());
    SlotRef ra = current_record(a), rb = current_record(b);
    if (!ra || !rb)
      return fail(ACCEL_ERROR_EVENT_NOT_RECORDED, "event_elapsed_time: the %s event was never "
                  "recorded", !ra ? "start" : "end");
    for (const SlotRef* r : {&ra, &rb}) {
      accel_status_t st = query_slot(*r, "event_elapsed_time");
      if (st == ACCEL_ERROR_NOT_READY)
        return fail(st, "event_elapsed_time: the %s event has not completed",
                    r == &ra ? "start" : "end");
      if (st != ACCEL_SUCCESS) return st;
    }
    Device* d = a->dev;
    ze_kernel_timestamp_result_t ta{}, tb{};
    ze_result_t r = ze.zeEventQueryKernelTimestamp(ra->ev, &ta);
    if (r == ZE_RESULT_SUCCESS) r = ze.zeEventQueryKernelTimestamp(rb->ev, &tb);
    if (r != ZE_RESULT_SUCCESS)
      return ze_fail("zeEventQueryKernelTimestamp", r, d->driver->handle, "%s", d->label());
    const uint64_t hz = d->props.timerResolution;  // cycles per second (DEVICE_PROPERTIES_1_2)
    if (hz == 0)
      return fail(ACCEL_ERROR_BACKEND_FAILURE, "event_elapsed_time: %s reports a timer "
                  "resolution of 0", d->label());
    // Timestamps wrap at kernelTimestampValidBits: take the difference modulo
    // 2^bits and read it as signed, so an end before the start is negative.
    uint32_t bits = d->props.kernelTimestampValidBits;
    if (bits == 0 || bits > 64) bits = 64;
    const uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    uint64_t diff = (tb.global.kernelEnd - ta.global.kernelEnd) & mask;
    double ticks;
    if (bits == 64) {
      ticks = static_cast<double>(static_cast<int64_t>(diff));
    } else if (diff >= (1ull << (bits - 1))) {
      ticks = -static_cast<double>((mask - diff) + 1);
    } else {
      ticks = static_cast<double>(diff);
    }
    *ms = static_cast<float>(ticks * 1000.0 / static_cast<double>(hz));
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel_ze
