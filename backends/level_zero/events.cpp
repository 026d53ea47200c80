// Events: each record takes a fresh Level Zero event (a slot) from the
// device's pools, so a re-record never disturbs waits already appended on the
// earlier one. Slots are recycled once the device can no longer signal them.
// Timing events come from a ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP pool and are
// recorded with a barrier: the spec leaves the timestamps of
// zeCommandListAppendSignalEvent on such an event undefined.
#include "backend.hpp"

namespace accel::level_zero {

namespace {

constexpr uint32_t kPoolSize = 256;
constexpr size_t kRecycleScan = 64;  // retired slots looked at per acquire

Event* as_event(accel_plugin_event_t e) { return static_cast<Event*>(e); }

SlotRef current_record(Event* e) {
  std::lock_guard lock(e->mu);
  return e->rec;
}

}  // namespace

// ---- slots: Level Zero events from per-device pools ----------------------------

accel_status_t SlotPool::acquire(SlotRef* out) {
  std::unique_lock lock(mu_);
  for (size_t k = 0, n = retired_.size(); k < n && k < kRecycleScan; ++k) {
    Slot* s = retired_.front();
    retired_.pop_front();
    if (ze.zeEventQueryStatus(s->ev) == ZE_RESULT_SUCCESS &&
        ze.zeEventHostReset(s->ev) == ZE_RESULT_SUCCESS) {
      s->armed = false;
      free_.push_back(s);
    } else {
      retired_.push_back(s);
    }
  }
  Slot* s = nullptr;
  if (!free_.empty()) {
    s = free_.back();
    free_.pop_back();
  } else {
    if (pools_.empty() || next_index_ == kPoolSize) {
      ze_event_pool_desc_t desc{};
      desc.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
      desc.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
      if (timing_) desc.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
      desc.count = kPoolSize;
      // Visible to every device of the context (no device list), so a
      // stream of another device of this driver can wait on its events.
      ze_event_pool_handle_t pool = nullptr;
      ze_result_t r = ze.zeEventPoolCreate(dev_->driver->context, &desc, 0, nullptr, &pool);
      if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeEventPoolCreate", r, dev_->driver->handle);
      pools_.push_back(pool);
      next_index_ = 0;
    }
    ze_event_desc_t ed{};
    ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
    ed.index = next_index_;
    ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
    ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    ze_event_handle_t ev = nullptr;
    ze_result_t r = ze.zeEventCreate(pools_.back(), &ed, &ev);
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeEventCreate", r, dev_->driver->handle);
    ++next_index_;
    s = new Slot();
    s->ev = ev;
    s->dev = dev_;
    s->timing = timing_;
  }
  lock.unlock();
  try {
    *out = SlotRef(s, [this](Slot* p) { release(p); });
  } catch (...) {
    release(s);
    throw;
  }
  return ACCEL_SUCCESS;
}

void SlotPool::release(Slot* s) {
  std::lock_guard lock(mu_);
  // A slot nobody signalled is still reset: reusable at once. One that was
  // appended (or handed to a host thread) waits until it has been signalled.
  if (s->armed)
    retired_.push_back(s);
  else
    free_.push_back(s);
}

accel_status_t wait_slot(const SlotRef& slot) {
  ze_result_t r = ze.zeEventHostSynchronize(slot->ev, UINT64_MAX);
  if (r != ZE_RESULT_SUCCESS)
    return vendor_fail("zeEventHostSynchronize", r, slot->dev->driver->handle);
  return ACCEL_SUCCESS;
}

accel_status_t query_slot(const SlotRef& slot) {
  ze_result_t r = ze.zeEventQueryStatus(slot->ev);
  if (r == ZE_RESULT_SUCCESS) return ACCEL_SUCCESS;
  // Not ready is an answer, not a failure: no detail is recorded.
  if (r == ZE_RESULT_NOT_READY) return ACCEL_ERROR_NOT_READY;
  return vendor_fail("zeEventQueryStatus", r, slot->dev->driver->handle);
}

// ---- accel events ---------------------------------------------------------------

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* out) {
  return on_device("event_create", device, [&](Device* d) -> accel_status_t {
    if (out == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_create: out is NULL");
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
    Queue* q = s->q.get();
    std::lock_guard elock(e->mu);  // order: event, then queue
    std::lock_guard slock(q->mu);
    SlotRef slot;
    SlotPool* pool = timing ? s->dev->timing_slots.get() : s->dev->plain_slots.get();
    if (accel_status_t st = pool->acquire(&slot); st != ACCEL_SUCCESS) return st;
    // Appended to the list: it also completes after whatever the program
    // appended to an exported list before it.
    ze_result_t r = timing ? ze.zeCommandListAppendBarrier(q->list, slot->ev, 0, nullptr)
                           : ze.zeCommandListAppendSignalEvent(q->list, slot->ev);
    if (r != ZE_RESULT_SUCCESS)
      return vendor_fail(timing ? "zeCommandListAppendBarrier" : "zeCommandListAppendSignalEvent",
                         r, s->dev->driver->handle);
    slot->armed = true;
    prune_held(q);
    q->last = slot;
    e->rec = std::move(slot);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_query(accel_plugin_event_t event) {
  return guarded("event_query", [&]() -> accel_status_t {
    SlotRef rec = current_record(as_event(event));
    return rec ? query_slot(rec) : ACCEL_SUCCESS;
  });
}

accel_status_t op_event_synchronize(accel_plugin_event_t event) {
  return guarded("event_synchronize", [&]() -> accel_status_t {
    SlotRef rec = current_record(as_event(event));
    return rec ? wait_slot(rec) : ACCEL_SUCCESS;
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
      return fail(ACCEL_ERROR_EVENT_NOT_RECORDED,
                  "event_elapsed_time: the %s event was never "
                  "recorded",
                  !ra ? "start" : "end");
    for (const SlotRef* r : {&ra, &rb}) {
      accel_status_t st = query_slot(*r);
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
      return vendor_fail("zeEventQueryKernelTimestamp", r, d->driver->handle);
    const uint64_t hz = d->props.timerResolution;  // cycles per second (DEVICE_PROPERTIES_1_2)
    if (hz == 0)
      return fail(ACCEL_ERROR_BACKEND_FAILURE,
                  "event_elapsed_time: %s reports a timer "
                  "resolution of 0",
                  d->label());
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

// The Level Zero event of the latest record (NULL before the first). A
// re-record takes a new event and this one goes back to the pool, to be
// reset and reused once it has been signalled: a program that appends a wait
// on it must see that wait pass before re-recording or destroying the event.
accel_status_t op_event_native_handle(accel_plugin_event_t event, accel_native_handle_t* out) {
  return guarded("event_native_handle", [&]() -> accel_status_t {
    Event* e = as_event(event);
    if (e == nullptr || out == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_native_handle: NULL argument");
    SlotRef rec = current_record(e);
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_LEVEL_ZERO,
                                             rec ? static_cast<void*>(rec->ev) : nullptr,
                                             e->dev->driver->context, -1);
  });
}

}  // namespace accel::level_zero
