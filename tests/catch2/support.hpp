// What every Catch2 test program of accel shares besides Catch2 itself:
// watchdogs for calls that wait, the name of the running test case, and
// honest skips. Implemented once per build in support.cpp (linked with
// catch2_runner_dep and catch2_main_dep).
//
//  - Deadline: while one lives, a watchdog thread ends the process (exit 1)
//    if it is not destroyed within its limit, printing the test case and the
//    call it was waiting for. A stuck call cannot be interrupted, and without
//    this a hanging backend stalls the test with no output until Meson's
//    timeout kills it without naming anything.
//  - wait_until: a spin-wait on a condition, under a Deadline.
//  - skip: the test cannot run its subject here (no compiler made the image,
//    no device node, ...). accel_test::run() then exits 77, which Meson
//    counts as SKIP, unless a check failed (a failure stays a failure).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace accel_test {

using std::chrono::milliseconds;

// The Catch2 test case running now ("" between cases). Thread-safe: worker
// threads of a test may call it.
std::string current_test_name();

// Longest wait any test of accel's runs: nothing the suites queue runs
// longer than a few ms once released, so this only ever fires on a hang.
inline constexpr milliseconds kWaitLimit{20000};

class Deadline {
 public:
  // `call` and `rule` must outlive the Deadline (string literals): the
  // watchdog prints "<call> did not return within <limit>: <rule>".
  Deadline(const char* call, milliseconds limit = kWaitLimit,
           const char* rule = "it waits for work that completes in milliseconds");
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  uint64_t id_;
};

// Ends the process now (exit status 1) with `message` and the test case.
[[noreturn]] void abort_run(const std::string& message);

// Spins (1 ms sleeps) until `done()` is true; past `limit` the run ends,
// naming `what` (what the test was waiting for).
void wait_until(const std::function<bool()>& done, const char* what,
                milliseconds limit = kWaitLimit);

// Says "SKIP: <reason>" on stdout and makes the program exit 77 unless a
// check fails. Call it where a test case returns early because its subject
// cannot run on this machine or in this build.
void skip(const std::string& reason);
// The same with a printf format.
void skipf(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Whether skip() was called in this process (for accel_test::run).
bool skipped();

}  // namespace accel_test
