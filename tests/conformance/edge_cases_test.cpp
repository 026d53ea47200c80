// Conformance: cases found by replaying other runtimes' bug reports.
//  - zero-byte copies and memsets are no-op successes whatever the pointers
//    (CUDA and HIP accept them; frameworks pass NULL for empty tensors);
//  - a host function that waits for its own stream (directly, through its
//    device, or through an event recorded after it) gets
//    ACCEL_ERROR_INVALID_ARGUMENT on every backend instead of a hang;
//  - every non-success status sets accel_last_error(), NOT_READY included,
//    and accel_clear_last_error() empties it.
#include "conformance.hpp"

using namespace conf;

namespace {

// What a host function did, collected for the test thread to check (Catch2
// assertions are not thread-safe).
struct SelfWait {
  accel_stream_t stream = nullptr;
  accel_event_t after = nullptr;   // recorded on `stream` after the host function
  accel_event_t before = nullptr;  // recorded on `stream` before it
  int32_t device = 0;
  accel_status_t stream_sync = ACCEL_SUCCESS, device_sync = ACCEL_SUCCESS,
                 event_after = ACCEL_SUCCESS, event_before = ACCEL_ERROR_INTERNAL,
                 destroy = ACCEL_SUCCESS;
  std::string stream_sync_msg, device_sync_msg, event_after_msg, destroy_msg;
  std::atomic<bool> go{false};  // set once `after` is recorded
  std::atomic<bool> done{false};

  static void fn(void* self) {
    auto* w = static_cast<SelfWait*>(self);
    // The test thread records `after` once this function is queued; it may
    // start running before that (bounded: a broken test must not hang here).
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!w->go.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    w->stream_sync = stream_synchronize(w->stream);
    w->stream_sync_msg = accel_last_error();
    w->device_sync = synchronize(w->device);
    w->device_sync_msg = accel_last_error();
    if (w->after != nullptr) {
      w->event_after = event_synchronize(w->after);
      w->event_after_msg = accel_last_error();
    }
    if (w->before != nullptr) w->event_before = event_synchronize(w->before);
    w->destroy = accel_stream_destroy(w->stream);
    w->destroy_msg = accel_last_error();
    w->done.store(true);
  }
};

bool wait_for(const std::atomic<bool>& flag, std::chrono::seconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!flag.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag.load();
}

}  // namespace

TEST_CASE("zero-byte copies and memsets succeed whatever the pointers", "[memory][edge]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  Stream s(0);
  void* bogus = reinterpret_cast<void*>(uintptr_t{0x10});
  for (auto kind :
       {ACCEL_MEMCPY_HOST_TO_DEVICE, ACCEL_MEMCPY_DEVICE_TO_HOST, ACCEL_MEMCPY_DEVICE_TO_DEVICE}) {
    INFO("kind " << static_cast<int>(kind));
    accel_status_t st = accel_memcpy_async(nullptr, nullptr, 0, kind, s);
    INFO(describe(st));
    CHECK(st == ACCEL_SUCCESS);
    CHECK(accel_memcpy_async(bogus, bogus, 0, kind, s) == ACCEL_SUCCESS);
    CHECK(accel_memcpy_async(nullptr, nullptr, 0, kind, nullptr) == ACCEL_SUCCESS);
  }
  accel_status_t st = accel_memset_async(nullptr, 0, 0, s);
  INFO(describe(st));
  CHECK(st == ACCEL_SUCCESS);
  CHECK(accel_memset_async(bogus, 1, 0, nullptr) == ACCEL_SUCCESS);
  CHECK(stream_synchronize(s) == ACCEL_SUCCESS);

  // The stream is still checked, and a real size still needs real pointers.
  Stream dead(0);
  accel_stream_t dead_handle = dead.get();
  REQUIRE(dead.destroy() == ACCEL_SUCCESS);
  CHECK(accel_memset_async(nullptr, 0, 0, dead_handle) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_memcpy_async(nullptr, nullptr, 0, ACCEL_MEMCPY_HOST_TO_DEVICE, dead_handle) ==
        ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_memset_async(nullptr, 0, 1, s) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(contains_ci(accel_last_error(), "dst is NULL"));
}

TEST_CASE("a host function waiting for its own stream gets INVALID_ARGUMENT and not a hang",
          "[streams][hostfn][edge]") {
  ThreadStateGuard guard;
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  const bool events = need_group(globals().events);
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    SelfWait w;
    w.device = d;
    REQUIRE(accel_stream_create(d, 0, &w.stream) == ACCEL_SUCCESS);
    if (events) {
      REQUIRE(accel_event_create(d, 0, &w.before) == ACCEL_SUCCESS);
      REQUIRE(accel_event_create(d, 0, &w.after) == ACCEL_SUCCESS);
      REQUIRE(accel_event_record(w.before, w.stream) == ACCEL_SUCCESS);
    }
    REQUIRE(launch_host_func(w.stream, &SelfWait::fn, &w) == ACCEL_SUCCESS);
    if (events) CHECK(accel_event_record(w.after, w.stream) == ACCEL_SUCCESS);
    w.go.store(true);
    // Watchdog: a backend that lets the waits block never finishes.
    const bool finished = wait_for(w.done, std::chrono::seconds(20));
    if (!finished) {
      FAIL(
          "the host function did not return within 20 s: a synchronize from a host function "
          "on its own stream blocked instead of failing with ACCEL_ERROR_INVALID_ARGUMENT");
    }
    INFO("stream_synchronize: " << accel_status_name(w.stream_sync) << ": " << w.stream_sync_msg);
    CHECK(w.stream_sync == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(contains_ci(w.stream_sync_msg, "host function"));
    INFO("accel_synchronize: " << accel_status_name(w.device_sync) << ": " << w.device_sync_msg);
    CHECK(w.device_sync == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(contains_ci(w.device_sync_msg, "host function"));
    INFO("stream_destroy: " << accel_status_name(w.destroy) << ": " << w.destroy_msg);
    CHECK(w.destroy == ACCEL_ERROR_INVALID_ARGUMENT);
    if (events) {
      INFO("event recorded after: " << accel_status_name(w.event_after) << ": "
                                    << w.event_after_msg);
      CHECK(w.event_after == ACCEL_ERROR_INVALID_ARGUMENT);
      // An event recorded before the host function has completed: fine.
      CHECK(w.event_before == ACCEL_SUCCESS);
    }
    REQUIRE(stream_synchronize(w.stream) == ACCEL_SUCCESS);
    CHECK(accel_stream_destroy(w.stream) == ACCEL_SUCCESS);
    if (events) {
      CHECK(accel_event_destroy(w.before) == ACCEL_SUCCESS);
      CHECK(accel_event_destroy(w.after) == ACCEL_SUCCESS);
    }
  }
}

TEST_CASE("every non-success status sets the last error; accel_clear_last_error empties it",
          "[errors][edge]") {
  ThreadStateGuard guard;
  // An unrelated earlier failure must not be what NOT_READY shows.
  CHECK(accel_set_device_index(device_count()) == ACCEL_ERROR_INVALID_DEVICE);
  accel_clear_last_error();
  CHECK(std::string(accel_last_error()).empty());
  CHECK(accel_set_device_index(device_count()) == ACCEL_ERROR_INVALID_DEVICE);
  const std::string invalid = accel_last_error();
  CHECK_FALSE(invalid.empty());

  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  Stream s(0);
  Gate gate;
  REQUIRE(gate.launch(s) == ACCEL_SUCCESS);
  accel_status_t st = accel_stream_query(s);
  const std::string detail = accel_last_error();
  gate.release();
  REQUIRE(stream_synchronize(s) == ACCEL_SUCCESS);
  REQUIRE(st == ACCEL_ERROR_NOT_READY);
  INFO("detail after NOT_READY: " << detail);
  CHECK(detail != invalid);
  CHECK(contains_ci(detail, "not completed"));
  CHECK(contains_ci(detail, globals().backend));
}

TEST_CASE("stream_wait_event orders work across devices of one backend",
          "[streams][events][multi-device][edge]") {
  ThreadStateGuard guard;
  if (!need_devices(2)) return;
  if (!need_group(globals().events) || !need_group(globals().wait_event)) return;
  if (!need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions")) return;
  if (!has_cap(ACCEL_CAP_CROSS_DEVICE_WAIT)) {
    // Allowed for a third-party backend, but then it must say so clearly.
    Stream a(0), b(1);
    Event e(0);
    REQUIRE(accel_event_record(e, a) == ACCEL_SUCCESS);
    accel_status_t st = accel_stream_wait_event(b, e);
    INFO(describe(st));
    CHECK(st == ACCEL_ERROR_DEVICE_MISMATCH);
    CHECK(contains_ci(accel_last_error(), "ACCEL_CAP_CROSS_DEVICE_WAIT"));
    WARN("backend '" << globals().backend
                     << "' does not declare ACCEL_CAP_CROSS_DEVICE_WAIT: ordering not checked");
    return;
  }
  for (int32_t producer = 0; producer < 2; ++producer) {
    const int32_t consumer = 1 - producer;
    INFO("producer device " << producer << ", consumer device " << consumer);
    Stream a(producer), b(consumer);
    Event e(producer);
    Gate gate;
    REQUIRE(gate.launch(a) == ACCEL_SUCCESS);
    REQUIRE(accel_event_record(e, a) == ACCEL_SUCCESS);
    accel_status_t st = accel_stream_wait_event(b, e);
    INFO(describe(st));
    REQUIRE(st == ACCEL_SUCCESS);
    Sleeper after(0);
    REQUIRE(after.launch(b) == ACCEL_SUCCESS);
    // The consumer's work must wait for the producer's gate.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK_FALSE(after.done());
    CHECK(accel_stream_query(b) == ACCEL_ERROR_NOT_READY);
    gate.release();
    REQUIRE(stream_synchronize(b) == ACCEL_SUCCESS);
    CHECK(after.done());
    CHECK(gate.order() < after.order());
    // A wait on a never-recorded event of the other device is a no-op.
    Event fresh(producer);
    CHECK(accel_stream_wait_event(b, fresh) == ACCEL_SUCCESS);
    REQUIRE(stream_synchronize(a) == ACCEL_SUCCESS);
  }
}
