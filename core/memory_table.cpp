#include "memory_table.hpp"

#include "device_memory.hpp"
#include "error.hpp"

#include <atomic>
#include <iterator>
#include <map>
#include <mutex>

namespace accel::core {

accel_status_t check_range_fits(const char* fn, const char* what, const void* p, size_t bytes,
                                const Allocation& a) {
  auto offset = reinterpret_cast<uintptr_t>(p) - a.base;
  if (bytes > a.bytes - offset) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: {} range of {} bytes at offset {} overruns its allocation of {} bytes", fn,
                 what, bytes, offset, a.bytes);
  }
  return ACCEL_SUCCESS;
}

namespace {
// A plain mutex, not a shared_mutex: glibc's rwlock remembers the writer's
// thread id, so the fork child (a new id) could never unlock what the
// prepare handler locked.
std::mutex g_mutex;
// By base address. Never destroyed (like the handle pools and the plugins):
// exit() runs static destructors while other threads may still be inside
// accel_malloc / accel_free, which would then use a freed tree.
std::map<uintptr_t, Allocation>& g_table = *new std::map<uintptr_t, Allocation>();
// Bumped (under g_mutex) by every change to the table, so a lookup cached
// with the value it read stays valid while the value is unchanged.
std::atomic<uint64_t> g_generation{1};
}  // namespace

uint64_t table_generation() { return g_generation.load(std::memory_order_acquire); }

bool find_entry_at(const void* ptr, Allocation& out, uint64_t& generation) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(g_mutex);
  generation = g_generation.load(std::memory_order_relaxed);
  auto it = g_table.upper_bound(p);
  if (it == g_table.begin()) return false;
  --it;
  if (p - it->second.base >= it->second.bytes) return false;
  out = it->second;
  return true;
}

std::mutex& allocation_mutex() { return g_mutex; }

void record_allocation(const Allocation& a) {
  std::lock_guard lock(g_mutex);
  g_generation.fetch_add(1, std::memory_order_release);
  g_table[a.base] = a;
}

bool take_allocation(const void* ptr, Allocation& out) {
  std::lock_guard lock(g_mutex);
  auto it = g_table.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_table.end()) return false;
  out = it->second;
  g_generation.fetch_add(1, std::memory_order_release);
  g_table.erase(it);
  return true;
}

bool find_entry(const void* ptr, Allocation& out) {
  uint64_t generation = 0;
  return find_entry_at(ptr, out, generation);
}

bool find_allocation(const void* ptr, Allocation& out) {
  if (!find_entry(ptr, out)) return false;
  if (out.owner == nullptr) return true;
  // Asked without the table's lock held: allocators take it while holding
  // theirs. The segment may be gone by now; the allocator answers for the
  // blocks it holds at this moment.
  alloc::BlockInfo block;
  if (!out.owner->allocator.find(ptr, block)) return false;
  out.base = block.base;
  out.bytes = block.requested;
  return true;
}

std::vector<Allocation> entries_of(const Backend* b, int32_t device) {
  std::vector<Allocation> out;
  std::lock_guard lock(g_mutex);
  for (auto& [base, a] : g_table) {
    if (a.backend == b && a.device == device && a.type == ACCEL_MEMORY_DEVICE) out.push_back(a);
  }
  return out;
}

bool record_if_disjoint(const Allocation& a, Allocation& overlap) {
  std::lock_guard lock(g_mutex);
  // The first entry starting at or after a.base, and the one before it.
  auto next = g_table.lower_bound(a.base);
  if (next != g_table.end() && next->first - a.base < a.bytes) {
    overlap = next->second;
    return false;
  }
  if (next != g_table.begin()) {
    auto prev = std::prev(next);
    if (a.base - prev->first < prev->second.bytes) {
      overlap = prev->second;
      return false;
    }
  }
  g_generation.fetch_add(1, std::memory_order_release);
  g_table[a.base] = a;
  return true;
}

}  // namespace accel::core
