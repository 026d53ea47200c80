// backend.hpp - the one internal header of the Level Zero backend: the
// loader's symbol table, the Device, Stream and Event types, and the
// declarations its .cpp files share. Nothing here is exported: the plugin's
// only public symbol is the entry (plugin.cpp).
#pragma once

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#include <accel/accel_plugin.h>
#include <accel/accel_plugin_helpers.hpp>

#include "../common/plugin_ops.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace accel::level_zero {

using accel::plugin::fail;
using accel::plugin::format;
using accel::plugin::guarded;

// ---- the loader's entry points (library.cpp) --------------------------------

// Entry points of Level Zero 1.6+ that the 1.8 loader's headers do not
// declare; looked up by name and used only when the loader exports them.
struct InitDriverTypeDesc {  // ze_init_driver_type_desc_t (spec 1.10)
  ze_structure_type_t stype;
  const void* pNext;
  uint32_t flags;
};
constexpr auto kStypeInitDriverTypeDesc = static_cast<ze_structure_type_t>(0x00020021);
constexpr uint32_t kInitDriverTypeGpu = 1u;
struct DeviceIpVersionExt {  // ze_device_ip_version_ext_t (spec 1.6)
  ze_structure_type_t stype;
  void* pNext;
  uint32_t ipVersion;
};
constexpr auto kStypeDeviceIpVersionExt = static_cast<ze_structure_type_t>(0x1000f);
using PfnInitDrivers = ze_result_t (*)(uint32_t*, ze_driver_handle_t*, InitDriverTypeDesc*);
using PfnGetLastErrorDescription = ze_result_t (*)(ze_driver_handle_t, const char**);
using PfnCommandListHostSynchronize = ze_result_t (*)(ze_command_list_handle_t, uint64_t);
// ZE_COMMAND_QUEUE_FLAG_IN_ORDER (spec 1.7); older drivers ignore the bit and
// run an immediate list's commands in submission order anyway.
constexpr ze_command_queue_flags_t kQueueFlagInOrder = 1u << 1;

// Entry points the plugin cannot work without: a loader lacking one is
// refused in init.
#define ACCEL_ZE_REQUIRED(X)                                                                       \
  X(zeInit)                                                                                        \
  X(zeDriverGet)                                                                                   \
  X(zeDriverGetProperties)                                                                         \
  X(zeDeviceGet)                                                                                   \
  X(zeDeviceGetProperties)                                                                         \
  X(zeDeviceGetComputeProperties)                                                                  \
  X(zeDeviceGetCommandQueueGroupProperties)                                                        \
  X(zeDeviceGetMemoryProperties)                                                                   \
  X(zeContextCreate)                                                                               \
  X(zeContextDestroy)                                                                              \
  X(zeCommandListCreateImmediate) X(zeCommandListDestroy) X(zeCommandListAppendMemoryCopy)         \
      X(zeCommandListAppendMemoryFill) X(zeCommandListAppendSignalEvent)                           \
          X(zeCommandListAppendWaitOnEvents) X(zeCommandListAppendBarrier) X(zeEventPoolCreate)    \
              X(zeEventPoolDestroy) X(zeEventCreate) X(zeEventDestroy) X(zeEventHostSignal)        \
                  X(zeEventHostSynchronize) X(zeEventQueryStatus) X(zeEventHostReset)              \
                      X(zeEventQueryKernelTimestamp) X(zeMemAllocDevice) X(zeMemFree)              \
                          X(zeMemAllocHost) X(zeDeviceCanAccessPeer) X(zeDeviceGetCacheProperties) \
                              X(zeDeviceGetModuleProperties) X(zeDeviceGetMemoryAccessProperties)

// Required too: modules and kernels (modules.cpp, launch.cpp), core API
// since Level Zero 1.0.
#define ACCEL_ZE_MODULE_CALLS(X) \
  X(zeModuleCreate)              \
  X(zeModuleDestroy)             \
  X(zeModuleBuildLogGetString)   \
  X(zeModuleBuildLogDestroy)     \
  X(zeKernelCreate)              \
  X(zeKernelDestroy)             \
  X(zeKernelGetProperties)       \
  X(zeKernelSetGroupSize)        \
  X(zeKernelSetArgumentValue)    \
  X(zeCommandListAppendLaunchKernel)

// Entry points used only when the loader has them.
#define ACCEL_ZE_OPTIONAL(X)     \
  X(zeDevicePciGetPropertiesExt) \
  X(zesDeviceEnumMemoryModules)  \
  X(zesMemoryGetState) X(zeDriverGetApiVersion) X(zeMemGetAllocProperties)

// The loader's entry points; filled by load_library() in init, read-only
// afterwards.
struct Loader {
#define ACCEL_ZE_MEMBER(fn) decltype(&::fn) fn = nullptr;
  ACCEL_ZE_REQUIRED(ACCEL_ZE_MEMBER)
  ACCEL_ZE_MODULE_CALLS(ACCEL_ZE_MEMBER)
  ACCEL_ZE_OPTIONAL(ACCEL_ZE_MEMBER)
#undef ACCEL_ZE_MEMBER
  PfnInitDrivers zeInitDrivers = nullptr;
  PfnGetLastErrorDescription zeDriverGetLastErrorDescription = nullptr;
  PfnCommandListHostSynchronize zeCommandListHostSynchronize = nullptr;
};
extern Loader ze;

// dlopen()s libze_loader.so.1 (or the absolute path in ACCEL_ZE_LOADER) and
// resolves the entry points: ACCEL_ERROR_BACKEND_UNAVAILABLE with the reason
// when it is missing, refused or lacks a required symbol.
accel_status_t load_library() noexcept;
// The file that was loaded (the override's path or the soname).
const char* loader_path() noexcept;

// ---- the backend's own threads at process exit (library.cpp) ---------------
//
// The loader and its drivers tear their state down among the process's exit
// handlers; a host-function worker or a destroyed stream's reaper calling
// Level Zero then would run on freed dispatch tables. arm_exit_gate(), called
// once the drivers are loaded (so its handler runs before theirs), makes the
// process's exit close the gate and wait (at most kExitWaitMs) for the calls
// inside it. A thread calls Level Zero only between vendor_enter() (false
// once the gate is closed: the thread must call park_forever()) and
// vendor_leave().
constexpr int kExitWaitMs = 500;
void arm_exit_gate() noexcept;
bool vendor_enter() noexcept;
void vendor_leave() noexcept;
[[noreturn]] void park_forever() noexcept;

// ---- failures (errors.cpp) ---------------------------------------------------

// "ZE_RESULT_ERROR_DEVICE_LOST"; "ZE_RESULT_UNKNOWN" outside the table.
const char* ze_result_name(ze_result_t r) noexcept;
// "<call> failed: <ZE_NAME> (<code>): <text>". The text is the driver's
// zeDriverGetLastErrorDescription where the loader has it and `driver` is
// given, else the result's description. May throw std::bad_alloc.
std::string vendor_failure(const char* call, ze_result_t code, ze_driver_handle_t driver = nullptr);
// Records vendor_failure(...) as the error detail and returns the accel
// status of `code`: out of host or device memory -> ACCEL_ERROR_OUT_OF_MEMORY,
// not ready -> ACCEL_ERROR_NOT_READY, anything else ACCEL_ERROR_BACKEND_FAILURE.
accel_status_t vendor_fail(const char* call, ze_result_t code,
                           ze_driver_handle_t driver = nullptr) noexcept;

// ---- Level Zero events from per-device pools (events.cpp) --------------------

struct Device;

// One Level Zero event taken from a device's pool. Shared (shared_ptr) by
// everything that may still look at it: a stream's last command, an accel
// event's current record, a stream's pending waits, a host-function job.
// When the last reference goes the slot returns to its pool, and is reset
// and reused only once it has been signalled (a slot the device may still
// signal is never handed out again).
struct Slot {
  ze_event_handle_t ev = nullptr;
  Device* dev = nullptr;
  bool timing = false;
  bool armed = false;  // a signal of it was appended or handed to a host thread
};
using SlotRef = std::shared_ptr<Slot>;

class SlotPool {
 public:
  SlotPool(Device* dev, bool timing) : dev_(dev), timing_(timing) {}
  // A reset slot, ready to be signalled once.
  accel_status_t acquire(SlotRef* out);

 private:
  void release(Slot* s);
  Device* dev_;
  bool timing_;
  std::mutex mu_;
  std::vector<ze_event_pool_handle_t> pools_;
  std::vector<Slot*> free_;
  std::deque<Slot*> retired_;  // released while maybe still to be signalled
  uint32_t next_index_ = 0;    // next unused index of pools_.back()
};

// Blocks until `slot` is signalled.
accel_status_t wait_slot(const SlotRef& slot);
// SUCCESS when signalled, NOT_READY (no detail) when not, else a failure.
accel_status_t query_slot(const SlotRef& slot);

// ---- drivers and devices (count.cpp, devices.cpp) ----------------------------

struct Stream;

struct Driver {
  ze_driver_handle_t handle = nullptr;
  ze_context_handle_t context = nullptr;  // created by lazy_init
};

struct Device {
  int32_t index = 0;
  Driver* driver = nullptr;
  ze_device_handle_t handle = nullptr;
  ze_device_properties_t props{};  // stype DEVICE_PROPERTIES_1_2: timerResolution in Hz
  uint32_t ip_version = 0;         // 0 when the driver has no ZE_extension_device_ip_version
  uint64_t total_memory = 0;       // sum of zeDeviceGetMemoryProperties
  uint32_t compute_ordinal = 0;    // queue group with ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE
  std::string label_text;          // "device 0 'Intel(R) Arc(TM) A770'"

  std::unique_ptr<SlotPool> plain_slots;   // HOST_VISIBLE
  std::unique_ptr<SlotPool> timing_slots;  // HOST_VISIBLE | KERNEL_TIMESTAMP

  std::mutex mu;  // guards default_stream, streams
  Stream* default_stream = nullptr;
  std::vector<Stream*> streams;  // live and dying streams, the default included

  std::atomic<uint64_t> allocated{0};  // bytes from mem_alloc not yet freed

  // An immediate list of the device for the device's half of copies staged
  // through host memory (memory.cpp), created on first use, never destroyed.
  std::mutex staging_mu;  // guards staging_list and appends to it
  ze_command_list_handle_t staging_list = nullptr;

  const char* label() const { return label_text.c_str(); }
};

// What counting found (count.cpp): written by device_count under the core's
// discovery lock, read-only afterwards. Never destroyed: worker and reaper
// threads may use devices during exit.
extern std::vector<Driver*>& g_drivers;
extern std::vector<Device*>& g_devices;

// The device with index `device_index`, or ACCEL_ERROR_INVALID_DEVICE
// ("device N is out of range [0, count)"):
//   Device* d;
//   if (accel_status_t st = device_at(i, d); st != ACCEL_SUCCESS) return st;
accel_status_t device_at(int32_t device_index, Device*& out) noexcept;

// on_device() and on_device_pair() over device_at (common/plugin_ops.hpp).
ACCEL_BACKEND_DEVICE_FRAMES(device_at)

// A zeDeviceGet*Properties list of the count-then-fill kind, every entry's
// stype set to `stype`: *out holds what the driver filled; the result is
// the driver's.
template <class T>
ze_result_t query_property_list(ze_device_handle_t dev,
                                ze_result_t (*query)(ze_device_handle_t, uint32_t*, T*),
                                ze_structure_type_t stype, std::vector<T>* out) {
  uint32_t n = 0;
  ze_result_t r = query(dev, &n, nullptr);
  out->clear();
  if (r == ZE_RESULT_SUCCESS && n > 0) {
    out->assign(n, T{});
    for (T& t : *out) t.stype = stype;
    r = query(dev, &n, out->data());
    out->resize(n);
  }
  return r;
}

// zeDeviceGetModuleProperties of the device (devices.cpp).
accel_status_t module_properties(Device* d, ze_device_module_properties_t* out);

// Adds ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE to the vtable (plugin.cpp):
// counting calls it when it left no Level Zero state behind.
void declare_discovery_fork_safe() noexcept;

// Whether the loader may hand out its own wrappers of driver handles (its
// intercept mode: ZE_ENABLE_LOADER_INTERCEPT=1, or more than one driver
// loaded; count.cpp). The loader then returns the build log of a *failed*
// zeModuleCreate unwrapped (loader 1.8 and later: it converts the handles
// only on success), and reading or destroying that log through the loader
// would use a driver object as a loader one (modules.cpp does neither).
bool loader_may_intercept() noexcept;

// ---- streams, events, host functions (streams.cpp, interop.cpp, events.cpp,
//      hostfn.cpp) ----------------------------------------------------------

// A new in-order immediate list on dev's compute queue group (streams.cpp).
accel_status_t create_list(Device* dev, ze_command_queue_priority_t priority,
                           ze_command_list_handle_t* out);

// A host function waiting for its turn: the worker waits for `ready` (signalled
// by the list after all earlier work), runs fn, then host-signals `go`, which
// the list waits on before any later work.
struct HostJob {
  SlotRef ready;
  SlotRef go;
  accel_host_fn fn = nullptr;
  void* user_data = nullptr;
};

// One immediate command list and the state that orders work on it. Shared
// (shared_ptr) by every accel stream that submits to the list: the stream
// that created it and the wrappers stream_from_native made of its exported
// handle, so they take turns appending (Level Zero forbids appending to one
// list from two threads at once) and agree on its latest command.
struct Queue {
  Device* dev = nullptr;
  ze_command_list_handle_t list = nullptr;
  bool accel_made = false;    // created by stream_create / default_stream
  bool destroy_list = false;  // zeCommandListDestroy when the last stream using it is freed
  // The program holds the handle (stream_native_handle gave it out, or
  // stream_from_native wrapped it) and may append to the list directly:
  // `last` then no longer covers everything queued, and synchronize, query
  // and destroy append a marker first (streams.cpp).
  std::atomic<bool> exported{false};

  std::mutex mu;  // orders appends; guards everything below
  SlotRef last;   // signalled by the latest command accel appended; null when none yet
  // What in-flight commands still use (events they wait on, staging
  // buffers), kept until `last`, appended after them, has completed.
  std::vector<std::shared_ptr<void>> held;

  ~Queue();  // unregisters; destroys the list when destroy_list
};
using QueueRef = std::shared_ptr<Queue>;

struct Stream {
  Device* dev = nullptr;
  QueueRef q;
  int32_t priority = 0;
  bool is_default = false;
  bool dying = false;  // stream_destroy called; freed once idle (guarded by q->mu)

  // Host-function worker, started on the first launch_host_func.
  std::mutex job_mu;
  std::condition_variable job_cv;
  std::deque<HostJob> jobs;
  bool worker_started = false;
  bool worker_stop = false;
  std::thread worker;
};

struct Event {
  Device* dev = nullptr;
  uint32_t flags = 0;
  std::mutex mu;
  SlotRef rec;  // the latest record, or null
};

// Every live Queue by its list (streams.cpp), so that stream_from_native of
// a list accel made shares that list's Queue (interop.cpp). A Queue leaves
// it when destroyed. The map is used under the mutex.
std::mutex& queue_registry_mutex();
std::map<ze_command_list_handle_t, std::weak_ptr<Queue>>& queue_registry();
// A new Queue of `list` (not registered: the caller does that).
QueueRef make_queue(Device* dev, ze_command_list_handle_t list, bool accel_made, bool destroy_list);
// Registers a new stream of `dev` on `q` (dev->streams: device_synchronize).
Stream* add_stream(Device* dev, QueueRef q, int32_t priority, bool is_default);

// Appends a command to q->list that signals a fresh slot, which becomes
// q->last. `append(signal)` performs the append and returns its result;
// `call` names it. Caller holds q->mu.
template <class F>
accel_status_t queue_append(Queue* q, const char* call, F&& append) {
  SlotRef slot;
  if (accel_status_t st = q->dev->plain_slots->acquire(&slot); st != ACCEL_SUCCESS) return st;
  if (ze_result_t r = append(slot->ev); r != ZE_RESULT_SUCCESS)
    return vendor_fail(call, r, q->dev->driver->handle);
  slot->armed = true;
  q->last = std::move(slot);
  return ACCEL_SUCCESS;
}
// Drops what in-flight commands held once the latest command, appended
// after them, has completed. Caller holds q->mu.
void prune_held(Queue* q);
// The slot to wait for so that everything queued on q->list so far is
// done: q->last, or, when the program may have appended to the list
// directly (q->exported), a marker signalled after all of it. Null when
// nothing needs waiting for. Caller holds q->mu.
accel_status_t queue_fence(Queue* q, SlotRef* out);
// Stops and joins the stream's host-function worker, if it has one.
void hostfn_stop_worker(Stream* s);

// Copies between devices (memory.cpp): whether `device`'s commands can reach
// memory of `peer` (zeDeviceCanAccessPeer; devices of different drivers
// never can).
accel_status_t can_access_peer(Device* device, Device* peer, bool* yes);

// ---- modules and kernels (modules.cpp, launch.cpp) ---------------------------

// A zeModuleCreate module of one device (the driver's context).
struct Module {
  Device* dev = nullptr;
  ze_module_handle_t handle = nullptr;
  // Loaded from SPIR-V: each kernel's parameters (spirv_kernel_params).
  std::map<std::string, std::vector<accel_plugin_kernel_param_t>> params;
};

// Each OpEntryPoint Kernel's parameters in the SPIR-V module `data`
// (spirv_params.cpp): an OpTypeInt/OpTypeFloat parameter is a VALUE of its
// width (INT, FLOAT), a vector a VALUE of its size (STRUCT; 3 components
// take 4); an OpTypePointer by storage class: CrossWorkgroup or Generic a
// DEVICE_POINTER (POINTER), UniformConstant (`__constant`) a read-only
// DEVICE_POINTER, Workgroup (`__local`) LOCAL_MEMORY, Function (a struct
// passed by value) a VALUE of unknown size (STRUCT); anything else
// (samplers, images, events) any kind, UNKNOWN. Empty for what is not
// SPIR-V of this byte order, or is damaged. May throw std::bad_alloc.
std::map<std::string, std::vector<accel_plugin_kernel_param_t>> spirv_kernel_params(
    const void* data, size_t size);

// A zeKernelCreate kernel and what launches check, read once at creation.
struct Kernel {
  Module* module = nullptr;
  Device* dev = nullptr;
  ze_kernel_handle_t handle = nullptr;
  std::string name;
  ze_kernel_properties_t props{};           // zeKernelGetProperties
  ze_device_compute_properties_t limits{};  // zeDeviceGetComputeProperties of dev
  // The module's SPIR-V declarations of its parameters; empty: unknown.
  std::vector<accel_plugin_kernel_param_t> params;
  // Level Zero keeps a launch's group size and arguments in the kernel
  // object (zeKernelSetGroupSize, zeKernelSetArgumentValue), captured by
  // zeCommandListAppendLaunchKernel, and forbids calling the setters from
  // two threads at once: a launch holds this from its first set to its
  // append, so launches of one kernel from any threads and streams never
  // mix their arguments.
  std::mutex launch_mu;
};

// ---- the vtable's operations -------------------------------------------------

// Every vtable member, op_<member>, wired in plugin.cpp. Each body runs
// inside accel::plugin::guarded().
// device_synchronize .. mem_get_info (backends/common/plugin_ops.hpp).
ACCEL_BACKEND_DECLARE_OP(init)
ACCEL_BACKEND_DISCOVERY_OPS(ACCEL_BACKEND_DECLARE_OP)
// No native current device: the core keeps the per-thread index.
ACCEL_BACKEND_NO_CURRENT_DEVICE_OPS
ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP)
// The ABI 1.1 groups (native handles, host memory, peer copies, attributes).
ACCEL_BACKEND_INTEROP_OPS(ACCEL_BACKEND_DECLARE_OP)
// The ABI 1.2 modules group (modules.cpp, launch.cpp).
ACCEL_BACKEND_MODULE_OPS(ACCEL_BACKEND_DECLARE_OP)
// ABI 1.3 (memory.cpp): what zeMemGetAllocProperties says of a pointer accel
// did not allocate.
ACCEL_BACKEND_DECLARE_OP(pointer_get_device)

}  // namespace accel::level_zero
