// streams.cpp - streams, the default stream, priorities, and stream
// query/synchronize/wait. Each stream is a worker thread (engine.cpp).
// Native handles of streams are in interop.cpp.
#include "backend.hpp"

#include <algorithm>
#include <utility>

namespace accel::sim {

namespace {

// CUDA-style priority range: 0 is the default (least), -2 the greatest. The
// simulator records the priority but does not schedule by it: every stream
// has its own worker thread, so there is no shared queue to reorder.
constexpr int32_t kLeastPriority = 0;
constexpr int32_t kGreatestPriority = -2;

}  // namespace

accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest) {
  return guarded("stream_priority_range", [&] {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    if (least != nullptr) *least = kLeastPriority;
    if (greatest != nullptr) *greatest = kGreatestPriority;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* stream) {
  return guarded("stream_create", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_create: stream is NULL");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    // The core clamps already; clamping again keeps the stored value sane.
    priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
    std::shared_ptr<Stream> s;
    if (accel_status_t st = start_stream("stream_create", device, priority, false, s);
        st != ACCEL_SUCCESS)
      return st;
    {
      std::lock_guard<std::mutex> lock(dev->streams_mu);
      dev->streams.emplace(s.get(), s);
    }
    *stream = s.get();
    accel::plugin::log(ACCEL_LOG_DEBUG, "created a stream on sim device %d, priority %d",
                       static_cast<int>(device), static_cast<int>(s->priority()));
    return ACCEL_SUCCESS;
  });
}

void reap_drained(Device& dev) {
  std::vector<std::shared_ptr<Stream>> done;  // freed after the lock: each joins its worker
  std::lock_guard<std::mutex> lock(dev.streams_mu);
  auto& v = dev.draining;
  if (v.empty()) return;
  done.reserve(v.size());  // may throw before anything moved; a later call reaps
  for (auto it = v.begin(); it != v.end();) {
    if ((*it)->finished()) {
      done.push_back(std::move(*it));  // reserve()d: cannot throw
      it = v.erase(it);
    } else {
      ++it;
    }
  }
}

// Returns at once (cudaStreamDestroy, hipStreamDestroy): the worker drains
// the queued work and leaves on its own, and the stream waits among the
// device's draining streams, where device_synchronize still waits for it,
// until a later reap_drained joins the finished worker. The destroyer never
// joins, so a destroy behind a host function that waits on the caller
// cannot deadlock.
accel_status_t op_stream_destroy(accel_plugin_stream_t handle) {
  return guarded("stream_destroy", [&] {
    if (handle == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_destroy: stream is NULL");
    const auto* key = static_cast<const Stream*>(handle);
    // Look the handle up in the registries instead of dereferencing it, so
    // a stale handle is reported rather than followed.
    std::shared_ptr<Stream> owned;
    Device* owner = nullptr;
    for (auto& dev : state().devices) {
      std::lock_guard<std::mutex> lock(dev->streams_mu);
      auto it = dev->streams.find(key);
      if (it == dev->streams.end()) continue;
      if (it->second->is_default())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "stream_destroy: the default stream of sim device %d cannot be destroyed",
                    static_cast<int>(dev->index));
      // Moved to `draining` before it leaves `streams`, so a concurrent
      // device_synchronize sees it in one or the other. push_back may throw
      // (nothing changed then).
      dev->draining.push_back(it->second);
      owned = std::move(it->second);
      dev->streams.erase(it);
      owner = dev.get();
      break;
    }
    if (!owned)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_destroy: %p is not a live sim stream",
                  handle);
    owned->stop();
    owned.reset();
    reap_drained(*owner);  // earlier destroyed streams that have finished since
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* stream) {
  return guarded("default_stream", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "default_stream: stream is NULL");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    std::lock_guard<std::mutex> lock(dev->streams_mu);
    if (dev->default_stream == nullptr) {
      std::shared_ptr<Stream> s;
      if (accel_status_t st = start_stream("default_stream", device, 0, true, s);
          st != ACCEL_SUCCESS)
        return st;
      dev->streams.emplace(s.get(), s);
      dev->default_stream = s.get();
    }
    *stream = dev->default_stream;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_query(accel_plugin_stream_t stream) {
  return guarded("stream_query", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_query: stream is NULL");
    return as_stream(stream)->idle() ? ACCEL_SUCCESS : ACCEL_ERROR_NOT_READY;
  });
}

accel_status_t op_stream_synchronize(accel_plugin_stream_t stream) {
  return guarded("stream_synchronize", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_synchronize: stream is NULL");
    Stream* s = as_stream(stream);
    if (s->is_current_worker())
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "stream_synchronize: called from a host function running on that stream; it "
                  "would wait for itself");
    s->synchronize();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event) {
  return guarded("stream_wait_event", [&] {
    if (stream == nullptr || event == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_wait_event: NULL %s",
                  stream == nullptr ? "stream" : "event");
    Stream* s = as_stream(stream);
    std::shared_ptr<EventState> ev = as_event(event)->state;
    // Any device: the wait is a task on this stream's worker that blocks on
    // the record's completion, wherever it runs (ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT).
    // Capture the record current now: later re-records must not change what
    // this wait waits for.
    std::shared_ptr<Record> rec;
    {
      std::lock_guard<std::mutex> lock(ev->mu);
      if (ev->latest == nullptr || ev->latest->done) return ACCEL_SUCCESS;  // nothing to wait for
      rec = ev->latest;
    }
    // If the record is earlier on this same stream, in-order execution has
    // completed it before this task runs, so the wait cannot deadlock.
    return submit(s, "stream_wait_event", [ev = std::move(ev), rec = std::move(rec)] {
      std::unique_lock<std::mutex> lock(ev->mu);
      ev->cv.wait(lock, [&] { return rec->done; });
    });
  });
}

}  // namespace accel::sim
