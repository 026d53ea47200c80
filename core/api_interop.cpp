// Native handles (ABI 1.1): the vendor objects behind accel's streams, events
// and devices, and accel streams that wrap a vendor queue the program made.
#include <cstring>
#include <mutex>
#include <string>

#include "checks.hpp"
#include "fork.hpp"
#include "guard.hpp"
#include "host_services.hpp"
#include "plugin_groups.hpp"

using namespace accel::core;

namespace {

accel_status_t check_out(const char* fn, const accel_native_handle_t* out) {
  return check_sized_struct(fn, out, "out", "accel_native_handle_t");
}

// Runs the plugin's query into a zeroed full-size struct, then copies as
// much as the caller's struct_size holds: a caller built against an older
// accel.h never gets bytes past its struct.
template <typename Query>
accel_status_t fill_native(const char* fn, Backend& b, const char* op, accel_native_handle_t* out,
                           Query&& query) {
  accel_native_handle_t full{};
  full.struct_size = sizeof full;
  full.ordinal = -1;
  auto st = call_plugin(b, op, [&] { return query(&full); });
  if (st != ACCEL_SUCCESS) return st;
  if (full.type == ACCEL_NATIVE_NONE) {
    return failf(ACCEL_ERROR_INTERNAL, "{}: backend '{}' returned success and no handle type", fn,
                 b.name);
  }
  full.backend = b.name.c_str();  // the core's copy: static storage for the caller
  copy_sized_struct(out, full);
  return ACCEL_SUCCESS;
}

// The current accelerator, ready and with native handles, and `device`
// (negative: current) resolved to an index of it.
accel_status_t native_device(const char* fn, int32_t device, Backend*& b, int32_t& target) {
  if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
  return require_group(fn, *b, PluginGroup::native_handles);
}

// accel_stream_native_handle's full path: first query of a stream, NULL
// stream, errors. Out of line, so the cached path below stays small.
[[gnu::noinline]] accel_status_t stream_native_handle_full(accel_stream_t stream,
                                                           accel_native_handle_t* out) {
  const char* const fn = "accel_stream_native_handle";
  return guarded(fn, [&] {
    if (auto st = check_out(fn, out); st != ACCEL_SUCCESS) return st;
    if (auto st = pick_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    Backend& b = *stream->backend;
    if (auto st = require_group(fn, b, PluginGroup::native_handles); st != ACCEL_SUCCESS) return st;
    accel_native_handle_t full{};
    if (stream->native_cached.load(std::memory_order_acquire)) {
      full = stream->native_handle;
    } else {
      // Racing first queries both ask the plugin and store the same answer;
      // nothing is stored for a stream destroyed meanwhile (generation).
      const uint32_t generation = stream->generation.load(std::memory_order_acquire);
      full.struct_size = sizeof full;
      auto st = fill_native(fn, b, "stream_native_handle", &full, [&](accel_native_handle_t* h) {
        return b.api.stream_native_handle(stream->native, h);
      });
      if (st != ACCEL_SUCCESS) return st;
      std::lock_guard lock(stream_pool().mutex());
      // Not while tracing: the uncached path is the traced one.
      if (!trace_on() && !stream->native_cached.load(std::memory_order_relaxed) &&
          stream->generation.load(std::memory_order_relaxed) == generation) {
        stream->native_handle = full;
        stream->native_cached.store(true, std::memory_order_release);
      }
    }
    copy_sized_struct(out, full);
    return ACCEL_SUCCESS;
  });
}

// Wraps that take ownership, one at a time: two of one queue must not both
// pass owner_of before either wrapper is live.
std::mutex g_take_mutex;

// The vendor queue behind `s`, or nullptr when the plugin cannot say. The
// caller keeps `s` from being destroyed meanwhile (a default stream never
// is; a pooled one is held by the pool's lock: see owner_of).
void* queue_of(Backend& b, accel_stream_s* s) {
  if (s->native_cached.load(std::memory_order_acquire)) return s->native_handle.handle;
  accel_native_handle_t h{};
  h.struct_size = sizeof h;
  h.ordinal = -1;
  begin_plugin_call();
  if (b.api.stream_native_handle(s->native, &h) != ACCEL_SUCCESS) return nullptr;
  return h.handle;
}

// What to call a stream that owns its queue, for a refusal.
std::string owner_name(const accel_stream_s& s) {
  if (s.is_default)
    return fmt::format("the default stream of device {} ({})", s.device, s.backend->name);
  return fmt::format("accel stream {} of device {} ({})", static_cast<const void*>(&s), s.device,
                     s.backend->name);
}

// The live accel stream of `b` that owns the vendor queue `queue` (its
// default streams, accel_stream_create's, and wrappers that took
// ownership), or nullptr. Borrowed wrappers own nothing and are skipped.
const accel_stream_s* owner_of(Backend& b, const void* queue) {
  for (int32_t d = 0; d < b.device_count; ++d) {
    accel_stream_s* s = b.devices[d].default_stream.load(std::memory_order_acquire);
    if (s != nullptr && queue_of(b, s) == queue) return s;
  }
  // Under the pool's lock: a stream seen live here cannot reach its
  // plugin destroy until the lock is let go (accel_stream_destroy marks it
  // dead, then takes this lock, then destroys), so asking the plugin for
  // its queue never touches a destroyed one.
  const accel_stream_s* found = nullptr;
  stream_pool().for_each_locked([&](accel_stream_s* s) {
    if (found != nullptr || !live(s) || s->backend != &b || s->borrowed || s->is_default) return;
    if (queue_of(b, s) == queue) found = s;
  });
  return found;
}

}  // namespace

extern "C" {

accel_status_t accel_stream_native_handle(accel_stream_t stream, accel_native_handle_t* out) {
  // Fast path: a live stream whose handle was asked before, of a backend
  // still usable in this process. Only a copy: no lock is taken, so a call
  // from a plugin callback cannot deadlock here and is not refused.
  // A caller's struct of this build's size (or larger) gets a fixed-size copy.
  // native_cached is set only on a live stream and cleared by its destroy,
  // so it stands for the liveness check too (a call racing the destroy of
  // its own stream is the caller's error, as everywhere).
  if (stream != nullptr && out != nullptr && out->struct_size >= sizeof(accel_native_handle_t) &&
      stream->native_cached.load(std::memory_order_acquire) &&
      !g_any_forked.load(std::memory_order_relaxed)) [[likely]] {
    const size_t caller_size = out->struct_size;
    *out = stream->native_handle;
    out->struct_size = caller_size;
    return ACCEL_SUCCESS;
  }
  return stream_native_handle_full(stream, out);
}

accel_status_t accel_event_native_handle(accel_event_t event, accel_native_handle_t* out) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_out(fn, out); st != ACCEL_SUCCESS) return st;
    if (auto st = check_event(fn, event); st != ACCEL_SUCCESS) return st;
    Backend& b = *event->backend;
    if (auto st = require_group(fn, b, PluginGroup::native_handles); st != ACCEL_SUCCESS) return st;
    return fill_native(fn, b, "event_native_handle", out, [&](accel_native_handle_t* h) {
      return b.api.event_native_handle(event->native, h);
    });
  });
}

accel_status_t accel_device_native_handle(int32_t device, accel_native_handle_t* out) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_out(fn, out); st != ACCEL_SUCCESS) return st;
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = native_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    return fill_native(fn, *b, "device_native_handle", out, [&](accel_native_handle_t* h) {
      return b->api.device_native_handle(target, h);
    });
  });
}

accel_status_t accel_stream_from_native(int32_t device, const accel_native_handle_t* native,
                                        uint32_t flags, accel_stream_t* stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (stream == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is NULL", fn);
    if (native == nullptr ||
        native->struct_size < offsetof(accel_native_handle_t, handle) + sizeof(void*)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: native is NULL or its struct_size does not reach `handle` (set it to "
                   "sizeof(accel_native_handle_t))",
                   fn);
    }
    if (native->handle == nullptr)
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: native->handle is NULL", fn);
    if ((flags & ~ACCEL_NATIVE_TAKE_OWNERSHIP) != 0) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: unknown flag bits {:#x}", fn,
                   flags & ~ACCEL_NATIVE_TAKE_OWNERSHIP);
    }
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = native_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    // The backend's own type, learned from its device handle: a queue of
    // another vendor must never reach the plugin as if it were its own.
    accel_native_handle_t own{};
    own.struct_size = sizeof own;
    auto st = call_plugin(*b, "device_native_handle",
                          [&] { return b->api.device_native_handle(target, &own); });
    if (st != ACCEL_SUCCESS) return st;
    if (native->type != own.type) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: native->type is {} but the current accelerator '{}' takes handles of "
                   "type {}",
                   fn, static_cast<int>(native->type), b->name, static_cast<int>(own.type));
    }
    // Two owners of one queue would release it twice: refuse a queue an
    // accel stream owns. Held until the new wrapper is live (owner_of).
    std::unique_lock<std::mutex> take_lock;
    if ((flags & ACCEL_NATIVE_TAKE_OWNERSHIP) != 0) {
      take_lock = std::unique_lock<std::mutex>(g_take_mutex);
      if (const accel_stream_s* owner = owner_of(*b, native->handle)) {
        return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                     "{}: with ACCEL_NATIVE_TAKE_OWNERSHIP: the vendor queue {} is owned by {}, "
                     "which releases it when destroyed; wrap it without "
                     "ACCEL_NATIVE_TAKE_OWNERSHIP (flags 0) to borrow it",
                     fn, native->handle, owner_name(*owner));
      }
    }
    // The plugin reads only the caller's struct_size; pass a full copy.
    accel_native_handle_t copy{};
    std::memcpy(&copy, native, std::min(native->struct_size, sizeof copy));
    copy.struct_size = sizeof copy;
    if (native->struct_size < offsetof(accel_native_handle_t, ordinal) + sizeof copy.ordinal)
      copy.ordinal = -1;
    accel_plugin_stream_t plugin_stream = nullptr;
    st = call_plugin(*b, "stream_from_native", [&] {
      return b->api.stream_from_native(target, &copy, flags, &plugin_stream);
    });
    if (st != ACCEL_SUCCESS) return st;
    if (plugin_stream == nullptr) {
      return failf(ACCEL_ERROR_INTERNAL, "{}: backend '{}' returned success and a NULL stream", fn,
                   b->name);
    }
    accel_stream_s* s = stream_pool().acquire();
    s->backend = b;
    s->device = target;
    s->priority = 0;
    s->is_default = false;
    s->borrowed = (flags & ACCEL_NATIVE_TAKE_OWNERSHIP) == 0;
    s->from_native = true;
    s->native = plugin_stream;
    s->magic.store(kStreamMagic, std::memory_order_release);
    *stream = s;
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
