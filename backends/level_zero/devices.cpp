// Devices after discovery: the lookup every operation uses, lazy_init (one
// context per driver), properties, and device_synchronize. Level Zero has no
// current device: the core keeps the per-thread index.
#include "backend.hpp"

#include <algorithm>
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
  return guarded("get_device_properties", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
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
// stream and dying streams included.
accel_status_t op_device_synchronize(int32_t device) {
  return guarded("device_synchronize", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    std::vector<SlotRef> lasts;
    {
      std::lock_guard lock(d->mu);  // order: device, then stream
      for (Stream* s : d->streams) {
        std::lock_guard slock(s->mu);
        if (s->last) lasts.push_back(s->last);
      }
    }
    for (const SlotRef& l : lasts) {
      if (accel_status_t st = wait_slot(l); st != ACCEL_SUCCESS) return st;
    }
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::level_zero
