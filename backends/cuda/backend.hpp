// backend.hpp - the one internal header of the CUDA backend: the Driver API
// symbol table, the device, stream and event types and the declarations its
// .cpp files share. README.md says what each file does. Nothing here is
// exported: the plugin's only public symbol is the entry.
//
// Nothing links against CUDA: cuda.h provides the prototypes, and
// libcuda.so.1 is opened at discovery (library.cpp).
#pragma once

#include <cuda.h>

#include <accel/accel_plugin.h>
#include <accel/accel_plugin_helpers.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../common/plugin_ops.hpp"

namespace accel::cuda {

using accel::plugin::fail;
using accel::plugin::format;
using accel::plugin::guarded;

// ---- the driver library (library.cpp) ---------------------------------------

// The oldest driver the plugin accepts: 11.4 (cuDeviceGetUuid_v2,
// cuLaunchHostFunc, stream priorities, and the _v2 memory API). Everything
// in the table below is older than that (cuStreamGetCtx: 9.2,
// cuFuncSetAttribute: 9.0). cuFuncGetParamInfo (12.4) is optional: see
// Driver.
constexpr int kMinDriverVersion = 11040;

// X(name, compat): `name` as cuda.h spells it (cuda.h may map it to a
// versioned symbol such as cuMemAlloc_v2; the member gets that type), and
// `compat`, an older exported symbol with the same signature to try with
// dlsym when the versioned one is absent (nullptr: none).
#define ACCEL_CUDA_DRIVER_FUNCTIONS(X)        \
  X(cuInit, nullptr)                          \
  X(cuDriverGetVersion, nullptr)              \
  X(cuGetErrorName, nullptr)                  \
  X(cuGetErrorString, nullptr)                \
  X(cuDeviceGetCount, nullptr)                \
  X(cuDeviceGet, nullptr)                     \
  X(cuDeviceGetName, nullptr)                 \
  X(cuDeviceGetUuid, "cuDeviceGetUuid")       \
  X(cuDeviceTotalMem, nullptr)                \
  X(cuDeviceGetAttribute, nullptr)            \
  X(cuDevicePrimaryCtxRetain, nullptr)        \
  X(cuDevicePrimaryCtxGetState, nullptr)      \
  X(cuCtxGetCurrent, nullptr)                 \
  X(cuCtxSetCurrent, nullptr)                 \
  X(cuCtxGetDevice, nullptr)                  \
  X(cuCtxSynchronize, nullptr)                \
  X(cuCtxGetStreamPriorityRange, nullptr)     \
  X(cuStreamCreateWithPriority, nullptr)      \
  X(cuStreamDestroy, nullptr)                 \
  X(cuStreamQuery, nullptr)                   \
  X(cuStreamSynchronize, nullptr)             \
  X(cuStreamWaitEvent, nullptr)               \
  X(cuLaunchHostFunc, nullptr)                \
  X(cuEventCreate, nullptr)                   \
  X(cuEventDestroy, nullptr)                  \
  X(cuEventRecord, nullptr)                   \
  X(cuEventQuery, nullptr)                    \
  X(cuEventSynchronize, nullptr)              \
  X(cuEventElapsedTime, "cuEventElapsedTime") \
  X(cuMemAlloc, nullptr)                      \
  X(cuMemFree, nullptr)                       \
  X(cuMemcpyHtoDAsync, nullptr)               \
  X(cuMemcpyDtoHAsync, nullptr)               \
  X(cuMemcpyDtoDAsync, nullptr)               \
  X(cuMemsetD8Async, nullptr)                 \
  X(cuMemGetInfo, nullptr)                    \
  X(cuStreamGetCtx, nullptr)                  \
  X(cuMemHostAlloc, nullptr)                  \
  X(cuMemFreeHost, nullptr)                   \
  X(cuMemHostRegister, "cuMemHostRegister")   \
  X(cuMemHostUnregister, nullptr)             \
  X(cuDeviceCanAccessPeer, nullptr)           \
  X(cuCtxEnablePeerAccess, nullptr)           \
  X(cuMemcpyPeerAsync, nullptr)               \
  X(cuPointerGetAttribute, nullptr)           \
  X(cuModuleLoadDataEx, nullptr)              \
  X(cuModuleUnload, nullptr)                  \
  X(cuModuleGetFunction, nullptr)             \
  X(cuFuncGetAttribute, nullptr)              \
  X(cuFuncSetAttribute, nullptr)              \
  X(cuLaunchKernel, nullptr)

// Stream capture and executable graphs (ABI 1.4's native graph group,
// graphs.cpp), optional: all present (CUDA 11.4+ drivers have them:
// cuGraphInstantiateWithFlags is the newest) or the core records graphs
// itself. Names as cuda.h spells them (cuStreamBeginCapture is
// cuStreamBeginCapture_v2, with a mode).
#define ACCEL_CUDA_GRAPH_FUNCTIONS(X) \
  X(cuStreamBeginCapture)             \
  X(cuStreamEndCapture)               \
  X(cuGraphInstantiateWithFlags)      \
  X(cuGraphLaunch)                    \
  X(cuGraphExecDestroy)               \
  X(cuGraphDestroy)

// cuFuncGetParamInfo as the CUDA 12.4 Driver API reference declares it
// (spelled out, so the plugin also builds against an older cuda.h).
using FuncGetParamInfoFn = CUresult (*)(CUfunction func, size_t paramIndex, size_t* paramOffset,
                                        size_t* paramSize);

// The first driver with cuFuncGetParamInfo.
constexpr int kParamInfoDriverVersion = 12040;

// Written once by op_init (under the core's discovery lock), read-only after.
struct Driver {
  std::string path;            // what was dlopen()ed
  bool explicit_path = false;  // from ACCEL_CUDA_DRIVER
  int version = 0;             // cuDriverGetVersion
#define ACCEL_CUDA_MEMBER(name, compat) decltype(&::name) name = nullptr;
  ACCEL_CUDA_DRIVER_FUNCTIONS(ACCEL_CUDA_MEMBER)
#undef ACCEL_CUDA_MEMBER
  // Optional: NULL on drivers older than 12.4 (kernel_get_params then
  // answers ACCEL_ERROR_NOT_SUPPORTED and arguments go unchecked).
  FuncGetParamInfoFn cuFuncGetParamInfo = nullptr;
  // Optional as a group (ACCEL_CUDA_GRAPH_FUNCTIONS): `graphs` says all of
  // them were found.
#define ACCEL_CUDA_GRAPH_MEMBER(name) decltype(&::name) name = nullptr;
  ACCEL_CUDA_GRAPH_FUNCTIONS(ACCEL_CUDA_GRAPH_MEMBER)
#undef ACCEL_CUDA_GRAPH_MEMBER
  bool graphs = false;
};

// The loaded driver; complete once open_driver() succeeded.
Driver& driver() noexcept;

// dlopen, version check, entry points. ACCEL_ERROR_BACKEND_UNAVAILABLE (with
// the reason) when the library is absent, the toolkit's stub, too old or
// incomplete. Called once, from op_init.
accel_status_t open_driver();

// "11.4 (11040)". May throw std::bad_alloc.
std::string version_text(int version);

// ---- errors (errors.cpp) ----------------------------------------------------

// The code's name ("CUDA_ERROR_OUT_OF_MEMORY") and text ("out of memory"):
// the driver's (cuGetErrorName/cuGetErrorString), else a built-in table for
// the codes the plugin can meet (the toolkit stub answers nothing), else
// NULL. Static storage.
const char* code_name(CUresult code) noexcept;
const char* code_text(CUresult code) noexcept;

// A driver call failed: records "<call> failed: <CUDA_ERROR_X> (<code>):
// <text>" and returns ACCEL_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_NOT_READY or
// ACCEL_ERROR_BACKEND_FAILURE.
accel_status_t vendor_fail(const char* call, CUresult code) noexcept;

// The same detail, returned as `status`: for the codes an operation knows to
// mean the caller's mistake (ACCEL_ERROR_INVALID_ARGUMENT) or a limit of the
// hardware (ACCEL_ERROR_NOT_SUPPORTED).
accel_status_t vendor_fail_as(accel_status_t status, const char* call, CUresult code) noexcept;

// A query's answer: CUDA_ERROR_NOT_READY is ACCEL_ERROR_NOT_READY with no
// error detail (not a failure); any other failure goes through vendor_fail.
accel_status_t query_status(const char* call, CUresult code) noexcept;

// Calls driver().name args; on failure returns vendor_fail("name", code) from
// the enclosing function (or guarded() body).
#define ACCEL_CU_TRY(name, args)                                                              \
  do {                                                                                        \
    CUresult accel_cu_rc_ = ::accel::cuda::driver().name args;                                \
    if (accel_cu_rc_ != CUDA_SUCCESS) return ::accel::cuda::vendor_fail(#name, accel_cu_rc_); \
  } while (0)

// ---- counting (count.cpp) ---------------------------------------------------

// The count op_device_count returned (0 before it ran).
int32_t counted_devices() noexcept;

// "NVML", "/proc/driver/nvidia/gpus" or "cuDeviceGetCount".
const std::string& count_source() noexcept;

// ---- devices (devices.cpp) --------------------------------------------------

// A stream: a created one (CU_STREAM_NON_BLOCKING), a device's default
// stream, whose handle is CU_STREAM_LEGACY, or a wrapper of the program's
// CUstream (stream_from_native). Every operation goes straight to `handle`:
// the plugin keeps no ordering state of its own, so work the program puts
// on the handle is ordered with accel's both ways.
struct Stream {
  int32_t device = 0;
  CUstream handle = nullptr;
  bool is_default = false;
  // stream_destroy destroys `handle`: streams the plugin created, and
  // wrappers made with ACCEL_NATIVE_TAKE_OWNERSHIP.
  bool owns_handle = true;
};
// A native graph recording (graphs.cpp) is a Stream too: a private
// CU_STREAM_NON_BLOCKING one in relaxed stream capture, handed to the core
// only as the stream of launch_kernel, memcpy_async, memset_async and
// memcpy_peer_async, which queue on `handle` as on any stream (none of them
// syncs, queries or stages), so the driver records them.

// An executable graph (graphs.cpp): made by graph_record_end, launched on
// any stream of `device`.
struct GraphExec {
  int32_t device = 0;
  CUgraphExec handle = nullptr;
};

struct Event {
  int32_t device = 0;
  CUevent handle = nullptr;
};

// What a launch is checked against (cuDeviceGetAttribute), read once per
// device by device_limits().
struct DeviceLimits {
  int max_grid[3] = {0, 0, 0};   // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X/Y/Z
  int max_block[3] = {0, 0, 0};  // CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X/Y/Z
  int warp_size = 0;             // CU_DEVICE_ATTRIBUTE_WARP_SIZE
  int shared_per_block = 0;      // ..._MAX_SHARED_MEMORY_PER_BLOCK: without opt-in (48 KiB)
  int shared_optin = 0;          // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: the most a block gets
};

// One device, made by op_lazy_init; never freed (live until exit, like the
// plugin).
struct Device {
  CUdevice dev = 0;
  // The primary context, retained on first use and never released.
  std::once_flag once;
  std::atomic<CUcontext> ctx{nullptr};
  CUresult retain_rc = CUDA_SUCCESS;
  Stream default_stream;  // handed to the core, never destroyed
  // Launch limits, queried on first use (launch.cpp).
  std::once_flag limits_once;
  DeviceLimits limits;
  CUresult limits_rc = CUDA_SUCCESS;
  const char* limits_failed = nullptr;  // the attribute whose query failed
  // Native graph recordings open on the device and cuCtxSynchronize calls
  // in flight (graphs.cpp): the driver refuses a context synchronize while
  // a stream of the context captures, and invalidates the capture, so
  // neither starts while the other is in progress.
  std::mutex capture_m;
  std::condition_variable capture_cv;
  int recordings = 0;
  int context_syncs = 0;
};

// The device of an index the core has already validated; checked again
// because a backend should not crash on a broken caller. Fails with
// ACCEL_ERROR_INVALID_DEVICE ("device N is out of range [0, count)").
accel_status_t device_at(int32_t device_index, Device*& out) noexcept;

// Brackets a cuCtxSynchronize of device `d`'s context: waits until no
// native graph recording of the device is open, and keeps new ones from
// beginning until the scope ends (graphs.cpp).
class ContextSyncScope {
 public:
  explicit ContextSyncScope(Device& d);
  ~ContextSyncScope();
  ContextSyncScope(const ContextSyncScope&) = delete;
  ContextSyncScope& operator=(const ContextSyncScope&) = delete;

 private:
  Device& d_;
};

// on_device() and on_device_pair() over device_at (common/plugin_ops.hpp).
ACCEL_BACKEND_DEVICE_FRAMES(device_at)

// The plugin's index of the device whose CUdevice is `ordinal` (a
// CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL); ACCEL_ERROR_INVALID_ARGUMENT when
// it is none of the plugin's devices.
accel_status_t device_of_ordinal(int ordinal, int32_t* device_index) noexcept;

// The device's primary context, retained on first use (thread-safe).
accel_status_t primary_context(int32_t device_index, CUcontext* ctx);
// The native handle of `handle`, a CUDA object of device `device` (NULL for
// the device itself): the device's primary context (retained on first use)
// and its CUdevice as the ordinal (interop.cpp).
accel_status_t native_handle_of(int32_t device, void* handle, accel_native_handle_t* out);

// The device whose context host-memory calls run in: the one whose primary
// context is current on the calling thread, else the thread's accel device
// (see CtxScope), so they create no context the program does not use.
int32_t calling_thread_device() noexcept;

// Makes `device`'s primary context current for the scope and restores what
// was current before on exit, as torch's device guards do. If no context was
// current and `device` is the thread's current accel device (set with
// ACCEL_PLUGIN_SET_DEVICE_MAYBE, or the initial device 0), the context stays
// current: the lazy half of "maybe" and the CUDA runtime's implicit device-0
// context.
class CtxScope {
 public:
  explicit CtxScope(int32_t device);
  ~CtxScope();
  CtxScope(const CtxScope&) = delete;
  CtxScope& operator=(const CtxScope&) = delete;
  accel_status_t status() const { return status_; }

 private:
  accel_status_t status_ = ACCEL_SUCCESS;
  bool restore_ = false;
  CUcontext previous_ = nullptr;
};

// Opens a CtxScope for `device`; returns its failure from the enclosing
// function (or guarded() body).
#define ACCEL_CUDA_CTX_SCOPE(device)          \
  ::accel::cuda::CtxScope ctx_scope_(device); \
  if (ctx_scope_.status() != ACCEL_SUCCESS) return ctx_scope_.status()

inline Stream* as_stream(accel_plugin_stream_t s) { return static_cast<Stream*>(s); }
inline Event* as_event(accel_plugin_event_t e) { return static_cast<Event*>(e); }

// ---- modules and kernels (modules.cpp, launch.cpp) --------------------------

// A loaded module: a CUmodule of the device's primary context.
struct Module {
  int32_t device = 0;
  CUmodule handle = nullptr;
  // Loaded from PTX: each entry's parameter types (ptx_param_types); empty
  // for cubins and fat binaries, whose parameters have sizes only.
  std::map<std::string, std::vector<uint32_t>> param_types;
};

// A kernel: its CUfunction (owned by the module) and what every launch
// needs without asking the driver again.
struct Kernel {
  int32_t device = 0;
  CUfunction fn = nullptr;
  std::string name;
  std::vector<uint32_t> param_types;  // from the module's PTX; empty: unknown
  int static_shared = 0;              // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as the driver has it:
  // read at creation, only ever raised (under opt_in_mutex), so a launch
  // that finds it large enough needs no lock and two threads launching at
  // once never lower each other's limit.
  std::atomic<int> dynamic_limit{0};
  std::mutex opt_in_mutex;
};

inline Module* as_module(accel_plugin_module_t m) { return static_cast<Module*>(m); }
inline Kernel* as_kernel(accel_plugin_kernel_t k) { return static_cast<Kernel*>(k); }

// The device's launch limits, queried once (thread-safe). Fails with the
// driver's error when an attribute cannot be read.
accel_status_t device_limits(int32_t device, const DeviceLimits*& out) noexcept;

// ---- the vtable (plugin.cpp) ------------------------------------------------

// Adds ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE: counting ran no CUDA code.
void declare_discovery_fork_safe() noexcept;

// Every vtable member, op_<member>, wired in plugin.cpp; each body runs
// inside guarded(), so nothing unwinds into the core. count.cpp: init,
// device_count; devices.cpp: lazy_init, properties, current device,
// device_synchronize, the device's native handle, peer access, attributes
// and capability; library.cpp: runtime_version; streams.cpp, interop.cpp
// (stream native handles and streams from native ones), events.cpp, hostfn.cpp,
// memory.cpp (with pinned host memory and peer copies); modules.cpp
// (module_formats .. kernel_get_params) and launch.cpp (launch_kernel):
// the rest.
ACCEL_BACKEND_LIFECYCLE_OPS(ACCEL_BACKEND_DECLARE_OP)
ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP)
// The ABI 1.1 groups (native handles, host memory, peer copies, attributes):
// all four, in full.
ACCEL_BACKEND_INTEROP_OPS(ACCEL_BACKEND_DECLARE_OP)
// The ABI 1.2 modules group, in full.
ACCEL_BACKEND_MODULE_OPS(ACCEL_BACKEND_DECLARE_OP)
// ABI 1.3: the CUstream's name for NVTX tools (streams.cpp).
ACCEL_BACKEND_DECLARE_OP(stream_set_name)
// ABI 1.3 (memory.cpp): what cuPointerGetAttribute says of a pointer accel
// did not allocate.
ACCEL_BACKEND_DECLARE_OP(pointer_get_device)
// ABI 1.4's native graph group (graphs.cpp): CUDA stream capture into
// cuGraph executables.
ACCEL_BACKEND_DECLARE_OP(graph_support)
ACCEL_BACKEND_DECLARE_OP(graph_record_begin)
ACCEL_BACKEND_DECLARE_OP(graph_record_end)
ACCEL_BACKEND_DECLARE_OP(graph_launch)
ACCEL_BACKEND_DECLARE_OP(graph_exec_destroy)

}  // namespace accel::cuda
