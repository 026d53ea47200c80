// The pinned host memory cache through the public API, over a real backend
// (sim, or OpenCL on PoCL): accel_host_malloc reuses freed blocks,
// accel_empty_host_cache returns them, ACCEL_ALLOC_CONF=backend:native makes
// every call a vendor call, and a block freed while a copy from or to it is
// still queued is not handed out before that copy is done.
//
// One scenario per process (its Catch2 tag), with ACCEL_BACKEND and
// ACCEL_ALLOC_CONF from the test's environment; the statistics are
// process-wide, so every check is on a difference.
#include <accel/accel.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// What the environment asks for (the test's own reading, not the core's).
bool expect_native() { return env("ACCEL_ALLOC_CONF").find("backend:native") != std::string::npos; }

void ok(accel_status_t st, const char* what) {
  INFO(what << ": " << accel_status_name(st) << ": " << accel_last_error());
  REQUIRE(st == ACCEL_SUCCESS);
}

std::map<std::string, int64_t> host_stats() {
  size_t n = 0;
  ok(accel_host_memory_stats_list(nullptr, 0, &n), "accel_host_memory_stats_list (count)");
  std::vector<accel_memory_stat_t> v(n);
  size_t m = 0;
  ok(accel_host_memory_stats_list(v.data(), v.size(), &m), "accel_host_memory_stats_list");
  REQUIRE(m == n);
  std::map<std::string, int64_t> out;
  for (auto& s : v) out[s.name] = s.value;
  return out;
}

accel_host_memory_stats_t plain_stats() {
  accel_host_memory_stats_t s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  ok(accel_host_memory_stats(&s), "accel_host_memory_stats");
  return s;
}

accel_pointer_attributes_t attributes(const void* p) {
  accel_pointer_attributes_t a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  ok(accel_pointer_get_attributes(p, &a), "accel_pointer_get_attributes");
  return a;
}

void* host_malloc(size_t n) {
  void* p = nullptr;
  ok(accel_host_malloc(n, 0, &p), "accel_host_malloc");
  REQUIRE(p != nullptr);
  return p;
}

void require_backend() {
  int32_t n = accel_device_count();
  INFO("ACCEL_BACKEND=" << env("ACCEL_BACKEND") << ": " << accel_last_error());
  REQUIRE(n > 0);
  std::string want = expect_native() ? "native" : "caching";
  REQUIRE(want == accel_get_allocator_backend());
}

// Holds a stream: a host function that waits until opened (20 s at most,
// then it lets the stream go and the test fails on `timed_out`).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  bool timed_out = false;
  static void wait(void* self) {
    auto* g = static_cast<Gate*>(self);
    std::unique_lock lock(g->mu);
    if (!g->cv.wait_for(lock, std::chrono::seconds(20), [&] { return g->open; }))
      g->timed_out = true;
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

bool all_bytes(const void* p, size_t n, unsigned char v) {
  auto* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (c[i] != v) return false;
  return true;
}

}  // namespace

TEST_CASE("accel_host_malloc reuses freed blocks; accel_empty_host_cache returns them", "[reuse]") {
  require_backend();
  const bool native = expect_native();
  auto before = host_stats();
  REQUIRE(before.size() == 18);
  auto plain_before = plain_stats();

  void* p = host_malloc(1000);
  auto a = attributes(static_cast<char*>(p) + 999);
  CHECK(a.type == ACCEL_MEMORY_HOST_PINNED);
  CHECK(a.base == p);
  CHECK(a.size == 1000);  // what was asked for, not the block's 1024
  CHECK(attributes(static_cast<char*>(p) + 1000).type != ACCEL_MEMORY_HOST_PINNED);
  CHECK(plain_stats().allocated_bytes - plain_before.allocated_bytes == 1000);
  ok(accel_host_free(p), "accel_host_free");
  CHECK(attributes(p).type == ACCEL_MEMORY_UNKNOWN);  // cached blocks are not live
  CHECK(plain_stats().allocated_bytes == plain_before.allocated_bytes);
  CHECK(accel_host_free(p) == ACCEL_ERROR_INVALID_ARGUMENT);  // twice

  void* q = host_malloc(1000);
  auto mid = host_stats();
  if (native) {
    CHECK(mid["num_host_alloc"] - before["num_host_alloc"] == 2);  // a vendor call each time
    CHECK(mid["num_host_free"] - before["num_host_free"] == 1);
    CHECK(mid["allocated_bytes.current"] - before["allocated_bytes.current"] == 1000);
  } else {
    CHECK(q == p);  // nothing used it: reused at once
    CHECK(mid["num_host_alloc"] - before["num_host_alloc"] == 1);
    CHECK(mid["num_host_free"] - before["num_host_free"] == 0);
    CHECK(mid["allocated_bytes.current"] - before["allocated_bytes.current"] == 1024);
    CHECK(mid["reserved_bytes.current"] - before["reserved_bytes.current"] == 1024);
  }
  CHECK(mid["allocation.current"] - before["allocation.current"] == 1);
  CHECK(mid["segment.current"] - before["segment.current"] == 1);
  CHECK(attributes(q).size == 1000);

  void* r = host_malloc(600);  // the same size class, while q is live
  CHECK(r != q);
  ok(accel_host_free(q), "accel_host_free");
  ok(accel_host_free(r), "accel_host_free");
  auto freed = host_stats();
  CHECK(freed["allocation.current"] == before["allocation.current"]);
  if (native) {
    CHECK(freed["segment.current"] == before["segment.current"]);
  } else {
    CHECK(freed["segment.current"] - before["segment.current"] == 2);  // cached
    CHECK(freed["num_host_free"] == before["num_host_free"]);
  }

  ok(accel_empty_host_cache(), "accel_empty_host_cache");
  auto after = host_stats();
  CHECK(after["segment.current"] == before["segment.current"]);
  CHECK(after["reserved_bytes.current"] == before["reserved_bytes.current"]);
  CHECK(after["num_host_free"] - before["num_host_free"] == (native ? 3 : 2));
  CHECK(after["num_host_alloc"] - before["num_host_alloc"] == (native ? 3 : 2));
  CHECK(after["allocation.peak"] >= 2);
  CHECK(plain_stats().total_allocations - plain_before.total_allocations == 3);
  CHECK(plain_stats().allocation_count == plain_before.allocation_count);

  // Every name, in torch.cuda.host_memory_stats' spelling.
  for (const char* stat : {"allocation", "segment", "allocated_bytes", "reserved_bytes"})
    for (const char* metric : {"current", "peak", "allocated", "freed"})
      CHECK(after.count(std::string(stat) + "." + metric) == 1);
  CHECK(after.count("num_host_alloc") == 1);
  CHECK(after.count("num_host_free") == 1);
  size_t n = 0;
  CHECK(accel_host_memory_stats_list(nullptr, 0, nullptr) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_host_memory_stats_list(nullptr, 1, &n) == ACCEL_ERROR_INVALID_ARGUMENT);
  accel_memory_stat_t two[2];
  ok(accel_host_memory_stats_list(two, 2, &n), "accel_host_memory_stats_list (2)");
  CHECK(n == 18);
  CHECK(std::string(two[0].name) == "allocation.current");
}

TEST_CASE("A block freed while a copy uses it is not reused before the copy is done", "[copy]") {
  require_backend();
  REQUIRE_FALSE(expect_native());  // backend:native frees at once: the caller must wait
  constexpr size_t kN = 256 * 1024;
  accel_stream_t s = nullptr;
  ok(accel_stream_create(-1, 0, &s), "accel_stream_create");
  void* dev = nullptr;
  ok(accel_malloc(-1, kN, &dev), "accel_malloc");
  accel_event_t done = nullptr;
  ok(accel_event_create(-1, 0, &done), "accel_event_create");

  SECTION("host to device: the copy still reads the freed block") {
    void* a = host_malloc(kN);
    std::memset(a, 0x5a, kN);
    Gate gate;
    ok(accel_launch_host_func(s, &Gate::wait, &gate), "accel_launch_host_func");
    ok(accel_memcpy_async(dev, a, kN, ACCEL_MEMCPY_HOST_TO_DEVICE, s), "accel_memcpy_async");
    ok(accel_event_record(done, s), "accel_event_record");
    ok(accel_host_free(a), "accel_host_free");
    void* b = host_malloc(kN);
    // While the copy has not run, handing out its block would be the bug.
    if (accel_event_query(done) == ACCEL_ERROR_NOT_READY) CHECK(b != a);
    std::memset(b, 0xa5, kN);  // the new owner writes at once
    gate.release();
    ok(accel_stream_synchronize(s), "accel_stream_synchronize");
    CHECK_FALSE(gate.timed_out);
    void* back = host_malloc(kN);
    ok(accel_memcpy_async(back, dev, kN, ACCEL_MEMCPY_DEVICE_TO_HOST, s), "accel_memcpy_async");
    ok(accel_stream_synchronize(s), "accel_stream_synchronize");
    CHECK(all_bytes(back, kN, 0x5a));  // what was in the block when the copy was queued
    CHECK(all_bytes(b, kN, 0xa5));
    // Done now: the next request of the size gets a cached block, no vendor call.
    auto before = host_stats();
    ok(accel_host_free(b), "accel_host_free");
    void* c = host_malloc(kN);
    CHECK(host_stats()["num_host_alloc"] == before["num_host_alloc"]);
    ok(accel_host_free(c), "accel_host_free");
    ok(accel_host_free(back), "accel_host_free");
  }
  SECTION("device to host: the copy still writes the freed block") {
    void* fill = host_malloc(kN);
    std::memset(fill, 0x3c, kN);
    ok(accel_memcpy_async(dev, fill, kN, ACCEL_MEMCPY_HOST_TO_DEVICE, s), "accel_memcpy_async");
    ok(accel_stream_synchronize(s), "accel_stream_synchronize");
    void* a = host_malloc(kN);
    Gate gate;
    ok(accel_launch_host_func(s, &Gate::wait, &gate), "accel_launch_host_func");
    ok(accel_memcpy_async(a, dev, kN, ACCEL_MEMCPY_DEVICE_TO_HOST, s), "accel_memcpy_async");
    ok(accel_event_record(done, s), "accel_event_record");
    ok(accel_host_free(a), "accel_host_free");
    void* b = host_malloc(kN);
    if (accel_event_query(done) == ACCEL_ERROR_NOT_READY) CHECK(b != a);
    std::memset(b, 0xa5, kN);
    gate.release();
    ok(accel_stream_synchronize(s), "accel_stream_synchronize");
    CHECK_FALSE(gate.timed_out);
    CHECK(all_bytes(b, kN, 0xa5));  // the late copy did not land in the new owner's data
    ok(accel_host_free(b), "accel_host_free");
    ok(accel_host_free(fill), "accel_host_free");
  }
  SECTION("a stream destroyed after copying from a block still lets it be reused") {
    accel_stream_t other = nullptr;
    ok(accel_stream_create(-1, 0, &other), "accel_stream_create");
    void* a = host_malloc(kN);
    std::memset(a, 0x77, kN);
    ok(accel_memcpy_async(dev, a, kN, ACCEL_MEMCPY_HOST_TO_DEVICE, other), "accel_memcpy_async");
    ok(accel_event_record(done, other), "accel_event_record");
    ok(accel_stream_destroy(other), "accel_stream_destroy");  // queued work still completes
    ok(accel_host_free(a), "accel_host_free");
    // The copy has run once `done` has (accel_synchronize need not wait for
    // a destroyed stream's work on every backend).
    ok(accel_event_synchronize(done), "accel_event_synchronize");
    // The block's marker was recorded on the stream as it was destroyed,
    // just after `done`: it completes a moment later at most.
    // Another block of the size taken meanwhile goes back at once: the
    // next request takes `a` as soon as its marker is seen complete.
    auto before = host_stats();
    void* b = nullptr;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((b = host_malloc(kN)) != a && std::chrono::steady_clock::now() < deadline) {
      ok(accel_host_free(b), "accel_host_free");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(b == a);
    CHECK(host_stats()["num_host_alloc"] - before["num_host_alloc"] <= 1);
    void* back = host_malloc(kN);
    ok(accel_memcpy_async(back, dev, kN, ACCEL_MEMCPY_DEVICE_TO_HOST, s), "accel_memcpy_async");
    ok(accel_stream_synchronize(s), "accel_stream_synchronize");
    CHECK(all_bytes(back, kN, 0x77));
    ok(accel_host_free(b), "accel_host_free");
    ok(accel_host_free(back), "accel_host_free");
  }
  SECTION("empty_host_cache waits for the copy; then returns the block") {
    void* a = host_malloc(kN);
    std::memset(a, 0x11, kN);
    Gate gate;
    ok(accel_launch_host_func(s, &Gate::wait, &gate), "accel_launch_host_func");
    ok(accel_memcpy_async(dev, a, kN, ACCEL_MEMCPY_HOST_TO_DEVICE, s), "accel_memcpy_async");
    ok(accel_host_free(a), "accel_host_free");
    auto before = host_stats();
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      gate.release();
    });
    ok(accel_empty_host_cache(), "accel_empty_host_cache");
    opener.join();
    CHECK_FALSE(gate.timed_out);
    auto after = host_stats();
    CHECK(after["segment.current"] < before["segment.current"]);
    CHECK(after["num_host_free"] > before["num_host_free"]);
    ok(accel_stream_synchronize(s), "accel_stream_synchronize");
  }
  ok(accel_event_destroy(done), "accel_event_destroy");
  ok(accel_free(dev), "accel_free");
  ok(accel_stream_destroy(s), "accel_stream_destroy");
  ok(accel_empty_host_cache(), "accel_empty_host_cache");
}

TEST_CASE("fork() while other threads allocate pinned memory: the child is not stuck", "[fork]") {
  require_backend();
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        void* p = nullptr;
        if (accel_host_malloc(4096, 0, &p) == ACCEL_SUCCESS) accel_host_free(p);
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Only what needs no backend of the parent: the cache's lock was
      // released in the child, so these return.
      size_t n = 0;
      accel_status_t st = accel_host_memory_stats_list(nullptr, 0, &n);
      _exit(st == ACCEL_SUCCESS && n == 18 ? 0 : 1);
    }
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        stop = true;
        for (auto& w : workers) w.join();
        FAIL("forked child did not finish within 30 s (a lock held across fork?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  stop = true;
  for (auto& w : workers) w.join();
  ok(accel_empty_host_cache(), "accel_empty_host_cache");
}
