// Core-side stream and event handles. They wrap the plugin's opaque objects
// with what the core needs to route and check calls: backend, device, flags.
//
// Handles come from a pool and their memory is never returned to the system,
// so reading the magic word of a destroyed handle is defined behaviour: a
// destroyed handle is reported as ACCEL_ERROR_INVALID_ARGUMENT until the slot
// is reused by a newer object (the same guarantee CUDA gives). A pointer that
// never came from accel cannot be checked without a global lookup on every
// call, and is undefined behaviour, as in every vendor API.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "backend.hpp"

namespace accel::core {

constexpr uint32_t kStreamMagic = 0x5354524du;  // "STRM"
constexpr uint32_t kEventMagic = 0x45564e54u;   // "EVNT"
constexpr uint32_t kDeadMagic = 0xdeadbeefu;

struct Staging;  // staging.cpp

}  // namespace accel::core

struct accel_stream_s {
  std::atomic<uint32_t> magic{0};
  // Bumped each time the handle is destroyed, so a thread's saved current
  // stream can tell its own stream from a later one in the same slot.
  std::atomic<uint32_t> generation{0};
  accel::core::Backend* backend = nullptr;
  int32_t device = 0;
  int32_t priority = 0;
  bool is_default = false;
  // Made by accel_stream_from_native without ACCEL_NATIVE_TAKE_OWNERSHIP:
  // the vendor queue is the program's, not this stream's. Every stream
  // made otherwise owns its queue (accel_stream_from_native refuses to
  // take a queue such a stream owns).
  bool borrowed = false;
  // Made by accel_stream_from_native (borrowed or owning): the stream
  // sanitizer asks such a stream's vendor queue, to order it with the
  // stream it wraps; it never asks other streams (a query can change a
  // backend's mode: level_zero treats an exported list as shared).
  bool from_native = false;
  accel_plugin_stream_t native = nullptr;
  accel_stream_s* next_free = nullptr;
  // Counts host-function launches on this stream; an event record keeps the
  // count it saw, so a host function can tell an event recorded after it
  // (record count >= its own number: waiting for it would wait for itself)
  // from one recorded before (callbacks.hpp).
  std::atomic<uint64_t> sequence{0};
  // The plugin's native handle, asked once (a stream's vendor queue never
  // changes while it lives): accel_stream_native_handle is then a copy.
  // Cleared when the handle is destroyed, before the slot is reused.
  std::atomic<bool> native_cached{false};
  accel_native_handle_t native_handle{};
  // accel_stream_set_name's name, "" when never named. Written and read
  // under stream_name_mutex(). Cleared when the handle is destroyed.
  char name[ACCEL_STREAM_NAME_MAX + 1] = {};
  // The ring that stages copies from pageable memory (staging.hpp), made at
  // the slot's first such copy and kept with the slot (emptied when the
  // stream is destroyed).
  std::atomic<accel::core::Staging*> staging{nullptr};
};

struct accel_event_s {
  std::atomic<uint32_t> magic{0};
  accel::core::Backend* backend = nullptr;
  int32_t device = 0;
  uint32_t flags = 0;
  std::atomic<bool> recorded{false};
  // Where and when the last record was made (see accel_stream_s::sequence).
  std::atomic<const accel_stream_s*> record_stream{nullptr};
  std::atomic<uint64_t> record_sequence{0};
  accel_plugin_event_t native = nullptr;
  accel_event_s* next_free = nullptr;
};

namespace accel::core {

// A free list of T; objects are never deleted.
template <typename T>
class HandlePool {
 public:
  T* acquire() {
    {
      std::lock_guard lock(mutex_);
      if (free_ != nullptr) {
        T* t = free_;
        free_ = t->next_free;
        t->next_free = nullptr;
        return t;
      }
    }
    auto* t = new T();
    std::lock_guard lock(mutex_);
    all_.push_back(t);
    return t;
  }
  void release(T* t) {
    std::lock_guard lock(mutex_);
    t->next_free = free_;
    free_ = t;
  }
  std::mutex& mutex() { return mutex_; }
  // Calls f(t) for every object ever made, live or not, with the lock held
  // (so none is released meanwhile).
  template <typename F>
  void for_each_locked(F&& f) {
    std::lock_guard lock(mutex_);
    for (T* t : all_) f(t);
  }

 private:
  std::mutex mutex_;
  T* free_ = nullptr;
  // Every object ever made. Only for_each_locked reads it: it keeps live handles (and,
  // through their `native` pointers, the plugins' objects) reachable, so a
  // program that exits with streams and events it never destroyed shows no
  // leak to LeakSanitizer or valgrind; the objects are the core's anyway.
  std::vector<T*> all_;
};

HandlePool<accel_stream_s>& stream_pool();
HandlePool<accel_event_s>& event_pool();

inline bool live(const accel_stream_s* s) {
  return s != nullptr && s->magic.load(std::memory_order_acquire) == kStreamMagic;
}
inline bool live(const accel_event_s* e) {
  return e != nullptr && e->magic.load(std::memory_order_acquire) == kEventMagic;
}

// The lock of every stream's name, a leaf: the trace's and the allocators'
// locks may be held while it is taken, never the other way round; fork.cpp
// takes it last but the logger's, so a child never inherits it held.
std::mutex& stream_name_mutex();

// The stream's accel_stream_set_name name ("" when it has none).
std::string stream_name_of(accel_stream_s* s);

}  // namespace accel::core
