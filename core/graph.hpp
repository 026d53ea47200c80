// The core's graph recorder (docs/graphs.md): while a stream captures, the
// stream operations are checked as usual and then handed to record_op()
// instead of the plugin; a replay re-issues the recorded operations through
// the plugin's table on the replay stream. The capture rules (what a
// capture refuses, fork and join) are enforced here for every backend.
//
// Every hook is called only when capturing_anywhere() says some capture
// exists, so a program that never captures pays one atomic load per
// operation.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "accel/accel.h"
#include "backend.hpp"
#include "handles.hpp"

struct accel_kernel_s;
struct accel_module_s;

namespace accel::core {

// Captures alive (active or invalidated, not yet ended).
extern std::atomic<int> g_captures;

[[gnu::always_inline]] inline bool capturing_anywhere() {
  return g_captures.load(std::memory_order_acquire) != 0;
}

enum class OpKind : uint8_t {
  kernel,
  copy,
  memset,
  peer_copy,
  host_func,
  event_record,
  event_wait,
  alloc,
  free,
};

// One recorded operation, with everything its replay needs: the checks
// were done when it was recorded.
struct GraphOp {
  OpKind kind = OpKind::kernel;
  uint32_t stream_index = 0;  // which stream of the capture queued it
  accel_kernel_s* kernel = nullptr;
  accel_dim3_t grid{};
  accel_dim3_t block{};
  size_t shared_bytes = 0;
  std::vector<accel_kernel_arg_t> args{};  // VALUE entries point into arg_bytes
  std::unique_ptr<unsigned char[]> arg_bytes{};
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  accel_memcpy_kind_t copy_kind = ACCEL_MEMCPY_DEVICE_TO_DEVICE;
  int value = 0;
  int32_t dst_device = 0;
  int32_t src_device = 0;
  accel_host_fn fn = nullptr;
  void* user_data = nullptr;
};

// The operations a launch records: the arguments' bytes copied now.
GraphOp kernel_op(accel_kernel_s* k, accel_dim3_t grid, accel_dim3_t block, size_t shared_bytes,
                  const accel_kernel_arg_t* args, size_t num_args);

// Whether the hooks below took the operation: `recorded` true means the
// caller returns `status` (ACCEL_SUCCESS, or the capture's refusal) without
// calling the plugin; false means the stream is not capturing, go on.
struct Recorded {
  bool recorded = false;
  accel_status_t status = ACCEL_SUCCESS;
};

// `op` queued on `s`: recorded when `s` is in a capture, refused with
// ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED when that capture was invalidated.
Recorded record_op(const char* fn, accel_stream_s* s, GraphOp&& op);

// accel_memcpy_async with pageable host memory on `s`: refused (and the
// capture invalidated) when `s` captures, since a replay cannot read or
// write pageable memory asynchronously.
Recorded refuse_pageable_copy(const char* fn, accel_stream_s* s);

// accel_event_record of `e` on `s`: a record in a capture, or a record
// outside one that ends `e`'s membership of an earlier capture.
Recorded record_event(const char* fn, accel_event_s* e, accel_stream_s* s);

// accel_stream_wait_event: a wait on a captured event joins `s` to that
// capture; a capturing stream may wait only on events of its own capture.
Recorded record_wait(const char* fn, accel_stream_s* s, accel_event_s* e);

// accel_malloc_async / accel_free_async on a capturing stream: served from
// and returned to the capture's pool.
Recorded alloc_in_capture(const char* fn, accel_stream_s* s, size_t bytes, const void* caller,
                          void** ptr);
Recorded free_in_capture(const char* fn, accel_stream_s* s, void* ptr);

// Refusals, each ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED naming `fn` and the
// capturing stream, with the capture invalidated; ACCEL_SUCCESS otherwise.
// A wait for or query of a stream in a capture:
accel_status_t refuse_captured_stream(const char* fn, const accel_stream_s* s);
// A wait for or query of an event recorded in a capture:
accel_status_t refuse_captured_event(const char* fn, const accel_event_s* e);
// accel_synchronize of a device with a capture (any mode):
accel_status_t refuse_device_capture(const char* fn, const Backend* b, int32_t device);
// The calls a GLOBAL capture refuses from every thread and a THREAD_LOCAL
// one from its own (accel_malloc, accel_free, empty_cache, module load and
// unload on the capturing device):
accel_status_t refuse_unsafe(const char* fn, const Backend* b, int32_t device);

// Whether `s` is in a capture (the stream sanitizer skips recorded work).
bool in_capture(const accel_stream_s* s);

// accel_stream_destroy of a stream in a capture: the capture it began ends
// (discarded), the capture it joined is invalidated.
void on_stream_destroy(accel_stream_s* s);
// accel_event_destroy: a captured event leaves its capture.
void on_event_destroy(const accel_event_s* e);

// The capture registry's lock (fork.cpp takes it after the event pool's and
// before the stream names', the one lock taken under it but the logger's).
std::mutex& graph_registry_mutex();

// Graphs holding kernels of `m` (accel_module_unload refuses while > 0).
uint32_t graphs_holding(const accel_module_s* m);

// --- graphs and pools (api_graph.cpp) ---------------------------------------

// A memory pool of graphs (torch's graph pool): the blocks allocated in the
// captures that use it, reserved until no capture or graph uses it.
struct GraphPool {
  struct Block {
    void* ptr = nullptr;
    size_t bytes = 0;
    bool in_use = false;  // false: freed in a capture, reusable by the next
  };
  uint64_t id = 0;
  Backend* backend = nullptr;
  int32_t device = 0;
  int users = 0;             // captures and graphs using it
  bool from_handle = false;  // made by accel_graph_pool_handle
  std::vector<Block> blocks;
  // Streams replays ran on, with their generation: the blocks go back to
  // the allocator in stream order behind their work.
  std::vector<std::pair<accel_stream_s*, uint32_t>> replay_streams;
};

// A run of a graph's operations that replays as one piece: the vendor's
// executable graph (exec non-NULL, ABI 1.4's graph group) or the core's
// re-issue of ops [first, last) through the plugin's table.
struct GraphSegment {
  accel_plugin_graph_t exec = nullptr;
  size_t first = 0;
  size_t last = 0;
};

}  // namespace accel::core

struct accel_graph_s {
  accel::core::Backend* backend = nullptr;
  int32_t device = 0;
  std::vector<accel::core::GraphOp> ops;
  std::vector<std::pair<size_t, size_t>> edges;  // op -> op it precedes (DOT)
  std::vector<std::string> stream_names;         // of each stream of the capture
  accel::core::GraphPool* pool = nullptr;
  std::vector<accel_module_s*> modules;  // held: unload refused meanwhile
  std::atomic<bool> instantiated{false};
  std::mutex instantiate_mutex;                     // one instantiation at a time
  std::vector<accel::core::GraphSegment> segments;  // set once, before `instantiated`
};

namespace accel::core {

// The entry points' bodies once their arguments are checked (graph.cpp).
accel_status_t begin_capture(const char* fn, accel_stream_s* s, accel_capture_mode_t mode,
                             uint64_t pool);
accel_status_t end_capture(const char* fn, accel_stream_s* s, accel_graph_s** graph);
accel_capture_status_t capture_status(const accel_stream_s* s);
// ACCEL_ERROR_INVALID_ARGUMENT naming `fn` unless `g` is a live graph.
accel_status_t check_graph(const char* fn, const accel_graph_s* g);
// A replay of `g` on `s` may go ahead (s not capturing); notes the stream
// for the pool's release.
accel_status_t begin_replay(const char* fn, accel_graph_s* g, accel_stream_s* s);
accel_status_t destroy_graph(const char* fn, accel_graph_s* g);
uint64_t new_pool_handle(Backend* b, int32_t device);
accel_status_t graph_pool_id(const char* fn, const accel_graph_s* g, uint64_t* pool);
// --- instantiation and replay (graph_replay.cpp) ---------------------------

// accel_graph_instantiate's body, done once per graph (later calls return
// at once): splits the operations into segments, each recorded into the
// vendor's graph where the plugin fills the graph group and takes it, else
// left to the core's re-issue.
accel_status_t instantiate_graph(accel_graph_s& g);
// Queues `g` (instantiated) on `s`, segment by segment.
accel_status_t replay_graph(accel_graph_s& g, accel_stream_s* s);
// At destroy: graph_exec_destroy for each native segment (the plugin frees
// each after the launches already queued).
void destroy_native_segments(accel_graph_s& g);
// accel_device_properties_t.graphs of `device` of `b` (NUL-terminated).
void describe_graph_support(const Backend& b, int32_t device, char* out, size_t size);

// Copies of the graph pools of `device` of `b` in id order (snapshots).
std::vector<GraphPool> graph_pools_of(const Backend* b, int32_t device);

// Frees the blocks of released pools whose replays have completed (under
// backend:native, where frees are not stream-ordered); waits for nothing.
// The graph entry points call it.
void drain_pending();

}  // namespace accel::core
