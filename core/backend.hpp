// One discovery entry: a plugin candidate (loaded or not) or a refused
// search-path entry. Entries are created by discovery and never destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "accel/accel.h"
#include "accel/accel_plugin.h"

struct accel_stream_s;

namespace accel::core {

struct DeviceMemory;  // device_memory.hpp

// Per-device bookkeeping owned by the core (not the plugin).
struct DeviceState {
  std::atomic<accel_stream_s*> default_stream{nullptr};
  std::atomic<uint64_t> allocated{0};
  std::atomic<uint64_t> peak{0};
  std::atomic<uint64_t> live_allocations{0};
  std::atomic<uint64_t> total_allocations{0};
  // The allocator of this device, created by the first allocation.
  std::atomic<DeviceMemory*> memory{nullptr};
};

struct Backend {
  // What introspection shows.
  std::string name;
  std::string path;
  accel_backend_status_t status = ACCEL_BACKEND_REJECTED;
  std::string reason;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  int32_t priority = 0;       // as used for the choice (see priority_note)
  std::string priority_note;  // non-empty: the plugin's own priority was lowered, and why
  int32_t device_count = 0;
  uint32_t capabilities = 0;
  // The plugin's runtime_version answer (runtime_version.hpp). Written once,
  // before runtime_version_state becomes kKnown, and never again, so the
  // pointer introspection hands out stays valid until exit.
  std::string runtime_version;
  std::atomic<int> runtime_version_state{0};  // RuntimeVersionState
  std::mutex runtime_version_mutex;

  // The plugin's vtable, copied up to its struct_size into a zeroed table of
  // ours: members it does not have read as NULL ("not supported").
  accel_plugin_api_t api{};
  bool loaded = false;  // entry called and vtable accepted
  void* handle = nullptr;
  accel_host_services_t host{};  // host->host_data points back here

  // Lazy vendor initialisation (lazy_init), once per process.
  std::mutex init_mutex;
  std::atomic<int> init_state{0};  // 0 never, 1 done, 2 failed
  accel_status_t init_status = ACCEL_SUCCESS;
  std::string init_error;

  // Set in a fork() child when the backend is not ACCEL_PLUGIN_CAP_FORK_SAFE
  // and the parent initialised it, or counted its devices without
  // ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE (fork.cpp); forked_reason says which.
  std::atomic<bool> forked{false};
  std::string forked_reason;
  // init and device_count ran (the plugin may have started vendor state).
  bool discovered = false;

  std::unique_ptr<DeviceState[]> devices;  // device_count entries
  std::mutex default_stream_mutex;

  bool native_current_device() const {
    return (capabilities & ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE) != 0;
  }
  bool usable() const { return status == ACCEL_BACKEND_AVAILABLE; }
};

}  // namespace accel::core
