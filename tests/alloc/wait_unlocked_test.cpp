// No core lock is held while waiting for device work (docs/architecture.md,
// "Locks and waits"): each path of the core that waits for a stream or the
// device runs here while the work it waits for is a host function that calls
// into the allocator (accel_malloc + accel_free), its statistics
// (accel_memory_stats_list) and its snapshot (accel_memory_snapshot). Holding
// the allocator's lock across the wait deadlocks: the host function waits
// for the lock, the waiter for the host function (after mlx #2099; PyTorch
// PRs #108367 and #22173 release the allocator lock on the slow path).
//
// One scenario per process (its Catch2 tag): the garbage-collection and
// out-of-memory paths need their own ACCEL_ALLOC_CONF / ACCEL_SIM_MEMORY,
// which the meson.build entries set. Every wait is under a Deadline, so a
// deadlock fails with a message instead of stalling the run.
#include <accel/accel.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;

void ok(accel_status_t st, const char* what) {
  INFO(what << ": " << accel_status_name(st) << ": " << accel_last_error());
  REQUIRE(st == ACCEL_SUCCESS);
}

// The host function: waits until the main thread is about to enter the
// waiting call (armed), gives it time to get into its wait, then calls into
// the allocator. Each status is kept for the checks afterwards.
struct Caller {
  int32_t device = 0;
  bool pinned = false;  // the host cache's path: accel_host_malloc instead
  std::atomic<bool> armed{false};
  std::atomic<bool> ran{false};
  accel_status_t alloc_st = ACCEL_ERROR_INTERNAL, free_st = ACCEL_ERROR_INTERNAL;
  accel_status_t stats_st = ACCEL_ERROR_INTERNAL, snapshot_st = ACCEL_ERROR_INTERNAL;
  std::string message;

  static void fn(void* p) {
    auto* c = static_cast<Caller*>(p);
    while (!c->armed.load()) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(100ms);  // the waiter is inside its wait by now
    void* q = nullptr;
    if (c->pinned) {
      c->alloc_st = accel_host_malloc(4096, 0, &q);
      c->free_st = c->alloc_st == ACCEL_SUCCESS ? accel_host_free(q) : c->alloc_st;
    } else {
      c->alloc_st = accel_malloc(c->device, 4096, &q);
      c->free_st = c->alloc_st == ACCEL_SUCCESS ? accel_free(q) : c->alloc_st;
    }
    if (c->alloc_st != ACCEL_SUCCESS) c->message = accel_last_error();
    size_t n = 0;
    c->stats_st = accel_memory_stats_list(c->device, nullptr, 0, &n);
    size_t len = 0;
    c->snapshot_st = accel_memory_snapshot(c->device, nullptr, 0, &len);
    if (c->snapshot_st == ACCEL_ERROR_OUT_OF_RANGE) c->snapshot_st = ACCEL_SUCCESS;  // size query
    c->ran = true;
  }

  void check() const {
    REQUIRE(ran.load());
    INFO("host function: alloc " << accel_status_name(alloc_st) << " (" << message << "), free "
                                 << accel_status_name(free_st) << ", stats "
                                 << accel_status_name(stats_st) << ", snapshot "
                                 << accel_status_name(snapshot_st));
    CHECK(alloc_st == ACCEL_SUCCESS);
    CHECK(free_st == ACCEL_SUCCESS);
    CHECK(stats_st == ACCEL_SUCCESS);
    CHECK(snapshot_st == ACCEL_SUCCESS);
  }
};

size_t device_memory_size(int32_t device) {
  size_t free_bytes = 0, total = 0;
  ok(accel_mem_get_info(device, &free_bytes, &total), "accel_mem_get_info");
  REQUIRE(total > 0);
  return total;
}

// A small block cached for the calling thread's current stream, so the host
// function's accel_malloc (on the same default stream) is served from the
// cache even when the device is full.
void cache_small_block(int32_t device) {
  void* p = nullptr;
  ok(accel_malloc(device, 4096, &p), "accel_malloc (small block)");
  ok(accel_free(p), "accel_free (small block)");
}

// Runs `wait` (the waiting call under test) while the host function of
// `caller` runs on `busy`, then checks that both finished.
template <typename Wait>
void run_while_calling(accel_stream_t busy, Caller& caller, const char* what, Wait wait) {
  ok(accel_launch_host_func(busy, Caller::fn, &caller), "accel_launch_host_func");
  {
    accel_test::Deadline d(what, accel_test::kWaitLimit,
                           "no core lock is held while waiting for device work: the host "
                           "function it waits for calls into the allocator");
    caller.armed = true;
    wait();
    ok(accel_stream_synchronize(busy), "accel_stream_synchronize");
  }
  caller.check();
}

}  // namespace

// empty_cache waits for a pending free's marker, recorded on a stream after
// the host function that allocates.
TEST_CASE("empty_cache waiting for a marker lets a host function allocate", "[empty-cache-marker]") {
  accel_stream_t s2 = nullptr;
  ok(accel_stream_create(0, 0, &s2), "accel_stream_create");
  cache_small_block(0);
  Caller c;
  ok(accel_launch_host_func(s2, Caller::fn, &c), "accel_launch_host_func");
  void* p = nullptr;
  ok(accel_malloc(0, 1 << 20, &p), "accel_malloc");
  ok(accel_record_stream(p, s2), "accel_record_stream");  // its marker follows the host function
  ok(accel_free(p), "accel_free");
  {
    accel_test::Deadline d("accel_empty_cache", accel_test::kWaitLimit,
                           "no core lock is held while waiting for device work");
    c.armed = true;
    ok(accel_empty_cache(0), "accel_empty_cache");
    ok(accel_stream_synchronize(s2), "accel_stream_synchronize");
  }
  c.check();
  ok(accel_stream_destroy(s2), "accel_stream_destroy");
}

// empty_cache waits for the whole device before segments go back.
TEST_CASE("empty_cache waiting for the device lets a host function allocate", "[empty-cache-device]") {
  accel_stream_t s2 = nullptr;
  ok(accel_stream_create(0, 0, &s2), "accel_stream_create");
  void* p = nullptr;
  ok(accel_malloc(0, 4 << 20, &p), "accel_malloc");
  ok(accel_free(p), "accel_free");  // a whole free segment: empty_cache releases it
  cache_small_block(0);
  Caller c;
  run_while_calling(s2, c, "accel_empty_cache", [] { ok(accel_empty_cache(0), "accel_empty_cache"); });
  ok(accel_stream_destroy(s2), "accel_stream_destroy");
}

// An allocation that does not fit frees the cache and retries: it waits for
// the markers of pending frees and for the device.
TEST_CASE("the out-of-memory retry lets a host function allocate", "[oom-retry]") {
  accel_stream_t a = nullptr, b = nullptr, s2 = nullptr;
  ok(accel_stream_create(0, 0, &a), "accel_stream_create a");
  ok(accel_stream_create(0, 0, &b), "accel_stream_create b");
  ok(accel_stream_create(0, 0, &s2), "accel_stream_create s2");
  // Live while the device fills (whose last retry returns every cached
  // segment), cached for the host function after.
  void* small = nullptr;
  ok(accel_malloc(0, 4096, &small), "accel_malloc (small block)");
  const size_t bytes = device_memory_size(0) / 4;
  // Stream a takes the rest of the device (before the host function is
  // queued: filling ends in a retry that waits for the device); one block is
  // then also used on s2, so its free waits for a marker behind the host
  // function.
  std::vector<void*> held;
  for (;;) {
    void* p = nullptr;
    accel_status_t st = accel_malloc_async(bytes, a, &p);
    if (st == ACCEL_ERROR_OUT_OF_MEMORY) break;
    ok(st, "accel_malloc_async (filling the device)");
    held.push_back(p);
    REQUIRE(held.size() < 64);
  }
  REQUIRE(!held.empty());
  ok(accel_free(small), "accel_free (small block)");
  Caller c;
  ok(accel_launch_host_func(s2, Caller::fn, &c), "accel_launch_host_func");
  ok(accel_record_stream(held[0], s2), "accel_record_stream");
  for (void* p : held) ok(accel_free(p), "accel_free (filling a's cache)");
  void* big = nullptr;
  {
    accel_test::Deadline d("accel_malloc_async (out-of-memory retry)", accel_test::kWaitLimit,
                           "no core lock is held while waiting for device work");
    c.armed = true;
    // b has no cached block: the request frees a's cache and retries.
    ok(accel_malloc_async(bytes, b, &big), "accel_malloc_async on b");
    ok(accel_stream_synchronize(s2), "accel_stream_synchronize");
  }
  c.check();
  ok(accel_free(big), "accel_free");
  for (accel_stream_t s : {a, b, s2}) ok(accel_stream_destroy(s), "accel_stream_destroy");
}

// garbage_collection_threshold (set by meson.build): past it, a new segment
// first returns the least recently used cached ones, after a device wait.
TEST_CASE("garbage collection lets a host function allocate", "[gc]") {
  accel_stream_t a = nullptr, b = nullptr, s2 = nullptr;
  ok(accel_stream_create(0, 0, &a), "accel_stream_create a");
  ok(accel_stream_create(0, 0, &b), "accel_stream_create b");
  ok(accel_stream_create(0, 0, &s2), "accel_stream_create s2");
  cache_small_block(0);
  const size_t bytes = device_memory_size(0) / 5;  // three of them pass the 0.5 threshold
  std::vector<void*> held(3);
  for (void*& p : held) ok(accel_malloc_async(bytes, a, &p), "accel_malloc_async on a");
  for (void* p : held) ok(accel_free(p), "accel_free");
  Caller c;
  void* p = nullptr;
  run_while_calling(s2, c, "accel_malloc_async (garbage collection)",
                    [&] { ok(accel_malloc_async(bytes, b, &p), "accel_malloc_async on b"); });
  int64_t collected = -1;
  size_t n = 0;
  ok(accel_memory_stats_list(0, nullptr, 0, &n), "accel_memory_stats_list");
  std::vector<accel_memory_stat_t> st(n);
  ok(accel_memory_stats_list(0, st.data(), n, &n), "accel_memory_stats_list");
  for (const auto& s : st)
    if (std::string(s.name) == "num_device_free") collected = s.value;
  CHECK(collected >= 1);  // the collection did return a segment
  ok(accel_free(p), "accel_free");
  for (accel_stream_t s : {a, b, s2}) ok(accel_stream_destroy(s), "accel_stream_destroy");
}

// The pinned host cache's empty waits for the markers of pinned blocks used
// by copies, while the host function allocates pinned memory.
TEST_CASE("empty_host_cache lets a host function allocate pinned memory", "[host-cache]") {
  accel_stream_t s2 = nullptr;
  ok(accel_stream_create(0, 0, &s2), "accel_stream_create");
  void *h = nullptr, *d = nullptr;
  accel_status_t st = accel_host_malloc(1 << 20, 0, &h);
  if (st == ACCEL_ERROR_NOT_SUPPORTED) {
    accel_test::skip("the backend has no pinned host memory");
    return;
  }
  ok(st, "accel_host_malloc");
  Caller c;
  c.pinned = true;
  ok(accel_launch_host_func(s2, Caller::fn, &c), "accel_launch_host_func");
  ok(accel_malloc(0, 1 << 20, &d), "accel_malloc");
  ok(accel_memcpy_async(d, h, 1 << 20, ACCEL_MEMCPY_HOST_TO_DEVICE, s2), "accel_memcpy_async");
  ok(accel_host_free(h), "accel_host_free");  // its marker follows the host function
  {
    accel_test::Deadline dl("accel_empty_host_cache", accel_test::kWaitLimit,
                            "no core lock is held while waiting for device work");
    c.armed = true;
    ok(accel_empty_host_cache(), "accel_empty_host_cache");
    ok(accel_stream_synchronize(s2), "accel_stream_synchronize");
  }
  c.check();
  ok(accel_free(d), "accel_free");
  ok(accel_stream_destroy(s2), "accel_stream_destroy");
}

// Destroying a stream whose queued work waits behind the host function
// (through an event) retires its memory without waiting under a lock.
TEST_CASE("stream destroy lets a host function allocate", "[stream-destroy]") {
  accel_stream_t s2 = nullptr, s3 = nullptr;
  ok(accel_stream_create(0, 0, &s2), "accel_stream_create s2");
  ok(accel_stream_create(0, 0, &s3), "accel_stream_create s3");
  cache_small_block(0);
  Caller c;
  ok(accel_launch_host_func(s2, Caller::fn, &c), "accel_launch_host_func");
  accel_event_t e = nullptr;
  ok(accel_event_create(0, 0, &e), "accel_event_create");
  ok(accel_event_record(e, s2), "accel_event_record");
  ok(accel_stream_wait_event(s3, e), "accel_stream_wait_event");
  void* p = nullptr;
  ok(accel_malloc_async(1 << 20, s3, &p), "accel_malloc_async on s3");
  ok(accel_memset_async(p, 0, 1 << 20, s3), "accel_memset_async");
  ok(accel_free_async(p, s3), "accel_free_async");
  {
    accel_test::Deadline d("accel_stream_destroy", accel_test::kWaitLimit,
                           "no core lock is held while waiting for device work");
    c.armed = true;
    ok(accel_stream_destroy(s3), "accel_stream_destroy s3");
    ok(accel_stream_synchronize(s2), "accel_stream_synchronize");
    ok(accel_synchronize(0), "accel_synchronize");
  }
  c.check();
  ok(accel_event_destroy(e), "accel_event_destroy");
  ok(accel_stream_destroy(s2), "accel_stream_destroy s2");
}
