// backend.hpp - the one internal header of the sim backend: its types and the
// declarations its .cpp files share. README.md says what each file does.
#pragma once

#include <accel/accel_plugin.h>
#include <accel/accel_plugin_helpers.hpp>
#include <accel/accel_sim_kernel.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../../backends/common/plugin_ops.hpp"

namespace accel::sim {

using accel::plugin::fail;
using accel::plugin::guarded;

// ---------------------------------------------------------------------------
// Simulated streams (engine.cpp)
// ---------------------------------------------------------------------------

// An in-order queue of tasks executed by one dedicated worker thread.
class Stream {
 public:
  using Task = std::function<void()>;

  // Starts the worker thread last, once every member exists; may throw
  // std::system_error (start_stream turns it into a status).
  Stream(int32_t device, int32_t priority, bool is_default);
  // A wrapper of `target` (stream_from_native): no worker of its own, every
  // call goes to the target, so work queued through either is one order.
  // With `owns`, shutdown() shuts the target down too.
  Stream(std::shared_ptr<Stream> target, bool owns);
  ~Stream();

  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int32_t device() const { return device_; }
  int32_t priority() const { return priority_; }
  bool is_default() const { return is_default_; }
  // True on this stream's worker thread, i.e. inside one of its host
  // functions: blocking calls use it to fail instead of waiting on
  // themselves. (An id rather than a thread_local pointer: dynamic TLS in a
  // dlopen()ed module crashes LeakSanitizer on current glibc.)
  std::thread::id worker_id() const { return target_ ? target_->worker_id() : worker_id_; }
  bool is_current_worker() const { return worker_id() == std::this_thread::get_id(); }
  // The queue that runs this stream's work: itself, or a wrapper's target.
  // Its address is the sim's native stream handle.
  Stream* queue() { return target_ ? target_->queue() : this; }

  // Queues `task`; blocks while the queue is full. Returns false if the
  // stream is shutting down. A `marker` task (an event record) does no work
  // of its own: the stream counts as idle while it runs, so whoever it wakes
  // (event_synchronize) then sees the stream idle, as CUDA guarantees.
  bool enqueue(Task task, bool marker = false);
  // True when nothing is queued or running.
  bool idle();
  // Blocks until nothing is queued or running.
  void synchronize();
  // Lets the worker drain everything already queued, then exit on its own;
  // returns at once (stream_destroy: queued work completes after the call
  // returned, as with cudaStreamDestroy). Idempotent. A wrapper made with
  // ownership stops its target.
  void stop();
  // True once the worker has run everything queued and left its loop after
  // stop(), so joining it returns at once. A wrapper without ownership runs
  // nothing of its own: always true.
  bool finished();
  // stop(), then joins the worker. Idempotent; called by the destructor. A
  // destroyed stream is freed only once finished() (reap_drained), so the
  // join returns at once and never waits for queued work.
  void shutdown();

  // At least `bytes` of memory aligned to kLocalAlignment, owned by this
  // queue and reused by every later call (a kernel's local memory): grown,
  // never shrunk, so a stream that launches kernels allocates once. Only
  // the queue's own worker thread may call it, from a task (one task runs
  // at a time, so nobody else uses the memory meanwhile). NULL when the host
  // cannot allocate it.
  void* worker_scratch(size_t bytes);

 private:
  void run_task(Task& task);
  void run();

  const int32_t device_;
  const int32_t priority_;
  const bool is_default_;
  const std::shared_ptr<Stream> target_;  // set for a wrapper only
  const bool owns_target_ = false;

  std::mutex mu_;
  std::condition_variable work_cv_;   // worker: a task arrived or stop asked
  std::condition_variable idle_cv_;   // synchronize: pending_ reached 0
  std::condition_variable space_cv_;  // producers: room in the queue
  struct Queued {
    Task task;
    bool marker;
  };
  std::deque<Queued> queue_;
  size_t pending_ = 0;  // queued + running
  bool stopping_ = false;
  bool exited_ = false;  // the worker left its loop: stopping_ and nothing left
  std::thread worker_;   // started after everything above exists
  // Copy of worker_.get_id(), written once in the constructor before the
  // handle is published and never again, so any thread may read it while
  // shutdown() joins worker_.
  std::thread::id worker_id_;
  // worker_scratch()'s memory; touched only by the worker thread.
  struct AlignedFree {
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<void, AlignedFree> scratch_;
  size_t scratch_bytes_ = 0;
};

// Makes a stream and starts its worker thread. A thread the host cannot
// start is ACCEL_ERROR_OUT_OF_MEMORY ("<op>: cannot start a worker thread").
accel_status_t start_stream(const char* op, int32_t device, int32_t priority, bool is_default,
                            std::shared_ptr<Stream>& out);

// Enqueues on a stream, mapping "being destroyed" to a status.
accel_status_t submit(Stream* s, const char* op, Stream::Task task, bool marker = false);

inline Stream* as_stream(accel_plugin_stream_t h) { return static_cast<Stream*>(h); }

// ---------------------------------------------------------------------------
// The simulated device's limits (devices.cpp reports them as attributes,
// launch.cpp enforces them): a small CUDA-like device, CUDA's grid limits.
// ---------------------------------------------------------------------------

inline constexpr uint32_t kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxBlockDim[3] = {1024, 1024, 64};
inline constexpr uint32_t kMaxGridDim[3] = {2147483647u, 65535, 65535};
// Local memory of one block: its LOCAL_MEMORY arguments (each at a
// kLocalAlignment offset) plus the launch's shared_bytes.
inline constexpr size_t kSharedMemoryPerBlock = 48 * 1024;
// accel_sim_kernel.h promises 16-byte aligned local memory; 64 keeps each
// block's buffers on their own cache lines.
inline constexpr size_t kLocalAlignment = 64;

// ---------------------------------------------------------------------------
// Modules and kernels (modules.cpp loads, launch.cpp runs)
// ---------------------------------------------------------------------------

// One kernel of a loaded module, copied out of the module's table once it
// was checked, so nothing but `fn` points into the shared object.
struct KernelInfo {
  std::string name;
  accel_sim_kernel_fn fn = nullptr;
  std::vector<accel_sim_kernel_param_t> params;  // version 1 tables' with type 0
  bool has_local_params = false;  // some parameter takes LOCAL_MEMORY (OpenCL's __local)
  uint32_t max_threads_per_block = kMaxThreadsPerBlock;  // the table's, capped at the device's
};

// A loaded module: the dlopen() handle of its shared object and its kernels.
struct Module {
  int32_t device = 0;
  void* handle = nullptr;  // dlclose()d by module_unload
  std::vector<KernelInfo> kernels;
};

// A kernel_create handle: which kernel of which module. Launches read it
// only, so any number of threads may launch it at once.
struct Kernel {
  const Module* module = nullptr;
  const KernelInfo* info = nullptr;
};

inline Module* as_module(accel_plugin_module_t h) { return static_cast<Module*>(h); }
inline Kernel* as_kernel(accel_plugin_kernel_t h) { return static_cast<Kernel*>(h); }

// ---------------------------------------------------------------------------
// Events (events.cpp; streams.cpp waits on them)
// ---------------------------------------------------------------------------

// One record of an event. A new object per record (rather than one counter
// per event) keeps every record's completion exact even when records of the
// same event on different streams complete out of order: a wait enqueued
// against record k waits for record k, not for "some record >= k".
struct Record {
  bool done = false;                             // guarded by EventState::mu
  std::chrono::steady_clock::time_point when{};  // valid once done
  std::thread::id worker;                        // worker thread of the recording stream
};

struct EventState {
  EventState(int32_t dev, uint32_t fl) : device(dev), flags(fl) {}
  const int32_t device;
  const uint32_t flags;
  std::mutex mu;
  std::condition_variable cv;      // notified when any record completes
  std::shared_ptr<Record> latest;  // null: never recorded
};

// The handle given to the core. Tasks hold the shared state, so destroying
// an event while a record or a wait on it is queued is safe.
struct Event {
  std::shared_ptr<EventState> state;
};

inline Event* as_event(accel_plugin_event_t h) { return static_cast<Event*>(h); }

// ---------------------------------------------------------------------------
// Devices and global state (count.cpp, devices.cpp)
// ---------------------------------------------------------------------------

struct Device {
  Device(int32_t i, uint64_t mem) : index(i), total_memory(mem) {}
  const int32_t index;
  const uint64_t total_memory;

  // Live allocations, base address -> size; ordered so a pointer can be
  // mapped to the allocation containing it.
  std::mutex mem_mu;
  std::map<uintptr_t, size_t> allocations;
  uint64_t allocated = 0;

  // Every live stream of the device, for device_synchronize. shared_ptr so
  // a synchronize that snapshotted a stream stays safe while another thread
  // destroys it.
  std::mutex streams_mu;
  std::unordered_map<const Stream*, std::shared_ptr<Stream>> streams;
  Stream* default_stream = nullptr;  // created lazily, owned by `streams`
  // Streams destroyed with work still queued: stream_destroy returned at
  // once and their workers drain the queue and leave on their own. Kept
  // here so device_synchronize waits for that work too (cudaDeviceSynchronize
  // does), and so every worker is joined once it has finished (reap_drained)
  // rather than detached or joined by the destroyer. Guarded by streams_mu.
  std::vector<std::shared_ptr<Stream>> draining;
};

// Joins and frees the draining streams of `dev` whose workers have left
// (each join returns at once); the others stay. Takes dev.streams_mu.
void reap_drained(Device& dev);

struct State {
  int32_t device_count = 0;
  // Why there are no devices (dormant or bad configuration); "" otherwise.
  std::string no_device_reason;
  std::vector<std::unique_ptr<Device>> devices;
};

// The process-wide state, built from ACCEL_SIM_* on first use by any thread
// and never destroyed (count.cpp). May throw std::bad_alloc the first time.
State& state();

// The device for an index the core has already validated; checked again
// because a backend should not crash on a broken caller. Fails with
// ACCEL_ERROR_INVALID_DEVICE ("device N is out of range [0, count)").
accel_status_t device_at(int32_t device_index, Device*& out) noexcept;

// on_device() and on_device_pair() over device_at (common/plugin_ops.hpp).
ACCEL_BACKEND_DEVICE_FRAMES(device_at)

// ---------------------------------------------------------------------------
// The operations, one per vtable member (wired in plugin.cpp)
// ---------------------------------------------------------------------------

// count.cpp: init, device_count. devices.cpp: lazy_init, get_device_properties,
// runtime_version (the simulator is its own runtime). No get/set_current_device:
// the simulator has no native current device.
ACCEL_BACKEND_DECLARE_OP(init)
ACCEL_BACKEND_DISCOVERY_OPS(ACCEL_BACKEND_DECLARE_OP)
// No native current device: the core keeps the per-thread index.
ACCEL_BACKEND_NO_CURRENT_DEVICE_OPS
ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP)
// ABI 1.1 groups: interop.cpp, events.cpp, devices.cpp, memory.cpp.
ACCEL_BACKEND_INTEROP_OPS(ACCEL_BACKEND_DECLARE_OP)
// ABI 1.2 modules and kernels: modules.cpp (formats, load, unload, kernels,
// attributes, parameters) and launch.cpp (launch_kernel).
ACCEL_BACKEND_MODULE_OPS(ACCEL_BACKEND_DECLARE_OP)

}  // namespace accel::sim
