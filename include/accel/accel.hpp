/*
 * accel.hpp - header-only C++17 layer over accel.h (C++20 works as well).
 *
 * Everything here is a thin inline wrapper: every operation is one or two
 * calls of the C API in accel.h, whose comments are the reference for
 * semantics, units and statuses (this file says only what the C++ layer
 * adds). There is no second implementation and nothing to link but
 * libaccelcore.
 *
 * What the layer adds:
 *  - errors: a failing C call throws accel::Error, which carries the
 *    accel_status_t and the calling thread's accel_last_error() text taken at
 *    the moment of failure;
 *  - ownership: Stream, Event and DeviceBuffer<T> are move-only RAII handles
 *    (destroy/free in the destructor; DeviceBuffer frees in the order of the
 *    stream it was allocated on); DeviceIndexGuard and StreamGuard
 *    restore the calling thread's current device / stream on scope exit,
 *    also when an exception unwinds;
 *  - std::optional<int> where the C API takes "a negative index means the
 *    current device" (an empty optional is torch's None);
 *  - any callable as a host function, HostSpan (a pointer and a count, made
 *    from std::vector, std::array, C arrays and, in C++20, std::span) for
 *    copies, std::chrono::duration for elapsed times.
 *
 * Errors that cannot be thrown (a destructor failing to destroy or restore
 * something, an exception escaping a host function on a backend thread) go
 * to one process-wide handler, set_error_handler(); the default handler
 * writes one line to stderr. Destructors are noexcept.
 *
 * Threading: the free functions and the const member functions are as
 * thread-safe as the C functions they call (all are). One wrapper object must
 * not be moved, assigned or destroyed while another thread uses it, like any
 * C++ object. Current device and current stream are per-thread state, so the
 * guards act on the thread that constructs them and must be destroyed on that
 * thread.
 *
 * Requires C++17, the language of most CUDA, HIP and SYCL code bases; the
 * same calls compile as C++20, where std::span arguments are accepted too.
 * (The README's examples use C++20 designated initialisers; in C++17 write
 * accel::EventOptions{true} for {.enable_timing = true}.)
 * Names follow torch.accelerator and torch.Stream / torch.Event.
 *
 * The file reads as accel.h does, section by section, and holds the surface
 * only: each wrapper's declaration, its comment and, where it is one C call,
 * its body. accel/detail/support.hpp holds the helpers and type traits the
 * wrappers use (accel::detail, not for programs), accel/detail/definitions.hpp
 * the longer bodies (DeviceBuffer<T>'s members among them); both come with
 * this header.
 */
#ifndef ACCEL_ACCEL_HPP
#define ACCEL_ACCEL_HPP

#if __cplusplus < 201703L
#error "accel.hpp needs C++17 or later (-std=c++17); from C or older C++ use accel.h"
#endif

#include <accel/accel.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

/* std::span exists only from C++20 on; HostSpan accepts it there. */
#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#endif

#include <accel/detail/support.hpp>

namespace accel {

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

/* A failed accel call. status() is the C status; message() is the calling
 * thread's accel_last_error() detail at the time of the failure (backend,
 * vendor call, vendor code, valid range), verbatim; what() is
 * "<operation>: <STATUS_NAME>: <detail>", where <detail> is message()
 * without its leading "<operation>: " (accel_last_error() texts start with
 * the function's name), so the operation is named once. Never thrown for
 * ACCEL_ERROR_NOT_READY by query() functions: they return false instead.
 * Immutable after construction: its const members are safe from any
 * thread. */
class Error : public std::runtime_error {
 public:
  Error(accel_status_t status, std::string message, std::string_view operation = {})
      : std::runtime_error(compose(status, message, operation)),
        status_(status),
        message_(std::move(message)),
        operation_(operation) {}

  /* The C status (never ACCEL_SUCCESS). */
  accel_status_t status() const noexcept { return status_; }
  /* "ACCEL_ERROR_INVALID_DEVICE" (accel_status_name). */
  const char* status_name() const noexcept { return accel_status_name(status_); }
  /* The accel_last_error() detail; the generic accel_status_message() text
   * when the library left no detail. */
  const std::string& message() const noexcept { return message_; }
  /* The operation that failed ("accel_stream_create", ...). */
  const std::string& operation() const noexcept { return operation_; }

 private:
  /* "<operation>: <STATUS_NAME>: <detail>" (see above). */
  static std::string compose(accel_status_t status, const std::string& message,
                             std::string_view operation);

  accel_status_t status_;
  std::string message_;
  std::string operation_;
};

/* Turns the status of a C call into the C++ layer's error handling: returns
 * on ACCEL_SUCCESS, otherwise throws Error(status, the calling thread's
 * accel_last_error() detail, or accel_status_message(status) when there is
 * none, operation). Call it right after the C call, on the same thread,
 * before any other accel call replaces the detail; ACCEL_ERROR_NOT_READY is
 * thrown like any failure (test for it before, as the query() members do).
 * For code that mixes accel.h calls with accel.hpp, as
 * C10_CUDA_CHECK(cudaError_t) does for torch:
 *   accel::check(accel_memcpy_async(dst, src, n, kind, s), "accel_memcpy_async"); */
inline void check(accel_status_t status, std::string_view operation = {}) {
  if (status == ACCEL_SUCCESS) return;
  const char* detail = accel_last_error();
  throw Error(status,
              (detail != nullptr && *detail != '\0') ? detail : accel_status_message(status),
              operation);
}

/* Receives errors that cannot be thrown: `context` says where ("~Stream",
 * "host function", ...), `message` what happened. Called on the thread where
 * it happened (a backend thread for host functions); must not throw. */
using ErrorHandler = void (*)(const char* context, const char* message) noexcept;

/* Installs `handler` (nullptr: the default, one line on stderr) and returns
 * the previous one. Thread-safe. */
inline ErrorHandler set_error_handler(ErrorHandler handler) noexcept {
  if (handler == nullptr) handler = &detail::default_error_handler;
  return detail::error_handler_slot().exchange(handler, std::memory_order_acq_rel);
}

/* ------------------------------------------------------------------------ */
/* torch.accelerator                                                          */
/* ------------------------------------------------------------------------ */

/* Library version ("0.1.0"). accel_version. */
inline std::string version() { return accel_version(); }

/* True when a current accelerator exists. Never fails.
 * torch.accelerator.is_available. */
inline bool is_available() noexcept { return accel_is_available() != 0; }

/* Backend name of the current accelerator ("cuda", "sim", ...), or empty
 * when there is none. torch.accelerator.current_accelerator. */
inline std::optional<std::string> current_accelerator() {
  const char* name = accel_current_accelerator();
  if (name == nullptr) return std::nullopt;
  return std::string(name);
}

/* Why the current accelerator is what it is, or why there is none.
 * accel_selection_reason. */
inline std::string selection_reason() { return accel_selection_reason(); }

/* Devices of the current accelerator; 0 when none. Never fails, never
 * creates a vendor context (fork-safe). torch.accelerator.device_count. */
inline int device_count() noexcept { return static_cast<int>(accel_device_count()); }

/* The calling thread's current device index; -1 when no accelerator is
 * available. torch.accelerator.current_device_index. */
inline int current_device_index() noexcept {
  return static_cast<int>(accel_current_device_index());
}

/* Makes `device` the calling thread's current device. Empty or negative: no
 * change (torch's None). Throws Error (ACCEL_ERROR_INVALID_DEVICE,
 * ACCEL_ERROR_NO_ACCELERATOR, ...). torch.accelerator.set_device_index. */
inline void set_device_index(std::optional<int> device) {
  detail::check(accel_set_device_index(detail::c_device(device)), "accel_set_device_index");
}

/* Makes `device` current and returns the index current before (empty or
 * negative: returns the current index and changes nothing).
 * accel_exchange_device. */
inline int exchange_device(std::optional<int> device) {
  int32_t previous = -1;
  detail::check(accel_exchange_device(detail::c_device(device), &previous),
                "accel_exchange_device");
  return static_cast<int>(previous);
}

/* As exchange_device, without creating a vendor context that does not exist
 * yet. accel_maybe_exchange_device. */
inline int maybe_exchange_device(std::optional<int> device) {
  int32_t previous = -1;
  detail::check(accel_maybe_exchange_device(detail::c_device(device), &previous),
                "accel_maybe_exchange_device");
  return static_cast<int>(previous);
}

/* Waits for all work on every stream of `device` (empty: the current
 * device). Returns at once if the backend was never initialised.
 * torch.accelerator.synchronize. */
inline void synchronize(std::optional<int> device = {}) {
  detail::check(accel_synchronize(detail::c_device(device)), "accel_synchronize");
}

/* Stream priorities of a device: 0 is the default, lower is higher priority,
 * so greatest <= 0 <= least. accel_stream_priority_range. */
struct PriorityRange {
  int least = 0;
  int greatest = 0;
};

inline PriorityRange stream_priority_range(std::optional<int> device = {}) {
  int32_t least = 0, greatest = 0;
  detail::check(accel_stream_priority_range(detail::c_device(device), &least, &greatest),
                "accel_stream_priority_range");
  return PriorityRange{static_cast<int>(least), static_cast<int>(greatest)};
}

/* ------------------------------------------------------------------------ */
/* DeviceIndexGuard                                                          */
/* ------------------------------------------------------------------------ */

/* Scoped current device of the calling thread: torch.accelerator.device_index
 * as a C++ scope. The constructor makes `device` current
 * (accel_exchange_device) and remembers the index current before; the
 * destructor makes that index current again (accel_maybe_exchange_device,
 * as torch's __exit__ does), also during exception unwinding. An empty
 * optional or a negative index makes the guard a no-op (torch's None).
 *
 * The constructor throws Error when `device` is invalid (nothing changes
 * then). The destructor never throws: a failed restore goes to the error
 * handler. Not copyable or movable; construct and destroy it on one thread.
 * Guards nest (inner restores to outer's device, outer to the original). */
class DeviceIndexGuard {
 public:
  explicit DeviceIndexGuard(std::optional<int> device) {
    if (!device.has_value() || *device < 0) return;
    int32_t previous = -1;
    detail::check(accel_exchange_device(static_cast<int32_t>(*device), &previous),
                  "accel_exchange_device");
    previous_ = previous;
    active_ = true;
  }

  ~DeviceIndexGuard() noexcept {
    if (!active_ || previous_ < 0) return;
    int32_t ignored = -1;
    detail::report_status("~DeviceIndexGuard: restoring the device",
                          accel_maybe_exchange_device(previous_, &ignored));
  }

  DeviceIndexGuard(const DeviceIndexGuard&) = delete;
  DeviceIndexGuard& operator=(const DeviceIndexGuard&) = delete;
  DeviceIndexGuard(DeviceIndexGuard&&) = delete;
  DeviceIndexGuard& operator=(DeviceIndexGuard&&) = delete;

  /* True when the guard changed the device and will restore it. */
  bool active() const noexcept { return active_; }
  /* The index current before the guard (what the destructor restores); the
   * current index for a no-op guard. */
  int original_device() const noexcept {
    return active_ ? static_cast<int>(previous_) : current_device_index();
  }

 private:
  int32_t previous_ = -1;
  bool active_ = false;
};

/* ------------------------------------------------------------------------ */
/* Streams                                                                    */
/* ------------------------------------------------------------------------ */

class Event;

/* A stream handle (torch.Stream). Owning when made by create(): the
 * destructor calls accel_stream_destroy (queued work still completes; the
 * stream must not be any thread's current stream then). Non-owning when it
 * wraps a stream the library or someone else owns (current(), borrow(),
 * default streams): the destructor does nothing. Move-only; a moved-from
 * Stream holds no handle and every operation on it throws Error
 * (ACCEL_ERROR_INVALID_ARGUMENT). */
class Stream {
 public:
  /* A new stream on `device` (empty: current) with `priority` (0 default,
   * lower is higher priority, clamped into stream_priority_range()).
   * accel_stream_create. */
  static Stream create(std::optional<int> device = {}, int priority = 0) {
    accel_stream_t s = nullptr;
    detail::check(accel_stream_create(detail::c_device(device), static_cast<int32_t>(priority), &s),
                  "accel_stream_create");
    return Stream(s, true);
  }

  /* The calling thread's current stream on `device` (empty: the current
   * device), non-owning; the device's default stream unless set_stream() or
   * a StreamGuard changed it. accel_current_stream /
   * torch.accelerator.current_stream. */
  static Stream current(std::optional<int> device = {}) {
    accel_stream_t s = nullptr;
    detail::check(accel_current_stream(detail::c_device(device), &s), "accel_current_stream");
    return Stream(s, false);
  }

  /* Wraps a C handle without taking ownership. */
  static Stream borrow(accel_stream_t stream) noexcept { return Stream(stream, false); }
  /* Takes ownership of a handle from accel_stream_create. */
  static Stream adopt(accel_stream_t stream) noexcept { return Stream(stream, true); }

  ~Stream() noexcept { reset(); }

  Stream(Stream&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        owning_(std::exchange(other.owning_, false)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
      owning_ = std::exchange(other.owning_, false);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /* A non-owning Stream for the same handle (valid while this one lives). */
  Stream view() const noexcept { return Stream(handle_, false); }

  /* True when all queued work has completed; false while busy. Never
   * blocks. accel_stream_query. */
  bool query() const {
    const accel_status_t st = accel_stream_query(handle_);
    if (st == ACCEL_ERROR_NOT_READY) return false;
    detail::check(st, "accel_stream_query");
    return true;
  }

  /* Blocks until all queued work has completed. accel_stream_synchronize. */
  void synchronize() const {
    detail::check(accel_stream_synchronize(handle_), "accel_stream_synchronize");
  }

  /* Future work on this stream waits for `event`'s current record; the host
   * does not block. The event must be of this stream's backend, and of its
   * device unless the backend declares ACCEL_CAP_CROSS_DEVICE_WAIT (else
   * ACCEL_ERROR_DEVICE_MISMATCH). accel_stream_wait_event. */
  void wait(const Event& event) const;

  /* Future work on this stream waits for all work queued on `other` so far
   * (torch.Stream.wait_stream): records an internal event on `other`'s
   * device and waits for it. Both streams must be of one backend, and of one
   * device unless the backend declares ACCEL_CAP_CROSS_DEVICE_WAIT (else
   * ACCEL_ERROR_DEVICE_MISMATCH, as the C API rules). */
  void wait(const Stream& other) const;

  /* Records `event` on this stream. accel_event_record. */
  void record(Event& event) const;

  /* A new event of this stream's device, recorded here
   * (torch.Stream.record_event). */
  Event record_event(bool enable_timing = false) const;

  /* Queues `fn()` in stream order, run on a backend-owned thread
   * (accel_launch_host_func). `fn` is any callable taking no arguments; it
   * is moved (or copied) into a heap holder that is deleted right after the
   * call. It must not wait on this stream (synchronize it, or an event
   * recorded after it). An exception escaping `fn` is caught on the backend
   * thread and passed to the error handler (set_error_handler); the stream
   * goes on. Throws Error (ACCEL_ERROR_NOT_SUPPORTED when the backend has no
   * host functions, ...); `fn` is then destroyed without being called. */
  template <class F>
  void launch_host_func(F&& fn) const;

  /* Device index of the stream. accel_stream_device. */
  int device() const {
    int32_t d = -1;
    detail::check(accel_stream_device(handle_, &d), "accel_stream_device");
    return static_cast<int>(d);
  }

  /* The (clamped) priority; 0 for default streams. accel_stream_priority. */
  int priority() const {
    int32_t p = 0;
    detail::check(accel_stream_priority(handle_, &p), "accel_stream_priority");
    return static_cast<int>(p);
  }

  /* Names the stream in the trace, the memory snapshot and (on cuda) NVTX:
   * 1 to ACCEL_STREAM_NAME_MAX bytes of printable ASCII; renaming is
   * allowed. Throws Error (ACCEL_ERROR_INVALID_ARGUMENT for an empty, too
   * long or unprintable name, a NUL inside it included; the stream keeps
   * its name). Thread-safe. accel_stream_set_name (NVTX's
   * nvtxNameCuStreamA; torch has no stream names). */
  void set_name(std::string_view name) const {
    if (name.find('\0') != std::string_view::npos) {
      throw Error(ACCEL_ERROR_INVALID_ARGUMENT, "the name holds a NUL byte",
                  "accel_stream_set_name");
    }
    detail::check(accel_stream_set_name(handle_, std::string(name).c_str()),
                  "accel_stream_set_name");
  }

  /* The name set_name gave the stream; "" if never named.
   * accel_stream_get_name. */
  std::string name() const {
    char buf[ACCEL_STREAM_NAME_MAX + 1];
    size_t length = 0;
    detail::check(accel_stream_get_name(handle_, buf, sizeof buf, &length),
                  "accel_stream_get_name");
    return std::string(buf);
  }

  /* The C handle (NULL when moved from); still owned by this object when
   * owns() is true. */
  accel_stream_t handle() const noexcept { return handle_; }
  bool owns() const noexcept { return owning_; }

  /* The vendor queue behind the stream (CUstream, hipStream_t, the Level
   * Zero immediate command list, cl_command_queue: see accel.h's table),
   * borrowed while the stream lives. Work queued on it through the vendor
   * API is ordered with this stream's. accel_stream_native_handle /
   * torch's Stream.native_handle. */
  accel_native_handle_t native_handle() const {
    accel_native_handle_t h{};
    h.struct_size = sizeof h;
    detail::check(accel_stream_native_handle(handle_, &h), "accel_stream_native_handle");
    return h;
  }

  /* An owning accel stream over a vendor queue the program made (the
   * current accelerator's type). The queue stays the program's, and must
   * outlive the returned Stream, unless `take_ownership`: then destroying
   * the Stream destroys the queue. accel_stream_from_native /
   * torch.cuda.ExternalStream. */
  static Stream from_native(const accel_native_handle_t& native, std::optional<int> device = {},
                            bool take_ownership = false) {
    accel_stream_t s = nullptr;
    detail::check(accel_stream_from_native(detail::c_device(device), &native,
                                           take_ownership ? ACCEL_NATIVE_TAKE_OWNERSHIP : 0u, &s),
                  "accel_stream_from_native");
    return Stream(s, true);
  }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  /* Gives up ownership (if any) and returns the handle. */
  accel_stream_t release() noexcept {
    owning_ = false;
    return std::exchange(handle_, nullptr);
  }

  /* Same handle. (!= is spelled out: C++17 does not derive it from ==.) */
  friend bool operator==(const Stream& a, const Stream& b) noexcept {
    return a.handle_ == b.handle_;
  }
  friend bool operator!=(const Stream& a, const Stream& b) noexcept { return !(a == b); }

 private:
  Stream(accel_stream_t handle, bool owning) noexcept : handle_(handle), owning_(owning) {}

  void reset() noexcept {
    accel_stream_t h = std::exchange(handle_, nullptr);
    if (h != nullptr && std::exchange(owning_, false))
      detail::report_status("~Stream: accel_stream_destroy", accel_stream_destroy(h));
    owning_ = false;
  }

  accel_stream_t handle_ = nullptr;
  bool owning_ = false;
};

/* The calling thread's current stream (non-owning). torch.accelerator.current_stream. */
inline Stream current_stream(std::optional<int> device = {}) { return Stream::current(device); }

/* Makes `stream` the calling thread's current stream on its device and that
 * device current. accel_set_stream / torch.accelerator.set_stream. */
inline void set_stream(const Stream& stream) {
  detail::check(accel_set_stream(stream.handle()), "accel_set_stream");
}

/* ------------------------------------------------------------------------ */
/* StreamGuard                                                                */
/* ------------------------------------------------------------------------ */

/* Scoped current stream, like entering a torch.Stream (with c10::StreamGuard's
 * full restore): the constructor makes `stream` the calling thread's current
 * stream on its device and that device current (accel_set_stream); the
 * destructor makes the stream that was current on that device current again
 * and then the device that was current before, also during unwinding.
 * `stream` must outlive the guard. Throws Error from the constructor (nothing
 * changes then); the destructor never throws (failures go to the error
 * handler). Not copyable or movable; one thread. */
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream) {
    const int32_t device = static_cast<int32_t>(stream.device());
    accel_stream_t previous = nullptr;
    detail::check(accel_current_stream(device, &previous), "accel_current_stream");
    const int32_t previous_device = accel_current_device_index();
    detail::check(accel_set_stream(stream.handle()), "accel_set_stream");
    previous_stream_ = previous;
    previous_device_ = previous_device;
  }

  ~StreamGuard() noexcept {
    detail::report_status("~StreamGuard: restoring the stream", accel_set_stream(previous_stream_));
    if (previous_device_ >= 0)
      detail::report_status("~StreamGuard: restoring the device",
                            accel_set_device_index(previous_device_));
  }

  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  StreamGuard(StreamGuard&&) = delete;
  StreamGuard& operator=(StreamGuard&&) = delete;

  /* The device current before the guard. */
  int original_device() const noexcept { return static_cast<int>(previous_device_); }
  /* The stream current on the guarded stream's device before the guard
   * (non-owning). */
  Stream original_stream() const noexcept { return Stream::borrow(previous_stream_); }

 private:
  accel_stream_t previous_stream_ = nullptr;
  int32_t previous_device_ = -1;
};

/* ------------------------------------------------------------------------ */
/* Events                                                                     */
/* ------------------------------------------------------------------------ */

/* Options of Event's constructor (torch.Event(device, enable_timing=...)). */
struct EventOptions {
  /* Record timestamps so elapsed_time() works (ACCEL_EVENT_ENABLE_TIMING). */
  bool enable_timing = false;
  /* Device of the event; empty: the calling thread's current device. */
  std::optional<int> device = std::nullopt;
};

/* A move-only owning event handle (accel_event_create / _destroy). A
 * moved-from Event holds no handle; every operation on it throws Error
 * (ACCEL_ERROR_INVALID_ARGUMENT). */
class Event {
 public:
  /* accel_event_create. Throws Error (ACCEL_ERROR_NOT_SUPPORTED when timing
   * is asked of a backend without timing events, ACCEL_ERROR_INVALID_DEVICE,
   * ...). Usage: accel::Event start({.enable_timing = true}); (C++20) or
   * accel::Event start(accel::EventOptions{true}); (C++17). */
  explicit Event(EventOptions options = {}) {
    detail::check(
        accel_event_create(detail::c_device(options.device),
                           options.enable_timing ? ACCEL_EVENT_ENABLE_TIMING : ACCEL_EVENT_DEFAULT,
                           &handle_),
        "accel_event_create");
    timing_ = options.enable_timing;
  }

  ~Event() noexcept { reset(); }

  Event(Event&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), timing_(other.timing_) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
      timing_ = other.timing_;
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /* Records the event on the current stream of its device
   * (accel_event_record with NULL). */
  void record() { detail::check(accel_event_record(handle_, nullptr), "accel_event_record"); }
  /* Records the event on `stream` (same device and backend, else
   * ACCEL_ERROR_DEVICE_MISMATCH). accel_event_record. */
  void record(const Stream& stream) {
    detail::check(accel_event_record(handle_, stream.handle()), "accel_event_record");
  }

  /* True when the last record has completed or the event was never
   * recorded; false while pending. Never blocks. accel_event_query. */
  bool query() const {
    const accel_status_t st = accel_event_query(handle_);
    if (st == ACCEL_ERROR_NOT_READY) return false;
    detail::check(st, "accel_event_query");
    return true;
  }

  /* Blocks until the last record completes (at once if never recorded).
   * accel_event_synchronize. */
  void synchronize() const {
    detail::check(accel_event_synchronize(handle_), "accel_event_synchronize");
  }

  /* Time from this event's completion to `end`'s, in milliseconds (may be
   * negative). Both need timing, a completed record, one device: else Error
   * with ACCEL_ERROR_EVENT_NO_TIMING, _EVENT_NOT_RECORDED, _NOT_READY or
   * _DEVICE_MISMATCH. accel_event_elapsed_time / torch.Event.elapsed_time. */
  std::chrono::duration<double, std::milli> elapsed_time(const Event& end) const {
    float ms = 0.0f;
    detail::check(accel_event_elapsed_time(handle_, end.handle_, &ms), "accel_event_elapsed_time");
    return std::chrono::duration<double, std::milli>(static_cast<double>(ms));
  }

  /* Device index of the event. accel_event_device. */
  int device() const {
    int32_t d = -1;
    detail::check(accel_event_device(handle_, &d), "accel_event_device");
    return static_cast<int>(d);
  }

  /* Whether the event was created with timing. */
  bool timing_enabled() const noexcept { return timing_; }

  /* The C handle, still owned by this object (NULL when moved from). */
  accel_event_t handle() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  /* Gives up ownership: the caller must accel_event_destroy the handle. */
  accel_event_t release() noexcept { return std::exchange(handle_, nullptr); }

 private:
  void reset() noexcept {
    if (handle_ != nullptr)
      detail::report_status("~Event: accel_event_destroy",
                            accel_event_destroy(std::exchange(handle_, nullptr)));
  }

  accel_event_t handle_ = nullptr;
  bool timing_ = false;
};

/* ------------------------------------------------------------------------ */
/* Memory                                                                     */
/* ------------------------------------------------------------------------ */

/* A view of size() elements of T in host memory: a pointer and a count, the
 * host side of DeviceBuffer's copies (std::span's role, in C++17 too). It
 * owns nothing: the memory must stay valid, and for a copy to the device
 * unchanged, until the copy completes (synchronize its stream or an event
 * recorded after it).
 *
 * Made implicitly from {pointer, count}, a C array, std::vector,
 * std::array, std::string and any contiguous container with data() and
 * size(), from another HostSpan, and in C++20 from std::span. As with
 * std::span, a HostSpan of non-const T (a copy's destination) is made only
 * from an lvalue container or a view, never from a temporary container that
 * would be written and then lost; a DeviceBuffer (device memory) is never
 * accepted. All members are constexpr and noexcept; it is a value type with
 * no thread-safety concerns of its own. */
template <class T>
class HostSpan {
 public:
  using element_type = T;

  /* An empty view (data() is nullptr). */
  constexpr HostSpan() noexcept = default;
  /* `count` elements from `first` (may be nullptr when count is 0). */
  constexpr HostSpan(T* first, std::size_t count) noexcept : data_(first), size_(count) {}
  /* All of `range` (see above for what qualifies). */
  template <class C, std::enable_if_t<detail::is_host_range_for<T, C&&>::value, int> = 0>
  constexpr HostSpan(C&& range) noexcept(noexcept(std::data(range)) && noexcept(std::size(range)))
      : data_(std::data(range)), size_(static_cast<std::size_t>(std::size(range))) {}

  /* First element, element count, size in bytes, emptiness. */
  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  constexpr bool empty() const noexcept { return size_ == 0; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/* A typed, move-only allocation of device memory holding size() elements of
 * T, stream-ordered (accel_malloc_async / accel_free_async, docs/memory.md).
 * T must be trivially copyable: the bytes are moved by memcpy-like copies, no
 * constructor ever runs on the device. data() is a device pointer, not
 * dereferenceable on the host.
 *
 * The buffer belongs to the stream it was allocated on (stream(); by default
 * the calling thread's current stream of its device), and its destructor
 * frees it in that stream's order: the memory is reused only after the work
 * queued there before the destructor has completed, so a buffer may go out
 * of scope, also while an exception unwinds, with copies into it still
 * queued. Work on other streams is covered too when it goes through the
 * buffer's own functions (copies, fill_bytes: they call record_stream());
 * work the program queues elsewhere through data() needs record_stream().
 * With ACCEL_ALLOC_CONF=backend:native the destructor waits for the
 * buffer's stream and frees, which is as safe, only slower.
 *
 * Copies are asynchronous on the given stream (by default the current stream
 * of the buffer's device): host memory must stay valid and unchanged until
 * the copy completes (synchronize the stream or an event recorded after it).
 * The buffer's stream must outlive it (as with cudaFreeAsync); should it be
 * destroyed first, the destructor frees with accel_free, which the core
 * orders after the destroyed stream's work. A size-0 buffer allocates
 * nothing. */
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceBuffer<T> needs a trivially copyable T");

 public:
  using value_type = T;

  /* An empty buffer (no memory). */
  DeviceBuffer() noexcept = default;

  /* `count` elements on `device` (empty: current), uninitialised, on the
   * calling thread's current stream of that device (accel_current_stream,
   * accel_malloc_async). Throws Error (ACCEL_ERROR_OUT_OF_MEMORY,
   * ACCEL_ERROR_INVALID_DEVICE, ...). */
  explicit DeviceBuffer(std::size_t count, std::optional<int> device = {});

  /* `count` elements, uninitialised, on the device of `stream` and
   * belonging to it (accel_malloc_async): work queued on `stream` from now
   * on may use them, and the destructor frees in its order. `stream` must
   * outlive the buffer. Throws Error (ACCEL_ERROR_INVALID_ARGUMENT for a
   * moved-from or destroyed stream, ACCEL_ERROR_OUT_OF_MEMORY, ...).
   * cudaMallocAsync. */
  DeviceBuffer(std::size_t count, const Stream& stream);

  /* Frees in the order of the buffer's stream (accel_free_async); failures
   * go to the error handler. */
  ~DeviceBuffer() noexcept { reset(); }

  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /* Elements, bytes, emptiness. */
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  /* The device pointer (nullptr when empty). */
  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  /* Device the memory lives on (-1 for a default-constructed buffer). */
  int device() const noexcept { return device_; }
  /* The stream the buffer belongs to (non-owning): the one it was allocated
   * on, in whose order the destructor frees it. A Stream holding no handle
   * for a default-constructed buffer and for a size-0 buffer made without a
   * stream. */
  Stream stream() const noexcept { return Stream::borrow(stream_); }

  /* Tells the allocator that work queued on `stream` uses this buffer, so
   * the destructor's free waits for that work too (torch's
   * Tensor.record_stream). Call it after queuing the work: with the caching
   * allocator and a stream of the buffer's device it is accel_record_stream
   * (it covers the work queued on `stream` until the free); with
   * backend:native, and for a stream of another device (a peer copy), it
   * makes the buffer's own stream wait for the work queued on `stream` so
   * far (Stream::wait). Nothing for the buffer's own stream or an empty
   * buffer. The copy functions and fill_bytes call it themselves. Throws
   * Error (ACCEL_ERROR_INVALID_ARGUMENT for a moved-from or destroyed stream,
   * ACCEL_ERROR_DEVICE_MISMATCH for a stream of another backend, ...). */
  void record_stream(const Stream& stream) const;

  /* Queues a host-to-device copy of `src` (a std::vector, std::array, C
   * array, {pointer, count}, std::span in C++20: see HostSpan) into
   * elements [offset, offset + src.size()) on `stream`; offset and size
   * count elements. Asynchronous: `src` must stay valid and unchanged until
   * the stream is synchronized. Throws Error (ACCEL_ERROR_INVALID_ARGUMENT
   * when the range does not fit, ACCEL_ERROR_DEVICE_MISMATCH when the stream
   * is of another device, ...). Thread-safety: as accel_memcpy_async. */
  void copy_from(HostSpan<const T> src, const Stream& stream, std::size_t offset = 0);
  /* As above, on the calling thread's current stream of the buffer's
   * device. */
  void copy_from(HostSpan<const T> src, std::size_t offset = 0) {
    copy_from(src, Stream::current(device_), offset);
  }

  /* Queues a device-to-host copy of elements [offset, offset + dst.size())
   * into `dst` (writable host memory, see HostSpan) on `stream`. `dst` holds
   * the data only once the stream is synchronized. Throws Error as
   * copy_from. */
  void copy_to(HostSpan<T> dst, const Stream& stream, std::size_t offset = 0) const;
  /* As above, on the calling thread's current stream of the buffer's
   * device. */
  void copy_to(HostSpan<T> dst, std::size_t offset = 0) const {
    copy_to(dst, Stream::current(device_), offset);
  }

  /* The same copies from and to `count` elements at a host pointer: (src,
   * count) is HostSpan<const T>(src, count), (dst, count) HostSpan<T>(dst,
   * count), for a bare pointer (a C API's, a HostBuffer's data()). Throw
   * Error as the HostSpan forms. */
  void copy_from(const T* src, std::size_t count, const Stream& stream, std::size_t offset = 0) {
    copy_from(HostSpan<const T>(src, count), stream, offset);
  }
  void copy_from(const T* src, std::size_t count, std::size_t offset = 0) {
    copy_from(HostSpan<const T>(src, count), Stream::current(device_), offset);
  }
  void copy_to(T* dst, std::size_t count, const Stream& stream, std::size_t offset = 0) const {
    copy_to(HostSpan<T>(dst, count), stream, offset);
  }
  void copy_to(T* dst, std::size_t count, std::size_t offset = 0) const {
    copy_to(HostSpan<T>(dst, count), Stream::current(device_), offset);
  }

  /* What no overload above takes ends here, at a static_assert that says
   * what to pass: a range of another element type (accel copies bytes and
   * converts nothing: convert into a std::vector<T> first), a pointer
   * without its count, or a temporary container as copy_to's destination
   * (it would be destroyed before the asynchronous copy writes it). A
   * temporary source is accepted by copy_from: accel_memcpy_async reads a
   * pageable source before it returns (CUDA's rule for cudaMemcpyAsync from
   * pageable memory) and a pinned HostBuffer's block is reused only after
   * the copies queued with it, so the caller may destroy it at once. */
  template <class C, class... Rest,
            std::enable_if_t<detail::is_refused_host_arg<const T, C&&, Rest...>::value, int> = 0>
  void copy_from(C&&, Rest&&...) {
    detail::refuse_host_arg<const T, C&&>();
  }
  template <class C, class... Rest,
            std::enable_if_t<detail::is_refused_host_arg<T, C&&, Rest...>::value, int> = 0>
  void copy_to(C&&, Rest&&...) const {
    detail::refuse_host_arg<T, C&&>();
  }

  /* Queues a copy of all of `src` (same size; any device of the backend:
   * see the overload with offsets) into this buffer. */
  void copy_from(const DeviceBuffer& src, const Stream& stream);

  /* Queues a copy of `count` elements of `src` from element `src_offset`
   * into this buffer from element `offset`, on `stream`; counts and offsets
   * are elements. Between two devices of the backend it is a peer copy
   * (accel_memcpy_peer_async: direct or staged by the backend); the stream
   * may be of either device. Throws Error (ACCEL_ERROR_INVALID_ARGUMENT when
   * a range does not fit, ...). */
  void copy_from(const DeviceBuffer& src, std::size_t src_offset, std::size_t offset,
                 std::size_t count, const Stream& stream);

  /* Queues setting every byte to (unsigned char)value on `stream`.
   * accel_memset_async. */
  void fill_bytes(int value, const Stream& stream);
  void fill_bytes(int value) { fill_bytes(value, Stream::current(device_)); }

  /* Gives up ownership: the caller must free the pointer
   * (accel_free_async(ptr, stream().handle()), or accel_free). */
  T* release() noexcept {
    size_ = 0;
    return std::exchange(ptr_, nullptr);
  }

 private:
  /* Throws Error (ACCEL_ERROR_OUT_OF_MEMORY) when `count` elements overflow
   * size_t bytes. */
  static void check_count(std::size_t count);
  /* accel_malloc_async of `count` elements on `stream`, which the buffer
   * then belongs to. */
  void allocate(std::size_t count, accel_stream_t stream);
  /* Throws Error (ACCEL_ERROR_INVALID_ARGUMENT, named `op`) unless elements
   * [offset, offset + count) lie in the buffer. */
  void check_range(std::size_t offset, std::size_t count, const char* op) const;
  /* Frees the memory in the order of its stream; see the destructor. */
  void reset() noexcept;

  T* ptr_ = nullptr;
  std::size_t size_ = 0;
  int device_ = -1;
  accel_stream_t stream_ = nullptr;  // the stream the memory belongs to
};

/* Allocation statistics counted by accel: what torch.cuda's
 * memory_allocated (allocated_bytes), max_memory_allocated
 * (peak_allocated_bytes), memory_reserved (reserved_bytes) and
 * max_memory_reserved (peak_reserved_bytes) return. Bytes unless named a
 * count; peaks since start or reset_peak_memory_stats(). */
struct MemoryStats {
  std::uint64_t allocated_bytes = 0;      /* bytes currently allocated */
  std::uint64_t peak_allocated_bytes = 0; /* max of allocated_bytes since start or reset */
  std::uint64_t allocation_count = 0;     /* live allocations */
  std::uint64_t total_allocations = 0;    /* successful allocations since start */
  std::uint64_t reserved_bytes = 0;       /* vendor bytes held, allocated or cached */
  std::uint64_t peak_reserved_bytes = 0;  /* max of reserved_bytes since start or reset */
};

/* accel_memory_stats for `device` (empty: current). Does not initialise the
 * backend. */
inline MemoryStats memory_stats(std::optional<int> device = {}) {
  accel_memory_stats_t s{};
  s.struct_size = sizeof s;
  detail::check(accel_memory_stats(detail::c_device(device), &s), "accel_memory_stats");
  return MemoryStats{s.allocated_bytes,   s.peak_allocated_bytes, s.allocation_count,
                     s.total_allocations, s.reserved_bytes,       s.peak_reserved_bytes};
}

/* Sets every peak statistic of `device` (empty: current) to its current
 * value: MemoryStats' peak_allocated_bytes and the ".peak" entries of
 * memory::stats(). accel_reset_peak_memory_stats /
 * torch.accelerator.reset_peak_memory_stats. */
inline void reset_peak_memory_stats(std::optional<int> device = {}) {
  detail::check(accel_reset_peak_memory_stats(detail::c_device(device)),
                "accel_reset_peak_memory_stats");
}

/* Free and total device memory in bytes, as the backend reports it.
 * accel_mem_get_info / torch.cuda.mem_get_info. */
struct MemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

inline MemoryInfo mem_get_info(std::optional<int> device = {}) {
  MemoryInfo info;
  detail::check(accel_mem_get_info(detail::c_device(device), &info.free_bytes, &info.total_bytes),
                "accel_mem_get_info");
  return info;
}

/* ------------------------------------------------------------------------ */
/* The caching allocator (docs/memory.md)                                     */
/* ------------------------------------------------------------------------ */

/* torch.cuda.memory's functions over accel's stream-ordered caching
 * allocator. `device` empty or negative: the calling thread's current
 * device. Thread-safe as the C functions they call; each throws Error on
 * failure (ACCEL_ERROR_NO_ACCELERATOR, ACCEL_ERROR_INVALID_DEVICE, ...). */
namespace memory {

/* Statistics by name, as stats() and host_stats() return them: a std::map
 * whose lookups (operator[] and at()) throw std::out_of_range naming the key
 * when no statistic has that name, so a mistyped name fails instead of
 * reading 0 (std::map's operator[] would insert it). find(), count() and
 * iteration are std::map's. A value type; no thread-safety concerns of its
 * own. */
class StatsMap : public std::map<std::string, std::int64_t> {
 public:
  StatsMap() = default;
  explicit StatsMap(std::map<std::string, std::int64_t> values)
      : std::map<std::string, std::int64_t>(std::move(values)) {}

  /* The value of statistic `name`; throws std::out_of_range
   * ("accel::memory: no statistic named '<name>'") when there is none. */
  std::int64_t operator[](const std::string& name) const { return at(name); }
  const std::int64_t& at(const std::string& name) const {
    const auto it = find(name);
    if (it == end()) throw std::out_of_range("accel::memory: no statistic named '" + name + "'");
    return it->second;
  }
};

/* Every statistic of the allocator of `device`, by name
 * ("allocated_bytes.all.current", "num_ooms", ...: accel.h lists them);
 * bytes or counts as the name says; an unknown name's lookup throws (see
 * StatsMap). Never initialises a backend.
 * accel_memory_stats_list / torch.cuda.memory_stats. */
inline StatsMap stats(std::optional<int> device = {});

/* Returns the cached memory of `device` that no allocation uses to the
 * vendor, after waiting for the streams that last used it; allocations stay
 * valid. accel_empty_cache / torch.cuda.empty_cache. */
inline void empty_cache(std::optional<int> device = {}) {
  detail::check(accel_empty_cache(detail::c_device(device)), "accel_empty_cache");
}

/* The JSON snapshot of `device`'s allocator (segments, blocks, statistics,
 * recorded history; schema in docs/memory.md). The snapshot may grow between
 * asking for its length and writing it, so this asks again (a few times at
 * most) while the C call answers ACCEL_ERROR_OUT_OF_RANGE.
 * accel_memory_snapshot / torch.cuda.memory._snapshot. */
inline std::string snapshot(std::optional<int> device = {});

/* Keeps the last `max_entries` allocator events of every device for
 * snapshot(); 0 stops recording and drops them (at most 1 << 24).
 * accel_record_memory_history / torch.cuda.memory._record_memory_history. */
inline void record_history(std::size_t max_entries) {
  detail::check(accel_record_memory_history(max_entries), "accel_record_memory_history");
}

/* Sets the ".allocated" / ".freed" and num_* statistics of `device` to 0.
 * accel_reset_accumulated_memory_stats /
 * torch.cuda.reset_accumulated_memory_stats. */
inline void reset_accumulated_stats(std::optional<int> device = {}) {
  detail::check(accel_reset_accumulated_memory_stats(detail::c_device(device)),
                "accel_reset_accumulated_memory_stats");
}

/* "caching" or "native" (ACCEL_ALLOC_CONF's backend). Never fails.
 * accel_get_allocator_backend / torch.cuda.get_allocator_backend. */
inline std::string allocator_backend() {
  const char* name = accel_get_allocator_backend();
  return name != nullptr ? name : "";
}

/* Every statistic of the pinned host memory cache (accel_host_malloc), by
 * name ("allocated_bytes.current", "num_host_alloc", ...); an unknown
 * name's lookup throws (see StatsMap).
 * accel_host_memory_stats_list / torch.cuda.host_memory_stats. */
inline StatsMap host_stats();

/* Returns the cached pinned host blocks that no queued copy still uses to
 * the vendor. accel_empty_host_cache / torch.cuda.empty_host_cache. */
inline void empty_host_cache() {
  detail::check(accel_empty_host_cache(), "accel_empty_host_cache");
}

}  // namespace memory

/* ------------------------------------------------------------------------ */
/* Device properties                                                          */
/* ------------------------------------------------------------------------ */

/* accel_device_properties_t with owned strings. */
struct DeviceProperties {
  std::string name;                                 /* "NVIDIA H200" */
  std::string vendor;                               /* "NVIDIA", "AMD", ... */
  std::uint64_t total_memory = 0;                   /* bytes */
  std::optional<std::array<std::uint8_t, 16>> uuid; /* empty when unknown */
  std::string pci_bus_id;                           /* "0000:65:00.0"; "" when unknown */
  std::string architecture;                         /* "sm_90", "gfx90a", ... */
  int compute_units = 0;                            /* 0 when unknown */
  int device_index = -1;
};

/* Properties of `device` (empty: current). Initialises the backend.
 * accel_get_device_properties / torch.cuda.get_device_properties. */
inline DeviceProperties device_properties(std::optional<int> device = {});

/* ------------------------------------------------------------------------ */
/* Device attributes and capability                                           */
/* ------------------------------------------------------------------------ */

/* One device attribute (cudaDeviceGetAttribute's shape), or empty when the
 * backend cannot answer it (ACCEL_ERROR_NOT_SUPPORTED). Throws Error for
 * any other failure. */
inline std::optional<std::int64_t> device_attribute(accel_device_attr_t attr,
                                                    std::optional<int> device = {}) {
  std::int64_t v = 0;
  const accel_status_t st = accel_device_get_attribute(detail::c_device(device), attr, &v);
  if (st == ACCEL_ERROR_NOT_SUPPORTED) return std::nullopt;
  detail::check(st, "accel_device_get_attribute");
  return v;
}

/* torch.accelerator.get_device_capability: the element types the device
 * holds. */
struct DeviceCapability {
  std::uint64_t supported_dtypes = 0; /* ACCEL_DTYPE_BIT of each */
  bool supports(accel_dtype_t dtype) const noexcept {
    return (supported_dtypes & ACCEL_DTYPE_BIT(dtype)) != 0;
  }
};

inline DeviceCapability device_capability(std::optional<int> device = {}) {
  accel_device_capability_t c{};
  c.struct_size = sizeof c;
  detail::check(accel_get_device_capability(detail::c_device(device), &c),
                "accel_get_device_capability");
  return DeviceCapability{c.supported_dtypes};
}

/* ------------------------------------------------------------------------ */
/* Page-locked (pinned) host memory                                           */
/* ------------------------------------------------------------------------ */

/* Move-only owner of `count` elements of page-locked host memory
 * (accel_host_malloc): copies between it and device memory are truly
 * asynchronous. It is a contiguous range (data(), size()), so it converts to
 * HostSpan for DeviceBuffer::copy_from / copy_to. The elements are not
 * initialised. Its destructor calls accel_host_free: with the caching
 * allocator (the default) the block goes back to the pinned host cache,
 * which hands it out again only once the copies queued with it have
 * completed; with ACCEL_ALLOC_CONF=backend:native it is a vendor free at
 * once, so synchronize the copies that use it first (docs/memory.md).
 * torch's pin_memory / cudaMallocHost. */
template <class T>
class HostBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "HostBuffer<T> needs a trivially copyable T");

 public:
  HostBuffer() noexcept = default;
  explicit HostBuffer(std::size_t count) {
    if (count > SIZE_MAX / sizeof(T))
      throw Error(ACCEL_ERROR_OUT_OF_MEMORY, std::to_string(count) + " elements do not fit",
                  "HostBuffer");
    if (count == 0) return;
    void* p = nullptr;
    detail::check(accel_host_malloc(count * sizeof(T), 0, &p), "accel_host_malloc");
    ptr_ = static_cast<T*>(p);
    size_ = count;
  }
  ~HostBuffer() { reset(); }
  HostBuffer(HostBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return ptr_[i]; }
  const T& operator[](std::size_t i) const noexcept { return ptr_[i]; }
  T* begin() noexcept { return ptr_; }
  T* end() noexcept { return ptr_ + size_; }
  const T* begin() const noexcept { return ptr_; }
  const T* end() const noexcept { return ptr_ + size_; }

 private:
  void reset() noexcept {
    if (ptr_ != nullptr)
      detail::report_status("~HostBuffer: accel_host_free",
                            accel_host_free(std::exchange(ptr_, nullptr)));
    size_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

/* What accel knows of a pointer (accel_pointer_get_attributes). */
struct PointerAttributes {
  accel_memory_type_t type = ACCEL_MEMORY_UNKNOWN;
  std::string backend; /* "" when unknown */
  int device = -1;     /* device memory only */
  void* base = nullptr;
  std::size_t size = 0; /* bytes */
};

inline PointerAttributes pointer_attributes(const void* ptr) {
  accel_pointer_attributes_t a{};
  a.struct_size = sizeof a;
  detail::check(accel_pointer_get_attributes(ptr, &a), "accel_pointer_get_attributes");
  return PointerAttributes{a.type, a.backend != nullptr ? a.backend : "", a.device, a.base, a.size};
}

/* ------------------------------------------------------------------------ */
/* Peer access                                                                */
/* ------------------------------------------------------------------------ */

/* Whether `device` can reach `peer`'s memory directly (after
 * enable_peer_access). torch.cuda.can_device_access_peer. */
inline bool can_device_access_peer(int device, int peer) {
  int32_t yes = 0;
  detail::check(accel_device_can_access_peer(device, peer, &yes), "accel_device_can_access_peer");
  return yes != 0;
}

/* accel_device_enable_peer_access (one direction; again is not an error). */
inline void enable_peer_access(int device, int peer) {
  detail::check(accel_device_enable_peer_access(device, peer), "accel_device_enable_peer_access");
}

/* ------------------------------------------------------------------------ */
/* Modules and kernels (accel.h's "Modules and kernels")                      */
/* ------------------------------------------------------------------------ */

/* One kernel image: a format and its bytes. An Image owns a copy of the
 * bytes it is made from, shared by its copies (copying an Image copies no
 * bytes), so the source may die or change at once: a std::vector<Image>
 * made from a std::vector<std::string> of blobs stays valid when the
 * strings are reallocated or destroyed. Image::borrow makes one that only
 * points at bytes the caller keeps alive, unchanged, until Module::load
 * returns (static data, accel_kernels_images). Made by the named
 * constructors. Immutable once made: safe to share between threads. */
class Image {
 public:
  static Image ptx(std::string_view text) { return {ACCEL_MODULE_FORMAT_PTX, text}; }
  static Image cubin(const void* data, std::size_t size) {
    return {ACCEL_MODULE_FORMAT_CUBIN, data, size};
  }
  static Image fatbin(const void* data, std::size_t size) {
    return {ACCEL_MODULE_FORMAT_FATBIN, data, size};
  }
  static Image amd_code_object(const void* data, std::size_t size) {
    return {ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT, data, size};
  }
  static Image spirv(const void* data, std::size_t size) {
    return {ACCEL_MODULE_FORMAT_SPIRV, data, size};
  }
  static Image opencl_c(std::string_view source) { return {ACCEL_MODULE_FORMAT_OPENCL_C, source}; }
  static Image native_binary(const void* data, std::size_t size) {
    return {ACCEL_MODULE_FORMAT_NATIVE_BINARY, data, size};
  }
  static Image sim_host(const void* data, std::size_t size) {
    return {ACCEL_MODULE_FORMAT_SIM_HOST, data, size};
  }
  /* Any format, for images whose format is known only at run time: a copy
   * of `size` bytes at `data`. Throws std::bad_alloc. */
  Image(accel_module_format_t format, const void* data, std::size_t size)
      : Image(format, std::string_view(static_cast<const char*>(data), size)) {}
  /* A copy of the bytes `image` points at. */
  Image(const accel_module_image_t& image)
      : Image(image.format, std::string_view(static_cast<const char*>(image.data), image.size)) {}

  /* An Image that borrows: it copies nothing and points at `image`'s bytes,
   * which must stay valid and unchanged until Module::load returns. */
  static Image borrow(const accel_module_image_t& image) noexcept { return Image(image, 0); }
  static Image borrow(accel_module_format_t format, const void* data, std::size_t size) noexcept {
    return Image(accel_module_image_t{format, data, size}, 0);
  }

  /* The C image: its data points at the owned copy (or the borrowed bytes)
   * and stays valid as long as this Image or a copy of it. */
  const accel_module_image_t& c_image() const noexcept { return image_; }
  /* Whether the Image owns its bytes (false for borrow()). */
  bool owns_bytes() const noexcept { return bytes_ != nullptr; }

 private:
  Image(accel_module_format_t format, std::string_view bytes)
      : bytes_(std::make_shared<const std::string>(bytes)),
        image_{format, bytes_->data(), bytes_->size()} {}
  Image(const accel_module_image_t& image, int /* borrowing */) noexcept : image_(image) {}

  std::shared_ptr<const std::string> bytes_;
  accel_module_image_t image_;
};

/* Local (shared) memory for one block, in bytes: a launch argument that
 * becomes ACCEL_KERNEL_ARG_LOCAL_MEMORY. */
struct LocalMemory {
  std::size_t bytes;
};

/* Grid and block extents; unused dimensions default to 1. */
struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  constexpr Dim3() noexcept = default;
  constexpr Dim3(std::uint32_t x_, std::uint32_t y_ = 1, std::uint32_t z_ = 1) noexcept
      : x(x_), y(y_), z(z_) {}
  constexpr operator accel_dim3_t() const noexcept { return {x, y, z}; }
};

struct KernelAttributes {
  std::int64_t max_threads_per_block = -1;
  std::int64_t static_shared_bytes = -1;
  std::int64_t private_bytes = -1;
  std::int64_t num_registers = -1;
  std::int64_t preferred_block_multiple = -1;
  std::int32_t num_args = -1;
};

/* A kernel of a loaded Module: a plain handle (copyable), valid while its
 * module is loaded. */
class Kernel {
 public:
  Kernel() noexcept = default;
  explicit Kernel(accel_kernel_t handle) noexcept : handle_(handle) {}

  accel_kernel_t handle() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  KernelAttributes attributes() const {
    accel_kernel_attributes_t a{};
    a.struct_size = sizeof a;
    detail::check(accel_kernel_get_attributes(handle_, &a), "accel_kernel_get_attributes");
    return {a.max_threads_per_block, a.static_shared_bytes,      a.private_bytes,
            a.num_registers,         a.preferred_block_multiple, a.num_args};
  }

  /* Queues the kernel on `stream` over `grid` blocks of `block` threads
   * with `args` (kinds deduced from their types: detail::kernel_arg).
   * Throws Error with accel_launch_kernel's status. */
  template <class... Args>
  void launch(Dim3 grid, Dim3 block, const Stream& stream, const Args&... args) const {
    launch_on(grid, block, 0, stream.handle(), args...);
  }
  /* The same with `shared_bytes` of dynamic shared memory per block. */
  template <class... Args>
  void launch(Dim3 grid, Dim3 block, std::size_t shared_bytes, const Stream& stream,
              const Args&... args) const {
    launch_on(grid, block, shared_bytes, stream.handle(), args...);
  }
  /* On the calling thread's current stream of the kernel's device. */
  template <class... Args>
  void launch(Dim3 grid, Dim3 block, const Args&... args) const {
    static_assert(!(std::is_same_v<Args, Stream> || ...),
                  "pass the stream right after the block, not among the arguments");
    launch_on(grid, block, 0, nullptr, args...);
  }

 private:
  template <class... Args>
  void launch_on(Dim3 grid, Dim3 block, std::size_t shared_bytes, accel_stream_t stream,
                 const Args&... args) const {
    accel_launch_config_t config{};
    config.struct_size = sizeof config;
    config.grid = grid;
    config.block = block;
    config.shared_bytes = shared_bytes;
    config.stream = stream;
    if constexpr (sizeof...(Args) == 0) {
      detail::check(accel_launch_kernel(handle_, &config, nullptr, 0), "accel_launch_kernel");
    } else {
      const accel_kernel_arg_t c_args[] = {detail::kernel_arg(args)...};
      // What each argument is, from its C++ type: a backend that knows the
      // parameters' types refuses an int where the kernel takes a float.
      const std::int32_t c_types[] = {detail::kernel_arg_type<Args>...};
      config.arg_types = c_types;
      detail::check(accel_launch_kernel(handle_, &config, c_args, sizeof...(Args)),
                    "accel_launch_kernel");
    }
  }
  template <class Signature>
  friend class TypedKernel;
  accel_kernel_t handle_ = nullptr;
};

/* A Kernel with its parameter types, as a function type:
 *
 *     auto saxpy = module.kernel<void(float, const float*, float*, std::uint32_t)>("saxpy");
 *     saxpy.launch(grid, block, stream, 2, x, y, n);  // 2 is passed as 2.0f
 *
 * launch converts each argument to its declared parameter type at compile
 * time, as CUDA's <<<>>> and hipLaunchKernelGGL do (the implicit conversions
 * of a function call; a DeviceBuffer<T> converts as its T*, an
 * accel::LocalMemory parameter takes an accel::LocalMemory). A wrong number
 * of arguments, or one that does not convert, fails to compile with a
 * static_assert. The signature is the caller's word: where the backend
 * knows the kernel's parameters, accel_launch_kernel also checks it against
 * them at run time (count, kind, size, and integer vs floating-point type).
 * Copyable; valid while its module is loaded. */
template <class Signature>
class TypedKernel {
  static_assert(std::is_void_v<Signature> && !std::is_void_v<Signature>,
                "accel::TypedKernel<Signature>: Signature is a function type returning void, "
                "e.g. void(float, const float*, float*, std::uint32_t)");
};

template <class... Params>
class TypedKernel<void(Params...)> {
  static_assert(!(std::is_reference_v<Params> || ...),
                "accel::TypedKernel: kernel parameters are values or pointers, not references");

 public:
  TypedKernel() noexcept = default;
  explicit TypedKernel(Kernel kernel) noexcept : kernel_(kernel) {}

  /* The untyped kernel (for attributes(), or a launch of bytes as they are). */
  const Kernel& untyped() const noexcept { return kernel_; }
  accel_kernel_t handle() const noexcept { return kernel_.handle(); }
  explicit operator bool() const noexcept { return static_cast<bool>(kernel_); }

  /* Queues the kernel on `stream` over `grid` blocks of `block` threads,
   * each argument converted to its parameter's type. Throws Error with
   * accel_launch_kernel's status. */
  template <class... Args>
  void launch(Dim3 grid, Dim3 block, const Stream& stream, const Args&... args) const {
    launch_on(grid, block, 0, stream.handle(), args...);
  }
  /* The same with `shared_bytes` of dynamic shared memory per block. */
  template <class... Args>
  void launch(Dim3 grid, Dim3 block, std::size_t shared_bytes, const Stream& stream,
              const Args&... args) const {
    launch_on(grid, block, shared_bytes, stream.handle(), args...);
  }
  /* On the calling thread's current stream of the kernel's device. */
  template <class... Args, std::enable_if_t<!(std::is_same_v<Args, Stream> || ...), int> = 0>
  void launch(Dim3 grid, Dim3 block, const Args&... args) const {
    launch_on(grid, block, 0, nullptr, args...);
  }

 private:
  template <class... Args>
  void launch_on(Dim3 grid, Dim3 block, std::size_t shared_bytes, accel_stream_t stream,
                 const Args&... args) const {
    if constexpr (sizeof...(Args) != sizeof...(Params)) {
      static_assert(sizeof...(Args) == sizeof...(Params),
                    "accel::TypedKernel::launch: the number of arguments differs from the "
                    "number of parameters of the kernel's signature");
    } else {
      convert(grid, block, shared_bytes, stream, std::index_sequence_for<Args...>{}, args...);
    }
  }
  template <std::size_t... I, class... Args>
  void convert(Dim3 grid, Dim3 block, std::size_t shared_bytes, accel_stream_t stream,
               std::index_sequence<I...>, const Args&... args) const {
    // The converted values are this call's parameters: they outlive the
    // C launch, which copies them.
    kernel_.launch_on(grid, block, shared_bytes, stream,
                      detail::typed_arg<I, std::remove_cv_t<Params>>(args)...);
  }
  Kernel kernel_;
};

/* A loaded module (move-only; the destructor unloads it, waiting for its
 * device, and sends a failure to the error handler). */
class Module {
 public:
  Module() noexcept = default;
  Module(Module&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  Module& operator=(Module&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() { reset(); }

  /* accel_module_load: the first of `images` that `device` (empty: current)
   * takes and builds. Throws Error (ACCEL_ERROR_NOT_SUPPORTED: no image
   * fits; ACCEL_ERROR_BUILD_FAILED: see build_log()). */
  static Module load(std::initializer_list<Image> images, std::optional<int> device = {},
                     const std::string& options = {}) {
    std::vector<accel_module_image_t> c_images;
    c_images.reserve(images.size());
    for (const Image& i : images) c_images.push_back(i.c_image());
    return load_c(c_images.data(), c_images.size(), device, options);
  }
  static Module load(const std::vector<Image>& images, std::optional<int> device = {},
                     const std::string& options = {}) {
    std::vector<accel_module_image_t> c_images;
    c_images.reserve(images.size());
    for (const Image& i : images) c_images.push_back(i.c_image());
    return load_c(c_images.data(), c_images.size(), device, options);
  }

  /* accel_module_load_file: the first of the files at `paths` that `device`
   * (empty: current) takes and builds, each file's format told from its
   * bytes. Throws Error (its detail names each path and why it was not
   * used: ACCEL_ERROR_INVALID_ARGUMENT when none could be read,
   * ACCEL_ERROR_NOT_SUPPORTED when the device takes none of their formats,
   * ACCEL_ERROR_BUILD_FAILED: see build_log()). */
  static Module load_file(std::initializer_list<std::string> paths,
                          std::optional<int> device = {}, const std::string& options = {});
  static Module load_file(const std::vector<std::string>& paths, std::optional<int> device = {},
                          const std::string& options = {});

  /* The format of the image this module was loaded from
   * (accel_module_format). Throws Error. */
  accel_module_format_t format() const {
    accel_module_format_t f = ACCEL_MODULE_FORMAT_FORCE_INT32;
    detail::check(accel_module_format(handle_, &f), "accel_module_format");
    return f;
  }

  /* The calling thread's last load's build log (accel_module_build_log). */
  static std::string build_log() {
    std::size_t length = 0;
    detail::check(accel_module_build_log(nullptr, 0, &length), "accel_module_build_log");
    std::string log(length + 1, '\0');
    detail::check(accel_module_build_log(log.data(), log.size(), &length),
                  "accel_module_build_log");
    log.resize(std::min(length, log.size() - 1));
    return log;
  }

  /* The kernel `name` (accel_module_get_kernel). Throws Error. */
  Kernel kernel(const char* name) const {
    accel_kernel_t k = nullptr;
    detail::check(accel_module_get_kernel(handle_, name, &k), "accel_module_get_kernel");
    return Kernel(k);
  }
  Kernel kernel(const std::string& name) const { return kernel(name.c_str()); }
  /* The kernel `name` with its parameter types (TypedKernel): `Signature`
   * is a function type returning void, e.g.
   * kernel<void(float, const float*, float*, std::uint32_t)>("saxpy").
   * Throws Error as kernel(name). */
  template <class Signature>
  TypedKernel<Signature> kernel(const char* name) const {
    return TypedKernel<Signature>(kernel(name));
  }
  template <class Signature>
  TypedKernel<Signature> kernel(const std::string& name) const {
    return TypedKernel<Signature>(kernel(name.c_str()));
  }

  accel_module_t handle() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  /* Unloads now (throws Error on failure, the handle is gone either way). */
  void unload() {
    if (handle_ == nullptr) return;
    detail::check(accel_module_unload(std::exchange(handle_, nullptr)), "accel_module_unload");
  }

 private:
  explicit Module(accel_module_t handle) noexcept : handle_(handle) {}
  static Module load_c(const accel_module_image_t* images, std::size_t count,
                       std::optional<int> device, const std::string& options) {
    accel_module_t m = nullptr;
    detail::check(accel_module_load(detail::c_device(device), images, count,
                                    options.empty() ? nullptr : options.c_str(), &m),
                  "accel_module_load");
    return Module(m);
  }
  static Module load_file_c(const std::string* paths, std::size_t count,
                            std::optional<int> device, const std::string& options);
  void reset() noexcept {
    if (handle_ == nullptr) return;
    const accel_status_t st = accel_module_unload(std::exchange(handle_, nullptr));
    if (st != ACCEL_SUCCESS) detail::report_status("~Module", st);
  }
  accel_module_t handle_ = nullptr;
};

/* accel_device_module_formats: the ACCEL_MODULE_FORMAT_BIT mask. */
inline std::uint64_t device_module_formats(std::optional<int> device = {}) {
  std::uint64_t formats = 0;
  detail::check(accel_device_module_formats(detail::c_device(device), &formats),
                "accel_device_module_formats");
  return formats;
}

/* ------------------------------------------------------------------------ */
/* Backend introspection (what accelctl backends shows)                       */
/* ------------------------------------------------------------------------ */

/* One plugin candidate found by discovery (what accelctl backends shows). */
struct BackendInfo {
  std::string name;
  std::string path;
  accel_backend_status_t status = ACCEL_BACKEND_REJECTED;
  std::string reason;
  unsigned abi_major = 0;
  unsigned abi_minor = 0;
  int priority = 0;
  int device_count = 0;
  std::uint32_t capabilities = 0; /* ACCEL_CAP_* */
  bool is_current = false;

  /* "available", "no_devices", ... (accel_backend_status_name). */
  std::string status_name() const { return accel_backend_status_name(status); }
};

/* Every entry recorded by discovery, in discovery order.
 * accel_backend_count / accel_get_backend_info. */
inline std::vector<BackendInfo> backends();

/* ------------------------------------------------------------------------ */
/* Graphs: stream capture and replay (docs/graphs.md)                         */
/* ------------------------------------------------------------------------ */

/* A graph pool handle to share memory between graphs
 * (torch.accelerator.graph_pool_handle). accel_graph_pool_handle. */
inline std::uint64_t graph_pool_handle(std::optional<int> device = {}) {
  std::uint64_t pool = 0;
  detail::check(accel_graph_pool_handle(detail::c_device(device), &pool),
                "accel_graph_pool_handle");
  return pool;
}

/* torch.accelerator.Graph: capture_begin() starts recording a created
 * stream's work, capture_end() ends it and keeps the graph, replay() queues
 * it again. Owns its graph (accel_graph_destroy in reset() and the
 * destructor; replays already queued still complete). Move-only; not
 * thread-safe as an object (a C++ object), though its graph may be replayed
 * from several threads through handle(). Throws Error as the C calls fail
 * (ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED for a default stream or a nested
 * capture, ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED from capture_end() after
 * a refused call: no graph is kept, ...). */
class Graph {
 public:
  Graph() = default;
  ~Graph() noexcept { destroy_noexcept(); }
  Graph(Graph&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)),
        capturing_(std::exchange(other.capturing_, nullptr)) {}
  Graph& operator=(Graph&& other) noexcept {
    if (this != &other) {
      destroy_noexcept();
      graph_ = std::exchange(other.graph_, nullptr);
      capturing_ = std::exchange(other.capturing_, nullptr);
    }
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /* Starts capturing `stream` in `mode`, its allocations from `pool` (0: a
   * new pool; else graph_pool_handle() or another graph's pool()). A graph
   * this object held is destroyed first (torch: capture into a reset
   * graph). accel_stream_begin_capture. */
  void capture_begin(const Stream& stream, accel_capture_mode_t mode = ACCEL_CAPTURE_MODE_GLOBAL,
                     std::uint64_t pool = 0) {
    reset();
    detail::check(accel_stream_begin_capture(stream.handle(), mode, pool),
                  "accel_stream_begin_capture");
    capturing_ = stream.handle();
  }

  /* Ends the capture capture_begin() started and keeps its graph.
   * accel_stream_end_capture. */
  void capture_end() {
    accel_stream_t s = std::exchange(capturing_, nullptr);
    accel_graph_t g = nullptr;
    detail::check(accel_stream_end_capture(s, &g), "accel_stream_end_capture");
    graph_ = g;
  }

  /* Optional: the first replay instantiates. accel_graph_instantiate. */
  void instantiate() const {
    detail::check(accel_graph_instantiate(graph_), "accel_graph_instantiate");
  }

  /* Queues the graph on `stream`. accel_graph_replay. */
  void replay(const Stream& stream) const {
    detail::check(accel_graph_replay(graph_, stream.handle()), "accel_graph_replay");
  }
  /* Queues the graph on the calling thread's current stream of the graph's
   * device. accel_graph_replay with NULL. */
  void replay() const { detail::check(accel_graph_replay(graph_, nullptr), "accel_graph_replay"); }

  /* Destroys the graph (torch's Graph.reset); nothing when there is none.
   * accel_graph_destroy. */
  void reset() {
    if (graph_ != nullptr) {
      detail::check(accel_graph_destroy(graph_), "accel_graph_destroy");
      graph_ = nullptr;
    }
  }

  /* The graph's pool handle, to share with a later capture. accel_graph_pool. */
  std::uint64_t pool() const {
    std::uint64_t p = 0;
    detail::check(accel_graph_pool(graph_, &p), "accel_graph_pool");
    return p;
  }

  /* Writes the graph as Graphviz DOT to `path`. accel_graph_debug_dump. */
  void debug_dump(const std::string& path) const {
    detail::check(accel_graph_debug_dump(graph_, path.c_str()), "accel_graph_debug_dump");
  }

  /* The C handle (NULL before capture_end()); still owned by this object. */
  accel_graph_t handle() const noexcept { return graph_; }

 private:
  void destroy_noexcept() noexcept {
    if (graph_ != nullptr)
      detail::report_status("~Graph: accel_graph_destroy", accel_graph_destroy(graph_));
    graph_ = nullptr;
  }
  accel_graph_t graph_ = nullptr;
  accel_stream_t capturing_ = nullptr;
};

/* Captures `stream` into `graph` for the scope's lifetime
 * (torch.accelerator.graph as a context manager): the constructor calls
 * graph.capture_begin(), the destructor graph.capture_end(). A failing end
 * in the destructor goes to the error handler (the destructor never throws);
 * call end() to get the Error instead. Not copyable or movable; construct
 * and destroy it on one thread. */
class CaptureScope {
 public:
  CaptureScope(Graph& graph, const Stream& stream,
               accel_capture_mode_t mode = ACCEL_CAPTURE_MODE_GLOBAL, std::uint64_t pool = 0)
      : graph_(graph) {
    graph_.capture_begin(stream, mode, pool);
    open_ = true;
  }
  ~CaptureScope() noexcept {
    if (!open_) return;
    try {
      graph_.capture_end();
    } catch (const Error& e) {
      detail::report_status("~CaptureScope: accel_stream_end_capture", e.status());
    }
  }
  /* Ends the capture now; throws Error as Graph::capture_end(). */
  void end() {
    open_ = false;
    graph_.capture_end();
  }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
  CaptureScope(CaptureScope&&) = delete;
  CaptureScope& operator=(CaptureScope&&) = delete;

 private:
  Graph& graph_;
  bool open_ = false;
};

/* ------------------------------------------------------------------------ */
/* Tracing (docs/tracing.md)                                                  */
/* ------------------------------------------------------------------------ */

/* A named range for the scope's lifetime (accel_range_push/accel_range_pop),
 * as torch.cuda.nvtx.range and nvtx3::scoped_range: in the ACCEL_TRACE
 * timeline and, while cuda is current, in Nsight Systems. The constructor
 * throws Error for a NULL name; the destructor never throws. Not copyable
 * or movable; construct and destroy it on one thread (ranges are per
 * thread). */
class ScopedRange {
 public:
  explicit ScopedRange(const char* name) {
    detail::check(accel_range_push(name), "accel_range_push");
  }
  explicit ScopedRange(const std::string& name) : ScopedRange(name.c_str()) {}
  ~ScopedRange() noexcept { detail::report_status("~ScopedRange", accel_range_pop()); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
  ScopedRange(ScopedRange&&) = delete;
  ScopedRange& operator=(ScopedRange&&) = delete;
};

/* accel_trace_flush: write the trace file now. Throws Error when it cannot
 * be written. */
inline void trace_flush() { detail::check(accel_trace_flush(), "accel_trace_flush"); }

/* accel_trace_enabled: whether ACCEL_TRACE is writing a trace. */
inline bool trace_enabled() noexcept { return accel_trace_enabled() != 0; }

}  // namespace accel

#include <accel/detail/definitions.hpp>

#endif /* ACCEL_ACCEL_HPP */
