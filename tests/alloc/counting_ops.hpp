// CountingOps: the device as the allocator's unit tests see it. A fake
// DeviceOps that
//   - really allocates (aligned_alloc, 512-byte aligned) so AddressSanitizer
//     sees a block used after its segment went back, and refuses beyond a
//     capacity with ACCEL_ERROR_OUT_OF_MEMORY, as a full device would;
//   - counts every call and keeps the live vendor allocations with their
//     sizes, so a test can say exactly which segments were made and freed;
//   - lets the test decide when stream work completes: each stream has a
//     counter of queued work (enqueue(), and each marker recorded on it) and
//     a counter of completed work (complete()); a marker is done once its
//     stream's completed counter reaches the value it was recorded at;
//   - keeps the memory of the last vendor frees (poisoned for
//     AddressSanitizer) before giving it back to the host, so that a new
//     vendor allocation never reuses a just-freed address: a test can tell
//     "freed" from "freed and allocated again";
//   - writes down every misuse (a free of an unknown pointer or with the
//     wrong size, an unknown event) in problems(), which tests check: the
//     fake cannot fail a Catch2 test from inside the allocator (the calls
//     come with the allocator's lock held, maybe on another thread).
// Thread-safe: its own mutex, so a test may complete() work while other
// threads allocate.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "device_allocator.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define ACCEL_ALLOC_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACCEL_ALLOC_TEST_ASAN 1
#endif
#endif
#ifdef ACCEL_ALLOC_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace accel_alloc_test {

using accel::alloc::EventHandle;
using accel::alloc::StreamKey;

inline constexpr size_t kMiB = size_t{1} << 20;
inline constexpr size_t kKiB = size_t{1} << 10;

class CountingOps : public accel::alloc::DeviceOps {
 public:
  // One vendor call, in order (calls()).
  struct Call {
    enum Kind { kRawAlloc, kRawAllocFailed, kRawFree, kSynchronize, kEventSync } kind;
    uintptr_t ptr;
    size_t bytes;
  };

  explicit CountingOps(size_t capacity) : capacity_(capacity) {}
  ~CountingOps() override {
    // The allocator's destructor returns nothing to the vendor: what is still
    // live is ours to release (LeakSanitizer would report it otherwise).
    for (auto& [p, n] : live_) std::free(reinterpret_cast<void*>(p));
    while (!quarantine_.empty()) release_oldest();
    for (Event* e : events_) delete e;
  }
  CountingOps(const CountingOps&) = delete;
  CountingOps& operator=(const CountingOps&) = delete;

  // --- DeviceOps ---------------------------------------------------------------
  accel_status_t raw_alloc(size_t bytes, void** ptr) override {
    std::unique_lock lock(mu_);
    ++raw_alloc_calls_;
    if (bytes == 0 || ptr == nullptr) {
      problem("raw_alloc(" + std::to_string(bytes) + ", ptr " + (ptr ? "set" : "NULL") + ")");
      return ACCEL_ERROR_INVALID_ARGUMENT;
    }
    if (fail_raw_alloc_ != ACCEL_SUCCESS) {
      calls_.push_back({Call::kRawAllocFailed, 0, bytes});
      return fail_raw_alloc_;
    }
    if (bytes > capacity_ || live_bytes_ > capacity_ - bytes) {
      calls_.push_back({Call::kRawAllocFailed, 0, bytes});
      return ACCEL_ERROR_OUT_OF_MEMORY;
    }
    size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded);
    if (p == nullptr) {
      problem("the host could not back a raw_alloc of " + std::to_string(bytes));
      return ACCEL_ERROR_OUT_OF_MEMORY;
    }
    live_[reinterpret_cast<uintptr_t>(p)] = bytes;
    live_bytes_ += bytes;
    ++raw_alloc_ok_;
    calls_.push_back({Call::kRawAlloc, reinterpret_cast<uintptr_t>(p), bytes});
    *ptr = p;
    auto hook = on_raw_alloc_;
    lock.unlock();
    if (hook) hook(p, bytes);
    return ACCEL_SUCCESS;
  }

  accel_status_t raw_free(void* ptr, size_t bytes) override {
    std::unique_lock lock(mu_);
    ++raw_free_calls_;
    auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == live_.end()) {
      problem("raw_free of a pointer that is not a live vendor allocation: " + hex(ptr));
      return ACCEL_ERROR_INVALID_ARGUMENT;
    }
    if (it->second != bytes) {
      problem("raw_free(" + hex(ptr) + ", " + std::to_string(bytes) + ") of an allocation of " +
              std::to_string(it->second) + " bytes");
      return ACCEL_ERROR_INVALID_ARGUMENT;
    }
    auto hook = on_raw_free_;
    if (hook) {
      // Before the memory goes: the hook checks that no work still uses it.
      lock.unlock();
      hook(ptr, bytes);
      lock.lock();
      it = live_.find(reinterpret_cast<uintptr_t>(ptr));
    }
    live_bytes_ -= it->second;
    live_.erase(it);
    ++raw_free_ok_;
    calls_.push_back({Call::kRawFree, reinterpret_cast<uintptr_t>(ptr), bytes});
    quarantine(ptr, bytes);
    return ACCEL_SUCCESS;
  }

  size_t capacity() override {
    std::lock_guard lock(mu_);
    return capacity_;
  }

  accel_status_t event_create(EventHandle* ev) override {
    std::lock_guard lock(mu_);
    if (ev == nullptr) {
      problem("event_create(NULL)");
      return ACCEL_ERROR_INVALID_ARGUMENT;
    }
    if (fail_event_create_ != ACCEL_SUCCESS) return fail_event_create_;
    Event* e = new Event;
    events_.insert(e);
    ++events_created_;
    *ev = e;
    return ACCEL_SUCCESS;
  }

  accel_status_t event_record(EventHandle ev, StreamKey stream) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev, "event_record");
    if (e == nullptr) return ACCEL_ERROR_INVALID_ARGUMENT;
    if (fail_event_record_ != ACCEL_SUCCESS) return fail_event_record_;
    // The marker is itself queued work: it is done once everything before it
    // and it have completed, i.e. not before the next complete(stream).
    Stream& s = streams_[stream];
    ++s.queued;
    e->recorded = true;
    e->stream = stream;
    e->target = s.queued;
    ++events_recorded_;
    return ACCEL_SUCCESS;
  }

  accel_status_t event_query(EventHandle ev) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev, "event_query");
    if (e == nullptr) return ACCEL_ERROR_INVALID_ARGUMENT;
    ++event_queries_;
    if (!e->recorded) return ACCEL_SUCCESS;  // as cudaEventQuery
    return streams_[e->stream].completed >= e->target ? ACCEL_SUCCESS : ACCEL_ERROR_NOT_READY;
  }

  accel_status_t event_synchronize(EventHandle ev) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev, "event_synchronize");
    if (e == nullptr) return ACCEL_ERROR_INVALID_ARGUMENT;
    ++event_syncs_;
    calls_.push_back({Call::kEventSync, 0, 0});
    if (e->recorded) {
      Stream& s = streams_[e->stream];
      s.completed = std::max(s.completed, e->target);
    }
    return ACCEL_SUCCESS;
  }

  void event_destroy(EventHandle ev) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev, "event_destroy");
    if (e == nullptr) return;
    events_.erase(e);
    delete e;
    ++events_destroyed_;
  }

  accel_status_t synchronize() override {
    std::lock_guard lock(mu_);
    ++synchronize_calls_;
    calls_.push_back({Call::kSynchronize, 0, 0});
    for (auto& [key, s] : streams_) s.completed = s.queued;
    return fail_synchronize_;
  }

  // --- what the test controls ----------------------------------------------------
  // A piece of work queued on `stream` (a kernel that uses some memory).
  void enqueue(StreamKey stream) {
    std::lock_guard lock(mu_);
    ++streams_[stream].queued;
  }
  // Everything queued on `stream` so far has completed.
  void complete(StreamKey stream) {
    std::lock_guard lock(mu_);
    Stream& s = streams_[stream];
    s.completed = s.queued;
  }
  void complete_all() {
    std::lock_guard lock(mu_);
    for (auto& [key, s] : streams_) s.completed = s.queued;
  }
  uint64_t queued(StreamKey stream) {
    std::lock_guard lock(mu_);
    return streams_[stream].queued;
  }
  uint64_t completed(StreamKey stream) {
    std::lock_guard lock(mu_);
    return streams_[stream].completed;
  }
  // True when `stream` has work (markers included) that has not completed.
  bool busy(StreamKey stream) {
    std::lock_guard lock(mu_);
    Stream& s = streams_[stream];
    return s.completed < s.queued;
  }

  void set_capacity(size_t bytes) {
    std::lock_guard lock(mu_);
    capacity_ = bytes;
  }
  // ACCEL_SUCCESS: calls behave normally again.
  void fail_raw_alloc(accel_status_t s) {
    std::lock_guard lock(mu_);
    fail_raw_alloc_ = s;
  }
  void fail_event_record(accel_status_t s) {
    std::lock_guard lock(mu_);
    fail_event_record_ = s;
  }
  void fail_event_create(accel_status_t s) {
    std::lock_guard lock(mu_);
    fail_event_create_ = s;
  }
  void fail_synchronize(accel_status_t s) {
    std::lock_guard lock(mu_);
    fail_synchronize_ = s;
  }
  // Called (without the fake's lock, with the allocator's) after each
  // successful raw_alloc and before each valid raw_free.
  void on_raw_alloc(std::function<void(void*, size_t)> f) {
    std::lock_guard lock(mu_);
    on_raw_alloc_ = std::move(f);
  }
  void on_raw_free(std::function<void(void*, size_t)> f) {
    std::lock_guard lock(mu_);
    on_raw_free_ = std::move(f);
  }

  // --- what the test reads ---------------------------------------------------------
  size_t raw_alloc_calls() { return get(raw_alloc_calls_); }  // every call, failed ones too
  size_t raw_allocs() { return get(raw_alloc_ok_); }          // successful ones
  size_t raw_free_calls() { return get(raw_free_calls_); }
  size_t raw_frees() { return get(raw_free_ok_); }  // successful ones
  size_t synchronize_calls() { return get(synchronize_calls_); }
  size_t event_syncs() { return get(event_syncs_); }
  size_t events_created() { return get(events_created_); }
  size_t events_recorded() { return get(events_recorded_); }
  size_t events_destroyed() { return get(events_destroyed_); }
  size_t live_events() {
    std::lock_guard lock(mu_);
    return events_.size();
  }
  // Live vendor allocations: base -> bytes.
  std::map<uintptr_t, size_t> live() {
    std::lock_guard lock(mu_);
    return live_;
  }
  size_t live_count() {
    std::lock_guard lock(mu_);
    return live_.size();
  }
  size_t live_bytes() {
    std::lock_guard lock(mu_);
    return live_bytes_;
  }
  bool is_live(const void* base) {
    std::lock_guard lock(mu_);
    return live_.count(reinterpret_cast<uintptr_t>(base)) != 0;
  }
  // The live vendor allocation holding [p, p + n), if any: its base, else 0.
  uintptr_t segment_of(const void* p, size_t n = 1) {
    std::lock_guard lock(mu_);
    auto a = reinterpret_cast<uintptr_t>(p);
    auto it = live_.upper_bound(a);
    if (it == live_.begin()) return 0;
    --it;
    if (a + n > it->first + it->second) return 0;
    return it->first;
  }
  std::vector<Call> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  // Every misuse seen so far, one a line; empty when there was none.
  std::string problems() {
    std::lock_guard lock(mu_);
    return problems_;
  }

 private:
  static constexpr size_t kAlign = 512;
  static constexpr uint64_t kMagic = 0x6576656e74fa6b65;

  struct Event {
    uint64_t magic = kMagic;
    bool recorded = false;
    StreamKey stream = nullptr;
    uint64_t target = 0;
  };
  struct Stream {
    uint64_t queued = 0;
    uint64_t completed = 0;
  };

  static std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
  }
  void problem(const std::string& what) { problems_ += what + "\n"; }

  // The last kQuarantineCount frees (at most kQuarantineBytes) stay
  // allocated on the host, poisoned: an access is a use after the vendor
  // free, and the address is not handed out again yet.
  static constexpr size_t kQuarantineCount = 32;
  static constexpr size_t kQuarantineBytes = size_t{256} << 20;
  void quarantine(void* p, size_t bytes) {
#ifdef ACCEL_ALLOC_TEST_ASAN
    ASAN_POISON_MEMORY_REGION(p, bytes);
#endif
    quarantine_.emplace_back(p, bytes);
    quarantine_bytes_ += bytes;
    while (quarantine_.size() > kQuarantineCount || quarantine_bytes_ > kQuarantineBytes) {
      release_oldest();
    }
  }
  void release_oldest() {
    auto [p, bytes] = quarantine_.front();
    quarantine_.pop_front();
    quarantine_bytes_ -= bytes;
#ifdef ACCEL_ALLOC_TEST_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#endif
    std::free(p);
  }
  Event* lookup(EventHandle ev, const char* call) {
    auto* e = static_cast<Event*>(ev);
    if (events_.count(e) == 0) {
      problem(std::string(call) + " of an event that is not live: " + hex(ev));
      return nullptr;
    }
    return e;
  }
  size_t get(const size_t& counter) {
    std::lock_guard lock(mu_);
    return counter;
  }

  std::mutex mu_;
  size_t capacity_;
  std::map<uintptr_t, size_t> live_;
  size_t live_bytes_ = 0;
  std::deque<std::pair<void*, size_t>> quarantine_;
  size_t quarantine_bytes_ = 0;
  std::set<Event*> events_;
  std::map<StreamKey, Stream> streams_;
  std::vector<Call> calls_;
  std::string problems_;
  accel_status_t fail_raw_alloc_ = ACCEL_SUCCESS;
  accel_status_t fail_event_record_ = ACCEL_SUCCESS;
  accel_status_t fail_event_create_ = ACCEL_SUCCESS;
  accel_status_t fail_synchronize_ = ACCEL_SUCCESS;
  std::function<void(void*, size_t)> on_raw_alloc_, on_raw_free_;
  size_t raw_alloc_calls_ = 0, raw_alloc_ok_ = 0, raw_free_calls_ = 0, raw_free_ok_ = 0;
  size_t synchronize_calls_ = 0, event_syncs_ = 0, event_queries_ = 0;
  size_t events_created_ = 0, events_recorded_ = 0, events_destroyed_ = 0;
};

// Distinct stream keys for tests (never dereferenced by the allocator).
inline StreamKey stream_key(int i) {
  static char keys[4096];
  return &keys[i];
}

}  // namespace accel_alloc_test
