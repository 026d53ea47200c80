// Allocator stress: 8 threads for a bounded time allocate and free on
// different streams and devices at once, through every path of the
// stream-ordered caching allocator (docs/memory.md):
//  - accel_malloc on the thread's current stream, filled, copied back and
//    freed while the copy is still queued (the block's own stream orders
//    its reuse after the copy);
//  - accel_malloc_async on a stream of the thread's own, read on a stream
//    borrowed from another thread (ordered by an event), named there with
//    accel_record_stream and freed with accel_free_async on the own stream
//    before either has run;
//  - accel_free_async on the other thread's stream;
//  - a stream destroyed while it owns cached and live blocks, the live one
//    then used on the default stream;
//  - accel_empty_cache, accel_memory_stats_list, accel_memory_snapshot and
//    accel_record_memory_history from any thread at any time.
// Every byte that comes back is checked against the pattern written (a
// block reused too early is overwritten by its next owner's fill), the
// statistics read concurrently are checked for their invariants, and at the
// end allocation.all.current is back where it started and, after
// accel_empty_cache, nothing stays reserved. Under ACCEL_ALLOC_CONF=
// backend:native the same program synchronizes before every free, as that
// allocator requires. Run under ThreadSanitizer by CI (suite 'threads').
//
// Environment: ACCEL_BACKEND (required), ACCEL_STRESS_SECONDS (default 2),
// ACCEL_STRESS_SEED (default: time based, always printed),
// ACCEL_STRESS_THREADS (default 8), ACCEL_STRESS_PRESSURE=1 (the device is
// small on purpose: ACCEL_ERROR_OUT_OF_MEMORY is counted, not a failure, so
// the out-of-memory retry runs while other threads allocate and free).
#include <catch2/catch.hpp>

#include <accel/accel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  return end != v && d > 0 ? d : fallback;
}

// Failures seen on worker threads (Catch2 v2 assertions are not
// thread-safe): collected here and checked on the main thread.
struct Failures {
  std::mutex mutex;
  std::vector<std::string> first;
  std::atomic<long> count{0};
  void add(std::string what) {
    count.fetch_add(1);
    std::lock_guard lock(mutex);
    if (first.size() < 20) first.push_back(std::move(what));
  }
};

// A stream a thread created and lends to the others. Its owner destroys it
// only once it is out of the registry and no lease is left, so a borrower
// never uses a destroyed handle.
struct SharedStream {
  accel_stream_t stream = nullptr;
  int32_t device = 0;
  int owner = 0;
  std::atomic<int> leases{0};
};

class Registry {
 public:
  void add(const std::shared_ptr<SharedStream>& s) {
    std::lock_guard lock(mu_);
    live_.push_back(s);
  }
  // A stream of `device` owned by another thread than `me`, leased; or null.
  std::shared_ptr<SharedStream> borrow(int32_t device, int me, uint64_t pick) {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<SharedStream>> c;
    for (auto& s : live_)
      if (s->device == device && s->owner != me) c.push_back(s);
    if (c.empty()) return nullptr;
    auto s = c[pick % c.size()];
    s->leases.fetch_add(1);
    return s;
  }
  // No new leases; true once the last one is given back (within 20 s).
  bool retire(const std::shared_ptr<SharedStream>& s) {
    {
      std::lock_guard lock(mu_);
      live_.erase(std::remove(live_.begin(), live_.end(), s), live_.end());
    }
    auto until = Clock::now() + std::chrono::seconds(20);
    while (s->leases.load() != 0 && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    return s->leases.load() == 0;
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<SharedStream>> live_;
};

struct Shared {
  int32_t devices = 0;
  bool caching = true;
  bool pressure = false;
  std::vector<accel_stream_t> defaults;
  std::vector<std::string> stat_names;  // accel_memory_stats_list's, in order
  Registry registry;
  Failures failures;
  std::atomic<long> steps{0};
  std::atomic<long> bytes_checked{0};
  std::atomic<long> ooms{0};
  std::atomic<long> allocations{0};
  Clock::time_point deadline;
};

size_t index_of(const Shared& sh, const char* name) {
  auto it = std::find(sh.stat_names.begin(), sh.stat_names.end(), name);
  return static_cast<size_t>(it - sh.stat_names.begin());
}

class Worker {
 public:
  Worker(Shared& sh, int id, uint64_t seed) : sh_(sh), id_(id), rng_(seed) {}

  // At least one step whatever the clock says (a thread may start after
  // the deadline on a loaded machine), and the first one a round trip
  // through an allocation: the totals checked at the end (allocations,
  // bytes checked) then never depend on scheduling.
  void run() {
    bool first = true;
    do {
      if (first)
        malloc_on_current_stream();
      else
        step();
      first = false;
      sh_.steps.fetch_add(1, std::memory_order_relaxed);
    } while (Clock::now() < sh_.deadline);
    finish();
  }

 private:
  uint32_t roll(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  int32_t pick_device() { return static_cast<int32_t>(roll(static_cast<uint32_t>(sh_.devices))); }

  void fail(const std::string& what) {
    sh_.failures.add("thread " + std::to_string(id_) + ", " + op_ + ": " + what);
  }
  bool ok(accel_status_t st, const char* call) {
    if (st == ACCEL_SUCCESS) return true;
    fail(std::string(call) + " returned " + accel_status_name(st) + ": " + accel_last_error());
    return false;
  }

  size_t pick_size() {
    switch (roll(8)) {
      case 0:
        return 1 + roll(512);
      case 1:
        return (size_t{1} << 20) + roll(3u << 20);  // large pool, 20 MiB segments
      case 2:
        if (roll(16) == 0) return (size_t{10} << 20) + roll(4u << 20);  // a segment of its own
        return 4096 * (1 + roll(16));
      default:
        return 16 + roll(64 * 1024);
    }
  }

  // accel_malloc / accel_malloc_async; false (and nothing to free) on
  // failure. Out of memory is expected only under ACCEL_STRESS_PRESSURE.
  bool allocate(int32_t device, accel_stream_t stream, size_t bytes, void** p) {
    *p = nullptr;
    accel_status_t st =
        stream ? accel_malloc_async(bytes, stream, p) : accel_malloc(device, bytes, p);
    if (st == ACCEL_ERROR_OUT_OF_MEMORY && sh_.pressure) {
      sh_.ooms.fetch_add(1);
      return false;
    }
    if (!ok(st, stream ? "accel_malloc_async" : "accel_malloc")) return false;
    if (*p == nullptr) {
      fail("allocation succeeded with a NULL pointer");
      return false;
    }
    sh_.allocations.fetch_add(1);
    return true;
  }

  // Fills `host` with this step's pattern.
  // Fills `host` with this step's pattern: a 4 KiB tile, repeated, each
  // copy stamped with its index, so a block of another step or another
  // offset never matches. Built with memcpy and compared with memcmp:
  // under ThreadSanitizer a per-byte loop over MiBs would dominate the run.
  void pattern(std::vector<unsigned char>& host, size_t bytes) {
    host.resize(bytes);
    constexpr size_t kTile = 4096;
    const auto salt = static_cast<unsigned char>(rng_());
    const auto mul = static_cast<unsigned char>(1 + 2 * roll(64));
    const uint64_t stamp = rng_();
    for (size_t i = 0; i < std::min(bytes, kTile); ++i)
      host[i] = static_cast<unsigned char>(static_cast<unsigned char>(i) * mul + salt);
    for (size_t at = kTile; at < bytes; at += kTile)
      std::memcpy(host.data() + at, host.data(), std::min(kTile, bytes - at));
    for (size_t at = 0; at + sizeof stamp <= bytes; at += kTile) {
      const uint64_t v = stamp + at;
      std::memcpy(host.data() + at, &v, sizeof v);
    }
  }
  void expect_equal(const std::vector<unsigned char>& want, const std::vector<unsigned char>& got,
                    const char* what) {
    if (want.size() == got.size() && std::memcmp(want.data(), got.data(), want.size()) == 0) {
      sh_.bytes_checked.fetch_add(static_cast<long>(want.size()), std::memory_order_relaxed);
      return;
    }
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    fail(std::string(what) + ": byte " + std::to_string(i) + " of " + std::to_string(want.size()) +
         " is " + (i < got.size() ? std::to_string(got[i]) : std::string("missing")) +
         ", expected " + (i < want.size() ? std::to_string(want[i]) : std::string("nothing")) +
         " (the block was reused or freed too early)");
  }

  std::shared_ptr<SharedStream> own_stream(int32_t device) {
    std::vector<std::shared_ptr<SharedStream>> mine;
    for (auto& s : own_)
      if (s->device == device) mine.push_back(s);
    if (!mine.empty() && (mine.size() >= 2 || roll(3) != 0))
      return mine[roll(static_cast<uint32_t>(mine.size()))];
    auto s = std::make_shared<SharedStream>();
    s->device = device;
    s->owner = id_;
    if (!ok(accel_stream_create(device, 0, &s->stream), "accel_stream_create")) return nullptr;
    own_.push_back(s);
    sh_.registry.add(s);
    return s;
  }

  // Destroys one of this thread's streams once nobody borrows it; it may
  // own cached and live blocks (`keep`: a live block of it, used after).
  void destroy_own(const std::shared_ptr<SharedStream>& s) {
    if (!sh_.registry.retire(s)) {
      fail("a borrowed stream was not given back within 20 s");
      return;
    }
    ok(accel_stream_destroy(s->stream), "accel_stream_destroy");
    own_.erase(std::remove(own_.begin(), own_.end(), s), own_.end());
  }

  void step() {
    switch (roll(12)) {
      case 0:
      case 1:
        return malloc_on_current_stream();
      case 2:
      case 3:
        return async_with_borrowed_stream(false);
      case 4:
        return async_with_borrowed_stream(true);
      case 5:
        return destroy_with_blocks();
      case 6:
        return empty_cache();
      case 7:
      case 8:
        return read_stats();
      case 9:
        return snapshot_and_history();
      default:
        return malloc_on_current_stream();
    }
  }

  // accel_malloc on the current stream (a stream of the thread's own or
  // the default one), filled, copied back, freed before the copy has run.
  void malloc_on_current_stream() {
    const int32_t d = pick_device();
    op_ = "malloc on the current stream of device " + std::to_string(d);
    accel_stream_t s = sh_.defaults[static_cast<size_t>(d)];
    if (roll(2) == 0) {
      if (auto own = own_stream(d)) s = own->stream;
    }
    if (!ok(accel_set_stream(s), "accel_set_stream")) return;
    // Back to the default stream on every path: a thread's current stream
    // must never be destroyed.
    struct Restore {
      accel_stream_t def;
      ~Restore() { accel_set_stream(def); }
    } restore{sh_.defaults[static_cast<size_t>(d)]};
    const size_t bytes = pick_size();
    void* p = nullptr;
    if (!allocate(d, nullptr, bytes, &p)) return;
    std::vector<unsigned char> in, out(bytes, 0);
    pattern(in, bytes);
    // `in` stays as it is until the copy from it has run.
    std::vector<unsigned char> want = in;
    bool queued = ok(accel_memcpy_async(p, in.data(), bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, nullptr),
                     "memcpy H2D");
    if (queued && roll(2) == 0) {
      // Half of it overwritten by a memset on the same stream.
      const size_t half = bytes / 2;
      queued = ok(accel_memset_async(p, 0xA7, half, nullptr), "memset");
      std::memset(want.data(), 0xA7, half);
    }
    queued =
        queued && ok(accel_memcpy_async(out.data(), p, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, nullptr),
                     "memcpy D2H");
    if (sh_.caching) {
      // Stream-ordered: the next allocation on this stream runs after the
      // copy, and no other stream gets the block before that.
      ok(accel_free(p), "accel_free");
      ok(accel_stream_synchronize(s), "accel_stream_synchronize");
    } else {
      ok(accel_stream_synchronize(s), "accel_stream_synchronize");
      ok(accel_free(p), "accel_free");
    }
    if (queued) expect_equal(want, out, "round trip on the current stream");
  }

  // accel_malloc_async on an own stream S, written there; read on a stream
  // T of another thread after an event; named on T with record_stream and
  // freed on S (or, `free_on_other`, freed on T with accel_free_async),
  // all before any of it has run.
  void async_with_borrowed_stream(bool free_on_other) {
    const int32_t d = pick_device();
    op_ = std::string(free_on_other ? "free_async on a borrowed stream"
                                    : "record_stream to a borrowed stream") +
          " of device " + std::to_string(d);
    auto own = own_stream(d);
    if (!own) return;
    auto other = sh_.registry.borrow(d, id_, rng_());
    accel_stream_t t = other ? other->stream : sh_.defaults[static_cast<size_t>(d)];
    const size_t bytes = pick_size();
    void* p = nullptr;
    if (allocate(d, own->stream, bytes, &p)) {
      std::vector<unsigned char> in, out(bytes, 0);
      pattern(in, bytes);
      bool queued =
          ok(accel_memcpy_async(p, in.data(), bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, own->stream),
             "memcpy H2D");
      accel_event_t e = nullptr;
      queued = queued && ok(accel_event_create(d, ACCEL_EVENT_DEFAULT, &e), "accel_event_create");
      queued = queued && ok(accel_event_record(e, own->stream), "accel_event_record") &&
               ok(accel_stream_wait_event(t, e), "accel_stream_wait_event");
      queued =
          queued && ok(accel_memcpy_async(out.data(), p, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, t),
                       "memcpy D2H on the borrowed stream");
      if (!sh_.caching) {
        ok(accel_stream_synchronize(t), "accel_stream_synchronize");
        ok(accel_free(p), "accel_free");
      } else if (free_on_other) {
        ok(accel_free_async(p, t), "accel_free_async (other stream)");
      } else {
        ok(accel_record_stream(p, t), "accel_record_stream");
        ok(accel_free_async(p, own->stream), "accel_free_async (own stream)");
      }
      // Another allocation on the own stream at once: it must not get the
      // block while T still reads it.
      void* q = nullptr;
      size_t qbytes = bytes;
      std::vector<unsigned char> qin;
      if (sh_.caching && allocate(d, own->stream, qbytes, &q)) {
        qin.assign(qbytes, 0x5C);
        ok(accel_memset_async(q, 0x5C, qbytes, own->stream), "memset of the next block");
      }
      ok(accel_stream_synchronize(t), "accel_stream_synchronize (borrowed)");
      if (queued) expect_equal(in, out, "copy read on another thread's stream");
      if (q != nullptr) {
        std::vector<unsigned char> qout(qbytes, 0);
        if (ok(accel_memcpy_async(qout.data(), q, qbytes, ACCEL_MEMCPY_DEVICE_TO_HOST, own->stream),
               "memcpy D2H of the next block")) {
          ok(accel_stream_synchronize(own->stream), "accel_stream_synchronize (own)");
          expect_equal(qin, qout, "the next block of the own stream");
        }
        ok(accel_free(q), "accel_free");
      }
      if (e != nullptr) ok(accel_event_destroy(e), "accel_event_destroy");
      // `in` outlives its copy also when something above failed.
      ok(accel_stream_synchronize(own->stream), "accel_stream_synchronize (own)");
    }
    if (other) other->leases.fetch_sub(1);
  }

  // A stream that owns a cached block and a live one is destroyed; the
  // live block stays valid and is used on the default stream.
  void destroy_with_blocks() {
    const int32_t d = pick_device();
    op_ = "stream destroy with blocks on device " + std::to_string(d);
    auto own = own_stream(d);
    if (!own) return;
    void *cached = nullptr, *live = nullptr;
    const size_t bytes = pick_size();
    if (allocate(d, own->stream, bytes, &cached)) {
      ok(accel_memset_async(cached, 0x3E, bytes, own->stream), "memset");
      if (sh_.caching) {
        ok(accel_free(cached), "accel_free");  // cached on the stream, its memset still queued
      } else {
        ok(accel_stream_synchronize(own->stream), "accel_stream_synchronize");
        ok(accel_free(cached), "accel_free");
      }
    }
    if (!allocate(d, own->stream, bytes, &live)) live = nullptr;
    std::vector<unsigned char> in;
    pattern(in, bytes);
    std::vector<unsigned char> want = in;
    bool queued =
        live != nullptr &&
        ok(accel_memcpy_async(live, in.data(), bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, own->stream),
           "memcpy H2D");
    // The default stream uses the live block after the copy: ordered by an
    // event, since a destroyed stream's queued work completes on its own
    // time (cuStreamDestroy does not wait).
    accel_event_t copied = nullptr;
    queued = queued &&
             ok(accel_event_create(d, ACCEL_EVENT_DEFAULT, &copied), "accel_event_create") &&
             ok(accel_event_record(copied, own->stream), "accel_event_record");
    destroy_own(own);  // with the cached block's memset and the copy maybe still queued
    accel_stream_t def = sh_.defaults[static_cast<size_t>(d)];
    if (copied != nullptr) {
      ok(accel_stream_wait_event(def, copied), "accel_stream_wait_event");
      ok(accel_event_destroy(copied), "accel_event_destroy");
    }
    if (live == nullptr) {
      ok(accel_synchronize(d), "accel_synchronize");  // `in` outlives the copy
      return;
    }
    std::vector<unsigned char> out(bytes, 0);
    if (roll(2) == 0) {
      const size_t n = std::min<size_t>(bytes, 100);
      queued = queued && ok(accel_memset_async(live, 0x11, n, def), "memset on the default stream");
      std::memset(want.data(), 0x11, n);
    }
    queued =
        queued && ok(accel_memcpy_async(out.data(), live, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, def),
                     "memcpy D2H on the default stream");
    ok(accel_stream_synchronize(def), "accel_stream_synchronize (default)");
    if (!queued) ok(accel_synchronize(d), "accel_synchronize");  // `in` outlives the copy
    if (queued) expect_equal(want, out, "live block of a destroyed stream");
    ok(accel_free(live), "accel_free (block of a destroyed stream)");
  }

  void empty_cache() {
    const int32_t d = pick_device();
    op_ = "accel_empty_cache(" + std::to_string(d) + ")";
    ok(accel_empty_cache(roll(4) == 0 ? -1 : d), "accel_empty_cache");
  }

  void read_stats() {
    const int32_t d = pick_device();
    op_ = "accel_memory_stats_list(" + std::to_string(d) + ")";
    std::vector<accel_memory_stat_t> v(sh_.stat_names.size());
    size_t n = 0;
    if (!ok(accel_memory_stats_list(d, v.data(), v.size(), &n), "accel_memory_stats_list")) return;
    if (n != v.size()) return fail("statistic count changed to " + std::to_string(n));
    std::map<std::string, int64_t> by_name;
    for (size_t i = 0; i < n; ++i) {
      if (v[i].name == nullptr || sh_.stat_names[i] != v[i].name)
        return fail("statistic " + std::to_string(i) + " renamed");
      by_name[v[i].name] = v[i].value;
    }
    // One consistent reading: taken under the allocator's lock.
    auto get = [&](const std::string& k) { return by_name[k]; };
    if (get("allocated_bytes.all.current") > get("reserved_bytes.all.current"))
      fail("allocated_bytes above reserved_bytes");
    if (get("active_bytes.all.current") < get("allocated_bytes.all.current"))
      fail("active_bytes below allocated_bytes");
    for (const char* k : {"allocation", "segment", "active", "allocated_bytes", "reserved_bytes",
                          "requested_bytes"}) {
      const std::string base = k;
      if (get(base + ".all.current") < 0 || get(base + ".all.peak") < get(base + ".all.current"))
        fail(base + ": negative, or peak below current");
      if (get(base + ".all.current") !=
          get(base + ".small_pool.current") + get(base + ".large_pool.current"))
        fail(base + ".all.current is not small_pool + large_pool");
    }
    if (!sh_.caching && get("reserved_bytes.all.current") != get("allocated_bytes.all.current"))
      fail("backend:native reserves more than it allocates");
  }

  void snapshot_and_history() {
    const int32_t d = pick_device();
    op_ = "accel_memory_snapshot(" + std::to_string(d) + ")";
    if (roll(4) == 0) ok(accel_record_memory_history(roll(2) == 0 ? 0 : 256), "history");
    size_t len = 0;
    if (!ok(accel_memory_snapshot(d, nullptr, 0, &len), "accel_memory_snapshot (length)")) return;
    // Other threads allocate meanwhile: room to grow, and one retry.
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::vector<char> buf(len + 16384, '\x7f');
      size_t got = 0;
      accel_status_t st = accel_memory_snapshot(d, buf.data(), buf.size(), &got);
      if (st == ACCEL_ERROR_OUT_OF_RANGE) {
        len = got;
        continue;
      }
      if (!ok(st, "accel_memory_snapshot")) return;
      if (got == 0 || buf[got] != '\0' || buf[0] != '{' || buf[got - 1] != '}')
        fail("snapshot is not one NUL-terminated JSON object");
      return;
    }
  }

  void finish() {
    op_ = "finish";
    while (!own_.empty()) destroy_own(own_.back());
  }

  Shared& sh_;
  int id_;
  std::mt19937_64 rng_;
  std::string op_ = "start";
  std::vector<std::shared_ptr<SharedStream>> own_;
};

int64_t stat(const Shared& sh, int32_t device, const char* name) {
  std::vector<accel_memory_stat_t> v(sh.stat_names.size());
  size_t n = 0;
  REQUIRE(accel_memory_stats_list(device, v.data(), v.size(), &n) == ACCEL_SUCCESS);
  return v.at(index_of(sh, name)).value;
}

}  // namespace

TEST_CASE("threads allocate and free on many streams and devices at once", "[alloc-stress]") {
  const char* backend = std::getenv("ACCEL_BACKEND");
  REQUIRE(accel_is_available() == 1);
  INFO("selection: " << accel_selection_reason());
  if (backend != nullptr && *backend != '\0')
    REQUIRE(std::string(accel_current_accelerator()) == backend);

  Shared sh;
  sh.devices = accel_device_count();
  REQUIRE(sh.devices >= 1);
  if (const char* e = std::getenv("ACCEL_EXPECT_DEVICES"); e != nullptr && *e != '\0')
    REQUIRE(sh.devices == std::atoi(e));
  sh.caching = std::string(accel_get_allocator_backend()) == "caching";
  sh.pressure = env_number("ACCEL_STRESS_PRESSURE", 0) > 0;
  for (int32_t d = 0; d < sh.devices; ++d) {
    accel_stream_t s = nullptr;
    INFO("device " << d << ": " << accel_last_error());
    REQUIRE(accel_current_stream(d, &s) == ACCEL_SUCCESS);
    sh.defaults.push_back(s);
  }
  size_t count = 0;
  REQUIRE(accel_memory_stats_list(0, nullptr, 0, &count) == ACCEL_SUCCESS);
  std::vector<accel_memory_stat_t> first(count);
  REQUIRE(accel_memory_stats_list(0, first.data(), count, &count) == ACCEL_SUCCESS);
  for (auto& s : first) sh.stat_names.emplace_back(s.name);
  std::vector<int64_t> start_allocations;
  for (int32_t d = 0; d < sh.devices; ++d)
    start_allocations.push_back(stat(sh, d, "allocation.all.current"));

  const double seconds = env_number("ACCEL_STRESS_SECONDS", 2.0);
  const int threads = static_cast<int>(env_number("ACCEL_STRESS_THREADS", 8));
  uint64_t seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("ACCEL_STRESS_SEED"); s != nullptr && *s != '\0')
    seed = std::strtoull(s, nullptr, 0);
  std::printf(
      "alloc stress: backend %s, allocator %s, %d devices, %d threads, %.1f s%s, "
      "ACCEL_STRESS_SEED=%llu\n",
      accel_current_accelerator(), accel_get_allocator_backend(), sh.devices, threads, seconds,
      sh.pressure ? ", memory pressure" : "", static_cast<unsigned long long>(seed));
  std::fflush(stdout);

  sh.deadline = Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < threads; ++i)
    workers.push_back(
        std::make_unique<Worker>(sh, i, seed + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull));
  std::vector<std::thread> ts;
  for (auto& w : workers) ts.emplace_back([&w] { w->run(); });
  for (auto& t : ts) t.join();

  {
    std::lock_guard lock(sh.failures.mutex);
    for (auto& f : sh.failures.first) UNSCOPED_INFO(f);
  }
  INFO("seed " << seed << " (ACCEL_STRESS_SEED repeats the run)");
  CHECK(sh.failures.count.load() == 0);
  int64_t retries = 0;
  for (int32_t d = 0; d < sh.devices; ++d) retries += stat(sh, d, "num_alloc_retries");
  std::printf(
      "alloc stress: %ld steps, %ld allocations, %ld bytes checked, %ld out of memory, %lld "
      "out-of-memory retries\n",
      sh.steps.load(), sh.allocations.load(), sh.bytes_checked.load(), sh.ooms.load(),
      static_cast<long long>(retries));
  // Every thread ran at least its first step, a round trip (see run());
  // under memory pressure some may be out of memory, never all: a request
  // fails only while blocks of other threads, whose round trips go on,
  // fill the device.
  CHECK(sh.steps.load() >= threads);
  CHECK(sh.allocations.load() > 0);
  CHECK(sh.bytes_checked.load() > 0);

  for (int32_t d = 0; d < sh.devices; ++d) {
    INFO("device " << d);
    REQUIRE(accel_synchronize(d) == ACCEL_SUCCESS);
    CHECK(stat(sh, d, "allocation.all.current") == start_allocations[static_cast<size_t>(d)]);
    REQUIRE(accel_empty_cache(d) == ACCEL_SUCCESS);
    if (stat(sh, d, "allocation.all.current") == 0) {
      CHECK(stat(sh, d, "reserved_bytes.all.current") == 0);
      CHECK(stat(sh, d, "segment.all.current") == 0);
      CHECK(stat(sh, d, "active.all.current") == 0);
    }
    accel_memory_stats_t legacy{};
    legacy.struct_size = sizeof legacy;
    REQUIRE(accel_memory_stats(d, &legacy) == ACCEL_SUCCESS);
    CHECK(legacy.allocation_count == 0);
    CHECK(legacy.allocated_bytes == 0);
  }
  accel_record_memory_history(0);
}
