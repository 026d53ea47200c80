// Graphs' entry points: stream capture, instantiation and replay, pools and
// the DOT dump (docs/graphs.md). The capture registry is graph.cpp, the
// replay graph_replay.cpp.
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
    if (auto st = ensure_ready(*graph->backend); st != ACCEL_SUCCESS) return st;
    return instantiate_graph(*graph);
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
    if (auto st = instantiate_graph(*graph); st != ACCEL_SUCCESS) return st;
    if (auto st = begin_replay(fn, graph, stream); st != ACCEL_SUCCESS) return st;
    return replay_graph(*graph, stream);
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
