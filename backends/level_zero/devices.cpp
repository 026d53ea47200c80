// Devices after discovery: the lookup every operation uses, lazy_init (one
// context per driver), properties, and device_synchronize. Level Zero has no
// current device: the core keeps the per-thread index.
#include "backend.hpp"

#include <algorithm>
#include <functional>
#include <cstring>

namespace accel::level_zero {

accel_status_t device_at(int32_t device_index, Device*& out) noexcept {
  const size_t count = g_devices.size();
  if (device_index < 0 || static_cast<size_t>(device_index) >= count)
    return fail(ACCEL_ERROR_INVALID_DEVICE, "device %d is out of range [0, %zu)",
                static_cast<int>(device_index), count);
  out = g_devices[static_cast<size_t>(device_index)];
  return ACCEL_SUCCESS;
}

accel_status_t op_lazy_init() {
  return guarded("lazy_init", [&]() -> accel_status_t {
    for (Driver* drv : g_drivers) {
      if (drv->context != nullptr) continue;
      ze_context_desc_t desc{};
      desc.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
      ze_context_handle_t ctx = nullptr;
      ze_result_t r = ze.zeContextCreate(drv->handle, &desc, &ctx);
      if (r != ZE_RESULT_SUCCESS) return vendor_fail("zeContextCreate", r, drv->handle);
      drv->context = ctx;
    }
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return on_device("get_device_properties", device, [&](Device* d) -> accel_status_t {
    if (props == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "get_device_properties: props is NULL");
    auto copy = [](char* dst, size_t cap, const std::string& src) {
      size_t n = std::min(cap - 1, src.size());
      std::memcpy(dst, src.data(), n);
      dst[n] = '\0';
    };
    copy(props->name, sizeof props->name, d->props.name);
    copy(props->vendor, sizeof props->vendor,
         d->props.vendorId == 0x8086 ? std::string("Intel")
                                     : format("vendor 0x%04x", d->props.vendorId));
    props->total_memory = d->total_memory;
    static_assert(sizeof props->uuid <= sizeof d->props.uuid.id, "uuid size");
    std::memcpy(props->uuid, d->props.uuid.id, sizeof props->uuid);
    bool any = false;
    for (uint8_t b : props->uuid) any = any || b != 0;
    props->has_uuid = any ? 1 : 0;
    props->pci_bus_id[0] = '\0';
    if (ze.zeDevicePciGetPropertiesExt != nullptr) {
      ze_pci_ext_properties_t pci{};
      pci.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES;
      ze_result_t r = ze.zeDevicePciGetPropertiesExt(d->handle, &pci);
      if (r == ZE_RESULT_SUCCESS) {
        copy(props->pci_bus_id, sizeof props->pci_bus_id,
             format("%04x:%02x:%02x.%x", pci.address.domain, pci.address.bus, pci.address.device,
                    pci.address.function));
      } else {
        accel::plugin::log(
            ACCEL_LOG_DEBUG, "%s: no PCI address: %s", d->label(),
            vendor_failure("zeDevicePciGetPropertiesExt", r, d->driver->handle).c_str());
      }
    }
    // The IP version (ZE_extension_device_ip_version) is Intel's GMD ID:
    // architecture [31:22], release [21:14], revision [5:0]. Without it the
    // PCI device id is what identifies the part.
    if (d->ip_version != 0) {
      uint32_t v = d->ip_version;
      copy(props->architecture, sizeof props->architecture,
           format("%u.%u.%u", v >> 22, (v >> 14) & 0xffu, v & 0x3fu));
    } else {
      copy(props->architecture, sizeof props->architecture,
           format("device id 0x%04x", d->props.deviceId));
    }
    uint64_t eus = static_cast<uint64_t>(d->props.numSlices) * d->props.numSubslicesPerSlice *
                   d->props.numEUsPerSubslice;
    props->compute_units = static_cast<int32_t>(std::min<uint64_t>(eus, INT32_MAX));
    props->device_index = device;
    return ACCEL_SUCCESS;
  });
}

// Waits for the latest command of every stream of the device, the default
// stream and dying streams included (and, on lists the program holds, for a
// marker after its own commands).
accel_status_t op_device_synchronize(int32_t device) {
  return on_device("device_synchronize", device, [&](Device* d) -> accel_status_t {
    std::vector<SlotRef> lasts;
    {
      std::lock_guard lock(d->mu);  // order: device, then queue
      std::vector<Queue*> seen;
      for (Stream* s : d->streams) {
        Queue* q = s->q.get();
        if (std::find(seen.begin(), seen.end(), q) != seen.end()) continue;
        seen.push_back(q);
        std::lock_guard slock(q->mu);
        SlotRef last;
        if (accel_status_t st = queue_fence(q, &last); st != ACCEL_SUCCESS) return st;
        if (last) lasts.push_back(std::move(last));
      }
    }
    for (const SlotRef& l : lasts) {
      if (accel_status_t st = wait_slot(l); st != ACCEL_SUCCESS) return st;
    }
    return ACCEL_SUCCESS;
  });
}

// ---- native handle, peers ------------------------------------------------------

accel_status_t op_device_native_handle(int32_t device, accel_native_handle_t* out) {
  return on_device("device_native_handle", device, [&](Device* d) -> accel_status_t {
    if (out == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_native_handle: out is NULL");
    // Every device of a driver shares its one context; Level Zero names
    // devices by handle (ordinal -1).
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_LEVEL_ZERO, d->handle,
                                             d->driver->context, -1);
  });
}

accel_status_t op_device_can_access_peer(int32_t device, int32_t peer, int32_t* can_access) {
  return on_device_pair(
      "device_can_access_peer", device, peer, [&](Device* a, Device* b) -> accel_status_t {
        if (can_access == nullptr)
          return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_can_access_peer: can_access is NULL");
        bool yes = false;
        if (accel_status_t st = can_access_peer(a, b, &yes); st != ACCEL_SUCCESS) return st;
        *can_access = yes ? 1 : 0;
        return ACCEL_SUCCESS;
      });
}

// Level Zero has nothing to enable: devices of one context that can reach
// each other's memory (zeDeviceCanAccessPeer) just do.
accel_status_t op_device_enable_peer_access(int32_t device, int32_t peer) {
  return on_device_pair(
      "device_enable_peer_access", device, peer, [&](Device* a, Device* b) -> accel_status_t {
        bool yes = false;
        if (accel_status_t st = can_access_peer(a, b, &yes); st != ACCEL_SUCCESS) return st;
        if (yes) return ACCEL_SUCCESS;
        if (a->driver != b->driver)
          return fail(ACCEL_ERROR_NOT_SUPPORTED,
                      "device_enable_peer_access: %s and %s belong to different Level Zero drivers "
                      "(no shared context)",
                      a->label(), b->label());
        return fail(
            ACCEL_ERROR_NOT_SUPPORTED,
            "device_enable_peer_access: zeDeviceCanAccessPeer says %s cannot access memory of "
            "%s; copies between them are staged through host memory",
            a->label(), b->label());
      });
}

// ---- attributes -----------------------------------------------------------------

namespace {

accel_status_t not_answered(accel_device_attr_t attr, const char* why) {
  return fail(ACCEL_ERROR_NOT_SUPPORTED, "device_get_attribute: %s: %s",
              backend::device_attr_name(attr), why);
}

accel_status_t compute_properties(Device* d, ze_device_compute_properties_t* p) {
  *p = {};
  p->stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ze_result_t r = ze.zeDeviceGetComputeProperties(d->handle, p);
  if (r != ZE_RESULT_SUCCESS)
    return vendor_fail("zeDeviceGetComputeProperties", r, d->driver->handle);
  return ACCEL_SUCCESS;
}

// Calls `each` on every entry of a count-then-fill zeDevice*Properties list;
// a failed query is the status.
template <class T>
accel_status_t for_each_property(Device* d, const char* call, ze_structure_type_t stype,
                                 ze_result_t (*query)(ze_device_handle_t, uint32_t*, T*),
                                 const std::function<void(const T&)>& each) {
  std::vector<T> list;
  ze_result_t r = query_property_list(d->handle, query, stype, &list);
  if (r != ZE_RESULT_SUCCESS) return vendor_fail(call, r, d->driver->handle);
  for (const T& item : list) each(item);
  return ACCEL_SUCCESS;
}

}  // namespace

// From zeDeviceGetProperties (cached at discovery), zeDeviceGetComputeProperties,
// zeDeviceGetMemoryProperties, zeDeviceGetMemoryAccessProperties,
// zeDeviceGetCacheProperties and zeDeviceGetCommandQueueGroupProperties
// (README.md, "Devices", lists which field answers what).
accel_status_t op_device_get_attribute(int32_t device, accel_device_attr_t attr, int64_t* value) {
  return on_device("device_get_attribute", device, [&](Device* d) -> accel_status_t {
    if (value == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_get_attribute: value is NULL");
    const ze_device_properties_t& p = d->props;
    const uint32_t ip = d->ip_version;
    int64_t v = 0;
    ze_device_compute_properties_t cp;
    switch (attr) {
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR:
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR:
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING:
        if (ip == 0)
          return not_answered(attr,
                              "the driver does not report the IP version "
                              "(ZE_extension_device_ip_version)");
        // Intel's GMD ID: architecture [31:22], release [21:14], revision [5:0].
        v = attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR   ? ip >> 22
            : attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR ? (ip >> 14) & 0xffu
                                                                 : ip & 0x3fu;
        break;
      case ACCEL_DEVICE_ATTR_WARP_SIZE: {
        if (auto st = compute_properties(d, &cp); st != ACCEL_SUCCESS) return st;
        uint32_t n = std::min<uint32_t>(cp.numSubGroupSizes, ZE_SUBGROUPSIZE_COUNT);
        if (n == 0) return not_answered(attr, "the driver reports no sub-group sizes");
        v = *std::max_element(cp.subGroupSizes, cp.subGroupSizes + n);
        break;
      }
      case ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK:
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X:
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y:
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z:
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X:
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y:
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z:
      case ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK:
        if (auto st = compute_properties(d, &cp); st != ACCEL_SUCCESS) return st;
        switch (attr) {
          case ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK:
            v = cp.maxTotalGroupSize;
            break;
          case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X:
            v = cp.maxGroupSizeX;
            break;
          case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y:
            v = cp.maxGroupSizeY;
            break;
          case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z:
            v = cp.maxGroupSizeZ;
            break;
          case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X:
            v = cp.maxGroupCountX;
            break;
          case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y:
            v = cp.maxGroupCountY;
            break;
          case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z:
            v = cp.maxGroupCountZ;
            break;
          default:
            v = cp.maxSharedLocalMemory;
            break;
        }
        break;
      case ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT:  // EUs, as compute_units
        v = static_cast<int64_t>(p.numSlices) * p.numSubslicesPerSlice * p.numEUsPerSubslice;
        break;
      case ACCEL_DEVICE_ATTR_CLOCK_RATE_KHZ:  // coreClockRate is in MHz
        if (p.coreClockRate == 0) return not_answered(attr, "the driver reports a clock rate of 0");
        v = static_cast<int64_t>(p.coreClockRate) * 1000;
        break;
      case ACCEL_DEVICE_ATTR_MEMORY_BUS_WIDTH: {
        if (auto st = for_each_property<ze_device_memory_properties_t>(
                d, "zeDeviceGetMemoryProperties", ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES,
                ze.zeDeviceGetMemoryProperties,
                [&](const auto& m) { v = std::max<int64_t>(v, m.maxBusWidth); });
            st != ACCEL_SUCCESS)
          return st;
        if (v == 0) return not_answered(attr, "the driver reports no memory bus width");
        break;
      }
      case ACCEL_DEVICE_ATTR_L2_CACHE_SIZE: {
        // zeDeviceGetCacheProperties lists caches without naming their level;
        // the largest is the last-level cache.
        if (auto st = for_each_property<ze_device_cache_properties_t>(
                d, "zeDeviceGetCacheProperties", ZE_STRUCTURE_TYPE_DEVICE_CACHE_PROPERTIES,
                ze.zeDeviceGetCacheProperties,
                [&](const auto& c) {
                  v = std::max<int64_t>(v, static_cast<int64_t>(c.cacheSize));
                });
            st != ACCEL_SUCCESS)
          return st;
        if (v == 0) return not_answered(attr, "the driver reports no cache");
        break;
      }
      case ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE:
        v = static_cast<int64_t>(std::min<uint64_t>(p.maxMemAllocSize, INT64_MAX));
        break;
      case ACCEL_DEVICE_ATTR_INTEGRATED:
        v = (p.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED) != 0 ? 1 : 0;
        break;
      case ACCEL_DEVICE_ATTR_UNIFIED_ADDRESSING:
        // Level Zero's unified shared memory: host, device and shared
        // allocations of a context live in one virtual address space.
        v = 1;
        break;
      case ACCEL_DEVICE_ATTR_MANAGED_MEMORY: {
        ze_device_memory_access_properties_t ap{};
        ap.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES;
        ze_result_t r = ze.zeDeviceGetMemoryAccessProperties(d->handle, &ap);
        if (r != ZE_RESULT_SUCCESS)
          return vendor_fail("zeDeviceGetMemoryAccessProperties", r, d->driver->handle);
        v = ap.sharedSingleDeviceAllocCapabilities != 0 ? 1 : 0;
        break;
      }
      case ACCEL_DEVICE_ATTR_ASYNC_ENGINE_COUNT: {
        // Engines of the copy-only queue groups (blitters), which copy while
        // the compute engines run kernels.
        if (auto st = for_each_property<ze_command_queue_group_properties_t>(
                d, "zeDeviceGetCommandQueueGroupProperties",
                ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES,
                ze.zeDeviceGetCommandQueueGroupProperties,
                [&](const auto& g) {
                  if ((g.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY) != 0 &&
                      (g.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) == 0)
                    v += g.numQueues;
                });
            st != ACCEL_SUCCESS)
          return st;
        break;
      }
      case ACCEL_DEVICE_ATTR_CONCURRENT_KERNELS:
        return not_answered(attr,
                            "Level Zero does not report whether kernels of different command "
                            "lists run at the same time");
      case ACCEL_DEVICE_ATTR_ECC_ENABLED:
        return not_answered(attr,
                            "Level Zero reports only whether the device supports ECC "
                            "(ZE_DEVICE_PROPERTY_FLAG_ECC), not whether it is on");
      default:
        return not_answered(attr, "unknown to this backend");
    }
    *value = v;
    return ACCEL_SUCCESS;
  });
}

accel_status_t module_properties(Device* d, ze_device_module_properties_t* out) {
  *out = ze_device_module_properties_t{};
  out->stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  ze_result_t r = ze.zeDeviceGetModuleProperties(d->handle, out);
  if (r != ZE_RESULT_SUCCESS)
    return vendor_fail("zeDeviceGetModuleProperties", r, d->driver->handle);
  return ACCEL_SUCCESS;
}

// zeDeviceGetModuleProperties: no double precision (ZE_DEVICE_MODULE_FLAG_FP64)
// clears float64 and complex128, no half precision (FP16) float16 and complex32.
accel_status_t op_get_device_capability(int32_t device, accel_device_capability_t* capability) {
  return on_device("get_device_capability", device, [&](Device* d) -> accel_status_t {
    if (capability == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "get_device_capability: capability is NULL");
    ze_device_module_properties_t mp{};
    if (accel_status_t st = module_properties(d, &mp); st != ACCEL_SUCCESS) return st;
    if ((mp.flags & ZE_DEVICE_MODULE_FLAG_FP64) == 0)
      capability->supported_dtypes &=
          ~(ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT64) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX128));
    if ((mp.flags & ZE_DEVICE_MODULE_FLAG_FP16) == 0)
      capability->supported_dtypes &=
          ~(ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT16) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX32));
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::level_zero
