// Native handles (ABI 1.1): the stream's cl_command_queue, streams made from
// a queue the program created (or got from accel), and stream_query of a
// stream whose queue the program has.
//
// The stream's cl_command_queue is the queue every operation of the stream
// is enqueued to, in order, so a program may enqueue on it directly
// (README.md, "Native handles", says exactly what is ordered). Once the
// queue has been handed out, stream_query no longer trusts the latest
// command accel knows of: it probes with a marker, which completes only
// after whatever the program enqueued.
#include "backend.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace accel::opencl {
namespace {

// How long stream_query of an exported stream waits for its probe marker
// when everything accel knows of has completed: on an idle queue the marker
// completes within microseconds; a probe still pending after this means the
// program's own work is running (or the driver is badly starved) and the
// answer is NOT_READY.
constexpr auto kProbeWait = std::chrono::milliseconds(20);

}  // namespace

// stream_query once the program has the queue: the latest command accel
// enqueued says nothing about commands the program enqueued after it, so
// once that one has completed a marker is enqueued as the stream's latest
// command (it completes after everything before it, the program's work
// included) and its status is the answer.

accel_status_t stream_query_exported(Stream* s) {
  cl_event ev = nullptr;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->blocked || !s->deferred.empty()) return ACCEL_ERROR_NOT_READY;
    if (s->last && !s->last_complete) {
      clRetainEvent(s->last);
      ev = s->last;
    }
  }
  if (ev) {  // accel's own latest command first: no probe while it runs
    accel_status_t st = event_state(ev, "the stream's latest command");
    clReleaseEvent(ev);
    if (st != ACCEL_SUCCESS) return st;
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->blocked || !s->deferred.empty()) return ACCEL_ERROR_NOT_READY;
    cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &ev);
    if (err != CL_SUCCESS) return vendor_fail("clEnqueueMarkerWithWaitList (stream_query)", err);
    clRetainEvent(ev);  // one for the stream's latest command, one for here
    if (accel_status_t st = stream_commit(s, ev); st != ACCEL_SUCCESS) {
      clReleaseEvent(ev);
      return st;
    }
  }
  accel_status_t st = event_state(ev, "the stream's latest command");
  const auto until = std::chrono::steady_clock::now() + kProbeWait;
  auto nap = std::chrono::microseconds(5);
  while (st == ACCEL_ERROR_NOT_READY && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(500));
    st = event_state(ev, "the stream's latest command");
  }
  if (st == ACCEL_SUCCESS) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->last == ev) s->last_complete = true;
  }
  clReleaseEvent(ev);
  if (st != ACCEL_SUCCESS) return st;
  return stream_take_deferred_error(s);
}

namespace {

template <class T>
cl_int queue_info(cl_command_queue q, cl_command_queue_info what, T* out) {
  return clGetCommandQueueInfo(q, what, sizeof *out, out, nullptr);
}

accel_status_t refuse_queue(cl_command_queue q, const char* call, cl_int err) {
  return fail(
      ACCEL_ERROR_INVALID_ARGUMENT,
      "stream_from_native: %p is not a command queue OpenCL accepts: %s", q,
      accel::plugin::vendor_failure_message(call, cl_error_name(err), err, cl_error_text(err))
          .c_str());
}

// "device 1 'pthread-...'" for an accel device, else the device's own name.
std::string describe_device(cl_device_id id) {
  std::vector<Device*>* devs = nullptr;
  if (enumerate(devs) == ACCEL_SUCCESS)
    for (Device* d : *devs)
      if (d->id == id) return "OpenCL " + d->label();
  char name[256] = {};
  clGetDeviceInfo(id, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  return format("OpenCL device '%s', which accel does not list", name);
}

// Checks what OpenCL lets us check of a program's queue for `dev`: its
// device, its context (accel's, where accel's memory and events are valid)
// and its properties (in order, host-side). *props: CL_QUEUE_PROPERTIES.
accel_status_t check_native_queue(Device* dev, cl_context ctx, cl_command_queue q,
                                  cl_command_queue_properties* props) {
  cl_device_id qdev = nullptr;
  if (cl_int err = queue_info(q, CL_QUEUE_DEVICE, &qdev); err != CL_SUCCESS)
    return refuse_queue(q, "clGetCommandQueueInfo(CL_QUEUE_DEVICE)", err);
  if (qdev != dev->id)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                "stream_from_native: the cl_command_queue belongs to %s (CL_QUEUE_DEVICE), "
                "not to OpenCL %s",
                describe_device(qdev).c_str(), dev->label().c_str());
  cl_context qctx = nullptr;
  if (cl_int err = queue_info(q, CL_QUEUE_CONTEXT, &qctx); err != CL_SUCCESS)
    return refuse_queue(q, "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)", err);
  if (qctx != ctx)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                "stream_from_native: the cl_command_queue's context %p (CL_QUEUE_CONTEXT) is "
                "not accel's context %p of OpenCL %s: accel's memory (SVM pointers) and events "
                "are valid only there; create the queue in the context "
                "accel_device_native_handle gives",
                static_cast<void*>(qctx), static_cast<void*>(ctx), dev->label().c_str());
  if (cl_int err = queue_info(q, CL_QUEUE_PROPERTIES, props); err != CL_SUCCESS)
    return refuse_queue(q, "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", err);
  if (*props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "stream_from_native: the cl_command_queue is out of order "
                "(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE); an accel stream runs its work in "
                "order: create the queue without that property");
  if (*props & CL_QUEUE_ON_DEVICE)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "stream_from_native: the cl_command_queue is a device-side queue "
                "(CL_QUEUE_ON_DEVICE); the host cannot enqueue on it");
  return ACCEL_SUCCESS;
}

// A wrapper of the live stream state that already runs on `q` (accel's own
// queue, or one wrapped before), so both handles keep one order; null when
// no live state runs on it. own: the wrapper releases one reference of the
// queue when destroyed. Caller holds dev->mu.
Stream* wrap_shared_queue(Device* dev, cl_command_queue q, bool own) {
  for (Stream* t : dev->streams) {
    if (t->queue != q) continue;
    int r = t->refs.load();
    while (r > 0 && !t->refs.compare_exchange_weak(r, r + 1)) {
    }
    if (r == 0) continue;  // its last reference is being dropped right now
    Stream* w = nullptr;
    try {
      w = new Stream();
    } catch (...) {
      t->refs.fetch_sub(1);  // cannot reach 0: the stream is live
      throw;
    }
    w->dev = dev;
    w->target = t;
    w->release_queue = own;
    t->exported.store(true, std::memory_order_release);
    return w;
  }
  return nullptr;
}

// A stream state of its own for a queue of the program's. It holds one
// reference of the queue: the program's given with ownership (own), else
// one of its own (the program's stays the program's). Caller holds dev->mu.
accel_status_t adopt_native_queue(Device* dev, cl_context ctx, cl_command_queue q,
                                  cl_command_queue_properties props, bool own, Stream** out) {
  if (!own) {
    if (cl_int err = clRetainCommandQueue(q); err != CL_SUCCESS)
      return vendor_fail("clRetainCommandQueue", err);
  }
  Stream* s = nullptr;
  try {
    s = add_stream_state(dev, q, ctx);
  } catch (...) {
    if (!own) clReleaseCommandQueue(q);
    throw;
  }
  s->profiling = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
  s->exported.store(true, std::memory_order_relaxed);
  *out = s;
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t op_stream_from_native(int32_t device, const accel_native_handle_t* native,
                                     uint32_t flags, accel_plugin_stream_t* stream) {
  return on_device("stream_from_native", device, [&](Device* dev) -> accel_status_t {
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
    auto q = static_cast<cl_command_queue>(native->handle);
    cl_command_queue_properties props = 0;
    if (accel_status_t st = check_native_queue(dev, ctx, q, &props); st != ACCEL_SUCCESS) return st;
    const bool own = (flags & ACCEL_NATIVE_TAKE_OWNERSHIP) != 0;
    std::lock_guard<std::mutex> lock(dev->mu);
    if (Stream* w = wrap_shared_queue(dev, q, own)) {
      *stream = w;
      return ACCEL_SUCCESS;
    }
    Stream* s = nullptr;
    accel_status_t st = adopt_native_queue(dev, ctx, q, props, own, &s);
    if (st == ACCEL_SUCCESS) *stream = s;
    return st;
  });
}

accel_status_t op_stream_native_handle(accel_plugin_stream_t stream, accel_native_handle_t* out) {
  return guarded("stream_native_handle", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    // From now on the program may enqueue on the queue itself.
    s->exported.store(true, std::memory_order_release);
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_OPENCL, s->queue, s->context, -1);
  });
}

}  // namespace accel::opencl
