// Driver and device enumeration, lazy initialisation, fork detection,
// properties and memory information.
#include "l0.hpp"

#include <glob.h>
#include <pthread.h>

#include <algorithm>
#include <cstring>

namespace accel_ze {

// Never destroyed: worker and reaper threads may use devices during exit.
std::vector<Device*>& g_devices = *new std::vector<Device*>();

namespace {

std::vector<Driver*>& g_drivers = *new std::vector<Driver*>();
bool g_counted = false;
int32_t g_count = 0;
std::string g_reason;  // why g_count is 0

bool g_ran_zeinit = false;  // discovery called zeInit (see discovery_ran_zeinit)

// zeInitDrivers (loader 1.18+) where the loader has it, else zeInit: both
// load the drivers named by ZE_ENABLE_ALT_DRIVERS or the known ones. On
// success *drivers holds every driver with a GPU.
ze_result_t init_and_get_drivers(std::vector<ze_driver_handle_t>* drivers, std::string* call) {
  uint32_t n = 0;
  if (ze.zeInitDrivers != nullptr) {
    *call = "zeInitDrivers(ZE_INIT_DRIVER_TYPE_FLAG_GPU)";
    InitDriverTypeDesc desc{kStypeInitDriverTypeDesc, nullptr, kInitDriverTypeGpu};
    ze_result_t r = ze.zeInitDrivers(&n, nullptr, &desc);
    if (r != ZE_RESULT_SUCCESS) return r;
    drivers->resize(n);
    if (n == 0) return ZE_RESULT_SUCCESS;
    r = ze.zeInitDrivers(&n, drivers->data(), &desc);
    drivers->resize(n);
    return r;
  }
  *call = "zeInit(ZE_INIT_FLAG_GPU_ONLY)";
  ze_result_t r = ze.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r != ZE_RESULT_SUCCESS) return r;
  *call = "zeDriverGet";
  r = ze.zeDriverGet(&n, nullptr);
  if (r != ZE_RESULT_SUCCESS) return r;
  drivers->resize(n);
  if (n == 0) return ZE_RESULT_SUCCESS;
  r = ze.zeDriverGet(&n, drivers->data());
  drivers->resize(n);
  return r;
}

// Fills the cached facts of one device; false (with a logged reason) when it
// cannot be used: not a GPU, or no compute queue group.
bool describe_device(Device* d, std::string* why) {
  d->props = {};
  d->props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;  // timerResolution in cycles/s
  ze_result_t r = ze.zeDeviceGetProperties(d->handle, &d->props);
  if (r != ZE_RESULT_SUCCESS) {
    *why = describe_failure("zeDeviceGetProperties", r, d->driver->handle);
    return false;
  }
  if (d->props.type != ZE_DEVICE_TYPE_GPU) {
    *why = format("'%s' is not a GPU (ze_device_type_t %d)", d->props.name,
                  static_cast<int>(d->props.type));
    return false;
  }
  // ZE_extension_device_ip_version: asked separately so that a driver that
  // rejects the extension structure still gives the base properties.
  ze_device_properties_t with_ip{};
  with_ip.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  DeviceIpVersionExt ip{kStypeDeviceIpVersionExt, nullptr, 0};
  with_ip.pNext = &ip;
  if (ze.zeDeviceGetProperties(d->handle, &with_ip) == ZE_RESULT_SUCCESS) d->ip_version = ip.ipVersion;

  uint32_t groups = 0;
  r = ze.zeDeviceGetCommandQueueGroupProperties(d->handle, &groups, nullptr);
  std::vector<ze_command_queue_group_properties_t> gp(groups);
  for (auto& g : gp) g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  if (r == ZE_RESULT_SUCCESS && groups > 0)
    r = ze.zeDeviceGetCommandQueueGroupProperties(d->handle, &groups, gp.data());
  if (r != ZE_RESULT_SUCCESS) {
    *why = describe_failure("zeDeviceGetCommandQueueGroupProperties", r, d->driver->handle);
    return false;
  }
  bool found = false;
  for (uint32_t i = 0; i < groups && !found; ++i) {
    if ((gp[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) != 0 && gp[i].numQueues > 0) {
      d->compute_ordinal = i;
      found = true;
    }
  }
  if (!found) {
    *why = format("'%s' has no command queue group with ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE "
                  "(%u groups)", d->props.name, groups);
    return false;
  }

  uint32_t mems = 0;
  r = ze.zeDeviceGetMemoryProperties(d->handle, &mems, nullptr);
  std::vector<ze_device_memory_properties_t> mp(mems);
  for (auto& m : mp) m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  if (r == ZE_RESULT_SUCCESS && mems > 0) r = ze.zeDeviceGetMemoryProperties(d->handle, &mems, mp.data());
  if (r != ZE_RESULT_SUCCESS) {
    *why = describe_failure("zeDeviceGetMemoryProperties", r, d->driver->handle);
    return false;
  }
  d->total_memory = 0;
  for (uint32_t i = 0; i < mems; ++i) d->total_memory += mp[i].totalSize;
  return true;
}

// Every Level Zero driver reaches its hardware through a device node: GPUs
// through a DRM render node, NPUs through the accel subsystem. With neither
// (and no ZE_ENABLE_ALT_DRIVERS naming a driver that may not need one) no
// driver can find a device, so discovery need not run zeInit: it would load
// every driver library and make the process fork-unsafe for nothing.
std::string no_device_nodes() {
  const char* alt = host_env("ZE_ENABLE_ALT_DRIVERS");
  if (alt != nullptr && *alt != '\0') return {};
  for (const char* pattern : {"/dev/dri/renderD*", "/dev/accel/accel*"}) {
    glob_t g{};
    int rc = glob(pattern, 0, nullptr, &g);
    size_t n = rc == 0 ? g.gl_pathc : 0;
    globfree(&g);
    if (n > 0) return {};
  }
  return "no GPU or NPU device node (/dev/dri/renderD*, /dev/accel/accel*): no Level Zero driver "
         "can find a device here, so zeInit was not called";
}

accel_status_t count_once() {
  if (std::string why = no_device_nodes(); !why.empty()) {
    g_reason = why;
    return ACCEL_SUCCESS;
  }
  // Level Zero cannot count devices without zeInit, which loads the drivers
  // and (with a real GPU driver) opens the device nodes and starts threads.
  // From here on a fork() child must not use the backend: the plugin then
  // does not declare ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE, and the core
  // refuses it in the child (intel/compute-runtime#954).
  g_ran_zeinit = true;

  std::vector<ze_driver_handle_t> handles;
  std::string call;
  ze_result_t r = init_and_get_drivers(&handles, &call);
  if (r != ZE_RESULT_SUCCESS) {
    const char* alt = host_env("ZE_ENABLE_ALT_DRIVERS");
    g_reason = describe_failure(call.c_str(), r, nullptr) +
               (r == ZE_RESULT_ERROR_UNINITIALIZED
                    ? format(": the Level Zero loader %s found no usable GPU driver (%s%s)",
                             ze.path.c_str(),
                             alt ? "it tried ZE_ENABLE_ALT_DRIVERS="
                                 : "it tries libze_intel_gpu.so.1, from intel-level-zero-gpu, "
                                   "or the drivers named in ZE_ENABLE_ALT_DRIVERS",
                             alt ? alt : "")
                    : std::string());
    return ACCEL_SUCCESS;
  }
  std::vector<std::string> skipped;
  for (ze_driver_handle_t h : handles) {
    uint32_t n = 0;
    r = ze.zeDeviceGet(h, &n, nullptr);
    std::vector<ze_device_handle_t> devs(n);
    if (r == ZE_RESULT_SUCCESS && n > 0) r = ze.zeDeviceGet(h, &n, devs.data());
    if (r != ZE_RESULT_SUCCESS) {
      skipped.push_back(describe_failure("zeDeviceGet", r, h));
      continue;
    }
    auto* drv = new Driver();
    drv->handle = h;
    bool used = false;
    for (uint32_t i = 0; i < n; ++i) {
      auto* d = new Device();
      d->driver = drv;
      d->handle = devs[i];
      std::string why;
      if (!describe_device(d, &why)) {
        skipped.push_back(why);
        log_msg(ACCEL_LOG_DEBUG, "device %u of driver %zu skipped: %s", i, g_drivers.size(),
                why.c_str());
        delete d;
        continue;
      }
      d->index = static_cast<int32_t>(g_devices.size());
      d->label_text = format("device %d '%s'", d->index, d->props.name);
      d->plain_slots = std::make_unique<SlotPool>(d, false);
      d->timing_slots = std::make_unique<SlotPool>(d, true);
      g_devices.push_back(d);
      used = true;
    }
    if (used) g_drivers.push_back(drv);
    else delete drv;
  }
  if (g_devices.empty()) {
    g_reason = format("%s succeeded with %zu driver%s but no GPU device was found", call.c_str(),
                      handles.size(), handles.size() == 1 ? "" : "s");
    for (const auto& s : skipped) g_reason += "; " + s;
  }
  return ACCEL_SUCCESS;
}

}  // namespace

bool discovery_ran_zeinit() { return g_ran_zeinit; }

Device* device_at(int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= g_devices.size()) return nullptr;
  return g_devices[static_cast<size_t>(index)];
}

accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&]() -> accel_status_t {
    if (count == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_count: count is NULL");
    if (!g_counted) {
      accel_status_t st = count_once();
      if (st != ACCEL_SUCCESS) return st;
      g_count = static_cast<int32_t>(g_devices.size());
      g_counted = true;
    }
    *count = g_count;
    if (g_count == 0) fail(ACCEL_SUCCESS, "%s", g_reason.c_str());
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_lazy_init() {
  return guarded("lazy_init", [&]() -> accel_status_t {
    for (Driver* drv : g_drivers) {
      if (drv->context != nullptr) continue;
      ze_context_desc_t desc{};
      desc.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
      ze_context_handle_t ctx = nullptr;
      ze_result_t r = ze.zeContextCreate(drv->handle, &desc, &ctx);
      if (r != ZE_RESULT_SUCCESS) return ze_fail("zeContextCreate", r, drv->handle);
      drv->context = ctx;
    }
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return guarded("get_device_properties", [&]() -> accel_status_t {
    Device* d = device_at(device);
    if (d == nullptr || props == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "get_device_properties: bad device or NULL props");
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
        log_msg(ACCEL_LOG_DEBUG, "%s: no PCI address: %s", d->label(),
                describe_failure("zeDevicePciGetPropertiesExt", r, d->driver->handle).c_str());
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

// Free memory: Sysman (zesMemoryGetState over the device's memory modules)
// when the application enabled it (ZES_ENABLE_SYSMAN=1 before zeInit, which
// loader 1.8 requires for Sysman on core handles) and the driver answers;
// otherwise the total minus what this plugin has allocated on the device.
accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return guarded("mem_get_info", [&]() -> accel_status_t {
    Device* d = device_at(device);
    if (d == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_get_info: bad device");
    uint64_t total = d->total_memory;
    uint64_t allocated = d->allocated.load(std::memory_order_relaxed);
    uint64_t free_mem = total > allocated ? total - allocated : 0;
    const char* sysman = host_env("ZES_ENABLE_SYSMAN");
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
        log_msg(ACCEL_LOG_DEBUG, "%s: Sysman free memory unavailable (%s); using total minus "
                "allocated", d->label(),
                r == ZE_RESULT_SUCCESS ? "no memory modules"
                                       : describe_failure("zesMemoryGetState", r, nullptr).c_str());
      }
    }
    *free_bytes = static_cast<size_t>(free_mem);
    *total_bytes = static_cast<size_t>(total);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel_ze
