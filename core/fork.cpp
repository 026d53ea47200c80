#include "fork.hpp"

#include <pthread.h>

#include "callbacks.hpp"
#include "handles.hpp"
#include "log.hpp"
#include "device_memory.hpp"
#include "graph.hpp"
#include "host_cache_hook.hpp"
#include "memory_table.hpp"
#include "runtime.hpp"
#include "stream_sanitizer.hpp"
#include "trace.hpp"

namespace accel::core {

namespace {

// The runtime once discovery has published it (g_runtime), or nullptr.
// Discovery publishes it with the discovery lock held and prepare() takes
// that lock first, so prepare, release and child all see the same answer.
Runtime* discovered_runtime() { return g_runtime.load(std::memory_order_acquire); }
// The logger's lock as prepare() took it (the logger may be created between
// prepare and release by a thread that holds none of the other locks).
std::mutex* g_log_locked = nullptr;

// Last of all: log lines are written while holding any of the others.
void lock_log() {
  g_log_locked = log_mutex();
  if (g_log_locked != nullptr) g_log_locked->lock();
}
void unlock_log() {
  if (g_log_locked != nullptr) g_log_locked->unlock();
  g_log_locked = nullptr;
}

// A plugin callback that calls fork() itself (a vendor library forking a
// helper while counting devices, say) runs these handlers on a thread that
// already holds the core lock the callback runs under: taking it again would
// hang the process. That one lock is skipped; the child gets it as this
// thread holds it, and the callback releases it there as here.
std::mutex* held_by_caller() { return locked_callback().held; }
void lock_unless_held(std::mutex& m) {
  if (&m != held_by_caller()) m.lock();
}
void unlock_unless_held(std::mutex& m) {
  if (&m != held_by_caller()) m.unlock();
}

// Lock order: discovery, per-backend init and default-stream locks, the
// device allocators (registry first), the allocation table, the handle pools, the stream
// sanitizer's lock. No other path takes two of these. Before discovery has finished only the
// discovery lock exists to take: a fork() while another thread runs discovery waits for it, so the
// child never inherits the lock held by a thread it does not have (its first accel call would hang
// forever).
void prepare() {
  lock_unless_held(discovery_mutex());
  Runtime* rt = discovered_runtime();
  if (rt == nullptr) {
    sanitizer::lock_for_fork();
    lock_log();
    return;
  }
  for (auto& b : rt->entries) {
    lock_unless_held(b->init_mutex);
    lock_unless_held(b->default_stream_mutex);
  }
  lock_device_memory_for_fork();
  lock_host_caches_for_fork();
  allocation_mutex().lock();
  stream_pool().mutex().lock();
  event_pool().mutex().lock();
  graph_registry_mutex().lock();
  stream_name_mutex().lock();
  sanitizer::lock_for_fork();
  lock_log();
}

void release() {
  unlock_log();
  sanitizer::unlock_after_fork();
  Runtime* rt = discovered_runtime();
  if (rt == nullptr) {
    unlock_unless_held(discovery_mutex());
    return;
  }
  stream_name_mutex().unlock();
  graph_registry_mutex().unlock();
  event_pool().mutex().unlock();
  stream_pool().mutex().unlock();
  allocation_mutex().unlock();
  unlock_host_caches_after_fork();
  unlock_device_memory_after_fork();
  for (auto it = rt->entries.rbegin(); it != rt->entries.rend(); ++it) {
    unlock_unless_held((*it)->default_stream_mutex);
    unlock_unless_held((*it)->init_mutex);
  }
  unlock_unless_held(discovery_mutex());
}

void child() {
  release();
  trace_after_fork_child();
  // fork() runs this in the forking thread, the only one the child has:
  // its cached current stream may belong to a backend that is unusable now.
  forget_stream_cache();
  Runtime* rt = discovered_runtime();
  if (rt == nullptr) return;
  // One rule for every backend: the child may not use a backend that is not
  // fork-safe once the parent initialised it, or once the parent's
  // discovery (init + device_count) may have started vendor threads: PoCL's
  // workers, zeInit's driver threads, cuInit, a HIP runtime. Such a child
  // would otherwise block forever on threads it does not have. The plugin
  // says its discovery left nothing behind with DISCOVERY_FORK_SAFE
  // (capabilities are read again after device_count, so it can depend on
  // how it counted).
  for (auto& b : rt->entries) {
    if ((b->capabilities & ACCEL_PLUGIN_CAP_FORK_SAFE) != 0) continue;
    if (initialised(*b)) {
      b->forked_reason = "was initialised before fork()";
    } else if (b->discovered && (b->capabilities & ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE) == 0) {
      b->forked_reason =
          "counted its devices through the vendor runtime before fork(), which may have "
          "started vendor threads the child does not have (the plugin does not declare "
          "ACCEL_CAP_DISCOVERY_FORK_SAFE)";
    } else {
      continue;
    }
    b->forked.store(true, std::memory_order_relaxed);
    g_any_forked.store(true, std::memory_order_relaxed);
  }
}

// Registered when the library is loaded, not at the end of discovery: a
// fork() during the first discovery must already take the discovery lock.
[[maybe_unused]] const int g_handlers_registered = pthread_atfork(prepare, release, child);

}  // namespace

std::atomic<bool> g_any_forked{false};

}  // namespace accel::core
