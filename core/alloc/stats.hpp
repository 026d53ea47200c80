// The caching allocator's statistics under torch.cuda.memory_stats' names.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace accel::alloc {

// One statistic: current value, its peak since start or reset, and how much
// was added and removed since start or reset of the accumulated counters.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;
  [[gnu::always_inline]] void add(int64_t n) {
    current += n;
    allocated += n;
    if (current > peak) peak = current;
  }
  [[gnu::always_inline]] void sub(int64_t n) {
    current -= n;
    freed += n;
  }
  void reset_peak() { peak = current; }
  void reset_accumulated() { allocated = freed = 0; }
};

enum PoolKind : size_t { kAll = 0, kSmallPool = 1, kLargePool = 2, kPoolKinds = 3 };
using StatArray = std::array<Stat, kPoolKinds>;

struct Stats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  Stat oversize_allocations, oversize_segments;
  int64_t num_alloc_retries = 0;
  int64_t num_ooms = 0;
  int64_t num_sync_all_streams = 0;
  int64_t num_device_alloc = 0;
  int64_t num_device_free = 0;
  int64_t max_split_size = -1;  // bytes; -1 unlimited
  // Allocations since start, never reset (accel_memory_stats'
  // total_allocations; not one of torch's keys).
  int64_t lifetime_allocations = 0;

  void reset_peak();
  void reset_accumulated();
};

// Adds n to `s` for pool `p` and for kAll.
[[gnu::always_inline]] inline void add(StatArray& s, PoolKind p, int64_t n) {
  s[kAll].add(n);
  s[p].add(n);
}
[[gnu::always_inline]] inline void sub(StatArray& s, PoolKind p, int64_t n) {
  s[kAll].sub(n);
  s[p].sub(n);
}

struct NamedValue {
  const char* name;  // static storage
  int64_t value;
};

// Every statistic in a fixed order ("allocation.all.current", ...).
void flatten(const Stats& s, std::vector<NamedValue>& out);
// How many flatten() produces.
size_t flat_count();

// The pinned host memory cache's statistics (torch.cuda.host_memory_stats).
struct HostStats {
  Stat allocation, segment, allocated_bytes, reserved_bytes;
  int64_t num_host_alloc = 0;
  int64_t num_host_free = 0;
};
void flatten(const HostStats& s, std::vector<NamedValue>& out);

}  // namespace accel::alloc
