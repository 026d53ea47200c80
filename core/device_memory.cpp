#include "device_memory.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <vector>

#include "callbacks.hpp"
#include "error.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "log.hpp"
#include "memory_table.hpp"
#include "runtime.hpp"

namespace accel::core {

std::atomic<int> g_caching{-1};

const alloc::Config& alloc_config() {
  static const alloc::Config config = [] {
    alloc::Config c;
    const char* text = secure_getenv("ACCEL_ALLOC_CONF");
    if (text == nullptr) return c;
    std::string error;
    if (!alloc::parse_config(text, c, error)) {
      log().warn("ACCEL_ALLOC_CONF='{}' ignored: {}; using {}", text, error, alloc::describe(c));
    }
    return c;
  }();
  return config;
}

namespace {

std::mutex g_registry_mutex;
// Never destroyed, like the backends they belong to: exit() may run while
// other threads still free memory.
std::vector<DeviceMemory*>& g_all = *new std::vector<DeviceMemory*>();
size_t g_history_entries = 0;  // under g_registry_mutex

// The core's per-device slot. Published once, read without the lock.
std::atomic<DeviceMemory*>& slot(const Backend& b, int32_t device) {
  return b.devices[device].memory;
}

const accel_stream_s* as_stream(alloc::StreamKey key) {
  return static_cast<const accel_stream_s*>(key);
}

}  // namespace

DeviceMemory& device_memory(Backend& b, int32_t device) {
  if (DeviceMemory* m = slot(b, device).load(std::memory_order_acquire)) [[likely]]
    return *m;
  std::lock_guard lock(g_registry_mutex);
  if (DeviceMemory* m = slot(b, device).load(std::memory_order_acquire)) return *m;
  auto* m = new DeviceMemory(b, device);
  if (g_history_entries != 0) m->allocator.set_history(g_history_entries);
  g_all.push_back(m);
  slot(b, device).store(m, std::memory_order_release);
  return *m;
}

DeviceMemory* find_device_memory(const Backend& b, int32_t device) {
  return slot(b, device).load(std::memory_order_acquire);
}

void lock_device_memory_for_fork() {
  g_registry_mutex.lock();
  for (DeviceMemory* m : g_all) {
    m->allocator.mutex().lock();
    m->native_mutex.lock();
  }
}

void unlock_device_memory_after_fork() {
  for (DeviceMemory* m : g_all) {
    m->native_mutex.unlock();
    m->allocator.mutex().unlock();
  }
  g_registry_mutex.unlock();
}

void set_memory_history(size_t max_entries) {
  std::lock_guard lock(g_registry_mutex);
  g_history_entries = max_entries;
  for (DeviceMemory* m : g_all) m->allocator.set_history(max_entries);
}

std::string stream_name(const void* key) { return fmt::format("{}", key); }

std::string stream_label(const void* key) {
  // Keys are stream handles, whose memory is never freed (handles.hpp).
  return stream_name_of(static_cast<accel_stream_s*>(const_cast<void*>(key)));
}

void retire_stream_memory(accel_stream_s* s) {
  if (!caching_allocator()) return;
  DeviceMemory* m = find_device_memory(*s->backend, s->device);
  if (m == nullptr) return;
  accel_stream_s* replacement = nullptr;
  if (default_stream(*s->backend, s->device, replacement) != ACCEL_SUCCESS) return;
  (void)m->allocator.retire_stream(s, replacement);
}

namespace {
alloc::PoolKind pool_kind(size_t bytes) {
  return bytes <= alloc::kSmallSize ? alloc::kSmallPool : alloc::kLargePool;
}

// One vendor allocation of `bytes` is one segment holding one block: counted
// in (`allocated`) or out of every statistic that applies.
void native_account(DeviceMemory& m, size_t bytes, bool allocated) {
  std::lock_guard lock(m.native_mutex);
  alloc::Stats& s = m.native_stats;
  auto change = [&, k = pool_kind(bytes)](alloc::StatArray& a, int64_t n) {
    if (allocated) {
      add(a, k, n);
    } else {
      sub(a, k, n);
    }
  };
  for (alloc::StatArray* a : {&s.allocation, &s.segment, &s.active}) change(*a, 1);
  for (alloc::StatArray* a :
       {&s.allocated_bytes, &s.reserved_bytes, &s.active_bytes, &s.requested_bytes})
    change(*a, static_cast<int64_t>(bytes));
  ++(allocated ? s.num_device_alloc : s.num_device_free);
}

}  // namespace

void native_account_alloc(DeviceMemory& m, size_t bytes) { native_account(m, bytes, true); }
void native_account_free(DeviceMemory& m, size_t bytes) { native_account(m, bytes, false); }

void reset_memory_stats(const Backend& b, int32_t device, StatsReset what) {
  DeviceMemory* m = find_device_memory(b, device);
  if (m == nullptr) return;
  if (what == StatsReset::peaks) {
    m->allocator.reset_peak();
    std::lock_guard lock(m->native_mutex);
    m->native_stats.reset_peak();
  } else {
    m->allocator.reset_accumulated();
    std::lock_guard lock(m->native_mutex);
    m->native_stats.reset_accumulated();
  }
}

// --- PluginDeviceOps ---------------------------------------------------------
// The calls that do not wait run with the allocator's lock held: marked as a
// locked callback, so a plugin that calls back into accel from one gets
// ACCEL_ERROR_REENTRANT instead of a deadlock on that lock. The waits
// (event_synchronize, synchronize, stream_synchronize) run without it.

accel_status_t PluginDeviceOps::raw_alloc(size_t bytes, void** ptr) {
  LockedCallbackScope scope(b_, "mem_alloc", "allocator", owner_.allocator.mutex());
  void* p = nullptr;
  auto st = call_plugin(b_, "mem_alloc", [&] { return b_.api.mem_alloc(device_, bytes, &p); });
  if (st != ACCEL_SUCCESS) return st;
  if (p == nullptr) {
    return failf(ACCEL_ERROR_INTERNAL, "backend '{}' returned success and a NULL pointer", b_.name);
  }
  // The table knows the segment; the allocator knows its blocks.
  Allocation a{reinterpret_cast<uintptr_t>(p), bytes, &b_, device_, ACCEL_MEMORY_DEVICE};
  a.owner = &owner_;
  record_allocation(a);
  *ptr = p;
  return ACCEL_SUCCESS;
}

accel_status_t PluginDeviceOps::raw_free(void* ptr, size_t) {
  LockedCallbackScope scope(b_, "mem_free", "allocator", owner_.allocator.mutex());
  Allocation a;
  if (!take_allocation(ptr, a)) {
    return failf(ACCEL_ERROR_INTERNAL, "segment {} of {} device {} missing from the table", ptr,
                 b_.name, device_);
  }
  auto st = call_plugin(b_, "mem_free", [&] { return b_.api.mem_free(device_, ptr); });
  if (st != ACCEL_SUCCESS) record_allocation(a);
  return st;
}

size_t PluginDeviceOps::capacity() {
  if (!capacity_known_) {
    LockedCallbackScope scope(b_, "mem_get_info", "allocator", owner_.allocator.mutex());
    capacity_known_ = true;
    size_t free_bytes = 0;
    if (b_.api.mem_get_info != nullptr && call_plugin(b_, "mem_get_info", [&] {
                                            return b_.api.mem_get_info(device_, &free_bytes,
                                                                       &capacity_);
                                          }) != ACCEL_SUCCESS) {
      capacity_ = 0;
    }
  }
  return capacity_;
}

accel_status_t PluginDeviceOps::event_create(alloc::EventHandle* ev) {
  // Without events the allocator synchronizes the stream instead, unlocked.
  if (b_.api.event_create == nullptr) return ACCEL_ERROR_NOT_SUPPORTED;
  LockedCallbackScope scope(b_, "event_create", "allocator", owner_.allocator.mutex());
  accel_plugin_event_t e = nullptr;
  auto st = call_plugin(b_, "event_create",
                        [&] { return b_.api.event_create(device_, ACCEL_EVENT_DEFAULT, &e); });
  *ev = e;
  return st;
}

accel_status_t PluginDeviceOps::event_record(alloc::EventHandle ev, alloc::StreamKey stream) {
  LockedCallbackScope scope(b_, "event_record", "allocator", owner_.allocator.mutex());
  const accel_stream_s* s = as_stream(stream);
  return call_plugin(b_, "event_record", [&] {
    return b_.api.event_record(static_cast<accel_plugin_event_t>(ev), s->native);
  });
}

accel_status_t PluginDeviceOps::event_query(alloc::EventHandle ev) {
  LockedCallbackScope scope(b_, "event_query", "allocator", owner_.allocator.mutex());
  return call_plugin(b_, "event_query",
                     [&] { return b_.api.event_query(static_cast<accel_plugin_event_t>(ev)); });
}

accel_status_t PluginDeviceOps::event_synchronize(alloc::EventHandle ev) {
  // A host function of this device may be what the marker waits for.
  if (const HostCall* call = running_host_call(); call != nullptr && call->backend == &b_) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "the allocator cannot wait for {} device {} from a host function running on it",
                 b_.name, call->device);
  }
  return call_plugin(b_, "event_synchronize", [&] {
    return b_.api.event_synchronize(static_cast<accel_plugin_event_t>(ev));
  });
}

void PluginDeviceOps::event_destroy(alloc::EventHandle ev) {
  LockedCallbackScope scope(b_, "event_destroy", "allocator", owner_.allocator.mutex());
  (void)call_plugin(b_, "event_destroy",
                    [&] { return b_.api.event_destroy(static_cast<accel_plugin_event_t>(ev)); });
}

accel_status_t PluginDeviceOps::synchronize() {
  // Any device of the backend: a stream of this device may wait for an
  // event recorded after the host function on another one.
  if (const HostCall* call = running_host_call(); call != nullptr && call->backend == &b_) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "the allocator would wait for {} device {} from a host function running on "
                 "device {}, which that wait may depend on",
                 b_.name, device_, call->device);
  }
  return call_plugin(b_, "device_synchronize", [&] { return b_.api.device_synchronize(device_); });
}

accel_status_t PluginDeviceOps::stream_synchronize(alloc::StreamKey stream) {
  const accel_stream_s* s = as_stream(stream);
  if (const HostCall* call = running_host_call(); call != nullptr && call->backend == &b_) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "the allocator would wait for a stream of {} from a host function running on "
                 "{} device {}, which that wait may depend on",
                 b_.name, b_.name, call->device);
  }
  return call_plugin(b_, "stream_synchronize",
                     [&] { return b_.api.stream_synchronize(s->native); });
}

bool PluginDeviceOps::stream_alive(alloc::StreamKey stream) { return live(as_stream(stream)); }

bool PluginDeviceOps::stream_idle(alloc::StreamKey stream) {
  LockedCallbackScope scope(b_, "stream_query", "allocator", owner_.allocator.mutex());
  const accel_stream_s* s = as_stream(stream);
  accel_status_t st = b_.api.stream_query(s->native);
  return st == ACCEL_SUCCESS;  // NOT_READY or an error: wait for a marker
}

}  // namespace accel::core
