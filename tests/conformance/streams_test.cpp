// Conformance: current stream, stream lifecycle, priorities, queries,
// synchronisation, host functions and cross-stream ordering.
#include "conformance.hpp"

using namespace conf;
using namespace std::chrono_literals;

namespace {
void noop_host_fn(void*) {}

// What stream_destroy_while_gated saw.
struct DestroyOutcome {
  bool in_time = false;  // returned within kLaunchLimit, the gate still closed
  accel_status_t status = ACCEL_ERROR_INTERNAL;
};

// Destroys `s`, whose queued work waits behind `gate` (still closed), on a
// helper thread, so that a destroy which waits for the queue to drain is
// reported as a failed check instead of hanging the run. Opens the gate
// once the call returned or kLaunchLimit passed, then waits (watchdog) for
// the call: a destroy that waits for its queue must at least return then.
DestroyOutcome stream_destroy_while_gated(accel_stream_t s, Gate& gate) {
  std::atomic<bool> returned{false};
  std::atomic<accel_status_t> status{ACCEL_ERROR_INTERNAL};
  std::thread t([&] {
    status.store(accel_stream_destroy(s));
    returned.store(true);
  });
  const auto until = std::chrono::steady_clock::now() + kLaunchLimit;
  while (!returned.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  DestroyOutcome out;
  out.in_time = returned.load() && !gate.done();
  gate.release();
  {
    Deadline watchdog("accel_stream_destroy", kWaitLimit,
                      "stream_destroy must return, at the latest once the stream's queued work "
                      "has completed");
    t.join();
  }
  out.status = status.load();
  return out;
}

constexpr const char* kDestroyAtOnce =
    "accel_stream_destroy must return at once while the stream's queued work still waits "
    "(accel.h, accel_plugin.h stream_destroy: as cudaStreamDestroy)";
}  // namespace

TEST_CASE("current stream starts at each device's default stream", "[streams]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  std::vector<accel_stream_t> defaults;
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    accel_stream_t s = nullptr;
    ACCEL_REQUIRE_OK(accel_current_stream(d, &s));
    REQUIRE(s != nullptr);
    CHECK(s == globals().default_streams[d]);
    accel_stream_t again = nullptr;
    ACCEL_REQUIRE_OK(accel_current_stream(d, &again));
    CHECK(again == s);  // the same handle every time
    int32_t dev = -1;
    ACCEL_CHECK_OK(accel_stream_device(s, &dev));
    CHECK(dev == d);
    int32_t prio = -99;
    ACCEL_CHECK_OK(accel_stream_priority(s, &prio));
    CHECK(prio == 0);
    ACCEL_CHECK_OK(accel_stream_query(s));
    ACCEL_CHECK_OK(stream_synchronize(s));
    // A default stream is a valid handle that destroy refuses.
    ACCEL_CHECK_ERROR(accel_stream_destroy(s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_OK(accel_stream_query(s));  // still alive
    defaults.push_back(s);
  }
  for (int32_t a = 0; a < n; ++a)
    for (int32_t b = a + 1; b < n; ++b) CHECK(defaults[a] != defaults[b]);

  // Negative device: the current device's current stream.
  accel_stream_t cur = nullptr;
  ACCEL_REQUIRE_OK(accel_current_stream(-1, &cur));
  CHECK(cur == defaults[0]);

  // A fresh thread starts at the default streams too.
  std::vector<accel_stream_t> seen(n, nullptr);
  std::thread t([&] {
    for (int32_t d = 0; d < n; ++d) accel_current_stream(d, &seen[d]);
  });
  t.join();
  for (int32_t d = 0; d < n; ++d) CHECK(seen[d] == defaults[d]);

  SECTION("errors leave the output untouched") {
    accel_stream_t sentinel = reinterpret_cast<accel_stream_t>(uintptr_t{0x1234});
    accel_stream_t out = sentinel;
    ACCEL_CHECK_ERROR(accel_current_stream(n, &out), ACCEL_ERROR_INVALID_DEVICE);
    CHECK(out == sentinel);
    ACCEL_CHECK_ERROR(accel_current_stream(0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("set_stream makes the stream current and switches the current device", "[streams]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();

  SECTION("on the current device") {
    Stream s(0);
    ACCEL_REQUIRE_OK(accel_set_stream(s));
    accel_stream_t cur = nullptr;
    ACCEL_REQUIRE_OK(accel_current_stream(-1, &cur));
    CHECK(cur == s.get());
    ACCEL_REQUIRE_OK(accel_current_stream(0, &cur));
    CHECK(cur == s.get());
    CHECK(accel_current_device_index() == 0);
    // Back to the default stream before the stream goes away.
    ACCEL_REQUIRE_OK(accel_set_stream(globals().default_streams[0]));
    ACCEL_REQUIRE_OK(accel_current_stream(0, &cur));
    CHECK(cur == globals().default_streams[0]);
  }
  SECTION("on another device") {
    if (need_devices(2)) {
      const int32_t other = n - 1;
      Stream s(other);
      ACCEL_REQUIRE_OK(accel_set_device_index(0));
      ACCEL_REQUIRE_OK(accel_set_stream(s));
      CHECK(accel_current_device_index() == other);
      accel_stream_t cur = nullptr;
      ACCEL_REQUIRE_OK(accel_current_stream(-1, &cur));
      CHECK(cur == s.get());
      ACCEL_REQUIRE_OK(accel_current_stream(other, &cur));
      CHECK(cur == s.get());
      // Device 0's current stream is untouched.
      ACCEL_REQUIRE_OK(accel_current_stream(0, &cur));
      CHECK(cur == globals().default_streams[0]);
      // Switching back the device keeps each device's current stream.
      ACCEL_REQUIRE_OK(accel_set_device_index(0));
      ACCEL_REQUIRE_OK(accel_current_stream(other, &cur));
      CHECK(cur == s.get());
      ACCEL_REQUIRE_OK(accel_set_stream(globals().default_streams[other]));
      CHECK(accel_current_device_index() == other);
    }
  }
  SECTION("errors") {
    ACCEL_CHECK_ERROR(accel_set_stream(nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(accel_current_device_index() == 0);
  }
}

TEST_CASE("stream create / device / priority / destroy", "[streams]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    accel_stream_t s = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_create(d, 0, &s));
    REQUIRE(s != nullptr);
    for (accel_stream_t def : globals().default_streams) CHECK(s != def);
    int32_t dev = -1;
    ACCEL_CHECK_OK(accel_stream_device(s, &dev));
    CHECK(dev == d);
    int32_t prio = -99;
    ACCEL_CHECK_OK(accel_stream_priority(s, &prio));
    CHECK(prio == 0);
    ACCEL_CHECK_OK(accel_stream_query(s));
    ACCEL_CHECK_OK(stream_synchronize(s));
    ACCEL_CHECK_OK(accel_stream_destroy(s));
  }
  SECTION("negative device: created on the current device") {
    ACCEL_REQUIRE_OK(accel_set_device_index(n - 1));
    Stream s(-1);
    int32_t dev = -1;
    ACCEL_CHECK_OK(accel_stream_device(s, &dev));
    CHECK(dev == n - 1);
  }
  SECTION("many streams are distinct") {
    std::vector<accel_stream_t> v;
    for (int i = 0; i < 16; ++i) {
      accel_stream_t s = nullptr;
      ACCEL_REQUIRE_OK(accel_stream_create(0, 0, &s));
      for (accel_stream_t o : v) CHECK(o != s);
      v.push_back(s);
    }
    for (accel_stream_t s : v) ACCEL_CHECK_OK(accel_stream_destroy(s));
  }
  SECTION("errors") {
    accel_stream_t out = nullptr;
    ACCEL_CHECK_ERROR(accel_stream_create(0, 0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_create(n, 0, &out), ACCEL_ERROR_INVALID_DEVICE);
    CHECK(out == nullptr);
    Stream s(0);
    int32_t v = 42;
    ACCEL_CHECK_ERROR(accel_stream_device(nullptr, &v), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_device(s, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_priority(nullptr, &v), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_priority(s, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(v == 42);
    ACCEL_CHECK_ERROR(accel_stream_destroy(nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_query(nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(stream_synchronize(nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("stream priority range and clamping", "[streams]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    int32_t least = -99, greatest = 99;
    ACCEL_REQUIRE_OK(accel_stream_priority_range(d, &least, &greatest));
    INFO("range: least " << least << ", greatest " << greatest);
    CHECK(greatest <= 0);
    CHECK(least >= 0);
    // Either output may be NULL.
    int32_t only = -99;
    ACCEL_CHECK_OK(accel_stream_priority_range(d, &only, nullptr));
    CHECK(only == least);
    only = 99;
    ACCEL_CHECK_OK(accel_stream_priority_range(d, nullptr, &only));
    CHECK(only == greatest);
    ACCEL_CHECK_OK(accel_stream_priority_range(d, nullptr, nullptr));

    if (least == greatest)
      WARN("device " << d << " has a single stream priority (" << least
                     << "): clamping is all that can be checked");

    struct Case {
      int32_t asked;
      int32_t expect;
    };
    const Case cases[] = {
        {0, 0},
        {greatest, greatest},
        {least, least},
        {greatest - 1, greatest},
        {least + 1, least},
        {INT32_MIN, greatest},
        {INT32_MAX, least},
    };
    for (const Case& c : cases) {
      INFO("asked priority " << c.asked);
      accel_stream_t s = nullptr;
      ACCEL_REQUIRE_OK(accel_stream_create(d, c.asked, &s));
      int32_t p = -12345;
      ACCEL_CHECK_OK(accel_stream_priority(s, &p));
      CHECK(p == c.expect);
      ACCEL_CHECK_OK(accel_stream_destroy(s));
    }
  }
  SECTION("negative device is the current one") {
    int32_t l0 = 0, g0 = 0, lc = 0, gc = 0;
    ACCEL_REQUIRE_OK(accel_stream_priority_range(0, &l0, &g0));
    ACCEL_REQUIRE_OK(accel_stream_priority_range(-1, &lc, &gc));
    CHECK(l0 == lc);
    CHECK(g0 == gc);
  }
  SECTION("errors") {
    int32_t least = 7, greatest = 7;
    ACCEL_CHECK_ERROR(accel_stream_priority_range(n, &least, &greatest),
                      ACCEL_ERROR_INVALID_DEVICE);
    CHECK(least == 7);
    CHECK(greatest == 7);
  }
}

TEST_CASE("stream_query is NOT_READY while work is queued and SUCCESS after", "[streams]") {
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    Stream s(d);
    Gate gate;
    ACCEL_REQUIRE_OK(gate.launch(s));
    ACCEL_CHECK_STATUS(accel_stream_query(s), ACCEL_ERROR_NOT_READY);
    std::this_thread::sleep_for(5ms);
    ACCEL_CHECK_STATUS(accel_stream_query(s), ACCEL_ERROR_NOT_READY);
    CHECK_FALSE(gate.done());
    gate.release();
    ACCEL_CHECK_OK(stream_synchronize(s));
    CHECK(gate.done());
    ACCEL_CHECK_OK(accel_stream_query(s));
  }
  SECTION("on a default stream") {
    accel_stream_t def = globals().default_streams[0];
    Gate gate;
    ACCEL_REQUIRE_OK(gate.launch(def));
    ACCEL_CHECK_STATUS(accel_stream_query(def), ACCEL_ERROR_NOT_READY);
    gate.release();
    ACCEL_CHECK_OK(stream_synchronize(def));
    ACCEL_CHECK_OK(accel_stream_query(def));
  }
}

// plugin-abi rule 44: the core hands every name to the plugin; the plugin
// never waits and takes calls from any thread, work queued or not.
TEST_CASE("stream_set_name from several threads", "[streams]") {
  const bool gated = has_cap(ACCEL_CAP_HOST_FUNCTIONS);
  static const char* const kNames[] = {"conf a", "conf b", "conf c", "conf d"};
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    Stream s(d);
    Gate gate;
    if (gated) ACCEL_REQUIRE_OK(gate.launch(s));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          if (accel_stream_set_name(s, kNames[(t + i) % 4]) != ACCEL_SUCCESS) ++failures;
        }
      });
    }
    {
      Deadline watchdog("accel_stream_set_name", kWaitLimit,
                        "stream_set_name must never wait for the stream's queued work");
      for (auto& t : threads) t.join();
    }
    CHECK(failures.load() == 0);
    char name[ACCEL_STREAM_NAME_MAX + 1];
    size_t length = 0;
    ACCEL_CHECK_OK(accel_stream_get_name(s, name, sizeof name, &length));
    CHECK(std::string(name).rfind("conf ", 0) == 0);
    gate.release();
    ACCEL_CHECK_OK(stream_synchronize(s));
  }
  accel_stream_t def = globals().default_streams[0];
  ACCEL_CHECK_OK(accel_stream_set_name(def, "conformance default"));
}

TEST_CASE("stream_synchronize and accel_synchronize really wait", "[streams]") {
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  ThreadStateGuard guard;
  const int kSleepMs = 50;

  SECTION("stream_synchronize") {
    Stream s(0);
    Sleeper sl(kSleepMs);
    auto t0 = std::chrono::steady_clock::now();
    ACCEL_REQUIRE_OK(sl.launch(s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(sl.done());
    CHECK(waited >= std::chrono::milliseconds(kSleepMs * 9 / 10));
  }
  SECTION("accel_synchronize(-1) waits for a non-default stream of the current device") {
    const int32_t d = device_count() - 1;
    ACCEL_REQUIRE_OK(accel_set_device_index(d));
    Stream s(d);
    Sleeper sl(kSleepMs);
    ACCEL_REQUIRE_OK(sl.launch(s));
    ACCEL_REQUIRE_OK(synchronize(-1));
    CHECK(sl.done());
  }
  SECTION("accel_synchronize(d) waits for every stream of device d") {
    for (int32_t d = 0; d < device_count(); ++d) {
      INFO("device " << d);
      Stream s1(d), s2(d);
      Sleeper a(kSleepMs), b(kSleepMs / 2), c(kSleepMs / 3);
      ACCEL_REQUIRE_OK(a.launch(s1));
      ACCEL_REQUIRE_OK(b.launch(s2));
      ACCEL_REQUIRE_OK(c.launch(globals().default_streams[d]));
      ACCEL_REQUIRE_OK(synchronize(d));
      CHECK(a.done());
      CHECK(b.done());
      CHECK(c.done());
    }
  }
}

TEST_CASE("host functions run in stream order", "[streams]") {
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) {
    // Whatever the capability says, the call must answer cleanly.
    Stream s(0);
    accel_status_t st = launch_host_func(s, &noop_host_fn, nullptr);
    CHECK((st == ACCEL_SUCCESS || st == ACCEL_ERROR_NOT_SUPPORTED));
    stream_synchronize(s);
    return;
  }
  Stream s(0);
  Sleeper first(20), second(1), third(0);
  ACCEL_REQUIRE_OK(first.launch(s));
  ACCEL_REQUIRE_OK(second.launch(s));
  ACCEL_REQUIRE_OK(third.launch(s));
  ACCEL_REQUIRE_OK(stream_synchronize(s));
  CHECK(first.order() < second.order());
  CHECK(second.order() < third.order());

  SECTION("user_data may be NULL") {
    static std::atomic<int> calls{0};
    calls = 0;
    struct Count {
      static void fn(void* p) {
        if (p == nullptr) calls.fetch_add(1);
      }
    };
    ACCEL_REQUIRE_OK(launch_host_func(s, &Count::fn, nullptr));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    CHECK(calls.load() == 1);
  }
  SECTION("errors") {
    ACCEL_CHECK_ERROR(launch_host_func(nullptr, &noop_host_fn, nullptr),
                      ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(launch_host_func(s, nullptr, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("stream_wait_event orders work across two streams", "[streams][events]") {
  if (!need_group(globals().events) || !need_group(globals().wait_event)) return;
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  const int32_t n = device_count();
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    Stream producer(d), consumer(d);
    Event e(d);
    Gate gate;
    ACCEL_REQUIRE_OK(gate.launch(producer));
    ACCEL_REQUIRE_OK(accel_event_record(e, producer));
    ACCEL_REQUIRE_OK(accel_stream_wait_event(consumer, e));
    Sleeper after(0);
    ACCEL_REQUIRE_OK(after.launch(consumer));

    // The consumer must be held back by the producer's gate.
    std::this_thread::sleep_for(30ms);
    CHECK_FALSE(after.done());
    ACCEL_CHECK_STATUS(accel_stream_query(consumer), ACCEL_ERROR_NOT_READY);
    ACCEL_CHECK_STATUS(accel_event_query(e), ACCEL_ERROR_NOT_READY);

    gate.release();
    ACCEL_REQUIRE_OK(stream_synchronize(consumer));
    CHECK(after.done());
    CHECK(gate.done());
    CHECK(gate.order() < after.order());
    ACCEL_CHECK_OK(accel_event_query(e));
  }
  SECTION("the wait is on the record at the time of the call") {
    Stream producer(0), consumer(0);
    Event e(0);
    ACCEL_REQUIRE_OK(accel_event_record(e, producer));
    ACCEL_REQUIRE_OK(event_synchronize(e));
    ACCEL_REQUIRE_OK(accel_stream_wait_event(consumer, e));
    // Re-recording after the wait must not hold the consumer back.
    Gate gate;
    ACCEL_REQUIRE_OK(gate.launch(producer));
    ACCEL_REQUIRE_OK(accel_event_record(e, producer));
    Sleeper after(0);
    ACCEL_REQUIRE_OK(after.launch(consumer));
    ACCEL_CHECK_OK(stream_synchronize(consumer));
    CHECK(after.done());
    CHECK_FALSE(gate.done());
    gate.release();
    ACCEL_CHECK_OK(stream_synchronize(producer));
  }
}

TEST_CASE("stream_wait_event on a never-recorded event is a no-op", "[streams][events]") {
  if (!need_group(globals().events) || !need_group(globals().wait_event)) return;
  Stream s(0);
  Event e(0);
  ACCEL_CHECK_OK(accel_stream_wait_event(s, e));
  ACCEL_CHECK_OK(stream_synchronize(s));
  ACCEL_CHECK_OK(accel_stream_query(s));
  SECTION("errors") {
    ACCEL_CHECK_ERROR(accel_stream_wait_event(nullptr, e), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_wait_event(s, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

// accel.h / accel_plugin.h stream_destroy: the call returns at once and the
// queued work still completes (cudaStreamDestroy, hipStreamDestroy).
TEST_CASE("stream_destroy returns at once while queued work waits behind a host function",
          "[streams][destroy]") {
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    Gate gate;
    Sleeper after(0);  // queued behind the gate: the destroyed stream's work still runs
    accel_stream_t s = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_create(d, 0, &s));
    ACCEL_REQUIRE_OK(gate.launch(s));
    ACCEL_REQUIRE_OK(after.launch(s));
    DestroyOutcome out = stream_destroy_while_gated(s, gate);
    INFO(kDestroyAtOnce);
    CHECK(out.in_time);
    INFO("accel_stream_destroy -> " << accel_status_name(out.status));
    CHECK(out.status == ACCEL_SUCCESS);
    accel_test::wait_until([&] { return after.done(); },
                           "the work queued on a destroyed stream to complete");
  }
}

// accel.h accel_synchronize / accel_plugin.h device_synchronize: all work
// submitted to the device, that of streams destroyed since included
// (cudaDeviceSynchronize, hipDeviceSynchronize). The copies run only after
// a 50 ms host function that starts once the gate opens, so a synchronize
// that skips the destroyed stream returns before they ran.
TEST_CASE("accel_synchronize waits for the work of a stream destroyed before it",
          "[streams][destroy]") {
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  if (!need_group(globals().memory)) return;
  if (!need_cap(ACCEL_CAP_HOST_MEMORY, "host memory (the copy back is queued behind a gate)"))
    return;
  constexpr size_t kBytes = 64 * 1024;
  constexpr size_t kSetBytes = 256;
  constexpr unsigned char kSet = 0xa5;
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    std::vector<unsigned char> src(kBytes), want(kBytes), got(kBytes, 0);
    for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<unsigned char>(i * 7 + d + 1);
    want = src;
    std::memset(want.data(), kSet, kSetBytes);
    Registered got_registered(got.data(), kBytes);
    REQUIRE(got_registered.ok());
    DeviceMem mem(d, kBytes);
    Gate gate;
    Sleeper slow(50);
    accel_stream_t s = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_create(d, 0, &s));
    ACCEL_REQUIRE_OK(gate.launch(s));
    ACCEL_REQUIRE_OK(slow.launch(s));
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(mem.get(), src.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    ACCEL_REQUIRE_OK(accel_memset_async(mem.get(), kSet, kSetBytes, s));
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(got.data(), mem.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    DestroyOutcome out = stream_destroy_while_gated(s, gate);
    {
      INFO(kDestroyAtOnce);
      CHECK(out.in_time);
      INFO("accel_stream_destroy -> " << accel_status_name(out.status));
      REQUIRE(out.status == ACCEL_SUCCESS);
    }
    ACCEL_REQUIRE_OK(synchronize(d));
    const bool host_fn_ran = slow.done();
    const bool copied = got == want;
    INFO("accel_synchronize(" << d
                              << ") must wait for all work submitted to the device, that "
                                 "of streams destroyed since included (as cudaDeviceSynchronize)");
    CHECK(host_fn_ran);
    CHECK(copied);
    // A synchronize that returned early leaves the copy in flight: wait for
    // it before `got` and `mem` go, so it cannot write into freed memory.
    if (!copied)
      accel_test::wait_until([&] { return got == want; },
                             "the copy of a destroyed stream that accel_synchronize did not wait "
                             "for");
  }
}

// The same rule without host functions: the stream's last reference goes
// with the destroy while its copies (large enough to take milliseconds) are
// still running on the device, so nothing but the backend's record of the
// destroyed stream's work can make accel_synchronize wait for them. (A
// backend that skips them can still pass when the copies happen to finish
// first; a right one never fails.)
TEST_CASE("accel_synchronize waits for copies of a stream destroyed right after queueing them",
          "[streams][destroy]") {
  if (!need_group(globals().memory)) return;
  constexpr size_t kBytes = 32u << 20;
  constexpr size_t kSetBytes = 4096;
  constexpr unsigned char kSet = 0x3c;
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    std::vector<unsigned char> src(kBytes), want(kBytes), got(kBytes, 0);
    for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<unsigned char>(i * 13 + d + 5);
    want = src;
    std::memset(want.data() + kBytes - kSetBytes, kSet, kSetBytes);
    DeviceMem mem(d, kBytes);
    accel_stream_t s = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_create(d, 0, &s));
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(mem.get(), src.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    ACCEL_REQUIRE_OK(accel_memset_async(mem.bytes() + kBytes - kSetBytes, kSet, kSetBytes, s));
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(got.data(), mem.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    {
      Deadline watchdog("accel_stream_destroy", kLaunchLimit, kDestroyAtOnce);
      ACCEL_REQUIRE_OK(accel_stream_destroy(s));
    }
    ACCEL_REQUIRE_OK(synchronize(d));
    const bool copied = got == want;
    INFO("accel_synchronize(" << d
                              << ") must wait for all work submitted to the device, that "
                                 "of streams destroyed since included (as cudaDeviceSynchronize)");
    CHECK(copied);
    if (!copied)
      accel_test::wait_until([&] { return got == want; },
                             "the copies of a destroyed stream that accel_synchronize did not "
                             "wait for");
  }
}
