// Graphs: stream capture, replay through the plugin's table, pools and the
// DOT dump (docs/graphs.md). The capture registry is graph.cpp.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>

#include "callbacks.hpp"
#include "checks.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "module.hpp"
#include "runtime.hpp"

using namespace accel::core;

namespace {

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

// Queues one recorded operation on `s`: checked when it was recorded.
accel_status_t replay_op(Backend& b, const GraphOp& op, accel_stream_s* s) {
  accel_plugin_stream_t native = s->native;
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
    case OpKind::host_func:
      return replay_host_func(b, op, s);
    case OpKind::event_record:  // order inside the capture: kept by capture order
    case OpKind::event_wait:
    case OpKind::alloc:  // the pool's block has the same address at every replay
    case OpKind::free:
      return ACCEL_SUCCESS;
  }
  return ACCEL_SUCCESS;
}

// By OpKind, in its order.
constexpr const char* kKindNames[] = {"kernel",     "memcpy",        "memset",
                                      "peer copy",  "host function", "event record",
                                      "event wait", "malloc_async",  "free_async"};
static_assert(std::size(kKindNames) == static_cast<size_t>(OpKind::free) + 1);

const char* kind_name(OpKind k) {
  const auto i = static_cast<size_t>(k);
  return i < std::size(kKindNames) ? kKindNames[i] : "?";
}

// One node's label: the operation and what it works on.
std::string node_label(const GraphOp& op) {
  switch (op.kind) {
    case OpKind::kernel:
      return fmt::format("kernel {}\\ngrid ({}, {}, {}) block ({}, {}, {})", op.kernel->name,
                         op.grid.x, op.grid.y, op.grid.z, op.block.x, op.block.y, op.block.z);
    case OpKind::copy:
    case OpKind::peer_copy:
      return fmt::format("{}\\n{} bytes {} -> {}", kind_name(op.kind), op.bytes, op.src, op.dst);
    case OpKind::memset:
    case OpKind::alloc:
    case OpKind::free:
      return fmt::format("{}\\n{} bytes at {}", kind_name(op.kind), op.bytes, op.dst);
    default:
      return kind_name(op.kind);
  }
}

// The DOT text of `g`: a cluster per captured stream, an edge per order.
std::string dot_of(const accel_graph_s& g) {
  std::string out = "digraph accel_graph {\n  node [shape=box];\n";
  for (size_t s = 0; s < g.stream_names.size(); ++s) {
    out += fmt::format("  subgraph cluster_{} {{\n    label=\"{}\";\n", s, g.stream_names[s]);
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (g.ops[i].stream_index != s) continue;
      out += fmt::format("    op{} [label=\"{}: {}\"];\n", i, i, node_label(g.ops[i]));
    }
    out += "  }\n";
  }
  for (auto [from, to] : g.edges) out += fmt::format("  op{} -> op{};\n", from, to);
  out += "}\n";
  return out;
}

}  // namespace

extern "C" {

accel_status_t accel_stream_begin_capture(accel_stream_t stream, accel_capture_mode_t mode,
                                          uint64_t pool) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    if (mode != ACCEL_CAPTURE_MODE_GLOBAL && mode != ACCEL_CAPTURE_MODE_THREAD_LOCAL &&
        mode != ACCEL_CAPTURE_MODE_RELAXED) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: unknown capture mode {}", fn,
                   static_cast<int>(mode));
    }
    drain_pending();
    return begin_capture(fn, stream, mode, pool);
  });
}

accel_status_t accel_stream_end_capture(accel_stream_t stream, accel_graph_t* graph) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (graph == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: graph is NULL", fn);
    if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    accel_graph_s* g = nullptr;
    auto st = end_capture(fn, stream, &g);
    if (st == ACCEL_SUCCESS || st == ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED) *graph = g;
    return st;
  });
}

accel_status_t accel_stream_capture_status(accel_stream_t stream, accel_capture_status_t* status) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (status == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: status is NULL", fn);
    if (!live(stream)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is {}", fn,
                   stream == nullptr ? "NULL" : "not a live stream (destroyed?)");
    }
    *status = capture_status(stream);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_graph_instantiate(accel_graph_t graph) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_graph(fn, graph); st != ACCEL_SUCCESS) return st;
    graph->instantiated.store(true, std::memory_order_release);  // nothing to prepare
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_graph_replay(accel_graph_t graph, accel_stream_t stream) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_graph(fn, graph); st != ACCEL_SUCCESS) return st;
    drain_pending();
    Backend& b = *graph->backend;
    if (auto st = ensure_ready(b); st != ACCEL_SUCCESS) return st;
    if (stream == nullptr) {
      if (auto st = current_stream(b, graph->device, stream); st != ACCEL_SUCCESS) return st;
    } else if (auto st = check_stream(fn, stream); st != ACCEL_SUCCESS) {
      return st;
    }
    if (stream->backend != &b || stream->device != graph->device) {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: the graph belongs to {} device {} but the stream to {} device {}", fn,
                   b.name, graph->device, stream->backend->name, stream->device);
    }
    if (auto st = begin_replay(fn, graph, stream); st != ACCEL_SUCCESS) return st;
    graph->instantiated.store(true, std::memory_order_release);
    for (const GraphOp& op : graph->ops) {
      if (auto st = replay_op(b, op, stream); st != ACCEL_SUCCESS) return st;
    }
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_graph_destroy(accel_graph_t graph) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    drain_pending();
    return destroy_graph(fn, graph);
  });
}

accel_status_t accel_graph_debug_dump(accel_graph_t graph, const char* path) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_graph(fn, graph); st != ACCEL_SUCCESS) return st;
    if (path == nullptr || path[0] == '\0')
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: path is NULL or empty", fn);
    const std::string text = dot_of(*graph);
    std::FILE* f = std::fopen(path, "w");
    if (f == nullptr) {
      return failf(ACCEL_ERROR_INTERNAL, "{}: cannot open '{}' for writing: {}", fn, path,
                   std::strerror(errno));
    }
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    const bool closed = std::fclose(f) == 0;
    if (!written || !closed)
      return failf(ACCEL_ERROR_INTERNAL, "{}: could not write '{}'", fn, path);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_graph_pool_handle(int32_t device, uint64_t* pool) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    int32_t target = 0;
    // A NULL pool is refused before the device is looked at.
    const accel_status_t st = pool == nullptr
                                  ? failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: pool is NULL", fn)
                                  : check_device(fn, device, b, target);
    if (st == ACCEL_SUCCESS) *pool = new_pool_handle(b, target);
    return st;
  });
}

accel_status_t accel_graph_pool(accel_graph_t graph, uint64_t* pool) {
  const char* const fn = __func__;
  return guarded(fn, [&] { return graph_pool_id(fn, graph, pool); });
}

}  // extern "C"
