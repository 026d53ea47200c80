// backend.hpp - the one internal header of the OpenCL backend: the device,
// stream, event and record types and the declarations its .cpp files share.
// README.md says what each file does. Nothing here is exported: the plugin's
// only public symbol is the entry.
//
// The ICD loader (libOpenCL.so.1) is linked directly, so there is no symbol
// table: the OpenCL functions are called by name (see library.cpp).
#pragma once

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <accel/accel_plugin.h>
#include <accel/accel_plugin_helpers.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

// The backend fills ABI 1.4's graph group (graphs.cpp).
#define ACCEL_BACKEND_NATIVE_GRAPHS 1
#include "../common/plugin_ops.hpp"

namespace accel::opencl {

using accel::plugin::fail;
using accel::plugin::format;
using accel::plugin::guarded;

// ---- the ICD loader and its platforms (library.cpp) ------------------------

// The platforms the ICD loader found. An empty list (CL_PLATFORM_NOT_FOUND_KHR
// or 0 platforms) is ACCEL_SUCCESS, with clGetPlatformIDs' code in *none_code;
// any other failure goes through vendor_fail. May throw std::bad_alloc.
accel_status_t list_platforms(std::vector<cl_platform_id>& out, cl_int* none_code = nullptr);
// A platform's info string (CL_PLATFORM_NAME, ...), "" when the query fails.
std::string platform_string(cl_platform_id p, cl_platform_info what);

// ---- errors (errors.cpp) ---------------------------------------------------

// Symbolic name of an OpenCL status ("CL_OUT_OF_RESOURCES"), and what it
// means; "CL_UNKNOWN_ERROR" and a generic text for a value outside the table.
// Static storage.
const char* cl_error_name(cl_int code) noexcept;
const char* cl_error_text(cl_int code) noexcept;

// The accel status an OpenCL code maps to: host/allocation exhaustion is
// ACCEL_ERROR_OUT_OF_MEMORY, anything else ACCEL_ERROR_BACKEND_FAILURE.
accel_status_t status_of(cl_int code) noexcept;

// An OpenCL call failed: records "<call> failed: <CL_NAME> (<code>): <text>"
// and returns status_of(code).
accel_status_t vendor_fail(const char* call, cl_int code) noexcept;
// The same shape as a log line, for a failure nobody is returned to
// (cleanup, driver threads, workers); `context` (may be NULL) is appended.
void log_vendor_failure(accel_log_level_t level, const char* call, cl_int code,
                        const char* context = nullptr) noexcept;

// ---- devices (count.cpp, devices.cpp) --------------------------------------

struct Stream;
struct CommandBufferApi;  // cl_khr_command_buffer's entry points (graphs.cpp)

struct Device {
  int32_t index = 0;
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_device_type type = 0;
  std::string name;
  std::string vendor;
  std::string version;  // CL_DEVICE_VERSION
  std::string extensions;
  cl_ulong global_mem = 0;
  cl_ulong max_alloc = 0;
  cl_uint compute_units = 0;
  cl_device_svm_capabilities svm = 0;
  bool priority_hints = false;   // cl_khr_priority_hints
  bool amd_free_memory = false;  // cl_amd_device_attribute_query
  int version_major = 1;         // from CL_DEVICE_VERSION "OpenCL X.Y ..."
  int version_minor = 0;
  bool fp64 = false;  // cl_khr_fp64 or a non-zero CL_DEVICE_DOUBLE_FP_CONFIG
  bool fp16 = false;  // cl_khr_fp16 or a non-zero CL_DEVICE_HALF_FP_CONFIG
  // Host functions hold back later work with a user event on the device
  // (true) or with the host-side gate (false: PoCL's basic device, whose
  // clSetUserEventStatus hangs when a command waits on the user event).
  bool device_gates = true;
  uint8_t uuid[16] = {};
  bool has_uuid = false;   // cl_khr_device_uuid
  std::string pci_bus_id;  // cl_khr_pci_bus_info, "" when unknown

  // Modules and launches (describe_modules, modules.cpp): info queries at
  // count time, so module_formats and the launch checks ask OpenCL nothing.
  bool compiler = true;  // CL_DEVICE_COMPILER_AVAILABLE: OpenCL C builds here
  bool pocl = false;     // a PoCL device: its binaries are checked before PoCL reads them
  // SPIR-V: CL_DEVICE_IL_VERSION names it, with clCreateProgramWithIL (2.1+)
  // or cl_khr_il_program's clCreateProgramWithILKHR (create_il_khr).
  bool spirv = false;
  clCreateProgramWithILKHR_fn create_il_khr = nullptr;
  size_t max_work_item[3] = {1, 1, 1};  // CL_DEVICE_MAX_WORK_ITEM_SIZES
  size_t max_work_group = 1;            // CL_DEVICE_MAX_WORK_GROUP_SIZE
  cl_ulong local_mem = 0;               // CL_DEVICE_LOCAL_MEM_SIZE
  cl_uint address_bits = 64;            // CL_DEVICE_ADDRESS_BITS: bounds a global size

  // Guarded by mu: the lazily created context, default stream, live streams.
  std::mutex mu;
  cl_context context = nullptr;
  Stream* default_stream = nullptr;
  std::vector<Stream*> streams;  // every live stream state, the default included
  // Queues of stream states gone (stream_destroy): OpenCL still runs the
  // commands of a released queue, but device_synchronize must wait for
  // them (all work submitted to the device, as cudaDeviceSynchronize), so
  // each keeps its one reference and a marker after its last command until
  // the marker has completed (streams.cpp: retire_queue, finish_retired).
  struct Retired {
    cl_command_queue queue = nullptr;  // one reference owned
    cl_event marker = nullptr;         // one reference owned
  };
  std::vector<Retired> retired;
  cl_command_queue staging = nullptr;  // the plugin's own queue for staged peer copies

  // Guarded by the allocation registry's lock (memory.cpp).
  size_t bytes_allocated = 0;

  // Native graphs (graphs.cpp, describe_graphs): the extension's entry
  // points and graph_support's words, both set once at count time (null and
  // "" when the device has no cl_khr_command_buffer version graphs.cpp
  // knows); the queue command buffers are created for, made on first use
  // under mu (launches pass the stream's own queue).
  const CommandBufferApi* command_buffers = nullptr;
  std::string graph_support;
  cl_command_queue record_queue = nullptr;

  bool has_extension(const char* ext) const;
  // "device 1 'pthread-haswell'" for messages.
  std::string label() const;
};

// The listed devices, enumerated once (thread-safe, count.cpp); later calls
// return the cached list, which never changes afterwards. A failure of the
// ICD loader itself is returned and not cached, so a later call retries.
accel_status_t enumerate(std::vector<Device*>*& out) noexcept;
// Fills the cached description of a newly listed device with info queries
// only: no context is created (devices.cpp).
void describe(Device* dev);
// The part of it modules and launches need (modules.cpp; called by describe).
void describe_modules(Device* dev, const std::string& platform_name);
// Adds ACCEL_PLUGIN_CAP_STREAM_PRIORITIES to the vtable's capabilities;
// called by enumeration when a listed device has cl_khr_priority_hints
// (plugin.cpp).
void advertise_stream_priorities() noexcept;

// The device of an index the core has already validated; checked again
// because a backend should not crash on a broken caller. Fails with
// ACCEL_ERROR_INVALID_DEVICE ("device N is out of range [0, count)").
accel_status_t device_at(int32_t device_index, Device*& out) noexcept;

// on_device() and on_device_pair() over device_at (common/plugin_ops.hpp).
ACCEL_BACKEND_DEVICE_FRAMES(device_at)
// The device's context, created on first use (thread-safe).
accel_status_t device_context(Device* dev, cl_context* ctx);
// The plugin's own in-order queue on the device (peer-copy staging), made on
// first use in the device's context; never one of a stream's queues.
accel_status_t staging_queue(Device* dev, cl_command_queue* q);

// ---- streams, events, host functions (streams.cpp, gate.cpp, interop.cpp,
//      events.cpp, hostfn.cpp) ---------------------------------------------
//
// A host function holds back later work of its stream until it has run. On
// most devices that happens on the device: a barrier waits on a user event
// the worker completes after the function (Device::device_gates), so work a
// program enqueues itself on the stream's queue waits as well. PoCL's
// `basic` device hangs in clSetUserEventStatus when a command waits on the
// user event (and it executes commands synchronously inside the enqueue
// call); there the stream is held back on the host side instead: an
// operation queued while a host function (or a wait on a not yet submitted
// event record) is pending is kept in the stream's deferred list and
// submitted when the gate opens.
//
// Several accel streams may share one cl_command_queue (stream_from_native
// of a queue accel already has a stream for): the extra ones are thin
// wrappers (Stream::target) and every operation works on the one state that
// owns the queue, so they share one order, one gate and one latest command.

// One record of an event: the marker enqueued for it once submitted.
struct Record {
  std::mutex mu;
  std::condition_variable cv;  // signalled when submitted
  bool submitted = false;
  cl_event ev = nullptr;      // the marker (null if its submission failed)
  cl_int error = CL_SUCCESS;  // why the submission failed
  // The marker was seen CL_COMPLETE: later queries need no OpenCL call
  // (completion is final; polling a finished event is the common case).
  std::atomic<bool> complete{false};
  std::vector<Stream*> waiters;  // streams held back until it is submitted (one ref each)
  bool profiling = true;         // its queue has CL_QUEUE_PROFILING_ENABLE
  ~Record() {
    if (ev) clReleaseEvent(ev);
  }
};

struct Launch;     // a kernel launch held back by a host gate (launch.cpp)
struct GraphExec;  // an executable native graph (graphs.cpp)
struct Recording;  // a native graph being recorded (graphs.cpp)

struct Op {
  enum Kind { Copy, Fill, RecordEvent, WaitRecord, HostFn, KernelLaunch, GraphLaunch } kind = Copy;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  cl_uchar pattern = 0;
  std::shared_ptr<Record> rec;
  accel_host_fn fn = nullptr;
  void* user_data = nullptr;
  // HostFn of the plugin's own steps: called instead of fn, with user_data,
  // when earlier work failed and fn is skipped (frees what fn would have).
  accel_host_fn discard = nullptr;
  // KernelLaunch: the kernel, its sizes and a copy of the arguments.
  std::shared_ptr<Launch> launch;
  // GraphLaunch: the executable graph (kept alive while the launch waits).
  std::shared_ptr<GraphExec> graph;

  // A copy of `bytes` bytes; the other members keep their defaults.
  static Op copy(void* dst, const void* src, size_t bytes) {
    Op op;
    op.kind = Copy;
    op.dst = dst;
    op.src = src;
    op.bytes = bytes;
    return op;
  }
};

struct Stream {
  Device* dev = nullptr;
  // A wrapper made by stream_from_native for a queue another live stream
  // already runs: every operation goes to `target` (one reference held) and
  // none of the members below is used. release_queue: the wrapper was given
  // ownership (ACCEL_NATIVE_TAKE_OWNERSHIP) of one reference of the queue,
  // released when the wrapper is destroyed.
  Stream* target = nullptr;
  bool release_queue = false;
  // A recording handle of graph_record_begin (ABI-46), not a stream: the
  // four recordable operations record into it (graphs.cpp); it has no queue
  // and none of the members below is used.
  Recording* recording = nullptr;

  cl_command_queue queue = nullptr;  // one reference owned (released with the state)
  cl_context context = nullptr;      // the queue's context (the device's)
  int32_t priority = 0;
  bool is_default = false;
  bool profiling = true;  // CL_QUEUE_PROFILING_ENABLE (a program's queue may lack it)
  // The program has the queue (stream_native_handle, stream_from_native):
  // it may enqueue on it directly, so stream_query cannot trust `last`.
  std::atomic<bool> exported{false};
  std::atomic<int> refs{1};  // the handle, plus pending host functions, waits, wrappers

  std::mutex mu;                 // guards everything below; orders enqueues
  std::condition_variable idle;  // signalled when no longer blocked with no deferred ops
  cl_event last = nullptr;       // event of the latest command enqueued, or null
  // When the latest command is an event record's marker (events.cpp's fast
  // path), the record holds the marker's one reference and `last` borrows
  // it: this keeps the record alive, and nobody refills the record while it
  // is here except a record on this stream, under mu. Null otherwise
  // (`last` then owns one reference).
  std::shared_ptr<Record> last_rec;
  bool last_complete = false;  // `last` was seen CL_COMPLETE (completion is final)
  bool blocked = false;        // a host function or a pending record holds later work
  std::deque<Op> deferred;     // operations waiting for the gate to open
  accel_status_t deferred_status = ACCEL_SUCCESS;  // first failure of a deferred submission
  std::string deferred_message;
};

struct Event {
  Device* dev = nullptr;
  uint32_t flags = 0;
  std::mutex mu;
  std::shared_ptr<Record> rec;  // the latest record, or null
};

// The stream state an accel stream handle works on (the target of a wrapper).
inline Stream* stream_of(accel_plugin_stream_t s) {
  auto* st = static_cast<Stream*>(s);
  return st->target ? st->target : st;
}

// streams.cpp
void stream_ref(Stream* s);
void stream_unref(Stream* s);
// A new stream state on `queue` (whose one reference it then owns) in the
// device's context, listed in dev->streams. Caller holds dev->mu; on a
// throw nothing is listed and the queue is still the caller's.
Stream* add_stream_state(Device* dev, cl_command_queue queue, cl_context ctx);
// Makes `ev` (one reference owned by the caller) the stream's latest command
// and flushes the queue. Caller holds s->mu.
accel_status_t stream_commit(Stream* s, cl_event ev);
// Everything submitted to the stream has completed (after its gate is open);
// reports a deferred submission's failure.
accel_status_t stream_finish(Stream* s);
// Everything submitted to the queues of destroyed streams of `dev` has
// completed; then releases the queues that are done. Takes dev->mu.
accel_status_t finish_retired(Device* dev);

// gate.cpp: the host-side gate.
// Queues `op`: submitted at once when the stream is not held back (the
// status is that of the submission), else deferred (ACCEL_SUCCESS; a later
// submission failure is reported by the stream's next query/synchronize).
accel_status_t stream_enqueue(Stream* s, Op&& op);
// Opens the gate of a stream held back by a host function or a record wait
// and submits what was deferred. Called with no lock held.
void stream_resume(Stream* s);
// Records a deferred submission's failure on the stream. Caller holds s->mu.
void stream_defer_error(Stream* s, accel_status_t st, const std::string& message);
// Waits until nothing is deferred or held back on the stream. Takes s->mu.
void stream_wait_ungated(Stream* s);
// Reports (and clears) the failure of a deferred submission, if any.
// Takes s->mu.
accel_status_t stream_take_deferred_error(Stream* s);

// interop.cpp
// stream_query of a stream whose queue the program has (Stream::exported):
// probes with a marker after the program's own commands.
accel_status_t stream_query_exported(Stream* s);

// hostfn.cpp
// Submits a host function: a marker whose completion hands fn to a worker,
// which runs it and then opens the gate: completes the user event a barrier
// after the marker waits on (device gates), or calls stream_resume (sets
// s->blocked: host gate). Caller holds s->mu.
accel_status_t hostfn_submit(Stream* s, const Op& op);
// Queues one of the plugin's own host-side steps (a cross-device wait, a
// staged peer copy) as a host function of `s`: fn(data) runs in stream
// order on a worker; discard(data) instead when earlier work failed.
accel_status_t stream_step(Stream* s, accel_host_fn fn, accel_host_fn discard, void* data);

// launch.cpp
// Submits a launch that was held back (Op::KernelLaunch). Caller holds s->mu.
accel_status_t launch_submit(Stream* s, const Launch& launch);

// graphs.cpp: native graphs over cl_khr_command_buffer.
// Reads the device's command-buffer version and capabilities and fills
// dev->command_buffers and dev->graph_support (info queries only).
void describe_graphs(Device* dev);
// Records a kernel launch into a recording: `clone` (one reference, taken
// over on success and on failure) carries the launch's argument values.
accel_status_t graph_record_kernel(Recording* r, cl_kernel clone, cl_uint dims,
                                   const size_t* global, const size_t* local);
// Records a copy of `bytes` bytes between device memory of the recording's
// device, or a fill of `bytes` bytes with `value`; ACCEL_ERROR_NOT_SUPPORTED
// (nothing recorded) when the memory cannot be named by a buffer.
accel_status_t graph_record_copy(Recording* r, void* dst, const void* src, size_t bytes);
accel_status_t graph_record_fill(Recording* r, void* dst, cl_uchar value, size_t bytes);
// Enqueues a launch of `exec` on the stream's queue. Caller holds s->mu.
accel_status_t graph_submit(Stream* s, GraphExec& exec);

// memory.cpp
// The live device allocation holding `p` (its base and size), false if none.
bool svm_allocation_of(const void* p, void** base, size_t* size);

// events.cpp
// Waits for `ev` to complete, even where clWaitForEvents returns early.
accel_status_t wait_event(cl_event ev, const char* what);
// Execution status as an answer: SUCCESS, NOT_READY, or BACKEND_FAILURE.
accel_status_t event_state(cl_event ev, const char* what);

// ---- modules and kernels (modules.cpp, pocl_binary.cpp, kernels.cpp, launch.cpp)
//
// A module is a cl_program built for one device in the device's context. A
// kernel is a pool of cl_kernel objects of one name: OpenCL keeps argument
// values in the kernel object and clSetKernelArg on one object from two
// threads is not thread-safe, while accel passes arguments at launch and lets
// two threads launch one kernel at once. Each launch therefore takes an idle
// object from the pool (clCreateKernel when none is idle), sets every
// argument, enqueues it (the enqueue captures the argument values) and puts
// it back. README.md ("Modules and kernels") says why a pool and not one
// object behind a lock.

struct Module {
  Device* dev = nullptr;
  cl_program program = nullptr;  // one reference owned
  accel_module_format_t format = ACCEL_MODULE_FORMAT_OPENCL_C;
};

struct Kernel {
  Device* dev = nullptr;
  cl_program program = nullptr;  // one reference owned: the pool grows from it
  std::string name;
  cl_uint num_args = 0;  // CL_KERNEL_NUM_ARGS
  // kernel_get_params' answer, when the vendor has argument information.
  bool params_known = false;
  std::string params_missing;  // why not (for the NOT_SUPPORTED detail)
  std::vector<accel_plugin_kernel_param_t> params;
  // clGetKernelWorkGroupInfo at creation (before any argument is set, so the
  // local memory is the kernel's own).
  size_t work_group_size = 0;     // CL_KERNEL_WORK_GROUP_SIZE
  size_t preferred_multiple = 0;  // CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
  cl_ulong static_local = 0;      // CL_KERNEL_LOCAL_MEM_SIZE
  cl_ulong private_mem = 0;       // CL_KERNEL_PRIVATE_MEM_SIZE
  std::atomic<int> refs{1};       // the handle, plus one per held-back launch

  // Objects no launch is using (each one reference): one in `spare`, taken
  // and put back with one atomic exchange (the uncontended case: one thread
  // launching), the others in `idle` under `mu`.
  std::atomic<cl_kernel> spare{nullptr};
  std::mutex mu;
  std::vector<cl_kernel> idle;
};

// kernels.cpp
// An idle kernel object of the pool (made with clCreateKernel when none is
// idle), for one launch; give it back with kernel_release.
accel_status_t kernel_acquire(Kernel* k, cl_kernel* out);
void kernel_release(Kernel* k, cl_kernel obj);
void kernel_ref(Kernel* k);
void kernel_unref(Kernel* k);

// pocl_binary.cpp
// What is wrong with `size` bytes given as a native binary to a PoCL device,
// "" when PoCL may read them. PoCL parses its own binary format ("poclbin")
// without bounds checks and writes the files it contains into its cache
// directory, so a truncated or forged binary would crash the process or
// write outside the cache: the container is walked here first.
std::string pocl_binary_problem(const unsigned char* data, size_t size, bool cpu_device);

// ---- the operations, one per vtable member (wired in plugin.cpp) -----------

// count.cpp: device_count. devices.cpp: lazy_init, get_device_properties and
// (with the common ops) device_synchronize. library.cpp: runtime_version.
// No init (the loader is linked, nothing to open) and no get/set_current_device
// (OpenCL has no current device).

// devices.cpp, streams.cpp, interop.cpp, hostfn.cpp, events.cpp, memory.cpp.
// No init: the ICD loader is linked, nothing to open (library.cpp).
ACCEL_BACKEND_NO_OP(init)
ACCEL_BACKEND_DISCOVERY_OPS(ACCEL_BACKEND_DECLARE_OP)
// OpenCL has no current device: the core keeps it.
ACCEL_BACKEND_NO_CURRENT_DEVICE_OPS
ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP)
// The ABI 1.1 groups: native handles (interop.cpp, events.cpp, devices.cpp),
// host memory and peer copies (memory.cpp, devices.cpp), attributes
// (devices.cpp).
ACCEL_BACKEND_INTEROP_OPS(ACCEL_BACKEND_DECLARE_OP)
// ABI 1.2 modules and kernels: module_formats, module_load, module_unload
// (modules.cpp, pocl_binary.cpp), kernel_create .. kernel_get_params
// (kernels.cpp), launch_kernel (launch.cpp).
ACCEL_BACKEND_MODULE_OPS(ACCEL_BACKEND_DECLARE_OP)
// ABI 1.4 native graphs (graphs.cpp).
const char* op_graph_support(int32_t device);
accel_status_t op_graph_record_begin(int32_t device, accel_plugin_stream_t* recording);
accel_status_t op_graph_record_end(accel_plugin_stream_t recording, int32_t keep,
                                   accel_plugin_graph_t* exec);
accel_status_t op_graph_launch(accel_plugin_graph_t exec, accel_plugin_stream_t stream);
void op_graph_exec_destroy(accel_plugin_graph_t exec);

}  // namespace accel::opencl
