// The core's table of live device allocations: routes accel_free to the
// right backend, checks pointer ranges before a plugin sees them, and feeds
// the per-device statistics.
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
  int32_t device = 0;
};

std::mutex& allocation_mutex();

void record_allocation(const Allocation& a);
// Removes the allocation starting exactly at `ptr`; false if none.
bool take_allocation(const void* ptr, Allocation& out);
// The allocation containing `ptr`, if any.
bool find_allocation(const void* ptr, Allocation& out);

}  // namespace accel::core
