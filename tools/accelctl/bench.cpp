// bench.cpp - `accelctl bench`'s measurements: copy bandwidth per direction
// over doubling sizes on each device of the current accelerator, and the
// latencies bench_latency.cpp measures.
// Every accel failure is caught and kept with its status name and detail: a
// failed series stops, the others still run.
#include "bench.hpp"

#include <accel/accel.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "info.hpp"

namespace accelctl {
namespace {

// Repetitions: each is one batch of `inner` copies between two timestamps
// (small copies are batched so the timer's resolution and the per-call cost
// do not decide the figure, as CUDA's bandwidthTest does); the figure is the
// median batch. Quick asks for less of both.
struct RepPlan {
  int reps;
  int inner;
};
RepPlan plan_for(uint64_t bytes, bool quick) {
  const uint64_t batch_target = quick ? (uint64_t{1} << 20) : (uint64_t{8} << 20);
  const uint64_t inner = std::clamp<uint64_t>(batch_target / bytes, 1, quick ? 16 : 100);
  const bool large = bytes >= (uint64_t{64} << 20);
  const int reps = quick ? (large ? 2 : 3) : (large ? 5 : 9);
  return {reps, static_cast<int>(inner)};
}

// Times batches of copies on one stream: with a pair of timing events around
// the batch where the backend has them, else steady_clock around the batch
// and a stream synchronize.
class CopyTimer {
 public:
  CopyTimer(int32_t device, accel_stream_t stream, bool events) : stream_(stream) {
    if (events) {
      BENCH_TRY(accel_event_create(device, ACCEL_EVENT_ENABLE_TIMING, &start_.e));
      BENCH_TRY(accel_event_create(device, ACCEL_EVENT_ENABLE_TIMING, &end_.e));
    }
  }
  // Seconds one batch of `inner` copies took.
  double batch_seconds(const std::function<void()>& copy, int inner) {
    if (start_.e != nullptr) {
      BENCH_TRY(accel_event_record(start_.e, stream_));
      for (int i = 0; i < inner; ++i) copy();
      BENCH_TRY(accel_event_record(end_.e, stream_));
      BENCH_TRY(accel_event_synchronize(end_.e));
      float ms = 0;
      BENCH_TRY(accel_event_elapsed_time(start_.e, end_.e, &ms));
      return static_cast<double>(ms) / 1e3;
    }
    BENCH_TRY(accel_stream_synchronize(stream_));
    const auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) copy();
    BENCH_TRY(accel_stream_synchronize(stream_));
    return seconds_since(t0);
  }

 private:
  accel_stream_t stream_;
  Event start_, end_;
};

// One series: every size up to `limit` (the others are noted as skipped by
// the caller); stops at the first failure, keeping it in series.error.
void measure_series(Series& series, const std::vector<uint64_t>& sizes, uint64_t limit, bool quick,
                    CopyTimer& timer, const std::function<void(uint64_t)>& copy_of_size) {
  try {
    // Warm-up: one copy of the largest size touches every page and does any
    // lazy set-up; quick stops there, the full run warms up every size too.
    uint64_t largest = 0;
    for (uint64_t bytes : sizes)
      if (bytes <= limit) largest = bytes;
    if (largest != 0) timer.batch_seconds([&] { copy_of_size(largest); }, 1);
    for (uint64_t bytes : sizes) {
      if (bytes > limit) break;
      const RepPlan plan = plan_for(bytes, quick);
      const auto copy = [&] { copy_of_size(bytes); };
      if (!quick) timer.batch_seconds(copy, 1);
      std::vector<double> gbps;
      for (int r = 0; r < plan.reps; ++r) {
        double s = timer.batch_seconds(copy, plan.inner);
        // A batch below the timer's resolution: time it again, longer.
        for (int extra = plan.inner; s <= 0 && extra < (1 << 16); extra *= 4)
          s = timer.batch_seconds(copy, extra) * plan.inner / extra;
        if (s <= 0) throw std::runtime_error("copies too short for the timer to measure");
        gbps.push_back(static_cast<double>(bytes) * plan.inner / s / 1e9);
      }
      series.points.push_back({bytes, median(gbps), plan.reps});
    }
  } catch (const std::exception& e) {
    series.error = e.what();
  }
}

// The host's own memcpy over the same sizes, batched and timed the way the
// copies are (steady_clock around the batch): the ceiling every copy on a
// CPU device is read against. Two pageable buffers of the largest size,
// touched first so page faults are not timed, freed before the devices run.
void measure_host_memcpy(Series& series, const std::vector<uint64_t>& sizes, bool quick) {
  series.key = "host_memcpy";
  series.label = "host memcpy";
  if (sizes.empty()) return;
  try {
    const uint64_t largest = sizes.back();
    std::unique_ptr<unsigned char[]> a(new unsigned char[largest]);
    std::unique_ptr<unsigned char[]> b(new unsigned char[largest]);
    std::memset(a.get(), 1, largest);
    std::memset(b.get(), 2, largest);
    unsigned sink = 0;
    const auto batch = [&](uint64_t bytes, int inner) {
      const auto t0 = Clock::now();
      for (int i = 0; i < inner; ++i) {
        std::memcpy(b.get(), a.get(), bytes);
        sink += b[bytes - 1 - (i % 64)];  // keeps each copy observable
      }
      return seconds_since(t0);
    };
    for (uint64_t bytes : sizes) {
      const RepPlan plan = plan_for(bytes, quick);
      batch(bytes, 1);
      std::vector<double> gbps;
      for (int r = 0; r < plan.reps; ++r) {
        double s = batch(bytes, plan.inner);
        for (int extra = plan.inner; s <= 0 && extra < (1 << 16); extra *= 4)
          s = batch(bytes, extra) * plan.inner / extra;
        if (s <= 0) throw std::runtime_error("copies too short for the timer to measure");
        gbps.push_back(static_cast<double>(bytes) * plan.inner / s / 1e9);
      }
      series.points.push_back({bytes, median(gbps), plan.reps});
    }
    volatile unsigned observed = sink;  // the reads above are not dead
    (void)observed;
  } catch (const std::bad_alloc&) {
    series.error = fmt::format("no host memory for two buffers of {}", size_text(sizes.back()));
  } catch (const std::exception& e) {
    series.error = e.what();
  }
}

// ---- latencies -------------------------------------------------------------

Latency& add_latency(DeviceBench& d, const char* key, const char* label) {
  d.latencies.push_back({key, label, std::nullopt, "", ""});
  return d.latencies.back();
}

// Runs `body`, storing NOT_SUPPORTED as a note and any other failure as an
// error of the latency.
void guarded(Latency& lat, const std::function<void()>& body) {
  try {
    body();
  } catch (const AccelError& e) {
    if (e.status == ACCEL_ERROR_NOT_SUPPORTED)
      lat.note = e.not_available();
    else
      lat.error = e.what();
  } catch (const std::exception& e) {
    lat.error = e.what();
  }
}

// ---- one device ------------------------------------------------------------

// Device memory for copies: two buffers of the largest size asked for that
// fits in half the free memory, halved again while accel_malloc answers
// OUT_OF_MEMORY. Sizes above the result are noted as skipped.
// `why` says why the result is below `want`.
uint64_t allocate_pair(int32_t device, uint64_t want, std::optional<uint64_t> free_bytes,
                       DeviceBuffer& a, DeviceBuffer* b, std::string& why) {
  uint64_t bytes = want;
  const int buffers = b != nullptr ? 2 : 1;
  while (free_bytes && bytes > 4096 && bytes * buffers > *free_bytes / 2) bytes /= 2;
  if (bytes < want)
    why = fmt::format("{} buffer{} of {} do not fit in half the free memory of device {} ({})",
                      buffers, buffers == 1 ? "" : "s", size_text(want), device,
                      size_text(free_bytes.value_or(0)));
  for (;;) {
    accel_status_t st = accel_malloc(device, bytes, &a.p);
    if (st == ACCEL_SUCCESS && b != nullptr) {
      st = accel_malloc(device, bytes, &b->p);
      if (st != ACCEL_SUCCESS) {
        accel_free(a.p);
        a.p = nullptr;
      }
    }
    if (st == ACCEL_SUCCESS) break;
    if (st != ACCEL_ERROR_OUT_OF_MEMORY || bytes <= 4096) throw AccelError("accel_malloc", st);
    why = fmt::format("accel_malloc of {} on device {} answered {}", size_text(bytes), device,
                      accel_status_name(st));
    bytes /= 2;
  }
  a.bytes = bytes;
  if (b != nullptr) b->bytes = bytes;
  return bytes;
}

// "skipped sizes: 256 MiB, 128 MiB: <why>" for the sizes above `limit`.
void note_skipped(DeviceBench& d, const std::vector<uint64_t>& sizes, uint64_t limit,
                  const char* prefix, const std::string& why) {
  std::string list;
  for (uint64_t bytes : sizes)
    if (bytes > limit) list += (list.empty() ? "" : ", ") + size_text(bytes);
  if (!list.empty()) d.notes.push_back(fmt::format("{}sizes skipped: {}: {}", prefix, list, why));
}

// Free and total memory of the device, where the backend can tell.
void read_memory_info(DeviceBench& d) {
  size_t free_b = 0, total_b = 0;
  const accel_status_t mst = accel_mem_get_info(d.index, &free_b, &total_b);
  if (mst == ACCEL_SUCCESS) {
    d.free_bytes = free_b;
    d.total_bytes = total_b;
  } else if (mst != ACCEL_ERROR_NOT_SUPPORTED) {
    throw AccelError("accel_mem_get_info", mst);
  }
}

// Where one device's copies run: its stream and timer, two device buffers of
// `limit` bytes, the sizes to measure; add() appends a series to d.series
// (reserved beforehand, so the references it returns stay valid).
struct CopyBench {
  DeviceBench& d;
  const std::vector<uint64_t>& sizes;
  bool quick;
  int32_t dev;
  accel_stream_t s;
  CopyTimer& timer;
  DeviceBuffer& src;
  DeviceBuffer& dst;
  uint64_t limit;

  Series& add(const char* key, const char* label) const {
    d.series.push_back({key, label, {}, ""});
    return d.series.back();
  }
  void measure(Series& series, uint64_t max_bytes,
               const std::function<void(uint64_t)>& copy_of_size) const {
    measure_series(series, sizes, max_bytes, quick, timer, copy_of_size);
  }
  std::function<void(uint64_t)> h2d(void* host) const {
    return [this, host](uint64_t n) {
      BENCH_TRY(accel_memcpy_async(dst.p, host, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    };
  }
  std::function<void(uint64_t)> d2h(void* host) const {
    return [this, host](uint64_t n) {
      BENCH_TRY(accel_memcpy_async(host, src.p, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    };
  }
};

// H2D and D2H from page-locked host memory, which `pinned` keeps until the
// caller returns; a backend without it gets a note, a failure an error on
// both series.
void measure_pinned_copies(const CopyBench& c, PinnedBuffer& pinned) {
  const accel_status_t pst = accel_host_malloc(c.limit, 0, &pinned.p);
  if (pst == ACCEL_SUCCESS) {
    std::memset(pinned.p, 1, c.limit);
    c.measure(c.add("h2d_pinned", "H2D pinned"), c.limit, c.h2d(pinned.p));
    c.measure(c.add("d2h_pinned", "D2H pinned"), c.limit, c.d2h(pinned.p));
  } else if (pst == ACCEL_ERROR_NOT_SUPPORTED) {
    c.d.notes.push_back("pinned: " + AccelError("accel_host_malloc", pst).not_available());
  } else {
    c.add("h2d_pinned", "H2D pinned").error = failure_detail("accel_host_malloc", pst);
    c.add("d2h_pinned", "D2H pinned").error = failure_detail("accel_host_malloc", pst);
  }
}

// This device to the next (accel_memcpy_peer_async), direct where the
// backend can reach the peer's memory, else staged; a note with one device.
void measure_peer_copies(const CopyBench& c, int32_t count) {
  DeviceBench& d = c.d;
  const int32_t dev = c.dev;
  if (count < 2) {
    d.notes.push_back("peer: n/a: one device");
    return;
  }
  const int32_t peer = (dev + 1) % count;
  DeviceBuffer far;
  try {
    int32_t can = 0;
    BENCH_TRY(accel_device_can_access_peer(dev, peer, &can));
    if (can != 0) BENCH_TRY(accel_device_enable_peer_access(dev, peer));
    size_t pfree = 0;
    std::optional<uint64_t> peer_free;
    if (accel_mem_get_info(peer, &pfree, nullptr) == ACCEL_SUCCESS) peer_free = pfree;
    std::string pwhy;
    const uint64_t plimit = allocate_pair(peer, c.limit, peer_free, far, nullptr, pwhy);
    note_skipped(d, c.sizes, plimit, "peer: ", pwhy);
    d.peer_device = peer;
    d.peer_access = can != 0 ? "direct" : "staged";
    Series& ps = c.add("peer", "peer");
    ps.label = fmt::format("peer {}->{}", dev, peer);
    c.measure(ps, plimit, [&](uint64_t n) {
      BENCH_TRY(accel_memcpy_peer_async(far.p, peer, c.src.p, dev, n, c.s));
    });
  } catch (const AccelError& e) {
    if (e.status == ACCEL_ERROR_NOT_SUPPORTED)
      d.notes.push_back("peer: " + e.not_available());
    else
      c.add("peer", "peer").error = e.what();
  }
  BENCH_TRY(accel_stream_synchronize(c.s));
  accel_free(far.p);
  far.p = nullptr;
  // The cache would keep the peer's buffer reserved: the peer's own run
  // (next) would see less free memory.
  accel_empty_cache(peer);
}

// Event, host function and kernel latencies on the idle stream `s`.
// References into d.latencies are held across add_latency calls: reserved,
// no reallocation.
void measure_stream_latencies(DeviceBench& d, int32_t dev, accel_stream_t s, bool quick) {
  d.latencies.reserve(8);
  const int lat_reps = quick ? 50 : 500;
  Latency& ev = add_latency(d, "event_round_trip", "event record + synchronize");
  guarded(ev, [&] { ev.us = event_round_trip_us(dev, s, lat_reps); });
  Latency& hf_start = add_latency(d, "host_func_start", "host function: enqueue to start");
  Latency& hf = add_latency(d, "host_func", "host function: enqueue to completion");
  guarded(hf, [&] {
    double a = 0, b = 0;
    host_func_us(s, quick ? 30 : 200, a, b);
    hf_start.us = a;
    hf.us = b;
  });
  hf_start.note = hf.note;
  hf_start.error = hf.error;
  Latency& kl = add_latency(d, "kernel_launch", "kernel launch + completion (amortised)");
  Latency& ke = add_latency(d, "kernel_enqueue", "kernel launch call (enqueue only)");
  guarded(kl, [&] {
    double a = 0, b = 0, load_ms = 0;
    kernel_launch_us(dev, s, quick, a, b, load_ms);
    kl.us = a;
    ke.us = b;
    d.notes.push_back(fmt::format("kernel: the module of kernels/ loaded in {:.1f} ms", load_ms));
  });
  ke.note = kl.note;
  ke.error = kl.error;
}

// An accel_malloc + accel_free pair with this process's allocator, and with
// the other one in a child accelctl (self_exe).
void measure_alloc_latencies(DeviceBench& d, int32_t dev, uint64_t limit, bool quick,
                             const char* self_exe) {
  // 1 MiB, or less where the device memory is that small.
  const uint64_t alloc_bytes = std::min<uint64_t>(uint64_t{1} << 20, limit);
  const std::string own = accel_get_allocator_backend();
  Latency& ac = add_latency(d, "alloc_cached", "");
  Latency& an = add_latency(d, "alloc_native", "");
  ac.label = fmt::format("accel_malloc + accel_free, caching ({})", size_text(alloc_bytes));
  an.label = fmt::format("accel_malloc + accel_free, native ({})", size_text(alloc_bytes));
  Latency& here = own == "native" ? an : ac;
  Latency& there = own == "native" ? ac : an;
  guarded(here, [&] { here.us = alloc_pair_us(dev, alloc_bytes, quick); });
  guarded(there, [&] {
    there.us = alloc_pair_in_child(self_exe, own == "native" ? "caching" : "native", dev,
                                   alloc_bytes, quick);
  });
}

// Every series and latency of one device, into `d`.
void measure_device(DeviceBench& d, const std::vector<uint64_t>& sizes, const BenchOptions& opts,
                    bool events, int32_t count, const char* self_exe) {
  const int32_t dev = d.index;
  BENCH_TRY(accel_set_device_index(dev));
  read_memory_info(d);
  const uint64_t want = sizes.empty() ? 4096 : sizes.back();
  Stream stream;
  BENCH_TRY(accel_stream_create(dev, 0, &stream.s));
  const accel_stream_t s = stream.s;
  CopyTimer timer(dev, s, events);

  DeviceBuffer src, dst;
  std::string why;
  d.max_bytes = allocate_pair(dev, want, d.free_bytes, src, &dst, why);
  const uint64_t limit = d.max_bytes;
  note_skipped(d, sizes, limit, "", why);

  // Pageable host memory, touched so page faults are not timed. The host
  // buffers live to the end: a failed series may leave copies queued.
  std::unique_ptr<unsigned char[]> pageable(new unsigned char[limit]);
  std::memset(pageable.get(), 1, limit);
  BENCH_TRY(accel_memset_async(src.p, 2, limit, s));
  BENCH_TRY(accel_stream_synchronize(s));

  const CopyBench c{d, sizes, opts.quick, dev, s, timer, src, dst, limit};
  d.series.reserve(6);
  c.measure(c.add("h2d_pageable", "H2D pageable"), limit, c.h2d(pageable.get()));
  c.measure(c.add("d2h_pageable", "D2H pageable"), limit, c.d2h(pageable.get()));
  PinnedBuffer pinned;
  measure_pinned_copies(c, pinned);
  c.measure(c.add("d2d", "D2D"), limit, [&](uint64_t n) {
    BENCH_TRY(accel_memcpy_async(dst.p, src.p, n, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s));
  });
  measure_peer_copies(c, count);

  measure_stream_latencies(d, dev, s, opts.quick);
  measure_alloc_latencies(d, dev, limit, opts.quick, self_exe);
}

}  // namespace

std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0)
    return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0)
    return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

bool BenchResult::failed() const {
  if (!error.empty() || !host_memcpy.error.empty()) return true;
  for (const auto& d : devices) {
    for (const auto& s : d.series)
      if (!s.error.empty()) return true;
    for (const auto& l : d.latencies)
      if (!l.error.empty()) return true;
  }
  return false;
}

std::vector<uint64_t> bench_sizes(const BenchOptions& opts) {
  std::vector<uint64_t> sizes;
  for (int shift = 12; shift < 63 && (uint64_t{1} << shift) <= opts.max_bytes; ++shift)
    sizes.push_back(uint64_t{1} << shift);
  return sizes;
}

BenchResult run_bench_measurements(const BenchOptions& opts, const char* self_exe) {
  BenchResult r;
  r.quick = opts.quick;
  r.sizes = bench_sizes(opts);
  const auto t_all = Clock::now();
  const char* current = accel_current_accelerator();
  r.backend = current != nullptr ? current : "";
  const int32_t count = accel_device_count();
  const int32_t orig = accel_current_device_index();

  // Timing events where the backend declares them and one can be made.
  bool events = false;
  for (const auto& e : opts.host_timer ? std::vector<BackendEntry>{} : gather_backends())
    if (e.current) events = (e.capabilities & ACCEL_CAP_TIMING_EVENTS) != 0;
  if (events && count > 0) {
    accel_event_t probe = nullptr;
    events = accel_event_create(opts.device >= 0 ? opts.device : 0, ACCEL_EVENT_ENABLE_TIMING,
                                &probe) == ACCEL_SUCCESS;
    if (probe != nullptr) accel_event_destroy(probe);
  }
  r.timer = events ? "events" : "host";
  measure_host_memcpy(r.host_memcpy, r.sizes, opts.quick);

  for (int32_t dev = 0; dev < count; ++dev) {
    if (opts.device >= 0 && dev != opts.device) continue;
    DeviceBench d;
    d.index = dev;
    const DeviceEntry info = gather_device(dev);
    d.name = info.props_ok ? std::string(info.props.name) : "(name unknown)";
    const auto t_dev = Clock::now();
    try {
      measure_device(d, r.sizes, opts, events, count, self_exe);
    } catch (const std::exception& e) {
      d.series.push_back({"setup", "setup", {}, e.what()});
    }
    // Give this device's buffers back, so the next device's peer buffer fits.
    accel_empty_cache(dev);
    d.seconds = seconds_since(t_dev);
    r.devices.push_back(std::move(d));
  }
  if (orig >= 0) accel_set_device_index(orig);
  r.seconds = seconds_since(t_all);
  return r;
}

}  // namespace accelctl
