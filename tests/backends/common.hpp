// What the vendor backends' end-to-end suites (tests/backends/*) share:
// reading one backend's discovery entry and the environment, running a
// fork()ed child with a deadline, and (watched_calls.hpp) a watchdog on
// every accel.h call that can wait. Each suite runs
// one scenario per process (discovery happens once), so these are all it
// needs from the core besides accel.h.
#pragma once

#include <accel/accel.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "support.hpp"
#include "watched_calls.hpp"

namespace backend_test {

// One backend's discovery entry, as accel_get_backend_info reports it.
struct Info {
  bool found = false;
  accel_backend_status_t status = ACCEL_BACKEND_REJECTED;
  std::string reason;
  int32_t devices = 0;
  uint32_t caps = 0;
  std::string runtime_version;  // "" when unknown
};

inline Info backend_info(const char* name) {
  Info out;
  for (size_t i = 0; i < accel_backend_count(); ++i) {
    accel_backend_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (accel_get_backend_info(i, &info) != ACCEL_SUCCESS) continue;
    if (std::strcmp(info.name, name) != 0) continue;
    out.found = true;
    out.status = info.status;
    out.reason = info.reason;
    out.devices = info.device_count;
    out.caps = info.capabilities;
    out.runtime_version = info.runtime_version != nullptr ? info.runtime_version : "(null)";
  }
  return out;
}

// The variable's value, "" when unset.
inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Runs `child` in a fork()ed child and returns its exit code; the child is
// killed (and the test fails) if it does not finish within 30 s, so nothing
// hangs. Include after catch2/catch.hpp.
inline int in_child(int (*child)()) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(child());
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    REQUIRE(r >= 0);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("forked child did not finish within 30 s (hang)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace backend_test
