// The core's table of live memory it made or registered: device
// allocations, pinned host allocations and registered host ranges. Routes
// accel_free / accel_host_free to the right backend, checks pointer ranges
// before a plugin sees them, answers accel_pointer_get_attributes, and feeds
// the statistics. Ranges never overlap (registration checks it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "backend.hpp"

namespace accel::core {

struct Allocation {
  uintptr_t base = 0;
  size_t bytes = 0;
  Backend* backend = nullptr;
  int32_t device = 0;  // device allocations only; -1 for host memory
  // ACCEL_MEMORY_DEVICE, ACCEL_MEMORY_HOST_PINNED or ACCEL_MEMORY_HOST_REGISTERED.
  accel_memory_type_t type = ACCEL_MEMORY_DEVICE;
};

std::mutex& allocation_mutex();

void record_allocation(const Allocation& a);
// Removes the allocation starting exactly at `ptr`; false if none.
bool take_allocation(const void* ptr, Allocation& out);
// The allocation containing `ptr`, if any.
bool find_allocation(const void* ptr, Allocation& out);
// Records `a` unless [a.base, a.base + a.bytes) overlaps a live entry; then
// returns false and that entry in `overlap`.
bool record_if_disjoint(const Allocation& a, Allocation& overlap);

}  // namespace accel::core
