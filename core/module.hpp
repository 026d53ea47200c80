// Core-side module and kernel handles (ABI 1.2). Pooled like streams and
// events (handles.hpp): a destroyed handle keeps its slot's memory, so a
// stale one reads as "not live" instead of freed memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "accel/accel_plugin.h"
#include "handles.hpp"

namespace accel::core {

constexpr uint32_t kModuleMagic = 0x4d4f444cu;  // "MODL"
constexpr uint32_t kKernelMagic = 0x4b524e4cu;  // "KRNL"

}  // namespace accel::core

struct accel_kernel_s;

struct accel_module_s {
  std::atomic<uint32_t> magic{0};
  accel::core::Backend* backend = nullptr;
  int32_t device = 0;
  accel_module_format_t format = ACCEL_MODULE_FORMAT_PTX;  // of the image loaded
  accel_plugin_module_t native = nullptr;
  std::mutex kernels_mutex;              // guards kernels
  std::vector<accel_kernel_s*> kernels;  // one per name asked, unique
  accel_module_s* next_free = nullptr;
};

struct accel_kernel_s {
  std::atomic<uint32_t> magic{0};
  // Launches inside accel_launch_kernel past their liveness check: unload
  // marks the kernel dead, then waits for this to drain before it waits
  // for the device, so no launch reaches the plugin after the wait.
  std::atomic<uint32_t> in_flight{0};
  accel_module_s* module = nullptr;
  accel::core::Backend* backend = nullptr;
  int32_t device = 0;
  accel_plugin_kernel_t native = nullptr;
  std::string name;
  // What the launch checks read, asked once at creation.
  int64_t max_threads_per_block = -1;  // -1: unknown (the plugin checks)
  bool params_known = false;           // kernel_get_params answered
  uint32_t param_flags = 0;            // ACCEL_PLUGIN_KERNEL_*
  std::vector<accel_plugin_kernel_param_t> params;
  accel_kernel_s* next_free = nullptr;
};

namespace accel::core {

inline bool live(const accel_module_s* m) {
  return m != nullptr && m->magic.load(std::memory_order_acquire) == kModuleMagic;
}
inline bool live(const accel_kernel_s* k) {
  return k != nullptr && k->magic.load(std::memory_order_acquire) == kKernelMagic;
}

}  // namespace accel::core
