// Streams: in-order immediate command lists on the device's compute queue
// group; native handles of streams and stream_from_native are in
// interop.cpp. Every command signals a fresh event (the list's `last`), which is
// what query and synchronize look at (loader 1.8 has no
// zeCommandListHostSynchronize). A list and that state form a Queue, shared
// by the stream that made the list and the wrappers of its native handle.
// Once the program holds a list's handle it may append to it directly, after
// `last`: synchronize, query and destroy then append a marker of their own
// and wait for that (README.md, "Native handles").
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

// How long stream_query waits for its marker on a list the program may have
// appended to: a marker on an idle list completes at once, and a busy list
// answers NOT_READY after this.
constexpr uint64_t kQueryMarkerWaitNs = 2'000'000;

Stream* as_stream(accel_plugin_stream_t s) { return static_cast<Stream*>(s); }

}  // namespace

// Never destroyed: reaper threads free streams during exit.
std::mutex& queue_registry_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::map<ze_command_list_handle_t, std::weak_ptr<Queue>>& queue_registry() {
  static auto* r = new std::map<ze_command_list_handle_t, std::weak_ptr<Queue>>();
  return *r;
}

QueueRef make_queue(Device* dev, ze_command_list_handle_t list, bool accel_made,
                    bool destroy_list) {
  auto q = std::make_shared<Queue>();
  q->dev = dev;
  q->list = list;
  q->accel_made = accel_made;
  q->destroy_list = destroy_list;
  return q;
}

Stream* add_stream(Device* dev, QueueRef q, int32_t priority, bool is_default) {
  auto* s = new Stream();
  s->dev = dev;
  s->q = std::move(q);
  s->priority = priority;
  s->is_default = is_default;
  std::lock_guard lock(dev->mu);
  dev->streams.push_back(s);
  return s;
}

namespace {

// Frees the stream; its Queue (and with it, where the Queue owns it, the
// list) goes with the last stream using it.
void free_stream(Stream* s) {
  hostfn_stop_worker(s);
  {
    std::lock_guard lock(s->dev->mu);
    auto& v = s->dev->streams;
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
  }
  delete s;
}

// A new stream of `dev` on a new list, registered in dev->streams (for
// device_synchronize).
accel_status_t stream_create_internal(Device* dev, int32_t priority, bool is_default,
                                      Stream** out) {
  ze_command_list_handle_t list = nullptr;
  if (accel_status_t st = create_list(dev, queue_priority(priority), &list); st != ACCEL_SUCCESS)
    return st;
  QueueRef q;
  try {
    q = make_queue(dev, list, true, true);
    std::lock_guard lock(queue_registry_mutex());
    queue_registry()[list] = q;
  } catch (...) {
    if (!q) ze.zeCommandListDestroy(list);
    throw;
  }
  *out = add_stream(dev, std::move(q), priority, is_default);
  return ACCEL_SUCCESS;
}

}  // namespace

Queue::~Queue() {
  {
    std::lock_guard lock(queue_registry_mutex());
    auto it = queue_registry().find(list);
    if (it != queue_registry().end() && it->second.expired()) queue_registry().erase(it);
  }
  if (!destroy_list) return;
  if (ze_result_t r = ze.zeCommandListDestroy(list); r != ZE_RESULT_SUCCESS)
    accel::plugin::log(ACCEL_LOG_WARN,
                       vendor_failure("zeCommandListDestroy", r, dev->driver->handle));
}

accel_status_t create_list(Device* dev, ze_command_queue_priority_t priority,
                           ze_command_list_handle_t* out) {
  ze_command_queue_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
  desc.ordinal = dev->compute_ordinal;
  desc.index = 0;
  desc.flags = kQueueFlagInOrder;
  desc.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
  desc.priority = priority;
  ze_result_t r = ze.zeCommandListCreateImmediate(dev->driver->context, dev->handle, &desc, out);
  if (r != ZE_RESULT_SUCCESS)
    return vendor_fail("zeCommandListCreateImmediate", r, dev->driver->handle);
  return ACCEL_SUCCESS;
}

void prune_held(Queue* q) {
  if (!q->held.empty() && q->last && ze.zeEventQueryStatus(q->last->ev) == ZE_RESULT_SUCCESS)
    q->held.clear();
}

accel_status_t queue_fence(Queue* q, SlotRef* out) {
  if (q->exported.load(std::memory_order_acquire)) {
    // In an in-order list the marker completes after everything appended
    // before it, by accel or by the program.
    accel_status_t st = queue_append(
        q, "zeCommandListAppendSignalEvent",
        [&](ze_event_handle_t sig) { return ze.zeCommandListAppendSignalEvent(q->list, sig); });
    if (st != ACCEL_SUCCESS) return st;
  }
  *out = q->last;
  return ACCEL_SUCCESS;
}

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return on_device("stream_priority_range", device, [&](Device*) -> accel_status_t {
    if (least) *least = kLeast;
    if (greatest) *greatest = kGreatest;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* out) {
  return on_device("stream_create", device, [&](Device* d) -> accel_status_t {
    if (out == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_create: out is NULL");
    Stream* s = nullptr;
    accel_status_t st =
        stream_create_internal(d, std::clamp(priority, kGreatest, kLeast), false, &s);
    if (st == ACCEL_SUCCESS) *out = s;
    return st;
  });
}

accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* out) {
  return on_device("default_stream", device, [&](Device* d) -> accel_status_t {
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
    Queue* q = s->q.get();
    SlotRef last;
    {
      std::lock_guard lock(q->mu);
      s->dying = true;
      // Work the program appended directly is waited for too: the list must
      // not be destroyed under it.
      if (queue_fence(q, &last) != ACCEL_SUCCESS) {
        accel::plugin::log(ACCEL_LOG_WARN,
                           "destroyed stream of %s: no marker could be appended after the "
                           "program's own commands; waiting for accel's latest command only",
                           s->dev->label());
        last = q->last;
      }
    }
    if (!last || ze.zeEventQueryStatus(last->ev) == ZE_RESULT_SUCCESS) {
      free_stream(s);
      return ACCEL_SUCCESS;
    }
    // Queued work still completes: a reaper thread waits for it, then frees
    // the stream and, with the last stream using it, the list (Level Zero
    // forbids destroying a list the device still uses).
    std::thread([s, last] {
      if (!vendor_enter()) park_forever();  // the process is exiting
      if (ze_result_t r = ze.zeEventHostSynchronize(last->ev, UINT64_MAX); r != ZE_RESULT_SUCCESS)
        accel::plugin::log(
            ACCEL_LOG_WARN, "destroyed stream of %s: %s", s->dev->label(),
            vendor_failure("zeEventHostSynchronize", r, s->dev->driver->handle).c_str());
      free_stream(s);
      vendor_leave();
    }).detach();
    return ACCEL_SUCCESS;
  });
}

// An exported list may hold the program's commands after accel's latest
// one: once accel's own work is done, a marker answers for the rest.
accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    Queue* q = s->q.get();
    SlotRef marker;
    {
      std::lock_guard lock(q->mu);
      if (q->last) {
        if (accel_status_t st = query_slot(q->last); st != ACCEL_SUCCESS) return st;
      }
      if (!q->exported.load(std::memory_order_acquire)) {
        q->held.clear();
        return ACCEL_SUCCESS;
      }
      if (accel_status_t st = queue_fence(q, &marker); st != ACCEL_SUCCESS) return st;
    }
    ze_result_t r = ze.zeEventHostSynchronize(marker->ev, kQueryMarkerWaitNs);
    if (r == ZE_RESULT_NOT_READY) return ACCEL_ERROR_NOT_READY;  // an answer: no detail
    if (r != ZE_RESULT_SUCCESS)
      return vendor_fail("zeEventHostSynchronize", r, s->dev->driver->handle);
    std::lock_guard lock(q->mu);
    prune_held(q);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_synchronize(accel_plugin_stream_t stream) {
  return guarded("stream_synchronize", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    Queue* q = s->q.get();
    SlotRef last;
    {
      std::lock_guard lock(q->mu);
      if (accel_status_t st = queue_fence(q, &last); st != ACCEL_SUCCESS) return st;
    }
    if (!last) return ACCEL_SUCCESS;
    accel_status_t st = wait_slot(last);
    if (st == ACCEL_SUCCESS) {
      std::lock_guard lock(q->mu);
      prune_held(q);
    }
    return st;
  });
}

accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    Queue* q = s->q.get();
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
    std::lock_guard lock(q->mu);
    prune_held(q);
    ze_event_handle_t ev = rec->ev;
    ze_result_t r = ze.zeCommandListAppendWaitOnEvents(q->list, 1, &ev);
    if (r != ZE_RESULT_SUCCESS)
      return vendor_fail("zeCommandListAppendWaitOnEvents", r, s->dev->driver->handle);
    q->held.push_back(std::move(rec));
    // A signal after the wait: the stream is idle only once the wait passed.
    return queue_append(q, "zeCommandListAppendSignalEvent", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendSignalEvent(q->list, sig);
    });
  });
}

}  // namespace accel::level_zero
