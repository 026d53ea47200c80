// The pinned host memory cache over a plugin: alloc::HostOps in terms of
// host_alloc / host_free and events, the per-backend registry, and the hooks
// of host_cache_hook.hpp.
#include <atomic>
#include <mutex>

#include "callbacks.hpp"
#include "error.hpp"
#include "handles.hpp"
#include "host_cache_hook.hpp"
#include "host_services.hpp"
#include "runtime.hpp"

namespace accel::core {

namespace {

// One marker. Streams may belong to another backend than the memory (a
// copy of backend B reading A's pinned memory as plain host memory): the
// event is made by the stream's own backend.
struct Marker {
  enum Kind {
    kEvent,        // `native`, an event of `backend`
    kSyncStream,   // the stream's backend has no events: record synchronises it
    kSyncBackend,  // the stream is gone: record waits for every device of the cache's backend
    kDone,         // nothing to wait for (the stream's backend is unusable after fork())
  };
  Kind kind = kDone;
  Backend* backend = nullptr;
  accel_plugin_event_t native = nullptr;
};

Marker* as_marker(alloc::EventHandle ev) { return static_cast<Marker*>(ev); }
const accel_stream_s* as_stream(alloc::StreamKey key) {
  return static_cast<const accel_stream_s*>(key);
}

// The stream retire_stream_host_memory is marking: accel_stream_destroy has
// already marked its handle dead (one of two racing destroys wins it), but
// the plugin's stream still exists until the call returns.
thread_local const accel_stream_s* t_retiring = nullptr;

bool usable(const accel_stream_s* s) { return live(s) || (s != nullptr && s == t_retiring); }

// Where a fork() child finds a backend unusable, no work of the parent runs
// for it: its markers count as complete and its plugin is never called.
bool gone(const Backend& b) { return b.forked.load(std::memory_order_relaxed); }

class PluginHostOps final : public alloc::HostOps {
 public:
  explicit PluginHostOps(Backend& b) : b_(b) {}

  accel_status_t raw_alloc(size_t bytes, void** ptr) override {
    void* p = nullptr;
    auto st = call_plugin(b_, "host_alloc", [&] { return b_.api.host_alloc(bytes, 0, &p); });
    // A NULL pointer with success is refused by the cache (and explained by
    // accel_host_malloc).
    *ptr = p;
    return st;
  }

  accel_status_t raw_free(void* ptr) override {
    return call_plugin(b_, "host_free", [&] { return b_.api.host_free(ptr); });
  }

  accel_status_t event_create(alloc::StreamKey stream, alloc::EventHandle* ev) override {
    const accel_stream_s* s = as_stream(stream);
    auto* m = new Marker;
    if (!usable(s)) {
      m->kind = Marker::kSyncBackend;
    } else if (gone(*s->backend)) {
      m->kind = Marker::kDone;
    } else if (s->backend->api.event_create == nullptr) {
      m->kind = Marker::kSyncStream;
    } else {
      Backend& sb = *s->backend;
      auto st = call_plugin(sb, "event_create", [&] {
        return sb.api.event_create(s->device, ACCEL_EVENT_DEFAULT, &m->native);
      });
      if (st != ACCEL_SUCCESS) {
        delete m;
        return st;
      }
      m->kind = Marker::kEvent;
      m->backend = &sb;
    }
    *ev = m;
    return ACCEL_SUCCESS;
  }

  accel_status_t event_record(alloc::EventHandle ev, alloc::StreamKey stream) override {
    Marker* m = as_marker(ev);
    const accel_stream_s* s = as_stream(stream);
    if (m->kind != Marker::kSyncBackend && m->kind != Marker::kDone && !usable(s)) {
      // Destroyed since event_create.
      if (m->kind == Marker::kEvent) release_event(*m);
      m->kind = Marker::kSyncBackend;
    }
    switch (m->kind) {
      case Marker::kDone:
        return ACCEL_SUCCESS;
      case Marker::kEvent:
        if (s->backend != m->backend) return ACCEL_ERROR_NOT_READY;  // slot reused: try again
        return call_plugin(*m->backend, "event_record",
                           [&] { return m->backend->api.event_record(m->native, s->native); });
      case Marker::kSyncStream:
        // Waiting would wait for the calling host function: the cache tries
        // again at a later allocation.
        if (running_on_stream(s)) return ACCEL_ERROR_NOT_READY;
        return call_plugin(*s->backend, "stream_synchronize",
                           [&] { return s->backend->api.stream_synchronize(s->native); });
      case Marker::kSyncBackend:
        return synchronize_backend();
    }
    return ACCEL_ERROR_INTERNAL;
  }

  accel_status_t event_query(alloc::EventHandle ev) override {
    Marker* m = as_marker(ev);
    if (m->kind != Marker::kEvent || gone(*m->backend)) return ACCEL_SUCCESS;
    // "Not yet" is an answer, not a failure: it must not become the
    // calling thread's last error (accel_host_malloc succeeds).
    begin_plugin_call();
    auto st = m->backend->api.event_query(m->native);
    if (st == ACCEL_SUCCESS || st == ACCEL_ERROR_NOT_READY) return st;
    return finish_plugin_call(*m->backend, "event_query", st);
  }

  accel_status_t event_synchronize(alloc::EventHandle ev) override {
    Marker* m = as_marker(ev);
    if (m->kind != Marker::kEvent || gone(*m->backend)) return ACCEL_SUCCESS;
    // A host function may be what the marker waits for: look, never wait.
    if (running_host_call() != nullptr) return event_query(ev);
    return call_plugin(*m->backend, "event_synchronize",
                       [&] { return m->backend->api.event_synchronize(m->native); });
  }

  void event_destroy(alloc::EventHandle ev) override {
    Marker* m = as_marker(ev);
    if (m->kind == Marker::kEvent) release_event(*m);
    delete m;
  }

 private:
  static void release_event(Marker& m) {
    if (!gone(*m.backend)) {
      (void)call_plugin(*m.backend, "event_destroy",
                        [&] { return m.backend->api.event_destroy(m.native); });
    }
    m.native = nullptr;
    m.backend = nullptr;
  }

  // A stream that used the memory was destroyed before its work was marked
  // (the core marks streams as they are destroyed, so only when that
  // failed): wait for everything the backend runs.
  accel_status_t synchronize_backend() {
    if (running_host_call() != nullptr) return ACCEL_ERROR_NOT_READY;
    for (int32_t d = 0; d < b_.device_count; ++d) {
      auto st = call_plugin(b_, "device_synchronize", [&] { return b_.api.device_synchronize(d); });
      if (st != ACCEL_SUCCESS) return st;
    }
    return ACCEL_SUCCESS;
  }

  Backend& b_;
};

struct HostMemory {
  explicit HostMemory(Backend& b) : backend(b), ops(b), cache(ops) {}
  Backend& backend;
  PluginHostOps ops;
  alloc::HostCache cache;
  HostMemory* next = nullptr;
};

// Never destroyed, like the backends: exit() may run while other threads
// still free pinned memory. A list read without the lock (entries are only
// ever prepended, and published with a release store).
std::mutex g_registry_mutex;
std::atomic<HostMemory*> g_head{nullptr};
// Set once the first cache exists: until then no block can be in use, and
// note_host_use returns after one load.
std::atomic<bool> g_any_cache{false};

// backend:native statistics.
std::mutex g_native_mutex;
alloc::HostStats g_native_stats;

HostMemory* find(const Backend* b) {
  for (HostMemory* m = g_head.load(std::memory_order_acquire); m != nullptr; m = m->next) {
    if (&m->backend == b) return m;
  }
  return nullptr;
}

void add_stat(alloc::Stat& into, const alloc::Stat& s) {
  into.current += s.current;
  into.peak += s.peak;
  into.allocated += s.allocated;
  into.freed += s.freed;
}

void add_stats(alloc::HostStats& into, const alloc::HostStats& s) {
  add_stat(into.allocation, s.allocation);
  add_stat(into.segment, s.segment);
  add_stat(into.allocated_bytes, s.allocated_bytes);
  add_stat(into.reserved_bytes, s.reserved_bytes);
  into.num_host_alloc += s.num_host_alloc;
  into.num_host_free += s.num_host_free;
}

}  // namespace

alloc::HostCache& host_cache(Backend& b) {
  if (HostMemory* m = find(&b)) [[likely]]
    return m->cache;
  std::lock_guard lock(g_registry_mutex);
  if (HostMemory* m = find(&b)) return m->cache;
  auto* m = new HostMemory(b);
  m->next = g_head.load(std::memory_order_relaxed);
  g_head.store(m, std::memory_order_release);
  g_any_cache.store(true, std::memory_order_release);
  return m->cache;
}

void note_host_use(const Allocation& host, accel_stream_s* stream) {
  if (!g_any_cache.load(std::memory_order_relaxed)) [[likely]]
    return;
  if (host.type != ACCEL_MEMORY_HOST_PINNED || stream == nullptr) return;
  if (HostMemory* m = find(host.backend))
    (void)m->cache.record_use(reinterpret_cast<const void*>(host.base), stream);
}

void note_host_use(const void* host_ptr, accel_stream_s* stream) {
  if (!g_any_cache.load(std::memory_order_relaxed)) [[likely]]
    return;
  Allocation a;
  if (find_allocation(host_ptr, a)) note_host_use(a, stream);
}

void retire_stream_host_memory(accel_stream_s* s) {
  if (!g_any_cache.load(std::memory_order_acquire)) return;
  t_retiring = s;
  for (HostMemory* m = g_head.load(std::memory_order_acquire); m != nullptr; m = m->next)
    (void)m->cache.retire_stream(s);
  t_retiring = nullptr;
}

alloc::HostStats host_cache_stats() {
  alloc::HostStats sum;
  for (HostMemory* m = g_head.load(std::memory_order_acquire); m != nullptr; m = m->next)
    add_stats(sum, m->cache.stats());
  std::lock_guard lock(g_native_mutex);
  add_stats(sum, g_native_stats);
  return sum;
}

accel_status_t empty_host_caches() {
  accel_status_t first = ACCEL_SUCCESS;
  for (HostMemory* m = g_head.load(std::memory_order_acquire); m != nullptr; m = m->next) {
    auto st = ensure_ready(m->backend);
    if (st == ACCEL_SUCCESS) st = m->cache.empty_cache();
    if (first == ACCEL_SUCCESS) first = st;
  }
  return first;
}

namespace {

// One direct host allocation of `bytes` is one segment holding one block:
// counted in (`allocated`) or out.
void native_host_account(size_t bytes, bool allocated) {
  std::lock_guard lock(g_native_mutex);
  auto& s = g_native_stats;
  auto change = [allocated](alloc::Stat& stat, int64_t n) {
    if (allocated) {
      stat.add(n);
    } else {
      stat.sub(n);
    }
  };
  change(s.allocation, 1);
  change(s.segment, 1);
  change(s.allocated_bytes, static_cast<int64_t>(bytes));
  change(s.reserved_bytes, static_cast<int64_t>(bytes));
  ++(allocated ? s.num_host_alloc : s.num_host_free);
}

}  // namespace

void native_host_account_alloc(size_t bytes) { native_host_account(bytes, true); }
void native_host_account_free(size_t bytes) { native_host_account(bytes, false); }

void lock_host_caches_for_fork() {
  g_registry_mutex.lock();
  for (HostMemory* m = g_head.load(std::memory_order_acquire); m != nullptr; m = m->next)
    m->cache.mutex().lock();
  g_native_mutex.lock();
}

void unlock_host_caches_after_fork() {
  g_native_mutex.unlock();
  for (HostMemory* m = g_head.load(std::memory_order_acquire); m != nullptr; m = m->next)
    m->cache.mutex().unlock();
  g_registry_mutex.unlock();
}

}  // namespace accel::core
