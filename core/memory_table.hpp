// The core's table of live memory it made or registered: device
// allocations, pinned host allocations and registered host ranges. Routes
// accel_free / accel_host_free to the right backend, checks pointer ranges
// before a plugin sees them, answers accel_pointer_get_attributes, and feeds
// the statistics. Ranges never overlap (registration checks it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "backend.hpp"

namespace accel::core {

struct Allocation {
  uintptr_t base = 0;
  size_t bytes = 0;
  Backend* backend = nullptr;
  int32_t device = 0;  // device allocations only; -1 for host memory
  // ACCEL_MEMORY_DEVICE, ACCEL_MEMORY_HOST_PINNED or ACCEL_MEMORY_HOST_REGISTERED.
  accel_memory_type_t type = ACCEL_MEMORY_DEVICE;
  // Set for a segment of the caching allocator: the entry covers the whole
  // vendor allocation and `owner` knows the blocks in it. find_allocation
  // answers with the block, never the segment.
  struct DeviceMemory* owner = nullptr;
};

// `bytes` bytes from `p`, which lies in `a`, stay inside `a`;
// ACCEL_ERROR_INVALID_ARGUMENT naming `fn` and the argument `what` otherwise.
accel_status_t check_range_fits(const char* fn, const char* what, const void* p, size_t bytes,
                                const Allocation& a);

std::mutex& allocation_mutex();

void record_allocation(const Allocation& a);
// Removes the allocation starting exactly at `ptr`; false if none.
bool take_allocation(const void* ptr, Allocation& out);
// The allocation containing `ptr`, if any: for caching-allocator memory, the
// live block (base and requested bytes) holding it.
bool find_allocation(const void* ptr, Allocation& out);
// The table's own entry containing `ptr` (a whole segment for the caching
// allocator), if any.
bool find_entry(const void* ptr, Allocation& out);
// The table's generation: it changes whenever an entry is added or removed.
uint64_t table_generation();
// find_entry that also says the generation the answer holds for.
bool find_entry_at(const void* ptr, Allocation& out, uint64_t& generation);
// Entries of device `device` of `b` (snapshots under backend:native).
std::vector<Allocation> entries_of(const Backend* b, int32_t device);
// Records `a` unless [a.base, a.base + a.bytes) overlaps a live entry; then
// returns false and that entry in `overlap`.
bool record_if_disjoint(const Allocation& a, Allocation& overlap);

}  // namespace accel::core
