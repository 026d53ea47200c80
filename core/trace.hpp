// The timeline trace (ACCEL_TRACE=/abs/path.json; docs/tracing.md).
//
// Off, it costs one read of a plain global per public call (guarded()) and
// per stream operation: g_trace_on is written once by the library's
// constructor, before any thread can call accel, and again only in a fork
// child (single-threaded then), so no atomic is needed.
//
// On, every public call becomes a slice on its host thread's lane; each
// stream operation (copy, memset, kernel, host function, event record or
// wait) becomes a span on its stream's lane, timed with a pair of the
// backend's timing events where it has them, else with host timestamps; a
// flow arrow joins the call to the span. Records go to a bounded ring that
// accel_trace_flush() and exit() write out (trace.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "accel/accel.h"

struct accel_stream_s;

namespace accel::core {

extern bool g_trace_on;
[[gnu::always_inline]] inline bool trace_on() { return g_trace_on; }

// Host clock of the trace: CLOCK_MONOTONIC in nanoseconds.
uint64_t trace_now_ns();

// --- public calls ---------------------------------------------------------

// One public call on this thread (nests); guarded() makes one when tracing.
struct TraceCall {
  const char* fn = nullptr;
  uint64_t start_ns = 0;
  int32_t device = -1;
  uint64_t bytes = 0;
  uint64_t stream = 0;  // lane id of the stream, 0 none
  uint64_t flow = 0;    // the device span this call enqueued, 0 none
  const void* ptr = nullptr;
  const char* text = nullptr;  // kernel name (lives as long as the kernel)
  TraceCall* outer = nullptr;
};
void trace_call_begin(TraceCall& c, const char* fn);
void trace_call_end(TraceCall& c, accel_status_t st);
// The innermost call on this thread, or nullptr (annotations are optional).
TraceCall* trace_current_call();

// Annotations a call site adds (tracing on only; cheap no-ops without a call).
void trace_note_device(int32_t device, uint64_t bytes, const void* ptr);

// --- device spans -----------------------------------------------------------

// graph: one launch of a vendor's executable graph (bytes: operations in it).
enum class SpanKind : uint8_t {
  copy,
  memset,
  kernel,
  host_func,
  event_record,
  event_wait,
  peer_copy,
  graph,
};

struct SpanInfo {
  SpanKind kind = SpanKind::copy;
  uint64_t bytes = 0;
  int copy_kind = -1;  // accel_memcpy_kind_t for copies
  const char* kernel = nullptr;
  accel_dim3_t grid{0, 0, 0};
  accel_dim3_t block{0, 0, 0};
  uint32_t shared_bytes = 0;
};

// Brackets one stream operation: construct before the plugin call, end()
// after it. Does nothing when tracing is off.
class TraceSpan {
 public:
  explicit TraceSpan(accel_stream_s* s) {
    if (trace_on()) [[unlikely]]
      begin(s);
  }
  ~TraceSpan() {
    if (token_ != nullptr) [[unlikely]]
      abandon();
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;
  explicit operator bool() const { return token_ != nullptr; }
  // The operation returned `st`; on success the span is queued for timing.
  void end(accel_status_t st, const SpanInfo& info);

 private:
  void begin(accel_stream_s* s);
  void abandon();
  void* token_ = nullptr;
};

// After a synchronize or a completed query: time the spans that are done.
void trace_resolve();
// Before a stream's plugin handle is destroyed: its lane is set aside until
// its queued spans have completed (never waits).
void trace_stream_destroying(accel_stream_s* s);
// After accel_stream_set_name: the stream's lane, if it has one, is
// retitled with the new name (a lane made later takes it from the start).
void trace_stream_renamed(accel_stream_s* s);

// A stream capture that ended (graph.cpp): a slice "stream capture" on the
// ending thread's lane from accel_stream_begin_capture to the end, with the
// operations recorded and the streams that took part.
struct TraceCapture {
  uint64_t start_ns = 0;  // trace_now_ns() at begin; 0: not traced
  int32_t device = -1;
  size_t operations = 0;
  size_t streams = 0;
};
void trace_capture(const TraceCapture& c, accel_status_t st);

// --- allocator --------------------------------------------------------------

// "alloc", "free", "empty_cache", "oom" on the caller's lane, and the
// device's allocated/reserved bytes as a counter track.
struct Backend;
void trace_memory_event(const char* what, const Backend& b, int32_t device, uint64_t bytes,
                        const void* ptr);
// A free is traced after it happened, with what was looked up before.
struct TraceFree {
  const Backend* backend = nullptr;
  int32_t device = 0;
  uint64_t bytes = 0;
  const void* ptr = nullptr;
};
TraceFree trace_free_lookup(const void* ptr);
// After an allocation: "alloc" with its pointer, or "oom".
void trace_alloc_result(const Backend& b, int32_t device, uint64_t bytes, const void* ptr,
                        accel_status_t st);
void trace_free_done(const TraceFree& f, accel_status_t st);

// --- lifecycle ----------------------------------------------------------------

// Writes what the ring holds; ACCEL_SUCCESS also when tracing is off.
accel_status_t trace_flush();
// fork(): the child stops tracing (it must not write the parent's file).
void trace_after_fork_child();

}  // namespace accel::core
