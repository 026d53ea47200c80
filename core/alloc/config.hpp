// ACCEL_ALLOC_CONF: which allocator accel_malloc uses and how the caching one
// rounds, splits and collects. PYTORCH_CUDA_ALLOC_CONF's syntax and key names
// ("key:value,key:value"), for the keys that mean something here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace accel::alloc {

// max_split_size_mb must be above this (a 20 MiB large segment must stay
// splittable).
inline constexpr uint64_t kMaxSplitFloorMb = 20;
// The largest max_split_size_mb: its bytes fit in PTRDIFF_MAX (and the
// int64 statistic).
inline constexpr uint64_t kMaxSplitSizeMb = static_cast<uint64_t>(PTRDIFF_MAX) >> 20;

struct Config {
  bool caching = true;  // backend:caching (default) or backend:native
  // Blocks of this size or more are never split, and a request below it
  // never takes one (bounds fragmentation of huge blocks). SIZE_MAX: off.
  size_t max_split_size = SIZE_MAX;
  // 0: off. Otherwise, once reserved memory passes this fraction of the
  // device's capacity, cached blocks unused the longest are freed first.
  double garbage_collection_threshold = 0.0;
  // Requests above kSmallSize (1 MiB) round up to one of this many equal
  // steps between two powers of two (1: off, round to 512 bytes only).
  size_t roundup_power2_divisions = 1;
};

// Parses `text` (may be empty: the defaults). On error returns false, leaves
// `out` unchanged and says why in `error` (naming the key and the value).
bool parse_config(std::string_view text, Config& out, std::string& error);

// "backend:caching,max_split_size_mb:...": what a snapshot records.
std::string describe(const Config& c);

}  // namespace accel::alloc
