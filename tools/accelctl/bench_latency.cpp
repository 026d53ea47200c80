// bench_latency.cpp - `accelctl bench`'s latencies: event round trip, host
// function, kernel launch, allocation pairs (in this process and in a child
// running the other allocator), and the child's side of that.
#include <accel/accel.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "accel_kernels.h"
#include "bench.hpp"
#include "bench_util.hpp"

extern char** environ;

namespace accelctl {
namespace {

struct HostFnProbe {
  std::atomic<int64_t> ran_ns{0};
};
void host_fn_stamp(void* data) {
  static_cast<HostFnProbe*>(data)->ran_ns.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(),
      std::memory_order_release);
}

}  // namespace

// Record + synchronize of an event on an idle stream, microseconds.
double event_round_trip_us(int32_t device, accel_stream_t s, int reps) {
  Event ev;
  BENCH_TRY(accel_event_create(device, ACCEL_EVENT_DEFAULT, &ev.e));
  std::vector<double> us;
  for (int i = 0; i < reps + 5; ++i) {
    const auto t0 = Clock::now();
    BENCH_TRY(accel_event_record(ev.e, s));
    BENCH_TRY(accel_event_synchronize(ev.e));
    if (i >= 5) us.push_back(seconds_since(t0) * 1e6);  // the first 5 warm up
  }
  return median(us);
}

// accel_launch_host_func on an idle stream: enqueue to the function running
// (`start_us`) and to accel_stream_synchronize returning (`done_us`).
void host_func_us(accel_stream_t s, int reps, double& start_us, double& done_us) {
  HostFnProbe probe;
  std::vector<double> start, done;
  for (int i = 0; i < reps + 3; ++i) {
    const auto t0 = Clock::now();
    BENCH_TRY(accel_launch_host_func(s, host_fn_stamp, &probe));
    BENCH_TRY(accel_stream_synchronize(s));
    const double total = seconds_since(t0) * 1e6;
    const int64_t t0_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count();
    if (i < 3) continue;
    done.push_back(total);
    start.push_back(static_cast<double>(probe.ran_ns.load(std::memory_order_acquire) - t0_ns) /
                    1e3);
  }
  start_us = median(start);
  done_us = median(done);
}

// The `empty` kernel of kernels/ (the images accelctl carries): batches of
// launches then one stream synchronize. `launch_us`: a batch's whole time
// per launch (amortised launch + completion); `enqueue_us`: the launch calls
// alone per launch.
void kernel_launch_us(int32_t device, accel_stream_t s, bool quick, double& launch_us,
                      double& enqueue_us, double& load_ms) {
  accel_module_image_t images[8];
  const size_t count = accel_kernels_images(images, 8);
  ModuleHolder mod;
  const auto t_load = Clock::now();
  BENCH_TRY(accel_module_load(device, images, count, nullptr, &mod.m));
  load_ms = seconds_since(t_load) * 1e3;
  accel_kernel_t empty = nullptr;
  BENCH_TRY(accel_module_get_kernel(mod.m, "empty", &empty));
  accel_launch_config_t cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  cfg.grid = {1, 1, 1};
  cfg.block = {1, 1, 1};
  cfg.stream = s;
  const int per_batch = quick ? 20 : 100;
  const int batches = quick ? 5 : 21;
  for (int i = 0; i < 10; ++i) BENCH_TRY(accel_launch_kernel(empty, &cfg, nullptr, 0));
  BENCH_TRY(accel_stream_synchronize(s));
  std::vector<double> total, enq;
  for (int b = 0; b < batches; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < per_batch; ++i) BENCH_TRY(accel_launch_kernel(empty, &cfg, nullptr, 0));
    const double queued = seconds_since(t0);
    BENCH_TRY(accel_stream_synchronize(s));
    const double all = seconds_since(t0);
    total.push_back(all * 1e6 / per_batch);
    enq.push_back(queued * 1e6 / per_batch);
  }
  launch_us = median(total);
  enqueue_us = median(enq);
}

// An accel_malloc + accel_free pair of `bytes` with whichever allocator this
// process runs (ACCEL_ALLOC_CONF), median of batches, microseconds.
double alloc_pair_us(int32_t device, uint64_t bytes, bool quick) {
  const size_t kBytes = static_cast<size_t>(bytes);
  void* p = nullptr;
  BENCH_TRY(accel_malloc(device, kBytes, &p));  // warm-up: the first segment
  BENCH_TRY(accel_free(p));
  const int per_batch = quick ? 50 : 500;
  const int batches = quick ? 5 : 11;
  std::vector<double> us;
  for (int b = 0; b < batches; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < per_batch; ++i) {
      BENCH_TRY(accel_malloc(device, kBytes, &p));
      BENCH_TRY(accel_free(p));
    }
    us.push_back(seconds_since(t0) * 1e6 / per_batch);
  }
  return median(us);
}

// The allocator is chosen once per process (ACCEL_ALLOC_CONF, docs/memory.md;
// there is no per-call choice), so the other one is measured in a child: this
// program again with ACCEL_ALLOC_CONF=backend:<other> and the hidden
// --internal-alloc-probe flag, which prints the figure on stdout.
double alloc_pair_in_child(const char* self_exe, const std::string& backend, int32_t device,
                           uint64_t bytes, bool quick) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "ACCEL_ALLOC_CONF=", 17) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("ACCEL_ALLOC_CONF=backend:" + backend);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {"accelctl",
                                   "bench",
                                   "--internal-alloc-probe",
                                   "--device",
                                   std::to_string(device),
                                   "--max-bytes",
                                   std::to_string(bytes)};
  if (quick) args.emplace_back("--quick");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self_exe, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error(fmt::format("cannot start {} for the {} allocator: {}", self_exe,
                                         backend, std::strerror(rc)));
  }
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.rfind("error: ", 0) == 0) throw std::runtime_error(out.substr(7));
  char* end = nullptr;
  const double us = std::strtod(out.c_str(), &end);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || end == out.c_str() || !(us > 0))
    throw std::runtime_error(
        fmt::format("the {} allocator probe failed (exit status {}): '{}'", backend, status, out));
  return us;
}

int run_alloc_probe(int32_t device, uint64_t bytes, bool quick) {
  try {
    fmt::print("{:.4f}\n", alloc_pair_us(device < 0 ? 0 : device, bytes, quick));
    return 0;
  } catch (const std::exception& e) {
    fmt::print("error: {}\n", e.what());
    return 1;
  }
}

}  // namespace accelctl
