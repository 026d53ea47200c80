#include "stats.hpp"

namespace accel::alloc {

namespace {

// torch.cuda.memory_stats' keys, in the order accel_memory_stats_list
// returns them. Spelled out so the names are static strings.
#define ACCEL_POOL_STAT_NAMES(stat)                                                      \
  stat ".all.current", stat ".all.peak", stat ".all.allocated", stat ".all.freed",       \
      stat ".small_pool.current", stat ".small_pool.peak", stat ".small_pool.allocated", \
      stat ".small_pool.freed", stat ".large_pool.current", stat ".large_pool.peak",     \
      stat ".large_pool.allocated", stat ".large_pool.freed"
#define ACCEL_PLAIN_STAT_NAMES(stat) stat ".current", stat ".peak", stat ".allocated", stat ".freed"

constexpr const char* kDeviceNames[] = {
    ACCEL_POOL_STAT_NAMES("allocation"),
    ACCEL_POOL_STAT_NAMES("segment"),
    ACCEL_POOL_STAT_NAMES("active"),
    ACCEL_POOL_STAT_NAMES("inactive_split"),
    ACCEL_POOL_STAT_NAMES("allocated_bytes"),
    ACCEL_POOL_STAT_NAMES("reserved_bytes"),
    ACCEL_POOL_STAT_NAMES("active_bytes"),
    ACCEL_POOL_STAT_NAMES("inactive_split_bytes"),
    ACCEL_POOL_STAT_NAMES("requested_bytes"),
    ACCEL_PLAIN_STAT_NAMES("oversize_allocations"),
    ACCEL_PLAIN_STAT_NAMES("oversize_segments"),
    "num_alloc_retries",
    "num_ooms",
    "num_sync_all_streams",
    "num_device_alloc",
    "num_device_free",
    "max_split_size",
};

constexpr const char* kHostNames[] = {
    ACCEL_PLAIN_STAT_NAMES("allocation"),
    ACCEL_PLAIN_STAT_NAMES("segment"),
    ACCEL_PLAIN_STAT_NAMES("allocated_bytes"),
    ACCEL_PLAIN_STAT_NAMES("reserved_bytes"),
    "num_host_alloc",
    "num_host_free",
};

void push(const Stat& s, const char* const*& name, std::vector<NamedValue>& out) {
  out.push_back({*name++, s.current});
  out.push_back({*name++, s.peak});
  out.push_back({*name++, s.allocated});
  out.push_back({*name++, s.freed});
}

void push(const StatArray& a, const char* const*& name, std::vector<NamedValue>& out) {
  for (const Stat& s : a) push(s, name, out);
}

void each_array(Stats& s, void (*f)(Stat&)) {
  for (StatArray* a :
       {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
        &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (Stat& x : *a) f(x);
  f(s.oversize_allocations);
  f(s.oversize_segments);
}

}  // namespace

void Stats::reset_peak() {
  each_array(*this, [](Stat& x) { x.reset_peak(); });
}

void Stats::reset_accumulated() {
  each_array(*this, [](Stat& x) { x.reset_accumulated(); });
  num_alloc_retries = num_ooms = num_sync_all_streams = num_device_alloc = num_device_free = 0;
}

size_t flat_count() { return std::size(kDeviceNames); }

void flatten(const Stats& s, std::vector<NamedValue>& out) {
  out.clear();
  out.reserve(std::size(kDeviceNames));
  const char* const* name = kDeviceNames;
  for (const StatArray* a :
       {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
        &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    push(*a, name, out);
  push(s.oversize_allocations, name, out);
  push(s.oversize_segments, name, out);
  for (int64_t v : {s.num_alloc_retries, s.num_ooms, s.num_sync_all_streams, s.num_device_alloc,
                    s.num_device_free, s.max_split_size})
    out.push_back({*name++, v});
}

void flatten(const HostStats& s, std::vector<NamedValue>& out) {
  out.clear();
  const char* const* name = kHostNames;
  for (const Stat* x : {&s.allocation, &s.segment, &s.allocated_bytes, &s.reserved_bytes})
    push(*x, name, out);
  out.push_back({*name++, s.num_host_alloc});
  out.push_back({*name++, s.num_host_free});
}

}  // namespace accel::alloc
