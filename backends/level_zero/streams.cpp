// Streams: in-order immediate command lists on the device's compute queue
// group. Every command signals a fresh event (the stream's `last`), which is
// what query and synchronize look at (loader 1.8 has no
// zeCommandListHostSynchronize).
#include "backend.hpp"

#include <algorithm>

namespace accel::level_zero {

namespace {

// accel priorities on Level Zero: 1 low, 0 normal (the default), -1 high.
constexpr int32_t kLeast = 1;
constexpr int32_t kGreatest = -1;

ze_command_queue_priority_t queue_priority(int32_t p) {
  if (p > 0) return ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_LOW;
  if (p < 0) return ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH;
  return ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
}

Stream* as_stream(accel_plugin_stream_t s) { return static_cast<Stream*>(s); }

void free_stream(Stream* s) {
  hostfn_stop_worker(s);
  {
    std::lock_guard lock(s->dev->mu);
    auto& v = s->dev->streams;
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
  }
  if (ze_result_t r = ze.zeCommandListDestroy(s->list); r != ZE_RESULT_SUCCESS)
    accel::plugin::log(ACCEL_LOG_WARN,
                       vendor_failure("zeCommandListDestroy", r, s->dev->driver->handle));
  delete s;
}

// A new stream of `dev`, registered in dev->streams (for device_synchronize).
accel_status_t stream_create_internal(Device* dev, int32_t priority, bool is_default,
                                      Stream** out) {
  ze_command_queue_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
  desc.ordinal = dev->compute_ordinal;
  desc.index = 0;
  desc.flags = kQueueFlagInOrder;
  desc.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
  desc.priority = queue_priority(priority);
  ze_command_list_handle_t list = nullptr;
  ze_result_t r = ze.zeCommandListCreateImmediate(dev->driver->context, dev->handle, &desc, &list);
  if (r != ZE_RESULT_SUCCESS)
    return vendor_fail("zeCommandListCreateImmediate", r, dev->driver->handle);
  auto* s = new Stream();
  s->dev = dev;
  s->list = list;
  s->priority = priority;
  s->is_default = is_default;
  std::lock_guard lock(dev->mu);
  dev->streams.push_back(s);
  *out = s;
  return ACCEL_SUCCESS;
}

}  // namespace

void prune_held(Stream* s) {
  if (!s->held.empty() && s->last && ze.zeEventQueryStatus(s->last->ev) == ZE_RESULT_SUCCESS)
    s->held.clear();
}

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return guarded("stream_priority_range", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    if (least) *least = kLeast;
    if (greatest) *greatest = kGreatest;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* out) {
  return guarded("stream_create", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    if (out == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_create: out is NULL");
    Stream* s = nullptr;
    accel_status_t st =
        stream_create_internal(d, std::clamp(priority, kGreatest, kLeast), false, &s);
    if (st == ACCEL_SUCCESS) *out = s;
    return st;
  });
}

accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* out) {
  return guarded("default_stream", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    if (out == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "default_stream: out is NULL");
    {
      std::lock_guard lock(d->mu);
      if (d->default_stream != nullptr) {
        *out = d->default_stream;
        return ACCEL_SUCCESS;
      }
    }
    // Created outside d->mu (stream_create_internal takes it); the core
    // serialises default_stream calls, a race would only create a spare.
    Stream* s = nullptr;
    accel_status_t st = stream_create_internal(d, 0, true, &s);
    if (st != ACCEL_SUCCESS) return st;
    std::unique_lock lock(d->mu);
    if (d->default_stream == nullptr) {
      d->default_stream = s;
    } else {
      lock.unlock();
      free_stream(s);
      lock.lock();
    }
    *out = d->default_stream;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_destroy(accel_plugin_stream_t stream) {
  return guarded("stream_destroy", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    if (s == nullptr || s->is_default)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_destroy: NULL or default stream");
    SlotRef last;
    {
      std::lock_guard lock(s->mu);
      s->dying = true;
      last = s->last;
    }
    if (!last || ze.zeEventQueryStatus(last->ev) == ZE_RESULT_SUCCESS) {
      free_stream(s);
      return ACCEL_SUCCESS;
    }
    // Queued work still completes: a reaper thread waits for it, then frees
    // the list (Level Zero forbids destroying a list the device still uses).
    std::thread([s, last] {
      if (ze_result_t r = ze.zeEventHostSynchronize(last->ev, UINT64_MAX); r != ZE_RESULT_SUCCESS)
        accel::plugin::log(
            ACCEL_LOG_WARN, "destroyed stream of %s: %s", s->dev->label(),
            vendor_failure("zeEventHostSynchronize", r, s->dev->driver->handle).c_str());
      free_stream(s);
    }).detach();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    std::lock_guard lock(s->mu);
    if (!s->last) return ACCEL_SUCCESS;
    accel_status_t st = query_slot(s->last);
    if (st == ACCEL_SUCCESS) s->held.clear();
    return st;
  });
}

accel_status_t op_stream_synchronize(accel_plugin_stream_t stream) {
  return guarded("stream_synchronize", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    SlotRef last;
    {
      std::lock_guard lock(s->mu);
      last = s->last;
    }
    if (!last) return ACCEL_SUCCESS;
    accel_status_t st = wait_slot(last);
    if (st == ACCEL_SUCCESS) {
      std::lock_guard lock(s->mu);
      prune_held(s);
    }
    return st;
  });
}

accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    auto* e = static_cast<Event*>(event);
    SlotRef rec;
    {
      std::lock_guard lock(e->mu);
      rec = e->rec;
    }
    if (!rec) return ACCEL_SUCCESS;  // never recorded: complete
    // Devices of one driver share its context, so a command list of one can
    // wait on another's event natively. Two drivers share nothing.
    if (rec->dev->driver != s->dev->driver)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "stream_wait_event: event of %s, stream of %s: devices of different Level "
                  "Zero drivers share no context; synchronize the event on the host first",
                  rec->dev->label(), s->dev->label());
    std::lock_guard lock(s->mu);
    prune_held(s);
    ze_event_handle_t ev = rec->ev;
    ze_result_t r = ze.zeCommandListAppendWaitOnEvents(s->list, 1, &ev);
    if (r != ZE_RESULT_SUCCESS)
      return vendor_fail("zeCommandListAppendWaitOnEvents", r, s->dev->driver->handle);
    s->held.push_back(std::move(rec));
    // A signal after the wait: the stream is idle only once the wait passed.
    return stream_append(s, "zeCommandListAppendSignalEvent", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendSignalEvent(s->list, sig);
    });
  });
}

}  // namespace accel::level_zero
