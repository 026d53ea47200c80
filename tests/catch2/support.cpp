// support.hpp's implementation: the watchdog, the current test case (kept
// by a Catch2 listener registered here, so every test program has it) and
// the skip flag that accel_test::run() turns into exit status 77.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

namespace accel_test {

namespace {

using Clock = std::chrono::steady_clock;

struct Armed {
  Clock::time_point until;
  const char* call;
  milliseconds limit;
  const char* rule;
  std::string test;  // the test case that armed it
};

// Used by test threads, the watchdog thread and main(). Never destroyed:
// the detached watchdog thread may still wait on it while the process exits.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  std::string current_test;
  std::map<uint64_t, Armed> armed;
  uint64_t next_id = 1;
  bool watchdog_started = false;
};

State& state() {
  static auto* s = new State();
  return *s;
}

std::atomic<bool> g_skipped{false};

std::string format_limit(milliseconds limit) {
  if (limit.count() % 1000 == 0) return std::to_string(limit.count() / 1000) + " s";
  return std::to_string(limit.count()) + " ms";
}

// Catch2 cannot report a failure from here (the failing call may never
// return), so the verdict goes to stderr and the process ends.
[[noreturn]] void die(const std::string& message, const std::string& test) {
  std::fflush(stdout);
  if (test.empty())
    std::fprintf(stderr, "\nFAILED (watchdog): %s\n", message.c_str());
  else
    std::fprintf(stderr, "\nFAILED (watchdog) in test case \"%s\": %s\n", test.c_str(),
                 message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void watchdog_loop() {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (s.armed.empty()) {
      s.cv.wait(lock);
      continue;
    }
    auto first = std::min_element(
        s.armed.begin(), s.armed.end(),
        [](const auto& a, const auto& b) { return a.second.until < b.second.until; });
    const Clock::time_point until = first->second.until;
    if (Clock::now() >= until) {
      const Armed& a = first->second;
      die(std::string(a.call) + " did not return within " + format_limit(a.limit) + ": " + a.rule,
          a.test);
    }
    s.cv.wait_until(lock, until);
  }
}

void set_current_test(const std::string& name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.current_test = name;
}

// Tells the watchdog which test case runs.
struct CurrentTestListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    TestEventListenerBase::testCaseStarting(info);
    set_current_test(info.name);
  }
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    set_current_test("");
    TestEventListenerBase::testCaseEnded(stats);
  }
};
CATCH_REGISTER_LISTENER(CurrentTestListener)

}  // namespace

std::string current_test_name() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.current_test;
}

Deadline::Deadline(const char* call, milliseconds limit, const char* rule) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.watchdog_started) {
    std::thread(watchdog_loop).detach();
    s.watchdog_started = true;
  }
  id_ = s.next_id++;
  const Clock::time_point until = Clock::now() + limit;
  // The watchdog sleeps until the earliest deadline: wake it only when this
  // one comes sooner.
  bool sooner = true;
  for (const auto& kv : s.armed) sooner = sooner && until < kv.second.until;
  s.armed.emplace(id_, Armed{until, call, limit, rule, s.current_test});
  if (sooner) s.cv.notify_one();
}

Deadline::~Deadline() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.armed.erase(id_);
}

void abort_run(const std::string& message) { die(message, current_test_name()); }

void wait_until(const std::function<bool()>& done, const char* what, milliseconds limit) {
  const Clock::time_point until = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= until)
      abort_run(std::string("waited ") + format_limit(limit) + " for " + what);
    std::this_thread::sleep_for(milliseconds(1));
  }
}

void skip(const std::string& reason) {
  std::printf("SKIP: %s\n", reason.c_str());
  std::fflush(stdout);
  g_skipped.store(true);
}

void skipf(const char* format, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(text, sizeof text, format, ap);
  va_end(ap);
  skip(text);
}

bool skipped() { return g_skipped.load(); }

}  // namespace accel_test

