// memory.cpp - allocations (host memory standing in for device memory),
// pointer validation, async copies and fills, mem_get_info.
#include "backend.hpp"

#include <cstring>
#include <new>

namespace accel::sim {

namespace {

// Mirrors CUDA's alignment guarantee for cuMemAlloc (>= 256 bytes), so code
// tested here does not silently depend on a weaker alignment.
constexpr size_t kAllocAlignment = 256;

// Where a pointer lives among the simulated allocations.
struct Owner {
  int32_t device = -1;  // -1: not inside any live allocation
  uintptr_t base = 0;
  size_t size = 0;
};

// Finds the live allocation of `dev` that contains `p`, if any.
bool find_in_device(Device& dev, uintptr_t p, Owner* out) {
  std::lock_guard<std::mutex> lock(dev.mem_mu);
  auto it = dev.allocations.upper_bound(p);
  if (it == dev.allocations.begin()) return false;
  --it;
  if (p - it->first >= it->second) return false;
  *out = Owner{dev.index, it->first, it->second};
  return true;
}

// Finds the allocation containing `p` on any device, checking `preferred`
// first (the common case). Locks one device at a time, so no lock order.
Owner find_owner(const void* ptr, int32_t preferred) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  State& st = state();
  Owner o;
  if (preferred >= 0 && preferred < st.device_count &&
      find_in_device(*st.devices[static_cast<size_t>(preferred)], p, &o))
    return o;
  for (auto& dev : st.devices) {
    if (dev->index != preferred && find_in_device(*dev, p, &o)) return o;
  }
  return Owner{};
}

// Checks that [ptr, ptr+bytes) lies inside one live allocation of `device`.
// `what` names the argument ("dst", "src") in the message.
accel_status_t check_device_range(const char* op, const char* what, const void* ptr, size_t bytes,
                                  int32_t device) {
  if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, what);
  const Owner o = find_owner(ptr, device);
  if (o.device < 0)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s: %s %p is not inside a live allocation of sim device %d (freed, or never "
                "allocated by this backend)",
                op, what, ptr, static_cast<int>(device));
  if (o.device != device)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                "%s: %s %p is memory of sim device %d but the stream is on sim device %d", op, what,
                ptr, static_cast<int>(o.device), static_cast<int>(device));
  const size_t offset = reinterpret_cast<uintptr_t>(ptr) - o.base;
  if (bytes > o.size - offset)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s: %s range [%p, +%zu) runs %zu bytes past the end of its allocation "
                "(base %p, %zu bytes) on sim device %d",
                op, what, ptr, bytes, bytes - (o.size - offset), reinterpret_cast<void*>(o.base),
                o.size, static_cast<int>(device));
  return ACCEL_SUCCESS;
}

// Checks the host side of a copy: not NULL, and not simulated device memory
// (on a real discrete GPU that would read or write the wrong address space,
// so the simulator reports the wrong copy kind instead of "working").
accel_status_t check_host_ptr(const char* op, const char* what, const void* ptr,
                              const char* kind_name, int32_t device) {
  if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, what);
  const Owner o = find_owner(ptr, device);
  if (o.device >= 0)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s: %s %p of a %s copy is device memory of sim device %d, not host memory "
                "(use ACCEL_MEMCPY_DEVICE_TO_DEVICE for device-to-device copies)",
                op, what, ptr, kind_name, static_cast<int>(o.device));
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return guarded("mem_alloc", [&] {
    if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_alloc: ptr is NULL");
    if (bytes == 0) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_alloc: bytes is 0");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    // ACCEL_SIM_MEMORY may be up to SIZE_MAX: the aligned operator new's
    // rounding must not wrap (see host_alloc).
    size_t rounded = 0;
    if (!accel::plugin::checked_round_up(bytes, kAllocAlignment, &rounded))
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "mem_alloc: %zu bytes do not round up to a multiple of %zu", bytes,
                  kAllocAlignment);

    // Reserve the bytes first so concurrent allocations cannot together
    // exceed the device's capacity; give them back if the host says no.
    {
      std::lock_guard<std::mutex> lock(dev->mem_mu);
      if (bytes > dev->total_memory - dev->allocated)
        return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                    "mem_alloc: %zu bytes requested on sim device %d, %llu of %llu bytes free "
                    "(ACCEL_SIM_MEMORY sets the size)",
                    bytes, static_cast<int>(device),
                    static_cast<unsigned long long>(dev->total_memory - dev->allocated),
                    static_cast<unsigned long long>(dev->total_memory));
      dev->allocated += bytes;
    }
    void* p = ::operator new (bytes, std::align_val_t{kAllocAlignment}, std::nothrow);
    bool recorded = false;
    if (p != nullptr) {
      try {
        std::lock_guard<std::mutex> lock(dev->mem_mu);
        dev->allocations.emplace(reinterpret_cast<uintptr_t>(p), bytes);
        recorded = true;
      } catch (...) {  // map node allocation failed: fall through and undo
      }
    }
    if (!recorded) {
      if (p != nullptr) ::operator delete (p, std::align_val_t{kAllocAlignment});
      std::lock_guard<std::mutex> lock(dev->mem_mu);
      dev->allocated -= bytes;
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "mem_alloc: host allocation of %zu bytes backing sim device %d failed", bytes,
                  static_cast<int>(device));
    }
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_free(int32_t device, void* ptr) {
  return guarded("mem_free", [&] {
    if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_free: ptr is NULL");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(dev->mem_mu);
      auto it = dev->allocations.find(reinterpret_cast<uintptr_t>(ptr));
      if (it != dev->allocations.end()) {
        dev->allocated -= it->second;
        dev->allocations.erase(it);
        found = true;
      }
    }
    if (found) {
      // Once out of the table no new copy can validate against it, so the
      // memory can go back to the host outside the lock.
      ::operator delete (ptr, std::align_val_t{kAllocAlignment});
      return ACCEL_SUCCESS;
    }
    // Not a base of this device: say precisely what it is instead.
    const Owner o = find_owner(ptr, device);
    if (o.device >= 0 && o.device != device)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "mem_free: %p is memory of sim device %d, not of sim device %d", ptr,
                  static_cast<int>(o.device), static_cast<int>(device));
    if (o.device >= 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "mem_free: %p is %zu bytes into the allocation at %p on sim device %d, not its "
                  "start",
                  ptr, static_cast<size_t>(reinterpret_cast<uintptr_t>(ptr) - o.base),
                  reinterpret_cast<void*>(o.base), static_cast<int>(device));
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "mem_free: %p is not a live allocation of sim device %d (already freed, or never "
                "allocated by this backend)",
                ptr, static_cast<int>(device));
  });
}

accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream) {
  return guarded("memcpy_async", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: stream is NULL");
    Stream* s = as_stream(stream);
    const int32_t dev = s->device();
    // Read the enum's bits as an int: in C++ an enum object holding a value
    // outside its declared range (a caller's garbage, legal in C) is UB to
    // load as the enum type, and UBSan would flag the switch itself.
    int raw_kind = 0;
    static_assert(sizeof raw_kind == sizeof kind);
    std::memcpy(&raw_kind, &kind, sizeof raw_kind);
    accel_status_t st = ACCEL_SUCCESS;
    switch (raw_kind) {
      case ACCEL_MEMCPY_HOST_TO_DEVICE:
        st = check_device_range("memcpy_async", "dst", dst, bytes, dev);
        if (st == ACCEL_SUCCESS)
          st = check_host_ptr("memcpy_async", "src", src, "HOST_TO_DEVICE", dev);
        break;
      case ACCEL_MEMCPY_DEVICE_TO_HOST:
        st = check_device_range("memcpy_async", "src", src, bytes, dev);
        if (st == ACCEL_SUCCESS)
          st = check_host_ptr("memcpy_async", "dst", dst, "DEVICE_TO_HOST", dev);
        break;
      case ACCEL_MEMCPY_DEVICE_TO_DEVICE:
        st = check_device_range("memcpy_async", "dst", dst, bytes, dev);
        if (st == ACCEL_SUCCESS) st = check_device_range("memcpy_async", "src", src, bytes, dev);
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: unknown copy kind %d", raw_kind);
    }
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    // memmove: a device-to-device copy within one allocation may overlap.
    return submit(s, "memcpy_async", [dst, src, bytes] { std::memmove(dst, src, bytes); });
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memset_async: stream is NULL");
    Stream* s = as_stream(stream);
    const accel_status_t st = check_device_range("memset_async", "dst", dst, bytes, s->device());
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    const auto byte = static_cast<unsigned char>(value);
    return submit(s, "memset_async", [dst, byte, bytes] { std::memset(dst, byte, bytes); });
  });
}

accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return guarded("mem_get_info", [&] {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    std::lock_guard<std::mutex> lock(dev->mem_mu);
    if (free_bytes != nullptr)
      *free_bytes = static_cast<size_t>(dev->total_memory - dev->allocated);
    if (total_bytes != nullptr) *total_bytes = static_cast<size_t>(dev->total_memory);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::sim

// ---------------------------------------------------------------------------
// Pinned host memory and peer copies (ABI 1.1)
// ---------------------------------------------------------------------------

namespace accel::sim {

namespace {

// Host memory the simulator handed out or was asked to register. Every copy
// of the simulator is a memcpy on a worker thread, so pinned and pageable
// memory behave alike; the table makes host_free and host_unregister check
// what they are given, as a vendor runtime does.
struct HostTable {
  std::mutex mu;
  std::map<uintptr_t, size_t> allocated, registered;
};
HostTable& host_table() {
  static HostTable* t = new HostTable();  // never destroyed, like state()
  return *t;
}

}  // namespace

accel_status_t op_host_alloc(size_t bytes, uint32_t flags, void** ptr) {
  return guarded("host_alloc", [&] {
    if (ptr == nullptr || bytes == 0 || flags != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_alloc: ptr NULL, bytes 0 or flags set");
    // The aligned operator new rounds `bytes` up to the alignment; where
    // that wraps (libstdc++ does not check) it would return a tiny block.
    size_t rounded = 0;
    if (!accel::plugin::checked_round_up(bytes, kAllocAlignment, &rounded))
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "host_alloc: %zu bytes of host memory do not round up to a multiple of %zu",
                  bytes, kAllocAlignment);
    void* p = ::operator new (bytes, std::align_val_t{kAllocAlignment}, std::nothrow);
    if (p == nullptr)
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "host_alloc: %zu bytes of host memory", bytes);
    try {
      std::lock_guard<std::mutex> lock(host_table().mu);
      host_table().allocated.emplace(reinterpret_cast<uintptr_t>(p), bytes);
    } catch (...) {
      ::operator delete (p, std::align_val_t{kAllocAlignment});
      throw;
    }
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_free(void* ptr) {
  return guarded("host_free", [&] {
    {
      std::lock_guard<std::mutex> lock(host_table().mu);
      if (host_table().allocated.erase(reinterpret_cast<uintptr_t>(ptr)) == 0)
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_free: %p is not a sim host allocation",
                    ptr);
    }
    ::operator delete (ptr, std::align_val_t{kAllocAlignment});
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_register(void* ptr, size_t bytes, uint32_t flags) {
  return guarded("host_register", [&] {
    if (ptr == nullptr || bytes == 0 || flags != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_register: ptr NULL, bytes 0 or flags set");
    std::lock_guard<std::mutex> lock(host_table().mu);
    if (!host_table().registered.emplace(reinterpret_cast<uintptr_t>(ptr), bytes).second)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_register: %p is already registered", ptr);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_unregister(void* ptr) {
  return guarded("host_unregister", [&] {
    std::lock_guard<std::mutex> lock(host_table().mu);
    if (host_table().registered.erase(reinterpret_cast<uintptr_t>(ptr)) == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_unregister: %p is not registered", ptr);
    return ACCEL_SUCCESS;
  });
}

// Simulated devices share the host's memory, so a peer copy is one memmove
// on the stream's worker, ordered with the stream's other work.
accel_status_t op_memcpy_peer_async(void* dst, int32_t dst_device, const void* src,
                                    int32_t src_device, size_t bytes,
                                    accel_plugin_stream_t stream) {
  return guarded("memcpy_peer_async", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_peer_async: stream is NULL");
    accel_status_t st = check_device_range("memcpy_peer_async", "dst", dst, bytes, dst_device);
    if (st == ACCEL_SUCCESS)
      st = check_device_range("memcpy_peer_async", "src", src, bytes, src_device);
    if (st != ACCEL_SUCCESS) return st;
    return submit(as_stream(stream), "memcpy_peer_async",
                  [dst, src, bytes] { std::memmove(dst, src, bytes); });
  });
}

}  // namespace accel::sim
