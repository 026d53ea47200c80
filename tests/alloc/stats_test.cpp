// The statistics: Stat's arithmetic, Stats' resets, flatten()'s names (those
// of torch.cuda.memory_stats that accel.h lists) and the allocator's
// reset_peak / reset_accumulated.
#include <set>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace accel_alloc_test;
using accel::alloc::kAll;
using accel::alloc::kLargePool;
using accel::alloc::kSmallPool;
using accel::alloc::NamedValue;
using accel::alloc::Stat;

namespace {

const StreamKey S1 = stream_key(1);

// A Stats where every value differs, to see which one a name reads.
Stats numbered() {
  Stats s;
  int64_t v = 1;
  for (auto& [name, stat] : all_stats(s)) {
    auto* st = const_cast<Stat*>(stat);
    st->current = v++;
    st->peak = v++;
    st->allocated = v++;
    st->freed = v++;
  }
  s.num_alloc_retries = v++;
  s.num_ooms = v++;
  s.num_sync_all_streams = v++;
  s.num_device_alloc = v++;
  s.num_device_free = v++;
  s.max_split_size = v++;
  return s;
}

}  // namespace

TEST_CASE("Stat counts current peak allocated and freed", "[alloc][stats]") {
  Stat s;
  s.add(10);
  s.add(5);
  s.sub(12);
  CHECK(s.current == 3);
  CHECK(s.peak == 15);
  CHECK(s.allocated == 15);
  CHECK(s.freed == 12);
  s.reset_peak();
  CHECK(s.peak == 3);
  s.add(1);
  CHECK(s.peak == 4);
  s.reset_accumulated();
  CHECK(s.allocated == 0);
  CHECK(s.freed == 0);
  CHECK(s.current == 4);
  CHECK(s.peak == 4);
}

TEST_CASE("Stats resets cover every statistic", "[alloc][stats]") {
  Stats s = numbered();
  s.reset_peak();
  for (auto& [name, stat] : all_stats(s)) {
    INFO(name);
    CHECK(stat->peak == stat->current);
    CHECK(stat->allocated != 0);
  }
  s = numbered();
  int64_t max_split = s.max_split_size;
  s.reset_accumulated();
  for (auto& [name, stat] : all_stats(s)) {
    INFO(name);
    CHECK(stat->allocated == 0);
    CHECK(stat->freed == 0);
    CHECK(stat->peak != stat->current);  // peaks untouched
  }
  CHECK(s.num_alloc_retries == 0);
  CHECK(s.num_ooms == 0);
  CHECK(s.num_sync_all_streams == 0);
  CHECK(s.num_device_alloc == 0);
  CHECK(s.num_device_free == 0);
  CHECK(s.max_split_size == max_split);  // a setting, not a counter
}

TEST_CASE("flatten names every documented statistic once", "[alloc][stats]") {
  Stats s = numbered();
  std::vector<NamedValue> out;
  accel::alloc::flatten(s, out);
  CHECK(out.size() == accel::alloc::flat_count());
  std::set<std::string> names;
  for (auto& nv : out) {
    INFO(nv.name);
    CHECK(names.insert(nv.name).second);
  }
  auto value = [&](const std::string& name) -> const NamedValue* {
    for (auto& nv : out) {
      if (name == nv.name) return &nv;
    }
    return nullptr;
  };
  // "<stat>.<pool>.<metric>" for the nine statistics of accel.h.
  for (auto& [name, stat] : all_stats(s)) {
    if (name.rfind("oversize", 0) == 0) continue;  // accel.h does not list them
    const std::pair<const char*, int64_t> metrics[] = {{"current", stat->current},
                                                       {"peak", stat->peak},
                                                       {"allocated", stat->allocated},
                                                       {"freed", stat->freed}};
    for (auto [metric, v] : metrics) {
      std::string full = name + "." + metric;
      INFO(full);
      const NamedValue* nv = value(full);
      REQUIRE(nv != nullptr);
      CHECK(nv->value == v);
    }
  }
  const std::pair<const char*, int64_t> counters[] = {
      {"num_alloc_retries", s.num_alloc_retries},       {"num_ooms", s.num_ooms},
      {"num_sync_all_streams", s.num_sync_all_streams}, {"num_device_alloc", s.num_device_alloc},
      {"num_device_free", s.num_device_free},           {"max_split_size", s.max_split_size},
  };
  for (auto [name, v] : counters) {
    INFO(name);
    const NamedValue* nv = value(name);
    REQUIRE(nv != nullptr);
    CHECK(nv->value == v);
  }
  // The same names in the same order, from static storage, every time.
  std::vector<NamedValue> again;
  accel::alloc::flatten(Stats{}, again);
  REQUIRE(again.size() == out.size());
  for (size_t i = 0; i < out.size(); ++i) CHECK(again[i].name == out[i].name);
}

TEST_CASE("the allocator's reset_peak and reset_accumulated", "[alloc][stats]") {
  Fixture f;
  void* a = f.get(4096, S1);
  void* b = f.get(5 * kMiB, S1);
  void* c = f.get(8192, S1);
  f.put(b);
  f.put(c);
  Stats s = f.alloc.stats();
  CHECK(s.allocation[kAll].peak == 3);
  CHECK(s.allocation[kAll].current == 1);
  CHECK(s.allocated_bytes[kLargePool].peak == int64_t(5 * kMiB));
  CHECK(s.allocated_bytes[kAll].peak == int64_t(4096 + 5 * kMiB + 8192));
  CHECK(s.num_device_alloc == 2);

  f.alloc.reset_peak();
  s = f.alloc.stats();
  for (auto& [name, stat] : all_stats(s)) {
    INFO(name);
    CHECK(stat->peak == stat->current);
  }
  CHECK(s.allocation[kAll].allocated == 3);  // reset_peak leaves the counters alone
  CHECK(s.num_device_alloc == 2);
  void* d = f.get(16384, S1);
  s = f.alloc.stats();
  CHECK(s.allocation[kAll].peak == 2);
  CHECK(s.allocated_bytes[kSmallPool].peak == 4096 + 16384);

  f.alloc.reset_accumulated();
  s = f.alloc.stats();
  for (auto& [name, stat] : all_stats(s)) {
    INFO(name);
    CHECK(stat->allocated == 0);
    CHECK(stat->freed == 0);
  }
  CHECK(s.allocation[kAll].current == 2);
  CHECK(s.allocation[kAll].peak == 2);
  CHECK(s.reserved_bytes[kAll].current == int64_t(22 * kMiB));
  CHECK(s.num_device_alloc == 0);
  CHECK(s.num_device_free == 0);
  CHECK(s.num_ooms == 0);
  CHECK(s.num_alloc_retries == 0);
  CHECK(s.num_sync_all_streams == 0);
  CHECK(s.max_split_size == -1);

  f.put(a);
  f.put(d);
  s = f.alloc.stats();
  CHECK(s.allocation[kAll].freed == 2);
  CHECK(s.allocation[kAll].allocated == 0);
  CHECK(s.allocation[kAll].current == 0);
  REQUIRE(f.alloc.empty_cache() == ACCEL_SUCCESS);
  s = f.alloc.stats();
  CHECK(s.num_device_free == 2);
  CHECK(s.segment[kAll].freed == 2);
  CHECK(s.reserved_bytes[kAll].freed == int64_t(22 * kMiB));
  f.check();
}
