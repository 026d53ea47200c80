// The device table, the runtime's start (lazy_init), HIP's own current
// device, device properties and device synchronisation.
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "backend.hpp"

namespace accel::hip {

namespace {

// Sized by device_count under the core's discovery lock, never resized.
std::vector<Device> g_devices;

void copy_string(char* dst, size_t cap, const char* src, size_t src_cap) {
  size_t n = strnlen(src, src_cap);
  if (n >= cap) n = cap - 1;
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

}  // namespace

void set_devices(int32_t count) {
  g_devices.assign(static_cast<size_t>(count > 0 ? count : 0), Device{});
  for (size_t i = 0; i < g_devices.size(); ++i) {
    Device& d = g_devices[i];
    d.index = static_cast<int32_t>(i);
    d.default_stream.device = d.index;
    d.default_stream.native = nullptr;  // HIP's null stream
    d.default_stream.is_default = true;
  }
}

int32_t device_count() noexcept { return static_cast<int32_t>(g_devices.size()); }

accel_status_t device_at(int32_t device_index, Device*& out) noexcept {
  if (device_index < 0 || device_index >= device_count())
    return fail(ACCEL_ERROR_INVALID_DEVICE, "device %d is out of range [0, %d)",
                static_cast<int>(device_index), static_cast<int>(device_count()));
  out = &g_devices[static_cast<size_t>(device_index)];
  return ACCEL_SUCCESS;
}

DeviceScope::~DeviceScope() {
  // Restoring the caller's device cannot fail for a device that was current
  // a moment ago; nothing could be reported from here anyway.
  if (switched_) (void)runtime().hipSetDevice(previous_);
}

accel_status_t DeviceScope::enter(int32_t device) noexcept {
  if (hipError_t rc = runtime().hipGetDevice(&previous_); rc != hipSuccess)
    return vendor_fail("hipGetDevice", rc);
  if (previous_ == device) return ACCEL_SUCCESS;
  if (hipError_t rc = runtime().hipSetDevice(device); rc != hipSuccess)
    return vendor_fail("hipSetDevice", rc);
  switched_ = true;
  return ACCEL_SUCCESS;
}

accel_status_t op_lazy_init() {
  return guarded("lazy_init", []() -> accel_status_t {
    // A fork() child of a process whose HIP runtime was initialised never
    // gets here: the core refuses the backend there.
    note_runtime_initialised();
    const Runtime& rt = runtime();
    if (hipError_t rc = rt.hipInit(0); rc != hipSuccess) return vendor_fail("hipInit", rc);
    int n = 0;
    if (hipError_t rc = rt.hipGetDeviceCount(&n); rc != hipSuccess)
      return vendor_fail("hipGetDeviceCount", rc);
    if (n != device_count()) {
      accel::plugin::log(ACCEL_LOG_WARN,
                         "the HIP runtime sees %d device%s but discovery counted %d through %s; "
                         "operations on devices the runtime lacks will fail",
                         n, n == 1 ? "" : "s", static_cast<int>(device_count()),
                         count_source().c_str());
    }
    if (accel::plugin::log_enabled(ACCEL_LOG_DEBUG)) {
      int version = 0;
      if (rt.hipRuntimeGetVersion != nullptr && rt.hipRuntimeGetVersion(&version) == hipSuccess) {
        accel::plugin::log(ACCEL_LOG_DEBUG, "HIP runtime %s, version %d, %d device%s",
                           runtime_label().c_str(), version, n, n == 1 ? "" : "s");
      }
    }
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_get_current_device(int32_t* device) {
  return guarded("get_current_device", [&]() -> accel_status_t {
    int d = 0;
    if (hipError_t rc = runtime().hipGetDevice(&d); rc != hipSuccess)
      return vendor_fail("hipGetDevice", rc);
    *device = d;
    return ACCEL_SUCCESS;
  });
}

// HIP initialises every device in hipInit: hipSetDevice creates nothing, so
// ACCEL_PLUGIN_SET_DEVICE_MAYBE needs no special case.
accel_status_t op_set_current_device(int32_t device, uint32_t /*flags*/) {
  return guarded("set_current_device", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    if (hipError_t rc = runtime().hipSetDevice(d->index); rc != hipSuccess)
      return vendor_fail("hipSetDevice", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_device_synchronize(int32_t device) {
  return guarded("device_synchronize", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    DeviceScope scope;
    if (accel_status_t st = scope.enter(d->index); st != ACCEL_SUCCESS) return st;
    if (hipError_t rc = runtime().hipDeviceSynchronize(); rc != hipSuccess)
      return vendor_fail("hipDeviceSynchronize", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return guarded("get_device_properties", [&]() -> accel_status_t {
    Device* d;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    const Runtime& rt = runtime();
    // hipGetDeviceProperties fills the hipDeviceProp_t layout of HIP 5 (the
    // layout ROCm 6 keeps behind the plain symbol, hipGetDevicePropertiesR0000).
    // Slack after it guards against a runtime writing a longer struct.
    constexpr size_t kSlack = 4096;
    auto storage = std::make_unique<unsigned char[]>(sizeof(hipDeviceProp_t) + kSlack);
    std::memset(storage.get(), 0, sizeof(hipDeviceProp_t) + kSlack);
    auto* p = reinterpret_cast<hipDeviceProp_t*>(storage.get());
    if (hipError_t rc = rt.hipGetDeviceProperties(p, d->index); rc != hipSuccess)
      return vendor_fail("hipGetDeviceProperties", rc);

    copy_string(props->name, sizeof props->name, p->name, sizeof p->name);
    copy_string(props->vendor, sizeof props->vendor, "AMD", 4);
    props->total_memory = p->totalGlobalMem;
    props->compute_units = p->multiProcessorCount;
    props->device_index = d->index;
    std::snprintf(props->pci_bus_id, sizeof props->pci_bus_id, "%04x:%02x:%02x.0",
                  static_cast<unsigned>(p->pciDomainID) & 0xffffu,
                  static_cast<unsigned>(p->pciBusID) & 0xffu,
                  static_cast<unsigned>(p->pciDeviceID) & 0xffu);
    // "gfx90a:sramecc+:xnack-" -> "gfx90a"
    char arch[sizeof p->gcnArchName];
    copy_string(arch, sizeof arch, p->gcnArchName, sizeof p->gcnArchName);
    if (char* colon = std::strchr(arch, ':')) *colon = '\0';
    if (arch[0] == '\0' && p->gcnArch > 0) std::snprintf(arch, sizeof arch, "gfx%d", p->gcnArch);
    copy_string(props->architecture, sizeof props->architecture, arch, sizeof arch);

    if (rt.hipDeviceGetUuid != nullptr) {
      hipDevice_t dev = 0;
      hipUUID uuid{};
      hipError_t rc = rt.hipDeviceGet(&dev, d->index);
      const char* call = "hipDeviceGet";
      if (rc == hipSuccess) {
        rc = rt.hipDeviceGetUuid(&uuid, dev);
        call = "hipDeviceGetUuid";
      }
      if (rc == hipSuccess) {
        static_assert(sizeof uuid.bytes == sizeof props->uuid);
        std::memcpy(props->uuid, uuid.bytes, sizeof props->uuid);
        props->has_uuid = 0;
        for (unsigned char b : props->uuid) props->has_uuid |= b != 0;
      } else if (accel::plugin::log_enabled(ACCEL_LOG_DEBUG)) {
        // The UUID is optional: a runtime that cannot give it leaves has_uuid 0.
        accel::plugin::log(ACCEL_LOG_DEBUG, "%s on device %d",
                           vendor_failure_text(call, rc).c_str(), static_cast<int>(d->index));
      }
    }
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::hip
