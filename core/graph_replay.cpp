// Graph instantiation and replay (docs/graphs.md, "Backends"): a graph's
// recorded operations split into segments, each either recorded once into
// the vendor's executable graph (ABI 1.4's graph group) or re-issued by the
// core through the plugin's table at every replay. The capture rules were
// enforced when the operations were recorded (graph.cpp); nothing here
// checks an operation's arguments again.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "callbacks.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "log.hpp"
#include "module.hpp"
#include "trace.hpp"

namespace accel::core {

namespace {

// ACCEL_GRAPHS=recorder: every graph is re-issued by the core, even where
// the vendor has graphs (to compare the two paths, or to step around a
// vendor's bug). "native" or unset: the vendor's graphs where the plugin
// offers them. Read once.
bool recorder_forced() {
  static const bool forced = [] {
    const char* v = secure_getenv("ACCEL_GRAPHS");
    if (v == nullptr || *v == '\0' || std::string_view(v) == "native") return false;
    if (std::string_view(v) == "recorder") return true;
    log().warn("ACCEL_GRAPHS='{}' ignored: expected 'native' or 'recorder'", v);
    return false;
  }();
  return forced;
}

// The vendor's words for `device`'s native graphs, or nullptr.
const char* native_support(const Backend& b, int32_t device) {
  if ((b.capabilities & ACCEL_PLUGIN_CAP_GRAPHS) == 0) return nullptr;
  const char* text = nullptr;
  call_plugin(b, "graph_support", [&] {
    text = b.api.graph_support(device);
    return ACCEL_SUCCESS;
  });
  return text;
}

// What a replay queues for one operation; the kinds that queue nothing
// (event order, pool blocks) are kept by the order of the others.
bool queues_work(OpKind k) {
  return k == OpKind::kernel || k == OpKind::copy || k == OpKind::memset ||
         k == OpKind::peer_copy || k == OpKind::host_func;
}

// One of the four operations a native recording takes, issued on the plugin
// stream `native` (a stream or a recording handle).
accel_status_t issue_device_op(const Backend& b, const GraphOp& op, accel_plugin_stream_t native) {
  switch (op.kind) {
    case OpKind::kernel:
      return call_plugin(b, "launch_kernel", [&] {
        return b.api.launch_kernel(op.kernel->native, op.grid, op.block, op.shared_bytes,
                                   op.args.data(), op.args.size(), native);
      });
    case OpKind::copy:
      return call_plugin(b, "memcpy_async", [&] {
        return b.api.memcpy_async(op.dst, op.src, op.bytes, op.copy_kind, native);
      });
    case OpKind::memset:
      return call_plugin(b, "memset_async",
                         [&] { return b.api.memset_async(op.dst, op.value, op.bytes, native); });
    case OpKind::peer_copy:
      return call_plugin(b, "memcpy_peer_async", [&] {
        return b.api.memcpy_peer_async(op.dst, op.dst_device, op.src, op.src_device, op.bytes,
                                       native);
      });
    default:
      return ACCEL_ERROR_NOT_SUPPORTED;  // host functions stay with the core
  }
}

// A host function of a replay: the core's trampoline, as
// accel_launch_host_func queues it, so the host-function rules hold.
accel_status_t replay_host_func(Backend& b, const GraphOp& op, accel_stream_s* s) {
  auto call = std::make_unique<HostCall>();
  call->fn = op.fn;
  call->user_data = op.user_data;
  call->stream = s;
  call->stream_generation = s->generation.load(std::memory_order_acquire);
  call->backend = &b;
  call->device = s->device;
  call->sequence = s->sequence.fetch_add(1, std::memory_order_acq_rel) + 1;
  auto st = call_plugin(b, "launch_host_func", [&] {
    return b.api.launch_host_func(s->native, host_call_trampoline, call.get());
  });
  if (st == ACCEL_SUCCESS) call.release();  // the trampoline owns it now
  return st;
}

// The trace's span of one re-issued operation.
SpanInfo span_info(const GraphOp& op) {
  switch (op.kind) {
    case OpKind::kernel:
      return {.kind = SpanKind::kernel,
              .kernel = op.kernel->name.c_str(),
              .grid = op.grid,
              .block = op.block,
              .shared_bytes = static_cast<uint32_t>(op.shared_bytes)};
    case OpKind::copy:
      return {.kind = SpanKind::copy, .bytes = op.bytes, .copy_kind = op.copy_kind};
    case OpKind::memset: return {.kind = SpanKind::memset, .bytes = op.bytes};
    case OpKind::peer_copy: return {.kind = SpanKind::peer_copy, .bytes = op.bytes};
    default: return {.kind = SpanKind::host_func};
  }
}

// Queues one recorded operation on `s` the way the core's recorder does.
accel_status_t reissue_op(Backend& b, const GraphOp& op, accel_stream_s* s) {
  if (!queues_work(op.kind)) return ACCEL_SUCCESS;
  TraceSpan span(s);
  const accel_status_t st = op.kind == OpKind::host_func ? replay_host_func(b, op, s)
                                                         : issue_device_op(b, op, s->native);
  if (span) span.end(st, span_info(op));
  return st;
}

// Builds a graph's segments, recording into the vendor's graph what the
// plugin takes.
class SegmentBuilder {
 public:
  SegmentBuilder(Backend& b, accel_graph_s& g) : b_(b), g_(g) {}
  ~SegmentBuilder() {
    if (rec_ != nullptr) end_recording(false);
    for (const GraphSegment& seg : out_)
      if (seg.exec != nullptr) b_.api.graph_exec_destroy(seg.exec);
  }

  accel_status_t build() {
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      if (auto st = place(i); st != ACCEL_SUCCESS) return st;
    }
    if (rec_ != nullptr) return end_recording(true);
    return ACCEL_SUCCESS;
  }
  std::vector<GraphSegment> take() { return std::move(out_); }

 private:
  // Puts op i in the open native segment when the plugin records it, else
  // in a re-issued segment.
  accel_status_t place(size_t i) {
    const GraphOp& op = g_.ops[i];
    if (!queues_work(op.kind)) {  // joins whatever segment is open
      extend(i, open_);
      return ACCEL_SUCCESS;
    }
    if (!native_off_ && op.kind != OpKind::host_func) {
      if (rec_ == nullptr) {
        if (auto st = begin_recording(i); st != ACCEL_SUCCESS) return st;
      }
      if (rec_ != nullptr) {
        const accel_status_t st = issue_device_op(b_, op, rec_);
        if (st == ACCEL_SUCCESS) {
          ++recorded_;
          extend(i, true);
          return ACCEL_SUCCESS;
        }
        if (st != ACCEL_ERROR_NOT_SUPPORTED) return st;
        log().debug("graph of {} device {}: operation {} ({}) re-issued by the core: {}", b_.name,
                    g_.device, i, static_cast<int>(op.kind), last_error());
      }
    }
    if (rec_ != nullptr) {
      if (auto st = end_recording(true); st != ACCEL_SUCCESS) return st;
    }
    extend(i, false);
    return ACCEL_SUCCESS;
  }

  accel_status_t begin_recording(size_t i) {
    const accel_status_t st = call_plugin(
        b_, "graph_record_begin", [&] { return b_.api.graph_record_begin(g_.device, &rec_); });
    if (st == ACCEL_ERROR_NOT_SUPPORTED) {
      native_off_ = true;  // the core re-issues the whole graph
      rec_ = nullptr;
      return ACCEL_SUCCESS;
    }
    if (st != ACCEL_SUCCESS) {
      rec_ = nullptr;
      return st;
    }
    recorded_ = 0;
    out_.push_back({.exec = nullptr, .first = i, .last = i});
    open_ = true;
    return ACCEL_SUCCESS;
  }

  // Ends the open recording: its segment gets the exec, or (nothing kept)
  // becomes a re-issued one.
  accel_status_t end_recording(bool keep) {
    accel_plugin_stream_t rec = rec_;
    rec_ = nullptr;
    open_ = false;
    keep = keep && recorded_ > 0;
    accel_plugin_graph_t exec = nullptr;
    const accel_status_t st = call_plugin(b_, "graph_record_end", [&] {
      return b_.api.graph_record_end(rec, keep ? 1 : 0, keep ? &exec : nullptr);
    });
    if (st == ACCEL_SUCCESS && keep) out_.back().exec = exec;
    return st;
  }

  // Op i joins the open recording's segment (native), or the last segment
  // when that is re-issued, or starts a re-issued one.
  void extend(size_t i, bool native) {
    if (native || (!out_.empty() && out_.back().exec == nullptr)) {
      out_.back().last = i + 1;
      return;
    }
    out_.push_back({.exec = nullptr, .first = i, .last = i + 1});
  }

  Backend& b_;
  accel_graph_s& g_;
  std::vector<GraphSegment> out_;
  accel_plugin_stream_t rec_ = nullptr;
  bool open_ = false;  // out_.back() is the open recording's segment
  size_t recorded_ = 0;
  bool native_off_ = false;
};

}  // namespace

accel_status_t instantiate_graph(accel_graph_s& g) {
  if (g.instantiated.load(std::memory_order_acquire)) return ACCEL_SUCCESS;
  std::lock_guard lock(g.instantiate_mutex);
  if (g.instantiated.load(std::memory_order_acquire)) return ACCEL_SUCCESS;
  Backend& b = *g.backend;
  if (!recorder_forced() && native_support(b, g.device) != nullptr) {
    SegmentBuilder builder(b, g);
    if (auto st = builder.build(); st != ACCEL_SUCCESS) return st;
    g.segments = builder.take();
  } else {
    g.segments = {{.exec = nullptr, .first = 0, .last = g.ops.size()}};
  }
  g.instantiated.store(true, std::memory_order_release);
  return ACCEL_SUCCESS;
}

accel_status_t replay_graph(accel_graph_s& g, accel_stream_s* s) {
  Backend& b = *g.backend;
  for (const GraphSegment& seg : g.segments) {
    if (seg.exec != nullptr) {
      TraceSpan span(s);
      const accel_status_t st = call_plugin(
          b, "graph_launch", [&] { return b.api.graph_launch(seg.exec, s->native); });
      if (span) span.end(st, {.kind = SpanKind::graph, .bytes = seg.last - seg.first});
      if (st != ACCEL_SUCCESS) return st;
      continue;
    }
    for (size_t i = seg.first; i < seg.last; ++i) {
      if (auto st = reissue_op(b, g.ops[i], s); st != ACCEL_SUCCESS) return st;
    }
  }
  return ACCEL_SUCCESS;
}

void destroy_native_segments(accel_graph_s& g) {
  for (GraphSegment& seg : g.segments) {
    if (seg.exec == nullptr) continue;
    g.backend->api.graph_exec_destroy(seg.exec);
    seg.exec = nullptr;
  }
}

void describe_graph_support(const Backend& b, int32_t device, char* out, size_t size) {
  const char* native = native_support(b, device);
  std::string text;
  if (native == nullptr)
    text = "recorded by accel";
  else if (recorder_forced())
    text = "recorded by accel (ACCEL_GRAPHS=recorder)";
  else
    text = fmt::format("native ({})", native);
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace accel::core
