// bench.hpp - `accelctl bench`: what it measures (bench.cpp) and how the
// results are reported (bench_report.cpp, svg_plot.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accelctl {

struct BenchOptions {
  bool quick = false;                        // fewer repetitions: under 10 s on sim and PoCL
  int32_t device = -1;                       // -1: every device of the current accelerator
  uint64_t max_bytes = uint64_t{256} << 20;  // largest transfer size asked for
  bool host_timer = false;  // steady_clock even where the backend has timing events
};

// One point of a bandwidth series: `bytes` per copy, GB/s = 1e9 bytes/s,
// the median over the repetitions.
struct BandwidthPoint {
  uint64_t bytes = 0;
  double gbps = 0;
  int reps = 0;
};

// One copy direction on one device ("h2d_pageable", "d2d", "peer", ...).
struct Series {
  std::string key;    // JSON key and SVG class
  std::string label;  // column heading and legend text
  std::vector<BandwidthPoint> points;
  std::string error;  // the accel failure that stopped it (status name and detail); "" if none
};

// A latency in microseconds (median), or why there is none.
struct Latency {
  std::string key;
  std::string label;
  std::optional<double> us;
  std::string note;   // why there is no number, when that is not a failure (NOT_SUPPORTED)
  std::string error;  // an accel failure (status name and detail)
};

struct DeviceBench {
  int32_t index = 0;
  std::string name;
  std::optional<uint64_t> free_bytes, total_bytes;  // accel_mem_get_info, when it answers
  uint64_t max_bytes = 0;                           // the largest size measured (memory bounds it)
  std::vector<Series> series;
  std::optional<int32_t> peer_device;  // the device the "peer" series copies to
  std::string peer_access;             // "direct" or "staged" (accel_device_can_access_peer)
  std::vector<Latency> latencies;
  std::vector<std::string> notes;  // skipped sizes and series, and why
  double seconds = 0;              // wall time of this device's measurements
};

struct BenchResult {
  std::string backend;
  std::string timer;  // "events" (ACCEL_EVENT_ENABLE_TIMING) or "host" (steady_clock)
  bool quick = false;
  std::vector<uint64_t> sizes;  // the sizes asked for, before memory bounds
  std::vector<DeviceBench> devices;
  // memcpy between two pageable host buffers over the same sizes, host
  // clock: the ceiling of every copy on a device whose memory is host
  // memory (sim, PoCL's CPU device); key "host_memcpy".
  Series host_memcpy;
  std::string error;  // a failure before any device was measured
  double seconds = 0;
  bool failed() const;  // any series or latency error (host_memcpy's too), or `error`
};

// "4 KiB", "256 MiB", "1 GiB", "100 B": the largest unit that divides `bytes`.
std::string size_text(uint64_t bytes);

// The transfer sizes: 4 KiB doubling up to the largest power of two at or
// below max_bytes (quick too: it takes fewer repetitions, not fewer sizes).
std::vector<uint64_t> bench_sizes(const BenchOptions& opts);

// Measures every device (or opts.device) of the current accelerator. Never
// throws on an accel failure: it is recorded in the result.
BenchResult run_bench_measurements(const BenchOptions& opts, const char* self_exe);

// The hidden `bench --internal-alloc-probe`: run in a child started with
// ACCEL_ALLOC_CONF=backend:native (or caching), prints the median
// accel_malloc + accel_free pair latency of `bytes` in microseconds on
// `device` (or one line beginning with "error: "); returns the exit code.
int run_alloc_probe(int32_t device, uint64_t bytes, bool quick);

// The command: measures, prints the table or JSON and writes the SVG.
int run_bench(const BenchOptions& opts, bool json, const std::string& svg_file,
              const char* self_exe);

}  // namespace accelctl
