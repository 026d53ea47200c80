// Streams: in-order, profiling-enabled command queues, plus the host-side
// gate that keeps host functions in stream order (see backend.hpp).
//
// Each stream remembers the cl_event of the latest command enqueued on it
// (every operation asks OpenCL for its event). The queue is in order, so that
// command's completion means everything submitted is done: stream_query asks
// for its execution status and enqueues nothing. Every enqueue is followed by
// clFlush so work starts without a blocking call and so events can be waited
// on from other queues (the OpenCL spec requires the flush for that).
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS  // clCreateCommandQueue for 1.x devices
#include "backend.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace accel::opencl {
namespace {

Stream* as_stream(accel_plugin_stream_t s) { return static_cast<Stream*>(s); }

// Creates the queue of a new stream. cl_khr_priority_hints: negative
// priorities are HIGH, positive LOW, 0 the driver default (MED); without the
// extension the priority is only recorded (a hint OpenCL cannot express).
accel_status_t make_stream(Device* dev, int32_t priority, bool is_default, Stream** out) {
  cl_context ctx = nullptr;
  accel_status_t st = device_context(dev, &ctx);
  if (st != ACCEL_SUCCESS) return st;
  cl_int err = CL_SUCCESS;
  cl_command_queue q = nullptr;
  if (dev->version_major >= 2) {
    cl_queue_properties props[5] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0, 0, 0};
    if (dev->priority_hints && priority != 0) {
      props[2] = CL_QUEUE_PRIORITY_KHR;
      props[3] = priority < 0 ? CL_QUEUE_PRIORITY_HIGH_KHR : CL_QUEUE_PRIORITY_LOW_KHR;
    }
    q = clCreateCommandQueueWithProperties(ctx, dev->id, props, &err);
    if (!q || err != CL_SUCCESS) return vendor_fail("clCreateCommandQueueWithProperties", err);
  } else {
    q = clCreateCommandQueue(ctx, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!q || err != CL_SUCCESS) return vendor_fail("clCreateCommandQueue", err);
  }
  Stream* s = nullptr;
  try {
    s = new Stream();
    s->dev = dev;
    s->queue = q;
    s->priority = priority;
    s->is_default = is_default;
    std::lock_guard<std::mutex> lock(dev->mu);
    dev->streams.push_back(s);
  } catch (...) {
    delete s;
    clReleaseCommandQueue(q);
    throw;
  }
  *out = s;
  return ACCEL_SUCCESS;
}

// Submits one operation; s->mu held and s not blocked. Records whose
// submission releases streams waiting on them are appended to `wake`.
// May leave the stream blocked (host function, wait on a pending record);
// *consumed is false when the op must stay at the front of the deferred list.
accel_status_t submit(Stream* s, Op& op, std::vector<Stream*>& wake, bool* consumed) {
  *consumed = true;
  cl_event ev = nullptr;
  cl_int err = CL_SUCCESS;
  switch (op.kind) {
    case Op::Copy:
      err = clEnqueueSVMMemcpy(s->queue, CL_FALSE, op.dst, op.src, op.bytes, 0, nullptr, &ev);
      if (err != CL_SUCCESS) return vendor_fail("clEnqueueSVMMemcpy", err);
      return stream_commit(s, ev);
    case Op::Fill:
      err = clEnqueueSVMMemFill(s->queue, op.dst, &op.pattern, 1, op.bytes, 0, nullptr, &ev);
      if (err != CL_SUCCESS) return vendor_fail("clEnqueueSVMMemFill", err);
      return stream_commit(s, ev);
    case Op::RecordEvent: {
      accel_status_t st = ACCEL_SUCCESS;
      err = clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &ev);
      if (err != CL_SUCCESS) {
        st = vendor_fail("clEnqueueMarkerWithWaitList", err);
        ev = nullptr;
      } else {
        clRetainEvent(ev);  // one reference for the stream, one for the record
        st = stream_commit(s, ev);
      }
      std::lock_guard<std::mutex> lock(op.rec->mu);
      op.rec->ev = ev;
      op.rec->error = err;
      op.rec->submitted = true;
      wake.insert(wake.end(), op.rec->waiters.begin(), op.rec->waiters.end());
      op.rec->waiters.clear();
      op.rec->cv.notify_all();
      return st;
    }
    case Op::WaitRecord: {
      cl_event dep = nullptr;
      {
        std::lock_guard<std::mutex> lock(op.rec->mu);
        if (!op.rec->submitted) {
          // The record is itself held back on another stream: wait for it.
          stream_ref(s);
          op.rec->waiters.push_back(s);
          s->blocked = true;
          *consumed = false;
          return ACCEL_SUCCESS;
        }
        dep = op.rec->ev;
        if (dep) clRetainEvent(dep);
      }
      if (!dep) return ACCEL_SUCCESS;  // its submission failed; reported there
      err = clEnqueueBarrierWithWaitList(s->queue, 1, &dep, &ev);
      clReleaseEvent(dep);
      if (err != CL_SUCCESS) return vendor_fail("clEnqueueBarrierWithWaitList", err);
      return stream_commit(s, ev);
    }
    case Op::HostFn:
      return hostfn_submit(s, op);
  }
  return fail(ACCEL_ERROR_INTERNAL, "unknown deferred operation %d", static_cast<int>(op.kind));
}

// Submits deferred operations until the stream blocks again or none is left.
void drain(Stream* s, std::vector<Stream*>& wake) {
  while (!s->blocked && !s->deferred.empty()) {
    bool consumed = true;
    accel_status_t st = submit(s, s->deferred.front(), wake, &consumed);
    if (st != ACCEL_SUCCESS) stream_defer_error(s, st, "a deferred operation failed (see the log)");
    if (consumed) s->deferred.pop_front();
  }
  if (!s->blocked && s->deferred.empty()) s->idle.notify_all();
}

// Resumes streams released by submitted records (each carries a reference).
void wake_all(std::vector<Stream*>& wake) {
  while (!wake.empty()) {
    Stream* w = wake.back();
    wake.pop_back();
    std::vector<Stream*> more;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->blocked = false;
      drain(w, more);
    }
    stream_unref(w);
    wake.insert(wake.end(), more.begin(), more.end());
  }
}

// Waits until nothing is deferred or held back on the stream.
void wait_ungated(Stream* s) {
  std::unique_lock<std::mutex> lock(s->mu);
  s->idle.wait(lock, [&] { return !s->blocked && s->deferred.empty(); });
}

// The latest command's event of a stream, retained (null if none).
cl_event retained_last(Stream* s) {
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->last) clRetainEvent(s->last);
  return s->last;
}

// Reports (and clears) the failure of a deferred submission, if any.
accel_status_t take_deferred_error(Stream* s) {
  std::lock_guard<std::mutex> lock(s->mu);
  accel_status_t st = s->deferred_status;
  if (st == ACCEL_SUCCESS) return st;
  std::string msg = s->deferred_message;
  s->deferred_status = ACCEL_SUCCESS;
  s->deferred_message.clear();
  return fail(st, msg);
}

}  // namespace

void stream_ref(Stream* s) { s->refs.fetch_add(1, std::memory_order_relaxed); }

void stream_unref(Stream* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  {
    std::lock_guard<std::mutex> lock(s->dev->mu);
    auto& v = s->dev->streams;
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
  }
  // Queued work still completes: clReleaseCommandQueue flushes, and the
  // driver keeps the queue until its commands are done.
  if (s->last) clReleaseEvent(s->last);
  cl_int err = clReleaseCommandQueue(s->queue);
  if (err != CL_SUCCESS)
    log_vendor_failure(ACCEL_LOG_WARN, "clReleaseCommandQueue", err, "(destroying a stream)");
  delete s;
}

accel_status_t stream_commit(Stream* s, cl_event ev) {
  if (s->last) clReleaseEvent(s->last);
  s->last = ev;
  s->last_complete = false;
  cl_int err = clFlush(s->queue);
  return err == CL_SUCCESS ? ACCEL_SUCCESS : vendor_fail("clFlush", err);
}

accel_status_t stream_finish(Stream* s) {
  wait_ungated(s);
  cl_int err = clFinish(s->queue);
  if (err != CL_SUCCESS) return vendor_fail("clFinish", err);
  cl_event ev = retained_last(s);
  accel_status_t st = ACCEL_SUCCESS;
  if (ev) {
    st = wait_event(ev, "the stream's latest command");
    clReleaseEvent(ev);
  }
  if (st != ACCEL_SUCCESS) return st;
  return take_deferred_error(s);
}

void stream_defer_error(Stream* s, accel_status_t st, const std::string& message) {
  accel::plugin::log(ACCEL_LOG_ERROR, "%s: %s", s->dev->label().c_str(), message.c_str());
  if (s->deferred_status == ACCEL_SUCCESS) {
    s->deferred_status = st;
    s->deferred_message = message;
  }
}

accel_status_t stream_enqueue(Stream* s, Op&& op) {
  std::vector<Stream*> wake;
  accel_status_t st = ACCEL_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->blocked) {
      s->deferred.push_back(std::move(op));
      return ACCEL_SUCCESS;
    }
    bool consumed = true;
    st = submit(s, op, wake, &consumed);
    if (!consumed) s->deferred.push_front(std::move(op));
  }
  wake_all(wake);
  return st;
}

void stream_resume(Stream* s) {
  std::vector<Stream*> wake;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->blocked = false;
    drain(s, wake);
  }
  wake_all(wake);
}

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return guarded("stream_priority_range", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    // With cl_khr_priority_hints: 1 LOW, 0 default (MED), -1 HIGH.
    *least = dev->priority_hints ? 1 : 0;
    *greatest = dev->priority_hints ? -1 : 0;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* out) {
  return guarded("stream_create", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    Stream* s = nullptr;
    accel_status_t st = make_stream(dev, priority, false, &s);
    if (st == ACCEL_SUCCESS) *out = s;
    return st;
  });
}

accel_status_t op_stream_destroy(accel_plugin_stream_t stream) {
  return guarded("stream_destroy", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    if (s->is_default)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "the default stream of %s cannot be destroyed",
                  s->dev->label().c_str());
    // Deferred work still runs: pending host functions and waits hold
    // references, and the last one releases the queue.
    stream_unref(s);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* out) {
  return guarded("default_stream", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    {
      std::lock_guard<std::mutex> lock(dev->mu);
      if (dev->default_stream) {
        *out = dev->default_stream;
        return ACCEL_SUCCESS;
      }
    }
    Stream* s = nullptr;
    accel_status_t st = make_stream(dev, 0, true, &s);
    if (st != ACCEL_SUCCESS) return st;
    bool lost = false;
    {
      std::lock_guard<std::mutex> lock(dev->mu);
      if (dev->default_stream)
        lost = true;  // another thread won the race
      else
        dev->default_stream = s;
      *out = dev->default_stream;
    }
    if (lost) stream_unref(s);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&]() -> accel_status_t {
    Stream* s = as_stream(stream);
    cl_event ev = nullptr;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (s->blocked || !s->deferred.empty()) return ACCEL_ERROR_NOT_READY;
      // Idle since the last query said so: no OpenCL call.
      if ((s->last == nullptr || s->last_complete) && s->deferred_status == ACCEL_SUCCESS)
        return ACCEL_SUCCESS;
      if (s->last) clRetainEvent(s->last);
      ev = s->last;
    }
    accel_status_t st = ACCEL_SUCCESS;
    if (ev) {
      st = event_state(ev, "the stream's latest command");
      if (st == ACCEL_SUCCESS) {
        std::lock_guard<std::mutex> lock(s->mu);
        if (s->last == ev) s->last_complete = true;  // still the latest command
      }
      clReleaseEvent(ev);
    }
    if (st != ACCEL_SUCCESS) return st;
    return take_deferred_error(s);
  });
}

accel_status_t op_stream_synchronize(accel_plugin_stream_t stream) {
  return guarded("stream_synchronize",
                 [&]() -> accel_status_t { return stream_finish(as_stream(stream)); });
}

namespace {

// A wait on a record of another device. Each device has its own context and
// an OpenCL event cannot be waited on from a queue of another context, so
// the wait happens on the host: a host-function step (which holds back the
// stream's later work, see hostfn.cpp) that blocks on its plugin worker
// until the record is submitted and its marker complete.
struct CrossDeviceWait {
  std::shared_ptr<Record> rec;
};

void cross_device_wait(void* p) {
  std::unique_ptr<CrossDeviceWait> w(static_cast<CrossDeviceWait*>(p));
  cl_event ev = nullptr;
  {
    std::unique_lock<std::mutex> lock(w->rec->mu);
    w->rec->cv.wait(lock, [&] { return w->rec->submitted; });
    ev = w->rec->ev;
    if (ev) clRetainEvent(ev);
  }
  if (ev == nullptr) return;  // its submission failed; reported on its stream
  cl_int err = clWaitForEvents(1, &ev);
  if (err != CL_SUCCESS)
    log_vendor_failure(ACCEL_LOG_WARN, "clWaitForEvents", err,
                       "(stream_wait_event across devices)");
  clReleaseEvent(ev);
}

}  // namespace

accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&]() -> accel_status_t {
    auto* e = static_cast<Event*>(event);
    Stream* s = as_stream(stream);
    Op op;
    op.kind = Op::WaitRecord;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      op.rec = e->rec;  // the record at the time of the call
    }
    if (!op.rec) return ACCEL_SUCCESS;  // never recorded: complete
    if (e->dev != s->dev) {
      auto w = std::make_unique<CrossDeviceWait>();
      w->rec = std::move(op.rec);
      Op step;
      step.kind = Op::HostFn;
      step.fn = cross_device_wait;
      step.user_data = w.get();
      accel_status_t st = stream_enqueue(s, std::move(step));
      if (st == ACCEL_SUCCESS) w.release();  // cross_device_wait owns it now
      return st;
    }
    return stream_enqueue(s, std::move(op));
  });
}

}  // namespace accel::opencl
