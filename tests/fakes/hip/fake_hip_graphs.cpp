// Stream capture and graphs of the fake HIP runtime, modelled from AMD's
// HIP documentation (HIP Runtime API, "Graph Management" and "Stream
// Management"), which follows CUDA's rules:
//  - hipStreamBeginCapture puts a created stream in capture (the null stream
//    and hipStreamPerThread are refused with hipErrorStreamCaptureUnsupported,
//    a stream already capturing with hipErrorIllegalState); every mode is
//    accepted and behaves as hipStreamCaptureModeRelaxed (no call on another
//    thread is refused);
//  - work queued on a capturing stream (kernel launches, with their
//    arguments copied at the call; copies, fills, peer copies, host
//    functions and callbacks) is recorded, not run (fake_hip.cpp's submit
//    asks capture_take first);
//  - hipStreamSynchronize and hipStreamQuery of a capturing stream, and the
//    event calls on it (hipEventRecord, hipStreamWaitEvent: not modelled in
//    captures) return hipErrorStreamCaptureUnsupported and invalidate the
//    capture; work queued on an invalidated capture is refused with
//    hipErrorStreamCaptureInvalidated, and so is its hipStreamEndCapture,
//    which gives no graph;
//  - hipGraphInstantiate copies the graph's operations, so the graph may be
//    destroyed at once; hipGraphLaunch queues them, in their order, as one
//    operation of the launch stream (after its earlier work; a launch may
//    follow before earlier ones complete); hipGraphExecDestroy returns at
//    once and the operations are freed when the last queued launch is done.
// Test hooks: fake_hip_graph_launches() counts accepted hipGraphLaunch
// calls; fake_hip_live_graph_execs() counts executable graphs whose
// operations are still held (not destroyed, or launches still queued);
// fake_hip_live_graphs() counts graphs not destroyed.
#include <hip/hip_runtime_api.h>

#include "fake_hip_internal.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Ops = std::vector<std::function<void()>>;

std::atomic<int> g_launches{0};
std::atomic<int> g_live_bodies{0};

// What an executable graph runs; shared by the exec and its queued launches.
struct Body {
  Ops ops;
  explicit Body(Ops o) : ops(std::move(o)) { g_live_bodies.fetch_add(1); }
  Body(const Body&) = delete;
  Body& operator=(const Body&) = delete;
  ~Body() { g_live_bodies.fetch_sub(1); }
};

struct Capture {
  unsigned long long id = 0;
  bool invalidated = false;
  Ops ops;
};

}  // namespace

// The handle types of the HIP headers, defined here.
struct ihipGraph {
  int device = 0;
  Ops ops;
};

struct hipGraphExec {
  int device = 0;
  std::shared_ptr<const Body> body;
};

namespace {

struct Graphs {
  std::mutex mu;
  std::map<const ihipStream_t*, Capture> captures;
  std::set<ihipGraph*> graphs;
  std::set<hipGraphExec*> execs;
  unsigned long long next_id = 1;
};

Graphs& graphs() {
  static Graphs* g = new Graphs();  // never destroyed: stream workers may outlive main
  return *g;
}

hipStreamCaptureStatus status_of(const ihipStream_t* s, unsigned long long* id) {
  Graphs& g = graphs();
  std::lock_guard lock(g.mu);
  auto it = g.captures.find(s);
  if (it == g.captures.end()) return hipStreamCaptureStatusNone;
  if (id != nullptr) *id = it->second.id;
  return it->second.invalidated ? hipStreamCaptureStatusInvalidated
                                : hipStreamCaptureStatusActive;
}

}  // namespace

namespace fake_hip {

bool capture_take(const ihipStream_t* stream, std::function<void()>& work, bool is_record,
                  hipError_t& rc) {
  Graphs& g = graphs();
  std::lock_guard lock(g.mu);
  auto it = g.captures.find(stream);
  if (it == g.captures.end()) return false;
  Capture& c = it->second;
  if (c.invalidated) {
    rc = hipErrorStreamCaptureInvalidated;
  } else if (is_record) {
    c.invalidated = true;
    rc = hipErrorStreamCaptureUnsupported;
  } else {
    if (work) c.ops.push_back(std::move(work));
    rc = hipSuccess;
  }
  return true;
}

hipError_t capture_refuse(const ihipStream_t* stream) {
  Graphs& g = graphs();
  std::lock_guard lock(g.mu);
  auto it = g.captures.find(stream);
  if (it == g.captures.end()) return hipSuccess;
  it->second.invalidated = true;
  return hipErrorStreamCaptureUnsupported;
}

void capture_forget(const ihipStream_t* stream) {
  Graphs& g = graphs();
  std::lock_guard lock(g.mu);
  g.captures.erase(stream);
}

}  // namespace fake_hip

// --- capture ------------------------------------------------------------------

FAKE_EXPORT hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode) {
  if (hipError_t rc = fake_hip::initialise(); rc != hipSuccess) return rc;
  if (mode != hipStreamCaptureModeGlobal && mode != hipStreamCaptureModeThreadLocal &&
      mode != hipStreamCaptureModeRelaxed)
    return hipErrorInvalidValue;
  if (stream == nullptr || stream == hipStreamPerThread) return hipErrorStreamCaptureUnsupported;
  ihipStream_t* s = fake_hip::stream_of(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  Graphs& g = graphs();
  std::lock_guard lock(g.mu);
  if (g.captures.count(s) != 0) return hipErrorIllegalState;
  g.captures[s].id = g.next_id++;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph) {
  if (graph == nullptr) return hipErrorInvalidValue;
  if (hipError_t rc = fake_hip::initialise(); rc != hipSuccess) return rc;
  ihipStream_t* s = fake_hip::stream_of(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  Graphs& g = graphs();
  std::lock_guard lock(g.mu);
  auto it = g.captures.find(s);
  if (it == g.captures.end()) return hipErrorIllegalState;
  Capture c = std::move(it->second);
  g.captures.erase(it);
  *graph = nullptr;
  if (c.invalidated) return hipErrorStreamCaptureInvalidated;
  auto made = std::make_unique<ihipGraph>();
  made->device = fake_hip::device_of(s);
  made->ops = std::move(c.ops);
  g.graphs.insert(made.get());
  *graph = made.release();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus* status) {
  if (status == nullptr) return hipErrorInvalidValue;
  if (hipError_t rc = fake_hip::initialise(); rc != hipSuccess) return rc;
  ihipStream_t* s = fake_hip::stream_of(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  *status = status_of(s, nullptr);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamGetCaptureInfo(hipStream_t stream, hipStreamCaptureStatus* status,
                                               unsigned long long* id) {
  if (status == nullptr) return hipErrorInvalidValue;
  if (hipError_t rc = fake_hip::initialise(); rc != hipSuccess) return rc;
  ihipStream_t* s = fake_hip::stream_of(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  *status = status_of(s, id);
  return hipSuccess;
}

// --- graphs -------------------------------------------------------------------

FAKE_EXPORT hipError_t hipGraphDestroy(hipGraph_t graph) {
  Graphs& g = graphs();
  {
    std::lock_guard lock(g.mu);
    if (g.graphs.erase(graph) == 0) return hipErrorInvalidValue;
  }
  delete graph;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph,
                                           hipGraphNode_t* error_node, char* log, size_t log_size) {
  if (exec == nullptr) return hipErrorInvalidValue;
  if (error_node != nullptr) *error_node = nullptr;
  if (log != nullptr && log_size > 0) log[0] = '\0';
  Graphs& g = graphs();
  std::lock_guard lock(g.mu);
  if (g.graphs.count(graph) == 0) return hipErrorInvalidValue;
  auto made = std::make_unique<hipGraphExec>();
  made->device = graph->device;
  made->body = std::make_shared<const Body>(graph->ops);  // the graph may go at once
  g.execs.insert(made.get());
  *exec = made.release();
  return hipSuccess;
}

// HIP 4.5 and later (Debian's 5.2 exports it): flags 0 or
// hipGraphInstantiateFlagAutoFreeOnLaunch (the fake allocates no graph memory).
FAKE_EXPORT hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* exec, hipGraph_t graph,
                                                    unsigned long long flags) {
  if ((flags & ~static_cast<unsigned long long>(hipGraphInstantiateFlagAutoFreeOnLaunch)) != 0)
    return hipErrorInvalidValue;
  return hipGraphInstantiate(exec, graph, nullptr, nullptr, 0);
}

FAKE_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  if (hipError_t rc = fake_hip::initialise(); rc != hipSuccess) return rc;
  std::shared_ptr<const Body> body;
  int device = 0;
  {
    Graphs& g = graphs();
    std::lock_guard lock(g.mu);
    if (g.execs.count(exec) == 0) return hipErrorInvalidValue;
    body = exec->body;
    device = exec->device;
  }
  ihipStream_t* s = fake_hip::stream_of(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  // The fake's own strictness: a graph runs on streams of its device.
  if (fake_hip::device_of(s) != device) return hipErrorInvalidValue;
  hipError_t rc = fake_hip::enqueue(s, [body] {
    for (const auto& op : body->ops) op();
  });
  if (rc == hipSuccess) g_launches.fetch_add(1);
  return rc;
}

FAKE_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  Graphs& g = graphs();
  {
    std::lock_guard lock(g.mu);
    if (g.execs.erase(exec) == 0) return hipErrorInvalidValue;
  }
  delete exec;  // queued launches keep the body until they have run
  return hipSuccess;
}

// --- test hooks -----------------------------------------------------------------

FAKE_EXPORT int fake_hip_graph_launches(void) { return g_launches.load(); }

FAKE_EXPORT int fake_hip_live_graph_execs(void) { return g_live_bodies.load(); }

FAKE_EXPORT int fake_hip_live_graphs(void) {
  std::lock_guard lock(graphs().mu);
  return static_cast<int>(graphs().graphs.size());
}
