// Device spans of the trace: one lane per stream, each operation timed by a
// pair of the backend's timing events (docs/tracing.md, "How spans are
// timed").
//
// Event times are relative (elapsed_time between two events), so each
// device gets a reference event, recorded on a private stream of the
// tracer's and waited for once, at a known host time: a span then starts at
// that host time plus elapsed(reference, start). The private stream keeps
// the calibration from waiting behind the program's own work (a host
// function gate, say). Backends without timing events, or a calibration
// that fails, fall back to host timestamps (enqueue time, and the time the
// stream was seen idle), and the span says so.
#include <algorithm>
#include <deque>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "callbacks.hpp"
#include "device_memory.hpp"
#include "handles.hpp"
#include "memory_table.hpp"
#include "trace.hpp"
#include "trace_buffer.hpp"

namespace accel::core {

namespace {

// Pending spans past this many on one stream are timed now if they are
// done; past the hard cap the oldest are given up (counted as unresolved),
// so a program that never synchronizes still has bounded memory.
constexpr size_t kResolveAt = 512;
constexpr size_t kPendingCap = 4096;

struct DeviceClock {
  const Backend* backend = nullptr;
  int32_t device = 0;
  uint32_t pid = 0;
  uint32_t next_lane = 1;
  bool timing = false;  // events usable for this device
  accel_plugin_stream_t priv = nullptr;
  accel_plugin_event_t ref = nullptr;
  uint64_t ref_host_ns = 0;
  std::vector<accel_plugin_event_t> free_events;
};

struct Pending {
  accel_plugin_event_t start = nullptr;
  accel_plugin_event_t end = nullptr;
  uint64_t enqueue_ns = 0;
  TraceRec rec;
};

struct Lane {
  // Held from a span's start event to its end event and its place in
  // `pending`, so that another thread's operation on the same stream never
  // lands inside the bracket and spans queue in stream order. Taken before
  // the trace lock, never while holding it.
  std::mutex order;
  const accel_stream_s* stream = nullptr;
  uint32_t generation = 0;
  DeviceClock* clock = nullptr;
  accel_plugin_stream_t native = nullptr;
  uint32_t tid = 0;
  uint64_t seq = 0;
  uint64_t last_end_ns = 0;  // absolute; spans of one stream never overlap
  std::deque<Pending> pending;
};

struct Token {
  Lane* lane = nullptr;
  accel_plugin_event_t start = nullptr;
  uint64_t enqueue_ns = 0;
  bool ordered = false;  // holds lane->order
};

struct Spans {
  std::vector<std::unique_ptr<DeviceClock>> clocks;
  std::unordered_map<const accel_stream_s*, std::unique_ptr<Lane>> lanes;
  // Lanes of destroyed streams whose queued work (and spans) may still run.
  std::vector<std::unique_ptr<Lane>> orphans;
};

Spans& spans() {
  static Spans* s = new Spans;  // never destroyed (exit may still flush)
  return *s;
}

// Creates the device's reference event on a private stream and waits for
// it once. Any failure leaves the device on host timestamps.
void calibrate_locked(DeviceClock& dc) {
  const Backend& b = *dc.backend;
  if ((b.capabilities & ACCEL_PLUGIN_CAP_TIMING_EVENTS) == 0 || b.api.event_create == nullptr ||
      b.api.event_elapsed_time == nullptr)
    return;
  if (b.api.stream_create(dc.device, 0, &dc.priv) != ACCEL_SUCCESS) {
    dc.priv = nullptr;
    return;
  }
  if (b.api.event_create(dc.device, ACCEL_EVENT_ENABLE_TIMING, &dc.ref) != ACCEL_SUCCESS) {
    dc.ref = nullptr;
    return;
  }
  // The reference completes somewhere between the record call and the
  // synchronize's return: the midpoint is the estimate (taking the time
  // after the wait would shift every span late by the wake-up). Recorded a
  // few times, so the stream's worker is awake for the last one, the one
  // kept.
  for (int i = 0; i < 4; ++i) {
    const uint64_t before = trace_now_ns();
    if (b.api.event_record(dc.ref, dc.priv) != ACCEL_SUCCESS ||
        b.api.event_synchronize(dc.ref) != ACCEL_SUCCESS)
      return;
    const uint64_t after = trace_now_ns();
    dc.ref_host_ns = before + (after - before) / 2;
  }
  dc.timing = true;
}

DeviceClock& clock_locked(const Backend& b, int32_t device) {
  for (auto& c : spans().clocks)
    if (c->backend == &b && c->device == device) return *c;
  auto c = std::make_unique<DeviceClock>();
  c->backend = &b;
  c->device = device;
  c->pid = trace_device_pid_locked(b.name.c_str(), device);
  calibrate_locked(*c);
  spans().clocks.push_back(std::move(c));
  return *spans().clocks.back();
}

// A lane's title: "stream N (default)" or "stream N (priority P)", after
// the stream's name when it has one.
std::string lane_title(accel_stream_s* s, uint32_t tid) {
  const std::string kind =
      s->is_default ? std::string("default") : fmt::format("priority {}", s->priority);
  const std::string name = stream_name_of(s);
  if (name.empty()) return fmt::format("stream {} ({})", tid, kind);
  return fmt::format("{} (stream {}, {})", name, tid, kind);
}

Lane& lane_locked(accel_stream_s* s) {
  const uint32_t gen = s->generation.load(std::memory_order_acquire);
  auto& slot = spans().lanes[s];
  if (slot && slot->generation == gen) return *slot;
  // A new stream (or a new one in a reused handle slot): a new lane.
  auto lane = std::make_unique<Lane>();
  lane->stream = s;
  lane->generation = gen;
  lane->clock = &clock_locked(*s->backend, s->device);
  lane->native = s->native;
  lane->tid = lane->clock->next_lane++;
  trace_name_stream_locked(lane->clock->pid, lane->tid, lane_title(s, lane->tid).c_str());
  if (slot) trace_count_unresolved_locked(slot->pending.size());
  slot = std::move(lane);
  return *slot;
}

accel_plugin_event_t take_event_locked(DeviceClock& dc) {
  if (!dc.timing) return nullptr;
  if (!dc.free_events.empty()) {
    auto ev = dc.free_events.back();
    dc.free_events.pop_back();
    return ev;
  }
  accel_plugin_event_t ev = nullptr;
  if (dc.backend->api.event_create(dc.device, ACCEL_EVENT_ENABLE_TIMING, &ev) != ACCEL_SUCCESS)
    return nullptr;
  return ev;
}

void give_event_locked(DeviceClock& dc, accel_plugin_event_t ev) {
  if (ev != nullptr) dc.free_events.push_back(ev);
}

void emit_locked(Lane& lane, Pending& p, uint64_t start_abs, uint64_t end_abs, Clock clock) {
  const uint64_t t0 = trace_t0();
  // Nothing starts before it was enqueued, nor before the stream's previous
  // operation ended (an in-order stream; vendor timestamps have a
  // resolution, and the calibration an error of a few microseconds).
  uint64_t ts = std::max({start_abs, p.enqueue_ns, lane.last_end_ns, t0});
  uint64_t end = std::max(end_abs, ts);
  lane.last_end_ns = end;
  p.rec.ts = ts - t0;
  p.rec.dur = end - ts;
  p.rec.clock = clock;
  trace_push_locked(p.rec);
  TraceRec f;
  f.ph = Ph::flow_end;
  f.stream_lane = true;
  f.pid = p.rec.pid;
  f.tid = p.rec.tid;
  f.ts = p.rec.ts;
  f.flow = p.rec.flow;
  trace_push_locked(f);
}

// Times the lane's completed spans, oldest first; stops at the first that
// is still running (a stream runs in order).
void resolve_lane_locked(Lane& lane) {
  DeviceClock& dc = *lane.clock;
  const Backend& b = *dc.backend;
  bool idle_known = false, idle = false;
  while (!lane.pending.empty()) {
    Pending& p = lane.pending.front();
    if (p.start != nullptr && p.end != nullptr) {
      accel_status_t q = b.api.event_query(p.end);
      if (q == ACCEL_ERROR_NOT_READY) return;
      float a = 0, e = 0;
      if (q == ACCEL_SUCCESS && b.api.event_elapsed_time(dc.ref, p.start, &a) == ACCEL_SUCCESS &&
          b.api.event_elapsed_time(dc.ref, p.end, &e) == ACCEL_SUCCESS) {
        auto abs = [&](float ms) {
          double ns = static_cast<double>(ms) * 1e6;
          return dc.ref_host_ns + (ns > 0 ? static_cast<uint64_t>(ns) : 0);
        };
        emit_locked(lane, p, abs(a), abs(e), Clock::events);
      } else {
        emit_locked(lane, p, p.enqueue_ns, trace_now_ns(), Clock::host);
      }
    } else {
      // Host timestamps: done once the stream is seen idle, which a
      // destroyed stream can no longer be asked.
      if (lane.native == nullptr) {
        trace_count_unresolved_locked(1);
        lane.pending.pop_front();
        continue;
      }
      if (!idle_known) {
        idle = b.api.stream_query(lane.native) == ACCEL_SUCCESS;
        idle_known = true;
      }
      if (!idle) return;
      uint64_t end = lane.pending.size() > 1 ? lane.pending[1].enqueue_ns : trace_now_ns();
      emit_locked(lane, p, p.enqueue_ns, end, Clock::host);
    }
    give_event_locked(dc, p.start);
    give_event_locked(dc, p.end);
    lane.pending.pop_front();
  }
}

}  // namespace

// No plugin call that enqueues runs under the trace lock: an enqueue may
// block on a full queue until the stream's worker runs a host function,
// and that function's own accel calls need the lock.
void TraceSpan::begin(accel_stream_s* s) {
  if (s == nullptr) return;
  (void)trace_host_tid();  // names this thread's lane outside the lock
  auto tok = std::make_unique<Token>();
  {
    std::lock_guard lock(trace_mutex());
    tok->lane = &lane_locked(s);
  }
  // A host function never waits for the order lock: the holder may be
  // blocked in an enqueue until this very function returns (a full queue).
  // Without it the span is timed by host timestamps.
  if (running_host_call() != nullptr) {
    tok->ordered = tok->lane->order.try_lock();
  } else {
    tok->lane->order.lock();
    tok->ordered = true;
  }
  if (tok->ordered) {
    std::lock_guard lock(trace_mutex());
    tok->start = take_event_locked(*tok->lane->clock);
  }
  tok->enqueue_ns = trace_now_ns();
  if (tok->start != nullptr &&
      s->backend->api.event_record(tok->start, s->native) != ACCEL_SUCCESS) {
    std::lock_guard lock(trace_mutex());
    give_event_locked(*tok->lane->clock, tok->start);
    tok->start = nullptr;
  }
  token_ = tok.release();
}

void TraceSpan::abandon() {
  std::unique_ptr<Token> tok(static_cast<Token*>(token_));
  token_ = nullptr;
  if (!trace_on()) return;  // a fork child (see trace_call_end)
  {
    std::lock_guard lock(trace_mutex());
    give_event_locked(*tok->lane->clock, tok->start);
  }
  if (tok->ordered) tok->lane->order.unlock();
}

// A call that queues several spans (a graph replay): the arrow to the
// earlier span leaves now, from inside the call's slice.
static void push_earlier_flow_locked(uint64_t flow) {
  TraceRec f;
  f.ph = Ph::flow_start;
  f.pid = trace_pid();
  f.tid = trace_host_tid();
  const uint64_t now = trace_now_ns(), t0 = trace_t0();
  f.ts = now > t0 ? now - t0 : 0;
  f.flow = flow;
  trace_push_locked(f);
}

void TraceSpan::end(accel_status_t st, const SpanInfo& info) {
  if (token_ == nullptr) return;
  if (st != ACCEL_SUCCESS) {
    abandon();
    return;
  }
  std::unique_ptr<Token> tok(static_cast<Token*>(token_));
  token_ = nullptr;
  if (!trace_on()) return;  // a fork child (see trace_call_end)
  // Released last, once the span has its place in `pending`.
  std::unique_lock<std::mutex> ordered(tok->lane->order, std::adopt_lock);
  if (!tok->ordered) ordered.release();
  const uint64_t flow = trace_next_flow_id();
  Lane& lane = *tok->lane;
  DeviceClock& dc = *lane.clock;
  Pending p;
  p.start = tok->start;
  p.enqueue_ns = tok->enqueue_ns;
  if (p.start != nullptr) {
    {
      std::lock_guard lock(trace_mutex());
      p.end = take_event_locked(dc);
    }
    bool recorded = p.end != nullptr &&
                    dc.backend->api.event_record(p.end, lane.native) == ACCEL_SUCCESS;
    if (!recorded) {  // host timestamps for this one
      std::lock_guard lock(trace_mutex());
      give_event_locked(dc, p.end);
      give_event_locked(dc, p.start);
      p.start = p.end = nullptr;
    }
  }
  std::lock_guard lock(trace_mutex());
  static constexpr const char* kNames[] = {"memcpy",      "memset",     "kernel",
                                           "host function", "event record", "event wait",
                                           "memcpy peer", "graph launch"};
  static_assert(std::size(kNames) == static_cast<size_t>(SpanKind::graph) + 1);
  TraceRec& r = p.rec;
  r.ph = Ph::complete;
  r.stream_lane = true;
  r.kind = info.kind;
  r.pid = dc.pid;
  r.tid = lane.tid;
  r.name = kNames[static_cast<int>(info.kind)];
  r.device = dc.device;
  r.bytes = info.bytes;
  r.copy_kind = info.copy_kind;
  r.grid = info.grid;
  r.block = info.block;
  r.shared = info.shared_bytes;
  r.flow = flow;
  r.seq = ++lane.seq;
  copy_text(r.text, info.kernel);
  if (TraceCall* c = trace_current_call(); c != nullptr) {
    if (c->flow != 0) push_earlier_flow_locked(c->flow);
    c->flow = flow;
    c->stream = lane.tid;
    c->device = dc.device;
    if (info.bytes != 0) c->bytes = info.bytes;
    if (info.kernel != nullptr) c->text = info.kernel;
  }
  lane.pending.push_back(p);
  if (lane.pending.size() >= kResolveAt) resolve_lane_locked(lane);
  while (lane.pending.size() > kPendingCap) {
    // Given up (their flow arrows keep no end). Their events go back to
    // the pool: re-recording a queued event is allowed (ABI: event_record).
    give_event_locked(dc, lane.pending.front().start);
    give_event_locked(dc, lane.pending.front().end);
    lane.pending.pop_front();
    trace_count_unresolved_locked(1);
  }
}

void trace_resolve() {
  if (!trace_on()) return;
  std::lock_guard lock(trace_mutex());
  for (auto& [s, lane] : spans().lanes) resolve_lane_locked(*lane);
  auto& orphans = spans().orphans;
  for (auto& lane : orphans) resolve_lane_locked(*lane);
  std::erase_if(orphans, [](const auto& lane) { return lane->pending.empty(); });
}

uint64_t trace_pending_spans() {
  std::lock_guard lock(trace_mutex());
  uint64_t n = 0;
  for (auto& [s, lane] : spans().lanes) n += lane->pending.size();
  for (auto& lane : spans().orphans) n += lane->pending.size();
  return n;
}

void trace_stream_destroying(accel_stream_s* s) {
  if (!trace_on()) return;
  // Never waits: the stream's queued work still completes after the destroy
  // (it may be gated by a host function released later), and its
  // event-timed spans are timed then, from the lane kept aside here.
  std::lock_guard lock(trace_mutex());
  auto it = spans().lanes.find(s);
  if (it == spans().lanes.end()) return;
  resolve_lane_locked(*it->second);
  if (!it->second->pending.empty()) {
    it->second->native = nullptr;
    spans().orphans.push_back(std::move(it->second));
  }
  spans().lanes.erase(it);
}

void trace_stream_renamed(accel_stream_s* s) {
  if (!trace_on()) return;
  std::lock_guard lock(trace_mutex());
  auto it = spans().lanes.find(s);
  if (it == spans().lanes.end() ||
      it->second->generation != s->generation.load(std::memory_order_acquire))
    return;
  Lane& lane = *it->second;
  trace_name_stream_locked(lane.clock->pid, lane.tid, lane_title(s, lane.tid).c_str());
}

void trace_memory_event(const char* what, const Backend& b, int32_t device, uint64_t bytes,
                        const void* ptr) {
  if (!trace_on()) return;
  alloc::Stats stats;
  if (DeviceMemory* m = find_device_memory(b, device)) {
    if (caching_allocator()) {
      stats = m->allocator.stats();
    } else {
      std::lock_guard lock(m->native_mutex);
      stats = m->native_stats;
    }
  }
  TraceRec r;
  r.ph = Ph::instant;
  r.pid = trace_pid();
  r.tid = trace_host_tid();
  r.ts = trace_now_ns() - trace_t0();
  r.name = what;
  r.device = device;
  r.bytes = bytes;
  r.ptr = ptr;
  std::lock_guard lock(trace_mutex());
  trace_push_locked(r);
  TraceRec c;
  c.ph = Ph::counter;
  c.pid = trace_device_pid_locked(b.name.c_str(), device);
  c.ts = r.ts;
  c.counter_a = stats.allocated_bytes[alloc::kAll].current;
  c.counter_b = stats.reserved_bytes[alloc::kAll].current;
  trace_push_locked(c);
}

TraceFree trace_free_lookup(const void* ptr) {
  TraceFree f;
  Allocation a;
  if (ptr != nullptr && find_allocation(ptr, a) && a.type == ACCEL_MEMORY_DEVICE) {
    f.backend = a.backend;
    f.device = a.device;
    f.bytes = a.bytes;
    f.ptr = ptr;
  }
  return f;
}

void trace_alloc_result(const Backend& b, int32_t device, uint64_t bytes, const void* ptr,
                        accel_status_t st) {
  if (st == ACCEL_SUCCESS) {
    trace_memory_event("alloc", b, device, bytes, ptr);
  } else if (st == ACCEL_ERROR_OUT_OF_MEMORY) {
    trace_memory_event("oom", b, device, bytes, nullptr);
  }
}

void trace_free_done(const TraceFree& f, accel_status_t st) {
  if (f.backend != nullptr && st == ACCEL_SUCCESS)
    trace_memory_event("free", *f.backend, f.device, f.bytes, f.ptr);
}

}  // namespace accel::core
