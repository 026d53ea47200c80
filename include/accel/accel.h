/*
 * accel.h - public C API of libaccelcore, version 0.1.0 (ACCEL_VERSION_MAJOR,
 * _MINOR, _PATCH below; accel_version() is the loaded library's). Backends
 * are plugins of ABI 1.2 (ACCEL_PLUGIN_ABI_MAJOR and _MINOR, accel_plugin.h);
 * an "ABI 1.1" or "ABI 1.2" note below is the plugin ABI a backend needs
 * to offer that group of functions.
 *
 * A device-agnostic accelerator runtime: the native counterpart of PyTorch's
 * torch.accelerator. One API for device enumeration, the current device,
 * streams, events, memory and synchronization, whatever the vendor.
 *
 * Conventions (hold for every function below unless its comment says else):
 *  - Every function that can fail returns accel_status_t; ACCEL_SUCCESS (0) is
 *    success. On failure a detailed message (backend, vendor call, vendor code)
 *    is stored in a thread-local string read with accel_last_error(), and no
 *    output parameter and no state is changed.
 *  - Device indices are int32_t in [0, accel_device_count()). Where a function
 *    takes an optional device, a negative value means "the calling thread's
 *    current device".
 *  - Every struct passed in or out starts with struct_size: the caller sets it
 *    to sizeof the struct it was compiled with; the library reads and writes
 *    no byte past it, so fields can be appended in later versions (PJRT rule).
 *  - All functions are thread-safe. Current device and current stream are
 *    per-thread state (torch.accelerator semantics).
 *  - Initialisation is lazy: the first call discovers plugins; vendor runtimes
 *    are initialised only when an operation needs them.
 *
 * This header is C99-clean and also compiles as C++.
 */
#ifndef ACCEL_ACCEL_H
#define ACCEL_ACCEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ACCEL_BUILDING_CORE)
#define ACCEL_API __attribute__((visibility("default")))
#else
#define ACCEL_API
#endif

/* Version of this header: the library's version is accel_version(). */
#define ACCEL_VERSION_MAJOR 0
#define ACCEL_VERSION_MINOR 1
#define ACCEL_VERSION_PATCH 0

/* ------------------------------------------------------------------------ */
/* Status codes                                                               */
/* ------------------------------------------------------------------------ */

/* One status enum for the whole API (libuv style). Values are stable: new
 * codes are only appended. ACCEL_STATUS_MAP(XX) lists every status once, as
 * XX(name without the ACCEL_ prefix, value, accel_status_message text); the
 * enum below and the library's name and message tables are generated from
 * it, so they cannot disagree (libuv's UV_ERRNO_MAP). Meanings:
 *
 *  SUCCESS                  the call did what it says.
 *  ERROR_INVALID_ARGUMENT   a pointer, size, flag or handle argument is
 *                           invalid (NULL where not allowed, destroyed
 *                           handle, default stream passed to destroy, ...).
 *  ERROR_INVALID_DEVICE     device index outside [0, accel_device_count()).
 *  ERROR_NO_ACCELERATOR     no accelerator is available
 *                           (accel_is_available() is false).
 *  ERROR_NOT_SUPPORTED      the backend does not implement this operation.
 *  ERROR_NOT_READY          work queued on a stream or before an event has
 *                           not completed yet: an answer of the query
 *                           functions, not a failure.
 *  ERROR_OUT_OF_MEMORY      device or host memory exhausted.
 *  ERROR_EVENT_NOT_RECORDED elapsed_time on an event that was never recorded.
 *  ERROR_EVENT_NO_TIMING    elapsed_time on an event created without
 *                           ACCEL_EVENT_ENABLE_TIMING.
 *  ERROR_DEVICE_MISMATCH    stream, event or pointer of another device or
 *                           backend than required.
 *  ERROR_FORKED             the backend was initialised before fork() and is
 *                           not fork-safe: re-exec or spawn a fresh process
 *                           to use it in the child.
 *  ERROR_BACKEND_UNAVAILABLE the vendor library or driver is missing or
 *                           unusable.
 *  ERROR_BACKEND_FAILURE    the vendor runtime reported an error;
 *                           accel_last_error() names the call and the
 *                           vendor's code and text.
 *  ERROR_OUT_OF_RANGE       index past the end of a list (e.g.
 *                           accel_get_backend_info).
 *  ERROR_INTERNAL           a bug in accel or a plugin broke an internal
 *                           invariant.
 *  ERROR_REENTRANT          the public API was called from a plugin callback
 *                           that runs while the core holds one of its locks
 *                           (a plugin's entry, init, device_count, lazy_init
 *                           or default_stream): answering would deadlock.
 *                           Plugins must not call the public API from their
 *                           callbacks (accel_plugin.h).
 *  ERROR_BUILD_FAILED       accel_module_load: every image the device takes
 *                           failed to build or load.
 *  ERROR_STREAM_CAPTURE_UNSUPPORTED  the call is not allowed while a stream
 *                           capture is active (docs/graphs.md); nothing was
 *                           done and the capture is now invalidated
 *                           (cudaErrorStreamCaptureUnsupported).
 *  ERROR_STREAM_CAPTURE_INVALIDATED  the capture was invalidated by an
 *                           earlier call: accel_stream_end_capture returns
 *                           it with no graph, and work queued on the
 *                           capture's streams until then is refused with it
 *                           (cudaErrorStreamCaptureInvalidated). */
#define ACCEL_STATUS_MAP(XX)                                                           \
  XX(SUCCESS, 0, "success")                                                            \
  XX(ERROR_INVALID_ARGUMENT, 1, "invalid argument")                                    \
  XX(ERROR_INVALID_DEVICE, 2, "invalid device index")                                  \
  XX(ERROR_NO_ACCELERATOR, 3, "no accelerator is available")                           \
  XX(ERROR_NOT_SUPPORTED, 4, "operation not supported by the backend")                 \
  XX(ERROR_NOT_READY, 5, "work has not completed yet")                                 \
  XX(ERROR_OUT_OF_MEMORY, 6, "out of memory")                                          \
  XX(ERROR_EVENT_NOT_RECORDED, 7, "event has not been recorded")                       \
  XX(ERROR_EVENT_NO_TIMING, 8, "event was created without timing")                     \
  XX(ERROR_DEVICE_MISMATCH, 9, "object belongs to another device or backend")          \
  XX(ERROR_FORKED, 10, "backend was initialised before fork() and is not fork-safe")   \
  XX(ERROR_BACKEND_UNAVAILABLE, 11, "vendor library or driver is unavailable")         \
  XX(ERROR_BACKEND_FAILURE, 12, "the vendor runtime reported an error")                \
  XX(ERROR_OUT_OF_RANGE, 13, "index out of range")                                     \
  XX(ERROR_INTERNAL, 14, "internal error")                                             \
  XX(ERROR_REENTRANT, 15, "called from a plugin callback while the core holds a lock") \
  XX(ERROR_BUILD_FAILED, 16, "the kernel image failed to build or load on the device")   \
  XX(ERROR_STREAM_CAPTURE_UNSUPPORTED, 17,                                             \
     "operation not allowed while a stream capture is active; the capture is invalidated") \
  XX(ERROR_STREAM_CAPTURE_INVALIDATED, 18, "the stream capture was invalidated")

#define ACCEL_STATUS_ENUMERATOR_(name, value, message) ACCEL_##name = value,
typedef enum accel_status {
  ACCEL_STATUS_MAP(ACCEL_STATUS_ENUMERATOR_)
  /* Fixes the enum's size at 32 bits (Vulkan's rule); never returned. */
  ACCEL_STATUS_FORCE_INT32 = 0x7fffffff
} accel_status_t;
#undef ACCEL_STATUS_ENUMERATOR_

/* Number of status codes; every value in [0, ACCEL_STATUS_COUNT) is valid.
 * A macro for #if; the library checks at build time that it counts
 * ACCEL_STATUS_MAP and that the values run 0, 1, ... in order. */
#define ACCEL_STATUS_COUNT 19

/* Symbolic name of a status ("ACCEL_ERROR_INVALID_DEVICE"); for an unknown
 * value returns "ACCEL_STATUS_UNKNOWN". Never NULL, static storage,
 * thread-safe. */
ACCEL_API const char* accel_status_name(accel_status_t status);

/* One-line generic description of a status ("invalid device index"); for an
 * unknown value returns "unknown status". Never NULL, static storage,
 * thread-safe. */
ACCEL_API const char* accel_status_message(accel_status_t status);

/* Detail of the most recent failure on the calling thread: which backend,
 * which call, vendor code and text, and what the valid range was. Empty
 * string ("") if no call on this thread has failed yet. Every call that
 * returns a status other than ACCEL_SUCCESS sets it (ACCEL_ERROR_NOT_READY
 * included), so it always describes the most recent non-success status;
 * successful calls leave it as it was (accel_clear_last_error() empties it).
 * The pointer stays valid until the next accel call on the same thread.
 * Never NULL. Thread-safe (per-thread). Semantics after UR's
 * urAdapterGetLastError. */
ACCEL_API const char* accel_last_error(void);

/* Empties the calling thread's last-error detail, so a later
 * accel_last_error() shows only what failed after this call. Never fails;
 * thread-safe (per-thread). */
ACCEL_API void accel_clear_last_error(void);

/* Library version string ("0.1.0"). Never NULL, static storage. */
ACCEL_API const char* accel_version(void);

/* ------------------------------------------------------------------------ */
/* Availability, current accelerator, devices (torch.accelerator)             */
/* ------------------------------------------------------------------------ */

/* 1 if a current accelerator exists (a backend with at least one device was
 * chosen), else 0. Never fails; the first call runs plugin discovery.
 * torch.accelerator.is_available(). */
ACCEL_API int accel_is_available(void);

/* Name of the current accelerator's backend ("cuda", "hip", "level_zero",
 * "opencl", "sim", ...), or NULL when none. Chosen once per process: the
 * backend named by ACCEL_BACKEND, else the available backend with the highest
 * priority (ties by name). Static storage until process exit.
 * torch.accelerator.current_accelerator(). */
ACCEL_API const char* accel_current_accelerator(void);

/* Human-readable sentence on why the current accelerator is what it is (or
 * why there is none), e.g. "ACCEL_BACKEND=cuda but backend 'cuda' was not
 * found". Never NULL, static storage until process exit. */
ACCEL_API const char* accel_selection_reason(void);

/* Number of devices of the current accelerator; 0 when none. Never fails and
 * never creates a vendor context, so it is safe to call before fork().
 * torch.accelerator.device_count(). */
ACCEL_API int32_t accel_device_count(void);

/* The calling thread's current device index, in [0, count); it starts at 0
 * on every thread. Returns -1 when no accelerator is available. For backends
 * with a native notion of current device (CUDA, HIP) the vendor's current
 * device is returned, so code mixing accel and the vendor API agrees; for
 * those the first call initialises the vendor runtime (as
 * torch.cuda.current_device() does), so a non-fork-safe backend is then
 * unusable in a fork() child: count with accel_device_count() before forking.
 * torch.accelerator.current_device_index(). */
ACCEL_API int32_t accel_current_device_index(void);

/* Makes `device` the calling thread's current device.
 * A negative `device` is a no-op returning ACCEL_SUCCESS (torch's None).
 * Returns ACCEL_ERROR_NO_ACCELERATOR when none is available,
 * ACCEL_ERROR_INVALID_DEVICE when device >= count (nothing changes),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE from the vendor.
 * torch.accelerator.set_device_index(). */
ACCEL_API accel_status_t accel_set_device_index(int32_t device);

/* Makes `device` current and stores the index that was current before the
 * call in *previous (the C side of torch's device_index guard,
 * c10::DeviceGuardImplInterface::exchangeDevice). A negative `device` stores
 * the current index and changes nothing. `previous` must not be NULL.
 * Statuses as accel_set_device_index, plus ACCEL_ERROR_INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_exchange_device(int32_t device, int32_t* previous);

/* As accel_exchange_device, but does not initialise a vendor context on the
 * target device that does not exist yet (CUDA: switches only if the target's
 * primary context is active, else records the index for later), and does
 * nothing when `device` is already current. *previous receives the index
 * current BEFORE the call (the c10 header says so; its CUDA implementation
 * returns the new one, a bug not copied here). */
ACCEL_API accel_status_t accel_maybe_exchange_device(int32_t device, int32_t* previous);

/* ------------------------------------------------------------------------ */
/* Streams                                                                    */
/* ------------------------------------------------------------------------ */

/* A stream: an in-order queue of work on one device of one backend. Default
 * streams are owned by the library (accel_stream_destroy refuses them). */
typedef struct accel_stream_s* accel_stream_t;

/* The calling thread's current stream on `device` (negative: the current
 * device). Starts as the device's default stream, a valid handle.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (stream NULL),
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. torch.accelerator.current_stream(). */
ACCEL_API accel_status_t accel_current_stream(int32_t device, accel_stream_t* stream);

/* Makes `stream` the calling thread's current stream on its device, and
 * first makes that device the current device (as torch.accelerator.set_stream).
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (NULL or destroyed stream),
 * ACCEL_ERROR_DEVICE_MISMATCH (stream of a backend other than the current
 * accelerator), ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. */
ACCEL_API accel_status_t accel_set_stream(accel_stream_t stream);

/* Waits until all work submitted to `device` (negative: the current device)
 * has completed: that of every stream, streams destroyed since (whose work
 * still runs after accel_stream_destroy returned) included, as
 * cudaDeviceSynchronize. If the backend has never been initialised in this
 * process it returns ACCEL_SUCCESS at once without initialising it (as
 * torch does). Thread-safe. Statuses: ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE.
 * torch.accelerator.synchronize(). */
ACCEL_API accel_status_t accel_synchronize(int32_t device);

/* Range of stream priorities on `device` (negative: current). CUDA's rule:
 * 0 is the default, lower numbers are higher priority, so *greatest <= 0 <=
 * *least. A backend without priorities reports 0 and 0. Either output may be
 * NULL. Statuses: ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE.
 * cuCtxGetStreamPriorityRange. */
ACCEL_API accel_status_t accel_stream_priority_range(int32_t device, int32_t* least,
                                                     int32_t* greatest);

/* Creates a stream on `device` (negative: current) with `priority` (0 is the
 * default; a value outside accel_stream_priority_range is clamped into it,
 * as CUDA does, and the clamp is logged at debug level).
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (stream NULL),
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE.
 * cuStreamCreateWithPriority. */
ACCEL_API accel_status_t accel_stream_create(int32_t device, int32_t priority,
                                             accel_stream_t* stream);

/* Destroys a stream made by accel_stream_create. Returns at once, without
 * waiting for the stream's queued work (as cudaStreamDestroy), which still
 * completes: accel_synchronize of the stream's device waits for it, and the
 * host buffers it reads or writes must stay valid until then (or until an
 * event recorded after it has completed). The handle is invalid afterwards;
 * a destroyed handle is detected (ACCEL_ERROR_INVALID_ARGUMENT) as long as
 * its memory has not been reused by a newer stream. A thread whose current stream is destroyed (by any
 * thread) gets the device's default stream from accel_current_stream from
 * then on, never the dead handle nor a newer stream reusing its memory.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (NULL, destroyed, or
 * a default stream), ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. */
ACCEL_API accel_status_t accel_stream_destroy(accel_stream_t stream);

/* Longest stream name accel_stream_set_name takes, in bytes (without the NUL). */
#define ACCEL_STREAM_NAME_MAX 63

/* Names `stream` for people reading a trace: the stream's lane in the
 * ACCEL_TRACE file is titled with it, accel_memory_snapshot adds it as
 * "stream_name" next to the stream's "stream" field, and on cuda (built
 * with the NVTX v3 headers) it goes to nvtxNameCuStreamA, so Nsight
 * Systems shows it too (a no-op unless a tool is injected). `name` is
 * NUL-terminated, 1 to ACCEL_STREAM_NAME_MAX bytes of printable ASCII
 * (0x20 to 0x7e), copied before the call returns. A stream may be renamed
 * any number of times; the last name counts, and a trace's lane title
 * shows the name the stream had at the trace's last flush. Default
 * streams can be named through their handle (accel_current_stream); a
 * destroyed stream's name goes with it. NVTX's nvtxNameCuStreamA is the
 * model; torch has no stream names. A backend that cannot name its queue
 * for the vendor's tools changes nothing else: the name is accel's own.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (stream NULL or destroyed, name
 * NULL, empty, longer than ACCEL_STREAM_NAME_MAX bytes, or with a byte
 * outside 0x20 to 0x7e: the message says which; nothing changes),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE (the backend could not
 * be initialised). Thread-safe. */
ACCEL_API accel_status_t accel_stream_set_name(accel_stream_t stream, const char* name);

/* Copies the name accel_stream_set_name last gave `stream` into `buffer`
 * (NUL-terminated, cut at capacity - 1 bytes) and sets *length to the
 * name's length in bytes without the NUL; "" and 0 for a stream never
 * named. A buffer of ACCEL_STREAM_NAME_MAX + 1 bytes always holds it.
 * buffer may be NULL with capacity 0 to ask the length. Reads no backend.
 * Statuses: ACCEL_SUCCESS (also when cut: compare *length),
 * ACCEL_ERROR_INVALID_ARGUMENT (stream NULL or destroyed, length NULL,
 * buffer NULL with capacity > 0). Thread-safe. */
ACCEL_API accel_status_t accel_stream_get_name(accel_stream_t stream, char* buffer, size_t capacity,
                                               size_t* length);

/* ACCEL_SUCCESS if all work queued on the stream has completed,
 * ACCEL_ERROR_NOT_READY if not; else ACCEL_ERROR_INVALID_ARGUMENT,
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. Never blocks, with one
 * exception: once the stream's vendor queue was handed out
 * (accel_stream_native_handle, accel_stream_from_native), Level Zero and
 * OpenCL have no way to ask whether work the program queued there itself is
 * done but to queue a marker and wait briefly for it (at most 2 ms on Level
 * Zero, 20 ms on OpenCL; NOT_READY if it has not passed by then).
 * cuStreamQuery. */
ACCEL_API accel_status_t accel_stream_query(accel_stream_t stream);

/* Blocks until all work queued on the stream has completed. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. cuStreamSynchronize. */
ACCEL_API accel_status_t accel_stream_synchronize(accel_stream_t stream);

/* Stores the device index of the stream in *device. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_stream_device(accel_stream_t stream, int32_t* device);

/* Stores the (clamped) priority the stream was created with in *priority
 * (0 for default streams). Statuses: ACCEL_ERROR_INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_stream_priority(accel_stream_t stream, int32_t* priority);

/* A host function run on a stream, in stream order, on a thread owned by the
 * backend. It must not call accel functions that wait on the same stream.
 * Direct waits are refused with ACCEL_ERROR_INVALID_ARGUMENT on every
 * backend (accel_stream_synchronize or accel_stream_destroy of its own
 * stream, accel_synchronize of its device, accel_event_synchronize of an
 * event recorded on its stream after it); a wait that reaches its stream only
 * through other streams (one waiting on an event recorded after it) is not
 * detected and never returns, as in CUDA. cuLaunchHostFunc's CUhostFn. */
typedef void (*accel_host_fn)(void* user_data);

/* Queues fn(user_data) on `stream`: it runs after all earlier work on the
 * stream and before any later work starts. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (NULL stream or fn), ACCEL_ERROR_NOT_SUPPORTED,
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. cuLaunchHostFunc. */
ACCEL_API accel_status_t accel_launch_host_func(accel_stream_t stream, accel_host_fn fn,
                                                void* user_data);

/* ------------------------------------------------------------------------ */
/* Events                                                                     */
/* ------------------------------------------------------------------------ */

/* An event: a marker recorded on a stream, used for ordering and timing. */
typedef struct accel_event_s* accel_event_t;

/* Event creation flags (bit mask). */
#define ACCEL_EVENT_DEFAULT 0u
/* Record timestamps so accel_event_elapsed_time works (torch's
 * enable_timing=True). Without it recording may be cheaper. */
#define ACCEL_EVENT_ENABLE_TIMING 1u

/* Creates an event on `device` (negative: current) with `flags`
 * (ACCEL_EVENT_*). Statuses: ACCEL_ERROR_INVALID_ARGUMENT (event NULL or
 * unknown flag bits), ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_NOT_SUPPORTED (timing asked of a backend without timing
 * events), ACCEL_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. cuEventCreate. */
ACCEL_API accel_status_t accel_event_create(int32_t device, uint32_t flags, accel_event_t* event);

/* Destroys an event. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (NULL or
 * destroyed), ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. */
ACCEL_API accel_status_t accel_event_destroy(accel_event_t event);

/* Records the event on `stream` (NULL: the current stream of the event's
 * device): it completes when all work queued before it has. Re-recording
 * replaces the earlier record. Statuses: ACCEL_ERROR_INVALID_ARGUMENT,
 * ACCEL_ERROR_DEVICE_MISMATCH (stream of another device or backend; the
 * message names both), ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE.
 * cuEventRecord. */
ACCEL_API accel_status_t accel_event_record(accel_event_t event, accel_stream_t stream);

/* Makes all future work queued on `stream` wait until `event` completes (the
 * event's last record at the time of this call). Does not block the host. A
 * never-recorded event is complete, so this is then a no-op. The event may be
 * of another device of the same backend when the backend declares
 * ACCEL_CAP_CROSS_DEVICE_WAIT (every in-tree backend does): that is how work
 * is ordered across devices, as cuStreamWaitEvent and torch's
 * Stream.wait_event do. Statuses: ACCEL_ERROR_INVALID_ARGUMENT,
 * ACCEL_ERROR_DEVICE_MISMATCH (event of another backend, or of another
 * device on a backend without ACCEL_CAP_CROSS_DEVICE_WAIT; the message names
 * both), ACCEL_ERROR_NOT_SUPPORTED, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. cuStreamWaitEvent. */
ACCEL_API accel_status_t accel_stream_wait_event(accel_stream_t stream, accel_event_t event);

/* ACCEL_SUCCESS if the event's last record has completed or the event was
 * never recorded, ACCEL_ERROR_NOT_READY if not. Never blocks. Other statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. cuEventQuery. */
ACCEL_API accel_status_t accel_event_query(accel_event_t event);

/* Blocks until the event's last record completes; returns at once for a
 * never-recorded event. Statuses: ACCEL_ERROR_INVALID_ARGUMENT,
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. cuEventSynchronize. */
ACCEL_API accel_status_t accel_event_synchronize(accel_event_t event);

/* Stores in *ms the time in milliseconds between the completion of `start`
 * and of `end` (may be negative if end completed first; resolution is the
 * backend's, typically 0.5 us or better). Both events must be of one backend
 * and device, created with ACCEL_EVENT_ENABLE_TIMING, recorded and completed.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (NULL argument or destroyed event),
 * ACCEL_ERROR_EVENT_NO_TIMING, ACCEL_ERROR_EVENT_NOT_RECORDED,
 * ACCEL_ERROR_NOT_READY (a record has not completed),
 * ACCEL_ERROR_DEVICE_MISMATCH, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. cuEventElapsedTime /
 * torch.Event.elapsed_time. */
ACCEL_API accel_status_t accel_event_elapsed_time(accel_event_t start, accel_event_t end,
                                                  float* ms);

/* Stores the device index of the event in *device. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_event_device(accel_event_t event, int32_t* device);

/* ------------------------------------------------------------------------ */
/* Memory                                                                     */
/* ------------------------------------------------------------------------ */

/* Allocates `bytes` (> 0) bytes of device memory on `device` (negative:
 * current) and stores the device pointer in *ptr, ordered on the calling
 * thread's current stream of that device (see the caching allocator below;
 * the pointer is aligned to at least 256 bytes as with cuMemAlloc wherever
 * the vendor's allocations are). Counted in the device's
 * allocation statistics. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (ptr NULL or
 * bytes 0), ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_OUT_OF_MEMORY (also a size whose rounding would overflow:
 * above PTRDIFF_MAX with ACCEL_ALLOC_CONF=backend:native, a quarter of
 * SIZE_MAX with the caching allocator; nothing changes),
 * ACCEL_ERROR_NOT_SUPPORTED, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. cuMemAlloc. */
ACCEL_API accel_status_t accel_malloc(int32_t device, size_t bytes, void** ptr);

/* Frees memory from accel_malloc (any thread; the device is found from the
 * pointer). NULL is a no-op returning ACCEL_SUCCESS. With the caching
 * allocator (the default) the block returns to the cache of the stream it
 * was allocated on, so work queued on that stream may still use it; work on
 * other streams must be named with accel_record_stream first. With
 * ACCEL_ALLOC_CONF=backend:native it is a vendor free: the caller must make
 * sure no queued work still uses it (synchronize first). Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (not a live pointer from accel_malloc),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. cuMemFree. */
ACCEL_API accel_status_t accel_free(void* ptr);

/* Direction of a copy. */
typedef enum accel_memcpy_kind {
  ACCEL_MEMCPY_HOST_TO_DEVICE = 0,
  ACCEL_MEMCPY_DEVICE_TO_HOST = 1,
  ACCEL_MEMCPY_DEVICE_TO_DEVICE = 2,
  ACCEL_MEMCPY_FORCE_INT32 = 0x7fffffff /* fixes the size; not a kind */
} accel_memcpy_kind_t;

/* Queues a copy of `bytes` bytes from `src` to `dst` on `stream` (NULL: the
 * current stream of the current device). Device pointers must lie, with all
 * `bytes`, inside live allocations of the stream's device. bytes == 0 is a
 * no-op that succeeds whatever dst and src are (NULL included; CUDA and HIP
 * do the same), once the stream is valid.
 * What is synchronous follows CUDA's "API synchronization behavior" for
 * cudaMemcpyAsync, on every backend alike:
 *  - host memory from accel_host_malloc or accel_host_register (pinned):
 *    fully asynchronous; it must stay valid and unchanged until the copy
 *    completes (synchronize the stream or an event recorded after it);
 *  - from pageable host memory (any other host pointer) to the device: the
 *    call returns once `src` has been read, so the caller may reuse or free
 *    it at once. Up to 1 MiB the bytes are staged into pinned memory (a ring
 *    of pinned blocks per stream) and the device copy stays asynchronous;
 *    the call waits only when every block of the ring still holds queued
 *    copies. Larger copies are queued and then waited for (as a stream
 *    synchronize: also for the work queued before them);
 *  - from the device to pageable host memory: the call returns once the
 *    copy has completed (it waits for the stream);
 *  - device to device: asynchronous.
 * From a host function on `stream` itself, a pageable copy that would wait
 * (to the host, or from the host above 1 MiB) is refused with
 * ACCEL_ERROR_INVALID_ARGUMENT, as every wait for its own stream is; a
 * smaller one from the host is staged without waiting.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (NULL pointer, bad kind, range
 * outside an allocation, a pageable copy that would wait from a host
 * function of its stream), ACCEL_ERROR_DEVICE_MISMATCH (device pointer of
 * another device), ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_NOT_SUPPORTED,
 * ACCEL_ERROR_OUT_OF_MEMORY (no pinned memory for staging),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE (also a failure of the
 * work waited for). Thread-safe. cuMemcpyAsync. */
ACCEL_API accel_status_t accel_memcpy_async(void* dst, const void* src, size_t bytes,
                                            accel_memcpy_kind_t kind, accel_stream_t stream);

/* Queues setting `bytes` bytes at device pointer `dst` to (unsigned char)value
 * on `stream` (NULL: the current stream). Statuses as accel_memcpy_async.
 * cuMemsetD8Async. */
ACCEL_API accel_status_t accel_memset_async(void* dst, int value, size_t bytes,
                                            accel_stream_t stream);

/* Free and total memory of `device` (negative: current) in bytes, as the
 * backend reports it (free may be an estimate where the vendor has no free
 * memory query). Either output may be NULL. Statuses:
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_NOT_SUPPORTED, ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE.
 * cuMemGetInfo / torch.cuda.mem_get_info. */
ACCEL_API accel_status_t accel_mem_get_info(int32_t device, size_t* free_bytes,
                                            size_t* total_bytes);

/* Allocation statistics of one device, counted by accel over accel_malloc /
 * accel_free (torch.accelerator.memory_allocated and friends). */
typedef struct accel_memory_stats_s {
  size_t struct_size;            /* set by the caller: sizeof(accel_memory_stats_t) */
  uint64_t allocated_bytes;      /* bytes currently allocated */
  uint64_t peak_allocated_bytes; /* maximum of allocated_bytes since start or reset */
  uint64_t allocation_count;     /* live allocations */
  uint64_t total_allocations;    /* accel_malloc successes since start */
  /* Appended (a caller whose struct_size ends before a member does not get
   * it): bytes of the vendor memory accel holds for the device, allocated
   * or cached (torch.cuda.memory_reserved; the caching allocator's
   * reserved_bytes.all.current, docs/memory.md; under backend:native, with
   * no cache, the bytes allocated), and their maximum since start or
   * accel_reset_peak_memory_stats (torch.cuda.max_memory_reserved). */
  uint64_t reserved_bytes;
  uint64_t peak_reserved_bytes;
} accel_memory_stats_t;

/* Fills *stats for `device` (negative: current). Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (stats NULL or struct_size too small for
 * struct_size itself), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE. Does not initialise the backend. */
ACCEL_API accel_status_t accel_memory_stats(int32_t device, accel_memory_stats_t* stats);

/* Sets the peak of `device` (negative: current) to the bytes allocated now,
 * and every peak of accel_memory_stats_list to its current value.
 * Statuses: ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE.
 * torch.accelerator.reset_peak_memory_stats. */
ACCEL_API accel_status_t accel_reset_peak_memory_stats(int32_t device);

/* ------------------------------------------------------------------------ */
/* Stream-ordered caching allocator (docs/memory.md)                          */
/* ------------------------------------------------------------------------ */
/* accel_malloc and accel_malloc_async hand out blocks of larger vendor
 * allocations ("segments") that the core caches, the design of PyTorch's
 * CUDA caching allocator done once for every backend. A block belongs to the
 * stream it was allocated on (accel_malloc: the calling thread's current
 * stream of the device). Once freed it serves later allocations on that
 * stream only: at once when no other stream used it (they run after
 * everything queued before the free), otherwise once the work queued up to
 * the free on the streams named with accel_record_stream / accel_free_async
 * has completed. Memory changes stream only by going back to the vendor
 * (accel_empty_cache, the out-of-memory retry) or when its stream is
 * destroyed (then it moves to the device's default stream once the
 * destroyed stream's work has completed). So accel_free is safe while work
 * that uses the memory is still queued on its stream.
 *
 * ACCEL_ALLOC_CONF (read once, at the first allocation, through
 * secure_getenv) configures it with PYTORCH_CUDA_ALLOC_CONF's syntax and key
 * names, "key:value,key:value":
 *   backend:caching|native   native: every accel_malloc is one vendor
 *                            allocation and every accel_free one vendor free,
 *                            with no cache in between (accel_free then needs
 *                            the memory idle, as cuMemFree does).
 *   max_split_size_mb:N      blocks of N MiB or more are never split (N > 20).
 *   garbage_collection_threshold:F  0 <= F < 1 (0: off, the default): once
 *                            more than F x the device's memory is reserved,
 *                            free the cached segments unused the longest
 *                            before asking the vendor for more.
 *   roundup_power2_divisions:N  round requests above 1 MiB up to one of N
 *                            equal steps between two powers of two (N a
 *                            power of 2 up to 1024; 1 = off, the default;
 *                            every request rounds up to 512 bytes).
 * PyTorch's other keys (expandable_segments, ...) are refused as unknown.
 * An invalid value is warned about in the log (ACCEL_LOG_LEVEL=warn, the
 * default) and the whole setting ignored. */

/* Allocates `bytes` (> 0) of device memory on the device of `stream` (NULL:
 * the current stream of the current device), ordered on that stream: work
 * queued on it from now on may use the memory. Statuses as accel_malloc,
 * plus ACCEL_ERROR_INVALID_ARGUMENT for a stream that is not live.
 * Thread-safe. cudaMallocAsync. */
ACCEL_API accel_status_t accel_malloc_async(size_t bytes, accel_stream_t stream, void** ptr);

/* Frees memory from accel_malloc / accel_malloc_async in the order of
 * `stream` (NULL: the current stream of the pointer's device): it is reused
 * only after the work queued on `stream` before this call has completed.
 * NULL ptr is a no-op. With ACCEL_ALLOC_CONF=backend:native it waits for
 * `stream` and frees. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (not a live
 * pointer from accel_malloc, a stream that is not live), ACCEL_ERROR_DEVICE_MISMATCH
 * (stream of another device or backend), ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. cudaFreeAsync. */
ACCEL_API accel_status_t accel_free_async(void* ptr, accel_stream_t stream);

/* Marks device memory `ptr` (any pointer inside a live allocation) as used
 * by `stream` as well as by the stream it was allocated on: when it is freed,
 * it is reused only after the work queued on `stream` up to the free has
 * completed. A no-op for the allocation's own stream and with
 * backend:native. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (not inside a live
 * allocation, stream not live), ACCEL_ERROR_DEVICE_MISMATCH (stream of
 * another device or backend), ACCEL_ERROR_NO_ACCELERATOR. Thread-safe.
 * torch.Tensor.record_stream. */
ACCEL_API accel_status_t accel_record_stream(void* ptr, accel_stream_t stream);

/* Returns the cached segments of `device` (negative: current) that hold no
 * live allocation to the vendor, after waiting for the streams that last
 * used them. Allocations stay valid. Statuses: ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_INVALID_ARGUMENT (called from a
 * host function of the backend when a segment would have to be waited for:
 * the wait may depend on that host function; see accel_host_fn),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. Thread-safe.
 * torch.accelerator.empty_cache. */
ACCEL_API accel_status_t accel_empty_cache(int32_t device);

/* "caching" or "native": the allocator ACCEL_ALLOC_CONF selected. Static
 * storage; thread-safe. torch.cuda.get_allocator_backend. */
ACCEL_API const char* accel_get_allocator_backend(void);

/* One statistic of accel_memory_stats_list, named as in
 * torch.cuda.memory_stats: "<stat>.<pool>.<metric>" with stat one of
 * allocation, segment, active, inactive_split (counts) and allocated_bytes,
 * reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes
 * (bytes); pool all, small_pool (blocks of 1 MiB or less, in 2 MiB segments)
 * or large_pool; metric current, peak, allocated (added since start or
 * accel_reset_accumulated_memory_stats) or freed. Then the plain counters
 * num_alloc_retries, num_ooms, num_sync_all_streams, num_device_alloc,
 * num_device_free and max_split_size (bytes; -1: unlimited). */
typedef struct accel_memory_stat_s {
  const char* name; /* static storage */
  int64_t value;
} accel_memory_stat_t;

/* Writes up to `capacity` statistics of `device` (negative: current) to
 * `stats` and their total number to *count (always the same number and
 * order in a process; capacity 0 with stats NULL asks for the count).
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (count NULL, stats NULL with
 * capacity > 0), ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE.
 * Never initialises a backend. Thread-safe. torch.cuda.memory_stats. */
ACCEL_API accel_status_t accel_memory_stats_list(int32_t device, accel_memory_stat_t* stats,
                                                 size_t capacity, size_t* count);

/* Sets the allocated and freed counters and the num_* counters of `device`
 * (negative: current) to 0. Statuses: ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE. Thread-safe.
 * torch.cuda.reset_accumulated_memory_stats. */
ACCEL_API accel_status_t accel_reset_accumulated_memory_stats(int32_t device);

/* Writes a JSON snapshot of `device`'s allocator (negative: current device;
 * schema in docs/memory.md: segments with their blocks, sizes, states and
 * streams, the statistics, and the recorded history) to `buffer`, NUL
 * terminated, and its length without the NUL to *length. When `capacity`
 * is smaller than *length + 1 nothing is written and the status is
 * ACCEL_ERROR_OUT_OF_RANGE (capacity 0 with buffer NULL asks for the
 * length). A call that does not deliver the snapshot (the length query, or
 * OUT_OF_RANGE) keeps it for the calling thread: that thread's next call
 * for the same device with capacity >= *length + 1 returns exactly it, so
 * query-then-fetch takes two calls however fast other threads allocate (any
 * other call of the thread drops it). Statuses also:
 * ACCEL_ERROR_INVALID_ARGUMENT (length NULL, buffer NULL with capacity > 0),
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE. Thread-safe.
 * torch.cuda.memory._snapshot. */
ACCEL_API accel_status_t accel_memory_snapshot(int32_t device, char* buffer, size_t capacity,
                                               size_t* length);

/* Keeps the last `max_entries` allocator events of every device (allocation,
 * free requested, free completed, segment allocated and freed, empty cache,
 * out of memory; with a timestamp, the stream and the caller's address) for
 * accel_memory_snapshot; 0 stops recording and drops the history. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (more than 1 << 24 entries). Thread-safe.
 * torch.cuda.memory._record_memory_history. */
ACCEL_API accel_status_t accel_record_memory_history(size_t max_entries);

/* ------------------------------------------------------------------------ */
/* Device properties                                                          */
/* ------------------------------------------------------------------------ */

typedef struct accel_device_properties_s {
  size_t struct_size;    /* set by the caller: sizeof(accel_device_properties_t) */
  char name[256];        /* "NVIDIA H200", NUL-terminated */
  char vendor[128];      /* "NVIDIA", "AMD", "Intel", "The pocl project", ... */
  uint64_t total_memory; /* bytes */
  uint8_t uuid[16];      /* all zero when has_uuid is 0 */
  int32_t has_uuid;      /* 1 when uuid is known */
  char pci_bus_id[32];   /* "0000:65:00.0" (domain:bus:device.function); "" when unknown */
  char architecture[64]; /* "sm_90", "gfx90a", IP version, OpenCL version, ... */
  int32_t compute_units; /* SMs, CUs, EUs, OpenCL compute units; 0 when unknown */
  int32_t device_index;  /* the index these properties describe */
  /* How this device replays graphs (docs/graphs.md): "native (CUDA
   * graphs)", "native (cl_khr_command_buffer 0.9.0)": the vendor's graphs,
   * the plugin's words in the parentheses; "recorded by accel": the core
   * re-issues the recorded operations; "recorded by accel
   * (ACCEL_GRAPHS=recorder)" where the variable turned native graphs off.
   * NUL-terminated; a caller whose struct_size ends before it gets the
   * rest and not this. */
  char graphs[96];
} accel_device_properties_t;

/* Fills *props for `device` (negative: current). Initialises the backend
 * (as torch.cuda.get_device_properties does). Statuses: ACCEL_ERROR_INVALID_ARGUMENT
 * (props NULL or struct_size < sizeof(size_t)), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE.
 * torch.cuda.get_device_properties / cuDeviceGetAttribute. */
ACCEL_API accel_status_t accel_get_device_properties(int32_t device,
                                                     accel_device_properties_t* props);

/* ------------------------------------------------------------------------ */
/* Device attributes and capability                                           */
/* ------------------------------------------------------------------------ */

/* One numeric fact about a device: ACCEL_DEVICE_ATTR_MAP(XX) lists each as
 * XX(NAME, value, "name as accel_device_attr_name gives it", unit). The
 * shape of cudaDeviceGetAttribute / cuDeviceGetAttribute, with each
 * vendor's equivalent (sycl::info::device, clGetDeviceInfo,
 * zeDeviceGetComputeProperties, hipDeviceGetAttribute). Append-only: values
 * never change, new attributes get new values.
 *
 *  COMPUTE_CAPABILITY_MAJOR/MINOR  CUDA compute capability (9.0 for sm_90);
 *                      HIP: the gfx version's major and minor (gfx90a:
 *                      9, 0); Level Zero: the IP version's architecture
 *                      and release; OpenCL: the device's OpenCL version.
 *  COMPUTE_CAPABILITY_STEPPING  HIP: the gfx stepping (gfx90a: 10);
 *                      Level Zero: the IP version's revision.
 *  WARP_SIZE           threads that execute in lock-step: warp (CUDA),
 *                      wavefront (HIP), the largest sub-group size
 *                      (Level Zero, OpenCL).
 *  MAX_THREADS_PER_BLOCK  work-items in one block / work-group.
 *  MAX_BLOCK_DIM_X/Y/Z    largest block / work-group size per dimension.
 *  MAX_GRID_DIM_X/Y/Z     largest grid per dimension, in blocks.
 *  SHARED_MEMORY_PER_BLOCK  bytes of shared / local memory one block may use.
 *  MULTIPROCESSOR_COUNT   SMs (CUDA), CUs (HIP), EU count or compute units.
 *  CLOCK_RATE_KHZ      peak core clock in kHz.
 *  MEMORY_BUS_WIDTH    global memory bus width in bits.
 *  L2_CACHE_SIZE       bytes of L2 (last-level) cache.
 *  MAX_ALLOCATION_SIZE largest single accel_malloc, in bytes
 *                      (CL_DEVICE_MAX_MEM_ALLOC_SIZE, maxMemAllocSize).
 *  INTEGRATED          1 if the device shares memory with the host.
 *  UNIFIED_ADDRESSING  1 if host and device share one virtual address space.
 *  MANAGED_MEMORY      1 if the device supports managed / shared memory.
 *  CONCURRENT_KERNELS  1 if kernels of different streams may run at once.
 *  ASYNC_ENGINE_COUNT  copy engines that overlap copies with compute.
 *  ECC_ENABLED         1 if ECC is on for the device memory. */
#define ACCEL_DEVICE_ATTR_MAP(XX)                                       \
  XX(COMPUTE_CAPABILITY_MAJOR, 0, "compute_capability_major", "")       \
  XX(COMPUTE_CAPABILITY_MINOR, 1, "compute_capability_minor", "")       \
  XX(COMPUTE_CAPABILITY_STEPPING, 2, "compute_capability_stepping", "") \
  XX(WARP_SIZE, 3, "warp_size", "threads")                              \
  XX(MAX_THREADS_PER_BLOCK, 4, "max_threads_per_block", "threads")      \
  XX(MAX_BLOCK_DIM_X, 5, "max_block_dim_x", "threads")                  \
  XX(MAX_BLOCK_DIM_Y, 6, "max_block_dim_y", "threads")                  \
  XX(MAX_BLOCK_DIM_Z, 7, "max_block_dim_z", "threads")                  \
  XX(MAX_GRID_DIM_X, 8, "max_grid_dim_x", "blocks")                     \
  XX(MAX_GRID_DIM_Y, 9, "max_grid_dim_y", "blocks")                     \
  XX(MAX_GRID_DIM_Z, 10, "max_grid_dim_z", "blocks")                    \
  XX(SHARED_MEMORY_PER_BLOCK, 11, "shared_memory_per_block", "bytes")   \
  XX(MULTIPROCESSOR_COUNT, 12, "multiprocessor_count", "")              \
  XX(CLOCK_RATE_KHZ, 13, "clock_rate_khz", "kHz")                       \
  XX(MEMORY_BUS_WIDTH, 14, "memory_bus_width", "bits")                  \
  XX(L2_CACHE_SIZE, 15, "l2_cache_size", "bytes")                       \
  XX(MAX_ALLOCATION_SIZE, 16, "max_allocation_size", "bytes")           \
  XX(INTEGRATED, 17, "integrated", "")                                  \
  XX(UNIFIED_ADDRESSING, 18, "unified_addressing", "")                  \
  XX(MANAGED_MEMORY, 19, "managed_memory", "")                          \
  XX(CONCURRENT_KERNELS, 20, "concurrent_kernels", "")                  \
  XX(ASYNC_ENGINE_COUNT, 21, "async_engine_count", "")                  \
  XX(ECC_ENABLED, 22, "ecc_enabled", "")

#define ACCEL_DEVICE_ATTR_ENUMERATOR_(name, value, text, unit) ACCEL_DEVICE_ATTR_##name = value,
typedef enum accel_device_attr {
  ACCEL_DEVICE_ATTR_MAP(ACCEL_DEVICE_ATTR_ENUMERATOR_) ACCEL_DEVICE_ATTR_FORCE_INT32 =
      0x7fffffff /* fixes the size; not an attribute */
} accel_device_attr_t;
#undef ACCEL_DEVICE_ATTR_ENUMERATOR_

/* Number of attributes; every value in [0, ACCEL_DEVICE_ATTR_COUNT) is one. */
#define ACCEL_DEVICE_ATTR_COUNT 23

/* "compute_capability_major", ...; NULL for a value outside the map. Static
 * storage, thread-safe. */
ACCEL_API const char* accel_device_attr_name(accel_device_attr_t attr);

/* Reads one attribute of `device` (negative: current) into *value.
 * Initialises the backend. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (value
 * NULL, attr outside [0, ACCEL_DEVICE_ATTR_COUNT)), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_NOT_SUPPORTED (the backend has no
 * attributes, or cannot answer this one: the detail says which),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. *value is unchanged on
 * failure. Thread-safe. cudaDeviceGetAttribute. */
ACCEL_API accel_status_t accel_device_get_attribute(int32_t device, accel_device_attr_t attr,
                                                    int64_t* value);

/* Element types, numbered as PyTorch's c10::ScalarType (torch.uint8 = 0,
 * ...), so a bit of accel_device_capability_t.supported_dtypes is the
 * ScalarType of the same number. Append-only. */
typedef enum accel_dtype {
  ACCEL_DTYPE_UINT8 = 0,
  ACCEL_DTYPE_INT8 = 1,
  ACCEL_DTYPE_INT16 = 2,
  ACCEL_DTYPE_INT32 = 3,
  ACCEL_DTYPE_INT64 = 4,
  ACCEL_DTYPE_FLOAT16 = 5,
  ACCEL_DTYPE_FLOAT32 = 6,
  ACCEL_DTYPE_FLOAT64 = 7,
  ACCEL_DTYPE_COMPLEX32 = 8,
  ACCEL_DTYPE_COMPLEX64 = 9,
  ACCEL_DTYPE_COMPLEX128 = 10,
  ACCEL_DTYPE_BOOL = 11,
  ACCEL_DTYPE_BFLOAT16 = 15,
  ACCEL_DTYPE_FORCE_INT32 = 0x7fffffff /* fixes the size; not a type */
} accel_dtype_t;

/* Bit of one dtype in supported_dtypes. */
#define ACCEL_DTYPE_BIT(dtype) (UINT64_C(1) << (unsigned)(dtype))

/* What a device supports, as torch.accelerator.get_device_capability
 * reports it. */
typedef struct accel_device_capability_s {
  size_t struct_size; /* set by the caller: sizeof(accel_device_capability_t) */
  /* ACCEL_DTYPE_BIT of every element type tensors of which can be allocated
   * on the device and converted between (torch's "supported_dtypes"). */
  uint64_t supported_dtypes;
} accel_device_capability_t;

/* Fills *capability for `device` (negative: current). As in torch, every
 * dtype above is supported unless the backend says otherwise (OpenCL and
 * Level Zero clear FLOAT64 and COMPLEX128 on devices without double
 * precision, FLOAT16 and COMPLEX32 without half precision). Initialises the
 * backend. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (capability NULL or
 * struct_size < sizeof(size_t)), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe.
 * torch.accelerator.get_device_capability. */
ACCEL_API accel_status_t accel_get_device_capability(int32_t device,
                                                     accel_device_capability_t* capability);

/* ------------------------------------------------------------------------ */
/* Interop: native handles                                                    */
/* ------------------------------------------------------------------------ */

/* Which vendor's objects an accel_native_handle_t holds. Append-only;
 * third-party backends use values from ACCEL_NATIVE_VENDOR_BASE up and say
 * which in their documentation. */
typedef enum accel_native_type {
  ACCEL_NATIVE_NONE = 0,
  ACCEL_NATIVE_CUDA = 1,       /* CUDA Driver API */
  ACCEL_NATIVE_HIP = 2,        /* HIP runtime */
  ACCEL_NATIVE_LEVEL_ZERO = 3, /* Level Zero */
  ACCEL_NATIVE_OPENCL = 4,     /* OpenCL */
  ACCEL_NATIVE_SIM = 5,        /* accel's simulator (plugins/sim/README.md) */
  ACCEL_NATIVE_VENDOR_BASE = 0x10000,
  ACCEL_NATIVE_FORCE_INT32 = 0x7fffffff /* fixes the size; not a type */
} accel_native_type_t;

/* A vendor object behind an accel stream, event or device: a tagged
 * struct, so the receiver checks `type` before casting `handle`.
 *
 *              stream              event                 device
 *  CUDA        CUstream            CUevent               handle NULL
 *  HIP         hipStream_t         hipEvent_t            handle NULL
 *  Level Zero  ze_command_list_    ze_event_handle_t of  ze_device_handle_t
 *              handle_t (immediate) the latest record
 *  OpenCL      cl_command_queue    cl_event of the       cl_device_id
 *              (in-order)          latest record
 *  sim         sim queue           sim event             sim device
 *
 * `context` is the CUcontext (the device's primary context), NULL (HIP),
 * the ze_context_handle_t or the cl_context the object lives in; `ordinal`
 * is the vendor's device number (CUdevice, hipDevice_t) or -1 where the
 * vendor names devices by handle. Level Zero and OpenCL make a new vendor
 * event per record: an event's handle is that of its latest record, NULL
 * before the first. */
typedef struct accel_native_handle_s {
  size_t struct_size;       /* set by the caller: sizeof(accel_native_handle_t) */
  accel_native_type_t type; /* ACCEL_NATIVE_*: what the members below are */
  const char* backend;      /* the backend's name ("cuda"); static storage */
  void* handle;             /* the object itself (see the table) */
  void* context;            /* its vendor context, or NULL */
  int64_t ordinal;          /* vendor device number, or -1 */
} accel_native_handle_t;

/* The vendor queue accel submits `stream`'s work to (NULL: the current
 * stream). Borrowed: valid while the stream lives; never destroy it. Work a
 * program enqueues on it through the vendor API is ordered with accel's
 * work on the stream, both ways, as if accel had queued it. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (out NULL, struct_size too small, stream not
 * live), ACCEL_ERROR_NOT_SUPPORTED (the backend has no native handles: an
 * ABI 1.0 plugin or one without ACCEL_CAP_NATIVE_HANDLES), ACCEL_ERROR_FORKED.
 * Thread-safe. torch's Stream.native_handle, urQueueGetNativeHandle. */
ACCEL_API accel_status_t accel_stream_native_handle(accel_stream_t stream,
                                                    accel_native_handle_t* out);

/* The vendor event behind `event` (see the table: for Level Zero and
 * OpenCL that of its latest record, NULL before the first). Borrowed: valid
 * until the event is destroyed, or recorded again where a record makes a new
 * vendor event. Statuses as accel_stream_native_handle. cudaEvent_t of
 * torch.cuda.Event, urEventGetNativeHandle. */
ACCEL_API accel_status_t accel_event_native_handle(accel_event_t event, accel_native_handle_t* out);

/* The vendor device and context of `device` (negative: current). Borrowed:
 * valid until process exit. Initialises the backend. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT, ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_NOT_SUPPORTED, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. urDeviceGetNativeHandle. */
ACCEL_API accel_status_t accel_device_native_handle(int32_t device, accel_native_handle_t* out);

/* Flags of accel_stream_from_native. */
#define ACCEL_NATIVE_TAKE_OWNERSHIP 1u /* accel_stream_destroy destroys the vendor queue */

/* Wraps a vendor queue the program made (`native->type` the current
 * accelerator's, `native->handle` the queue, as the table above) as an
 * accel stream of `device` (negative: current). It then works wherever an
 * accel stream does (accel_set_stream, events, copies, host functions,
 * guards) and accel_stream_destroy releases the wrapper: the queue itself
 * only with ACCEL_NATIVE_TAKE_OWNERSHIP, otherwise it must outlive the
 * wrapper and stays the program's. A queue has one owner: taking
 * ownership of a queue that a live accel stream owns (a stream of
 * accel_stream_create, a default stream, a wrapper that took ownership;
 * the queue accel_stream_native_handle gives for one) is refused, since it
 * would be released twice, and the detail names the stream that owns it;
 * without the flag such a queue can be wrapped (borrowed). A borrowed
 * wrapper owns nothing: ownership of its queue may still be handed to a
 * new wrapper (as CUDA and Unified Runtime allow any number of handles on
 * one native queue, one of them owning it), and the borrowed wrapper must
 * then be destroyed before the owning one, as always before the queue
 * goes. The backend checks what the vendor lets
 * it check (the queue's device and context against `device`'s: CUDA,
 * HIP, OpenCL; an OpenCL queue must be in order, a Level Zero command list
 * immediate) and the detail of a refusal says what was wrong; what cannot
 * be checked (Level Zero cannot tell a list's device on loader 1.8) is the
 * caller's promise. accel_stream_priority reports 0 for it. Statuses: ACCEL_ERROR_INVALID_ARGUMENT
 * (native or stream NULL, struct_size too small, handle NULL, unknown flag bits, a queue the
 * backend refuses, ACCEL_NATIVE_TAKE_OWNERSHIP of a queue an accel stream
 * owns), ACCEL_ERROR_DEVICE_MISMATCH (type of another backend,
 * queue of another device or context), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_NOT_SUPPORTED, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_BACKEND_FAILURE. Thread-safe.
 * torch.cuda.ExternalStream, urQueueCreateWithNativeHandle. */
ACCEL_API accel_status_t accel_stream_from_native(int32_t device,
                                                  const accel_native_handle_t* native,
                                                  uint32_t flags, accel_stream_t* stream);

/* ------------------------------------------------------------------------ */
/* Page-locked (pinned) host memory                                           */
/* ------------------------------------------------------------------------ */

/* Allocates `bytes` of page-locked host memory through the current
 * accelerator (cuMemHostAlloc with CU_MEMHOSTALLOC_PORTABLE, hipHostMalloc,
 * zeMemAllocHost, OpenCL fine-grained SVM or a mapped pinned buffer): copies
 * between it and device memory of any device of that backend are truly
 * asynchronous. flags must be 0 (reserved). Counted in the host fields of
 * accel_memory_stats. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (ptr NULL,
 * bytes 0, unknown flags), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_NOT_SUPPORTED (the backend has no host memory: ABI 1.0 or
 * without ACCEL_CAP_HOST_MEMORY), ACCEL_ERROR_OUT_OF_MEMORY (also bytes
 * above PTRDIFF_MAX, refused before the backend sees them: no rounding of
 * such a size can be trusted not to wrap; nothing changes),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. Thread-safe.
 * cudaMallocHost / cuMemHostAlloc. */
ACCEL_API accel_status_t accel_host_malloc(size_t bytes, uint32_t flags, void** ptr);

/* Frees memory from accel_host_malloc; NULL is a no-op. The block goes back
 * to the pinned host cache, reused once the copies accel_memcpy_async
 * queued from or to it have completed (with ACCEL_ALLOC_CONF=backend:native
 * it is a vendor free: synchronize first). Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (not a live accel_host_malloc pointer, or one
 * inside such an allocation), ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE.
 * Thread-safe. cudaFreeHost. */
ACCEL_API accel_status_t accel_host_free(void* ptr);

/* Page-locks `bytes` of existing host memory at `ptr` for the current
 * accelerator (cuMemHostRegister, hipHostRegister; Level Zero and OpenCL,
 * which cannot pin memory they did not allocate, record the range and copy
 * from it as from pageable memory: the backend's README says so). flags
 * must be 0. Ranges may not overlap a registered range or memory of
 * accel_malloc / accel_host_malloc. Statuses: ACCEL_ERROR_INVALID_ARGUMENT
 * (ptr NULL, bytes 0, unknown flags, an overlap), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_NOT_SUPPORTED, ACCEL_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. cudaHostRegister. */
ACCEL_API accel_status_t accel_host_register(void* ptr, size_t bytes, uint32_t flags);

/* Undoes accel_host_register(ptr, ...); `ptr` must be the registered start.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (not a registered start),
 * ACCEL_ERROR_FORKED, ACCEL_ERROR_BACKEND_FAILURE. Thread-safe.
 * cudaHostUnregister. */
ACCEL_API accel_status_t accel_host_unregister(void* ptr);

/* What a pointer points into, as far as accel knows. */
typedef enum accel_memory_type {
  ACCEL_MEMORY_UNKNOWN = 0,                  /* not memory accel allocated or registered */
  ACCEL_MEMORY_DEVICE = 1,                   /* accel_malloc */
  ACCEL_MEMORY_HOST_PINNED = 2,              /* accel_host_malloc */
  ACCEL_MEMORY_HOST_REGISTERED = 3,          /* accel_host_register */
  ACCEL_MEMORY_TYPE_FORCE_INT32 = 0x7fffffff /* fixes the size; not a type */
} accel_memory_type_t;

typedef struct accel_pointer_attributes_s {
  size_t struct_size; /* set by the caller: sizeof(accel_pointer_attributes_t) */
  accel_memory_type_t type;
  const char* backend; /* the backend that owns it; "" for UNKNOWN */
  int32_t device;      /* device index for DEVICE; -1 otherwise */
  void* base;          /* start of the allocation or registered range; NULL if UNKNOWN */
  size_t size;         /* its size in bytes; 0 if UNKNOWN */
} accel_pointer_attributes_t;

/* Describes the allocation `ptr` lies in (any byte of it, not only its
 * start). Host memory accel does not know is ACCEL_MEMORY_UNKNOWN with
 * ACCEL_SUCCESS: only memory made or registered through accel is tracked.
 * Never initialises a backend. Statuses: ACCEL_ERROR_INVALID_ARGUMENT
 * (attrs NULL or struct_size < sizeof(size_t)). Thread-safe.
 * cudaPointerGetAttributes. */
ACCEL_API accel_status_t accel_pointer_get_attributes(const void* ptr,
                                                      accel_pointer_attributes_t* attrs);

/* ------------------------------------------------------------------------ */
/* Peer access and copies between devices                                     */
/* ------------------------------------------------------------------------ */

/* *can_access = 1 if kernels and copies on `device` can reach memory of
 * `peer` directly once accel_device_enable_peer_access(device, peer) was
 * called (cuDeviceCanAccessPeer, hipDeviceCanAccessPeer,
 * zeDeviceCanAccessPeer; sim's devices share one address space), else 0
 * (OpenCL, and a device with itself).
 * Copies between the two work either way (accel_memcpy_peer_async).
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (can_access NULL),
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_NOT_SUPPORTED (no peer group in the backend), ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. torch.cuda.can_device_access_peer. */
ACCEL_API accel_status_t accel_device_can_access_peer(int32_t device, int32_t peer,
                                                      int32_t* can_access);

/* Lets `device` access memory of `peer` directly (one direction; call it
 * both ways for both). Calling it again is not an error. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (device == peer), ACCEL_ERROR_NO_ACCELERATOR,
 * ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_NOT_SUPPORTED (the two cannot: see
 * accel_device_can_access_peer), ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. cuCtxEnablePeerAccess. */
ACCEL_API accel_status_t accel_device_enable_peer_access(int32_t device, int32_t peer);

/* Queues a copy of `bytes` from device memory `src` of `src_device` to
 * device memory `dst` of `dst_device` (both of the current accelerator;
 * negative: current) on `stream` (NULL: the current stream; it may belong
 * to either device). Stream-ordered like every copy; directly where the
 * vendor can (CUDA and HIP peer copies, Level Zero copies between devices of
 * one context), staged through host memory by the backend otherwise
 * (OpenCL, sim), which is slower and still ordered. accel_memcpy_async with
 * ACCEL_MEMCPY_DEVICE_TO_DEVICE between two devices does the same. Statuses
 * as accel_memcpy_async, plus ACCEL_ERROR_DEVICE_MISMATCH (a pointer not of
 * the device named for it, or a stream of neither device) and
 * ACCEL_ERROR_NOT_SUPPORTED (no peer group in the backend).
 * cuMemcpyPeerAsync. */
ACCEL_API accel_status_t accel_memcpy_peer_async(void* dst, int32_t dst_device, const void* src,
                                                 int32_t src_device, size_t bytes,
                                                 accel_stream_t stream);

/* Statistics of accel_host_malloc / accel_host_register over the whole
 * process (host memory belongs to no device). */
typedef struct accel_host_memory_stats_s {
  size_t struct_size;            /* set by the caller: sizeof(accel_host_memory_stats_t) */
  uint64_t allocated_bytes;      /* bytes of live accel_host_malloc allocations */
  uint64_t peak_allocated_bytes; /* maximum of allocated_bytes since start */
  uint64_t allocation_count;     /* live accel_host_malloc allocations */
  uint64_t total_allocations;    /* accel_host_malloc successes since start */
  uint64_t registered_bytes;     /* bytes in live accel_host_register ranges */
  uint64_t registered_count;     /* live registered ranges */
} accel_host_memory_stats_t;

/* Fills *stats. Never initialises a backend. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (stats NULL or struct_size < sizeof(size_t)).
 * Thread-safe. torch.cuda.host_memory_stats. */
ACCEL_API accel_status_t accel_host_memory_stats(accel_host_memory_stats_t* stats);

/* Returns the cached pinned host blocks (accel_host_malloc keeps freed ones
 * for reuse, as torch's caching host allocator does) that no queued copy
 * still uses to the vendor. Statuses: ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. torch.cuda.empty_host_cache. */
ACCEL_API accel_status_t accel_empty_host_cache(void);

/* Statistics of the pinned host memory cache, as accel_memory_stats_list:
 * allocation, segment, allocated_bytes, reserved_bytes (each .current,
 * .peak, .allocated, .freed), num_host_alloc, num_host_free. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (count NULL, stats NULL with capacity > 0).
 * Thread-safe. torch.cuda.host_memory_stats. */
ACCEL_API accel_status_t accel_host_memory_stats_list(accel_memory_stat_t* stats, size_t capacity,
                                                      size_t* count);

/* ------------------------------------------------------------------------ */
/* Modules and kernels: the program's own kernels, in the formats it has     */
/* ------------------------------------------------------------------------ */

/* The kind of bytes in a kernel image. Append-only. Which backend loads
 * which (docs/modules.md has the whole table):
 *   PTX, CUBIN, FATBIN     cuda        cuModuleLoadDataEx
 *   AMD_CODE_OBJECT        hip         hipModuleLoadData
 *   SPIRV                  level_zero  zeModuleCreate (ZE_MODULE_FORMAT_IL_SPIRV)
 *                          opencl      clCreateProgramWithIL (devices with IL support)
 *   OPENCL_C               opencl      clCreateProgramWithSource + clBuildProgram
 *   NATIVE_BINARY          level_zero  zeModuleCreate (ZE_MODULE_FORMAT_NATIVE)
 *                          opencl      clCreateProgramWithBinary
 *   SIM_HOST               sim         a shared object following accel_sim_kernel.h */
typedef enum accel_module_format {
  ACCEL_MODULE_FORMAT_PTX = 0,                 /* NVIDIA PTX assembly (text) */
  ACCEL_MODULE_FORMAT_CUBIN = 1,               /* NVIDIA ELF for one architecture */
  ACCEL_MODULE_FORMAT_FATBIN = 2,              /* NVIDIA fat binary (cubins and/or PTX) */
  ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT = 3,     /* AMDGPU ELF code object, not an offload bundle */
  ACCEL_MODULE_FORMAT_SPIRV = 4,               /* SPIR-V binary module (OpenCL kernels) */
  ACCEL_MODULE_FORMAT_OPENCL_C = 5,            /* OpenCL C source (text) */
  ACCEL_MODULE_FORMAT_NATIVE_BINARY = 6,       /* the device's own binary (clGetProgramInfo) */
  ACCEL_MODULE_FORMAT_SIM_HOST = 7,            /* sim: host shared object, accel_sim_kernel.h */
  ACCEL_MODULE_FORMAT_FORCE_INT32 = 0x7fffffff /* fixes the size; not a format */
} accel_module_format_t;

/* Number of formats; every value in [0, ACCEL_MODULE_FORMAT_COUNT) is one. */
#define ACCEL_MODULE_FORMAT_COUNT 8
/* The bit of `format` in an accel_device_module_formats mask. */
#define ACCEL_MODULE_FORMAT_BIT(format) (UINT64_C(1) << (unsigned)(format))

/* The format's short name ("ptx", "cubin", "fatbin", "amd_code_object",
 * "spirv", "opencl_c", "native_binary", "sim_host"); NULL for a value out of
 * range. Static storage, thread-safe. */
ACCEL_API const char* accel_module_format_name(accel_module_format_t format);

/* One image of a module: `size` bytes of `format` at `data`. Text formats
 * (PTX, OpenCL C) need no terminating NUL: `size` counts the text. The
 * layout is frozen (it is passed in arrays). */
typedef struct accel_module_image_s {
  accel_module_format_t format;
  const void* data;
  size_t size;
} accel_module_image_t;

/* A loaded module (a program: the kernels of one image on one device) and
 * one kernel of it. Opaque values, not addresses: a handle of an unloaded
 * module, or of a kernel of one, is ACCEL_ERROR_INVALID_ARGUMENT (the
 * detail says it was unloaded or destroyed) in every call that takes it,
 * always: a later module or kernel never gets an earlier one's handle. A
 * value accel never returned is refused the same way, never read. */
typedef struct accel_module_s* accel_module_t;
typedef struct accel_kernel_s* accel_kernel_t;

/* Sets *formats to the ACCEL_MODULE_FORMAT_BIT mask of the formats
 * accel_module_load can load on `device` (-1: the current device); 0 when
 * the backend has no modules. Never initialises the vendor runtime's
 * compiler; it may initialise the backend (as accel_get_device_properties).
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (formats NULL),
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. (IREE's executable format query,
 * Level Zero's zeDeviceGetModuleProperties, CL_DEVICE_IL_VERSION.) */
ACCEL_API accel_status_t accel_device_module_formats(int32_t device, uint64_t* formats);

/* Loads a module on `device` (-1: the current device) from the first of
 * `count` images (in the caller's order) that the device accepts and that
 * builds: an image the device accepts but that fails to build is skipped
 * for the next one, and the failure is kept for the error. `options` (may
 * be NULL) go to the vendor compiler as they are: clBuildProgram's options,
 * zeModuleCreate's pBuildFlags; cuda, hip and sim refuse non-empty options
 * (their loaders take none). Blocks while the vendor compiles; queues
 * nothing on any stream.
 *
 * The calling thread's build log (accel_module_build_log) is replaced by
 * this call's: the vendor's log of every image tried, each headed by its
 * format, also when the load succeeded with warnings.
 *
 * Statuses: ACCEL_SUCCESS (*module set); ACCEL_ERROR_INVALID_ARGUMENT
 * (module NULL, images NULL with count > 0, count 0, an image with a format
 * out of range, data NULL or size 0, or an image of a format the device
 * accepts that is malformed: wrong magic, truncated); ACCEL_ERROR_NOT_SUPPORTED
 * (no image of a format the device accepts: the detail lists the formats
 * given and those the device accepts; or the backend has no modules: an ABI
 * 1.0/1.1 plugin); ACCEL_ERROR_BUILD_FAILED (every image the device accepts
 * failed to build: the detail has the start of the vendor's build log);
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE, ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_BACKEND_FAILURE. Nothing is loaded
 * on failure. Thread-safe. (urProgramCreateWithIL/WithBinary + urProgramBuild,
 * cuModuleLoadDataEx, hipModuleLoadData, zeModuleCreate.) */
ACCEL_API accel_status_t accel_module_load(int32_t device, const accel_module_image_t* images,
                                           size_t count, const char* options,
                                           accel_module_t* module);

/* accel_module_load from files: reads each of the `count` files at
 * `paths` (in the caller's order), tells each one's format from its bytes,
 * and loads the first that `device` (-1: the current device) takes and that
 * builds, as accel_module_load does with the same images. A file that is
 * missing or unreadable is skipped, its reason kept. Formats: an ELF file
 * is AMD_CODE_OBJECT (e_machine EM_AMDGPU, 224), CUBIN (EM_CUDA, 190),
 * SIM_HOST (a shared object for this host's machine) or NATIVE_BINARY (any
 * other machine); FATBIN starts with the magic 0xBA55ED50, SPIRV with
 * 0x07230203 (either byte order); text whose first word after comments and
 * white space is ".version" is PTX; other text (no NUL byte) is OPENCL_C;
 * any other file is skipped as not a kernel image. Each file is read
 * whole, once; the files are not kept open.
 *
 * Statuses: ACCEL_SUCCESS (*module set; accel_module_format says which
 * format was loaded); ACCEL_ERROR_INVALID_ARGUMENT (module NULL, paths NULL,
 * count 0, a path NULL or empty, or no file could be read: every one is
 * missing, unreadable, empty or not a kernel image; or the only file the
 * device takes is malformed); ACCEL_ERROR_NOT_SUPPORTED (files were read
 * but the device takes none of their formats); ACCEL_ERROR_BUILD_FAILED
 * (every file the device takes failed to build); and the others of
 * accel_module_load. When no file loads, the detail names each path and why
 * it was not used (strerror's text for a file that could not be read, the
 * format the device does not take, the build failure). The build log is as
 * accel_module_load's. Nothing is loaded on failure. Thread-safe.
 * (cuModuleLoad, hipModuleLoad: one path each; this takes several, for
 * binaries that ship an image per vendor.) */
ACCEL_API accel_status_t accel_module_load_file(int32_t device, const char* const* paths,
                                                size_t count, const char* options,
                                                accel_module_t* module);

/* Sets *format to the format of the image `module` was loaded from (the one
 * accel_module_load or accel_module_load_file picked). Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (format NULL, module NULL or not live),
 * ACCEL_ERROR_FORKED. *format is unchanged on failure. Thread-safe. */
ACCEL_API accel_status_t accel_module_format(accel_module_t module,
                                             accel_module_format_t* format);

/* Copies the calling thread's last accel_module_load build log into
 * `buffer` (NUL-terminated, cut at capacity - 1 bytes) and sets *length to
 * the whole log's length in bytes without the NUL; "" when the last load
 * had no log or there was none. buffer may be NULL with capacity 0 to ask
 * the length. Statuses: ACCEL_SUCCESS (also when cut: compare *length),
 * ACCEL_ERROR_INVALID_ARGUMENT (length NULL, or buffer NULL with
 * capacity > 0). Thread-safe (each thread has its own log). */
ACCEL_API accel_status_t accel_module_build_log(char* buffer, size_t capacity, size_t* length);

/* Unloads a module and destroys its kernels. The module and its kernels
 * are dead from the start of the call (other threads' launches and
 * lookups from then on fail with ACCEL_ERROR_INVALID_ARGUMENT); then it
 * waits for the module's device (cuModuleUnload requires that no launch of
 * it still runs), so calling it from a host function running on that
 * device fails with ACCEL_ERROR_INVALID_ARGUMENT and unloads nothing.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (NULL, not live, unloaded by
 * another thread, the host-function case, or a graph or an open capture
 * holds a kernel of the module: nothing is unloaded, docs/graphs.md),
 * ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED (an unsafe call in a capture's
 * mode, docs/graphs.md "Modes"), ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE (the wait or the vendor unload failed: the
 * module is gone all the same). Thread-safe; a launch another thread is
 * already inside accel_launch_kernel with when the unload starts is the
 * caller's race, as with cuModuleUnload. */
ACCEL_API accel_status_t accel_module_unload(accel_module_t module);

/* Sets *kernel to the kernel named `name` (the source's function name; for
 * PTX/CUDA C++ the mangled name unless declared extern "C"). The same
 * handle for the same name; valid until the module is unloaded. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (module not live, name NULL or empty, kernel
 * NULL, no kernel of that name in the module), ACCEL_ERROR_OUT_OF_MEMORY
 * (2^24 kernels live at once), ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. (cuModuleGetFunction,
 * urKernelCreate.) */
ACCEL_API accel_status_t accel_module_get_kernel(accel_module_t module, const char* name,
                                                 accel_kernel_t* kernel);

/* What a kernel needs on its device. -1 in a member: the backend cannot
 * tell. */
typedef struct accel_kernel_attributes_s {
  size_t struct_size;               /* set by the caller: sizeof(accel_kernel_attributes_t) */
  int64_t max_threads_per_block;    /* most threads one block of this kernel may have */
  int64_t static_shared_bytes;      /* shared/local memory the kernel declares, bytes */
  int64_t private_bytes;            /* private (local) memory per thread, bytes */
  int64_t num_registers;            /* registers per thread */
  int64_t preferred_block_multiple; /* warp/wavefront size,
                                       CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
  int32_t num_args;                 /* the kernel's parameters (see accel_kernel_arg_t) */
} accel_kernel_attributes_t;

/* Fills *attributes. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (kernel not
 * live, attributes NULL or struct_size too small), ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE. Thread-safe. (cuFuncGetAttribute,
 * hipFuncGetAttributes, zeKernelGetProperties, clGetKernelWorkGroupInfo.) */
ACCEL_API accel_status_t accel_kernel_get_attributes(accel_kernel_t kernel,
                                                     accel_kernel_attributes_t* attributes);

/* Three extents: x fastest, unused ones 1. */
typedef struct accel_dim3_s {
  uint32_t x, y, z;
} accel_dim3_t;

/* Where and how wide a launch is, in CUDA's terms: `grid` blocks of
 * `block` threads (OpenCL: global size = grid * block, local size = block;
 * Level Zero: group count = grid, group size = block). */
typedef struct accel_launch_config_s {
  size_t struct_size;    /* set by the caller: sizeof(accel_launch_config_t) */
  accel_dim3_t grid;     /* blocks per dimension; a 0 anywhere: nothing to run */
  accel_dim3_t block;    /* threads per block, each >= 1, product <= max_threads_per_block */
  size_t shared_bytes;   /* dynamic shared (local) memory per block, bytes */
  accel_stream_t stream; /* NULL: the calling thread's current stream of the kernel's device */
  /* NULL, or num_args entries saying what each argument's value is
   * (accel_kernel_arg_type_t; accel.hpp fills it from the C++ types). A
   * backend that knows a parameter's type refuses an argument of another
   * type. Appended: a caller's struct_size that ends before it means NULL. */
  const int32_t* arg_types;
} accel_launch_config_t;

/* The kinds of kernel arguments. */
typedef enum accel_kernel_arg_kind {
  ACCEL_KERNEL_ARG_VALUE = 0,          /* `size` bytes copied from `value` (scalars, structs) */
  ACCEL_KERNEL_ARG_DEVICE_POINTER = 1, /* `value` is the device pointer itself */
  ACCEL_KERNEL_ARG_LOCAL_MEMORY = 2,   /* `size` bytes of local/shared memory per block */
  ACCEL_KERNEL_ARG_FORCE_INT32 = 0x7fffffff /* fixes the size; not a kind */
} accel_kernel_arg_kind_t;

/* What a VALUE argument's bytes are, for accel_launch_config_t.arg_types
 * (int32_t values; the enum fixes the names). Integers of one size match
 * whatever their signedness, as C's argument conversions allow. */
typedef enum accel_kernel_arg_type {
  ACCEL_KERNEL_ARG_TYPE_UNKNOWN = 0, /* not said: only the kind and size are checked */
  ACCEL_KERNEL_ARG_TYPE_INT = 1,     /* an integer (bool, char, enum, intN_t, uintN_t) */
  ACCEL_KERNEL_ARG_TYPE_FLOAT = 2,   /* an IEEE float: half (2), float (4), double (8 bytes) */
  ACCEL_KERNEL_ARG_TYPE_POINTER = 3, /* a DEVICE_POINTER argument */
  ACCEL_KERNEL_ARG_TYPE_STRUCT = 4,  /* an aggregate or vector type: the size is checked */
  ACCEL_KERNEL_ARG_TYPE_FORCE_INT32 = 0x7fffffff /* fixes the size; not a type */
} accel_kernel_arg_type_t;

/* One argument of a launch, in the kernel's parameter order. On cuda and
 * hip a LOCAL_MEMORY argument takes no parameter (CUDA has none): its bytes
 * are added to the block's dynamic shared memory, in argument order, each
 * at a 16-byte aligned offset, before config->shared_bytes; a kernel with
 * one such argument finds it at the start of its extern __shared__ array.
 * The layout is frozen (it is passed in arrays). */
typedef struct accel_kernel_arg_s {
  accel_kernel_arg_kind_t kind;
  size_t size;       /* VALUE: bytes at value; DEVICE_POINTER: sizeof(void*); LOCAL: bytes > 0 */
  const void* value; /* VALUE: the bytes; DEVICE_POINTER: the pointer; LOCAL_MEMORY: NULL */
} accel_kernel_arg_t;

/* Queues `kernel` on config->stream with the arguments `args[0..num_args)`,
 * passed by value at launch (nothing is kept between launches: two threads
 * may launch the same kernel at once). The arguments are checked against
 * the kernel's parameters where the backend knows them (count, kind, value
 * size) and device pointers against accel's allocations: one of another
 * device, without peer access, is refused; a pointer in no accel
 * allocation (accel_malloc, accel_host_malloc, accel_host_register) is
 * passed only when the vendor reports it as device, managed or pinned
 * memory the kernel's device may use (cuPointerGetAttribute,
 * hipPointerGetAttributes, zeMemGetAllocProperties), else refused with the
 * message a copy gives for it: a host array's address is refused on every
 * backend, sim and opencl included. A NULL device pointer is passed as it
 * is (legal in CUDA). Ordered with the
 * stream's copies, host functions and events like any stream operation.
 * With config->arg_types (num_args entries; accel.hpp fills it), an
 * argument whose type is INT where the backend reports the parameter as
 * FLOAT, or FLOAT where it reports INT, is refused: its bytes would be read
 * as another type (int 2 as the float 2.8e-45). Integers of one size match
 * whatever their signedness; STRUCT and UNKNOWN are checked by size only;
 * nothing is converted (accel.hpp's TypedKernel converts at compile time,
 * as CUDA's <<<>>> does). docs/modules.md lists what each backend knows.
 * A kernel with a LOCAL_MEMORY parameter launched without its argument
 * (CUDA's way, with shared_bytes) is refused naming the parameter.
 *
 * Statuses: ACCEL_SUCCESS (queued; a grid with a 0 extent queues nothing);
 * ACCEL_ERROR_INVALID_ARGUMENT (kernel not live, config NULL or struct_size
 * too small, a block extent 0, block product over max_threads_per_block,
 * grid or block over the device's limits, args NULL with num_args > 0,
 * wrong argument count, kind or size, an arg_types entry that is no
 * accel_kernel_arg_type_t or of the wrong type as above, a LOCAL_MEMORY
 * size 0, shared_bytes > 0 where the kernel has local memory parameters
 * on opencl and sim, a device pointer in no accel allocation that the
 * vendor does not report);
 * ACCEL_ERROR_DEVICE_MISMATCH (stream of another device or backend, device
 * pointer of another device); ACCEL_ERROR_OUT_OF_MEMORY (shared/local memory
 * over the device's limit, including local memory arguments plus
 * shared_bytes whose sum does not fit in a size_t: the message names the
 * operands, never a wrapped sum); ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE.
 * Nothing is queued on failure. Thread-safe. (cuLaunchKernel,
 * hipModuleLaunchKernel, zeCommandListAppendLaunchKernel,
 * clEnqueueNDRangeKernel, urEnqueueKernelLaunch with launch arguments.) */
ACCEL_API accel_status_t accel_launch_kernel(accel_kernel_t kernel,
                                             const accel_launch_config_t* config,
                                             const accel_kernel_arg_t* args, size_t num_args);

/* ------------------------------------------------------------------------ */
/* Backend introspection (diagnostics: what accelctl shows)                   */
/* ------------------------------------------------------------------------ */

/* What became of one plugin candidate or search-path entry. */
typedef enum accel_backend_status {
  ACCEL_BACKEND_AVAILABLE = 0,   /* loaded, at least one device */
  ACCEL_BACKEND_NO_DEVICES = 1,  /* loaded, vendor runtime present, no device */
  ACCEL_BACKEND_UNAVAILABLE = 2, /* loaded, vendor library or driver missing */
  ACCEL_BACKEND_REJECTED = 3,    /* not a valid plugin, or refused by policy */
  ACCEL_BACKEND_DUPLICATE = 4,   /* same file or same backend name as an earlier one */
  ACCEL_BACKEND_STATUS_FORCE_INT32 = 0x7fffffff /* fixes the size; not a status */
} accel_backend_status_t;

/* "available", "no_devices", "unavailable", "rejected", "duplicate"; "unknown"
 * otherwise. Static storage. */
ACCEL_API const char* accel_backend_status_name(accel_backend_status_t status);

/* Plugin capability bits, as declared by the plugin (accel_plugin.h). */
#define ACCEL_CAP_NATIVE_CURRENT_DEVICE (1u << 0)
#define ACCEL_CAP_FORK_SAFE (1u << 1)
#define ACCEL_CAP_TIMING_EVENTS (1u << 2)
#define ACCEL_CAP_HOST_FUNCTIONS (1u << 3)
#define ACCEL_CAP_STREAM_PRIORITIES (1u << 4)
/* Discovery (the plugin's init and device_count) started no vendor thread
 * and left no vendor state that a fork() child cannot use: a child of a
 * process that only counted devices may use the backend. Without it, the
 * core refuses the backend in such a child with ACCEL_ERROR_FORKED. */
#define ACCEL_CAP_DISCOVERY_FORK_SAFE (1u << 5)
/* accel_stream_wait_event accepts an event of another device of the same
 * backend (cuStreamWaitEvent's and torch's Stream.wait_event semantics). */
#define ACCEL_CAP_CROSS_DEVICE_WAIT (1u << 6)
/* The backend fills the native-handle group of ABI 1.1
 * (accel_stream_native_handle and friends, accel_stream_from_native). */
#define ACCEL_CAP_NATIVE_HANDLES (1u << 7)
/* The backend fills the host-memory group (accel_host_malloc and friends). */
#define ACCEL_CAP_HOST_MEMORY (1u << 8)
/* The backend fills the peer group (accel_memcpy_peer_async and peer
 * access queries). Says nothing about direct access between two devices:
 * accel_device_can_access_peer answers that. */
#define ACCEL_CAP_PEER_COPY (1u << 9)
/* The backend answers accel_device_get_attribute. */
#define ACCEL_CAP_DEVICE_ATTRIBUTES (1u << 10)
/* accel_module_load and kernels (ABI 1.2). */
#define ACCEL_CAP_MODULES (1u << 11)
/* The backend replays graphs through the vendor's own graphs (ABI 1.4's
 * graph group) on the devices whose accel_device_properties_t.graphs says
 * "native (...)"; the core records them elsewhere. */
#define ACCEL_CAP_GRAPHS (1u << 12)

typedef struct accel_backend_info_s {
  size_t struct_size; /* set by the caller: sizeof(accel_backend_info_t) */
  const char* name;   /* backend name; "" when the candidate never said */
  const char* path;   /* file (resolved through symlinks) or path entry */
  accel_backend_status_t status;
  const char* reason; /* why that status; "" for plain success */
  uint32_t abi_major; /* plugin's ABI version; 0.0 when unknown */
  uint32_t abi_minor;
  int32_t priority;      /* higher is preferred */
  int32_t device_count;  /* 0 unless loaded */
  uint32_t capabilities; /* ACCEL_CAP_* */
  int32_t is_current;    /* 1 for the current accelerator */
  /* The vendor driver or runtime version, as the plugin words it: one line
   * for people, e.g. "CUDA driver 12.4 (12040)", not meant to be parsed.
   * Never NULL; once non-empty it never changes. "" when unknown: the
   * candidate did not load, its init or device_count failed, its plugin has
   * no runtime_version (ABI 1.0 plugins: abi_minor 0) or could not tell,
   * or the vendor tells only from an initialised runtime and the backend
   * has not been initialised yet (hip: asked again on a later call once an
   * operation initialised it). Written only when struct_size covers the
   * whole member (callers built against an older accel.h never get it). */
  const char* runtime_version;
} accel_backend_info_t;

/* Number of entries recorded by discovery: every plugin candidate found and
 * every search-path entry that was refused, in discovery order. Never fails. */
ACCEL_API size_t accel_backend_count(void);

/* Fills *info for entry `index`. Strings are owned by the library and valid
 * until process exit. Never initialises a backend; it may ask an
 * initialised one for its runtime_version. Thread-safe. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (info NULL or struct_size too small),
 * ACCEL_ERROR_OUT_OF_RANGE (index >= count). */
ACCEL_API accel_status_t accel_get_backend_info(size_t index, accel_backend_info_t* info);

/* ------------------------------------------------------------------------ */
/* Tracing and ranges (docs/tracing.md)                                       */
/* ------------------------------------------------------------------------ */

/* With ACCEL_TRACE=/absolute/path.json in the environment (read once, with
 * secure_getenv, when the library is loaded) accel writes a Chrome
 * trace-event JSON file that Perfetto (ui.perfetto.dev) and chrome://tracing
 * open: a lane per host thread with every public call, a lane per stream
 * with the device-side span of each operation, flow arrows between them,
 * allocator events and memory counters. Without it these functions cost a
 * thread-local update (ranges) or nothing (flush). */

/* Opens a range named `name` on the calling thread, as nvtxRangePushA and
 * torch.cuda.nvtx.range_push do: it shows in the trace as a slice around the
 * calls made until the matching accel_range_pop on the same thread, and is
 * forwarded to NVTX (Nsight Systems) while the cuda backend is current. The
 * name is copied (at most 63 bytes are kept in the trace). Ranges nest, per
 * thread. Thread-safe. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (name NULL);
 * otherwise ACCEL_SUCCESS, also when tracing is off. */
ACCEL_API accel_status_t accel_range_push(const char* name);

/* Closes the calling thread's innermost open range (nvtxRangePop).
 * Thread-safe. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (no range is open on
 * this thread; nothing changes); otherwise ACCEL_SUCCESS. */
ACCEL_API accel_status_t accel_range_pop(void);

/* Writes the trace's pending records to the ACCEL_TRACE file now (exit()
 * does too), after timing the device spans that have completed; spans still
 * running are written by a later flush. The file is complete, valid JSON
 * after every flush. Thread-safe. Statuses: ACCEL_SUCCESS (also when
 * tracing is off, and in a fork child, which never writes its parent's
 * file); ACCEL_ERROR_INTERNAL (the file could not be written: the detail
 * says why). */
ACCEL_API accel_status_t accel_trace_flush(void);

/* 1 when this process is writing a trace (ACCEL_TRACE was accepted and this
 * is not a fork child of the process that opened it), else 0. Never fails. */
ACCEL_API int accel_trace_enabled(void);

/* ------------------------------------------------------------------------ */
/* Graphs: stream capture and replay (docs/graphs.md)                         */
/* ------------------------------------------------------------------------ */

/* CUDA's stream capture (cudaStreamBeginCapture .. cudaGraphLaunch) and
 * torch.accelerator.Graph: the work queued on a capturing stream is
 * recorded instead of run, once, with every argument checked then; a
 * replay re-issues it on a stream without checking again. Every backend
 * records in the core for now (docs/graphs.md says what each call does in
 * a capture). */

/* Which calls a capture refuses in other threads (cudaStreamCaptureMode):
 * GLOBAL (the default, as CUDA's): the unsafe calls of docs/graphs.md
 * (accel_malloc, accel_free, accel_empty_cache, module load and unload on
 * the capturing device) from any thread; THREAD_LOCAL: those calls from the
 * capturing thread only; RELAXED: none of them, only the calls that
 * conflict with every capture (waiting for or querying captured work,
 * pageable copies). */
typedef enum accel_capture_mode {
  ACCEL_CAPTURE_MODE_GLOBAL = 0,
  ACCEL_CAPTURE_MODE_THREAD_LOCAL = 1,
  ACCEL_CAPTURE_MODE_RELAXED = 2,
  ACCEL_CAPTURE_MODE_FORCE_INT32 = 0x7fffffff /* fixes the size; not a mode */
} accel_capture_mode_t;

/* A stream's capture state (cudaStreamCaptureStatus). */
typedef enum accel_capture_status {
  ACCEL_CAPTURE_STATUS_NONE = 0,        /* not capturing */
  ACCEL_CAPTURE_STATUS_ACTIVE = 1,      /* its work is being recorded */
  ACCEL_CAPTURE_STATUS_INVALIDATED = 2, /* capturing, but a refused call
                                           invalidated the capture: end it */
  ACCEL_CAPTURE_STATUS_FORCE_INT32 = 0x7fffffff /* fixes the size */
} accel_capture_status_t;

/* The work of one capture, replayable (cudaGraphExec_t). */
typedef struct accel_graph_s* accel_graph_t;

/* Starts recording the work queued on `stream` (cudaStreamBeginCapture,
 * torch's Graph.capture_begin): from now until accel_stream_end_capture,
 * launches, copies between device memory and pinned or registered host
 * memory, memsets, peer copies, host functions, event records, waits on
 * events and accel_malloc_async/accel_free_async on it are checked as
 * usual and recorded instead of queued. A stream that waits on an event
 * recorded in the capture joins it; it must rejoin `stream` (`stream`
 * waits on an event recorded on it after its last captured work) before
 * the capture ends. `mode` says which calls other threads may still make
 * (accel_capture_mode_t). `pool` names the memory pool the capture's
 * allocations come from: 0 for a new pool of this graph, or a handle from
 * accel_graph_pool_handle or accel_graph_pool of the stream's device
 * (torch's shared pools). Thread-safe.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (stream NULL or destroyed, mode
 * unknown, pool not a live pool handle); ACCEL_ERROR_DEVICE_MISMATCH (pool
 * of another device or backend); ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * (`stream` is a default stream, or already in a capture: nested capture;
 * an existing capture it is in is invalidated); ACCEL_ERROR_FORKED. */
ACCEL_API accel_status_t accel_stream_begin_capture(accel_stream_t stream,
                                                    accel_capture_mode_t mode, uint64_t pool);

/* Ends the capture begun on `stream` (cudaStreamEndCapture): on success
 * *graph is the recorded work (ready to replay: instantiating it is
 * optional) and every stream that joined the capture is released. On any
 * failure but INVALID_ARGUMENT the capture has ended, its streams are
 * released, *graph is NULL and the capture's allocations are freed.
 * Thread-safe. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (stream NULL or
 * destroyed, graph NULL, `stream` did not begin a capture: nothing
 * changes); ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED (a refused call
 * invalidated the capture, or a stream that joined it did not rejoin
 * `stream`: the message names that stream); ACCEL_ERROR_OUT_OF_MEMORY. */
ACCEL_API accel_status_t accel_stream_end_capture(accel_stream_t stream, accel_graph_t* graph);

/* *status is the capture state of `stream`, the origin of a capture or a
 * stream that joined one (cudaStreamIsCapturing). Never refused by a
 * capture. Thread-safe. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (stream
 * NULL or destroyed, status NULL). */
ACCEL_API accel_status_t accel_stream_capture_status(accel_stream_t stream,
                                                     accel_capture_status_t* status);

/* Prepares `graph` for replay (cudaGraphInstantiate, torch's
 * Graph.instantiate). Optional: the first replay does it. Idempotent.
 * Thread-safe. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (graph NULL or
 * destroyed). */
ACCEL_API accel_status_t accel_graph_instantiate(accel_graph_t graph);

/* Queues the recorded work of `graph` on `stream` (cudaGraphLaunch,
 * torch's Graph.replay), NULL meaning the calling thread's current stream
 * of the graph's device. The operations run in capture order, ordered
 * with the stream's other work; each replay reads the pinned host memory
 * its copies read at the time it runs, as CUDA's memcpy nodes do, and
 * uses the arguments copied at capture. Allocations made in the capture
 * have the same address at every replay. Replays of one graph on two
 * streams at once share its pool memory: order them. Thread-safe.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (graph NULL or destroyed, stream
 * destroyed); ACCEL_ERROR_DEVICE_MISMATCH (stream of another device or
 * backend than the graph's); ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED (the
 * stream is capturing: that capture is invalidated); ACCEL_ERROR_FORKED,
 * ACCEL_ERROR_BACKEND_FAILURE (some of the work may have been queued). */
ACCEL_API accel_status_t accel_graph_replay(accel_graph_t graph, accel_stream_t stream);

/* Destroys `graph` (cudaGraphExecDestroy, torch's Graph.reset). Replays
 * already queued still run: the pool memory is released in stream order
 * behind them (never on the host), and its kernels' module stays loaded
 * until no graph holds it. Thread-safe, but destroying a graph while
 * another thread replays it is the caller's race, as with every handle.
 * Statuses: ACCEL_ERROR_INVALID_ARGUMENT (graph NULL or destroyed). */
ACCEL_API accel_status_t accel_graph_destroy(accel_graph_t graph);

/* Writes the recorded work of `graph` to the file `path` as a Graphviz
 * DOT digraph (cudaGraphDebugDotPrint, torch's Graph.debug_dump): one node
 * per operation in capture order, edges for the order the replay keeps.
 * The file is created or truncated. Thread-safe. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (graph NULL or destroyed, path NULL or
 * empty); ACCEL_ERROR_INTERNAL (the file could not be written: the detail
 * says why). */
ACCEL_API accel_status_t accel_graph_debug_dump(accel_graph_t graph, const char* path);

/* *pool is a new memory pool handle of `device` (negative: the current
 * device) to pass to accel_stream_begin_capture, so that several graphs
 * share their memory (torch.accelerator.graph_pool_handle,
 * cudaGraphPoolHandle), valid for the process's life; its memory is held
 * while a capture or graph uses the pool. Never 0. Thread-safe. Statuses:
 * ACCEL_ERROR_INVALID_ARGUMENT (pool NULL),
 * ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_FORKED. */
ACCEL_API accel_status_t accel_graph_pool_handle(int32_t device, uint64_t* pool);

/* *pool is the handle of the memory pool `graph`'s allocations come from
 * (torch's Graph.pool), to share with a capture while a graph uses it.
 * Thread-safe. Statuses: ACCEL_ERROR_INVALID_ARGUMENT (graph NULL or
 * destroyed, pool NULL). */
ACCEL_API accel_status_t accel_graph_pool(accel_graph_t graph, uint64_t* pool);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ACCEL_ACCEL_H */
