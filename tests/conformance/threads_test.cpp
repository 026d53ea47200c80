// Conformance: per-thread current device and stream, concurrent use, fork.
#include "conformance.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <mutex>

using namespace conf;

TEST_CASE("current device is per thread", "[threads]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  ACCEL_REQUIRE_OK(accel_set_device_index(n - 1));

  int32_t seen_start = -2, seen_after = -2;
  accel_status_t st = ACCEL_ERROR_INTERNAL;
  std::thread t([&] {
    seen_start = accel_current_device_index();
    st = accel_set_device_index(0);
    seen_after = accel_current_device_index();
  });
  t.join();
  CHECK(seen_start == 0);
  CHECK(st == ACCEL_SUCCESS);
  CHECK(seen_after == 0);
  CHECK(accel_current_device_index() == n - 1);  // untouched by the other thread

  if (need_devices(2)) {
    // Many threads each pick their own device and keep it.
    constexpr int kThreads = 8;
    std::vector<int32_t> want(kThreads), got(kThreads, -1), got_stream_dev(kThreads, -1);
    std::atomic<int> arrived{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; ++i) {
      want[i] = i % n;
      ts.emplace_back([&, i] {
        accel_set_device_index(want[i]);
        arrived.fetch_add(1);
        accel_test::wait_until([&] { return arrived.load() == kThreads; },
                               "every thread to set its device (accel_set_device_index)");
        got[i] = accel_current_device_index();
        accel_stream_t s = nullptr;
        if (accel_current_stream(-1, &s) == ACCEL_SUCCESS)
          accel_stream_device(s, &got_stream_dev[i]);
      });
    }
    for (auto& th : ts) th.join();
    for (int i = 0; i < kThreads; ++i) {
      INFO("thread " << i);
      CHECK(got[i] == want[i]);
      CHECK(got_stream_dev[i] == want[i]);
    }
  }
}

TEST_CASE("current stream is per thread", "[threads][streams]") {
  ThreadStateGuard guard;
  Stream mine(0), theirs(0);
  ACCEL_REQUIRE_OK(accel_set_stream(mine));

  accel_stream_t seen_start = nullptr, seen_after = nullptr;
  accel_status_t st = ACCEL_ERROR_INTERNAL;
  std::thread t([&] {
    accel_current_stream(0, &seen_start);
    st = accel_set_stream(theirs);
    accel_current_stream(0, &seen_after);
    accel_set_stream(globals().default_streams[0]);
  });
  t.join();
  CHECK(seen_start == globals().default_streams[0]);
  CHECK(st == ACCEL_SUCCESS);
  CHECK(seen_after == theirs.get());
  accel_stream_t cur = nullptr;
  ACCEL_REQUIRE_OK(accel_current_stream(0, &cur));
  CHECK(cur == mine.get());
  ACCEL_REQUIRE_OK(accel_set_stream(globals().default_streams[0]));
}

TEST_CASE("concurrent streams / events / memory / host functions", "[threads]") {
  const int32_t n = device_count();
  constexpr int kThreads = 8;
  constexpr int kRounds = 20;
  // Each part the backend lacks is left out (and reported below).
  const bool host_fns = has_cap(ACCEL_CAP_HOST_FUNCTIONS);
  const bool events = globals().events.present;
  const bool memory = globals().memory.present;
  std::mutex mu;
  std::vector<std::string> failures;
  std::atomic<int> host_calls{0};
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back(what);
  };
  struct Ctx {
    std::atomic<int>* counter;
  };
  Ctx ctx{&host_calls};

  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&, i] {
      const int32_t d = i % n;
      if (accel_set_device_index(d) != ACCEL_SUCCESS) return fail("set_device_index");
      for (int r = 0; r < kRounds; ++r) {
        accel_stream_t s = nullptr;
        accel_event_t e = nullptr;
        void* p = nullptr;
        const size_t bytes = 4096 + static_cast<size_t>(i * 100 + r);
        std::vector<unsigned char> in(bytes, static_cast<unsigned char>(i * 31 + r)), out(bytes, 0);
        if (accel_stream_create(-1, 0, &s) != ACCEL_SUCCESS)
          return fail(std::string("stream_create: ") + accel_last_error());
        if (events && accel_event_create(-1, ACCEL_EVENT_DEFAULT, &e) != ACCEL_SUCCESS)
          return fail(std::string("event_create: ") + accel_last_error());
        if (memory && accel_malloc(-1, bytes, &p) != ACCEL_SUCCESS)
          return fail(std::string("malloc: ") + accel_last_error());
        if (memory && accel_memcpy_async(p, in.data(), bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s) !=
                          ACCEL_SUCCESS)
          fail("memcpy h2d");
        if (host_fns && launch_host_func(
                            s, [](void* c) { static_cast<Ctx*>(c)->counter->fetch_add(1); },
                            &ctx) != ACCEL_SUCCESS)
          fail("launch_host_func");
        if (memory && accel_memcpy_async(out.data(), p, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s) !=
                          ACCEL_SUCCESS)
          fail("memcpy d2h");
        if (events) {
          if (accel_event_record(e, s) != ACCEL_SUCCESS) fail("event_record");
          if (event_synchronize(e) != ACCEL_SUCCESS) fail("event_synchronize");
        } else if (stream_synchronize(s) != ACCEL_SUCCESS) {
          fail("stream_synchronize");
        }
        if (memory && in != out) fail("data mismatch");
        if (memory && accel_free(p) != ACCEL_SUCCESS) fail("free");
        if (events && accel_event_destroy(e) != ACCEL_SUCCESS) fail("event_destroy");
        if (accel_stream_destroy(s) != ACCEL_SUCCESS) fail("stream_destroy");
      }
    });
  }
  for (auto& t : ts) t.join();
  for (const auto& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
  if (host_fns) CHECK(host_calls.load() == kThreads * kRounds);
  need_cap(ACCEL_CAP_HOST_FUNCTIONS, "host functions");
  need_group(globals().events);
  need_group(globals().memory);
}

namespace {

// waitpid under a watchdog: true with *wstatus once the child ended within
// `limit`; otherwise the child is killed and the result is false.
bool wait_child(pid_t pid, int* wstatus, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const pid_t r = waitpid(pid, wstatus, WNOHANG);
    if (r == pid) return true;
    if (r < 0) return false;
    if (std::chrono::steady_clock::now() >= until) {
      kill(pid, SIGKILL);
      waitpid(pid, wstatus, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

TEST_CASE("a forked child can count devices; non-fork-safe backends refuse work",
          "[threads][fork]") {
  // Make sure the backend is initialised in the parent first. The child's
  // work is an allocation, or a stream where the backend has no memory.
  const bool memory = need_group(globals().memory);
  std::unique_ptr<DeviceMem> warm;
  if (memory) warm = std::make_unique<DeviceMem>(0, 64);
  Stream warm_stream(0);
  const int32_t n = device_count();
  const bool fork_safe = has_cap(ACCEL_CAP_FORK_SAFE);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: no Catch2 here; report through the exit code.
    if (accel_device_count() != n) _exit(10);
    if (accel_is_available() != 1) _exit(11);
    void* p = nullptr;
    accel_stream_t s = nullptr;
    accel_status_t st = memory ? accel_malloc(0, 64, &p) : accel_stream_create(0, 0, &s);
    if (fork_safe) {
      if (st != ACCEL_SUCCESS) _exit(12);
      if ((memory ? accel_free(p) : accel_stream_destroy(s)) != ACCEL_SUCCESS) _exit(13);
    } else {
      if (st != ACCEL_ERROR_FORKED) _exit(14);
      if (accel_last_error()[0] == '\0') _exit(15);
    }
    _exit(0);
  }
  int wstatus = 0;
  const bool ended = wait_child(pid, &wstatus, kWaitLimit);
  INFO("the forked child's accel calls must return (ACCEL_ERROR_FORKED or success), never hang");
  REQUIRE(ended);
  INFO("backend fork-safe: " << fork_safe << "; child exit status " << wstatus
                             << " (10: count differs, 11: not available, 12/13: fork-safe "
                                "backend failed, 14: expected ACCEL_ERROR_FORKED, 15: empty "
                                "message)");
  REQUIRE(WIFEXITED(wstatus));
  CHECK(WEXITSTATUS(wstatus) == 0);
}

namespace {

// What the destructor below saw; written by the exiting thread, read after
// join().
struct LateResults {
  accel_status_t set = ACCEL_ERROR_INTERNAL;
  accel_status_t query = ACCEL_ERROR_INTERNAL;
  accel_stream_t current = nullptr;
  accel_status_t bad = ACCEL_SUCCESS;
  std::string message;
};
LateResults g_late;

// A thread_local of the user's, constructed before the thread's first accel
// call and so destroyed after everything that call created for the thread:
// its destructor restores a stream, queries it and makes a failing call (an
// accel::StreamGuard held in a thread_local does the first). Under ASan or
// valgrind a freed per-thread state shows here; without them the answers do.
struct LateUser {
  accel_stream_t stream = nullptr;
  ~LateUser() {
    if (stream == nullptr) return;
    g_late.set = accel_set_stream(stream);
    g_late.query = accel_current_stream(-1, &g_late.current);
    g_late.bad = accel_set_device_index(accel_device_count());
    g_late.message = accel_last_error();
  }
};
thread_local LateUser t_late_user;

}  // namespace

TEST_CASE("accel works from a thread_local destructor at thread exit", "[threads]") {
  accel_stream_t s = nullptr;
  ACCEL_REQUIRE_OK(accel_stream_create(0, 0, &s));
  std::thread t([&] {
    t_late_user.stream = nullptr;  // constructed first, before any accel call
    accel_stream_t other = nullptr;
    accel_set_stream(s);
    accel_current_stream(-1, &other);
    (void)accel_set_device_index(accel_device_count() + 7);  // fails: sets the last error
    t_late_user.stream = s;
  });
  t.join();
  CHECK(g_late.set == ACCEL_SUCCESS);
  CHECK(g_late.query == ACCEL_SUCCESS);
  CHECK(g_late.current == s);
  CHECK(g_late.bad == ACCEL_ERROR_INVALID_DEVICE);
  CHECK(g_late.message.find("accel_set_device_index") != std::string::npos);
  ACCEL_REQUIRE_OK(stream_synchronize(s));
  ACCEL_REQUIRE_OK(accel_stream_destroy(s));
}
