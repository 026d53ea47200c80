// ABI 1.4's native graphs (accel_plugin.h, ABI-45..ABI-50) by HIP stream
// capture: a recording is a private non-blocking stream of the device in
// capture (hipStreamCaptureModeRelaxed, so other threads' calls, such as a
// concurrent hipMalloc, are not refused); launch_kernel, memcpy_async and
// memset_async queue on it as on any stream (HIP records them, kernel
// arguments copied at the call: hipModuleLaunchKernel's `extra` buffer is
// read then) and none of them waits or queries, which a capture refuses.
// memcpy_peer_async declines a recording handle (ACCEL_ERROR_NOT_SUPPORTED,
// the core re-issues those copies): HIP stages a copy between devices
// without peer access through host memory, which a captured graph cannot
// replay on every release. graph_record_end ends the capture, instantiates
// the graph and destroys the template; graph_launch is hipGraphLaunch, which
// HIP accepts again before earlier launches of the same exec complete;
// graph_exec_destroy is hipGraphExecDestroy, which does not wait (HIP keeps
// what queued launches use).
#include <memory>

#include "backend.hpp"

namespace accel::hip {

namespace {

// An executable graph and the device it was recorded for.
struct Graph {
  int32_t device = 0;
  hipGraphExec_t native = nullptr;
};

// Ends the capture of `s` and frees its stream: the recording is dead
// whatever this returns. keep: *exec receives the instantiated graph.
accel_status_t finish(Stream& s, bool keep, hipGraphExec_t* exec) {
  const Runtime& rt = runtime();
  hipGraph_t graph = nullptr;
  hipError_t rc = rt.hipStreamEndCapture(s.native, &graph);
  accel_status_t st = ACCEL_SUCCESS;
  if (keep && rc != hipSuccess) st = vendor_fail("hipStreamEndCapture", rc);
  if (keep && st == ACCEL_SUCCESS) {
    if (rc = rt.hipGraphInstantiate(exec, graph, nullptr, nullptr, 0); rc != hipSuccess)
      st = vendor_fail("hipGraphInstantiate", rc);
  }
  // The executable graph keeps what it needs: the template can go now.
  if (graph != nullptr) (void)rt.hipGraphDestroy(graph);
  // The executable graph does not need the stream it was captured on; a
  // failure to free it leaks a queue and changes nothing the core sees.
  if (rc = rt.hipStreamDestroy(s.native); rc != hipSuccess)
    accel::plugin::log(ACCEL_LOG_DEBUG, "graph recording: %s",
                       vendor_failure_text("hipStreamDestroy", rc).c_str());
  return st;
}

}  // namespace

bool graph_api_present() noexcept {
  const Runtime& rt = runtime();
#define ACCEL_HIP_GRAPH_PRESENT(fn) \
  if (rt.fn == nullptr) return false;
  ACCEL_HIP_GRAPH_FUNCTIONS(ACCEL_HIP_GRAPH_PRESENT)
#undef ACCEL_HIP_GRAPH_PRESENT
  return true;
}

const char* op_graph_support(int32_t device) {
  Device* d = nullptr;
  if (device_at(device, d) != ACCEL_SUCCESS || !graph_api_present()) return nullptr;
  return "HIP graphs";
}

accel_status_t op_graph_record_begin(int32_t device, accel_plugin_stream_t* recording) {
  return on_device("graph_record_begin", device, [&](Device* d) -> accel_status_t {
    if (!graph_api_present())
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "the HIP runtime %s exports no stream capture",
                  runtime_label().c_str());
    const Runtime& rt = runtime();
    auto s = std::make_unique<Stream>();
    s->device = d->index;
    s->recording = true;
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    if (hipError_t rc = rt.hipStreamCreateWithPriority(&s->native, hipStreamNonBlocking, 0);
        rc != hipSuccess)
      return vendor_fail("hipStreamCreateWithPriority", rc);
    if (hipError_t rc = rt.hipStreamBeginCapture(s->native, hipStreamCaptureModeRelaxed);
        rc != hipSuccess) {
      const accel_status_t st = vendor_fail("hipStreamBeginCapture", rc);
      (void)rt.hipStreamDestroy(s->native);
      return st;
    }
    *recording = s.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_graph_record_end(accel_plugin_stream_t recording, int32_t keep,
                                   accel_plugin_graph_t* exec) {
  return guarded("graph_record_end", [&]() -> accel_status_t {
    std::unique_ptr<Stream> s(stream_of(recording));  // dead afterwards, whatever happens
    if (keep != 0 && exec == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "graph_record_end: exec is NULL");
    auto g = std::make_unique<Graph>();
    g->device = s->device;
    ACCEL_HIP_DEVICE_SCOPE(s->device);
    if (accel_status_t st = finish(*s, keep != 0, &g->native); st != ACCEL_SUCCESS) return st;
    if (keep != 0) *exec = g.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_graph_launch(accel_plugin_graph_t exec, accel_plugin_stream_t stream) {
  return guarded("graph_launch", [&]() -> accel_status_t {
    const Graph* g = static_cast<const Graph*>(exec);
    const Stream* s = stream_of(stream);
    if (s->device != g->device || s->recording) {
      return fail(ACCEL_ERROR_DEVICE_MISMATCH, "a graph of device %d launched on %s of device %d",
                  static_cast<int>(g->device), s->recording ? "a recording" : "a stream",
                  static_cast<int>(s->device));
    }
    ACCEL_HIP_DEVICE_SCOPE(g->device);
    if (hipError_t rc = runtime().hipGraphLaunch(g->native, s->native); rc != hipSuccess)
      return vendor_fail("hipGraphLaunch", rc);
    return ACCEL_SUCCESS;
  });
}

void op_graph_exec_destroy(accel_plugin_graph_t exec) {
  std::unique_ptr<Graph> g(static_cast<Graph*>(exec));
  if (g == nullptr) return;
  // Never waits: HIP frees what queued launches use once they have run.
  (void)guarded("graph_exec_destroy", [&]() -> accel_status_t {
    if (hipError_t rc = runtime().hipGraphExecDestroy(g->native); rc != hipSuccess)
      accel::plugin::log(ACCEL_LOG_WARN, "%s",
                         vendor_failure_text("hipGraphExecDestroy", rc).c_str());
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
