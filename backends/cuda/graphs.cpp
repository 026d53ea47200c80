// ABI 1.4's native graph group: the core's recorded operations become a
// CUDA graph through stream capture (CUDA Driver API, "Stream Capture" and
// "Graph Management"). A recording is a private CU_STREAM_NON_BLOCKING
// stream of the device in CU_STREAM_CAPTURE_MODE_RELAXED capture: the core
// issues its operations through launch_kernel, memcpy_async, memset_async
// and memcpy_peer_async on it (they queue on the stream's CUstream as on any
// other, and the driver records them, cuLaunchKernel copying the arguments
// at the call), then graph_record_end ends the capture and instantiates the
// graph. Relaxed, because other threads' unrelated calls (cuMemAlloc,
// cuModuleLoadDataEx) must not be refused or invalidate the recording; the
// one call every mode refuses, cuCtxSynchronize of the capturing context, is
// kept apart from recordings (ContextSyncScope). A replay is one
// cuGraphLaunch.
//
// Thread-safety: recordings of different graphs may run on different
// threads at once (each has its own stream); cuGraphLaunch and
// cuGraphExecDestroy are thread-safe for different execs.
#include <memory>

#include "backend.hpp"

namespace accel::cuda {

namespace {

// Opens a recording slot of device `d`; false while a context synchronize
// is in flight. Not waiting for it: the synchronize may be waiting for the
// very host function that asks for the recording (a first accel_graph_replay
// from a host function), and a recording refused is only a graph the core
// re-issues itself.
bool enter_recording(Device& d) {
  std::lock_guard lock(d.capture_m);
  if (d.context_syncs > 0) return false;
  ++d.recordings;
  return true;
}

void leave_recording(Device& d) {
  std::lock_guard lock(d.capture_m);
  --d.recordings;
  d.capture_cv.notify_all();
}

// Closes the recording slot of a recording being ended, whatever happens.
struct RecordingSlot {
  Device& d;
  ~RecordingSlot() { leave_recording(d); }
};

// Ends the recording's capture and destroys its stream; `graph` receives the
// captured graph (or NULL). Returns the first failure.
accel_status_t end_capture(Stream& rec, CUgraph* graph) {
  Driver& drv = driver();
  *graph = nullptr;
  CUresult rc = drv.cuStreamEndCapture(rec.handle, graph);
  CUresult destroy_rc = drv.cuStreamDestroy(rec.handle);
  if (rc != CUDA_SUCCESS) {
    if (*graph != nullptr) drv.cuGraphDestroy(*graph);
    *graph = nullptr;
    return vendor_fail("cuStreamEndCapture", rc);
  }
  if (destroy_rc != CUDA_SUCCESS) return vendor_fail("cuStreamDestroy", destroy_rc);
  return ACCEL_SUCCESS;
}

// The executable graph of `graph`, which is destroyed either way (an exec
// does not need its template).
accel_status_t instantiate(int32_t device, CUgraph graph, accel_plugin_graph_t* exec) {
  Driver& drv = driver();
  auto out = std::make_unique<GraphExec>();
  out->device = device;
  CUresult rc = drv.cuGraphInstantiateWithFlags(&out->handle, graph, 0);
  drv.cuGraphDestroy(graph);
  if (rc != CUDA_SUCCESS) return vendor_fail("cuGraphInstantiateWithFlags", rc);
  *exec = out.release();
  return ACCEL_SUCCESS;
}

}  // namespace

ContextSyncScope::ContextSyncScope(Device& d) : d_(d) {
  std::unique_lock lock(d_.capture_m);
  d_.capture_cv.wait(lock, [&] { return d_.recordings == 0; });
  ++d_.context_syncs;
}

ContextSyncScope::~ContextSyncScope() {
  std::lock_guard lock(d_.capture_m);
  --d_.context_syncs;
  d_.capture_cv.notify_all();
}

// Every device has them when the driver exports the entry points.
const char* op_graph_support(int32_t device) {
  Device* d = nullptr;
  if (device_at(device, d) != ACCEL_SUCCESS) return nullptr;
  return driver().graphs ? "CUDA graphs" : nullptr;
}

accel_status_t op_graph_record_begin(int32_t device, accel_plugin_stream_t* recording) {
  return on_device("graph_record_begin", device, [&](Device* d) -> accel_status_t {
    if (!driver().graphs)
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "the CUDA driver has no stream capture entry points");
    ACCEL_CUDA_CTX_SCOPE(device);
    auto s = std::make_unique<Stream>();
    s->device = device;
    if (!enter_recording(*d))
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "cuda device %d is being synchronized (cuCtxSynchronize would invalidate a "
                  "stream capture): the core replays this graph itself",
                  int(device));
    CUresult rc = driver().cuStreamCreateWithPriority(&s->handle, CU_STREAM_NON_BLOCKING, 0);
    if (rc != CUDA_SUCCESS) {
      leave_recording(*d);
      return vendor_fail("cuStreamCreateWithPriority", rc);
    }
    rc = driver().cuStreamBeginCapture(s->handle, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (rc != CUDA_SUCCESS) {
      leave_recording(*d);
      driver().cuStreamDestroy(s->handle);
      return vendor_fail("cuStreamBeginCapture", rc);
    }
    *recording = s.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_graph_record_end(accel_plugin_stream_t recording, int32_t keep,
                                   accel_plugin_graph_t* exec) {
  return guarded("graph_record_end", [&]() -> accel_status_t {
    std::unique_ptr<Stream> rec(as_stream(recording));
    Device* d = nullptr;
    if (accel_status_t st = device_at(rec->device, d); st != ACCEL_SUCCESS) return st;
    RecordingSlot slot{*d};
    ACCEL_CUDA_CTX_SCOPE(rec->device);
    CUgraph graph = nullptr;
    const accel_status_t ended = end_capture(*rec, &graph);
    if (keep == 0) {  // discarded: nothing to hand out, whatever the capture said
      if (graph != nullptr) driver().cuGraphDestroy(graph);
      return ACCEL_SUCCESS;
    }
    if (ended != ACCEL_SUCCESS) {
      if (graph != nullptr) driver().cuGraphDestroy(graph);
      return ended;
    }
    return instantiate(rec->device, graph, exec);
  });
}

accel_status_t op_graph_launch(accel_plugin_graph_t exec, accel_plugin_stream_t stream) {
  return guarded("graph_launch", [&] {
    const GraphExec* e = static_cast<const GraphExec*>(exec);
    ACCEL_CUDA_CTX_SCOPE(e->device);
    ACCEL_CU_TRY(cuGraphLaunch, (e->handle, as_stream(stream)->handle));
    return ACCEL_SUCCESS;
  });
}

// cuGraphExecDestroy never waits: launches already queued still run, and
// the driver frees the exec once they completed.
void op_graph_exec_destroy(accel_plugin_graph_t exec) {
  (void)guarded("graph_exec_destroy", [&] {
    std::unique_ptr<GraphExec> e(static_cast<GraphExec*>(exec));
    ACCEL_CUDA_CTX_SCOPE(e->device);
    ACCEL_CU_TRY(cuGraphExecDestroy, (e->handle));
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda
