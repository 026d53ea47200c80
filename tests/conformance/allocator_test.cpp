// Conformance: the stream-ordered caching allocator over the backend's
// memory (docs/memory.md). The allocator lives in the core, so these checks
// are the same for every backend; what a backend contributes is memory,
// events (the allocator's markers) and stream order, which decide whether
// a freed block is handed out again at the right moment.
//
// Every check also runs under ACCEL_ALLOC_CONF=backend:native (the
// conformance runs ending in -native-alloc), where accel_malloc is one
// vendor allocation and accel_free one vendor free: the expectations follow
// accel_get_allocator_backend().
//
// Every case here starts from an empty allocator and must leave one
// (CleanAllocator below): its exact counts then hold whatever ran before,
// and a case that leaks a block fails itself, by name, instead of moving
// the counts of the next one.

// For Catch::TestEventListenerBase (LeakListener below), as in main.cpp.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>

#include "conformance.hpp"

using namespace conf;

namespace {

bool caching() { return std::string(accel_get_allocator_backend()) == "caching"; }

// accel_memory_stats_list of one device by name; a name it lacks fails the
// test (never a silent 0).
class Stats {
 public:
  explicit Stats(std::map<std::string, int64_t> m) : m_(std::move(m)) {}
  int64_t operator[](const std::string& name) const {
    auto it = m_.find(name);
    if (it == m_.end()) FAIL("accel_memory_stats_list has no statistic named " << name);
    return it->second;
  }
  bool has(const std::string& name) const { return m_.count(name) == 1; }
  auto begin() const { return m_.begin(); }
  auto end() const { return m_.end(); }

 private:
  std::map<std::string, int64_t> m_;
};

Stats stats(int32_t device) {
  size_t n = 0;
  accel_status_t st = accel_memory_stats_list(device, nullptr, 0, &n);
  INFO("accel_memory_stats_list(" << device << ", count) -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  REQUIRE(n > 0);
  std::vector<accel_memory_stat_t> v(n);
  size_t m = 0;
  st = accel_memory_stats_list(device, v.data(), n, &m);
  INFO("accel_memory_stats_list(" << device << ") -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  REQUIRE(m == n);
  std::map<std::string, int64_t> out;
  for (const auto& s : v) {
    REQUIRE(s.name != nullptr);
    out[s.name] = s.value;
  }
  REQUIRE(out.size() == n);  // no name twice
  return Stats(std::move(out));
}

std::string snapshot(int32_t device) {
  size_t len = 0;
  accel_status_t st = accel_memory_snapshot(device, nullptr, 0, &len);
  INFO("accel_memory_snapshot(" << device << ", length) -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  std::string text(len + 4096, '\0');
  size_t got = 0;
  st = accel_memory_snapshot(device, text.data(), text.size(), &got);
  INFO("accel_memory_snapshot(" << device << ") -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  REQUIRE(got < text.size());
  text.resize(got);
  return text;
}

// The state the snapshot gives the block at p ("" when it lists none). The
// snapshot is compact JSON with sorted keys: a block's "address" comes first
// and its "state" after; a segment that starts at p lists its blocks, the
// first of which is p, before any other "state".
std::string block_state(int32_t device, const void* p) {
  const std::string text = snapshot(device);
  const std::string key = "\"address\":" + std::to_string(reinterpret_cast<uintptr_t>(p)) + ",";
  const std::string state = "\"state\":\"";
  size_t at = text.find(key);
  if (at == std::string::npos) return {};
  at = text.find(state, at);
  if (at == std::string::npos) return {};
  at += state.size();
  return text.substr(at, text.find('"', at) - at);
}

std::vector<unsigned char> fill(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 31u + seed + (i >> 8));
  return v;
}

// Live allocations of every device (allocation.all.current), or -1 when a
// statistics call fails. No assertion: LeakListener calls it between test
// cases.
int64_t live_allocations(std::string* where = nullptr) {
  int64_t total = 0;
  for (int32_t d = 0; d < device_count(); ++d) {
    size_t n = 0;
    if (accel_memory_stats_list(d, nullptr, 0, &n) != ACCEL_SUCCESS) return -1;
    std::vector<accel_memory_stat_t> v(n);
    if (accel_memory_stats_list(d, v.data(), n, &n) != ACCEL_SUCCESS) return -1;
    for (const auto& s : v) {
      if (s.name == nullptr || std::string(s.name) != "allocation.all.current" || s.value == 0)
        continue;
      total += s.value;
      if (where != nullptr)
        *where += (where->empty() ? "" : ", ") + std::to_string(s.value) + " on device " +
                  std::to_string(d);
    }
  }
  return total;
}

// The first test case of the run (of any file) that ended with allocations
// live, and how many: an allocator case that finds memory live at its start
// names it.
std::string& first_leak() {
  static std::string leak;
  return leak;
}

struct LeakListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (first_leak().empty() && globals().memory.present && device_count() > 0) {
      std::string where;
      if (live_allocations(&where) > 0)
        first_leak() =
            "\"" + stats.testInfo.name + "\" ended with allocations live (" + where + ")";
    }
    TestEventListenerBase::testCaseEnded(stats);
  }
};

// The allocator of every device as it is with nothing allocated and nothing
// cached: no allocation, no active or pending block, no segment, no byte
// reserved. Checked after waiting for every device and accel_empty_cache
// (which also completes the pending frees). `problems` gets one line per
// statistic that differs; no assertion, so a destructor can call it.
void empty_allocator_problems(std::vector<std::string>& problems) {
  for (int32_t d = 0; d < device_count(); ++d) {
    if (accel_status_t st = synchronize(d); st != ACCEL_SUCCESS) {
      problems.push_back("accel_synchronize(" + std::to_string(d) + ") -> " + describe(st));
      continue;
    }
    if (accel_status_t st = accel_empty_cache(d); st != ACCEL_SUCCESS) {
      problems.push_back("accel_empty_cache(" + std::to_string(d) + ") -> " + describe(st));
      continue;
    }
    size_t n = 0;
    std::vector<accel_memory_stat_t> v;
    accel_status_t st = accel_memory_stats_list(d, nullptr, 0, &n);
    if (st == ACCEL_SUCCESS) {
      v.resize(n);
      st = accel_memory_stats_list(d, v.data(), n, &n);
    }
    if (st != ACCEL_SUCCESS) {
      problems.push_back("accel_memory_stats_list(" + std::to_string(d) + ") -> " + describe(st));
      continue;
    }
    std::string wrong;  // "name value, ..." of this device
    for (const char* name : {"allocation.all.current", "active.all.current", "segment.all.current",
                             "allocated_bytes.all.current", "active_bytes.all.current",
                             "reserved_bytes.all.current", "requested_bytes.all.current"}) {
      auto it = std::find_if(v.begin(), v.end(), [&](const accel_memory_stat_t& s) {
        return s.name != nullptr && std::string(s.name) == name;
      });
      if (it == v.end())
        wrong += std::string(wrong.empty() ? "" : ", ") + "no " + name;
      else if (it->value != 0)
        wrong += std::string(wrong.empty() ? "" : ", ") + name + " " + std::to_string(it->value);
    }
    if (!wrong.empty()) problems.push_back("device " + std::to_string(d) + ": " + wrong);
  }
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

// Declared first in an allocator case (after need_group): the case starts
// from an empty allocator, and once its own handles and blocks are gone
// (they are destroyed before this) the allocator must be empty again. A
// block the case forgot fails the case itself, by name; one a case of
// another file left live is named by LeakListener.
class CleanAllocator {
 public:
  CleanAllocator() {
    std::vector<std::string> problems;
    empty_allocator_problems(problems);
    if (problems.empty()) return;
    const std::string culprit =
        first_leak().empty() ? std::string("an earlier test case left it so") : first_leak();
    FAIL("the allocator is not empty at the start of this case: " << culprit
                                                                  << "; left: " << join(problems));
  }
  ~CleanAllocator() noexcept(false) {
    // A failed REQUIRE is unwinding: the case has failed already, and its
    // blocks are being freed by the destructors still to run.
    if (std::uncaught_exceptions() > 0) return;
    std::vector<std::string> problems;
    empty_allocator_problems(problems);
    INFO("this test case did not free all it allocated: " << join(problems));
    CHECK(problems.empty());
  }
  CleanAllocator(const CleanAllocator&) = delete;
  CleanAllocator& operator=(const CleanAllocator&) = delete;
};

// A device pointer freed by the test's end, whatever happens in between.
struct AsyncMem {
  void* p = nullptr;
  ~AsyncMem() {
    if (p == nullptr) return;
    release_gates();
    for (int32_t d = 0; d < device_count(); ++d) synchronize(d);
    accel_free(p);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(LeakListener)

TEST_CASE("allocator backend and configuration", "[memory][allocator]") {
  const std::string backend = accel_get_allocator_backend();
  CHECK((backend == "caching" || backend == "native"));
  // The runs named -native-alloc set it: make sure it took effect.
  const char* conf = std::getenv("ACCEL_ALLOC_CONF");
  if (conf != nullptr && std::string(conf) == "backend:native") CHECK(backend == "native");
  if (conf == nullptr || *conf == '\0') CHECK(backend == "caching");
}

TEST_CASE("a freed block is reused by its own stream", "[memory][allocator]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  CleanAllocator clean;
  const size_t kBytes = 64 * 1024 + 100;
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d << ", allocator " << accel_get_allocator_backend());
    Stream s(d);
    void* p = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &p));
    REQUIRE(p != nullptr);
    auto before = stats(d);
    ACCEL_REQUIRE_OK(accel_free_async(p, s));
    auto freed = stats(d);
    CHECK(freed["allocation.all.current"] == before["allocation.all.current"] - 1);
    void* q = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &q));
    REQUIRE(q != nullptr);
    auto again = stats(d);
    CHECK(again["allocation.all.current"] == before["allocation.all.current"]);
    CHECK(again["requested_bytes.all.current"] == before["requested_bytes.all.current"]);
    if (caching()) {
      // The stream runs in order: no wait, no new vendor allocation, and
      // the best fit among the stream's free blocks is the one just freed.
      CHECK(q == p);
      CHECK(again["num_device_alloc"] == before["num_device_alloc"]);
      CHECK(again["reserved_bytes.all.current"] == before["reserved_bytes.all.current"]);
      CHECK(freed["reserved_bytes.all.current"] == before["reserved_bytes.all.current"]);
    } else {
      CHECK(again["num_device_alloc"] == before["num_device_alloc"] + 1);
      CHECK(freed["num_device_free"] == before["num_device_free"] + 1);
    }
    ACCEL_REQUIRE_OK(accel_free_async(q, s));

    // accel_malloc / accel_free: the same, on the thread's current stream.
    ACCEL_REQUIRE_OK(accel_set_stream(s));
    void* a = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc(d, kBytes, &a));
    ACCEL_REQUIRE_OK(accel_free(a));
    const auto mid = stats(d);
    void* b = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc(-1, kBytes, &b));
    const auto end = stats(d);
    if (caching()) {
      CHECK(b == a);
      CHECK(end["num_device_alloc"] == mid["num_device_alloc"]);
    }
    ACCEL_REQUIRE_OK(accel_free(b));
    ACCEL_REQUIRE_OK(accel_set_stream(globals().default_streams[static_cast<size_t>(d)]));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
  }
}

TEST_CASE("malloc_async and free_async with copies in between", "[memory][allocator]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  CleanAllocator clean;
  const size_t kBytes = 300 * 1000 + 7;
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d << ", allocator " << accel_get_allocator_backend());
    Stream s(d);
    const auto src = fill(kBytes, 17u + static_cast<unsigned>(d));
    std::vector<unsigned char> dst(kBytes, 0);
    void *a = nullptr, *b = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &a));
    ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &b));
    CHECK(a != b);
    ACCEL_REQUIRE_OK(accel_memcpy_async(a, src.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    ACCEL_REQUIRE_OK(accel_memcpy_async(b, a, kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s));
    if (caching()) {
      // Freed in the stream's order while the copies are still queued: the
      // stream's next allocation may take `a`, and its writes run after.
      ACCEL_REQUIRE_OK(accel_free_async(a, s));
      void* c = nullptr;
      ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &c));
      ACCEL_REQUIRE_OK(accel_memset_async(c, 0xEE, kBytes, s));
      ACCEL_REQUIRE_OK(accel_memcpy_async(dst.data(), b, kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
      ACCEL_REQUIRE_OK(accel_free_async(c, s));
      // NULL: in the order of the current stream of b's device (this
      // thread's default stream). b still goes back to s's pool, and s's
      // copy of it is queued before anything s allocates later.
      ACCEL_REQUIRE_OK(accel_free_async(b, nullptr));
      ACCEL_REQUIRE_OK(stream_synchronize(s));
    } else {
      ACCEL_REQUIRE_OK(accel_memcpy_async(dst.data(), b, kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
      // backend:native: accel_free_async waits for the stream, then frees.
      ACCEL_REQUIRE_OK(accel_free_async(a, s));
      ACCEL_REQUIRE_OK(accel_free_async(b, s));
    }
    CHECK(dst == src);
  }
  SECTION("argument errors") {
    Stream s(0);
    void* p = reinterpret_cast<void*>(uintptr_t{0x1234});
    ACCEL_CHECK_ERROR(accel_malloc_async(0, s, &p), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_malloc_async(16, s, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(p == reinterpret_cast<void*>(uintptr_t{0x1234}));
    ACCEL_CHECK_OK(accel_free_async(nullptr, s));
    AsyncMem m;
    ACCEL_REQUIRE_OK(accel_malloc_async(1024, s, &m.p));
    ACCEL_CHECK_ERROR(accel_free_async(static_cast<char*>(m.p) + 512, s),
                      ACCEL_ERROR_INVALID_ARGUMENT);
    int on_stack = 0;
    ACCEL_CHECK_ERROR(accel_free_async(&on_stack, s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_record_stream(nullptr, s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_record_stream(&on_stack, s), ACCEL_ERROR_INVALID_ARGUMENT);
    // Any pointer inside the allocation names it; its own stream is a no-op.
    ACCEL_CHECK_OK(accel_record_stream(static_cast<char*>(m.p) + 1000, s));
    ACCEL_CHECK_OK(accel_record_stream(m.p, nullptr));
    if (need_devices(2)) {
      Stream other(1);
      ACCEL_CHECK_ERROR(accel_free_async(m.p, other), ACCEL_ERROR_DEVICE_MISMATCH);
      ACCEL_CHECK_ERROR(accel_record_stream(m.p, other), ACCEL_ERROR_DEVICE_MISMATCH);
    }
    // A destroyed stream.
    Stream dead(0);
    accel_stream_t handle = dead.get();
    ACCEL_REQUIRE_OK(dead.destroy());
    ACCEL_CHECK_ERROR(accel_malloc_async(16, handle, &p), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_free_async(m.p, handle), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_record_stream(m.p, handle), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    ACCEL_CHECK_OK(accel_free_async(m.p, s));
    void* freed = m.p;
    m.p = nullptr;
    ACCEL_CHECK_ERROR(accel_free_async(freed, s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_record_stream(freed, s), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("record_stream keeps a freed block from every stream until the other stream's work",
          "[memory][allocator]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  CleanAllocator clean;
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions (a gate blocks the other stream)"))
    return;
  // Without events the allocator waits for the named stream inside the
  // free itself (docs/memory.md): with the other stream blocked that free
  // would wait for the gate this thread must open.
  if (!need_group(globals().events)) return;
  const size_t kBytes = 48 * 1024;
  const int32_t d = device_count() - 1;
  INFO("device " << d << ", allocator " << accel_get_allocator_backend());
  Stream a(d), b(d), c(d);
  const auto want = fill(kBytes, 5);
  std::vector<unsigned char> seen(kBytes, 0);
  // Queued behind a gate: pageable memory would make the copy wait for it.
  Registered seen_registered(seen.data(), kBytes);
  if (!seen_registered.ok()) {
    note_not_run("record_stream behind a gate (no host memory)");
    return;
  }
  void* p = nullptr;
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, a, &p));
  ACCEL_REQUIRE_OK(accel_memcpy_async(p, want.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, a));
  ACCEL_REQUIRE_OK(stream_synchronize(a));
  Gate gate;
  ACCEL_REQUIRE_OK(gate.launch(b));
  // Queued behind the gate: reads p once the gate opens.
  ACCEL_REQUIRE_OK(accel_memcpy_async(seen.data(), p, kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, b));
  ACCEL_REQUIRE_OK(accel_record_stream(p, b));
  if (!caching()) {
    // backend:native frees at once: the caller waits first.
    gate.release();
    ACCEL_REQUIRE_OK(stream_synchronize(b));
  }
  const auto before = stats(d);
  ACCEL_REQUIRE_OK(accel_free_async(p, a));
  const auto after = stats(d);
  CHECK(after["allocation.all.current"] == before["allocation.all.current"] - 1);
  AsyncMem qa, qc;
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, a, &qa.p));
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, c, &qc.p));
  if (caching()) {
    CHECK_FALSE(gate.done());
    // Pending until b's work up to the free has run: active, not allocated.
    CHECK(after["active.all.current"] == before["active.all.current"]);
    CHECK(block_state(d, p) == "active_pending_free");
    // Neither its own stream nor a third one gets it meanwhile.
    CHECK(qa.p != p);
    CHECK(qc.p != p);
  }
  // Their writes must not reach what b reads.
  ACCEL_REQUIRE_OK(accel_memset_async(qa.p, 0x00, kBytes, a));
  ACCEL_REQUIRE_OK(accel_memset_async(qc.p, 0xFF, kBytes, c));
  ACCEL_REQUIRE_OK(stream_synchronize(a));
  ACCEL_REQUIRE_OK(stream_synchronize(c));
  gate.release();
  ACCEL_REQUIRE_OK(stream_synchronize(b));
  CHECK(gate.done());
  CHECK(seen == want);
  if (caching()) {
    // Once b's marker has completed the block is free again: the next
    // allocation (which looks at markers) reclaims it for `a`.
    void* r = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, a, &r));
    const auto later = stats(d);
    // p is no longer pending, and no block is: the case started with an
    // empty allocator (CleanAllocator), so the pending blocks (active, not
    // allocated) are back to what they were before p's free, none.
    CHECK(block_state(d, p) != "active_pending_free");
    CHECK(before["active.all.current"] == before["allocation.all.current"]);
    CHECK(later["active.all.current"] == later["allocation.all.current"]);
    ACCEL_CHECK_OK(accel_free_async(r, a));
  }
}

TEST_CASE("free_async on another stream waits for that stream", "[memory][allocator]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  CleanAllocator clean;
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions (a gate blocks the other stream)"))
    return;
  if (!need_group(globals().events)) return;
  if (!caching()) {
    SUCCEED("backend:native: accel_free_async waits for the stream (checked above)");
    return;
  }
  const size_t kBytes = 16 * 1024;
  Stream a(0), b(0);
  void* p = nullptr;
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, a, &p));
  const auto want = fill(kBytes, 9);
  std::vector<unsigned char> seen(kBytes, 0);
  // Queued behind a gate: pageable memory would make the copy wait for it.
  Registered seen_registered(seen.data(), kBytes);
  if (!seen_registered.ok()) {
    note_not_run("free_async behind a gate (no host memory)");
    return;
  }
  ACCEL_REQUIRE_OK(accel_memcpy_async(p, want.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, a));
  ACCEL_REQUIRE_OK(stream_synchronize(a));
  Gate gate;
  ACCEL_REQUIRE_OK(gate.launch(b));
  ACCEL_REQUIRE_OK(accel_memcpy_async(seen.data(), p, kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, b));
  // cudaFreeAsync's meaning: reused only after b's work so far.
  ACCEL_REQUIRE_OK(accel_free_async(p, b));
  AsyncMem q;
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, a, &q.p));
  CHECK(q.p != p);
  ACCEL_REQUIRE_OK(accel_memset_async(q.p, 0x42, kBytes, a));
  ACCEL_REQUIRE_OK(stream_synchronize(a));
  gate.release();
  ACCEL_REQUIRE_OK(stream_synchronize(b));
  CHECK(seen == want);
}

TEST_CASE("empty_cache returns the segments that hold no live allocation", "[memory][allocator]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  CleanAllocator clean;
  const size_t kLarge = (3u << 20) + 4321;  // the large pool
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d << ", allocator " << accel_get_allocator_backend());
    Stream s(d);
    void* live = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(4096, s, &live));
    void* cached = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(kLarge, s, &cached));
    ACCEL_REQUIRE_OK(accel_memset_async(cached, 1, kLarge, s));
    ACCEL_REQUIRE_OK(accel_free_async(cached, s));  // its memset may still be queued
    const auto before = stats(d);
    ACCEL_REQUIRE_OK(accel_empty_cache(d));
    const auto after = stats(d);
    CHECK(after["allocation.all.current"] == before["allocation.all.current"]);
    CHECK(after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]);
    CHECK(after["reserved_bytes.all.current"] >= after["allocated_bytes.all.current"]);
    if (caching()) {
      // The case started with an empty allocator: two segments, the live
      // block's in the small pool and the cached block's in the large one.
      // Exactly the cached block's went back.
      CHECK(before["segment.all.current"] == 2);
      CHECK(after["num_device_free"] == before["num_device_free"] + 1);
      CHECK(after["segment.all.current"] == 1);
      CHECK(before["reserved_bytes.large_pool.current"] >= static_cast<int64_t>(kLarge));
      CHECK(after["reserved_bytes.large_pool.current"] == 0);
      CHECK(after["reserved_bytes.small_pool.current"] ==
            before["reserved_bytes.small_pool.current"]);
      // No frees are left pending.
      CHECK(after["active.all.current"] == after["allocation.all.current"]);
    } else {
      CHECK(after["num_device_free"] == before["num_device_free"]);
      CHECK(after["reserved_bytes.all.current"] == after["allocated_bytes.all.current"]);
    }
    // The live allocation stays valid.
    const auto want = fill(4096, 3);
    std::vector<unsigned char> seen(4096, 0);
    ACCEL_REQUIRE_OK(accel_memcpy_async(live, want.data(), 4096, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    ACCEL_REQUIRE_OK(accel_memcpy_async(seen.data(), live, 4096, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    CHECK(seen == want);
    ACCEL_REQUIRE_OK(accel_free_async(live, s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    ACCEL_REQUIRE_OK(accel_empty_cache(d));
    // Nothing live on the device (the case started with an empty
    // allocator): nothing stays reserved.
    const auto end = stats(d);
    CHECK(end["allocation.all.current"] == 0);
    CHECK(end["reserved_bytes.all.current"] == 0);
    CHECK(end["segment.all.current"] == 0);
  }
  SECTION("errors") {
    ACCEL_CHECK_ERROR(accel_empty_cache(device_count()), ACCEL_ERROR_INVALID_DEVICE);
    ACCEL_CHECK_OK(accel_empty_cache(-1));
  }
}

TEST_CASE("a destroyed stream's blocks stay valid and go to the default stream",
          "[memory][allocator]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  CleanAllocator clean;
  const size_t kLarge = (5u << 20) + 999;  // a size no other test allocates
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d << ", allocator " << accel_get_allocator_backend());
    // Nothing cached anywhere on the device: whatever the default stream
    // reuses below comes from the destroyed stream.
    ACCEL_REQUIRE_OK(synchronize(d));
    ACCEL_REQUIRE_OK(accel_empty_cache(d));
    auto s = std::make_unique<Stream>(d);
    void *live = nullptr, *cached = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(8192, *s, &live));
    ACCEL_REQUIRE_OK(accel_malloc_async(kLarge, *s, &cached));
    const auto want = fill(8192, 11);
    ACCEL_REQUIRE_OK(accel_memcpy_async(live, want.data(), 8192, ACCEL_MEMCPY_HOST_TO_DEVICE, *s));
    ACCEL_REQUIRE_OK(stream_synchronize(*s));
    ACCEL_REQUIRE_OK(accel_memset_async(cached, 0x77, kLarge, *s));
    if (!caching()) ACCEL_REQUIRE_OK(stream_synchronize(*s));
    ACCEL_REQUIRE_OK(accel_free_async(cached, *s));
    // Destroyed idle, with a cached and a live block: both change to the
    // default stream at once. (A stream destroyed with work still queued
    // hands its blocks over once a marker recorded at the destroy has
    // completed, which some backends' device synchronize does not wait for:
    // the unit tests and alloc-hostile-stream-destroy cover that case.)
    ACCEL_REQUIRE_OK(stream_synchronize(*s));
    ACCEL_REQUIRE_OK(s->destroy());
    s.reset();
    ACCEL_REQUIRE_OK(synchronize(d));
    const auto before = stats(d);
    // The live block: usable from the default stream.
    accel_stream_t def = globals().default_streams[static_cast<size_t>(d)];
    std::vector<unsigned char> seen(8192, 0);
    ACCEL_REQUIRE_OK(accel_memcpy_async(seen.data(), live, 8192, ACCEL_MEMCPY_DEVICE_TO_HOST, def));
    ACCEL_REQUIRE_OK(stream_synchronize(def));
    CHECK(seen == want);
    // The cached block: reused by the default stream, no new segment.
    ACCEL_REQUIRE_OK(accel_set_device_index(d));
    void* again = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc(d, kLarge, &again));
    const auto after = stats(d);
    if (caching()) {
      CHECK(again == cached);
      CHECK(after["num_device_alloc"] == before["num_device_alloc"]);
    } else {
      CHECK(after["num_device_alloc"] == before["num_device_alloc"] + 1);
    }
    std::vector<unsigned char> big(kLarge, 0);
    ACCEL_REQUIRE_OK(accel_memset_async(again, 0x21, kLarge, def));
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(big.data(), again, kLarge, ACCEL_MEMCPY_DEVICE_TO_HOST, def));
    ACCEL_REQUIRE_OK(stream_synchronize(def));
    CHECK(std::count(big.begin(), big.end(), 0x21) == static_cast<long>(kLarge));
    ACCEL_REQUIRE_OK(accel_free(again));
    // accel_free: the block's stream is the default one now.
    ACCEL_REQUIRE_OK(accel_free(live));
    ACCEL_REQUIRE_OK(synchronize(d));
  }
}

TEST_CASE("allocator statistics snapshots and history", "[memory][allocator][stats]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  CleanAllocator clean;
  size_t n = 0;
  ACCEL_REQUIRE_OK(accel_memory_stats_list(0, nullptr, 0, &n));
  REQUIRE(n > 0);
  std::vector<accel_memory_stat_t> names(n);
  ACCEL_REQUIRE_OK(accel_memory_stats_list(0, names.data(), n, &n));
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d << ", allocator " << accel_get_allocator_backend());
    Stream s(d);
    AsyncMem small, large;
    ACCEL_REQUIRE_OK(accel_malloc_async(1000, s, &small.p));
    ACCEL_REQUIRE_OK(accel_malloc_async(2u << 20, s, &large.p));
    auto st = stats(d);
    // The same names in the same order on every device and call.
    std::vector<accel_memory_stat_t> v(n);
    size_t m = 0;
    ACCEL_REQUIRE_OK(accel_memory_stats_list(d, v.data(), n, &m));
    REQUIRE(m == n);
    for (size_t i = 0; i < n; ++i) CHECK(std::string(v[i].name) == names[i].name);
    // The case started with an empty allocator: its two blocks are all
    // there is, one in each pool, each in a segment of its own.
    CHECK(st["allocation.all.current"] == 2);
    CHECK(st["allocation.small_pool.current"] == 1);
    CHECK(st["allocation.large_pool.current"] == 1);
    CHECK(st["requested_bytes.all.current"] == 1000 + (2 << 20));
    CHECK(st["allocated_bytes.all.current"] >= st["requested_bytes.all.current"]);
    CHECK(st["reserved_bytes.all.current"] >= st["allocated_bytes.all.current"]);
    CHECK(st["active_bytes.all.current"] == st["allocated_bytes.all.current"]);
    CHECK(st["segment.all.current"] == 2);
    for (const char* k :
         {"allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
          "active_bytes", "inactive_split_bytes", "requested_bytes"}) {
      INFO(k);
      const std::string b = k;
      CHECK(st[b + ".all.current"] ==
            st[b + ".small_pool.current"] + st[b + ".large_pool.current"]);
      for (const char* pool : {".all", ".small_pool", ".large_pool"}) {
        CHECK(st[b + pool + ".current"] >= 0);
        CHECK(st[b + pool + ".peak"] >= st[b + pool + ".current"]);
      }
    }
    CHECK(st.has("num_device_alloc"));
    CHECK(st.has("num_device_free"));
    const char* conf = std::getenv("ACCEL_ALLOC_CONF");
    if (conf == nullptr || std::string(conf).find("max_split_size_mb") == std::string::npos)
      CHECK(st["max_split_size"] == -1);  // unlimited unless ACCEL_ALLOC_CONF says otherwise
    if (!caching()) {
      CHECK(st["reserved_bytes.all.current"] == st["allocated_bytes.all.current"]);
      CHECK(st["segment.all.current"] == st["allocation.all.current"]);
    }

    ACCEL_REQUIRE_OK(accel_reset_peak_memory_stats(d));
    st = stats(d);
    for (const auto& [name, value] : st) {
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".peak") == 0) {
        INFO(name);
        CHECK(value == st[name.substr(0, name.size() - 5) + ".current"]);
      }
    }
    ACCEL_REQUIRE_OK(accel_reset_accumulated_memory_stats(d));
    st = stats(d);
    for (const auto& [name, value] : st) {
      const bool accumulated =
          name.rfind("num_", 0) == 0 ||
          (name.size() > 10 && name.compare(name.size() - 10, 10, ".allocated") == 0) ||
          (name.size() > 6 && name.compare(name.size() - 6, 6, ".freed") == 0);
      if (accumulated) {
        INFO(name);
        CHECK(value == 0);
      }
    }

    // The snapshot: one JSON object naming the device, the backend and the
    // allocator, with the live blocks.
    ACCEL_REQUIRE_OK(accel_record_memory_history(100));
    void* h = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc_async(777, s, &h));
    const std::string text = snapshot(d);
    CHECK(text.front() == '{');
    CHECK(text.back() == '}');
    CHECK(text.find("\"schema_version\":1") != std::string::npos);
    CHECK(text.find("\"device\":" + std::to_string(d)) != std::string::npos);
    CHECK(text.find("\"backend\":\"" + globals().backend + "\"") != std::string::npos);
    CHECK(text.find(std::string("\"allocator\":\"") + accel_get_allocator_backend() + "\"") !=
          std::string::npos);
    CHECK(text.find("\"address\":" + std::to_string(reinterpret_cast<uintptr_t>(h))) !=
          std::string::npos);
    CHECK(text.find("\"requested_size\":777") != std::string::npos);
    if (caching()) CHECK(text.find("\"action\":\"alloc\"") != std::string::npos);
    ACCEL_REQUIRE_OK(accel_free_async(h, s));
    ACCEL_REQUIRE_OK(accel_record_memory_history(0));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
  }
  SECTION("errors") {
    size_t count = 0;
    accel_memory_stat_t one{nullptr, -5};
    ACCEL_CHECK_ERROR(accel_memory_stats_list(0, &one, 1, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_memory_stats_list(0, nullptr, 1, &count), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_memory_stats_list(device_count(), &one, 1, &count),
                      ACCEL_ERROR_INVALID_DEVICE);
    CHECK(one.name == nullptr);
    // Fewer slots than statistics: those are filled, the count says all.
    std::vector<accel_memory_stat_t> two(3, accel_memory_stat_t{nullptr, -5});
    ACCEL_CHECK_OK(accel_memory_stats_list(0, two.data(), 2, &count));
    CHECK(count == n);
    CHECK(two[0].name != nullptr);
    CHECK(two[1].name != nullptr);
    CHECK(two[2].name == nullptr);
    CHECK(two[2].value == -5);
    size_t len = 0;
    ACCEL_CHECK_ERROR(accel_memory_snapshot(0, nullptr, 0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_memory_snapshot(0, nullptr, 8, &len), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_memory_snapshot(device_count(), nullptr, 0, &len),
                      ACCEL_ERROR_INVALID_DEVICE);
    ACCEL_REQUIRE_OK(accel_memory_snapshot(0, nullptr, 0, &len));
    std::string small(8, 'x');
    size_t need = 0;
    ACCEL_CHECK_ERROR(accel_memory_snapshot(0, small.data(), small.size(), &need),
                      ACCEL_ERROR_OUT_OF_RANGE);
    CHECK(need >= len);
    CHECK(small == std::string(8, 'x'));
    ACCEL_CHECK_ERROR(accel_record_memory_history((size_t{1} << 24) + 1),
                      ACCEL_ERROR_INVALID_ARGUMENT);
  }
}
