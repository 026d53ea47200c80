// Host functions in stream order.
//
// Submitting a host function enqueues a marker M (it completes when all
// earlier work on the stream has) and closes the stream's gate, one of two
// ways (Device::device_gates):
//  - device gate: a barrier B waiting on a user event U follows M on the
//    queue, so everything enqueued after it, by accel or by the program on
//    the exported queue, waits on the device until U is completed;
//  - host gate (PoCL's basic device, where completing a user event that a
//    command waits on hangs): later operations of accel are deferred on the
//    host (see streams.cpp).
// M's completion callback runs on a driver thread (PoCL: its own, or for the
// `basic` device the enqueuing thread itself), where blocking or calling
// OpenCL is undefined, so it only hands the task to a plugin worker thread.
// The worker runs fn(user_data), then opens the gate: completes U, or
// submits the deferred work. There is a worker per outstanding host function
// (threads are started at submission, never in the callback), so a function
// that waits for another stream's host function cannot starve the pool. Idle
// workers exit after a few seconds, except once the process is exiting.
#include "backend.hpp"

#include <chrono>
#include <condition_variable>
#include <thread>

namespace accel::opencl {
namespace {

struct Task {
  accel_host_fn fn = nullptr;
  void* user_data = nullptr;
  accel_host_fn discard = nullptr;  // instead of fn when earlier work failed (plugin steps)
  Stream* stream = nullptr;         // holds a reference
  cl_event marker = nullptr;        // M, owned
  cl_event gate = nullptr;          // U of a device gate, owned; null with the host gate
  cl_int marker_status = CL_COMPLETE;
  Task* next = nullptr;  // ready list (intrusive: posting never allocates)
};

struct Executor {
  std::mutex mu;
  std::condition_variable cv;
  Task* head = nullptr;
  Task* tail = nullptr;
  size_t threads = 0;
  size_t outstanding = 0;  // launched and not finished
  bool exiting = false;    // set at exit: idle workers stay (see AtExit)
};

// Never destroyed: workers may still be waiting on it at exit.
Executor& executor() {
  static Executor* x = new Executor();
  return *x;
}

// Runs among the exit-time destructors, before LeakSanitizer's exit check
// (registered earlier, so run later). From then on an idle worker keeps
// waiting instead of exiting: a thread ending while LSan stops the world to
// scan it makes LSan's tracer fault ("LeakSanitizer has encountered a fatal
// error"), and a worker's idle timeout may end it just then.
struct AtExit {
  ~AtExit() {
    Executor& x = executor();
    std::lock_guard<std::mutex> lock(x.mu);
    x.exiting = true;
  }
} at_exit;

// Completes a device gate's user event (releasing the caller's reference):
// the barrier waiting on it, and everything after it on the queue, may run.
void open_gate(cl_event gate) {
  cl_int err = clSetUserEventStatus(gate, CL_COMPLETE);
  if (err != CL_SUCCESS)
    log_vendor_failure(ACCEL_LOG_ERROR, "clSetUserEventStatus", err,
                       "(opening a host function's gate; the stream stays blocked)");
  clReleaseEvent(gate);
}

void run(Task* t) {
  Stream* s = t->stream;
  if (t->marker_status == CL_COMPLETE) {
    try {
      t->fn(t->user_data);
    } catch (...) {
      accel::plugin::log(ACCEL_LOG_ERROR, "a host function on device %d threw a C++ exception",
                         s->dev->index);
    }
  } else {
    // Earlier work on the stream failed: skip the function, report it.
    if (t->discard) t->discard(t->user_data);
    std::string msg = "host function skipped: " +
                      accel::plugin::vendor_failure_message(
                          "earlier work on the stream", cl_error_name(t->marker_status),
                          t->marker_status, cl_error_text(t->marker_status));
    std::lock_guard<std::mutex> lock(s->mu);
    stream_defer_error(s, ACCEL_ERROR_BACKEND_FAILURE, msg);
  }
  if (t->gate) {
    open_gate(t->gate);
  } else {
    stream_resume(s);
  }
  stream_unref(s);
  clReleaseEvent(t->marker);
  delete t;
}

void worker() {
  Executor& x = executor();
  std::unique_lock<std::mutex> lock(x.mu);
  for (;;) {
    if (!x.head) {
      bool woke = x.cv.wait_for(lock, std::chrono::seconds(5), [&] { return x.head != nullptr; });
      if (!woke) {
        if (x.threads > x.outstanding && !x.exiting) {
          --x.threads;
          return;
        }
        continue;
      }
    }
    Task* t = x.head;
    x.head = t->next;
    if (!x.head) x.tail = nullptr;
    lock.unlock();
    try {
      run(t);
    } catch (...) {
      accel::plugin::log(ACCEL_LOG_ERROR, "host function worker: internal error");
    }
    lock.lock();
    --x.outstanding;
  }
}

// Counts one more outstanding host function and makes sure a worker exists
// for it. Runs where the host function is submitted (never in a callback).
accel_status_t reserve() {
  Executor& x = executor();
  std::lock_guard<std::mutex> lock(x.mu);
  ++x.outstanding;
  if (x.threads < x.outstanding) {
    try {
      std::thread(worker).detach();
      ++x.threads;
    } catch (...) {
      --x.outstanding;
      return fail(ACCEL_ERROR_BACKEND_FAILURE, "launch_host_func: cannot start a worker thread");
    }
  }
  return ACCEL_SUCCESS;
}

void unreserve() {
  Executor& x = executor();
  std::lock_guard<std::mutex> lock(x.mu);
  --x.outstanding;
}

// OpenCL callback (driver thread): queue the task for a worker, nothing else.
void CL_CALLBACK on_marker(cl_event, cl_int status, void* data) {
  auto* t = static_cast<Task*>(data);
  t->marker_status = status;
  Executor& x = executor();
  {
    std::lock_guard<std::mutex> lock(x.mu);
    t->next = nullptr;
    if (x.tail)
      x.tail->next = t;
    else
      x.head = t;
    x.tail = t;
  }
  x.cv.notify_one();
}

}  // namespace

accel_status_t hostfn_submit(Stream* s, const Op& op) {
  accel_status_t st = reserve();
  if (st != ACCEL_SUCCESS) return st;
  std::unique_ptr<Task> t;
  try {
    t = std::make_unique<Task>();
  } catch (...) {
    unreserve();
    throw;
  }
  cl_int err = CL_SUCCESS;
  cl_event gate = nullptr;
  if (s->dev->device_gates) {
    gate = clCreateUserEvent(s->context, &err);
    if (!gate || err != CL_SUCCESS) {
      unreserve();
      return vendor_fail("clCreateUserEvent", err);
    }
  }
  cl_event marker = nullptr;
  err = clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &marker);
  if (err != CL_SUCCESS) {
    if (gate) open_gate(gate);
    unreserve();
    return vendor_fail("clEnqueueMarkerWithWaitList", err);
  }
  cl_event latest = marker;  // the stream's latest command: M, or B after it
  if (gate) {
    cl_event barrier = nullptr;
    err = clEnqueueBarrierWithWaitList(s->queue, 1, &gate, &barrier);
    if (err != CL_SUCCESS) {
      open_gate(gate);
      clReleaseEvent(marker);
      unreserve();
      return vendor_fail("clEnqueueBarrierWithWaitList (a host function's gate)", err);
    }
    latest = barrier;
  } else {
    clRetainEvent(marker);  // one for the stream's latest command, one for the task
  }
  // A failed flush does not unqueue anything: the task below still runs, so
  // the failure is reported by the stream's next query or synchronize.
  if (stream_commit(s, latest) != ACCEL_SUCCESS)
    stream_defer_error(s, ACCEL_ERROR_BACKEND_FAILURE,
                       "clFlush failed after queueing a host function (see the log)");
  t->fn = op.fn;
  t->user_data = op.user_data;
  t->discard = op.discard;
  t->stream = s;
  t->marker = marker;
  t->gate = gate;
  stream_ref(s);
  // The callback may fire inside this call when the marker is already
  // complete (PoCL's basic device runs commands in the enqueuing thread);
  // it only posts the task, and the worker waits for s->mu, held here.
  err = clSetEventCallback(marker, CL_COMPLETE, on_marker, t.get());
  if (err != CL_SUCCESS) {
    stream_unref(s);            // the caller still holds a reference
    if (gate) open_gate(gate);  // nothing will run fn: do not leave the queue blocked
    clReleaseEvent(marker);
    unreserve();
    return vendor_fail("clSetEventCallback", err);
  }
  t.release();  // the worker owns it now
  if (!gate) s->blocked = true;
  return ACCEL_SUCCESS;
}

accel_status_t stream_step(Stream* s, accel_host_fn fn, accel_host_fn discard, void* data) {
  Op op;
  op.kind = Op::HostFn;
  op.fn = fn;
  op.discard = discard;
  op.user_data = data;
  return stream_enqueue(s, std::move(op));
}

accel_status_t op_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn,
                                   void* user_data) {
  return guarded("launch_host_func", [&]() -> accel_status_t {
    // The program's host function: a step with nothing to discard.
    return stream_step(stream_of(stream), fn, nullptr, user_data);
  });
}

}  // namespace accel::opencl
