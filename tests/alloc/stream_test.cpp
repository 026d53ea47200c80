// Stream order: a block freed on its stream serves that stream's next request
// at once and no other stream's; record_stream and a free on another stream
// hold it back until the named stream's work has completed (the fake decides
// when); retire_stream hands a stream's blocks over once its work is done;
// markers are never leaked; several threads at once.
#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace accel_alloc_test;
using accel::alloc::kAll;

namespace {

const StreamKey S1 = stream_key(1);
const StreamKey S2 = stream_key(2);
const StreamKey S3 = stream_key(3);

char* at(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

// With every block freed: after the streams' work and an empty_cache nothing
// is left with the vendor, and no marker outlives the allocator.
void drain(Fixture& f) {
  f.ops.complete_all();
  REQUIRE(f.alloc.empty_cache() == ACCEL_SUCCESS);
  CHECK(f.ops.live_count() == 0);
  CHECK(f.ops.raw_allocs() == f.ops.raw_frees());
  Stats s = f.alloc.stats();
  for (auto& [name, stat] : all_stats(s)) {
    INFO(name);
    CHECK(stat->current == 0);
  }
  f.check();
  f.close();
}

}  // namespace

TEST_CASE("a block freed on its stream is reused at once on that stream only", "[alloc][stream]") {
  Fixture f;
  SECTION("small") {
    void* p = f.get(4096, S1);
    f.ops.enqueue(S1);  // work using p is still queued: the same stream may reuse it
    f.put(p);
    void* q = f.get(4096, S1);
    CHECK(q == p);
    CHECK(f.ops.raw_allocs() == 1);
    f.put(q);
    void* r = f.get(4096, S2);
    CHECK(f.ops.segment_of(r) != f.ops.segment_of(p));
    CHECK(f.ops.raw_allocs() == 2);
    CHECK(f.info(r).stream == S2);
    f.put(r);
  }
  SECTION("large") {
    void* p = f.get(5 * kMiB, S1);
    f.ops.enqueue(S1);
    f.put(p);
    void* q = f.get(5 * kMiB, S1);
    CHECK(q == p);
    f.put(q);
    void* r = f.get(5 * kMiB, S2);
    CHECK(f.ops.segment_of(r) != f.ops.segment_of(p));
    CHECK(f.ops.raw_allocs() == 2);
    f.put(r);
  }
  f.check();
  drain(f);
}

TEST_CASE("record_stream holds a freed block until the other stream's work completes",
          "[alloc][stream][record-stream]") {
  Fixture f;
  void* p = f.get(4096, S1);
  f.ops.enqueue(S2);  // work on S2 that reads p
  SECTION("by its base") { CHECK(f.alloc.record_stream(p, S2) == Lookup::kFound); }
  SECTION("by an inner pointer") {
    CHECK(f.alloc.record_stream(at(p, 1000), S2) == Lookup::kInside);
  }
  f.put(p);
  Stats s = f.alloc.stats();
  CHECK(s.allocation[kAll].current == 0);
  CHECK(s.allocated_bytes[kAll].current == 0);
  CHECK(s.active[kAll].current == 1);  // pending free
  CHECK(s.active_bytes[kAll].current == 4096);
  f.check();

  // Neither p's own stream nor the other gets it yet.
  void* q = f.get(4096, S1);
  CHECK(q != p);
  void* r = f.get(4096, S2);
  CHECK(r != p);
  f.ops.complete(S1);
  void* t = f.get(4096, S1);
  CHECK(t != p);
  CHECK(f.alloc.stats().active[kAll].current == 4);
  f.check();

  f.ops.complete(S2);
  void* u = f.get(4096, S1);
  CHECK(u == p);
  s = f.alloc.stats();
  CHECK(s.active[kAll].current == s.allocation[kAll].current);
  CHECK(s.active_bytes[kAll].current == s.allocated_bytes[kAll].current);
  for (void* x : {q, r, t, u}) f.put(x);
  f.check();
  drain(f);
}

TEST_CASE("record_stream on the block's own stream changes nothing",
          "[alloc][stream][record-stream]") {
  Fixture f;
  void* p = f.get(4096, S1);
  f.ops.enqueue(S1);
  CHECK(f.alloc.record_stream(p, S1) == Lookup::kFound);
  f.put(p);
  void* q = f.get(4096, S1);
  CHECK(q == p);
  f.put(q);
  drain(f);
}

TEST_CASE("record_stream of several streams waits for all of them",
          "[alloc][stream][record-stream]") {
  Fixture f;
  void* p = f.get(5 * kMiB, S1);
  f.ops.enqueue(S2);
  f.ops.enqueue(S3);
  CHECK(f.alloc.record_stream(p, S2) == Lookup::kFound);
  CHECK(f.alloc.record_stream(p, S3) == Lookup::kFound);
  CHECK(f.alloc.record_stream(p, S2) == Lookup::kFound);  // twice: the same
  f.put(p);
  f.ops.complete(S2);
  void* q = f.get(5 * kMiB, S1);
  CHECK(q != p);
  f.ops.complete(S3);
  void* r = f.get(5 * kMiB, S1);
  CHECK(r == p);
  f.put(q);
  f.put(r);
  drain(f);
}

TEST_CASE("free on another stream waits for that stream's work", "[alloc][stream][free-async]") {
  Fixture f;
  void* p = f.get(4096, S1);
  f.ops.enqueue(S2);
  CHECK(f.alloc.free(p, S2, nullptr) == Lookup::kFound);
  CHECK(f.alloc.stats().allocation[kAll].current == 0);
  void* q = f.get(4096, S1);
  CHECK(q != p);
  void* r = f.get(4096, S2);
  CHECK(r != p);
  f.ops.complete(S2);
  void* t = f.get(4096, S1);
  CHECK(t == p);
  // A free naming the block's own stream: at once.
  f.ops.enqueue(S1);
  CHECK(f.alloc.free(t, S1, nullptr) == Lookup::kFound);
  void* u = f.get(4096, S1);
  CHECK(u == p);
  for (void* x : {q, r, u}) f.put(x);
  drain(f);
}

TEST_CASE("retire_stream hands the blocks over once the stream's work completed",
          "[alloc][stream][retire]") {
  Fixture f;
  void* p = f.get(4096, S1);  // live
  void* g = f.get(8192, S1);  // freed below: a cached 8 KiB block of S1
  void* h = f.get(4096, S1);  // live, keeps g from merging
  f.put(g);
  f.ops.enqueue(S1);  // work on S1 still uses g's memory
  REQUIRE(f.alloc.retire_stream(S1, S2) == ACCEL_SUCCESS);

  void* q = f.get(8192, S2);
  CHECK(q != g);
  CHECK(f.ops.segment_of(q) != f.ops.segment_of(g));

  f.ops.complete(S1);
  // Now S1's blocks are S2's: g is the best fit of S2's free blocks.
  void* x = f.get(8192, S2);
  CHECK(x == g);
  CHECK(f.info(p).stream == S2);
  CHECK(f.info(h).stream == S2);
  // p, live when S1 retired, is reused by S2 at once once freed.
  f.put(p);
  void* y = f.get(4096, S2);
  CHECK(y == p);
  for (void* z : {q, x, y, h}) f.put(z);
  f.check();
  drain(f);
}

TEST_CASE("a free whose marker cannot be recorded still waits for the stream",
          "[alloc][stream][failure]") {
  Fixture f;
  void* p = f.get(4096, S1);
  f.ops.enqueue(S2);
  uint64_t s2_work = f.ops.queued(S2);
  CHECK(f.alloc.record_stream(p, S2) == Lookup::kFound);
  SECTION("event_record fails") { f.ops.fail_event_record(ACCEL_ERROR_BACKEND_FAILURE); }
  SECTION("event_create fails") { f.ops.fail_event_create(ACCEL_ERROR_BACKEND_FAILURE); }
  f.put(p);
  f.ops.fail_event_record(ACCEL_SUCCESS);
  f.ops.fail_event_create(ACCEL_SUCCESS);
  // Whatever the allocator does instead (wait now, or later), p must not be
  // handed out again while S2's work that uses it may still run.
  for (int i = 0; i < 3; ++i) {
    void* q = f.get(4096, i == 2 ? S2 : S1);
    if (q == p) CHECK(f.ops.completed(S2) >= s2_work);
    f.put(q);
  }
  f.check();
  drain(f);
}

TEST_CASE("threads allocate and free on their own streams at once", "[alloc][stream][threads]") {
  constexpr int kThreads = 4;
  constexpr int kSteps = 1500;
  Fixture f;
  std::mutex failures_mu;
  std::vector<std::string> failures;
  auto fail = [&](std::string what) {
    std::lock_guard lock(failures_mu);
    failures.push_back(std::move(what));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      StreamKey mine = stream_key(10 + t);
      std::vector<std::pair<void*, size_t>> live;
      for (int step = 0; step < kSteps; ++step) {
        unsigned action = rng() % 10;
        if (action < 5 || live.empty()) {
          size_t bytes = rng() % 4 == 0 ? 1 + rng() % (6 * kMiB) : 1 + rng() % (64 * kKiB);
          void* p = nullptr;
          std::string error;
          accel_status_t st = f.alloc.allocate(bytes, mine, nullptr, &p, error);
          if (st != ACCEL_SUCCESS) {
            fail("allocate(" + std::to_string(bytes) + ") failed: " + error);
            continue;
          }
          // Tag the ends: a block handed to two owners shows as a changed tag.
          static_cast<unsigned char*>(p)[0] = static_cast<unsigned char>(t);
          static_cast<unsigned char*>(p)[bytes - 1] = static_cast<unsigned char>(t);
          live.emplace_back(p, bytes);
          f.ops.enqueue(mine);
        } else if (action < 9) {
          size_t i = rng() % live.size();
          auto [p, bytes] = live[i];
          live.erase(live.begin() + long(i));
          auto* c = static_cast<unsigned char*>(p);
          if (c[0] != t || c[bytes - 1] != t) fail("a block was overwritten by another owner");
          if (rng() % 3 == 0) {
            StreamKey other = stream_key(10 + int(rng() % kThreads));
            f.ops.enqueue(other);
            if (f.alloc.record_stream(p, other) != Lookup::kFound) fail("record_stream lost");
          }
          if (f.alloc.free(p, nullptr, nullptr) != Lookup::kFound) fail("free lost a block");
        } else {
          f.ops.complete(stream_key(10 + int(rng() % kThreads)));
          if (step % 100 == 0) {
            std::string why = f.alloc.check_invariants();
            if (!why.empty()) fail("check_invariants: " + why);
          }
          if (t == 0 && step % 300 == 0 && f.alloc.empty_cache() != ACCEL_SUCCESS) {
            fail("empty_cache failed");
          }
        }
      }
      for (auto [p, bytes] : live) {
        if (f.alloc.free(p, nullptr, nullptr) != Lookup::kFound) fail("free lost a block");
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& why : failures) FAIL_CHECK(why);
  CHECK(failures.empty());
  f.check();
  drain(f);
}
