// ABI 1.4 native graphs over cl_khr_command_buffer (README.md, "Graphs").
//
// A recording is one command buffer created for the device's record queue
// (in-order, profiling on: the properties of accel's stream queues, so the
// buffer is compatible with every stream's queue) with
// CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR. Each recorded command waits on the
// previous one's sync point, so the buffer runs in recording order whatever
// the driver does with commands of one buffer. What is recorded:
//  - kernels: a clone (clCloneKernel) of a pool object with the launch's
//    arguments set, so a recorded launch keeps its argument values (PoCL 3.1
//    reads a recorded kernel's arguments when the buffer runs);
//  - fills and device-to-device copies: clCommandFillBufferKHR /
//    clCommandCopyBufferKHR on buffers made with CL_MEM_USE_HOST_PTR over
//    the whole SVM allocation (OpenCL 2.0: such a buffer uses the SVM
//    memory itself), one buffer per allocation and graph;
//  - nothing else: host<->device copies and copies between devices return
//    ACCEL_ERROR_NOT_SUPPORTED and the core re-issues them.
//
// A launch enqueues the buffer on the stream's queue (in stream order, the
// host gate included: Op::GraphLaunch); a launch on another queue than the
// exec's previous one also waits on that launch's event (ABI-49).
// exec_destroy never waits: the buffer, clones and buffers are released when
// the last launch's event completes (an event callback).
#include "backend.hpp"

#include <cstring>
#include <map>

namespace accel::opencl {

// The entry points of cl_khr_command_buffer 0.9.0 .. 0.9.4: the recording
// calls without the `properties` argument 0.9.5 added to each of them
// (clCommandNDRangeKernelKHR had it from the start). Our own typedefs: the
// system's header declares whichever revision it ships.
struct CommandBufferApi {
  using Create = cl_command_buffer_khr(CL_API_CALL*)(cl_uint, const cl_command_queue*,
                                                     const cl_command_buffer_properties_khr*,
                                                     cl_int*);
  using Finalize = cl_int(CL_API_CALL*)(cl_command_buffer_khr);
  using Release = cl_int(CL_API_CALL*)(cl_command_buffer_khr);
  using Enqueue = cl_int(CL_API_CALL*)(cl_uint, cl_command_queue*, cl_command_buffer_khr, cl_uint,
                                       const cl_event*, cl_event*);
  using NDRange = cl_int(CL_API_CALL*)(cl_command_buffer_khr, cl_command_queue,
                                       const cl_ndrange_kernel_command_properties_khr*, cl_kernel,
                                       cl_uint, const size_t*, const size_t*, const size_t*,
                                       cl_uint, const cl_sync_point_khr*, cl_sync_point_khr*,
                                       cl_mutable_command_khr*);
  using Copy = cl_int(CL_API_CALL*)(cl_command_buffer_khr, cl_command_queue, cl_mem, cl_mem, size_t,
                                    size_t, size_t, cl_uint, const cl_sync_point_khr*,
                                    cl_sync_point_khr*, cl_mutable_command_khr*);
  using Fill = cl_int(CL_API_CALL*)(cl_command_buffer_khr, cl_command_queue, cl_mem, const void*,
                                    size_t, size_t, size_t, cl_uint, const cl_sync_point_khr*,
                                    cl_sync_point_khr*, cl_mutable_command_khr*);
  Create create = nullptr;
  Finalize finalize = nullptr;
  Release release = nullptr;
  Enqueue enqueue = nullptr;
  NDRange ndrange = nullptr;
  Copy copy = nullptr;
  Fill fill = nullptr;
};

// What an executable graph's launches use; released after the last launch.
struct GraphResources {
  const CommandBufferApi* api = nullptr;
  cl_command_buffer_khr buffer = nullptr;
  std::vector<cl_kernel> kernels;          // the clones, one reference each
  std::map<uintptr_t, cl_mem> wrappers;    // SVM allocation base -> its buffer
  ~GraphResources() {
    if (buffer) api->release(buffer);
    for (cl_kernel k : kernels) clReleaseKernel(k);
    for (auto& [base, mem] : wrappers) clReleaseMemObject(mem);
  }
};

struct GraphExec {
  Device* dev = nullptr;
  std::unique_ptr<GraphResources> res;
  std::mutex mu;                        // guards the two below
  cl_event last = nullptr;              // the latest launch's event (one reference)
  cl_command_queue last_queue = nullptr;  // its queue (compared only)
  ~GraphExec();
};

struct Recording {
  Stream handle;  // what the core passes as the stream (handle.recording == this)
  std::shared_ptr<GraphExec> exec;
  cl_sync_point_khr last = 0;
  bool has_last = false;  // a command was recorded: the next one waits on `last`
};

// The core's handle of an exec.
struct GraphHandle {
  std::shared_ptr<GraphExec> exec;
};

namespace {

void CL_CALLBACK release_after_launch(cl_event, cl_int, void* data) {
  delete static_cast<GraphResources*>(data);
}

// The installed version of cl_khr_command_buffer, 0 when not listed.
cl_version command_buffer_version(cl_device_id d) {
  size_t bytes = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, nullptr, &bytes) != CL_SUCCESS)
    return 0;
  std::vector<cl_name_version> list(bytes / sizeof(cl_name_version));
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS_WITH_VERSION, bytes, list.data(), nullptr) !=
      CL_SUCCESS)
    return 0;
  for (const cl_name_version& e : list)
    if (std::strcmp(e.name, "cl_khr_command_buffer") == 0) return e.version;
  return 0;
}

// Fills `api` from the platform; false when an entry point is missing.
bool load_api(cl_platform_id p, CommandBufferApi& api) {
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        clGetExtensionFunctionAddressForPlatform(p, name));
    return fn != nullptr;
  };
  return get(api.create, "clCreateCommandBufferKHR") &&
         get(api.finalize, "clFinalizeCommandBufferKHR") &&
         get(api.release, "clReleaseCommandBufferKHR") &&
         get(api.enqueue, "clEnqueueCommandBufferKHR") &&
         get(api.ndrange, "clCommandNDRangeKernelKHR") &&
         get(api.copy, "clCommandCopyBufferKHR") && get(api.fill, "clCommandFillBufferKHR");
}

void no_graphs(const Device* dev, const std::string& why) {
  accel::plugin::log(ACCEL_LOG_DEBUG, "OpenCL %s: no native graphs: %s", dev->label().c_str(),
                     why.c_str());
}

// The device's record queue, made on first use.
accel_status_t record_queue(Device* dev, cl_command_queue* out) {
  cl_context ctx = nullptr;
  if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
  std::lock_guard<std::mutex> lock(dev->mu);
  if (!dev->record_queue) {
    const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_int err = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev->id, props, &err);
    if (!q || err != CL_SUCCESS)
      return vendor_fail("clCreateCommandQueueWithProperties (graph recording)", err);
    dev->record_queue = q;
  }
  *out = dev->record_queue;
  return ACCEL_SUCCESS;
}

// The wrapper buffer of the SVM allocation holding [p, p+bytes), made on
// first use; *offset is p's offset in it. False when none can be made.
bool wrapper_of(Recording* r, const void* p, cl_mem* mem, size_t* offset) {
  void* base = nullptr;
  size_t size = 0;
  if (!svm_allocation_of(p, &base, &size)) return false;
  *offset = static_cast<const char*>(p) - static_cast<const char*>(base);
  auto& wrappers = r->exec->res->wrappers;
  auto it = wrappers.find(reinterpret_cast<uintptr_t>(base));
  if (it != wrappers.end()) {
    *mem = it->second;
    return true;
  }
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(r->handle.dev->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size,
                            base, &err);
  if (!m || err != CL_SUCCESS) {
    log_vendor_failure(ACCEL_LOG_DEBUG, "clCreateBuffer (CL_MEM_USE_HOST_PTR over SVM)", err,
                       "the operation is re-issued by the core");
    return false;
  }
  wrappers.emplace(reinterpret_cast<uintptr_t>(base), m);
  *mem = m;
  return true;
}

// The sync-point wait list of the next command: the previous command.
cl_uint wait_count(const Recording* r) { return r->has_last ? 1 : 0; }
const cl_sync_point_khr* wait_list(const Recording* r) { return r->has_last ? &r->last : nullptr; }

}  // namespace

GraphExec::~GraphExec() {
  if (!last) return;  // never launched, or `res` is released with us
  cl_int st = CL_COMPLETE;
  clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr);
  if (st != CL_COMPLETE && st >= 0) {
    GraphResources* r = res.release();
    const cl_int err = clSetEventCallback(last, CL_COMPLETE, release_after_launch, r);
    if (err != CL_SUCCESS) {  // cannot happen for a valid event; free after waiting
      log_vendor_failure(ACCEL_LOG_WARN, "clSetEventCallback", err, "graph_exec_destroy waits");
      clWaitForEvents(1, &last);
      delete r;
    }
  }
  clReleaseEvent(last);
}

// ACCEL_OPENCL_COMMAND_BUFFERS: "1" replays with command buffers wherever
// they are usable, "0" nowhere; unset or empty, wherever they beat
// re-issuing the work: not on PoCL, which submits a command buffer's
// commands again one by one at each clEnqueueCommandBufferKHR (its CPU
// drivers have no run_command_buffer), each with an event of its own and a
// last command waiting on all of them, so a replay costs more than the
// launches it replaces (bench-graphs: docs/performance.md, "Graphs").
// Read once; another value is warned about and read as unset.
namespace {

enum class CommandBuffers { automatic, on, off };
CommandBuffers command_buffers_setting() {
  static const CommandBuffers setting = [] {
    const char* v = accel::plugin::env("ACCEL_OPENCL_COMMAND_BUFFERS");
    if (v == nullptr || *v == '\0') return CommandBuffers::automatic;
    if (std::strcmp(v, "1") == 0) return CommandBuffers::on;
    if (std::strcmp(v, "0") == 0) return CommandBuffers::off;
    accel::plugin::log(ACCEL_LOG_WARN,
                       "ACCEL_OPENCL_COMMAND_BUFFERS='%s' ignored: expected 1 or 0", v);
    return CommandBuffers::automatic;
  }();
  return setting;
}

}  // namespace

void describe_graphs(Device* dev) {
  if (!dev->has_extension("cl_khr_command_buffer")) return;
  const CommandBuffers use = command_buffers_setting();
  if (use == CommandBuffers::off) return no_graphs(dev, "ACCEL_OPENCL_COMMAND_BUFFERS=0");
  if (use == CommandBuffers::automatic && dev->pocl)
    return no_graphs(dev, "PoCL re-submits each command of a command buffer: re-issuing is "
                          "faster (ACCEL_OPENCL_COMMAND_BUFFERS=1 uses them)");
  const cl_version v = command_buffer_version(dev->id);
  const unsigned major = CL_VERSION_MAJOR(v), minor = CL_VERSION_MINOR(v),
                 patch = CL_VERSION_PATCH(v);
  if (v == 0 || major != 0 || minor != 9 || patch > 4)
    return no_graphs(dev, format("cl_khr_command_buffer %u.%u.%u is not a version this backend "
                                 "knows (0.9.0 .. 0.9.4)",
                                 major, minor, patch));
  cl_device_command_buffer_capabilities_khr caps = 0;
  cl_command_queue_properties required = 0;
  clGetDeviceInfo(dev->id, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof caps, &caps, nullptr);
  clGetDeviceInfo(dev->id, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR, sizeof required,
                  &required, nullptr);
  if (!(caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR))
    return no_graphs(dev, "command buffers without simultaneous use (README.md, \"Graphs\")");
  if (required & ~static_cast<cl_command_queue_properties>(CL_QUEUE_PROFILING_ENABLE))
    return no_graphs(dev, "command buffers need out-of-order queues");
  if (dev->version_major * 10 + dev->version_minor < 21)
    return no_graphs(dev, "no clCloneKernel before OpenCL 2.1");
  static std::mutex mu;  // the tables live until process exit
  static std::map<cl_platform_id, CommandBufferApi*> apis;
  std::lock_guard<std::mutex> lock(mu);
  CommandBufferApi*& api = apis[dev->platform];
  if (!api) {
    auto* made = new CommandBufferApi();
    if (!load_api(dev->platform, *made)) {
      delete made;
      apis.erase(dev->platform);
      return no_graphs(dev, "the platform lacks a cl_khr_command_buffer entry point");
    }
    api = made;
  }
  dev->command_buffers = api;
  dev->graph_support = format("cl_khr_command_buffer %u.%u.%u", major, minor, patch);
}

const char* op_graph_support(int32_t device) {
  Device* dev = nullptr;
  if (device_at(device, dev) != ACCEL_SUCCESS || !dev->command_buffers) return nullptr;
  return dev->graph_support.c_str();
}

accel_status_t op_graph_record_begin(int32_t device, accel_plugin_stream_t* recording) {
  return on_device("graph_record_begin", device, [&](Device* dev) -> accel_status_t {
    if (!dev->command_buffers)
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "OpenCL %s has no native graphs",
                  dev->label().c_str());
    cl_command_queue q = nullptr;
    if (accel_status_t st = record_queue(dev, &q); st != ACCEL_SUCCESS) return st;
    auto r = std::make_unique<Recording>();
    r->handle.dev = dev;
    r->handle.context = dev->context;
    r->handle.recording = r.get();
    r->exec = std::make_shared<GraphExec>();
    r->exec->dev = dev;
    r->exec->res = std::make_unique<GraphResources>();
    r->exec->res->api = dev->command_buffers;
    const cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                                      CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    cl_int err = CL_SUCCESS;
    cl_command_buffer_khr b = dev->command_buffers->create(1, &q, props, &err);
    if (!b || err != CL_SUCCESS) return vendor_fail("clCreateCommandBufferKHR", err);
    r->exec->res->buffer = b;
    *recording = &r.release()->handle;
    return ACCEL_SUCCESS;
  });
}

accel_status_t graph_record_kernel(Recording* r, cl_kernel clone, cl_uint dims,
                                   const size_t* global, const size_t* local) {
  GraphResources& res = *r->exec->res;
  res.kernels.push_back(clone);  // released with the graph, recorded or not
  cl_sync_point_khr sp = 0;
  cl_int err = res.api->ndrange(res.buffer, nullptr, nullptr, clone, dims, nullptr, global, local,
                                wait_count(r), wait_list(r), &sp, nullptr);
  if (err != CL_SUCCESS) return vendor_fail("clCommandNDRangeKernelKHR", err);
  r->last = sp;
  r->has_last = true;
  return ACCEL_SUCCESS;
}

accel_status_t graph_record_copy(Recording* r, void* dst, const void* src, size_t bytes) {
  cl_mem d = nullptr, s = nullptr;
  size_t doff = 0, soff = 0;
  if (!wrapper_of(r, dst, &d, &doff) || !wrapper_of(r, src, &s, &soff))
    return fail(ACCEL_ERROR_NOT_SUPPORTED, "graph recording: no buffer over this memory");
  GraphResources& res = *r->exec->res;
  cl_sync_point_khr sp = 0;
  cl_int err = res.api->copy(res.buffer, nullptr, s, d, soff, doff, bytes, wait_count(r),
                             wait_list(r), &sp, nullptr);
  if (err != CL_SUCCESS) return vendor_fail("clCommandCopyBufferKHR", err);
  r->last = sp;
  r->has_last = true;
  return ACCEL_SUCCESS;
}

accel_status_t graph_record_fill(Recording* r, void* dst, cl_uchar value, size_t bytes) {
  cl_mem d = nullptr;
  size_t off = 0;
  if (!wrapper_of(r, dst, &d, &off))
    return fail(ACCEL_ERROR_NOT_SUPPORTED, "graph recording: no buffer over this memory");
  GraphResources& res = *r->exec->res;
  cl_sync_point_khr sp = 0;
  cl_int err = res.api->fill(res.buffer, nullptr, d, &value, 1, off, bytes, wait_count(r),
                             wait_list(r), &sp, nullptr);
  if (err != CL_SUCCESS) return vendor_fail("clCommandFillBufferKHR", err);
  r->last = sp;
  r->has_last = true;
  return ACCEL_SUCCESS;
}

accel_status_t op_graph_record_end(accel_plugin_stream_t recording, int32_t keep,
                                   accel_plugin_graph_t* exec) {
  return guarded("graph_record_end", [&]() -> accel_status_t {
    std::unique_ptr<Recording> r(static_cast<Stream*>(recording)->recording);
    if (!keep) return ACCEL_SUCCESS;  // the buffer and clones go with r->exec
    GraphResources& res = *r->exec->res;
    cl_int err = res.api->finalize(res.buffer);
    if (err != CL_SUCCESS) return vendor_fail("clFinalizeCommandBufferKHR", err);
    *exec = new GraphHandle{std::move(r->exec)};
    return ACCEL_SUCCESS;
  });
}

accel_status_t graph_submit(Stream* s, GraphExec& g) {
  std::lock_guard<std::mutex> lock(g.mu);
  // In-order queues order launches on one queue; on another, wait on the
  // previous launch so that launches of one exec never overlap (ABI-49).
  const bool other_queue = g.last && g.last_queue != s->queue;
  cl_command_queue q = s->queue;
  cl_event ev = nullptr;
  cl_int err = g.res->api->enqueue(1, &q, g.res->buffer, other_queue ? 1 : 0,
                                   other_queue ? &g.last : nullptr, &ev);
  if (err != CL_SUCCESS) return vendor_fail("clEnqueueCommandBufferKHR", err);
  clRetainEvent(ev);  // one for the stream, one for the exec
  if (g.last) clReleaseEvent(g.last);
  g.last = ev;
  g.last_queue = q;
  return stream_commit(s, ev);
}

accel_status_t op_graph_launch(accel_plugin_graph_t exec, accel_plugin_stream_t stream) {
  return guarded("graph_launch", [&]() -> accel_status_t {
    const std::shared_ptr<GraphExec>& g = static_cast<GraphHandle*>(exec)->exec;
    Stream* s = stream_of(stream);
    if (s->recording)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "graph_launch: the stream is a recording handle");
    if (s->dev != g->dev)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH, "graph_launch: a graph of OpenCL %s on a stream of %s",
                  g->dev->label().c_str(), s->dev->label().c_str());
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (!s->blocked) return graph_submit(s, *g);
    }
    Op op;  // behind a host gate: in stream order when it opens
    op.kind = Op::GraphLaunch;
    op.graph = g;
    return stream_enqueue(s, std::move(op));
  });
}

void op_graph_exec_destroy(accel_plugin_graph_t exec) {
  delete static_cast<GraphHandle*>(exec);  // a held-back launch keeps its own reference
}

}  // namespace accel::opencl
