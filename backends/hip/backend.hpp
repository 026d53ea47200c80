// The hip backend's one internal header: the HIP runtime's entry points, the
// device table, stream and event handles, and what the .cpp files share.
// Nothing here is exported: the plugin's only public symbol is the entry
// (exports.map). The HIP headers are compiled as host code
// (__HIP_PLATFORM_AMD__) for their prototypes only: no HIP library is linked.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "accel/accel_plugin.h"
#include "accel/accel_plugin_helpers.hpp"
// ABI 1.4's graph group (graphs.cpp): defined before plugin_ops.hpp so the
// vtable names op_graph_support .. op_graph_exec_destroy.
#define ACCEL_BACKEND_NATIVE_GRAPHS 1
#include "../common/plugin_ops.hpp"
#include "code_object.hpp"

namespace accel::hip {

using accel::plugin::fail;
using accel::plugin::format;
using accel::plugin::guarded;

// --- the HIP runtime (library.cpp) -------------------------------------------

// X(name): an entry point every supported runtime exports (5.x and 6.x).
// hipMalloc is listed apart: the header overloads it with a C++ template.
#define ACCEL_HIP_REQUIRED_FUNCTIONS(X) \
  X(hipInit)                            \
  X(hipGetErrorName)                    \
  X(hipGetErrorString)                  \
  X(hipGetDeviceCount)                  \
  X(hipGetDevice)                       \
  X(hipSetDevice)                       \
  X(hipDeviceGet)                       \
  X(hipGetDeviceProperties)             \
  X(hipDeviceSynchronize)               \
  X(hipDeviceGetStreamPriorityRange)    \
  X(hipStreamCreateWithPriority)        \
  X(hipStreamDestroy)                   \
  X(hipStreamQuery)                     \
  X(hipStreamSynchronize)               \
  X(hipStreamWaitEvent)                 \
  X(hipStreamAddCallback)               \
  X(hipEventCreateWithFlags)            \
  X(hipEventDestroy)                    \
  X(hipEventRecord)                     \
  X(hipEventQuery)                      \
  X(hipEventSynchronize)                \
  X(hipEventElapsedTime)                \
  X(hipFree)                            \
  X(hipMemcpyAsync)                     \
  X(hipMemsetAsync)                     \
  X(hipMemGetInfo)                      \
  X(hipHostFree)                        \
  X(hipHostRegister)                    \
  X(hipHostUnregister)                  \
  X(hipDeviceCanAccessPeer)             \
  X(hipDeviceEnablePeerAccess)          \
  X(hipMemcpyPeerAsync)                 \
  X(hipDeviceGetAttribute)

// Entry points used when present (NULL otherwise). hipLaunchHostFunc is
// declared by the HIP 5.2 headers but not exported by Debian's 5.2 runtime:
// host functions then go through hipStreamAddCallback. hipStreamGetDevice
// (HIP 5.6 and later) is neither declared nor exported by 5.2: its type is
// spelled out in Runtime below.
#define ACCEL_HIP_OPTIONAL_FUNCTIONS(X) \
  X(hipLaunchHostFunc)                  \
  X(hipDeviceGetUuid)                   \
  X(hipRuntimeGetVersion)               \
  X(hipPointerGetAttributes)            \
  ACCEL_HIP_MODULE_FUNCTIONS(X)         \
  ACCEL_HIP_GRAPH_FUNCTIONS(X)

// The module API (modules.cpp, launch.cpp), present in every HIP release but
// resolved as optional: a runtime lacking any of it keeps its streams,
// events and memory, and only loads no modules (module_formats answers no
// format). hipFuncGetAttribute, not hipFuncGetAttributes: the latter takes
// a host-side kernel stub (`const void*`), and HIP answers
// hipErrorInvalidDeviceFunction for a module's hipFunction_t there.
#define ACCEL_HIP_MODULE_FUNCTIONS(X) \
  X(hipModuleLoadData)                \
  X(hipModuleUnload)                  \
  X(hipModuleGetFunction)             \
  X(hipFuncGetAttribute)              \
  X(hipModuleLaunchKernel)

// Stream capture and executable graphs (graphs.cpp), exported by HIP 4.3
// and later (Debian's 5.2 included) but resolved as optional: a runtime
// lacking any of them has no native graphs (graph_support answers NULL and
// the core records). hipGraphInstantiate, not hipGraphInstantiateWithFlags
// (4.5): no flag is needed.
#define ACCEL_HIP_GRAPH_FUNCTIONS(X) \
  X(hipStreamBeginCapture)           \
  X(hipStreamEndCapture)             \
  X(hipGraphInstantiate)             \
  X(hipGraphDestroy)                 \
  X(hipGraphLaunch)                  \
  X(hipGraphExecDestroy)

// The loaded runtime. Each member has the header's own type, so a prototype
// that does not match the runtime's fails to compile.
struct Runtime {
  bool loaded = false;         // every required entry point resolved
  std::string name;            // the soname or ACCEL_HIP_RUNTIME path that was dlopen()ed
  std::string file;            // the file it resolved to (from the link map), or ""
  bool explicit_path = false;  // named by ACCEL_HIP_RUNTIME
#define ACCEL_HIP_MEMBER(fn) decltype(&::fn) fn = nullptr;
  ACCEL_HIP_REQUIRED_FUNCTIONS(ACCEL_HIP_MEMBER)
  ACCEL_HIP_OPTIONAL_FUNCTIONS(ACCEL_HIP_MEMBER)
#undef ACCEL_HIP_MEMBER
  // Overloaded by C++ templates in the header: the C entry points' types.
  hipError_t (*hipMalloc)(void** ptr, size_t size) = nullptr;
  hipError_t (*hipHostMalloc)(void** ptr, size_t size, unsigned int flags) = nullptr;
  // HIP 5.6+: hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t* device);
  // NULL where the runtime lacks it (Debian's 5.2).
  hipError_t (*hipStreamGetDevice)(hipStream_t stream, hipDevice_t* device) = nullptr;
};

// Filled by load_runtime() in init; read-only afterwards.
Runtime& runtime() noexcept;

// Every entry point of ACCEL_HIP_GRAPH_FUNCTIONS resolved (graphs.cpp).
bool graph_api_present() noexcept;

// Every entry point of ACCEL_HIP_MODULE_FUNCTIONS resolved; otherwise
// false with `missing` naming the first absent one.
bool module_api_present(const char*& missing) noexcept;

// dlopen + symbol resolution, once (from init). ACCEL_ERROR_BACKEND_UNAVAILABLE
// with the reason recorded when no runtime loads or one lacks an entry point.
// Runs no HIP code: the runtime is not initialised. May throw std::bad_alloc.
accel_status_t load_runtime();

// "libamdhip64.so.5 (/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153)"
std::string runtime_label();

// Whether this plugin has called into the runtime (hipGetDeviceCount at
// discovery or hipInit at lazy_init), which initialises it. Fork needs
// nothing more: a child of a process that did so never reaches the plugin
// (the core refuses the backend there, ACCEL_ERROR_FORKED), and the core
// asks runtime_version again only after lazy_init, never in such a child.
void note_runtime_initialised() noexcept;
bool runtime_initialised() noexcept;

// --- errors (errors.cpp) -----------------------------------------------------

// Maps `code` (OUT_OF_MEMORY, NOT_READY, NOT_SUPPORTED for hipErrorNotSupported
// and hipErrorPeerAccessUnsupported, else BACKEND_FAILURE), records
// "<call> failed: <hipErrorName> (<code>): <text>" and returns the status.
accel_status_t vendor_fail(const char* call, hipError_t code) noexcept;
// The same with " <context>" appended (hipMalloc: size and device).
accel_status_t vendor_fail(const char* call, hipError_t code, const std::string& context) noexcept;
// The message vendor_fail records, for reasons and logs that are no failure.
std::string vendor_failure_text(const char* call, hipError_t code);

// --- counting (count.cpp) ----------------------------------------------------

// "KFD topology", "KFD device node" or "hipGetDeviceCount".
const std::string& count_source() noexcept;

// --- the vtable (plugin.cpp) -------------------------------------------------

// Adds ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE: counting ran no HIP code.
void declare_discovery_fork_safe() noexcept;

// --- devices, streams and events ---------------------------------------------

// A stream handle: a hipStream_t this plugin created (stream_create, or the
// default stream of `device`, made on first use and never destroyed), or
// one the program made and stream_from_native wrapped. Every operation on
// the stream is submitted to `native`, and to nothing else, so work the
// program enqueues there directly is ordered with accel's, both ways.
struct Stream {
  int32_t device = 0;
  hipStream_t native = nullptr;
  bool is_default = false;
  bool owns_native = true;  // stream_destroy destroys `native` (false: a borrowed queue)
  // A native graph recording (graph_record_begin): `native` is a private
  // non-blocking stream in capture, so nothing queued on it runs now.
  bool recording = false;
};

struct Event {
  int32_t device = 0;
  hipEvent_t native = nullptr;
  uint32_t flags = 0;
};

struct Device {
  int32_t index = 0;
  // A blocking (hipStreamDefault) stream made by op_default_stream, so it
  // has a handle to export and is ordered with HIP's null stream both ways
  // (HIP's implicit synchronisation); never destroyed.
  Stream default_stream;
};

// Builds the device table (count devices) at discovery, under the core's
// discovery lock; read-only afterwards.
void set_devices(int32_t count);
// The count discovery reported (0 before it ran).
int32_t device_count() noexcept;
// ACCEL_ERROR_INVALID_DEVICE ("device N is out of range [0, count)") unless
// device_index names a counted device.
accel_status_t device_at(int32_t device_index, Device*& out) noexcept;

// on_device() and on_device_pair() over device_at (common/plugin_ops.hpp).
ACCEL_BACKEND_DEVICE_FRAMES(device_at)
// hipDeviceProp_t.gcnArchName with its feature suffixes
// ("gfx90a:sramecc+:xnack-"), for messages; "" when the runtime cannot tell
// (the failure is recorded as the thread's error detail). May throw
// std::bad_alloc.
std::string gcn_arch_name(int32_t device);

// Makes `device` the calling thread's HIP device for the scope and restores
// the caller's device afterwards, so an operation on a stream, event or
// pointer of another device does not change what hipGetDevice (and thus
// accel_current_device_index) answers.
class DeviceScope {
 public:
  DeviceScope() = default;
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  ~DeviceScope();
  accel_status_t enter(int32_t device) noexcept;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

// Makes `device` current for the rest of the enclosing block (a
// DeviceScope); returns its failure from the enclosing function (or
// guarded() body).
#define ACCEL_HIP_DEVICE_SCOPE(device)                                                    \
  ::accel::hip::DeviceScope device_scope_;                                                \
  if (accel_status_t scope_st_ = device_scope_.enter(device); scope_st_ != ACCEL_SUCCESS) \
  return scope_st_

inline Stream* stream_of(accel_plugin_stream_t s) noexcept { return static_cast<Stream*>(s); }
inline Event* event_of(accel_plugin_event_t e) noexcept { return static_cast<Event*>(e); }

// Whether `h` is the queue of a device's default stream (streams.cpp), and
// which device's: the backend keeps those, so they cannot be handed over.
bool is_default_stream_queue(hipStream_t h, int32_t* device);

// --- modules and kernels (modules.cpp, launch.cpp) ---------------------------

// A hipModule_t loaded on `device` from an AMD code object, with the kernel
// metadata read from the image at load time (HIP has no API for parameters).
// Immutable after module_load; freed by module_unload once the core has
// destroyed its kernels.
struct Module {
  int32_t device = 0;
  hipModule_t native = nullptr;
  KernelMetadataSet metadata;
};

// A hipFunction_t of a module (owned by the module: nothing to free in HIP)
// with what launches need, read once by kernel_create. Immutable afterwards,
// so any number of threads may launch it at once.
struct Kernel {
  Module* module = nullptr;
  hipFunction_t native = nullptr;
  std::string name;
  const KernelMetadata* params = nullptr;  // in module->metadata; NULL: unknown
  int64_t static_shared_bytes = 0;         // HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
};

inline Module* module_of(accel_plugin_module_t m) noexcept { return static_cast<Module*>(m); }
inline Kernel* kernel_of(accel_plugin_kernel_t k) noexcept { return static_cast<Kernel*>(k); }

// hipFuncGetAttribute(attrib) of `k` on its device (which the caller made
// current), as a status with the detail recorded.
accel_status_t kernel_attribute(const Kernel& k, hipFunction_attribute attrib, const char* what,
                                int& value);

// --- the operations (one op_<member> per vtable member) ----------------------

// device_synchronize (devices.cpp), streams (streams.cpp, interop.cpp), host functions
// (hostfn.cpp), events (events.cpp), memory (memory.cpp).
ACCEL_BACKEND_LIFECYCLE_OPS(ACCEL_BACKEND_DECLARE_OP)
ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP)
// The ABI 1.1 groups: native handles (interop.cpp, events.cpp, devices.cpp),
// host memory and peer copies (memory.cpp, devices.cpp), device attributes
// (devices.cpp).
ACCEL_BACKEND_INTEROP_OPS(ACCEL_BACKEND_DECLARE_OP)
// The ABI 1.2 modules group: formats, loading, kernels and their attributes
// and parameters (modules.cpp), launches (launch.cpp).
ACCEL_BACKEND_MODULE_OPS(ACCEL_BACKEND_DECLARE_OP)
// ABI 1.3 (memory.cpp): what hipPointerGetAttributes says of a pointer accel
// did not allocate.
ACCEL_BACKEND_DECLARE_OP(pointer_get_device)
// ABI 1.4 (graphs.cpp): native graphs by HIP stream capture.
ACCEL_BACKEND_DECLARE_OP(graph_support)
ACCEL_BACKEND_DECLARE_OP(graph_record_begin)
ACCEL_BACKEND_DECLARE_OP(graph_record_end)
ACCEL_BACKEND_DECLARE_OP(graph_launch)
ACCEL_BACKEND_DECLARE_OP(graph_exec_destroy)

}  // namespace accel::hip
