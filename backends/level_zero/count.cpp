// Discovery: init loads the loader; device_count runs zeInit (or
// zeInitDrivers) and enumerates drivers and GPU devices, because Level Zero
// has no way to count without initialising its drivers. Whether a fork()
// child may still use the backend depends on whether that happened.
#include "backend.hpp"

#include <glob.h>
#include <sys/auxv.h>

#include <cstring>

namespace accel::level_zero {

// Never destroyed: worker and reaper threads may use devices during exit.
std::vector<Driver*>& g_drivers = *new std::vector<Driver*>();
std::vector<Device*>& g_devices = *new std::vector<Device*>();

namespace {

// Written under the core's discovery lock by the first device_count.
bool g_counted = false;
std::string g_reason;         // why no device was found
size_t g_loader_drivers = 0;  // drivers zeDriverGet / zeInitDrivers returned

// zeInitDrivers (loader 1.18+) where the loader has it, else zeInit: both
// load the drivers named by ZE_ENABLE_ALT_DRIVERS or the known ones. On
// success *drivers holds every driver with a GPU; *call names the call that
// gave the result.
ze_result_t init_and_get_drivers(std::vector<ze_driver_handle_t>* drivers, std::string* call) {
  uint32_t n = 0;
  if (ze.zeInitDrivers != nullptr) {
    *call = "zeInitDrivers(ZE_INIT_DRIVER_TYPE_FLAG_GPU)";
    InitDriverTypeDesc desc{kStypeInitDriverTypeDesc, nullptr, kInitDriverTypeGpu};
    ze_result_t r = ze.zeInitDrivers(&n, nullptr, &desc);
    if (r != ZE_RESULT_SUCCESS) return r;
    arm_exit_gate();  // the drivers are loaded: its exit handler runs before theirs
    drivers->resize(n);
    if (n == 0) return ZE_RESULT_SUCCESS;
    r = ze.zeInitDrivers(&n, drivers->data(), &desc);
    drivers->resize(n);
    return r;
  }
  *call = "zeInit(ZE_INIT_FLAG_GPU_ONLY)";
  ze_result_t r = ze.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r != ZE_RESULT_SUCCESS) return r;
  arm_exit_gate();  // the drivers are loaded: its exit handler runs before theirs
  *call = "zeDriverGet";
  r = ze.zeDriverGet(&n, nullptr);
  if (r != ZE_RESULT_SUCCESS) return r;
  drivers->resize(n);
  if (n == 0) return ZE_RESULT_SUCCESS;
  r = ze.zeDriverGet(&n, drivers->data());
  drivers->resize(n);
  return r;
}

// Fills the cached facts of one device; false (with the reason in *why) when
// it cannot be used: not a GPU, or no compute queue group.
bool describe_device(Device* d, std::string* why) {
  d->props = {};
  d->props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;  // timerResolution in cycles/s
  ze_result_t r = ze.zeDeviceGetProperties(d->handle, &d->props);
  if (r != ZE_RESULT_SUCCESS) {
    *why = vendor_failure("zeDeviceGetProperties", r, d->driver->handle);
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
  if (ze.zeDeviceGetProperties(d->handle, &with_ip) == ZE_RESULT_SUCCESS)
    d->ip_version = ip.ipVersion;

  std::vector<ze_command_queue_group_properties_t> gp;
  r = query_property_list(d->handle, ze.zeDeviceGetCommandQueueGroupProperties,
                          ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, &gp);
  const auto groups = static_cast<uint32_t>(gp.size());
  if (r != ZE_RESULT_SUCCESS) {
    *why = vendor_failure("zeDeviceGetCommandQueueGroupProperties", r, d->driver->handle);
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
    *why = format(
        "'%s' has no command queue group with ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE "
        "(%u groups)",
        d->props.name, groups);
    return false;
  }

  std::vector<ze_device_memory_properties_t> mp;
  r = query_property_list(d->handle, ze.zeDeviceGetMemoryProperties,
                          ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES, &mp);
  if (r != ZE_RESULT_SUCCESS) {
    *why = vendor_failure("zeDeviceGetMemoryProperties", r, d->driver->handle);
    return false;
  }
  d->total_memory = 0;
  for (const auto& m : mp) d->total_memory += m.totalSize;
  return true;
}

// Every Level Zero driver reaches its hardware through a device node: GPUs
// through a DRM render node, NPUs through the accel subsystem. With neither
// (and no ZE_ENABLE_ALT_DRIVERS naming a driver that may not need one) no
// driver can find a device, so discovery need not run zeInit: it would load
// every driver library and make the process fork-unsafe for nothing.
std::string no_device_nodes() {
  const char* alt = accel::plugin::env("ZE_ENABLE_ALT_DRIVERS");
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

// Fills g_drivers and g_devices, or g_reason when there is no device. A
// failing zeInit is no failure of the backend: it has no devices.
void count_once() {
  if (std::string why = no_device_nodes(); !why.empty()) {
    g_reason = why;
    // Nothing of Level Zero ran: a fork() child may still use the backend.
    declare_discovery_fork_safe();
    return;
  }
  // Level Zero cannot count devices without zeInit, which loads the drivers
  // and (with a real GPU driver) opens the device nodes and starts threads
  // that a fork() child does not inherit. From here on the plugin does not
  // declare ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE, and the core refuses the
  // backend in such a child.
  std::vector<ze_driver_handle_t> handles;
  std::string call;
  ze_result_t r = init_and_get_drivers(&handles, &call);
  if (r != ZE_RESULT_SUCCESS) {
    const char* alt = accel::plugin::env("ZE_ENABLE_ALT_DRIVERS");
    g_reason =
        vendor_failure(call.c_str(), r) +
        (r == ZE_RESULT_ERROR_UNINITIALIZED
             ? format(": the Level Zero loader %s found no usable GPU driver (%s%s)", loader_path(),
                      alt ? "it tried ZE_ENABLE_ALT_DRIVERS="
                          : "it tries libze_intel_gpu.so.1, from intel-level-zero-gpu, "
                            "or the drivers named in ZE_ENABLE_ALT_DRIVERS",
                      alt ? alt : "")
             : std::string());
    return;
  }
  g_loader_drivers = handles.size();
  std::vector<std::string> skipped;
  for (ze_driver_handle_t h : handles) {
    uint32_t n = 0;
    r = ze.zeDeviceGet(h, &n, nullptr);
    std::vector<ze_device_handle_t> devs(n);
    if (r == ZE_RESULT_SUCCESS && n > 0) r = ze.zeDeviceGet(h, &n, devs.data());
    if (r != ZE_RESULT_SUCCESS) {
      skipped.push_back(vendor_failure("zeDeviceGet", r, h));
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
        accel::plugin::log(ACCEL_LOG_DEBUG, "device %u of driver %zu skipped: %s", i,
                           g_drivers.size(), why.c_str());
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
    if (used)
      g_drivers.push_back(drv);
    else
      delete drv;
  }
  if (g_devices.empty()) {
    g_reason = format("%s succeeded with %zu driver%s but no GPU device was found", call.c_str(),
                      handles.size(), handles.size() == 1 ? "" : "s");
    for (const auto& s : skipped) g_reason += "; " + s;
  }
}

}  // namespace

// The loader decides from the drivers it loaded (the plugin sees them as
// zeDriverGet's count) and from ZE_ENABLE_LOADER_INTERCEPT, which it reads
// with plain getenv. The plugin reads it through the host (secure_getenv),
// which hides it in setuid and setgid processes (AT_SECURE): there the
// answer is "may intercept".
bool loader_may_intercept() noexcept {
  if (g_loader_drivers > 1) return true;
  if (getauxval(AT_SECURE) != 0) return true;
  const char* v = accel::plugin::env("ZE_ENABLE_LOADER_INTERCEPT");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

accel_status_t op_init() {
  return guarded("init", [&] { return load_library(); });
}

// The result is kept for the process: the loader itself keeps zeInit's first
// result, so a failed zeInit cannot be retried anyway.
accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&]() -> accel_status_t {
    if (count == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_count: count is NULL");
    if (!g_counted) {
      count_once();
      g_counted = true;
    }
    *count = static_cast<int32_t>(g_devices.size());
    if (*count == 0) fail(ACCEL_SUCCESS, "%s", g_reason.c_str());
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::level_zero
