#include "runtime.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>

#include <fmt/format.h>

#include "callbacks.hpp"
#include "error.hpp"
#include "fork.hpp"
#include "host_services.hpp"
#include "loader.hpp"
#include "log.hpp"
#include "trace.hpp"

namespace accel::core {

namespace {

std::mutex g_discovery_mutex;

void free_thread_state(void* p) {
  delete static_cast<ThreadState*>(p);
  t_hot.cold = nullptr;  // key destructors run on the exiting thread itself
}

pthread_key_t thread_state_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    if (pthread_key_create(&k, free_thread_state) != 0) throw std::bad_alloc();
    return k;
  }();
  return key;
}

// ACCEL_BACKEND=wanted: the backend of that name, or none (with the reason)
// when it is missing or unusable. Never falls back to another backend.
void choose_requested(Runtime& rt, const std::string& wanted) {
  // The copy that took the name (loader.cpp: the one automatic selection
  // would use); failing that, the first copy, whose reason says why.
  Backend* match = nullptr;
  for (auto& b : rt.entries) {
    if (b->loaded && b->name == wanted &&
        (b->status == ACCEL_BACKEND_AVAILABLE || b->status == ACCEL_BACKEND_NO_DEVICES)) {
      match = b.get();
      break;
    }
  }
  for (auto& b : rt.entries) {
    if (match == nullptr && b->loaded && b->name == wanted && b->status != ACCEL_BACKEND_DUPLICATE)
      match = b.get();
  }
  if (match == nullptr) {
    std::vector<std::string> names;
    for (auto& b : rt.entries)
      if (b->loaded && b->status != ACCEL_BACKEND_DUPLICATE) names.push_back(b->name);
    rt.selection_reason = fmt::format(
        "ACCEL_BACKEND={} but no backend named '{}' was found (loaded: {})", wanted, wanted,
        names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
  } else if (!match->usable()) {
    rt.selection_reason = fmt::format("ACCEL_BACKEND={} but backend '{}' is {}: {}", wanted, wanted,
                                      accel_backend_status_name(match->status), match->reason);
  } else {
    rt.current = match;
    rt.selection_reason = fmt::format("chosen by ACCEL_BACKEND={} ({} device{})", wanted,
                                      match->device_count, match->device_count == 1 ? "" : "s");
  }
}

// ACCEL_BACKEND if set (choose_requested), else the highest priority
// available backend (ties by name).
void choose_current(Runtime& rt, const BackendRequest& request) {
  if (!request.name.empty()) {
    choose_requested(rt, request.name);
    return;
  }
  for (auto& b : rt.entries) {
    if (!b->usable()) continue;
    if (rt.current == nullptr || b->priority > rt.current->priority ||
        (b->priority == rt.current->priority && b->name < rt.current->name)) {
      rt.current = b.get();
    }
  }
  if (rt.current != nullptr) {
    std::vector<std::string> tied;
    for (auto& b : rt.entries)
      if (b->usable() && b.get() != rt.current && b->priority == rt.current->priority)
        tied.push_back("'" + b->name + "'");
    rt.selection_reason =
        fmt::format("'{}' has the highest priority ({}) among backends with devices",
                    rt.current->name, rt.current->priority);
    if (!tied.empty()) {
      rt.selection_reason += fmt::format(
          "; tied with {} at that priority, the tie broken by name (bytewise order, first wins)",
          fmt::join(tied, ", "));
    }
  } else {
    size_t loaded = 0;
    for (auto& b : rt.entries) loaded += b->loaded;
    rt.selection_reason =
        loaded == 0 ? "no backend plugin could be loaded (see accelctl backends)"
                    : "no loaded backend has a device (see accelctl backends for each reason)";
  }
}

}  // namespace

std::atomic<Runtime*> g_runtime{nullptr};
std::atomic<Backend*> g_fast_backend{nullptr};
std::atomic<uint64_t> g_stream_epoch{0};
constinit thread_local HotThread t_hot __attribute__((tls_model("initial-exec")));

Runtime& discover_slow() {
  // A plugin's entry, init or device_count calling accel: the discovery
  // lock is this thread's already. Only that thread can get here (the
  // others wait for the lock), so one stand-in object serves.
  if (locked_callback().backend != nullptr) [[unlikely]] {
    static Runtime* reentered = new Runtime();
    reentered->reentered = true;
    reentered->selection_reason = reentry_message("accel");
    fail(ACCEL_ERROR_REENTRANT, reentered->selection_reason);
    return *reentered;
  }
  std::lock_guard lock(g_discovery_mutex);
  if (Runtime* r = g_runtime.load(std::memory_order_acquire)) return *r;
  auto* rt = new Runtime();  // lives until process exit, like the plugins
  const BackendRequest request = requested_backend();
  std::string searched;
  rt->entries = discover_plugins(request, &searched);
  choose_current(*rt, request);
  // No plugin loaded: the reason names the folders looked in, so that
  // accelctl's Selection line says where plugins were expected.
  if (!searched.empty())
    rt->selection_reason += fmt::format("; plugin folders, in search order: {}", searched);
  log().debug("current accelerator: {}", rt->selection_reason);
  // While tracing, the fast paths stay closed: their full paths are traced,
  // and the fast ones need no flag check of their own (docs/tracing.md).
  if (rt->current != nullptr && !rt->current->native_current_device() && !trace_on())
    g_fast_backend.store(rt->current, std::memory_order_release);
  g_runtime.store(rt, std::memory_order_release);
  return *rt;
}

std::mutex& discovery_mutex() { return g_discovery_mutex; }

ThreadState& thread_state_slow() {
  auto* s = new ThreadState();
  // The main thread never runs key destructors: its state stays reachable
  // through t_hot until exit, which is what leak checkers expect.
  pthread_setspecific(thread_state_key(), s);
  t_hot.cold = s;
  return *s;
}

accel_status_t require_current(const char* fn, Backend*& out) {
  // From a plugin callback under a core lock: refused whether or not this
  // particular call would have needed the lock (accel_plugin.h).
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) [[unlikely]]
    return st;
  Runtime& rt = runtime();
  if (rt.current == nullptr) [[unlikely]] {
    if (rt.reentered) return fail(ACCEL_ERROR_REENTRANT, reentry_message(fn));
    return failf(ACCEL_ERROR_NO_ACCELERATOR, "{}: no accelerator is available: {}", fn,
                 rt.selection_reason);
  }
  out = rt.current;
  return ACCEL_SUCCESS;
}

accel_status_t resolve_device(const char* fn, Backend& b, int32_t device, int32_t& out) {
  if (device < 0) {
    out = current_device(b);
    return ACCEL_SUCCESS;
  }
  if (device >= b.device_count) [[unlikely]] {
    return failf(ACCEL_ERROR_INVALID_DEVICE,
                 "{}: device index {} is out of range: backend '{}' has {} device{}, valid "
                 "indices are [0, {})",
                 fn, device, b.name, b.device_count, b.device_count == 1 ? "" : "s",
                 b.device_count);
  }
  out = device;
  return ACCEL_SUCCESS;
}

accel_status_t ensure_ready_slow(Backend& b) {
  if (b.forked.load(std::memory_order_relaxed)) [[unlikely]] {
    return failf(ACCEL_ERROR_FORKED,
                 "backend '{}' {} and is not fork-safe: in the child process exec a new program "
                 "(or use posix_spawn) to use it",
                 b.name, b.forked_reason);
  }
  int state = b.init_state.load(std::memory_order_acquire);
  if (state == 1) [[likely]]
    return ACCEL_SUCCESS;
  if (auto st = check_reentry("accel"); st != ACCEL_SUCCESS) return st;
  std::lock_guard lock(b.init_mutex);
  state = b.init_state.load(std::memory_order_acquire);
  if (state == 0) {
    accel_status_t st = ACCEL_SUCCESS;
    if (b.api.lazy_init != nullptr) {
      LockedCallbackScope in_callback(b, "lazy_init", "initialisation", b.init_mutex);
      begin_plugin_call();
      st = b.api.lazy_init();
      if (st != ACCEL_SUCCESS) {
        finish_plugin_call(b, "lazy_init", st);
        b.init_error = last_error();
      }
    }
    b.init_status = st;
    state = st == ACCEL_SUCCESS ? 1 : 2;
    b.init_state.store(state, std::memory_order_release);
    log().debug("{}: initialised ({})", b.name, accel_status_name(st));
  }
  if (state == 2) return fail(b.init_status, b.init_error);
  return ACCEL_SUCCESS;
}

int32_t current_device(Backend& b) {
  if (b.native_current_device() && !b.forked.load(std::memory_order_relaxed)) {
    int32_t dev = -1;
    if (ensure_ready(b) == ACCEL_SUCCESS && b.api.get_current_device(&dev) == ACCEL_SUCCESS &&
        dev >= 0 && dev < b.device_count) {
      return dev;
    }
  }
  return t_hot.device;
}

accel_status_t set_current_device(Backend& b, int32_t device, uint32_t flags) {
  if (b.native_current_device()) {
    if (auto st = ensure_ready(b); st != ACCEL_SUCCESS) return st;
    auto st = call_plugin(b, "set_current_device",
                          [&] { return b.api.set_current_device(device, flags); });
    if (st != ACCEL_SUCCESS) return st;
  }
  t_hot.device = device;
  return ACCEL_SUCCESS;
}

accel_status_t default_stream(Backend& b, int32_t device, accel_stream_s*& out) {
  DeviceState& ds = b.devices[device];
  if (accel_stream_s* s = ds.default_stream.load(std::memory_order_acquire)) [[likely]] {
    out = s;
    return ACCEL_SUCCESS;
  }
  if (auto st = check_reentry("accel"); st != ACCEL_SUCCESS) return st;
  std::lock_guard lock(b.default_stream_mutex);
  if (accel_stream_s* s = ds.default_stream.load(std::memory_order_acquire)) {
    out = s;
    return ACCEL_SUCCESS;
  }
  accel_plugin_stream_t native = nullptr;
  LockedCallbackScope in_callback(b, "default_stream", "default-stream", b.default_stream_mutex);
  auto st = call_plugin(b, "default_stream", [&] { return b.api.default_stream(device, &native); });
  if (st != ACCEL_SUCCESS) return st;
  auto* s = new accel_stream_s();  // lives until exit; never pooled
  s->backend = &b;
  s->device = device;
  s->is_default = true;
  s->from_native = false;
  s->native = native;
  s->magic.store(kStreamMagic, std::memory_order_release);
  ds.default_stream.store(s, std::memory_order_release);
  out = s;
  return ACCEL_SUCCESS;
}

accel_status_t current_stream(Backend& b, int32_t device, accel_stream_s*& out) {
  auto& streams = thread_state().streams;
  // Read before the handle is checked: a destroy after the check moves it.
  const uint64_t epoch = g_stream_epoch.load(std::memory_order_acquire);
  out = nullptr;
  if (static_cast<size_t>(device) < streams.size()) {
    CurrentStream& cur = streams[static_cast<size_t>(device)];
    accel_stream_s* s = cur.stream;
    // A stream destroyed while current falls back to the default stream
    // rather than handing out a dead handle (or a newer stream that reuses
    // the slot: the generation differs).
    if (s != nullptr && live(s) && s->backend == &b &&
        s->generation.load(std::memory_order_acquire) == cur.generation) {
      out = s;
    } else {
      cur = CurrentStream{};
    }
  }
  if (out == nullptr) {
    if (auto st = default_stream(b, device, out); st != ACCEL_SUCCESS) return st;
  }
  // Remember the answer for the current device's fast path
  // (accel_current_stream), valid until some stream is destroyed.
  if (device == t_hot.device && !b.native_current_device() && !trace_on()) {
    t_hot.stream = out;
    t_hot.stream_epoch = epoch;
    t_hot.stream_device = device;
  }
  return ACCEL_SUCCESS;
}

}  // namespace accel::core
