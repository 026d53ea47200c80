/*
 * accel_plugin.h - the backend ABI, version 1.
 *
 * The one header a backend author needs (docs/plugin-abi.md states the rules
 * as numbered policies; docs/writing-a-backend.md is the recipe). A backend
 * is a shared object that exports exactly one symbol, ACCEL_PLUGIN_ENTRY
 * (accel_plugin_get_api). The core dlopen()s every candidate with
 * RTLD_NOW | RTLD_LOCAL, calls the entry with its ABI version and a table of
 * host services, and gets back a const vtable (accel_plugin_api_t). Plugins
 * are never unloaded.
 *
 * Rules for plugins:
 *  - Never throw across the ABI, never call exit(), never print: log through
 *    host->log so ACCEL_LOG_LEVEL controls everything.
 *  - Report failures by returning an accel_status_t and, for detail, calling
 *    host->set_error (thread-local; the core prefixes the backend name).
 *  - Do not initialise a vendor context in the entry, in init or in
 *    device_count: discovery must stay cheap and fork-safe. Do it in
 *    lazy_init, which the core calls once before any other operation.
 *  - Device indices passed in are already validated by the core against the
 *    count device_count returned; handles passed in were made by this plugin
 *    and not yet destroyed (the core tracks handle liveness).
 *  - Every operation may be called from any thread concurrently unless its
 *    comment says otherwise.
 *  - Never call the public accel API (accel.h) from a callback. The entry,
 *    init, device_count, runtime_version (at discovery), lazy_init and
 *    default_stream run while the core holds a lock: every public call from
 *    them that reaches a backend, discovery or the backend list fails with
 *    ACCEL_ERROR_REENTRANT (it could deadlock); the few answered from the
 *    calling thread's own state alone (current device index, exchange) are
 *    not checked, on the hot path. From any other callback the result is
 *    undefined. Host functions (user code the plugin runs) may call it. A
 *    callback may fork(): the core's fork handlers skip the lock it holds.
 *  - Fork: the core alone decides what a fork() child may use (see
 *    ACCEL_PLUGIN_CAP_FORK_SAFE and ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE);
 *    plugins need no pthread_atfork handler of their own.
 *
 * Versioning (PJRT style): struct_size comes first; members are only appended.
 * The core refuses a plugin whose abi_major differs from its own, reads no
 * member past struct_size, and treats a NULL optional member as "not
 * supported". Members marked REQUIRED must be non-NULL or the plugin is
 * rejected. A minor version appends optional members only, so a plugin built
 * for an older minor (shorter struct_size) loads unchanged: the core treats
 * the members it lacks as NULL.
 *
 * Changelog (bump ACCEL_PLUGIN_ABI_MINOR and add a line for every member
 * appended; ACCEL_PLUGIN_API_V1_SIZE stays the 1.0 size):
 *  1.0: everything up to mem_get_info.
 *  1.1: runtime_version; capability bits DISCOVERY_FORK_SAFE and
 *       CROSS_DEVICE_WAIT.
 *  1.2: the modules group (module_formats .. launch_kernel, capability bit
 *       MODULES); status ACCEL_ERROR_BUILD_FAILED.
 *  1.3: pointer_get_device, stream_set_name; accel_plugin_kernel_param_t's
 *       former reserved member is `type` (0 from older plugins: unknown).
 *  1.4: the native graph group (graph_support .. graph_exec_destroy,
 *       capability bit GRAPHS).
 */
#ifndef ACCEL_ACCEL_PLUGIN_H
#define ACCEL_ACCEL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_PLUGIN_ABI_MAJOR 1u
#define ACCEL_PLUGIN_ABI_MINOR 4u

/* The entry symbol's name, as an identifier and as a string for dlsym. */
#define ACCEL_PLUGIN_ENTRY accel_plugin_get_api
#define ACCEL_PLUGIN_ENTRY_NAME "accel_plugin_get_api"

/* Marks the entry as exported even when built with -fvisibility=hidden. */
#if defined(__GNUC__)
#define ACCEL_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define ACCEL_PLUGIN_EXPORT
#endif

/* Log levels of host->log, spdlog's order. */
typedef enum accel_log_level {
  ACCEL_LOG_TRACE = 0,
  ACCEL_LOG_DEBUG = 1,
  ACCEL_LOG_INFO = 2,
  ACCEL_LOG_WARN = 3,
  ACCEL_LOG_ERROR = 4,
  ACCEL_LOG_CRITICAL = 5,
  ACCEL_LOG_OFF = 6,
  ACCEL_LOG_FORCE_INT32 = 0x7fffffff /* fixes the size; not a level */
} accel_log_level_t;

/* Services the core offers a plugin. Owned by the core, valid until process
 * exit; every function is thread-safe. Pass `host` itself back as the first
 * argument so the core knows which plugin speaks. */
typedef struct accel_host_services_s accel_host_services_t;
struct accel_host_services_s {
  size_t struct_size; /* sizeof(accel_host_services_t) of the core */
  uint32_t abi_major; /* the core's ACCEL_PLUGIN_ABI_MAJOR */
  uint32_t abi_minor; /* the core's ACCEL_PLUGIN_ABI_MINOR */
  void* host_data;    /* the core's; plugins must not touch it */
  /* Logs `message` (NUL-terminated, no trailing newline needed) at `level`
   * through the core's spdlog logger "accel", tagged with the backend name. */
  void (*log)(const accel_host_services_t* host, accel_log_level_t level, const char* message);
  /* 1 if `level` would be logged: lets a plugin skip formatting. */
  int (*log_enabled)(const accel_host_services_t* host, accel_log_level_t level);
  /* Sets the calling thread's last-error detail for the failure the plugin is
   * about to return (`status`); name the vendor call and its code/text.
   * Also used with ACCEL_SUCCESS by init/device_count to explain a count of 0
   * (the core shows that text as the backend's reason). */
  void (*set_error)(const accel_host_services_t* host, accel_status_t status, const char* message);
  /* secure_getenv: NULL in setuid/setgid processes. Plugins read their
   * configuration variables through it. */
  const char* (*get_env)(const accel_host_services_t* host, const char* name);
};

/* Capability bits (same values as ACCEL_CAP_* in accel.h). */
#define ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE ACCEL_CAP_NATIVE_CURRENT_DEVICE
#define ACCEL_PLUGIN_CAP_FORK_SAFE ACCEL_CAP_FORK_SAFE
#define ACCEL_PLUGIN_CAP_TIMING_EVENTS ACCEL_CAP_TIMING_EVENTS
#define ACCEL_PLUGIN_CAP_HOST_FUNCTIONS ACCEL_CAP_HOST_FUNCTIONS
#define ACCEL_PLUGIN_CAP_STREAM_PRIORITIES ACCEL_CAP_STREAM_PRIORITIES
/* init and device_count started no vendor thread and left no vendor state a
 * fork() child cannot use (counting through sysfs, NVML, a file...). Without
 * it, a child of a process that only counted devices gets
 * ACCEL_ERROR_FORKED from the core for every operation of this backend: the
 * core's one fork rule (it never asks the plugin). Set it after counting,
 * from device_count, when it depends on how the plugin counted. */
#define ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE ACCEL_CAP_DISCOVERY_FORK_SAFE
/* stream_wait_event accepts an event of another device of this backend. */
#define ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT ACCEL_CAP_CROSS_DEVICE_WAIT
/* ABI 1.1 groups: each bit says the plugin fills that group of members
 * (all of its members, or the plugin is rejected: plugin-abi rule 19). */
#define ACCEL_PLUGIN_CAP_NATIVE_HANDLES ACCEL_CAP_NATIVE_HANDLES
#define ACCEL_PLUGIN_CAP_HOST_MEMORY ACCEL_CAP_HOST_MEMORY
#define ACCEL_PLUGIN_CAP_PEER_COPY ACCEL_CAP_PEER_COPY
#define ACCEL_PLUGIN_CAP_DEVICE_ATTRIBUTES ACCEL_CAP_DEVICE_ATTRIBUTES
/* ABI 1.2 group: module_formats .. launch_kernel. */
#define ACCEL_PLUGIN_CAP_MODULES ACCEL_CAP_MODULES
/* ABI 1.4 group: graph_support .. graph_exec_destroy. */
#define ACCEL_PLUGIN_CAP_GRAPHS ACCEL_CAP_GRAPHS

/* Opaque plugin-owned objects. */
typedef void* accel_plugin_stream_t;
typedef void* accel_plugin_event_t;
typedef void* accel_plugin_module_t;
typedef void* accel_plugin_kernel_t;
typedef void* accel_plugin_graph_t; /* an executable native graph (ABI 1.4) */

/* module_load hands the vendor's build log to the core through this (any
 * number of calls, appended in order; text need not be NUL-terminated). */
typedef void (*accel_plugin_build_log_fn)(void* log_context, const char* text, size_t length);

/* One parameter of a kernel as kernel_get_params describes it. */
typedef struct accel_plugin_kernel_param_s {
  /* Which argument kinds the parameter takes: the OR of
   * ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_*); several bits where the
   * vendor cannot tell them apart (a CUDA pointer and an 8-byte value). */
  uint32_t kinds;
  /* What the parameter's value is, where the vendor says: the
   * ACCEL_KERNEL_ARG_TYPE_* of a VALUE parameter in the low byte
   * (ACCEL_PLUGIN_PARAM_TYPE_MASK; 0, UNKNOWN: not known, only the size is
   * checked), OR'd with ACCEL_PLUGIN_PARAM_READ_ONLY for a pointer the
   * kernel only reads through (const, __constant). The core refuses a
   * typed argument whose type differs (an integer's bits for a float). A
   * plugin built for ABI 1.2 or older leaves it 0 (the member was
   * reserved). */
  uint32_t type;
  /* Bytes a VALUE argument must have; 0: unknown (any size accepted). */
  size_t size;
} accel_plugin_kernel_param_t;

#define ACCEL_PLUGIN_ARG_KIND_BIT(kind) (1u << (unsigned)(kind))
/* accel_plugin_kernel_param_t.type: the ACCEL_KERNEL_ARG_TYPE_* byte, and
 * the read-only bit of a pointer parameter. */
#define ACCEL_PLUGIN_PARAM_TYPE_MASK 0xffu
#define ACCEL_PLUGIN_PARAM_READ_ONLY 0x100u

/* kernel_get_params' flags. */
/* LOCAL_MEMORY arguments take no parameter: the plugin turns them into
 * dynamic shared memory (cuda, hip; accel.h's accel_kernel_arg_t). */
#define ACCEL_PLUGIN_KERNEL_LOCAL_ARGS_IN_SHARED 1u

/* Flags of set_device. */
#define ACCEL_PLUGIN_SET_DEVICE_MAYBE 1u /* don't create a context that doesn't exist */

/* The vtable. Statuses listed per member are those the core expects; any
 * other failure is passed through to the caller as it is. */
typedef struct accel_plugin_api_s {
  size_t struct_size;    /* REQUIRED: sizeof(accel_plugin_api_t) the plugin was built with */
  uint32_t abi_major;    /* ACCEL_PLUGIN_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;    /* ACCEL_PLUGIN_ABI_MINOR the plugin was built with */
  const char* name;      /* REQUIRED: backend name, [a-z0-9_]+, unique; static storage */
  int32_t priority;      /* choice order: cuda 400, hip 300, level_zero 200, opencl 100;
                            third parties below 100 (100 and above are lowered to 99
                            outside the installed plugins folders: rule ABI-16) */
  uint32_t capabilities; /* ACCEL_PLUGIN_CAP_*; read again after device_count, so a
                            plugin may set bits that depend on the devices it found
                            (all but NATIVE_CURRENT_DEVICE, which is final at entry) */

  /* --- lifecycle (called by the core under its discovery lock) -------- */

  /* Optional. Cheap per-process setup at discovery: load the vendor library,
   * resolve symbols. Must not create a vendor context. Return
   * ACCEL_ERROR_BACKEND_UNAVAILABLE (with set_error naming the library or
   * driver) when the vendor stack is missing: the backend is then listed as
   * `unavailable`. Any other failure lists it as `rejected`. */
  accel_status_t (*init)(void);

  /* REQUIRED. Number of devices, without creating a vendor context where the
   * vendor allows (NVML, sysfs, ...). 0 with ACCEL_SUCCESS is "no devices";
   * explain why through set_error (the core shows it as the reason).
   * Called once at discovery; the core caches the result. */
  accel_status_t (*device_count)(int32_t* count);

  /* Optional. Initialise the vendor runtime (cuInit, zeInit, ...). Called
   * once (serialised by the core), before the first operation below. After
   * it the backend counts as initialised for fork handling. A failure is
   * remembered and returned by every later operation. */
  accel_status_t (*lazy_init)(void);

  /* --- devices ----------------------------------------------------------- */

  /* REQUIRED. Fill *props (struct_size set by the core to the full
   * accel_device_properties_t; the core pre-zeroes it). */
  accel_status_t (*get_device_properties)(int32_t device, accel_device_properties_t* props);

  /* Required with ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE, ignored without:
   * the vendor's per-thread current device (cuCtxGetDevice, hipGetDevice). */
  accel_status_t (*get_current_device)(int32_t* device);
  /* Required with ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE: make `device`
   * current on the calling thread (flags: ACCEL_PLUGIN_SET_DEVICE_*). */
  accel_status_t (*set_current_device)(int32_t device, uint32_t flags);

  /* REQUIRED. Wait for all work submitted to the device: every stream's,
   * that of streams destroyed since (stream_destroy returned, their work
   * still running) included, as cudaDeviceSynchronize / cuCtxSynchronize /
   * hipDeviceSynchronize do. The core relies on it before freeing memory
   * and unloading modules such work may still use; accel-conformance
   * checks it with a copy queued behind a host function on a destroyed
   * stream. */
  accel_status_t (*device_synchronize)(int32_t device);

  /* --- streams ----------------------------------------------------------- */

  /* Optional (NULL: only priority 0 exists). *least >= 0 >= *greatest. */
  accel_status_t (*stream_priority_range)(int32_t device, int32_t* least, int32_t* greatest);
  /* REQUIRED. `priority` is already clamped into the range. */
  accel_status_t (*stream_create)(int32_t device, int32_t priority, accel_plugin_stream_t* stream);
  /* REQUIRED. Returns at once, whatever is still queued (as cudaStreamDestroy:
   * never waits for the work, which may wait on a host function the caller
   * releases only afterwards); the queued work still completes, and
   * device_synchronize still waits for it. Never called on a default
   * stream. accel-conformance fails a destroy that has not returned within
   * 1 s while the stream's work waits behind a host function. */
  accel_status_t (*stream_destroy)(accel_plugin_stream_t stream);
  /* REQUIRED. The device's default stream, owned by the plugin, the same
   * handle on every call, never destroyed by the core. */
  accel_status_t (*default_stream)(int32_t device, accel_plugin_stream_t* stream);
  /* REQUIRED. ACCEL_SUCCESS when idle, ACCEL_ERROR_NOT_READY when busy.
   * A completed event record leaves its stream idle: once the stream's last
   * record has completed (event_query or event_synchronize said so) and
   * nothing was queued after it, this answers ACCEL_SUCCESS, with no window
   * where the record is done but the stream still counts it as running.
   * Callers synchronize an event and then expect its stream to be free
   * (accel-conformance checks it 300 times in a row). */
  accel_status_t (*stream_query)(accel_plugin_stream_t stream);
  /* REQUIRED. */
  accel_status_t (*stream_synchronize)(accel_plugin_stream_t stream);
  /* Optional. Future work on `stream` waits for the event's current record
   * (captured now: a later re-record does not change what is waited for,
   * even when that later record, on a faster stream, completes first;
   * accel-conformance checks it: a wait released by a counter "highest
   * record completed" is wrong).
   * Both are of the same device, unless the plugin declares
   * ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT: then the event may be of any device
   * of this backend (the core checks one or the other). */
  accel_status_t (*stream_wait_event)(accel_plugin_stream_t stream, accel_plugin_event_t event);
  /* Optional. Run fn(user_data) in stream order on a plugin thread. Must
   * queue fn and return at once, never run it before returning (the caller
   * may hold locks fn needs, or block the stream with fn and release it only
   * after this returns). fn is the core's trampoline: it lets the core
   * refuse a synchronize that fn would make wait for itself, the same way on
   * every backend. accel-conformance fails a launch that has not returned
   * within 1 s: "host functions must be queued, not run inline". */
  accel_status_t (*launch_host_func)(accel_plugin_stream_t stream, accel_host_fn fn,
                                     void* user_data);

  /* --- events (optional as a group: all or none) ------------------------ */

  /* flags: ACCEL_EVENT_*. The core tracks "never recorded" itself. */
  accel_status_t (*event_create)(int32_t device, uint32_t flags, accel_plugin_event_t* event);
  accel_status_t (*event_destroy)(accel_plugin_event_t event);
  /* Stream and event are of the same device (checked by the core). The
   * record completes once the work queued before it has, and once complete
   * it leaves its stream idle (see stream_query). */
  accel_status_t (*event_record)(accel_plugin_event_t event, accel_plugin_stream_t stream);
  /* ACCEL_SUCCESS complete, ACCEL_ERROR_NOT_READY pending. */
  accel_status_t (*event_query)(accel_plugin_event_t event);
  accel_status_t (*event_synchronize)(accel_plugin_event_t event);
  /* Both recorded, completed and timing-enabled (checked by the core). */
  accel_status_t (*event_elapsed_time)(accel_plugin_event_t start, accel_plugin_event_t end,
                                       float* ms);

  /* --- memory (optional as a group) -------------------------------------- */

  /* bytes > 0. ACCEL_ERROR_OUT_OF_MEMORY when exhausted. */
  accel_status_t (*mem_alloc)(int32_t device, size_t bytes, void** ptr);
  /* ptr is a live allocation of `device` made by mem_alloc. */
  accel_status_t (*mem_free)(int32_t device, void* ptr);
  /* bytes > 0; the core has checked pointers it knows against its
   * allocation table; plugins should still validate what they can. */
  accel_status_t (*memcpy_async)(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                                 accel_plugin_stream_t stream);
  accel_status_t (*memset_async)(void* dst, int value, size_t bytes, accel_plugin_stream_t stream);
  accel_status_t (*mem_get_info)(int32_t device, size_t* free_bytes, size_t* total_bytes);

  /* --- ABI 1.1 ------------------------------------------------------------ */

  /* Optional (NULL, or a 1.0 plugin whose struct_size ends before it: the
   * core then reports the version as unknown). Writes the vendor driver or
   * runtime version, one line of UTF-8 for people, into `buf`, e.g.
   * "CUDA driver 12.4 (12040)" (cuDriverGetVersion), "HIP runtime 6.0.32830"
   * (hipRuntimeGetVersion), the Level Zero driver version and API version
   * (zeDriverGetProperties, zeDriverGetApiVersion), the OpenCL platforms'
   * names and CL_PLATFORM_VERSION. accel_get_backend_info shows it as
   * accel_backend_info_t.runtime_version.
   *
   * When: only after init (when set) and device_count succeeded, from any
   * thread, possibly concurrently. The core asks at discovery, right after
   * device_count and under the discovery lock, and, if the answer was
   * ACCEL_ERROR_NOT_READY, again once lazy_init has succeeded. It must not
   * create a vendor context or otherwise initialise the vendor runtime where
   * the vendor can tell its version without that (cuDriverGetVersion needs
   * no cuInit; platform and driver queries need no OpenCL or Level Zero
   * context): at discovery the rules of device_count hold, fork safety
   * included.
   *
   * Output: `size` >= 1 bytes at `buf` (the core passes at least 256). Write
   * a NUL-terminated string of at most size - 1 bytes; longer text is cut
   * at size - 1 bytes and still ACCEL_SUCCESS (snprintf's rule). Nothing
   * written is used on any other status.
   *
   * Statuses: ACCEL_SUCCESS; ACCEL_ERROR_NOT_READY when only an initialised
   * vendor runtime can tell and it is not initialised yet (the core asks
   * again after lazy_init); ACCEL_ERROR_NOT_SUPPORTED when the version
   * cannot be known in this process (vendor runtime never loaded, no
   * driver); ACCEL_ERROR_BACKEND_FAILURE (set_error naming the vendor call)
   * when the vendor query failed. The core keeps the first ACCEL_SUCCESS
   * answer for the life of the process. */
  accel_status_t (*runtime_version)(char* buf, size_t size);

  /* --- ABI 1.1: native handles (optional as a group: all or none, with
   *     ACCEL_PLUGIN_CAP_NATIVE_HANDLES) ------------------------------------ */

  /* Fill *out (struct_size set by the core to the full struct, pre-zeroed)
   * with the vendor queue `stream` submits to: type, backend (the plugin's
   * name), handle, context, ordinal as accel.h's table says. The handle is
   * borrowed and must stay valid while the stream lives; work the program
   * enqueues on it must be ordered with the plugin's own work on the stream
   * (so the plugin submits everything to that one queue, in order). The
   * core may ask at any time while the stream lives, also holding its own
   * locks (accel_stream_from_native compares the queue offered for
   * ownership with that of every live stream of the backend): answer from
   * the stream's own state, the same handle every time, with no call back
   * into accel. */
  accel_status_t (*stream_native_handle)(accel_plugin_stream_t stream, accel_native_handle_t* out);
  /* The same for an event (the vendor event of its latest record where a
   * record makes a new one; handle NULL before the first record). */
  accel_status_t (*event_native_handle)(accel_plugin_event_t event, accel_native_handle_t* out);
  /* The same for a device: its vendor device and context. */
  accel_status_t (*device_native_handle)(int32_t device, accel_native_handle_t* out);
  /* Wrap the program's vendor queue native->handle (native->type already
   * checked by the core to be this plugin's type of the stream table) as a
   * stream of `device`. Check what the vendor lets the plugin check (device,
   * context, in-order) and refuse with ACCEL_ERROR_INVALID_ARGUMENT or
   * ACCEL_ERROR_DEVICE_MISMATCH and a detail saying what was wrong. With
   * ACCEL_NATIVE_TAKE_OWNERSHIP the core has already refused a handle equal
   * to stream_native_handle's answer for a live stream that owns its queue
   * (stream_create's, default_stream's, a wrapper's that took ownership);
   * a plugin that can tell one queue under two handle values refuses that
   * case itself. stream_destroy on the result must destroy the vendor queue only when
   * flags has ACCEL_NATIVE_TAKE_OWNERSHIP; queued work still completes
   * either way. Everything else works on it as on a stream_create one. */
  accel_status_t (*stream_from_native)(int32_t device, const accel_native_handle_t* native,
                                       uint32_t flags, accel_plugin_stream_t* stream);

  /* --- ABI 1.1: host memory (optional as a group, with
   *     ACCEL_PLUGIN_CAP_HOST_MEMORY) -------------------------------------- */

  /* Page-locked host memory usable for asynchronous copies with every device
   * of the backend. flags is 0. The core tracks the allocation. bytes is at
   * most PTRDIFF_MAX (the core refuses more); a plugin rounding it up to a
   * page or alignment checks that rounding for overflow (OUT_OF_MEMORY where
   * it would wrap), as every size it computes from the caller's. */
  accel_status_t (*host_alloc)(size_t bytes, uint32_t flags, void** ptr);
  /* Free a host_alloc pointer (the core checked it is one, at its start). */
  accel_status_t (*host_free)(void* ptr);
  /* Page-lock [ptr, ptr + bytes) where the vendor can; where it cannot,
   * return ACCEL_SUCCESS and copy from it as from pageable memory (say so in
   * the plugin's README). The core checked the range overlaps nothing. */
  accel_status_t (*host_register)(void* ptr, size_t bytes, uint32_t flags);
  /* Undo host_register(ptr, ...) (the core checked ptr is a range start). */
  accel_status_t (*host_unregister)(void* ptr);

  /* --- ABI 1.1: peer copies (optional as a group, with
   *     ACCEL_PLUGIN_CAP_PEER_COPY) ---------------------------------------- */

  /* *can_access = 1 if `device` can reach `peer`'s memory directly after
   * device_enable_peer_access; 0 otherwise. device != peer (core-checked). */
  accel_status_t (*device_can_access_peer)(int32_t device, int32_t peer, int32_t* can_access);
  /* Enable that access; ACCEL_SUCCESS if it already is; ACCEL_ERROR_NOT_SUPPORTED
   * (with the reason) if the two cannot. device != peer (core-checked). */
  accel_status_t (*device_enable_peer_access)(int32_t device, int32_t peer);
  /* Queue a copy from `src` (allocation of src_device) to `dst` (of
   * dst_device) on `stream` (of one of the two; the core checked all of
   * it, devices differ). Ordered with the stream's other work; staged
   * through host memory by the plugin where the vendor cannot copy
   * directly. */
  accel_status_t (*memcpy_peer_async)(void* dst, int32_t dst_device, const void* src,
                                      int32_t src_device, size_t bytes,
                                      accel_plugin_stream_t stream);

  /* --- ABI 1.1: device attributes (optional as a group, with
   *     ACCEL_PLUGIN_CAP_DEVICE_ATTRIBUTES) -------------------------------- */

  /* One attribute (attr in [0, ACCEL_DEVICE_ATTR_COUNT), core-checked);
   * ACCEL_ERROR_NOT_SUPPORTED with the reason for one the vendor cannot
   * answer. */
  accel_status_t (*device_get_attribute)(int32_t device, accel_device_attr_t attr, int64_t* value);
  /* Clear, in capability->supported_dtypes (which the core sets to every
   * dtype of accel.h first), the dtypes the device cannot hold. */
  accel_status_t (*get_device_capability)(int32_t device, accel_device_capability_t* capability);

  /* --- ABI 1.2: modules and kernels (optional as a group, with
   *     ACCEL_PLUGIN_CAP_MODULES; docs/modules.md) -------------------------- */

  /* Set *formats to the ACCEL_MODULE_FORMAT_BIT mask of the formats
   * module_load takes on `device` (resolved by the core). Must be cheap and
   * must not start a compiler: the core asks on every accel_module_load.
   * A plugin that declares ACCEL_PLUGIN_CAP_MODULES reports at least one
   * format on every device, and a valid image of a reported format loads
   * (the conformance suite loads kernels/ in every format the build made
   * and fails on NOT_SUPPORTED). */
  accel_status_t (*module_formats)(int32_t device, uint64_t* formats);
  /* Load `image` (its format one module_formats listed, data and size
   * non-NULL/non-zero: core-checked) on `device` with the vendor compiler
   * `options` (never NULL; "" for none: refuse anything else with
   * ACCEL_ERROR_INVALID_ARGUMENT where the vendor takes no options). Pass
   * the vendor's build log, if any, to log(log_context, ...) before
   * returning, on success too. Statuses: ACCEL_ERROR_INVALID_ARGUMENT for a
   * malformed image (the detail says what: magic, truncation);
   * ACCEL_ERROR_BUILD_FAILED when the vendor refused to build or load it
   * (compile error, no code for this device: CUDA_ERROR_NO_BINARY_FOR_GPU,
   * CUDA_ERROR_INVALID_PTX, CL_BUILD_PROGRAM_FAILURE,
   * ZE_RESULT_ERROR_MODULE_BUILD_FAILURE) -- the core then tries the
   * caller's next image; ACCEL_ERROR_OUT_OF_MEMORY; BACKEND_FAILURE. Called
   * from any thread, without a core lock held. */
  accel_status_t (*module_load)(int32_t device, const accel_module_image_t* image,
                                const char* options, accel_plugin_build_log_fn log,
                                void* log_context, accel_plugin_module_t* module);
  /* Free the module. The core has destroyed its kernels and waited for the
   * device (device_synchronize) first. */
  accel_status_t (*module_unload)(accel_plugin_module_t module);
  /* The kernel `name` of `module` (name non-empty: core-checked; the core
   * asks once per name and keeps the answer). ACCEL_ERROR_INVALID_ARGUMENT
   * when the module has none of that name (CUDA_ERROR_NOT_FOUND,
   * CL_INVALID_KERNEL_NAME, ZE_RESULT_ERROR_INVALID_KERNEL_NAME). */
  accel_status_t (*kernel_create)(accel_plugin_module_t module, const char* name,
                                  accel_plugin_kernel_t* kernel);
  /* Free a kernel_create kernel (the core calls it only from module unload). */
  accel_status_t (*kernel_destroy)(accel_plugin_kernel_t kernel);
  /* Fill *attributes (struct_size set by the core to the full struct,
   * members pre-set to -1 for "unknown"): what accel.h's
   * accel_kernel_attributes_t says, max_threads_per_block at least (the
   * core refuses larger blocks with it, so it must never be too small). */
  accel_status_t (*kernel_get_attributes)(accel_plugin_kernel_t kernel,
                                          accel_kernel_attributes_t* attributes);
  /* The kernel's parameters, in order, so the core can check a launch's
   * arguments before any is passed: set *count; fill params[0 ..
   * min(count, capacity)) (params may be NULL with capacity 0); set *flags
   * (ACCEL_PLUGIN_KERNEL_*). ACCEL_ERROR_NOT_SUPPORTED when the vendor
   * cannot tell (the core then checks nothing and the vendor must refuse a
   * bad launch itself). Asked once per kernel. */
  accel_status_t (*kernel_get_params)(accel_plugin_kernel_t kernel,
                                      accel_plugin_kernel_param_t* params, size_t capacity,
                                      size_t* count, uint32_t* flags);
  /* Queue the kernel on `stream` over `grid` blocks of `block` threads
   * with `shared_bytes` of dynamic shared memory. The core checked: grid
   * extents all >= 1, block extents >= 1 with their product <=
   * max_threads_per_block, the stream is of the kernel's device, and the
   * arguments against kernel_get_params (when it answered). The plugin
   * checks the device's grid and block limits (ACCEL_ERROR_INVALID_ARGUMENT,
   * the detail naming the limit) and local memory (OUT_OF_MEMORY) before
   * queueing anything; sums of the LOCAL_MEMORY sizes and shared_bytes are
   * checked for overflow (accel::plugin::checked_add) and a refusal names
   * the operands, never a wrapped sum; and copies what it needs of `args`: the caller's
   * array is gone when launch_kernel returns. Thread-safe on one kernel:
   * two threads may launch it at once (the OpenCL model of setting
   * arguments on a shared kernel object is the plugin's to serialise).
   * Ordered with the stream's other work. */
  accel_status_t (*launch_kernel)(accel_plugin_kernel_t kernel, accel_dim3_t grid,
                                  accel_dim3_t block, size_t shared_bytes,
                                  const accel_kernel_arg_t* args, size_t num_args,
                                  accel_plugin_stream_t stream);

  /* --- ABI 1.3 (each optional on its own) --- */

  /* Whether the vendor reports `ptr` as memory a kernel of this plugin's
   * devices may dereference (device, managed or registered host memory:
   * cuPointerGetAttributes, hipPointerGetAttributes,
   * zeMemGetAllocProperties, clGetMemAllocInfoINTEL). ACCEL_SUCCESS with
   * *device_index set (-1: usable on every device, e.g. managed or host
   * memory mapped for all); ACCEL_ERROR_INVALID_ARGUMENT when the vendor
   * says it is not such memory; ACCEL_ERROR_NOT_SUPPORTED when the vendor
   * cannot tell. Asked by the core only for a pointer that lies in no
   * allocation accel made; the core refuses the launch unless ACCEL_SUCCESS
   * with the kernel's device or -1 (another index: DEVICE_MISMATCH), with
   * the message a copy gives for such a pointer; a NULL pointer argument
   * is never asked about and passes. NULL member: the plugin's kernels
   * take only accel's own allocations (sim, opencl). Never waits;
   * thread-safe. Plugin ABI rule ABI-42. */
  accel_status_t (*pointer_get_device)(const void* ptr, int32_t* device_index);
  /* Give `stream` a name for the vendor's tools (NVTX nvtxNameCuStreamA,
   * roctx); `name` is NUL-terminated, 1..ACCEL_STREAM_NAME_MAX bytes,
   * printable ASCII (the core checked it), and valid only during the call.
   * Called at each accel_stream_set_name of a live stream, default streams
   * included. The core keeps the name itself (trace, snapshot); NULL or a
   * failure (logged by the core at debug level) changes nothing the user
   * sees. Never waits; thread-safe (plugin-abi rule 44). */
  accel_status_t (*stream_set_name)(accel_plugin_stream_t stream, const char* name);

  /* --- ABI 1.4: native graphs (optional as a group: all or none, with
   *     ACCEL_PLUGIN_CAP_GRAPHS). docs/graphs.md, docs/plugin-abi.md. ---
   *
   * The core captures every backend's graphs itself (its recorder enforces
   * the capture rules) and, where the plugin fills this group, hands the
   * recorded operations to the vendor's graphs once, at instantiation: it
   * begins a recording, issues the operations in replay order through
   * launch_kernel, memcpy_async, memset_async and memcpy_peer_async with
   * the recording handle as their stream, and ends it. A replay then
   * launches the executable graph as one operation. Operations the plugin
   * declines stay with the core's recorder, so one graph may replay as
   * several native pieces with recorded operations between them (host
   * functions always are: the core runs them under its host-function
   * rules). Without the group every graph is replayed by the recorder. */

  /* How `device` replays graphs natively, in words for people ("CUDA
   * graphs", "cl_khr_command_buffer 0.9.0"; accelctl devices prints it):
   * NUL-terminated, valid until process exit; NULL when this device has no
   * native graphs (the core records for it, and never calls
   * graph_record_begin for it). Never waits; thread-safe. ABI-45. */
  const char* (*graph_support)(int32_t device);
  /* Begin a native recording for `device` (a valid index; the core calls
   * this only where graph_support gave non-NULL): *recording is a handle
   * the core passes only as the `stream` of launch_kernel, memcpy_async,
   * memset_async and memcpy_peer_async, and then once to graph_record_end.
   * One thread issues a recording's calls, never two at once; recordings
   * of different graphs may be made on different threads at the same time.
   * Nothing runs on the device while recording. ACCEL_ERROR_NOT_SUPPORTED:
   * no native graph now (the core records instead); any other failure is
   * the instantiation's. ABI-46. */
  accel_status_t (*graph_record_begin)(int32_t device, accel_plugin_stream_t* recording);
  /* (Not a member: the rule for the four operations above when their
   * stream is a recording handle, ABI-47.) Each either records its
   * operation with its arguments' values as they are now (a kernel's
   * arguments copied: a later launch_kernel of the same kernel with other
   * arguments, or a later replay, never changes what is recorded) and
   * returns ACCEL_SUCCESS, or returns ACCEL_ERROR_NOT_SUPPORTED having
   * recorded nothing, the recording still usable: the core then ends the
   * recording there and replays that operation itself. Any other failure
   * makes the core discard the recording. Memory an operation names may be
   * device memory of the graph's device, pinned or registered host memory
   * and, for memcpy_peer_async, another device's memory; it stays
   * allocated while the executable graph lives. */
  /* End `recording`. keep != 0: *exec receives an executable graph of the
   * recorded operations, in the order they were issued (ACCEL_SUCCESS), or
   * a failure. keep == 0: discard it (exec may be NULL; ACCEL_SUCCESS).
   * Either way `recording` is dead afterwards. The core never ends a
   * recording with no operation kept. ABI-48. */
  accel_status_t (*graph_record_end)(accel_plugin_stream_t recording, int32_t keep,
                                     accel_plugin_graph_t* exec);
  /* Queue `exec` on `stream` (a stream of the device it was recorded for,
   * not a recording handle) and return without waiting: its operations run
   * in their order after the stream's earlier work and before its later
   * work. The core may launch one exec many times back to back, on one
   * stream or on several streams of the device, before the earlier
   * launches complete: each launch must be accepted and run after the
   * earlier ones of the same exec (cuGraphLaunch's rule), never refused
   * as "still pending". Thread-safe for different execs. ABI-49. */
  accel_status_t (*graph_launch)(accel_plugin_graph_t exec, accel_plugin_stream_t stream);
  /* Destroy `exec` without waiting on the host: launches already queued
   * still run, and the plugin frees what they use only after them
   * (cuGraphExecDestroy's rule). Called once per exec, never while the
   * core launches it. ABI-50. */
  void (*graph_exec_destroy)(accel_plugin_graph_t exec);
} accel_plugin_api_t;

/* Bytes of accel_plugin_api_t that ABI 1.0 requires (up to mem_get_info):
 * the smallest struct_size the core accepts. Members after it are optional
 * and read only when the plugin's struct_size covers them. */
#define ACCEL_PLUGIN_API_V1_SIZE (offsetof(accel_plugin_api_t, mem_get_info) + sizeof(void*))

/* The entry point. Called once per process by the core, under its discovery
 * lock, with the core's ABI version. Return NULL to decline (e.g. the core's
 * major is one the plugin cannot serve); log the reason through host->log
 * first. The returned table must stay valid until process exit. */
typedef const accel_plugin_api_t* (*accel_plugin_entry_fn)(uint32_t abi_major, uint32_t abi_minor,
                                                           const accel_host_services_t* host);

/* The prototype every plugin defines, so a wrong signature fails to compile
 * instead of failing at run time. */
ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(uint32_t abi_major,
                                                                 uint32_t abi_minor,
                                                                 const accel_host_services_t* host);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ACCEL_ACCEL_PLUGIN_H */
