// engine.cpp - what makes a simulated stream: an in-order task queue served
// by its own worker thread, so ordering, waits and timing behave as on a GPU.
#include "backend.hpp"

#include <cstdio>
#include <exception>
#include <new>
#include <system_error>
#include <utility>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace accel::sim {

namespace {

// Bound on queued (not yet started) tasks per stream. A producer that finds
// the queue full blocks until the worker makes room, as a GPU launch queue
// does, so a runaway loop cannot eat unbounded host memory. The worker thread
// itself never blocks on its own queue (that would deadlock).
constexpr size_t kMaxQueuedTasks = 4096;

}  // namespace

Stream::Stream(int32_t device, int32_t priority, bool is_default)
    : device_(device), priority_(priority), is_default_(is_default) {
  worker_ = std::thread([this] { run(); });
  worker_id_ = worker_.get_id();
}

Stream::Stream(std::shared_ptr<Stream> target, bool owns)
    : device_(target->device()),
      priority_(target->priority()),
      is_default_(false),
      target_(std::move(target)),
      owns_target_(owns) {}

Stream::~Stream() { shutdown(); }

bool Stream::enqueue(Task task, bool marker) {
  if (target_) return target_->enqueue(std::move(task), marker);
  std::unique_lock<std::mutex> lock(mu_);
  if (!is_current_worker()) {
    space_cv_.wait(lock, [&] { return stopping_ || queue_.size() < kMaxQueuedTasks; });
  }
  if (stopping_) return false;
  queue_.push_back(Queued{std::move(task), marker});  // may throw; nothing changed yet
  ++pending_;
  work_cv_.notify_one();
  return true;
}

bool Stream::idle() {
  if (target_) return target_->idle();
  std::lock_guard<std::mutex> lock(mu_);
  return pending_ == 0;
}

void Stream::synchronize() {
  if (target_) return target_->synchronize();
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return pending_ == 0; });
}

void Stream::stop() {
  if (target_) {
    if (owns_target_) target_->stop();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
}

bool Stream::finished() {
  if (target_) return !owns_target_ || target_->finished();
  std::lock_guard<std::mutex> lock(mu_);
  return exited_;
}

void Stream::shutdown() {
  if (target_) {
    if (owns_target_) target_->shutdown();
    return;
  }
  stop();
  if (!worker_.joinable()) return;
  if (worker_.get_id() == std::this_thread::get_id()) {
    worker_.detach();  // cannot join oneself; entries refuse this case anyway
  } else {
    worker_.join();
  }
}

void Stream::AlignedFree::operator()(void* p) const noexcept {
  ::operator delete (p, std::align_val_t{kLocalAlignment});
}

void* Stream::worker_scratch(size_t bytes) {
  if (target_) return target_->worker_scratch(bytes);
  if (bytes <= scratch_bytes_) return scratch_.get();
  scratch_.reset();  // release the old one first: the peak is the new size
  scratch_bytes_ = 0;
  void* p = ::operator new (bytes, std::align_val_t{kLocalAlignment}, std::nothrow);
  if (p == nullptr) return nullptr;
  scratch_.reset(p);
  scratch_bytes_ = bytes;
  return p;
}

void Stream::run_task(Task& task) {
  try {
    task();
  } catch (const std::exception& e) {
    accel::plugin::log(ACCEL_LOG_ERROR, "a task on a stream of device %d threw: %s",
                       static_cast<int>(device_), e.what());
  } catch (...) {
    accel::plugin::log(ACCEL_LOG_ERROR,
                       "a task on a stream of device %d threw a non-standard exception",
                       static_cast<int>(device_));
  }
}

void Stream::run() {
#if defined(__linux__)
  char name[16];  // Linux limit, NUL included; shows in gdb/top
  std::snprintf(name, sizeof name, "accel-sim%d", static_cast<int>(device_));
  pthread_setname_np(pthread_self(), name);
#endif
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {  // stopping, and everything queued has run
      exited_ = true;      // reap_drained may join now: nothing is left to run
      break;
    }
    Task task = std::move(queue_.front().task);
    bool marker = queue_.front().marker;
    queue_.pop_front();
    space_cv_.notify_one();
    if (marker) {
      // Completing a record and leaving the stream idle happen under one
      // lock, so event_synchronize then stream_query sees an idle stream
      // and stream_synchronize then event_query sees a completed event
      // (CUDA's guarantee both ways). A record only takes its event's
      // lock, and nothing holds an event lock while taking a stream's.
      run_task(task);
      task = nullptr;
      if (--pending_ == 0) idle_cv_.notify_all();
      continue;
    }
    lock.unlock();
    run_task(task);
    // Release the task's captures (event states, ...) outside the lock.
    task = nullptr;
    lock.lock();
    if (--pending_ == 0) idle_cv_.notify_all();
  }
}

accel_status_t start_stream(const char* op, int32_t device, int32_t priority, bool is_default,
                            std::shared_ptr<Stream>& out) {
  try {
    out = std::make_shared<Stream>(device, priority, is_default);
    return ACCEL_SUCCESS;
  } catch (const std::system_error& e) {
    // std::thread reports "cannot create another thread" this way: the host
    // is out of resources, which guarded() alone would call internal.
    if (e.code() == std::errc::resource_unavailable_try_again)
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: cannot start a worker thread: %s", op, e.what());
    return fail(ACCEL_ERROR_INTERNAL, "%s: system error: %s", op, e.what());
  }
}

accel_status_t submit(Stream* s, const char* op, Stream::Task task, bool marker) {
  if (!s->enqueue(std::move(task), marker))
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: the stream is being destroyed", op);
  return ACCEL_SUCCESS;
}

}  // namespace accel::sim
