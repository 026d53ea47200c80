// Host-side gate: where a host function cannot hold back later work on the
// device (Device::device_gates false: PoCL's basic device, see backend.hpp
// and hostfn.cpp), an operation queued while a host function or a wait on a
// not yet submitted event record is pending is kept in the stream's deferred
// list, and submitted in order when the gate opens (stream_resume). Where
// nothing holds the stream, stream_enqueue submits at once.
//
// A submission failure of a deferred operation has no caller to return to:
// it is kept on the stream (stream_defer_error) and reported by the stream's
// next query or synchronize (stream_take_deferred_error).
#include "backend.hpp"

#include <string>
#include <utility>
#include <vector>

namespace accel::opencl {
namespace {

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
      op.rec->profiling = s->profiling;
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
    case Op::KernelLaunch:
      return launch_submit(s, *op.launch);
    case Op::GraphLaunch:
      return graph_submit(s, *op.graph);
  }
  return fail(ACCEL_ERROR_INTERNAL, "unknown deferred operation %d", static_cast<int>(op.kind));
}

// Submits deferred operations until the stream blocks again or none is left.
void drain(Stream* s, std::vector<Stream*>& wake) {
  while (!s->blocked && !s->deferred.empty()) {
    bool consumed = true;
    Op& op = s->deferred.front();
    accel_status_t st = submit(s, op, wake, &consumed);
    if (st != ACCEL_SUCCESS) {
      // A plugin step that could not be queued frees what it carries.
      if (op.kind == Op::HostFn && op.discard) op.discard(op.user_data);
      stream_defer_error(s, st, "a deferred operation failed (see the log)");
    }
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

}  // namespace

void stream_wait_ungated(Stream* s) {
  std::unique_lock<std::mutex> lock(s->mu);
  s->idle.wait(lock, [&] { return !s->blocked && s->deferred.empty(); });
}

accel_status_t stream_take_deferred_error(Stream* s) {
  std::lock_guard<std::mutex> lock(s->mu);
  accel_status_t st = s->deferred_status;
  if (st == ACCEL_SUCCESS) return st;
  std::string msg = s->deferred_message;
  s->deferred_status = ACCEL_SUCCESS;
  s->deferred_message.clear();
  return fail(st, msg);
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

}  // namespace accel::opencl
