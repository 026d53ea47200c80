// Availability, current accelerator, device count, current device index and
// its exchange functions, device synchronize and properties
// (torch.accelerator's module-level functions).
#include <algorithm>
#include <cstring>

#include "callbacks.hpp"
#include "checks.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "host_services.hpp"
#include "log.hpp"
#include "runtime.hpp"
#include "stream_sanitizer.hpp"

using namespace accel::core;

namespace {

// Shared by exchange and maybe_exchange; `flags` tells a native backend
// whether it may create a context.
accel_status_t exchange(const char* fn, int32_t device, int32_t* previous, uint32_t flags) {
  if (previous == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: previous is NULL", fn);
  Backend* b = nullptr;
  if (auto st = require_current(fn, b); st != ACCEL_SUCCESS) return st;
  int32_t before = current_device(*b);
  if (device < 0 || device == before) {
    *previous = before;
    return ACCEL_SUCCESS;
  }
  int32_t target = 0;
  if (auto st = resolve_device(fn, *b, device, target); st != ACCEL_SUCCESS) return st;
  if (auto st = set_current_device(*b, target, flags); st != ACCEL_SUCCESS) return st;
  *previous = before;
  return ACCEL_SUCCESS;
}

// exchange's whole job when the core owns the current device and the
// arguments are valid: two thread-local accesses. False: take the full path
// (which also reports the error).
inline bool fast_exchange(int32_t device, int32_t* previous) {
  Backend* b = fast_current();
  if (b == nullptr || previous == nullptr || device >= b->device_count) [[unlikely]]
    return false;
  HotThread& h = t_hot;
  *previous = h.device;
  if (device >= 0) h.device = device;
  return true;
}

// The full paths behind the fast ones below, kept out of line so that the
// public entry points stay leaf functions without a stack frame.
[[gnu::noinline]] accel_status_t set_device_index_full(int32_t device) {
  const char* const fn = "accel_set_device_index";
  return guarded(fn, [&] {
    Backend* b = nullptr;
    if (auto st = require_current(fn, b); st != ACCEL_SUCCESS) return st;
    if (device < 0) return ACCEL_SUCCESS;  // torch's None
    int32_t target = 0;
    if (auto st = resolve_device(fn, *b, device, target); st != ACCEL_SUCCESS) return st;
    return set_current_device(*b, target, 0);
  });
}

[[gnu::noinline]] accel_status_t exchange_full(const char* fn, int32_t device, int32_t* previous,
                                               uint32_t flags) {
  return guarded(fn, [&] { return exchange(fn, device, previous, flags); });
}

}  // namespace

extern "C" {

const char* accel_last_error(void) { return last_error(); }

void accel_clear_last_error(void) { clear_last_error(); }

static inline int impl_is_available(void) {
  try {
    return runtime().current != nullptr ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// Out of line, so the fast path below keeps its arguments in registers.
[[gnu::cold, gnu::noinline]] static int traced_accel_is_available(void) {
  return traced_plain("accel_is_available", [&] { return impl_is_available(); },
                      [](auto) { return ACCEL_SUCCESS; });
}

int accel_is_available(void) {
  if (trace_on()) [[unlikely]]
    return traced_accel_is_available();
  return impl_is_available();
}

const char* accel_current_accelerator(void) {
  try {
    Backend* b = runtime().current;
    return b != nullptr ? b->name.c_str() : nullptr;
  } catch (...) {
    return nullptr;
  }
}

const char* accel_selection_reason(void) {
  try {
    return runtime().selection_reason.c_str();
  } catch (...) {
    return "discovery failed: host memory exhausted";
  }
}

static inline int32_t impl_device_count(void) {
  try {
    Backend* b = runtime().current;
    return b != nullptr ? b->device_count : 0;
  } catch (...) {
    return 0;
  }
}

// Out of line, so the fast path below keeps its arguments in registers.
[[gnu::cold, gnu::noinline]] static int32_t traced_accel_device_count(void) {
  return traced_plain("accel_device_count", [&] { return impl_device_count(); },
                      [](auto) { return ACCEL_SUCCESS; });
}

int32_t accel_device_count(void) {
  if (trace_on()) [[unlikely]]
    return traced_accel_device_count();
  return impl_device_count();
}

// accel_current_device_index's path when the fast one is closed: a backend
// with native device state, before discovery, or while tracing (which never
// opens the fast paths, so that they need no flag check of their own).
static int32_t current_device_index_full() {
  try {
    Backend* b = runtime().current;
    return b != nullptr ? current_device(*b) : -1;
  } catch (...) {
    return -1;
  }
}

[[gnu::noinline]] static int32_t current_device_index_slow() {
  if (trace_on()) [[unlikely]] {
    return traced_plain("accel_current_device_index", [] { return current_device_index_full(); },
                        [](int32_t r) { return r < 0 ? ACCEL_ERROR_NO_ACCELERATOR : ACCEL_SUCCESS; });
  }
  return current_device_index_full();
}

int32_t accel_current_device_index(void) {
  if (fast_current() != nullptr) [[likely]]
    return t_hot.device;
  return current_device_index_slow();
}

accel_status_t accel_set_device_index(int32_t device) {
  if (Backend* b = fast_current(); b != nullptr && device >= 0 && device < b->device_count)
      [[likely]] {
    t_hot.device = device;
    return ACCEL_SUCCESS;
  }
  return set_device_index_full(device);
}

accel_status_t accel_exchange_device(int32_t device, int32_t* previous) {
  if (fast_exchange(device, previous)) [[likely]]
    return ACCEL_SUCCESS;
  return exchange_full(__func__, device, previous, 0);
}

accel_status_t accel_maybe_exchange_device(int32_t device, int32_t* previous) {
  if (fast_exchange(device, previous)) [[likely]]
    return ACCEL_SUCCESS;
  return exchange_full(__func__, device, previous, ACCEL_PLUGIN_SET_DEVICE_MAYBE);
}

accel_status_t accel_synchronize(int32_t device) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    if (auto st = require_current(fn, b); st != ACCEL_SUCCESS) return st;
    // torch: synchronizing a backend that was never initialised is a no-op
    // and must not initialise it (in a fork() child too: nothing ran). Only
    // the index is checked: resolving -1 would ask a native-device backend
    // (CUDA, HIP) for its current device, which initialises it.
    if (!initialised(*b)) {
      if (device >= b->device_count) {
        int32_t ignored = 0;
        return resolve_device(fn, *b, device, ignored);  // the out-of-range message
      }
      return ACCEL_SUCCESS;
    }
    int32_t target = 0;
    if (auto st = resolve_device(fn, *b, device, target); st != ACCEL_SUCCESS) return st;
    if (const HostCall* call = running_host_call();
        call != nullptr && call->backend == b && call->device == target) [[unlikely]] {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: called from a host function running on a stream of {} device {}; "
                   "synchronizing the device would wait for the host function itself to finish "
                   "and never return",
                   fn, b->name, target);
    }
    if (auto st = ensure_ready(*b); st != ACCEL_SUCCESS) return st;
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_device_capture(fn, b, target); st != ACCEL_SUCCESS) return st;
    }
    auto st =
        call_plugin(*b, "device_synchronize", [&] { return b->api.device_synchronize(target); });
    if (sanitizer::on() && st == ACCEL_SUCCESS) [[unlikely]]
      sanitizer::on_device_synchronize();
    return st;
  });
}

accel_status_t accel_get_device_properties(int32_t device, accel_device_properties_t* props) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_sized_struct(fn, props, "props", "accel_device_properties_t");
        st != ACCEL_SUCCESS)
      return st;
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    // The plugin fills a full, zeroed struct of this build; the caller gets
    // as many bytes as its struct_size asks for.
    accel_device_properties_t full{};
    full.struct_size = sizeof full;
    auto st = call_plugin(*b, "get_device_properties",
                          [&] { return b->api.get_device_properties(target, &full); });
    if (st != ACCEL_SUCCESS) return st;
    full.name[sizeof full.name - 1] = '\0';
    full.vendor[sizeof full.vendor - 1] = '\0';
    full.pci_bus_id[sizeof full.pci_bus_id - 1] = '\0';
    full.architecture[sizeof full.architecture - 1] = '\0';
    full.device_index = target;
    describe_graph_support(*b, target, full.graphs, sizeof full.graphs);
    copy_sized_struct(props, full);
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
