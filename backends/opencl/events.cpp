// Events. A record is a marker: on an in-order queue it completes when all
// earlier work has (the program's own commands on the queue included), and
// its CL_PROFILING_COMMAND_END is the timestamp. While a stream with the
// host-side gate (PoCL's basic device) is held back by a host function, the
// record waits, unsubmitted, in the stream's deferred list: the event then
// reads as not ready, and it has no cl_event yet.
//
// Also the cl_event helpers streams use: execution status and waiting.
#include "backend.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace accel::opencl {
namespace {

Event* as_event(accel_plugin_event_t e) { return static_cast<Event*>(e); }

std::shared_ptr<Record> current(Event* e) {
  std::lock_guard<std::mutex> lock(e->mu);
  return e->rec;
}

// SUCCESS with *ev retained when the record was submitted; NOT_READY while it
// is deferred; the submission's failure otherwise.
accel_status_t submitted_event(const std::shared_ptr<Record>& rec, cl_event* ev) {
  std::lock_guard<std::mutex> lock(rec->mu);
  if (!rec->submitted) return ACCEL_ERROR_NOT_READY;
  // Its submission failed: report that failure again, in the same shape.
  if (!rec->ev) return vendor_fail("clEnqueueMarkerWithWaitList (the event's record)", rec->error);
  clRetainEvent(rec->ev);
  *ev = rec->ev;
  return ACCEL_SUCCESS;
}

// A record on a stream held back by a host function: a new record, made the
// event's at once (it reads as not ready until submitted), queued behind the
// gate. A failed enqueue changes nothing.
accel_status_t record_behind_gate(Event* e, Stream* s) {
  Op op;
  op.kind = Op::RecordEvent;
  op.rec = std::make_shared<Record>();
  std::shared_ptr<Record> rec = op.rec, old;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    old = e->rec;
    e->rec = rec;
  }
  accel_status_t st = stream_enqueue(s, std::move(op));
  if (st != ACCEL_SUCCESS) {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->rec == rec) e->rec = old;  // a failed record changes nothing
  }
  return st;
}

}  // namespace

accel_status_t event_state(cl_event ev, const char* what) {
  cl_int status = CL_COMPLETE;
  cl_int err =
      clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (err != CL_SUCCESS)
    return vendor_fail("clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", err);
  if (status == CL_COMPLETE) return ACCEL_SUCCESS;
  // A negative execution status is the command's own failure code: reported
  // in the vendor shape with the command in place of the call.
  if (status < 0)
    return accel::plugin::vendor_fail(ACCEL_ERROR_BACKEND_FAILURE, what, cl_error_name(status),
                                      status, cl_error_text(status));
  return ACCEL_ERROR_NOT_READY;
}

accel_status_t wait_event(cl_event ev, const char* what) {
  cl_int err = clWaitForEvents(1, &ev);
  accel_status_t st = event_state(ev, what);
  if (st != ACCEL_ERROR_NOT_READY) {
    if (st == ACCEL_SUCCESS && err != CL_SUCCESS) return vendor_fail("clWaitForEvents", err);
    return st;
  }
  // clWaitForEvents returned before the command completed (PoCL's basic
  // device does this for a command it cannot run yet): poll.
  accel::plugin::log(ACCEL_LOG_DEBUG, "clWaitForEvents returned early (%s) for %s; polling",
                     cl_error_name(err), what);
  auto nap = std::chrono::microseconds(50);
  while ((st = event_state(ev, what)) == ACCEL_ERROR_NOT_READY) {
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
  }
  return st;
}

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* out) {
  return on_device("event_create", device, [&](Device* dev) -> accel_status_t {
    auto* e = new Event();
    e->dev = dev;
    e->flags = flags;
    *out = e;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_destroy(accel_plugin_event_t event) {
  return guarded("event_destroy", [&]() -> accel_status_t {
    delete as_event(event);  // a deferred record lives on in its stream
    return ACCEL_SUCCESS;
  });
}

// The fast path (the stream is not held back by a host gate, the common
// case): the marker is enqueued and the record filled in before anyone else
// can see it, so the record's own lock and condition variable are not
// touched. The marker has one reference, the record's: the stream borrows
// it as its latest command and keeps the record alive instead
// (Stream::last_rec). The event's previous record is refilled in place when
// nothing else holds it, or only this stream as its latest command (no
// allocation per record: one pooled record per event). The event's lock is
// held across the stream's (the only place both are held; nothing takes
// them the other way round) so a concurrent query, wait or re-record of the
// same event sees the old record or the new one, never one being refilled.
accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  return guarded("event_record", [&]() -> accel_status_t {
    Event* e = as_event(event);
    Stream* s = stream_of(stream);
    cl_event replaced = nullptr;    // the refilled record's old marker
    cl_event old_last = nullptr;    // the stream's previous latest command (owned)
    std::shared_ptr<Record> spare;  // a new record; after the swap, the old one
    std::shared_ptr<Record> old_last_rec;
    bool recorded = false;
    {
      std::lock_guard<std::mutex> elock(e->mu);
      std::unique_lock<std::mutex> slock(s->mu);
      if (!s->blocked) {
        // Refill when only the event holds its record, or the event and
        // this stream (whose latest command is that record's marker: it is
        // replaced here under s->mu). Everything else that reads a record
        // (query, synchronize, elapsed time, a deferred wait) holds a copy
        // taken under e->mu, held here; the acquire fence pairs with the
        // release of the last other holder's reference.
        Record* reuse = nullptr;
        const long holders = e->rec ? e->rec.use_count() : 0;
        if (holders == 1 || (holders == 2 && s->last_rec == e->rec)) {
          std::atomic_thread_fence(std::memory_order_acquire);
          if (e->rec->submitted && e->rec->waiters.empty()) reuse = e->rec.get();
        }
        if (reuse == nullptr) spare = std::make_shared<Record>();
        cl_event ev = nullptr;
        cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &ev);
        // A failed record changes nothing (the event keeps its record).
        if (err != CL_SUCCESS) return vendor_fail("clEnqueueMarkerWithWaitList", err);
        err = clFlush(s->queue);
        if (err != CL_SUCCESS) {
          // The marker is queued: it is the stream's latest command (owned
          // by the stream), and the event keeps its record.
          if (s->last_rec) {
            old_last_rec = std::move(s->last_rec);
          } else {
            old_last = s->last;
          }
          s->last = ev;
          s->last_complete = false;
          slock.unlock();
          if (old_last != nullptr) clReleaseEvent(old_last);
          return vendor_fail("clFlush", err);
        }
        Record* r = reuse != nullptr ? reuse : spare.get();
        // The stream's previous latest command: the refilled record's old
        // marker (released once, below, as `replaced`), another record's
        // (that record is let go), or one the stream owns.
        if (s->last_rec) {
          if (s->last_rec.get() != r) old_last_rec = std::move(s->last_rec);
        } else {
          old_last = s->last;
        }
        replaced = r->ev;
        r->ev = ev;
        r->error = CL_SUCCESS;
        r->profiling = s->profiling;
        r->submitted = true;
        r->complete.store(false, std::memory_order_relaxed);
        if (reuse == nullptr) spare.swap(e->rec);
        s->last = ev;
        s->last_rec = e->rec;
        s->last_complete = false;
        recorded = true;
      }
    }
    // The stream is held back by a host function (host-side gate): the
    // record waits in the stream's deferred list, unsubmitted, as it always
    // has (this file's header).
    if (!recorded) return record_behind_gate(e, s);
    // Both locks are dropped before markers (and records: spare,
    // old_last_rec) are released: PoCL may free an event there.
    if (replaced != nullptr) clReleaseEvent(replaced);
    if (old_last != nullptr) clReleaseEvent(old_last);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_event_query(accel_plugin_event_t event) {
  return guarded("event_query", [&]() -> accel_status_t {
    Event* e = as_event(event);
    {
      // A record seen complete stays complete: answer without OpenCL.
      std::lock_guard<std::mutex> lock(e->mu);
      if (!e->rec || e->rec->complete.load(std::memory_order_acquire)) return ACCEL_SUCCESS;
    }
    std::shared_ptr<Record> rec = current(e);
    if (!rec) return ACCEL_SUCCESS;
    cl_event ev = nullptr;
    accel_status_t st = submitted_event(rec, &ev);
    if (st != ACCEL_SUCCESS) return st;
    st = event_state(ev, "the event's record");
    clReleaseEvent(ev);
    if (st == ACCEL_SUCCESS) rec->complete.store(true, std::memory_order_release);
    return st;
  });
}

accel_status_t op_event_synchronize(accel_plugin_event_t event) {
  return guarded("event_synchronize", [&]() -> accel_status_t {
    Event* e = as_event(event);
    std::shared_ptr<Record> rec = current(e);
    if (!rec) return ACCEL_SUCCESS;
    {
      std::unique_lock<std::mutex> lock(rec->mu);
      rec->cv.wait(lock, [&] { return rec->submitted; });
    }
    cl_event ev = nullptr;
    accel_status_t st = submitted_event(rec, &ev);
    if (st != ACCEL_SUCCESS) return st;
    st = wait_event(ev, "the event's record");
    clReleaseEvent(ev);
    return st;
  });
}

accel_status_t op_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                     float* ms) {
  return guarded("event_elapsed_time", [&]() -> accel_status_t {
    Event* es = as_event(start);
    Event* ee = as_event(end);
    if (!(es->flags & ACCEL_EVENT_ENABLE_TIMING) || !(ee->flags & ACCEL_EVENT_ENABLE_TIMING))
      return fail(ACCEL_ERROR_EVENT_NO_TIMING,
                  "elapsed_time needs both events created with ACCEL_EVENT_ENABLE_TIMING");
    std::shared_ptr<Record> ra = current(es), rb = current(ee);
    if (!ra || !rb)
      return fail(ACCEL_ERROR_EVENT_NOT_RECORDED, "elapsed_time: the %s event was never recorded",
                  !ra ? "start" : "end");
    for (const auto& r : {ra, rb}) {
      std::lock_guard<std::mutex> lock(r->mu);
      if (r->submitted && !r->profiling)
        return fail(ACCEL_ERROR_EVENT_NO_TIMING,
                    "elapsed_time: the %s event was recorded on a stream made from a "
                    "cl_command_queue without CL_QUEUE_PROFILING_ENABLE, which has no timestamps",
                    r == ra ? "start" : "end");
    }
    cl_event a = nullptr, b = nullptr;
    accel_status_t st = submitted_event(ra, &a);
    if (st == ACCEL_SUCCESS) st = submitted_event(rb, &b);
    if (st == ACCEL_SUCCESS) st = event_state(a, "the start event's record");
    if (st == ACCEL_SUCCESS) st = event_state(b, "the end event's record");
    cl_ulong t0 = 0, t1 = 0;
    cl_int err = CL_SUCCESS;
    if (st == ACCEL_SUCCESS) {
      err = clGetEventProfilingInfo(a, CL_PROFILING_COMMAND_END, sizeof t0, &t0, nullptr);
      if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(b, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
    }
    if (a) clReleaseEvent(a);
    if (b) clReleaseEvent(b);
    if (st == ACCEL_ERROR_NOT_READY)
      return fail(ACCEL_ERROR_NOT_READY, "elapsed_time: a recorded event has not completed yet");
    if (st != ACCEL_SUCCESS) return st;
    if (err != CL_SUCCESS)
      return vendor_fail("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", err);
    double ns = t1 >= t0 ? static_cast<double>(t1 - t0) : -static_cast<double>(t0 - t1);
    *ms = static_cast<float>(ns / 1e6);
    return ACCEL_SUCCESS;
  });
}

// The cl_event of the latest record (the marker), NULL before the first.
// A record held back behind a host function (host-side gate) has no marker
// yet: wait until it is submitted, as event_synchronize does.
accel_status_t op_event_native_handle(accel_plugin_event_t event, accel_native_handle_t* out) {
  return guarded("event_native_handle", [&]() -> accel_status_t {
    Event* e = as_event(event);
    std::shared_ptr<Record> rec = current(e);
    cl_event ev = nullptr;
    if (rec) {
      std::unique_lock<std::mutex> lock(rec->mu);
      rec->cv.wait(lock, [&] { return rec->submitted; });
      if (!rec->ev)
        return vendor_fail("clEnqueueMarkerWithWaitList (the event's record)", rec->error);
      ev = rec->ev;  // borrowed: the record keeps it until re-recorded or destroyed
    }
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(e->dev, &ctx); st != ACCEL_SUCCESS) return st;
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_OPENCL, ev, ctx, -1);
  });
}

}  // namespace accel::opencl
