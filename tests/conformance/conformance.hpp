// Shared helpers of the accel conformance suite.
//
// The suite is written against accel.h only, so it runs unchanged over every
// backend (in-tree, third-party, real hardware). Rules it keeps:
//  - device counts come from accel_device_count(), never from constants;
//  - tests that need more devices, an optional capability or an optional
//    group the backend lacks say so with WARN (need_devices, need_cap,
//    need_group) and still pass what they can, never skip silently; the run
//    ends with the list of what was not run and why;
//  - every call that waits for the backend (synchronize, host functions)
//    runs under a watchdog (Deadline), so a backend that hangs fails the run
//    within seconds, naming the call and the rule it broke;
//  - Catch2 v2 assertions are not thread-safe, so worker threads only collect
//    results and the test thread asserts on them.
#ifndef ACCEL_TESTS_CONFORMANCE_HPP
#define ACCEL_TESTS_CONFORMANCE_HPP

#include <accel/accel.h>

#include <catch2/catch.hpp>

#include "support.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace conf {

// An optional group of operations (accel_plugin.h: events, memory, ...).
// No capability bit says whether a backend has one, so main() asks through
// accel.h: the group is absent when its first call answers
// ACCEL_ERROR_NOT_SUPPORTED, which is what the core answers for a NULL
// optional member.
struct Group {
  explicit Group(const char* group_name) : name(group_name) {}
  const char* name;  // "events", for messages
  bool present = true;
  std::string why;  // when absent: the call and its accel_last_error()
};

// Filled by main() before any test runs.
struct Globals {
  std::string backend;  // current accelerator name
  int32_t device_count = 0;
  uint32_t capabilities = 0;                    // ACCEL_CAP_* of the current backend
  std::vector<accel_stream_t> default_streams;  // main thread's start streams
  Group events{"events"};                       // event_create ... event_elapsed_time
  Group memory{"device memory"};                // mem_alloc, mem_free, memcpy/memset_async
  Group mem_info{"memory info"};                // mem_get_info
  Group wait_event{"stream_wait_event"};        // needs events as well
  Group allocator{"caching allocator"};         // accel_get_allocator_backend() "caching"
  std::set<std::string> expected;               // ACCEL_EXPECT_GROUPS, by name
};
Globals& globals();

// Whether ACCEL_EXPECT_GROUPS names `group` ("modules"): the run must then
// exercise it for real, never only warn.
inline bool expected(const char* group) { return globals().expected.count(group) != 0; }

inline int32_t device_count() { return globals().device_count; }
inline bool has_cap(uint32_t cap) { return (globals().capabilities & cap) != 0; }

// "ACCEL_ERROR_X: <last error>" for messages.
std::string describe(accel_status_t st);

// Lower-case copy, for case-insensitive substring checks.
std::string lower(std::string s);
bool contains_ci(const std::string& hay, const std::string& needle);
// True when `text` contains `n` as a whole decimal number (not part of a
// longer number).
bool contains_number(const std::string& text, long long n);

// Result of a call run on a brand-new thread, whose last-error string starts
// empty: lets a test prove that *this* call set the message.
struct FreshResult {
  accel_status_t status = ACCEL_SUCCESS;
  std::string before;  // accel_last_error() before the call (must be "")
  std::string after;   // accel_last_error() after the call
};
FreshResult run_in_fresh_thread(const std::function<accel_status_t()>& fn);

// Says (WARN) that a test needs `n` devices when there are fewer; returns
// whether the test can go on.
bool need_devices(int32_t n);
// Says (WARN) that the backend does not declare `cap`; returns whether it does.
bool need_cap(uint32_t cap, const char* what);
// Says (WARN) that the backend lacks the group, and why; returns whether it
// has it: need_group(globals().events).
bool need_group(const Group& g);

// What was not run, for the list printed at the end of the run: `what` is
// recorded once per test case.
void note_not_run(const std::string& what);

// --- watchdog ----------------------------------------------------------------

// While a Deadline lives, a watchdog thread ends the process (exit status 1)
// if it is not destroyed within its limit, printing the test case, the call
// and the rule it broke (tests/catch2/support.hpp, shared with every Catch2
// test program of accel).
using accel_test::Deadline;

// A launch only queues: far more than enough for any backend.
inline constexpr std::chrono::milliseconds kLaunchLimit{1000};
// Nothing the suite queues runs longer than a few ms once released (host
// functions sleep at most 50 ms, copies are a few MiB).
using accel_test::kWaitLimit;

// Ends the run now (exit status 1) with `message` and the current test case.
using accel_test::abort_run;

// The accel.h calls that wait, each under a Deadline. Tests call these, not
// the accel_ functions, whenever the call may wait for queued work.
accel_status_t launch_host_func(accel_stream_t stream, accel_host_fn fn, void* user_data);
accel_status_t stream_synchronize(accel_stream_t stream);
accel_status_t event_synchronize(accel_event_t event);
accel_status_t synchronize(int32_t device);

// --- host-function helpers -------------------------------------------------

// A host function that blocks its stream until release() (or destruction).
// Launched through launch_host_func, so under its watchdog.
class Gate {
 public:
  Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate();
  accel_status_t launch(accel_stream_t stream);
  void release() { open_.store(true); }
  bool entered() const { return entered_.load(); }
  bool done() const { return done_.load(); }
  int64_t order() const { return order_.load(); }

 private:
  static void fn(void* self);
  std::atomic<bool> open_{false};
  std::atomic<bool> entered_{false};
  std::atomic<bool> done_{false};
  std::atomic<int64_t> order_{-1};
  std::atomic<int> launched_{0};
};

// Opens every live Gate. The destructors of Gate, Sleeper and the RAII
// handles below call it before they wait for queued work, so a test that
// ends early (a failed REQUIRE) never leaves a stream blocked behind a
// closed gate.
void release_gates();

// A host function that sleeps `ms` then sets done().
class Sleeper {
 public:
  explicit Sleeper(int ms) : ms_(ms) {}
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;
  ~Sleeper();
  accel_status_t launch(accel_stream_t stream);
  bool done() const { return done_.load(); }
  int64_t order() const { return order_.load(); }

 private:
  static void fn(void* self);
  int ms_;
  std::atomic<bool> done_{false};
  std::atomic<int64_t> order_{-1};
  std::atomic<int> launched_{0};
};

// Process-wide sequence number handed out to host functions as they run.
int64_t next_order();

// --- RAII handles -----------------------------------------------------------

class Stream {
 public:
  explicit Stream(int32_t device = -1, int32_t priority = 0);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  accel_stream_t get() const { return s_; }
  operator accel_stream_t() const { return s_; }
  // Destroys now (for tests of destroyed handles); returns the status.
  accel_status_t destroy();

 private:
  accel_stream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(int32_t device = -1, uint32_t flags = ACCEL_EVENT_DEFAULT);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  accel_event_t get() const { return e_; }
  operator accel_event_t() const { return e_; }
  accel_status_t destroy();

 private:
  accel_event_t e_ = nullptr;
};

// Registers [p, p + bytes) with accel_host_register while it lives, so that
// copies into it stay asynchronous (a copy into pageable memory returns only
// once it has completed, CUDA's rule): for tests that queue such a copy
// behind a closed gate. ok() is false where the backend has no host memory
// (ACCEL_CAP_HOST_MEMORY). Declare it after the memory it registers.
class Registered {
 public:
  Registered(void* p, size_t bytes)
      : p_(p),
        ok_(has_cap(ACCEL_CAP_HOST_MEMORY) && accel_host_register(p, bytes, 0) == ACCEL_SUCCESS) {}
  ~Registered() {
    if (ok_) (void)accel_host_unregister(p_);
  }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;
  bool ok() const { return ok_; }

 private:
  void* p_;
  bool ok_;
};

class DeviceMem {
 public:
  DeviceMem(int32_t device, size_t bytes);
  ~DeviceMem();
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  void* get() const { return p_; }
  unsigned char* bytes() const { return static_cast<unsigned char*>(p_); }
  size_t size() const { return n_; }
  accel_status_t free_now();

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

// Restores the calling thread's current device and its current streams to
// the start state (device 0, default streams) at scope exit, so every test
// case begins from torch's initial per-thread state.
class ThreadStateGuard {
 public:
  ThreadStateGuard() = default;
  ~ThreadStateGuard();
  ThreadStateGuard(const ThreadStateGuard&) = delete;
  ThreadStateGuard& operator=(const ThreadStateGuard&) = delete;
};

}  // namespace conf

// REQUIRE that `expr` returns ACCEL_SUCCESS; on failure show the status name
// and accel_last_error().
#define ACCEL_REQUIRE_OK(expr)                            \
  do {                                                    \
    accel_status_t accel_st_ = (expr);                    \
    INFO(#expr << " -> " << ::conf::describe(accel_st_)); \
    REQUIRE(accel_st_ == ACCEL_SUCCESS);                  \
  } while (0)

#define ACCEL_CHECK_OK(expr)                              \
  do {                                                    \
    accel_status_t accel_st_ = (expr);                    \
    INFO(#expr << " -> " << ::conf::describe(accel_st_)); \
    CHECK(accel_st_ == ACCEL_SUCCESS);                    \
  } while (0)

// CHECK that `expr`, run on the calling thread, returns `expected`; for an
// error also that accel_last_error() is non-empty afterwards.
#define ACCEL_CHECK_STATUS(expr, expected)                                                   \
  do {                                                                                       \
    accel_status_t accel_st_ = (expr);                                                       \
    std::string accel_msg_ = accel_last_error();                                             \
    INFO(#expr << " -> " << accel_status_name(accel_st_) << " (expected "                    \
               << accel_status_name(expected) << "), last error: \"" << accel_msg_ << "\""); \
    CHECK(accel_st_ == (expected));                                                          \
    if ((expected) != ACCEL_SUCCESS && (expected) != ACCEL_ERROR_NOT_READY) {                \
      CHECK_FALSE(accel_msg_.empty());                                                       \
    }                                                                                        \
  } while (0)

// CHECK that `expr`, run on a brand-new thread (empty last error), returns
// `expected` and leaves a non-empty accel_last_error(). Evaluates to the
// message so callers can inspect it: use as a statement or with
// ACCEL_FRESH_ERROR_MSG.
#define ACCEL_CHECK_ERROR(expr, expected)                                                         \
  do {                                                                                            \
    ::conf::FreshResult accel_fr_ =                                                               \
        ::conf::run_in_fresh_thread([&]() -> accel_status_t { return (expr); });                  \
    INFO(#expr << " -> " << accel_status_name(accel_fr_.status) << " (expected "                  \
               << accel_status_name(expected) << "), last error: \"" << accel_fr_.after << "\""); \
    CHECK(accel_fr_.status == (expected));                                                        \
    CHECK(accel_fr_.before.empty());                                                              \
    CHECK_FALSE(accel_fr_.after.empty());                                                         \
  } while (0)

#endif  // ACCEL_TESTS_CONFORMANCE_HPP
