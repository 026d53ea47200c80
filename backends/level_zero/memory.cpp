// Device memory (zeMemAllocDevice on the driver's context), copies and fills
// on the stream's immediate list, the plugin's own allocation registry
// (pointer validation, allocated bytes per device), mem_get_info, pinned
// host memory (zeMemAllocHost) and copies between devices.
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
  return on_device("mem_alloc", device, [&](Device* d) -> accel_status_t {
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
  return on_device("mem_free", device, [&](Device* d) -> accel_status_t {
    // Out of the registry before zeMemFree: once the driver has the memory
    // back, another thread's zeMemAllocDevice (of any device: the registry
    // is keyed by address) may get the same address and register it, and an
    // erase after the free would drop that live allocation instead.
    std::map<uintptr_t, Allocation>::node_type entry;
    {
      std::lock_guard lock(registry_mutex());
      auto it = registry().find(reinterpret_cast<uintptr_t>(ptr));
      if (it == registry().end() || it->second.dev != d)
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_free: %p is not a live allocation of %s",
                    ptr, d->label());
      entry = registry().extract(it);
    }
    const size_t bytes = entry.mapped().bytes;
    ze_result_t r = ze.zeMemFree(d->driver->context, ptr);
    if (r != ZE_RESULT_SUCCESS) {
      std::lock_guard lock(registry_mutex());
      registry().insert(std::move(entry));  // still ours: nothing changes
      return vendor_fail("zeMemFree", r, d->driver->handle);
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
    Queue* q = s->q.get();
    std::lock_guard lock(q->mu);
    prune_held(q);
    return queue_append(q, "zeCommandListAppendMemoryCopy", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendMemoryCopy(q->list, dst, src, bytes, sig, 0, nullptr);
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
    Queue* q = s->q.get();
    std::lock_guard lock(q->mu);
    prune_held(q);
    return queue_append(q, "zeCommandListAppendMemoryFill", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendMemoryFill(q->list, dst, pattern, 1, bytes, sig, 0, nullptr);
    });
  });
}

// Free memory: Sysman (zesMemoryGetState over the device's memory modules)
// when the application enabled it (ZES_ENABLE_SYSMAN=1 before zeInit, which
// loader 1.8 requires for Sysman on core handles) and the driver answers;
// otherwise the total minus what this plugin has allocated on the device.
accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return on_device("mem_get_info", device, [&](Device* d) -> accel_status_t {
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

// ---- pinned host memory -----------------------------------------------------------

namespace {

// Live host_alloc allocations and the context each was made in.
std::map<uintptr_t, Driver*>& host_allocations() {
  static auto* m = new std::map<uintptr_t, Driver*>();
  return *m;
}

}  // namespace

// zeMemAllocHost on the context of the first driver: host memory every
// device of that driver reaches directly, which is every device of the
// backend unless the machine has several Level Zero drivers (devices of the
// others copy from it as from pageable memory).
accel_status_t op_host_alloc(size_t bytes, uint32_t flags, void** ptr) {
  return guarded("host_alloc", [&]() -> accel_status_t {
    if (ptr == nullptr || bytes == 0 || flags != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_alloc: ptr NULL, bytes 0 or flags set");
    if (g_drivers.empty())
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "host_alloc: no Level Zero driver with a device");
    Driver* drv = g_drivers.front();
    ze_host_mem_alloc_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    desc.flags = 0;
    void* p = nullptr;
    ze_result_t r = ze.zeMemAllocHost(drv->context, &desc, bytes, 0, &p);
    if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeMemAllocHost", r, drv->handle);
    try {
      std::lock_guard lock(registry_mutex());
      host_allocations()[reinterpret_cast<uintptr_t>(p)] = drv;
    } catch (...) {
      ze.zeMemFree(drv->context, p);
      throw;
    }
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_free(void* ptr) {
  return guarded("host_free", [&]() -> accel_status_t {
    Driver* drv = nullptr;
    {
      std::lock_guard lock(registry_mutex());
      auto it = host_allocations().find(reinterpret_cast<uintptr_t>(ptr));
      if (it == host_allocations().end())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_free: %p is not a live host_alloc pointer",
                    ptr);
      drv = it->second;
      host_allocations().erase(it);  // before the free: see op_mem_free
    }
    ze_result_t r = ze.zeMemFree(drv->context, ptr);
    if (r != ZE_RESULT_SUCCESS) {
      std::lock_guard lock(registry_mutex());
      host_allocations().emplace(reinterpret_cast<uintptr_t>(ptr), drv);
      return vendor_fail("zeMemFree", r, drv->handle);
    }
    return ACCEL_SUCCESS;
  });
}

// Level Zero has no call that page-locks memory it did not allocate: the
// range is only recorded (by the core), and copies from it work as from any
// pageable memory (the driver stages them).
accel_status_t op_host_register(void* ptr, size_t bytes, uint32_t flags) {
  return guarded("host_register", [&]() -> accel_status_t {
    if (ptr == nullptr || bytes == 0 || flags != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_register: ptr NULL, bytes 0 or flags set");
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_unregister(void* ptr) {
  return guarded("host_unregister", [&]() -> accel_status_t {
    if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_unregister: ptr is NULL");
    return ACCEL_SUCCESS;
  });
}

// ---- copies between devices -------------------------------------------------------

accel_status_t can_access_peer(Device* device, Device* peer, bool* yes) {
  *yes = false;
  if (device->driver != peer->driver) return ACCEL_SUCCESS;  // no shared context
  ze_bool_t v = 0;
  ze_result_t r = ze.zeDeviceCanAccessPeer(device->handle, peer->handle, &v);
  if (r != ZE_RESULT_SUCCESS)
    return vendor_fail("zeDeviceCanAccessPeer", r, device->driver->handle);
  *yes = v != 0;
  return ACCEL_SUCCESS;
}

namespace {

// Appends `append(signal)` to dev's staging list, creating it on first use.
template <class F>
accel_status_t staging_append(Device* dev, const char* call, F&& append) {
  std::lock_guard lock(dev->staging_mu);
  if (dev->staging_list == nullptr) {
    if (accel_status_t st = create_list(dev, ZE_COMMAND_QUEUE_PRIORITY_NORMAL, &dev->staging_list);
        st != ACCEL_SUCCESS)
      return st;
  }
  if (ze_result_t r = append(dev->staging_list); r != ZE_RESULT_SUCCESS)
    return vendor_fail(call, r, dev->driver->handle);
  return ACCEL_SUCCESS;
}

// A copy between device memory of the stream's device `self` and of `other`
// (same driver) that `self` cannot reach: staged through a zeMemAllocHost
// buffer of the context, which both devices reach. `self`'s half runs on
// the stream's list, `other`'s half on other's staging list, and events chain
// the two into the stream's order:
//   self is the source:      list: copy src->buf, signal A
//                            staging(other): wait A, copy buf->dst, signal B
//                            list: wait B, signal last
//   self is the destination: list: signal A (all earlier work done)
//                            staging(other): wait A, copy src->buf, signal B
//                            list: wait B, copy buf->dst, signal last
// Caller holds q->mu.
accel_status_t staged_copy(Queue* q, Device* other, bool self_is_src, void* dst, const void* src,
                           size_t bytes) {
  Device* self = q->dev;
  ze_context_handle_t ctx = self->driver->context;
  ze_host_mem_alloc_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
  void* raw = nullptr;
  ze_result_t r = ze.zeMemAllocHost(ctx, &desc, bytes, 0, &raw);
  if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeMemAllocHost", r, self->driver->handle);
  // Freed once the stream's latest command, appended after both halves, has
  // completed (prune_held); kept while any command may still use it.
  std::shared_ptr<void> buf(raw, [ctx](void* p) { ze.zeMemFree(ctx, p); });
  SlotRef a, b;
  if (accel_status_t st = self->plain_slots->acquire(&a); st != ACCEL_SUCCESS) return st;
  if (accel_status_t st = self->plain_slots->acquire(&b); st != ACCEL_SUCCESS) return st;
  ze_event_handle_t ea = a->ev, eb = b->ev;
  r = self_is_src ? ze.zeCommandListAppendMemoryCopy(q->list, raw, src, bytes, ea, 0, nullptr)
                  : ze.zeCommandListAppendSignalEvent(q->list, ea);
  if (r != ZE_RESULT_SUCCESS)
    return vendor_fail(
        self_is_src ? "zeCommandListAppendMemoryCopy" : "zeCommandListAppendSignalEvent", r,
        self->driver->handle);
  a->armed = true;
  q->held.push_back(buf);
  q->held.push_back(a);
  accel_status_t st =
      staging_append(other, "zeCommandListAppendMemoryCopy", [&](ze_command_list_handle_t staging) {
        return self_is_src ? ze.zeCommandListAppendMemoryCopy(staging, dst, raw, bytes, eb, 1, &ea)
                           : ze.zeCommandListAppendMemoryCopy(staging, raw, src, bytes, eb, 1, &ea);
      });
  if (st != ACCEL_SUCCESS) return st;
  b->armed = true;
  q->held.push_back(b);
  st = queue_append(q, self_is_src ? "zeCommandListAppendBarrier" : "zeCommandListAppendMemoryCopy",
                    [&](ze_event_handle_t sig) {
                      return self_is_src ? ze.zeCommandListAppendBarrier(q->list, sig, 1, &eb)
                                         : ze.zeCommandListAppendMemoryCopy(q->list, dst, raw,
                                                                            bytes, sig, 1, &eb);
                    });
  if (st != ACCEL_SUCCESS) {
    // The staging half may still use the buffer and nothing on the stream
    // waits for it: wait here, on this failure path only, so the buffer is
    // not freed under it.
    ze.zeEventHostSynchronize(eb, UINT64_MAX);
  }
  return st;
}

}  // namespace

// Directly on the stream's list when the stream's device reaches the other
// device's memory (zeDeviceCanAccessPeer: devices of one context need no
// enabling); staged through host memory otherwise (staged_copy).
accel_status_t op_memcpy_peer_async(void* dst, int32_t dst_device, const void* src,
                                    int32_t src_device, size_t bytes,
                                    accel_plugin_stream_t stream) {
  return guarded("memcpy_peer_async", [&]() -> accel_status_t {
    auto* s = static_cast<Stream*>(stream);
    if (s == nullptr || dst == nullptr || src == nullptr || bytes == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_peer_async: NULL argument or 0 bytes");
    Device *dd, *sd;
    if (accel_status_t st = device_at(dst_device, dd); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = device_at(src_device, sd); st != ACCEL_SUCCESS) return st;
    if (s->dev != dd && s->dev != sd)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "memcpy_peer_async: the stream is of %s, neither source %s nor destination %s",
                  s->dev->label(), sd->label(), dd->label());
    if (auto st = check_device_ptr("memcpy_peer_async", "dst", dst, bytes, dd); st != ACCEL_SUCCESS)
      return st;
    if (auto st = check_device_ptr("memcpy_peer_async", "src", src, bytes, sd); st != ACCEL_SUCCESS)
      return st;
    const bool self_is_src = s->dev == sd;
    Device* other = self_is_src ? dd : sd;
    if (other->driver != s->dev->driver)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "memcpy_peer_async: %s and %s belong to different Level Zero drivers, which "
                  "share no context; copy through host memory",
                  sd->label(), dd->label());
    bool direct = false;
    if (accel_status_t st = can_access_peer(s->dev, other, &direct); st != ACCEL_SUCCESS) return st;
    Queue* q = s->q.get();
    std::lock_guard lock(q->mu);
    prune_held(q);
    if (!direct) return staged_copy(q, other, self_is_src, dst, src, bytes);
    return queue_append(q, "zeCommandListAppendMemoryCopy", [&](ze_event_handle_t sig) {
      return ze.zeCommandListAppendMemoryCopy(q->list, dst, src, bytes, sig, 0, nullptr);
    });
  });
}

}  // namespace accel::level_zero

namespace accel::level_zero {

// zeMemGetAllocProperties in each driver's context (Level Zero
// specification, "Memory"): ZE_MEMORY_TYPE_DEVICE is memory of the device
// it names; HOST and SHARED allocations are reachable from every device of
// the context (-1); ZE_MEMORY_TYPE_UNKNOWN, which the call answers with
// success for memory no allocation of the context holds (pageable host
// memory), in every context: ACCEL_ERROR_INVALID_ARGUMENT.
accel_status_t op_pointer_get_device(const void* ptr, int32_t* device_index) {
  return guarded("pointer_get_device", [&]() -> accel_status_t {
    if (ze.zeMemGetAllocProperties == nullptr)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "the Level Zero loader has no zeMemGetAllocProperties");
    for (Driver* drv : g_drivers) {
      if (drv->context == nullptr) continue;
      ze_memory_allocation_properties_t props{};
      props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
      ze_device_handle_t dev = nullptr;
      ze_result_t r = ze.zeMemGetAllocProperties(drv->context, ptr, &props, &dev);
      if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeMemGetAllocProperties", r, drv->handle);
      if (props.type == ZE_MEMORY_TYPE_UNKNOWN) continue;
      if (props.type != ZE_MEMORY_TYPE_DEVICE) {
        *device_index = -1;
        return ACCEL_SUCCESS;
      }
      for (const Device* d : g_devices) {
        if (d->handle == dev) {
          *device_index = d->index;
          return ACCEL_SUCCESS;
        }
      }
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "zeMemGetAllocProperties: %p is device memory of a device the plugin does not "
                  "use",
                  ptr);
    }
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "zeMemGetAllocProperties: %p is no allocation of any Level Zero context "
                "(ZE_MEMORY_TYPE_UNKNOWN)",
                ptr);
  });
}

}  // namespace accel::level_zero
