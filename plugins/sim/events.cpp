// events.cpp - events: a record is a marker task on the stream's worker,
// stamped with the steady clock when it runs (timing events).
#include "backend.hpp"

#include <utility>

namespace accel::sim {

namespace {

// Reads what elapsed_time needs from one event, checking each precondition
// (the core checks them too; a backend should not trust that blindly).
accel_status_t completed_timestamp(EventState& ev, const char* which,
                                   std::chrono::steady_clock::time_point* when) {
  if ((ev.flags & ACCEL_EVENT_ENABLE_TIMING) == 0)
    return fail(ACCEL_ERROR_EVENT_NO_TIMING,
                "event_elapsed_time: the %s event was created without ACCEL_EVENT_ENABLE_TIMING",
                which);
  std::lock_guard<std::mutex> lock(ev.mu);
  if (ev.latest == nullptr)
    return fail(ACCEL_ERROR_EVENT_NOT_RECORDED,
                "event_elapsed_time: the %s event was never recorded", which);
  if (!ev.latest->done)
    return fail(ACCEL_ERROR_NOT_READY,
                "event_elapsed_time: the %s event's record has not completed", which);
  *when = ev.latest->when;
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* event) {
  return guarded("event_create", [&] {
    if (event == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_create: event is NULL");
    if ((flags & ~static_cast<uint32_t>(ACCEL_EVENT_ENABLE_TIMING)) != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_create: unknown flag bits 0x%x",
                  static_cast<unsigned>(flags & ~static_cast<uint32_t>(ACCEL_EVENT_ENABLE_TIMING)));
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    auto box = std::make_unique<Event>();
    box->state = std::make_shared<EventState>(device, flags);
    *event = box.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_destroy(accel_plugin_event_t event) {
  return guarded("event_destroy", [&] {
    if (event == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_destroy: event is NULL");
    // Queued records and waits keep the shared state alive until they run.
    delete as_event(event);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  return guarded("event_record", [&] {
    if (stream == nullptr || event == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_record: NULL %s",
                  stream == nullptr ? "stream" : "event");
    Stream* s = as_stream(stream);
    std::shared_ptr<EventState> ev = as_event(event)->state;
    if (ev->device != s->device())
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "event_record: event of sim device %d, stream of sim device %d",
                  static_cast<int>(ev->device), static_cast<int>(s->device()));
    auto rec = std::make_shared<Record>();
    rec->worker = s->worker_id();
    // Enqueue first, publish second: if the enqueue fails the event keeps
    // its previous record instead of one that would never complete. The
    // event lock is not held across enqueue, which may block on a full queue
    // whose worker needs that lock to complete an earlier record.
    accel_status_t st = submit(
        s, "event_record",
        [ev, rec] {
          {
            std::lock_guard<std::mutex> lock(ev->mu);
            rec->when = std::chrono::steady_clock::now();
            rec->done = true;
          }
          ev->cv.notify_all();
        },
        /*marker=*/true);
    if (st != ACCEL_SUCCESS) return st;
    std::lock_guard<std::mutex> lock(ev->mu);
    ev->latest = std::move(rec);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_query(accel_plugin_event_t event) {
  return guarded("event_query", [&] {
    if (event == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_query: event is NULL");
    EventState& ev = *as_event(event)->state;
    std::lock_guard<std::mutex> lock(ev.mu);
    return (ev.latest == nullptr || ev.latest->done) ? ACCEL_SUCCESS : ACCEL_ERROR_NOT_READY;
  });
}

accel_status_t op_event_synchronize(accel_plugin_event_t event) {
  return guarded("event_synchronize", [&] {
    if (event == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_synchronize: event is NULL");
    EventState& ev = *as_event(event)->state;
    std::unique_lock<std::mutex> lock(ev.mu);
    std::shared_ptr<Record> rec = ev.latest;
    if (rec == nullptr || rec->done) return ACCEL_SUCCESS;
    if (rec->worker == std::this_thread::get_id())
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "event_synchronize: called from a host function on the stream the event is "
                  "recorded on, before the record; it would wait for itself");
    ev.cv.wait(lock, [&] { return rec->done; });
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                     float* ms) {
  return guarded("event_elapsed_time", [&] {
    if (start == nullptr || end == nullptr || ms == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_elapsed_time: NULL argument");
    // One event locked at a time (start may equal end), so no lock order.
    std::chrono::steady_clock::time_point t0, t1;
    accel_status_t st = completed_timestamp(*as_event(start)->state, "start", &t0);
    if (st != ACCEL_SUCCESS) return st;
    st = completed_timestamp(*as_event(end)->state, "end", &t1);
    if (st != ACCEL_SUCCESS) return st;
    *ms = static_cast<float>(std::chrono::duration<double, std::milli>(t1 - t0).count());
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::sim

namespace accel::sim {

// The sim event is the plugin's own Event object (see accel.h's table).
accel_status_t op_event_native_handle(accel_plugin_event_t event, accel_native_handle_t* out) {
  return guarded("event_native_handle", [&] {
    if (event == nullptr || out == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_native_handle: NULL argument");
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_SIM, event, nullptr,
                                             as_event(event)->state->device);
  });
}

}  // namespace accel::sim
