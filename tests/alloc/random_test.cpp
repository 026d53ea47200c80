// Long seeded random sequences over three streams: allocations of 1 byte to
// 64 MiB, frees, record_stream, frees on another stream, completions,
// empty_cache, retire_stream and statistic resets. After every step the
// allocator's own check_invariants() must pass and the statistics must agree
// with a model kept here (live blocks, the fake's vendor allocations), and
// the memory handed out must be safe to use:
//   - live blocks never overlap, and each keeps the tags written into it;
//   - memory used by work on stream U (up to U's queued counter c when it was
//     freed) goes to a request on another stream, or back to the vendor,
//     only once U's work has completed up to c.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace accel_alloc_test;
using accel::alloc::kAll;
using accel::alloc::kLargePool;
using accel::alloc::kPoolKinds;
using accel::alloc::kSmallPool;
using accel::alloc::round_size;

namespace {

struct LiveBlock {
  void* p;
  size_t requested;
  size_t size;
  bool small;
  uint64_t tag;
  std::vector<StreamKey> users;  // streams whose queued work uses it
};

// Memory [lo, hi) was used by work on `stream` up to its queued counter `count`.
struct Use {
  uintptr_t lo, hi;
  StreamKey stream;
  uint64_t count;
};

class Model {
 public:
  Model(Fixture& f, const Config& config, uint64_t seed) : f_(f), config_(config), rng_(seed) {
    for (int i = 0; i < 3; ++i) streams_.push_back(stream_key(next_stream_++));
    f_.ops.on_raw_free([this](void* p, size_t n) { on_raw_free(p, n); });
    reset_base();
  }
  ~Model() { f_.ops.on_raw_free(nullptr); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  void step(int i) {
    step_ = i;
    unsigned r = rng_() % 1000;
    if (r < 400 || live_.empty()) {
      allocate();
    } else if (r < 650) {
      free_one(nullptr);
    } else if (r < 720) {
      record_one();
    } else if (r < 790) {
      free_one(other_stream(nullptr));
    } else if (r < 900) {
      complete_one();
    } else if (r < 920) {
      f_.ops.complete_all();
    } else if (r < 940) {
      REQUIRE(f_.alloc.empty_cache() == ACCEL_SUCCESS);
      // Nothing cached is left: every segment holds a live block.
      check_cache_emptied();
    } else if (r < 950) {
      retire_one();
    } else if (r < 960) {
      f_.alloc.reset_peak();
      peak_reset_ = true;
    } else if (r < 970) {
      retries_ += f_.alloc.stats().num_alloc_retries;
      f_.alloc.reset_accumulated();
      reset_base();
      accumulated_reset_ = true;
    } else {
      inner_lookup();
    }
    verify();
  }

  void finish() {
    retries_ += f_.alloc.stats().num_alloc_retries;
    for (auto& b : live_) release(b, nullptr);
    live_.clear();
    f_.ops.complete_all();
    REQUIRE(f_.alloc.empty_cache() == ACCEL_SUCCESS);
    verify();
    Stats s = f_.alloc.stats();
    for (auto& [name, stat] : all_stats(s)) {
      INFO(name);
      CHECK(stat->current == 0);
    }
    CHECK(f_.ops.live_count() == 0);
    CHECK(f_.ops.raw_allocs() == f_.ops.raw_frees());
    CHECK(violations_ == "");
    f_.check();
    f_.ops.on_raw_free(nullptr);
    f_.close();
  }

  int ooms() const { return ooms_; }
  int64_t retries() const { return retries_; }

 private:
  size_t random_size() {
    unsigned kind = rng_() % 100;
    if (kind < 45) {
      // Small: mostly a few KiB, sometimes up to 1 MiB exactly.
      size_t top = rng_() % 4 == 0 ? kMiB : 16 * kKiB;
      return 1 + rng_() % top;
    }
    if (kind < 80) return kMiB + 1 + rng_() % (9 * kMiB);
    return 10 * kMiB + rng_() % (54 * kMiB + 1);
  }

  StreamKey any_stream() { return streams_[rng_() % streams_.size()]; }
  StreamKey other_stream(StreamKey not_this) {
    StreamKey s;
    do s = any_stream();
    while (s == not_this);
    return s;
  }

  void allocate() {
    if (live_.size() >= 40) return free_one(nullptr);
    size_t bytes = random_size();
    StreamKey stream = any_stream();
    void* p = nullptr;
    std::string error;
    accel_status_t st = f_.alloc.allocate(bytes, stream, nullptr, &p, error);
    INFO("step " << step_ << ": allocate(" << bytes << ")");
    if (st == ACCEL_ERROR_OUT_OF_MEMORY) {
      ++ooms_;
      CHECK(error.find("ACCEL_ALLOC_CONF") != std::string::npos);
      return;
    }
    REQUIRE(st == ACCEL_SUCCESS);
    BlockInfo b;
    REQUIRE(f_.alloc.find(p, b));
    CHECK(b.base == reinterpret_cast<uintptr_t>(p));
    CHECK(b.requested == bytes);
    CHECK(b.stream == stream);
    size_t rounded = round_size(bytes, config_);
    bool small = rounded <= kMiB;
    CHECK(b.size >= rounded);
    CHECK(b.size % 512 == 0);
    if (small) {
      // The small pool splits every remainder (all are multiples of 512).
      CHECK(b.size == rounded);
    } else if (b.size - rounded > kMiB) {
      // More than 1 MiB would have been split off, except from an oversize block.
      CHECK(b.size >= config_.max_split_size);
    }
    CHECK(f_.ops.segment_of(p, b.size) != 0);
    uintptr_t lo = b.base, hi = b.base + b.size;
    // No live block overlaps it.
    auto next = by_address_.lower_bound(lo);
    if (next != by_address_.end()) CHECK(next->first >= hi);
    if (next != by_address_.begin()) CHECK(std::prev(next)->second <= lo);
    by_address_[lo] = hi;
    // Work on another stream that used this memory must have completed.
    for (auto& u : uses_) {
      if (u.lo < hi && lo < u.hi && u.stream != stream && f_.ops.completed(u.stream) < u.count) {
        violations_ += "step " + std::to_string(step_) + ": memory still used by another stream " +
                       "handed to a request\n";
      }
    }
    uint64_t tag = rng_();
    write_tags(p, bytes, tag);
    f_.ops.enqueue(stream);  // a kernel using the block
    live_.push_back({p, bytes, b.size, small, tag, {stream}});
  }

  static void write_tags(void* p, size_t n, uint64_t tag) {
    auto* c = static_cast<unsigned char*>(p);
    std::memcpy(c, &tag, std::min<size_t>(n, 8));
    if (n > 8) std::memcpy(c + n - std::min<size_t>(n - 8, 8), &tag, std::min<size_t>(n - 8, 8));
  }
  static bool tags_intact(void* p, size_t n, uint64_t tag) {
    unsigned char want[16];
    auto* c = static_cast<unsigned char*>(p);
    std::memcpy(want, &tag, 8);
    if (std::memcmp(c, want, std::min<size_t>(n, 8)) != 0) return false;
    if (n > 8 && std::memcmp(c + n - std::min<size_t>(n - 8, 8), want, std::min<size_t>(n - 8, 8)))
      return false;
    return true;
  }

  // Frees the live block `b` (with `stream`: on that stream) and notes its uses.
  void release(LiveBlock& b, StreamKey stream) {
    INFO("step " << step_ << ": free(" << b.p << ")");
    CHECK(tags_intact(b.p, b.requested, b.tag));
    if (stream != nullptr) {
      f_.ops.enqueue(stream);  // the work the free is ordered after
      b.users.push_back(stream);
    }
    uintptr_t lo = reinterpret_cast<uintptr_t>(b.p);
    for (StreamKey u : b.users) uses_.push_back({lo, lo + b.requested, u, f_.ops.queued(u)});
    Lookup l = f_.alloc.free(b.p, stream, nullptr);
    CHECK(std::string(lookup_name(l)) == "kFound");
    by_address_.erase(lo);
  }

  void free_one(StreamKey stream) {
    if (live_.empty()) return;
    size_t i = rng_() % live_.size();
    release(live_[i], stream);
    live_.erase(live_.begin() + long(i));
  }

  void record_one() {
    if (live_.empty()) return;
    LiveBlock& b = live_[rng_() % live_.size()];
    StreamKey other = any_stream();
    f_.ops.enqueue(other);  // work on `other` that uses the block
    size_t offset = b.requested > 1 ? rng_() % b.requested : 0;
    Lookup l = f_.alloc.record_stream(static_cast<char*>(b.p) + offset, other);
    CHECK(std::string(lookup_name(l)) == (offset == 0 ? "kFound" : "kInside"));
    b.users.push_back(other);
  }

  void complete_one() {
    std::vector<StreamKey> all = streams_;
    all.insert(all.end(), retired_.begin(), retired_.end());
    f_.ops.complete(all[rng_() % all.size()]);
  }

  void retire_one() {
    size_t i = rng_() % streams_.size();
    StreamKey old = streams_[i];
    StreamKey replacement = other_stream(old);
    REQUIRE(f_.alloc.retire_stream(old, replacement) == ACCEL_SUCCESS);
    retired_.push_back(old);
    streams_[i] = stream_key(next_stream_++);
  }

  void inner_lookup() {
    if (live_.empty()) return;
    LiveBlock& b = live_[rng_() % live_.size()];
    if (b.requested < 2) return;
    size_t offset = 1 + rng_() % (b.requested - 1);
    Stats before = f_.alloc.stats();
    BlockInfo info;
    Lookup l = f_.alloc.free(static_cast<char*>(b.p) + offset, nullptr, nullptr, &info);
    CHECK(std::string(lookup_name(l)) == "kInside");
    CHECK(info.base == reinterpret_cast<uintptr_t>(b.p));
    CHECK(info.requested == b.requested);
    CHECK(info.size == b.size);
    CHECK(f_.alloc.stats().allocation[kAll].freed == before.allocation[kAll].freed);
    BlockInfo found;
    REQUIRE(f_.alloc.find(static_cast<char*>(b.p) + offset, found));
    CHECK(found.base == info.base);
  }

  void on_raw_free(void* p, size_t n) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
    for (auto& u : uses_) {
      if (u.lo < hi && lo < u.hi && f_.ops.completed(u.stream) < u.count) {
        violations_ += "step " + std::to_string(step_) +
                       ": a segment went back to the vendor while work still used it\n";
      }
    }
    uses_.erase(std::remove_if(uses_.begin(), uses_.end(),
                               [&](const Use& u) { return u.lo < hi && lo < u.hi; }),
                uses_.end());
  }

  void check_cache_emptied() {
    // Each remaining vendor allocation holds at least one live block.
    for (auto& [base, bytes] : f_.ops.live()) {
      bool used = false;
      for (auto& b : live_) {
        auto a = reinterpret_cast<uintptr_t>(b.p);
        if (a >= base && a < base + bytes) used = true;
      }
      INFO("step " << step_ << ": segment of " << bytes << " bytes after empty_cache");
      CHECK(used);
    }
  }

  void reset_base() {
    base_ = f_.alloc.stats();
    base_raw_allocs_ = f_.ops.raw_allocs();
    base_raw_alloc_calls_ = f_.ops.raw_alloc_calls();
    base_raw_frees_ = f_.ops.raw_frees();
    base_ooms_ = ooms_;
  }

  void verify() {
    INFO("step " << step_);
    REQUIRE(f_.alloc.check_invariants() == "");
    REQUIRE(f_.ops.problems() == "");
    REQUIRE(violations_ == "");
    Stats s = f_.alloc.stats();

    // The model: live blocks by pool, vendor allocations.
    int64_t count[kPoolKinds] = {}, bytes[kPoolKinds] = {}, requested[kPoolKinds] = {};
    for (auto& b : live_) {
      size_t pool = b.small ? kSmallPool : kLargePool;
      for (size_t p : {size_t{kAll}, pool}) {
        ++count[p];
        bytes[p] += int64_t(b.size);
        requested[p] += int64_t(b.requested);
      }
    }
    for (size_t p = 0; p < kPoolKinds; ++p) {
      INFO("pool " << p);
      CHECK(s.allocation[p].current == count[p]);
      CHECK(s.allocated_bytes[p].current == bytes[p]);
      CHECK(s.active[p].current >= s.allocation[p].current);
      CHECK(s.active_bytes[p].current >= s.allocated_bytes[p].current);
      // docs/memory.md: the bytes the (live) allocations asked for.
      CHECK(s.requested_bytes[p].current == requested[p]);
      CHECK(s.requested_bytes[p].current <= s.allocated_bytes[p].current);
      CHECK(s.reserved_bytes[p].current >= s.active_bytes[p].current);
      CHECK(s.inactive_split_bytes[p].current <=
            s.reserved_bytes[p].current - s.active_bytes[p].current);
      CHECK(s.inactive_split[p].current >= 0);
      if (s.active[p].current == s.allocation[p].current) {
        // No pending free: what is active is what is allocated.
        CHECK(s.active_bytes[p].current == s.allocated_bytes[p].current);
      }
    }
    CHECK(s.reserved_bytes[kAll].current == int64_t(f_.ops.live_bytes()));
    CHECK(s.segment[kAll].current == int64_t(f_.ops.live_count()));
    CHECK(s.segment[kSmallPool].current + s.segment[kLargePool].current == s.segment[kAll].current);
    CHECK(s.num_ooms == ooms_ - base_ooms_);
    CHECK(s.num_device_free == int64_t(f_.ops.raw_frees() - base_raw_frees_));
    CHECK(s.num_device_alloc >= int64_t(f_.ops.raw_allocs() - base_raw_allocs_));
    CHECK(s.num_device_alloc <= int64_t(f_.ops.raw_alloc_calls() - base_raw_alloc_calls_));
    CHECK(s.max_split_size ==
          (config_.max_split_size == SIZE_MAX ? -1 : int64_t(config_.max_split_size)));

    // Every statistic: peak >= current, peaks only grow (but for reset_peak,
    // which sets them to the current value), and allocated - freed is the
    // change of current since the last reset_accumulated.
    auto now = all_stats(s);
    auto then = all_stats(previous_);
    auto base = all_stats(base_);
    for (size_t i = 0; i < now.size(); ++i) {
      INFO(now[i].first);
      const auto& st = *now[i].second;
      CHECK(st.current >= 0);
      CHECK(st.peak >= st.current);
      if (peak_reset_) {
        CHECK(st.peak == st.current);
      } else if (have_previous_) {
        CHECK(st.peak >= then[i].second->peak);
      }
      CHECK(st.allocated - st.freed == st.current - base[i].second->current);
      if (accumulated_reset_) {
        CHECK(st.allocated == 0);
        CHECK(st.freed == 0);
      }
    }
    if (accumulated_reset_) {
      CHECK(s.num_alloc_retries == 0);
      CHECK(s.num_ooms == 0);
      CHECK(s.num_sync_all_streams == 0);
      CHECK(s.num_device_alloc == 0);
      CHECK(s.num_device_free == 0);
    }
    previous_ = s;
    have_previous_ = true;
    peak_reset_ = false;
    accumulated_reset_ = false;

    // Uses that can no longer matter.
    uses_.erase(std::remove_if(uses_.begin(), uses_.end(),
                               [&](const Use& u) { return f_.ops.completed(u.stream) >= u.count; }),
                uses_.end());
  }

  Fixture& f_;
  Config config_;
  std::mt19937_64 rng_;
  int step_ = -1;
  int next_stream_ = 100;
  std::vector<StreamKey> streams_, retired_;
  std::vector<LiveBlock> live_;
  std::map<uintptr_t, uintptr_t> by_address_;
  std::vector<Use> uses_;
  std::string violations_;
  int ooms_ = 0;
  int64_t retries_ = 0;  // num_alloc_retries summed over resets
  Stats base_, previous_;
  bool have_previous_ = false, peak_reset_ = false, accumulated_reset_ = false;
  size_t base_raw_allocs_ = 0, base_raw_alloc_calls_ = 0, base_raw_frees_ = 0;
  int base_ooms_ = 0;
};

}  // namespace

TEST_CASE("random sequences keep every invariant", "[alloc][random]") {
  constexpr int kSteps = 3000;
  // Each seed with one setting: plain, max_split_size, garbage collection,
  // power-of-two divisions, and all of them.
  struct Run {
    uint64_t seed;
    const char* name;
    Config config;
  };
  std::vector<Run> runs;
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    Config c;
    const char* name = "plain";
    switch (seed % 5) {
      case 1:
        break;
      case 2:
        c.max_split_size = 32 * kMiB;
        name = "max_split_size 32 MiB";
        break;
      case 3:
        c.garbage_collection_threshold = 0.6;
        name = "garbage collection at 0.6";
        break;
      case 4:
        c.roundup_power2_divisions = 4;
        name = "4 divisions";
        break;
      case 0:
        c.max_split_size = 24 * kMiB;
        c.garbage_collection_threshold = 0.5;
        c.roundup_power2_divisions = 2;
        name = "everything";
        break;
    }
    runs.push_back({seed * 7919, name, c});
  }
  for (auto& run : runs) {
    DYNAMIC_SECTION("seed " << run.seed << " " << run.name) {
      // 320 MiB: enough for most steps, so that the out-of-memory path and its
      // retry are taken now and then.
      Fixture f(320 * kMiB, run.config);
      Model m(f, run.config, run.seed);
      for (int i = 0; i < kSteps; ++i) m.step(i);
      m.finish();
      // The out-of-memory path must have been taken, or the run tested less
      // than it says.
      CHECK(m.ooms() > 0);
      CHECK(m.retries() > 0);
    }
  }
}
