// Device memory: allocation with statistics, async copies and memset on a
// stream with pointer checks against the core's allocation table, and memory
// info.
#include <algorithm>
#include <cstring>

#include "callbacks.hpp"
#include "checks.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "device_memory.hpp"
#include "host_cache_hook.hpp"
#include "memory_table.hpp"
#include "peer.hpp"
#include "runtime.hpp"
#include "staging.hpp"
#include "stream_sanitizer.hpp"

using namespace accel::core;

namespace {

// A device-side pointer of a copy must lie, with all its bytes, inside one
// live allocation of the stream's device.
accel_status_t check_device_range(const char* fn, const char* what, const void* p, size_t bytes,
                                  const accel_stream_s& s) {
  Allocation a;
  if (!find_allocation(p, a)) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: {} {} is not inside a live allocation made by accel_malloc", fn, what, p);
  }
  if (a.type != ACCEL_MEMORY_DEVICE) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: {} {} is host memory ({}); the copy kind says device memory", fn, what, p,
                 a.type == ACCEL_MEMORY_HOST_PINNED ? "accel_host_malloc" : "accel_host_register");
  }
  if (a.backend != s.backend || a.device != s.device) {
    return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                 "{}: {} {} belongs to {} device {} but the stream to {} device {}", fn, what, p,
                 a.backend->name, a.device, s.backend->name, s.device);
  }
  return check_range_fits(fn, what, p, bytes, a);
}

// A host-side pointer that is really device memory is a mixed-up kind.
// `a` is the table's entry for `p` when it has one (type UNKNOWN otherwise).
accel_status_t check_host_pointer(const char* fn, const char* what, const void* p, Allocation& a) {
  if (!find_allocation(p, a)) {
    a.type = ACCEL_MEMORY_UNKNOWN;
    return ACCEL_SUCCESS;
  }
  if (a.type == ACCEL_MEMORY_DEVICE) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: {} {} is device memory of {} device {}; the copy kind says host memory", fn,
                 what, p, a.backend->name, a.device);
  }
  return ACCEL_SUCCESS;
}

}  // namespace

namespace accel::core {

accel_status_t require_memory_ops(const char* fn, const Backend& b) {
  if (b.api.mem_alloc == nullptr) {
    return failf(ACCEL_ERROR_NOT_SUPPORTED, "{}: backend '{}' does not support device memory", fn,
                 b.name);
  }
  return ACCEL_SUCCESS;
}

accel_status_t allocate_device_memory(const char* fn, Backend& b, int32_t device,
                                      accel_stream_s* stream, size_t bytes, const void* caller,
                                      void** ptr) {
  DeviceMemory& m = device_memory(b, device);
  void* p = nullptr;
  if (caching_allocator()) {
    std::string why;
    auto st = m.allocator.allocate(bytes, stream, caller, &p, why);
    if (st != ACCEL_SUCCESS) {
      if (why.empty()) return st;  // the plugin's failure, already reported
      std::string vendor = last_error();
      return failf(st, "{}: {} device {}: {}{}{}", fn, b.name, device, why,
                   vendor.empty() ? "" : "; the backend said: ", vendor);
    }
  } else {
    // As accel_host_malloc: a size no object can have never reaches the
    // vendor, whose rounding of it could wrap (the caching allocator
    // refuses such sizes itself).
    if (bytes > kMaxObjectBytes) {
      return failf(ACCEL_ERROR_OUT_OF_MEMORY,
                   "{}: {} bytes is more than any allocation can be (at most {} bytes)", fn, bytes,
                   kMaxObjectBytes);
    }
    auto st = call_plugin(b, "mem_alloc", [&] { return b.api.mem_alloc(device, bytes, &p); });
    if (st != ACCEL_SUCCESS) return st;
    if (p == nullptr) {
      return failf(ACCEL_ERROR_INTERNAL, "{}: backend '{}' returned success and a NULL pointer", fn,
                   b.name);
    }
    record_allocation({reinterpret_cast<uintptr_t>(p), bytes, &b, device, ACCEL_MEMORY_DEVICE});
    native_account_alloc(m, bytes);
    // accel_memory_stats' counters; the caching allocator keeps them under
    // its lock instead (four atomic updates less per allocation).
    DeviceState& ds = b.devices[device];
    uint64_t now = ds.allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = ds.peak.load(std::memory_order_relaxed);
    while (now > peak && !ds.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    ds.live_allocations.fetch_add(1, std::memory_order_relaxed);
    ds.total_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  t_hot.last_memory = &m;
  *ptr = p;
  return ACCEL_SUCCESS;
}

namespace {

void count_free(Backend& b, int32_t device, size_t bytes) {
  DeviceState& ds = b.devices[device];
  ds.allocated.fetch_sub(bytes, std::memory_order_relaxed);
  ds.live_allocations.fetch_sub(1, std::memory_order_relaxed);
}

accel_status_t not_live(const char* fn, const void* ptr) {
  return failf(ACCEL_ERROR_INVALID_ARGUMENT,
               "{}: {} is not a live allocation from accel_malloc (freed twice?)", fn, ptr);
}

accel_status_t inside(const char* fn, const void* ptr, uintptr_t base, size_t bytes) {
  return failf(ACCEL_ERROR_INVALID_ARGUMENT,
               "{}: {} points inside an allocation of {} bytes at {}; pass the pointer "
               "accel_malloc returned",
               fn, ptr, bytes, reinterpret_cast<void*>(base));
}

}  // namespace

accel_status_t free_device_memory(const char* fn, void* ptr, bool async, accel_stream_s* stream,
                                  const void* caller) {
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
  Allocation a;
  if (!find_entry(ptr, a)) return not_live(fn, ptr);
  if (a.type != ACCEL_MEMORY_DEVICE) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is host memory; free it with {}", fn, ptr,
                 a.type == ACCEL_MEMORY_HOST_PINNED ? "accel_host_free" : "accel_host_unregister");
  }
  Backend& b = *a.backend;
  if (auto st = ensure_ready(b); st != ACCEL_SUCCESS) return st;
  if (a.owner != nullptr) {
    // Live first, then the stream: a stale pointer is INVALID_ARGUMENT
    // whatever the stream, as under backend:native.
    alloc::BlockInfo info;
    if (!a.owner->allocator.find(ptr, info)) return not_live(fn, ptr);
    if (info.base != reinterpret_cast<uintptr_t>(ptr))
      return inside(fn, ptr, info.base, info.requested);
  }
  if (async) {
    if (stream == nullptr) {
      if (auto st = current_stream(b, a.device, stream); st != ACCEL_SUCCESS) return st;
    } else if (stream->backend != &b || stream->device != a.device) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: {} belongs to {} device {} but the stream to {} device {}", fn, ptr, b.name,
                   a.device, stream->backend->name, stream->device);
    }
  }
  if (a.owner != nullptr) {
    alloc::BlockInfo info;
    switch (a.owner->allocator.free(ptr, stream, caller, &info)) {
      case alloc::Lookup::kFound:
        t_hot.last_memory = a.owner;
        return ACCEL_SUCCESS;
      case alloc::Lookup::kInside:
        return inside(fn, ptr, info.base, info.requested);
      case alloc::Lookup::kMissing:
        return not_live(fn, ptr);
      case alloc::Lookup::kStreamDead:
        return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                     "{}: the stream was destroyed by another thread during the call; {} is "
                     "still allocated",
                     fn, ptr);
    }
  }
  if (a.base != reinterpret_cast<uintptr_t>(ptr)) return inside(fn, ptr, a.base, a.bytes);
  if (async) {
    // backend:native has no stream order to free in: wait for the stream.
    if (running_on_stream(stream)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: called from a host function on the stream it would wait for", fn);
    }
    if (auto st = call_plugin(b, "stream_synchronize",
                              [&] { return b.api.stream_synchronize(stream->native); });
        st != ACCEL_SUCCESS)
      return st;
  }
  if (!take_allocation(ptr, a)) return not_live(fn, ptr);  // a racing free won
  auto st = call_plugin(b, "mem_free", [&] { return b.api.mem_free(a.device, ptr); });
  if (st != ACCEL_SUCCESS) {
    record_allocation(a);  // nothing changes on failure
    return st;
  }
  count_free(b, a.device, a.bytes);
  native_account_free(device_memory(b, a.device), a.bytes);
  return ACCEL_SUCCESS;
}

}  // namespace accel::core

namespace {

// accel_memcpy_async on a stream that may be capturing: recorded, or
// refused for pageable host memory.
Recorded capture_copy(const char* fn, void* dst, const void* src, size_t bytes,
                      accel_memcpy_kind_t kind, const Allocation& host, accel_stream_s* stream) {
  if (kind != ACCEL_MEMCPY_DEVICE_TO_DEVICE && host.type == ACCEL_MEMORY_UNKNOWN)
    return refuse_pageable_copy(fn, stream);
  return record_op(
      fn, stream,
      {.kind = OpKind::copy, .dst = dst, .src = src, .bytes = bytes, .copy_kind = kind});
}

accel_status_t malloc_impl(int32_t device, size_t bytes, void** ptr, const void* caller) {
  const char* const fn = "accel_malloc";
  return guarded(fn, [&] {
    if (ptr == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: ptr is NULL", fn);
    if (bytes == 0) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: bytes is 0", fn);
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    if (auto st = require_memory_ops(fn, *b); st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_unsafe(fn, b, target); st != ACCEL_SUCCESS) return st;
    }
    accel_stream_s* stream = nullptr;
    if (caching_allocator()) {
      // The thread's cached current stream (as accel_current_stream's fast
      // path), else the full lookup.
      HotThread& h = t_hot;
      if (target == h.device && h.stream_device == target &&
          h.stream_epoch == g_stream_epoch.load(std::memory_order_acquire)) {
        stream = h.stream;
      } else if (auto st = current_stream(*b, target, stream); st != ACCEL_SUCCESS) {
        return st;
      }
    }
    auto st = allocate_device_memory(fn, *b, target, stream, bytes, caller, ptr);
    if (trace_on()) [[unlikely]]
      trace_alloc_result(*b, target, bytes, *ptr, st);
    if (sanitizer::on() && st == ACCEL_SUCCESS) [[unlikely]]
      sanitizer::on_alloc(*ptr, stream);
    return st;
  });
}

accel_status_t free_impl(void* ptr, const void* caller) {
  const char* const fn = "accel_free";
  return guarded(fn, [&] {
    if (ptr == nullptr) return ACCEL_SUCCESS;
    if (capturing_anywhere()) [[unlikely]] {
      Allocation a;
      if (find_allocation(ptr, a)) {
        if (auto st = refuse_unsafe(fn, a.backend, a.device); st != ACCEL_SUCCESS) return st;
      }
    }
    if (sanitizer::on()) [[unlikely]]
      sanitizer::on_free(ptr, nullptr, {fn, caller});
    if (trace_on()) [[unlikely]] {
      const TraceFree traced = trace_free_lookup(ptr);
      auto st = free_device_memory(fn, ptr, false, nullptr, caller);
      trace_free_done(traced, st);
      return st;
    }
    // Most frees are of memory of the device this thread last allocated on
    // or freed: its allocator answers without the process-wide table.
    if (DeviceMemory* m = t_hot.last_memory; m != nullptr && caching_allocator()) {
      if (check_reentry(fn) == ACCEL_SUCCESS && ensure_ready(m->backend) == ACCEL_SUCCESS) {
        accel::alloc::BlockInfo info;
        if (m->allocator.free(ptr, nullptr, caller, &info) == accel::alloc::Lookup::kFound) {
          return ACCEL_SUCCESS;
        }
      }
    }
    return free_device_memory(fn, ptr, false, nullptr, caller);
  });
}

}  // namespace

extern "C" {

accel_status_t accel_malloc(int32_t device, size_t bytes, void** ptr) {
  return malloc_impl(device, bytes, ptr, __builtin_return_address(0));
}

accel_status_t accel_free(void* ptr) { return free_impl(ptr, __builtin_return_address(0)); }

accel_status_t accel_memcpy_async(void* dst, const void* src, size_t bytes,
                                  accel_memcpy_kind_t kind, accel_stream_t stream) {
  const char* const fn = __func__;
  const void* caller = __builtin_return_address(0);
  const accel_status_t result = guarded(fn, [&] {
    if (kind != ACCEL_MEMCPY_HOST_TO_DEVICE && kind != ACCEL_MEMCPY_DEVICE_TO_HOST &&
        kind != ACCEL_MEMCPY_DEVICE_TO_DEVICE) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: unknown copy kind {}", fn,
                   static_cast<int>(kind));
    }
    if (auto st = pick_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    Backend& b = *stream->backend;
    if (auto st = require_memory_ops(fn, b); st != ACCEL_SUCCESS) return st;
    // CUDA and HIP accept 0 bytes whatever the pointers, and frameworks pass
    // NULL for empty tensors: a no-op once the stream is known to be valid.
    if (bytes == 0) return ACCEL_SUCCESS;
    if (dst == nullptr || src == nullptr) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is NULL", fn,
                   dst == nullptr ? "dst" : "src");
    }
    if (kind == ACCEL_MEMCPY_DEVICE_TO_DEVICE && (b.capabilities & ACCEL_PLUGIN_CAP_PEER_COPY)) {
      // Between two devices of the stream's backend: a peer copy, as
      // cudaMemcpyAsync's cudaMemcpyDeviceToDevice is under unified
      // addressing. Without the peer group it stays a device mismatch.
      Allocation d, s;
      if (find_allocation(dst, d) && find_allocation(src, s) && d.type == ACCEL_MEMORY_DEVICE &&
          s.type == ACCEL_MEMORY_DEVICE && d.backend == &b && s.backend == &b &&
          d.device != s.device)
        return peer_copy(fn, dst, d.device, src, s.device, bytes, stream);
    }
    bool dst_device = kind != ACCEL_MEMCPY_DEVICE_TO_HOST;
    bool src_device = kind != ACCEL_MEMCPY_HOST_TO_DEVICE;
    Allocation host;  // the host side's table entry, if any
    auto st = dst_device ? check_device_range(fn, "dst", dst, bytes, *stream)
                         : check_host_pointer(fn, "dst", dst, host);
    if (st != ACCEL_SUCCESS) return st;
    st = src_device ? check_device_range(fn, "src", src, bytes, *stream)
                    : check_host_pointer(fn, "src", src, host);
    if (st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto r = capture_copy(fn, dst, src, bytes, kind, host, stream); r.recorded)
        return r.status;
    }
    TraceSpan span(stream);
    if (kind != ACCEL_MEMCPY_DEVICE_TO_DEVICE && host.type == ACCEL_MEMORY_UNKNOWN) {
      // Pageable host memory: staged or waited for, as CUDA does.
      st = pageable_copy(fn, dst, src, bytes, kind, stream);
    } else {
      st = call_plugin(b, "memcpy_async",
                       [&] { return b.api.memcpy_async(dst, src, bytes, kind, stream->native); });
    }
    if (span) span.end(st, {.kind = SpanKind::copy, .bytes = bytes, .copy_kind = kind});
    // A cached pinned block is not reused before this copy has run.
    if (st == ACCEL_SUCCESS && host.type == ACCEL_MEMORY_HOST_PINNED) note_host_use(host, stream);
    return st;
  });
  // pick_stream chose the stream in place: `stream` is the one copied on.
  // A copy recorded by a capture ran nothing: the sanitizer sees no access.
  if (sanitizer::on() && result == ACCEL_SUCCESS && bytes != 0 && !in_capture(stream))
      [[unlikely]] {
    sanitizer::on_read(src, stream, {fn, caller});
    sanitizer::on_write(dst, stream, {fn, caller});
  }
  return result;
}

accel_status_t accel_memset_async(void* dst, int value, size_t bytes, accel_stream_t stream) {
  const char* const fn = __func__;
  const void* caller = __builtin_return_address(0);
  const accel_status_t result = guarded(fn, [&] {
    if (auto st = pick_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    Backend& b = *stream->backend;
    if (auto st = require_memory_ops(fn, b); st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;  // as accel_memcpy_async
    if (dst == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: dst is NULL", fn);
    if (auto st = check_device_range(fn, "dst", dst, bytes, *stream); st != ACCEL_SUCCESS)
      return st;
    if (capturing_anywhere()) [[unlikely]] {
      GraphOp op{.kind = OpKind::memset, .dst = dst, .bytes = bytes, .value = value};
      if (auto r = record_op(fn, stream, std::move(op)); r.recorded) return r.status;
    }
    TraceSpan span(stream);
    auto st = call_plugin(b, "memset_async",
                          [&] { return b.api.memset_async(dst, value, bytes, stream->native); });
    if (span) span.end(st, {.kind = SpanKind::memset, .bytes = bytes});
    return st;
  });
  if (sanitizer::on() && result == ACCEL_SUCCESS && bytes != 0 && !in_capture(stream)) [[unlikely]]
    sanitizer::on_write(dst, stream, {fn, caller});
  return result;
}

accel_status_t accel_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    if (b->api.mem_get_info == nullptr) {
      return failf(ACCEL_ERROR_NOT_SUPPORTED, "{}: backend '{}' does not report memory info", fn,
                   b->name);
    }
    size_t f = 0, t = 0;
    auto st = call_plugin(*b, "mem_get_info", [&] { return b->api.mem_get_info(target, &f, &t); });
    if (st != ACCEL_SUCCESS) return st;
    if (free_bytes != nullptr) *free_bytes = f;
    if (total_bytes != nullptr) *total_bytes = t;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_memory_stats(int32_t device, accel_memory_stats_t* stats) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_sized_struct(fn, stats, "stats", "accel_memory_stats_t");
        st != ACCEL_SUCCESS)
      return st;
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target, InitBackend::no); st != ACCEL_SUCCESS)
      return st;
    const DeviceState& ds = b->devices[target];
    accel_memory_stats_t full{};
    if (DeviceMemory* m = find_device_memory(*b, target); m != nullptr && caching_allocator()) {
      // The same meaning, kept by the allocator: live bytes as requested.
      const accel::alloc::Stats s = m->allocator.stats();
      full.allocated_bytes = static_cast<uint64_t>(s.requested_bytes[accel::alloc::kAll].current);
      full.peak_allocated_bytes = static_cast<uint64_t>(s.requested_bytes[accel::alloc::kAll].peak);
      full.allocation_count = static_cast<uint64_t>(s.allocation[accel::alloc::kAll].current);
      full.total_allocations = static_cast<uint64_t>(s.lifetime_allocations);
      full.reserved_bytes = static_cast<uint64_t>(s.reserved_bytes[accel::alloc::kAll].current);
      full.peak_reserved_bytes = static_cast<uint64_t>(s.reserved_bytes[accel::alloc::kAll].peak);
    } else {
      full.allocated_bytes = ds.allocated.load(std::memory_order_relaxed);
      full.peak_allocated_bytes = ds.peak.load(std::memory_order_relaxed);
      full.allocation_count = ds.live_allocations.load(std::memory_order_relaxed);
      full.total_allocations = ds.total_allocations.load(std::memory_order_relaxed);
      // No cache: every allocated byte is a vendor byte.
      full.reserved_bytes = full.allocated_bytes;
      full.peak_reserved_bytes = full.peak_allocated_bytes;
    }
    copy_sized_struct(stats, full);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_reset_peak_memory_stats(int32_t device) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target, InitBackend::no); st != ACCEL_SUCCESS)
      return st;
    DeviceState& ds = b->devices[target];
    ds.peak.store(ds.allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
    reset_memory_stats(*b, target, StatsReset::peaks);
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
