// Fork tests over sim, which is not fork-safe: a backend
// initialised before fork() must answer ACCEL_ERROR_FORKED in the child,
// one only counted before fork() must work there, and no fork() may leave
// the child a lock held by a thread that does not exist there.
//
// Every scenario is its own process (meson runs each tag separately): some
// need fork() to happen before the process's first accel call or before the
// backend is initialised. Children report failures through a pipe and their
// exit status, always leave with _exit(), and are killed by alarm() if they
// hang; the parent kills one that outlives its deadline and fails.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <accel/accel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// The child's side: failures go to the parent through the pipe.
class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  __attribute__((format(printf, 2, 3))) void fail(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > static_cast<int>(sizeof buf) - 2) n = static_cast<int>(sizeof buf) - 2;
    buf[n++] = '\n';
    ssize_t ignored = write(fd_, buf, static_cast<size_t>(n));
    (void)ignored;
    ++failures_;
  }
  // `call` must have returned `want`; for ACCEL_ERROR_FORKED the message must
  // also say why (mention fork).
  void expect(const char* call, accel_status_t got, accel_status_t want) {
    if (got != want) {
      fail("%s returned %s, expected %s: %s", call, accel_status_name(got), accel_status_name(want),
           accel_last_error());
      return;
    }
    if (want == ACCEL_ERROR_FORKED && std::strstr(accel_last_error(), "fork") == nullptr)
      fail("%s returned ACCEL_ERROR_FORKED but accel_last_error() does not mention fork: '%s'",
           call, accel_last_error());
  }
  int exit_code() const { return failures_ == 0 ? 0 : 1; }

 private:
  int fd_;
  int failures_ = 0;
};

struct ChildResult {
  bool timed_out = false;
  int status = 0;
  std::string report;
  double seconds = 0;
  std::string describe() const {
    std::string s;
    if (timed_out)
      s = "child did not exit before its deadline (killed)";
    else if (WIFEXITED(status))
      s = "child exited with " + std::to_string(WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
      s = std::string("child killed by signal ") + strsignal(WTERMSIG(status)) +
          (WTERMSIG(status) == SIGALRM ? " (its alarm: it hung)" : "");
    s += " after " + std::to_string(seconds) + " s";
    if (!report.empty()) s += "; it reported:\n" + report;
    return s;
  }
  bool ok() const { return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Forks; the child runs body(reporter) under alarm(child_timeout_s) and
// leaves with _exit(its return value). The parent collects the report and
// the status, killing the child past deadline_s.
template <class Body>
ChildResult run_child(Body body, unsigned child_timeout_s = 10, double deadline_s = 20) {
  ChildResult r;
  int fds[2];
  REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
  const auto start = Clock::now();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    alarm(child_timeout_s);
    Reporter rep(fds[1]);
    int rc = body(rep);
    _exit(rc);
  }
  close(fds[1]);
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(deadline_s));
  bool eof = false;
  while (!eof && Clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 20) > 0) {
      char buf[512];
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n > 0)
        r.report.append(buf, static_cast<size_t>(n));
      else if (n == 0)
        eof = true;
    }
  }
  close(fds[0]);
  for (;;) {
    pid_t w = waitpid(pid, &r.status, WNOHANG);
    if (w == pid) break;
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &r.status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

#define REQUIRE_OK(call)                                             \
  do {                                                               \
    accel_status_t st_ = (call);                                     \
    INFO(#call << ": " << accel_last_error());                       \
    REQUIRE(accel_status_name(st_) == std::string("ACCEL_SUCCESS")); \
  } while (0)

void set_flag(void* p) { static_cast<std::atomic<int>*>(p)->store(1); }

// Everything an initialised-then-forked backend must refuse in the child,
// and what must keep working there.
void expect_forked_everywhere(Reporter& r, accel_stream_t s, accel_event_t e, void* dev_ptr,
                              int32_t expect_devices) {
  const accel_status_t F = ACCEL_ERROR_FORKED;
  accel_stream_t ns = nullptr;
  accel_event_t ne = nullptr;
  void* p = nullptr;
  char host[64] = {0};
  r.expect("accel_stream_create", accel_stream_create(0, 0, &ns), F);
  r.expect("accel_stream_query", accel_stream_query(s), F);
  r.expect("accel_stream_synchronize", accel_stream_synchronize(s), F);
  r.expect("accel_set_stream", accel_set_stream(s), F);
  accel_stream_t cur = nullptr;
  r.expect("accel_current_stream", accel_current_stream(-1, &cur), F);
  r.expect("accel_synchronize", accel_synchronize(-1), F);
  r.expect("accel_stream_priority_range", accel_stream_priority_range(0, nullptr, nullptr), F);
  r.expect("accel_launch_host_func", accel_launch_host_func(s, set_flag, nullptr), F);
  r.expect("accel_stream_wait_event", accel_stream_wait_event(s, e), F);
  r.expect("accel_event_create", accel_event_create(0, 0, &ne), F);
  r.expect("accel_event_record", accel_event_record(e, s), F);
  r.expect("accel_event_query", accel_event_query(e), F);
  r.expect("accel_event_synchronize", accel_event_synchronize(e), F);
  r.expect("accel_malloc", accel_malloc(0, 64, &p), F);
  r.expect("accel_memcpy_async",
           accel_memcpy_async(dev_ptr, host, sizeof host, ACCEL_MEMCPY_HOST_TO_DEVICE, s), F);
  r.expect("accel_memset_async", accel_memset_async(dev_ptr, 0, 16, s), F);
  size_t fb = 0, tb = 0;
  r.expect("accel_mem_get_info", accel_mem_get_info(0, &fb, &tb), F);
  accel_device_properties_t props{};
  props.struct_size = sizeof props;
  r.expect("accel_get_device_properties", accel_get_device_properties(0, &props), F);
  // Refused, and nothing changed: a second free is refused the same way
  // (not "not a live allocation"), and destroy leaves the handles live.
  r.expect("accel_free", accel_free(dev_ptr), F);
  r.expect("accel_free (again)", accel_free(dev_ptr), F);
  r.expect("accel_event_destroy", accel_event_destroy(e), F);
  r.expect("accel_stream_destroy", accel_stream_destroy(s), F);
  r.expect("accel_stream_destroy (again)", accel_stream_destroy(s), F);
  if (ns != nullptr || ne != nullptr || p != nullptr) r.fail("a refused call wrote its output");

  // Queries that need no vendor call still answer.
  if (accel_device_count() != expect_devices)
    r.fail("accel_device_count() = %d, expected %d", accel_device_count(), expect_devices);
  if (accel_is_available() != 1) r.fail("accel_is_available() = %d", accel_is_available());
  const char* name = accel_current_accelerator();
  if (name == nullptr || std::strcmp(name, "sim") != 0)
    r.fail("accel_current_accelerator() changed");
  if (accel_backend_count() == 0) r.fail("accel_backend_count() = 0");
  accel_backend_info_t info{};
  info.struct_size = sizeof info;
  r.expect("accel_get_backend_info", accel_get_backend_info(0, &info), ACCEL_SUCCESS);
  if (accel_current_device_index() < 0) r.fail("accel_current_device_index() < 0");
  accel_memory_stats_t stats{};
  stats.struct_size = sizeof stats;
  r.expect("accel_memory_stats", accel_memory_stats(0, &stats), ACCEL_SUCCESS);
  if (stats.allocation_count < 1) r.fail("memory stats lost the parent's live allocation");
  int32_t dev = -1;
  r.expect("accel_stream_device", accel_stream_device(s, &dev), ACCEL_SUCCESS);
}

// Whatever the child did, the parent's backend still works.
void parent_still_works() {
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  REQUIRE_OK(accel_stream_synchronize(s));
  REQUIRE_OK(accel_stream_destroy(s));
}

}  // namespace

TEST_CASE("count then fork: the child can use the backend", "[count-then-fork]") {
  // The process's first accel calls: discovery only, no lazy_init.
  REQUIRE(accel_device_count() == 2);
  REQUIRE(accel_is_available() == 1);

  ChildResult res = run_child([](Reporter& r) {
    accel_stream_t s = nullptr;
    r.expect("accel_stream_create", accel_stream_create(1, 0, &s), ACCEL_SUCCESS);
    if (s == nullptr) return 1;
    std::atomic<int> flag{0};
    r.expect("accel_launch_host_func", accel_launch_host_func(s, set_flag, &flag), ACCEL_SUCCESS);
    accel_event_t e = nullptr;
    r.expect("accel_event_create", accel_event_create(1, 0, &e), ACCEL_SUCCESS);
    r.expect("accel_event_record", accel_event_record(e, s), ACCEL_SUCCESS);
    void* p = nullptr;
    r.expect("accel_malloc", accel_malloc(1, 256, &p), ACCEL_SUCCESS);
    unsigned char in[256], out[256];
    for (int i = 0; i < 256; ++i) in[i] = static_cast<unsigned char>(i), out[i] = 0;
    r.expect("accel_memcpy_async", accel_memcpy_async(p, in, 256, ACCEL_MEMCPY_HOST_TO_DEVICE, s),
             ACCEL_SUCCESS);
    r.expect("accel_memcpy_async", accel_memcpy_async(out, p, 256, ACCEL_MEMCPY_DEVICE_TO_HOST, s),
             ACCEL_SUCCESS);
    r.expect("accel_stream_synchronize", accel_stream_synchronize(s), ACCEL_SUCCESS);
    r.expect("accel_event_synchronize", accel_event_synchronize(e), ACCEL_SUCCESS);
    if (flag.load() != 1) r.fail("host function did not run before synchronize returned");
    if (std::memcmp(in, out, sizeof in) != 0) r.fail("copy round trip changed the data");
    accel_stream_t cur = nullptr;
    r.expect("accel_current_stream", accel_current_stream(0, &cur), ACCEL_SUCCESS);
    r.expect("accel_synchronize", accel_synchronize(-1), ACCEL_SUCCESS);
    r.expect("accel_free", accel_free(p), ACCEL_SUCCESS);
    r.expect("accel_event_destroy", accel_event_destroy(e), ACCEL_SUCCESS);
    r.expect("accel_stream_destroy", accel_stream_destroy(s), ACCEL_SUCCESS);
    return r.exit_code();
  });
  INFO(res.describe());
  CHECK(res.ok());

  // The parent was not initialised by the child and still works.
  parent_still_works();
}

// Any backend (ACCEL_BACKEND picks it): the parent only counts, then forks.
// The child either works, or - when the backend's discovery may have started
// vendor threads (no ACCEL_CAP_DISCOVERY_FORK_SAFE) - is refused with
// ACCEL_ERROR_FORKED and a remedy. Never a hang: PoCL's count starts worker
// threads the child does not have, and clFinish waited for them forever.
TEST_CASE("count on any backend then fork: the child works or is refused and never hangs",
          "[count-then-fork-any]") {
  const int32_t devices = accel_device_count();
  REQUIRE(devices > 0);
  // Synchronizing a never-initialised backend is a no-op that must not
  // initialise it (torch), whichever way the device is named.
  REQUIRE(accel_synchronize(-1) == ACCEL_SUCCESS);
  REQUIRE(accel_synchronize(0) == ACCEL_SUCCESS);
  const char* name = accel_current_accelerator();
  REQUIRE(name != nullptr);
  uint32_t caps = 0;
  for (size_t i = 0; i < accel_backend_count(); ++i) {
    accel_backend_info_t info{};
    info.struct_size = sizeof info;
    if (accel_get_backend_info(i, &info) == ACCEL_SUCCESS && info.is_current)
      caps = info.capabilities;
  }
  const bool must_work = (caps & (ACCEL_CAP_FORK_SAFE | ACCEL_CAP_DISCOVERY_FORK_SAFE)) != 0;
  std::printf("backend %s: capabilities 0x%x, the child must %s\n", name, caps,
              must_work ? "work" : "work or be refused with ACCEL_ERROR_FORKED");

  ChildResult res = run_child([&](Reporter& r) {
    accel_stream_t s = nullptr;
    accel_status_t st = accel_stream_create(0, 0, &s);
    if (st == ACCEL_ERROR_FORKED && !must_work) {
      const std::string msg = accel_last_error();
      if (msg.find("fork") == std::string::npos || msg.find(name) == std::string::npos ||
          (msg.find("exec") == std::string::npos && msg.find("spawn") == std::string::npos))
        r.fail("ACCEL_ERROR_FORKED without the backend, fork and a remedy: '%s'", msg.c_str());
      // Counting still answers; synchronize has nothing to wait for.
      if (accel_device_count() != devices) r.fail("accel_device_count() changed in the child");
      r.expect("accel_synchronize", accel_synchronize(-1), ACCEL_SUCCESS);
      void* p = nullptr;
      r.expect("accel_malloc", accel_malloc(0, 64, &p), ACCEL_ERROR_FORKED);
      return r.exit_code();
    }
    r.expect("accel_stream_create", st, ACCEL_SUCCESS);
    if (s == nullptr) return 1;
    void* p = nullptr;
    r.expect("accel_malloc", accel_malloc(0, 4096, &p), ACCEL_SUCCESS);
    if (p == nullptr) return 1;
    r.expect("accel_memset_async", accel_memset_async(p, 7, 4096, s), ACCEL_SUCCESS);
    unsigned char out[16] = {0};
    r.expect("accel_memcpy_async",
             accel_memcpy_async(out, p, sizeof out, ACCEL_MEMCPY_DEVICE_TO_HOST, s), ACCEL_SUCCESS);
    r.expect("accel_stream_synchronize", accel_stream_synchronize(s), ACCEL_SUCCESS);
    for (unsigned char c : out)
      if (c != 7) {
        r.fail("memset/copy round trip gave %d, expected 7", c);
        break;
      }
    r.expect("accel_free", accel_free(p), ACCEL_SUCCESS);
    r.expect("accel_stream_destroy", accel_stream_destroy(s), ACCEL_SUCCESS);
    return r.exit_code();
  });
  INFO(res.describe());
  CHECK(res.ok());

  parent_still_works();
}

TEST_CASE("init then fork: the child gets ACCEL_ERROR_FORKED and never hangs", "[init-then-fork]") {
  REQUIRE(accel_device_count() == 2);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  REQUIRE_OK(accel_set_stream(s));
  accel_event_t e = nullptr;
  REQUIRE_OK(accel_event_create(0, 0, &e));
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(0, 4096, &p));
  std::atomic<int> flag{0};
  REQUIRE_OK(accel_launch_host_func(s, set_flag, &flag));
  REQUIRE_OK(accel_event_record(e, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  REQUIRE(flag.load() == 1);

  ChildResult res = run_child([&](Reporter& r) {
    const auto t0 = Clock::now();
    expect_forked_everywhere(r, s, e, p, 2);
    double took = std::chrono::duration<double>(Clock::now() - t0).count();
    if (took > 2.0) r.fail("the refused calls took %.2f s", took);
    return r.exit_code();
  });
  INFO(res.describe());
  CHECK(res.ok());

  // The parent is unaffected.
  flag.store(0);
  REQUIRE_OK(accel_launch_host_func(s, set_flag, &flag));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(flag.load() == 1);
  accel_stream_t def = nullptr;
  REQUIRE_OK(accel_current_stream(0, &def));
  REQUIRE_OK(accel_set_stream(def));
  REQUIRE_OK(accel_free(p));
  REQUIRE_OK(accel_event_destroy(e));
  REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("fork while other threads hold the core's locks", "[fork-locks]") {
  // With ACCEL_LOG_LEVEL=debug the hammers also log all the time (sim logs
  // every stream it creates) and the children log every refused call: the
  // logger's lock is then one more lock a fork may catch held. The log goes
  // to /dev/null meanwhile (it would be megabytes).
  const char* level = std::getenv("ACCEL_LOG_LEVEL");
  const bool debug_log = level != nullptr && std::strcmp(level, "debug") == 0;
  int saved_stderr = -1;
  if (debug_log) {
    std::fflush(stderr);
    saved_stderr = dup(2);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    REQUIRE(devnull >= 0);
    REQUIRE(dup2(devnull, 2) == 2);
    close(devnull);
  }
  REQUIRE(accel_device_count() == 2);
  // The handles the children try to use.
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  accel_event_t e = nullptr;
  REQUIRE_OK(accel_event_create(0, 0, &e));
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(0, 128, &p));

  std::atomic<bool> stop{false};
  std::atomic<long> hammer_errors{0}, hammer_loops{0};
  std::string hammer_error;
  std::mutex hammer_mutex;
  auto note = [&](accel_status_t st, const char* what) {
    if (st == ACCEL_SUCCESS) return;
    hammer_errors.fetch_add(1);
    std::lock_guard lock(hammer_mutex);
    if (hammer_error.empty()) hammer_error = std::string(what) + ": " + accel_last_error();
  };
  std::vector<std::thread> hammers;
  // Handle pools, default streams (first use on device 1 races the forks),
  // the init path: stream and event create / destroy.
  hammers.emplace_back([&] {
    while (!stop.load()) {
      accel_stream_t hs = nullptr, cur = nullptr;
      accel_event_t he = nullptr;
      note(accel_current_stream(1, &cur), "accel_current_stream");
      note(accel_stream_create(static_cast<int32_t>(hammer_loops.load() & 1), 0, &hs),
           "accel_stream_create");
      note(accel_event_create(accel_current_device_index(), 0, &he), "accel_event_create");
      if (hs != nullptr) {
        accel_status_t q = accel_stream_query(hs);
        note(q == ACCEL_ERROR_NOT_READY ? ACCEL_SUCCESS : q, "accel_stream_query");
      }
      if (he != nullptr) note(accel_event_destroy(he), "accel_event_destroy");
      if (hs != nullptr) note(accel_stream_destroy(hs), "accel_stream_destroy");
      hammer_loops.fetch_add(1);
    }
  });
  // The allocation table: malloc / free / copies (which look pointers up).
  hammers.emplace_back([&] {
    unsigned char buf[64] = {0};
    while (!stop.load()) {
      void* q = nullptr;
      note(accel_malloc(1, 64, &q), "accel_malloc");
      if (q != nullptr) {
        accel_stream_t cur = nullptr;
        note(accel_current_stream(1, &cur), "accel_current_stream");
        note(accel_memcpy_async(q, buf, sizeof buf, ACCEL_MEMCPY_HOST_TO_DEVICE, cur), "memcpy");
        note(accel_stream_synchronize(cur), "accel_stream_synchronize");
        note(accel_free(q), "accel_free");
      }
      hammer_loops.fetch_add(1);
    }
  });

  constexpr int kForks = 50;
  int failed = 0;
  double slowest = 0;
  for (int i = 0; i < kForks; ++i) {
    ChildResult res = run_child(
        [&](Reporter& r) {
          // Calls that take the locks the hammers hold in the parent.
          if (accel_backend_count() == 0) r.fail("accel_backend_count() = 0");
          accel_backend_info_t info{};
          info.struct_size = sizeof info;
          r.expect("accel_get_backend_info", accel_get_backend_info(0, &info), ACCEL_SUCCESS);
          char local = 0;
          // Allocation table: taken (and released) even though the backend is unusable.
          r.expect("accel_free(non-accel pointer)", accel_free(&local),
                   ACCEL_ERROR_INVALID_ARGUMENT);
          expect_forked_everywhere(r, s, e, p, 2);
          return r.exit_code();
        },
        5, 15);
    slowest = std::max(slowest, res.seconds);
    if (!res.ok()) {
      ++failed;
      INFO("fork " << i << ": " << res.describe());
      CHECK(res.ok());
      if (res.timed_out || failed > 3) break;
    }
  }
  stop.store(true);
  for (auto& t : hammers) t.join();
  if (saved_stderr >= 0) {
    std::fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
  }
  std::printf("fork-locks: %d forks, %ld hammer loops, slowest child %.3f s\n", kForks,
              hammer_loops.load(), slowest);
  CHECK(failed == 0);
  INFO("first hammer error: " << hammer_error);
  CHECK(hammer_errors.load() == 0);
  CHECK(hammer_loops.load() > 0);
  REQUIRE_OK(accel_free(p));
  REQUIRE_OK(accel_event_destroy(e));
  REQUIRE_OK(accel_stream_destroy(s));
  REQUIRE_OK(accel_synchronize(-1));
}

namespace {
struct Slow {
  std::atomic<int> started{0};
  std::atomic<int> done{0};
};
void slow_host_fn(void* p) {
  auto* s = static_cast<Slow*>(p);
  s->started.store(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  s->done.store(1);
}
}  // namespace

TEST_CASE("fork while a stream is running", "[fork-running]") {
  REQUIRE(accel_device_count() == 2);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(1, 0, &s));
  Slow slow;
  std::atomic<int> after{0};
  REQUIRE_OK(accel_launch_host_func(s, slow_host_fn, &slow));
  REQUIRE_OK(accel_launch_host_func(s, set_flag, &after));
  while (slow.started.load() == 0) std::this_thread::yield();

  ChildResult res = run_child(
      [&](Reporter& r) {
        const auto t0 = Clock::now();
        r.expect("accel_stream_synchronize", accel_stream_synchronize(s), ACCEL_ERROR_FORKED);
        r.expect("accel_stream_query", accel_stream_query(s), ACCEL_ERROR_FORKED);
        r.expect("accel_synchronize", accel_synchronize(1), ACCEL_ERROR_FORKED);
        r.expect("accel_launch_host_func", accel_launch_host_func(s, set_flag, nullptr),
                 ACCEL_ERROR_FORKED);
        double took = std::chrono::duration<double>(Clock::now() - t0).count();
        // The parent's host function sleeps 2 s: waiting for it (or for a
        // worker thread that does not exist in the child) would show here.
        // 1 s leaves room for a loaded machine under a sanitizer.
        if (took > 1.0) r.fail("the child's calls took %.3f s: they waited", took);
        return r.exit_code();
      },
      5, 15);
  INFO(res.describe());
  CHECK(res.ok());
  CHECK(slow.done.load() == 0);  // the child did not wait for the parent's work

  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(slow.done.load() == 1);
  CHECK(after.load() == 1);
  REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("fork while another thread runs discovery", "[fork-discovery]") {
  // No accel call before this point: the thread below makes the first one,
  // and the main thread forks while that thread is inside discovery. A child
  // must never inherit the discovery lock held (its first call would then
  // hang forever).
  //
  // To be inside discovery for sure, the core's debug log goes to a pipe
  // that is full: discovery blocks writing its first line ("searching ...")
  // while holding its lock, until a drainer thread empties the pipe 300 ms
  // after the fork started.
  const int saved_stderr = dup(2);
  REQUIRE(saved_stderr >= 0);
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  (void)fcntl(p[1], F_SETPIPE_SZ, 4096);
  REQUIRE(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
  {
    char junk[512];
    std::memset(junk, '.', sizeof junk);
    junk[sizeof junk - 1] = '\n';
    while (write(p[1], junk, sizeof junk) > 0) {
    }
    // Single bytes until it is completely full.
    while (write(p[1], "\n", 1) > 0) {
    }
  }
  REQUIRE(fcntl(p[1], F_SETFL, 0) == 0);
  std::fflush(stderr);
  REQUIRE(dup2(p[1], 2) == 2);
  setenv("ACCEL_LOG_LEVEL", "debug", 1);

  std::atomic<bool> done{false};
  std::thread discover([&] {
    (void)accel_device_count();
    done.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const bool inside = !done.load();

  std::atomic<bool> stop_draining{false};
  std::string drained;
  std::thread drainer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    char buf[4096];
    while (!stop_draining.load()) {
      pollfd pfd{p[0], POLLIN, 0};
      if (poll(&pfd, 1, 20) > 0) {
        ssize_t n = read(p[0], buf, sizeof buf);
        if (n > 0) drained.append(buf, static_cast<size_t>(n));
      }
    }
  });

  ChildResult res = run_child(
      [saved_stderr](Reporter& r) {
        dup2(saved_stderr, 2);
        if (accel_device_count() != 2) r.fail("accel_device_count() = %d", accel_device_count());
        const char* name = accel_current_accelerator();
        if (name == nullptr || std::strcmp(name, "sim") != 0)
          r.fail("accel_current_accelerator() = %s", name ? name : "(null)");
        if (accel_backend_count() == 0) r.fail("accel_backend_count() = 0");
        // Nothing here starts a thread: ThreadSanitizer kills a child of a
        // multi-threaded parent that does ([count-then-fork] covers using
        // the backend after fork).
        accel_memory_stats_t stats{};
        stats.struct_size = sizeof stats;
        r.expect("accel_memory_stats", accel_memory_stats(0, &stats), ACCEL_SUCCESS);
        return r.exit_code();
      },
      5, 15);

  discover.join();
  std::fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  stop_draining.store(true);
  drainer.join();
  close(p[0]);
  close(p[1]);
  // The core's log, without the filler.
  for (size_t pos = drained.find("[accel]"); pos != std::string::npos;
       pos = drained.find("[accel]", pos + 1)) {
    size_t eol = drained.find('\n', pos);
    std::fprintf(stderr, "%s\n", drained.substr(pos, eol - pos).c_str());
  }

  INFO(res.describe());
  CHECK(inside);  // discovery really was in progress when fork() was called
  CHECK(res.ok());
  CHECK(done.load());
  CHECK(accel_device_count() == 2);
}
