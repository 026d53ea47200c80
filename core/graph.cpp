// The capture registry: which streams and events are in which capture, the
// recording of their operations, the capture rules, and the graphs' pools.
//
// One lock guards it all, a leaf but for the allocator and the stream names'
// lock: no device work is waited for under it (an allocation in a capture
// and a pool's release run with it let go), and no plugin is called under
// it, so a host function may call accel while another thread captures.
//
// Fork and join follow vector clocks: each stream of a capture counts its
// operations, and keeps, per stream of the capture, how many of that
// stream's operations it is ordered after. An event recorded in the capture
// keeps its stream's clock; a wait on it merges that clock into the waiting
// stream's. The capture may end when the origin is ordered after every
// operation of every stream that joined it.
#include "graph.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "callbacks.hpp"
#include "device_memory.hpp"
#include "error.hpp"
#include "host_services.hpp"
#include "memory_table.hpp"
#include "module.hpp"
#include "trace.hpp"

namespace accel::core {

std::atomic<int> g_captures{0};

namespace {

constexpr size_t kNone = SIZE_MAX;

struct CapturedEvent {
  uint32_t stream_index = 0;
  size_t op_index = 0;
  std::vector<uint64_t> clock;
};

struct Capture {
  uint64_t id = 0;
  accel_stream_s* origin = nullptr;
  accel_capture_mode_t mode = ACCEL_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  bool invalidated = false;
  std::string why;  // the first refusal's message
  std::unique_ptr<accel_graph_s> graph;
  std::vector<accel_stream_s*> streams;  // [0]: the origin; nullptr once destroyed
  std::vector<uint64_t> count;           // operations of each stream
  std::vector<std::vector<uint64_t>> seen;
  std::vector<size_t> last_op;  // each stream's last operation, kNone before
  std::unordered_map<const accel_event_s*, CapturedEvent> events;
  uint64_t trace_start_ns = 0;  // when tracing: the capture's slice starts here
};

// Blocks of a released pool under backend:native, whose frees are not
// stream-ordered: freed once the markers recorded on the streams that
// replayed them have completed (drain_pending).
struct PendingRelease {
  Backend* backend = nullptr;
  std::vector<GraphPool::Block> blocks;
  std::vector<accel_plugin_event_t> markers;
};

struct Registry {
  std::mutex mutex;
  std::vector<PendingRelease> pending;
  std::unordered_map<const accel_stream_s*, Capture*> streams;
  std::unordered_map<const accel_event_s*, Capture*> events;
  std::vector<std::unique_ptr<Capture>> captures;
  std::unordered_set<const accel_graph_s*> graphs;
  std::unordered_map<uint64_t, std::unique_ptr<GraphPool>> pools;
  uint64_t next_pool = 1;
  uint64_t next_capture = 1;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: exit handlers may still call
  return *r;
}

}  // namespace

std::mutex& graph_registry_mutex() { return registry().mutex; }

namespace {

// What a pool's release hands back once the lock is let go.
struct Release {
  std::vector<GraphPool::Block> blocks;
  std::vector<std::pair<accel_stream_s*, uint32_t>> streams;
};

std::string describe(const accel_stream_s* s) {
  if (s == nullptr) return "a destroyed stream";
  const std::string name = stream_name_of(const_cast<accel_stream_s*>(s));
  return fmt::format("stream {}{} of {} device {}", static_cast<const void*>(s),
                     name.empty() ? std::string() : fmt::format(" ('{}')", name), s->backend->name,
                     s->device);
}

void invalidate(Capture& c, const std::string& why) {
  if (c.invalidated) return;
  c.invalidated = true;
  c.why = why;
}

// ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED: `fn` conflicts with `c`, which
// is invalidated.
accel_status_t refuse(const char* fn, Capture& c, const std::string& what) {
  std::string message =
      fmt::format("{}: not allowed while {} captures ({}); the capture is invalidated", fn,
                  describe(c.origin), what);
  invalidate(c, message);
  return failf(ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED, "{}", message);
}

accel_status_t invalidated_status(const char* fn, const Capture& c) {
  return failf(ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED,
               "{}: the capture begun on {} was invalidated earlier: {}", fn, describe(c.origin),
               c.why);
}

Capture* capture_of(Registry& r, const accel_stream_s* s) {
  auto it = r.streams.find(s);
  return it == r.streams.end() ? nullptr : it->second;
}

uint32_t index_of(const Capture& c, const accel_stream_s* s) {
  for (size_t i = 0; i < c.streams.size(); ++i)
    if (c.streams[i] == s) return static_cast<uint32_t>(i);
  return 0;  // not reached: every stream of r.streams is in its capture
}

uint32_t add_stream(Capture& c, accel_stream_s* s) {
  c.streams.push_back(s);
  c.count.push_back(0);
  c.last_op.push_back(kNone);
  c.seen.emplace_back();
  for (auto& v : c.seen) v.resize(c.streams.size(), 0);
  c.graph->stream_names.push_back(describe(s));
  return static_cast<uint32_t>(c.streams.size() - 1);
}

void hold_module(accel_graph_s& g, accel_module_s* m) {
  if (std::find(g.modules.begin(), g.modules.end(), m) != g.modules.end()) return;
  g.modules.push_back(m);
  m->graph_holds.fetch_add(1, std::memory_order_acq_rel);
}

// Appends `op` as stream `idx`'s next operation; its index.
size_t record_locked(Capture& c, uint32_t idx, GraphOp&& op) {
  accel_graph_s& g = *c.graph;
  const size_t at = g.ops.size();
  op.stream_index = idx;
  if (c.last_op[idx] != kNone) g.edges.emplace_back(c.last_op[idx], at);
  c.last_op[idx] = at;
  c.seen[idx][idx] = ++c.count[idx];
  if (op.kind == OpKind::kernel) hold_module(g, op.kernel->module);
  g.ops.push_back(std::move(op));
  return at;
}

// `p` loses a user; with none left its blocks are handed back (and an
// implicit pool forgotten).
void drop_pool_user(Registry& r, GraphPool* p, Release& out) {
  if (--p->users > 0) return;
  out.blocks = std::move(p->blocks);
  out.streams = std::move(p->replay_streams);
  p->blocks.clear();
  p->replay_streams.clear();
  if (!p->from_handle) r.pools.erase(p->id);
}

// The graph's holds on modules and pool, given up.
void release_graph_locked(Registry& r, accel_graph_s& g, Release& out) {
  for (accel_module_s* m : g.modules) m->graph_holds.fetch_sub(1, std::memory_order_acq_rel);
  g.modules.clear();
  drop_pool_user(r, g.pool, out);
}

// Takes `c` out of the registry: its streams and events leave it.
std::unique_ptr<Capture> end_locked(Registry& r, Capture* c) {
  for (accel_stream_s* s : c->streams)
    if (s != nullptr) r.streams.erase(s);
  for (auto& [e, unused] : c->events) r.events.erase(e);
  std::unique_ptr<Capture> owned;
  for (auto it = r.captures.begin(); it != r.captures.end(); ++it) {
    if (it->get() == c) {
      owned = std::move(*it);
      r.captures.erase(it);
      break;
    }
  }
  g_captures.fetch_sub(1, std::memory_order_acq_rel);
  return owned;
}

void free_now(const std::vector<GraphPool::Block>& blocks) {
  for (const GraphPool::Block& blk : blocks)
    free_device_memory("accel_graph_destroy", blk.ptr, false, nullptr, nullptr);
}

// A marker on `s` for a pending release under backend:native; without
// events, a stream synchronize (the one host wait left).
void mark_stream(accel_stream_s* s, PendingRelease& pr) {
  Backend& b = *s->backend;
  accel_plugin_event_t ev = nullptr;
  if (b.api.event_create != nullptr && call_plugin(b, "event_create", [&] {
                                         return b.api.event_create(s->device, 0, &ev);
                                       }) == ACCEL_SUCCESS) {
    if (call_plugin(b, "event_record", [&] { return b.api.event_record(ev, s->native); }) ==
        ACCEL_SUCCESS) {
      pr.markers.push_back(ev);
      return;
    }
    call_plugin(b, "event_destroy", [&] { return b.api.event_destroy(ev); });
  }
  if (!running_on_stream(s))
    call_plugin(b, "stream_synchronize", [&] { return b.api.stream_synchronize(s->native); });
}

// The pool's blocks back to the allocator, behind the work of every stream
// that replayed them, never waiting on the host: record_stream for the
// caching allocator; markers and a pending release under backend:native.
void free_blocks(Release& rel) {
  if (rel.blocks.empty()) return;
  LastErrorScope keep;
  PendingRelease pr;
  for (auto [s, generation] : rel.streams) {
    if (!live(s) || s->generation.load(std::memory_order_acquire) != generation) continue;
    pr.backend = s->backend;
    if (!caching_allocator()) {
      mark_stream(s, pr);
      continue;
    }
    for (const GraphPool::Block& blk : rel.blocks) {
      Allocation entry;
      if (find_entry(blk.ptr, entry) && entry.owner != nullptr)
        entry.owner->allocator.record_stream(blk.ptr, s);
    }
  }
  if (pr.markers.empty()) {
    free_now(rel.blocks);
    return;
  }
  pr.blocks = std::move(rel.blocks);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.pending.push_back(std::move(pr));
}

// Refuses `fn` in every capture `pick` selects; the first refusal's status.
template <typename Pick>
accel_status_t refuse_where(const char* fn, const std::string& what, Pick&& pick) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  accel_status_t st = ACCEL_SUCCESS;
  for (auto& c : r.captures) {
    if (!pick(*c)) continue;
    const accel_status_t one = refuse(fn, *c, what);
    if (st == ACCEL_SUCCESS) st = one;
  }
  return st;
}

}  // namespace

void drain_pending() {
  Registry& r = registry();
  std::vector<PendingRelease> all;
  {
    std::lock_guard lock(r.mutex);
    if (r.pending.empty()) return;
    all.swap(r.pending);
  }
  LastErrorScope keep;
  std::vector<PendingRelease> waiting;
  for (PendingRelease& pr : all) {
    Backend& b = *pr.backend;
    bool done = true;
    for (accel_plugin_event_t ev : pr.markers)
      done = done && b.api.event_query(ev) == ACCEL_SUCCESS;  // never waits
    if (!done) {
      waiting.push_back(std::move(pr));
      continue;
    }
    for (accel_plugin_event_t ev : pr.markers)
      call_plugin(b, "event_destroy", [&] { return b.api.event_destroy(ev); });
    free_now(pr.blocks);
  }
  if (waiting.empty()) return;
  std::lock_guard lock(r.mutex);
  for (PendingRelease& pr : waiting) r.pending.push_back(std::move(pr));
}

GraphOp kernel_op(accel_kernel_s* k, accel_dim3_t grid, accel_dim3_t block, size_t shared_bytes,
                  const accel_kernel_arg_t* args, size_t num_args) {
  GraphOp op{.kind = OpKind::kernel,
             .kernel = k,
             .grid = grid,
             .block = block,
             .shared_bytes = shared_bytes};
  size_t total = 0;
  for (size_t i = 0; i < num_args; ++i)
    if (args[i].kind == ACCEL_KERNEL_ARG_VALUE) total += args[i].size;
  op.arg_bytes = std::make_unique<unsigned char[]>(total == 0 ? 1 : total);
  op.args.assign(args, args + num_args);
  size_t at = 0;
  for (accel_kernel_arg_t& a : op.args) {
    if (a.kind != ACCEL_KERNEL_ARG_VALUE || a.size == 0) continue;
    std::memcpy(op.arg_bytes.get() + at, a.value, a.size);  // by value, as CUDA's kernel nodes
    a.value = op.arg_bytes.get() + at;
    at += a.size;
  }
  return op;
}

Recorded record_op(const char* fn, accel_stream_s* s, GraphOp&& op) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Capture* c = capture_of(r, s);
  if (c == nullptr) return {};
  if (c->invalidated) return {true, invalidated_status(fn, *c)};
  record_locked(*c, index_of(*c, s), std::move(op));
  return {true, ACCEL_SUCCESS};
}

Recorded refuse_pageable_copy(const char* fn, accel_stream_s* s) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Capture* c = capture_of(r, s);
  if (c == nullptr) return {};
  return {true, refuse(fn, *c,
                       "a copy to or from pageable host memory cannot be replayed "
                       "asynchronously: use pinned or registered host memory")};
}

Recorded record_event(const char* fn, accel_event_s* e, accel_stream_s* s) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Capture* earlier = nullptr;
  if (auto it = r.events.find(e); it != r.events.end()) earlier = it->second;
  Capture* c = capture_of(r, s);
  if (c != nullptr && c->invalidated) return {true, invalidated_status(fn, *c)};
  if (earlier != nullptr && earlier != c) {  // a new record replaces the captured one
    earlier->events.erase(e);
    r.events.erase(e);
  }
  if (c == nullptr) return {};
  GraphOp op;
  op.kind = OpKind::event_record;
  const uint32_t idx = index_of(*c, s);
  const size_t at = record_locked(*c, idx, std::move(op));
  c->events[e] = CapturedEvent{idx, at, c->seen[idx]};
  r.events[e] = c;
  return {true, ACCEL_SUCCESS};
}

namespace {

// A wait of `s` (in no capture or in `cs`) on `e`, recorded in capture `ce`.
Recorded join_wait(const char* fn, Registry& r, Capture* cs, Capture& ce, accel_stream_s* s,
                   const accel_event_s* e) {
  if (cs == nullptr) {
    if (s->is_default) {
      return {true, refuse(fn, ce,
                           fmt::format("{} is a default stream, which cannot join a capture",
                                       describe(s)))};
    }
    if (s->backend != ce.origin->backend || s->device != ce.origin->device) {
      return {true,
              refuse(fn, ce, fmt::format("{} is of another device than the capture", describe(s)))};
    }
    add_stream(ce, s);
    r.streams[s] = &ce;
  }
  const CapturedEvent ev = ce.events.at(e);
  const uint32_t idx = index_of(ce, s);
  auto& seen = ce.seen[idx];
  for (size_t j = 0; j < ev.clock.size(); ++j) seen[j] = std::max(seen[j], ev.clock[j]);
  GraphOp op;
  op.kind = OpKind::event_wait;
  const size_t at = record_locked(ce, idx, std::move(op));
  ce.graph->edges.emplace_back(ev.op_index, at);
  return {true, ACCEL_SUCCESS};
}

}  // namespace

Recorded record_wait(const char* fn, accel_stream_s* s, accel_event_s* e) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Capture* cs = capture_of(r, s);
  Capture* ce = nullptr;
  if (auto it = r.events.find(e); it != r.events.end()) ce = it->second;
  if (cs == nullptr && ce == nullptr) return {};
  if (cs != nullptr && cs->invalidated) return {true, invalidated_status(fn, *cs)};
  if (ce != nullptr && ce->invalidated) return {true, invalidated_status(fn, *ce)};
  if (cs != nullptr && ce == nullptr) {
    if (!e->recorded.load(std::memory_order_acquire)) return {};  // nothing to wait for
    return {true, refuse(fn, *cs,
                         "it waits on an event recorded outside the capture: only work of the "
                         "capture may be waited for in it (CUDA's capture isolation)")};
  }
  if (cs != nullptr && cs != ce) {
    refuse(fn, *ce, "a stream of another capture waits on an event of this one");
    return {true, refuse(fn, *cs, "it waits on an event recorded in another capture")};
  }
  return join_wait(fn, r, cs, *ce, s, e);
}

Recorded alloc_in_capture(const char* fn, accel_stream_s* s, size_t bytes, const void* caller,
                          void** ptr) {
  Registry& r = registry();
  uint64_t id = 0;
  {
    std::lock_guard lock(r.mutex);
    Capture* c = capture_of(r, s);
    if (c == nullptr) return {};
    if (c->invalidated) return {true, invalidated_status(fn, *c)};
    id = c->id;
    GraphOp op;
    op.kind = OpKind::alloc;
    op.bytes = bytes;
    for (GraphPool::Block& blk : c->graph->pool->blocks) {
      if (blk.in_use || blk.bytes < bytes) continue;
      blk.in_use = true;  // freed earlier in a capture of this pool: stream order keeps it safe
      op.dst = blk.ptr;
      record_locked(*c, index_of(*c, s), std::move(op));
      *ptr = blk.ptr;
      return {true, ACCEL_SUCCESS};
    }
  }
  // The allocator may wait for device work: not under the registry's lock.
  void* p = nullptr;
  if (auto st = allocate_device_memory(fn, *s->backend, s->device, s, bytes, caller, &p);
      st != ACCEL_SUCCESS)
    return {true, st};
  {
    std::lock_guard lock(r.mutex);
    Capture* c = capture_of(r, s);
    if (c != nullptr && c->id == id && !c->invalidated) {
      c->graph->pool->blocks.push_back({p, bytes, true});
      record_locked(*c, index_of(*c, s), {.kind = OpKind::alloc, .dst = p, .bytes = bytes});
      *ptr = p;
      return {true, ACCEL_SUCCESS};
    }
  }
  free_device_memory(fn, p, false, nullptr, caller);
  return {true,
          failf(ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED,
                "{}: the capture of {} ended or was invalidated during the call", fn, describe(s))};
}

Recorded free_in_capture(const char* fn, accel_stream_s* s, void* ptr) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Capture* c = capture_of(r, s);
  if (c == nullptr) return {};
  if (c->invalidated) return {true, invalidated_status(fn, *c)};
  for (GraphPool::Block& blk : c->graph->pool->blocks) {
    if (blk.ptr != ptr || !blk.in_use) continue;
    blk.in_use = false;
    GraphOp op;
    op.kind = OpKind::free;
    op.dst = ptr;
    op.bytes = blk.bytes;
    record_locked(*c, index_of(*c, s), std::move(op));
    return {true, ACCEL_SUCCESS};
  }
  return {true, refuse(fn, *c,
                       fmt::format("{} was not allocated in this capture's pool: memory from "
                                   "outside the capture cannot be freed in it",
                                   ptr))};
}

accel_status_t refuse_captured_stream(const char* fn, const accel_stream_s* s) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Capture* c = capture_of(r, s);
  if (c == nullptr) return ACCEL_SUCCESS;
  return refuse(fn, *c,
                fmt::format("{} is in the capture: its work is recorded, not run", describe(s)));
}

accel_status_t refuse_captured_event(const char* fn, const accel_event_s* e) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.events.find(e);
  if (it == r.events.end()) return ACCEL_SUCCESS;
  return refuse(fn, *it->second, "the event was recorded in the capture: it is never completed");
}

accel_status_t refuse_device_capture(const char* fn, const Backend* b, int32_t device) {
  return refuse_where(fn, "it waits for the capturing device", [&](const Capture& c) {
    return c.origin->backend == b && c.origin->device == device;
  });
}

accel_status_t refuse_unsafe(const char* fn, const Backend* b, int32_t device) {
  const std::thread::id self = std::this_thread::get_id();
  return refuse_where(fn, "it is unsafe on the capturing device in the capture's mode",
                      [&](const Capture& c) {
                        if (c.origin->backend != b || c.origin->device != device) return false;
                        return c.mode == ACCEL_CAPTURE_MODE_GLOBAL ||
                               (c.mode == ACCEL_CAPTURE_MODE_THREAD_LOCAL && c.thread == self);
                      });
}

void on_stream_destroy(accel_stream_s* s) {
  Registry& r = registry();
  Release rel;
  {
    std::lock_guard lock(r.mutex);
    Capture* c = capture_of(r, s);
    if (c == nullptr) return;
    if (c->origin != s) {
      invalidate(*c, fmt::format("{}, which joined the capture, was destroyed", describe(s)));
      c->streams[index_of(*c, s)] = nullptr;
      r.streams.erase(s);
      return;
    }
    std::unique_ptr<Capture> owned = end_locked(r, c);
    release_graph_locked(r, *owned->graph, rel);
  }
  free_blocks(rel);
}

void on_event_destroy(const accel_event_s* e) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.events.find(e);
  if (it == r.events.end()) return;
  it->second->events.erase(e);
  r.events.erase(it);
}

uint32_t graphs_holding(const accel_module_s* m) {
  return m->graph_holds.load(std::memory_order_acquire);
}

accel_status_t begin_capture(const char* fn, accel_stream_s* s, accel_capture_mode_t mode,
                             uint64_t pool) {
  if (s->is_default) {
    return failf(ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                 "{}: {} is a default stream; capture on a stream made by accel_stream_create "
                 "(as torch requires on CUDA)",
                 fn, describe(s));
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (Capture* c = capture_of(r, s); c != nullptr)
    return refuse(fn, *c, fmt::format("{} is already in a capture: nested capture", describe(s)));
  GraphPool* p = nullptr;
  if (pool == 0) {
    auto owned = std::make_unique<GraphPool>();
    owned->id = r.next_pool++;
    owned->backend = s->backend;
    owned->device = s->device;
    p = owned.get();
    r.pools[p->id] = std::move(owned);
  } else if (auto it = r.pools.find(pool); it == r.pools.end()) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: pool {} is not a graph pool handle (accel_graph_pool_handle, "
                 "accel_graph_pool) of a live pool",
                 fn, pool);
  } else if (p = it->second.get(); p->backend != s->backend || p->device != s->device) {
    return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                 "{}: pool {} belongs to {} device {} but the stream to {} device {}", fn, pool,
                 p->backend->name, p->device, s->backend->name, s->device);
  }
  ++p->users;
  auto c = std::make_unique<Capture>();
  c->id = r.next_capture++;
  c->origin = s;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  if (trace_on()) c->trace_start_ns = trace_now_ns();
  c->graph = std::make_unique<accel_graph_s>();
  c->graph->backend = s->backend;
  c->graph->device = s->device;
  c->graph->pool = p;
  add_stream(*c, s);
  r.streams[s] = c.get();
  r.captures.push_back(std::move(c));
  g_captures.fetch_add(1, std::memory_order_acq_rel);
  return ACCEL_SUCCESS;
}

namespace {

// The first stream of `c` the origin is not ordered after, or nullptr.
const accel_stream_s* unjoined(const Capture& c) {
  for (size_t j = 1; j < c.streams.size(); ++j)
    if (c.seen[0][j] < c.count[j]) return c.streams[j];
  return nullptr;
}

}  // namespace

accel_status_t end_capture(const char* fn, accel_stream_s* s, accel_graph_s** graph) {
  Registry& r = registry();
  Release rel;
  TraceCapture slice;
  accel_status_t st = ACCEL_SUCCESS;
  {
    std::lock_guard lock(r.mutex);
    Capture* c = capture_of(r, s);
    if (c == nullptr)
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is not capturing", fn, describe(s));
    if (c->origin != s) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: {} joined the capture begun on {}: end the capture there", fn, describe(s),
                   describe(c->origin));
    }
    std::unique_ptr<Capture> owned = end_locked(r, c);
    slice = {.start_ns = owned->trace_start_ns,
             .device = s->device,
             .operations = owned->graph->ops.size(),
             .streams = owned->streams.size()};
    if (owned->invalidated) {
      st = invalidated_status(fn, *owned);
    } else if (const accel_stream_s* lost = unjoined(*owned); lost != nullptr) {
      st = failf(ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED,
                 "{}: {} joined the capture and did not rejoin {} (the origin must wait on an "
                 "event recorded on it after its last captured work); the capture ended with no "
                 "graph",
                 fn, describe(lost), describe(s));
    }
    if (st == ACCEL_SUCCESS) {
      accel_graph_s* g = owned->graph.release();
      r.graphs.insert(g);
      *graph = g;
    } else {
      release_graph_locked(r, *owned->graph, rel);
    }
  }
  if (slice.start_ns != 0) trace_capture(slice, st);
  if (st == ACCEL_SUCCESS) return st;
  LastErrorScope keep;  // the status's message, not the release's
  free_blocks(rel);
  return st;
}

bool in_capture(const accel_stream_s* s) {
  if (!capturing_anywhere()) return false;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return capture_of(r, s) != nullptr;
}

accel_capture_status_t capture_status(const accel_stream_s* s) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const Capture* c = capture_of(r, s);
  if (c == nullptr) return ACCEL_CAPTURE_STATUS_NONE;
  return c->invalidated ? ACCEL_CAPTURE_STATUS_INVALIDATED : ACCEL_CAPTURE_STATUS_ACTIVE;
}

accel_status_t check_graph(const char* fn, const accel_graph_s* g) {
  if (g == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: graph is NULL", fn);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.graphs.count(g) == 0) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: graph {} is not a live graph (destroyed?)", fn,
                 static_cast<const void*>(g));
  }
  return ACCEL_SUCCESS;
}

accel_status_t begin_replay(const char* fn, accel_graph_s* g, accel_stream_s* s) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (Capture* c = capture_of(r, s); c != nullptr)
    return refuse(fn, *c,
                  fmt::format("it replays a graph into {}, which is capturing", describe(s)));
  auto& streams = g->pool->replay_streams;
  const std::pair<accel_stream_s*, uint32_t> key{s, s->generation.load(std::memory_order_acquire)};
  if (std::find(streams.begin(), streams.end(), key) == streams.end()) streams.push_back(key);
  return ACCEL_SUCCESS;
}

accel_status_t destroy_graph(const char* fn, accel_graph_s* g) {
  Registry& r = registry();
  Release rel;
  {
    std::lock_guard lock(r.mutex);
    if (g == nullptr || r.graphs.erase(g) == 0) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: graph is {}", fn,
                   g == nullptr ? "NULL" : "not a live graph (destroyed?)");
    }
    release_graph_locked(r, *g, rel);
  }
  free_blocks(rel);
  destroy_native_segments(*g);
  delete g;
  return ACCEL_SUCCESS;
}

uint64_t new_pool_handle(Backend* b, int32_t device) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto p = std::make_unique<GraphPool>();
  p->id = r.next_pool++;
  p->backend = b;
  p->device = device;
  p->from_handle = true;
  const uint64_t id = p->id;
  r.pools[id] = std::move(p);
  return id;
}

accel_status_t graph_pool_id(const char* fn, const accel_graph_s* g, uint64_t* pool) {
  if (auto st = check_graph(fn, g); st != ACCEL_SUCCESS) return st;
  if (pool == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: pool is NULL", fn);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  *pool = g->pool->id;
  return ACCEL_SUCCESS;
}

std::vector<GraphPool> graph_pools_of(const Backend* b, int32_t device) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<GraphPool> out;
  for (const auto& [id, p] : r.pools) {
    if (p->backend != b || p->device != device) continue;
    GraphPool view;
    view.id = p->id;
    view.backend = p->backend;
    view.device = p->device;
    view.users = p->users;
    view.from_handle = p->from_handle;
    view.blocks = p->blocks;
    out.push_back(std::move(view));
  }
  std::sort(out.begin(), out.end(),
            [](const GraphPool& x, const GraphPool& y) { return x.id < y.id; });
  return out;
}

}  // namespace accel::core
