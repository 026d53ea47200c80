// Streams: in-order, profiling-enabled command queues; their creation,
// destruction (with the retirement of queues that still run work),
// priorities, query, synchronize and waits on events. The host-side gate
// that holds back a stream's work is in gate.cpp, native queues in
// interop.cpp.
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
#include <condition_variable>
#include <deque>
#include <new>
#include <thread>

namespace accel::opencl {
namespace {

Stream* as_stream(accel_plugin_stream_t s) { return stream_of(s); }

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
    std::lock_guard<std::mutex> lock(dev->mu);
    s = add_stream_state(dev, q, ctx);
    s->priority = priority;
    s->is_default = is_default;
  } catch (...) {
    clReleaseCommandQueue(q);
    throw;
  }
  *out = s;
  return ACCEL_SUCCESS;
}

// The latest command's event of a stream, retained (null if none).
cl_event retained_last(Stream* s) {
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->last) clRetainEvent(s->last);
  return s->last;
}

void release_retired(const Device::Retired& r) {
  clReleaseEvent(r.marker);
  cl_int err = clReleaseCommandQueue(r.queue);
  if (err != CL_SUCCESS)
    log_vendor_failure(ACCEL_LOG_WARN, "clReleaseCommandQueue", err, "(a destroyed stream's)");
}

// Moves the entries of dev->retired whose marker has completed (or failed:
// nothing more will run) to `done`. Caller holds dev->mu.
void take_finished(Device* dev, std::vector<Device::Retired>& done) {
  auto& v = dev->retired;
  for (auto it = v.begin(); it != v.end();) {
    // Asked directly, not through event_state: a failed command here is no
    // error of the call that prunes.
    cl_int status = CL_COMPLETE;
    cl_int err = clGetEventInfo(it->marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                &status, nullptr);
    if (err != CL_SUCCESS || status == CL_COMPLETE || status < 0) {
      done.push_back(*it);
      it = v.erase(it);
    } else {
      ++it;
    }
  }
}

// Releases each retired queue soon after its marker completed, without
// waiting for a later destroy or device_synchronize to notice: a program's
// own queue (stream_from_native) goes back to the references it had. One
// thread for the process, started by the first retirement and never
// stopped (it sleeps when there is nothing to wait for); never destroyed,
// as the host-function executor.
struct Reaper {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<Device*, cl_event>> pending;  // the reaper's own marker references
  bool started = false;
};

Reaper& reaper() {
  static auto* r = new Reaper();
  return *r;
}

void reaper_loop() {
  Reaper& r = reaper();
  for (;;) {
    std::pair<Device*, cl_event> next;
    {
      std::unique_lock<std::mutex> lock(r.mu);
      r.cv.wait(lock, [&] { return !r.pending.empty(); });
      next = r.pending.front();
      r.pending.pop_front();
    }
    // The marker's own failure is the destroyed stream's: nobody to tell.
    cl_event marker = next.second;
    cl_int err = clWaitForEvents(1, &marker);
    cl_int status = CL_COMPLETE;
    if (err == CL_SUCCESS)
      clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    // clWaitForEvents may return early (PoCL's basic device): poll then.
    while (status > CL_COMPLETE && err == CL_SUCCESS) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      err = clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                           nullptr);
    }
    clReleaseEvent(marker);
    std::vector<Device::Retired> done;
    try {
      std::lock_guard<std::mutex> lock(next.first->mu);
      take_finished(next.first, done);
    } catch (const std::bad_alloc&) {
      // A later destroy or device_synchronize releases them.
    }
    for (const auto& d : done) release_retired(d);
  }
}

// Hands `marker` (one reference, the reaper's) to the reaper thread; false
// when it cannot take it (no thread, no memory): the caller releases it and
// a later destroy or device_synchronize releases the queue.
bool reap_later(Device* dev, cl_event marker) {
  Reaper& r = reaper();
  try {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.started) {
      std::thread(reaper_loop).detach();
      r.started = true;
    }
    r.pending.emplace_back(dev, marker);
  } catch (...) {
    return false;
  }
  r.cv.notify_one();
  return true;
}

// Gives up the state's one reference of `queue` (the creation's for accel's
// own queues, the program's for a queue given with
// ACCEL_NATIVE_TAKE_OWNERSHIP, the one stream_from_native took with
// clRetainCommandQueue otherwise). Queued work still completes, OpenCL
// keeping a released queue until its commands are done; while they may
// still run, the reference is kept in dev->retired, with a marker after
// them, for device_synchronize. Releases retired queues that are done.
void retire_queue(Device* dev, cl_command_queue queue) {
  cl_event marker = nullptr;
  cl_int err = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker);
  if (err == CL_SUCCESS) err = clFlush(queue);
  if (err != CL_SUCCESS) {
    log_vendor_failure(ACCEL_LOG_WARN, "clEnqueueMarkerWithWaitList", err,
                       "(destroying a stream: device_synchronize will not wait for its last "
                       "commands)");
  }
  // The reaper's reference, taken before the entry is published: once it
  // is in dev->retired another thread may release the list's.
  if (marker != nullptr) clRetainEvent(marker);
  std::vector<Device::Retired> done;
  bool kept = false;
  try {
    std::lock_guard<std::mutex> lock(dev->mu);
    take_finished(dev, done);
    if (marker != nullptr) {
      dev->retired.push_back(Device::Retired{queue, marker});
      kept = true;
    }
  } catch (const std::bad_alloc&) {
    log_vendor_failure(ACCEL_LOG_WARN, "clEnqueueMarkerWithWaitList", CL_OUT_OF_HOST_MEMORY,
                       "(destroying a stream: no memory to keep its queue for "
                       "device_synchronize)");
  }
  for (const auto& r : done) release_retired(r);
  if (kept) {
    if (!reap_later(dev, marker)) clReleaseEvent(marker);
    return;
  }
  if (marker != nullptr) {
    clReleaseEvent(marker);  // the reaper's
    clReleaseEvent(marker);
  }
  err = clReleaseCommandQueue(queue);
  if (err != CL_SUCCESS)
    log_vendor_failure(ACCEL_LOG_WARN, "clReleaseCommandQueue", err, "(destroying a stream)");
}

}  // namespace

Stream* add_stream_state(Device* dev, cl_command_queue queue, cl_context ctx) {
  auto s = std::make_unique<Stream>();
  s->dev = dev;
  s->queue = queue;
  s->context = ctx;
  dev->streams.push_back(s.get());
  return s.release();
}

void stream_ref(Stream* s) { s->refs.fetch_add(1, std::memory_order_relaxed); }

void stream_unref(Stream* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  {
    std::lock_guard<std::mutex> lock(s->dev->mu);
    auto& v = s->dev->streams;
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
  }
  if (s->last_rec)
    s->last_rec.reset();  // `last` was the record's
  else if (s->last)
    clReleaseEvent(s->last);
  retire_queue(s->dev, s->queue);
  delete s;
}

accel_status_t finish_retired(Device* dev) {
  std::vector<Device::Retired> pending;
  {
    std::lock_guard<std::mutex> lock(dev->mu);
    pending = dev->retired;
    // Our own references: another thread may release the list's meanwhile.
    for (const auto& r : pending) {
      clRetainCommandQueue(r.queue);
      clRetainEvent(r.marker);
    }
  }
  accel_status_t result = ACCEL_SUCCESS;
  for (const auto& r : pending) {
    cl_int err = clFinish(r.queue);
    accel_status_t st = err == CL_SUCCESS
                            ? wait_event(r.marker, "a destroyed stream's last command")
                            : vendor_fail("clFinish", err);
    if (st != ACCEL_SUCCESS && result == ACCEL_SUCCESS) result = st;
    release_retired(r);
  }
  std::vector<Device::Retired> done;
  {
    std::lock_guard<std::mutex> lock(dev->mu);
    take_finished(dev, done);
  }
  for (const auto& r : done) release_retired(r);
  return result;
}

accel_status_t stream_commit(Stream* s, cl_event ev) {
  if (s->last_rec)
    s->last_rec.reset();  // `last` was borrowed from that record
  else if (s->last)
    clReleaseEvent(s->last);
  s->last = ev;
  s->last_complete = false;
  cl_int err = clFlush(s->queue);
  return err == CL_SUCCESS ? ACCEL_SUCCESS : vendor_fail("clFlush", err);
}

accel_status_t stream_finish(Stream* s) {
  stream_wait_ungated(s);
  cl_int err = clFinish(s->queue);
  if (err != CL_SUCCESS) return vendor_fail("clFinish", err);
  cl_event ev = retained_last(s);
  accel_status_t st = ACCEL_SUCCESS;
  if (ev) {
    st = wait_event(ev, "the stream's latest command");
    clReleaseEvent(ev);
  }
  if (st != ACCEL_SUCCESS) return st;
  return stream_take_deferred_error(s);
}

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return on_device("stream_priority_range", device, [&](Device* dev) -> accel_status_t {
    // With cl_khr_priority_hints: 1 LOW, 0 default (MED), -1 HIGH.
    *least = dev->priority_hints ? 1 : 0;
    *greatest = dev->priority_hints ? -1 : 0;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* out) {
  return on_device("stream_create", device, [&](Device* dev) -> accel_status_t {
    Stream* s = nullptr;
    accel_status_t st = make_stream(dev, priority, false, &s);
    if (st == ACCEL_SUCCESS) *out = s;
    return st;
  });
}

accel_status_t op_stream_destroy(accel_plugin_stream_t stream) {
  return guarded("stream_destroy", [&]() -> accel_status_t {
    auto* handle = static_cast<Stream*>(stream);
    if (handle->target) {
      // A wrapper: the state it shares lives on while others hold it.
      Stream* t = handle->target;
      if (handle->release_queue) {
        cl_int err = clReleaseCommandQueue(t->queue);  // the program's reference
        if (err != CL_SUCCESS)
          log_vendor_failure(ACCEL_LOG_WARN, "clReleaseCommandQueue", err,
                             "(destroying a stream that owned its queue)");
      }
      delete handle;
      stream_unref(t);
      return ACCEL_SUCCESS;
    }
    Stream* s = handle;
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
  return on_device("default_stream", device, [&](Device* dev) -> accel_status_t {
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
    if (s->exported.load(std::memory_order_acquire)) return stream_query_exported(s);
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
    return stream_take_deferred_error(s);
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

void discard_cross_device_wait(void* p) { delete static_cast<CrossDeviceWait*>(p); }

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
      accel_status_t st = stream_step(s, cross_device_wait, discard_cross_device_wait, w.get());
      if (st == ACCEL_SUCCESS) w.release();  // cross_device_wait owns it now
      return st;
    }
    return stream_enqueue(s, std::move(op));
  });
}

}  // namespace accel::opencl
