// Core-side module and kernel handles (ABI 1.2).
//
// Unlike streams and events, these handles are not the addresses of their
// slots: a handle value is (generation << kSlotIndexBits) | slot index, and
// a slot's generation goes up each time it is freed. A stale handle (of an
// unloaded module, or a kernel of one) therefore never equals the handle of
// a newer object in the same slot, and is refused however often the slot
// was reused (CUDA gives the same guarantee for CUmodule/CUfunction
// only until the memory is reused; accel gives it always: a slot would have
// to be reused 2^40 times, on 64-bit systems, for a value to repeat).
// Finding a slot is lock-free: the index picks a chunk, and a chunk once
// made never moves or goes away, so checking a handle is two loads and a
// compare. A value that accel never returned finds no slot or a slot whose
// live handle differs, and is refused without being dereferenced.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "accel/accel_plugin.h"
#include "handles.hpp"

namespace accel::core {

// 2^24 slots of each kind can be live at once; the rest of the value is
// the generation (40 bits on 64-bit systems, 8 on 32-bit ones).
constexpr unsigned kSlotIndexBits = 24;
constexpr uintptr_t kSlotIndexMask = (uintptr_t{1} << kSlotIndexBits) - 1;
constexpr unsigned kSlotChunkBits = 8;  // 256 slots per chunk
constexpr uint32_t kSlotChunkSize = 1u << kSlotChunkBits;
constexpr uint32_t kSlotChunks = 1u << (kSlotIndexBits - kSlotChunkBits);

// Slots of T (which has `handle`, `index`, `generation` and `next_free`),
// in chunks that are never freed: a stale handle reads a slot, never freed
// memory. Index 0 is never used, so no handle is 0 (NULL).
template <typename T>
class SlotTable {
 public:
  constexpr SlotTable() = default;

  // A free slot and the handle value its next object will have; nullptr
  // when 2^24 are live or a chunk could not be allocated.
  T* acquire() {
    std::lock_guard lock(mutex_);
    if (free_ != nullptr) {
      T* t = free_;
      free_ = t->next_free;
      t->next_free = nullptr;
      return t;
    }
    const uint32_t index = next_index_;
    if (index > kSlotIndexMask) return nullptr;
    const uint32_t chunk = index >> kSlotChunkBits;
    T* slots = chunks_[chunk].load(std::memory_order_relaxed);
    if (slots == nullptr) {
      slots = new (std::nothrow) T[kSlotChunkSize];
      if (slots == nullptr) return nullptr;
      for (uint32_t i = 0; i < kSlotChunkSize; ++i) slots[i].index = (chunk << kSlotChunkBits) | i;
      chunks_[chunk].store(slots, std::memory_order_release);
    }
    ++next_index_;
    return &slots[index & (kSlotChunkSize - 1)];
  }

  // Back to the free list; handles of the slot's old object never match
  // again (its generation moves on). The slot must be dead already.
  void release(T* t) {
    std::lock_guard lock(mutex_);
    ++t->generation;
    t->next_free = free_;
    free_ = t;
  }

  // The value a new object in `t` is handed out as.
  static uintptr_t handle_of(const T& t) { return (t.generation << kSlotIndexBits) | t.index; }

  // The slot a handle value names, or nullptr when it names none (not a
  // value accel made). Lock-free; the slot may hold another object or none.
  T* find(const void* handle) const {
    const uintptr_t h = reinterpret_cast<uintptr_t>(handle);
    const uintptr_t index = h & kSlotIndexMask;
    T* slots = chunks_[index >> kSlotChunkBits].load(std::memory_order_acquire);
    if (slots == nullptr || index == 0) [[unlikely]]
      return nullptr;
    return &slots[index & (kSlotChunkSize - 1)];
  }

  // Whether `handle` was ever handed out for its slot: then a handle that
  // is not live was unloaded (or destroyed), not made up.
  bool was_issued(const void* handle) const {
    const T* t = find(handle);
    if (t == nullptr) return false;
    const uintptr_t h = reinterpret_cast<uintptr_t>(handle);
    std::lock_guard lock(mutex_);
    return (h >> kSlotIndexBits) <= (t->generation & (~uintptr_t{0} >> kSlotIndexBits));
  }

 private:
  mutable std::mutex mutex_;
  T* free_ = nullptr;
  uint32_t next_index_ = 1;  // 0 is never a slot
  std::atomic<T*> chunks_[kSlotChunks]{};
};

}  // namespace accel::core

struct accel_kernel_s;

struct accel_module_s {
  // The handle this slot is live as; 0 while the slot is free or dead.
  std::atomic<uintptr_t> handle{0};
  uint32_t index = 0;        // the slot's place in its table, for ever
  uintptr_t generation = 1;  // bumped by each release (SlotTable)
  accel::core::Backend* backend = nullptr;
  int32_t device = 0;
  accel_module_format_t format = ACCEL_MODULE_FORMAT_PTX;  // of the image loaded
  accel_plugin_module_t native = nullptr;
  std::mutex kernels_mutex;              // guards kernels
  std::vector<accel_kernel_s*> kernels;  // one per name asked, unique
  // Graphs (and captures) holding kernels of this module (graph.cpp):
  // accel_module_unload is refused while any does.
  std::atomic<uint32_t> graph_holds{0};
  accel_module_s* next_free = nullptr;
};

struct accel_kernel_s {
  // The handle this slot is live as; 0 while the slot is free or dead.
  std::atomic<uintptr_t> handle{0};
  // Launches inside accel_launch_kernel past their liveness check: unload
  // marks the kernel dead, then waits for this to drain before it waits
  // for the device, so no launch reaches the plugin after the wait.
  std::atomic<uint32_t> in_flight{0};
  uint32_t index = 0;
  uintptr_t generation = 1;
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
  // Some parameter has an INT or FLOAT type (params[i].type): only then do
  // launches that say their arguments' types (config->arg_types) compare them.
  bool param_types_known = false;
  accel_kernel_s* next_free = nullptr;
};

namespace accel::core {

// Whether slot `t` (from SlotTable::find) is live as `handle`.
template <typename T>
inline bool live_as(const T* t, const void* handle,
                    std::memory_order order = std::memory_order_acquire) {
  return t != nullptr && t->handle.load(order) == reinterpret_cast<uintptr_t>(handle);
}

}  // namespace accel::core
