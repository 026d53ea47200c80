// The stream-ordered allocator's entry points (docs/memory.md):
// allocations and frees on a stream, record_stream, empty_cache, statistics
// under torch's names, snapshots and their history.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "alloc/stats.hpp"
#include "callbacks.hpp"
#include "checks.hpp"
#include "device_memory.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "memory_table.hpp"
#include "runtime.hpp"
#include "stream_sanitizer.hpp"

using namespace accel::core;

namespace {

// Statistics of one device: the allocator's, the direct calls' under
// backend:native, or zeros before the first allocation.
accel::alloc::Stats device_stats(const Backend& b, int32_t device) {
  accel::alloc::Stats s;
  if (DeviceMemory* m = find_device_memory(b, device)) {
    if (caching_allocator()) return m->allocator.stats();
    std::lock_guard lock(m->native_mutex);
    s = m->native_stats;
  }
  const size_t max_split = alloc_config().max_split_size;
  s.max_split_size = max_split == SIZE_MAX ? -1 : static_cast<int64_t>(max_split);
  return s;
}

// The stream `stream` names for memory `ptr` (NULL: the current stream of
// its device): live, and of the same backend and device.
accel_status_t stream_for(const char* fn, const Allocation& a, const void* ptr,
                          accel_stream_t& stream) {
  if (stream == nullptr) return current_stream(*a.backend, a.device, stream);
  if (!live(stream)) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is not a live stream (destroyed?)", fn);
  }
  if (stream->backend != a.backend || stream->device != a.device) {
    return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                 "{}: {} belongs to {} device {} but the stream to {} device {}", fn, ptr,
                 a.backend->name, a.device, stream->backend->name, stream->device);
  }
  return ACCEL_SUCCESS;
}

std::string native_snapshot(const Backend& b, int32_t device) {
  nlohmann::json j = nlohmann::json::object();
  j["allocator"] = "native";
  j["config"] = accel::alloc::describe(alloc_config());
  auto& segs = j["segments"] = nlohmann::json::array();
  for (const Allocation& a : entries_of(&b, device)) {
    segs.push_back({{"address", a.base},
                    {"total_size", a.bytes},
                    {"allocated_size", a.bytes},
                    {"active_size", a.bytes},
                    {"requested_size", a.bytes},
                    {"stream", ""},
                    {"segment_type", a.bytes <= accel::alloc::kSmallSize ? "small" : "large"},
                    {"blocks", nlohmann::json::array({{{"address", a.base},
                                                       {"size", a.bytes},
                                                       {"requested_size", a.bytes},
                                                       {"state", "active_allocated"}}})}});
  }
  j["history"] = {{"max_entries", 0}, {"dropped", 0}, {"events", nlohmann::json::array()}};
  return j.dump();
}

}  // namespace

namespace {

// The graph pools of the device (docs/graphs.md) as "graph_pools", and
// "graph_pool": id on each segment block that one of them holds, so a
// snapshot shows which reserved memory belongs to graphs.
void add_graph_pools(const Backend& b, int32_t device, nlohmann::json& j) {
  std::unordered_map<uintptr_t, uint64_t> owner;
  nlohmann::json pools = nlohmann::json::array();
  for (const GraphPool& p : graph_pools_of(&b, device)) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const GraphPool::Block& blk : p.blocks) {
      owner[reinterpret_cast<uintptr_t>(blk.ptr)] = p.id;
      blocks.push_back({{"address", reinterpret_cast<uintptr_t>(blk.ptr)},
                        {"size", blk.bytes},
                        {"in_use", blk.in_use}});
    }
    pools.push_back({{"id", p.id},
                     {"users", p.users},
                     {"from_handle", p.from_handle},
                     {"blocks", std::move(blocks)}});
  }
  if (auto it = j.find("segments"); it != j.end() && !owner.empty()) {
    for (auto& seg : *it) {
      auto blocks = seg.find("blocks");
      if (blocks == seg.end()) continue;
      for (auto& blk : *blocks) {
        auto o = owner.find(blk.value("address", uintptr_t{0}));
        if (o != owner.end()) blk["graph_pool"] = o->second;
      }
    }
  }
  j["graph_pools"] = std::move(pools);
}

// The snapshot a call of this thread could not deliver (size query or
// buffer too small), delivered by its next call: a thread allocating in a
// tight loop cannot starve the query-then-fetch pattern.
struct KeptSnapshot {
  const Backend* backend = nullptr;
  int32_t device = -1;
  std::string text;
};
thread_local KeptSnapshot t_kept_snapshot;

}  // namespace

extern "C" {

accel_status_t accel_malloc_async(size_t bytes, accel_stream_t stream, void** ptr) {
  const char* const fn = __func__;
  const void* caller = __builtin_return_address(0);
  return guarded(fn, [&] {
    if (ptr == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: ptr is NULL", fn);
    if (bytes == 0) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: bytes is 0", fn);
    if (auto st = pick_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    Backend& b = *stream->backend;
    if (auto st = require_memory_ops(fn, b); st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto r = alloc_in_capture(fn, stream, bytes, caller, ptr); r.recorded) return r.status;
    }
    auto st = allocate_device_memory(fn, b, stream->device, stream, bytes, caller, ptr);
    if (trace_on()) [[unlikely]]
      trace_alloc_result(b, stream->device, bytes, *ptr, st);
    if (sanitizer::on() && st == ACCEL_SUCCESS) [[unlikely]]
      sanitizer::on_alloc(*ptr, stream);
    return st;
  });
}

accel_status_t accel_free_async(void* ptr, accel_stream_t stream) {
  const char* const fn = __func__;
  const void* caller = __builtin_return_address(0);
  return guarded(fn, [&] {
    if (stream != nullptr && !live(stream)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is not a live stream (destroyed?)",
                   fn);
    }
    if (ptr == nullptr) return ACCEL_SUCCESS;
    if (capturing_anywhere()) [[unlikely]] {
      accel_stream_t s = stream;
      Allocation a;
      if (s == nullptr && find_allocation(ptr, a) && a.type == ACCEL_MEMORY_DEVICE)
        current_stream(*a.backend, a.device, s);
      if (s != nullptr) {
        if (auto r = free_in_capture(fn, s, ptr); r.recorded) return r.status;
      }
    }
    if (sanitizer::on()) [[unlikely]]
      sanitizer::on_free(ptr, stream, {fn, caller});
    const TraceFree traced = trace_on() ? trace_free_lookup(ptr) : TraceFree{};
    auto st = free_device_memory(fn, ptr, true, stream, caller);
    trace_free_done(traced, st);
    return st;
  });
}

accel_status_t accel_record_stream(void* ptr, accel_stream_t stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) return st;
    if (ptr == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: ptr is NULL", fn);
    Allocation a;
    if (!find_allocation(ptr, a) || a.type != ACCEL_MEMORY_DEVICE) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: {} is not inside a live allocation made by accel_malloc", fn, ptr);
    }
    if (auto st = ensure_ready(*a.backend); st != ACCEL_SUCCESS) return st;
    if (auto st = stream_for(fn, a, ptr, stream); st != ACCEL_SUCCESS) return st;
    Allocation entry;
    if (find_entry(ptr, entry) && entry.owner != nullptr) {
      switch (entry.owner->allocator.record_stream(ptr, stream)) {
        case accel::alloc::Lookup::kMissing:  // freed by another thread since the lookup above
          return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                       "{}: {} is not inside a live allocation made by accel_malloc", fn, ptr);
        case accel::alloc::Lookup::kStreamDead:
          return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                       "{}: the stream was destroyed by another thread during the call", fn);
        case accel::alloc::Lookup::kFound:
        case accel::alloc::Lookup::kInside:
          break;
      }
    }
    if (sanitizer::on()) [[unlikely]]
      sanitizer::on_record_stream(ptr, stream);
    return ACCEL_SUCCESS;  // backend:native: frees are not stream-ordered; nothing to do
  });
}

accel_status_t accel_empty_cache(int32_t device) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target, InitBackend::no); st != ACCEL_SUCCESS)
      return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_unsafe(fn, b, target); st != ACCEL_SUCCESS) return st;
    }
    drain_pending();  // destroyed graphs' memory whose replays have completed
    DeviceMemory* m = find_device_memory(*b, target);
    if (m == nullptr || !caching_allocator()) return ACCEL_SUCCESS;  // nothing cached
    if (auto st = ensure_ready(*b); st != ACCEL_SUCCESS) return st;
    if (auto st = m->allocator.empty_cache(); st != ACCEL_SUCCESS) {
      return failf(st, "{}: {} device {}: {}", fn, b->name, target, last_error());
    }
    trace_memory_event("empty_cache", *b, target, 0, nullptr);
    return ACCEL_SUCCESS;
  });
}

const char* accel_get_allocator_backend(void) { return caching_allocator() ? "caching" : "native"; }

accel_status_t accel_memory_stats_list(int32_t device, accel_memory_stat_t* stats, size_t capacity,
                                       size_t* count) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_out_array(fn, count, "count", stats, "stats", capacity, "but capacity is");
        st != ACCEL_SUCCESS)
      return st;
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target, InitBackend::no); st != ACCEL_SUCCESS)
      return st;
    std::vector<accel::alloc::NamedValue> flat;
    accel::alloc::flatten(device_stats(*b, target), flat);
    for (size_t i = 0; i < std::min(capacity, flat.size()); ++i)
      stats[i] = {flat[i].name, flat[i].value};
    *count = flat.size();
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_reset_accumulated_memory_stats(int32_t device) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target, InitBackend::no); st != ACCEL_SUCCESS)
      return st;
    reset_memory_stats(*b, target, StatsReset::accumulated);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_memory_snapshot(int32_t device, char* buffer, size_t capacity,
                                     size_t* length) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st =
            check_out_array(fn, length, "length", buffer, "buffer", capacity, "but capacity is");
        st != ACCEL_SUCCESS)
      return st;
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target, InitBackend::no); st != ACCEL_SUCCESS)
      return st;
    KeptSnapshot kept = std::move(t_kept_snapshot);
    t_kept_snapshot = {};
    if (kept.backend == b && kept.device == target && buffer != nullptr &&
        capacity >= kept.text.size() + 1) {
      std::memcpy(buffer, kept.text.c_str(), kept.text.size() + 1);
      *length = kept.text.size();
      return ACCEL_SUCCESS;
    }
    DeviceMemory* m = find_device_memory(*b, target);
    std::string body;
    if (caching_allocator()) {
      body = m != nullptr ? m->allocator.snapshot(stream_name, stream_label) : std::string();
    } else {
      body = native_snapshot(*b, target);
    }
    nlohmann::json j = body.empty()
                           ? nlohmann::json{{"allocator", "caching"},
                                            {"config", accel::alloc::describe(alloc_config())},
                                            {"segments", nlohmann::json::array()},
                                            {"history",
                                             {{"max_entries", 0},
                                              {"dropped", 0},
                                              {"events", nlohmann::json::array()}}}}
                           : nlohmann::json::parse(body);
    nlohmann::json stats = nlohmann::json::object();
    std::vector<accel::alloc::NamedValue> flat;
    accel::alloc::flatten(device_stats(*b, target), flat);
    for (const auto& v : flat) stats[v.name] = v.value;
    j["stats"] = std::move(stats);
    j["schema_version"] = 1;
    j["backend"] = b->name;
    j["device"] = target;
    size_t total = 0, free_bytes = 0;
    if (initialised(*b) && b->api.mem_get_info != nullptr && ensure_ready(*b) == ACCEL_SUCCESS &&
        call_plugin(*b, "mem_get_info", [&] {
          return b->api.mem_get_info(target, &free_bytes, &total);
        }) != ACCEL_SUCCESS) {
      total = 0;
      clear_last_error();
    }
    j["capacity"] = total;
    add_graph_pools(*b, target, j);
    std::string text = j.dump();
    *length = text.size();
    if (capacity < text.size() + 1) {
      // Kept for this thread's next call (accel.h): the fetch after a size
      // query returns this text even if other threads allocate meanwhile.
      t_kept_snapshot = {b, target, std::move(text)};
      if (capacity == 0 && buffer == nullptr) return ACCEL_SUCCESS;
      return failf(ACCEL_ERROR_OUT_OF_RANGE,
                   "{}: the snapshot needs {} bytes with its NUL; capacity is {}", fn,
                   *length + 1, capacity);
    }
    std::memcpy(buffer, text.c_str(), text.size() + 1);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_record_memory_history(size_t max_entries) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (max_entries > (size_t{1} << 24)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} entries is more than 16777216", fn,
                   max_entries);
    }
    set_memory_history(max_entries);
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
