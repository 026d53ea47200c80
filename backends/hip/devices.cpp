// The device table, the runtime's start (lazy_init), HIP's own current
// device, device properties and device synchronisation; the device's native
// handle, peer access, device attributes and capability (ABI 1.1).
#include <cstdio>
#include <cstdlib>
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

// hipGetDeviceProperties fills the hipDeviceProp_t layout of HIP 5 (the
// layout ROCm 6 keeps behind the plain symbol, hipGetDevicePropertiesR0000).
// Slack after it guards against a runtime writing a longer struct.
class Properties {
 public:
  accel_status_t read(int index) {
    std::memset(storage_.get(), 0, kBytes);
    if (hipError_t rc = runtime().hipGetDeviceProperties(get(), index); rc != hipSuccess)
      return vendor_fail("hipGetDeviceProperties", rc);
    return ACCEL_SUCCESS;
  }
  hipDeviceProp_t* get() noexcept { return reinterpret_cast<hipDeviceProp_t*>(storage_.get()); }

 private:
  static constexpr size_t kBytes = sizeof(hipDeviceProp_t) + 4096;
  std::unique_ptr<unsigned char[]> storage_ = std::make_unique<unsigned char[]>(kBytes);
};

// "gfx90a:sramecc+:xnack-" -> "gfx90a"; from gcnArch (910) when the name is
// empty (very old runtimes).
std::string arch_name(const hipDeviceProp_t& p) {
  char arch[sizeof p.gcnArchName + 1];
  copy_string(arch, sizeof arch, p.gcnArchName, sizeof p.gcnArchName);
  if (char* colon = std::strchr(arch, ':')) *colon = '\0';
  if (arch[0] == '\0' && p.gcnArch > 0) std::snprintf(arch, sizeof arch, "gfx%d", p.gcnArch);
  return arch;
}

// A gfx target's version, as LLVM's AMDGPU names spell it: "gfx" then the
// major in decimal, then one hex digit each for minor and stepping
// (gfx90a: 9, 0, 10; gfx1030: 10, 3, 0; gfx942: 9, 4, 2). False when the
// name is not of that shape.
struct GfxVersion {
  int major = 0, minor = 0, stepping = 0;
};
bool parse_gfx(const std::string& arch, GfxVersion& v) {
  if (arch.size() < 6 || arch.compare(0, 3, "gfx") != 0) return false;
  const std::string digits = arch.substr(3);
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const std::string major = digits.substr(0, digits.size() - 2);
  if (major.empty() || major.size() > 3) return false;
  for (char c : major)
    if (c < '0' || c > '9') return false;
  const int minor = hex(digits[digits.size() - 2]);
  const int stepping = hex(digits[digits.size() - 1]);
  if (minor < 0 || stepping < 0) return false;
  v.major = std::atoi(major.c_str());
  v.minor = minor;
  v.stepping = stepping;
  return true;
}

// The hipDeviceAttribute_t answering an accel attribute, or false (with
// the reason) when HIP has none.
bool hip_attribute(accel_device_attr_t attr, hipDeviceAttribute_t& out, const char*& name,
                   const char*& why) {
  switch (attr) {
#define ACCEL_HIP_ATTR(accel_name, hip_name) \
  case ACCEL_DEVICE_ATTR_##accel_name:       \
    out = hip_name;                          \
    name = #hip_name;                        \
    return true;
    ACCEL_HIP_ATTR(WARP_SIZE, hipDeviceAttributeWarpSize)
    ACCEL_HIP_ATTR(MAX_THREADS_PER_BLOCK, hipDeviceAttributeMaxThreadsPerBlock)
    ACCEL_HIP_ATTR(MAX_BLOCK_DIM_X, hipDeviceAttributeMaxBlockDimX)
    ACCEL_HIP_ATTR(MAX_BLOCK_DIM_Y, hipDeviceAttributeMaxBlockDimY)
    ACCEL_HIP_ATTR(MAX_BLOCK_DIM_Z, hipDeviceAttributeMaxBlockDimZ)
    ACCEL_HIP_ATTR(MAX_GRID_DIM_X, hipDeviceAttributeMaxGridDimX)
    ACCEL_HIP_ATTR(MAX_GRID_DIM_Y, hipDeviceAttributeMaxGridDimY)
    ACCEL_HIP_ATTR(MAX_GRID_DIM_Z, hipDeviceAttributeMaxGridDimZ)
    ACCEL_HIP_ATTR(SHARED_MEMORY_PER_BLOCK, hipDeviceAttributeMaxSharedMemoryPerBlock)
    ACCEL_HIP_ATTR(MULTIPROCESSOR_COUNT, hipDeviceAttributeMultiprocessorCount)
    ACCEL_HIP_ATTR(CLOCK_RATE_KHZ, hipDeviceAttributeClockRate)
    ACCEL_HIP_ATTR(MEMORY_BUS_WIDTH, hipDeviceAttributeMemoryBusWidth)
    ACCEL_HIP_ATTR(L2_CACHE_SIZE, hipDeviceAttributeL2CacheSize)
    ACCEL_HIP_ATTR(INTEGRATED, hipDeviceAttributeIntegrated)
    ACCEL_HIP_ATTR(UNIFIED_ADDRESSING, hipDeviceAttributeUnifiedAddressing)
    ACCEL_HIP_ATTR(MANAGED_MEMORY, hipDeviceAttributeManagedMemory)
    ACCEL_HIP_ATTR(CONCURRENT_KERNELS, hipDeviceAttributeConcurrentKernels)
    ACCEL_HIP_ATTR(ASYNC_ENGINE_COUNT, hipDeviceAttributeAsyncEngineCount)
    ACCEL_HIP_ATTR(ECC_ENABLED, hipDeviceAttributeEccEnabled)
#undef ACCEL_HIP_ATTR
    case ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE:
      why =
          "HIP reports no largest single allocation (hipDeviceGetAttribute has no such "
          "attribute and hipDeviceProp_t no such field)";
      return false;
    default:
      why = "HIP has no attribute for it";
      return false;
  }
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
  return on_device("set_current_device", device, [&](Device* d) -> accel_status_t {
    if (hipError_t rc = runtime().hipSetDevice(d->index); rc != hipSuccess)
      return vendor_fail("hipSetDevice", rc);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_device_synchronize(int32_t device) {
  return on_device("device_synchronize", device, [&](Device* d) -> accel_status_t {
    ACCEL_HIP_DEVICE_SCOPE(d->index);
    if (hipError_t rc = runtime().hipDeviceSynchronize(); rc != hipSuccess)
      return vendor_fail("hipDeviceSynchronize", rc);
    return ACCEL_SUCCESS;
  });
}

std::string gcn_arch_name(int32_t device) {
  Properties props;
  if (props.read(device) != ACCEL_SUCCESS) return {};
  const hipDeviceProp_t* p = props.get();
  char arch[sizeof p->gcnArchName + 1];
  copy_string(arch, sizeof arch, p->gcnArchName, sizeof p->gcnArchName);
  return arch;
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return on_device("get_device_properties", device, [&](Device* d) -> accel_status_t {
    const Runtime& rt = runtime();
    Properties props_buffer;
    if (accel_status_t st = props_buffer.read(d->index); st != ACCEL_SUCCESS) return st;
    const hipDeviceProp_t* p = props_buffer.get();

    copy_string(props->name, sizeof props->name, p->name, sizeof p->name);
    copy_string(props->vendor, sizeof props->vendor, "AMD", 4);
    props->total_memory = p->totalGlobalMem;
    props->compute_units = p->multiProcessorCount;
    props->device_index = d->index;
    std::snprintf(props->pci_bus_id, sizeof props->pci_bus_id, "%04x:%02x:%02x.0",
                  static_cast<unsigned>(p->pciDomainID) & 0xffffu,
                  static_cast<unsigned>(p->pciBusID) & 0xffu,
                  static_cast<unsigned>(p->pciDeviceID) & 0xffu);
    const std::string arch = arch_name(*p);
    copy_string(props->architecture, sizeof props->architecture, arch.c_str(), arch.size() + 1);

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

// --- native handle -------------------------------------------------------------

// HIP names a device by its ordinal (hipDevice_t) and has no context to give:
// handle and context NULL, ordinal from hipDeviceGet.
accel_status_t op_device_native_handle(int32_t device, accel_native_handle_t* out) {
  return on_device("device_native_handle", device, [&](Device* d) -> accel_status_t {
    hipDevice_t dev = 0;
    if (hipError_t rc = runtime().hipDeviceGet(&dev, d->index); rc != hipSuccess)
      return vendor_fail("hipDeviceGet", rc);
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_HIP, nullptr, nullptr, dev);
  });
}

// --- peer access ------------------------------------------------------------------

accel_status_t op_device_can_access_peer(int32_t device, int32_t peer, int32_t* can_access) {
  return on_device_pair(
      "device_can_access_peer", device, peer, [&](Device* d, Device* p) -> accel_status_t {
        int yes = 0;
        if (hipError_t rc = runtime().hipDeviceCanAccessPeer(&yes, d->index, p->index);
            rc != hipSuccess)
          return vendor_fail("hipDeviceCanAccessPeer", rc);
        *can_access = yes != 0 ? 1 : 0;
        return ACCEL_SUCCESS;
      });
}

// hipDeviceEnablePeerAccess acts for the current device: `device` is made
// current for the call. A repeat (hipErrorPeerAccessAlreadyEnabled) is
// success; a pair the topology does not link is refused up front, from
// hipDeviceCanAccessPeer, with the reason.
accel_status_t op_device_enable_peer_access(int32_t device, int32_t peer) {
  return on_device_pair(
      "device_enable_peer_access", device, peer, [&](Device* d, Device* p) -> accel_status_t {
        const Runtime& rt = runtime();
        int yes = 0;
        if (hipError_t rc = rt.hipDeviceCanAccessPeer(&yes, d->index, p->index); rc != hipSuccess)
          return vendor_fail("hipDeviceCanAccessPeer", rc);
        if (yes == 0) {
          return fail(ACCEL_ERROR_NOT_SUPPORTED,
                      "device %d cannot access the memory of device %d directly "
                      "(hipDeviceCanAccessPeer says 0: no peer link between them); copies between "
                      "them still work, staged by HIP",
                      static_cast<int>(d->index), static_cast<int>(p->index));
        }
        ACCEL_HIP_DEVICE_SCOPE(d->index);
        const hipError_t rc = rt.hipDeviceEnablePeerAccess(p->index, 0);
        if (rc == hipSuccess || rc == hipErrorPeerAccessAlreadyEnabled) return ACCEL_SUCCESS;
        if (rc == hipErrorInvalidDevice) {
          // HIP's answer when the pair cannot be linked after all.
          return accel::plugin::set_error(
              ACCEL_ERROR_NOT_SUPPORTED,
              vendor_failure_text("hipDeviceEnablePeerAccess", rc) +
                  format(" (device %d to device %d)", static_cast<int>(d->index),
                         static_cast<int>(p->index)));
        }
        return vendor_fail("hipDeviceEnablePeerAccess", rc);
      });
}

// --- attributes and capability ----------------------------------------------------

// The gfx version from hipDeviceProp_t.gcnArchName (major, minor and
// stepping: gfx90a is 9, 0, 10); every other attribute HIP has from
// hipDeviceGetAttribute. An attribute the runtime does not answer
// (hipErrorInvalidValue for a valid device: HIP 5.2 has no
// hipDeviceAttributeAsyncEngineCount case) is NOT_SUPPORTED, saying so.
accel_status_t op_device_get_attribute(int32_t device, accel_device_attr_t attr, int64_t* value) {
  return on_device("device_get_attribute", device, [&](Device* d) -> accel_status_t {
    const Runtime& rt = runtime();
    if (attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR ||
        attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR ||
        attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING) {
      Properties props;
      if (accel_status_t st = props.read(d->index); st != ACCEL_SUCCESS) return st;
      const std::string arch = arch_name(*props.get());
      GfxVersion v;
      if (!parse_gfx(arch, v)) {
        return fail(ACCEL_ERROR_NOT_SUPPORTED,
                    "device %d: the architecture name '%s' (hipDeviceProp_t.gcnArchName) is not "
                    "of the form gfx<major><minor><stepping>",
                    static_cast<int>(d->index), arch.c_str());
      }
      *value = attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR   ? v.major
               : attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR ? v.minor
                                                                    : v.stepping;
      return ACCEL_SUCCESS;
    }
    hipDeviceAttribute_t hip_attr{};
    const char* hip_name = "";
    const char* why = "";
    if (!hip_attribute(attr, hip_attr, hip_name, why)) {
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "%s: %s", backend::device_attr_name(attr), why);
    }
    int v = 0;
    const hipError_t rc = rt.hipDeviceGetAttribute(&v, hip_attr, d->index);
    if (rc == hipErrorInvalidValue) {
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "%s: the HIP runtime %s does not answer hipDeviceGetAttribute(%s): %s",
                  backend::device_attr_name(attr), runtime_label().c_str(), hip_name,
                  vendor_failure_text("hipDeviceGetAttribute", rc).c_str());
    }
    if (rc != hipSuccess)
      return vendor_fail("hipDeviceGetAttribute", rc,
                         format("(%s, device %d)", hip_name, static_cast<int>(d->index)));
    // HIP answers in an int; sizes (L2 cache, shared memory) are below 2 GiB.
    *value = static_cast<int64_t>(v);
    return ACCEL_SUCCESS;
  });
}

// Every AMD GPU HIP drives computes in double and half precision: all
// dtypes stay set (as for CUDA).
accel_status_t op_get_device_capability(int32_t device, accel_device_capability_t* /*capability*/) {
  return guarded("get_device_capability", [&]() -> accel_status_t {
    Device* d;
    return device_at(device, d);
  });
}

}  // namespace accel::hip
