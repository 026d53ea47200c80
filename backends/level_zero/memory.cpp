// Device memory (zeMemAllocDevice on the driver's context), copies and fills
// on the stream's immediate list, the plugin's own allocation registry
// (pointer validation, allocated bytes per device), and mem_get_info.
#include "backend.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

namespace accel::level_zero {

namespace {

struct Allocation {
  size_t bytes = 0;
  Device* dev = nullptr;
};

std::mutex& registry_mutex() {
  static auto* m = new std::mutex();  // never destroyed: used until exit
  return *m;
}
std::map<uintptr_t, Allocation>& registry() {
  static auto* r = new std::map<uintptr_t, Allocation>();
  return *r;
}

// The allocation holding [p, p + bytes), or nullptr.
const Allocation* find(const void* p, size_t bytes, bool* partial) {
  *partial = false;
  auto& reg = registry();
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = reg.upper_bound(a);
  if (it == reg.begin()) return nullptr;
  --it;
  if (a >= it->first + it->second.bytes) return nullptr;
  if (bytes > it->first + it->second.bytes - a) {
    *partial = true;
    return nullptr;
  }
  return &it->second;
}

// Checks a pointer the copy kind says is device memory of the stream's device.
accel_status_t check_device_ptr(const char* op, const char* which, const void* p, size_t bytes,
                                Device* dev) {
  std::lock_guard lock(registry_mutex());
  bool partial = false;
  const Allocation* a = find(p, bytes, &partial);
  if (a == nullptr)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s %p (+%zu bytes) is %s", op, which, p, bytes,
                partial ? "not inside one allocation" : "not level_zero device memory");
  if (a->dev != dev)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH, "%s: %s is memory of %s, the stream is of %s", op,
                which, a->dev->label(), dev->label());
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return guarded("mem_alloc", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    if (ptr == nullptr || bytes == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_alloc: ptr is NULL or bytes is 0");
    ze_device_mem_alloc_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
    desc.ordinal = 0;
    void* p = nullptr;
    ze_result_t r = ze.zeMemAllocDevice(d->driver->context, &desc, bytes, 0, d->handle, &p);
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeMemAllocDevice", r, d->driver->handle);
    try {
      std::lock_guard lock(registry_mutex());
      registry()[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, d};
    } catch (...) {
      ze.zeMemFree(d->driver->context, p);
      throw;
    }
    d->allocated.fetch_add(bytes, std::memory_order_relaxed);
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_free(int32_t device, void* ptr) {
  return guarded("mem_free", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    size_t bytes = 0;
    {
      std::lock_guard lock(registry_mutex());
      auto it = registry().find(reinterpret_cast<uintptr_t>(ptr));
      if (it == registry().end() || it->second.dev != d)
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_free: %p is not a live allocation of %s",
                    ptr, d->label());
      bytes = it->second.bytes;
    }
    ze_result_t r = ze.zeMemFree(d->driver->context, ptr);
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeMemFree", r, d->driver->handle);
    {
      std::lock_guard lock(registry_mutex());
      registry().erase(reinterpret_cast<uintptr_t>(ptr));
    }
    d->allocated.fetch_sub(bytes, std::memory_order_relaxed);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream) {
  return guarded("memcpy_async", [&]() -> accel_status_t {
    auto* s = static_cast<Stream*>(stream);
    if (dst == nullptr || src == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: NULL pointer");
    const bool dst_dev =
        kind == ACCEL_MEMCPY_HOST_TO_DEVICE || kind == ACCEL_MEMCPY_DEVICE_TO_DEVICE;
    const bool src_dev =
        kind == ACCEL_MEMCPY_DEVICE_TO_HOST || kind == ACCEL_MEMCPY_DEVICE_TO_DEVICE;
    if (!dst_dev && !src_dev)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: unknown kind %d",
                  static_cast<int>(kind));
    if (dst_dev) {
      if (auto st = check_device_ptr("memcpy_async", "dst", dst, bytes, s->dev);
          st != ACCEL_SUCCESS)
        return st;
    }
    if (src_dev) {
      if (auto st = check_device_ptr("memcpy_async", "src", src, bytes, s->dev);
          st != ACCEL_SUCCESS)
        return st;
    }
    std::lock_guard lock(s->mu);
    prune_held(s);
    return stream_append(s, "zeCommandListAppendMemoryCopy", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendMemoryCopy(s->list, dst, src, bytes, sig, 0, nullptr);
    });
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&]() -> accel_status_t {
    auto* s = static_cast<Stream*>(stream);
    if (dst == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memset_async: NULL pointer");
    if (auto st = check_device_ptr("memset_async", "dst", dst, bytes, s->dev); st != ACCEL_SUCCESS)
      return st;
    // The pattern lives in static storage: whether a driver reads it at
    // append time or when the fill runs, it is still there.
    static const auto kPatterns = [] {
      std::array<uint8_t, 256> t{};
      for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(i);
      return t;
    }();
    const uint8_t* pattern = &kPatterns[static_cast<uint8_t>(value)];
    std::lock_guard lock(s->mu);
    prune_held(s);
    return stream_append(s, "zeCommandListAppendMemoryFill", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendMemoryFill(s->list, dst, pattern, 1, bytes, sig, 0, nullptr);
    });
  });
}

// Free memory: Sysman (zesMemoryGetState over the device's memory modules)
// when the application enabled it (ZES_ENABLE_SYSMAN=1 before zeInit, which
// loader 1.8 requires for Sysman on core handles) and the driver answers;
// otherwise the total minus what this plugin has allocated on the device.
accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return guarded("mem_get_info", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    uint64_t total = d->total_memory;
    uint64_t allocated = d->allocated.load(std::memory_order_relaxed);
    uint64_t free_mem = total > allocated ? total - allocated : 0;
    const char* sysman = accel::plugin::env("ZES_ENABLE_SYSMAN");
    if (sysman != nullptr && std::strcmp(sysman, "1") == 0 && ze.zesDeviceEnumMemoryModules &&
        ze.zesMemoryGetState) {
      auto sd = reinterpret_cast<zes_device_handle_t>(d->handle);
      uint32_t n = 0;
      ze_result_t r = ze.zesDeviceEnumMemoryModules(sd, &n, nullptr);
      std::vector<zes_mem_handle_t> mods(n);
      if (r == ZE_RESULT_SUCCESS && n > 0) r = ze.zesDeviceEnumMemoryModules(sd, &n, mods.data());
      uint64_t sys_free = 0;
      for (uint32_t i = 0; r == ZE_RESULT_SUCCESS && i < n; ++i) {
        zes_mem_state_t state{};
        state.stype = ZES_STRUCTURE_TYPE_MEM_STATE;
        r = ze.zesMemoryGetState(mods[i], &state);
        if (r == ZE_RESULT_SUCCESS) sys_free += state.free;
      }
      if (r == ZE_RESULT_SUCCESS && n > 0) {
        free_mem = std::min(sys_free, total);
      } else {
        accel::plugin::log(ACCEL_LOG_DEBUG,
                           "%s: Sysman free memory unavailable (%s); using total minus allocated",
                           d->label(),
                           r == ZE_RESULT_SUCCESS ? "no memory modules"
                                                  : vendor_failure("zesMemoryGetState", r).c_str());
      }
    }
    *free_bytes = static_cast<size_t>(free_mem);
    *total_bytes = static_cast<size_t>(total);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::level_zero
