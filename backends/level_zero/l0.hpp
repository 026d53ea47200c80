// Internal declarations shared by the files of the Level Zero backend.
// Nothing here is exported: the plugin's only public symbol is the entry.
#pragma once

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#include <accel/accel_plugin.h>

#include "../common/format.hpp"
#include "../common/plugin_ops.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace accel_ze {

// ---- the loader, reached through dlopen (loader.cpp) ----------------------

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

#define ACCEL_ZE_REQUIRED(X)                                                                  \
  X(zeInit) X(zeDriverGet) X(zeDriverGetProperties) X(zeDeviceGet) X(zeDeviceGetProperties)  \
  X(zeDeviceGetComputeProperties) X(zeDeviceGetCommandQueueGroupProperties)                   \
  X(zeDeviceGetMemoryProperties) X(zeContextCreate) X(zeContextDestroy)                       \
  X(zeCommandListCreateImmediate) X(zeCommandListDestroy) X(zeCommandListAppendMemoryCopy)     \
  X(zeCommandListAppendMemoryFill) X(zeCommandListAppendSignalEvent)                           \
  X(zeCommandListAppendWaitOnEvents) X(zeCommandListAppendBarrier) X(zeEventPoolCreate) X(zeEventPoolDestroy)                \
  X(zeEventCreate) X(zeEventDestroy) X(zeEventHostSignal) X(zeEventHostSynchronize)            \
  X(zeEventQueryStatus) X(zeEventHostReset) X(zeEventQueryKernelTimestamp)                     \
  X(zeMemAllocDevice) X(zeMemFree)

#define ACCEL_ZE_OPTIONAL(X) \
  X(zeDevicePciGetPropertiesExt) X(zesDeviceEnumMemoryModules) X(zesMemoryGetState) \
  X(zeDriverGetApiVersion)

struct Loader {
  void* handle = nullptr;
  std::string path;  // what was dlopen()ed
#define ACCEL_ZE_MEMBER(fn) decltype(&::fn) fn = nullptr;
  ACCEL_ZE_REQUIRED(ACCEL_ZE_MEMBER)
  ACCEL_ZE_OPTIONAL(ACCEL_ZE_MEMBER)
#undef ACCEL_ZE_MEMBER
  PfnInitDrivers zeInitDrivers = nullptr;
  PfnGetLastErrorDescription zeDriverGetLastErrorDescription = nullptr;
  PfnCommandListHostSynchronize zeCommandListHostSynchronize = nullptr;
};

// The loader's entry points; valid after op_init succeeded.
extern Loader ze;

// dlopen()s libze_loader.so.1 (or $ACCEL_ZE_LOADER) and resolves the entry
// points. ACCEL_ERROR_BACKEND_UNAVAILABLE naming the library when it is
// missing or lacks a required symbol.
accel_status_t op_init();

// ---- host services, logging, errors (errors.cpp) ---------------------------

// Set once by the entry point, read-only afterwards.
extern const accel_host_services_t* g_host;

// "ZE_RESULT_ERROR_DEVICE_LOST"; "ZE_RESULT_UNKNOWN" outside the table.
const char* ze_result_name(ze_result_t r);
// Accel status of a Level Zero failure: memory exhaustion is
// ACCEL_ERROR_OUT_OF_MEMORY, anything else ACCEL_ERROR_BACKEND_FAILURE.
accel_status_t status_of(ze_result_t r);

void log_msg(accel_log_level_t level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool log_on(accel_log_level_t level);
const char* host_env(const char* name);

using accel_backend::format;
using accel_backend::vformat;

// host->set_error(status, printf(fmt, ...)); returns status.
accel_status_t fail(accel_status_t status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// "<call> failed: <ZE_NAME> (0x...)[: <driver's last error description>][ (<context>)]"
// The description comes from zeDriverGetLastErrorDescription of `driver`
// where the loader has it. Returns status_of(r).
std::string describe_failure(const char* call, ze_result_t r, ze_driver_handle_t driver);
accel_status_t ze_fail(const char* call, ze_result_t r, ze_driver_handle_t driver,
                       const char* context_fmt = nullptr, ...)
    __attribute__((format(printf, 4, 5)));

// Runs body() and turns any C++ exception into a status: nothing may be
// thrown across the plugin ABI.
template <class F>
accel_status_t guarded(const char* what, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", what);
  } catch (const std::exception& e) {
    return fail(ACCEL_ERROR_INTERNAL, "%s: internal error: %s", what, e.what());
  } catch (...) {
    return fail(ACCEL_ERROR_INTERNAL, "%s: internal error (unknown exception)", what);
  }
}

// ---- events from pools (slots.cpp) -----------------------------------------

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

// ---- devices (devices.cpp) ---------------------------------------------------

struct Stream;

struct Driver {
  ze_driver_handle_t handle = nullptr;
  ze_context_handle_t context = nullptr;  // created by lazy_init
};

struct Device {
  int32_t index = 0;
  Driver* driver = nullptr;
  ze_device_handle_t handle = nullptr;
  ze_device_properties_t props{};   // stype DEVICE_PROPERTIES_1_2: timerResolution in Hz
  uint32_t ip_version = 0;          // 0 when the driver has no ZE_extension_device_ip_version
  uint64_t total_memory = 0;        // sum of zeDeviceGetMemoryProperties
  uint32_t compute_ordinal = 0;     // queue group with ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE
  std::string label_text;           // "device 0 'Intel(R) Arc(TM) A770'"

  std::unique_ptr<SlotPool> plain_slots;   // HOST_VISIBLE
  std::unique_ptr<SlotPool> timing_slots;  // HOST_VISIBLE | KERNEL_TIMESTAMP

  std::mutex mu;  // guards default_stream, streams
  Stream* default_stream = nullptr;
  std::vector<Stream*> streams;  // live and dying streams, the default included

  std::atomic<uint64_t> allocated{0};  // bytes from mem_alloc not yet freed

  const char* label() const { return label_text.c_str(); }
};

// The enumerated devices (valid after a successful device_count).
extern std::vector<Device*>& g_devices;
// True once discovery has called zeInit (the process is then fork-unsafe).
bool discovery_ran_zeinit();

accel_status_t op_device_count(int32_t* count);
accel_status_t op_lazy_init();
accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props);

// ---- streams, events, host functions (stream.cpp, events.cpp, hostfn.cpp) ---

// A host function waiting for its turn: the worker waits for `ready` (signalled
// by the list after all earlier work), runs fn, then host-signals `go`, which
// the list waits on before any later work.
struct HostJob {
  SlotRef ready;
  SlotRef go;
  accel_host_fn fn = nullptr;
  void* user_data = nullptr;
};

struct Stream {
  Device* dev = nullptr;
  ze_command_list_handle_t list = nullptr;
  int32_t priority = 0;
  bool is_default = false;

  std::mutex mu;                   // orders appends; guards everything below
  SlotRef last;                    // signalled by the latest command; null when none yet
  std::vector<SlotRef> held;       // events waited on, kept until the stream passes them
  bool dying = false;              // stream_destroy called; freed once idle

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

// Appends a command to s->list that signals a fresh slot, which becomes
// s->last. `append(signal)` performs the append. Caller holds s->mu.
template <class F>
accel_status_t stream_append(Stream* s, const char* call, F&& append);
// Blocks until `slot` is signalled.
accel_status_t wait_slot(const SlotRef& slot, const char* what);
// SUCCESS when signalled, NOT_READY when not, else a failure.
accel_status_t query_slot(const SlotRef& slot, const char* what);
accel_status_t stream_create_internal(Device* dev, int32_t priority, bool is_default,
                                      Stream** out);
void hostfn_stop_worker(Stream* s);
// Drops the events a stream waited on once its latest command, appended
// after those waits, has completed. Caller holds s->mu.
void prune_held(Stream* s);
Device* device_at(int32_t index);

// The vtable operations shared with the other backends
// (backends/common/plugin_ops.hpp): devices, streams, events, memory.
ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP)

// ---- template definitions ------------------------------------------------------

template <class F>
accel_status_t stream_append(Stream* s, const char* call, F&& append) {
  SlotRef slot;
  if (accel_status_t st = s->dev->plain_slots->acquire(&slot); st != ACCEL_SUCCESS) return st;
  ze_result_t r = append(slot->ev);
  if (r != ZE_RESULT_SUCCESS)
    return ze_fail(call, r, s->dev->driver->handle, "%s", s->dev->label());
  slot->armed = true;
  s->last = std::move(slot);
  return ACCEL_SUCCESS;
}

}  // namespace accel_ze
