// The trace's records and their bounded ring (trace.cpp writes them out).
#pragma once

#include <cstdint>
#include <mutex>

#include "accel/accel.h"
#include "trace.hpp"

namespace accel::core {

enum class Ph : uint8_t { complete, instant, counter, begin, end, flow_start, flow_end };
enum class Clock : uint8_t { none, events, host };

// One trace event; fixed size, no heap, so recording never allocates.
struct TraceRec {
  Ph ph = Ph::complete;
  bool stream_lane = false;  // pid/tid are a device and a stream lane
  SpanKind kind = SpanKind::copy;
  Clock clock = Clock::none;
  int32_t status = 0;
  int32_t device = -1;
  int32_t copy_kind = -1;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t ts = 0;   // ns since the trace started
  uint64_t dur = 0;  // ns
  uint64_t bytes = 0;
  uint64_t flow = 0;
  uint64_t stream = 0;
  uint64_t seq = 0;
  const char* name = nullptr;  // static storage
  const void* ptr = nullptr;
  accel_dim3_t grid{0, 0, 0};
  accel_dim3_t block{0, 0, 0};
  uint32_t shared = 0;
  int64_t counter_a = 0;
  int64_t counter_b = 0;
  char text[64] = {};
};

// Everything below is guarded by trace_mutex().
std::mutex& trace_mutex();
// Appends; when the ring is full the oldest record is dropped and counted.
void trace_push_locked(const TraceRec& r);
// The trace's start on trace_now_ns()'s clock.
uint64_t trace_t0();
// This process's pid and the calling thread's lane (its kernel thread id,
// named in the file the first time it is seen).
uint32_t trace_pid();
uint32_t trace_host_tid();
// The lane process of `backend`'s `device` (named "<backend> device <n>").
uint32_t trace_device_pid_locked(const char* backend, int32_t device);
// Names a stream lane of a device process.
void trace_name_stream_locked(uint32_t pid, uint32_t tid, const char* name);
// Spans that were never timed (their stream still ran at exit, say).
void trace_count_unresolved_locked(uint64_t n);
uint64_t trace_next_flow_id();
// Spans queued but not yet timed, over every stream (trace_spans.cpp).
uint64_t trace_pending_spans();
void copy_text(char (&dst)[64], const char* src);

}  // namespace accel::core
