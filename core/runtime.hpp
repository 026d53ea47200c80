// The process-wide runtime: discovery result, the current accelerator, lazy
// vendor initialisation, per-thread state and fork handling.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "error.hpp"
#include "handles.hpp"

namespace accel::core {

struct Runtime {
  std::vector<std::unique_ptr<Backend>> entries;
  Backend* current = nullptr;
  std::string selection_reason;
  // The stand-in a plugin callback gets when it calls accel during
  // discovery (callbacks.hpp): empty, and every call that needs a backend
  // fails with ACCEL_ERROR_REENTRANT.
  bool reentered = false;
};

// Set once, by the thread that ran discovery; never reset.
extern std::atomic<Runtime*> g_runtime;
Runtime& discover_slow();

// Runs discovery on the first call (from any number of threads at once: one
// discovery, one answer), then returns the same object until process exit.
inline Runtime& runtime() {
  if (Runtime* r = g_runtime.load(std::memory_order_acquire)) [[likely]]
    return *r;
  return discover_slow();
}

// The current accelerator when discovery has run and it keeps the current
// device in the core (not in the vendor runtime): the case where a query is
// answered from thread-local state alone. nullptr sends callers to the full
// path (first call, no accelerator, or CUDA/HIP-style native device state).
// Published with g_runtime, so the hot path is one load.
extern std::atomic<Backend*> g_fast_backend;
inline Backend* fast_current() { return g_fast_backend.load(std::memory_order_acquire); }

// Bumped (after the handle is marked dead) whenever any stream is destroyed:
// a thread's cached current stream is trusted only while this has not moved
// since the cache was filled, so the hot path never dereferences the handle.
extern std::atomic<uint64_t> g_stream_epoch;

// What every dispatch reads, in one trivially destructible thread_local.
// initial-exec: a plain %fs-relative load instead of a __tls_get_addr call
// per access (Mesa's GL dispatch does the same). It costs a few bytes of the
// static TLS surplus when the library is dlopen'ed, hence kept this small.
struct HotThread {
  int32_t device = 0;  // current device index (backends without native state)
  // Cache of the thread's current stream of `stream_device` (-1: empty),
  // valid while g_stream_epoch equals stream_epoch.
  int32_t stream_device = -1;
  accel_stream_s* stream = nullptr;
  uint64_t stream_epoch = 0;
  // host->set_error was called during the current plugin call.
  bool plugin_error_set = false;
  // A plugin callback runs under a core lock on this thread (callbacks.hpp):
  // lets check_reentry answer from here without the colder thread_local.
  bool in_locked_callback = false;
  struct ThreadState* cold = nullptr;  // see thread_state()
  // The device whose allocator served this thread's last accel_malloc or
  // accel_free: accel_free asks it first, before the process-wide table.
  struct DeviceMemory* last_memory = nullptr;
};
extern constinit thread_local HotThread t_hot __attribute__((tls_model("initial-exec")));

// Per-thread state off the hot path: the current stream per device of the
// current accelerator (torch semantics; nullptr: default stream), with the
// generation of the handle when it was set (a destroyed and reused handle is
// not mistaken for the one set), and the last-error strings.
struct CurrentStream {
  accel_stream_s* stream = nullptr;
  uint32_t generation = 0;
};
struct ThreadState {
  std::vector<CurrentStream> streams;
  std::string last_error;
  PluginError plugin_error;
  std::string build_log;  // of the thread's last accel_module_load
};

// The calling thread's ThreadState, created on first use. Not a C++
// thread_local: those are destroyed in reverse order of construction, so a
// user's thread_local built before the thread's first accel call (an
// accel::StreamGuard, say) would call accel from its destructor after ours
// was gone. A pthread key destructor frees it instead, and those run after
// every thread_local destructor of the thread.
ThreadState& thread_state_slow();
inline ThreadState& thread_state() {
  if (ThreadState* s = t_hot.cold) [[likely]]
    return *s;
  return thread_state_slow();
}

// Drops the calling thread's current-stream cache (after set_stream, or in a
// fork child whose backend just became unusable).
inline void forget_stream_cache() { t_hot.stream_device = -1; }

// The current accelerator, or ACCEL_ERROR_NO_ACCELERATOR naming `fn`.
accel_status_t require_current(const char* fn, Backend*& out);

// Turns an optional device argument into an index of `b`: negative means the
// calling thread's current device; out of range is ACCEL_ERROR_INVALID_DEVICE
// with a message naming the range.
accel_status_t resolve_device(const char* fn, Backend& b, int32_t device, int32_t& out);

// Checks that `b` may be used in this process (fork) and runs its lazy_init
// once. Every operation that reaches a vendor runtime goes through it; after
// the first success it is two relaxed/acquire loads, inlined.
accel_status_t ensure_ready_slow(Backend& b);
inline accel_status_t ensure_ready(Backend& b) {
  if (!b.forked.load(std::memory_order_relaxed) &&
      b.init_state.load(std::memory_order_acquire) == 1) [[likely]]
    return ACCEL_SUCCESS;
  return ensure_ready_slow(b);
}

// True once lazy_init has succeeded (accel_synchronize skips a backend that
// was never initialised).
inline bool initialised(const Backend& b) {
  return b.init_state.load(std::memory_order_acquire) == 1;
}

// Thread's current device of `b` (vendor's view for native backends).
int32_t current_device(Backend& b);

// Sets the thread's current device of `b`; `device` already validated.
accel_status_t set_current_device(Backend& b, int32_t device, uint32_t flags);

// The default stream handle of `device` (created on first use).
accel_status_t default_stream(Backend& b, int32_t device, accel_stream_s*& out);

// The calling thread's current stream of `device` (ready backend assumed).
accel_status_t current_stream(Backend& b, int32_t device, accel_stream_s*& out);

}  // namespace accel::core
