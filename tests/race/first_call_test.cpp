// Race: 32 threads make the very first accel call of the process at the same
// instant. Discovery must run once and every thread must get the same
// answers (the same static strings, the same default streams).
//
// Nothing in this process calls accel before the start flag is raised: run
// the [first-call] test case alone, one process per run (meson does).
//
// One discovery is checked two ways: every thread sees the same pointers for
// strings owned by the discovery result, and the core's own debug log (sent
// to a temporary file for the run) says "current accelerator:" once and
// "<backend>: initialised" once.
//
// Environment: ACCEL_BACKEND (required: the backend expected to be chosen),
// ACCEL_EXPECT_DEVICES (optional: the device count expected).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <accel/accel.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 32;
constexpr int kMaxDevices = 8;

struct Answer {
  int first_kind = -1;
  int available = -1;
  const char* accelerator = nullptr;
  std::string accelerator_text;
  const char* reason = nullptr;
  int32_t count = -1;
  int32_t index = -2;
  size_t backends = 0;
  std::vector<const char*> names, paths;
  std::vector<int> statuses;
  accel_status_t stream_status[kMaxDevices] = {};
  accel_stream_t default_stream[kMaxDevices] = {};
  std::string stream_error;
};

// One of several entry points, so the race also covers different ways in.
void first_call(int kind) {
  switch (kind) {
    case 0:
      (void)accel_is_available();
      break;
    case 1:
      (void)accel_current_accelerator();
      break;
    case 2:
      (void)accel_device_count();
      break;
    case 3:
      (void)accel_selection_reason();
      break;
    case 4:
      (void)accel_current_device_index();
      break;
    case 5:
      (void)accel_backend_count();
      break;
    default: {
      accel_stream_t s = nullptr;
      (void)accel_current_stream(-1, &s);
      break;
    }
  }
}

size_t count_occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size()))
    ++n;
  return n;
}

// Sends fd 2 to a temporary file until stop(); returns what was written.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = dup(2);
    if (file_ != nullptr && saved_ >= 0) ok_ = dup2(fileno(file_), 2) >= 0;
  }
  bool ok() const { return ok_; }
  std::string stop() {
    std::string text;
    std::fflush(stderr);
    if (saved_ >= 0) {
      dup2(saved_, 2);
      close(saved_);
      saved_ = -1;
    }
    if (file_ != nullptr) {
      std::rewind(file_);
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) text.append(buf, n);
      std::fclose(file_);
      file_ = nullptr;
    }
    return text;
  }
  ~StderrCapture() { stop(); }

 private:
  FILE* file_ = nullptr;
  int saved_ = -1;
  bool ok_ = false;
};

}  // namespace

TEST_CASE("32 threads make the first accel call at once", "[first-call]") {
  const char* backend = std::getenv("ACCEL_BACKEND");
  REQUIRE(backend != nullptr);
  REQUIRE(*backend != '\0');
  const char* expect_env = std::getenv("ACCEL_EXPECT_DEVICES");
  // The core reads ACCEL_LOG_LEVEL once, on its first log line: after this.
  setenv("ACCEL_LOG_LEVEL", "debug", 1);

  std::vector<Answer> answers(kThreads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int> answered{0};

  StderrCapture capture;
  REQUIRE(capture.ok());
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        Answer& a = answers[static_cast<size_t>(i)];
        a.first_kind = i % 7;
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        first_call(a.first_kind);
        a.available = accel_is_available();
        a.accelerator = accel_current_accelerator();
        a.accelerator_text = a.accelerator != nullptr ? a.accelerator : "(null)";
        a.reason = accel_selection_reason();
        a.count = accel_device_count();
        a.index = accel_current_device_index();
        a.backends = accel_backend_count();
        for (size_t k = 0; k < a.backends; ++k) {
          accel_backend_info_t info{};
          info.struct_size = sizeof info;
          if (accel_get_backend_info(k, &info) != ACCEL_SUCCESS) {
            a.names.push_back(nullptr);
            a.paths.push_back(nullptr);
            a.statuses.push_back(-1);
            continue;
          }
          a.names.push_back(info.name);
          a.paths.push_back(info.path);
          a.statuses.push_back(static_cast<int>(info.status));
        }
        // Second wave, all threads together again: lazy vendor
        // initialisation and every device's default stream, on first use.
        answered.fetch_add(1);
        while (answered.load(std::memory_order_acquire) < kThreads) std::this_thread::yield();
        for (int32_t d = 0; d < a.count && d < kMaxDevices; ++d) {
          a.stream_status[d] = accel_current_stream(d, &a.default_stream[d]);
          if (a.stream_status[d] != ACCEL_SUCCESS && a.stream_error.empty())
            a.stream_error = accel_last_error();
        }
      });
    }
    while (ready.load() < kThreads) std::this_thread::yield();
    go.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
  }
  const std::string log = capture.stop();
  std::fputs(log.c_str(), stderr);  // keep the core's log visible in the test log

  const Answer& ref = answers[0];
  INFO("thread 0: accelerator " << ref.accelerator_text << ", " << ref.count
                                << " devices, reason: " << (ref.reason ? ref.reason : "(null)"));
  CHECK(ref.available == 1);
  CHECK(ref.accelerator_text == backend);
  CHECK(ref.index == 0);
  CHECK(ref.count >= 1);
  if (expect_env != nullptr && *expect_env != '\0') CHECK(ref.count == std::atoi(expect_env));
  CHECK(ref.backends >= 1);
  REQUIRE(ref.count <= kMaxDevices);
  for (int32_t d = 0; d < ref.count; ++d) {
    INFO("device " << d << ": " << ref.stream_error);
    CHECK(ref.stream_status[d] == ACCEL_SUCCESS);
    int32_t dev = -1;
    CHECK(accel_stream_device(ref.default_stream[d], &dev) == ACCEL_SUCCESS);
    CHECK(dev == d);
    for (int32_t e = 0; e < d; ++e) CHECK(ref.default_stream[d] != ref.default_stream[e]);
  }

  int mismatches = 0;
  for (int i = 1; i < kThreads; ++i) {
    const Answer& a = answers[static_cast<size_t>(i)];
    INFO("thread " << i << " (first call kind " << a.first_kind << ")");
    bool same = a.available == ref.available && a.accelerator == ref.accelerator &&
                a.accelerator_text == ref.accelerator_text && a.reason == ref.reason &&
                a.count == ref.count && a.index == ref.index && a.backends == ref.backends &&
                a.names == ref.names && a.paths == ref.paths && a.statuses == ref.statuses;
    for (int32_t d = 0; d < ref.count; ++d) {
      same = same && a.stream_status[d] == ACCEL_SUCCESS &&
             a.default_stream[d] == ref.default_stream[d];
    }
    if (!same) {
      ++mismatches;
      CHECK(a.available == ref.available);
      CHECK(a.accelerator == ref.accelerator);
      CHECK(a.accelerator_text == ref.accelerator_text);
      CHECK(a.reason == ref.reason);
      CHECK(a.count == ref.count);
      CHECK(a.index == ref.index);
      CHECK(a.backends == ref.backends);
      CHECK(a.names == ref.names);
      CHECK(a.paths == ref.paths);
      CHECK(a.statuses == ref.statuses);
      for (int32_t d = 0; d < ref.count; ++d) {
        INFO("device " << d << ": " << a.stream_error);
        CHECK(a.stream_status[d] == ACCEL_SUCCESS);
        CHECK(a.default_stream[d] == ref.default_stream[d]);
      }
    }
  }
  CHECK(mismatches == 0);

  // The core's log: one discovery, one lazy initialisation.
  INFO("core log during the race:\n" << log);
  CHECK(count_occurrences(log, "current accelerator:") == 1);
  CHECK(count_occurrences(log, std::string(backend) + ": initialised (") == 1);
}
