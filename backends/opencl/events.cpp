// Events. A record is a marker: on an in-order queue it completes when all
// earlier work has, and its CL_PROFILING_COMMAND_END is the timestamp. While
// the stream is held back by a host function the record waits, unsubmitted,
// in the stream's deferred list: the event then reads as not ready.
#include "ocl.hpp"

namespace accel_ocl {
namespace {

Event* as_event(accel_plugin_event_t e) { return static_cast<Event*>(e); }

std::shared_ptr<Record> current(Event* e) {
  std::lock_guard<std::mutex> lock(e->mu);
  return e->rec;
}

// SUCCESS with *ev retained when the record was submitted; NOT_READY while it
// is deferred; the submission's failure otherwise.
accel_status_t submitted_event(const std::shared_ptr<Record>& rec, Event* e, cl_event* ev) {
  std::lock_guard<std::mutex> lock(rec->mu);
  if (!rec->submitted) return ACCEL_ERROR_NOT_READY;
  if (!rec->ev)
    return fail(status_of(rec->error), "the event's record on %s was never submitted: %s (%d)",
                e->dev->label().c_str(), cl_error_name(rec->error), static_cast<int>(rec->error));
  clRetainEvent(rec->ev);
  *ev = rec->ev;
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* out) {
  return guarded("event_create", [&]() -> accel_status_t {
    accel_status_t st;
    Device* dev = checked_device(device, &st);
    if (!dev) return st;
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

accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) {
  return guarded("event_record", [&]() -> accel_status_t {
    Event* e = as_event(event);
    Op op;
    op.kind = Op::RecordEvent;
    op.rec = std::make_shared<Record>();
    std::shared_ptr<Record> rec = op.rec, old;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      old = e->rec;
      e->rec = rec;
    }
    accel_status_t st = stream_enqueue(static_cast<Stream*>(stream), std::move(op));
    if (st != ACCEL_SUCCESS) {
      std::lock_guard<std::mutex> lock(e->mu);
      if (e->rec == rec) e->rec = old;  // a failed record changes nothing
    }
    return st;
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
    accel_status_t st = submitted_event(rec, e, &ev);
    if (st != ACCEL_SUCCESS) return st;
    st = event_state(ev, "the event's record", e->dev->label());
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
    accel_status_t st = submitted_event(rec, e, &ev);
    if (st != ACCEL_SUCCESS) return st;
    st = wait_event(ev, "the event's record", e->dev->label());
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
    cl_event a = nullptr, b = nullptr;
    accel_status_t st = submitted_event(ra, es, &a);
    if (st == ACCEL_SUCCESS) st = submitted_event(rb, ee, &b);
    if (st == ACCEL_SUCCESS) st = event_state(a, "the start event's record", es->dev->label());
    if (st == ACCEL_SUCCESS) st = event_state(b, "the end event's record", ee->dev->label());
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
      return cl_fail("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", err, "on %s",
                     es->dev->label().c_str());
    double ns = t1 >= t0 ? static_cast<double>(t1 - t0) : -static_cast<double>(t0 - t1);
    *ms = static_cast<float>(ns / 1e6);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel_ocl
