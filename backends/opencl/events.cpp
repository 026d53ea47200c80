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
  return guarded("event_create", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
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
    accel_status_t st = stream_enqueue(stream_of(stream), std::move(op));
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
    out->type = ACCEL_NATIVE_OPENCL;
    out->handle = ev;
    out->context = ctx;
    out->ordinal = -1;
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::opencl
