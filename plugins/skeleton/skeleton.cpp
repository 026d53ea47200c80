// skeleton.cpp - the template for a new backend. Copy plugins/skeleton,
// rename "skeleton" and "SKELETON" (see README.md), then replace each body
// with calls into your vendor's library. Built like a third-party plugin
// (accel_plugin.h and accel_plugin_helpers.hpp, nothing of accel linked).
//
// The stand-in: ACCEL_SKELETON_DEVICES devices (default 0, so that a build
// tree with every plugin on the path never selects it by accident), memory
// in host memory, and streams, events and copies that complete before each
// call returns. No host functions, no stream priorities: the vtable leaves
// them NULL and the conformance suite says what it skipped.
#include <accel/accel_plugin.h>
#include <accel/accel_plugin_helpers.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

using accel::plugin::fail;
using accel::plugin::guarded;

constexpr const char* kBackendName = "skeleton";
constexpr const char* kDevicesVar = "ACCEL_SKELETON_DEVICES";
constexpr int32_t kMaxDevices = 16;
constexpr uint64_t kDeviceMemory = 1ull << 30;  // what each device claims to hold
constexpr std::size_t kAlign = 256;  // cuMemAlloc's, so code tested here relies on no less

// A real backend keeps its vendor handles in these (CUstream, CUevent, ...).
struct Stream {
  int32_t device;
};
struct Event {
  int32_t device;
  uint32_t flags;
  std::atomic<int64_t> recorded_ns{0};  // steady clock at the latest record
};

// Written by device_count under the core's discovery lock, before any other
// operation; read-only afterwards.
Stream g_default_streams[kMaxDevices];

// Bodies that can throw (they allocate) run inside guarded(): no exception
// may cross the ABI. The one-liners cannot throw; wrap a body once it can.

// Cheap setup, no vendor context. A real backend loads its library here:
//   static accel::plugin::VendorLibrary lib;
//   accel_status_t st = lib.open("the Foo runtime", {"libfoo.so.1"}, "ACCEL_FOO_LIBRARY");
//   return st != ACCEL_SUCCESS ? st : lib.resolve(kFooSymbols);  // UNAVAILABLE + reason
accel_status_t skeleton_init() noexcept { return ACCEL_SUCCESS; }

accel_status_t skeleton_device_count(int32_t* count) noexcept {
  return guarded("device_count", [&] {
    // Count without creating a context (sysfs, NVML, ...); here, a variable.
    const char* value = accel::plugin::env(kDevicesVar);
    char* end = nullptr;
    const long n = value != nullptr ? std::strtol(value, &end, 10) : 0;
    if (value != nullptr && (*value == '\0' || *end != '\0' || n < 0 || n > kMaxDevices))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s='%s' is not a whole number in [0, %d]",
                  kDevicesVar, value, int(kMaxDevices));
    // No devices is no failure, but say why: accelctl shows it as the reason.
    if (n == 0) fail(ACCEL_SUCCESS, "%s is unset or 0: set it to N for N devices", kDevicesVar);
    for (int32_t d = 0; d < kMaxDevices; ++d) g_default_streams[d].device = d;
    *count = static_cast<int32_t>(n);
    return ACCEL_SUCCESS;
  });
}

accel_status_t skeleton_get_device_properties(int32_t device,
                                              accel_device_properties_t* props) noexcept {
  // The caller's struct may be older (shorter) than ours: write what it holds.
  if (ACCEL_PLUGIN_HOLDS(props, name))
    std::snprintf(props->name, sizeof props->name, "%s device %d", kBackendName, int(device));
  if (ACCEL_PLUGIN_HOLDS(props, vendor))
    std::snprintf(props->vendor, sizeof props->vendor, "accel");
  if (ACCEL_PLUGIN_HOLDS(props, total_memory)) props->total_memory = kDeviceMemory;
  if (ACCEL_PLUGIN_HOLDS(props, compute_units)) props->compute_units = 1;
  if (ACCEL_PLUGIN_HOLDS(props, device_index)) props->device_index = device;
  return ACCEL_SUCCESS;
}

// Nothing is ever left running: a real backend waits for its queues here.
accel_status_t skeleton_device_synchronize(int32_t) noexcept { return ACCEL_SUCCESS; }

accel_status_t skeleton_stream_create(int32_t device, int32_t /*priority: always 0*/,
                                      accel_plugin_stream_t* stream) noexcept {
  return guarded("stream_create", [&] {
    *stream = new Stream{device};  // std::bad_alloc becomes ACCEL_ERROR_OUT_OF_MEMORY
    return ACCEL_SUCCESS;
  });
}

accel_status_t skeleton_stream_destroy(accel_plugin_stream_t stream) noexcept {
  delete static_cast<Stream*>(stream);  // never a default stream (the core checks)
  return ACCEL_SUCCESS;
}

accel_status_t skeleton_default_stream(int32_t device, accel_plugin_stream_t* stream) noexcept {
  *stream = &g_default_streams[device];  // the same handle every time, never destroyed
  return ACCEL_SUCCESS;
}

// Always idle; a real backend answers ACCEL_ERROR_NOT_READY while work is
// queued, and stream_wait_event makes later work wait for the record.
accel_status_t skeleton_stream_query(accel_plugin_stream_t) noexcept { return ACCEL_SUCCESS; }
accel_status_t skeleton_stream_synchronize(accel_plugin_stream_t) noexcept { return ACCEL_SUCCESS; }
accel_status_t skeleton_stream_wait_event(accel_plugin_stream_t, accel_plugin_event_t) noexcept {
  return ACCEL_SUCCESS;
}

accel_status_t skeleton_event_create(int32_t device, uint32_t flags,
                                     accel_plugin_event_t* event) noexcept {
  return guarded("event_create", [&] {
    *event = new Event{device, flags};
    return ACCEL_SUCCESS;
  });
}

accel_status_t skeleton_event_destroy(accel_plugin_event_t event) noexcept {
  delete static_cast<Event*>(event);
  return ACCEL_SUCCESS;
}

// The work before the record is done already, so the record completes now.
accel_status_t skeleton_event_record(accel_plugin_event_t event, accel_plugin_stream_t) noexcept {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  static_cast<Event*>(event)->recorded_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  return ACCEL_SUCCESS;
}

// Complete once recorded (the core answers for never-recorded events).
accel_status_t skeleton_event_query(accel_plugin_event_t) noexcept { return ACCEL_SUCCESS; }
accel_status_t skeleton_event_synchronize(accel_plugin_event_t) noexcept { return ACCEL_SUCCESS; }

// The core has checked that both are recorded, complete and timing-enabled.
accel_status_t skeleton_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                           float* ms) noexcept {
  const int64_t ns =
      static_cast<Event*>(end)->recorded_ns - static_cast<Event*>(start)->recorded_ns;
  *ms = static_cast<float>(static_cast<double>(ns) / 1e6);
  return ACCEL_SUCCESS;
}

// Vendor allocators fail cleanly when a request exceeds the device: so does
// this one, before asking the host for an absurd size. No accounting, hence
// no mem_get_info (the core keeps accel_memory_stats itself).
accel_status_t skeleton_mem_alloc(int32_t device, std::size_t bytes, void** ptr) noexcept {
  void* p = bytes <= kDeviceMemory ? ::operator new (bytes, std::align_val_t{kAlign}, std::nothrow)
                                   : nullptr;
  if (p == nullptr)
    return fail(ACCEL_ERROR_OUT_OF_MEMORY, "mem_alloc: no %zu bytes free on device %d", bytes,
                int(device));
  *ptr = p;
  return ACCEL_SUCCESS;
}

// The core passes only live allocations of `device` made by mem_alloc.
accel_status_t skeleton_mem_free(int32_t, void* ptr) noexcept {
  ::operator delete (ptr, std::align_val_t{kAlign});
  return ACCEL_SUCCESS;
}

// The core has checked the kind and that device ranges lie inside live
// allocations of the stream's device. memmove: ranges may overlap.
accel_status_t skeleton_memcpy_async(void* dst, const void* src, std::size_t bytes,
                                     accel_memcpy_kind_t, accel_plugin_stream_t) noexcept {
  std::memmove(dst, src, bytes);
  return ACCEL_SUCCESS;
}

accel_status_t skeleton_memset_async(void* dst, int value, std::size_t bytes,
                                     accel_plugin_stream_t) noexcept {
  std::memset(dst, static_cast<unsigned char>(value), bytes);
  return ACCEL_SUCCESS;
}

// A real backend asks its driver, without creating a context.
accel_status_t skeleton_runtime_version(char* buf, std::size_t size) noexcept {
  std::snprintf(buf, size, "accel %s %d.%d.%d (host memory)", kBackendName, ACCEL_VERSION_MAJOR,
                ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
  return ACCEL_SUCCESS;
}

// Every member in declaration order; an optional one set to NULL means "not
// supported".
constexpr accel_plugin_api_t kApi = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = kBackendName,
    .priority = 5,  // third parties stay below 100; this one below sim's 10 too
    // No threads, no locks, no vendor state: a fork() child may use it all,
    // and counting only reads a variable.
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_FORK_SAFE |
                    ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE | ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = skeleton_init,
    .device_count = skeleton_device_count,
    .lazy_init = nullptr,  // a real backend initialises its runtime here (cuInit, zeInit)
    .get_device_properties = skeleton_get_device_properties,
    .get_current_device = nullptr,  // no native current device: the core keeps it
    .set_current_device = nullptr,
    .device_synchronize = skeleton_device_synchronize,
    .stream_priority_range = nullptr,  // only priority 0
    .stream_create = skeleton_stream_create,
    .stream_destroy = skeleton_stream_destroy,
    .default_stream = skeleton_default_stream,
    .stream_query = skeleton_stream_query,
    .stream_synchronize = skeleton_stream_synchronize,
    .stream_wait_event = skeleton_stream_wait_event,
    .launch_host_func = nullptr,  // no host functions
    .event_create = skeleton_event_create,
    .event_destroy = skeleton_event_destroy,
    .event_record = skeleton_event_record,
    .event_query = skeleton_event_query,
    .event_synchronize = skeleton_event_synchronize,
    .event_elapsed_time = skeleton_event_elapsed_time,
    .mem_alloc = skeleton_mem_alloc,
    .mem_free = skeleton_mem_free,
    .memcpy_async = skeleton_memcpy_async,
    .memset_async = skeleton_memset_async,
    .mem_get_info = nullptr,  // no accounting (see mem_alloc)
    .runtime_version = skeleton_runtime_version,
    // The ABI 1.1 groups, each all or none (accel_plugin.h): left out here.
    .stream_native_handle = nullptr,
    .event_native_handle = nullptr,
    .device_native_handle = nullptr,
    .stream_from_native = nullptr,  // native handles
    .host_alloc = nullptr,
    .host_free = nullptr,
    .host_register = nullptr,
    .host_unregister = nullptr,  // pinned host memory
    .device_can_access_peer = nullptr,
    .device_enable_peer_access = nullptr,
    .memcpy_peer_async = nullptr,  // peer copies
    .device_get_attribute = nullptr,
    .get_device_capability = nullptr,  // attributes
    // The ABI 1.2 group, all or none too: no modules, so no
    // ACCEL_PLUGIN_CAP_MODULES (docs/writing-a-backend.md: running kernels).
    .module_formats = nullptr,
    .module_load = nullptr,
    .module_unload = nullptr,
    .kernel_create = nullptr,
    .kernel_destroy = nullptr,
    .kernel_get_attributes = nullptr,
    .kernel_get_params = nullptr,
    .launch_kernel = nullptr,
    // ABI 1.3: host memory is no kernel's device memory here; no vendor tools.
    .pointer_get_device = nullptr,
    .stream_set_name = nullptr,
    // ABI 1.4: no native graphs; the core records this backend's graphs.
    .graph_support = nullptr,
    .graph_record_begin = nullptr,
    .graph_record_end = nullptr,
    .graph_launch = nullptr,
    .graph_exec_destroy = nullptr,
};

}  // namespace

// The entry: keeps the core's services for accel::plugin::host(), declines a
// core of another ABI major, returns kApi.
ACCEL_PLUGIN_DEFINE_ENTRY(kApi);
