// Host functions: the stream's list signals `ready` after all earlier work,
// then waits on `go`. A worker thread of the stream waits for `ready`
// (zeEventHostSynchronize), runs the function and host-signals `go`
// (zeEventHostSignal), so later work starts only after the function returned.
#include "backend.hpp"

namespace accel::level_zero {

namespace {

void worker_loop(Stream* s) {
  for (;;) {
    HostJob job;
    {
      std::unique_lock lock(s->job_mu);
      s->job_cv.wait(lock, [&] { return s->worker_stop || !s->jobs.empty(); });
      if (s->jobs.empty()) return;  // stop requested and nothing left
      job = std::move(s->jobs.front());
      s->jobs.pop_front();
    }
    if (!vendor_enter()) park_forever();  // the process is exiting
    ze_result_t r = ze.zeEventHostSynchronize(job.ready->ev, UINT64_MAX);
    vendor_leave();
    if (r != ZE_RESULT_SUCCESS)
      accel::plugin::log(
          ACCEL_LOG_ERROR, "host function on %s: %s; running it anyway", s->dev->label(),
          vendor_failure("zeEventHostSynchronize", r, s->dev->driver->handle).c_str());
    try {
      job.fn(job.user_data);
    } catch (...) {
      accel::plugin::log(ACCEL_LOG_ERROR, "host function on %s threw an exception (ignored)",
                         s->dev->label());
    }
    if (!vendor_enter()) park_forever();
    r = ze.zeEventHostSignal(job.go->ev);
    vendor_leave();
    if (r != ZE_RESULT_SUCCESS)
      accel::plugin::log(ACCEL_LOG_ERROR, "host function on %s: %s: the stream stays blocked",
                         s->dev->label(),
                         vendor_failure("zeEventHostSignal", r, s->dev->driver->handle).c_str());
  }
}

}  // namespace

void hostfn_stop_worker(Stream* s) {
  {
    std::lock_guard lock(s->job_mu);
    if (!s->worker_started) return;
    s->worker_stop = true;
  }
  s->job_cv.notify_all();
  if (s->worker.joinable()) s->worker.join();
}

accel_status_t op_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn,
                                   void* user_data) {
  return guarded("launch_host_func", [&]() -> accel_status_t {
    auto* s = static_cast<Stream*>(stream);
    if (fn == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_host_func: fn is NULL");
    Queue* q = s->q.get();
    std::lock_guard lock(q->mu);
    prune_held(q);
    {
      std::lock_guard jl(s->job_mu);
      if (!s->worker_started) {
        s->worker = std::thread(worker_loop, s);
        s->worker_started = true;
      }
    }
    HostJob job;
    job.fn = fn;
    job.user_data = user_data;
    if (accel_status_t st = s->dev->plain_slots->acquire(&job.go); st != ACCEL_SUCCESS) return st;
    // `ready`: signalled by the list once all earlier work is done.
    accel_status_t st = queue_append(
        q, "zeCommandListAppendSignalEvent",
        [&](ze_event_handle_t sig) { return ze.zeCommandListAppendSignalEvent(q->list, sig); });
    if (st != ACCEL_SUCCESS) return st;
    job.ready = q->last;
    ze_event_handle_t go = job.go->ev;
    ze_result_t r = ze.zeCommandListAppendWaitOnEvents(q->list, 1, &go);
    if (r != ZE_RESULT_SUCCESS)
      return vendor_fail("zeCommandListAppendWaitOnEvents", r, s->dev->driver->handle);
    job.go->armed = true;       // the worker will signal it
    q->held.push_back(job.go);  // the list waits on it: not recycled before it passed
    {
      std::lock_guard jl(s->job_mu);
      s->jobs.push_back(std::move(job));
    }
    s->job_cv.notify_one();
    // The stream is idle only once the wait has passed.
    return queue_append(q, "zeCommandListAppendSignalEvent", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendSignalEvent(q->list, sig);
    });
  });
}

}  // namespace accel::level_zero
