// Stream capture and graphs of the fake CUDA driver, modelled from the CUDA
// Driver API reference (cuStreamBeginCapture_v2, cuStreamEndCapture,
// cuStreamIsCapturing, cuStreamGetCaptureInfo, cuThreadExchangeStreamCaptureMode,
// cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecDestroy,
// cuGraphDestroy) and the CUDA Programming Guide's "Stream Capture".
//
// While a stream captures, the work a call would queue on it (cuLaunchKernel
// with its parameters copied at the call, the async copies and memsets,
// cuMemcpyPeerAsync, cuLaunchHostFunc, cuGraphLaunch) becomes a node of the
// capture's graph instead of running: fake_cuda.cpp's submit() asks
// capture_work() first. Nodes form one chain in capture order (each depends
// on the one before), which is all one stream can capture.
//
// Refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture is
// invalidated): cuStreamSynchronize and cuStreamQuery of a capturing stream,
// cuCtxSynchronize of a context with a capture ("a broader handle which
// encompasses an active stream capture"), and the unsafe calls (cuMemAlloc,
// cuMemFree) where the calling thread's mode prohibits them:
// GLOBAL: the thread has a capture not begun RELAXED, or another thread has
// a GLOBAL one; THREAD_LOCAL: the thread has a capture not begun RELAXED;
// RELAXED: never. Work queued on a stream whose capture was invalidated is
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; cuStreamEndCapture then ends the
// capture with that status and a NULL graph.
//
// An executable graph owns a copy of its graph's nodes (the graph may be
// destroyed after instantiation). cuGraphLaunch queues it as one item on the
// stream; launches of one exec run one after another in launch order, also
// across streams. cuGraphExecDestroy frees the handle at once and the nodes
// when the last queued launch has run ("freed asynchronously on completion").
//
// Not modelled (documented deviations): cuEventRecord and cuStreamWaitEvent
// on a capturing stream (fork and join across streams) answer
// CUDA_ERROR_NOT_SUPPORTED and leave the capture valid; the legacy stream's
// implicit order with blocking capturing streams (the fake's streams never
// synchronise with the legacy stream); cuGraphInstantiateWithFlags takes
// flags 0 only. The copy counters (pinned_copies, pageable_copies,
// peer_copies) and kernel_launches count the calls, captured or not, not
// their replays.
#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_internal.hpp"

struct CUgraphNode_st {
  std::function<void()> run;
};

struct CUgraph_st {
  CUcontext ctx = nullptr;
  std::deque<CUgraphNode_st> nodes;  // a deque: node handles stay valid
};

namespace {

std::atomic<long long> g_live_graphs{0};
std::atomic<long long> g_live_execs{0};
std::atomic<long long> g_graph_launches{0};
std::atomic<uint64_t> g_capture_ids{0};

// What launches of one exec share, freed after the last of them ran.
struct ExecState {
  std::vector<std::function<void()>> nodes;
  std::mutex m;
  std::condition_variable cv;
  uint64_t launched = 0;  // tickets handed out
  uint64_t finished = 0;  // launches that ran, in ticket order
  ExecState() { g_live_execs.fetch_add(1); }
  ~ExecState() { g_live_execs.fetch_sub(1); }
  void run_all() const {
    for (const auto& n : nodes) n();
  }
};

// One capture sequence, keyed by its (origin) stream's queue.
struct Capture {
  uint64_t id = 0;
  CUcontext ctx = nullptr;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  bool invalidated = false;
  CUgraph_st* graph = nullptr;           // being built; handed out by cuStreamEndCapture
  const CUgraphNode_st* last = nullptr;  // the next node's dependency
};

std::mutex g_m;  // the captures and every live graph and exec handle
std::map<void*, Capture> g_captures;
thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool is_special(CUstream h) {
  return h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

// Read as the int a C caller passed: any int is a valid C argument, but a
// C++ load of an enum outside its range (the test's 3) is undefined.
bool valid_mode(CUstreamCaptureMode mode) {
  int m = 0;
  std::memcpy(&m, &mode, sizeof m);
  return m == CU_STREAM_CAPTURE_MODE_GLOBAL || m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
         m == CU_STREAM_CAPTURE_MODE_RELAXED;
}

CUgraph_st* new_graph(CUcontext ctx) {
  auto* g = new CUgraph_st();
  g->ctx = ctx;
  fake_cuda::track(g);
  g_live_graphs.fetch_add(1);
  return g;
}

void delete_graph(CUgraph_st* g) {
  fake_cuda::untrack(g);
  g_live_graphs.fetch_sub(1);
  delete g;
}

// Whether capture `c` makes an unsafe call of this thread refused (the
// thread's mode against the capture's, ThreadExchangeStreamCaptureMode).
// Caller holds g_m.
bool prohibits(const Capture& c) {
  if (t_mode == CU_STREAM_CAPTURE_MODE_RELAXED || c.invalidated) return false;
  const bool own = c.thread == std::this_thread::get_id();
  if (own) return c.mode != CU_STREAM_CAPTURE_MODE_RELAXED;
  return t_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c.mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

}  // namespace

namespace fake_cuda {

Captured capture_work(void* queue, const std::function<void()>& work) {
  std::lock_guard lock(g_m);
  auto it = g_captures.find(queue);
  if (it == g_captures.end()) return Captured::no;
  Capture& c = it->second;
  if (c.invalidated) return Captured::invalidated;
  c.graph->nodes.push_back(CUgraphNode_st{work});
  c.last = &c.graph->nodes.back();
  return Captured::recorded;
}

bool capturing(void* queue) {
  std::lock_guard lock(g_m);
  return g_captures.count(queue) != 0;
}

bool capture_refuses_sync(void* queue) {
  std::lock_guard lock(g_m);
  auto it = g_captures.find(queue);
  if (it == g_captures.end()) return false;
  it->second.invalidated = true;
  return true;
}

bool capture_refuses_context_sync(CUcontext ctx) {
  std::lock_guard lock(g_m);
  bool refused = false;
  for (auto& [queue, c] : g_captures) {
    if (c.ctx != ctx) continue;
    c.invalidated = true;
    refused = true;
  }
  return refused;
}

bool capture_refuses_unsafe_call() {
  std::lock_guard lock(g_m);
  bool refused = false;
  for (auto& [queue, c] : g_captures) {
    if (!prohibits(c)) continue;
    c.invalidated = true;
    refused = true;
  }
  return refused;
}

void capture_stream_destroyed(void* queue) {
  std::lock_guard lock(g_m);
  auto it = g_captures.find(queue);
  if (it == g_captures.end()) return;
  delete_graph(it->second.graph);
  g_captures.erase(it);
}

long long graph_counter(const std::string& name) {
  if (name == "graphs") return g_live_graphs.load();
  if (name == "graph_execs") return g_live_execs.load();
  if (name == "graph_launches") return g_graph_launches.load();
  if (name == "captures") {
    std::lock_guard lock(g_m);
    return static_cast<long long>(g_captures.size());
  }
  return -1;
}

bool is_graph_entry(const char* symbol) {
  static const char* const names[] = {"cuStreamBeginCapture",
                                      "cuStreamEndCapture",
                                      "cuStreamIsCapturing",
                                      "cuStreamGetCaptureInfo",
                                      "cuThreadExchangeStreamCaptureMode",
                                      "cuGraphInstantiateWithFlags",
                                      "cuGraphLaunch",
                                      "cuGraphExecDestroy",
                                      "cuGraphDestroy"};
  for (const char* n : names)
    if (std::strcmp(n, symbol) == 0) return true;
  return false;
}

}  // namespace fake_cuda

extern "C" {

CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (!valid_mode(mode)) return CUDA_ERROR_INVALID_VALUE;
  if (is_special(hStream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // not the legacy stream
  void* queue = nullptr;
  if (CUresult rc = fake_cuda::stream_for_launch(hStream, &queue); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g_m);
  if (g_captures.count(queue) != 0) return CUDA_ERROR_ILLEGAL_STATE;  // already capturing
  Capture c;
  c.id = g_capture_ids.fetch_add(1) + 1;
  c.ctx = ctx;
  c.mode = mode;
  c.thread = std::this_thread::get_id();
  c.graph = new_graph(ctx);
  g_captures.emplace(queue, c);
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* queue = nullptr;
  if (is_special(hStream)) return CUDA_ERROR_ILLEGAL_STATE;  // never captures
  if (CUresult rc = fake_cuda::stream_for_launch(hStream, &queue); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g_m);
  auto it = g_captures.find(queue);
  if (it == g_captures.end()) return CUDA_ERROR_ILLEGAL_STATE;  // not capturing
  Capture& c = it->second;
  if (c.mode != CU_STREAM_CAPTURE_MODE_RELAXED && c.thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;  // the capture goes on
  const bool invalidated = c.invalidated;
  CUgraph_st* g = c.graph;
  g_captures.erase(it);
  if (invalidated) {
    delete_graph(g);
    *phGraph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *phGraph = g;
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (captureStatus == nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* queue = nullptr;
  if (CUresult rc = fake_cuda::stream_for_launch(hStream, &queue); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g_m);
  auto it = g_captures.find(queue);
  *captureStatus = it == g_captures.end()   ? CU_STREAM_CAPTURE_STATUS_NONE
                   : it->second.invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                            : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

// The version cuda.h maps cuStreamGetCaptureInfo to (_v3 since CUDA 12.3:
// with edge data, which the fake's plain chain never has). Every output but
// the status may be NULL; id, graph and dependencies are written only while
// the status is ACTIVE or INVALIDATED.
#if CUDA_VERSION >= 12030
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                cuuint64_t* id_out, CUgraph* graph_out,
                                const CUgraphNode** dependencies_out,
                                const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  if (edgeData_out != nullptr) *edgeData_out = nullptr;
#else
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                cuuint64_t* id_out, CUgraph* graph_out,
                                const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
#endif
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (captureStatus_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* queue = nullptr;
  if (CUresult rc = fake_cuda::stream_for_launch(hStream, &queue); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g_m);
  auto it = g_captures.find(queue);
  if (it == g_captures.end()) {
    *captureStatus_out = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  Capture& c = it->second;
  *captureStatus_out =
      c.invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id_out != nullptr) *id_out = c.id;
  if (graph_out != nullptr) *graph_out = c.graph;
  // The dependency set is an array the driver owns, valid until the next
  // call on the stream: here the capture's one last node.
  static thread_local CUgraphNode dependency = nullptr;
  dependency = const_cast<CUgraphNode>(c.last);
  if (dependencies_out != nullptr) *dependencies_out = c.last != nullptr ? &dependency : nullptr;
  if (numDependencies_out != nullptr) *numDependencies_out = c.last != nullptr ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr || !valid_mode(*mode)) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, t_mode);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  std::lock_guard lock(g_m);
  if (hGraph == nullptr || !fake_cuda::tracked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [queue, c] : g_captures)
    if (c.graph == hGraph) return CUDA_ERROR_INVALID_VALUE;  // still being captured into
  delete_graph(hGraph);
  return CUDA_SUCCESS;
}

}  // extern "C"

struct CUgraphExec_st {
  CUcontext ctx = nullptr;
  std::shared_ptr<ExecState> state;
};

extern "C" {

CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (phGraphExec == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_m);
  if (hGraph == nullptr || !fake_cuda::tracked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [queue, c] : g_captures)
    if (c.graph == hGraph) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new CUgraphExec_st();
  e->ctx = hGraph->ctx;
  e->state = std::make_shared<ExecState>();
  for (const CUgraphNode_st& n : hGraph->nodes) e->state->nodes.push_back(n.run);
  fake_cuda::track(e);
  *phGraphExec = e;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (hGraphExec == nullptr || !fake_cuda::tracked(hGraphExec)) return CUDA_ERROR_INVALID_VALUE;
  void* queue = nullptr;
  if (CUresult rc = fake_cuda::stream_for_launch(hStream, &queue); rc != CUDA_SUCCESS) return rc;
  if (hGraphExec->ctx != ctx) return CUDA_ERROR_INVALID_CONTEXT;
  std::shared_ptr<ExecState> st = hGraphExec->state;
  // Into a capturing stream: the graph becomes one node (a child graph).
  switch (fake_cuda::capture_work(queue, [st] { st->run_all(); })) {
    case fake_cuda::Captured::recorded:
      g_graph_launches.fetch_add(1);
      return CUDA_SUCCESS;
    case fake_cuda::Captured::invalidated:
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case fake_cuda::Captured::no:
      break;
  }
  uint64_t ticket = 0;
  {
    std::lock_guard lock(st->m);
    ticket = ++st->launched;
  }
  g_graph_launches.fetch_add(1);
  fake_cuda::enqueue(queue, [st, ticket] {
    {
      std::unique_lock lock(st->m);  // after the exec's earlier launches
      st->cv.wait(lock, [&] { return st->finished + 1 == ticket; });
    }
    st->run_all();
    std::lock_guard lock(st->m);
    st->finished = ticket;
    st->cv.notify_all();
  });
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  if (hGraphExec == nullptr || !fake_cuda::untrack(hGraphExec)) return CUDA_ERROR_INVALID_VALUE;
  delete hGraphExec;  // queued launches hold the nodes until they ran
  return CUDA_SUCCESS;
}

}  // extern "C"
