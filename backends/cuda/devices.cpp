// Devices and their primary contexts: op_lazy_init, properties, the calling
// thread's current device, device_synchronize, and CtxScope; ABI 1.1: the
// device's native handle, peer access and attributes.
//
// The current device is the CUDA runtime's: the primary context current on
// the calling thread (cuCtxSetCurrent), so accel and code using the CUDA
// runtime or driver API directly agree in both directions. Operations on a
// device other than the current one switch contexts only for their duration
// (CtxScope restores the caller's context).
#include <cstdio>
#include <cstring>

#include "backend.hpp"

namespace accel::cuda {

namespace {

// Written by op_lazy_init (serialised by the core, before any operation
// below), read-only after. Never freed: live until exit, like the plugin.
int32_t g_count = 0;
Device* g_devices = nullptr;

// The accel device this thread last chose (or 0): a NULL current context
// stands for it. See CtxScope.
thread_local int32_t t_device = 0;

// cuInit, the driver's device count checked against the core's, CUdevice
// handles and default streams.
accel_status_t init_devices(int32_t expected_count) {
  Driver& d = driver();
  // cuInit again if counting already ran it: a repeated cuInit(0) is a
  // no-op that succeeds. A fork() child of a process that ran cuInit never
  // gets here: the core refuses the backend there (the plugin does not
  // declare ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE after counting with cuInit,
  // and an initialised backend is never usable in a child).
  CUresult rc = d.cuInit(0);
  if (rc == CUDA_ERROR_STUB_LIBRARY)
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                "cuInit: '%s' is the CUDA toolkit's stub library: no NVIDIA driver is installed",
                d.path.c_str());
  if (rc != CUDA_SUCCESS) return vendor_fail("cuInit", rc);
  int n = 0;
  ACCEL_CU_TRY(cuDeviceGetCount, (&n));
  if (n < expected_count)
    return fail(ACCEL_ERROR_BACKEND_FAILURE,
                "%s counted %d device(s) but the driver (cuDeviceGetCount) reports %d; check "
                "CUDA_VISIBLE_DEVICES and the driver installation",
                count_source().c_str(), int(expected_count), n);
  if (n > expected_count)
    plugin::log(ACCEL_LOG_WARN, "the driver reports %d devices, %s counted %d; using the first %d",
                n, count_source().c_str(), int(expected_count), int(expected_count));
  Device* devices = new Device[static_cast<size_t>(expected_count)];
  for (int32_t i = 0; i < expected_count; ++i) {
    ACCEL_CU_TRY(cuDeviceGet, (&devices[i].dev, i));
    // The legacy default stream of the device's primary context: the stream
    // the CUDA runtime (and torch) use by default, so work accel queues
    // there orders with theirs.
    devices[i].default_stream.device = i;
    devices[i].default_stream.handle = CU_STREAM_LEGACY;
    devices[i].default_stream.is_default = true;
  }
  g_devices = devices;
  g_count = expected_count;
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t device_of_ordinal(int ordinal, int32_t* device_index) noexcept {
  for (int32_t i = 0; i < g_count; ++i) {
    if (g_devices[i].dev == ordinal) {
      *device_index = i;
      return ACCEL_SUCCESS;
    }
  }
  return fail(ACCEL_ERROR_INVALID_ARGUMENT,
              "the pointer is memory of CUDA device %d, which is none of the plugin's %d", ordinal,
              int(g_count));
}

accel_status_t device_at(int32_t device_index, Device*& out) noexcept {
  if (device_index < 0 || device_index >= g_count)
    return fail(ACCEL_ERROR_INVALID_DEVICE, "device %d is out of range [0, %d)", int(device_index),
                int(g_count));
  out = &g_devices[device_index];
  return ACCEL_SUCCESS;
}

accel_status_t primary_context(int32_t device_index, CUcontext* ctx) {
  Device* d = nullptr;
  if (accel_status_t st = device_at(device_index, d); st != ACCEL_SUCCESS) return st;
  CUcontext c = d->ctx.load(std::memory_order_acquire);
  if (c == nullptr) {
    std::call_once(d->once, [&] {
      CUcontext made = nullptr;
      d->retain_rc = driver().cuDevicePrimaryCtxRetain(&made, d->dev);
      if (d->retain_rc == CUDA_SUCCESS) d->ctx.store(made, std::memory_order_release);
    });
    c = d->ctx.load(std::memory_order_acquire);
    if (c == nullptr) return vendor_fail("cuDevicePrimaryCtxRetain", d->retain_rc);
  }
  *ctx = c;
  return ACCEL_SUCCESS;
}

int32_t calling_thread_device() noexcept {
  CUcontext cur = nullptr;
  if (driver().cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != nullptr) {
    for (int32_t i = 0; i < g_count; ++i)
      if (g_devices[i].ctx.load(std::memory_order_acquire) == cur) return i;
  }
  return t_device;
}

CtxScope::CtxScope(int32_t device) {
  Driver& d = driver();
  CUcontext target = nullptr;
  status_ = primary_context(device, &target);
  if (status_ != ACCEL_SUCCESS) return;
  CUcontext cur = nullptr;
  CUresult rc = d.cuCtxGetCurrent(&cur);
  if (rc != CUDA_SUCCESS) {
    status_ = vendor_fail("cuCtxGetCurrent", rc);
    return;
  }
  if (cur == target) return;
  rc = d.cuCtxSetCurrent(target);
  if (rc != CUDA_SUCCESS) {
    status_ = vendor_fail("cuCtxSetCurrent", rc);
    return;
  }
  if (cur == nullptr && device == t_device) return;  // bound lazily, stays
  restore_ = true;
  previous_ = cur;
}

CtxScope::~CtxScope() {
  if (restore_) driver().cuCtxSetCurrent(previous_);
}

accel_status_t op_lazy_init() {
  return guarded("lazy_init", [] { return init_devices(counted_devices()); });
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return on_device("get_device_properties", device, [&](Device* d) -> accel_status_t {
    Driver& drv = driver();
    const CUdevice dev = d->dev;
    ACCEL_CU_TRY(cuDeviceGetName, (props->name, static_cast<int>(sizeof props->name), dev));
    std::snprintf(props->vendor, sizeof props->vendor, "NVIDIA");
    size_t total = 0;
    ACCEL_CU_TRY(cuDeviceTotalMem, (&total, dev));
    props->total_memory = total;
    CUuuid uuid{};
    if (drv.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
      std::memcpy(props->uuid, uuid.bytes, sizeof props->uuid);
      props->has_uuid = 1;
    }
    auto attr = [&](CUdevice_attribute a, int& out) {
      return drv.cuDeviceGetAttribute(&out, a, dev);
    };
    int domain = 0, bus = 0, slot = 0;
    if (attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, domain) == CUDA_SUCCESS &&
        attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, bus) == CUDA_SUCCESS &&
        attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, slot) == CUDA_SUCCESS) {
      std::snprintf(props->pci_bus_id, sizeof props->pci_bus_id, "%04x:%02x:%02x.0",
                    static_cast<unsigned>(domain), static_cast<unsigned>(bus),
                    static_cast<unsigned>(slot));
    }
    int major = 0, minor = 0;
    CUresult rc = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major);
    if (rc == CUDA_SUCCESS) rc = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor);
    if (rc != CUDA_SUCCESS) return vendor_fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY)", rc);
    std::snprintf(props->architecture, sizeof props->architecture, "sm_%d%d", major, minor);
    int sms = 0;
    rc = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms);
    if (rc != CUDA_SUCCESS) return vendor_fail("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", rc);
    props->compute_units = sms;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_get_current_device(int32_t* device) {
  return guarded("get_current_device", [&] {
    CUcontext cur = nullptr;
    if (driver().cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur == nullptr) {
      *device = -1;  // no context: the core's per-thread index stands
      return ACCEL_SUCCESS;
    }
    CUdevice dev = 0;
    ACCEL_CU_TRY(cuCtxGetDevice, (&dev));
    *device = -1;
    for (int32_t i = 0; i < g_count; ++i) {
      if (g_devices[i].dev == dev) {
        *device = i;
        break;
      }
    }
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_set_current_device(int32_t device, uint32_t flags) {
  return on_device("set_current_device", device, [&](Device* d) -> accel_status_t {
    if ((flags & ACCEL_PLUGIN_SET_DEVICE_MAYBE) != 0 &&
        d->ctx.load(std::memory_order_acquire) == nullptr) {
      unsigned ctx_flags = 0;
      int active = 0;
      ACCEL_CU_TRY(cuDevicePrimaryCtxGetState, (d->dev, &ctx_flags, &active));
      if (active == 0) {
        // Don't create the context: unbind the current one so the core's
        // index (which it records) is what the thread reports, and bind the
        // target's context when an operation first needs it.
        ACCEL_CU_TRY(cuCtxSetCurrent, (nullptr));
        t_device = device;
        return ACCEL_SUCCESS;
      }
    }
    CUcontext ctx = nullptr;
    if (accel_status_t st = primary_context(device, &ctx); st != ACCEL_SUCCESS) return st;
    ACCEL_CU_TRY(cuCtxSetCurrent, (ctx));
    t_device = device;
    return ACCEL_SUCCESS;
  });
}

// Not while a native graph recording of the device is open: the driver
// would refuse the synchronize and invalidate the recording (ContextSyncScope).
accel_status_t op_device_synchronize(int32_t device) {
  return on_device("device_synchronize", device, [&](Device* d) -> accel_status_t {
    ACCEL_CUDA_CTX_SCOPE(device);
    ContextSyncScope no_recording(*d);
    ACCEL_CU_TRY(cuCtxSynchronize, ());
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda

// ---------------------------------------------------------------------------
// ABI 1.1: the device's native handle, peer access, attributes
// ---------------------------------------------------------------------------

namespace accel::cuda {

// No CUDA object stands for a device beyond its ordinal: handle NULL (as
// accel.h's table says), context the primary context (retained here if it
// was not yet: the handle must stay valid), ordinal the CUdevice.
accel_status_t op_device_native_handle(int32_t device, accel_native_handle_t* out) {
  return guarded("device_native_handle", [&] { return native_handle_of(device, nullptr, out); });
}

accel_status_t op_device_can_access_peer(int32_t device, int32_t peer, int32_t* can_access) {
  return on_device_pair("device_can_access_peer", device, peer,
                        [&](Device* a, Device* b) -> accel_status_t {
                          int yes = 0;
                          ACCEL_CU_TRY(cuDeviceCanAccessPeer, (&yes, a->dev, b->dev));
                          *can_access = yes != 0 ? 1 : 0;
                          return ACCEL_SUCCESS;
                        });
}

// cuCtxEnablePeerAccess(peer's primary context) with `device`'s primary
// context current: access is per context pair and one-way, as in CUDA.
// The peer's context is retained first (the call needs a live context).
accel_status_t op_device_enable_peer_access(int32_t device, int32_t peer) {
  return on_device_pair(
      "device_enable_peer_access", device, peer, [&](Device* a, Device* b) -> accel_status_t {
        int yes = 0;
        ACCEL_CU_TRY(cuDeviceCanAccessPeer, (&yes, a->dev, b->dev));
        if (yes == 0)
          return fail(ACCEL_ERROR_NOT_SUPPORTED,
                      "device %d cannot access the memory of device %d directly "
                      "(cuDeviceCanAccessPeer answers 0: no P2P path between these GPUs); copies "
                      "between them still work, staged by the driver",
                      int(device), int(peer));
        CUcontext peer_ctx = nullptr;
        if (accel_status_t st = primary_context(peer, &peer_ctx); st != ACCEL_SUCCESS) return st;
        ACCEL_CUDA_CTX_SCOPE(device);
        CUresult rc = driver().cuCtxEnablePeerAccess(peer_ctx, 0);
        if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
          return ACCEL_SUCCESS;
        if (rc == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
          return vendor_fail_as(ACCEL_ERROR_NOT_SUPPORTED, "cuCtxEnablePeerAccess", rc);
        return vendor_fail("cuCtxEnablePeerAccess", rc);
      });
}

namespace {

// accel attribute -> the CU_DEVICE_ATTRIBUTE_* that answers it, with its
// name for messages.
struct AttrMap {
  accel_device_attr_t accel;
  CUdevice_attribute cu;
  const char* name;
};

#define ACCEL_CUDA_ATTR(a, c) \
  AttrMap { ACCEL_DEVICE_ATTR_##a, CU_DEVICE_ATTRIBUTE_##c, "CU_DEVICE_ATTRIBUTE_" #c }

constexpr AttrMap kAttributes[] = {
    ACCEL_CUDA_ATTR(COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY_MAJOR),
    ACCEL_CUDA_ATTR(COMPUTE_CAPABILITY_MINOR, COMPUTE_CAPABILITY_MINOR),
    ACCEL_CUDA_ATTR(WARP_SIZE, WARP_SIZE),
    ACCEL_CUDA_ATTR(MAX_THREADS_PER_BLOCK, MAX_THREADS_PER_BLOCK),
    ACCEL_CUDA_ATTR(MAX_BLOCK_DIM_X, MAX_BLOCK_DIM_X),
    ACCEL_CUDA_ATTR(MAX_BLOCK_DIM_Y, MAX_BLOCK_DIM_Y),
    ACCEL_CUDA_ATTR(MAX_BLOCK_DIM_Z, MAX_BLOCK_DIM_Z),
    ACCEL_CUDA_ATTR(MAX_GRID_DIM_X, MAX_GRID_DIM_X),
    ACCEL_CUDA_ATTR(MAX_GRID_DIM_Y, MAX_GRID_DIM_Y),
    ACCEL_CUDA_ATTR(MAX_GRID_DIM_Z, MAX_GRID_DIM_Z),
    // What a block gets without opting in (cudaDeviceProp.sharedMemPerBlock).
    ACCEL_CUDA_ATTR(SHARED_MEMORY_PER_BLOCK, MAX_SHARED_MEMORY_PER_BLOCK),
    ACCEL_CUDA_ATTR(MULTIPROCESSOR_COUNT, MULTIPROCESSOR_COUNT),
    ACCEL_CUDA_ATTR(CLOCK_RATE_KHZ, CLOCK_RATE),
    ACCEL_CUDA_ATTR(MEMORY_BUS_WIDTH, GLOBAL_MEMORY_BUS_WIDTH),
    ACCEL_CUDA_ATTR(L2_CACHE_SIZE, L2_CACHE_SIZE),
    ACCEL_CUDA_ATTR(INTEGRATED, INTEGRATED),
    ACCEL_CUDA_ATTR(UNIFIED_ADDRESSING, UNIFIED_ADDRESSING),
    ACCEL_CUDA_ATTR(MANAGED_MEMORY, MANAGED_MEMORY),
    ACCEL_CUDA_ATTR(CONCURRENT_KERNELS, CONCURRENT_KERNELS),
    ACCEL_CUDA_ATTR(ASYNC_ENGINE_COUNT, ASYNC_ENGINE_COUNT),
    ACCEL_CUDA_ATTR(ECC_ENABLED, ECC_ENABLED),
};

#undef ACCEL_CUDA_ATTR

const AttrMap* cuda_attribute(accel_device_attr_t attr) {
  for (const AttrMap& m : kAttributes)
    if (m.accel == attr) return &m;
  return nullptr;
}

}  // namespace

// cuDeviceGetAttribute needs no context. COMPUTE_CAPABILITY_STEPPING (CUDA
// has none) and MAX_ALLOCATION_SIZE (CUDA reports no per-allocation limit:
// cuMemAlloc is bounded by free memory only) are not supported; an
// attribute the driver does not know (CUDA_ERROR_INVALID_VALUE) is not
// supported either, with the driver's answer.
accel_status_t op_device_get_attribute(int32_t device, accel_device_attr_t attr, int64_t* value) {
  return on_device("device_get_attribute", device, [&](Device* d) -> accel_status_t {
    if (attr == ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "compute_capability_stepping: a CUDA compute capability is major.minor only "
                  "(no stepping)");
    if (attr == ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "max_allocation_size: CUDA reports no per-allocation limit (cuMemAlloc is "
                  "bounded by free device memory only: see accel_mem_get_info)");
    const AttrMap* m = cuda_attribute(attr);
    if (m == nullptr)
      return fail(ACCEL_ERROR_NOT_SUPPORTED, "device attribute %d has no CUDA equivalent",
                  static_cast<int>(attr));
    int v = 0;
    CUresult rc = driver().cuDeviceGetAttribute(&v, m->cu, d->dev);
    if (rc == CUDA_ERROR_INVALID_VALUE)
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "this CUDA driver does not answer %s (cuDeviceGetAttribute failed: "
                  "CUDA_ERROR_INVALID_VALUE)",
                  m->name);
    if (rc != CUDA_SUCCESS)
      return vendor_fail(format("cuDeviceGetAttribute(%s)", m->name).c_str(), rc);
    *value = v;
    return ACCEL_SUCCESS;
  });
}

// Every NVIDIA GPU CUDA 11.4+ supports holds each of accel's element types
// (double precision and half are in every compute capability it runs on):
// the core's full set stands.
accel_status_t op_get_device_capability(int32_t device, accel_device_capability_t* capability) {
  return guarded("get_device_capability", [&] {
    (void)capability;
    Device* d = nullptr;
    return device_at(device, d);
  });
}

}  // namespace accel::cuda
