// checks.cpp - the selftest checks: each exercises one part of accel.h on one
// device, cleans up after itself on every path and reports PASS/FAIL/SKIP.
#include "checks.hpp"

#include <accel/accel.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "holders.hpp"
#include "info.hpp"

namespace accelctl {
namespace {

CheckResult pass(std::string detail) { return {true, false, std::move(detail)}; }
CheckResult fail(std::string detail) { return {false, false, std::move(detail)}; }
CheckResult skip(std::string detail) { return {true, true, std::move(detail)}; }

// Returns a FAIL result (with accel_last_error) from the enclosing check when
// an accel call does not succeed.
#define ACCELCTL_TRY(name, expr)                                                          \
  do {                                                                                    \
    const accel_status_t accelctl_st_ = (expr);                                           \
    if (accelctl_st_ != ACCEL_SUCCESS) return fail(failure_detail((name), accelctl_st_)); \
  } while (0)

// A NOT_SUPPORTED answer is a skip when the backend did not declare the
// capability, and a failure when it did. The skip says which call answered
// what (accel_last_error(), read right after the failing call).
CheckResult unsupported(const Context& ctx, uint32_t cap, const char* call, accel_status_t st,
                        const char* what) {
  if ((ctx.caps & cap) != 0)
    return fail(fmt::format("backend declares {} but {}", what, failure_detail(call, st)));
  return skip(fmt::format("backend has no {} ({}): not run", what, failure_detail(call, st)));
}

// Optional groups (events, memory) have no capability bit: a backend that
// leaves one out answers its first call with NOT_SUPPORTED, and the check
// is skipped with that answer.
CheckResult absent_group(const char* call, accel_status_t st, const char* what) {
  return skip(fmt::format("backend has no {} ({}): not run", what, failure_detail(call, st)));
}

// ---- RAII holders: cleanup on every early return --------------------------

// Device memory; freed after a device synchronize so no queued work uses it.
struct DeviceBuffer {
  int32_t device;
  void* p = nullptr;
  explicit DeviceBuffer(int32_t dev) : device(dev) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p != nullptr) {
      accel_synchronize(device);
      accel_free(p);
    }
  }
};

// Runs a function when leaving the scope.
template <class F>
struct OnExit {
  F f;
  explicit OnExit(F fn) : f(std::move(fn)) {}
  OnExit(const OnExit&) = delete;
  OnExit& operator=(const OnExit&) = delete;
  ~OnExit() { f(); }
};

// ---- host functions --------------------------------------------------------

void sleep_ms_fn(void* user_data) {
  const auto ms = *static_cast<const int*>(user_data);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Blocks the stream until opened (or 10 s passed, so nothing hangs for ever).
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      std::lock_guard<std::mutex> lock(m);
      open = true;
    }
    cv.notify_all();
  }
};

void gate_fn(void* user_data) {
  auto* g = static_cast<Gate*>(user_data);
  std::unique_lock<std::mutex> lock(g->m);
  g->cv.wait_for(lock, std::chrono::seconds(10), [g] { return g->open; });
}

struct OrderLog {
  std::mutex m;
  std::vector<int> seen;
};

struct OrderStep {
  OrderLog* log;
  int value;
  int sleep_ms;
};

void order_fn(void* user_data) {
  const auto* step = static_cast<const OrderStep*>(user_data);
  if (step->sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step->sleep_ms));
  std::lock_guard<std::mutex> lock(step->log->m);
  step->log->seen.push_back(step->value);
}

struct DoneFlag {
  std::atomic<bool> done{false};
  int sleep_ms = 15;
};

void done_fn(void* user_data) {
  auto* flag = static_cast<DoneFlag*>(user_data);
  std::this_thread::sleep_for(std::chrono::milliseconds(flag->sleep_ms));
  flag->done.store(true);
}

// ---- checks ----------------------------------------------------------------

CheckResult check_device_guard(const Context& ctx) {
  const int32_t before = accel_current_device_index();
  OnExit restore([before] { accel_set_device_index(before); });
  int32_t prev = -2;
  ACCELCTL_TRY("accel_exchange_device", accel_exchange_device(ctx.device, &prev));
  if (prev != before)
    return fail(fmt::format("exchange returned {} as previous, but {} was current", prev, before));
  const int32_t now = accel_current_device_index();
  if (now != ctx.device)
    return fail(fmt::format("after exchange to {} the current device is {}", ctx.device, now));
  int32_t peek = -2;
  ACCELCTL_TRY("accel_exchange_device(-1)", accel_exchange_device(-1, &peek));
  if (peek != ctx.device || accel_current_device_index() != ctx.device)
    return fail(fmt::format("exchange(-1) returned {} / changed the device (expected {})", peek,
                            ctx.device));
  int32_t back = -2;
  ACCELCTL_TRY("accel_exchange_device", accel_exchange_device(prev, &back));
  if (back != ctx.device)
    return fail(
        fmt::format("exchange back returned {} as previous, expected {}", back, ctx.device));
  const int32_t restored = accel_current_device_index();
  if (restored != prev)
    return fail(
        fmt::format("after exchange back the current device is {}, expected {}", restored, prev));
  return pass(fmt::format("{} -> {} -> {}", before, ctx.device, restored));
}

CheckResult check_stream(const Context& ctx) {
  int32_t least = 0, greatest = 0;
  ACCELCTL_TRY("accel_stream_priority_range",
               accel_stream_priority_range(ctx.device, &least, &greatest));
  if (!(greatest <= 0 && 0 <= least))
    return fail(
        fmt::format("priority range least={} greatest={} does not contain 0", least, greatest));
  Stream st;
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, greatest, &st.s));
  int32_t sdev = -1, prio = 0;
  ACCELCTL_TRY("accel_stream_device", accel_stream_device(st.s, &sdev));
  if (sdev != ctx.device)
    return fail(fmt::format("stream reports device {}, created on {}", sdev, ctx.device));
  ACCELCTL_TRY("accel_stream_priority", accel_stream_priority(st.s, &prio));
  if (prio < greatest || prio > least)
    return fail(fmt::format("stream priority {} outside range [{}, {}]", prio, greatest, least));
  const accel_status_t q = accel_stream_query(st.s);
  if (q != ACCEL_SUCCESS && q != ACCEL_ERROR_NOT_READY)
    return fail(failure_detail("accel_stream_query", q));
  ACCELCTL_TRY("accel_stream_synchronize", accel_stream_synchronize(st.s));
  ACCELCTL_TRY("accel_stream_query (after synchronize)", accel_stream_query(st.s));
  const accel_status_t d = accel_stream_destroy(st.s);
  st.s = nullptr;
  if (d != ACCEL_SUCCESS) return fail(failure_detail("accel_stream_destroy", d));

  accel_stream_t def = nullptr;
  ACCELCTL_TRY("accel_current_stream", accel_current_stream(ctx.device, &def));
  if (def == nullptr) return fail("accel_current_stream returned a NULL default stream");
  const accel_status_t dd = accel_stream_destroy(def);
  if (dd != ACCEL_ERROR_INVALID_ARGUMENT)
    return fail(fmt::format("destroying the default stream gave {}, expected {}",
                            accel_status_name(dd),
                            accel_status_name(ACCEL_ERROR_INVALID_ARGUMENT)));
  return pass(fmt::format("priority {} in range [{}, {}]; default stream refuses destroy", prio,
                          greatest, least));
}

CheckResult check_set_stream(const Context& ctx) {
  const int32_t orig_dev = accel_current_device_index();
  accel_stream_t orig_stream = nullptr;
  ACCELCTL_TRY("accel_current_stream", accel_current_stream(ctx.device, &orig_stream));
  Stream st;
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, 0, &st.s));
  // Declared after `st`, so it runs first: the stream must not stay current
  // when it is destroyed.
  OnExit restore([&] {
    accel_set_stream(orig_stream);
    accel_set_device_index(orig_dev);
  });
  // Start from another device when there is one, so the switch is visible.
  const int32_t other = ctx.count > 1 ? (ctx.device + 1) % ctx.count : ctx.device;
  ACCELCTL_TRY("accel_set_device_index", accel_set_device_index(other));
  ACCELCTL_TRY("accel_set_stream", accel_set_stream(st.s));
  const int32_t now = accel_current_device_index();
  if (now != ctx.device)
    return fail(fmt::format("set_stream left device {} current, expected the stream's device {}",
                            now, ctx.device));
  accel_stream_t cur = nullptr;
  ACCELCTL_TRY("accel_current_stream(-1)", accel_current_stream(-1, &cur));
  if (cur != st.s) return fail("current_stream(-1) does not return the stream just set");
  ACCELCTL_TRY("accel_current_stream", accel_current_stream(ctx.device, &cur));
  if (cur != st.s) return fail("current_stream(device) does not return the stream just set");
  ACCELCTL_TRY("accel_set_stream (restore)", accel_set_stream(orig_stream));
  ACCELCTL_TRY("accel_current_stream", accel_current_stream(ctx.device, &cur));
  if (cur != orig_stream) return fail("restoring the original stream did not take effect");
  return pass(
      fmt::format("device {} -> {} by set_stream; current_stream returns it", other, ctx.device));
}

CheckResult check_event_timing(const Context& ctx) {
  Event start, end;
  accel_status_t st = accel_event_create(ctx.device, ACCEL_EVENT_ENABLE_TIMING, &start.e);
  if (st == ACCEL_ERROR_NOT_SUPPORTED)
    return unsupported(ctx, ACCEL_CAP_TIMING_EVENTS, "accel_event_create", st, "timing events");
  if (st != ACCEL_SUCCESS) return fail(failure_detail("accel_event_create", st));
  ACCELCTL_TRY("accel_event_create",
               accel_event_create(ctx.device, ACCEL_EVENT_ENABLE_TIMING, &end.e));
  Stream s;
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, 0, &s.s));
  static const int kSleepMs = 20;
  ACCELCTL_TRY("accel_event_record", accel_event_record(start.e, s.s));
  st = accel_launch_host_func(s.s, sleep_ms_fn, const_cast<int*>(&kSleepMs));
  const bool slept = st == ACCEL_SUCCESS;
  if (!slept && st != ACCEL_ERROR_NOT_SUPPORTED)
    return fail(failure_detail("accel_launch_host_func", st));
  if (!slept && (ctx.caps & ACCEL_CAP_HOST_FUNCTIONS) != 0)
    return fail(fmt::format("backend declares host functions but {}",
                            failure_detail("accel_launch_host_func", st)));
  ACCELCTL_TRY("accel_event_record", accel_event_record(end.e, s.s));
  ACCELCTL_TRY("accel_event_synchronize", accel_event_synchronize(end.e));
  float ms = -1.0f;
  ACCELCTL_TRY("accel_event_elapsed_time", accel_event_elapsed_time(start.e, end.e, &ms));
  if (!slept) {
    if (ms < 0.0f) return fail(fmt::format("elapsed time {:.3f} ms is negative", ms));
    return pass(fmt::format("elapsed {:.3f} ms (no host functions: lower bound not checked)", ms));
  }
  if (ms < kSleepMs - 1.0f)
    return fail(fmt::format("elapsed {:.3f} ms around a {} ms host function, expected >= {} ms", ms,
                            kSleepMs, kSleepMs - 1));
  return pass(fmt::format("elapsed {:.3f} ms around a {} ms host function", ms, kSleepMs));
}

CheckResult check_event_query(const Context& ctx) {
  Event ev;
  const accel_status_t created = accel_event_create(ctx.device, ACCEL_EVENT_DEFAULT, &ev.e);
  if (created == ACCEL_ERROR_NOT_SUPPORTED)
    return absent_group("accel_event_create", created, "events");
  if (created != ACCEL_SUCCESS) return fail(failure_detail("accel_event_create", created));
  ACCELCTL_TRY("accel_event_query (never recorded)", accel_event_query(ev.e));
  ACCELCTL_TRY("accel_event_synchronize (never recorded)", accel_event_synchronize(ev.e));
  Gate gate;
  Stream s;
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, 0, &s.s));
  OnExit open_gate([&gate] { gate.release(); });  // runs before `s` syncs
  const accel_status_t st = accel_launch_host_func(s.s, gate_fn, &gate);
  const bool gated = st == ACCEL_SUCCESS;
  if (!gated && st != ACCEL_ERROR_NOT_SUPPORTED)
    return fail(failure_detail("accel_launch_host_func", st));
  ACCELCTL_TRY("accel_event_record", accel_event_record(ev.e, s.s));
  if (gated) {
    const accel_status_t q = accel_event_query(ev.e);
    if (q != ACCEL_ERROR_NOT_READY)
      return fail(fmt::format(
          "query of an event behind a blocked host function gave {}, "
          "expected ACCEL_ERROR_NOT_READY{}",
          accel_status_name(q), q == ACCEL_SUCCESS ? "" : ": " + std::string(accel_last_error())));
    gate.release();
  }
  ACCELCTL_TRY("accel_event_synchronize", accel_event_synchronize(ev.e));
  ACCELCTL_TRY("accel_event_query (after synchronize)", accel_event_query(ev.e));
  return pass(gated ? "never-recorded: complete; pending: NOT_READY; after synchronize: complete"
                    : "never-recorded: complete; after synchronize: complete "
                      "(no host functions: pending state not checked)");
}

CheckResult check_memory_roundtrip(const Context& ctx) {
  constexpr size_t kBytes = size_t{1} << 20;
  constexpr size_t kHalf = kBytes / 2;
  constexpr unsigned char kFill = 0x5a;
  std::vector<unsigned char> src(kBytes), dst(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i)
    src[i] = static_cast<unsigned char>((i * 131u + 7u + static_cast<size_t>(ctx.device)) & 0xffu);
  Stream s;
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, 0, &s.s));
  DeviceBuffer a(ctx.device), b(ctx.device);
  const accel_status_t alloc = accel_malloc(ctx.device, kBytes, &a.p);
  if (alloc == ACCEL_ERROR_NOT_SUPPORTED)
    return absent_group("accel_malloc", alloc, "device memory");
  if (alloc != ACCEL_SUCCESS) return fail(failure_detail("accel_malloc", alloc));
  ACCELCTL_TRY("accel_malloc", accel_malloc(ctx.device, kBytes, &b.p));
  ACCELCTL_TRY("accel_memcpy_async(H2D)",
               accel_memcpy_async(a.p, src.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s.s));
  ACCELCTL_TRY("accel_memset_async", accel_memset_async(b.p, kFill, kBytes, s.s));
  ACCELCTL_TRY("accel_memcpy_async(D2D)",
               accel_memcpy_async(b.p, a.p, kHalf, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s.s));
  ACCELCTL_TRY("accel_memcpy_async(D2H)",
               accel_memcpy_async(dst.data(), b.p, kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s.s));
  ACCELCTL_TRY("accel_stream_synchronize", accel_stream_synchronize(s.s));
  for (size_t i = 0; i < kBytes; ++i) {
    const unsigned char want = i < kHalf ? src[i] : kFill;
    if (dst[i] != want)
      return fail(fmt::format("byte {} is 0x{:02x}, expected 0x{:02x} ({})", i, dst[i], want,
                              i < kHalf ? "copied pattern" : "memset value"));
  }
  return pass(fmt::format("{} bytes H2D, memset, D2D ({} bytes), D2H: byte-exact", kBytes, kHalf));
}

CheckResult check_memory_stats(const Context& ctx) {
  constexpr size_t kBytes = size_t{1} << 20;
  accel_memory_stats_t before{}, during{}, after{};
  before.struct_size = during.struct_size = after.struct_size = sizeof(accel_memory_stats_t);
  ACCELCTL_TRY("accel_memory_stats", accel_memory_stats(ctx.device, &before));
  DeviceBuffer buf(ctx.device);
  const accel_status_t alloc = accel_malloc(ctx.device, kBytes, &buf.p);
  if (alloc == ACCEL_ERROR_NOT_SUPPORTED)
    return absent_group("accel_malloc", alloc, "device memory");
  if (alloc != ACCEL_SUCCESS) return fail(failure_detail("accel_malloc", alloc));
  ACCELCTL_TRY("accel_memory_stats", accel_memory_stats(ctx.device, &during));
  const accel_status_t fs = accel_free(buf.p);
  buf.p = nullptr;
  if (fs != ACCEL_SUCCESS) return fail(failure_detail("accel_free", fs));
  ACCELCTL_TRY("accel_memory_stats", accel_memory_stats(ctx.device, &after));
  if (during.allocated_bytes < before.allocated_bytes + kBytes)
    return fail(fmt::format("allocated {} -> {} bytes after a {} byte allocation",
                            before.allocated_bytes, during.allocated_bytes, kBytes));
  if (during.peak_allocated_bytes < during.allocated_bytes)
    return fail(fmt::format("peak {} below allocated {}", during.peak_allocated_bytes,
                            during.allocated_bytes));
  if (during.allocation_count != before.allocation_count + 1 ||
      during.total_allocations != before.total_allocations + 1)
    return fail(fmt::format("allocation counts {}/{} -> {}/{} (live/total), expected +1",
                            before.allocation_count, before.total_allocations,
                            during.allocation_count, during.total_allocations));
  if (after.allocated_bytes != before.allocated_bytes ||
      after.allocation_count != before.allocation_count)
    return fail(fmt::format("after free: allocated {} bytes in {} blocks, expected {} in {}",
                            after.allocated_bytes, after.allocation_count, before.allocated_bytes,
                            before.allocation_count));
  return pass(fmt::format("allocated {} -> {} -> {} bytes, peak {}", before.allocated_bytes,
                          during.allocated_bytes, after.allocated_bytes,
                          during.peak_allocated_bytes));
}

CheckResult check_host_order(const Context& ctx) {
  OrderLog log;
  // The first step sleeps, so a backend that runs them concurrently shows it.
  OrderStep steps[] = {{&log, 1, 10}, {&log, 2, 0}, {&log, 3, 0}};
  Stream s;
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, 0, &s.s));
  for (auto& step : steps) {
    const accel_status_t st = accel_launch_host_func(s.s, order_fn, &step);
    if (st == ACCEL_ERROR_NOT_SUPPORTED)
      return unsupported(ctx, ACCEL_CAP_HOST_FUNCTIONS, "accel_launch_host_func", st,
                         "host functions");
    if (st != ACCEL_SUCCESS) return fail(failure_detail("accel_launch_host_func", st));
  }
  ACCELCTL_TRY("accel_stream_synchronize", accel_stream_synchronize(s.s));
  std::vector<int> seen;
  {
    std::lock_guard<std::mutex> lock(log.m);
    seen = log.seen;
  }
  std::string order;
  for (int v : seen) order += (order.empty() ? "" : ",") + std::to_string(v);
  if (seen != std::vector<int>{1, 2, 3})
    return fail(fmt::format("host functions ran as [{}], expected [1,2,3]", order));
  return pass(fmt::format("ran in order [{}] before stream synchronize returned", order));
}

CheckResult check_synchronize(const Context& ctx) {
  DoneFlag f1, f2;
  Stream s1, s2;
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, 0, &s1.s));
  ACCELCTL_TRY("accel_stream_create", accel_stream_create(ctx.device, 0, &s2.s));
  accel_status_t st = accel_launch_host_func(s1.s, done_fn, &f1);
  const bool hosted = st == ACCEL_SUCCESS;
  if (!hosted && st != ACCEL_ERROR_NOT_SUPPORTED)
    return fail(failure_detail("accel_launch_host_func", st));
  if (hosted) ACCELCTL_TRY("accel_launch_host_func", accel_launch_host_func(s2.s, done_fn, &f2));
  ACCELCTL_TRY("accel_synchronize", accel_synchronize(ctx.device));
  if (hosted && !(f1.done.load() && f2.done.load()))
    return fail("accel_synchronize returned before the host functions on two streams finished");
  return pass(hosted ? "waited for work on two streams"
                     : "returned (no host functions: waiting not observed)");
}

}  // namespace

const std::vector<NamedCheck>& selftest_checks() {
  static const std::vector<NamedCheck> kChecks = {
      {"device guard", check_device_guard},
      {"stream create/query/destroy", check_stream},
      {"set_stream / current_stream", check_set_stream},
      {"event timing", check_event_timing},
      {"event query/synchronize", check_event_query},
      {"memory round-trip", check_memory_roundtrip},
      {"memory stats", check_memory_stats},
      {"host function order", check_host_order},
      {"synchronize", check_synchronize},
      {"kernels", check_kernels},
      {"graphs", check_graphs},
  };
  return kChecks;
}

}  // namespace accelctl
