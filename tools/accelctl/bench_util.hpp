// bench_util.hpp - what bench.cpp and bench_latency.cpp share: the clock,
// accel failures as exceptions (status kept), medians, RAII holders, and the
// latency measurements bench_latency.cpp defines. Internal to accelctl.
#pragma once

#include <accel/accel.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "holders.hpp"
#include <vector>

#include "info.hpp"

namespace accelctl {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// An accel call that did not succeed: failure_detail's text (call, status
// name, message, accel_last_error) and the status, so NOT_SUPPORTED can be
// told from a failure.
struct AccelError : std::runtime_error {
  accel_status_t status;
  std::string last_error;  // accel_last_error() alone: the short reason for a note
  AccelError(const char* call, accel_status_t st)
      : std::runtime_error(failure_detail(call, st)),
        status(st),
        last_error(accel_last_error() != nullptr ? accel_last_error() : "") {}
  // "n/a: <accel_last_error()>" (or the whole detail when it is empty).
  std::string not_available() const {
    return "n/a: " + (last_error.empty() ? std::string(what()) : last_error);
  }
};

// Throws AccelError when an accel call does not succeed.
#define BENCH_TRY(expr)                                                 \
  do {                                                                  \
    const accel_status_t bench_st_ = (expr);                            \
    if (bench_st_ != ACCEL_SUCCESS) throw AccelError(#expr, bench_st_); \
  } while (0)

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---- RAII holders (Stream and Event are in holders.hpp) ----------------------

struct DeviceBuffer {
  void* p = nullptr;
  uint64_t bytes = 0;
  ~DeviceBuffer() { accel_free(p); }
};
struct PinnedBuffer {
  void* p = nullptr;
  ~PinnedBuffer() { accel_host_free(p); }
};
struct ModuleHolder {
  accel_module_t m = nullptr;
  ~ModuleHolder() {
    if (m != nullptr) accel_module_unload(m);
  }
};

// ---- latencies (bench_latency.cpp); each throws AccelError on a failure ----

// accel_event_record + accel_event_synchronize of an event on the idle
// stream `s` of `device`: median microseconds over `reps`.
double event_round_trip_us(int32_t device, accel_stream_t s, int reps);

// accel_launch_host_func on the idle stream `s`: median microseconds from
// the enqueue to the function starting (`start_us`) and to
// accel_stream_synchronize returning (`done_us`).
void host_func_us(accel_stream_t s, int reps, double& start_us, double& done_us);

// The `empty` kernel of kernels/ on `s`, in batches of launches then one
// synchronize: `launch_us` the batch's time per launch, `enqueue_us` the
// launch calls' alone, `load_ms` the module load. NOT_SUPPORTED from
// accel_module_load: no modules, or no image accelctl carries fits.
void kernel_launch_us(int32_t device, accel_stream_t s, bool quick, double& launch_us,
                      double& enqueue_us, double& load_ms);

// An accel_malloc + accel_free pair of `bytes` with this process's allocator:
// median microseconds of batches.
double alloc_pair_us(int32_t device, uint64_t bytes, bool quick);

// The same measured by `self_exe bench --internal-alloc-probe` run with
// ACCEL_ALLOC_CONF=backend:<backend> (the allocator is chosen once per
// process). Throws std::runtime_error when the child fails.
double alloc_pair_in_child(const char* self_exe, const std::string& backend, int32_t device,
                           uint64_t bytes, bool quick);

}  // namespace accelctl
