// Device memory in the core: ACCEL_ALLOC_CONF, and one DeviceMemory per
// device of a backend holding the caching allocator over the plugin's
// mem_alloc / mem_free and events (or, with backend:native, the statistics
// of the direct calls). See docs/memory.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "alloc/config.hpp"
#include "alloc/device_allocator.hpp"
#include "backend.hpp"

struct accel_stream_s;

namespace accel::core {

// ACCEL_ALLOC_CONF, read once (secure_getenv). An invalid value is warned
// about in the log once and the defaults are used.
const alloc::Config& alloc_config();
// alloc_config().caching, cached in a plain global after the first call (the
// hot paths read it twice per allocation).
extern std::atomic<int> g_caching;  // -1 unknown, 0 native, 1 caching
inline bool caching_allocator() {
  int c = g_caching.load(std::memory_order_relaxed);
  if (c < 0) [[unlikely]] {
    c = alloc_config().caching ? 1 : 0;
    g_caching.store(c, std::memory_order_relaxed);
  }
  return c != 0;
}

// The allocator's view of one device of a backend, over its plugin.
class PluginDeviceOps final : public alloc::DeviceOps {
 public:
  PluginDeviceOps(Backend& b, int32_t device, struct DeviceMemory& owner)
      : b_(b), device_(device), owner_(owner) {}
  accel_status_t raw_alloc(size_t bytes, void** ptr) override;
  accel_status_t raw_free(void* ptr, size_t bytes) override;
  size_t capacity() override;
  accel_status_t event_create(alloc::EventHandle* ev) override;
  accel_status_t event_record(alloc::EventHandle ev, alloc::StreamKey stream) override;
  accel_status_t event_query(alloc::EventHandle ev) override;
  accel_status_t event_synchronize(alloc::EventHandle ev) override;
  void event_destroy(alloc::EventHandle ev) override;
  accel_status_t synchronize() override;
  bool stream_idle(alloc::StreamKey stream) override;
  accel_status_t stream_synchronize(alloc::StreamKey stream) override;
  bool stream_alive(alloc::StreamKey stream) override;

 private:
  Backend& b_;
  int32_t device_;
  struct DeviceMemory& owner_;
  size_t capacity_ = 0;
  bool capacity_known_ = false;
};

struct DeviceMemory {
  DeviceMemory(Backend& b, int32_t d)
      : backend(b), device(d), ops(b, d, *this), allocator(ops, alloc_config()) {}
  Backend& backend;
  int32_t device;
  PluginDeviceOps ops;
  alloc::DeviceAllocator allocator;  // caching mode
  // backend:native: the same statistics, kept over the direct calls.
  std::mutex native_mutex;
  alloc::Stats native_stats;
};

// The DeviceMemory of `device` of `b`, created on first use, never destroyed.
DeviceMemory& device_memory(Backend& b, int32_t device);
// The same if it exists (statistics never create one), else nullptr.
DeviceMemory* find_device_memory(const Backend& b, int32_t device);

// fork(): prepare takes the registry lock and every allocator's lock (before
// the allocation table's: allocators take it while holding theirs); parent
// and child release them.
void lock_device_memory_for_fork();
void unlock_device_memory_after_fork();

// accel_stream_destroy: the blocks of `s` move to its device's default
// stream once the work queued on `s` has completed.
void retire_stream_memory(accel_stream_s* s);

// History size applied to every allocator, present and future.
void set_memory_history(size_t max_entries);

// "0x55d0c0a0" for a stream key (snapshots).
std::string stream_name(const void* key);
// The name accel_stream_set_name gave the stream a StreamKey stands for ("" if none).
std::string stream_label(const void* key);

// ACCEL_ERROR_NOT_SUPPORTED naming `fn` when `b` has no memory group.
accel_status_t require_memory_ops(const char* fn, const Backend& b);

// accel_malloc / accel_malloc_async once validated: `bytes` on `device` of
// `b`, ordered on `stream` (ignored by backend:native).
accel_status_t allocate_device_memory(const char* fn, Backend& b, int32_t device,
                                      accel_stream_s* stream, size_t bytes, const void* caller,
                                      void** ptr);

// accel_free (async false) and accel_free_async (stream nullptr: the current
// stream of the pointer's device).
accel_status_t free_device_memory(const char* fn, void* ptr, bool async, accel_stream_s* stream,
                                  const void* caller);

// accel_reset_peak_memory_stats / accel_reset_accumulated_memory_stats:
// resets the peaks or the accumulated counters of both books of `device`
// (the caching allocator's and backend:native's), when it has any.
enum class StatsReset { peaks, accumulated };
void reset_memory_stats(const Backend& b, int32_t device, StatsReset what);

// Statistics of the direct calls under backend:native.
void native_account_alloc(DeviceMemory& m, size_t bytes);
void native_account_free(DeviceMemory& m, size_t bytes);

}  // namespace accel::core
