// Lifecycle, current device, device properties and synchronisation.
#include <unistd.h>

#include <cstring>
#include <memory>

#include "common.hpp"
#include "count.hpp"
#include "ops.hpp"
#include "runtime.hpp"

namespace accel_hip {

DeviceScope::~DeviceScope() {
  if (switched_) {
    // Restoring the caller's device cannot fail for a device that was
    // current a moment ago; nothing could be reported from here anyway.
    (void)runtime().hipSetDevice(previous_);
  }
}

accel_status_t DeviceScope::enter(int32_t device) {
  ACCEL_HIP_TRY(hipGetDevice, (&previous_), {});
  if (previous_ == device) return ACCEL_SUCCESS;
  ACCEL_HIP_TRY(hipSetDevice, (device), on_device(device));
  switched_ = true;
  return ACCEL_SUCCESS;
}

std::string on_device(int32_t device) { return "on device " + std::to_string(device); }

accel_status_t op_init() {
  return guarded("init", [] {
    // A machine without an AMD GPU does not pay for loading HIP at every
    // program start (cold start); device_count says why.
    if (!visibly_no_gpu().empty()) return ACCEL_SUCCESS;
    return load_runtime();
  });
}

accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&] { return count_devices(count); });
}

accel_status_t op_lazy_init() {
  return guarded("lazy_init", []() -> accel_status_t {
    // A fork() child of a process whose HIP runtime was initialised never
    // gets here: the core refuses the backend there (fork.cpp).
    note_runtime_initialised();
    set_init_reason("hipInit ran at the first operation");
    ACCEL_HIP_TRY(hipInit, (0), "[HIP runtime " + runtime_label() + "]");
    int n = 0;
    ACCEL_HIP_TRY(hipGetDeviceCount, (&n), "[HIP runtime " + runtime_label() + "]");
    if (n != counted_devices()) {
      log(ACCEL_LOG_WARN,
          format("the HIP runtime sees %d device%s but discovery counted %d through %s; "
                 "operations on devices the runtime lacks will fail",
                 n, n == 1 ? "" : "s", counted_devices(), count_source().c_str()));
    }
    if (log_enabled(ACCEL_LOG_DEBUG)) {
      int version = 0;
      if (runtime().hipRuntimeGetVersion != nullptr &&
          runtime().hipRuntimeGetVersion(&version) == hipSuccess) {
        log(ACCEL_LOG_DEBUG, format("HIP runtime %s, version %d, %d device%s",
                                    runtime_label().c_str(), version, n, n == 1 ? "" : "s"));
      }
    }
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_get_current_device(int32_t* device) {
  return guarded("get_current_device", [&]() -> accel_status_t {
    int d = 0;
    ACCEL_HIP_TRY(hipGetDevice, (&d), {});
    *device = d;
    return ACCEL_SUCCESS;
  });
}

// HIP initialises every device in hipInit: hipSetDevice creates nothing, so
// ACCEL_PLUGIN_SET_DEVICE_MAYBE needs no special case.
accel_status_t op_set_current_device(int32_t device, uint32_t flags) {
  (void)flags;
  return guarded("set_current_device", [&]() -> accel_status_t {
    ACCEL_HIP_TRY(hipSetDevice, (device), on_device(device));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_device_synchronize(int32_t device) {
  return guarded("device_synchronize", [&]() -> accel_status_t {
    DeviceScope scope;
    if (auto st = scope.enter(device); st != ACCEL_SUCCESS) return st;
    ACCEL_HIP_TRY(hipDeviceSynchronize, (), on_device(device));
    return ACCEL_SUCCESS;
  });
}

namespace {

void copy_string(char* dst, size_t cap, const char* src, size_t src_cap) {
  size_t n = strnlen(src, src_cap);
  if (n >= cap) n = cap - 1;
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

}  // namespace

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return guarded("get_device_properties", [&]() -> accel_status_t {
    // hipGetDeviceProperties fills the hipDeviceProp_t layout of HIP 5 (the
    // layout ROCm 6 keeps behind the plain symbol, hipGetDevicePropertiesR0000).
    // Slack after it guards against a runtime writing a longer struct.
    constexpr size_t kSlack = 4096;
    auto storage = std::make_unique<unsigned char[]>(sizeof(hipDeviceProp_t) + kSlack);
    std::memset(storage.get(), 0, sizeof(hipDeviceProp_t) + kSlack);
    auto* p = reinterpret_cast<hipDeviceProp_t*>(storage.get());
    ACCEL_HIP_TRY(hipGetDeviceProperties, (p, device), on_device(device));

    copy_string(props->name, sizeof props->name, p->name, sizeof p->name);
    copy_string(props->vendor, sizeof props->vendor, "AMD", 4);
    props->total_memory = p->totalGlobalMem;
    props->compute_units = p->multiProcessorCount;
    props->device_index = device;
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

    if (runtime().hipDeviceGetUuid != nullptr) {
      hipDevice_t dev = 0;
      hipUUID uuid{};
      hipError_t rc = runtime().hipDeviceGet(&dev, device);
      if (rc == hipSuccess) rc = runtime().hipDeviceGetUuid(&uuid, dev);
      if (rc == hipSuccess) {
        static_assert(sizeof uuid.bytes == sizeof props->uuid);
        std::memcpy(props->uuid, uuid.bytes, sizeof props->uuid);
        props->has_uuid = 0;
        for (unsigned char b : props->uuid) props->has_uuid |= b != 0;
      } else {
        log(ACCEL_LOG_DEBUG, "hipDeviceGetUuid failed: " + error_text(rc) + " " + on_device(device));
      }
    }
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel_hip
