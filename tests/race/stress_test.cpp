// Stress: 8 threads for a bounded time make random, seeded calls across all
// devices (set / exchange / maybe_exchange, C++ guards, streams, events,
// host functions, small copies) and after every step check that the
// thread's current device and current streams are exactly what that thread
// set: per-thread state must never leak between threads.
//
// Environment: ACCEL_BACKEND (the backend to use, required),
// ACCEL_STRESS_SECONDS (default 2), ACCEL_STRESS_SEED (default: time based;
// the seed is always printed, so a failing run can be repeated),
// ACCEL_STRESS_THREADS (default 8).
#include <catch2/catch.hpp>

#include <accel/accel.h>
#include <accel/accel.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double env_double(const char* name, double fallback) {
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
  std::vector<std::string> first;  // the first few, verbatim
  std::atomic<long> count{0};
  void add(std::string what) {
    count.fetch_add(1);
    std::lock_guard lock(mutex);
    if (first.size() < 20) first.push_back(std::move(what));
  }
};

// Host functions check their own ordering: each carries the sequence number
// it was queued with on its stream by its thread.
struct StreamRec {
  accel_stream_t stream = nullptr;
  int32_t device = 0;
  bool owned = false;                 // created by this thread (else a default stream)
  std::atomic<uint64_t> last_run{0};  // highest sequence number that ran
  uint64_t next_seq = 1;              // next number to queue
};

struct Ticket {
  StreamRec* rec;
  uint64_t seq;
  std::atomic<long>* ran;
  std::atomic<long>* out_of_order;
};

void host_fn(void* p) {
  auto* t = static_cast<Ticket*>(p);
  uint64_t prev = t->rec->last_run.exchange(t->seq);
  if (prev + 1 != t->seq) t->out_of_order->fetch_add(1);
  t->ran->fetch_add(1);
  delete t;
}

struct Shared {
  int32_t devices = 0;
  std::vector<accel_stream_t> defaults;
  bool host_funcs = true;
  Failures failures;
  std::atomic<long> host_queued{0};
  std::atomic<long> host_ran{0};
  std::atomic<long> host_out_of_order{0};
  std::atomic<long> steps{0};
  Clock::time_point deadline;
};

class Worker {
 public:
  Worker(Shared& sh, int id, uint64_t seed) : sh_(sh), id_(id), rng_(seed) {}

  void run() {
    const int32_t n = sh_.devices;
    // A new thread starts on device 0 with every device's default stream.
    dev_ = 0;
    for (int32_t d = 0; d < n; ++d) {
      auto rec = std::make_unique<StreamRec>();
      rec->stream = sh_.defaults[static_cast<size_t>(d)];
      rec->device = d;
      cur_.push_back(rec.get());
      defaults_.push_back(rec.get());
      recs_.push_back(std::move(rec));
    }
    check("thread start");
    // At least one step whatever the clock says: a thread may start after
    // the deadline on a loaded machine.
    do {
      step();
      check(last_op_);
      sh_.steps.fetch_add(1, std::memory_order_relaxed);
    } while (Clock::now() < sh_.deadline);
    finish();
  }

 private:
  int32_t pick_device() {
    return static_cast<int32_t>(rng_() % static_cast<uint32_t>(sh_.devices));
  }
  uint32_t roll(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }

  void fail(const std::string& what) {
    sh_.failures.add("thread " + std::to_string(id_) + ", after " + last_op_ + ": " + what);
  }
  void expect_ok(accel_status_t st, const char* call) {
    if (st != ACCEL_SUCCESS)
      fail(std::string(call) + " returned " + accel_status_name(st) + ": " + accel_last_error());
  }

  // The thread's view must be exactly what this thread set.
  void check(const std::string& after) {
    last_op_ = after;
    int32_t idx = accel_current_device_index();
    if (idx != dev_)
      fail("current device is " + std::to_string(idx) + ", expected " + std::to_string(dev_));
    accel_stream_t s = nullptr;
    accel_status_t st = accel_current_stream(-1, &s);
    if (st != ACCEL_SUCCESS || s != cur_[static_cast<size_t>(dev_)]->stream)
      fail("current stream of the current device differs (" + std::string(accel_status_name(st)) +
           ")");
    int32_t other = pick_device();
    st = accel_current_stream(other, &s);
    if (st != ACCEL_SUCCESS || s != cur_[static_cast<size_t>(other)]->stream)
      fail("current stream of device " + std::to_string(other) + " differs");
  }

  StreamRec* any_stream_of(int32_t d) {
    std::vector<StreamRec*> mine;
    for (auto* r : live_)
      if (r->device == d) mine.push_back(r);
    if (mine.empty() || roll(4) == 0) return defaults_[static_cast<size_t>(d)];
    return mine[roll(static_cast<uint32_t>(mine.size()))];
  }

  void set_stream(StreamRec* r) {
    expect_ok(accel_set_stream(r->stream), "accel_set_stream");
    dev_ = r->device;
    cur_[static_cast<size_t>(r->device)] = r;
  }

  void queue_host_fn(StreamRec* r) {
    if (!sh_.host_funcs) return;
    auto* t = new Ticket{r, r->next_seq, &sh_.host_ran, &sh_.host_out_of_order};
    accel_status_t st = accel_launch_host_func(r->stream, host_fn, t);
    if (st != ACCEL_SUCCESS) {
      delete t;
      expect_ok(st, "accel_launch_host_func");
      return;
    }
    ++r->next_seq;
    sh_.host_queued.fetch_add(1);
  }

  void step() {
    switch (roll(14)) {
      case 0: {
        int32_t d = pick_device();
        last_op_ = "set_device_index(" + std::to_string(d) + ")";
        expect_ok(accel_set_device_index(d), "accel_set_device_index");
        dev_ = d;
        break;
      }
      case 1: {
        int32_t d = pick_device(), prev = -1;
        last_op_ = "exchange_device(" + std::to_string(d) + ")";
        expect_ok(accel_exchange_device(d, &prev), "accel_exchange_device");
        if (prev != dev_) fail("exchange returned previous " + std::to_string(prev));
        dev_ = d;
        break;
      }
      case 2: {
        int32_t d = pick_device(), prev = -1;
        last_op_ = "maybe_exchange_device(" + std::to_string(d) + ")";
        expect_ok(accel_maybe_exchange_device(d, &prev), "accel_maybe_exchange_device");
        if (prev != dev_) fail("maybe_exchange returned previous " + std::to_string(prev));
        dev_ = d;
        break;
      }
      case 3: {  // C++ DeviceIndexGuard, nested work inside
        int32_t d = pick_device();
        last_op_ = "DeviceIndexGuard(" + std::to_string(d) + ")";
        int32_t before = dev_;
        try {
          accel::DeviceIndexGuard guard(d);
          dev_ = d;
          check("inside DeviceIndexGuard(" + std::to_string(d) + ")");
          queue_host_fn(cur_[static_cast<size_t>(d)]);
        } catch (const std::exception& e) {
          fail(std::string("DeviceIndexGuard threw: ") + e.what());
        }
        dev_ = before;
        break;
      }
      case 4: {  // C++ StreamGuard
        StreamRec* r = any_stream_of(pick_device());
        last_op_ = "StreamGuard";
        int32_t before_dev = dev_;
        StreamRec* before_cur = cur_[static_cast<size_t>(r->device)];
        try {
          accel::Stream borrowed = accel::Stream::borrow(r->stream);
          accel::StreamGuard guard(borrowed);
          dev_ = r->device;
          cur_[static_cast<size_t>(r->device)] = r;
          check("inside StreamGuard");
          queue_host_fn(r);
        } catch (const std::exception& e) {
          fail(std::string("StreamGuard threw: ") + e.what());
        }
        dev_ = before_dev;
        cur_[static_cast<size_t>(r->device)] = before_cur;
        break;
      }
      case 5: {  // create, sometimes make current
        int32_t d = pick_device();
        int32_t prio = static_cast<int32_t>(roll(4)) - 3;  // -3..0, clamped by the backend
        last_op_ = "stream_create(" + std::to_string(d) + ")";
        if (live_.size() >= 6) break;
        accel_stream_t s = nullptr;
        accel_status_t st = accel_stream_create(d, prio, &s);
        expect_ok(st, "accel_stream_create");
        if (st != ACCEL_SUCCESS) break;
        int32_t sd = -1;
        expect_ok(accel_stream_device(s, &sd), "accel_stream_device");
        if (sd != d) fail("new stream is on device " + std::to_string(sd));
        auto rec = std::make_unique<StreamRec>();
        rec->stream = s;
        rec->device = d;
        rec->owned = true;
        live_.push_back(rec.get());
        StreamRec* r = rec.get();
        recs_.push_back(std::move(rec));
        if (roll(2) == 0) set_stream(r);
        break;
      }
      case 6: {  // destroy one of ours (never while current: the API's rule)
        last_op_ = "stream_destroy";
        if (live_.empty()) break;
        size_t k = roll(static_cast<uint32_t>(live_.size()));
        StreamRec* r = live_[k];
        if (cur_[static_cast<size_t>(r->device)] == r)
          set_stream(defaults_[static_cast<size_t>(r->device)]);
        if (roll(2) == 0) {
          accel_status_t q = accel_stream_query(r->stream);
          if (q != ACCEL_SUCCESS && q != ACCEL_ERROR_NOT_READY) expect_ok(q, "accel_stream_query");
        }
        expect_ok(accel_stream_destroy(r->stream), "accel_stream_destroy");
        live_.erase(live_.begin() + static_cast<long>(k));
        break;  // its record stays alive: queued host functions still use it
      }
      case 7: {
        StreamRec* r = any_stream_of(pick_device());
        last_op_ = "set_stream";
        set_stream(r);
        break;
      }
      case 8: {  // events: record, query, wait, sometimes synchronize
        int32_t d = pick_device();
        last_op_ = "event on device " + std::to_string(d);
        accel_event_t e = nullptr;
        accel_status_t st = accel_event_create(d, ACCEL_EVENT_DEFAULT, &e);
        expect_ok(st, "accel_event_create");
        if (st != ACCEL_SUCCESS) break;
        StreamRec* a = any_stream_of(d);
        StreamRec* b = any_stream_of(d);
        queue_host_fn(a);
        // NULL: the current stream of the event's device.
        expect_ok(accel_event_record(e, roll(3) == 0 ? nullptr : a->stream), "accel_event_record");
        accel_status_t q = accel_event_query(e);
        if (q != ACCEL_SUCCESS && q != ACCEL_ERROR_NOT_READY) expect_ok(q, "accel_event_query");
        q = accel_stream_wait_event(b->stream, e);
        if (q != ACCEL_ERROR_NOT_SUPPORTED) expect_ok(q, "accel_stream_wait_event");
        queue_host_fn(b);
        if (roll(2) == 0) expect_ok(accel_event_synchronize(e), "accel_event_synchronize");
        expect_ok(accel_event_destroy(e), "accel_event_destroy");
        break;
      }
      case 9:
      case 10: {
        StreamRec* r = any_stream_of(pick_device());
        last_op_ = "launch_host_func";
        queue_host_fn(r);
        if (roll(8) == 0) {
          accel_status_t q = accel_stream_query(r->stream);
          if (q != ACCEL_SUCCESS && q != ACCEL_ERROR_NOT_READY) expect_ok(q, "accel_stream_query");
        }
        break;
      }
      case 11: {  // small round trip through device memory
        int32_t d = pick_device();
        last_op_ = "malloc/memcpy/free on device " + std::to_string(d);
        size_t bytes = 16 + roll(2048);
        void* p = nullptr;
        accel_status_t st = accel_malloc(d, bytes, &p);
        expect_ok(st, "accel_malloc");
        if (st != ACCEL_SUCCESS) break;
        std::vector<unsigned char> in(bytes), out(bytes, 0);
        const auto salt = static_cast<unsigned char>(rng_());
        for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 7u + salt);
        StreamRec* r = any_stream_of(d);
        // NULL stream = current stream of the current device: only when that
        // is the allocation's device.
        accel_stream_t s = (dev_ == d && roll(2) == 0) ? nullptr : r->stream;
        accel_stream_t sync = s != nullptr ? s : cur_[static_cast<size_t>(d)]->stream;
        expect_ok(accel_memcpy_async(p, in.data(), bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s),
                  "memcpy H2D");
        expect_ok(accel_memcpy_async(out.data(), p, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s),
                  "memcpy D2H");
        expect_ok(accel_stream_synchronize(sync), "accel_stream_synchronize");
        if (in != out) fail("device memory round trip changed the data");
        expect_ok(accel_free(p), "accel_free");
        break;
      }
      case 12: {
        int32_t d = pick_device();
        last_op_ = "current_stream(" + std::to_string(d) + ")";
        accel_stream_t s = nullptr;
        expect_ok(accel_current_stream(d, &s), "accel_current_stream");
        if (s != cur_[static_cast<size_t>(d)]->stream) fail("current_stream differs");
        break;
      }
      default: {
        last_op_ = "stream_synchronize";
        StreamRec* r = any_stream_of(pick_device());
        expect_ok(accel_stream_synchronize(r->stream), "accel_stream_synchronize");
        break;
      }
    }
  }

  void finish() {
    last_op_ = "finish";
    for (int32_t d = 0; d < sh_.devices; ++d) set_stream(defaults_[static_cast<size_t>(d)]);
    for (auto* r : live_) {
      expect_ok(accel_stream_synchronize(r->stream), "accel_stream_synchronize");
      expect_ok(accel_stream_destroy(r->stream), "accel_stream_destroy");
    }
    live_.clear();
    check("finish");
  }

 public:
  // Records must outlive the host functions that point at them.
  std::vector<std::unique_ptr<StreamRec>> recs_;

 private:
  Shared& sh_;
  int id_;
  std::mt19937_64 rng_;
  int32_t dev_ = 0;
  std::vector<StreamRec*> cur_;       // current stream record per device
  std::vector<StreamRec*> defaults_;  // this thread's records of default streams
  std::vector<StreamRec*> live_;      // streams this thread created and has not destroyed
  std::string last_op_ = "start";
};

}  // namespace

TEST_CASE("random per-thread calls from many threads keep per-thread state", "[stress]") {
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
  for (int32_t d = 0; d < sh.devices; ++d) {
    accel_stream_t s = nullptr;
    INFO("device " << d << ": " << accel_last_error());
    REQUIRE(accel_current_stream(d, &s) == ACCEL_SUCCESS);
    sh.defaults.push_back(s);
  }
  {
    accel_stream_t s = sh.defaults[0];
    int dummy = 0;
    accel_status_t st = accel_launch_host_func(
        s, [](void* p) { static_cast<int*>(p)[0] = 1; }, &dummy);
    if (st == ACCEL_ERROR_NOT_SUPPORTED) {
      sh.host_funcs = false;
      WARN("backend " << accel_current_accelerator()
                      << " has no host functions: the stress runs without them");
    } else {
      REQUIRE(st == ACCEL_SUCCESS);
      REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);
      REQUIRE(dummy == 1);
    }
  }
  if (sh.devices < 2) WARN("only one device: cross-device switching is not exercised");

  const double seconds = env_double("ACCEL_STRESS_SECONDS", 2.0);
  const int threads = static_cast<int>(env_double("ACCEL_STRESS_THREADS", 8));
  uint64_t seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("ACCEL_STRESS_SEED"); s != nullptr && *s != '\0')
    seed = std::strtoull(s, nullptr, 0);
  std::printf("stress: backend %s, %d devices, %d threads, %.1f s, ACCEL_STRESS_SEED=%llu\n",
              accel_current_accelerator(), sh.devices, threads, seconds,
              static_cast<unsigned long long>(seed));
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

  for (int32_t d = 0; d < sh.devices; ++d) {
    INFO("device " << d << ": " << accel_last_error());
    CHECK(accel_synchronize(d) == ACCEL_SUCCESS);
  }
  for (int32_t d = 0; d < sh.devices; ++d) {
    accel_memory_stats_t stats{};
    stats.struct_size = sizeof stats;
    REQUIRE(accel_memory_stats(d, &stats) == ACCEL_SUCCESS);
    INFO("device " << d);
    CHECK(stats.allocation_count == 0);
    CHECK(stats.allocated_bytes == 0);
  }
  std::printf("stress: %ld steps, %ld host functions queued, %ld ran\n", sh.steps.load(),
              sh.host_queued.load(), sh.host_ran.load());
  CHECK(sh.steps.load() >= threads);  // every thread its step at least
  CHECK(sh.host_ran.load() == sh.host_queued.load());
  CHECK(sh.host_out_of_order.load() == 0);
  {
    std::lock_guard lock(sh.failures.mutex);
    for (auto& f : sh.failures.first) UNSCOPED_INFO(f);
  }
  INFO("seed " << seed << " (ACCEL_STRESS_SEED repeats the run)");
  CHECK(sh.failures.count.load() == 0);
}
