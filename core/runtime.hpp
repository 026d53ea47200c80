// The process-wide runtime: discovery result, the current accelerator, lazy
// vendor initialisation, per-thread state and fork handling.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "handles.hpp"

namespace accel::core {

struct Runtime {
  std::vector<std::unique_ptr<Backend>> entries;
  Backend* current = nullptr;
  std::string selection_reason;
};

// Runs discovery on the first call (from any number of threads at once: one
// discovery, one answer), then returns the same object until process exit.
Runtime& runtime();

// Per-thread state (torch semantics): current device index, and the current
// stream per device of the current accelerator (nullptr: default stream).
struct ThreadState {
  int32_t device = 0;
  std::vector<accel_stream_s*> streams;
};
ThreadState& thread_state();

// The current accelerator, or ACCEL_ERROR_NO_ACCELERATOR naming `fn`.
accel_status_t require_current(const char* fn, Backend*& out);

// Turns an optional device argument into an index of `b`: negative means the
// calling thread's current device; out of range is ACCEL_ERROR_INVALID_DEVICE
// with a message naming the range.
accel_status_t resolve_device(const char* fn, Backend& b, int32_t device, int32_t& out);

// Checks that `b` may be used in this process (fork) and runs its lazy_init
// once. Every operation that reaches a vendor runtime goes through it.
accel_status_t ensure_ready(Backend& b);

// True once lazy_init has succeeded (accel_synchronize skips a backend that
// was never initialised).
inline bool initialised(const Backend& b) { return b.init_state.load(std::memory_order_acquire) == 1; }

// Thread's current device of `b` (vendor's view for native backends).
int32_t current_device(Backend& b);

// Sets the thread's current device of `b`; `device` already validated.
accel_status_t set_current_device(Backend& b, int32_t device, uint32_t flags);

// The default stream handle of `device` (created on first use).
accel_status_t default_stream(Backend& b, int32_t device, accel_stream_s*& out);

// The calling thread's current stream of `device` (ready backend assumed).
accel_status_t current_stream(Backend& b, int32_t device, accel_stream_s*& out);

}  // namespace accel::core
