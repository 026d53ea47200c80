// Page-locked host memory (ABI 1.1): allocation and registration through the
// current accelerator, tracked in the core's memory table next to device
// allocations, and the pointer queries that table answers. accel_host_malloc
// and accel_host_free go through the backend's pinned memory cache
// (host_cache_hook.hpp) unless ACCEL_ALLOC_CONF says backend:native. The
// table holds live blocks only, with the size asked for; cached blocks are
// in no table.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "checks.hpp"
#include "device_memory.hpp"
#include "guard.hpp"
#include "host_cache_hook.hpp"
#include "host_services.hpp"
#include "memory_table.hpp"
#include "plugin_groups.hpp"

using namespace accel::core;

namespace {

// Process-wide: host memory belongs to no device.
struct HostStats {
  std::atomic<uint64_t> allocated{0}, peak{0}, live{0}, total{0};
  std::atomic<uint64_t> registered_bytes{0}, registered{0};
};
HostStats g_host_stats;

const char* type_words(accel_memory_type_t t) {
  switch (t) {
    case ACCEL_MEMORY_DEVICE:
      return "device memory from accel_malloc";
    case ACCEL_MEMORY_HOST_PINNED:
      return "pinned host memory from accel_host_malloc";
    case ACCEL_MEMORY_HOST_REGISTERED:
      return "a host range registered with accel_host_register";
    default:
      return "memory accel does not know";
  }
}

// The current accelerator, ready, with the host-memory group.
accel_status_t host_backend(const char* fn, Backend*& b) {
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
  if (auto st = require_current(fn, b); st != ACCEL_SUCCESS) return st;
  if (auto st = ensure_ready(*b); st != ACCEL_SUCCESS) return st;
  return require_group(fn, *b, PluginGroup::host_memory);
}

accel_status_t check_flags(const char* fn, uint32_t flags) {
  if (flags != 0)
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: flags must be 0 (got {:#x})", fn, flags);
  return ACCEL_SUCCESS;
}

// Removes the entry of `type` starting exactly at `ptr`, or explains why
// there is none (nothing is removed then).
accel_status_t take_exact(const char* fn, void* ptr, accel_memory_type_t type, const char* expected,
                          Allocation& out) {
  Allocation a;
  if (!find_allocation(ptr, a)) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is not {} (freed twice?)", fn, ptr,
                 expected);
  }
  if (a.type != type) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is {}, not {}", fn, ptr, type_words(a.type),
                 expected);
  }
  if (a.base != reinterpret_cast<uintptr_t>(ptr)) {
    return failf(
        ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} points {} bytes into {} at {}; pass its start", fn,
        ptr, reinterpret_cast<uintptr_t>(ptr) - a.base, expected, reinterpret_cast<void*>(a.base));
  }
  // Exactly one of two racing frees wins the entry.
  if (!take_allocation(ptr, out)) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} was freed by another thread", fn, ptr);
  }
  return ACCEL_SUCCESS;
}

}  // namespace

extern "C" {

accel_status_t accel_host_malloc(size_t bytes, uint32_t flags, void** ptr) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (ptr == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: ptr is NULL", fn);
    if (bytes == 0) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: bytes is 0", fn);
    if (auto st = check_flags(fn, flags); st != ACCEL_SUCCESS) return st;
    // No object is larger than PTRDIFF_MAX, and a vendor's rounding of a
    // size near SIZE_MAX would wrap into a tiny block recorded as huge.
    if (bytes > kMaxObjectBytes) {
      return failf(ACCEL_ERROR_OUT_OF_MEMORY,
                   "{}: {} bytes is more than any allocation can be (at most {} bytes)", fn, bytes,
                   kMaxObjectBytes);
    }
    Backend* b = nullptr;
    if (auto st = host_backend(fn, b); st != ACCEL_SUCCESS) return st;
    const bool caching = caching_allocator();
    void* p = nullptr;
    if (caching) {
      if (accel::alloc::host_block_size(bytes) == 0) {
        return failf(ACCEL_ERROR_OUT_OF_MEMORY,
                     "{}: {} bytes do not round up to a power of two that exists", fn, bytes);
      }
      auto st = host_cache(*b).allocate(bytes, &p);
      if (st == ACCEL_ERROR_INTERNAL) {
        // The cache's own refusal of what the plugin returned.
        return failf(st,
                     "{}: backend '{}' returned success and a NULL pointer, or pinned memory "
                     "that is still in use",
                     fn, b->name);
      }
      if (st != ACCEL_SUCCESS) return st;
    } else {
      auto st = call_plugin(*b, "host_alloc", [&] { return b->api.host_alloc(bytes, flags, &p); });
      if (st != ACCEL_SUCCESS) return st;
      if (p == nullptr) {
        return failf(ACCEL_ERROR_INTERNAL, "{}: backend '{}' returned success and a NULL pointer",
                     fn, b->name);
      }
    }
    Allocation a{reinterpret_cast<uintptr_t>(p), bytes, b, -1, ACCEL_MEMORY_HOST_PINNED};
    Allocation clash;
    if (!record_if_disjoint(a, clash)) {
      if (caching) {
        (void)host_cache(*b).free(p);
      } else {
        call_plugin(*b, "host_free", [&] { return b->api.host_free(p); });
      }
      return failf(ACCEL_ERROR_INTERNAL,
                   "{}: backend '{}' returned {} which overlaps {} at {} that is still live", fn,
                   b->name, p, type_words(clash.type), reinterpret_cast<void*>(clash.base));
    }
    if (!caching) native_host_account_alloc(bytes);
    uint64_t now = g_host_stats.allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = g_host_stats.peak.load(std::memory_order_relaxed);
    while (now > peak &&
           !g_host_stats.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    g_host_stats.live.fetch_add(1, std::memory_order_relaxed);
    g_host_stats.total.fetch_add(1, std::memory_order_relaxed);
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_host_free(void* ptr) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (ptr == nullptr) return ACCEL_SUCCESS;
    if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
    Allocation a;
    if (auto st = take_exact(fn, ptr, ACCEL_MEMORY_HOST_PINNED,
                             "a live allocation from accel_host_malloc", a);
        st != ACCEL_SUCCESS)
      return st;
    Backend& b = *a.backend;
    auto st = ensure_ready(b);
    if (st == ACCEL_SUCCESS) {
      if (caching_allocator()) {
        // Reused once the copies queued from it (accel_memcpy_async told
        // the cache their streams) have completed.
        if (host_cache(b).free(ptr) != accel::alloc::Lookup::kFound) {
          st = failf(ACCEL_ERROR_INTERNAL,
                     "{}: {} is in the memory table but not in the cache of '{}'", fn, ptr, b.name);
        }
      } else {
        st = call_plugin(b, "host_free", [&] { return b.api.host_free(ptr); });
        if (st == ACCEL_SUCCESS) native_host_account_free(a.bytes);
      }
    }
    if (st != ACCEL_SUCCESS) {
      record_allocation(a);  // nothing changes on failure
      return st;
    }
    g_host_stats.allocated.fetch_sub(a.bytes, std::memory_order_relaxed);
    g_host_stats.live.fetch_sub(1, std::memory_order_relaxed);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_host_register(void* ptr, size_t bytes, uint32_t flags) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (ptr == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: ptr is NULL", fn);
    if (bytes == 0) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: bytes is 0", fn);
    if (reinterpret_cast<uintptr_t>(ptr) + bytes < reinterpret_cast<uintptr_t>(ptr)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} + {} bytes wraps around the address space",
                   fn, ptr, bytes);
    }
    if (auto st = check_flags(fn, flags); st != ACCEL_SUCCESS) return st;
    Backend* b = nullptr;
    if (auto st = host_backend(fn, b); st != ACCEL_SUCCESS) return st;
    // Claim the range first, so that two threads cannot register
    // overlapping ranges; give it back if the plugin refuses.
    Allocation a{reinterpret_cast<uintptr_t>(ptr), bytes, b, -1, ACCEL_MEMORY_HOST_REGISTERED};
    Allocation clash;
    if (!record_if_disjoint(a, clash)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: [{}, +{}) overlaps {} of {} bytes at {}", fn,
                   ptr, bytes, type_words(clash.type), clash.bytes,
                   reinterpret_cast<void*>(clash.base));
    }
    auto st =
        call_plugin(*b, "host_register", [&] { return b->api.host_register(ptr, bytes, flags); });
    if (st != ACCEL_SUCCESS) {
      Allocation undo;
      take_allocation(ptr, undo);
      return st;
    }
    g_host_stats.registered_bytes.fetch_add(bytes, std::memory_order_relaxed);
    g_host_stats.registered.fetch_add(1, std::memory_order_relaxed);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_host_unregister(void* ptr) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (ptr == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: ptr is NULL", fn);
    if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
    Allocation a;
    if (auto st = take_exact(fn, ptr, ACCEL_MEMORY_HOST_REGISTERED,
                             "the start of a range registered with accel_host_register", a);
        st != ACCEL_SUCCESS)
      return st;
    Backend& b = *a.backend;
    auto st = ensure_ready(b);
    if (st == ACCEL_SUCCESS)
      st = call_plugin(b, "host_unregister", [&] { return b.api.host_unregister(ptr); });
    if (st != ACCEL_SUCCESS) {
      record_allocation(a);
      return st;
    }
    g_host_stats.registered_bytes.fetch_sub(a.bytes, std::memory_order_relaxed);
    g_host_stats.registered.fetch_sub(1, std::memory_order_relaxed);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_pointer_get_attributes(const void* ptr, accel_pointer_attributes_t* attrs) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_sized_struct(fn, attrs, "attrs", "accel_pointer_attributes_t");
        st != ACCEL_SUCCESS)
      return st;
    accel_pointer_attributes_t full{};
    full.struct_size = sizeof full;
    full.type = ACCEL_MEMORY_UNKNOWN;
    full.backend = "";
    full.device = -1;
    Allocation a;
    if (ptr != nullptr && find_allocation(ptr, a)) {
      full.type = a.type;
      full.backend = a.backend->name.c_str();
      full.device = a.type == ACCEL_MEMORY_DEVICE ? a.device : -1;
      full.base = reinterpret_cast<void*>(a.base);
      full.size = a.bytes;
    }
    copy_sized_struct(attrs, full);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_host_memory_stats(accel_host_memory_stats_t* stats) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_sized_struct(fn, stats, "stats", "accel_host_memory_stats_t");
        st != ACCEL_SUCCESS)
      return st;
    accel_host_memory_stats_t full{};
    full.allocated_bytes = g_host_stats.allocated.load(std::memory_order_relaxed);
    full.peak_allocated_bytes = g_host_stats.peak.load(std::memory_order_relaxed);
    full.allocation_count = g_host_stats.live.load(std::memory_order_relaxed);
    full.total_allocations = g_host_stats.total.load(std::memory_order_relaxed);
    full.registered_bytes = g_host_stats.registered_bytes.load(std::memory_order_relaxed);
    full.registered_count = g_host_stats.registered.load(std::memory_order_relaxed);
    copy_sized_struct(stats, full);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_empty_host_cache(void) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
    // Nothing is cached under backend:native, and before the first
    // accel_host_malloc no cache exists: no backend is initialised here.
    return empty_host_caches();
  });
}

accel_status_t accel_host_memory_stats_list(accel_memory_stat_t* stats, size_t capacity,
                                            size_t* count) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_out_array(fn, count, "count", stats, "stats", capacity, "and capacity is");
        st != ACCEL_SUCCESS)
      return st;
    std::vector<accel::alloc::NamedValue> flat;
    accel::alloc::flatten(host_cache_stats(), flat);
    for (size_t i = 0; i < flat.size() && i < capacity; ++i) {
      stats[i].name = flat[i].name;
      stats[i].value = flat[i].value;
    }
    *count = flat.size();
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
