// Unit tests of the pinned host memory cache (core/alloc/host_cache.hpp)
// over a fake backend: HostCache sees the backend only through HostOps, so
// the fake decides when each stream's work completes and checks that no
// block is handed out again while a copy queued from it is still running.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "host_cache.hpp"
#include "stats.hpp"

namespace {

using accel::alloc::EventHandle;
using accel::alloc::host_block_size;
using accel::alloc::HostBlockInfo;
using accel::alloc::HostCache;
using accel::alloc::HostStats;
using accel::alloc::kHostMinBlock;
using accel::alloc::Lookup;
using accel::alloc::StreamKey;

// Stream keys are never dereferenced: any distinct addresses do.
char g_stream_storage[8];
const StreamKey S1 = &g_stream_storage[1];
const StreamKey S2 = &g_stream_storage[2];
const StreamKey S3 = &g_stream_storage[3];

// The backend as the cache sees it. Really allocates (so AddressSanitizer
// sees a use after the cache returned a block), counts every call, and
// models streams as counters: work queued (copies and markers) and work
// completed, which only the test advances (complete()). Misuse by the cache
// is written to problems(): the calls may come from other threads, with the
// cache's lock held, where a Catch2 assertion cannot run.
class FakeOps : public accel::alloc::HostOps {
 public:
  explicit FakeOps(size_t capacity = size_t{1} << 30) : capacity_(capacity) {}
  ~FakeOps() override {
    for (auto& [p, n] : live_) std::free(reinterpret_cast<void*>(p));
    for (Event* e : events_) delete e;
  }

  // --- HostOps ------------------------------------------------------------
  accel_status_t raw_alloc(size_t bytes, void** ptr) override {
    std::lock_guard lock(mu_);
    ++raw_alloc_calls;
    if (bytes > capacity_ || live_bytes_ > capacity_ - bytes) return ACCEL_ERROR_OUT_OF_MEMORY;
    void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (p == nullptr) return ACCEL_ERROR_OUT_OF_MEMORY;
    live_[reinterpret_cast<uintptr_t>(p)] = bytes;
    live_bytes_ += bytes;
    alloc_sizes.push_back(bytes);
    *ptr = p;
    return ACCEL_SUCCESS;
  }

  accel_status_t raw_free(void* ptr) override {
    std::lock_guard lock(mu_);
    ++raw_free_calls;
    auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == live_.end()) {
      problem("raw_free of a pointer that is not a live allocation");
      return ACCEL_ERROR_INVALID_ARGUMENT;
    }
    if (fail_raw_free != ACCEL_SUCCESS) return fail_raw_free;
    check_idle(it->first, "raw_free");
    live_bytes_ -= it->second;
    live_.erase(it);
    std::free(ptr);
    return ACCEL_SUCCESS;
  }

  accel_status_t event_create(StreamKey stream, EventHandle* ev) override {
    std::lock_guard lock(mu_);
    if (stream == nullptr || ev == nullptr) problem("event_create without a stream or output");
    if (fail_event_create != ACCEL_SUCCESS) return fail_event_create;
    auto* e = new Event;
    events_.insert(e);
    ++events_created;
    *ev = e;
    return ACCEL_SUCCESS;
  }

  accel_status_t event_record(EventHandle ev, StreamKey stream) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev);
    if (e == nullptr) return ACCEL_ERROR_INVALID_ARGUMENT;
    if (fail_event_record != ACCEL_SUCCESS) return fail_event_record;
    // The marker is queued work: done once everything before it is.
    Stream& s = streams_[stream];
    e->stream = stream;
    e->target = ++s.queued;
    e->recorded = true;
    return ACCEL_SUCCESS;
  }

  accel_status_t event_query(EventHandle ev) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev);
    if (e == nullptr) return ACCEL_ERROR_INVALID_ARGUMENT;
    if (!e->recorded) problem("event_query of a marker never recorded");
    return streams_[e->stream].completed >= e->target ? ACCEL_SUCCESS : ACCEL_ERROR_NOT_READY;
  }

  accel_status_t event_synchronize(EventHandle ev) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev);
    if (e == nullptr) return ACCEL_ERROR_INVALID_ARGUMENT;
    ++event_syncs;
    if (!e->recorded) problem("event_synchronize of a marker never recorded");
    Stream& s = streams_[e->stream];
    if (s.completed >= e->target) return ACCEL_SUCCESS;
    // Like a host function that may not wait: the answer is "not yet".
    if (sync_refuses) return ACCEL_ERROR_NOT_READY;
    s.completed = e->target;  // waiting runs the stream up to the marker
    return ACCEL_SUCCESS;
  }

  void event_destroy(EventHandle ev) override {
    std::lock_guard lock(mu_);
    Event* e = lookup(ev);
    if (e == nullptr) return;
    events_.erase(e);
    delete e;
  }

  // --- what the test drives -------------------------------------------------
  // A copy from `block` queued on `stream`: the block is in use until the
  // stream has completed it.
  void copy(const void* block, StreamKey stream) {
    std::lock_guard lock(mu_);
    Stream& s = streams_[stream];
    copies_.push_back({reinterpret_cast<uintptr_t>(block), stream, ++s.queued});
  }
  // Completes all the work queued on `stream` so far.
  void complete(StreamKey stream) {
    std::lock_guard lock(mu_);
    Stream& s = streams_[stream];
    s.completed = s.queued;
  }
  void complete_all() {
    std::lock_guard lock(mu_);
    for (auto& [k, s] : streams_) s.completed = s.queued;
  }
  // The cache just handed out `block`: no copy queued from it may still run.
  void check_handed_out(const void* block) {
    std::lock_guard lock(mu_);
    check_idle(reinterpret_cast<uintptr_t>(block), "allocate");
  }

  size_t live_events() {
    std::lock_guard lock(mu_);
    return events_.size();
  }
  size_t live_allocations() {
    std::lock_guard lock(mu_);
    return live_.size();
  }
  std::vector<std::string> problems() {
    std::lock_guard lock(mu_);
    return problems_;
  }

  // Counters and switches; read and set only while no other thread runs.
  int raw_alloc_calls = 0;
  int raw_free_calls = 0;
  int events_created = 0;
  int event_syncs = 0;
  std::vector<size_t> alloc_sizes;
  accel_status_t fail_event_create = ACCEL_SUCCESS;
  accel_status_t fail_event_record = ACCEL_SUCCESS;
  accel_status_t fail_raw_free = ACCEL_SUCCESS;
  bool sync_refuses = false;

 private:
  struct Event {
    bool recorded = false;
    StreamKey stream = nullptr;
    uint64_t target = 0;
  };
  struct Stream {
    uint64_t queued = 0;
    uint64_t completed = 0;
  };
  struct Copy {
    uintptr_t block;
    StreamKey stream;
    uint64_t index;
  };

  Event* lookup(EventHandle ev) {
    auto* e = static_cast<Event*>(ev);
    if (events_.count(e) == 0) {
      problem("a marker that does not exist (destroyed?)");
      return nullptr;
    }
    return e;
  }
  void check_idle(uintptr_t block, const char* when) {
    for (size_t i = 0; i < copies_.size();) {
      const Copy& c = copies_[i];
      if (streams_[c.stream].completed >= c.index) {
        copies_[i] = copies_.back();  // done: forget it
        copies_.pop_back();
        continue;
      }
      if (c.block == block) problem(std::string(when) + " of a block a queued copy still reads");
      ++i;
    }
  }
  void problem(const std::string& what) { problems_.push_back(what); }

  std::mutex mu_;
  size_t capacity_;
  size_t live_bytes_ = 0;
  std::map<uintptr_t, size_t> live_;
  std::set<Event*> events_;
  std::map<StreamKey, Stream> streams_;
  std::vector<Copy> copies_;
  std::vector<std::string> problems_;
};

// The fake first: the cache's destructor still calls it.
struct Fixture {
  FakeOps ops;
  HostCache cache{ops};

  explicit Fixture(size_t capacity = size_t{1} << 30) : ops(capacity) {}

  void* get(size_t bytes) {
    void* p = nullptr;
    REQUIRE(cache.allocate(bytes, &p) == ACCEL_SUCCESS);
    REQUIRE(p != nullptr);
    ops.check_handed_out(p);
    HostBlockInfo info;
    REQUIRE(cache.find(p, info));
    CHECK(info.requested == bytes);
    CHECK(info.size == host_block_size(bytes));
    return p;
  }
  void put(void* p) { REQUIRE(cache.free(p) == Lookup::kFound); }
  void check() {
    INFO(cache.check_invariants());
    CHECK(cache.check_invariants().empty());
    auto problems = ops.problems();
    for (auto& p : problems) INFO(p);
    CHECK(problems.empty());
  }
};

}  // namespace

TEST_CASE("Requests round up to a power of two of at least 512 bytes", "[host-cache]") {
  CHECK(kHostMinBlock == 512);
  CHECK(host_block_size(1) == 512);
  CHECK(host_block_size(511) == 512);
  CHECK(host_block_size(512) == 512);
  CHECK(host_block_size(513) == 1024);
  CHECK(host_block_size(4096) == 4096);
  CHECK(host_block_size(4097) == 8192);
  CHECK(host_block_size((size_t{1} << 40) + 1) == size_t{1} << 41);
  CHECK(host_block_size((SIZE_MAX >> 1) + 1) == (SIZE_MAX >> 1) + 1);
  CHECK(host_block_size((SIZE_MAX >> 1) + 2) == 0);
  CHECK(host_block_size(SIZE_MAX) == 0);

  Fixture f;
  void* p = f.get(1000);
  REQUIRE(f.ops.alloc_sizes == std::vector<size_t>{1024});
  HostBlockInfo info;
  auto* c = static_cast<char*>(p);
  REQUIRE(f.cache.find(c + 999, info));
  CHECK(info.base == reinterpret_cast<uintptr_t>(p));
  // Past what was asked for is not the allocation's, though the block has it.
  CHECK_FALSE(f.cache.find(c + 1000, info));
  // A size that cannot be rounded never reaches the backend.
  void* q = nullptr;
  CHECK(f.cache.allocate(SIZE_MAX, &q) == ACCEL_ERROR_OUT_OF_MEMORY);
  CHECK(f.ops.raw_alloc_calls == 1);
  f.put(p);
  f.check();
}

TEST_CASE("A freed block is reused by the next request of its size class", "[host-cache]") {
  Fixture f;
  void* a = f.get(1000);
  f.put(a);
  CHECK(f.get(1024) == a);  // same class, no stream used it: at once
  f.put(a);
  CHECK(f.get(600) == a);
  void* b = f.get(2000);  // another class: a new block
  CHECK(b != a);
  CHECK(f.ops.raw_alloc_calls == 2);
  CHECK(f.ops.alloc_sizes == std::vector<size_t>{1024, 2048});
  f.put(a);
  f.put(b);
  // Last freed, first reused, within a class.
  void* c = f.get(700);
  void* d = f.get(700);
  CHECK(c == a);
  CHECK(d != a);
  CHECK(f.ops.raw_alloc_calls == 3);
  f.put(c);
  f.put(d);
  f.check();
  HostStats s = f.cache.stats();
  CHECK(s.num_host_alloc == 3);
  CHECK(s.num_host_free == 0);
  CHECK(s.allocation.current == 0);
  CHECK(s.segment.current == 3);
  CHECK(s.reserved_bytes.current == 1024 + 2048 + 1024);
}

TEST_CASE("A block is not reused before the streams that used it are done", "[host-cache]") {
  Fixture f;
  void* a = f.get(4096);
  CHECK(f.cache.record_use(a, S1) == Lookup::kFound);
  CHECK(f.cache.record_use(static_cast<char*>(a) + 100, S2) == Lookup::kInside);
  CHECK(f.cache.record_use(a, S1) == Lookup::kFound);  // once per stream
  f.ops.copy(a, S1);
  f.ops.copy(a, S2);
  f.put(a);
  CHECK(f.ops.events_created == 2);  // one marker per stream, not per use

  void* b = f.get(4096);  // a still pending: a new block
  CHECK(b != a);
  f.put(b);
  f.ops.complete(S1);
  void* c = f.get(4096);  // S2 still running: a is not ready; b is reused
  CHECK(c == b);
  void* d = f.get(4096);
  CHECK(d != a);
  CHECK(f.ops.raw_alloc_calls == 3);
  f.ops.complete(S2);
  void* e = f.get(4096);
  CHECK(e == a);
  CHECK(f.ops.live_events() == 0);  // completed markers are destroyed
  // Work queued later on the stream (not from this block) does not hold it.
  f.ops.copy(c, S3);
  f.put(e);
  CHECK(f.get(4096) == a);
  for (void* p : {a, c, d}) f.put(p);
  f.ops.complete_all();
  f.check();
}

TEST_CASE("Pending frees are looked at oldest first up to the first not done", "[host-cache]") {
  Fixture f;
  void* a = f.get(512);
  void* b = f.get(512);
  f.cache.record_use(a, S1);
  f.cache.record_use(b, S2);
  f.ops.copy(a, S1);
  f.ops.copy(b, S2);
  f.put(a);
  f.put(b);
  f.ops.complete(S2);  // b is done, but a (older) is not
  void* c = f.get(512);
  CHECK(c != a);
  CHECK(c != b);
  f.ops.complete(S1);
  void* d = f.get(512);
  void* e = f.get(512);
  CHECK(std::set<void*>{d, e} == std::set<void*>{a, b});
  for (void* p : {c, d, e}) f.put(p);
  f.check();
}

TEST_CASE("record_use and free and find refuse what is not a live block", "[host-cache]") {
  Fixture f;
  void* a = f.get(1000);
  auto* c = static_cast<char*>(a);
  int local = 0;
  CHECK(f.cache.record_use(&local, S1) == Lookup::kMissing);
  CHECK(f.cache.record_use(c + 1000, S1) == Lookup::kMissing);  // past the request
  HostBlockInfo info;
  CHECK(f.cache.free(c + 10, &info) == Lookup::kInside);
  CHECK(info.base == reinterpret_cast<uintptr_t>(a));
  CHECK(info.requested == 1000);
  CHECK(f.cache.free(&local) == Lookup::kMissing);
  f.put(a);
  CHECK(f.cache.free(a) == Lookup::kMissing);  // twice
  CHECK_FALSE(f.cache.find(a, info));          // cached blocks are not live
  CHECK(f.cache.record_use(a, S1) == Lookup::kMissing);
  f.check();
  CHECK(f.ops.events_created == 0);
}

TEST_CASE("empty_cache waits for pending markers and returns every cached block", "[host-cache]") {
  Fixture f;
  void* live = f.get(8192);
  void* idle = f.get(1024);
  void* used = f.get(2048);
  f.cache.record_use(used, S1);
  f.ops.copy(used, S1);
  f.put(idle);
  f.put(used);
  HostStats before = f.cache.stats();
  CHECK(before.segment.current == 3);
  CHECK(before.reserved_bytes.current == 8192 + 1024 + 2048);

  SECTION("waiting") {
    REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
    CHECK(f.ops.event_syncs == 1);
    HostStats s = f.cache.stats();
    CHECK(s.num_host_free == 2);
    CHECK(s.segment.current == 1);
    CHECK(s.reserved_bytes.current == 8192);
    CHECK(s.allocated_bytes.current == 8192);
    CHECK(s.reserved_bytes.peak == 8192 + 1024 + 2048);
    CHECK(f.ops.live_allocations() == 1);
    CHECK(f.ops.live_events() == 0);
    HostBlockInfo info;
    CHECK(f.cache.find(live, info));  // live blocks stay
  }
  SECTION("a marker that cannot be waited for keeps its block cached") {
    f.ops.sync_refuses = true;
    REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
    HostStats s = f.cache.stats();
    CHECK(s.num_host_free == 1);  // the idle one
    CHECK(s.segment.current == 2);
    f.ops.sync_refuses = false;
    f.ops.complete(S1);
    REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
    CHECK(f.cache.stats().num_host_free == 2);
  }
  SECTION("a backend that refuses to free keeps the block cached and says so") {
    f.ops.fail_raw_free = ACCEL_ERROR_BACKEND_FAILURE;
    CHECK(f.cache.empty_cache() == ACCEL_ERROR_BACKEND_FAILURE);
    CHECK(f.cache.stats().segment.current == 3);
    f.check();
    f.ops.fail_raw_free = ACCEL_SUCCESS;
    CHECK(f.get(1024) == idle);  // still cached, still usable
    void* again = idle;
    f.put(again);
    REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
    CHECK(f.cache.stats().segment.current == 1);
  }
  f.put(live);
  REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
  CHECK(f.ops.live_allocations() == 0);
  HostStats s = f.cache.stats();
  CHECK(s.num_host_alloc == s.num_host_free);
  CHECK(s.reserved_bytes.current == 0);
  f.check();
}

TEST_CASE("A marker that cannot be recorded holds the block until it can", "[host-cache]") {
  Fixture f;
  void* a = f.get(4096);
  f.cache.record_use(a, S1);
  f.ops.copy(a, S1);
  f.ops.fail_event_create = ACCEL_ERROR_BACKEND_FAILURE;
  f.put(a);
  f.check();
  void* b = f.get(4096);
  CHECK(b != a);
  CHECK(f.cache.empty_cache() == ACCEL_ERROR_BACKEND_FAILURE);
  CHECK(f.cache.stats().segment.current == 2);  // a stays, pending

  f.ops.fail_event_create = ACCEL_SUCCESS;
  f.ops.fail_event_record = ACCEL_ERROR_BACKEND_FAILURE;
  void* c = f.get(4096);
  CHECK(c != a);
  CHECK(f.ops.live_events() == 0);  // the unrecorded marker was destroyed

  f.ops.fail_event_record = ACCEL_SUCCESS;
  void* d = f.get(4096);  // recorded now, not yet complete
  CHECK(d != a);
  CHECK(f.ops.live_events() == 1);
  f.ops.complete(S1);
  CHECK(f.get(4096) == a);
  for (void* p : {a, b, c, d}) f.put(p);
  REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
  CHECK(f.ops.live_allocations() == 0);
  f.check();
}

TEST_CASE("A stream retired before the free is marked while it exists", "[host-cache]") {
  Fixture f;
  void* a = f.get(4096);
  void* b = f.get(4096);
  f.cache.record_use(a, S1);
  f.cache.record_use(b, S2);
  f.ops.copy(a, S1);
  REQUIRE(f.cache.retire_stream(S1) == ACCEL_SUCCESS);
  CHECK(f.ops.events_created == 1);  // a only
  f.put(a);
  CHECK(f.ops.events_created == 1);  // nothing left to mark at the free
  CHECK(f.get(4096) != a);
  f.ops.complete(S1);
  CHECK(f.get(4096) == a);
  // Failure is reported, and the stream stays for the free to try again.
  f.ops.fail_event_create = ACCEL_ERROR_BACKEND_FAILURE;
  CHECK(f.cache.retire_stream(S2) == ACCEL_ERROR_BACKEND_FAILURE);
  f.ops.fail_event_create = ACCEL_SUCCESS;
  f.ops.copy(b, S2);
  f.put(b);
  CHECK(f.ops.events_created == 2);
  f.ops.complete_all();
  REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
  f.check();
}

TEST_CASE("Out of pinned memory: idle cached blocks go back and the request is retried",
          "[host-cache]") {
  Fixture f(8192);
  void* a = f.get(2048);
  void* b = f.get(2048);
  f.cache.record_use(b, S1);
  f.ops.copy(b, S1);
  f.put(a);
  f.put(b);
  // 4096 more do not fit beside 4096 reserved: the idle one goes back, and
  // the pending one too once its marker has completed (not waited for).
  void* c = nullptr;
  CHECK(f.cache.allocate(8192, &c) == ACCEL_ERROR_OUT_OF_MEMORY);
  HostStats s = f.cache.stats();
  CHECK(s.num_host_free == 1);
  CHECK(s.segment.current == 1);
  f.ops.complete(S1);
  c = f.get(8192);
  CHECK(f.cache.stats().num_host_free == 2);
  f.put(c);
  f.check();
}

TEST_CASE("Statistics follow every step", "[host-cache]") {
  Fixture f;
  std::vector<void*> ps;
  for (size_t n : {100, 600, 600, 5000}) ps.push_back(f.get(n));
  HostStats s = f.cache.stats();
  CHECK(s.allocation.current == 4);
  CHECK(s.allocation.allocated == 4);
  CHECK(s.allocated_bytes.current == 512 + 1024 + 1024 + 8192);
  CHECK(s.reserved_bytes.current == s.allocated_bytes.current);
  CHECK(s.segment.current == 4);
  CHECK(s.num_host_alloc == 4);
  for (void* p : ps) f.put(p);
  s = f.cache.stats();
  CHECK(s.allocation.current == 0);
  CHECK(s.allocation.freed == 4);
  CHECK(s.allocation.peak == 4);
  CHECK(s.allocated_bytes.current == 0);
  CHECK(s.allocated_bytes.peak == 512 + 1024 + 1024 + 8192);
  CHECK(s.reserved_bytes.current == 512 + 1024 + 1024 + 8192);
  f.get(1024);
  s = f.cache.stats();
  CHECK(s.allocation.allocated == 5);
  CHECK(s.num_host_alloc == 4);  // reused
  CHECK(s.segment.allocated == 4);
  f.check();

  std::vector<accel::alloc::NamedValue> flat;
  accel::alloc::flatten(s, flat);
  REQUIRE(flat.size() == 18);
  CHECK(std::string(flat[0].name) == "allocation.current");
  CHECK(flat[0].value == 1);
  CHECK(std::string(flat[16].name) == "num_host_alloc");
  CHECK(flat[16].value == 4);
  CHECK(std::string(flat[17].name) == "num_host_free");
}

// Reuse, proven on a fixed sequence: one thread's seeded random mix of
// allocations (with copies on streams) and frees, every stream's work
// completed before each request. Then nothing is pending at any request, and
// a size class needs a new block only when all of its blocks are live: the
// backend allocates exactly each class's peak of live blocks, counted here
// from the requests alone.
TEST_CASE("A size class allocates only its peak of live blocks when every stream is done",
          "[host-cache]") {
  Fixture f;
  const StreamKey streams[] = {S1, S2, S3};
  std::mt19937 rng(11);
  std::vector<std::pair<void*, size_t>> held;
  std::map<size_t, int> live, peak;  // per block size
  int requests = 0;
  for (int i = 0; i < 4000; ++i) {
    if (held.size() < 12 && (held.empty() || rng() % 2 == 0)) {
      const size_t n = 1 + rng() % 20000;
      f.ops.complete_all();
      void* p = f.get(n);
      ++requests;
      const size_t cls = host_block_size(n);
      peak[cls] = std::max(peak[cls], ++live[cls]);
      if (rng() % 2 == 0) {
        const StreamKey s = streams[rng() % 3];
        REQUIRE(f.cache.record_use(p, s) == Lookup::kFound);
        f.ops.copy(p, s);
      }
      held.emplace_back(p, n);
    } else {
      const size_t k = rng() % held.size();
      f.put(held[k].first);
      --live[host_block_size(held[k].second)];
      held.erase(held.begin() + static_cast<long>(k));
    }
  }
  for (auto [p, n] : held) f.put(p);
  int64_t want = 0;
  for (auto [cls, n] : peak) want += n;
  HostStats s = f.cache.stats();
  INFO(requests << " requests in " << peak.size() << " size classes");
  CHECK(s.num_host_alloc == want);
  CHECK(f.ops.raw_alloc_calls == want);
  CHECK(s.allocation.allocated == requests);
  CHECK(s.allocation.current == 0);
  f.ops.complete_all();
  REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
  CHECK(f.ops.live_allocations() == 0);
  f.check();
}

// A race test only: what the blocks hold, the cache's invariants and the
// fake's record of copies must hold under any interleaving. How much is
// reused here depends on when the completer thread runs (the case above
// proves reuse on a fixed sequence).
TEST_CASE("Threads allocating and copying and freeing at once", "[host-cache][threads]") {
  Fixture f;
  constexpr int kThreads = 8;
  constexpr int kRounds = 3000;
  const StreamKey streams[] = {S1, S2, S3};
  std::atomic<bool> stop{false};
  std::atomic<int> corrupted{0};
  // Completes streams at random while the others work.
  std::thread completer([&] {
    std::mt19937 rng(7);
    while (!stop.load()) {
      f.ops.complete(streams[rng() % 3]);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
      std::vector<std::pair<void*, size_t>> held;
      for (int i = 0; i < kRounds; ++i) {
        if (held.size() < 4 && (held.empty() || rng() % 2 == 0)) {
          size_t n = 1 + rng() % 20000;
          void* p = nullptr;
          if (f.cache.allocate(n, &p) != ACCEL_SUCCESS) {
            corrupted.fetch_add(1000);
            continue;
          }
          f.ops.check_handed_out(p);
          std::memset(p, t + 1, n);  // two owners at once would mix bytes
          if (rng() % 2 == 0) {
            StreamKey s = streams[rng() % 3];
            f.cache.record_use(p, s);
            f.ops.copy(p, s);
          }
          held.emplace_back(p, n);
        } else {
          size_t k = rng() % held.size();
          auto [p, n] = held[k];
          auto* c = static_cast<unsigned char*>(p);
          for (size_t j = 0; j < n; j += 97)
            if (c[j] != static_cast<unsigned char>(t + 1)) corrupted.fetch_add(1);
          if (f.cache.free(p) != Lookup::kFound) corrupted.fetch_add(1000);
          held.erase(held.begin() + static_cast<long>(k));
        }
      }
      for (auto [p, n] : held) f.cache.free(p);
    });
  }
  for (auto& w : workers) w.join();
  stop = true;
  completer.join();
  CHECK(corrupted.load() == 0);
  f.check();
  HostStats s = f.cache.stats();
  CHECK(s.allocation.current == 0);
  CHECK(s.allocation.allocated == s.allocation.freed);
  REQUIRE(f.cache.empty_cache() == ACCEL_SUCCESS);
  CHECK(f.ops.live_allocations() == 0);
  CHECK(f.ops.live_events() == 0);
  f.check();
}
